import { inject, injectable } from "../di";
import * as v from "valibot";
import { Database } from "../store/db";
import { EventLog } from "../events/log";
import { OntologyStore } from "../ontology/store";
import { ProjectRegistry } from "../project/registry";
import { LOGGER, type Logger } from "../logger";
import { CONFIG, type Config } from "../config";
import { Lifecycle } from "../lifecycle";
import { TemporalHost } from "../temporal/host";
import { startRun } from "../temporal/start";
import { FileStore } from "../files/file-store";
import { Metrics, type Counter } from "../metrics";
import { findFileValues } from "../ontology/validate";
import { insertRows, rowsStatement, type SqlWriter } from "../store/db";
import { BatchedLookup } from "../store/batched-lookup";
import type { Actor } from "../events/catalog";
import type { ActionContext, ActionRunRecord, Subject } from "../sdk/context";
import { ApiError, isApiError, messageOf } from "../errors";
import { newId, nowIso } from "../ids";
import { formatIssues } from "../http/validation";
import { handlerContext, HandlerRunner, RunRecording, type BufferedHandler, type HandlerRun } from "./handler";

/** A request to run an action (spec 2.2). */
export interface ActionRunRequest {
  actionId: string;
  subject?: Subject;
  params: Record<string, unknown>;
  runId?: string;
  actor?: Actor;
}

interface RunRow {
  id: string;
  run_id: string;
  action_id: string;
  status: ActionRunRecord["status"];
  subject: string | null;
  params: string;
  attempts: number;
  started_at: string;
  finished_at: string | null;
  result: string | null;
  error: string | null;
}

function toRecord(r: RunRow): ActionRunRecord {
  const rec: ActionRunRecord = { id: r.id, actionId: r.action_id, runId: r.run_id, status: r.status, params: JSON.parse(r.params), startedAt: r.started_at, attempts: r.attempts };
  if (r.subject) rec.subject = JSON.parse(r.subject);
  if (r.finished_at) rec.finishedAt = r.finished_at;
  if (r.result !== null) rec.result = JSON.parse(r.result);
  if (r.error) rec.error = JSON.parse(r.error);
  return rec;
}

/**
 * The group commit's INSERT of the runs its callers record: one statement over all of them
 * instead of one call to SQLite per run (see {@link insertRows}). A run that
 * ended before it was recorded is inserted finished (one row write, no later UPDATE); a run recorded
 * while its handler runs is inserted `running` (status `running`, the last four items null) and
 * finished by {@link finishRuns}. An item is
 * `[id, runId, actionId, status, subject, params, actor, startedAt, finishedAt, result, error, effectStatus]`,
 * the JSON columns as text.
 */
const insertRuns = insertRows<ActionRunInsert>("action_runs", ["id", "run_id", "action_id", "status", "subject", "params", "actor", "started_at", "finished_at", "result", "error", "effect_status"]);
type ActionRunInsert = [
  id: string, runId: string, actionId: string, status: ActionRunRecord["status"], subject: string | null, params: string, actor: string | null, startedAt: string,
  finishedAt: string | null, result: string | null, error: string | null, effectStatus: "pending" | null,
];

/**
 * The group commit's UPDATE of the runs its callers finish after recording them `running`, likewise
 * one statement for the group. An item is `[id, status, finishedAt, result, error, effectStatus]`, the
 * JSON columns as text.
 */
const finishRuns = rowsStatement<ActionRunFinish>(
  6,
  `UPDATE action_runs SET status = j.c1, finished_at = j.c2, result = j.c3, error = j.c4, effect_status = j.c5
   FROM batch AS j WHERE action_runs.id = j.c0`,
);
type ActionRunFinish = [id: string, ...RunEnding];
/** How a run ended: `[status, finishedAt, result, error, effectStatus]`, the JSON columns as text. */
type RunEnding = [status: "succeeded" | "failed", finishedAt: string, result: string | null, error: string | null, effectStatus: "pending" | null];

/**
 * Runs actions by the rules of spec 4.2:
 *
 * 1. params are validated first; an invalid request records no run (400);
 * 2. the answer is the finished run record; a failed run is still an answer (status `failed`, `error`);
 * 3. effects start afterwards on Temporal, once per runId (`action_runs.effect_status` makes the
 *    start durable: a recovery pass retries pending ones);
 * 4. resending a finished run's `runId` answers its record without running again; a `runId` recorded
 *    as running by a process that died is run again (nothing of it was committed), and so is one that
 *    was never recorded;
 * 5. a `runId` still running on this server is refused with 409 `run_in_progress`;
 * 6. once shutdown has begun, requests get 503 `shutting_down` and nothing starts.
 *
 * The handler's ontology writes are buffered and committed in one transaction with the run's
 * completion and its `action.completed` event, so a run either has all its writes or none.
 *
 * **When a run is recorded.** The handler starts at once; the run's row (`running`) and its
 * `action.requested` event are committed in the same transaction as its completion when the handler
 * ends within `SVC_RECORD_RUNNING_AFTER_MS` (20 ms; {@link RunRecording}) — one commit per run, the
 * common case — and on their own as soon as it runs longer, or before its first `ctx.blobs` or
 * `ctx.artifacts` call that stores something (those commit outside the run's transaction). So a run is visible as `running`
 * (`GET`, the event log) from that moment on; a process that dies before it leaves no record, and the
 * caller's resend with the same `runId` runs it again (spec 4.2 rule 4), as it does for a run recorded
 * `running` by a process that died. Either way nothing of the handler's buffered writes was committed.
 *
 * Lifecycle: stops accepting at `preClose`, aborts handlers' `signal` when shutdown stops waiting,
 * waits for runs and effect starts at `close`; retries pending effect starts when ready and on every
 * recovery pass (`SVC_OUTBOX_RECOVERY_MS`).
 */
@injectable()
export class ActionRunner {
  private readonly inFlight = new Set<string>();
  private readonly pendingEffects = new Set<Promise<void>>();
  private accepting = true;
  private readonly recordRunningAfterMs: number;
  /** The runs stored for callers' runIds, looked up in batches (concurrent requests share one read). */
  private readonly storedRuns: BatchedLookup<string, RunRow>;
  private idleWaiters: Array<() => void> = [];
  /** `svc_action_runs_total{action,status}`: the runs this process ended, by action and final status. */
  private readonly ended: Counter<"action" | "status">;

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(OntologyStore) private readonly ontology: OntologyStore,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(HandlerRunner) private readonly handlers: HandlerRunner,
    @inject(TemporalHost) private readonly temporal: TemporalHost,
    @inject(Lifecycle) private readonly lifecycle: Lifecycle,
    @inject(CONFIG) config: Config,
    @inject(LOGGER) private readonly log: Logger,
    @inject(FileStore) private readonly files: FileStore,
    @inject(Metrics) metrics: Metrics,
  ) {
    this.ended = metrics.counter("svc_action_runs_total", "Action runs this process ended, by action and final status (succeeded, failed), or error when the run could not be recorded as ended (the store failed; the request was answered 500); a resent runId of an ended run answers its record and is not counted again", ["action", "status"]);
    this.recordRunningAfterMs = config.recordRunningAfterMs;
    this.storedRuns = new BatchedLookup(db, "SELECT k.key AS lookup, r.* FROM json_each(?) AS k JOIN action_runs AS r ON r.run_id = k.value");
    lifecycle.hook("ready", () => this.startPendingEffects());
    lifecycle.every(config.outboxRecoveryMs, () => this.startPendingEffects().catch((err) => log.warn({ err }, "starting pending effects failed")));
    lifecycle.hook("preClose", () => this.stopAccepting());
    lifecycle.hook("close", () => this.idle());
  }

  /**
   * Runs an action and answers its finished record (spec 4.2). A resent `runId` of a run that ended
   * answers its record as stored, before anything of the request is checked again: the run's subject
   * may be gone since (an action that deletes its subject), and rule 4's retry must still find it.
   * @throws {ApiError} shutting_down (503), not_found (unknown action or subject), invalid_request
   *   (params or subject), run_in_progress (409), conflict (runId of another action, or another run's record id)
   */
  async run(req: ActionRunRequest): Promise<ActionRunRecord> {
    if (!this.accepting) throw new ApiError("shutting_down", "The server is shutting down; the action was not started");
    const runId = req.runId ?? newId("run");
    if (this.inFlight.has(runId)) throw new ApiError("run_in_progress", `Run ${runId} is still running on this server`, { runId });
    this.inFlight.add(runId);
    try {
      // a runId this server just made is new: only a caller's own runId can name a stored run
      const existing = req.runId === undefined ? undefined : await this.storedRuns.get(runId);
      if (existing && existing.action_id !== req.actionId) throw new ApiError("conflict", `runId ${runId} belongs to a run of ${existing.action_id}`, { runId });
      if (existing && existing.status !== "running") return toRecord(existing);
      // the by-id route reads a run by its runId or its record's id: a new runId that is another run's
      // record id would shadow that run there
      if (req.runId !== undefined && !existing) {
        // the other run may be one the caller may not read: it is not named
        const named = await this.db.get<{ run_id: string }>("SELECT run_id FROM action_runs WHERE id = ?", [runId]);
        if (named) throw new ApiError("conflict", `runId ${runId} is taken (it is another run's record id): choose another runId`, { runId });
      }
      const params = await this.admit(req);
      try {
        return await this.execute(req, runId, params, existing);
      } catch (err) {
        // the run could not be recorded as ended (the store refused its commit twice): counted apart
        this.ended.inc({ action: req.actionId, status: "error" });
        throw err;
      }
    } finally {
      this.inFlight.delete(runId);
      if (this.inFlight.size === 0) for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  /**
   * What a run request must pass before its handler starts: params valid, the subject of the action's
   * type and existing, every file of the params uploaded by the caller. Answers the parsed params.
   * @throws {ApiError} invalid_request, not_found (subject), forbidden (a file of someone else)
   */
  private async admit(req: ActionRunRequest): Promise<unknown> {
    const action = this.project.action(req.actionId).definition;
    const parsed = v.safeParse(action.params, req.params ?? {});
    if (!parsed.success) throw new ApiError("invalid_request", `Invalid params for ${req.actionId}: ${parsed.issues[0].message}`, { issues: formatIssues(parsed.issues, "params") });
    if (action.subject) {
      if (!req.subject) throw new ApiError("invalid_request", `${req.actionId} needs a subject of type ${action.subject.objectTypeId}`);
      if (req.subject.objectTypeId !== action.subject.objectTypeId) throw new ApiError("invalid_request", `${req.actionId} takes a subject of type ${action.subject.objectTypeId}, not ${req.subject.objectTypeId}`);
    }
    if (req.subject && !(await this.ontology.getObject(req.subject.objectTypeId, req.subject.primaryId))) {
      throw new ApiError("not_found", `No ${req.subject.objectTypeId} "${req.subject.primaryId}"`, { subject: req.subject });
    }
    // a file id alone reads nothing (spec 4.3): a caller hands an action only the files it uploaded
    if (req.actor) {
      for (const { path, id } of findFileValues(parsed.output, "/params")) {
        if (!(await this.files.uploadedBy(id, req.actor.id))) throw new ApiError("forbidden", `${path} names file "${id}", which this identity did not upload`, { path, fileId: id });
      }
    }
    return parsed.output;
  }

  private async execute(req: ActionRunRequest, runId: string, params: unknown, stale: RunRow | undefined): Promise<ActionRunRecord> {
    const { definition } = this.project.action(req.actionId);
    const id = stale?.id ?? newId("run");
    const startedAt = nowIso();
    const subject = req.subject ? { kind: "object" as const, objectTypeId: req.subject.objectTypeId, primaryId: req.subject.primaryId } : undefined;
    const subjectText = subject ? JSON.stringify(subject) : null;
    const paramsText = JSON.stringify(req.params ?? {});
    const actorText = req.actor ? JSON.stringify(req.actor) : null;
    const requested = this.events.envelope({
      type: "action.requested",
      payload: { actionId: req.actionId, subject, params: req.params ?? {}, runId },
      correlationId: runId,
      actor: req.actor,
    });
    /**
     * Records the run as it starts: its row (inserted `running`, or with `ending` when it already ended;
     * a rerun's stored row takes the new attempt and `finishRuns` ends it), its `action.requested`
     * event, its params' files.
     */
    const recordInTx = async (tx: SqlWriter, ending?: RunEnding): Promise<void> => {
      if (stale) await tx.run("UPDATE action_runs SET attempts = attempts + 1, started_at = ?, subject = ?, params = ?, actor = ? WHERE id = ?", [startedAt, subjectText, paramsText, actorText, id]);
      else tx.defer(insertRuns, [[id, runId, req.actionId, ending?.[0] ?? "running", subjectText, paramsText, actorText, startedAt, ending?.[1] ?? null, ending?.[2] ?? null, ending?.[3] ?? null, ending?.[4] ?? null]]);
      await this.events.writeInTx(tx, [requested]);
      await this.referenceFiles(tx, runId, params, "/params");
    };
    const recording = new RunRecording(async () => {
      await this.db.transaction((tx) => recordInTx(tx));
      void this.events.drain();
    }, this.recordRunningAfterMs);

    const spec: HandlerRun = { run: { kind: "action", id: runId }, logFields: { actionId: req.actionId }, correlationId: runId, key: `action:${runId}` };
    let buffered: BufferedHandler<unknown> | undefined;
    let failure: { code: string; message: string } | undefined;
    try {
      const signal = this.lifecycle.closeTimeout;
      buffered = await this.handlers.execute(spec, (ctx) => definition.run(handlerContext<ActionContext<unknown>>(ctx, { actionId: req.actionId, runId, subject, params, actor: req.actor, signal })), { signal, beforeStore: recording.now, requestedBy: req.actor });
    } catch (err) {
      failure = { code: isApiError(err) ? err.code : "action_failed", message: messageOf(err) };
      this.handlers.logger(spec).warn({ err }, "action run failed");
    }
    // a result JSON cannot carry (a BigInt, a cycle) fails the run by name, before anything is written
    let resultText: string | null = null;
    if (!failure && buffered?.result !== undefined) {
      try {
        resultText = JSON.stringify(buffered.result) ?? null;
      } catch (err) {
        failure = { code: "action_failed", message: `The action's result cannot be written as JSON: ${messageOf(err)}` };
        this.handlers.logger(spec).warn({ err }, "action run failed");
      }
    }
    // a run recorded on its own is finished by an UPDATE in a later group (never in the group of its
    // INSERT: the group runs deferred statements by statement, not by caller)
    const separately = await recording.ended();

    const origin = { kind: "action" as const, actionId: req.actionId, runId };
    // the run's row as committed, kept in hand: the answer needs no read-back
    const row: RunRow = {
      id, run_id: runId, action_id: req.actionId, status: "running", subject: subjectText, params: paramsText,
      attempts: (stale?.attempts ?? 0) + 1, started_at: startedAt, finished_at: null, result: null, error: null,
    };
    const finish = async (fail: typeof failure) => {
      const finishedAt = nowIso();
      const result = fail ? null : resultText;
      const ending: RunEnding = [fail ? "failed" : "succeeded", finishedAt, result, fail ? JSON.stringify(fail) : null, !fail && definition.effect ? "pending" : null];
      await this.db.transaction(async (tx) => {
        if (!separately) await recordInTx(tx, ending);
        if (!fail && buffered) await this.handlers.commitInTx(tx, buffered, spec, { origin, causationId: requested.id });
        if (separately || stale) tx.defer(finishRuns, [[id, ...ending]]);
        const done = this.events.envelope({
          type: fail ? "action.failed" : "action.completed",
          payload: { actionId: req.actionId, runId, subject, finishedAt, ...(fail ? { error: fail } : {}) },
          correlationId: runId,
          causationId: requested.id,
          actor: req.actor,
        });
        await this.events.writeInTx(tx, [done]);
        if (!fail && buffered?.result !== undefined) await this.referenceFiles(tx, runId, buffered.result, "/result");
      });
      Object.assign(row, { status: ending[0], finished_at: finishedAt, result, error: ending[3] });
    };
    try {
      await finish(failure);
    } catch (err) {
      if (failure) throw err;
      // the writes were refused at commit (e.g. an update of a missing object): the run fails, nothing
      // of the handler was written (a run recorded with its completion is recorded again, failed).
      // A store error's text stays in the log, never in the record or the response.
      if (!isApiError(err)) this.handlers.logger(spec).error({ err }, "committing the action run failed");
      // a value JSON cannot carry in what it wrote (a BigInt or a cycle in a property or an event payload) is the handler's to fix: said so
      const json = err instanceof TypeError && /BigInt|circular structure/i.test(err.message);
      failure = isApiError(err)
        ? { code: err.code, message: err.message }
        : json
          ? { code: "action_failed", message: `The run's writes hold a value JSON cannot carry (${err.message.split("\n")[0]}); nothing was written` }
          : { code: "commit_failed", message: "The run's writes could not be committed; nothing was written" };
      await finish(failure);
    }
    this.ended.inc({ action: req.actionId, status: row.status });
    await this.events.drain();
    const answer = toRecord(row);
    if (answer.status === "succeeded" && definition.effect) this.trackEffect(answer);
    return answer;
  }

  /**
   * Records the stored files a run holds in its params or result (spec 4.3: runs may hold file
   * references, read through the run with its permission). Values naming no stored file are left alone.
   */
  private async referenceFiles(tx: SqlWriter, runId: string, value: unknown, base: string): Promise<void> {
    for (const { path, id } of findFileValues(value, base)) {
      if (await tx.get("SELECT 1 AS one FROM files WHERE id = ?", [id])) await this.files.addReference(tx, id, { kind: "run", id: runId, path });
    }
  }

  /** Starts the effect's workflow (`action-effect:<runId>`, once per run) and records it started. */
  private trackEffect(record: ActionRunRecord): void {
    const p = startRun(this.temporal.client, { workflowType: "actionEffect", workflowId: `action-effect:${record.runId}`, taskQueue: this.temporal.taskQueue, args: [{ actionId: record.actionId, runId: record.runId }] })
      .then(() => this.db.transaction((tx) => tx.run("UPDATE action_runs SET effect_status = 'started' WHERE id = ?", [record.id])).then(() => undefined))
      .catch((err) => this.log.warn({ err, runId: record.runId }, "starting the action's effect failed; the recovery pass will retry"))
      .finally(() => this.pendingEffects.delete(p));
    this.pendingEffects.add(p);
  }

  /** Starts effects recorded as pending (after a crash or a Temporal outage). Answers how many. */
  async startPendingEffects(): Promise<number> {
    const rows = await this.db.all<RunRow>("SELECT * FROM action_runs WHERE effect_status = 'pending' LIMIT 100");
    for (const row of rows) this.trackEffect(toRecord(row));
    await Promise.all([...this.pendingEffects]);
    return rows.length;
  }

  /**
   * Reads a run record by its `runId`, or by its record `id` (both are in the record, and a client
   * holding the one it read first got 404 for the other). A `runId` wins over another run's `id`.
   * @throws {ApiError} not_found
   */
  async get(runId: string): Promise<ActionRunRecord> {
    const row = (await this.db.get<RunRow>("SELECT * FROM action_runs WHERE run_id = ?", [runId])) ?? (await this.db.get<RunRow>("SELECT * FROM action_runs WHERE id = ?", [runId]));
    if (!row) throw new ApiError("not_found", `No action run "${runId}"`);
    return toRecord(row);
  }

  /** Refuses new runs from now on (503 `shutting_down`). */
  stopAccepting(): void {
    this.accepting = false;
  }

  /** Resolves when no run is in flight and every effect start has settled. */
  async idle(): Promise<void> {
    if (this.inFlight.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await Promise.all([...this.pendingEffects]);
  }

}
