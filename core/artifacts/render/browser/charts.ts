/**
 * Live charts in the browser (spec 2.8, 2.9, 2.10): every `[data-svc-chart]` element (written by
 * `chartEmbedHtml`, render/chart.ts) holds its ECharts option as JSON in a `<script type="application/json">`
 * child and the server's SVG. Once the element has a size, the SVG is replaced by a live ECharts chart
 * (SVG renderer) drawn with the page's own theme tokens (light or dark, read from CSS), with tooltips
 * whose values are formatted like the sheet's cells; it follows the element's size and the colour scheme.
 *
 * Needs echarts' browser build loaded first as the global `echarts` (`/assets/pages/echarts.js`).
 * Bundled by render/assets.ts as `charts` (an IIFE). `window.svcCharts.scan()` starts charts added later.
 */
import { applyChartStyle, withChartFormatters, type ChartStyle } from "../format";

declare const echarts: typeof import("echarts");

type Obj = Record<string, unknown>;
interface LiveChart {
  el: HTMLElement;
  option: Obj;
  chart?: ReturnType<typeof echarts.init>;
}

const charts: LiveChart[] = [];
let pixel: CanvasRenderingContext2D | null | undefined;

/** A resolved CSS colour as hex or rgba (via one canvas pixel: oklch and friends come out as sRGB). */
function toRgb(css: string): string | undefined {
  pixel ??= Object.assign(document.createElement("canvas"), { width: 1, height: 1 }).getContext("2d", { willReadFrequently: true });
  if (!pixel) return undefined;
  pixel.clearRect(0, 0, 1, 1);
  pixel.fillStyle = "#000000";
  pixel.fillStyle = css;
  pixel.fillRect(0, 0, 1, 1);
  const [r, g, b, a] = pixel.getImageData(0, 0, 1, 1).data as unknown as [number, number, number, number];
  if (a === 0) return undefined;
  return a === 255 ? `#${[r, g, b].map((n) => n.toString(16).padStart(2, "0")).join("")}` : `rgba(${r}, ${g}, ${b}, ${(a / 255).toFixed(3)})`;
}

/**
 * The chart style from the theme tokens as they apply at `el` (its light-dark() pairs resolved by the
 * element's colour scheme); tokens the page does not define keep the option's colours.
 */
function liveStyle(el: HTMLElement, option: Obj): ChartStyle {
  const text = (option.textStyle ?? {}) as Obj;
  const xAxis = [option.xAxis ?? option.yAxis ?? {}].flat()[0] as Obj;
  const current: ChartStyle = {
    palette: Array.isArray(option.color) ? (option.color as string[]) : [],
    foreground: String(text.color ?? "#0f172a"),
    muted: String(((xAxis.axisLabel ?? {}) as Obj).color ?? "#475569"),
    border: String((((xAxis.axisLine ?? {}) as Obj).lineStyle as Obj | undefined)?.color ?? "#e2e8f0"),
    background: String(((option.tooltip ?? {}) as Obj).backgroundColor ?? "#ffffff"),
    fontFamily: String(text.fontFamily ?? "sans-serif"),
  };
  const computed = getComputedStyle(el);
  const probe = document.createElement("span");
  probe.hidden = true;
  el.append(probe);
  const color = (token: string, fallback: string) => {
    if (!computed.getPropertyValue(token).trim()) return fallback;
    probe.style.color = `var(${token})`;
    return toRgb(getComputedStyle(probe).color) ?? fallback;
  };
  const style: ChartStyle = {
    palette: [1, 2, 3, 4, 5].map((n, i) => color(`--chart-${n}`, current.palette[i] ?? "#4f46e5")),
    foreground: color("--foreground", current.foreground),
    muted: color("--muted-foreground", current.muted),
    border: color("--border", current.border),
    background: color("--background", current.background),
    fontFamily: computed.getPropertyValue("--font-sans").trim() || current.fontFamily,
  };
  probe.remove();
  return style;
}

/** Draws (or redraws) one chart with the live style and the formatters. */
function draw(c: LiveChart): void {
  c.chart!.setOption(withChartFormatters(applyChartStyle(c.option, liveStyle(c.el, c.option))) as never, { notMerge: true });
}

function observe(c: LiveChart): void {
  new ResizeObserver(() => {
    const { width, height } = c.el.getBoundingClientRect();
    if (width === 0 || height === 0) return; // hidden (e.g. an inactive tab): start when shown
    if (!c.chart) {
      for (const svg of c.el.querySelectorAll(":scope > svg")) svg.remove();
      c.chart = echarts.init(c.el, null, { renderer: "svg" });
      draw(c);
    } else c.chart.resize();
  }).observe(c.el);
}

/** Starts every chart of the page that has not started yet. */
function scan(): void {
  if (typeof echarts === "undefined") {
    console.error("charts: the echarts global is missing (load /assets/pages/echarts.js first)");
    return;
  }
  for (const el of document.querySelectorAll<HTMLElement>("[data-svc-chart]:not([data-live])")) {
    const json = el.querySelector(':scope > script[type="application/json"]')?.textContent;
    if (!json) continue;
    el.setAttribute("data-live", "");
    try {
      const c: LiveChart = { el, option: JSON.parse(json) as Obj };
      charts.push(c);
      observe(c);
    } catch (err) {
      console.error("charts:", err);
    }
  }
}

/** Redraws the started charts with the tokens as they now apply (colour scheme or theme changed). */
function restyle(): void {
  for (const c of charts) if (c.chart) draw(c);
}

matchMedia("(prefers-color-scheme: dark)").addEventListener("change", restyle);
new MutationObserver(restyle).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme", "class"] });
(window as unknown as { svcCharts: { scan(): void; restyle(): void } }).svcCharts = { scan, restyle };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", scan);
else scan();
