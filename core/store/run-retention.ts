/**
 * Retention of run records and spent credentials (README "Retention"): what the store keeps of finished
 * work, so that the data directory does not grow for ever. A pass ({@link RunRetention.prune}) runs at
 * start and then every tenth of `SVC_RUN_RETENTION_MS` (an hour apart at most), and deletes in batches
 * of at most {@link BATCH} rows (and {@link BATCH_BYTES} of webhook bodies) per transaction, each a short
 * write on the single writer beside the requests of its group commit; shutdown stops it between batches.
 *
 * | Table | What goes | When |
 * |---|---|---|
 * | `action_runs` | a run that ended (`succeeded`, `failed`) and declared no effect | created and ended more than `SVC_RUN_RETENTION_MS` ago |
 * | `webhook_runs` and their `webhook_attempts` | a delivery that ended (`completed`, `failed`), its raw body with it | received and ended more than `SVC_RUN_RETENTION_MS` ago |
 * | `download_urls` | a URL that expired (a revoked one expires within 7 days of its creation too) | more than `SVC_RUN_RETENTION_MS` ago |
 * | `sessions` | a browser session that expired (an ended one expires within its TTL too) | more than a day ago |
 *
 * **Idempotency within the retention.** A run's keys are forgotten with it, so that a request that
 * names it again later is a new one in full (not a run recorded anew whose writes its old keys would
 * drop): a resent `runId` of an action run runs again (spec 4.2 rule 4 holds within the retention), a
 * provider's retry of a delivery is a new delivery. With the run go the keys its handler's writes were
 * committed under: the delivery's ontology commit key (`webhook:<executionId>` in `commits`) and the
 * dataset versions' keys (`<action|webhook>:<id>:dataset:<i>`), set to NULL (the commits and versions
 * stay). The run's file references go too (the files stay: a referenced file is never collected).
 *
 * **Kept.** A run or a delivery still `running` (a process died under it: its resend runs it again); an
 * action run that declared an effect, whose effect is a Temporal run named by the action's `runId`
 * (`action-effect:<runId>`), started once per `runId`: a resend after its record went would run the
 * action without it. Workflow, sync and pipeline runs are Temporal's to keep (`SVC_TEMPORAL_RETENTION_MS`).
 *
 * Rows are found by their ids' time (the ULID of `newId`: creation order, the primary key's order) or by
 * expiry indexes (migration 023), so a pass reads only the rows it deletes, plus the few it keeps in
 * that range.
 */
import { encodeTime } from "ulid";
import type { Counter, Metrics } from "../metrics";
import type { Database, SqlWriter } from "./db";

/** Rows deleted per transaction. */
export const BATCH = 500;

/** Webhook bodies freed per transaction, at most (bytes; at least one delivery a batch): 16 MiB. */
export const BATCH_BYTES = 16 * 1024 * 1024;

/** The ended action runs without an effect due at `[id bound, finished before]` (ids in creation order along the primary key). */
export const ACTION_RUNS_DUE = `SELECT id, run_id FROM action_runs WHERE id < ? AND status IN ('succeeded', 'failed') AND finished_at < ? AND effect_status IS NULL ORDER BY id LIMIT ${BATCH}`;
/** The ended webhook deliveries due at `[id bound, finished before]`, with their bodies' sizes (read from the record header, not the body). */
export const WEBHOOK_RUNS_DUE = `SELECT id, execution_id, length(body) AS bytes FROM webhook_runs WHERE id < ? AND status IN ('completed', 'failed') AND finished_at < ? ORDER BY id LIMIT ${BATCH}`;
/** Deletes a batch of the download URLs expired before `[epoch ms]`. */
export const DELETE_DOWNLOAD_URLS_DUE = `DELETE FROM download_urls WHERE id IN (SELECT id FROM download_urls WHERE expires_at < ? ORDER BY expires_at LIMIT ${BATCH})`;
/** Deletes a batch of the sessions expired before `[epoch ms]`. */
export const DELETE_SESSIONS_DUE = `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at < ? ORDER BY expires_at LIMIT ${BATCH})`;
/** Forgets the dataset versions' keys of the handler runs keyed `[JSON list of keys]` (`<key>:dataset:<i>`), along the keys' unique index. */
const UNKEY_DATASET_VERSIONS = `UPDATE dataset_versions SET idempotency_key = NULL WHERE idempotency_key IN (
  SELECT d.idempotency_key FROM json_each(?) AS j JOIN dataset_versions AS d ON d.idempotency_key > j.value || ':dataset:' AND d.idempotency_key < j.value || ':dataset;')`;

/** How long an expired browser session is kept (ms): a day. */
const SESSION_KEPT_MS = 86_400_000;

/** What one pass deleted, by table. */
export interface PruneCounts {
  action_runs: number;
  webhook_runs: number;
  download_urls: number;
  sessions: number;
}

/** The retention pass of run records and spent credentials (see the module comment; README "Retention"). */
export class RunRetention {
  private readonly deleted: Counter<"table">;
  private stopped = false;

  /**
   * @param retentionMs `SVC_RUN_RETENTION_MS`: how long an ended run and a spent download URL are kept
   */
  constructor(
    private readonly db: Database,
    private readonly retentionMs: number,
    metrics: Metrics,
  ) {
    this.deleted = metrics.counter("svc_retention_deleted_total", "Rows the retention of runs and credentials deleted, by table: action_runs and webhook_runs (each with its attempts), download_urls (SVC_RUN_RETENTION_MS after they ended), sessions (a day after they expired)", ["table"]);
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
    const counts: PruneCounts = { action_runs: 0, webhook_runs: 0, download_urls: 0, sessions: 0 };
    counts.action_runs = await this.inBatches("action_runs", async (tx) => {
      const due = await tx.all<{ id: string; run_id: string }>(ACTION_RUNS_DUE, [idBefore("run", cutoffMs), cutoff]);
      if (due.length === 0) return { deleted: 0, more: false };
      const runIds = JSON.stringify(due.map((r) => r.run_id));
      await tx.run("DELETE FROM file_references WHERE owner_kind = 'run' AND owner_id IN (SELECT value FROM json_each(?))", [runIds]);
      await tx.run(UNKEY_DATASET_VERSIONS, [JSON.stringify(due.map((r) => `action:${r.run_id}`))]);
      const { changes } = await tx.run("DELETE FROM action_runs WHERE id IN (SELECT value FROM json_each(?))", [JSON.stringify(due.map((r) => r.id))]);
      return { deleted: changes, more: due.length === BATCH };
    });
    counts.webhook_runs = await this.inBatches("webhook_runs", async (tx) => {
      const found = await tx.all<{ id: string; execution_id: string; bytes: number }>(WEBHOOK_RUNS_DUE, [idBefore("whrun", cutoffMs), cutoff]);
      // at most BATCH_BYTES of bodies a transaction (freeing their pages is the batch's cost), at least one delivery
      let bytes = 0;
      const due = found.filter((r, i) => (bytes += r.bytes) <= BATCH_BYTES || i === 0);
      if (due.length === 0) return { deleted: 0, more: false };
      const ids = JSON.stringify(due.map((r) => r.id));
      const keys = JSON.stringify(due.map((r) => `webhook:${r.execution_id}`));
      await tx.run("UPDATE commits SET idempotency_key = NULL WHERE idempotency_key IN (SELECT value FROM json_each(?))", [keys]);
      await tx.run(UNKEY_DATASET_VERSIONS, [keys]);
      await tx.run("DELETE FROM webhook_attempts WHERE run_id IN (SELECT value FROM json_each(?))", [ids]);
      const { changes } = await tx.run("DELETE FROM webhook_runs WHERE id IN (SELECT value FROM json_each(?))", [ids]);
      return { deleted: changes, more: found.length === BATCH || due.length < found.length };
    });
    counts.download_urls = await this.inBatches("download_urls", async (tx) => {
      const { changes } = await tx.run(DELETE_DOWNLOAD_URLS_DUE, [cutoffMs]);
      return { deleted: changes, more: changes === BATCH };
    });
    counts.sessions = await this.inBatches("sessions", async (tx) => {
      const { changes } = await tx.run(DELETE_SESSIONS_DUE, [nowMs - SESSION_KEPT_MS]);
      return { deleted: changes, more: changes === BATCH };
    });
    return counts;
  }

  /** Runs `batch` in a transaction of its own while it says there is more (and no {@link stop}); counts what it deleted. */
  private async inBatches(table: keyof PruneCounts, batch: (tx: SqlWriter) => Promise<{ deleted: number; more: boolean }>): Promise<number> {
    let total = 0;
    while (!this.stopped) {
      const { deleted, more } = await this.db.transaction(batch);
      total += deleted;
      if (deleted) this.deleted.inc({ table }, deleted);
      if (!more) break;
    }
    return total;
  }
}

/** The smallest id `newId(prefix)` makes at `ms`: every id below it was made before `ms`. */
function idBefore(prefix: string, ms: number): string {
  return `${prefix}_${encodeTime(Math.max(0, ms), 10)}`;
}
