import * as v from "valibot";
import { ApiError, EVENT_TYPES, EventLog, TOPICS, definePlugin, jsonText } from "../../core/plugin-api";
import { eventsSocket } from "./socket";
import { addAppendRoute } from "./append";

/**
 * A stored domain event as `GET /api/events` answers it (spec 2.3's envelope, `StoredDomainEvent` in
 * core/events/catalog.ts): every field it may carry, so generated clients see them. `payload`'s fields
 * per type are the catalog's (spec 2.4; `GET /api/project` lists it).
 */
const EventSchema = v.object({
  id: v.string(),
  schemaVersion: v.literal(1),
  projectId: v.string(),
  occurredAt: v.pipe(v.string(), v.description("ISO 8601 UTC")),
  correlationId: v.optional(v.pipe(v.string(), v.description("Groups related events; on ontology facts, copied from their execution"))),
  causationId: v.optional(v.string()),
  idempotencyKey: v.optional(v.string()),
  actor: v.optional(v.pipe(v.object({ type: v.picklist(["user", "serviceAccount", "system"]), id: v.string() }), v.description("Who caused the write; absent for trusted internal executions"))),
  metadata: v.optional(v.record(v.string(), v.unknown())),
  origin: v.optional(v.pipe(v.looseObject({ kind: v.picklist(["action", "runtime", "projection", "telemetry"]) }), v.description("What produced the event: `action` (actionId, runId), `runtime` (workflowId, runId, … when a run wrote it), `projection` (datasetId, version), `telemetry`"))),
  commitId: v.optional(v.pipe(v.string(), v.description("Groups every object, link and telemetry event of one write"))),
  commitOrdinal: v.optional(v.number()),
  type: v.picklist(EVENT_TYPES),
  topic: v.picklist(TOPICS),
  partitionKey: v.string(),
  payload: v.record(v.string(), v.unknown()),
  cursor: v.pipe(v.string(), v.description("Opaque: send it as afterCursor to read on after this event")),
});

const NEXT_LINK_DOC =
  "`<…>; rel=\"next\"` (RFC 8288) on a full page: the page after this one, same filters. A client can ask for it before reading this page's body. A shorter page has none: the reader is caught up, and continues later with the answer's `nextCursor`.";

/**
 * The `Link` header value naming the page after a full one (RFC 8288 `rel="next"`), with the same
 * `topic`, `type` and `limit` and `afterCursor` = the page's last cursor: under `publicOrigin`
 * (`SVC_API_PUBLIC_ORIGIN`, a proxy's path prefix included) when set, else relative to the server's origin.
 */
function nextLink(q: { topic?: string; type?: string; limit: number; afterCursor: string }, publicOrigin = ""): string {
  const params = new URLSearchParams();
  if (q.topic) params.set("topic", q.topic);
  if (q.type) params.set("type", q.type);
  params.set("limit", String(q.limit));
  params.set("afterCursor", q.afterCursor);
  return `<${publicOrigin}/api/events?${params}>; rel="next"`;
}

/**
 * `GET /api/events` (spec 4.1, 6.4): `{ count, events }` oldest first, filtered by `topic`, `type`,
 * `afterCursor`, `limit`, and scoped to what the caller may view (spec 5): events about subjects the
 * caller cannot view are omitted; a caller with no view permission at all gets 403. `POST /api/events`
 * appends supported non-ontology events (spec 6.2; `./append.ts`).
 */
export default definePlugin({
  name: "events",
  deps: { events: EventLog },
  setup({ routes, config, authenticateUpgrade }, { events }) {
    // the domain types these routes answer, named in the OpenAPI document (Event)
    routes.component("Event", EventSchema);
    routes.ws(
      "/ws/events",
      {
        summary: "Domain events over WebSocket",
        description: "Spec 6.5. Browser session and allowed Origin only (bearer tokens refused). Send `{type:\"subscribe\", topic?, types?, objectTypeId?, primaryId?, actionId?, runId?, limit?, afterCursor?}`; frames: connected, subscribed {…, afterCursor: where the subscription starts, the newest event's cursor when none was sent}, event, checkpoint {cursor: the position past events your filters or permissions skipped, at most one per SVC_WS_CHECKPOINT_MS (10 s) after the last frame: resume from the later of it and the last event's cursor}, unsubscribed, reset {reason: cursor_expired}, error {code, message} (code as in HTTP errors: invalid_request, unauthorized, …). One subscription per socket: a second subscribe replaces the first. Sockets that cannot keep up are closed with 4008; reconnect with the last cursor.",
      },
      eventsSocket(events, authenticateUpgrade, config.wsMaxBufferedBytes, config.wsCheckpointMs),
    );
    routes.add({
      method: "GET",
      path: "/api/events",
      summary: "Read domain events",
      description: "Stored events oldest first. Continue with `afterCursor` = the answer's `nextCursor` (on a full page, the last event's `cursor`): pages have no gaps and no repeats. Cursors are opaque. A cursor older than the retained window answers 410 `cursor_expired`: refetch current state, then continue from `GET /api/events/latest-cursor`.",
      tags: ["events"],
      auth: "bearer",
      query: v.object({
        topic: v.optional(v.pipe(v.picklist(TOPICS), v.description("One topic"))),
        type: v.optional(v.pipe(v.picklist(EVENT_TYPES), v.description("One event type"))),
        afterCursor: v.optional(v.pipe(v.string(), v.minLength(1), v.description("`cursor` of the last event already read (opaque: only a cursor this stream issued; another value is 400)"))),
        limit: v.optional(routes.schemas.queryInteger({ min: 1, max: 1000, description: "1 to 1000, default 100" })),
      }),
      responses: {
        200: {
          description: "Events",
          schema: v.object({
            count: v.number(),
            events: v.array(EventSchema),
            nextCursor: v.pipe(
              v.nullable(v.string()),
              v.description(
                "Where to continue: send it as `afterCursor`. On a full page, the last event's `cursor`; on a shorter one (caught up), the newest position this read covered, past the events your filters or permissions skip, so a reader whose filter matched nothing for a while still holds a cursor inside the retained window (the last event's `cursor` would expire with the events after it). The `afterCursor` you sent when the read covered nothing new; null only for an empty stream read from its start.",
              ),
            ),
          }),
          headers: { Link: NEXT_LINK_DOC },
        },
        400: { description: "`invalid_request`: the query does not match this operation's schema, or `afterCursor` is not a cursor of this stream" },
        410: { description: "`cursor_expired`: `afterCursor` points before the retained events; refetch current state" },
        503: { description: "`unavailable`: the event broker did not answer" },
      },
      handler: async ({ principal, query }) => {
        const permissions = [...principal!.permissions];
        if (!permissions.some((p) => p.startsWith("view:") || p.startsWith("run:"))) {
          throw new ApiError("forbidden", "This identity may not view any events");
        }
        const limit = query.limit ?? 100;
        // the stored events' JSON texts, spliced into the answer as they are (never parsed and re-serialized)
        const page = await events.readJson({
          topics: query.topic ? [query.topic] : undefined,
          types: query.type ? [query.type] : undefined,
          afterCursor: query.afterCursor,
          limit,
          permissions,
        });
        const body = Buffer.concat([Buffer.from(`{"count":${page.count},"events":[`), page.json, Buffer.from(`],"nextCursor":${page.checkpoint === undefined ? "null" : `"${page.checkpoint}"`}}`)]);
        if (page.count < limit || page.lastCursor === undefined) return jsonText(body);
        return jsonText(body, 200, { link: nextLink({ topic: query.topic, type: query.type, limit, afterCursor: page.lastCursor }, config.apiPublicOrigin) });
      },
    });
    routes.add({
      method: "GET",
      path: "/api/events/latest-cursor",
      summary: "The newest event's cursor",
      description: "Spec 6.3 `events.latestCursor`: the cursor of the newest retained event, without reading events (null for an empty stream). A reader that starts now, or that was answered 410 `cursor_expired` and refetched current state, continues from it with `afterCursor`. The same for every caller: a cursor is a position, not an event.",
      tags: ["events"],
      auth: "bearer",
      responses: {
        200: { description: "The cursor", schema: v.object({ latestCursor: v.nullable(v.string()) }) },
        503: { description: "`unavailable`: the event broker did not answer" },
      },
      handler: async ({ principal }) => {
        if (![...principal!.permissions].some((p) => p.startsWith("view:") || p.startsWith("run:"))) throw new ApiError("forbidden", "This identity may not view any events");
        return { latestCursor: (await events.latestCursor()) ?? null };
      },
    });
    addAppendRoute(routes, events);
  },
});
