/**
 * The body of a sheet artifact's page (spec 2.7, 2.8, 4.1 `/artifacts/{id}?v=&part=`): one tab per sheet
 * and per chart, each sheet's grid (a static table of its first rows, which render/browser/sheet.ts turns
 * into a virtualized grid fed by the rows API), and each chart's server SVG (which render/browser/charts.ts
 * replaces by the live chart). Classes are prefixed `sheet-`; render/sheet.css styles them. Every name and
 * value is user text and is escaped.
 */
import type { SheetInfo } from "../sheet-data";
import { chartEmbedHtml } from "./chart";
import { escapeHtml, scriptJson } from "./html";
import { MAX_FROZEN_DATA_ROWS, artifactFileUrl, artifactPageHref, columnLetters, columnWidth, formatCell, type CellType, type SheetGridConfig } from "./format";

/** A sheet of the view: what `SheetData.workbook` answers for it, plus its first data rows (raw values; the grid fetches the rest). */
export type SheetViewSheet = SheetInfo & { firstRows: string[][] };

/** A chart of the view: `option` from `chartOption`, `svg` from `renderChartSvg`. */
export interface SheetViewChart {
  name: string;
  title: string;
  option: Record<string, unknown>;
  svg: string;
}

/** What {@link renderSheetView} draws. */
export interface SheetViewInput {
  artifactId: string;
  version: number;
  /** True when the reader opened this version by number (`?v=`): the tabs' links keep it; else they follow the latest (spec 9). */
  pinned?: boolean;
  sheets: SheetViewSheet[];
  charts: SheetViewChart[];
  /** The selected tab: a sheet's name, `<sheet>!<range>` (selects the sheet), or `chart=<name>`; default the first sheet. */
  part?: string;
  /** The reader's locale (BCP 47), for the server-rendered cells; the browser formats in `navigator.language`. */
  locale: string;
  /** The path prefix the service is served under (`Config.basePath`): the rows API, cells' links and images go under it. Default none. */
  basePath?: string;
}


/** The rows API of a sheet, under `basePath` (the service's path prefix). */
export function sheetRowsUrl(artifactId: string, version: number, sheet: string, basePath = ""): string {
  return `${basePath}/api/artifacts/${encodeURIComponent(artifactId)}/versions/${version}/sheets/${encodeURIComponent(sheet)}/rows`;
}

/** Which tab `part` selects: `{ kind, index }`. */
function selected(input: SheetViewInput): { kind: "sheet" | "chart"; index: number } {
  const part = input.part;
  if (part !== undefined) {
    if (part.startsWith("chart=")) {
      const i = input.charts.findIndex((c) => c.name === part.slice(6));
      if (i >= 0) return { kind: "chart", index: i };
    }
    const exact = input.sheets.findIndex((s) => s.name === part);
    if (exact >= 0) return { kind: "sheet", index: exact };
    for (let bang = part.lastIndexOf("!"); bang > 0; bang = part.lastIndexOf("!", bang - 1)) {
      const i = input.sheets.findIndex((s) => s.name === part.slice(0, bang));
      if (i >= 0) return { kind: "sheet", index: i };
    }
  }
  return input.sheets.length ? { kind: "sheet", index: 0 } : { kind: "chart", index: 0 };
}

/** One cell's inner HTML. */
function cellHtml(raw: string, type: CellType, locale: string, artifactId: string, version: number, basePath: string): string {
  const f = formatCell(raw, type, locale);
  if (f.href) return `<a href="${escapeHtml(f.href)}" rel="noopener noreferrer" target="_blank">${escapeHtml(f.text)}</a>`;
  if (f.address) {
    const href = artifactPageHref(f.address, basePath);
    return href ? `<a href="${escapeHtml(href)}">${escapeHtml(f.text)}</a>` : escapeHtml(f.text);
  }
  if (f.image) return `<img src="${escapeHtml(artifactFileUrl(artifactId, version, f.image, basePath))}" alt="${escapeHtml(f.image)}" loading="lazy" decoding="async">`;
  return escapeHtml(f.text);
}

/** The gutter's width for row numbers up to `n`. */
export function gutterWidth(n: number): number {
  return Math.max(48, 20 + 8 * String(n).length);
}

/** One sheet's grid: the JSON config, and a static table of the first rows (what shows before the script runs). */
function gridHtml(input: SheetViewInput, sheet: SheetViewSheet, index: number): string {
  const basePath = input.basePath ?? "";
  const columns = sheet.columns.map((name) => ({ name, type: sheet.types[name] ?? ({ type: "text" } as CellType) }));
  const config: SheetGridConfig = {
    artifactId: input.artifactId,
    version: input.version,
    sheet: sheet.name,
    columns,
    widths: sheet.widths,
    frozenRows: sheet.frozenRows,
    frozenColumns: sheet.frozenColumns,
    total: sheet.total,
    rowsUrl: sheetRowsUrl(input.artifactId, input.version, sheet.name, basePath),
    basePath,
    rows: sheet.firstRows,
  };
  const gutter = gutterWidth(sheet.total + 1);
  const widths = columns.map((c) => columnWidth(c.name, c.type, sheet.widths));
  const frozenColumns = Math.min(sheet.frozenColumns, columns.length);
  const lefts: number[] = [];
  widths.reduce((left, w, c) => ((lefts[c] = left), left + w), gutter);
  const frozenData = Math.max(0, Math.min(sheet.frozenRows - 1, MAX_FROZEN_DATA_ROWS, sheet.total));
  const cellClass = (c: number, type: CellType, extra = "") => {
    const numeric = type.type === "number" || type.type === "currency" || type.type === "percent";
    return `sheet-cell${numeric ? " sheet-num" : ""}${type.type === "image" ? " sheet-image" : ""}${c < frozenColumns ? " sheet-frozen" : ""}${c === frozenColumns - 1 ? " sheet-frozen-last" : ""}${extra}`;
  };
  const sticky = (c: number) => (c < frozenColumns ? ` style="left:${lefts[c]}px"` : "");
  const row = (r: string[], d: number) =>
    `<tr class="sheet-row" aria-rowindex="${d + 2}"><th class="sheet-rownum" scope="row">${d + 2}</th>${columns
      .map((c, ci) => `<td class="${cellClass(ci, c.type)}"${sticky(ci)}>${cellHtml(r[ci] ?? "", c.type, input.locale, input.artifactId, input.version, basePath)}</td>`)
      .join("")}</tr>`;
  const shown = sheet.firstRows.slice(0, 200);
  const label = `${sheet.name}: ${sheet.total.toLocaleString(input.locale || "en-US")} rows, ${columns.length} columns`;
  const tableWidth = gutter + widths.reduce((a, b) => a + b, 0);
  return `<div class="sheet-grid" data-svc-sheet>
<script type="application/json" class="sheet-config">${scriptJson(config)}</script>
<div class="sheet-scroll" tabindex="0" role="region" aria-label="${escapeHtml(label)}">
<table class="sheet-table${sheet.frozenRows > 0 ? " sheet-frozen-head" : ""}" style="width:${tableWidth}px" aria-rowcount="${sheet.total + 1}" aria-label="${escapeHtml(sheet.name)}">
<colgroup><col class="sheet-col-gutter" style="width:${gutter}px">${widths.map((w) => `<col style="width:${w}px">`).join("")}</colgroup>
<thead class="sheet-head">
<tr class="sheet-letters" aria-hidden="true"><td class="sheet-corner"></td>${columns.map((c, ci) => `<td class="${cellClass(ci, c.type, " sheet-letter")}"${sticky(ci)}>${columnLetters(ci)}</td>`).join("")}</tr>
<tr class="sheet-header" aria-rowindex="1"><th class="sheet-rownum" scope="row">1</th>${columns.map((c, ci) => `<th class="${cellClass(ci, c.type)}" scope="col"${sticky(ci)} title="${escapeHtml(c.name)}">${escapeHtml(c.name)}</th>`).join("")}</tr>
${shown.slice(0, frozenData).map((r, d) => row(r, d).replace('class="sheet-row"', 'class="sheet-row sheet-frozen-row"')).join("\n")}
</thead>
<tbody class="sheet-body">
${shown.slice(frozenData).map((r, k) => row(r, k + frozenData)).join("\n")}
</tbody>
</table>
</div>
<p class="sheet-status" aria-live="polite">${escapeHtml(`${sheet.total.toLocaleString(input.locale || "en-US")} ${sheet.total === 1 ? "row" : "rows"} · ${columns.length} ${columns.length === 1 ? "column" : "columns"}`)}${sheet.total > shown.length ? `<span class="sheet-status-more"> · showing the first ${shown.length}</span>` : ""}</p>
</div>`;
}

/**
 * The HTML of a sheet artifact's page body (spec 2.8, 4.1):
 *
 * ```html
 * <div class="sheet-view" data-svc-sheet-view>
 *   <div class="sheet-tabs" role="tablist">                      one <a role="tab" class="sheet-tab"> per sheet, then per chart,
 *                                                                 href "?part=<name>" / "?part=chart%3D<name>" ("?v=<version>&part=…" when pinned)
 *   <section class="sheet-panel" role="tabpanel" [hidden]>       per sheet:
 *     <div class="sheet-grid" data-svc-sheet>                      <script type="application/json" class="sheet-config"> (SheetGridConfig),
 *       <div class="sheet-scroll" role="region" tabindex="0">      <table class="sheet-table"> with colgroup, thead (letters row,
 *                                                                  header row, frozen rows), tbody of the first rows
 *       <p class="sheet-status">                                   "100,000 rows · 5 columns"
 *   <section class="sheet-panel sheet-chart-panel" role="tabpanel" [hidden]>   per chart:
 *     <figure class="sheet-chart"><div class="svc-chart" data-svc-chart>…JSON option + server SVG…</div></figure>
 * ```
 *
 * The selected tab comes from `part` (a sheet name, `Sheet!A1:B2`, or `chart=<name>`), else the first
 * sheet; the other panels are `hidden`. Without scripts the tabs are links and the grid shows the first
 * 200 rows; with render/browser/sheet.js the tabs switch in place and the grid scrolls every row.
 */
export function renderSheetView(input: SheetViewInput): string {
  const pick = selected(input);
  const tabs: string[] = [];
  const panels: string[] = [];
  const tab = (i: number, kind: "sheet" | "chart", part: string, text: string, on: boolean) =>
    `<a class="sheet-tab sheet-tab-${kind}" role="tab" id="sheet-tab-${i}" href="?${input.pinned ? `v=${input.version}&amp;` : ""}part=${escapeHtml(encodeURIComponent(part))}" aria-controls="sheet-panel-${i}" aria-selected="${on}" tabindex="${on ? 0 : -1}" data-part="${escapeHtml(part)}">${kind === "chart" ? '<span class="sheet-tab-icon" aria-hidden="true"></span>' : ""}${escapeHtml(text)}</a>`;
  input.sheets.forEach((sheet, i) => {
    const on = pick.kind === "sheet" && pick.index === i;
    tabs.push(tab(i, "sheet", sheet.name, sheet.name, on));
    panels.push(`<section class="sheet-panel" id="sheet-panel-${i}" role="tabpanel" aria-labelledby="sheet-tab-${i}"${on ? "" : " hidden"}>\n${gridHtml(input, sheet, i)}\n</section>`);
  });
  input.charts.forEach((chart, k) => {
    const i = input.sheets.length + k;
    const on = pick.kind === "chart" && pick.index === k;
    tabs.push(tab(i, "chart", `chart=${chart.name}`, chart.title || chart.name, on));
    panels.push(
      `<section class="sheet-panel sheet-chart-panel" id="sheet-panel-${i}" role="tabpanel" aria-labelledby="sheet-tab-${i}"${on ? "" : " hidden"}>\n<figure class="sheet-chart">${chartEmbedHtml({ option: chart.option, svg: chart.svg, label: chart.title || chart.name })}</figure>\n</section>`,
    );
  });
  return `<div class="sheet-view" data-svc-sheet-view>
<div class="sheet-tabs" role="tablist" aria-label="Sheets and charts">${tabs.join("")}</div>
${panels.join("\n")}
</div>`;
}
