/**
 * A deck's `index.html` as one reader sees it in its frame (spec 2.10): every artifact address is
 * resolved on the server as that reader, because the deck itself runs in an opaque origin that cannot
 * call the API. `<a href="artifact:…">` becomes a link to the target's page that the kit hands to the
 * embedding page; `<img src="artifact:…/<file>">` an image served through the frame's link;
 * `<svc-embed src="artifact:…">` gets what the target shows inside it. What the reader cannot open
 * becomes an empty box (and a link without a target).
 */
import { Parser } from "htmlparser2";
import { escapeHtml } from "./html";

/** What the frame does with each kind of address; each answers undefined when the reader cannot open the target. */
export interface DeckAddressHooks {
  /** The page URL a link opens. */
  link(address: string): Promise<string | undefined>;
  /** The URL an image of another artifact loads from. */
  image(address: string): Promise<string | undefined>;
  /** The safe HTML shown inside an embed's box, and the target's title (shown on empty boxes in thumbnails and the overview). */
  embed(address: string): Promise<{ html: string; title: string } | undefined>;
}

const isAddress = (value: string | undefined): value is string => !!value && value.trim().startsWith("artifact:");

/**
 * Rewrites the artifact addresses of a deck's HTML (links, images, embeds) for one reader; everything
 * else is left byte for byte. Addresses are resolved concurrently, each distinct one once.
 */
export async function rewriteDeck(source: string, hooks: DeckAddressHooks): Promise<string> {
  const edits: Array<{ start: number; end: number; build: () => Promise<string> }> = [];
  const once = new Map<string, Promise<unknown>>();
  const memo = <T>(key: string, f: () => Promise<T>): Promise<T> => {
    if (!once.has(key)) once.set(key, f());
    return once.get(key) as Promise<T>;
  };
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        const start = parser.startIndex;
        const end = parser.endIndex + 1;
        if (name === "a" && isAddress(attribs.href)) {
          const address = attribs.href.trim();
          edits.push({ start, end, build: async () => {
            const href = await memo(`link ${address}`, () => hooks.link(address));
            const { href: _href, ...rest } = attribs;
            return href ? tag("a", { ...rest, href, "data-svc-open": "", target: "_top" }) : tag("a", { ...rest, "data-state": "unavailable", "aria-disabled": "true" });
          } });
        } else if (name === "img" && isAddress(attribs.src)) {
          const address = attribs.src.trim();
          edits.push({ start, end, build: async () => {
            const src = await memo(`image ${address}`, () => hooks.image(address));
            const { src: _src, ...rest } = attribs;
            if (src) return tag("img", { ...rest, src });
            return `${tag("svc-embed", { class: rest.class, style: rest.style, "data-state": "unavailable", role: "img", "aria-label": rest.alt ?? "" })}</svc-embed>`;
          } });
        } else if (name === "svc-embed" && isAddress(attribs.src)) {
          const address = attribs.src.trim();
          edits.push({ start, end, build: async () => {
            const shown = await memo(`embed ${address}`, () => hooks.embed(address));
            if (!shown) return tag("svc-embed", { ...attribs, "data-state": "unavailable" });
            return tag("svc-embed", { ...attribs, "data-state": "shown", "data-title": attribs.title ?? shown.title }) + `<div class="svc-embed-body">${shown.html}</div>`;
          } });
        }
      },
    },
    { decodeEntities: true, lowerCaseAttributeNames: true },
  );
  parser.write(source);
  parser.end();
  const built = await Promise.all(edits.map((e) => e.build()));
  let out = "";
  let at = 0;
  edits.forEach((e, i) => {
    out += source.slice(at, e.start) + built[i];
    at = e.end;
  });
  return out + source.slice(at);
}

function tag(name: string, attribs: Record<string, string | undefined>): string {
  const attrs = Object.entries(attribs)
    .filter((entry): entry is [string, string] => entry[1] !== undefined && /^[a-z_:][a-z0-9_.:-]*$/i.test(entry[0]))
    .map(([k, v]) => (v === "" ? ` ${k}` : ` ${k}="${escapeHtml(v)}"`))
    .join("");
  return `<${name}${attrs}>`;
}
