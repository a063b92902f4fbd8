/**
 * Webhook runs as stored (`webhook_runs`, `webhook_attempts`: migrations 002, 016) and as operators read
 * them: the schemas, the row, the group commit's statements that record and complete runs, and the
 * execution id of a keyed delivery. `WebhookDeliveries` (./webhooks.ts) runs the delivery table with them.
 */
import * as v from "valibot";
import { hash } from "node:crypto";
import { insertRows, rowsStatement, statementsInOrder } from "../store/db";
import { RunErrorSchema, storedRunError, type RUN_ERROR_CODES, type RunError } from "../sdk/records";

/** Why a delivery's attempt failed (README "Run errors"). */
export type AttemptErrorCode = (typeof RUN_ERROR_CODES.webhookAttempt)[number];

/** One handling attempt of a Webhook run. */
export const WebhookAttemptSchema = v.object({
  attempt: v.number(),
  status: v.picklist(["running", "completed", "failed"]),
  startedAt: v.string(),
  finishedAt: v.optional(v.string()),
  error: v.optional(RunErrorSchema),
});
export type WebhookAttempt = v.InferOutput<typeof WebhookAttemptSchema>;

/** A Webhook run as operators read it (`GET /api/webhook-runs/:runId`). Sensitive headers are `[redacted]`. */
export const WebhookRunSchema = v.object({
  /** The run's id (`whrun_…`), as every other run kind's `runId`; the same value as `id`. */
  runId: v.string(),
  id: v.pipe(v.string(), v.description("The same value as `runId` (kept for clients written before `runId`)")),
  executionId: v.string(),
  connectorId: v.string(),
  webhookId: v.string(),
  idempotencyKey: v.nullable(v.string()),
  status: v.picklist(["running", "completed", "failed"]),
  receivedAt: v.string(),
  finishedAt: v.optional(v.string()),
  attempts: v.array(WebhookAttemptSchema),
  request: v.object({ contentType: v.nullable(v.string()), headers: v.record(v.string(), v.string()), bodyBytes: v.number() }),
  response: v.optional(v.object({ status: v.number(), headers: v.record(v.string(), v.string()), body: v.optional(v.unknown()) })),
  replayOf: v.optional(v.string()),
});
export type WebhookRun = v.InferOutput<typeof WebhookRunSchema>;

/** A `webhook_runs` row. */
export interface WebhookRunRow {
  id: string;
  execution_id: string;
  connector_id: string;
  webhook_id: string;
  idempotency_key: string | null;
  status: WebhookRun["status"];
  attempts: number;
  received_at: string;
  finished_at: string | null;
  content_type: string | null;
  headers: string;
  body: Buffer;
  response: string | null;
  replay_of: string | null;
  /** The URL's query string as received, without `?` (migration 028); null without one. */
  query: string | null;
}

/**
 * A new run's columns as one row of {@link insertRuns}, the body as hex: the run as it is recorded, `running`
 * (status `running`, the last four null) or already ended (`completed` with its response, or `failed`
 * with its attempt's error), with attempt 1 in the same state.
 */
type RunColumns = [
  id: string, executionId: string, connectorId: string, webhookId: string, key: string | null, receivedAt: string, contentType: string | null, headers: string, bodyHex: string, replayOf: string | null,
  status: WebhookRun["status"], finishedAt: string | null, response: string | null, error: string | null, query: string | null,
];
/** How a delivery's attempt ended: `[status, finishedAt, response, error]`, the JSON columns as text. */
export type RunEnding = [status: "completed" | "failed", finishedAt: string, response: string | null, error: string | null];
/** A run's columns for {@link insertRuns}: `running` without `ending`, else ended as it says. */
export function runColumns(r: WebhookRunRow, ending?: RunEnding): RunColumns {
  return [r.id, r.execution_id, r.connector_id, r.webhook_id, r.idempotency_key, r.received_at, r.content_type, r.headers, r.body.toString("hex"), r.replay_of, ...(ending ?? (["running", null, null, null] as const)), r.query];
}

/**
 * The group commit's INSERT of the runs its callers record (see {@link RunRecording}), with their first
 * attempts: two statements over all of them ({@link insertRows}), so a first delivery costs the writer no call
 * to SQLite of its own (see `GroupStatement`). A key stored before fails the group: the delivery looked
 * its key up first (one process per data dir), so that means another process wrote the same data dir.
 */
export const insertRuns = statementsInOrder<RunColumns>(
  insertRows("webhook_runs", ["id", "execution_id", "connector_id", "webhook_id", "idempotency_key", "status", "attempts", "received_at", "content_type", "headers", "body", "replay_of", "finished_at", "response", "query"], {
    values: ["c0", "c1", "c2", "c3", "c4", "c10", "1", "c5", "c6", "c7", "unhex(c8)", "c9", "c11", "c12", "c14"],
  }),
  insertRows("webhook_attempts", ["run_id", "attempt", "started_at", "status", "finished_at", "error"], { values: ["c0", "1", "c5", "c10", "c11", "c13"] }),
);

/**
 * The group commit's completion of the runs its callers recorded `running` on their own: the run and
 * its attempt marked `completed`, two statements for the whole group. An item is
 * `[runId, attempt, finishedAt, response]` (`response` as JSON text).
 */
export const completeRuns = rowsStatement<[runId: string, attempt: number, finishedAt: string, response: string]>(
  4,
  "UPDATE webhook_runs SET status = 'completed', finished_at = j.c2, response = j.c3 FROM batch AS j WHERE webhook_runs.id = j.c0",
  "UPDATE webhook_attempts SET status = 'completed', finished_at = j.c2 FROM batch AS j WHERE webhook_attempts.run_id = j.c0 AND webhook_attempts.attempt = j.c1",
);

/**
 * A keyed delivery's execution id, derived from its key: a provider's retry runs with the same
 * execution (spec 3, "provider retries reuse the same run and execution") even when the attempt a crash
 * cut off was never recorded, so a handler may key its own outside calls by it. `exec_` + 26 base32 digits.
 * Such ids land at random places of any index on them: `execution_id` has none (migration 016), it is
 * unique by construction (the key is unique per webhook).
 */
export function executionIdOf(connectorId: string, webhookId: string, key: string): string {
  // the low 130 bits of the digest's first 136 bits (17 bytes, big-endian), 5 bits per digit, most
  // significant first: the first 6 bits are skipped, then 26 groups of 5. Read from the bytes, not
  // through a BigInt of the hex digest (the same digits; 1.3 against 2.7 µs, issue 15)
  const digest = hash("sha256", `${connectorId}\u0000${webhookId}\u0000${key}`, "buffer");
  let digits = "";
  let acc = digest[0]! & 0b11; // byte 0 without its first 6 bits
  let bits = 2;
  for (let i = 1; i < 17; i++) {
    acc = (acc << 8) | digest[i]!;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      digits += CROCKFORD[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return `exec_${digits}`;
}
/** ULID's alphabet (Crockford's base32). */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/**
 * An attempt's error as stored (`webhook_attempts.error`, JSON `{ code, message }`) as operators read
 * it. Attempts recorded before errors had codes stored `{ message }`: the process's stop is recognized
 * by its message (`interrupted`), anything else reads `failed`.
 */
export function attemptError(stored: string): RunError {
  return storedRunError(stored, (message) => (message.startsWith("interrupted") ? "interrupted" : "failed"));
}

/** An attempt's error as `webhook_attempts.error` keeps it: `{ code, message }` as JSON text. */
export function storedAttemptError(code: AttemptErrorCode, message: string): string {
  return JSON.stringify({ code, message });
}

/** A stored run with its attempts, as operators read it. */
export function toRun(r: WebhookRunRow, attempts: WebhookAttempt[]): WebhookRun {
  return {
    runId: r.id,
    id: r.id,
    executionId: r.execution_id,
    connectorId: r.connector_id,
    webhookId: r.webhook_id,
    idempotencyKey: r.idempotency_key,
    status: r.status,
    receivedAt: r.received_at,
    ...(r.finished_at ? { finishedAt: r.finished_at } : {}),
    attempts,
    request: { contentType: r.content_type, headers: JSON.parse(r.headers), bodyBytes: r.body.byteLength },
    ...(r.response ? { response: JSON.parse(r.response) } : {}),
    ...(r.replay_of ? { replayOf: r.replay_of } : {}),
  };
}
