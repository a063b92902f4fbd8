import { parse as parseCsv, CsvError } from "csv-parse/sync";
import { ApiError } from "../errors";
import type { RegisteredDataset } from "../project/registry";
import type { DatasetColumn, RowProblem } from "../sdk/datasets";

/** A validated row, ready to store: its key and its canonical JSON (see `CompiledDataset.check`). */
export interface StagedRow {
  key: string;
  data: string;
}

/** One row as received: its value and, for rows from a file, the file line it ends on. */
export interface RowInput {
  value: unknown;
  line?: number;
}

/** Formats of a rows file: CSV (header row = column names) or JSON Lines (one object per line). */
export type RowsFormat = "csv" | "jsonl";

/** One refused row in `details.problems`: 1-based `row` (as in the body's `rows` or the file's records), file `line`, `column`. */
export interface RowRefusal extends RowProblem {
  row: number;
  line?: number;
}

const MAX_LISTED = 100;

/** Most characters of a row's primary key (its key columns' values joined): rows are looked up by it. */
export const MAX_KEY_CHARS = 1024;

function describe(p: RowRefusal, file?: string): string {
  const where = p.line !== undefined ? `Row ${p.row} (line ${p.line}${file ? ` of ${file}` : ""})` : `Row ${p.row}`;
  return `${where}${p.column ? `, column "${p.column}"` : ""}: ${p.message}`;
}

/**
 * Validates every row against the dataset's schema and checks that no two rows share a key, before
 * anything is stored.
 *
 * @param file the file name, for messages about rows of a file
 * @returns the rows as stored, in input order
 * @throws {ApiError} invalid_request whose message names the first refused row and column, with
 *   `details`: `datasetId`, `row`, `line?`, `column?` of the first, `problems` (at most 100) and `totalProblems`
 */
export function checkRows(dataset: RegisteredDataset, inputs: readonly RowInput[], file?: string): StagedRow[] {
  const problems: RowRefusal[] = [];
  const out: StagedRow[] = [];
  const seen = new Map<string, number>();
  const keyColumn = dataset.compiled.primaryKey.join(",");
  inputs.forEach((input, i) => {
    const row = i + 1;
    const at = input.line !== undefined ? { row, line: input.line } : { row };
    const checked = dataset.compiled.check(input.value);
    if (!checked.ok) {
      for (const p of checked.problems) problems.push({ ...at, ...p });
      return;
    }
    if (checked.key.length > MAX_KEY_CHARS) {
      problems.push({ ...at, column: keyColumn, message: `the primary key is ${checked.key.length} characters long; at most ${MAX_KEY_CHARS}` });
      return;
    }
    const first = seen.get(checked.key);
    if (first !== undefined) {
      problems.push({ ...at, column: keyColumn, message: `duplicate primary key "${checked.key}" (row ${first} has the same key)` });
      return;
    }
    seen.set(checked.key, row);
    out.push({ key: checked.key, data: checked.data });
  });
  if (problems.length) {
    const [first] = problems;
    throw new ApiError("invalid_request", `Dataset "${dataset.id}" refused the rows: ${describe(first!, file)}${problems.length > 1 ? ` (and ${problems.length - 1} more problems)` : ""}`, {
      datasetId: dataset.id,
      row: first!.row,
      ...(first!.line !== undefined ? { line: first!.line } : {}),
      ...(first!.column !== undefined ? { column: first!.column } : {}),
      ...(file ? { file } : {}),
      problems: problems.slice(0, MAX_LISTED),
      totalProblems: problems.length,
    });
  }
  return out;
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * A CSV cell as a value of its column's type: numbers from decimal text, booleans from
 * true/false/1/0/yes/no (any case), `json` columns parsed when they hold JSON; strings, dates and
 * datetimes as they are. A cell that does not convert stays text, so validation names it.
 */
function cellValue(cell: string, type: DatasetColumn["type"] | undefined): unknown {
  switch (type) {
    case "number":
    case "integer":
      return NUMBER.test(cell.trim()) ? Number(cell) : cell;
    case "boolean": {
      const s = cell.trim().toLowerCase();
      return ["true", "1", "yes"].includes(s) ? true : ["false", "0", "no"].includes(s) ? false : cell;
    }
    case "json":
      try {
        return JSON.parse(cell);
      } catch {
        return cell;
      }
    default:
      return cell;
  }
}

/**
 * Parses a CSV file's text into rows (csv-parse): the header row names the columns (a name that is
 * not a column of the dataset is refused), each cell is converted to its column's type
 * ({@link cellValue}), an empty cell is absent. Empty lines are skipped; a UTF-8 BOM is ignored.
 *
 * @throws {ApiError} invalid_request for an unknown or repeated header column, or a malformed line (named)
 */
export function parseCsvRows(dataset: RegisteredDataset, text: string, file: string): RowInput[] {
  refuseEmpty(dataset, text, file, "a CSV file names its columns in its first line (a file of that header line alone is no rows)");
  const types = new Map(dataset.compiled.columns.map((c) => [c.name, c.type]));
  let header: string[] = [];
  let records: Array<{ record: Record<string, string>; info: { lines: number } }>;
  try {
    records = parseCsv(text, {
      bom: true,
      skip_empty_lines: true,
      info: true,
      columns: (names: string[]) => {
        header = names.map((n) => n.trim());
        const unknown = header.find((n) => !types.has(n));
        if (unknown !== undefined) throw new ApiError("invalid_request", `Column "${unknown}" of ${file} is not a column of dataset "${dataset.id}" (columns: ${[...types.keys()].join(", ")})`, { datasetId: dataset.id, file, line: 1, column: unknown });
        const repeated = header.find((n, i) => header.indexOf(n) !== i);
        if (repeated !== undefined) throw new ApiError("invalid_request", `Column "${repeated}" appears twice in the header of ${file}`, { datasetId: dataset.id, file, line: 1, column: repeated });
        return header;
      },
    }) as unknown as typeof records;
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (err instanceof CsvError) {
      const line = (err as CsvError & { lines?: number }).lines;
      throw new ApiError("invalid_request", `${file} is not valid CSV${line ? ` at line ${line}` : ""}: ${err.message}`, { datasetId: dataset.id, file, ...(line ? { line } : {}) });
    }
    throw err;
  }
  return records.map(({ record, info }) => {
    const value: Record<string, unknown> = {};
    for (const name of header) {
      const cell = record[name];
      if (cell !== undefined && cell !== "") value[name] = cellValue(cell, types.get(name));
    }
    return { value, line: info.lines };
  });
}

/**
 * Parses a JSON Lines file's text: one JSON value per line (validation wants an object), blank lines
 * skipped (line numbers still count them).
 * @throws {ApiError} invalid_request naming the first line that is not JSON
 */
export function parseJsonLines(dataset: RegisteredDataset, text: string, file: string): RowInput[] {
  refuseEmpty(dataset, text, file, "a JSON Lines file holds one row per line");
  const out: RowInput[] = [];
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  lines.forEach((line, i) => {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new ApiError("invalid_request", `Line ${i + 1} of ${file} is not JSON: ${err instanceof Error ? err.message : String(err)}`, { datasetId: dataset.id, file, line: i + 1 });
    }
    // an array is an object to a schema: it read as every column missing
    if (Array.isArray(value)) throw new ApiError("invalid_request", `Line ${i + 1} of ${file} is a JSON array: each line is one row, a JSON object of the dataset's columns`, { datasetId: dataset.id, file, line: i + 1 });
    out.push({ value, line: i + 1 });
  });
  return out;
}

/**
 * Refuses a rows file with nothing in it (whitespace and a byte order mark aside): almost always an
 * export that failed, and as a snapshot it would empty the dataset (and delete every projected object).
 * A snapshot of `rows: []` empties a dataset on purpose.
 * @throws {ApiError} invalid_request naming the file
 */
function refuseEmpty(dataset: RegisteredDataset, text: string, file: string, format: string): void {
  if (text.replace(/^\uFEFF/, "").trim() !== "") return;
  throw new ApiError("invalid_request", `${file} is empty: ${format}. To empty the dataset on purpose, commit a snapshot of "rows": []`, { datasetId: dataset.id, file });
}

/**
 * The format of a rows file: `format` when given, else from its content type (`text/csv`;
 * `application/x-ndjson`, `application/jsonl`, `application/x-jsonlines`) or its name (`.csv`;
 * `.jsonl`, `.ndjson`).
 * @throws {ApiError} invalid_request when neither says
 */
export function rowsFormatOf(file: { name: string; contentType: string }, format?: RowsFormat): RowsFormat {
  if (format) return format;
  const type = file.contentType.split(";")[0]!.trim().toLowerCase();
  if (type === "text/csv" || /\.csv$/i.test(file.name)) return "csv";
  if (["application/x-ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines"].includes(type) || /\.(jsonl|ndjson)$/i.test(file.name)) return "jsonl";
  throw new ApiError("invalid_request", `Cannot tell the format of file "${file.name}" (${file.contentType}): send format "csv" or "jsonl"`, { file: file.name });
}
