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
import { columnLetter } from "./address";

// ————————————————————————————————————————————————————————————————— limits and types

/** Spec section 8. Rows count data rows (below the header row). */
export const WORKBOOK_LIMITS = { sheets: 20, charts: 10, columns: 200, rows: 100_000, chartY: 5, pieRows: 5 } as const;

export const COLUMN_TYPES = ["text", "number", "currency", "percent", "date", "link", "image"] as const;
export type ColumnTypeName = (typeof COLUMN_TYPES)[number];
export const CHART_TYPES = ["bar", "line", "area", "pie"] as const;

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

// ————————————————————————————————————————————————————————————————— messages

const VALUE_MAX = 100;

/** At most 100 characters (code points kept whole), with `…` when cut. */
export function truncate(value: string): string {
  if (value.length <= VALUE_MAX) return value;
  const points = Array.from(value);
  return points.length <= VALUE_MAX ? value : `${points.slice(0, VALUE_MAX - 1).join("")}…`;
}

/** How a JSON value reads in a message. */
function describe(input: unknown): string {
  if (input === undefined) return "nothing";
  if (input === null) return "null";
  if (typeof input === "string") return JSON.stringify(truncate(input));
  if (Array.isArray(input)) return input.length === 0 ? "an empty list" : `a list of ${input.length}`;
  if (typeof input === "object") return "an object";
  return truncate(String(input));
}

const quote = (name: string) => JSON.stringify(truncate(name));
const listNames = (names: readonly string[], max = 20) =>
  names.length === 0 ? "none" : names.slice(0, max).map(quote).join(", ") + (names.length > max ? ` and ${names.length - max} more` : "");
const thousands = (n: number) => n.toLocaleString("en-US");


// Schema messages are written `expected X, got Y` (or `is required; expected X`, or a sentence); the
// formatter takes `X` as the problem's `expected`.
type Message = (issue: v.BaseIssue<unknown>) => string;
const expecting =
  (what: string): Message =>
  (issue) =>
    issue.input === undefined ? `is required; expected ${what}` : `expected ${what}, got ${describe(issue.input)}`;

/** Message of a strict object: not an object, a missing field, or an unknown field. */
function objectMessage(what: string, fields: Record<string, string>, unknown: Record<string, string> = {}): Message {
  return (issue) => {
    const key = issue.path?.[issue.path.length - 1]?.key;
    if (issue.expected === "never" && typeof key === "string")
      return unknown[key] ?? `unknown field; ${what} has the fields ${Object.keys(fields).join(", ")}`;
    if (issue.input === undefined && typeof key === "string" && key in fields) return `is required; expected ${fields[key]}`;
    return `expected ${what}, got ${describe(issue.input)}`;
  };
}

// ————————————————————————————————————————————————————————————————— workbook.json schemas

const SAFE_NAME = (s: string) => s !== "." && s !== ".." && s === s.trim() && !/[/\\\u0000-\u001f\u007f]/.test(s);
const SHEET_NAME_EXPECTED = "a sheet name of 1 to 100 characters usable as a file name (no / or \\, no control characters, not . or .., no spaces at either end)";
const sheetName = () => {
  const m = expecting(SHEET_NAME_EXPECTED);
  return v.pipe(v.string(m), v.minLength(1, m), v.maxLength(100, m), v.check(SAFE_NAME, m));
};
const CHART_NAME_EXPECTED = "a chart name of 1 to 100 characters (no control characters, no spaces at either end)";
const chartName = () => {
  const m = expecting(CHART_NAME_EXPECTED);
  return v.pipe(v.string(m), v.minLength(1, m), v.maxLength(100, m), v.check((s) => s === s.trim() && !/[\u0000-\u001f\u007f]/.test(s), m));
};
const columnName = (what = "a column name") => {
  const m = expecting(what);
  return v.pipe(v.string(m), v.minLength(1, m));
};
const wholeNumber = (min: number, max: number) => {
  const m = expecting(`a whole number from ${min} to ${max}`);
  return v.pipe(v.number(m), v.integer(m), v.minValue(min, m), v.maxValue(max, m));
};

let currencyCodes: Set<string> | undefined;
/** ISO 4217 codes as the runtime's ICU knows them (any three capital letters where Intl has no list). */
function isCurrencyCode(code: string): boolean {
  if (!/^[A-Z]{3}$/.test(code)) return false;
  const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
  currencyCodes ??= new Set(intl.supportedValuesOf?.("currency") ?? []);
  return currencyCodes.size === 0 || currencyCodes.has(code);
}
const CURRENCY_EXPECTED = "an ISO 4217 currency code in capitals, such as USD or EUR";

const TYPE_LIST = COLUMN_TYPES.join(", ");
const COLUMN_TYPE_EXPECTED = `a column type (one of ${TYPE_LIST}) or an object such as { "type": "currency", "currency": "USD" }`;

const PlainColumnTypeSchema = v.pipe(
  v.picklist(COLUMN_TYPES, expecting(COLUMN_TYPE_EXPECTED)),
  v.check((t) => t !== "currency", 'a currency column needs its code: write { "type": "currency", "currency": "USD" }'),
);
const typeField = (types: readonly ColumnTypeName[]) => v.picklist(types, expecting(`one of ${TYPE_LIST}`));
const ColumnTypeObjectSchema = v.variant(
  "type",
  [
    v.strictObject(
      { type: v.literal("percent"), decimals: v.optional(wholeNumber(0, 10)) },
      objectMessage("a percent column type", { type: '"percent"', decimals: "a whole number from 0 to 10" }),
    ),
    v.strictObject(
      { type: v.literal("currency"), currency: v.pipe(v.string(expecting(CURRENCY_EXPECTED)), v.check(isCurrencyCode, expecting(CURRENCY_EXPECTED))) },
      objectMessage("a currency column type", { type: '"currency"', currency: CURRENCY_EXPECTED }),
    ),
    v.strictObject(
      { type: typeField(["text", "number", "date", "link", "image"]) },
      objectMessage("a column type", { type: `one of ${TYPE_LIST}` }, { decimals: "decimals is only for percent columns", currency: "currency is only for currency columns" }),
    ),
  ],
  expecting(`one of ${TYPE_LIST}`),
);

/** A column's type: a type name, or an object with `type` plus `decimals` (percent) or `currency` (currency). */
export const ColumnTypeSchema = v.lazy((input: unknown) => (typeof input === "string" ? PlainColumnTypeSchema : ColumnTypeObjectSchema)) as v.GenericSchema<
  unknown,
  Exclude<ColumnTypeName, "currency"> | { type: "percent"; decimals?: number } | { type: "currency"; currency: string } | { type: Exclude<ColumnTypeName, "percent" | "currency"> }
>;
export type ColumnType = v.InferOutput<typeof ColumnTypeSchema>;

/** `{ type, decimals?, currency? }` for any written form; a missing type is `text`. */
export function normalizeColumnType(type: ColumnType | undefined): { type: ColumnTypeName; decimals?: number; currency?: string } {
  if (type === undefined) return { type: "text" };
  return typeof type === "string" ? { type } : { ...type };
}

/** A JSON object used as a map (valibot's record also takes arrays, with keys "0", "1", …). */
const map = <T extends v.GenericSchema>(values: T, what: string) =>
  v.pipe(v.custom<Record<string, unknown>>((x) => x !== null && typeof x === "object" && !Array.isArray(x), expecting(what)), v.record(columnName(), values, expecting(what)));
const ColumnsSchema = map(ColumnTypeSchema, "a map of column name to column type");
const WidthsSchema = map(wholeNumber(1, 2000), "a map of column name to width in pixels");

const SHEET_FIELDS = {
  name: SHEET_NAME_EXPECTED,
  frozenRows: "a whole number", frozenColumns: "a whole number",
  widths: "a map of column name to width in pixels",
  columns: "a map of column name to column type",
};
export const SheetSchema = v.strictObject(
  {
    name: sheetName(),
    frozenRows: v.optional(wholeNumber(0, WORKBOOK_LIMITS.rows + 1), 1),
    frozenColumns: v.optional(wholeNumber(0, WORKBOOK_LIMITS.columns), 0),
    widths: v.optional(WidthsSchema, {}),
    columns: v.optional(ColumnsSchema, {}),
  },
  objectMessage("a sheet", SHEET_FIELDS),
);
export type Sheet = v.InferOutput<typeof SheetSchema>;

const yColumns = (max: number) => {
  const what = max === 1 ? "a list of exactly one column name (a pie chart has one y column)" : `a list of 1 to ${max} column names`;
  const m = expecting(what);
  return v.pipe(
    v.array(columnName(), m),
    v.minLength(1, m),
    v.maxLength(max, m),
    v.check(
      (ys) => new Set(ys).size === ys.length,
      (issue) => `lists the column ${quote((issue.input as string[]).find((y, i, ys) => ys.indexOf(y) !== i) ?? "")} more than once`,
    ),
  );
};
const chartEntries = <T extends (typeof CHART_TYPES)[number]>(type: T) => ({
  name: chartName(),
  type: v.literal(type),
  sheet: v.pipe(v.string(expecting("a sheet name")), v.minLength(1, expecting("a sheet name"))),
  x: columnName("the x column's name"),
  y: yColumns(type === "pie" ? 1 : WORKBOOK_LIMITS.chartY),
  title: v.optional(v.pipe(v.string(expecting("a title of at most 200 characters")), v.maxLength(200, expecting("a title of at most 200 characters")))),
});
const stacked = () => v.optional(v.boolean(expecting("true or false")));
const CHART_FIELDS = { name: CHART_NAME_EXPECTED, type: "bar, line, area or pie", sheet: "a sheet name", x: "the x column's name", y: "a list of 1 to 5 column names", title: "a title", stacked: "true or false" };
const chartMessage = (type: string) =>
  objectMessage(`a ${type} chart`, CHART_FIELDS, { stacked: `only bar and area charts can be stacked, this is a ${type} chart` });
export const ChartSchema = v.variant(
  "type",
  [
    v.strictObject({ ...chartEntries("bar"), stacked: stacked() }, chartMessage("bar")),
    v.strictObject(chartEntries("line"), chartMessage("line")),
    v.strictObject({ ...chartEntries("area"), stacked: stacked() }, chartMessage("area")),
    v.strictObject(chartEntries("pie"), chartMessage("pie")),
  ],
  expecting("bar, line, area or pie"),
);
export type Chart = v.InferOutput<typeof ChartSchema>;

const WorkbookShapeSchema = v.strictObject(
  { sheets: v.array(v.unknown(), expecting("a list of sheets")), charts: v.optional(v.array(v.unknown(), expecting("a list of charts"))) },
  objectMessage("a workbook", { sheets: "a list of sheets", charts: "a list of charts" }),
);

/** A problem of `workbook.json` found by comparing entries (limits, names, references). */
interface CrossProblem {
  path: Path;
  message: string;
  expected?: string;
  column?: string;
  value?: string;
}
type Path = ReadonlyArray<string | number>;

/** Limits, unique names and chart → sheet references: the checks that look across entries. */
function crossChecks(sheets: readonly unknown[], charts: readonly unknown[]): CrossProblem[] {
  const out: CrossProblem[] = [];
  if (sheets.length === 0) out.push({ path: ["sheets"], message: "a workbook needs at least one sheet", expected: "at least one sheet" });
  if (sheets.length > WORKBOOK_LIMITS.sheets)
    out.push({ path: ["sheets"], message: `a workbook holds at most ${WORKBOOK_LIMITS.sheets} sheets, this one has ${sheets.length}`, expected: `at most ${WORKBOOK_LIMITS.sheets} sheets` });
  if (charts.length > WORKBOOK_LIMITS.charts)
    out.push({ path: ["charts"], message: `a workbook holds at most ${WORKBOOK_LIMITS.charts} charts, this one has ${charts.length}`, expected: `at most ${WORKBOOK_LIMITS.charts} charts` });
  const nameOf = (item: unknown) => (item !== null && typeof item === "object" && typeof (item as { name?: unknown }).name === "string" ? (item as { name: string }).name : undefined);
  const unique = (items: readonly unknown[], kind: "sheets" | "charts") => {
    const first = new Map<string, number>();
    items.forEach((item, i) => {
      const name = nameOf(item);
      if (name === undefined) return;
      const seen = first.get(name);
      if (seen === undefined) first.set(name, i);
      else out.push({ path: [kind, i, "name"], message: `${quote(name)} is also the name of ${kind}[${seen}]; ${kind === "sheets" ? "sheet" : "chart"} names must be unique`, expected: "a unique name", value: truncate(name) });
    });
  };
  unique(sheets, "sheets");
  unique(charts, "charts");
  const sheetNames = [...new Set(sheets.map(nameOf).filter((n): n is string => n !== undefined))];
  charts.forEach((chart, i) => {
    const sheet = chart !== null && typeof chart === "object" ? (chart as { sheet?: unknown }).sheet : undefined;
    if (typeof sheet === "string" && sheet !== "" && !sheetNames.includes(sheet))
      out.push({ path: ["charts", i, "sheet"], message: `no sheet is named ${quote(sheet)}; the sheets are ${listNames(sheetNames)}`, expected: "the name of a sheet of this workbook", value: truncate(sheet) });
  });
  return out;
}

/**
 * `workbook.json` (spec 2.8): its shape, limits, unique names and charts naming existing sheets.
 * Column names are checked against the CSV headers by {@link validateWorkbook}, which also reports every
 * problem at once (this schema stops at the first broken layer, as valibot pipes do).
 */
export const WorkbookSchema = v.pipe(
  v.strictObject(
    {
      sheets: v.array(SheetSchema, expecting("a list of sheets")),
      charts: v.optional(v.array(ChartSchema, expecting("a list of charts")), []),
    },
    objectMessage("a workbook", { sheets: "a list of sheets", charts: "a list of charts" }),
  ),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    for (const p of crossChecks(dataset.value.sheets, dataset.value.charts)) addIssue({ message: `${formatPath(p.path, dataset.value)}: ${p.message}`, input: p.value });
  }),
);
export type Workbook = v.InferOutput<typeof WorkbookSchema>;

// ————————————————————————————————————————————————————————————————— formatting paths

/** `sheets[0].columns["Amount"]`, with the sheet's or chart's name when the input has one. */
function formatPath(path: Path, root: unknown): string {
  let s = "";
  let node: unknown = root;
  path.forEach((key, i) => {
    const parent = path[i - 1];
    if (typeof key === "number") s += `[${key}]`;
    else if (i === 3 && (parent === "columns" || parent === "widths")) s += `[${JSON.stringify(truncate(key))}]`;
    else s += s === "" ? key : `.${key}`;
    node = node !== null && typeof node === "object" ? (node as Record<string | number, unknown>)[key] : undefined;
    if (i === 1 && (path[0] === "sheets" || path[0] === "charts") && node !== null && typeof node === "object") {
      const name = (node as { name?: unknown }).name;
      if (typeof name === "string" && name !== "") s += ` (${path[0] === "sheets" ? "sheet" : "chart"} ${quote(name)})`;
    }
  });
  return s;
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

/** JSON's number grammar, finite as a double. */
export function isPlainNumber(s: string): boolean {
  const n = s.length;
  let i = 0;
  let c = s.charCodeAt(0);
  if (c === 45 /* - */) c = s.charCodeAt(++i);
  if (c === 48 /* 0 */) i++;
  else if (c >= 49 && c <= 57) {
    i++;
    while (i < n && (c = s.charCodeAt(i)) >= 48 && c <= 57) i++;
  } else return false;
  if (i === n) return n < 300 || Number.isFinite(Number(s));
  if (s.charCodeAt(i) === 46 /* . */) {
    const start = ++i;
    while (i < n && (c = s.charCodeAt(i)) >= 48 && c <= 57) i++;
    if (i === start) return false;
    if (i === n) return true;
  }
  if ((s.charCodeAt(i) | 32) !== 101 /* e */) return false;
  c = s.charCodeAt(++i);
  if (c === 43 || c === 45) i++;
  const start = i;
  while (i < n && (c = s.charCodeAt(i)) >= 48 && c <= 57) i++;
  return i !== start && i === n && Number.isFinite(Number(s));
}

const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** `YYYY-MM-DD`, a real Gregorian date, years 0001–9999. */
export function isCalendarDate(s: string): boolean {
  if (s.length !== 10 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return false;
  let year = 0;
  for (let i = 0; i < 4; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    year = year * 10 + d;
  }
  const m1 = s.charCodeAt(5) - 48, m2 = s.charCodeAt(6) - 48, d1 = s.charCodeAt(8) - 48, d2 = s.charCodeAt(9) - 48;
  if (m1 < 0 || m1 > 9 || m2 < 0 || m2 > 9 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9) return false;
  const month = m1 * 10 + m2, day = d1 * 10 + d2;
  if (year === 0 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS[month]!);
}

/** A complete `http://` or `https://` address: a host, no whitespace or control characters. */
export function isWebAddress(s: string): boolean {
  // "http" in any case, an optional "s", then "://" (char codes, no allocation)
  if ((s.charCodeAt(0) | 32) !== 104 || (s.charCodeAt(1) | 32) !== 116 || (s.charCodeAt(2) | 32) !== 116 || (s.charCodeAt(3) | 32) !== 112) return false;
  const colon = (s.charCodeAt(4) | 32) === 115 ? 5 : 4;
  if (s.charCodeAt(colon) !== 58 || s.charCodeAt(colon + 1) !== 47 || s.charCodeAt(colon + 2) !== 47) return false;
  const rest = colon + 3;
  if (rest >= s.length || s.charCodeAt(rest) === 47 /* a third slash */) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 32 || c === 127 || c === 0x85 || c === 0xa0 || c === 0x2028 || c === 0x2029 || c === 0x3000) return false;
  }
  try {
    return new URL(s).hostname !== "";
  } catch {
    return false;
  }
}

const EXPECTED_NUMBER = "a number without symbols or separators";
const EXPECTED_PERCENT = "a fraction such as 0.125 (for 12.5%) without a % sign";
const EXPECTED_DATE = "a real calendar date as YYYY-MM-DD";
const EXPECTED_LINK = "a complete http:// or https:// address, or an artifact address";
const EXPECTED_IMAGE = "the path of an image file in this version";

// ————————————————————————————————————————————————————————————————— validation

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

// ————————————————————————————————————————————————————————————————— the API error

