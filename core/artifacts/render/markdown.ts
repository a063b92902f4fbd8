/**
 * Renders an artifact document (`document.md`, spec 2.9) to safe HTML, and one section of it (spec 2.7
 * `artifact:<id>#<heading_slug>`).
 *
 * The stack, built once on the first render (its ~250 modules are imported then, not at the service's
 * start-up: issue 15): remark-parse + remark-gfm (tables, footnotes, task lists,
 * strikethrough, autolinks) → our mdast pass → remark-rehype (raw HTML is dropped, never rendered) →
 * rehype-sanitize (GitHub's schema plus the few tags/classes we emit) → rehype-github-alerts (after
 * sanitizing: the schema would strip its classes) → our trusted pass (table wrappers, `rel`, embeds) →
 * rehype-stringify.
 *
 * Traps handled: sanitize strips `artifact:` URLs, so the mdast pass turns addresses into caller URLs
 * or `<svc-embed data-slot>` markers, swapped for the caller's trusted HTML (hast `raw`) after sanitizing.
 * Sanitize's `clobberPrefix` is `""`: heading ids are bare slugs, footnote ids keep remark-rehype's one
 * `user-content-` prefix. Heading ids are github-slugger slugs made exactly as `readDocument` makes them
 * (top-level headings in order, mdast text; nested headings after them), not rehype-slug's, whose hast
 * text and count of nested headings differ: addresses are checked against readDocument's slugs.
 */
import GithubSlugger from "github-slugger";
import type { Element, ElementContent, Root as HastRoot } from "hast";
import type { Definition, Emphasis, Heading, Image, Link, Nodes, Paragraph, Parent, PhrasingContent, Root, Table, Text } from "mdast";
import { toString } from "mdast-util-to-string";
import type { DefaultBuildType } from "rehype-github-alerts";
import type { Options as SanitizeSchema } from "rehype-sanitize";
import { visit } from "unist-util-visit";
import { lazily } from "../../lazy";
import { formatAddress, isArtifactAddress, parseAddress } from "../address";
import { ledeOf, resolveRelative } from "../content";
import { isFigureColumn } from "./figures";

/** What the caller supplies to turn a document's references into URLs and embeds (spec 2.9). */
export interface DocumentRenderOptions {
  /** URL for a relative image path inside this version (path already normalized relative to document.md, e.g. "images/logo.svg"). */
  imageUrl(path: string): string;
  /** URL a link to an artifact address opens (e.g. "/artifacts/art_1?v=2&part=x"). Receives the canonical address. */
  linkUrl(address: string): string;
  /**
   * HTML shown in place of an image that is alone in its paragraph and whose target is an artifact address
   * (spec 2.9: "shows the target in place, alt text as caption"). The returned HTML is trusted (built by the
   * caller) and is inserted AFTER sanitizing. Omit it (or return undefined) to render such an image as a link
   * card: `<a href=linkUrl(address)>alt</a>` inside a figure. Called once per such image, in document order.
   * Markup: `<figure class="embed">{html}<figcaption>alt</figcaption></figure>` (no figcaption for an empty alt);
   * the card: `<figure class="embed embed-link"><a class="artifact-link" href>alt or the address</a></figure>`.
   */
  embed?(address: string, alt: string): Promise<string | undefined> | string | undefined;
  /** An image (not alone) whose src is an artifact address: URL for it, or undefined to render its alt text. */
  addressImageUrl?(address: string): string | undefined;
}

/** A rendered document: safe HTML plus what a page needs around it (spec 2.9). */
export interface RenderedDocument {
  /** The whole document as safe HTML (title h1 and lede paragraph included, with classes `doc-title` and `doc-lede`). */
  html: string;
  /** The first `#` heading's text, as `readDocument` reads it. */
  title?: string;
  /** The text of the paragraph right after the title, as `readDocument` reads it. */
  lede?: string;
  /** `##` and `###` headings in order: { depth: 2 | 3, slug, text } (slugs exactly as readDocument / GitHub make them). */
  outline: Array<{ depth: 2 | 3; slug: string; text: string }>;
  /** Every element id in `html` (headings' slugs, footnotes' ids), as a page's `#id` or `?part=` finds them; not those inside embeds. */
  ids: string[];
}

// ---------------------------------------------------------------------------------------------------
// the processor (built once, on the first render)

/** Builds the unified processor, importing its packages. */
async function buildProcessor() {
  const [{ unified }, { default: remarkParse }, { default: remarkGfm }, { default: remarkRehype }, sanitize, { default: rehypeStringify }, alerts] = await Promise.all([
    import("unified"),
    import("remark-parse"),
    import("remark-gfm"),
    import("remark-rehype"),
    import("rehype-sanitize"),
    import("rehype-stringify"),
    import("rehype-github-alerts"),
  ]);
  const { defaultSchema } = sanitize;
  /** GitHub's schema, plus figures, our embed marker and the exact classes our mdast pass emits; no id prefix. */
  const schema: SanitizeSchema = {
    ...defaultSchema,
    clobberPrefix: "",
    tagNames: [...(defaultSchema.tagNames ?? []), "figure", "figcaption", "svc-embed"],
    attributes: {
      ...defaultSchema.attributes,
      a: [...(defaultSchema.attributes?.a ?? []).filter((a) => !(Array.isArray(a) && a[0] === "className")), ["className", "data-footnote-backref", "artifact-link"]],
      h1: [["className", "doc-title"]],
      p: [["className", "doc-lede"]],
      figure: [["className", "embed"]],
      th: [["className", "num"]],
      td: [["className", "num"]],
      "svc-embed": ["dataSlot"],
    },
  };
  /** Each alert kind's icon, parsed from rehype-github-alerts' own markup once (it parses it again for every callout otherwise). */
  const alertIcons = new Map<string, Element>();
  const buildAlert: DefaultBuildType = (alert, children) => {
    let icon = alertIcons.get(alert.keyword);
    if (!icon) {
      const sample = alerts.defaultBuild(alert, []) as Element;
      icon = (sample.children[0] as Element).children[0] as Element;
      alertIcons.set(alert.keyword, icon);
    }
    return alerts.defaultBuild({ ...alert, icon: structuredClone(icon) }, children);
  };
  // rehype-github-alerts keeps its options in a module variable that every attach overwrites (another
  // processor in the process could change ours), so it is attached again for each run: cheap and synchronous.
  return unified()
    .use(remarkParse)
    .use(remarkGfm)
    .use(remarkRehype)
    .use(sanitize.default, schema)
    .use(() => (tree: HastRoot) => alerts.rehypeGithubAlerts({ build: buildAlert })(tree))
    .use(rehypeStringify, { allowDangerousHtml: true })
    .freeze();
}

type Processor = Awaited<ReturnType<typeof buildProcessor>>;
/** The processor, built on the first render. */
const processor = lazily(buildProcessor);

/** A parsed and annotated document; its tree is never changed (renders work on copies). */
interface Parsed extends Pick<RenderedDocument, "title" | "lede" | "outline"> {
  tree: Root;
  /** Link definitions by upper-cased identifier, the first of each (as mdast-util-to-hast reads them). */
  definitions: Map<string, Definition>;
}

/** Parsed documents by their markdown, most recently used last: a published version never changes (spec 2.7), and parsing is most of a render. */
const parsedCache = new Map<string, Parsed>();
const CACHE_ENTRIES = 32;
const CACHE_CHARS = 4_000_000;
let cachedChars = 0;

/** Parses `markdown` (remark-parse + remark-gfm), drops positions and annotates it, or takes it from the cache. */
function parse(processor: Processor, markdown: string): Parsed {
  const hit = parsedCache.get(markdown);
  if (hit) {
    parsedCache.delete(markdown); // most recently used last
    parsedCache.set(markdown, hit);
    return hit;
  }
  const tree = processor.parse(markdown);
  const definitions = new Map<string, Definition>();
  visit(tree, (node) => {
    delete node.position;
    if (node.type === "definition" && !definitions.has(node.identifier.toUpperCase())) definitions.set(node.identifier.toUpperCase(), node);
  });
  const parsed = { tree, definitions, ...annotate(tree) };
  parsedCache.set(markdown, parsed);
  cachedChars += markdown.length;
  for (const key of parsedCache.keys()) {
    if (parsedCache.size <= CACHE_ENTRIES && cachedChars <= CACHE_CHARS) break;
    parsedCache.delete(key);
    cachedChars -= key.length;
  }
  return parsed;
}

/** A copy of an mdast node that a render may change: nodes, children arrays, `data` and `align` are new; the rest is shared. */
function copy<T extends Nodes>(node: T): T {
  const out = { ...node } as T & { children?: Nodes[]; align?: Table["align"] };
  if ("children" in node) out.children = node.children.map(copy);
  if (node.data) out.data = { ...node.data };
  if (node.type === "table" && node.align) out.align = [...node.align];
  return out;
}

// ---------------------------------------------------------------------------------------------------
// API

/**
 * Renders `document.md` to safe HTML (spec 2.9). Raw HTML is dropped; links and images to addresses go
 * through `opts`; images alone in their paragraph become figures (titled) or embeds (addresses: `opts.embed`
 * called once each in document order, awaited together). Parses are cached by markdown (module level).
 * @returns the HTML with the title, lede and `##`/`###` outline
 * @throws (rejects) whatever `opts` callbacks throw; nothing for any markdown input
 */
export async function renderDocument(markdown: string, opts: DocumentRenderOptions): Promise<RenderedDocument> {
  const pipeline = await processor();
  const { tree, definitions, title, lede, outline } = parse(pipeline, markdown);
  const ids = new Set<string>();
  const html = await render(pipeline, copy(tree), definitions, opts, true, ids);
  return { html, ...(title !== undefined ? { title } : {}), ...(lede !== undefined ? { lede } : {}), outline: outline.map((o) => ({ ...o })), ids: [...ids] };
}

/**
 * The HTML of one section: the heading with that slug and everything after it up to the next heading of
 * the same or a higher level (spec 2.7 `#<heading_slug>`). undefined when no such heading. Nested embeds in
 * a section render as links (opts.embed is not called) — "something shown inside a shown artifact appears
 * as a link". Only top-level headings start sections (as in readDocument); footnotes called in the section
 * come with it; ids are the whole document's. Rejects with whatever `opts` callbacks throw.
 */
export async function renderSection(markdown: string, slug: string, opts: DocumentRenderOptions): Promise<string | undefined> {
  const pipeline = await processor();
  const { tree: { children }, definitions } = parse(pipeline, markdown);
  const start = children.findIndex((n) => n.type === "heading" && n.data?.hProperties?.id === slug);
  if (start < 0) return undefined;
  const depth = (children[start] as Heading).depth;
  let end = start + 1;
  while (end < children.length && !(children[end]!.type === "heading" && (children[end] as Heading).depth <= depth)) end++;
  // footnotes written elsewhere still serve the section's calls (only those called are rendered)
  const notes = [...children.slice(0, start), ...children.slice(end)].filter((n) => n.type === "footnoteDefinition");
  return render(pipeline, { type: "root", children: [...children.slice(start, end), ...notes].map(copy) }, definitions, opts, false);
}

// ---------------------------------------------------------------------------------------------------
// mdast pass

const SCHEME_RE = /^[a-z][a-z0-9+.-]*:/i;

/** An embed to fill after sanitizing: the canonical address and the image's alt text. */
type Slot = { address: string; alt: string };

/** Sets element properties on the hast element an mdast node becomes (merged with any set before). */
function setProps(node: Nodes, props: Record<string, string | string[]>): void {
  const data = (node.data ??= {});
  data.hProperties = { ...data.hProperties, ...props };
}

/** The canonical address, or undefined when `url` does not parse as one (spec 2.7). */
function canonical(url: string): string | undefined {
  try { return formatAddress(parseAddress(url)); } catch { return undefined; }
}

/**
 * Gives every heading its id (readDocument's slugs: top-level headings in order, then nested ones), marks
 * the title and lede, and reads title, lede and outline exactly as readDocument does.
 */
function annotate(tree: Root): Pick<RenderedDocument, "title" | "lede" | "outline"> {
  const slugger = new GithubSlugger();
  const outline: RenderedDocument["outline"] = [];
  let title: string | undefined;
  let lede: string | undefined;
  let afterTitle = false;
  for (const node of tree.children) {
    if (node.type === "heading") {
      const text = toString(node);
      const slug = slugger.slug(text);
      const isTitle = node.depth === 1 && title === undefined;
      setProps(node, isTitle ? { id: slug, className: ["doc-title"] } : { id: slug });
      if (isTitle) {
        [title, afterTitle] = [text, true];
        continue;
      }
      if (node.depth === 2 || node.depth === 3) outline.push({ depth: node.depth, slug, text });
    } else if (afterTitle && node.type === "paragraph" && lede === undefined) {
      lede = ledeOf(node);
      if (lede !== undefined) setProps(node, { className: ["doc-lede"] });
    }
    afterTitle = false;
  }
  visit(tree, "heading", (node, _i, parent) => void (parent !== tree && setProps(node, { id: slugger.slug(toString(node)) })));
  return { title, lede, outline };
}

/** A `linkReference`/`imageReference` whose definition exists as the `link`/`image` it stands for; anything else as it is. */
function deref(node: PhrasingContent, definitions: Map<string, Definition>): PhrasingContent {
  if (node.type !== "linkReference" && node.type !== "imageReference") return node;
  const def = definitions.get(node.identifier.toUpperCase());
  if (!def) return node;
  const base = { url: def.url, title: def.title ?? null };
  return node.type === "linkReference" ? { type: "link", ...base, children: node.children } : { type: "image", ...base, alt: node.alt ?? null };
}

/** Where an image's `url` points: an artifact address, a URL to use as `src`, or nowhere we show. */
function imageTarget(url: string, opts: DocumentRenderOptions): { address: string } | { src: string } | undefined {
  if (isArtifactAddress(url)) {
    const address = canonical(url);
    return address ? { address } : undefined;
  }
  if (/^https?:\/\//i.test(url) || url.startsWith("//")) return { src: url };
  if (SCHEME_RE.test(url) || url.trim() === "") return undefined;
  const path = resolveRelative("document.md", url);
  return path === undefined ? undefined : { src: opts.imageUrl(path) };
}

const caption = (value: string): Text => ({ type: "text", value, data: { hName: "figcaption" } });

/**
 * Renders a paragraph holding only `image` (spec 2.9): an artifact address becomes an embed figure (a
 * marker holding the link card, then the alt as caption), a titled image a figure with the title as
 * caption, an untitled one stays an image; an image we do not show becomes its alt text.
 */
function loneImage(p: Paragraph, image: Image, opts: DocumentRenderOptions, slots: Slot[]): void {
  const target = imageTarget(image.url, opts);
  const alt = image.alt ?? "";
  if (target === undefined) p.children = [{ type: "text", value: alt }];
  else if ("address" in target) {
    const card: Link = { type: "link", url: opts.linkUrl(target.address), title: null, children: [{ type: "text", value: alt || target.address }], data: { hProperties: { className: ["artifact-link"] } } };
    const marker: Emphasis = { type: "emphasis", children: [card], data: { hName: "svc-embed", hProperties: { dataSlot: String(slots.length) } } };
    slots.push({ address: target.address, alt });
    p.children = alt ? [marker, caption(alt)] : [marker];
    p.data = { hName: "figure", hProperties: { className: ["embed"] } };
  } else if (image.title) {
    p.children = [{ ...image, url: target.src, title: null }, caption(image.title)];
    p.data = { hName: "figure" };
  } else image.url = target.src;
}

/**
 * Right-aligns the columns whose body cells are all figures (blank cells and dashes aside), unless the
 * author aligned them; every right-aligned column of figures (ours or the author's `--:`) gets class
 * `num` on its `th` and `td`s.
 */
function alignFigures(table: Table): void {
  const [head, ...body] = table.children;
  if (!head || body.length === 0) return;
  const columns = Math.max(table.align?.length ?? 0, ...table.children.map((r) => r.children.length));
  const align = (table.align ??= []);
  for (let c = 0; c < columns; c++) {
    if (!isFigureColumn(body.map((row) => (row.children[c] ? toString(row.children[c]!) : "")))) continue;
    while (align.length < columns) align.push(null);
    align[c] ??= "right";
    if (align[c] !== "right") continue; // the author aligned it otherwise: theirs wins, and no `num`
    for (const row of table.children) if (row.children[c]) setProps(row.children[c]!, { className: ["num"] });
  }
}

/** The mdast pass: references, addresses, image URLs, figures and embeds, table alignment. Returns the embed slots. */
function prepare(root: Root, definitions: Map<string, Definition>, opts: DocumentRenderOptions): Slot[] {
  const slots: Slot[] = [];
  // a plain walk (unist-util-visit allocates per node, which shows on long documents)
  const walk = (parent: Parent): void => {
    const kids = parent.children as PhrasingContent[];
    for (let i = 0; i < kids.length; i++) {
      const node = (kids[i] = deref(kids[i]!, definitions)) as Nodes;
      if (node.type === "paragraph" && node.children.length === 1) {
        const only = (node.children[0] = deref(node.children[0]!, definitions));
        if (only.type === "image") {
          loneImage(node, only, opts, slots);
          continue;
        }
      } else if (node.type === "table") alignFigures(node);
      else if (node.type === "link" && isArtifactAddress(node.url)) {
        const address = canonical(node.url);
        if (address === undefined) {
          kids.splice(i--, 1, ...node.children); // not a valid address: its text stays, without a link
          continue;
        }
        node.url = opts.linkUrl(address);
        setProps(node, { className: ["artifact-link"] });
      } else if (node.type === "image") {
        const target = imageTarget(node.url, opts);
        const src = target && "address" in target ? opts.addressImageUrl?.(target.address) : target?.src;
        if (src !== undefined) node.url = src;
        else kids[i] = { type: "text", value: node.alt ?? "" };
      }
      if ("children" in node) walk(node);
    }
  };
  walk(root);
  return slots;
}

// ---------------------------------------------------------------------------------------------------
// hast: after sanitizing (trusted)

const hasClass = (el: Element, name: string) => Array.isArray(el.properties.className) && el.properties.className.includes(name);

/**
 * Runs the pipeline on `root` (already annotated) and returns the HTML; `embeds` false renders every
 * embed as its link card; `ids`, when given, collects every element id of the result (not inside embeds).
 */
async function render(processor: Processor, root: Root, definitions: Map<string, Definition>, opts: DocumentRenderOptions, embeds: boolean, ids?: Set<string>): Promise<string> {
  const slots = prepare(root, definitions, opts);
  const hast = processor.runSync(root) as HastRoot;
  const markers: Array<{ figure: Element; marker: Element; slot: Slot }> = [];
  const walk = (parent: HastRoot | Element): void => {
    for (let i = 0; i < parent.children.length; i++) {
      const node = parent.children[i]!;
      if (node.type !== "element") continue;
      if (ids && typeof node.properties.id === "string") ids.add(node.properties.id);
      if (node.tagName === "table") parent.children[i] = { type: "element", tagName: "div", properties: { className: ["table-wrap"] }, children: [node] };
      else if (node.tagName === "input" && node.properties.type === "checkbox") {
        // a task list's box is read-only; name it so assistive technology says what it means
        node.properties.ariaLabel = node.properties.checked ? "Done" : "Not done";
      } else if (node.tagName === "a") {
        const href = node.properties.href;
        if (typeof href === "string" && /^(?:[a-z][a-z0-9+.-]*:)?\/\//i.test(href) && !hasClass(node, "artifact-link")) node.properties.rel = ["noopener", "noreferrer"];
      } else if (node.tagName === "svc-embed" && parent.type === "element") {
        const slot = slots[Number(node.properties.dataSlot)];
        if (slot) markers.push({ figure: parent, marker: node, slot });
        continue;
      }
      walk(node);
    }
  };
  walk(hast);
  const embed = embeds ? opts.embed : undefined;
  const results = await Promise.all(markers.map(({ slot }) => embed?.call(opts, slot.address, slot.alt)));
  markers.forEach(({ figure, marker }, i) => {
    const html = results[i];
    if (typeof html === "string") {
      figure.children.splice(figure.children.indexOf(marker), 1, { type: "raw", value: html });
      return;
    }
    // the link card: the link alone (its text is the alt), no caption repeating it
    figure.children = figure.children.filter((c): c is ElementContent => !(c.type === "element" && c.tagName === "figcaption"));
    figure.children.splice(figure.children.indexOf(marker), 1, ...marker.children);
    figure.properties.className = ["embed", "embed-link"];
  });
  return processor.stringify(hast);
}
