/**
 * The slides kit and theme tokens (spec 2.10, 2.11) as files the decks and the pages include: the token
 * defaults (`tokens.css`), the slide layouts and viewer chrome (`kit.css`), and the runtime (`kit.js`).
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Theme } from "../content";

const KIT_DIR = path.dirname(fileURLToPath(import.meta.url));
const read = (file: string) => fs.readFileSync(path.join(KIT_DIR, file), "utf8");

let files: { tokens: string; css: string; js: string } | undefined;

/**
 * The kit's files, read once: `tokens` (token defaults, for the pages), `css` (tokens + layouts + chrome,
 * for decks) and `js` (the runtime).
 */
export function kitAssets(): { tokens: string; css: string; js: string } {
  if (!files) {
    const tokens = read("tokens.css");
    files = { tokens, css: `${tokens}\n${read("kit.css")}`, js: read("kit.js") };
  }
  return files;
}

/**
 * A theme's tokens as `--name: value;` declarations, keeping only pairs that cannot break out of the
 * rule they are put in (a name of letters, digits and dashes; a value without `;{}<>\`).
 */
export function themeDeclarations(theme: Theme | undefined): string {
  return Object.entries(theme?.tokens ?? {})
    .filter(([name, value]) => /^--[a-zA-Z0-9-]+$/.test(name) && !/[;{}<>\\]/.test(value))
    .map(([name, value]) => `${name}: ${value};`)
    .join(" ");
}

/**
 * A `<style>` putting a theme's tokens in the cascade layer `theme` on `selector` (spec 2.11), so the
 * token defaults lose to it and unlayered CSS beats it. Empty when the theme sets no token.
 * @param selector e.g. `:root, :root[data-theme]` (decks) or `[data-svc-artifact]` (pages)
 */
export function themeStyle(theme: Theme | undefined, selector: string): string {
  const tokens = themeDeclarations(theme);
  return tokens ? `<style data-svc-theme>@layer kit, theme; @layer theme { ${selector} { ${tokens} } }</style>` : "";
}

/**
 * A deck's `index.html` with the kit put in front of everything the deck loads, so that the deck's own
 * CSS overrides the kit and the theme (load order; the kit also sits in the cascade layer `kit` and the
 * tokens in `theme`, which unlayered deck CSS always beats). The deck checks and the pages' deck frames
 * serve decks this way.
 *
 * @param opts.kit how the kit is included: inline text, or the URLs it is served from
 * @param opts.theme the theme's pinned mode (`data-theme`) and its tokens (see {@link themeDeclarations})
 * @param opts.layout `stack` lays every slide out at full size one after another (the checks, printing);
 *   `thumbnail` shows one slide with no chrome and embeds as empty boxes with their title (previews)
 */
export function kitDocument(html: string, opts: { kit: { css: string; js: string } | { cssUrl: string; jsUrl: string }; theme?: Theme; layout?: "stack" | "thumbnail" }): string {
  const config: Record<string, string> = {};
  if (opts.theme?.mode) config.mode = opts.theme.mode;
  if (opts.layout) config.layout = opts.layout;
  const kit = "css" in opts.kit
    ? `<style data-svc-kit>${opts.kit.css.replace(/<\/style/gi, "<\\/style")}</style>`
    : `<link rel="stylesheet" href="${escapeAttr(opts.kit.cssUrl)}" data-svc-kit>`;
  const script = "js" in opts.kit
    ? `<script data-svc-kit>${opts.kit.js.replace(/<\/script/gi, "<\\/script")}</script>`
    : `<script src="${escapeAttr(opts.kit.jsUrl)}" data-svc-kit></script>`;
  const head = [`<script data-svc-kit>window.SVC_KIT=${JSON.stringify(config)};</script>`, kit, themeStyle(opts.theme, ":root, :root[data-theme]"), script].join("");
  // right after <head> (or <html>, or the doctype), before anything of the deck's own
  const at = /<head\b[^>]*>/i.exec(html) ?? /<html\b[^>]*>/i.exec(html) ?? /<!doctype[^>]*>/i.exec(html);
  if (!at) return `<!doctype html>${head}${html}`;
  const end = at.index + at[0].length;
  const wrapped = /^<head/i.test(at[0]) ? head : `<head>${head}</head>`;
  return html.slice(0, end) + wrapped + html.slice(end);
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}
