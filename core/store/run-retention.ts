/**
 * Retention of run records and spent credentials (README "Retention"): what the store keeps of finished
 * work, so that the data directory does not grow for ever. A pass ({@link RunRetention.prune}) runs at
 * start and then every tenth of `SVC_RUN_RETENTION_MS` (an hour apart at most), and deletes in batches
 * of at most {@link BATCH} rows (and {@link BATCH_BYTES} of webhook bodies) per transaction, each a short
 * write on the single writer beside the requests of its group commit (the runs due are read before, on
 * the reader connection); shutdown stops it between batches.
 *
 * | Table | What goes | When |
 * |---|---|---|
 * | `action_runs` | a run that ended (`succeeded`, `failed`) and declared no effect | created and ended more than `SVC_RUN_RETENTION_MS` ago |
 * | `webhook_runs` and their `webhook_attempts` | a delivery that ended (`completed`, `failed`), its raw body with it | received and ended more than `SVC_RUN_RETENTION_MS` ago |
 * | `workflow_runs` and their `interventions` | a run whose end svc recorded (`finished_at`, migration 025), not queued again, none of whose action runs is kept | ended more than `SVC_RUN_RETENTION_MS` ago, and more than the Temporal namespace's retention and a day ({@link WORKFLOW_MARGIN_MS}: so Temporal forgot it first); never while that retention is unknown |
 * | `connector_runs` (sync and pipeline runs) | a run whose end svc recorded (`finished_at`, migration 027), not queued again | as `workflow_runs` |
 * | `download_urls` | a URL that expired (a revoked one expires within 7 days of its creation too) | more than `SVC_RUN_RETENTION_MS` ago |
 * | `sessions` | a browser session that expired (an ended one expires within its TTL too) | more than a day ago |
 *
 * **Idempotency within the retention.** A run's keys are forgotten with it, so that a request that
 * names it again later is a new one in full (not a run recorded anew whose writes its old keys would
 * drop): a resent `runId` of an action run runs again (spec 4.2 rule 4 holds within the retention), a
 * provider's retry of a delivery is a new delivery. With the run go the keys its handler's writes were
 * committed under: the delivery's ontology commit key (`webhook:<executionId>` in `commits`) and the
 * dataset versions' keys (`<action|webhook>:<id>:dataset:<i>`), and a workflow run's ontology commit
 * keys (`<runId>:write:<n>`, workflows/index.ts), a sync run's (`sync:<runId>`, its dataset versions'
 * `sync:<runId>:dataset:<i>`) and a pipeline run's steps' (`pipeline:<runId>:<n>`, `…:<n>:dataset:<i>`),
 * set to NULL (the commits and versions stay): a run
 * started again under its `runId` (a provider's retry after its delivery went too) is a new run whose
 * writes apply. The run's file references go too (the files stay: a referenced file is never collected).
 *
 * **Kept.** A run or a delivery still `running` (a process died under it: its resend runs it again); an
 * action run that declared an effect, whose effect is a Temporal run named by the action's `runId`
 * (`action-effect:<runId>`), started once per `runId`: a resend after its record went would run the
 * action without it. A workflow run whose end svc never recorded (it ended before migration 025, or was
 * terminated in Temporal's UI) has no `finished_at` and is kept, and so is a sync or pipeline run that
 * ended before migration 027.
 * Their state and history are Temporal's to keep (`SVC_TEMPORAL_RETENTION_MS`).
 *
 * Rows are found by their ids' time (the ULID of `newId`: creation order, the primary key's order), by
 * expiry indexes (migration 023) or by when they ended (migrations 025, 027), so a pass reads the rows it deletes, plus once those it keeps in that
 * range (runs with an effect, runs left `running`), outside the writer's transactions.
 */
import { firstIdAt } from "../ids";
import type { Counter, Metrics } from "../metrics";
import type { Database, SqlWriter } from "./db";

/** Rows deleted per transaction. */
export const BATCH = 500;

/** Webhook bodies freed per transaction, at most (bytes; at least one delivery a batch): 16 MiB. */
export const BATCH_BYTES = 16 * 1024 * 1024;

/**
 * The ended action runs without an effect due at `[after id, id bound, finished before]`, read on the
 * reader connection (never inside the writer's transaction: the runs kept below the bound, those with an
 * effect, are read again by every pass), in id order along the primary key.
 */
export const ACTION_RUNS_DUE = `SELECT id FROM action_runs WHERE id > ? AND id < ? AND status IN ('succeeded', 'failed') AND finished_at < ? AND effect_status IS NULL ORDER BY id LIMIT ${BATCH}`;
/** Deletes the action runs `[JSON list of ids]` that are still due at `[finished before]` (a resend may have run one again since it was read); answers their runIds. */
const DELETE_ACTION_RUNS = `DELETE FROM action_runs WHERE id IN (SELECT value FROM json_each(?)) AND status IN ('succeeded', 'failed') AND finished_at < ? AND effect_status IS NULL RETURNING run_id`;
/** The ended webhook deliveries due at `[after id, id bound, finished before]`, with their bodies' sizes (read from the record header, not the body); read like {@link ACTION_RUNS_DUE}. */
export const WEBHOOK_RUNS_DUE = `SELECT id, length(body) AS bytes FROM webhook_runs WHERE id > ? AND id < ? AND status IN ('completed', 'failed') AND finished_at < ? ORDER BY id LIMIT ${BATCH}`;
/** Deletes the deliveries `[JSON list of ids]` still due at `[finished before]`; answers their ids and executions. */
const DELETE_WEBHOOK_RUNS = `DELETE FROM webhook_runs WHERE id IN (SELECT value FROM json_each(?)) AND status IN ('completed', 'failed') AND finished_at < ? RETURNING id, execution_id`;
/** Deletes a batch of the download URLs expired before `[epoch ms]`. */
export const DELETE_DOWNLOAD_URLS_DUE = `DELETE FROM download_urls WHERE id IN (SELECT id FROM download_urls WHERE expires_at < ? ORDER BY expires_at LIMIT ${BATCH})`;
/** Deletes a batch of the sessions expired before `[epoch ms]`. */
export const DELETE_SESSIONS_DUE = `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at < ? ORDER BY expires_at LIMIT ${BATCH})`;
/** Forgets the ontology commit keys `[JSON list of keys]` (a delivery's `webhook:<executionId>`, a sync's `sync:<runId>`). */
const UNKEY_COMMITS = "UPDATE commits SET idempotency_key = NULL WHERE idempotency_key IN (SELECT value FROM json_each(?))";
/**
 * Forgets the dataset versions' keys of the handler runs keyed `[JSON list of keys]` (`<key>:dataset:<i>`,
 * `i` digits only: a runId may hold `:dataset:` itself), along the keys' unique index.
 */
export const UNKEY_DATASET_VERSIONS = `UPDATE dataset_versions SET idempotency_key = NULL WHERE idempotency_key IN (
  SELECT d.idempotency_key FROM json_each(?) AS j JOIN dataset_versions AS d ON d.idempotency_key > j.value || ':dataset:' AND d.idempotency_key < j.value || ':dataset;'
  WHERE substr(d.idempotency_key, length(j.value) + 10) GLOB '[0-9]*' AND substr(d.idempotency_key, length(j.value) + 10) NOT GLOB '*[^0-9]*')`;

/**
 * What keeps an ended workflow run `w` that is otherwise due: it is queued again (a restored backup sets
 * recent runs back to pending), or an action run it ran is still kept (`<runId>:action:<n>`,
 * workflows/index.ts): one that declared an effect is kept for good, and a run started again under the
 * same runId would find it and skip the action (its effect runs once per action runId).
 */
const WORKFLOW_RUN_HELD = `w.start_status = 'pending' OR EXISTS (SELECT 1 FROM action_runs AS a WHERE a.run_id > w.run_id || ':action:' AND a.run_id < w.run_id || ':action;')`;
/**
 * The workflow runs that ended before `[finished before]` and nothing holds ({@link WORKFLOW_RUN_HELD}),
 * oldest end first, along `workflow_runs_by_finish` (read on the reader connection); `[after end, after runId]`
 * pages past the held ones.
 */
export const WORKFLOW_RUNS_DUE = `SELECT w.run_id AS id, w.finished_at FROM workflow_runs AS w WHERE w.finished_at < ? AND (w.finished_at, w.run_id) > (?, ?) AND NOT (${WORKFLOW_RUN_HELD}) ORDER BY w.finished_at, w.run_id LIMIT ${BATCH}`;
/** Deletes the workflow runs `[JSON list of runIds]` still due at `[finished before]` (checked again: nothing holds them); answers their runIds. */
const DELETE_WORKFLOW_RUNS = `DELETE FROM workflow_runs AS w WHERE w.run_id IN (SELECT value FROM json_each(?)) AND w.finished_at < ? AND NOT (${WORKFLOW_RUN_HELD}) RETURNING run_id`;
/**
 * How much longer than the Temporal namespace's retention a workflow run's row is kept (ms): a day.
 * Temporal counts from the execution's close, a little after svc's `finished_at` (days after, when no
 * worker ran between), and deletes closed executions in the background.
 */
export const WORKFLOW_MARGIN_MS = 86_400_000;
/**
 * Forgets the ontology commit keys of the workflow runs `[JSON list of runIds]` (`<runId>:write:<n>`,
 * `n` digits only: a runId may hold `:write:` itself), along the keys' unique index.
 */
export const UNKEY_WORKFLOW_WRITES = `UPDATE commits SET idempotency_key = NULL WHERE idempotency_key IN (
  SELECT c.idempotency_key FROM json_each(?) AS j JOIN commits AS c ON c.idempotency_key > j.value || ':write:' AND c.idempotency_key < j.value || ':write;'
  WHERE substr(c.idempotency_key, length(j.value) + 8) GLOB '[0-9]*' AND substr(c.idempotency_key, length(j.value) + 8) NOT GLOB '*[^0-9]*')`;

/**
 * The sync and pipeline runs that ended before `[finished before]` and are not queued again (a restored
 * backup sets recent runs back to pending), oldest end first, along `connector_runs_by_finish` (migration
 * 027; read on the reader connection); `[after end, after runId]` pages past the held ones.
 */
export const CONNECTOR_RUNS_DUE = `SELECT c.run_id AS id, c.finished_at FROM connector_runs AS c WHERE c.finished_at < ? AND (c.finished_at, c.run_id) > (?, ?) AND c.start_status <> 'pending' ORDER BY c.finished_at, c.run_id LIMIT ${BATCH}`;
/** Deletes the sync and pipeline runs `[JSON list of runIds]` still due at `[finished before]`; answers their runIds and kinds. */
const DELETE_CONNECTOR_RUNS = `DELETE FROM connector_runs WHERE run_id IN (SELECT value FROM json_each(?)) AND finished_at < ? AND start_status <> 'pending' RETURNING run_id, kind`;
/**
 * Forgets the ontology commit keys of the pipeline runs `[JSON list of runIds]`: a step's
 * (`pipeline:<runId>:<n>`, core/runtime/activities.ts; `n` digits only), along the keys' unique index.
 */
export const UNKEY_PIPELINE_STEPS = `UPDATE commits SET idempotency_key = NULL WHERE idempotency_key IN (
  SELECT c.idempotency_key FROM json_each(?) AS j JOIN commits AS c ON c.idempotency_key > 'pipeline:' || j.value || ':' AND c.idempotency_key < 'pipeline:' || j.value || ';'
  WHERE substr(c.idempotency_key, length(j.value) + 11) GLOB '[0-9]*' AND substr(c.idempotency_key, length(j.value) + 11) NOT GLOB '*[^0-9]*')`;
/**
 * Forgets the dataset versions' keys of the pipeline runs `[JSON list of runIds]`: a step's
 * (`pipeline:<runId>:<n>:dataset:<i>`, `n` and `i` digits only), along the keys' unique index.
 */
export const UNKEY_PIPELINE_DATASETS = `UPDATE dataset_versions SET idempotency_key = NULL WHERE idempotency_key IN (
  SELECT key FROM (SELECT d.idempotency_key AS key, substr(d.idempotency_key, length(j.value) + 11) AS rest
    FROM json_each(?) AS j JOIN dataset_versions AS d ON d.idempotency_key > 'pipeline:' || j.value || ':' AND d.idempotency_key < 'pipeline:' || j.value || ';')
  WHERE rest GLOB '[0-9]*:dataset:[0-9]*' AND substr(rest, 1, instr(rest, ':dataset:') - 1) NOT GLOB '*[^0-9]*' AND substr(rest, instr(rest, ':dataset:') + 9) NOT GLOB '*[^0-9]*')`;

/** How long an expired browser session is kept (ms): a day. */
const SESSION_KEPT_MS = 86_400_000;

/** The `meta` key of {@link TemporalRetentionHistory}'s state. */
export const TEMPORAL_RETENTION_KEY = "temporal_retention";

/**
 * The Temporal namespace's retention as it holds for the runs svc's store still has. Temporal keeps a
 * closed run for the retention in force when it closed: after the retention is lowered (the namespace's
 * on a cluster, `SVC_TEMPORAL_RETENTION_MS` for the embedded server), runs that closed before keep the
 * longer one. This remembers, in `meta` (so across restarts), each longer retention seen until every run
 * that closed under it has passed it (`until`: when svc first read a shorter one, plus the longer and
 * {@link WORKFLOW_MARGIN_MS}), and
 * answers the longest still in force, so that no row goes while Temporal may still have its run.
 */
export class TemporalRetentionHistory {
  constructor(private readonly db: Database) {}

  /**
   * Records `currentMs` (the namespace's retention as read now; undefined: unknown, nothing recorded) at
   * `nowMs` and answers the longest retention a run that closed before `nowMs` may still have (ms), or
   * undefined when `currentMs` is.
   * @throws the store's error
   */
  async effective(currentMs: number | undefined, nowMs: number): Promise<number | undefined> {
    if (currentMs === undefined) return undefined;
    const row = await this.db.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", [TEMPORAL_RETENTION_KEY]);
    const was = row ? (JSON.parse(row.value) as { currentMs: number; held: Array<{ ms: number; until: number }> }) : undefined;
    const held = (was?.held ?? []).filter((h) => h.until > nowMs);
    // held until the runs that closed under it are past it and the margin (Temporal deletes late: WORKFLOW_MARGIN_MS)
    if (was && currentMs < was.currentMs) held.push({ ms: was.currentMs, until: nowMs + was.currentMs + WORKFLOW_MARGIN_MS });
    const value = JSON.stringify({ currentMs, held });
    if (value !== row?.value) {
      await this.db.transaction((tx) => tx.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [TEMPORAL_RETENTION_KEY, value]));
    }
    return Math.max(currentMs, ...held.map((h) => h.ms));
  }
}

/** What one pass deleted, by table. */
export interface PruneCounts {
  action_runs: number;
  webhook_runs: number;
  workflow_runs: number;
  connector_runs: number;
  download_urls: number;
  sessions: number;
}

/** The retention pass of run records and spent credentials (see the module comment; README "Retention"). */
export class RunRetention {
  private readonly deleted: Counter<"table">;
  private stopped = false;

  /**
   * @param retentionMs `SVC_RUN_RETENTION_MS`: how long an ended run and a spent download URL are kept
   * @param temporalRetentionMs how long the Temporal namespace keeps a run that finished before `nowMs`
   *   (ms; the app passes `TemporalHost.retentionMs` through a {@link TemporalRetentionHistory}), undefined
   *   while unknown (not connected yet, or not readable): workflow, sync and pipeline runs are kept meanwhile
   */
  constructor(
    private readonly db: Database,
    private readonly retentionMs: number,
    metrics: Metrics,
    private readonly temporalRetentionMs: (nowMs: number) => number | undefined | Promise<number | undefined> = () => undefined,
  ) {
    this.deleted = metrics.counter("svc_retention_deleted_total", "Rows the retention of runs and credentials deleted, by table: action_runs and webhook_runs (each with its attempts), workflow_runs (each with its interventions), connector_runs (sync and pipeline runs), download_urls (SVC_RUN_RETENTION_MS after they ended), sessions (a day after they expired)", ["table"]);
  }

  /** Stops passes between batches (at shutdown): the one running ends after its current batch. */
  stop(): void {
    this.stopped = true;
  }

  /**
   * One pass: deletes what is past retention at `nowMs` (see the module comment), batch by batch, until
   * nothing is left to delete or {@link stop} is called.
   * @returns the rows deleted, by table
   * @throws the store's error (the batches before it stay deleted)
   */
  async prune(nowMs = Date.now()): Promise<PruneCounts> {
    const cutoffMs = nowMs - this.retentionMs;
    const cutoff = new Date(cutoffMs).toISOString();
    const counts: PruneCounts = { action_runs: 0, webhook_runs: 0, workflow_runs: 0, connector_runs: 0, download_urls: 0, sessions: 0 };
    counts.action_runs = await this.inBatches("action_runs", ACTION_RUNS_DUE, [firstIdAt("run", cutoffMs), cutoff], async (tx, due) => {
      const deleted = await tx.all<{ run_id: string }>(DELETE_ACTION_RUNS, [JSON.stringify(due.map((r) => r.id)), cutoff]);
      if (deleted.length === 0) return 0;
      const runIds = deleted.map((r) => r.run_id);
      await tx.run("DELETE FROM file_references WHERE owner_kind = 'run' AND owner_id IN (SELECT value FROM json_each(?))", [JSON.stringify(runIds)]);
      await tx.run(UNKEY_DATASET_VERSIONS, [JSON.stringify(runIds.map((id) => `action:${id}`))]);
      return deleted.length;
    });
    counts.webhook_runs = await this.inBatches<{ id: string; bytes: number }>(
      "webhook_runs",
      WEBHOOK_RUNS_DUE,
      [firstIdAt("whrun", cutoffMs), cutoff],
      async (tx, due) => {
        const deleted = await tx.all<{ id: string; execution_id: string }>(DELETE_WEBHOOK_RUNS, [JSON.stringify(due.map((r) => r.id)), cutoff]);
        if (deleted.length === 0) return 0;
        const keys = JSON.stringify(deleted.map((r) => `webhook:${r.execution_id}`));
        await tx.run(UNKEY_COMMITS, [keys]);
        await tx.run(UNKEY_DATASET_VERSIONS, [keys]);
        await tx.run("DELETE FROM webhook_attempts WHERE run_id IN (SELECT value FROM json_each(?))", [JSON.stringify(deleted.map((r) => r.id))]);
        return deleted.length;
      },
      // at most BATCH_BYTES of bodies a transaction (freeing their pages is the batch's cost), at least one delivery
      (found) => {
        let bytes = 0;
        return found.filter((r, i) => (bytes += r.bytes) <= BATCH_BYTES || i === 0);
      },
    );
    counts.download_urls = await this.deleteInBatches("download_urls", DELETE_DOWNLOAD_URLS_DUE, [cutoffMs]);
    counts.sessions = await this.deleteInBatches("sessions", DELETE_SESSIONS_DUE, [nowMs - SESSION_KEPT_MS]);
    // a workflow run's row goes after Temporal forgot the run (else its state would read 404 while Temporal
    // has it); last, as it waits on Temporal's answer (a deadline of seconds)
    const temporalMs = await this.temporalRetentionMs(nowMs);
    if (temporalMs !== undefined) {
      const ended = new Date(nowMs - Math.max(this.retentionMs, temporalMs + WORKFLOW_MARGIN_MS)).toISOString();
      counts.workflow_runs = await this.byEndInBatches("workflow_runs", WORKFLOW_RUNS_DUE, ended, async (tx, due) => {
        const deleted = await tx.all<{ run_id: string }>(DELETE_WORKFLOW_RUNS, [JSON.stringify(due.map((r) => r.id)), ended]);
        if (deleted.length === 0) return 0;
        const runIds = JSON.stringify(deleted.map((r) => r.run_id));
        await tx.run("DELETE FROM interventions WHERE run_id IN (SELECT value FROM json_each(?))", [runIds]);
        await tx.run(UNKEY_WORKFLOW_WRITES, [runIds]);
        return deleted.length;
      });
      // sync and pipeline runs are Temporal workflow runs too: their rows go by the same rule
      counts.connector_runs = await this.byEndInBatches("connector_runs", CONNECTOR_RUNS_DUE, ended, async (tx, due) => {
        const deleted = await tx.all<{ run_id: string; kind: string }>(DELETE_CONNECTOR_RUNS, [JSON.stringify(due.map((r) => r.id)), ended]);
        if (deleted.length === 0) return 0;
        // a sync's handler commits under `sync:<runId>` (its dataset versions `sync:<runId>:dataset:<i>`), a pipeline's steps under `pipeline:<runId>:<n>`
        const syncKeys = JSON.stringify(deleted.filter((r) => r.kind === "sync").map((r) => `sync:${r.run_id}`));
        const pipelines = JSON.stringify(deleted.filter((r) => r.kind === "pipeline").map((r) => r.run_id));
        await tx.run(UNKEY_COMMITS, [syncKeys]);
        await tx.run(UNKEY_DATASET_VERSIONS, [syncKeys]);
        await tx.run(UNKEY_PIPELINE_STEPS, [pipelines]);
        await tx.run(UNKEY_PIPELINE_DATASETS, [pipelines]);
        return deleted.length;
      });
    }
    return counts;
  }

  /**
   * Reads the rows due in id order on the reader connection (`due`, whose first parameter is the id
   * after which to read), a page at a time, and deletes each page (or the part `take` keeps of it) in a
   * transaction of its own (`remove`, which checks again that each is due and answers how many it
   * deleted); the next page starts after the last id taken, so a pass reads each row once.
   */
  private async inBatches<R extends { id: string }>(table: keyof PruneCounts, due: string, params: string[], remove: (tx: SqlWriter, rows: R[]) => Promise<number>, take: (rows: R[]) => R[] = (rows) => rows): Promise<number> {
    let total = 0;
    let after = "";
    while (!this.stopped) {
      const found = await this.db.all<R>(due, [after, ...params]);
      if (found.length === 0) break;
      const page = take(found);
      const deleted = await this.db.transaction((tx) => remove(tx, page));
      total += deleted;
      if (deleted) this.deleted.inc({ table }, deleted);
      after = page.at(-1)!.id;
      if (found.length < BATCH && page.length === found.length) break;
    }
    return total;
  }

  /**
   * Like {@link inBatches}, for rows found by when they ended: `due` takes `[ended before, after end,
   * after id]` and answers `id` and `finished_at`, in that order; each page is deleted in a transaction of
   * its own (`remove` checks again), and the next starts after the last row read.
   */
  private async byEndInBatches(table: keyof PruneCounts, due: string, endedBefore: string, remove: (tx: SqlWriter, rows: Array<{ id: string }>) => Promise<number>): Promise<number> {
    let total = 0;
    let after = ["", ""];
    while (!this.stopped) {
      const found = await this.db.all<{ id: string; finished_at: string }>(due, [endedBefore, ...after]);
      if (found.length === 0) break;
      const deleted = await this.db.transaction((tx) => remove(tx, found));
      total += deleted;
      if (deleted) this.deleted.inc({ table }, deleted);
      const last = found.at(-1)!;
      after = [last.finished_at, last.id];
      if (found.length < BATCH) break;
    }
    return total;
  }

  /** Runs a `DELETE … LIMIT` statement in transactions of its own until it deletes fewer than {@link BATCH} rows; counts them. */
  private async deleteInBatches(table: keyof PruneCounts, statement: string, params: number[]): Promise<number> {
    let total = 0;
    while (!this.stopped) {
      const { changes } = await this.db.transaction((tx) => tx.run(statement, params));
      total += changes;
      if (changes) this.deleted.inc({ table }, changes);
      if (changes < BATCH) break;
    }
    return total;
  }
}
