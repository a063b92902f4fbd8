import * as v from "valibot";

/** `{ id: "file_…" }` of a file the caller uploaded (`POST /api/files`; its whole answer may be sent). */
export const FileRefSchema = v.object({ id: v.pipe(v.string(), v.regex(/^file_[0-9A-Za-z]+$/, "must be a file id file_…"), v.description("A file you uploaded (`POST /api/files`)")) });
export const RowsFormatSchema = v.pipe(v.picklist(["csv", "jsonl"]), v.description("Default: from the file's content type (`text/csv`, `application/x-ndjson`, `application/jsonl`) or name (`.csv`, `.jsonl`, `.ndjson`)"));
export const TransactionTypeSchema = v.pipe(v.picklist(["snapshot", "append"]), v.description("`snapshot`: the version's content is exactly its rows; `append`: rows are added, replacing rows of the same key"));
/**
 * Rows as the body carries them. Each is validated against the dataset's columns (`GET
 * /api/datasets/{id}`) by the store, whose refusal names the row (1-based) and the column, which a
 * schema check of the body could not.
 */
const Rows = v.pipe(v.array(v.unknown()), v.description("The rows: each an object of column → value, validated against the dataset's columns (see `GET /api/datasets/{id}`)"));

/** Rows in the body or a stored file: `{ rows }` or `{ file: { id }, format? }`. */
export const RowsBodySchema = v.union([v.strictObject({ rows: Rows }), v.strictObject({ file: FileRefSchema, format: v.optional(RowsFormatSchema) })], "must be { rows: [...] } or { file: { id }, format? }");

/** A one-shot version: `{ transaction, rows }` or `{ transaction, file: { id }, format? }`. */
export const VersionBodySchema = v.union(
  [v.strictObject({ transaction: TransactionTypeSchema, rows: Rows }), v.strictObject({ transaction: TransactionTypeSchema, file: FileRefSchema, format: v.optional(RowsFormatSchema) })],
  "must be { transaction, rows: [...] } or { transaction, file: { id }, format? }",
);
