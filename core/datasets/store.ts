import { inject, injectable } from "../di";
import { Database, type SqlReader, type SqlWriter } from "../store/db";
import { EventLog } from "../events/log";
import { ProjectRegistry, type RegisteredDataset } from "../project/registry";
import { FileStore } from "../files/file-store";
import type { Actor } from "../events/catalog";
import { ApiError } from "../errors";
import { nowIso } from "../ids";
import { CONFIG, type Config } from "../config";
import { checkRows, parseCsvRows, parseJsonLines, rowsFormatOf, type RowsFormat, type StagedRow } from "./rows";
import type { Dataset, DatasetRowsPage, DatasetSource, DatasetVersion } from "./schemas";

/** The largest file rows are read from (bytes): the file is parsed and validated whole before anything is stored. */
export const DATASET_FILE_MAX_BYTES = 256 * 1024 * 1024;

/** Rows staged per INSERT statement (passed as one JSON array parameter). */
const STAGE_BATCH = 5000;

interface VersionRow {
  dataset_id: string;
  version: number;
  transaction_type: "snapshot" | "append";
  status: "open" | "committed" | "aborted";
  row_count: number;
  total_rows: number | null;
  source: string;
  opened_at: string;
  /** The last rows write while open (or its opening); NULL on versions finished before migration 015. */
  touched_at: string | null;
  committed_at: string | null;
  aborted_at: string | null;
  /** Why it was aborted (migration 017); NULL when open, committed or aborted before that. */
  abort_reason: "requested" | "idle" | null;
  opened_by: string | null;
}

function toVersion(r: VersionRow): DatasetVersion {
  return {
    datasetId: r.dataset_id,
    version: r.version,
    transaction: r.transaction_type,
    status: r.status,
    rowCount: r.row_count,
    ...(r.total_rows !== null ? { totalRows: r.total_rows } : {}),
    source: JSON.parse(r.source),
    openedAt: r.opened_at,
    ...(r.committed_at ? { committedAt: r.committed_at } : {}),
    ...(r.aborted_at ? { abortedAt: r.aborted_at } : {}),
    ...(r.abort_reason ? { abortReason: r.abort_reason } : {}),
    ...(r.opened_by ? { openedBy: JSON.parse(r.opened_by) } : {}),
  };
}

function pageToken(value: unknown[]): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

function readToken(token: string | undefined): unknown[] | undefined {
  if (token === undefined) return undefined;
  try {
    const value = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (Array.isArray(value)) return value;
  } catch {
    // refused below
  }
  throw new ApiError("invalid_request", "nextPageToken is not a token of this listing");
}

/** What committing rows needs: the transaction type, the validated rows, where they came from, who. */
export interface DatasetWrite {
  transaction: "snapshot" | "append";
  rows: readonly StagedRow[];
  source: DatasetSource;
  /** The principal of an HTTP write; absent for connector code (spec 2.3). */
  actor?: Actor;
  /** Groups the commit event with its execution (default `dataset:<id>:<version>`). */
  correlationId?: string;
  /** A handler's `<key>:dataset:<i>`: a second commit with it writes nothing (activity retries). */
  idempotencyKey?: string;
}

/**
 * Ends the current rows a commit changes (`to_version` = the version; parameters: version, dataset id,
 * version): driven by the staged rows, each looking its current row up by key through
 * `dataset_rows_current`, so its cost follows the rows received, not the dataset's size. `CROSS JOIN`
 * fixes that order: without statistics SQLite's planner took the dataset's current rows as the outer
 * loop (also for `UPDATE … FROM`), the cost this avoids; the rows found are then updated by primary key.
 */
export const END_CHANGED_ROWS =
  "UPDATE dataset_rows SET to_version = ?1 WHERE (dataset_id, row_key, from_version) IN (SELECT r.dataset_id, r.row_key, r.from_version FROM dataset_staged_rows s CROSS JOIN dataset_rows r ON r.dataset_id = s.dataset_id AND r.row_key = s.row_key AND r.to_version IS NULL WHERE s.dataset_id = ?2 AND s.version = ?3 AND s.data <> r.data)";

/**
 * Datasets (spec 1, 2.4 `dataset.version.committed`, 4.1): numbered versions committed as
 * transactions, rows in a temporal table (see migration 011), reads of any committed version.
 *
 * - `open` starts version n+1 (409 `conflict` naming the open one when there is one: at most one per
 *   dataset); `writeRows` stages validated rows (a key already written in the transaction is refused);
 *   `commit` applies them in ONE SQLite transaction (append: add or replace by key, identical rows not
 *   rewritten; snapshot: also closes the rows whose key is absent), sets the counts and appends
 *   `dataset.version.committed` `{ datasetId, version, rowCount, totalRows, transaction }` (origin
 *   `{ kind: "runtime", datasetId }`, actor = the committing principal, absent for system code) through
 *   the outbox, then drains; `abort` drops the staged rows (the number is not reused).
 * - An open transaction that received no rows for `SVC_DATASET_TRANSACTION_IDLE_MS` (1 h) is aborted as
 *   `abort` does: by the next `open` of its dataset (which then goes on), and by {@link DatasetStore.expireIdle}
 *   (the app's sweep), so a client that went away does not hold the dataset, or its staged rows, for ever.
 * - `commitInTx` does open + stage + commit inside the caller's transaction (handlers, one-shot HTTP).
 */
@injectable()
export class DatasetStore {
  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(FileStore) private readonly files: FileStore,
    @inject(CONFIG) private readonly config: Pick<Config, "datasetTransactionIdleMs">,
  ) {}

  /** The dataset's declaration. @throws {ApiError} not_found */
  dataset(datasetId: string): RegisteredDataset {
    return this.project.dataset(datasetId);
  }

  /** Validates rows given as values (a request body's `rows`, a handler's call). @throws {ApiError} not_found, invalid_request naming row and column */
  checkRows(datasetId: string, rows: readonly unknown[]): StagedRow[] {
    return checkRows(this.dataset(datasetId), rows.map((value) => ({ value })));
  }

  /**
   * Reads and validates the rows of a stored file (CSV or JSON Lines; see `rowsFormatOf`) that
   * `uploader` uploaded (system code: any file when undefined).
   * @throws {ApiError} not_found (no such file), forbidden (not the caller's upload), payload_too_large
   *   (over {@link DATASET_FILE_MAX_BYTES}), invalid_request (format, parse, or row refusal naming row, line and column)
   */
  async rowsFromFile(datasetId: string, fileId: string, format: RowsFormat | undefined, uploader: string | undefined): Promise<StagedRow[]> {
    const dataset = this.dataset(datasetId);
    const file = await this.files.get(fileId);
    if (!file) throw new ApiError("not_found", `No file "${fileId}": upload it first (POST /api/files)`, { fileId });
    if (uploader !== undefined && !(await this.files.uploadedBy(fileId, uploader))) throw new ApiError("forbidden", `File "${fileId}" was not uploaded by this identity`, { fileId });
    if (file.size > DATASET_FILE_MAX_BYTES) throw new ApiError("payload_too_large", `File "${file.name}" is ${file.size} bytes; rows files are at most ${DATASET_FILE_MAX_BYTES}`, { fileId, size: file.size });
    const text = await this.files.text(fileId);
    const inputs = rowsFormatOf(file, format) === "csv" ? parseCsvRows(dataset, text, file.name) : parseJsonLines(dataset, text, file.name);
    return checkRows(dataset, inputs, file.name);
  }

  /**
   * Opens a transaction: version = the highest number so far + 1.
   * @throws {ApiError} not_found; conflict when one is open (`details.openVersion`)
   */
  async open(datasetId: string, transaction: "snapshot" | "append", source: DatasetSource, actor?: Actor): Promise<DatasetVersion> {
    this.dataset(datasetId);
    return this.db.transaction((tx) => this.openInTx(tx, datasetId, transaction, source, actor));
  }

  /**
   * Stages validated rows into open version `version`; `fileId` (the rows' file) is recorded as the
   * source's file when it has none and referenced by the version.
   * @throws {ApiError} not_found (no such version), conflict (not open), invalid_request (a key already written in this transaction)
   */
  async writeRows(datasetId: string, version: number, rows: readonly StagedRow[], fileId?: string): Promise<DatasetVersion> {
    this.dataset(datasetId);
    return this.db.transaction(async (tx) => {
      const row = await this.openVersion(tx, datasetId, version);
      await this.stage(tx, datasetId, version, rows, row.row_count > 0);
      const source = JSON.parse(row.source) as DatasetSource;
      if (fileId) {
        await this.files.addReference(tx, fileId, { kind: "dataset", id: `${datasetId}@${version}`, path: "/rows" });
        if (!source.fileId) Object.assign(source, { kind: "upload", fileId });
      }
      await tx.run("UPDATE dataset_versions SET row_count = row_count + ?, source = ?, touched_at = ? WHERE dataset_id = ? AND version = ?", [rows.length, JSON.stringify(source), nowIso(), datasetId, version]);
      return toVersion((await tx.get<VersionRow>("SELECT * FROM dataset_versions WHERE dataset_id = ? AND version = ?", [datasetId, version]))!);
    });
  }

  /**
   * Commits open version `version` (one SQLite transaction with its event), then drains. A committed
   * version answers as it is (a retry: nothing is written again).
   * @throws {ApiError} not_found, conflict (aborted)
   */
  async commit(datasetId: string, version: number, actor?: Actor): Promise<DatasetVersion> {
    this.dataset(datasetId);
    const committed = await this.db.transaction(async (tx) => {
      // committed already (a retry whose first answer was lost): the same answer, nothing written
      const row = await this.openVersion(tx, datasetId, version, "committed");
      if (row.status === "committed") return toVersion(row);
      return this.apply(tx, datasetId, version, { actor });
    });
    await this.events.drain();
    return committed;
  }

  /** Aborts open version `version`: its staged rows are dropped; its number is not reused. An aborted version answers as it is. @throws {ApiError} not_found, conflict (committed) */
  async abort(datasetId: string, version: number): Promise<DatasetVersion> {
    this.dataset(datasetId);
    return this.db.transaction(async (tx) => {
      // aborted already (a retry, or the idle sweep got there first): the same answer
      const row = await this.openVersion(tx, datasetId, version, "aborted");
      if (row.status === "aborted") return toVersion(row);
      await this.abortInTx(tx, datasetId, version, "requested");
      return toVersion((await tx.get<VersionRow>("SELECT * FROM dataset_versions WHERE dataset_id = ? AND version = ?", [datasetId, version]))!);
    });
  }

  /**
   * Aborts every open transaction idle (no rows written since it was opened or last written to) for
   * `SVC_DATASET_TRANSACTION_IDLE_MS`, in one SQLite transaction: what `abort` does to each.
   * @param nowMs the time to measure idleness from (ms since the epoch)
   * @returns the aborted versions `{ datasetId, version }`
   */
  async expireIdle(nowMs = Date.now()): Promise<Array<{ datasetId: string; version: number }>> {
    const cutoff = new Date(nowMs - this.config.datasetTransactionIdleMs).toISOString();
    return this.db.transaction(async (tx) => {
      const idle = await tx.all<{ dataset_id: string; version: number }>("SELECT dataset_id, version FROM dataset_versions WHERE status = 'open' AND COALESCE(touched_at, opened_at) < ?", [cutoff]);
      for (const v of idle) await this.abortInTx(tx, v.dataset_id, v.version, "idle");
      return idle.map((v) => ({ datasetId: v.dataset_id, version: v.version }));
    });
  }

  /** When an open version row expires: its last write (or its opening) plus the idle limit, ISO. */
  private expiresAt(row: VersionRow): string {
    return new Date(Date.parse(row.touched_at ?? row.opened_at) + this.config.datasetTransactionIdleMs).toISOString();
  }

  /** Drops the staged rows and file references of open `version` and marks it aborted for `reason` (in `tx`). */
  private async abortInTx(tx: SqlWriter, datasetId: string, version: number, reason: "requested" | "idle"): Promise<void> {
    await tx.run("DELETE FROM dataset_staged_rows WHERE dataset_id = ? AND version = ?", [datasetId, version]);
    await this.files.removeReferences(tx, { kind: "dataset", id: `${datasetId}@${version}` });
    await tx.run("UPDATE dataset_versions SET status = 'aborted', aborted_at = ?, abort_reason = ? WHERE dataset_id = ? AND version = ?", [nowIso(), reason, datasetId, version]);
  }

  /** Opens, writes and commits one version in one SQLite transaction, then drains (`POST /api/datasets/:id/versions`). @throws as {@link DatasetStore.commitInTx} */
  async commitVersion(datasetId: string, write: DatasetWrite): Promise<DatasetVersion> {
    this.dataset(datasetId);
    const committed = await this.db.transaction((tx) => this.commitInTx(tx, datasetId, write));
    await this.events.drain();
    return committed!;
  }

  /**
   * Open + stage + commit inside the caller's transaction (the caller drains after it commits). With an
   * `idempotencyKey` already committed, writes nothing and answers undefined.
   * @throws {ApiError} conflict when a transaction of the dataset is open
   */
  async commitInTx(tx: SqlWriter, datasetId: string, write: DatasetWrite): Promise<DatasetVersion | undefined> {
    if (write.idempotencyKey !== undefined && (await tx.get("SELECT 1 AS one FROM dataset_versions WHERE idempotency_key = ?", [write.idempotencyKey]))) return undefined;
    const opened = await this.openInTx(tx, datasetId, write.transaction, write.source, write.actor, write.idempotencyKey);
    await this.stage(tx, datasetId, opened.version, write.rows, false);
    if (write.source.fileId) await this.files.addReference(tx, write.source.fileId, { kind: "dataset", id: `${datasetId}@${opened.version}`, path: "/rows" });
    await tx.run("UPDATE dataset_versions SET row_count = ? WHERE dataset_id = ? AND version = ?", [write.rows.length, datasetId, opened.version]);
    return this.apply(tx, datasetId, opened.version, write);
  }

  private async openInTx(tx: SqlWriter, datasetId: string, transaction: "snapshot" | "append", source: DatasetSource, actor?: Actor, idempotencyKey?: string): Promise<DatasetVersion> {
    const open = await tx.get<VersionRow>("SELECT * FROM dataset_versions WHERE dataset_id = ? AND status = 'open'", [datasetId]);
    if (open) {
      const expiresAt = this.expiresAt(open);
      // idle past the limit: aborted here, and this transaction goes on
      if (expiresAt <= nowIso()) await this.abortInTx(tx, datasetId, open.version, "idle");
      else throw new ApiError("conflict", `Dataset "${datasetId}" has an open transaction: version ${open.version} (${open.transaction_type}, opened ${open.opened_at}); commit or abort it first (idle, it may be aborted from ${expiresAt}: rows written to it push that back)`, { datasetId, openVersion: open.version, expiresAt });
    }
    const { next } = (await tx.get<{ next: number }>("SELECT COALESCE(MAX(version), 0) + 1 AS next FROM dataset_versions WHERE dataset_id = ?", [datasetId]))!;
    const openedAt = nowIso();
    const row: VersionRow = { dataset_id: datasetId, version: next, transaction_type: transaction, status: "open", row_count: 0, total_rows: null, source: JSON.stringify(source), opened_at: openedAt, touched_at: openedAt, committed_at: null, aborted_at: null, abort_reason: null, opened_by: actor ? JSON.stringify(actor) : null };
    await tx.run("INSERT INTO dataset_versions (dataset_id, version, transaction_type, status, row_count, source, idempotency_key, opened_at, touched_at, opened_by) VALUES (?, ?, ?, 'open', 0, ?, ?, ?, ?, ?)", [
      datasetId, next, transaction, row.source, idempotencyKey ?? null, row.opened_at, row.touched_at, row.opened_by,
    ]);
    return toVersion(row);
  }

  /** The version row when it is open (or in the `ended` status, which a retried commit or abort answers as it is). @throws {ApiError} not_found, conflict */
  private async openVersion(tx: SqlReader, datasetId: string, version: number, ended?: "committed" | "aborted"): Promise<VersionRow> {
    const row = await tx.get<VersionRow>("SELECT * FROM dataset_versions WHERE dataset_id = ? AND version = ?", [datasetId, version]);
    if (!row) throw new ApiError("not_found", `Dataset "${datasetId}" has no version ${version}`, { datasetId, version });
    if (row.status !== "open" && row.status !== ended) {
      const why = row.abort_reason === "idle" ? ` (aborted at ${row.aborted_at}: it received no rows for ${this.config.datasetTransactionIdleMs} ms, SVC_DATASET_TRANSACTION_IDLE_MS; open a new transaction)` : "";
      throw new ApiError("conflict", `Version ${version} of dataset "${datasetId}" is ${row.status}, not open${why}`, { datasetId, version, status: row.status, ...(row.abort_reason ? { abortReason: row.abort_reason } : {}) });
    }
    return row;
  }

  /** Stages rows (JSON arrays of [key, data] through json_each); refuses keys the transaction already has. */
  private async stage(tx: SqlWriter, datasetId: string, version: number, rows: readonly StagedRow[], hasRows: boolean): Promise<void> {
    for (let start = 0; start < rows.length; start += STAGE_BATCH) {
      const batch = rows.slice(start, start + STAGE_BATCH);
      const json = JSON.stringify(batch.map((r) => [r.key, r.data]));
      if (hasRows) {
        const dup = await tx.get<{ row_key: string }>("SELECT s.row_key FROM json_each(?) j JOIN dataset_staged_rows s ON s.dataset_id = ? AND s.version = ? AND s.row_key = j.value ->> 0 LIMIT 1", [json, datasetId, version]);
        if (dup) {
          const row = start + batch.findIndex((r) => r.key === dup.row_key) + 1;
          const column = this.dataset(datasetId).compiled.primaryKey.join(",");
          throw new ApiError("invalid_request", `Dataset "${datasetId}" refused the rows: Row ${row}, column "${column}": primary key "${dup.row_key}" was already written in this transaction`, { datasetId, row, column, problems: [{ row, column, message: `primary key "${dup.row_key}" was already written in this transaction` }], totalProblems: 1 });
        }
      }
      await tx.run("INSERT INTO dataset_staged_rows (dataset_id, version, row_key, data) SELECT ?, ?, j.value ->> 0, j.value ->> 1 FROM json_each(?) j", [datasetId, version, json]);
    }
  }

  /** Applies the staged rows of open `version`, marks it committed with its counts and writes its event (all in `tx`). */
  private async apply(tx: SqlWriter, datasetId: string, version: number, who: { actor?: Actor; correlationId?: string }): Promise<DatasetVersion> {
    const row = (await tx.get<VersionRow>("SELECT * FROM dataset_versions WHERE dataset_id = ? AND version = ?", [datasetId, version]))!;
    // changed rows end at this version, found from the staged side: each staged row looks its current row
    // up by key (an append reads only its own keys). The IN (subquery) form this replaces scanned every
    // current row of the dataset against the staged keys: a commit of one 2 MB key over 300,000 rows
    // held the writer, and so every write of the service, for minutes
    await tx.run(END_CHANGED_ROWS, [version, datasetId, version]);
    // a snapshot also ends the rows whose key it does not have
    if (row.transaction_type === "snapshot") {
      await tx.run("UPDATE dataset_rows SET to_version = ? WHERE dataset_id = ? AND to_version IS NULL AND NOT EXISTS (SELECT 1 FROM dataset_staged_rows s WHERE s.dataset_id = dataset_rows.dataset_id AND s.version = ? AND s.row_key = dataset_rows.row_key)", [version, datasetId, version]);
    }
    // new and changed rows start at this version (identical ones are still current and stay)
    await tx.run(
      "INSERT INTO dataset_rows (dataset_id, row_key, from_version, to_version, data) SELECT s.dataset_id, s.row_key, s.version, NULL, s.data FROM dataset_staged_rows s WHERE s.dataset_id = ? AND s.version = ? AND NOT EXISTS (SELECT 1 FROM dataset_rows r WHERE r.dataset_id = s.dataset_id AND r.row_key = s.row_key AND r.to_version IS NULL)",
      [datasetId, version],
    );
    await tx.run("DELETE FROM dataset_staged_rows WHERE dataset_id = ? AND version = ?", [datasetId, version]);
    const { n } = (await tx.get<{ n: number }>("SELECT COUNT(*) AS n FROM dataset_rows WHERE dataset_id = ? AND to_version IS NULL", [datasetId]))!;
    const committedAt = nowIso();
    await tx.run("UPDATE dataset_versions SET status = 'committed', committed_at = ?, total_rows = ? WHERE dataset_id = ? AND version = ?", [committedAt, n, datasetId, version]);
    const committed = toVersion({ ...row, status: "committed", committed_at: committedAt, total_rows: n });
    const envelope = this.events.envelope({
      type: "dataset.version.committed",
      payload: { datasetId, version, rowCount: committed.rowCount, totalRows: n, transaction: committed.transaction },
      origin: { kind: "runtime", datasetId },
      correlationId: who.correlationId ?? `dataset:${datasetId}:${version}`,
      idempotencyKey: `dataset:${datasetId}:${version}:committed`,
      ...(who.actor ? { actor: who.actor } : {}),
    });
    await this.events.writeInTx(tx, [envelope]);
    return committed;
  }

  /** A dataset with its latest committed version, row count and open transaction (no projection state). @throws {ApiError} not_found */
  async summary(datasetId: string): Promise<Omit<Dataset, "projection">> {
    const { id, connectorId, definition, compiled } = this.dataset(datasetId);
    const latest = await this.db.get<{ version: number; total_rows: number }>("SELECT version, total_rows FROM dataset_versions WHERE dataset_id = ? AND status = 'committed' ORDER BY version DESC LIMIT 1", [id]);
    const open = await this.db.get<VersionRow>("SELECT * FROM dataset_versions WHERE dataset_id = ? AND status = 'open'", [id]);
    return {
      id,
      connectorId,
      ...(definition.title !== undefined ? { title: definition.title } : {}),
      ...(definition.description !== undefined ? { description: definition.description } : {}),
      columns: compiled.columns,
      primaryKey: compiled.primaryKey,
      latestVersion: latest?.version ?? null,
      rowCount: latest?.total_rows ?? 0,
      ...(open ? { openTransaction: { version: open.version, transaction: open.transaction_type, openedAt: open.opened_at, expiresAt: this.expiresAt(open) } } : {}),
    };
  }

  /** The newest committed version number, or 0. */
  async latestCommitted(datasetId: string, reader: SqlReader = this.db): Promise<number> {
    return (await reader.get<{ v: number }>("SELECT COALESCE(MAX(version), 0) AS v FROM dataset_versions WHERE dataset_id = ? AND status = 'committed'", [datasetId]))!.v;
  }

  /** One version (any status). @throws {ApiError} not_found */
  async version(datasetId: string, version: number): Promise<DatasetVersion> {
    this.dataset(datasetId);
    const row = await this.db.get<VersionRow>("SELECT * FROM dataset_versions WHERE dataset_id = ? AND version = ?", [datasetId, version]);
    if (!row) throw new ApiError("not_found", `Dataset "${datasetId}" has no version ${version}`, { datasetId, version });
    return toVersion(row);
  }

  /** Versions newest first (open, committed and aborted), `pageSize` per page. @throws {ApiError} not_found, invalid_request (token) */
  async versions(datasetId: string, page: { pageSize: number; nextPageToken?: string }): Promise<{ data: DatasetVersion[]; nextPageToken?: string }> {
    this.dataset(datasetId);
    const token = readToken(page.nextPageToken);
    if (token && (token[0] !== datasetId || !Number.isSafeInteger(token[1]))) throw new ApiError("invalid_request", "nextPageToken is not a token of this listing");
    const before = token ? (token[1] as number) : Number.MAX_SAFE_INTEGER;
    const rows = await this.db.all<VersionRow>("SELECT * FROM dataset_versions WHERE dataset_id = ? AND version < ? ORDER BY version DESC LIMIT ?", [datasetId, before, page.pageSize + 1]);
    const data = rows.slice(0, page.pageSize).map(toVersion);
    return { data, ...(rows.length > page.pageSize ? { nextPageToken: pageToken([datasetId, data.at(-1)!.version]) } : {}) };
  }

  /**
   * Rows of committed version `version` in row-key order (keyset pagination on the key).
   * @throws {ApiError} not_found (no such committed version), invalid_request (token)
   */
  async rows(datasetId: string, version: number, page: { pageSize: number; nextPageToken?: string }): Promise<DatasetRowsPage> {
    this.dataset(datasetId);
    const row = await this.db.get<{ status: string }>("SELECT status FROM dataset_versions WHERE dataset_id = ? AND version = ?", [datasetId, version]);
    if (row?.status !== "committed") throw new ApiError("not_found", `Dataset "${datasetId}" has no committed version ${version}${row ? ` (it is ${row.status})` : ""}`, { datasetId, version });
    const token = readToken(page.nextPageToken);
    if (token && (token[0] !== datasetId || token[1] !== version || typeof token[2] !== "string")) throw new ApiError("invalid_request", "nextPageToken is not a token of this listing");
    const rows = await this.db.all<{ row_key: string; data: string }>(
      "SELECT row_key, data FROM dataset_rows WHERE dataset_id = ? AND row_key > ? AND from_version <= ? AND (to_version IS NULL OR to_version > ?) ORDER BY row_key LIMIT ?",
      [datasetId, token ? (token[2] as string) : "", version, version, page.pageSize + 1],
    );
    const data = rows.slice(0, page.pageSize);
    return { datasetId, version, data: data.map((r) => JSON.parse(r.data)), ...(rows.length > page.pageSize ? { nextPageToken: pageToken([datasetId, version, data.at(-1)!.row_key]) } : {}) };
  }
}
