/**
 * What an artifact address shows where another artifact embeds it (spec 2.9, 2.10, 4.3): a range as a
 * table formatted as its sheet formats it, a chart as the chart (server SVG), a section as its text, an
 * image file as the image, a slide as its deck-check screenshot, a whole artifact as a card; with a
 * source line naming the target and whether it follows the latest version or a fixed one. Resolved as
 * the reader: a target the reader cannot open is `unavailable` (nothing of it is disclosed).
 */
import { inject, injectable } from "../../di";
import { isApiError } from "../../errors";
import { FileStore } from "../../files/file-store";
import { pageUrl, parseAddress, safePageUrl, type ArtifactAddress } from "../address";
import { columnLetter } from "../cell-range";
import { isImagePath } from "../content";
import type { Resolution, VersionOutline } from "../resolve";
import { SheetData } from "../sheet-data";
import { ArtifactStore, type ArtifactReader } from "../store";
import { chartInModes, workbookChart } from "./chart";
import { formatCell, type CellType } from "./format";
import { html, raw, type RawHtml } from "./html";
import { renderSection } from "./markdown";
import { quoted, withoutArtifactIds } from "./reader-text";

/** URLs the embedding page uses for an artifact's page, a version's file and a slide's screenshot. */
export interface EmbedLinks {
  file(artifactId: string, version: number, path: string): string;
  screenshot(artifactId: string, version: number, slide: number): string;
}

/**
 * How an embed is shown: the reader's locale (`Intl`), the colour mode charts are drawn for, and the
 * chart's box in px. `system`, for a page whose theme pins no mode: a chart is drawn in both, one SVG
 * each (`.svc-chart-light`, `.svc-chart-dark`), and the page's CSS shows the one of the reader's
 * `prefers-color-scheme` (core/artifacts/kit/kit.css, plugins/pages/assets/pages.css).
 *
 * A chart is also drawn in two layouts (in each mode): `.svc-chart-wide` at `chartSize`, and
 * `.svc-chart-compact` at `compactChartSize` in the compact layout (larger type, abbreviated and fewer x
 * labels, the legend below: render/chart.ts), which the CSS shows instead in a narrow box (a phone).
 */
export interface EmbedOptions {
  locale: string;
  mode: "light" | "dark" | "system";
  /** The wide drawing's size (default 720×360). */
  chartSize?: { width: number; height: number };
  /** The compact drawing's size (default {@link COMPACT_CHART_SIZE}); a box of fixed shape (a deck's) keeps `chartSize`'s aspect ratio. */
  compactChartSize?: { width: number; height: number };
  links: EmbedLinks;
  /** The path prefix the pages are served under (`Config.basePath`, `/svc`): links to artifact pages go under it. Default none. */
  basePath?: string;
}

/** The compact drawing's default size: about a phone's column, so its 13 px type reads at about that size. */
export const COMPACT_CHART_SIZE = { width: 340, height: 300 };

/**
 * What an address shows: `body` and `source` are safe HTML; `href` opens the target's page. `missing`:
 * the reader can open the artifact, but what the address names is not in it (any more: a later version
 * renamed or removed it); `message` says what it has instead (text, not HTML), naming the artifact by
 * its title, never its id (render/reader-text.ts). `unavailable`: anything
 * else the reader cannot see (nothing of it is disclosed).
 */
export type Shown =
  | { state: "unavailable"; address: string }
  | { state: "missing"; address: string; title: string; href: string; message: string }
  | { state: "shown"; address: string; resolution: Resolution; title: string; href: string; body: string; source: string };

/** The most rows a range or sheet embed shows (the rest are a link away). */
export const EMBED_MAX_ROWS = 50;

const KIND_LABEL: Record<string, string> = { document: "Document", sheet: "Sheet", slides: "Deck", file: "File" };

/** Renders what addresses show, as a given reader (spec 2.9, 2.10). */
@injectable()
export class EmbedRenderer {
  constructor(
    @inject(ArtifactStore) private readonly artifacts: ArtifactStore,
    @inject(SheetData) private readonly sheets: SheetData,
    @inject(FileStore) private readonly files: FileStore,
  ) {}

  /** What `address` points at for `reader`, or undefined when it names nothing the reader can open (or is malformed). */
  async resolve(reader: ArtifactReader, address: string): Promise<Resolution | undefined> {
    try {
      return await this.artifacts.resolve(reader, parseAddress(address));
    } catch (err) {
      if (isApiError(err) || (err as Error).name === "AddressError") return undefined;
      throw err;
    }
  }

  /**
   * What `address` shows to `reader`. Never throws for a target the reader cannot open or that names
   * nothing (any more): that is `unavailable`, or `missing` when the reader can open the artifact but not
   * find the part, file or version in it (with the resolver's message of what it has instead). A
   * malformed address is unavailable too (publishing refuses those, so only hand-built input has them).
   */
  async show(reader: ArtifactReader, address: string, opts: EmbedOptions): Promise<Shown> {
    let parsed: ArtifactAddress | undefined;
    let resolution: Resolution;
    try {
      parsed = parseAddress(address);
      resolution = await this.artifacts.resolve(reader, parsed);
    } catch (err) {
      if (!isApiError(err)) {
        if ((err as Error).name === "AddressError") return { state: "unavailable", address };
        throw err;
      }
      // the artifact itself, when this reader may open it: then saying what it lacks discloses nothing
      const artifact = parsed ? await this.artifacts.get(reader, parsed.artifactId).catch(() => undefined) : undefined;
      if (!artifact) return { state: "unavailable", address };
      // the reader's words: the artifact by its title, not its id (the API's error keeps the id)
      const message = withoutArtifactIds(err.message, (id) => (id === artifact.id ? quoted(artifact.title) : "another artifact"));
      return { state: "missing", address, title: artifact.title, href: pageUrl({ artifactId: artifact.id }, opts.basePath), message };
    }
    const body = await this.body(reader, parsed, resolution, opts);
    const title = resolution.artifact.title;
    const href = pageUrl(parsed, opts.basePath);
    return { state: "shown", address, resolution, title, href, body: body.value, source: sourceLine(resolution, href).value };
  }

  private async body(reader: ArtifactReader, address: ArtifactAddress, r: Resolution, opts: EmbedOptions): Promise<RawHtml> {
    const id = r.artifact.id;
    if (r.file) {
      if (isImagePath(r.file.path)) return html`<img src="${opts.links.file(id, r.version, r.file.path)}" alt="" loading="lazy">`;
      return card(r, `${r.file.path} · ${formatBytes(r.file.size)}`, opts.links.file(id, r.version, r.file.path));
    }
    const part = r.part;
    switch (part?.kind) {
      case "chart": {
        const book = await this.sheets.workbook(reader, id, r.version);
        const chart = book.charts.find((c) => c.name === part.chart)!;
        const table = await this.sheets.table(reader, id, r.version, chart.sheet);
        const drawn = (mode: "light" | "dark") => {
          const wide = workbookChart(book, chart, table, { mode, locale: opts.locale, size: opts.chartSize ?? { width: 720, height: 360 } }).svg;
          const compact = workbookChart(book, chart, table, { mode, locale: opts.locale, size: opts.compactChartSize ?? COMPACT_CHART_SIZE, compact: true }).svg;
          return `<span class="svc-chart-wide">${wide}</span><span class="svc-chart-compact">${compact}</span>`;
        };
        // the page's mode, else the one the sheet's own theme pins (both would draw the same), else both
        return raw(chartInModes(drawn, opts.mode !== "system" ? opts.mode : book.theme?.mode));
      }
      case "range":
      case "sheet": {
        const book = await this.sheets.workbook(reader, id, r.version);
        const sheet = book.sheets.find((s) => s.name === part.sheet)!;
        const table = await this.sheets.table(reader, id, r.version, part.sheet);
        const first = part.kind === "range" && address.part?.kind === "range" ? Math.min(address.part.range.start.column, address.part.range.end.column) : 0;
        const [from, to] = part.kind === "range" ? [part.rows[0]!, part.rows[1]!] : [1, table.rows.length + 1];
        return rangeTable(part.columns, first, table.rows, from, to, sheet.types, opts.locale, opts.basePath);
      }
      case "section": {
        const md = await this.text(reader, id, r.version, "document.md");
        const section = await renderSection(md, part.slug, {
          imageUrl: (path) => opts.links.file(id, r.version, path),
          linkUrl: (target) => safePageUrl(target, opts.basePath),
        });
        return raw(`<div class="embed-section">${section ?? ""}</div>`);
      }
      case "slide": {
        const checks = (await this.artifacts.version(reader, id, r.version)).outline as VersionOutline;
        if (checks.checks?.checked) return html`<img src="${opts.links.screenshot(id, r.version, part.number)}" alt="" loading="lazy" width="1280" height="720">`;
        return card(r, `Slide ${part.number}${part.title ? `: ${part.title}` : ""}`);
      }
      default: {
        const outline = (await this.artifacts.version(reader, id, r.version)).outline as VersionOutline;
        return card(r, summary(r.artifact.kind, outline));
      }
    }
  }

  private async text(reader: ArtifactReader, id: string, version: number, path: string): Promise<string> {
    return this.files.text((await this.artifacts.file(reader, id, version, path)).id);
  }
}

function sourceLine(r: Resolution, href: string): RawHtml {
  const part = r.part;
  const what =
    part?.kind === "chart" ? `chart “${part.chart}”`
    : part?.kind === "range" ? `${part.sheet}!${part.range}`
    : part?.kind === "sheet" ? `sheet “${part.sheet}”`
    : part?.kind === "section" ? `section “${part.title}”`
    : part?.kind === "slide" ? `slide ${part.number}`
    : r.file ? r.file.path
    : undefined;
  const follows = r.follows === "latest" ? `follows the latest version (${r.version})` : `fixed at version ${r.version}${r.version < r.artifact.latestVersion ? ` of ${r.artifact.latestVersion}` : ""}`;
  return html`<a href="${href}">${r.artifact.title}</a>${what ? ` · ${what}` : ""} · ${follows}`;
}

function card(r: Resolution, detail: string, href?: string): RawHtml {
  return html`<div class="embed-card" data-kind="${r.artifact.kind}"><span class="embed-card-kind">${KIND_LABEL[r.artifact.kind] ?? r.artifact.kind}</span><strong class="embed-card-title">${r.artifact.title}</strong><span class="embed-card-detail">${detail}</span>${href ? html`<a class="embed-card-open" href="${href}">Download</a>` : ""}</div>`;
}

function summary(kind: string, outline: VersionOutline): string {
  if (kind === "document") return outline.lede ?? `${outline.sections?.length ?? 0} sections`;
  if (kind === "sheet") {
    const sheets = outline.sheets ?? [];
    const charts = outline.charts ?? [];
    return `${sheets.length} ${sheets.length === 1 ? "sheet" : "sheets"}${charts.length ? `, ${charts.length} ${charts.length === 1 ? "chart" : "charts"}` : ""} · ${sheets.reduce((n, s) => n + s.rows, 0).toLocaleString("en-US")} rows`;
  }
  if (kind === "slides") return `${outline.slides?.length ?? 0} slides`;
  return "";
}

/** A table of sheet rows `from..to` (row 1 is the header row, spec 2.7), cells formatted by type and locale. */
function rangeTable(columns: string[], firstColumn: number, rows: string[][], from: number, to: number, types: Record<string, CellType>, locale: string, basePath = ""): RawHtml {
  const firstData = Math.max(2, from);
  const last = Math.min(to, firstData + EMBED_MAX_ROWS - 1, rows.length + 1);
  const body: RawHtml[] = [];
  for (let n = firstData; n <= last; n++) {
    const row = rows[n - 2] ?? [];
    body.push(html`<tr>${columns.map((name, i) => cell(row[firstColumn + i] ?? "", types[name] ?? { type: "text" }, locale, basePath))}</tr>`);
  }
  const more = Math.min(to, rows.length + 1) - last;
  return html`<div class="table-wrap"><table class="embed-range"><thead><tr>${columns.map((name, i) => html`<th scope="col" class="${isFigure(types[name]) ? "num" : ""}" title="${columnLetter(firstColumn + i)}">${name}</th>`)}</tr></thead><tbody>${body}</tbody></table></div>${more > 0 ? html`<p class="embed-more">${more.toLocaleString(locale)} more rows</p>` : ""}`;
}

function cell(raw: string, type: CellType, locale: string, basePath: string): RawHtml {
  const f = formatCell(raw, type, locale);
  const cls = f.align === "end" ? "num" : "";
  if (f.href) return html`<td class="${cls}"><a href="${f.href}" rel="noopener noreferrer">${f.text}</a></td>`;
  if (f.address) return html`<td class="${cls}"><a href="${safePageUrl(f.address, basePath)}">${f.text}</a></td>`;
  return html`<td class="${cls}">${f.text}</td>`;
}

const isFigure = (t: CellType | undefined) => t?.type === "number" || t?.type === "currency" || t?.type === "percent";

/** `1.2 MB`-style size (base 1000, like the file listings people know). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let v = bytes;
  let i = -1;
  do {
    v /= 1000;
    i++;
  } while (v >= 1000 && i < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

