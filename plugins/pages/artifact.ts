import {
  ArtifactStore, EmbedRenderer, FileStore, SheetData, artifactFileUrl, artifactIdsIn, describeAddressPart, formatBytes, html, isEmptyDocument, isImagePath, quoted, raw, withoutArtifactIds, pageUrl, renderDocument, renderSheetView, safePageUrl, themeStyle, workbookChart,
  type ArtifactVersion, type EmbedOptions, type RawHtml, type Theme, type VersionOutline,
} from "../../core/plugin-api";
import { FRAME_PREFIX, type FrameLinks } from "./frames";
import { shell, type ShellUser } from "./shell";

/** The services the artifact page reads through. */
export interface PageServices {
  artifacts: ArtifactStore;
  embeds: EmbedRenderer;
  sheets: SheetData;
  files: FileStore;
  frames: FrameLinks;
}

type Version = ArtifactVersion & { kind: "document" | "sheet" | "slides" | "file"; latestVersion: number; artifactTitle: string };
type Reader = { kind: "identity"; id: string };

const KIND_LABEL = { document: "Document", sheet: "Sheet", slides: "Deck", file: "File" } as const;

/** URL of a version's file as the page loads it (same origin, the session cookie authenticates), under `base` (the service's path prefix). */
export const fileUrl = (artifactId: string, version: number, path: string, base: string, inline = true) => `${artifactFileUrl(artifactId, version, path, base)}${inline ? "?disposition=inline" : ""}`;
/** URL of a deck check's screenshot of a slide, under `base` (the service's path prefix). */
export const screenshotUrl = (artifactId: string, version: number, slide: number, base: string) => `${base}/api/artifacts/${encodeURIComponent(artifactId)}/versions/${version}/checks/${slide}`;

/** Embeds on the pages: files and screenshots through the API (the reader's own session), under `base`. */
export const pageLinks = (base: string): EmbedOptions["links"] => ({ file: (id, v, p) => fileUrl(id, v, p, base), screenshot: (id, v, n) => screenshotUrl(id, v, n, base) });

/** The text of a version's file (document.md, theme.json). */
export async function versionText(s: PageServices, version: Version, path: string): Promise<string | undefined> {
  const entry = version.files.find((f) => f.path === path);
  return entry ? s.files.text(entry.file.id) : undefined;
}


/**
 * The page of one artifact version (spec 4.1: `/artifacts/{id}?v=&part=`): its head with the version
 * picker, the publish warnings, and the kind's view inside `[data-svc-artifact]` with its theme.
 */
export async function artifactPage(s: PageServices, ctx: { base: string; reader: Reader; user: ShellUser; artifactId: string; v?: number; part?: string; locale: string }): Promise<string> {
  const version = (await s.artifacts.version(ctx.reader, ctx.artifactId, ctx.v)) as Version;
  const versions = await s.artifacts.versionNumbers(ctx.reader, ctx.artifactId);
  const theme = await s.artifacts.theme(version);
  const mode = theme?.mode;
  const surface = (cls: string, content: RawHtml) => html`<div class="artifact-surface ${cls}" data-svc-artifact data-kind="${version.kind}" data-theme="${mode ?? ""}">${content}</div>`;
  let view: RawHtml;
  let styles: string[] = [];
  let scripts: string[] = [];
  /** Set by a view when `?part=` names nothing in this version: the page says so above the view. */
  let partMissing: string | undefined;
  switch (version.kind) {
    case "document": {
      const shown = await documentView(s, ctx, version, surface, mode ?? "system");
      view = shown.view;
      // the page scrolls to the element whose id is `part` (pages.js): every heading has its slug as id
      if (ctx.part && !shown.ids.includes(ctx.part)) {
        const slugs = (version.outline as VersionOutline).sections?.map((x) => x.slug) ?? [];
        partMissing = `This version has no section "${ctx.part}" (its sections: ${slugs.length ? slugs.join(", ") : "none"}). Showing the document from the start.`;
      }
      break;
    }
    case "sheet": {
      view = surface("sheet-surface", await sheetView(s, ctx, version, mode ?? "light"));
      partMissing = ctx.part ? sheetPartMissing(version.outline as VersionOutline, ctx.part) : undefined;
      styles = ["/assets/pages/sheet.css"];
      scripts = ["/assets/pages/echarts.js", "/assets/pages/sheet.js", "/assets/pages/charts.js"];
      break;
    }
    case "slides": {
      view = deckView(s, ctx, version, theme);
      const count = (version.outline as VersionOutline).slides?.length ?? 0;
      const shown = deckSlide(ctx.part, count);
      if (ctx.part && String(shown) !== ctx.part) partMissing = `This deck has no slide "${ctx.part}" (its slides: 1 to ${count}). Showing ${/^[1-9]\d*$/.test(ctx.part) ? `slide ${shown}` : "the first slide"}.`;
      break;
    }
    default:
      view = surface("file-surface", await fileView(s, version, ctx.base));
      if (ctx.part) partMissing = `A file artifact has no parts, so "${ctx.part}" names nothing. Showing the file.`;
  }
  const body = html`
<nav class="crumbs" aria-label="Breadcrumb"><a href="${`${ctx.base}/artifacts`}">Artifacts</a><span aria-hidden="true">/</span><span aria-current="page">${version.artifactTitle}</span></nav>
${head(version, versions, ctx)}
${version.version < version.latestVersion ? html`<p class="banner" role="status">You are reading version ${version.version}. <a href="${`${pageUrl({ artifactId: ctx.artifactId }, ctx.base)}${ctx.part ? `?part=${encodeURIComponent(ctx.part)}` : ""}`}">Open the latest (version ${version.latestVersion})</a></p>` : ""}
${partMissing ? html`<p class="banner" role="status" data-part-missing>${partMissing}</p>` : ""}
${await warningsList(s, ctx, version)}
${view}`;
  return shell({ base: ctx.base, title: version.artifactTitle, user: ctx.user, body, head: raw(themeStyle(theme, "[data-svc-artifact]")), styles, scripts, bodyClass: `kind-${version.kind}` });
}

function head(version: Version, versions: number[], ctx: { base: string; artifactId: string; part?: string; locale: string }): RawHtml {
  const published = new Intl.DateTimeFormat(ctx.locale, { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" }).format(new Date(version.publishedAt));
  const options = [...versions].reverse().map((n) => html`<option value="${n}" ${raw(n === version.version ? "selected" : "")}>Version ${n}${n === version.latestVersion ? " (latest)" : ""}</option>`);
  return html`<header class="artifact-head">
  <div class="artifact-title">
    <p class="kind-badge" data-kind="${version.kind}">${KIND_LABEL[version.kind]}</p>
    <h1>${version.title}</h1>
    <p class="meta">Version ${version.version}${version.version === version.latestVersion ? " (latest)" : ` of ${version.latestVersion}`} · published ${published} UTC${publisher(version.publishedBy)}</p>
  </div>
  <form class="version-picker" method="get" action="${pageUrl({ artifactId: ctx.artifactId }, ctx.base)}">
    <label for="version-select">Version</label>
    <select id="version-select" name="v">${options}</select>
    ${ctx.part ? html`<input type="hidden" name="part" value="${ctx.part}">` : ""}
    <button type="submit" class="button button-quiet">Open</button>
  </form>
</header>`;
}

/**
 * The version's publish warnings (the deck check's per slide are beside their screenshots), in the
 * reader's words: another artifact by its title when the reader may open it, else "an artifact you cannot
 * open"; never by its id (the API's warnings keep the ids).
 */
async function warningsList(s: PageServices, ctx: { base: string; reader: Reader }, version: Version): Promise<RawHtml> {
  const reader = ctx.reader;
  const warnings = version.warnings.filter((w) => w.code !== "deck_unchecked" && w.slide === undefined);
  const unchecked = version.warnings.find((w) => w.code === "deck_unchecked");
  const others = new Set(warnings.flatMap((w) => [...(w.artifactId ? [w.artifactId] : []), ...artifactIdsIn(w.message)]));
  others.delete(version.artifactId);
  const titles = new Map<string, string | undefined>(await Promise.all([...others].map(async (id) => [id, (await s.artifacts.get(reader, id).catch(() => undefined))?.title] as const)));
  const name = (id: string) => (id === version.artifactId ? "this artifact" : titles.get(id) !== undefined ? quoted(titles.get(id)!) : "an artifact you cannot open");
  const item = (w: Version["warnings"][number]): RawHtml => {
    if (w.code === "dependent_broken" && w.artifactId && w.address) {
      const title = titles.get(w.artifactId);
      const who = title !== undefined ? html`<a href="${pageUrl({ artifactId: w.artifactId }, ctx.base)}">${quoted(title)}</a>` : html`An artifact you cannot open`;
      // versions published before the warning carried its reason: read it from the message
      const why = w.reason ?? /which this version no longer has: ([\s\S]*)$/.exec(w.message)?.[1];
      return html`${who} shows ${describeAddressPart(w.address)} of this artifact, which this version no longer has${why ? `: ${withoutArtifactIds(why, name, { midSentence: true })}` : ""}`;
    }
    return html`${withoutArtifactIds(w.message, name)}`;
  };
  return html`${warnings.length ? html`<details class="warnings"><summary>${warnings.length} publish ${warnings.length === 1 ? "warning" : "warnings"}</summary><ul>${warnings.map((w) => html`<li data-code="${w.code}"><code>${w.code}</code> ${item(w)}</li>`)}</ul></details>` : ""}${unchecked ? html`<p class="banner banner-muted" role="note">${unchecked.message}</p>` : ""}`;
}

/**
 * Why `part` names no tab of a sheet (undefined when it names one), as the sheet view selects a tab
 * (`selected` in core/artifacts/render/sheet-view.ts): `chart=<name>`, a sheet's name, or a sheet's
 * name followed by `!` and a range.
 */
function sheetPartMissing(outline: VersionOutline, part: string): string | undefined {
  const sheets = outline.sheets?.map((x) => x.name) ?? [];
  const charts = outline.charts?.map((x) => x.name) ?? [];
  if (part.startsWith("chart=") && charts.includes(part.slice(6))) return undefined;
  if (sheets.includes(part)) return undefined;
  for (let bang = part.lastIndexOf("!"); bang > 0; bang = part.lastIndexOf("!", bang - 1)) if (sheets.includes(part.slice(0, bang))) return undefined;
  const has = [...sheets, ...charts.map((c) => `chart=${c}`)];
  return `This version has no sheet or chart "${part}" (it has: ${has.length ? has.join(", ") : "none"}). Showing the first tab.`;
}

/** The longest `document.md` a page parses again to tell it shows nothing, when its version has no `document_empty` warning (older versions). */
const EMPTY_CHECK_MAX_CHARS = 2048;

async function documentView(s: PageServices, ctx: { base: string; reader: Reader; locale: string }, version: Version, surface: (cls: string, c: RawHtml) => RawHtml, mode: EmbedOptions["mode"]): Promise<{ view: RawHtml; ids: string[] }> {
  const md = (await versionText(s, version, "document.md")) ?? "";
  // a document that shows nothing (publishing warned its author): say so, not a blank page. The warning
  // tells; a version published before there was one is parsed again only when short (a longer text
  // that shows nothing is all HTML or link definitions: its page stays blank, as it was)
  const warned = version.warnings.some((w) => w.code === "document_empty");
  if (warned || (md.length <= EMPTY_CHECK_MAX_CHARS && (await isEmptyDocument(md)))) {
    const older = version.latestVersion > 1 ? " Another version may have some: pick it above." : "";
    return { view: surface("doc-surface", html`<section class="empty-state doc-empty" role="status" data-document-empty><h2>This document is empty</h2><p>Version ${version.version} has no text, images or embeds yet.${older}</p></section>`), ids: [] };
  }
  const opts: EmbedOptions = { locale: ctx.locale, mode, links: pageLinks(ctx.base), basePath: ctx.base };
  const doc = await renderDocument(md, {
    imageUrl: (path) => fileUrl(version.artifactId, version.version, path, ctx.base),
    linkUrl: (address) => safePageUrl(address, ctx.base),
    addressImageUrl: () => undefined,
    embed: async (address) => {
      const shown = await s.embeds.show(ctx.reader, address, opts);
      if (shown.state === "unavailable") return `<div class="embed-unavailable" role="note">Unavailable: this shows something you cannot open</div>`;
      if (shown.state === "missing") return html`<div class="embed-unavailable embed-missing" role="note">No longer there: ${shown.message}. <a href="${shown.href}">Open ${shown.title}</a></div>`.value;
      return `<div class="embed-body embed-${shown.resolution.part?.kind ?? (shown.resolution.file ? "file" : "artifact")}">${shown.body}</div><p class="embed-source">${shown.source}</p>`;
    },
  });
  const contents = doc.outline.length
    ? html`<nav class="contents" aria-label="Contents"><h2>Contents</h2><ol>${doc.outline.map((h) => html`<li class="depth-${h.depth}"><a href="#${h.slug}">${h.text}</a></li>`)}</ol></nav>`
    : "";
  return { view: html`<div class="doc-layout">${contents}${surface("doc-surface", html`<article class="doc">${raw(doc.html)}</article>`)}</div>`, ids: doc.ids };
}

async function sheetView(s: PageServices, ctx: { base: string; reader: Reader; v?: number; part?: string; locale: string }, version: Version, mode: "light" | "dark"): Promise<RawHtml> {
  const book = await s.sheets.workbook(ctx.reader, version.artifactId, version.version);
  const sheets = await Promise.all(book.sheets.map(async (sheet) => ({ ...sheet, firstRows: (await s.sheets.table(ctx.reader, version.artifactId, version.version, sheet.name)).rows.slice(0, 100) })));
  const charts = await Promise.all(book.charts.map(async (chart) => {
    const table = await s.sheets.table(ctx.reader, version.artifactId, version.version, chart.sheet);
    return { name: chart.name, title: chart.title ?? chart.name, ...workbookChart(book, chart, table, { mode, locale: ctx.locale, size: { width: 960, height: 420 } }) };
  }));
  return raw(renderSheetView({ artifactId: version.artifactId, version: version.version, pinned: ctx.v !== undefined, sheets, charts, part: ctx.part, locale: ctx.locale, basePath: ctx.base }));
}

/** The slide a deck opens at for `part` (`?part=`): the one it names, the last for a number past them, else the first. */
const deckSlide = (part: string | undefined, count: number) => (part && /^[1-9]\d*$/.test(part) ? Math.min(Number(part), Math.max(1, count)) : 1);

function deckView(s: PageServices, ctx: { base: string; reader: Reader; part?: string }, version: Version, theme: Theme | undefined): RawHtml {
  const modes = theme?.mode ? `${theme.mode} mode (the theme pins it)` : "light and dark mode";
  const outline = version.outline as VersionOutline;
  const slides = outline.slides ?? [];
  const token = s.frames.mint({ artifactId: version.artifactId, version: version.version, reader: ctx.reader.id });
  const part = deckSlide(ctx.part, slides.length);
  const src = `${ctx.base}${FRAME_PREFIX}${token}/index.html?part=${part}`;
  const checks = outline.checks;
  const bySlide = new Map<number, typeof version.warnings>();
  for (const w of version.warnings) if (w.slide !== undefined) bySlide.set(w.slide, [...(bySlide.get(w.slide) ?? []), w]);
  const warningCount = [...bySlide.values()].reduce((n, list) => n + list.length, 0);
  const checkSection = checks?.checked
    ? html`<section class="deck-checks" aria-labelledby="deck-checks-title">
  <h2 id="deck-checks-title">Deck check</h2>
  <p class="meta">${warningCount === 0 ? `Every slide was laid out at 1280×720 in ${modes} with no warnings.` : `${warningCount} ${warningCount === 1 ? "warning" : "warnings"} on ${bySlide.size} of ${slides.length} slides (laid out in ${modes}).`} Embeds are checked as the boxes they fill.</p>
  <ol class="check-list">${checks.slides.map((slide) => {
    const list = bySlide.get(slide.number) ?? [];
    const title = slides.find((x) => x.number === slide.number)?.title;
    return html`<li class="check-item" data-slide="${slide.number}" data-warnings="${list.length}">
      <a class="check-shot" href="?${new URLSearchParams({ v: String(version.version), part: String(slide.number) }).toString()}"><img src="${screenshotUrl(version.artifactId, version.version, slide.number, ctx.base)}" alt="Slide ${slide.number} as checked" width="320" height="180" loading="lazy"></a>
      <div><h3>Slide ${slide.number}${title ? html`: ${title}` : ""}</h3>${list.length ? html`<ul class="check-warnings">${list.map((w) => html`<li><code>${w.code}</code> ${w.message.replace(/^Slide \d+: /, "")}</li>`)}</ul>` : html`<p class="check-ok">No warnings</p>`}</div>
    </li>`;
  })}</ol>
</section>`
    : "";
  return html`<section class="deck" aria-label="Slides">
  <div class="deck-toolbar" role="toolbar" aria-label="Slide controls">
    <button type="button" class="button button-quiet" data-deck="prev" aria-label="Previous slide">‹ Previous</button>
    <output class="deck-position" data-deck-position aria-live="polite">${part} / ${slides.length}</output>
    <button type="button" class="button button-quiet" data-deck="next" aria-label="Next slide">Next ›</button>
    <span class="spacer"></span>
    <button type="button" class="button button-quiet" data-deck="overview">Overview</button>
    <button type="button" class="button" data-deck="present">Present</button>
  </div>
  <div class="deck-stage"><iframe class="deck-frame" data-deck-frame src="${src}" sandbox="allow-scripts" allow="fullscreen" referrerpolicy="no-referrer" title="${`Slides of ${version.title}`}" data-count="${slides.length}"></iframe></div>
  <p class="deck-hint">Keys: ← → to move, O for the overview, F to present.</p>
  <noscript><p class="banner">The slides need JavaScript: they run in a sandboxed frame with the deck's own scripts.</p></noscript>
</section>
${checkSection}`;
}

async function fileView(s: PageServices, version: Version, base: string): Promise<RawHtml> {
  const entry = version.files[0]!;
  const type = entry.file.contentType;
  const download = fileUrl(version.artifactId, version.version, entry.path, base, false);
  let preview: RawHtml | string = "";
  if (isImagePath(entry.path) || /^image\/(png|jpeg|gif|webp|avif)$/.test(type)) preview = html`<img class="file-image" src="${fileUrl(version.artifactId, version.version, entry.path, base)}" alt="${entry.path}">`;
  else if (/^text\/|^application\/json/.test(type) && entry.file.size <= 256 * 1024) preview = html`<pre class="file-text">${(await versionText(s, version, entry.path)) ?? ""}</pre>`;
  return html`<div class="file-card"><div class="file-icon" aria-hidden="true">${extension(entry.path)}</div><div><p class="file-name">${entry.path}</p><p class="meta">${type} · ${formatBytes(entry.file.size)}</p></div><a class="button" href="${download}" download>Download</a></div>${preview}`;
}

/** Who published a version, as the page says it: a person by id, an agent by name; system code (a seed, a connector) not at all. */
function publisher(by: string | undefined): string {
  if (!by) return "";
  if (by.startsWith("agent:")) return ` by the ${by.slice(6)} agent`;
  return by.includes(":") ? "" : ` by ${by}`;
}

/** The file's extension in capitals (the file icon's label). */
export function extension(path: string): string {
  const m = /\.([a-z0-9]{1,5})$/i.exec(path);
  return (m?.[1] ?? "file").toUpperCase();
}
