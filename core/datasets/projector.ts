import { isApiError, messageOf } from "../errors";
import { inject, injectable } from "../di";
import { Database, type SqlReader, type SqlWriter } from "../store/db";
import { ProjectRegistry, type RegisteredDataset } from "../project/registry";
import { EventLog } from "../events/log";
import { EVENT_STREAM, type EventStream } from "../events/stream";
import { OntologyStore } from "../ontology/store";
import { Lifecycle } from "../lifecycle";
import { LOGGER, type Logger } from "../logger";
import { CONFIG, type Config } from "../config";
import { nowIso } from "../ids";
import { SerialPass } from "../serial-pass";
import type { OntologyChange } from "../sdk/context";
import type { Topic } from "../events/catalog";
import type { DatasetProjection } from "../sdk/datasets";
import type { ProjectionState } from "./schemas";

interface ProgressRow {
  projected_version: number;
  target_version: number | null;
  after_key: string | null;
  last_error: string | null;
}

interface CandidateRow {
  row_key: string;
  /** 1 for the key's row visible at V that started after P, 0 for its row visible at P. */
  after_p: number;
  data: string;
}

/**
 * The rows of the difference between versions P and V (P < V) after a key: rows visible at V that
 * started after P (new or changed: upsert), and rows visible at P that ended by V (changed or gone).
 * A key has at most one of each. Parameters: dataset, after key, V, P, V, P, P, V, limit.
 */
const DIFF_SQL = `FROM dataset_rows WHERE dataset_id = ? AND row_key > ? AND from_version <= ? AND (
    (from_version > ? AND (to_version IS NULL OR to_version > ?))
    OR (from_version <= ? AND to_version > ? AND to_version <= ?)
  )`;

/** How many skipped rows a projection state lists (`failures`; `failedRows` counts them all). */
const FAILED_ROWS_LISTED = 20;

/**
 * Projects datasets into objects (spec 2.3 origin `projection`, no actor; issue 14): a durable runtime
 * job started after the seed, poked after every stream append with a `datasets` event (each version
 * commit appends `dataset.version.committed`; after a failed chunk, after any append) and every
 * `SVC_OUTBOX_RECOVERY_MS`.
 *
 * For each dataset with a projection whose projected version P is below its newest committed version
 * V, it walks the difference between P and V in row-key order, at most `SVC_PROJECTION_CHUNK_ROWS`
 * keys per chunk: a key with a row visible at V that started after P upserts its object (the mapped
 * properties; `object.created`, or `object.updated` with `propertyChanges`, nothing when unchanged)
 * and its links (a link whose target column changed is deleted first); a key visible at P and not at V
 * deletes its object and its links. Each chunk is ONE SQLite transaction: `OntologyStore.applyInTx`
 * with origin `{ kind: "projection", datasetId, version: V }`, no actor, correlationId
 * `projection:<datasetId>:<V>`, idempotencyKey `projection:<datasetId>:<V>:<after_key>`, and the
 * progress row (`after_key`) in the same transaction; the last chunk sets `projected_version = V`. A
 * crash resumes from `after_key` with the same V, so every row is projected exactly once per version.
 * Versions committed meanwhile are projected afterwards, from V straight to the newest.
 */
@injectable()
export class DatasetProjector {
  private readonly projected: RegisteredDataset[];
  private readonly chunkRows: number;
  private stopped = true;
  private readonly passes = new SerialPass(() => this.pass(), {
    stopped: () => this.stopped,
    onError: (err) => this.log.error({ err }, "dataset projection pass failed; it resumes from its stored progress"),
  });
  /** Whether the last pass failed (a chunk is retried on any append then, not only a version's). */
  private failing = false;
  /** Only a commit with a `datasets` event can have committed a version (no notice topics: any append). */
  private readonly onAppended = (topics?: ReadonlySet<Topic>) => {
    if (!topics || topics.has("datasets") || this.failing) void this.poke();
  };

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(EVENT_STREAM) private readonly stream: EventStream,
    @inject(OntologyStore) private readonly ontology: OntologyStore,
    @inject(ProjectRegistry) project: ProjectRegistry,
    @inject(Lifecycle) lifecycle: Lifecycle,
    @inject(LOGGER) private readonly log: Logger,
    @inject(CONFIG) config: Config,
  ) {
    this.projected = project.datasets().filter((d) => d.definition.projection);
    this.chunkRows = config.projectionChunkRows;
    lifecycle.every(config.outboxRecoveryMs, () => this.poke());
    lifecycle.hook("close", () => this.stop());
  }

  /**
   * Starts catching up and following the stream; waits for the catch-up at most `waitMs` (the app
   * passes 5 s: a seed's small projection is done before the server answers, a long one resumed after
   * a crash goes on in the background without holding up startup). Does nothing when no dataset has a
   * projection.
   */
  async start(waitMs = Number.POSITIVE_INFINITY): Promise<void> {
    if (this.projected.length === 0 || !this.stopped) return;
    this.stopped = false;
    this.stream.notifier.on("appended", this.onAppended);
    const caughtUp = this.poke();
    if (waitMs === Number.POSITIVE_INFINITY) return caughtUp;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([caughtUp, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  /** Stops following and waits for the chunk in progress (its transaction is whole or absent). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stream.notifier.off("appended", this.onAppended);
    await this.passes.idle();
  }

  /**
   * Projects chunks until every dataset is projected up to its newest committed version ({@link
   * SerialPass}: concurrent calls share one pass, a call during a pass schedules one more). Never
   * throws: a failed chunk is logged and recorded as `lastError`, leaves nothing written, and is
   * retried on the next poke.
   */
  poke(): Promise<void> {
    return this.passes.poke();
  }

  /** One pass: each projected dataset in turn, chunk after chunk until it is caught up or stopped. */
  private async pass(): Promise<void> {
    this.failing = false;
    for (const dataset of this.projected) {
      try {
        while (!this.stopped && (await this.step(dataset)));
      } catch (err) {
        this.failing = true;
        this.log.error({ err, datasetId: dataset.id }, "dataset projection failed; it resumes from its stored progress");
        const message = messageOf(err);
        await this.db.transaction((tx) => this.saveProgress(tx, dataset.id, undefined, { last_error: message })).catch(() => undefined);
      }
    }
  }

  /**
   * Projects one chunk of `dataset` (one transaction), then drains the outbox.
   * @returns false when the dataset was already projected up to its newest committed version
   */
  async step(dataset: RegisteredDataset): Promise<boolean> {
    const projection = dataset.definition.projection!;
    // the usual poke (another dataset's version, the recovery timer) finds nothing to project: answered
    // from committed data on the reader, without taking the writer (issue 15: it cost every action run
    // two write transactions). A version
    // committed after this read appends its event, which pokes again.
    if (!(await this.pending(dataset.id))) return false;
    const progressed = await this.db.transaction(async (tx) => {
      const progress = await this.progress(tx, dataset.id);
      let target = progress.target_version;
      let after = progress.after_key ?? "";
      if (target === null) {
        const latest = (await tx.get<{ v: number }>("SELECT COALESCE(MAX(version), 0) AS v FROM dataset_versions WHERE dataset_id = ? AND status = 'committed'", [dataset.id]))!.v;
        if (latest <= progress.projected_version) return false;
        target = latest;
        after = "";
      }
      const P = progress.projected_version;
      // a key has at most two candidate rows: 2n+1 rows hold n whole keys even when the last is cut
      const rows = await tx.all<CandidateRow>(`SELECT row_key, from_version > ? AS after_p, data ${DIFF_SQL} ORDER BY row_key, from_version LIMIT ?`, [P, dataset.id, after, target, P, target, P, P, target, 2 * this.chunkRows + 1]);
      const keys = group(rows);
      if (rows.length === 2 * this.chunkRows + 1) keys.pop();
      const chunk = keys.slice(0, this.chunkRows);
      const done = chunk.length === keys.length && rows.length < 2 * this.chunkRows + 1;
      if (chunk.length) await this.applyChunk(tx, dataset, projection, chunk, target, after);
      if (done) await this.saveProgress(tx, dataset.id, { projected_version: target, target_version: null, after_key: null, last_error: null });
      else await this.saveProgress(tx, dataset.id, { projected_version: P, target_version: target, after_key: chunk.at(-1)!.key, last_error: null });
      return true;
    });
    if (progressed) await this.events.drain();
    return progressed;
  }

  /**
   * Applies a chunk's changes in `tx`. A row the projection cannot write (its mapping throws, or the
   * object it makes is refused) is skipped and listed in `dataset_projection_failures` with the version
   * and the reason, so one bad row does not stop the projection for good (it used to be retried for
   * ever, and no later version could get past it); a key written again removes its listing. The chunk
   * is applied whole when it can be; only when that fails is it applied key by key, each in a savepoint.
   */
  private async applyChunk(tx: SqlWriter, dataset: RegisteredDataset, projection: DatasetProjection, chunk: KeyDiff[], target: number, after: string): Promise<void> {
    const context = (suffix = "") => ({
      origin: { kind: "projection" as const, datasetId: dataset.id, version: target },
      correlationId: `projection:${dataset.id}:${target}`,
      idempotencyKey: `projection:${dataset.id}:${target}:${after}${suffix}`,
    });
    const failed: Array<{ key: string; error: string }> = [];
    const mapped: Array<{ key: string; changes: OntologyChange[] }> = [];
    for (const k of chunk) {
      try {
        mapped.push({ key: k.key, changes: changesOf(projection, k) });
      } catch (err) {
        failed.push({ key: k.key, error: `the projection's mapping threw: ${messageOf(err)}` });
      }
    }
    const whole = await tx.savepoint(() => this.ontology.applyInTx(tx, mapped.flatMap((m) => m.changes), context())).then(
      () => true,
      (err: unknown) => (isApiError(err) ? false : Promise.reject(err)),
    );
    if (!whole) {
      const refused: Array<{ key: string; err: Error }> = [];
      for (const m of mapped) {
        await tx.savepoint(() => this.ontology.applyInTx(tx, m.changes, context(`:${m.key}`))).catch((err: unknown) => {
          if (!isApiError(err)) throw err;
          refused.push({ key: m.key, err });
        });
      }
      // every row of a chunk refused is the projection's problem, not the rows' (an object type tightened
      // by a deploy, a type another writer owns): the chunk fails and is retried, as before
      if (refused.length > 1 && refused.length === mapped.length) throw refused[0]!.err;
      for (const r of refused) failed.push({ key: r.key, error: `its object was refused: ${r.err.message}` });
    }
    const skipped = new Set(failed.map((f) => f.key));
    const written = chunk.map((k) => k.key).filter((key) => !skipped.has(key));
    if (written.length) await tx.run(`DELETE FROM dataset_projection_failures WHERE dataset_id = ? AND row_key IN (SELECT value FROM json_each(?))`, [dataset.id, JSON.stringify(written)]);
    for (const f of failed) {
      await tx.run(
        `INSERT INTO dataset_projection_failures (dataset_id, row_key, version, error, failed_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (dataset_id, row_key) DO UPDATE SET version = excluded.version, error = excluded.error, failed_at = excluded.failed_at`,
        [dataset.id, f.key, target, f.error, nowIso()],
      );
    }
    if (failed.length) this.log.warn({ datasetId: dataset.id, version: target, rows: failed.slice(0, 10) }, `the projection of dataset "${dataset.id}" skipped ${failed.length} row${failed.length === 1 ? "" : "s"} it could not write (listed in the dataset's projection state)`);
  }

  /**
   * The projection state of a dataset (undefined without a projection): `projecting` while its
   * projected version is below its newest committed one, with `pendingRows`, the changed rows still to
   * walk for the version being projected.
   */
  async state(dataset: RegisteredDataset): Promise<ProjectionState | undefined> {
    const projection = dataset.definition.projection;
    if (!projection) return undefined;
    const progress = await this.progress(this.db, dataset.id);
    const latest = (await this.db.get<{ v: number }>("SELECT COALESCE(MAX(version), 0) AS v FROM dataset_versions WHERE dataset_id = ? AND status = 'committed'", [dataset.id]))!.v;
    const state: ProjectionState = { objectTypeId: projection.objectTypeId, projectedVersion: progress.projected_version, status: latest > progress.projected_version ? "projecting" : "idle" };
    if (state.status === "projecting") {
      const target = progress.target_version ?? latest;
      const P = progress.projected_version;
      const { n } = (await this.db.get<{ n: number }>(`SELECT COUNT(DISTINCT row_key) AS n ${DIFF_SQL}`, [dataset.id, progress.target_version === null ? "" : (progress.after_key ?? ""), target, P, target, P, P, target]))!;
      Object.assign(state, { targetVersion: target, pendingRows: n });
    }
    if (progress.last_error) state.lastError = progress.last_error;
    const failures = await this.db.all<{ row_key: string; version: number; error: string; failed_at: string }>("SELECT row_key, version, error, failed_at FROM dataset_projection_failures WHERE dataset_id = ? ORDER BY row_key LIMIT ?", [dataset.id, FAILED_ROWS_LISTED + 1]);
    if (failures.length) {
      const { n } = (await this.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM dataset_projection_failures WHERE dataset_id = ?", [dataset.id]))!;
      Object.assign(state, { failedRows: n, failures: failures.slice(0, FAILED_ROWS_LISTED).map((f) => ({ key: f.row_key, version: f.version, error: f.error, failedAt: f.failed_at })) });
    }
    return state;
  }

  /** Whether `datasetId` has a projection in progress or a committed version newer than the projected one (committed data). */
  private async pending(datasetId: string): Promise<boolean> {
    const row = await this.db.get<{ n: number }>(
      `SELECT EXISTS (SELECT 1 FROM dataset_projections WHERE dataset_id = ? AND target_version IS NOT NULL)
           OR (SELECT COALESCE(MAX(version), 0) FROM dataset_versions WHERE dataset_id = ? AND status = 'committed') >
              COALESCE((SELECT projected_version FROM dataset_projections WHERE dataset_id = ?), 0) AS n`,
      [datasetId, datasetId, datasetId],
    );
    return row?.n === 1;
  }

  private async progress(reader: SqlReader, datasetId: string): Promise<ProgressRow> {
    return (await reader.get<ProgressRow>("SELECT projected_version, target_version, after_key, last_error FROM dataset_projections WHERE dataset_id = ?", [datasetId])) ?? { projected_version: 0, target_version: null, after_key: null, last_error: null };
  }

  /** Writes the progress row (creating it); `undefined` keeps the stored progress and sets only the other fields. */
  private async saveProgress(tx: SqlWriter, datasetId: string, progress: Omit<ProgressRow, "last_error"> & { last_error: string | null } | undefined, extra: Partial<ProgressRow> = {}): Promise<void> {
    const current = progress ?? { ...(await this.progress(tx, datasetId)), ...extra };
    await tx.run(
      `INSERT INTO dataset_projections (dataset_id, projected_version, target_version, after_key, last_error, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (dataset_id) DO UPDATE SET projected_version = excluded.projected_version, target_version = excluded.target_version, after_key = excluded.after_key, last_error = excluded.last_error, updated_at = excluded.updated_at`,
      [datasetId, current.projected_version, current.target_version, current.after_key, current.last_error, nowIso()],
    );
  }
}

/** One key of the difference: its row at V when it is new or changed, its row at P when it had one. */
interface KeyDiff {
  key: string;
  atV?: Record<string, unknown>;
  atP?: Record<string, unknown>;
}

/** Groups candidate rows (ordered by key, then version) by key. */
function group(rows: readonly CandidateRow[]): KeyDiff[] {
  const out: KeyDiff[] = [];
  for (const r of rows) {
    let last = out.at(-1);
    if (!last || last.key !== r.row_key) out.push((last = { key: r.row_key }));
    if (r.after_p === 1) last.atV = JSON.parse(r.data);
    else last.atP = JSON.parse(r.data);
  }
  return out;
}

/** The ontology changes of one key (object first, then its links). */
function changesOf(projection: DatasetProjection, k: KeyDiff): OntologyChange[] {
  const base = { objectTypeId: projection.objectTypeId, primaryId: k.key };
  const links = projection.links ?? [];
  const linkKey = (l: (typeof links)[number], target: unknown) => ({ sourceTypeId: projection.objectTypeId, sourceId: k.key, linkId: l.linkId, targetTypeId: l.targetTypeId, targetId: String(target) });
  const present = (x: unknown) => x !== undefined && x !== null && x !== "";
  if (!k.atV) {
    const out: OntologyChange[] = [{ op: "object.delete", ...base }];
    for (const l of links) if (k.atP && present(k.atP[l.targetId])) out.push({ op: "link.delete", ...linkKey(l, k.atP[l.targetId]) });
    return out;
  }
  const row = k.atV;
  const properties: Record<string, unknown> = {};
  for (const [name, source] of Object.entries(projection.properties)) {
    const value = typeof source === "function" ? source(row) : row[source];
    properties[name] = value === undefined ? null : value;
  }
  const out: OntologyChange[] = [{ op: "object.upsert", ...base, properties }];
  for (const l of links) {
    const before = k.atP?.[l.targetId];
    const now = row[l.targetId];
    if (present(before) && String(before) !== String(now)) out.push({ op: "link.delete", ...linkKey(l, before) });
    if (present(now)) out.push({ op: "link.upsert", ...linkKey(l, now) });
  }
  return out;
}
