/**
 * Retention of run records and spent credentials (README "Retention"): what the store keeps of finished
 * work, so that the data directory does not grow for ever. A pass ({@link RunRetention.prune}) runs every
 * tenth of `SVC_RUN_RETENTION_MS` (at most hourly) and deletes, in batches of {@link BATCH} rows per
 * transaction (each a short write on the single writer, beside the requests of its group commit):
 *
 * | Table | What goes | When |
 * |---|---|---|
 * | `action_runs` (and the run's `file_references`) | a run that ended (`succeeded`, `failed`) and whose effects started or had none | created and ended more than `SVC_RUN_RETENTION_MS` ago |
 * | `webhook_runs` and their `webhook_attempts` | a delivery that ended (`completed`, `failed`), its raw body with it | received and ended more than `SVC_RUN_RETENTION_MS` ago |
 * | `download_urls` | a URL that expired (a revoked one expires within 7 days of its creation too) | more than `SVC_RUN_RETENTION_MS` ago |
 * | `sessions` | a browser session that expired (an ended one too: its expiry is within its TTL) | more than a day ago |
 *
 * What that changes for clients: a resent `runId` of an action run past retention runs again (spec 4.2
 * rule 4 holds within the retention), a provider's retry of a delivery past it is a new delivery (its
 * idempotency key is forgotten: providers retry for hours to 3 days), and a download URL past it
 * answers 404 where it answered 410. A run still `running`, an effect still `pending` and a delivery
 * still `running` are never deleted. Workflow, sync and pipeline runs are Temporal's to keep
 * (`SVC_TEMPORAL_RETENTION_MS`); the referenced files stay (core/files/file-store.ts).
 *
 * Rows are found by their ids' time (the ULID of `newId`: creation order, the primary key's order), so a
 * pass reads only the rows it deletes, plus the few still running or pending in that range.
 */
import { encodeTime } from "ulid";
import type { Counter, Metrics } from "../metrics";
import type { Database, SqlWriter } from "./db";

/** Rows deleted per transaction. */
export const BATCH = 500;

/** The ended action runs due at `[id bound, finished before]` (ids in creation order along the primary key). */
export const ACTION_RUNS_DUE = `SELECT id, run_id FROM action_runs WHERE id < ? AND status IN ('succeeded', 'failed') AND finished_at < ? AND (effect_status IS NULL OR effect_status <> 'pending') ORDER BY id LIMIT ${BATCH}`;
/** The ended webhook deliveries due at `[id bound, finished before]`. */
export const WEBHOOK_RUNS_DUE = `SELECT id FROM webhook_runs WHERE id < ? AND status IN ('completed', 'failed') AND finished_at < ? ORDER BY id LIMIT ${BATCH}`;
/** Deletes a batch of the download URLs expired before `[epoch ms]`. */
export const DELETE_DOWNLOAD_URLS_DUE = `DELETE FROM download_urls WHERE id IN (SELECT id FROM download_urls WHERE expires_at < ? ORDER BY expires_at LIMIT ${BATCH})`;
/** Deletes a batch of the sessions expired before `[epoch ms]`. */
export const DELETE_SESSIONS_DUE = `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at < ? ORDER BY expires_at LIMIT ${BATCH})`;

/** How long an ended or expired browser session is kept (ms): a day. */
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

  /**
   * @param retentionMs `SVC_RUN_RETENTION_MS`: how long an ended run and a spent download URL are kept
   */
  constructor(
    private readonly db: Database,
    private readonly retentionMs: number,
    metrics: Metrics,
  ) {
    this.deleted = metrics.counter("svc_retention_deleted_total", "Rows the run retention deleted (SVC_RUN_RETENTION_MS), by table: action_runs, webhook_runs (each with its attempts), download_urls, sessions", ["table"]);
  }

  /**
   * One pass: deletes what is past retention at `nowMs` (see the module comment), batch by batch, until
   * nothing is left to delete.
   * @returns the rows deleted, by table
   * @throws the store's error (the batches before it stay deleted)
   */
  async prune(nowMs = Date.now()): Promise<PruneCounts> {
    const cutoffMs = nowMs - this.retentionMs;
    const cutoff = new Date(cutoffMs).toISOString();
    const counts: PruneCounts = { action_runs: 0, webhook_runs: 0, download_urls: 0, sessions: 0 };
    counts.action_runs = await this.inBatches("action_runs", async (tx) => {
      const ids = await tx.all<{ id: string; run_id: string }>(ACTION_RUNS_DUE, [idBefore("run", cutoffMs), cutoff]);
      if (ids.length === 0) return 0;
      const list = JSON.stringify(ids.map((r) => r.id));
      await tx.run("DELETE FROM file_references WHERE owner_kind = 'run' AND owner_id IN (SELECT value FROM json_each(?))", [JSON.stringify(ids.map((r) => r.run_id))]);
      return (await tx.run("DELETE FROM action_runs WHERE id IN (SELECT value FROM json_each(?))", [list])).changes;
    });
    counts.webhook_runs = await this.inBatches("webhook_runs", async (tx) => {
      const ids = await tx.all<{ id: string }>(WEBHOOK_RUNS_DUE, [idBefore("whrun", cutoffMs), cutoff]);
      if (ids.length === 0) return 0;
      const list = JSON.stringify(ids.map((r) => r.id));
      await tx.run("DELETE FROM webhook_attempts WHERE run_id IN (SELECT value FROM json_each(?))", [list]);
      return (await tx.run("DELETE FROM webhook_runs WHERE id IN (SELECT value FROM json_each(?))", [list])).changes;
    });
    counts.download_urls = await this.inBatches("download_urls", (tx) =>
      tx.run(DELETE_DOWNLOAD_URLS_DUE, [cutoffMs]).then((r) => r.changes),
    );
    counts.sessions = await this.inBatches("sessions", (tx) =>
      tx.run(DELETE_SESSIONS_DUE, [nowMs - SESSION_KEPT_MS]).then((r) => r.changes),
    );
    return counts;
  }

  /** Runs `batch` in its own transaction until it deletes fewer than {@link BATCH} rows; counts them. */
  private async inBatches(table: keyof PruneCounts, batch: (tx: SqlWriter) => Promise<number>): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.db.transaction(batch);
      total += n;
      if (n) this.deleted.inc({ table }, n);
      if (n < BATCH) return total;
    }
  }
}

/** The smallest id `newId(prefix)` makes at `ms`: every id below it was made before `ms`. */
function idBefore(prefix: string, ms: number): string {
  return `${prefix}_${encodeTime(Math.max(0, ms), 10)}`;
}
