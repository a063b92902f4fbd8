/**
 * Validation of a `sheet` artifact version: `workbook.json` and one CSV per sheet (spec 2.8, 8; issue 11
 * "Checks before a version is published").
 *
 * Pure apart from reading the streams it is handed: the caller says where files are (`openCsv`), which
 * paths are images (`hasImage`) and what an artifact address is (`isArtifactAddress`). Every problem is
 * collected into one answer (capped at `maxProblems`, with the total count); the publisher
 * (core/artifacts/store.ts) refuses the version with 422 `artifact_invalid` listing them.
 *
 * Decisions (the viewer and the resolver follow the same rules):
 * - **CSV file naming**: the sheet named `N` lives at exactly `sheets/N.csv` — the name as written in
 *   `workbook.json`, no case folding, no Unicode normalization, no escaping. So a sheet name must be
 *   usable as one path segment: 1 to 100 characters, no `/` or `\`, no control characters, not `.` or `..`,
 *   no leading or trailing whitespace.
 * - **CSV dialect**: RFC 4180 as csv-parse reads it (comma, `"` quotes, `\n`, `\r\n` or `\r` line ends, a
 *   leading UTF-8 BOM is dropped). Row 1 is the header row and gives the column names (non-empty, unique);
 *   rows are records, not lines (a quoted cell may span lines), numbered as a spreadsheet shows them.
 *   Every row must have as many cells as the header. Blank lines at the very end of the file are not rows;
 *   a blank line between rows is a row of one empty cell (refused when the header has several columns).
 * - **Empty cells** (zero characters) are allowed in every column type: the value is null. A cell of only
 *   spaces is not empty (and is refused by every type but `text`).
 * - **number** (also `currency` and `percent` cells): JSON's number grammar exactly — optional `-`, no
 *   leading zeros, optional fraction, optional exponent (`-12.5`, `0.125`, `1e3`, `2.5E-4`), finite as a
 *   double. Refused: `+1`, `.5`, `5.`, `007`, `1,234`, `$12`, `12%`, spaces around, `NaN`, `1e999`.
 *   `currency` takes its code from the column (`{ "type": "currency", "currency": "EUR" }`); `percent` is a
 *   fraction (0.125 shows as 12.5%) and its `decimals` is display only.
 * - **date**: `YYYY-MM-DD`, a real Gregorian calendar date, years 0001 to 9999 (`2024-02-29` passes,
 *   `2026-02-30` is refused).
 * - **link**: a complete `http://` or `https://` address (scheme in any case, a host, no whitespace or
 *   control characters, parseable by WHATWG URL), or a value `isArtifactAddress` accepts; artifact
 *   addresses are listed in `links` for the resolver.
 * - **image**: the cell value is passed as it is to `hasImage` — a path relative to the artifact root
 *   (e.g. `images/logo.png`, not relative to `sheets/`).
 * - **widths**: a map of column name to width in whole pixels (1 to 2000), like `columns`: `{ "Amount": 120 }`.
 *   Columns without a width get the viewer's default. Keys of `columns` and `widths` must be header columns.
 * - **Charts**: `y` columns must be `number`, `currency` or `percent` columns and are listed once; `stacked`
 *   may appear only on bar and area charts (even `false` elsewhere is refused: it would mean nothing).
 * - Unknown fields anywhere in `workbook.json` are refused (they are usually typos).
 */
import { CsvError, parse, type Options as CsvOptions } from "csv-parse";
import * as v from "valibot";
import { columnLetter } from "./cell-range";
import { isCalendarDate, isPlainNumber, isWebAddress } from "./cell-values";
import { CHART_TYPES, ChartSchema, ColumnTypeSchema, crossChecks, formatPath, listNames, normalizeColumnType, quote, SheetSchema, sheetName, truncate, WORKBOOK_LIMITS, WorkbookShapeSchema, yColumns } from "./workbook-schema";
import type { Chart, ColumnType, ColumnTypeName, Path } from "./workbook-schema";

/** Options the CSV files are read with; a viewer must read them the same way to number rows alike. */
export const CSV_PARSE_OPTIONS = { bom: true, relax_column_count: true, skip_empty_lines: false } as const satisfies CsvOptions;

/** One refusal. `row` is 1-based as a spreadsheet shows it (the header row is 1). */
export interface Problem {
  file: string;
  row?: number;
  column?: string;
  columnLetter?: string;
  expected?: string;
  /** The offending value, at most 100 characters. */
  value?: string;
  message: string;
}

export interface WorkbookInput {
  /** `workbook.json`, already parsed as JSON. */
  workbookJson: unknown;
  /** The bytes of a file of the version; null when the version has no such file. */
  openCsv(path: string): Promise<NodeJS.ReadableStream | null>;
  /** True when `path` (relative to the artifact root) is an image file of this version. */
  hasImage(path: string): boolean;
  /** True when `value` is a well-formed artifact address (resolution happens later, from `links`). */
  isArtifactAddress(value: string): boolean;
  /** At most this many problems are listed (default 100); `totalProblems` counts all. */
  maxProblems?: number;
}

export interface WorkbookValidation {
  ok: boolean;
  problems: Problem[];
  totalProblems: number;
  /** Sheets whose CSV could be read: header names and data row count. */
  sheets: Array<{ name: string; columns: string[]; rows: number }>;
  /** Charts that passed every check. */
  charts: Array<{ name: string; sheet: string }>;
  /** Artifact addresses found in link cells, for the resolver. */
  links: Array<{ file: string; row: number; column: string; address: string }>;
}


// ————————————————————————————————————————————————————————————————— cell checks (the hot path)

const enum Kind {
  Text,
  Number,
  Currency,
  Percent,
  Date,
  Link,
  Image,
}
const KIND: Record<ColumnTypeName, Kind> = { text: Kind.Text, number: Kind.Number, currency: Kind.Currency, percent: Kind.Percent, date: Kind.Date, link: Kind.Link, image: Kind.Image };

const EXPECTED_NUMBER = "a number without symbols or separators";
const EXPECTED_PERCENT = "a fraction such as 0.125 (for 12.5%) without a % sign";
const EXPECTED_DATE = "a real calendar date as YYYY-MM-DD";
const EXPECTED_LINK = "a complete http:// or https:// address, or an artifact address";
const EXPECTED_IMAGE = "the path of an image file in this version";

// ————————————————————————————————————————————————————————————————— validation

const thousands = (n: number) => n.toLocaleString("en-US");

class Collector {
  readonly problems: Problem[] = [];
  total = 0;
  constructor(readonly max: number) {}
  add(p: Problem) {
    this.total++;
    if (this.problems.length < this.max) this.problems.push(p);
  }
}

/** A CSV cell location's message prefix: `sheets/Revenue.csv row 7, column "Amount" (C)`. */
const cellPrefix = (file: string, row: number, column: string | undefined, letter: string | undefined) =>
  `${file} row ${row}${letter === undefined ? "" : `, column ${column === undefined || column === "" ? "" : `${quote(column)} `}(${letter})`}`;

/**
 * Validates a sheet version: `workbook.json` and every sheet's CSV, streamed (one file at a time, never
 * held whole). Rejects only when a stream fails to read (I/O); every content problem is in the answer.
 */
export async function validateWorkbook(input: WorkbookInput): Promise<WorkbookValidation> {
  const found = new Collector(Math.max(0, Math.floor(input.maxProblems ?? 100)));
  const root = input.workbookJson;
  const workbookProblem = (path: Path, message: string, extra: Omit<Problem, "file" | "message"> = {}) => {
    const where = formatPath(path, root);
    found.add({ file: "workbook.json", ...extra, message: `workbook.json${where === "" ? "" : ` ${where}`}: ${message}` });
  };
  const fromIssues = (issues: readonly v.BaseIssue<unknown>[], prefix: Path) => {
    for (const issue of issues) {
      const path = [...prefix, ...(issue.path ?? []).map((p) => p.key as string | number)];
      const expected = /^(?:is required; )?expected (.+?)(?:, got .*)?$/s.exec(issue.message)?.[1];
      const columnKey = path[2] === "columns" || path[2] === "widths" ? path[3] : undefined;
      workbookProblem(path, issue.message, {
        ...(expected === undefined ? {} : { expected }),
        ...(issue.input === undefined || issue.expected === "never" ? {} : { value: typeof issue.input === "string" ? truncate(issue.input) : truncate(JSON.stringify(issue.input) ?? String(issue.input)) }),
        ...(typeof columnKey === "string" ? { column: columnKey } : {}),
      });
    }
  };

  const result: WorkbookValidation = { ok: false, problems: found.problems, totalProblems: 0, sheets: [], charts: [], links: [] };
  const shape = v.safeParse(WorkbookShapeSchema, root);
  if (!shape.success) {
    fromIssues(shape.issues, []);
    if (root === null || typeof root !== "object" || !Array.isArray((root as { sheets?: unknown }).sheets)) return finish(result, found);
  }
  const rawSheets = (root as { sheets: unknown[] }).sheets;
  const rawCharts = Array.isArray((root as { charts?: unknown }).charts) ? ((root as { charts: unknown[] }).charts) : [];

  // Each entry on its own, so every broken entry is reported and the sound ones are still checked.
  const sheets: Array<{ index: number; name: string; columns: Map<string, { type: ColumnType; valid: boolean }>; widths: string[] }> = [];
  rawSheets.forEach((raw, index) => {
    const parsed = v.safeParse(SheetSchema, raw);
    if (!parsed.success) fromIssues(parsed.issues, ["sheets", index]);
    const item = raw !== null && typeof raw === "object" ? (raw as Record<string, unknown>) : undefined;
    if (!item || !v.is(sheetName(), item.name)) return;
    const columns = new Map<string, { type: ColumnType; valid: boolean }>();
    if (item.columns !== null && typeof item.columns === "object" && !Array.isArray(item.columns))
      for (const [name, type] of Object.entries(item.columns)) {
        const t = v.safeParse(ColumnTypeSchema, type);
        columns.set(name, t.success ? { type: t.output, valid: true } : { type: "text", valid: false });
      }
    const widths = item.widths !== null && typeof item.widths === "object" && !Array.isArray(item.widths) ? Object.keys(item.widths) : [];
    sheets.push({ index, name: item.name, columns, widths });
  });
  // A chart that failed its schema still has its columns checked when `sheet`, `x` and `y` are readable.
  const charts: Array<{ index: number; valid: boolean; chart: Pick<Chart, "name" | "type" | "sheet" | "x" | "y"> }> = [];
  rawCharts.forEach((raw, index) => {
    const parsed = v.safeParse(ChartSchema, raw);
    if (parsed.success) return charts.push({ index, valid: true, chart: parsed.output });
    fromIssues(parsed.issues, ["charts", index]);
    const c = raw !== null && typeof raw === "object" ? (raw as Record<string, unknown>) : {};
    const type = (CHART_TYPES as readonly unknown[]).includes(c.type) ? (c.type as Chart["type"]) : "bar";
    const y = v.is(yColumns(type === "pie" ? 1 : WORKBOOK_LIMITS.chartY), c.y) ? c.y : [];
    if (typeof c.sheet === "string" && typeof c.x === "string" && c.x !== "") charts.push({ index, valid: false, chart: { name: String(c.name), type, sheet: c.sheet, x: c.x, y } });
  });
  const cross = crossChecks(rawSheets, rawCharts);
  for (const p of cross) workbookProblem(p.path, p.message, { ...(p.expected ? { expected: p.expected } : {}), ...(p.value !== undefined ? { value: p.value } : {}) });

  // The CSVs, one after another (memory stays flat), then what depends on their headers.
  const read = new Map<string, { index: number; header: string[]; kinds: Map<string, ColumnTypeName>; rows: number }>();
  for (const sheet of sheets) {
    if (read.has(sheet.name)) continue; // a duplicate name, already reported
    const file = `sheets/${sheet.name}.csv`;
    const stream = await input.openCsv(file);
    if (stream === null) {
      found.add({ file, expected: "a CSV file", message: `${file}: missing; sheet ${quote(sheet.name)} of workbook.json needs this file` });
      continue;
    }
    const kinds = new Map<string, ColumnTypeName>();
    for (const [name, { type, valid }] of sheet.columns) if (valid) kinds.set(name, normalizeColumnType(type).type);
    const currencies = new Map<string, string>();
    for (const [name, { type }] of sheet.columns) if (typeof type === "object" && type.type === "currency") currencies.set(name, type.currency);
    const csv = await checkCsv(stream, file, kinds, currencies, input, found, result.links);
    if (csv.header === undefined) continue;
    read.set(sheet.name, { index: sheet.index, header: csv.header, kinds, rows: csv.rows });
    result.sheets.push({ name: sheet.name, columns: csv.header, rows: csv.rows });
    const headerSet = new Set(csv.header);
    for (const [field, names] of [["columns", [...sheet.columns.keys()]], ["widths", sheet.widths]] as const)
      for (const name of names)
        if (!headerSet.has(name))
          workbookProblem(["sheets", sheet.index, field, name], `${file} has no column ${quote(name)}; its columns are ${listNames(csv.header)}`, { column: name, expected: "a column of the header row" });
  }

  for (const { index, valid, chart } of charts) {
    const before = found.total;
    const sheet = read.get(chart.sheet);
    // No sheet of that name (reported by crossChecks) or its CSV could not be read (reported there).
    if (!sheet) continue;
    const file = `sheets/${chart.sheet}.csv`;
    const checkColumn = (path: Path, name: string, numeric: boolean) => {
      const at = sheet.header.indexOf(name);
      if (at < 0) {
        workbookProblem(path, `sheet ${quote(chart.sheet)} has no column ${quote(name)}; its columns are ${listNames(sheet.header)}`, { column: name, expected: `a column of ${file}` });
        return;
      }
      const type = sheet.kinds.get(name) ?? "text";
      if (numeric && type !== "number" && type !== "currency" && type !== "percent")
        workbookProblem(path, `column ${quote(name)} is a ${type} column; a chart's y columns must be number, currency or percent columns`, { column: name, columnLetter: columnLetter(at), expected: "a number, currency or percent column" });
    };
    checkColumn(["charts", index, "x"], chart.x, false);
    chart.y.forEach((name, i) => checkColumn(["charts", index, "y", i], name, true));
    if (chart.type === "pie" && sheet.rows > WORKBOOK_LIMITS.pieRows)
      workbookProblem(["charts", index], `a pie chart shows at most ${WORKBOOK_LIMITS.pieRows} rows; sheet ${quote(chart.sheet)} has ${sheet.rows}`, { expected: `a sheet of at most ${WORKBOOK_LIMITS.pieRows} data rows` });
    const duplicateName = cross.some((p) => p.path[0] === "charts" && p.path[1] === index);
    if (valid && found.total === before && !duplicateName) result.charts.push({ name: chart.name, sheet: chart.sheet });
  }
  return finish(result, found);
}

function finish(result: WorkbookValidation, found: Collector): WorkbookValidation {
  result.totalProblems = found.total;
  result.ok = found.total === 0;
  return result;
}

/**
 * Streams one CSV through csv-parse and checks the header and every cell. Answers the header (undefined
 * when the file has none) and the number of data rows read.
 */
function checkCsv(
  source: NodeJS.ReadableStream,
  file: string,
  types: Map<string, ColumnTypeName>,
  currencies: Map<string, string>,
  input: WorkbookInput,
  found: Collector,
  links: WorkbookValidation["links"],
): Promise<{ header?: string[]; rows: number }> {
  let header: string[] | undefined;
  let width = 0;
  let kinds: Kind[] = [];
  let expectedText: string[] = [];
  let row = 0; // records seen, including the header row and held blank lines
  let rows = 0; // data rows
  let blankHeld = 0; // blank lines not yet known to be followed by a row
  let stopped = false;
  const parser = parse(CSV_PARSE_OPTIONS);

  const cellProblem = (rowNumber: number, c: number, expected: string, value: string) => {
    const column = header![c]!;
    const letter = columnLetter(c);
    const shown = truncate(value);
    found.add({ file, row: rowNumber, column, columnLetter: letter, expected, value: shown, message: `${cellPrefix(file, rowNumber, column, letter)}: expected ${expected}, got ${JSON.stringify(shown)}` });
  };

  const onHeader = (record: string[]) => {
    header = record;
    width = record.length;
    const firstAt = new Map<string, number>();
    record.forEach((name, c) => {
      const letter = columnLetter(c);
      if (name === "") found.add({ file, row: 1, columnLetter: letter, expected: "a column name", message: `${cellPrefix(file, 1, undefined, letter)}: the header cell is empty; every column needs a name` });
      else if (firstAt.has(name))
        found.add({ file, row: 1, column: name, columnLetter: letter, expected: "a unique column name", value: truncate(name), message: `${cellPrefix(file, 1, name, letter)}: the name is also used by column ${columnLetter(firstAt.get(name)!)}; column names must be unique` });
      else firstAt.set(name, c);
    });
    if (width > WORKBOOK_LIMITS.columns) {
      const c = WORKBOOK_LIMITS.columns;
      found.add({ file, row: 1, column: record[c], columnLetter: columnLetter(c), expected: `at most ${WORKBOOK_LIMITS.columns} columns`, message: `${cellPrefix(file, 1, record[c], columnLetter(c))}: a sheet holds at most ${WORKBOOK_LIMITS.columns} columns, this file has ${width}` });
    }
    kinds = record.map((name) => KIND[types.get(name) ?? "text"]);
    expectedText = record.map((name, c) => {
      switch (kinds[c]) {
        case Kind.Number: return EXPECTED_NUMBER;
        case Kind.Currency: return `an amount in ${currencies.get(name) ?? "its currency"} as a number without symbols or separators`;
        case Kind.Percent: return EXPECTED_PERCENT;
        case Kind.Date: return EXPECTED_DATE;
        case Kind.Link: return EXPECTED_LINK;
        case Kind.Image: return EXPECTED_IMAGE;
        default: return "text";
      }
    });
  };

  const onRow = (record: string[], rowNumber: number) => {
    const n = record.length;
    if (n !== width) {
      const cells = (k: number) => (k === 1 ? "1 cell" : `${k} cells`);
      found.add({ file, row: rowNumber, expected: `${cells(width)}, one per header column`, message: `${file} row ${rowNumber}: expected ${cells(width)} (one per header column), got ${n}${n === 1 && record[0] === "" ? " (a blank line)" : ""}` });
    }
    const count = n < width ? n : width;
    for (let c = 0; c < count; c++) {
      const kind = kinds[c]!;
      if (kind === Kind.Text) continue;
      const cell = record[c]!;
      if (cell.length === 0) continue;
      switch (kind) {
        case Kind.Number:
        case Kind.Currency:
        case Kind.Percent:
          if (!isPlainNumber(cell)) cellProblem(rowNumber, c, expectedText[c]!, cell);
          break;
        case Kind.Date:
          if (!isCalendarDate(cell)) cellProblem(rowNumber, c, EXPECTED_DATE, cell);
          break;
        case Kind.Link:
          if (isWebAddress(cell)) break;
          if (input.isArtifactAddress(cell)) links.push({ file, row: rowNumber, column: header![c]!, address: cell });
          else cellProblem(rowNumber, c, EXPECTED_LINK, cell);
          break;
        case Kind.Image:
          if (!input.hasImage(cell)) cellProblem(rowNumber, c, EXPECTED_IMAGE, cell);
          break;
      }
    }
  };

  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (err?: unknown) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve({ header, rows });
    };
    const stop = () => {
      stopped = true;
      source.unpipe(parser);
      (source as { destroy?: () => void }).destroy?.();
      parser.destroy();
      done();
    };
    parser.on("data", (record: string[]) => {
      if (stopped) return;
      row++;
      if (header === undefined) return onHeader(record);
      if (record.length === 1 && record[0] === "" && width !== 0) {
        blankHeld++; // a blank line: a row only if another row follows
        return;
      }
      while (blankHeld > 0) {
        const blankRow = row - blankHeld;
        blankHeld--;
        if (++rows > WORKBOOK_LIMITS.rows) return tooMany(blankRow);
        onRow([""], blankRow);
      }
      if (++rows > WORKBOOK_LIMITS.rows) return tooMany(row);
      onRow(record, row);
    });
    const tooMany = (rowNumber: number) => {
      const limit = thousands(WORKBOOK_LIMITS.rows);
      found.add({ file, row: rowNumber, expected: `at most ${limit} data rows`, message: `${file} row ${rowNumber}: a sheet holds at most ${limit} data rows below the header row; this file has more` });
      stop();
    };
    parser.on("error", (err) => {
      if (stopped) return;
      if (!(err instanceof CsvError)) return done(err);
      const at = (typeof (err as { records?: unknown }).records === "number" ? (err as unknown as { records: number }).records : row) + 1;
      found.add({ file, row: at, expected: "valid CSV", message: `${file} row ${at}: the file is not valid CSV from here on: ${err.message}` });
      stop();
    });
    parser.on("end", () => {
      if (header === undefined) found.add({ file, row: 1, expected: "a header row of column names", message: `${file}: the file is empty; row 1 must name the columns` });
      done();
    });
    source.on("error", (err: unknown) => {
      if (!stopped) done(err);
    });
    source.pipe(parser);
  });
}
