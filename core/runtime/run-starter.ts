import { inject, injectable } from "../di";
import { Database, type SqlWriter } from "../store/db";
import { EventLog, type AppendInput } from "../events/log";
import { ProjectRegistry } from "../project/registry";
import { TemporalHost } from "../temporal/host";
import { isPermanentStartError, startRun, type StartRunOptions } from "../temporal/start";
import { Lifecycle } from "../lifecycle";
import { CONFIG, type Config } from "../config";
import { LOGGER, type Logger } from "../logger";
import type { Actor, EventType } from "../events/catalog";
import { nowIso } from "../ids";
import { temporalClient } from "../temporal/sdk";

/** Which table a run lives in: workflow runs, or sync and pipeline runs. */
export type RunTable = "workflow_runs" | "connector_runs";

/** How a run ends without ever starting on Temporal. */
export interface UnstartedEnd {
  status: "failed" | "cancelled";
  /** `code` `start_refused` (README "Run errors"); `type`: why (`not_found`, `conflict`, `StartRefused`). */
  error?: { code: "start_refused"; message: string; type?: string };
}

/** The `/api/status` part of the starter (spec 6.2 style): queued runs not yet started on Temporal. */
export interface RunStartHealth {
  status: "ok" | "unhealthy";
  /** Runs recorded `pending` (answered as queued, not yet started on Temporal). */
  pending: number;
  /** Age of the oldest pending run, ms; absent when none is pending. */
  oldestPendingAgeMs?: number;
  /** Starts in flight on Temporal now. */
  inFlight: number;
  /** The threshold (`SVC_RUN_START_MAX_AGE_MS`). */
  maxAgeMs: number;
  paused?: true;
  problem?: string;
}

interface WorkflowRow { run_id: string; workflow_id: string; input: string; actor: string | null; requested_at: string }
interface ConnectorRow { run_id: string; kind: "sync" | "pipeline"; definition_id: string; input: string; actor: string | null; requested_at: string }

/** A permanent refusal: the run is marked failed with this error, never retried. */
class StartRefused extends Error {
  constructor(message: string, readonly type: string) {
    super(message);
  }
}

/** Most starts in flight on Temporal at once. */
const CONCURRENCY = 8;
/** Deadline of one start attempt (start, and describe when it was there already), ms. */
const ATTEMPT_DEADLINE_MS = 10_000;
/** Backoff of transient failures: 500 ms doubling to 30 s, with up to 20 % jitter. */
const backoffMs = (attempt: number) => Math.min(30_000, 500 * 2 ** Math.min(attempt - 1, 10)) * (1 + Math.random() * 0.2);

/**
 * The starter (spec 3, 4.3; issue 15): a workflow, sync or pipeline run is answered once it is durably
 * queued in svc's store (its row with `start_status = 'pending'`); this durable job starts it on
 * Temporal afterwards (workflow id = runId, `REJECT_DUPLICATE`, "already started" by this run counts as
 * started) with at most {@link CONCURRENCY} starts in flight, and marks it `started` in a transaction
 * that checks it is still pending (a cancel that committed first wins: the execution is cancelled).
 *
 * - Poked after each commit ({@link RunStarter.poke}); at `ready` and on every recovery pass
 *   (`SVC_OUTBOX_RECOVERY_MS`) it picks up pending rows, so a kill -9 between the answer and the start
 *   still starts the run, once, after the restart.
 * - Transient Temporal errors keep the run pending and retry with backoff (logged at warn); a permanent
 *   refusal (gRPC `INVALID_ARGUMENT`, the id taken by an execution that is not this run, the definition
 *   no longer declared) marks it `failed` with its `*.run.finished` event, so the run endpoint says why.
 * - Stops starting at `preClose`; waits for starts in flight at `close` (bounded by the shutdown timeout).
 */
@injectable()
export class RunStarter {
  /** Runs waiting for a start slot, oldest first (keys, see {@link key}). */
  private readonly queue: Array<{ table: RunTable; runId: string }> = [];
  /** Every run the starter holds: queued, in flight or waiting out a backoff. */
  private readonly known = new Set<string>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly attempts = new Map<string, number>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  /** Runs held by {@link RunStarter.exclusive} (a cancel deciding), with their release. */
  private readonly held = new Map<string, Promise<void>>();
  private stopped = false;
  private paused = false;
  /** False from `preClose` on: start requests answer 503 `shutting_down` and queue nothing. */
  accepting = true;

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(TemporalHost) private readonly temporal: TemporalHost,
    @inject(Lifecycle) private readonly lifecycle: Lifecycle,
    @inject(CONFIG) private readonly config: Config,
    @inject(LOGGER) private readonly log: Logger,
  ) {
    lifecycle.hook("ready", () => this.recover());
    lifecycle.every(config.outboxRecoveryMs, () => this.recover().catch((err) => log.warn({ err }, "picking up pending run starts failed")));
    lifecycle.hook("preClose", () => this.stop());
    lifecycle.hook("close", () => this.settled());
  }

  private static key(table: RunTable, runId: string): string {
    return `${table}:${runId}`;
  }

  /** Queues a committed pending run for its start (no-op when it is held already or shutdown began). */
  poke(table: RunTable, runId: string): void {
    const key = RunStarter.key(table, runId);
    if (this.stopped || this.known.has(key)) return;
    this.known.add(key);
    this.queue.push({ table, runId });
    this.pump();
  }

  /** Picks up every pending run not held yet (at `ready`, on each recovery pass). Answers how many. */
  async recover(): Promise<number> {
    if (this.stopped) return 0;
    let n = 0;
    for (const table of ["workflow_runs", "connector_runs"] as const) {
      const rows = await this.db.all<{ run_id: string }>(`SELECT run_id FROM ${table} WHERE start_status = 'pending' ORDER BY requested_at LIMIT 10000`);
      for (const r of rows) {
        if (this.known.has(RunStarter.key(table, r.run_id))) continue;
        this.poke(table, r.run_id);
        n++;
      }
    }
    return n;
  }

  /** Stops starting runs until {@link RunStarter.resume} (operators and tests: they stay queued). */
  pause(): void {
    this.paused = true;
  }

  /** Starts queued runs again after {@link RunStarter.pause}. */
  resume(): void {
    this.paused = false;
    this.pump();
  }

  /**
   * Runs `fn` while the starter neither starts `runId` nor has a start of it in flight (waits for one
   * in flight first). A cancel decides inside it whether the run is still pending, so a run cancelled
   * before its start is never started.
   */
  async exclusive<T>(table: RunTable, runId: string, fn: () => Promise<T>): Promise<T> {
    const key = RunStarter.key(table, runId);
    for (;;) {
      const busy = this.inFlight.get(key) ?? this.held.get(key);
      if (!busy) break;
      await busy.catch(() => undefined);
    }
    let release!: () => void;
    this.held.set(key, new Promise<void>((resolve) => (release = resolve)));
    try {
      return await fn();
    } finally {
      this.held.delete(key);
      release();
    }
  }

  /** Pending starts for `/api/status`: unhealthy while the oldest waited longer than `SVC_RUN_START_MAX_AGE_MS`. */
  async health(): Promise<RunStartHealth> {
    const rows = await Promise.all(
      (["workflow_runs", "connector_runs"] as const).map((t) => this.db.get<{ n: number; oldest: string | null }>(`SELECT COUNT(*) AS n, MIN(requested_at) AS oldest FROM ${t} WHERE start_status = 'pending'`)),
    );
    const pending = rows.reduce((sum, r) => sum + (r?.n ?? 0), 0);
    const oldest = rows.map((r) => r?.oldest).filter((t): t is string => !!t).sort()[0];
    const age = oldest ? Math.max(0, Date.now() - Date.parse(oldest)) : undefined;
    const late = age !== undefined && age > this.config.runStartMaxAgeMs;
    return {
      status: late ? "unhealthy" : "ok",
      pending,
      ...(age !== undefined ? { oldestPendingAgeMs: age } : {}),
      inFlight: this.inFlight.size,
      maxAgeMs: this.config.runStartMaxAgeMs,
      ...(this.paused ? { paused: true as const } : {}),
      ...(late ? { problem: `a queued run has waited ${Math.round(age! / 1000)} s for its Temporal start (more than ${this.config.runStartMaxAgeMs} ms)` } : {}),
    };
  }

  private pump(): void {
    while (!this.paused && !this.stopped && this.inFlight.size < CONCURRENCY && this.queue.length > 0) {
      const next = this.queue.shift()!;
      const key = RunStarter.key(next.table, next.runId);
      const attempt = this.attempt(next.table, next.runId).finally(() => {
        this.inFlight.delete(key);
        this.pump();
      });
      this.inFlight.set(key, attempt);
    }
  }

  /** One start attempt; settles the run (started, failed) or schedules the next attempt. Never throws. */
  private async attempt(table: RunTable, runId: string): Promise<void> {
    const key = RunStarter.key(table, runId);
    try {
      const hold = this.held.get(key);
      if (hold) await hold;
      const start = await this.startOptions(table, runId);
      if (!start) return void this.forget(key); // no longer pending (started, cancelled or failed meanwhile)
      const { closedAt } = await this.startOnTemporal(start.options, start.requestedAt);
      await this.markStarted(table, runId, closedAt);
      this.forget(key);
    } catch (err) {
      if (err instanceof StartRefused || isPermanentStartError(err)) {
        const error = { code: "start_refused" as const, message: `Temporal refused to start the run: ${(err as Error).message}`, type: err instanceof StartRefused ? err.type : "StartRefused" };
        this.log.warn({ err, runId }, "a queued run cannot be started; it is marked failed");
        await this.end(table, runId, { status: "failed", error }).catch((e) => this.log.error({ err: e, runId }, "marking a refused run failed did not commit"));
        this.forget(key);
        return;
      }
      const n = (this.attempts.get(key) ?? 0) + 1;
      this.attempts.set(key, n);
      if (this.stopped) return void this.forget(key); // still pending in the store: the next process starts it
      const delay = backoffMs(n);
      this.log.warn({ err, runId, attempt: n, retryInMs: Math.round(delay) }, "starting a queued run on Temporal failed; it stays queued and is retried");
      const timer = setTimeout(() => {
        this.retryTimers.delete(timer);
        if (this.stopped) return;
        this.queue.push({ table, runId });
        this.pump();
      }, delay);
      timer.unref();
      this.retryTimers.add(timer);
    }
  }

  private forget(key: string): void {
    this.known.delete(key);
    this.attempts.delete(key);
  }

  /** What to start for a pending run, or undefined when it is not pending. @throws {StartRefused} definition gone */
  private async startOptions(table: RunTable, runId: string): Promise<{ options: StartRunOptions & { ours: (type: string) => boolean }; requestedAt: string } | undefined> {
    const base = { workflowId: runId, taskQueue: this.temporal.taskQueue };
    const memo = (actor: string | null) => (actor ? { memo: { actor: JSON.parse(actor) as Actor } } : {});
    if (table === "workflow_runs") {
      const row = await this.db.get<WorkflowRow>("SELECT run_id, workflow_id, input, actor, requested_at FROM workflow_runs WHERE run_id = ? AND start_status = 'pending'", [runId]);
      if (!row) return undefined;
      if (!this.project.workflows.has(row.workflow_id)) throw new StartRefused(`workflow "${row.workflow_id}" is no longer declared`, "not_found");
      return { requestedAt: row.requested_at, options: { ...base, workflowType: row.workflow_id, args: [JSON.parse(row.input)], ...memo(row.actor), ours: (type) => type === row.workflow_id } };
    }
    const row = await this.db.get<ConnectorRow>("SELECT run_id, kind, definition_id, input, actor, requested_at FROM connector_runs WHERE run_id = ? AND start_status = 'pending'", [runId]);
    if (!row) return undefined;
    const input = JSON.parse(row.input) as unknown;
    let args: unknown;
    try {
      if (row.kind === "sync") {
        this.project.connectorRun("syncs", row.definition_id);
        args = { syncId: row.definition_id, input };
      } else {
        const { definition } = this.project.connectorRun("pipelines", row.definition_id);
        args = { pipelineId: row.definition_id, input, steps: (definition as { steps: Array<{ name: string }> }).steps.map((s) => s.name) };
      }
    } catch {
      throw new StartRefused(`${row.kind} "${row.definition_id}" is no longer declared`, "not_found");
    }
    const type = row.kind === "sync" ? "syncRun" : "pipelineRun";
    return { requestedAt: row.requested_at, options: { ...base, workflowType: type, args: [args], ...memo(row.actor), ours: (t) => t === type } };
  }

  /**
   * Starts the execution. "Already started" counts as this run's start when the execution has the run's
   * type and began after the run was recorded (a start whose mark a crash lost); otherwise the id is
   * another execution's.
   * @returns `closedAt`: when the execution taken as this run's start already closed (ISO 8601; a run a
   *   restored backup queued again, closed in Temporal's snapshot), else undefined
   * @throws {StartRefused} id taken; the client's error for anything else
   */
  private async startOnTemporal(opts: StartRunOptions & { ours: (type: string) => boolean }, requestedAt: string): Promise<{ closedAt?: string }> {
    const client = this.temporal.client;
    const { started } = await client.withDeadline(Date.now() + ATTEMPT_DEADLINE_MS, () => startRun(client, opts));
    if (started) return {};
    const described = await client.withDeadline(Date.now() + ATTEMPT_DEADLINE_MS, () => client.workflow.getHandle(opts.workflowId).describe()).catch((err) => {
      if (err instanceof temporalClient().WorkflowNotFoundError) throw new Error(`Temporal said ${opts.workflowId} exists, then that it does not`);
      throw err;
    });
    // one second of slack: the row's time and Temporal's come from different clocks (same machine for the dev server)
    if (!opts.ours(String(described.type)) || described.startTime.getTime() < Date.parse(requestedAt) - 1000) {
      throw new StartRefused(`runId ${opts.workflowId} is taken by another execution (${String(described.type)})`, "conflict");
    }
    return described.closeTime ? { closedAt: described.closeTime.toISOString() } : {};
  }

  /**
   * Marks the run started if it is still pending; a cancel that won meanwhile cancels the execution.
   * `closedAt`: the execution already closed, and its `*.run.finished` record will not be written again
   * (it was, before the backup that queued the run again cleared the end): the run's end, as the run
   * retention counts from it (migrations 025, 027), is its close.
   */
  private async markStarted(table: RunTable, runId: string, closedAt?: string): Promise<void> {
    const { changes } = await this.db.transaction((tx) =>
      tx.run(`UPDATE ${table} SET start_status = 'started'${closedAt ? ", finished_at = COALESCE(finished_at, ?)" : ""} WHERE run_id = ? AND start_status = 'pending'`, closedAt ? [closedAt, runId] : [runId]),
    );
    if (changes === 0 && (await this.db.get<{ start_status: string }>(`SELECT start_status FROM ${table} WHERE run_id = ?`, [runId]))?.start_status === "cancelled") {
      await this.temporal.client.workflow.getHandle(runId).cancel().catch((err) => this.log.warn({ err, runId }, "cancelling a run that was cancelled while it started failed"));
    }
  }

  /**
   * Ends a pending run without starting it (failed or cancelled), with its `*.run.finished` event in
   * the same transaction (keyed as the run's own, so it is written once). Answers false when the run
   * was no longer pending (nothing written).
   */
  async end(table: RunTable, runId: string, end: UnstartedEnd): Promise<boolean> {
    const ended = await this.db.transaction(async (tx) => {
      // the run ended here: the run retention counts from its finished_at (migrations 025, 027)
      const { changes } = await tx.run(`UPDATE ${table} SET start_status = ?1, start_error = ?2, start_finished_at = ?3, finished_at = ?3 WHERE run_id = ?4 AND start_status = 'pending'`, [end.status, end.error ? JSON.stringify(end.error) : null, nowIso(), runId]);
      if (changes === 0) return false;
      await this.events.writeInTx(tx, this.events.prepare([await this.finishedEvent(tx, table, runId, end)]));
      return true;
    });
    if (ended) void this.events.drain();
    return ended;
  }

  private async finishedEvent(tx: SqlWriter, table: RunTable, runId: string, end: UnstartedEnd): Promise<AppendInput> {
    const payload = { runId, status: end.status, ...(end.error ? { error: end.error } : {}) };
    if (table === "workflow_runs") {
      const row = (await tx.get<{ workflow_id: string }>("SELECT workflow_id FROM workflow_runs WHERE run_id = ?", [runId]))!;
      return { type: "workflow.run.finished", payload: { workflowId: row.workflow_id, ...payload }, idempotencyKey: `${runId}:finished`, correlationId: runId, origin: { kind: "runtime", workflowId: row.workflow_id, runId } };
    }
    const row = (await tx.get<{ kind: "sync" | "pipeline"; definition_id: string }>("SELECT kind, definition_id FROM connector_runs WHERE run_id = ?", [runId]))!;
    const type: EventType = row.kind === "sync" ? "sync.run.finished" : "pipeline.run.finished";
    // the keys the run's own workflow uses for its finished record (workflows/index.ts)
    const idempotencyKey = row.kind === "sync" ? `${runId}:sync.run.finished` : `${runId}:finished`;
    return { type, payload: { [row.kind === "sync" ? "syncId" : "pipelineId"]: row.definition_id, ...payload }, idempotencyKey, correlationId: runId, origin: { kind: "runtime", runId } };
  }

  private stop(): void {
    this.accepting = false;
    this.stopped = true;
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    this.queue.length = 0;
  }

  /** Resolves when every start in flight has settled, or when the shutdown timeout passes. */
  private async settled(): Promise<void> {
    const signal = this.lifecycle.closeTimeout;
    const timedOut = new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })));
    await Promise.race([Promise.all([...this.inFlight.values()]), timedOut]);
  }
}
