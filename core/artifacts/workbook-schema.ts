/**
 * `workbook.json` of a `sheet` artifact version (spec 2.8, 8): its limits, column and chart types, the
 * valibot schemas of sheets, charts and the workbook, the checks that look across entries (limits,
 * unique names, charts naming existing sheets), and the messages they write (`expected X, got Y`).
 *
 * The rules themselves are listed in core/artifacts/workbook.ts, which validates a whole version (this
 * file and the sheets' CSVs) and reports every problem at once.
 */
import * as v from "valibot";

// ————————————————————————————————————————————————————————————————— limits and types

/** Spec section 8. Rows count data rows (below the header row). */
export const WORKBOOK_LIMITS = { sheets: 20, charts: 10, columns: 200, rows: 100_000, chartY: 5, pieRows: 5 } as const;

export const COLUMN_TYPES = ["text", "number", "currency", "percent", "date", "link", "image"] as const;
export type ColumnTypeName = (typeof COLUMN_TYPES)[number];
export const CHART_TYPES = ["bar", "line", "area", "pie"] as const;

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

/** A name as a message shows it: JSON-quoted, cut to 100 characters. */
export const quote = (name: string) => JSON.stringify(truncate(name));
/** Up to `max` names, quoted and comma-separated, then `and N more`; `none` for an empty list. */
export const listNames = (names: readonly string[], max = 20) =>
  names.length === 0 ? "none" : names.slice(0, max).map(quote).join(", ") + (names.length > max ? ` and ${names.length - max} more` : "");


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
/** A sheet name: 1 to 100 characters usable as one path segment (the rules are in the module doc of workbook.ts). A new schema per call. */
export const sheetName = () => {
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

/** A chart's `y`: 1 to `max` column names, each listed once (a pie chart has exactly one). */
export const yColumns = (max: number) => {
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

/** The outer shape of `workbook.json` alone (entries unchecked), so that every entry can then be checked on its own. */
export const WorkbookShapeSchema = v.strictObject(
  { sheets: v.array(v.unknown(), expecting("a list of sheets")), charts: v.optional(v.array(v.unknown(), expecting("a list of charts"))) },
  objectMessage("a workbook", { sheets: "a list of sheets", charts: "a list of charts" }),
);

/** A problem of `workbook.json` found by comparing entries (limits, names, references). */
export interface CrossProblem {
  path: Path;
  message: string;
  expected?: string;
  column?: string;
  value?: string;
}
/** A location in `workbook.json`: keys and indexes from the root, e.g. `["sheets", 0, "columns", "Amount"]`. */
export type Path = ReadonlyArray<string | number>;

/** Limits, unique names and chart → sheet references: the checks that look across entries. */
export function crossChecks(sheets: readonly unknown[], charts: readonly unknown[]): CrossProblem[] {
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
export function formatPath(path: Path, root: unknown): string {
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
