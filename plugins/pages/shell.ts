import { html, raw, type RawHtml } from "../../core/plugin-api";

/**
 * The CSP of the pages: their own scripts and styles only (inline styles for theme tokens and server
 * SVG), images and frames from this origin, no plugins, no base rewriting.
 */
export const PAGE_CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'";

/** What every page shows in its header. */
export interface ShellUser {
  id: string;
  name: string;
}

/**
 * A whole HTML page of the pages: the header (brand, Artifacts, API tokens when signed in, the
 * signed-in user, sign out), a skip link, `main`, and the pages' CSS and script.
 * @param opts.base the path prefix the service is served under (`Config.basePath`, `""` for none): the
 *   header's links, `styles` and `scripts` go under it, and `<html data-base>` tells pages.js
 * @param opts.head extra head HTML (theme styles), trusted
 * @param opts.styles, opts.scripts paths of this server (`/assets/pages/…`), without the base
 * @param opts.current the page of the main navigation this one is (`aria-current`)
 */
export function shell(opts: { base: string; title: string; user?: ShellUser; body: RawHtml; head?: RawHtml | string; styles?: string[]; scripts?: string[]; bodyClass?: string; current?: "artifacts" | "tokens" }): string {
  const here = (page: "artifacts" | "tokens") => raw(opts.current === page ? 'aria-current="page"' : "");
  const base = opts.base;
  const styles = ["/assets/pages/tokens.css", "/assets/pages/pages.css", ...(opts.styles ?? [])].map((p) => base + p);
  const scripts = ["/assets/pages/pages.js", ...(opts.scripts ?? [])].map((p) => base + p);
  return `<!doctype html>${html`<html lang="en" data-base="${base}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>${opts.title} · svc</title>
${styles.map((href) => html`<link rel="stylesheet" href="${href}">`)}
${typeof opts.head === "string" ? raw(opts.head) : opts.head}
${scripts.map((src) => html`<script src="${src}" defer></script>`)}
</head>
<body class="${opts.bodyClass ?? ""}">
<a class="skip-link" href="#main">Skip to content</a>
<header class="topbar">
  <a class="brand" href="${`${base}/artifacts`}"><span class="brand-mark" aria-hidden="true"></span>svc</a>
  <nav class="topnav" aria-label="Main"><a href="${`${base}/artifacts`}" ${here("artifacts")}>Artifacts</a>${opts.user ? html`<a href="${`${base}/tokens`}" ${here("tokens")}>API tokens</a>` : ""}</nav>
  ${opts.user ? html`<div class="account"><span class="account-name" title="${opts.user.id}">${opts.user.name}</span><button type="button" class="button button-quiet" data-sign-out>Sign out</button></div>` : ""}
</header>
<main id="main" tabindex="-1">
${opts.body}
</main>
</body>
</html>`}`;
}

/** An HTML response with the pages' security headers. */
export function page(body: string, init: { status?: number; headers?: Record<string, string> } = {}): Response {
  return new Response(body, {
    status: init.status ?? 200,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": PAGE_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
      "cache-control": "no-store",
      ...init.headers,
    },
  });
}

/**
 * A page saying what went wrong (404 for an artifact that does not exist or is not the reader's).
 * @param where.base the service's path prefix (see {@link shell}); `where.user` the signed-in user, if any
 */
export function errorPage(status: number, title: string, message: string, where: { base: string; user?: ShellUser }): Response {
  const body = html`<section class="empty-state"><h1>${title}</h1><p>${message}</p><p><a class="button" href="${`${where.base}/artifacts`}">Back to your artifacts</a></p></section>`;
  return page(shell({ base: where.base, title, user: where.user, body }), { status });
}
