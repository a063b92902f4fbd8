import { ApiError, formatBytes, isApiError, formatCell, chartInModes, html, pageUrl, raw, workbookChart, type Artifact, type RawHtml, type VersionOutline } from "../../core/plugin-api";
import { extension, screenshotUrl, type PageServices } from "./artifact";
import { FRAME_PREFIX } from "./frames";
import { shell, type ShellUser } from "./shell";

const FILTERS = [["", "All"], ["document", "Documents"], ["sheet", "Sheets"], ["slides", "Decks"], ["file", "Files"]] as const;
const KIND_LABEL: Record<string, string> = { document: "Document", sheet: "Sheet", slides: "Deck", file: "File" };
/** Artifacts per page of the list. */
export const LIST_PAGE_SIZE = 24;

type Reader = { kind: "identity"; id: string };

/**
 * `/artifacts` (spec 4.1): the artifacts the reader can open, most recently updated first, each with a
 * preview of its latest version; `kind` filters; `after` continues (the API's page token).
 */
export async function listPage(s: PageServices, ctx: { base: string; reader: Reader; user: ShellUser; kind?: Artifact["kind"]; after?: string; locale: string }): Promise<string> {
  const page = await s.artifacts.list(ctx.reader, { kind: ctx.kind, pageSize: LIST_PAGE_SIZE, nextPageToken: ctx.after }).catch((err: unknown) => {
    // the page's own parameter is `after`: say so, not the API's `nextPageToken`
    if (ctx.after !== undefined && isApiError(err) && err.code === "invalid_request") throw new ApiError("invalid_request", `"after" is not a place in this list (a link from another list, or edited): start again from the first page`);
    throw err;
  });
  const cards = await Promise.all(page.data.map((a) => card(s, ctx, a)));
  const filters = html`<nav class="filters" aria-label="Filter by kind"><ul>${FILTERS.map(([kind, label]) => html`<li><a href="${`${ctx.base}/artifacts${kind ? `?kind=${kind}` : ""}`}" ${raw((ctx.kind ?? "") === kind ? 'aria-current="page"' : "")}>${label}</a></li>`)}</ul></nav>`;
  const empty = html`<section class="empty-state"><h2>No ${ctx.kind ? KIND_LABEL[ctx.kind]!.toLowerCase() + "s" : "artifacts"} yet</h2><p>Artifacts you publish (POST /api/artifacts) or that an agent publishes for you appear here.</p></section>`;
  const more = page.nextPageToken ? html`<p class="more"><a class="button button-quiet" href="${`${ctx.base}/artifacts?${new URLSearchParams({ ...(ctx.kind ? { kind: ctx.kind } : {}), after: page.nextPageToken }).toString()}`}">Older artifacts</a></p>` : "";
  const body = html`<div class="list-head"><h1>Artifacts</h1>${filters}</div>
${cards.length ? html`<ul class="cards" aria-label="Artifacts">${cards}</ul>` : empty}
${more}`;
  return shell({ base: ctx.base, title: "Artifacts", user: ctx.user, body, bodyClass: "list", current: "artifacts" });
}

async function card(s: PageServices, ctx: { base: string; reader: Reader; locale: string }, artifact: Artifact): Promise<RawHtml> {
  const version = await s.artifacts.version(ctx.reader, artifact.id);
  const outline = version.outline as VersionOutline;
  const href = pageUrl({ artifactId: artifact.id }, ctx.base);
  const updated = new Date(artifact.updatedAt);
  const when = new Intl.DateTimeFormat(ctx.locale, { dateStyle: "medium", timeZone: "UTC" }).format(updated);
  return html`<li class="card" data-kind="${artifact.kind}" data-artifact="${artifact.id}">
  <a class="card-link" href="${href}">
    <div class="preview preview-${artifact.kind}">${await preview(s, ctx, artifact, version as never, outline)}</div>
    <div class="card-body">
      <p class="kind-badge" data-kind="${artifact.kind}">${KIND_LABEL[artifact.kind]}</p>
      <h2 class="card-title">${artifact.title}</h2>
      <p class="meta">Version ${artifact.latestVersion} · updated <time datetime="${artifact.updatedAt}">${when}</time></p>
    </div>
  </a>
</li>`;
}

async function preview(s: PageServices, ctx: { base: string; reader: Reader; locale: string }, artifact: Artifact, version: { version: number; files: Array<{ path: string; file: { size: number } }> }, outline: VersionOutline): Promise<RawHtml> {
  switch (artifact.kind) {
    case "document":
      return html`<div class="preview-doc"><p class="preview-title">${outline.title ?? artifact.title}</p>${outline.lede ? html`<p class="preview-lede">${outline.lede}</p>` : ""}</div>`;
    case "sheet": {
      const book = await s.sheets.workbook(ctx.reader, artifact.id, version.version);
      const chart = book.charts[0];
      if (chart) {
        const table = await s.sheets.table(ctx.reader, artifact.id, version.version, chart.sheet);
        const drawn = (mode: "light" | "dark") => workbookChart(book, chart, table, { mode, locale: ctx.locale, size: { width: 480, height: 270 } }).svg;
        // the mode the sheet's theme pins, else both: the page's CSS shows the one of the reader's colour scheme
        const pinned = book.theme?.mode;
        return raw(`<div class="preview-chart" data-svc-artifact data-theme="${pinned ?? ""}">${chartInModes(drawn, pinned)}</div>`);
      }
      const sheet = book.sheets[0];
      if (!sheet) return html``;
      const table = await s.sheets.table(ctx.reader, artifact.id, version.version, sheet.name);
      const cols = table.columns.slice(0, 4);
      const cell = (raw: string, column: string) => {
        const f = formatCell(raw, sheet.types[column] ?? { type: "text" }, ctx.locale);
        return html`<td class="${f.align === "end" ? "num" : ""}">${f.text}</td>`;
      };
      return html`<table class="preview-table"><thead><tr>${cols.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead><tbody>${table.rows.slice(0, 5).map((row) => html`<tr>${cols.map((c, i) => cell(row[i] ?? "", c))}</tr>`)}</tbody></table>`;
    }
    case "slides": {
      const token = s.frames.mint({ artifactId: artifact.id, version: version.version, reader: ctx.reader.id });
      const thumbnail = `${ctx.base}${FRAME_PREFIX}${token}/index.html?part=1&thumbnail=1`;
      const title = `First slide of ${artifact.title}`;
      if (outline.checks?.checked && outline.checks.slides.length) {
        // the deck check's screenshot is in the mode the theme pins, else light: with none pinned, a dark
        // page swaps it for the live thumbnail, which follows the reader's colour scheme (pages.js)
        const pinned = outline.themeMode !== undefined ? outline.themeMode : (await s.artifacts.theme({ kind: "slides", files: version.files as never }))?.mode;
        return html`<img src="${screenshotUrl(artifact.id, version.version, 1, ctx.base)}" alt="" width="480" height="270" loading="lazy" ${pinned ? "" : html`data-dark-thumbnail="${thumbnail}" data-title="${title}"`}>`;
      }
      return html`<iframe class="preview-frame" src="${thumbnail}" sandbox="allow-scripts" loading="lazy" tabindex="-1" title="${title}" referrerpolicy="no-referrer"></iframe>`;
    }
    default: {
      const file = version.files[0];
      return html`<div class="preview-file-body"><span class="file-icon" aria-hidden="true">${extension(file?.path ?? "")}</span><span class="preview-file-meta">${file?.path ?? ""}<br>${file ? formatBytes(file.file.size) : ""}</span></div>`;
    }
  }
}
