/**
 * The dataset records the API answers (spec 4.1 `GET /api/datasets`), declared once as valibot
 * schemas: the routes document them and the store's types are derived from them.
 */
import * as v from "valibot";
import { DATASET_COLUMN_TYPES } from "../sdk/datasets";

/** Where a version's rows came from: `http` (rows in request bodies), `upload` (a stored file), or the run kind of connector code (`sync`, `pipeline`, `action`, `schedule`, `webhook`, `seed`, ...) with its run `id`. */
export const DatasetSourceSchema = v.object({
  kind: v.string(),
  id: v.optional(v.string()),
  /** The first stored file the transaction's rows were read from. */
  fileId: v.optional(v.string()),
});
export type DatasetSource = v.InferOutput<typeof DatasetSourceSchema>;

/**
 * One version of a dataset: a transaction `snapshot` (the whole content) or `append` (rows added or
 * replaced by key), `open` → `committed` or `aborted`. `rowCount` is the rows the transaction received;
 * `totalRows` the rows in the dataset as of this version (set at commit). An aborted version says why:
 * `abortReason` `requested` (its writer aborted it) or `idle` (no rows for `SVC_DATASET_TRANSACTION_IDLE_MS`;
 * absent on versions aborted before svc recorded it).
 */
export const DatasetVersionSchema = v.object({
  datasetId: v.string(),
  version: v.number(),
  transaction: v.picklist(["snapshot", "append"]),
  status: v.picklist(["open", "committed", "aborted"]),
  rowCount: v.number(),
  totalRows: v.optional(v.number()),
  source: DatasetSourceSchema,
  openedAt: v.string(),
  committedAt: v.optional(v.string()),
  abortedAt: v.optional(v.string()),
  abortReason: v.optional(v.picklist(["requested", "idle"])),
  /** The principal that opened it over HTTP; absent for connector code. */
  openedBy: v.optional(v.object({ type: v.string(), id: v.string() })),
});
export type DatasetVersion = v.InferOutput<typeof DatasetVersionSchema>;

/**
 * A dataset's projection state: `projectedVersion` is the last version whose difference is applied to
 * the objects (0: none yet); `projecting` while a newer committed version is being applied, with the
 * version (`targetVersion`) and the changed rows still to walk (`pendingRows`). `lastError` is the last
 * failure of a chunk (retried on the next commit and every `SVC_OUTBOX_RECOVERY_MS`). Rows the
 * projection could not write (its mapping threw, or their object was refused) are skipped: `failedRows`
 * counts them and `failures` lists the first 20 by key (version, reason, when); a later version that
 * changes such a row projects it again.
 */
export const ProjectionStateSchema = v.object({
  objectTypeId: v.string(),
  projectedVersion: v.number(),
  status: v.picklist(["idle", "projecting"]),
  targetVersion: v.optional(v.number()),
  pendingRows: v.optional(v.number()),
  lastError: v.optional(v.string()),
  failedRows: v.optional(v.number()),
  failures: v.optional(v.array(v.object({ key: v.string(), version: v.number(), error: v.string(), failedAt: v.string() }))),
});
export type ProjectionState = v.InferOutput<typeof ProjectionStateSchema>;

/** A column as the API describes it (`json`: a valibot-schema entry of another kind). */
export const DatasetColumnSchema = v.object({
  name: v.string(),
  type: v.picklist([...DATASET_COLUMN_TYPES, "json"]),
  required: v.boolean(),
  description: v.optional(v.string()),
});

/** A dataset as `GET /api/datasets` lists it. `latestVersion` is the newest committed version (null: none), `rowCount` its rows. */
export const DatasetSchema = v.object({
  id: v.string(),
  connectorId: v.string(),
  title: v.optional(v.string()),
  description: v.optional(v.string()),
  columns: v.array(DatasetColumnSchema),
  primaryKey: v.array(v.string()),
  latestVersion: v.nullable(v.number()),
  rowCount: v.number(),
  /** The open transaction, when there is one. */
  openTransaction: v.optional(
    v.object({
      version: v.number(),
      transaction: v.picklist(["snapshot", "append"]),
      openedAt: v.string(),
      expiresAt: v.pipe(v.string(), v.description("From when it may be aborted as idle: SVC_DATASET_TRANSACTION_IDLE_MS after its opening or its last rows write (the next open of the dataset, or the sweep within a quarter of that limit, aborts it); rows written before push it back")),
    }),
  ),
  projection: v.optional(ProjectionStateSchema),
});
export type Dataset = v.InferOutput<typeof DatasetSchema>;

/** A page of a committed version's rows in row-key order; continue with `nextPageToken`. */
export const DatasetRowsPageSchema = v.object({
  datasetId: v.string(),
  version: v.number(),
  data: v.array(v.record(v.string(), v.unknown())),
  nextPageToken: v.optional(v.string()),
});
export type DatasetRowsPage = v.InferOutput<typeof DatasetRowsPageSchema>;
