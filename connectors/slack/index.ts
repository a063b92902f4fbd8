import { defineConnector, defineWebhook, verifySlackSignature, type WebhookRequest, type WebhookResponse } from "../../core/sdk";

/** Options of `slackConnector`. */
export interface SlackConnectorOptions {
  /** The app's Signing Secret (api.slack.com/apps → Basic Information), or several while rotating it. */
  signingSecret: string | readonly string[];
  /** Largest accepted age (and clock skew into the future) of `X-Slack-Request-Timestamp`, in seconds. Default 300. */
  toleranceSec?: number;
}

/**
 * A Slack request body, parsed by its content type:
 * - `json`: Events API (`url_verification`, `event_callback`, `app_rate_limited`);
 * - `form`: slash commands (`command`, `text`, `trigger_id`, …) and interactivity, whose `payload`
 *   field holds JSON (`type`: `block_actions`, `view_submission`, `shortcut`, …).
 */
type SlackBody =
  | { kind: "json"; value: Record<string, unknown> }
  | { kind: "form"; fields: Record<string, string>; payload?: Record<string, unknown> }
  | { kind: "invalid"; message: string };

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** Parses the text body (the raw bytes as UTF-8 if `body` is not a string): JSON for `application/json`, otherwise `application/x-www-form-urlencoded`. Never throws. */
function parseSlackBody(request: WebhookRequest, body: unknown): SlackBody {
  const text = typeof body === "string" ? body : new TextDecoder().decode(request.rawBody);
  const contentType = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (contentType === "application/json") {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { kind: "invalid", message: "body is not valid JSON" };
    }
    const record = asRecord(value);
    return record ? { kind: "json", value: record } : { kind: "invalid", message: "JSON body is not an object" };
  }
  const fields = Object.fromEntries(new URLSearchParams(text));
  if (fields.payload === undefined) return { kind: "form", fields };
  let payload: unknown;
  try {
    payload = JSON.parse(fields.payload);
  } catch {
    return { kind: "invalid", message: "the payload field is not valid JSON" };
  }
  const record = asRecord(payload);
  return record ? { kind: "form", fields, payload: record } : { kind: "invalid", message: "the payload field is not a JSON object" };
}

/**
 * Slack apps (spec 2.12): Events API, slash commands and interactivity on one Request URL,
 * `POST /api/webhooks/slack/events`:
 * - `verify`: `X-Slack-Signature` (`v0=` HMAC-SHA256 of `v0:<timestamp>:<body>`) against the signing
 *   secret, `X-Slack-Request-Timestamp` within `toleranceSec` both ways;
 * - body: `text`, parsed here by content type (JSON, or form fields with an optional JSON `payload`);
 * - idempotency key: the Events API `event_id` (Slack's retries, marked `X-Slack-Retry-Num`, carry
 *   the same one); for form bodies the `trigger_id` (of the form, or of the interactivity payload);
 *   otherwise none;
 * - `url_verification` answers `{ challenge }` (200, JSON); other events are logged and answered 202;
 *   slash commands and interactivity are logged and acknowledged with an empty 200; a body that does
 *   not parse answers 400.
 *
 * @param opts the signing secret(s), from the environment, and the timestamp tolerance
 * @throws Error when no signing secret (or an empty one) is given, so a missing environment variable stops startup
 * @example slackConnector({ signingSecret: process.env.SLACK_SIGNING_SECRET! })
 */
export function slackConnector(opts: SlackConnectorOptions) {
  const secrets = typeof opts.signingSecret === "string" ? [opts.signingSecret] : [...opts.signingSecret];
  if (secrets.length === 0 || secrets.some((s) => !s)) throw new Error("slackConnector: `signingSecret` is empty (set SLACK_SIGNING_SECRET to the app's Signing Secret)");
  const toleranceSec = opts.toleranceSec;

  return defineConnector({
    id: "slack",
    title: "Slack",
    description: "Receives Slack Events API requests, slash commands and interactivity.",
    webhooks: {
      events: defineWebhook({
        description: "Slack Request URL for events, slash commands and interactivity.",
        format: "text",
        verify: (req) => verifySlackSignature(req, secrets, { toleranceSec }),
        idempotencyKey(req, body) {
          const parsed = parseSlackBody(req, body);
          if (parsed.kind === "json") return str(parsed.value.event_id) ?? null;
          if (parsed.kind === "form") return str(parsed.fields.trigger_id) ?? str(parsed.payload?.trigger_id) ?? null;
          return null;
        },
        handle(ctx): WebhookResponse | void {
          const parsed = parseSlackBody(ctx.request, ctx.body);
          if (parsed.kind === "invalid") {
            ctx.log.warn({ reason: parsed.message }, "slack request body could not be parsed");
            return { status: 400, headers: { "content-type": "application/json" }, body: { error: { code: "invalid_request", message: `Slack request: ${parsed.message}` } } };
          }
          if (parsed.kind === "json") {
            const body = parsed.value;
            if (body.type === "url_verification") {
              return { status: 200, headers: { "content-type": "application/json" }, body: { challenge: str(body.challenge) ?? "" } };
            }
            const event = asRecord(body.event);
            ctx.log.info(
              { type: body.type, eventId: body.event_id, eventType: event?.type, teamId: body.team_id, retryNum: ctx.request.headers.get("x-slack-retry-num") ?? undefined },
              "slack event",
            );
            return;
          }
          if (parsed.payload) {
            ctx.log.info({ type: parsed.payload.type, triggerId: parsed.payload.trigger_id }, "slack interaction");
          } else {
            ctx.log.info({ command: parsed.fields.command, teamId: parsed.fields.team_id, userId: parsed.fields.user_id, triggerId: parsed.fields.trigger_id }, "slack slash command");
          }
          // Slack documents an HTTP 200 acknowledgement for commands and interactions; an empty body posts no message.
          return { status: 200 };
        },
      }),
    },
  });
}
