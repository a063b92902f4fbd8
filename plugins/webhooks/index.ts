import * as v from "valibot";
import { FastResponse, WebhookDeliveries, WebhookRunSchema, can, definePlugin, readBodyBytes, requirePermission, type WebhookAnswer } from "../../core/plugin-api";

/**
 * The provider's answer as HTTP: strings and bytes as they are, anything else as JSON. The answer was
 * checked before its attempt was committed (`problemOfAnswer`, core/runtime/webhooks.ts); the checks here
 * stay as a guard, since FastResponse checks nothing and a bad status or header would otherwise fail only
 * while being written.
 * @throws {RangeError} a status outside 200–599; {TypeError} an invalid header, or a body with 204, 205 or 304
 */
function toResponse(answer: WebhookAnswer): Response {
  const headers = { ...answer.headers };
  let payload: string | Uint8Array | undefined;
  if (answer.body instanceof Uint8Array || typeof answer.body === "string") payload = answer.body;
  else if (answer.body !== undefined) {
    payload = JSON.stringify(answer.body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) headers["content-type"] = "application/json; charset=utf-8";
  }
  if (!Number.isInteger(answer.status) || answer.status < 200 || answer.status > 599) throw new RangeError(`The webhook answer's status ${answer.status} is not in 200-599`);
  if (payload !== undefined && (answer.status === 204 || answer.status === 205 || answer.status === 304)) throw new TypeError(`A ${answer.status} webhook answer cannot have a body`);
  return new FastResponse(payload as string | undefined, { status: answer.status, headers: new Headers(headers) });
}


/**
 * Inbound webhooks (spec 2.12, 3, 4.1): `POST /api/webhooks/:connectorId/:webhookId` runs the delivery
 * table (no session: the webhook's own `verify`); operators with `manage:webhooks` list and read
 * Webhook runs and replay stored deliveries at `/api/webhook-runs`.
 */
export default definePlugin({
  name: "webhooks",
  deps: { deliveries: WebhookDeliveries },
  setup({ routes }, { deliveries }) {
    // the domain types these routes answer, named in the OpenAPI document (WebhookRun)
    routes.component("WebhookRun", WebhookRunSchema);
    routes.add({
      method: "POST",
      path: "/api/webhooks/:connectorId/:webhookId",
      summary: "Deliver a webhook",
      description: [
        "Receives a provider's delivery (spec 3): verify (401 when the signature check throws) → parse (400) → admit (one run and execution per idempotency key; an already completed or concurrent delivery answers 202) → handle (500 when the handler throws; the provider's retry re-attempts with the same execution) → complete (202, or the handler's response).",
        "Only POST; bodies over 1 MiB are refused with 413. Not authenticated by token: each webhook verifies its provider's signature.",
      ].join("\n\n"),
      tags: ["webhooks"],
      auth: "none",
      // a provider's own query parameters (a validation token, a routing tag) reach verify and the handler in the URL
      anyQuery: true,
      bodyMode: "raw",
      rawBodyDoc: { contentType: "*/*", description: "The provider's payload, in the webhook's format (json, text or raw)" },
      params: v.object({ connectorId: v.string(), webhookId: v.string() }),
      responses: {
        202: {
          description: "Accepted: the handler returned nothing (`accepted`, with the run), or the delivery was already completed (`duplicate`) or is in progress (`in_progress`). A handler that answers 202 itself sends its own body instead.",
          schema: v.object({ status: v.picklist(["accepted", "duplicate", "in_progress"]), runId: v.optional(v.pipe(v.string(), v.description("The Webhook run (`accepted` only): `GET /api/webhook-runs/{runId}`"))) }),
        },
        200: { description: "The handler's response" },
        400: { description: "`invalid_request`: the body does not parse in the webhook's format or match its schema, or has no usable idempotency key" },
        401: { description: "`unauthorized`: the webhook's signature check refused the delivery (nothing stored)" },
        404: { description: "`not_found`: no such connector or webhook" },
        500: { description: "`internal`: the handler threw (the provider's retry re-attempts with the same execution), or an unexpected error" },
        default: { description: "Any other status the webhook's handler answers, with its headers and body" },
      },
      handler: async ({ event, params }) =>
        toResponse(await deliveries.deliver(params.connectorId, params.webhookId, { method: event.req.method, headers: event.req.headers, rawBody: await readBodyBytes(event.req), url: event.url }, event.req.ip)),
    });
    routes.add({
      method: "GET",
      path: "/api/webhook-runs",
      summary: "List webhook runs",
      description: "Newest first. Signature, secret and credential headers are stored redacted.",
      tags: ["webhooks"],
      auth: "bearer",
      query: v.object({
        connectorId: v.optional(v.string()),
        webhookId: v.optional(v.string()),
        status: v.optional(v.picklist(["running", "completed", "failed"])),
        pageSize: v.optional(routes.schemas.queryInteger({ min: 1, max: 200, description: "1 to 200, default 50" })),
        nextPageToken: v.optional(v.string()),
      }),
      responses: { 200: { description: "A page of runs", schema: v.object({ data: v.array(WebhookRunSchema), nextPageToken: v.optional(v.string()) }) } },
      handler: ({ principal, query }) => {
        requirePermission(principal!, can.manage("webhooks"));
        return deliveries.list({ ...query, pageSize: query.pageSize ?? 50 });
      },
    });
    routes.add({
      method: "GET",
      path: "/api/webhook-runs/:runId",
      summary: "Read a webhook run",
      description: "Status, attempts with timings and the error of a failed attempt, the redacted request headers, and the response sent.",
      tags: ["webhooks"],
      auth: "bearer",
      params: v.object({ runId: v.string() }),
      responses: { 200: { description: "The run", schema: WebhookRunSchema } },
      handler: ({ principal, params }) => {
        requirePermission(principal!, can.manage("webhooks"));
        return deliveries.get(params.runId);
      },
    });
    routes.add({
      method: "POST",
      path: "/api/webhook-runs/:runId/replay",
      summary: "Replay a stored delivery",
      description: "Runs the stored body through parse and handle again as a new run with a new execution (verify is skipped: the delivery passed it on arrival).",
      tags: ["webhooks"],
      auth: "bearer",
      params: v.object({ runId: v.string() }),
      responses: { 200: { description: "The new run and the status its handler answered", schema: v.object({ run: WebhookRunSchema, response: v.object({ status: v.number() }) }) }, 400: { description: "`invalid_request`: the stored body no longer parses for the webhook" } },
      handler: ({ principal, params }) => {
        requirePermission(principal!, can.manage("webhooks"));
        return deliveries.replay(params.runId);
      },
    });
  },
});
