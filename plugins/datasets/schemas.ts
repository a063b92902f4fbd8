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

/**
 * What is wrong with a rows body (`withTransaction`: a one-shot version's), naming the field: valibot's
 * union would only say which shapes it expected.
 */
function rowsBodyProblem(input: unknown, withTransaction: boolean): string {
  const shapes = withTransaction ? "{ transaction, rows: [...] } or { transaction, file: { id }, format? }" : "{ rows: [...] } or { file: { id }, format? }";
  if (input === null || typeof input !== "object" || Array.isArray(input)) return `must be ${shapes}`;
  const body = input as Record<string, unknown>;
  const known = [...(withTransaction ? ["transaction"] : []), "rows", "file", "format"];
  const unknown = Object.keys(body).filter((k) => !known.includes(k));
  if (unknown.length) return `has ${unknown.map((k) => JSON.stringify(k)).join(", ")}, which ${unknown.length === 1 ? "is" : "are"} not a field: it must be ${shapes}`;
  if (withTransaction && !v.is(TransactionTypeSchema, body.transaction)) return `transaction must be "snapshot" or "append"${body.transaction === undefined ? " (it is missing)" : ""}`;
  if ("rows" in body && ("file" in body || "format" in body)) return "gives rows and a file: send one of them";
  if ("rows" in body) return "rows must be a list of rows (objects of column → value)";
  if (!("file" in body)) return `has neither rows nor file: it must be ${shapes}`;
  if (!v.is(FileRefSchema, body.file)) return 'file must be { id: "file_…" } of a file you uploaded';
  return 'format must be "csv" or "jsonl" (or left out: it is then read from the file\'s type or name)';
}

/** Rows in the body or a stored file: `{ rows }` or `{ file: { id }, format? }`. */
export const RowsBodySchema = v.union([v.strictObject({ rows: Rows }), v.strictObject({ file: FileRefSchema, format: v.optional(RowsFormatSchema) })], ({ input }) => rowsBodyProblem(input, false));

/** A one-shot version: `{ transaction, rows }` or `{ transaction, file: { id }, format? }`. */
export const VersionBodySchema = v.union(
  [v.strictObject({ transaction: TransactionTypeSchema, rows: Rows }), v.strictObject({ transaction: TransactionTypeSchema, file: FileRefSchema, format: v.optional(RowsFormatSchema) })],
  ({ input }) => rowsBodyProblem(input, true),
);
