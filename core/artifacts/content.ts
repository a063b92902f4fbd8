/**
 * What a version's files say, read before it is published (spec 2.7–2.11, 4.3): the layout each kind
 * needs, a document's headings, images and links, a deck's slides and what it loads, a theme file's
 * tokens. Pure functions over file contents: the publisher (core/artifacts/store.ts, its checks in
 * core/artifacts/publish-checks.ts) reads the bytes.
 */
// css-tree's one-file bundle (the same version, its data included): its ~270 ES modules cost ~85 ms of start-up
import * as csstree from "css-tree/dist/csstree.esm";
import GithubSlugger from "github-slugger";
import { parseDocument, DomUtils } from "htmlparser2";
import parseSrcset from "parse-srcset";
import type { Element } from "domhandler";
import type { Definition, Paragraph } from "mdast";
import { toString } from "mdast-util-to-string";
import { visit } from "unist-util-visit";
import * as v from "valibot";
import { lazily } from "../lazy";

/** The kinds of artifact (spec 2.7). */
export const ARTIFACT_KINDS = ["document", "sheet", "slides", "file"] as const;
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

/** One thing wrong with a version: the file (and place) it is in, and what was expected. */
export interface ContentProblem {
  file: string;
  message: string;
  row?: number;
  column?: string;
  columnLetter?: string;
  expected?: string;
  value?: string;
  line?: number;
}

/** A reference from a version's content to something: an artifact address, a file of the version, or an outside URL. */
export interface ContentReference {
  /** The file it is written in, e.g. `document.md`, `index.html`, `sheets/Revenue.csv`. */
  file: string;
  /** What is referenced, as written. */
  target: string;
  /** How it is used: `link` (navigation), `image`, `embed` (`<svc-embed>`), `style`, `script`, `font`, `media`. */
  use: "link" | "image" | "embed" | "style" | "script" | "font" | "media";
  line?: number;
  /** True for a `url()` or `@import` of CSS (a stylesheet, a `<style>` element, a `style` attribute). */
  inCss?: true;
  /**
   * Where in a deck's HTML it is written, when that is a place the deck's frame does not rewrite artifact
   * addresses in (it rewrites `<img src>`, `<a href>` and `<svc-embed src>` only): `a <video poster>`,
   * `an srcset`, `an SVG <image>`, …, for the refusal of an address there.
   */
  unrewritten?: string;
}

/** A heading of a document: `##` and `###` form the outline (spec 2.9); `slug` as GitHub makes it. */
export interface Section {
  slug: string;
  title: string;
  depth: number;
}

/** The CDNs a deck may load from (spec 2.10): jsDelivr, cdnjs, unpkg, Google Fonts. */
export const ALLOWED_CDN_HOSTS = ["cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com", "fonts.googleapis.com", "fonts.gstatic.com"] as const;

/** Content types of the files a deck loads, by extension. */
const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8", htm: "text/html; charset=utf-8", css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8", mjs: "text/javascript; charset=utf-8", json: "application/json",
  svg: "image/svg+xml", png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif",
  webp: "image/webp", avif: "image/avif", ico: "image/x-icon", bmp: "image/bmp",
  woff: "font/woff", woff2: "font/woff2", ttf: "font/ttf", otf: "font/otf",
  mp4: "video/mp4", webm: "video/webm", mp3: "audio/mpeg", csv: "text/csv; charset=utf-8", txt: "text/plain; charset=utf-8",
};

/**
 * The content type a deck's file is served with, by its extension (`text/css; charset=utf-8` for
 * `deck.css`), `application/octet-stream` when unknown: a browser that is told `nosniff` runs scripts
 * and applies stylesheets only with the right type, whatever the uploader declared.
 */
export function contentTypeOf(path: string): string {
  const ext = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase() ?? "";
  return CONTENT_TYPES[ext] ?? "application/octet-stream";
}

const IMAGE_EXTENSIONS = /\.(png|jpe?g|gif|webp|avif|svg|bmp|ico)$/i;

/** True when `path` names an image by its extension (png, jpg, gif, webp, avif, svg, bmp, ico). */
export function isImagePath(path: string): boolean {
  return IMAGE_EXTENSIONS.test(path);
}

/**
 * Normalizes a path inside an artifact: relative, `/`-separated, no empty, `.` or `..` segment, no
 * backslash or control character, at most 500 characters.
 * @returns the normalized path, or a reason it is refused
 */
export function normalizeArtifactPath(path: string): { path: string } | { error: string } {
  if (typeof path !== "string" || path.length === 0) return { error: "a path must not be empty" };
  if (path.length > 500) return { error: "a path has at most 500 characters" };
  if (path.startsWith("/")) return { error: "paths are relative (no leading /)" };
  if (/[\\\u0000-\u001f\u007f]/.test(path)) return { error: "paths use / between segments and have no control characters" };
  const segments = path.split("/");
  if (segments.some((s) => s === "" || s === "." || s === "..")) return { error: "a path has no empty, . or .. segment" };
  return { path: segments.join("/") };
}

/**
 * Resolves a relative reference written in `fromFile` (e.g. `img/a.png` in `index.html`, `../img/a.png`
 * in `css/deck.css`) to a path of the version; undefined when it leaves the artifact.
 */
export function resolveRelative(fromFile: string, ref: string): string | undefined {
  let clean: string;
  try {
    clean = decodeURI(ref.split(/[?#]/)[0]!);
  } catch {
    return undefined; // a malformed escape names no file
  }
  const base = fromFile.includes("/") ? fromFile.slice(0, fromFile.lastIndexOf("/")).split("/") : [];
  const out = clean.startsWith("/") ? [] : base;
  for (const seg of clean.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (out.length === 0) return undefined;
      out.pop();
    } else out.push(seg);
  }
  return out.length ? out.join("/") : undefined;
}

/**
 * unified + remark-parse + remark-gfm, imported on the first document read: their ~200 modules stay out
 * of the service's start-up (issue 15).
 */
const markdownParser = lazily(async () => {
  const [{ unified }, { default: remarkParse }, { default: remarkGfm }] = await Promise.all([import("unified"), import("remark-parse"), import("remark-gfm")]);
  return unified().use(remarkParse).use(remarkGfm).freeze();
});

/**
 * Whether `document.md` shows a reader nothing (spec 2.9): no block with text, code, an image or an
 * embed. Blank, or only empty blocks (`#` with no text, an empty quote or list item, a lone `---`), raw
 * HTML (the renderer drops it) and link definitions no text uses.
 */
export async function isEmptyDocument(markdown: string): Promise<boolean> {
  return emptyTree((await markdownParser()).parse(markdown));
}

/** {@link isEmptyDocument} over the parsed tree. */
function emptyTree(tree: ReturnType<Awaited<ReturnType<typeof markdownParser>>["parse"]>): boolean {
  let shown = false;
  visit(tree, (node) => {
    if (shown) return false;
    if (node.type === "definition" || node.type === "html") return "skip";
    if ((node.type === "text" || node.type === "inlineCode" || node.type === "code") && /\S/.test(node.value)) shown = true;
    else if (node.type === "image" || node.type === "imageReference") shown = true;
    return undefined;
  });
  return !shown;
}

/**
 * Reads `document.md` (spec 2.9): the first `#` heading is the title and the paragraph after it the
 * lede; every heading gets a GitHub slug (`q3-results`, then `q3-results-1`); images and links are
 * collected with their lines; `empty` when it shows a reader nothing ({@link isEmptyDocument}).
 */
export async function readDocument(markdown: string): Promise<{ title?: string; lede?: string; sections: Section[]; references: ContentReference[]; empty: boolean }> {
  const tree = (await markdownParser()).parse(markdown);
  const slugger = new GithubSlugger();
  const sections: Section[] = [];
  const references: ContentReference[] = [];
  let title: string | undefined;
  let lede: string | undefined;
  let afterTitle = false;
  for (const node of tree.children) {
    if (node.type === "heading") {
      const text = toString(node);
      const slug = slugger.slug(text);
      if (node.depth === 1 && title === undefined) {
        title = text;
        afterTitle = true;
        continue;
      }
      sections.push({ slug, title: text, depth: node.depth });
    } else if (afterTitle && node.type === "paragraph" && lede === undefined) lede = ledeOf(node);
    afterTitle = false;
  }
  // a reference (`![alt][id]`, `[text][id]`) stands for the image or link its definition gives, as the
  // renderer reads it (./render/markdown.ts `deref`: upper-cased identifier, the first definition wins);
  // a definition no reference uses is still a link to check
  const definitions = new Map<string, Definition>();
  visit(tree, "definition", (node) => void (definitions.has(node.identifier.toUpperCase()) || definitions.set(node.identifier.toUpperCase(), node)));
  const used = new Set<string>();
  visit(tree, (node) => {
    const line = node.position?.start.line;
    if (node.type === "image") references.push({ file: "document.md", target: node.url, use: "image", line });
    else if (node.type === "link") references.push({ file: "document.md", target: node.url, use: "link", line });
    else if (node.type === "imageReference" || node.type === "linkReference") {
      const def = definitions.get(node.identifier.toUpperCase());
      if (!def) return; // no definition: the text as written, neither image nor link
      used.add(node.identifier.toUpperCase());
      references.push({ file: "document.md", target: def.url, use: node.type === "imageReference" ? "image" : "link", line });
    }
  });
  for (const [id, def] of definitions) if (!used.has(id)) references.push({ file: "document.md", target: def.url, use: "link", line: def.position?.start.line });
  return { title, lede, sections, references, empty: emptyTree(tree) };
}

/**
 * The lede of a document (spec 2.9: the paragraph after the `#` title) as plain text: its words with
 * the whitespace collapsed, without raw HTML and image alt text; undefined when nothing is left (an
 * image alone in its paragraph is no lede).
 */
export function ledeOf(paragraph: Paragraph): string | undefined {
  const text = toString(paragraph, { includeImageAlt: false, includeHtml: false }).replace(/\s+/g, " ").trim();
  return text === "" ? undefined : text;
}

/**
 * Reads a deck's `index.html` (spec 2.10): its slides (`<section class="slide">`, with each one's first
 * heading as title) and everything it loads or links: stylesheets, scripts, images (`<img src>`, each
 * candidate of an `srcset` on `<img>` and `<source>`, SVG `<image href>`), media, fonts, `<a href>`,
 * `<svc-embed src>`, and `url()`/`@import` inside `<style>` and `style` attributes.
 */
export function readDeck(html: string): { slides: Array<{ number: number; title?: string }>; references: ContentReference[] } {
  const doc = parseDocument(html, { withStartIndices: true });
  const lineStarts = [0];
  for (let i = html.indexOf("\n"); i !== -1; i = html.indexOf("\n", i + 1)) lineStarts.push(i + 1);
  /** 1-based line of a character index (binary search over the line starts). */
  const lineAt = (index: number | null | undefined) => {
    if (index == null) return undefined;
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  // a slide the page shows: not inert content (<template>, <noscript>: not part of the page a browser
  // lays out) and not `hidden` (such a deck published as one blank slide)
  const shown = (el: Element) => {
    if (el.attribs.hidden !== undefined) return false;
    for (let p = el.parent; p && "name" in p; p = p.parent) if (p.name === "template" || p.name === "noscript") return false;
    return true;
  };
  const slides = DomUtils.findAll((el) => el.name === "section" && (el.attribs.class ?? "").split(/\s+/).includes("slide") && shown(el), doc.children).map((el, i) => {
    const heading = DomUtils.findOne((h) => /^h[1-6]$/.test(h.name), el.children);
    return { number: i + 1, ...(heading ? { title: DomUtils.textContent(heading).trim() } : {}) };
  });
  const references: ContentReference[] = [];
  /** `el`'s `attr` as a reference; one the frame does not rewrite addresses in is marked so (see {@link ContentReference.unrewritten}). */
  const add = (el: Element, attr: string, use: ContentReference["use"]) => {
    const value = el.attribs[attr];
    if (value === undefined || value.trim() === "") return;
    const rewritten = (el.name === "img" && attr === "src") || (el.name === "a" && attr === "href") || (el.name === "svc-embed" && attr === "src");
    const where = `${/^[aeiou]/.test(el.name) ? "an" : "a"} <${el.name} ${attr}>`;
    references.push({ file: "index.html", target: value.trim(), use, line: lineAt(el.startIndex), ...(rewritten ? {} : { unrewritten: where }) });
  };
  /**
   * Each candidate URL of the element's `srcset`, parsed by the HTML standard's algorithm (the
   * `parse-srcset` package, sanitize-html's parser). A candidate with an invalid descriptor is dropped,
   * as browsers drop it (it loads nothing); the package reports those with `console.log`, silenced here.
   */
  const addSrcset = (el: Element) => {
    const value = el.attribs.srcset;
    if (value === undefined || value.trim() === "") return;
    const log = console.log;
    console.log = () => undefined;
    let candidates: Array<{ url: string }>;
    try {
      candidates = parseSrcset(value);
    } finally {
      console.log = log;
    }
    for (const { url } of candidates) references.push({ file: "index.html", target: url, use: "image", line: lineAt(el.startIndex), unrewritten: "an srcset" });
  };
  for (const el of DomUtils.findAll(() => true, doc.children)) {
    switch (el.name) {
      case "link":
        add(el, "href", /\bstylesheet\b/i.test(el.attribs.rel ?? "") ? "style" : /\b(preload|icon|modulepreload)\b/i.test(el.attribs.rel ?? "") ? "media" : "link");
        break;
      case "script":
        add(el, "src", "script");
        break;
      case "img":
        add(el, "src", "image");
        addSrcset(el);
        break;
      case "image": // SVG (`xlink:href` is SVG 1.1's spelling)
        add(el, el.attribs.href !== undefined ? "href" : "xlink:href", "image");
        break;
      case "source":
        addSrcset(el);
        add(el, "src", "media");
        break;
      case "video":
      case "audio":
      case "iframe":
      case "embed":
        add(el, "src", "media");
        if (el.name === "video") add(el, "poster", "image");
        break;
      case "object":
        add(el, "data", "media");
        break;
      case "a":
        add(el, "href", "link");
        break;
      case "svc-embed":
        add(el, "src", "embed");
        break;
    }
    if (el.name === "style") for (const url of cssUrls(DomUtils.textContent(el))) references.push({ file: "index.html", target: url.target, use: url.use, line: lineAt(el.startIndex), inCss: true });
    if (el.attribs.style) for (const url of cssUrls(el.attribs.style, "declarationList")) references.push({ file: "index.html", target: url.target, use: url.use, line: lineAt(el.startIndex), inCss: true });
  }
  return { slides, references };
}

/** `url()` and `@import` targets of a stylesheet (or a `style` attribute's declarations). */
export function cssUrls(css: string, context: "stylesheet" | "declarationList" = "stylesheet"): Array<{ target: string; use: ContentReference["use"] }> {
  const out: Array<{ target: string; use: ContentReference["use"] }> = [];
  let ast: csstree.CssNode;
  try {
    ast = csstree.parse(css, { context, parseValue: true, onParseError: () => undefined });
  } catch {
    return out;
  }
  csstree.walk(ast, (node) => {
    if (node.type === "Url") out.push({ target: node.value, use: /\.(woff2?|ttf|otf|eot)(\?|#|$)/i.test(node.value) ? "font" : "image" });
    else if (node.type === "Atrule" && node.name === "import" && node.prelude?.type === "AtrulePrelude") {
      const first = node.prelude.children.first;
      if (first?.type === "String") out.push({ target: first.value, use: "style" });
    }
  });
  return out;
}

/** Tokens a `theme.json` may set (spec 2.11) and what kind of CSS value each takes. */
export const THEME_TOKENS: Readonly<Record<string, "color" | "font" | "length">> = Object.fromEntries([
  ...["--background", "--foreground", "--border", "--chart-1", "--chart-2", "--chart-3", "--chart-4", "--chart-5"].map((t) => [t, "color"]),
  ...["--card", "--muted", "--primary", "--accent"].flatMap((t) => [[t, "color"], [`${t}-foreground`, "color"]]),
  ...["--font-sans", "--font-serif", "--font-mono"].map((t) => [t, "font"]),
  ["--radius", "length"],
]);

/** A theme file's fields; `mode` and `tokens` are checked apart, so a wrong mode does not hide the tokens' problems. */
const ThemeShape = v.strictObject({ mode: v.optional(v.unknown()), tokens: v.optional(v.unknown()) });
const ThemeMode = v.picklist(["light", "dark"], "mode must be light or dark");
const ThemeTokens = v.record(v.string(), v.string("token values are strings"));

/** A theme file's contents (spec 2.11): an optional pinned `mode` and token values. */
export type Theme = { mode?: "light" | "dark"; tokens: Record<string, string> };

/**
 * Checks a `theme.json` (spec 2.11): JSON with `mode` (light or dark) and `tokens`, only the settable
 * tokens, each value a CSS color, a font stack or a length as fits the token (css-tree's lexer).
 * @returns the theme, or the problems found
 */
export function readTheme(text: string): { theme: Theme; problems: [] } | { problems: ContentProblem[] } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { problems: [{ file: "theme.json", message: `theme.json is not valid JSON: ${(err as Error).message}` }] };
  }
  const issuesOf = (issues: readonly v.BaseIssue<unknown>[], prefix = "") => issues.map((i) => ({ file: "theme.json", message: `theme.json ${prefix}${v.getDotPath(i) ?? ""}: ${i.message}`.replace(/ :|\.:/, ":") }));
  const shape = v.safeParse(ThemeShape, json);
  if (!shape.success) return { problems: issuesOf(shape.issues) };
  const problems: ContentProblem[] = [];
  const mode = shape.output.mode === undefined ? undefined : v.safeParse(ThemeMode, shape.output.mode);
  if (mode && !mode.success) problems.push(...issuesOf(mode.issues, "mode"));
  const parsedTokens = v.safeParse(ThemeTokens, shape.output.tokens ?? {});
  if (!parsedTokens.success) problems.push(...issuesOf(parsedTokens.issues, "tokens."));
  for (const [token, value] of Object.entries(parsedTokens.success ? parsedTokens.output : {})) {
    const kind = THEME_TOKENS[token];
    if (!kind) {
      problems.push({ file: "theme.json", message: `theme.json sets ${token}, which is not a settable token; settable: ${Object.keys(THEME_TOKENS).join(", ")}`, value: token });
      continue;
    }
    let ok = false;
    try {
      const node = csstree.parse(value, { context: "value" });
      ok = !(kind === "length" ? csstree.lexer.matchType("length", node) : csstree.lexer.matchProperty(kind === "color" ? "color" : "font-family", node)).error;
    } catch {
      ok = false;
    }
    if (!ok) problems.push({ file: "theme.json", message: `theme.json ${token} must be a CSS ${kind === "font" ? "font stack" : kind}, got ${JSON.stringify(value)}`, expected: kind, value });
  }
  return problems.length ? { problems } : { theme: { ...(mode?.success ? { mode: mode.output } : {}), tokens: parsedTokens.success ? parsedTokens.output : {} }, problems: [] };
}

/**
 * Checks the files a kind needs (spec 2.7): `document` has `document.md`; `sheet` has `workbook.json`
 * and its CSVs under `sheets/` (checked with the workbook); `slides` has `index.html`; `file` has
 * exactly one file.
 */
export function checkLayout(kind: ArtifactKind, paths: readonly string[]): ContentProblem[] {
  const has = (p: string) => paths.includes(p);
  switch (kind) {
    case "document":
      return has("document.md") ? [] : [{ file: "document.md", message: "A document needs document.md" }];
    case "sheet":
      return has("workbook.json") ? [] : [{ file: "workbook.json", message: "A sheet needs workbook.json (and one CSV per sheet under sheets/)" }];
    case "slides":
      return has("index.html") ? [] : [{ file: "index.html", message: 'A deck needs index.html with one <section class="slide"> per slide' }];
    case "file":
      return paths.length === 1 ? [] : [{ file: paths.join(", "), message: `A file artifact holds exactly one file, not ${paths.length}` }];
  }
}

/** Where a reference points: an artifact address, a file of the version, an allowed or refused outside URL, or an in-page anchor. */
export function classifyReference(ref: ContentReference): "address" | "file" | "external" | "anchor" | "data" {
  const t = ref.target;
  if (t.startsWith("artifact:")) return "address";
  if (t.startsWith("#")) return "anchor";
  if (/^data:/i.test(t)) return "data";
  if (/^[a-z][a-z0-9+.-]*:/i.test(t) || t.startsWith("//")) return "external";
  return "file";
}
