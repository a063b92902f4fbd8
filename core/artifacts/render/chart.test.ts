/**
 * Workbook charts (spec 2.8) as ECharts options and server SVG (echarts 6, no DOM): every chart type,
 * theme colours (oklch converted), accessibility attributes, and a 100,000-row sheet.
 */
import { describe, expect, it } from "vitest";
import { chartEmbedHtml, chartOption, chartStyle, renderChartSvg } from "./chart";
import type { CellType } from "./format";
import type { Chart } from "../workbook-schema";

const TYPES: Record<string, CellType> = { Month: { type: "date" }, Revenue: { type: "currency", currency: "USD" }, Costs: { type: "currency", currency: "USD" }, Margin: { type: "percent", decimals: 1 }, Region: { type: "text" } };
const DATA = {
  columns: ["Month", "Revenue", "Costs", "Margin", "Region"],
  rows: [
    ["2026-07-31", "214800", "133900", "0.3766", "North"],
    ["2026-08-31", "209900", "131200", "0.375", "South"],
    ["2026-09-30", "226400", "", "0.3913", "East"],
  ],
  types: TYPES,
};
const LIGHT = chartStyle(undefined, "light");
const SIZE = { width: 640, height: 360 };
const chart = (c: Partial<Chart> & Pick<Chart, "type">): Chart => ({ name: "Revenue by month", sheet: "Revenue", x: "Month", y: ["Revenue", "Costs"], ...c }) as Chart;
const texts = (svg: string) => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!.replace(/\s/g, " "));
/** Bars and points carry the series index and data index they draw. */
const marks = (svg: string, series: number) => [...svg.matchAll(new RegExp(`ecmeta_series_index="${series}" ecmeta_data_index="(\\d+)" ecmeta_ssr_type="chart"`, "g"))].map((m) => Number(m[1]));

describe("the value axis of series of different types", () => {
  it("formats it as plain numbers when the series' types differ (percent and units), as their type when they share one", () => {
    const mixed = chartOption(chart({ type: "line", y: ["Margin", "Units"] }), { ...DATA, columns: [...DATA.columns, "Units"], rows: DATA.rows.map((r, i) => [...r, String(1200 + i)]), types: { ...TYPES, Units: { type: "number" } } }, LIGHT, "en-US") as any;
    expect(mixed.svcFormats.axis).toEqual({ type: "number" });
    expect(mixed.svcFormats.series).toEqual([{ type: "percent", decimals: 1 }, { type: "number" }]);
    expect((chartOption(chart({ type: "bar" }), DATA, LIGHT, "en-US") as any).svcFormats.axis).toEqual({ type: "currency", currency: "USD" });
  });
});

describe("chartStyle (spec 2.11)", () => {
  it("uses the kit's colours, light and dark", () => {
    expect(LIGHT).toMatchObject({ palette: ["#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#e11d48"], foreground: "#0f172a", muted: "#475569", border: "#e2e8f0", background: "#ffffff" });
    expect(chartStyle(undefined, "dark")).toMatchObject({ palette: ["#818cf8", "#38bdf8", "#34d399", "#fbbf24", "#fb7185"], foreground: "#e2e8f0", background: "#0b1120" });
    expect(LIGHT.fontFamily).toContain("Inter");
  });

  it("converts theme colours ECharts cannot read (oklch, hsl, light-dark, translucent) and keeps the defaults for the rest", () => {
    const theme = { tokens: { "--chart-1": "oklch(0.62 0.17 255)", "--chart-2": "hsl(160 60% 40%)", "--chart-3": "light-dark(#111111, #eeeeee)", "--chart-4": "color-mix(in oklch, red, blue)", "--border": "rgb(0 0 0 / 50%)", "--font-sans": '"Source Sans 3", sans-serif' } };
    const light = chartStyle(theme, "light");
    expect(light.palette[0]).toBe("#3186e9");
    expect(light.palette[1]).toBe("#29a37a");
    expect(light.palette[2]).toBe("#111111");
    expect(chartStyle(theme, "dark").palette[2]).toBe("#eeeeee");
    expect(light.palette[3]).toBe("#f59e0b"); // color-mix() is not read: the kit's
    expect(light.border).toBe("rgba(0, 0, 0, 0.5)");
    expect(light.fontFamily).toBe('"Source Sans 3", sans-serif');
    const svg = renderChartSvg(chartOption(chart({ type: "bar" }), DATA, light, "en-US"), SIZE);
    expect(svg).toContain('fill="#3186e9"');
    expect(svg).not.toContain("oklch");
    expect(svg).toContain("font-family:'Source Sans 3', sans-serif"); // no double quote inside style=""
  });
});

describe("chartOption + renderChartSvg (spec 2.8)", () => {
  it("bar: one series per y column, x labels in the locale, values as numbers, title and legend", () => {
    const option = chartOption(chart({ type: "bar", title: "Revenue & costs <Q3>" }), DATA, LIGHT, "en-US") as any;
    expect(JSON.parse(JSON.stringify(option))).toEqual(option); // JSON only
    expect(option.xAxis[0].data).toEqual(["Jul 31, 2026", "Aug 31, 2026", "Sep 30, 2026"]);
    expect(option.series.map((s: any) => [s.type, s.name, s.data, s.stack])).toEqual([
      ["bar", "Revenue", [214800, 209900, 226400], undefined],
      ["bar", "Costs", [133900, 131200, null], undefined],
    ]);
    expect(option.animation).toBe(false);
    expect(option.legend).toHaveLength(1);
    const svg = renderChartSvg(option, SIZE);
    expect(svg).toMatch(/^<svg [^>]*viewBox="0 0 640 360" width="100%" height="100%" role="img" aria-label="Revenue &amp; costs &lt;Q3&gt;">/);
    expect(texts(svg)).toEqual(expect.arrayContaining(["Jul 31, 2026", "Sep 30, 2026", "Revenue", "Costs", "USD 200K", "Revenue &amp; costs &lt;Q3&gt;"]));
    expect(marks(svg, 0)).toEqual([0, 1, 2]);
    expect(marks(svg, 1)).toEqual([0, 1]); // the empty cell is a gap
  });

  it("stacked bar: the series share a stack", () => {
    const option = chartOption(chart({ type: "bar", stacked: true }), DATA, LIGHT, "de-DE") as any;
    expect(option.series.map((s: any) => s.stack)).toEqual(["total", "total"]);
    const svg = renderChartSvg(option, SIZE);
    expect(texts(svg)).toEqual(expect.arrayContaining(["31.07.2026", "30.09.2026", "Revenue", "Costs"]));
    expect(texts(svg).some((t) => /USD$/.test(t))).toBe(true); // de-DE puts the code after
    expect(marks(svg, 0)).toEqual([0, 1, 2]);
  });

  it("line: title from the name, one series without a legend, percent axis", () => {
    const option = chartOption(chart({ type: "line", name: "Margin", y: ["Margin"] }), DATA, LIGHT, "en-US") as any;
    expect(option.title[0].text).toBe("Margin");
    expect(option.legend).toBeUndefined();
    expect(option.series[0]).toMatchObject({ type: "line", data: [0.3766, 0.375, 0.3913] });
    expect(option.series[0].areaStyle).toBeUndefined();
    const svg = renderChartSvg(option, SIZE);
    expect(texts(svg)).toEqual(expect.arrayContaining(["Margin", "Aug 31, 2026"]));
    expect(texts(svg).some((t) => /^\d+(\.\d)?%$/.test(t))).toBe(true);
    expect(marks(svg, 0)).toEqual([0, 1, 2]);
  });

  it("line and area: room beside the plot for the first and last x labels, which sit centred on its edges", () => {
    /** Each x label's text and x position (its centre). */
    const xLabels = (svg: string) => [...svg.matchAll(/<text[^>]*text-anchor="middle"[^>]*translate\(([\d.]+) [\d.]+\)[^>]*>(\w{3} \d+, 2026)<\/text>/g)].map((m) => [m[2]!, Number(m[1])] as const);
    const halfWidth = 12 * 4; // "Sep 30, 2026" is up to ~95 px wide in a wide fallback font
    for (const type of ["line", "area"] as const) {
      const labels = xLabels(renderChartSvg(chartOption(chart({ type, y: ["Margin"] }), DATA, LIGHT, "en-US"), SIZE));
      expect(labels.map(([text]) => text)).toEqual(["Jul 31, 2026", "Aug 31, 2026", "Sep 30, 2026"]);
      expect(labels[0]![1]).toBeGreaterThanOrEqual(halfWidth);
      expect(labels[2]![1]).toBeLessThanOrEqual(SIZE.width - halfWidth);
    }
  });

  it("area and stacked area: lines with their area filled", () => {
    for (const stacked of [false, true]) {
      const option = chartOption(chart({ type: "area", stacked }), DATA, LIGHT, "en-US") as any;
      expect(option.series.every((s: any) => s.type === "line" && s.areaStyle && (s.stack === "total") === stacked)).toBe(true);
      const svg = renderChartSvg(option, SIZE);
      expect(svg).toMatch(/fill="#4f46e5" fill-opacity="0\.\d+"/);
      expect(texts(svg)).toEqual(expect.arrayContaining(["Revenue", "Costs", "Jul 31, 2026"]));
    }
  });

  it("pie: one slice per row (at most five) with its share", () => {
    const rows = [...DATA.rows, ["2026-10-31", "1", "1", "0", "West"], ["2026-11-30", "1", "1", "0", "Mid"], ["2026-12-31", "1", "1", "0", "Far"]];
    const option = chartOption(chart({ type: "pie", x: "Region", y: ["Revenue"] }), { ...DATA, rows }, LIGHT, "en-US") as any;
    expect(option.series[0].data).toEqual([
      { name: "North", value: 214800 },
      { name: "South", value: 209900 },
      { name: "East", value: 226400 },
      { name: "West", value: 1 },
      { name: "Mid", value: 1 },
    ]);
    const svg = renderChartSvg(option, SIZE);
    expect(texts(svg)).toEqual(expect.arrayContaining(["North", "South", "East", "34.8%"]));
    expect(svg).toContain('stroke="#ffffff"'); // slices separated by the background
  });

  it("compact (a phone's width): 13 px type, dates abbreviated, the legend below the plot and wrapping, x labels cut to their share; JSON only", () => {
    const months = Array.from({ length: 12 }, (_, i) => [`2026-${String(i + 1).padStart(2, "0")}-28`, String(200000 + i * 1000), String(100000 + i * 500), "0.4", "North"]);
    const data = { ...DATA, rows: months };
    const compact = { width: 340, height: 300 };
    const option = chartOption(chart({ type: "bar" }), data, LIGHT, "en-US", compact) as any;
    expect(JSON.parse(JSON.stringify(option))).toEqual(option);
    expect(option.xAxis[0].data.slice(0, 3)).toEqual(["Jan 2026", "Feb 2026", "Mar 2026"]); // one date a month: month and year (a two-digit year would read as a day)
    expect(option.xAxis[0].axisLabel).toMatchObject({ fontSize: 13, hideOverlap: true, overflow: "truncate" });
    expect(option.yAxis[0].axisLabel.fontSize).toBe(13);
    expect(option.legend[0]).toMatchObject({ bottom: 0, left: 0, textStyle: { fontSize: 13 } });
    expect(option.grid.bottom).toBeGreaterThanOrEqual(28); // the legend's row is kept free
    const svg = renderChartSvg(option, compact);
    expect(texts(svg)).toEqual(expect.arrayContaining(["Jan 2026", "Revenue", "Costs"]));
    // the wide layout keeps its medium dates and the legend on top
    const wide = chartOption(chart({ type: "bar" }), data, LIGHT, "en-US") as any;
    expect(wide.xAxis[0].data[0]).toBe("Jan 28, 2026");
    expect(wide.legend[0].top).toBe(26);
    // dates of one month: month and day; over years with repeats: the locale's short date
    expect((chartOption(chart({ type: "line" }), DATA, LIGHT, "de-DE", compact) as any).xAxis[0].data).toEqual(["Juli 2026", "Aug. 2026", "Sept. 2026"]);
    const days = { ...DATA, rows: [["2026-07-01", "1", "1", "0", "A"], ["2026-07-02", "2", "1", "0", "B"]] };
    expect((chartOption(chart({ type: "line" }), days, LIGHT, "en-US", compact) as any).xAxis[0].data).toEqual(["Jul 1", "Jul 2"]);
    const years = { ...DATA, rows: [["2025-07-01", "1", "1", "0", "A"], ["2026-07-01", "2", "1", "0", "B"], ["2026-07-02", "2", "1", "0", "B"]] };
    expect((chartOption(chart({ type: "line" }), years, LIGHT, "en-US", compact) as any).xAxis[0].data).toEqual(["7/1/25", "7/1/26", "7/2/26"]);
    // a pie: shares on the slices, names in the legend below
    const pie = chartOption(chart({ type: "pie", x: "Region", y: ["Revenue"] }), DATA, LIGHT, "en-US", compact) as any;
    expect(pie.series[0].label.formatter).toBe("{d}%");
    expect(pie.legend[0].data.map((d: any) => d.name)).toEqual(["North", "South", "East"]);
  });

  it("compact: the legend's items as wide as their names in a wide fallback font, wrapping rows (they ran into each other)", () => {
    const columns = ["Month", "Recurring revenue", "Professional services", "Hardware costs"];
    const rows = [["2026-01-28", "1", "2", "3"], ["2026-02-28", "2", "3", "4"]];
    const option = chartOption(chart({ type: "bar", y: columns.slice(1) }), { columns, rows, types: { Month: { type: "date" } } }, LIGHT, "en-US", { width: 340, height: 300 }) as any;
    const svg = renderChartSvg(option, { width: 340, height: 300 });
    /** Each legend name's left edge and row (its y). */
    const items = columns.slice(1).map((name) => {
      const m = new RegExp(`translate\\(([\\d.]+) ([\\d.]+)\\)[^>]*>${name}<`).exec(svg)!;
      return { name, x: Number(m[1]), y: Number(m[2]) };
    });
    // 0.62 em a character at 13 px: "Recurring revenue" needs 138 px, then the next one starts past it
    const [first, second, third] = items;
    expect(second!.y === first!.y ? second!.x - first!.x : Infinity).toBeGreaterThanOrEqual(138);
    expect(third!.y === second!.y ? third!.x - second!.x : Infinity).toBeGreaterThanOrEqual(Math.ceil(21 * 13 * 0.62));
    expect(new Set(items.map((i) => i.y)).size).toBe(2); // two rows in 340 px
  });

  it("refuses a column the sheet does not have", () => {
    expect(() => chartOption(chart({ type: "bar", y: ["Nope"] }), DATA, LIGHT, "en-US")).toThrow(/no column "Nope"/);
  });

  it("embeds the option safely beside the SVG", () => {
    const option = chartOption(chart({ type: "bar", title: "</script><b>" }), DATA, LIGHT, "en-US");
    const html = chartEmbedHtml({ option, svg: "<svg></svg>", label: 'A "chart"' });
    expect(html).toMatch(/^<div class="svc-chart" data-svc-chart role="figure" aria-label="A &quot;chart&quot;"><script type="application\/json">/);
    expect(html.match(/<\/script>/g)).toHaveLength(1);
    expect(JSON.parse(/<script[^>]*>(.*)<\/script>/.exec(html)![1]!)).toEqual(option);
  });

  it("draws a 100,000-row sheet with five series in reasonable time", () => {
    const n = 100_000;
    const columns = ["Day", "A", "B", "C", "D", "E"];
    const rows = Array.from({ length: n }, (_, i) => [`Day ${i + 1}`, ...[1, 2, 3, 4, 5].map((k) => String(1000 + ((i * k) % 997)))]);
    const types: Record<string, CellType> = Object.fromEntries(columns.map((c, i) => [c, i === 0 ? { type: "text" } : { type: "number" }]));
    const timings: Record<string, number> = {};
    for (const type of ["line", "bar", "area"] as const) {
      const started = performance.now();
      const option = chartOption(chart({ type, x: "Day", y: ["A", "B", "C", "D", "E"], ...(type !== "line" ? { stacked: true } : {}) }), { columns, rows, types }, LIGHT, "en-US") as any;
      const svg = renderChartSvg(option, { width: 960, height: 420 });
      timings[type] = Math.round(performance.now() - started);
      expect(option.series).toHaveLength(5);
      expect(option.series[0].data).toHaveLength(n);
      expect(svg.length).toBeLessThan(2_000_000); // sampled: not 500,000 marks
      expect(texts(svg)).toEqual(expect.arrayContaining(["A", "E", "Day 1"]));
    }
    console.log(`100,000 rows × 5 series, option + SVG (ms): ${JSON.stringify(timings)}`);
    for (const ms of Object.values(timings)) expect(ms).toBeLessThan(15_000); // ~1–2 s each alone; generous for a loaded machine
  });
});
