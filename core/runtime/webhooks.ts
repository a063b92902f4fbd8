import * as v from "valibot";
import { inject, injectable } from "../di";
import { Database } from "../store/db";
import { BatchedLookup } from "../store/batched-lookup";
import { EventLog } from "../events/log";
import { ProjectRegistry } from "../project/registry";
import { WorkflowRuns } from "./workflows";
import type { WebhookDefinition, WebhookRequest, WebhookResponse } from "../sdk/connector";
import { own } from "../sdk/project";
import { ApiError, isApiError, messageOf } from "../errors";
import { newId, nowIso } from "../ids";
import { formatIssues } from "../http/validation";
import { decodeListingToken, encodeListingToken } from "../http/listing-token";
import { handlerContext, HandlerRunner, RunRecording, type BufferedHandler, type HandlerRun } from "./handler";
import { CONFIG, type Config } from "../config";
import { LOGGER, type Logger } from "../logger";
import { Metrics, type Counter } from "../metrics";
import { ScalableBloomFilter } from "../store/bloom-filter";
import { attemptError, completeRuns, executionIdOf, insertRuns, runColumns, storedAttemptError, toRun, type AttemptErrorCode, type RunEnding, type WebhookAttempt, type WebhookRun, type WebhookRunRow } from "./webhook-runs";

/**
 * What to answer the provider: a status, headers and a body (a string or bytes are sent as they are,
 * anything else as JSON). The HTTP layer turns it into a response.
 */
export interface WebhookAnswer {
  status: number;
  headers: Record<string, string>;
  body?: unknown;
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
 * What became of a delivery, as `svc_webhook_deliveries_total{connector,webhook,outcome}` counts it:
 * its run's status when it ran (`completed`, `failed`), `duplicate` or `in_progress` when its key had
 * completed or was running (the 202 body's `status`), the error code it was refused with
 * (`unauthorized`: failed verification; `invalid_request`: its body or key), or `error` when the
 * service itself failed around it (the store refused the run's records: answered 500).
 */
export type DeliveryOutcome = "completed" | "failed" | "duplicate" | "in_progress" | "unauthorized" | "invalid_request" | "error";

/** A delivery's answer and what became of it. */
interface Delivered {
  answer: WebhookAnswer;
  outcome: DeliveryOutcome;
}

/** A delivery admitted for an attempt: its run, the attempt's number, and whether the run is recorded yet. */
interface Admitted {
  row: WebhookRunRow;
  attempt: number;
  recorded: boolean;
}

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

/**
 * Runs webhook deliveries by the spec's table (section 3):
 *
 * | Step | Here |
 * |---|---|
 * | Verify | `verify` on the raw bytes before anything is parsed; a throw is 401, nothing stored |
 * | Parse | {@link parseWebhookBody}; a failure is 400, nothing stored |
 * | Admit | the key is looked up (on the read connection) unless the stored keys' Bloom filter says it was never stored: a completed or in-flight delivery answers 202 and stops; a key stored before re-opens that run for a new attempt (one transaction); a new delivery gets its run and execution (a keyed one's execution id derived from its key, {@link executionIdOf}) |
 * | Handle | `handle` runs with the run's execution; its writes are buffered; a throw marks the attempt and run failed and answers 500; a provider retry (same key) re-attempts with the same execution |
 * | Complete | one transaction commits the handler's writes and events with the run's completion and response; the answer is 202 or the handler's response |
 *
 * A new delivery's run, execution and first attempt are recorded in that one completing transaction
 * when the handler ends within `SVC_RECORD_RUNNING_AFTER_MS` (default 20 ms): one commit per delivery,
 * the common case. A handler that runs longer, or is about to store something outside its buffer
 * (`ctx.blobs`, `ctx.artifacts`, `workflows.start`), has them recorded `running` on their own commit
 * first ({@link RunRecording}). A delivery whose handler was cut off by a crash is found `running`
 * (recorded) or not at all (not yet recorded): either way the provider's retry runs it with the same
 * execution, and since nothing of the cut attempt was committed, nothing is duplicated. Concurrent
 * duplicates are resolved in-process (one runtime process per data dir).
 */
@injectable()
export class WebhookDeliveries {
  private readonly inFlight = new Set<string>();
  private readonly recordRunningAfterMs: number;
  /** The runs stored for deliveries' keys, looked up in batches (concurrent deliveries share one read). */
  private readonly storedRuns: BatchedLookup<[connectorId: string, webhookId: string, key: string], WebhookRunRow>;
  /**
   * Every key (`connectorId\0webhookId\0key`) stored in `webhook_runs`, and more: the keys stored when
   * the process started (read by {@link WebhookDeliveries.loadStoredKeys}) and every key this process
   * admitted as new (added before its run can be written). A key it certainly lacks was never stored
   * (one process per data dir), so its delivery skips the lookup: about 45 µs of CPU per delivery
   * (issue 15). Until the keys are read, every key is looked up.
   */
  private readonly storedKeys = new ScalableBloomFilter();
  /** Whether {@link WebhookDeliveries.storedKeys} holds every key stored (set once they are read). */
  private storedKeysRead = false;
  /** Resolves once the stored keys are read (or reading them failed: then every key is looked up). */
  readonly storedKeysLoaded: Promise<void>;
  /** `svc_webhook_deliveries_total{connector,webhook,outcome}` ({@link DeliveryOutcome}). */
  private readonly delivered: Counter<"connector" | "webhook" | "outcome">;

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(WorkflowRuns) private readonly workflows: WorkflowRuns,
    @inject(HandlerRunner) private readonly handlers: HandlerRunner,
    @inject(CONFIG) config: Config,
    @inject(LOGGER) private readonly log: Logger,
    @inject(Metrics) metrics: Metrics,
  ) {
    this.delivered = metrics.counter("svc_webhook_deliveries_total", "Webhook deliveries received, by connector, webhook and outcome: the run's status (completed, failed), duplicate or in_progress (202 without a run), unauthorized (failed verification), invalid_request (body or key), or error (the service failed around it: 500); not counted here: a delivery to an unknown webhook or over the size limit (svc_http_requests_total has its 404 or 413), and replays (POST /api/webhook-runs/{runId}/replay)", ["connector", "webhook", "outcome"]);
    this.recordRunningAfterMs = config.recordRunningAfterMs;
    this.storedKeysLoaded = this.loadStoredKeys();
    this.storedRuns = new BatchedLookup(
      db,
      `SELECT k.key AS lookup, r.* FROM json_each(?) AS k
       JOIN webhook_runs AS r ON r.connector_id = k.value->>0 AND r.webhook_id = k.value->>1 AND r.idempotency_key = k.value->>2`,
    );
  }

  /**
   * Reads the keys stored in `webhook_runs` into {@link WebhookDeliveries.storedKeys}, 10,000 at a time
   * in the order of their UNIQUE index (on the read connection, while deliveries go on). Never throws: on
   * an error it logs a warning and every key goes on being looked up.
   */
  private async loadStoredKeys(): Promise<void> {
    const started = performance.now();
    const page = 10_000;
    const select = "SELECT connector_id AS c, webhook_id AS w, idempotency_key AS k FROM webhook_runs WHERE idempotency_key IS NOT NULL";
    const order = `ORDER BY connector_id, webhook_id, idempotency_key LIMIT ${page}`;
    try {
      let after: { c: string; w: string; k: string } | undefined;
      let count = 0;
      for (;;) {
        const rest = after ? " AND (connector_id, webhook_id, idempotency_key) > (?, ?, ?)" : "";
        const rows = await this.db.all<{ c: string; w: string; k: string }>(`${select}${rest} ${order}`, after ? [after.c, after.w, after.k] : []);
        for (const r of rows) this.storedKeys.add(`${r.c}\u0000${r.w}\u0000${r.k}`);
        count += rows.length;
        if (rows.length < page) break;
        after = rows[rows.length - 1];
      }
      this.storedKeysRead = true;
      this.log.debug({ keys: count, ms: Math.round(performance.now() - started), bytes: this.storedKeys.stats().bytes }, "webhook idempotency keys read: new keys need no lookup");
    } catch (err) {
      this.log.warn({ err }, "could not read the stored webhook idempotency keys; every delivery's key is looked up");
    }
  }

  /**
   * The webhook a delivery names. Its id comes from the request's path: one named like an
   * `Object.prototype` member (`constructor`, `toString`, `__proto__`) is no webhook ({@link own}).
   * @throws {ApiError} not_found
   */
  private definition(connectorId: string, webhookId: string): WebhookDefinition<unknown> {
    const def = own(this.project.connectors.get(connectorId)?.webhooks, webhookId);
    if (!def) throw new ApiError("not_found", `No webhook "${webhookId}" on connector "${connectorId}"`);
    return def;
  }

  /**
   * Receives one delivery (its raw bytes already read, at most 1 MiB) and answers what to send back.
   * A delivery that fails verification is logged at warn (connector, webhook, the reason `verify` gave,
   * `clientAddress`): a wrong secret or a forger shows in the logs, not only in the provider's dashboard.
   * @param clientAddress the sender's IP address as the server saw it, for that log line
   * @throws {ApiError} not_found (404), unauthorized (401, verify threw), invalid_request (400, parse
   *   failed) — none of these creates an execution
   */
  async deliver(connectorId: string, webhookId: string, request: WebhookRequest, clientAddress?: string): Promise<WebhookAnswer> {
    const def = this.definition(connectorId, webhookId);
    let outcome: DeliveryOutcome = "error";
    try {
      const delivered = await this.receive(def, connectorId, webhookId, request, clientAddress);
      outcome = delivered.outcome;
      return delivered.answer;
    } catch (err) {
      if (isApiError(err) && (err.code === "unauthorized" || err.code === "invalid_request")) outcome = err.code;
      throw err;
    } finally {
      this.delivered.inc({ connector: connectorId, webhook: webhookId, outcome });
    }
  }

  /** {@link WebhookDeliveries.deliver} past the webhook's lookup: the spec's steps, and what became of the delivery. */
  private async receive(def: WebhookDefinition<unknown>, connectorId: string, webhookId: string, request: WebhookRequest, clientAddress: string | undefined): Promise<Delivered> {
    if (def.verify) {
      try {
        await def.verify(request);
      } catch (err) {
        const reason = (err as { reason?: unknown }).reason;
        this.log.warn({ connectorId, webhookId, reason: typeof reason === "string" ? reason : messageOf(err), clientAddress }, "webhook delivery failed verification (401, not stored)");
        throw new ApiError("unauthorized", "The delivery failed verification", typeof reason === "string" ? { reason } : undefined);
      }
    }
    const body = parseWebhookBody(def, request);
    const key = this.keyOf(def, connectorId, webhookId, request, body);

    const flightKey = key === null ? undefined : `${connectorId}\u0000${webhookId}\u0000${key}`;
    if (flightKey && this.inFlight.has(flightKey)) return { answer: answer(202, { status: "in_progress" }), outcome: "in_progress" };
    if (flightKey) this.inFlight.add(flightKey);
    try {
      // a key seen before: a completed delivery answers 202 and stops; any other is re-attempted with
      // its stored run and execution (the reader sees every commit of this process: a delivery's commit
      // resolves before its key leaves `inFlight`)
      const stored = key === null || (this.storedKeysRead && !this.storedKeys.mightHave(flightKey!)) ? undefined : await this.storedRuns.get([connectorId, webhookId, key]);
      if (stored?.status === "completed") return { answer: answer(202, { status: "duplicate" }), outcome: "duplicate" };
      // from here on the key may be stored (its run is written at the latest with the handler's commit)
      if (flightKey && !stored) this.storedKeys.add(flightKey);
      // a stored run the run retention deleted meanwhile is reopened as none: the delivery is new
      const admitted = (stored && (await this.reopen(stored))) || { row: this.newRun(connectorId, webhookId, key, request, undefined), attempt: 1, recorded: false };
      return await this.handle(def, admitted, body, request);
    } finally {
      if (flightKey) this.inFlight.delete(flightKey);
    }
  }

  /**
   * The delivery's idempotency key: what the webhook's `idempotencyKey` answers, null without one (or
   * when it answers null or undefined: a new delivery each time). Only a non-empty string is a key: a
   * number or an object made up by `String()` collided (7 and "7"; every object "[object Object]", whose
   * second delivery was taken for a duplicate), and an empty string would be one key for every delivery.
   * @throws {ApiError} invalid_request (400, nothing stored) when `idempotencyKey` throws or answers
   *   anything else; the latter, a connector's mistake, is also logged
   */
  private keyOf(def: WebhookDefinition<unknown>, connectorId: string, webhookId: string, request: WebhookRequest, body: unknown): string | null {
    let key: unknown;
    try {
      key = def.idempotencyKey?.(request, body);
    } catch (err) {
      throw new ApiError("invalid_request", `The delivery has no usable idempotency key: ${messageOf(err)}`);
    }
    if (key === undefined || key === null) return null;
    if (typeof key === "string" && key !== "") return key;
    const answered = key === "" ? "an empty string" : Array.isArray(key) ? "an array" : typeof key === "object" ? "an object" : typeof key === "function" ? "a function" : `the ${typeof key} ${String(key)}`;
    this.log.warn({ connectorId, webhookId, answered }, "a webhook's idempotencyKey answered something other than a non-empty string, null or undefined; the delivery was refused (400)");
    throw new ApiError("invalid_request", `The delivery has no usable idempotency key: the webhook's idempotencyKey answered ${answered}; a key is a non-empty string (null or undefined for none)`);
  }

  /** A new delivery's run, not recorded yet (see {@link WebhookDeliveries.handle}). */
  private newRun(connectorId: string, webhookId: string, key: string | null, request: WebhookRequest, replayOf: string | undefined): WebhookRunRow {
    return {
      id: newId("whrun"),
      execution_id: key === null ? newId("exec") : executionIdOf(connectorId, webhookId, key),
      connector_id: connectorId,
      webhook_id: webhookId,
      idempotency_key: key,
      status: "running",
      attempts: 1,
      received_at: nowIso(),
      finished_at: null,
      content_type: request.headers.get("content-type"),
      headers: JSON.stringify(redactHeaders(request.headers)),
      body: Buffer.from(request.rawBody),
      response: null,
      replay_of: replayOf ?? null,
      query: request.url.search ? request.url.search.slice(1) : null,
    };
  }

  /**
   * Admit for a key stored before whose delivery did not complete: re-opens that run for a new attempt
   * with its execution, and marks an attempt a dead process left `running` as interrupted. Answers
   * undefined, writing nothing, when the run is gone since it was read (the run retention deleted it,
   * core/store/run-retention.ts).
   */
  private reopen(existing: WebhookRunRow): Promise<Admitted | undefined> {
    return this.db.transaction(async (tx) => {
      const attempt = existing.attempts + 1;
      const at = nowIso();
      if ((await tx.run("UPDATE webhook_runs SET status = 'running', attempts = ? WHERE id = ?", [attempt, existing.id])).changes === 0) return undefined;
      await tx.run("UPDATE webhook_attempts SET status = 'failed', finished_at = ?, error = ? WHERE run_id = ? AND status = 'running'", [at, storedAttemptError("interrupted", "interrupted (the process stopped during the attempt)"), existing.id]);
      await tx.run("INSERT INTO webhook_attempts (run_id, attempt, started_at, status) VALUES (?, ?, ?, 'running')", [existing.id, attempt, at]);
      return { row: { ...existing, status: "running" as const, attempts: attempt }, attempt, recorded: true };
    });
  }

  /**
   * Handle + Complete. A new run (`recorded` false) is recorded with its completion, in one
   * transaction, when the handler ends within `SVC_RECORD_RUNNING_AFTER_MS`; else, or before the
   * handler stores something outside its buffer (`ctx.blobs`, `ctx.artifacts`, `workflows.start`), on
   * its own first (see {@link RunRecording}).
   */
  private async handle(def: WebhookDefinition<unknown>, admitted: Admitted, body: unknown, request: WebhookRequest): Promise<Delivered> {
    const { row, attempt } = admitted;
    const executionId = row.execution_id;
    const recording = admitted.recorded ? undefined : new RunRecording(() => this.db.transaction(async (tx) => tx.defer(insertRuns, [runColumns(row)])), this.recordRunningAfterMs);
    const beforeStore = recording?.now;
    const spec: HandlerRun = { run: { kind: "webhook", id: row.id }, logFields: { connectorId: row.connector_id, webhookId: row.webhook_id, attempt }, correlationId: executionId, key: `webhook:${executionId}` };
    let workflowStarts = 0;
    let buffered: BufferedHandler<WebhookResponse | void> | undefined;
    let failure: unknown;
    try {
      buffered = await this.handlers.execute(
        spec,
        (ctx) =>
          def.handle(
            handlerContext(ctx, {
              body,
              request,
              delivery: { runId: row.id, executionId, attempt, connectorId: row.connector_id, webhookId: row.webhook_id, idempotencyKey: row.idempotency_key },
              workflows: {
                start: async (workflowId, input) => {
                  const runId = `${executionId}-wf-${++workflowStarts}`;
                  await beforeStore?.();
                  return this.workflows.start(workflowId, input, undefined, runId);
                },
              },
            }),
          ),
        { beforeStore },
      );
    } catch (err) {
      failure = err;
      this.handlers.logger(spec).warn({ err }, "webhook handler failed; the provider may retry");
    }
    // a run recorded on its own is completed by an UPDATE in a later group (see RunRecording)
    const recorded = admitted.recorded || (await recording!.ended());
    if (!buffered) {
      await this.fail(row, attempt, "handler_failed", failure, recorded);
      return { answer: answer(500, { error: { code: "internal", message: "The webhook handler failed; retry the delivery", details: { runId: row.id } } }), outcome: "failed" };
    }

    const result = buffered.result;
    const response = result ? { status: result.status ?? 200, headers: result.headers ?? {}, body: result.body } : { status: 202, headers: {}, body: undefined };
    // an answer HTTP cannot carry fails the attempt before anything of it is written (it was found only
    // while being sent, after the commit: the provider got a 500 for a delivery stored completed)
    const invalid = result ? problemOfAnswer(response) : undefined; // the plain 202 needs no check
    if (invalid) {
      const err = new Error(`The webhook handler's answer cannot be sent: ${invalid}`);
      this.handlers.logger(spec).error({ err }, "webhook handler answered something HTTP cannot carry; nothing of the attempt was written");
      await this.fail(row, attempt, "invalid_answer", err, recorded);
      return { answer: answer(500, { error: { code: "internal", message: "The webhook handler's answer was invalid; nothing was written", details: { runId: row.id } } }), outcome: "failed" };
    }
    try {
      await this.db.transaction(async (tx) => {
        const ending: RunEnding = ["completed", nowIso(), JSON.stringify(response), null];
        if (!recorded) tx.defer(insertRuns, [runColumns(row, ending)]);
        await this.handlers.commitInTx(tx, buffered, spec, { origin: { kind: "runtime", connectorId: row.connector_id, webhookId: row.webhook_id, runId: row.id }, idempotencyKey: `webhook:${executionId}` });
        if (recorded) tx.defer(completeRuns, [[row.id, attempt, ending[1], ending[2]!]]);
      });
    } catch (err) {
      this.handlers.logger(spec).warn({ err }, "webhook completion failed; nothing of the attempt was written");
      await this.fail(row, attempt, "commit_failed", err, recorded);
      return { answer: answer(500, { error: { code: "internal", message: "The webhook handler's writes were refused; retry the delivery", details: { runId: row.id } } }), outcome: "failed" };
    }
    await this.events.drain();
    return { answer: result ? response : answer(202, { status: "accepted", runId: row.id }), outcome: "completed" };
  }

  /** Marks the attempt and run failed (the attempt's error: `code`, and `err`'s message): an UPDATE of a recorded run, else the run recorded failed. */
  private async fail(row: WebhookRunRow, attempt: number, code: AttemptErrorCode, err: unknown, recorded: boolean): Promise<void> {
    const error = storedAttemptError(code, messageOf(err));
    const now = nowIso();
    await this.db.transaction(async (tx) => {
      if (!recorded) return tx.defer(insertRuns, [runColumns(row, ["failed", now, null, error])]);
      await tx.run("UPDATE webhook_runs SET status = 'failed', finished_at = ? WHERE id = ?", [now, row.id]);
      await tx.run("UPDATE webhook_attempts SET status = 'failed', finished_at = ?, error = ? WHERE run_id = ? AND attempt = ?", [now, error, row.id, attempt]);
    });
  }

  /**
   * Replays a stored delivery into a new run (new execution, no idempotency key), skipping `verify`:
   * the stored delivery passed it when it arrived, and its signature headers are not kept. Its URL carries
   * the delivery's query string (stored with the run, migration 028), as the handler read it then.
   * @throws {ApiError} not_found; invalid_request when the stored body no longer parses
   */
  async replay(runId: string): Promise<{ run: WebhookRun; response: { status: number } }> {
    const original = await this.db.get<WebhookRunRow>("SELECT * FROM webhook_runs WHERE id = ?", [runId]);
    if (!original) throw new ApiError("not_found", `No webhook run "${runId}"`);
    const def = this.definition(original.connector_id, original.webhook_id);
    const headers = new Headers(JSON.parse(original.headers) as Record<string, string>);
    const request: WebhookRequest = { method: "POST", headers, rawBody: new Uint8Array(original.body), url: new URL(`http://replay/api/webhooks/${original.connector_id}/${original.webhook_id}${original.query === null ? "" : `?${original.query}`}`) };
    const body = parseWebhookBody(def, request);
    const row = this.newRun(original.connector_id, original.webhook_id, null, request, original.id);
    const { answer: response } = await this.handle(def, { row, attempt: 1, recorded: false }, body, request);
    return { run: await this.get(row.id), response: { status: response.status } };
  }

  /** A run with its attempts. @throws {ApiError} not_found */
  async get(runId: string): Promise<WebhookRun> {
    const row = await this.db.get<WebhookRunRow>("SELECT * FROM webhook_runs WHERE id = ?", [runId]);
    if (!row) throw new ApiError("not_found", `No webhook run "${runId}"`);
    const attempts = await this.db.all<{ attempt: number; status: WebhookAttempt["status"]; started_at: string; finished_at: string | null; error: string | null }>("SELECT * FROM webhook_attempts WHERE run_id = ? ORDER BY attempt", [runId]);
    return toRun(row, attempts.map((a) => ({ attempt: a.attempt, status: a.status, startedAt: a.started_at, ...(a.finished_at ? { finishedAt: a.finished_at } : {}), ...(a.error ? { error: attemptError(a.error) } : {}) })));
  }

  /**
   * Runs newest first, filtered; `nextPageToken` continues. The token is opaque (the last run's id and
   * the listing's filters: core/http/listing-token.ts) and only continues the listing that issued it.
   * @throws {ApiError} invalid_request for a token this listing did not issue, or one of other filters
   */
  async list(q: { connectorId?: string; webhookId?: string; status?: string; pageSize: number; nextPageToken?: string }): Promise<{ data: WebhookRun[]; nextPageToken?: string }> {
    const filters = JSON.stringify([q.connectorId ?? null, q.webhookId ?? null, q.status ?? null]);
    const after = q.nextPageToken === undefined ? undefined : decodeListingToken(q.nextPageToken, filters, (x): x is string => typeof x === "string", "connectorId, webhookId and status");
    const where: string[] = [];
    const params: string[] = [];
    for (const [column, value] of [["connector_id", q.connectorId], ["webhook_id", q.webhookId], ["status", q.status], ["id", after]] as const) {
      if (value === undefined) continue;
      where.push(column === "id" ? "id < ?" : `${column} = ?`);
      params.push(value);
    }
    const rows = await this.db.all<WebhookRunRow>(`SELECT * FROM webhook_runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC LIMIT ?`, [...params, q.pageSize + 1] as never);
    const page = rows.slice(0, q.pageSize);
    const data = await Promise.all(page.map((r) => this.get(r.id)));
    const next = rows.length > q.pageSize ? encodeListingToken(page[page.length - 1]!.id, filters) : undefined;
    return { data, ...(next ? { nextPageToken: next } : {}) };
  }
}

/**
 * What is wrong with a handler's answer for HTTP, or undefined when it can be sent (spec 2.12: status,
 * headers, body): a status outside 200–599 or not whole, a body with 204, 205 or 304, a header name or
 * value `Headers` refuses, a body that is not a string, bytes or JSON-serializable (a BigInt, a cycle).
 */
export function problemOfAnswer(response: { status: number; headers: Record<string, string>; body: unknown }): string | undefined {
  if (!Number.isInteger(response.status) || response.status < 200 || response.status > 599) return `its status ${String(response.status)} is not a whole number in 200-599`;
  if (response.body !== undefined && (response.status === 204 || response.status === 205 || response.status === 304)) return `a ${response.status} answer cannot have a body`;
  try {
    new Headers(response.headers);
  } catch (err) {
    return `its headers are not valid HTTP headers (${messageOf(err)})`;
  }
  if (response.body !== undefined && typeof response.body !== "string" && !(response.body instanceof Uint8Array)) {
    try {
      if (JSON.stringify(response.body) === undefined) return "its body is not a JSON value (a function or a symbol)";
    } catch (err) {
      return `its body cannot be written as JSON (${messageOf(err)})`;
    }
  }
  return undefined;
}
