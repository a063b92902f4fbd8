import * as v from "valibot";
import { inject, injectable } from "../di";
import { Database, jsonRowsStatement, type GroupStatement, type SqlStatements } from "../store/db";
import { EventLog } from "../events/log";
import { ProjectRegistry } from "../project/registry";
import { WorkflowRuns } from "./workflows";
import type { WebhookDefinition, WebhookRequest, WebhookResponse } from "../sdk/connector";
import { ApiError } from "../errors";
import { newId, nowIso } from "../ids";
import { formatIssues } from "../http/validation";
import { HandlerRunner, type BufferedHandler, type HandlerRun } from "./handler";

/** One handling attempt of a Webhook run. */
export const WebhookAttemptSchema = v.object({
  attempt: v.number(),
  status: v.picklist(["running", "completed", "failed"]),
  startedAt: v.string(),
  finishedAt: v.optional(v.string()),
  error: v.optional(v.object({ message: v.string() })),
});
export type WebhookAttempt = v.InferOutput<typeof WebhookAttemptSchema>;

/** A Webhook run as operators read it (`GET /api/webhook-runs/:runId`). Sensitive headers are `[redacted]`. */
export const WebhookRunSchema = v.object({
  id: v.string(),
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

/**
 * What to answer the provider: a status, headers and a body (a string or bytes are sent as they are,
 * anything else as JSON). The HTTP layer turns it into a response.
 */
export interface WebhookAnswer {
  status: number;
  headers: Record<string, string>;
  body?: unknown;
}

interface RunRow {
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
}

/** Headers never stored in clear nor echoed: signatures, secrets, credentials. */
const SENSITIVE = /signature|secret|token|authorization|cookie|api-key|apikey|password/i;

/** Headers with sensitive values replaced by `[redacted]`. */
export function redactHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = SENSITIVE.test(name) ? "[redacted]" : value;
  });
  return out;
}

const answer = (status: number, body: unknown): WebhookAnswer => ({ status, headers: {}, body });

/**
 * Parses a delivery's body in the webhook's format (spec 2.12): `json` (then the optional valibot
 * schema), `text` (UTF-8) or `raw` (the bytes).
 * @throws {ApiError} invalid_request (400) when the body does not parse or validate
 */
export function parseWebhookBody(def: WebhookDefinition<unknown>, request: WebhookRequest): unknown {
  if (def.format === "raw") return request.rawBody;
  const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  let decoded: string;
  try {
    decoded = text.decode(request.rawBody);
  } catch {
    throw new ApiError("invalid_request", "The body is not valid UTF-8");
  }
  if (def.format === "text") return decoded;
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoded);
  } catch (err) {
    throw new ApiError("invalid_request", `The body is not valid JSON: ${(err as Error).message}`);
  }
  if (!def.schema) return parsed;
  const result = v.safeParse(def.schema, parsed);
  if (!result.success) throw new ApiError("invalid_request", `The body does not match the webhook's schema: ${result.issues[0].message}`, { issues: formatIssues(result.issues, "body") });
  return result.output;
}

/** A delivery the admit stores as a new run: its row, and whether the group commit stored it (see {@link admitRuns}). */
interface NewRun {
  row: RunRow;
  stored: boolean;
}

/** A {@link NewRun}'s columns as one `json_each` row, the body as hex. */
type RunColumns = [id: string, executionId: string, connectorId: string, webhookId: string, key: string | null, receivedAt: string, contentType: string | null, headers: string, bodyHex: string, replayOf: string | null];
function runColumns({ row: r }: NewRun): RunColumns {
  return [r.id, r.execution_id, r.connector_id, r.webhook_id, r.idempotency_key, r.received_at, r.content_type, r.headers, r.body.toString("hex"), r.replay_of];
}
const INSERT_RUNS = `INSERT INTO webhook_runs (id, execution_id, connector_id, webhook_id, idempotency_key, status, attempts, received_at, content_type, headers, body, replay_of)
  SELECT value->>0, value->>1, value->>2, value->>3, value->>4, 'running', 1, value->>5, value->>6, value->>7, unhex(value->>8), value->>9 FROM json_each(?) WHERE true ORDER BY key`;
const INSERT_FIRST_ATTEMPTS = "INSERT INTO webhook_attempts (run_id, attempt, started_at, status) SELECT value->>0, 1, value->>5, 'running' FROM json_each(?) ORDER BY key";
const insertFirstAttempts = jsonRowsStatement<RunColumns>(INSERT_FIRST_ATTEMPTS);
/** The one-call form: every run and its first attempt, failing on a key stored before. */
const insertRunsAndFirstAttempts = jsonRowsStatement<RunColumns>(INSERT_RUNS, INSERT_FIRST_ATTEMPTS);

/**
 * The group commit's INSERT of the deliveries its callers admit as new runs (status `running`, attempt
 * 1), with their first attempts: one statement each over all of them (`json_each`), so a first
 * delivery costs the writer no call to SQLite of its own (see `GroupStatement`). Notes on each whether
 * it was stored: a run whose idempotency key was stored before is not (its caller then takes the
 * retry path).
 *
 * - `sql` (the group's one call) inserts them all, and fails on a key stored before (the UNIQUE index
 *   `webhook_runs_by_key`): the group then calls `run`.
 * - `run` inserts with `ON CONFLICT DO NOTHING RETURNING id`, then the first attempts of those stored.
 */
const admitRuns: GroupStatement<NewRun> = {
  async run(w: SqlStatements, runs: readonly NewRun[]): Promise<void> {
    const stored = new Set((await w.all<{ id: string }>(`${INSERT_RUNS} ON CONFLICT DO NOTHING RETURNING id`, [JSON.stringify(runs.map(runColumns))])).map((r) => r.id));
    for (const run of runs) run.stored = stored.has(run.row.id);
    const fresh = runs.filter((run) => run.stored);
    if (fresh.length > 0) await insertFirstAttempts.run(w, fresh.map(runColumns));
  },
  sql(runs: readonly NewRun[]): string | undefined {
    for (const run of runs) run.stored = true;
    return insertRunsAndFirstAttempts.sql!(runs.map(runColumns));
  },
};

/**
 * The group commit's completion of the runs its callers finished: the run and its attempt marked
 * `completed`, two statements for the whole group. An item is `[runId, attempt, finishedAt, response]`
 * (`response` as JSON text).
 */
const completeRuns = jsonRowsStatement<[runId: string, attempt: number, finishedAt: string, response: string]>(
  "UPDATE webhook_runs SET status = 'completed', finished_at = j.value->>2, response = j.value->>3 FROM json_each(?) AS j WHERE webhook_runs.id = j.value->>0",
  "UPDATE webhook_attempts SET status = 'completed', finished_at = j.value->>2 FROM json_each(?) AS j WHERE webhook_attempts.run_id = j.value->>0 AND webhook_attempts.attempt = j.value->>1",
);

/**
 * Runs webhook deliveries by the spec's table (section 3):
 *
 * | Step | Here |
 * |---|---|
 * | Verify | `verify` on the raw bytes before anything is parsed; a throw is 401, nothing stored |
 * | Parse | {@link parseWebhookBody}; a failure is 400, nothing stored |
 * | Admit | a new key: the run, its execution and first attempt are stored in one group-commit statement ({@link admitRuns}); a key stored before: a second transaction re-opens that run; a completed or in-flight delivery answers 202 and stops |
 * | Handle | `handle` runs with the run's execution; its writes are buffered; a throw marks the attempt and run failed and answers 500; a provider retry (same key) re-attempts with the same execution |
 * | Complete | one transaction commits the handler's writes and events with the run's completion and response; the answer is 202 or the handler's response |
 *
 * A delivery whose handler was cut off by a crash is found `running` but not in flight here: the
 * provider's retry re-attempts it, and since nothing of the cut attempt was committed, nothing is
 * duplicated. Concurrent duplicates are resolved in-process (one runtime process per data dir).
 */
@injectable()
export class WebhookDeliveries {
  private readonly inFlight = new Set<string>();

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(WorkflowRuns) private readonly workflows: WorkflowRuns,
    @inject(HandlerRunner) private readonly handlers: HandlerRunner,
  ) {}

  private definition(connectorId: string, webhookId: string): WebhookDefinition<unknown> {
    const def = this.project.connectors.get(connectorId)?.webhooks?.[webhookId];
    if (!def) throw new ApiError("not_found", `No webhook "${webhookId}" on connector "${connectorId}"`);
    return def;
  }

  /**
   * Receives one delivery (its raw bytes already read, at most 1 MiB) and answers what to send back.
   * @throws {ApiError} not_found (404), unauthorized (401, verify threw), invalid_request (400, parse
   *   failed) — none of these creates an execution
   */
  async deliver(connectorId: string, webhookId: string, request: WebhookRequest): Promise<WebhookAnswer> {
    const def = this.definition(connectorId, webhookId);
    if (def.verify) {
      try {
        await def.verify(request);
      } catch (err) {
        const reason = (err as { reason?: unknown }).reason;
        throw new ApiError("unauthorized", "The delivery failed verification", typeof reason === "string" ? { reason } : undefined);
      }
    }
    const body = parseWebhookBody(def, request);
    let key: string | null = null;
    try {
      key = def.idempotencyKey?.(request, body) ?? null;
    } catch (err) {
      throw new ApiError("invalid_request", `The delivery has no usable idempotency key: ${(err as Error).message}`);
    }
    if (key !== null && typeof key !== "string") key = String(key);

    const flightKey = key === null ? undefined : `${connectorId}\u0000${webhookId}\u0000${key}`;
    if (flightKey && this.inFlight.has(flightKey)) return answer(202, { status: "in_progress" });
    if (flightKey) this.inFlight.add(flightKey);
    try {
      const admitted = await this.admit(connectorId, webhookId, key, request, undefined);
      if (!admitted) return answer(202, { status: "duplicate" });
      return await this.handle(def, admitted, body, request);
    } finally {
      if (flightKey) this.inFlight.delete(flightKey);
    }
  }

  /**
   * Admit: resolves the key and creates (or re-opens for a retry) the run with its execution. Answers
   * undefined when the delivery is already completed.
   *
   * A new run and its first attempt are one group statement ({@link admitRuns}): a first delivery (the
   * common case) costs no lookup and no call to SQLite of its own. When its key was stored before, the
   * group stores nothing of it, and a second transaction reads that run and re-opens it for this
   * attempt (or answers undefined when it completed).
   */
  private async admit(connectorId: string, webhookId: string, key: string | null, request: WebhookRequest, replayOf: string | undefined): Promise<{ row: RunRow; attempt: number } | undefined> {
    const now = nowIso();
    const run: NewRun = {
      row: {
        id: newId("whrun"),
        execution_id: newId("exec"),
        connector_id: connectorId,
        webhook_id: webhookId,
        idempotency_key: key,
        status: "running",
        attempts: 1,
        received_at: now,
        finished_at: null,
        content_type: request.headers.get("content-type"),
        headers: JSON.stringify(redactHeaders(request.headers)),
        body: Buffer.from(request.rawBody),
        response: null,
        replay_of: replayOf ?? null,
      },
      stored: false,
    };
    await this.db.transaction(async (tx) => tx.defer(admitRuns, [run]));
    if (run.stored) return { row: run.row, attempt: 1 };
    if (key === null) throw new Error(`webhook run ${run.row.id} was not stored`);
    return this.db.transaction(async (tx) => {
      const existing = await tx.get<RunRow>("SELECT * FROM webhook_runs WHERE connector_id = ? AND webhook_id = ? AND idempotency_key = ?", [connectorId, webhookId, key]);
      if (!existing) throw new Error(`webhook run ${run.row.id} conflicted with a stored run that is gone`);
      if (existing.status === "completed") return undefined;
      const attempt = existing.attempts + 1;
      const at = nowIso();
      await tx.run("UPDATE webhook_runs SET status = 'running', attempts = ? WHERE id = ?", [attempt, existing.id]);
      await tx.run("UPDATE webhook_attempts SET status = 'failed', finished_at = ?, error = ? WHERE run_id = ? AND status = 'running'", [at, JSON.stringify({ message: "interrupted (the process stopped during the attempt)" }), existing.id]);
      await tx.run("INSERT INTO webhook_attempts (run_id, attempt, started_at, status) VALUES (?, ?, ?, 'running')", [existing.id, attempt, at]);
      return { row: { ...existing, status: "running" as const, attempts: attempt }, attempt };
    });
  }

  /** Handle + Complete. */
  private async handle(def: WebhookDefinition<unknown>, admitted: { row: RunRow; attempt: number }, body: unknown, request: WebhookRequest): Promise<WebhookAnswer> {
    const { row, attempt } = admitted;
    const executionId = row.execution_id;
    const spec: HandlerRun = { run: { kind: "webhook", id: row.id }, logFields: { connectorId: row.connector_id, webhookId: row.webhook_id, attempt }, correlationId: executionId, key: `webhook:${executionId}` };
    let workflowStarts = 0;
    let buffered: BufferedHandler<WebhookResponse | void>;
    try {
      buffered = await this.handlers.execute(spec, (ctx) =>
        def.handle({
          ...ctx,
          body,
          request,
          delivery: { runId: row.id, executionId, attempt, connectorId: row.connector_id, webhookId: row.webhook_id, idempotencyKey: row.idempotency_key },
          workflows: { start: (workflowId, input) => this.workflows.start(workflowId, input, undefined, `${executionId}-wf-${++workflowStarts}`) },
        }),
      );
    } catch (err) {
      this.handlers.logger(spec).warn({ err }, "webhook handler failed; the provider may retry");
      await this.fail(row.id, attempt, err);
      return answer(500, { error: { code: "internal", message: "The webhook handler failed; retry the delivery", details: { runId: row.id } } });
    }

    const result = buffered.result;
    const response = result ? { status: result.status ?? 200, headers: result.headers ?? {}, body: result.body } : { status: 202, headers: {}, body: undefined };
    try {
      await this.db.transaction(async (tx) => {
        await this.handlers.commitInTx(tx, buffered, spec, { origin: { kind: "runtime", connectorId: row.connector_id, webhookId: row.webhook_id, runId: row.id }, idempotencyKey: `webhook:${executionId}` });
        const now = nowIso();
        tx.defer(completeRuns, [[row.id, attempt, now, JSON.stringify(response)]]);
      });
    } catch (err) {
      this.handlers.logger(spec).warn({ err }, "webhook completion failed; nothing of the attempt was written");
      await this.fail(row.id, attempt, err);
      return answer(500, { error: { code: "internal", message: "The webhook handler's writes were refused; retry the delivery", details: { runId: row.id } } });
    }
    await this.events.drain();
    if (!result) return answer(202, { status: "accepted", runId: row.id });
    return response;
  }

  private async fail(runId: string, attempt: number, err: unknown): Promise<void> {
    const error = JSON.stringify({ message: err instanceof Error ? err.message : String(err) });
    const now = nowIso();
    await this.db.transaction(async (tx) => {
      await tx.run("UPDATE webhook_runs SET status = 'failed', finished_at = ? WHERE id = ?", [now, runId]);
      await tx.run("UPDATE webhook_attempts SET status = 'failed', finished_at = ?, error = ? WHERE run_id = ? AND attempt = ?", [now, error, runId, attempt]);
    });
  }

  /**
   * Replays a stored delivery into a new run (new execution, no idempotency key), skipping `verify`:
   * the stored delivery passed it when it arrived, and its signature headers are not kept.
   * @throws {ApiError} not_found; invalid_request when the stored body no longer parses
   */
  async replay(runId: string): Promise<{ run: WebhookRun; response: { status: number } }> {
    const original = await this.db.get<RunRow>("SELECT * FROM webhook_runs WHERE id = ?", [runId]);
    if (!original) throw new ApiError("not_found", `No webhook run "${runId}"`);
    const def = this.definition(original.connector_id, original.webhook_id);
    const headers = new Headers(JSON.parse(original.headers) as Record<string, string>);
    const request: WebhookRequest = { method: "POST", headers, rawBody: new Uint8Array(original.body), url: new URL(`http://replay/api/webhooks/${original.connector_id}/${original.webhook_id}`) };
    const body = parseWebhookBody(def, request);
    const admitted = (await this.admit(original.connector_id, original.webhook_id, null, request, original.id))!;
    const response = await this.handle(def, admitted, body, request);
    return { run: await this.get(admitted.row.id), response: { status: response.status } };
  }

  /** A run with its attempts. @throws {ApiError} not_found */
  async get(runId: string): Promise<WebhookRun> {
    const row = await this.db.get<RunRow>("SELECT * FROM webhook_runs WHERE id = ?", [runId]);
    if (!row) throw new ApiError("not_found", `No webhook run "${runId}"`);
    const attempts = await this.db.all<{ attempt: number; status: WebhookAttempt["status"]; started_at: string; finished_at: string | null; error: string | null }>("SELECT * FROM webhook_attempts WHERE run_id = ? ORDER BY attempt", [runId]);
    return toRun(row, attempts.map((a) => ({ attempt: a.attempt, status: a.status, startedAt: a.started_at, ...(a.finished_at ? { finishedAt: a.finished_at } : {}), ...(a.error ? { error: JSON.parse(a.error) } : {}) })));
  }

  /** Runs newest first, filtered; `nextPageToken` continues. */
  async list(q: { connectorId?: string; webhookId?: string; status?: string; pageSize: number; nextPageToken?: string }): Promise<{ data: WebhookRun[]; nextPageToken?: string }> {
    const where: string[] = [];
    const params: string[] = [];
    for (const [column, value] of [["connector_id", q.connectorId], ["webhook_id", q.webhookId], ["status", q.status], ["id", q.nextPageToken]] as const) {
      if (value === undefined) continue;
      where.push(column === "id" ? "id < ?" : `${column} = ?`);
      params.push(value);
    }
    const rows = await this.db.all<RunRow>(`SELECT * FROM webhook_runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC LIMIT ?`, [...params, q.pageSize + 1] as never);
    const page = rows.slice(0, q.pageSize);
    const data = await Promise.all(page.map((r) => this.get(r.id)));
    return { data, ...(rows.length > q.pageSize ? { nextPageToken: page[page.length - 1]!.id } : {}) };
  }
}

function toRun(r: RunRow, attempts: WebhookAttempt[]): WebhookRun {
  return {
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
