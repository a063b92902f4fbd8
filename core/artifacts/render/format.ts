/**
 * How a sheet's raw CSV values read in the reader's locale (spec 2.8: "CSV cells hold raw values without
 * symbols or separators; the reader's locale formats them"), and the parts of a chart's presentation
 * that the server (SVG) and the browser (live ECharts) share: colours from theme tokens and the
 * formatter functions that an option's JSON cannot carry.
 *
 * No Node imports: this module is bundled into the browser scripts too (render/browser/).
 */
import { pageUrl, parseAddress } from "../address";
import { columnLetter } from "../cell-range";

/** A column's type as `normalizeColumnType` answers it (spec 2.8). `decimals`: percent; `currency`: ISO 4217 code. */
export type CellType = { type: "text" | "number" | "currency" | "percent" | "date" | "link" | "image"; decimals?: number; currency?: string };

/**
 * A cell as shown. `text` is what reads in the cell ("" for an empty one); `align` is `end` for numbers,
 * currency and percent; `href` is set for an http(s) link, `address` for an artifact address in a link
 * column (the page turns it into a link), `image` for an image column (the path of the image file inside
 * the artifact).
 */
export interface FormattedCell {
  text: string;
  align: "start" | "end";
  href?: string;
  address?: string;
  image?: string;
}

const formatters = new Map<string, Intl.NumberFormat | Intl.DateTimeFormat>();

/** One cached formatter per (kind, locale, options); an unknown locale falls back to en-US. */
function cached<T extends Intl.NumberFormat | Intl.DateTimeFormat>(key: string, make: (locale: string) => T, locale: string): T {
  const k = `${key}|${locale}`;
  let f = formatters.get(k) as T | undefined;
  if (!f) {
    try {
      f = make(locale);
    } catch {
      f = make("en-US");
    }
    formatters.set(k, f);
  }
  return f;
}

const numberFormat = (locale: string) => cached("n", (l) => new Intl.NumberFormat(l, { maximumFractionDigits: 20 }), locale);
const currencyFormat = (locale: string, code: string) => cached(`c:${code}`, (l) => new Intl.NumberFormat(l, { style: "currency", currency: code, currencyDisplay: "code" }), locale);
const percentFormat = (locale: string, decimals: number) =>
  cached(`p:${decimals}`, (l) => new Intl.NumberFormat(l, { style: "percent", minimumFractionDigits: decimals, maximumFractionDigits: decimals }), locale);
const dateFormat = (locale: string) => cached("d", (l) => new Intl.DateTimeFormat(l, { dateStyle: "medium", timeZone: "UTC" }), locale);

/** JSON's number grammar (what publishing accepts in number, currency and percent cells). */
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * Formats a number given as its decimal text. The text goes to Intl as it is (exact decimals where the
 * runtime has Intl.NumberFormat v3, as Node 20 and current browsers do).
 */
function formatNumber(f: Intl.NumberFormat, raw: string): string {
  return f.format(raw as unknown as number);
}

/**
 * Formats one raw CSV value for display (spec 2.8).
 *
 * - `number`: grouped digits in the locale, every fraction digit kept (`1234.5` → `1,234.5` / `1.234,5`).
 * - `currency`: the amount with its ISO code, the currency's usual fraction digits (`USD 214,800.00` in
 *   en-US, `214.800,00 USD` in de-DE; spaces are Intl's no-break spaces).
 * - `percent`: the fraction × 100 with exactly `decimals` fraction digits, default 0 (`0.125`, 1 → `12.5%`).
 * - `date`: `YYYY-MM-DD` in the medium date style of the locale, read in UTC (`Jul 31, 2026` / `31.07.2026`).
 * - `link`: the address as text; `href` for http(s), `address` for an `artifact:` address.
 * - `image`: the path as text (for alt text) and `image`.
 * - `text`: as it is.
 *
 * An empty cell is `""` (aligned as its column). A value that does not match its type (publishing
 * refuses those, so it should not happen) reads as the raw text. An unknown locale formats as en-US.
 *
 * @param raw the CSV cell
 * @param type the column's type
 * @param locale a BCP 47 tag such as `en-US` (the reader's, e.g. `navigator.language`)
 */
export function formatCell(raw: string, type: CellType, locale: string): FormattedCell {
  const numeric = type.type === "number" || type.type === "currency" || type.type === "percent";
  const align = numeric ? "end" : "start";
  if (raw === "") return { text: "", align };
  switch (type.type) {
    case "number":
      return { text: NUMBER.test(raw) ? formatNumber(numberFormat(locale), raw) : raw, align };
    case "currency":
      if (!NUMBER.test(raw) || !type.currency) return { text: raw, align };
      try {
        return { text: formatNumber(currencyFormat(locale, type.currency), raw), align };
      } catch {
        return { text: raw, align };
      }
    case "percent":
      return { text: NUMBER.test(raw) ? formatNumber(percentFormat(locale, type.decimals ?? 0), raw) : raw, align };
    case "date": {
      const m = DATE.exec(raw);
      if (!m) return { text: raw, align };
      const d = new Date(0);
      d.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3])); // years below 100 stay as written
      return { text: Number.isNaN(d.getTime()) ? raw : dateFormat(locale).format(d), align };
    }
    case "link":
      if (/^https?:\/\//i.test(raw)) return { text: raw, align, href: raw };
      if (raw.startsWith("artifact:")) return { text: raw, align, address: raw };
      return { text: raw, align };
    case "image":
      return { text: raw, align, image: raw };
    default:
      return { text: raw, align };
  }
}

// ————————————————————————————————————————————————————————————————— chart presentation (server and browser)

/**
 * The colours and font a chart is drawn with (hex or `rgba()` strings ECharts understands), from theme
 * tokens (spec 2.10, 2.11): `palette` is `--chart-1` to `--chart-5`; `muted` is `--muted-foreground`
 * (axis labels); `border` is axis and grid lines; `fontFamily` is `--font-sans`.
 */
export interface ChartStyle {
  palette: string[];
  foreground: string;
  muted: string;
  border: string;
  background: string;
  fontFamily: string;
}

/**
 * What an option's formatter functions need, kept in the option under {@link CHART_FORMATS_KEY} (ECharts
 * ignores unknown top-level keys): the locale of the x labels, the y axis's type, one type per series.
 */
export interface ChartFormats {
  locale: string;
  axis: CellType;
  series: CellType[];
}

/** The top-level option key holding {@link ChartFormats}. */
export const CHART_FORMATS_KEY = "svcFormats";

type Obj = Record<string, unknown>;
const obj = (x: unknown): Obj => (x !== null && typeof x === "object" && !Array.isArray(x) ? (x as Obj) : {});
const list = (x: unknown): Obj[] => (Array.isArray(x) ? x.map(obj) : x === undefined ? [] : [obj(x)]);

/**
 * Writes `style`'s colours and font into every place of the option that shows them (palette, text,
 * title, legend, axes, split lines, tooltip, pie borders), leaving everything else as it is. Double quotes
 * in the font stack become single quotes (ECharts writes it unescaped into an SVG `style` attribute). The server
 * builds options with it (`chartOption`); the browser applies it again with the page's live theme tokens
 * (light or dark) before drawing.
 *
 * @param option a JSON ECharts option as `chartOption` makes it
 * @returns a new option (the input is not changed)
 */
export function applyChartStyle(option: Obj, input: ChartStyle): Obj {
  // ECharts writes the font into an SVG style="" attribute without escaping: keep it free of double quotes
  const style = { ...input, fontFamily: input.fontFamily.replace(/"/g, "'").replace(/[<>;]/g, "") };
  const out: Obj = { ...option, color: [...style.palette], backgroundColor: "transparent", textStyle: { ...obj(option.textStyle), fontFamily: style.fontFamily, color: style.foreground } };
  const text = (x: unknown, color: string) => ({ ...obj(x), color });
  if (option.title) out.title = list(option.title).map((t) => ({ ...t, textStyle: { ...text(t.textStyle, style.foreground), fontFamily: style.fontFamily } }));
  if (option.legend) out.legend = list(option.legend).map((l) => ({ ...l, textStyle: { ...text(l.textStyle, style.muted), fontFamily: style.fontFamily }, inactiveColor: style.border }));
  const axis = (a: Obj) => ({
    ...a,
    axisLine: { ...obj(a.axisLine), lineStyle: { ...obj(obj(a.axisLine).lineStyle), color: style.border } },
    axisTick: { ...obj(a.axisTick), lineStyle: { ...obj(obj(a.axisTick).lineStyle), color: style.border } },
    axisLabel: { ...obj(a.axisLabel), color: style.muted, fontFamily: style.fontFamily },
    splitLine: { ...obj(a.splitLine), lineStyle: { ...obj(obj(a.splitLine).lineStyle), color: style.border } },
  });
  if (option.xAxis) out.xAxis = list(option.xAxis).map(axis);
  if (option.yAxis) out.yAxis = list(option.yAxis).map(axis);
  if (option.tooltip) {
    const tip = obj(option.tooltip);
    const pointer = obj(tip.axisPointer);
    out.tooltip = {
      ...tip,
      backgroundColor: style.background,
      borderColor: style.border,
      textStyle: { ...text(tip.textStyle, style.foreground), fontFamily: style.fontFamily },
      axisPointer: { ...pointer, lineStyle: { ...obj(pointer.lineStyle), color: style.muted }, shadowStyle: { ...obj(pointer.shadowStyle), color: style.border, opacity: 0.45 } },
    };
  }
  if (option.series)
    out.series = list(option.series).map((s) =>
      s.type === "pie" ? { ...s, itemStyle: { ...obj(s.itemStyle), borderColor: style.background }, label: { ...obj(s.label), color: style.foreground, fontFamily: style.fontFamily }, labelLine: { ...obj(s.labelLine), lineStyle: { ...obj(obj(s.labelLine).lineStyle), color: style.border } } } : s,
    );
  return out;
}

/** A short axis label: compact notation (`200K`, `USD 1.2M`, `40%`). */
function axisLabel(type: CellType, locale: string): (value: number) => string {
  let f: Intl.NumberFormat;
  const make = (opts: Intl.NumberFormatOptions) => {
    try {
      return new Intl.NumberFormat(locale, opts);
    } catch {
      return new Intl.NumberFormat("en-US", opts);
    }
  };
  if (type.type === "percent") f = make({ style: "percent", maximumFractionDigits: type.decimals ?? 0 });
  else if (type.type === "currency" && type.currency) f = make({ style: "currency", currency: type.currency, currencyDisplay: "code", notation: "compact", minimumFractionDigits: 0, maximumFractionDigits: 1 });
  else f = make({ notation: "compact", minimumFractionDigits: 0, maximumFractionDigits: 1 });
  return (value) => f.format(value);
}

/**
 * Adds the functions an option's JSON cannot hold, from its {@link ChartFormats}: the y axis labels in
 * compact notation of the axis's type, and each series' tooltip values formatted by {@link formatCell}
 * (currency with its code, percent with its decimals). Options without formats come back unchanged.
 *
 * @param option a JSON option as `chartOption` makes it
 * @param locale overrides the formats' locale
 * @returns a new option (not JSON-serializable any more: it holds functions)
 */
export function withChartFormatters(option: Obj, locale?: string): Obj {
  const formats = option[CHART_FORMATS_KEY] as ChartFormats | undefined;
  if (!formats) return option;
  const loc = locale ?? formats.locale;
  const out: Obj = { ...option };
  if (option.yAxis) {
    const label = axisLabel(formats.axis, loc);
    out.yAxis = list(option.yAxis).map((a) => ({ ...a, axisLabel: { ...obj(a.axisLabel), formatter: label } }));
  }
  out.series = list(option.series).map((s, i) => {
    const type = formats.series[i] ?? { type: "number" };
    const valueFormatter = (value: unknown) => (value === null || value === undefined || value === "-" ? "–" : formatCell(String(value), type, loc).text);
    return { ...s, tooltip: { ...obj(s.tooltip), valueFormatter } };
  });
  return out;
}

// ————————————————————————————————————————————————————————————————— the sheet grid's configuration

/**
 * What the sheet grid (render/browser/sheet.ts) reads from the JSON in its container, written by
 * `renderSheetView` (render/sheet-view.ts). Row indexes are 0-based data rows (below the header row).
 */
export interface SheetGridConfig {
  artifactId: string;
  version: number;
  sheet: string;
  /** The header row in order, each with its type. */
  columns: Array<{ name: string; type: CellType }>;
  /** Column name → width in CSS pixels (columns without one get a default by type). */
  widths: Record<string, number>;
  /** Rows frozen at the top counting the header row (spec 2.8); the grid freezes at most 10 data rows. */
  frozenRows: number;
  /** Columns frozen at the left. */
  frozenColumns: number;
  /** Data rows in the sheet. */
  total: number;
  /** The rows API of this sheet (`…/sheets/<name>/rows`), answered as `{ total, offset, rows }`. */
  rowsUrl: string;
  /** The path prefix the service is served under (`Config.basePath`, `""` for none): the cells' links and images go under it. */
  basePath: string;
  /** Data rows from offset 0, already known (the first page). */
  rows: string[][];
}

/** At most this many data rows freeze under the header, whatever `frozenRows` says (the rest scroll). */
export const MAX_FROZEN_DATA_ROWS = 10;

/** A column's width: the workbook's, else a default by type (pixels). */
export function columnWidth(name: string, type: CellType, widths: Record<string, number>): number {
  const set = widths[name];
  if (set !== undefined) return set;
  switch (type.type) {
    case "number":
    case "percent":
    case "date":
      return 120;
    case "currency":
      return 150;
    case "link":
      return 240;
    case "image":
      return 96;
    default:
      return 160;
  }
}

/** Spreadsheet column letters: 0 → `A`, 25 → `Z`, 26 → `AA` (the address parser's own). */
export const columnLetters = columnLetter;

/**
 * Where a cell's artifact address opens in the pages ({@link pageUrl}: `/artifacts/<id>` with `v` and
 * `part`, spec 4.1, under `basePath`, the pages' path prefix). Answers undefined for something that is
 * not an artifact address.
 */
export function artifactPageHref(address: string, basePath = ""): string | undefined {
  try {
    return pageUrl(parseAddress(address), basePath);
  } catch {
    return undefined;
  }
}

/**
 * The URL of an image file of an artifact version (the files API; the reader's session authorizes it),
 * under `basePath` (the path prefix the service is served under, `Config.basePath`).
 */
export function artifactFileUrl(artifactId: string, version: number, path: string, basePath = ""): string {
  return `${basePath}/api/artifacts/${encodeURIComponent(artifactId)}/versions/${version}/files/${path.split("/").map(encodeURIComponent).join("/")}`;
}
