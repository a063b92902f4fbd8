/**
 * A workbook's charts (spec 2.8) as ECharts options and as server-rendered SVG (echarts 6 renders SVG in
 * Node without a DOM), themed by the artifact's theme tokens (spec 2.10, 2.11). The same JSON option is
 * drawn live in the browser by render/browser/charts.ts, which adds the formatter functions and the
 * page's own theme colours.
 */
import { createRequire } from "node:module";
import type * as Culori from "culori";
import type * as Echarts from "echarts";
import type { Chart } from "../workbook-schema";
import type { Theme } from "../content";
import { escapeHtml, scriptJson } from "./html";
import { CHART_FORMATS_KEY, applyChartStyle, formatCell, withChartFormatters, type CellType, type ChartFormats, type ChartStyle } from "./format";

/** echarts, required on the first server-rendered chart: its load (~0.7 s) stays out of the service's start-up. */
let echartsModule: typeof Echarts | undefined;
const echarts = (): typeof Echarts => (echartsModule ??= createRequire(import.meta.url)("echarts") as typeof Echarts);

/**
 * culori and its sRGB gamut mapper, required on the first themed colour: `require` answers culori's one-file
 * CJS bundle (~20 ms), where `import` walks its ~450 ES modules (~100 ms of the service's start-up).
 */
let colors: { culori: typeof Culori; toRgb: ReturnType<typeof Culori.toGamut> } | undefined;
function culori(): NonNullable<typeof colors> {
  if (colors) return colors;
  const module = createRequire(import.meta.url)("culori") as typeof Culori;
  return (colors = { culori: module, toRgb: module.toGamut("rgb", "oklch") });
}

export type { ChartStyle } from "./format";

/** The slides kit's default tokens (core/artifacts/kit/kit.css), light and dark. */
const KIT = {
  light: { palette: ["#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#e11d48"], foreground: "#0f172a", muted: "#475569", border: "#e2e8f0", background: "#ffffff" },
  dark: { palette: ["#818cf8", "#38bdf8", "#34d399", "#fbbf24", "#fb7185"], foreground: "#e2e8f0", muted: "#94a3b8", border: "#1e293b", background: "#0b1120" },
} as const;
const KIT_FONT = '"Inter", ui-sans-serif, system-ui, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Liberation Sans", "DejaVu Sans", sans-serif';

/** The arguments of `light-dark(a, b)`, split at its top-level comma. */
function lightDark(value: string): [string, string] | undefined {
  const m = /^\s*light-dark\(([\s\S]*)\)\s*$/i.exec(value);
  if (!m) return undefined;
  let depth = 0;
  const inner = m[1]!;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) return [inner.slice(0, i).trim(), inner.slice(i + 1).trim()];
  }
  return undefined;
}

/**
 * A CSS colour as ECharts reads it: `#rrggbb`, or `rgba(…)` when translucent; oklch, lab, hsl and the
 * rest are converted (out-of-gamut colours mapped into sRGB); `light-dark(a, b)` picks by mode. Answers
 * undefined for what culori cannot read (`currentColor`, `color-mix()`, `var()`).
 */
function cssColor(value: string | undefined, mode: "light" | "dark"): string | undefined {
  if (!value) return undefined;
  const pair = lightDark(value);
  if (pair) return cssColor(mode === "light" ? pair[0] : pair[1], mode);
  const { culori: c, toRgb } = culori();
  const parsed = c.parse(value.trim());
  if (!parsed) return undefined;
  const rgb = toRgb(parsed);
  return rgb.alpha !== undefined && rgb.alpha < 1 ? c.formatRgb(rgb) : c.formatHex(rgb);
}

/**
 * The style a chart is drawn with in `mode` (spec 2.11): the slides kit's default colours (the same as
 * kit.css, light or dark), each overridden by the theme's token when it sets one (`--chart-1` to
 * `--chart-5`, `--foreground`, `--muted-foreground`, `--border`, `--background`, `--font-sans`). Theme
 * colours may be any CSS colour (e.g. `oklch()`); they are converted to hex or `rgba()`. A token culori
 * cannot read (`color-mix()`) keeps the default.
 *
 * @param theme the artifact's `theme.json` (undefined: the kit's defaults)
 * @param mode light or dark (a theme's pinned `mode` is the caller's to apply)
 */
export function chartStyle(theme: Theme | undefined, mode: "light" | "dark"): ChartStyle {
  const kit = KIT[mode];
  const t = theme?.tokens ?? {};
  const font = t["--font-sans"]?.trim();
  return {
    palette: kit.palette.map((fallback, i) => cssColor(t[`--chart-${i + 1}`], mode) ?? fallback),
    foreground: cssColor(t["--foreground"], mode) ?? kit.foreground,
    muted: cssColor(t["--muted-foreground"], mode) ?? kit.muted,
    border: cssColor(t["--border"], mode) ?? kit.border,
    background: cssColor(t["--background"], mode) ?? kit.background,
    fontFamily: font && !/[<>]/.test(font) ? font : KIT_FONT,
  };
}

/** Above this many rows a line or area series is down-sampled (LTTB) and a bar series averaged per pixel. */
const SAMPLE_ABOVE = 1_000;

/**
 * Room in px for half of an x-axis label of the kit's 12 px font (up to ~8.4 px a character in the wide fallback fonts such as DejaVu Sans, plus 2): a
 * label centred on the plot's edge needs it beside the plot.
 */
function halfLabel(label: string | undefined): number {
  return Math.ceil((label ?? "").length * 4.2) + 2;
}

/**
 * A chart drawn in the mode `pinned` names, else in both, each in its span (`.svc-chart-light`,
 * `.svc-chart-dark`) for the page's CSS to show the one of the reader's colour scheme
 * (core/artifacts/kit/kit.css, plugins/pages/assets/pages.css).
 * @param drawn the chart's SVG (or markup) in a mode
 */
export function chartInModes(drawn: (mode: "light" | "dark") => string, pinned: "light" | "dark" | undefined): string {
  return pinned ? drawn(pinned) : `<span class="svc-chart-light">${drawn("light")}</span><span class="svc-chart-dark">${drawn("dark")}</span>`;
}

/**
 * The compact layout of a chart: a drawing about as wide as a phone shows it (so its type is not scaled
 * down to a few pixels), for a narrow box: the drawing's size in px (the legend's rows are counted
 * against its width, the y ticks against its height).
 */
export interface CompactLayout {
  width: number;
  height: number;
}

/** The compact layout's type size in px (the wide layout's axis labels are 12 px, its title 15 px). */
const COMPACT_FONT = 13;

/**
 * A date label as short as the dates allow (compact layout): month and year when no two dates share a
 * month (`Jan 2026`: a two-digit year would read as a day), month and day when all are in one year (`Jan 28`), else the locale's short
 * date (`1/28/26`). In `locale`, read in UTC. Answers undefined when not every value is a `YYYY-MM-DD` date.
 */
function shortDates(raws: string[], locale: string): string[] | undefined {
  const dates: Date[] = [];
  for (const raw of raws) {
    const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(raw);
    if (!m) return undefined;
    const d = new Date(0);
    d.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
    if (Number.isNaN(d.getTime())) return undefined;
    dates.push(d);
  }
  const months = new Set(dates.map((d) => `${d.getUTCFullYear()}-${d.getUTCMonth()}`));
  const years = new Set(dates.map((d) => d.getUTCFullYear()));
  const opts: Intl.DateTimeFormatOptions =
    months.size === dates.length ? { month: "short", year: "numeric" } : years.size === 1 ? { month: "short", day: "numeric" } : { dateStyle: "short" };
  let f: Intl.DateTimeFormat;
  try {
    f = new Intl.DateTimeFormat(locale, { ...opts, timeZone: "UTC" });
  } catch {
    f = new Intl.DateTimeFormat("en-US", { ...opts, timeZone: "UTC" });
  }
  return dates.map((d) => f.format(d));
}

/**
 * The width in px a compact legend gives a name: ~0.62 em a character, what wide fallback fonts such as
 * DejaVu Sans take (ECharts' own estimate without a canvas is narrower, and names ran into the next item).
 */
const legendTextWidth = (name: string) => Math.ceil(name.length * COMPACT_FONT * 0.62);

/**
 * The compact layout's legend, below the plot: each item as wide as its name needs ({@link legendTextWidth}),
 * wrapping to more rows when they do not fit ({@link legendRows}). ECharts lays an item out by its text's
 * box, which has the given width only when a background is drawn: a transparent one.
 */
function compactLegend(names: string[]): Record<string, unknown> {
  return {
    bottom: 0, left: 0, icon: "roundRect", itemWidth: 12, itemHeight: 8, itemGap: 12, textStyle: { fontSize: COMPACT_FONT },
    data: names.map((name) => ({ name, textStyle: { width: legendTextWidth(name), overflow: "truncate", backgroundColor: "transparent" } })),
  };
}

/** Rows {@link compactLegend} takes for `names` in a drawing `width` px wide. */
function legendRows(names: string[], width: number): number {
  let rows = 1;
  let x = 0;
  for (const name of names) {
    const item = 12 + 5 + legendTextWidth(name) + 12;
    if (x > 0 && x + item > width) {
      rows++;
      x = 0;
    }
    x += item;
  }
  return rows;
}

/**
 * The ECharts option of a workbook chart (spec 2.8): JSON only (no functions), so a page can embed it for
 * the browser; {@link renderChartSvg} and the browser add the formatters.
 *
 * - `bar`, `line`, `area` (a line with its area filled): one series per `y` column against the category
 *   axis of `x`; bar and area stack when `stacked`. x labels are formatted by `formatCell` in `locale`
 *   (dates as the locale writes them). y values are numbers (an empty cell is a gap).
 * - `pie`: the one `y` column, one slice per row (publishing allows at most five), labelled with the
 *   share in percent.
 * - Title: `chart.title`, else `chart.name`. A legend when there is more than one series. Animation off
 *   (server rendering). Series over 1,000 rows are sampled for drawing (lines: LTTB; bars: average).
 * - The option carries its formats under `svcFormats` (locale, axis type, each series' type), which
 *   ECharts ignores.
 * - `compact` (a phone's width): 13 px type, the title alone on top and the legend below the plot
 *   (wrapping), dates abbreviated (`Jan 2026`), x labels thinned so none overlap and long ones cut with an
 *   ellipsis, fewer y ticks; a pie's slices labelled with their share only (the legend names them).
 *
 * @param data the sheet's header, data rows (raw CSV values) and column types
 * @param style from {@link chartStyle}
 * @param locale BCP 47 tag the labels are formatted in
 * @param compact the compact layout (undefined: the wide one, for a desktop's box)
 * @throws Error when `x` or a `y` column is not a column of `data` (publishing guarantees they are)
 */
export function chartOption(chart: Chart, data: { columns: string[]; rows: string[][]; types: Record<string, CellType> }, style: ChartStyle, locale: string, compact?: CompactLayout): Record<string, unknown> {
  const index = (name: string) => {
    const i = data.columns.indexOf(name);
    if (i < 0) throw new Error(`Chart "${chart.name}": the sheet has no column "${name}"; its columns are ${data.columns.join(", ")}`);
    return i;
  };
  const xi = index(chart.x);
  const ys = chart.y.map((name) => ({ name, i: index(name), type: data.types[name] ?? ({ type: "number" } as CellType) }));
  const xType = data.types[chart.x] ?? { type: "text" };
  const rows = chart.type === "pie" ? data.rows.slice(0, 5) : data.rows;
  const labels = (compact && xType.type === "date" ? shortDates(rows.map((r) => r[xi] ?? ""), locale) : undefined) ?? rows.map((r) => formatCell(r[xi] ?? "", xType, locale).text);
  const value = (raw: string | undefined) => {
    if (raw === undefined || raw === "") return null;
    const n = Number(raw);
    return Number.isFinite(n) ? n : null;
  };
  const title = chart.title ?? chart.name;
  const legend = ys.length > 1;
  // one value axis for every series: formatted as their type when they share it; plain numbers when
  // they do not (a percent axis read 1,200 units as 120,000%)
  const shared = ys.every((y) => JSON.stringify(y.type) === JSON.stringify(ys[0]!.type));
  const formats: ChartFormats = { locale, axis: shared ? ys[0]!.type : { type: "number" }, series: ys.map((y) => y.type) };
  const base: Record<string, unknown> = {
    animation: false,
    aria: { enabled: true },
    title: { text: title, left: 0, top: 0, textStyle: { fontSize: compact ? COMPACT_FONT + 1 : 15, fontWeight: 600 }, ...(compact ? { width: compact.width, overflow: "truncate" } : {}) },
    tooltip: { trigger: chart.type === "pie" ? "item" : "axis", confine: true, ...(chart.type === "bar" ? { axisPointer: { type: "shadow" } } : {}) },
    [CHART_FORMATS_KEY]: formats,
  };

  if (chart.type === "pie") {
    const y = ys[0]!;
    // compact: the slices' names in a legend below (names beside a small pie were cut at the edges)
    const rowsOfLegend = compact ? legendRows(labels, compact.width) : 0;
    return applyChartStyle(
      {
        ...base,
        ...(compact ? { legend: compactLegend(labels) } : {}),
        series: [
          {
            type: "pie",
            name: y.name,
            radius: compact ? ["36%", "62%"] : ["42%", "68%"],
            center: compact ? ["50%", `${Math.round(50 - rowsOfLegend * 4)}%`] : ["50%", "56%"],
            avoidLabelOverlap: true,
            percentPrecision: 1,
            itemStyle: { borderWidth: 2, borderRadius: 4 },
            label: compact ? { formatter: "{d}%", fontSize: COMPACT_FONT, lineHeight: 16 } : { formatter: "{b}\n{d}%", fontSize: 12, lineHeight: 16 },
            ...(compact ? { labelLine: { length: 6, length2: 6 } } : {}),
            data: rows.map((r, k) => ({ name: labels[k], value: value(r[y.i]) })),
          },
        ],
      },
      style,
    );
  }

  const stacked = (chart.type === "bar" || chart.type === "area") && chart.stacked === true;
  const many = rows.length > SAMPLE_ABOVE;
  const series = ys.map((y) => ({
    type: chart.type === "bar" ? "bar" : "line",
    name: y.name,
    data: rows.map((r) => value(r[y.i])),
    progressive: 0, // draw everything in one pass (server rendering takes one frame)
    ...(stacked ? { stack: "total" } : {}),
    ...(chart.type === "bar"
      ? { barMaxWidth: 48, itemStyle: { borderRadius: stacked ? 0 : [3, 3, 0, 0] }, ...(many ? { sampling: "average", large: true } : {}) }
      : {
          showSymbol: rows.length <= 48,
          symbol: "circle",
          symbolSize: 6,
          lineStyle: { width: 2 },
          connectNulls: false,
          ...(chart.type === "area" ? { areaStyle: { opacity: stacked ? 0.75 : 0.18 } } : {}),
          ...(many ? { sampling: "lttb" } : {}),
        }),
  }));
  if (compact) {
    // the legend below the plot, wrapping; the grid leaves its rows free
    const rowsOfLegend = legend ? legendRows(ys.map((y) => y.name), compact.width) : 0;
    const bottom = rowsOfLegend ? rowsOfLegend * 20 + 8 : 2;
    // an x label may take its share of the plot's width (at least 64 px) and is cut with an ellipsis past it
    const slot = Math.max(64, Math.floor((compact.width - 56) / Math.min(4, Math.max(1, labels.length))));
    return applyChartStyle(
      {
        ...base,
        ...(legend ? { legend: compactLegend(ys.map((y) => y.name)) } : {}),
        grid: { left: 0, right: chart.type === "bar" ? 4 : Math.min(slot / 2, Math.max(8, halfLabel(labels.at(-1)))), top: 30, bottom, containLabel: true },
        xAxis: { type: "category", data: labels, boundaryGap: chart.type === "bar", axisTick: { alignWithLabel: true }, axisLabel: { fontSize: COMPACT_FONT, hideOverlap: true, width: slot, overflow: "truncate" } },
        // as many y ticks as the plot's height has room for, 28 px apart at least (a deck's box is short)
        yAxis: { type: "value", splitNumber: Math.max(1, Math.min(3, Math.floor((compact.height - 30 - bottom - 22) / 28))), axisLabel: { fontSize: COMPACT_FONT, hideOverlap: true }, splitLine: { lineStyle: { type: "dashed" } } },
        series,
      },
      style,
    );
  }
  return applyChartStyle(
    {
      ...base,
      ...(legend ? { legend: { top: 26, left: 0, icon: "roundRect", itemWidth: 12, itemHeight: 8, itemGap: 16 } } : {}),
      // line and area charts put the first and last x labels, centred, on the plot's edges: room for half of each beside it
      // (`containLabel` makes room for the y labels only)
      grid: { left: chart.type === "bar" ? 4 : halfLabel(labels[0]), right: chart.type === "bar" ? 12 : Math.max(12, halfLabel(labels.at(-1))), top: legend ? 64 : 40, bottom: 4, containLabel: true },
      xAxis: { type: "category", data: labels, boundaryGap: chart.type === "bar", axisTick: { alignWithLabel: true }, axisLabel: { hideOverlap: true } },
      yAxis: { type: "value", splitLine: { lineStyle: { type: "dashed" } } },
      series,
    },
    style,
  );
}


/**
 * Draws an option as SVG on the server (echarts `ssr: true`, no DOM): the `<svg>` keeps its `viewBox`
 * (`0 0 width height`) and has `width="100%" height="100%"` so it scales to its box, `role="img"` and an
 * `aria-label` with the chart's title. Formatter functions are added from the option's formats.
 *
 * @param option a JSON option ({@link chartOption})
 * @param size the drawing size in CSS pixels (also the viewBox)
 * @returns the SVG markup
 * @throws Error when ECharts refuses the option
 */
export function renderChartSvg(option: Record<string, unknown>, size: { width: number; height: number }): string {
  const width = Math.max(1, Math.round(size.width));
  const height = Math.max(1, Math.round(size.height));
  const chart = echarts().init(null, null, { renderer: "svg", ssr: true, width, height });
  let svg: string;
  try {
    chart.setOption(withChartFormatters(option) as Echarts.EChartsOption);
    svg = chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
  const title = [option.title].flat()[0] as { text?: unknown } | undefined;
  const label = typeof title?.text === "string" && title.text ? title.text : "Chart";
  return svg.replace(/^<svg\b([^>]*)>/, (_whole, attrs: string) => {
    let a = attrs.replace(/\s(?:width|height|role|aria-label)="[^"]*"/g, "");
    if (!/\sviewBox=/.test(a)) a += ` viewBox="0 0 ${width} ${height}"`;
    return `<svg${a} width="100%" height="100%" role="img" aria-label="${escapeHtml(label)}">`;
  });
}

/**
 * A workbook's chart (spec 2.8) as its ECharts option and server SVG, for the pages, previews and embeds:
 * drawn from the chart's sheet rows with the workbook's theme, in the mode the theme pins, else `mode`.
 * @param table the chart's sheet (header and data rows, raw CSV values)
 * @param opts.size the SVG's box in px (it scales by its viewBox)
 * @param opts.compact draw the compact layout ({@link chartOption}) at `size`, for a narrow box (a phone)
 */
export function workbookChart(
  book: { theme?: Theme; sheets: ReadonlyArray<{ name: string; types: Record<string, CellType> }> },
  chart: Chart,
  table: { columns: string[]; rows: string[][] },
  opts: { mode: "light" | "dark"; locale: string; size: { width: number; height: number }; compact?: boolean },
): { option: Record<string, unknown>; svg: string } {
  const types = book.sheets.find((s) => s.name === chart.sheet)?.types ?? {};
  const option = chartOption(chart, { columns: table.columns, rows: table.rows, types }, chartStyle(book.theme, book.theme?.mode ?? opts.mode), opts.locale, opts.compact ? opts.size : undefined);
  return { option, svg: renderChartSvg(option, opts.size) };
}

/**
 * The markup that shows a chart in a page (documents, decks, sheets): the server SVG, replaced by the live
 * chart when render/browser/charts.ts runs (it finds `[data-svc-chart]` and reads the JSON option from
 * its `<script type="application/json">` child). `<` in the JSON is escaped so it cannot close the script.
 * The box is `.svc-chart` (give it a height, or let the SVG's aspect ratio set it).
 *
 * @param chart `option` from {@link chartOption}, `svg` from {@link renderChartSvg}, `label` the accessible name
 */
export function chartEmbedHtml(chart: { option: Record<string, unknown>; svg: string; label: string }): string {
  return `<div class="svc-chart" data-svc-chart role="figure" aria-label="${escapeHtml(chart.label)}"><script type="application/json">${scriptJson(chart.option)}</script>${chart.svg}</div>`;
}
