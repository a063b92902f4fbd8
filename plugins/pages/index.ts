import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { H3Event } from "h3";
import * as v from "valibot";
import {
  ARTIFACT_KINDS, ArtifactStore, EmbedRenderer, FileStore, SESSION_COOKIE, SessionService, SheetData, TokenService, assertAllowedOrigin, browserScript, definePlugin, echartsBrowserPath, sheetCss, html, isApiError, kitAssets, readCookie, withoutArtifactIds,
  type Principal, type RawHtml,
} from "../../core/plugin-api";
import { artifactPage, type PageServices } from "./artifact";
import { FrameLinks } from "./frames";
import { serveFrame } from "./frame-route";
import { listPage } from "./list";
import { errorPage, page, shell, type ShellUser } from "./shell";
import { tokensPage } from "./tokens";

const here = path.dirname(fileURLToPath(import.meta.url));
const HTML = { 200: { description: "HTML page", contentType: "text/html" }, 303: { description: "Not signed in: to the sign-in page, which comes back here" }, 404: { description: "No such artifact or version (or not yours): an HTML page saying so", contentType: "text/html" } };

/** The reader's locale from Accept-Language (its first supported tag), else en-US. */
export function localeOf(req: Request): string {
  for (const part of (req.headers.get("accept-language") ?? "").split(",")) {
    const tag = part.split(";")[0]!.trim();
    if (!tag || tag === "*") continue;
    try {
      const [supported] = Intl.NumberFormat.supportedLocalesOf(tag);
      if (supported) return supported;
    } catch {
      /* not a language tag */
    }
  }
  return "en-US";
}

/**
 * A path of this service to come back to after signing in, as the browser sees it (under `basePath`,
 * the prefix a proxy serves the service under); anything else (another origin, `//host`, backslashes,
 * a path outside the prefix, dot segments that climb out of it or into `//`) goes to the artifacts
 * list, and so does a path with an encoded `/`, `\` or `.` (`%2f`, `%5c`, `%2e`: a proxy may decode
 * them and climb out of the prefix). Answers the normalized path.
 */
export function safeNext(next: string | undefined, basePath = ""): string {
  const fallback = `${basePath}/artifacts`;
  if (!next || !next.startsWith("/") || /[\\\s]/.test(next)) return fallback;
  try {
    const origin = "http://svc.invalid";
    const url = new URL(next, origin);
    if (url.origin !== origin || url.pathname.startsWith("//") || !url.pathname.startsWith(`${basePath}/`) || /%(2f|5c|2e)/i.test(url.pathname)) return fallback;
    return url.pathname + url.search + url.hash;
  } catch {
    return fallback;
  }
}

/**
 * A page's query parameter: its text, or the list of them when the address repeats it. A page answers
 * a repeated one with an HTML error page ({@link repeatedParam}), not with the API's JSON 400.
 */
const pageParam = v.optional(v.union([v.string(), v.array(v.string())]));

/** The name of the first query parameter the address gives more than once, if any. */
function repeatedParam(query: Record<string, unknown>): string | undefined {
  return Object.entries(query).find(([, value]) => Array.isArray(value))?.[0];
}

/** The sign-in page's body (`base`: the service's path prefix), with an error to show (after a failed form post). */
function signInBody(base: string, next: string, error = "", identity = ""): RawHtml {
  const tokens = `${base}/tokens`;
  return html`<section class="sign-in" aria-labelledby="sign-in-title">
  <h1 id="sign-in-title">Sign in</h1>
  <p class="meta">${next === tokens || next.startsWith(`${tokens}?`) ? "Sign in to manage your API tokens." : "Sign in to open your artifacts."}</p>
  <form method="post" action="${`${base}/sign-in`}" data-sign-in data-next="${next}" novalidate>
    <input type="hidden" name="next" value="${next}">
    <label for="identity">Identity</label>
    <input id="identity" name="identity" autocomplete="username" required autofocus value="${identity}">
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="current-password" required>
    <p class="form-error" role="alert" data-error>${error}</p>
    <button type="submit" class="button">Sign in</button>
  </form>
</section>`;
}

/**
 * The artifact pages (spec 4.1, 2.9–2.11, 5): `/sign-in`, `/artifacts` (the list with previews) and
 * `/artifacts/{id}` (`?v=`, `?part=`) for the signed-in browser session; decks open in sandboxed frames
 * from short-lived links under `/artifact-frames/`; the pages' CSS and scripts under `/assets/pages/`.
 */
export default definePlugin({
  name: "pages",
  deps: { sessions: SessionService, artifacts: ArtifactStore, embeds: EmbedRenderer, sheets: SheetData, files: FileStore, tokens: TokenService },
  setup({ routes, config, project, log }, { sessions, artifacts, embeds, sheets, files, tokens }) {
    const frames = new FrameLinks(config.frameLinkTtlMs);
    const services: PageServices = { artifacts, embeds, sheets, files, frames };
    /** The service's path prefix (`SVC_API_PUBLIC_ORIGIN`'s path): every link, script and redirect of the pages goes under it. */
    const base = config.basePath;
    const signIn = (url: URL) => new Response(null, { status: 303, headers: { location: `${base}/sign-in?${new URLSearchParams({ next: base + url.pathname + url.search })}`, "cache-control": "no-store" } });
    /**
     * The browser session's reader and the header's user, or undefined when signed out. A renewed session's
     * cookie goes out again with a fresh Max-Age (h3 adds `event.res.headers` to the page's response).
     */
    const sessionOf = async (event: H3Event): Promise<{ principal: Principal; user: ShellUser } | undefined> => {
      const token = readCookie(event.req.headers.get("cookie"), SESSION_COOKIE) ?? "";
      const session = await sessions.resolve(token, true);
      if (!session) return undefined;
      if (session.renewed) event.res.headers.append("set-cookie", sessions.cookie(token, event.req));
      return { principal: session.principal, user: { id: session.principal.id, name: project.identityName(session.principal.id) ?? session.principal.id } };
    };
    /** The error page for `err`; `artifactId`: the page's own artifact (any other id reads "another artifact"). */
    const failed = (err: unknown, user?: ShellUser, artifactId?: string): Response => {
      // the reader's words: no artifact ids (the API's errors and the log keep them)
      const said = (message: string) => withoutArtifactIds(message, (id) => (id === artifactId ? "this artifact" : "another artifact"));
      if (isApiError(err) && err.code === "not_found") return errorPage(404, "Not found", said(err.message.replace(/^No artifact ".*"$/, "There is no such artifact, or it is not yours.")), { base, user });
      if (isApiError(err)) return errorPage(err.status, "Something is wrong with this request", said(err.message), { base, user });
      log.error({ err }, "page failed");
      return errorPage(500, "Something went wrong", "The page could not be shown; the server's log says why.", { base, user });
    };

    routes.add({
      method: "GET",
      path: "/",
      summary: "The service's front page: to the artifacts page",
      description: "Answers 303 to `/artifacts` (under the proxy's path prefix when there is one), which sends a signed-out browser on to /sign-in.",
      tags: ["pages"],
      auth: "none",
      responses: { 303: { description: "To the artifacts page" } },
      handler: () => new Response(null, { status: 303, headers: { location: `${base}/artifacts`, "cache-control": "no-store" } }),
    });

    routes.add({
      method: "GET",
      path: "/sign-in",
      summary: "Sign-in page (HTML)",
      description: "A form that signs in (POST /api/auth/sign-in) and goes back to `next` (a path of this server).",
      tags: ["pages"],
      auth: "none",
      query: v.object({ next: v.optional(v.string()) }),
      responses: { 200: HTML[200] },
      handler: ({ query }) => page(shell({ base, title: "Sign in", body: signInBody(base, safeNext(query.next, base)), bodyClass: "signed-out" })),
    });

    routes.add({
      method: "POST",
      path: "/sign-in",
      summary: "Sign in with the form (no JavaScript)",
      description: "The sign-in page's form posted as `application/x-www-form-urlencoded` (identity, password, next): sets the session cookie and answers 303 to `next`; a wrong password shows the page again (401). From an allowed Origin only. With JavaScript the page posts to /api/auth/sign-in instead.",
      tags: ["pages"],
      auth: "none",
      bodyMode: "raw",
      rawBodyDoc: { contentType: "application/x-www-form-urlencoded", description: "identity, password, next", schema: { type: "object", properties: { identity: { type: "string" }, password: { type: "string" }, next: { type: "string" } }, required: ["identity", "password"] } },
      responses: { 303: { description: "Signed in: to `next`" }, 401: { description: "Wrong identity or password: the page again", contentType: "text/html" }, 403: { description: "`origin_not_allowed`" }, 429: { description: "Too many failed sign-ins for the identity or from the address: the page again, saying when to retry (`Retry-After`)", contentType: "text/html" } },
      handler: async ({ event }) => {
        assertAllowedOrigin(event.req, config.allowedOrigins);
        const form = new URLSearchParams((await event.req.text()).slice(0, 8192));
        const next = safeNext(form.get("next") ?? undefined, base);
        const identity = form.get("identity") ?? "";
        try {
          const { token } = await sessions.signIn(identity, form.get("password") ?? "", event.req.ip);
          return new Response(null, { status: 303, headers: { location: next, "set-cookie": sessions.cookie(token, event.req), "cache-control": "no-store" } });
        } catch (err) {
          if (!isApiError(err)) throw err;
          if (err.code === "too_many_requests") return page(shell({ base, title: "Sign in", body: signInBody(base, next, `${err.message}.`, identity), bodyClass: "signed-out" }), { status: 429, headers: err.headers });
          return page(shell({ base, title: "Sign in", body: signInBody(base, next, "Wrong identity or password.", identity), bodyClass: "signed-out" }), { status: 401 });
        }
      },
    });

    routes.add({
      method: "GET",
      path: "/artifacts",
      summary: "Artifacts page (HTML)",
      description: "The artifacts you can open, most recently updated first, each with a preview of its latest version (spec 4.1). `kind` filters. Browser session; signed out, it sends you to /sign-in and back.",
      tags: ["pages"],
      auth: "none",
      query: v.object({ kind: pageParam, after: pageParam }),
      responses: { ...HTML, 400: { description: "An unknown kind, or a query parameter given twice: an HTML page saying so", contentType: "text/html" } },
      handler: async ({ event, query: raw }) => {
        const session = await sessionOf(event);
        if (!session) return signIn(event.url);
        const twice = repeatedParam(raw);
        if (twice) return errorPage(400, "Bad address", `The address gives "${twice}" more than once.`, { base, user: session.user });
        const query = raw as { kind?: string; after?: string };
        const kind = query.kind === undefined || query.kind === "" ? undefined : (ARTIFACT_KINDS as readonly string[]).includes(query.kind) ? (query.kind as (typeof ARTIFACT_KINDS)[number]) : null;
        if (kind === null) return errorPage(400, "No such kind", `Artifacts are of kind ${ARTIFACT_KINDS.join(", ")}.`, { base, user: session.user });
        try {
          return page(await listPage(services, { base, reader: { kind: "identity", id: session.principal.id }, user: session.user, kind, after: query.after, locale: localeOf(event.req) }));
        } catch (err) {
          return failed(err, session.user);
        }
      },
    });

    routes.add({
      method: "GET",
      path: "/artifacts/:artifactId",
      summary: "Artifact page (HTML)",
      description: "One artifact (spec 4.1): `v` picks a version (default the latest; a link to an older version stays on it), `part` a section slug, a sheet, `chart=<name>` or a slide number. Documents and sheets render here; decks open in a sandboxed frame. Only the owner opens it (404 page for others).",
      tags: ["pages"],
      auth: "none",
      params: v.object({ artifactId: v.string() }),
      query: v.object({ v: pageParam, part: pageParam }),
      responses: { ...HTML, 400: { description: "A query parameter given twice: an HTML page saying so", contentType: "text/html" } },
      handler: async ({ event, params, query: raw }) => {
        const session = await sessionOf(event);
        if (!session) return signIn(event.url);
        const twice = repeatedParam(raw);
        if (twice) return errorPage(400, "Bad address", `The address gives "${twice}" more than once.`, { base, user: session.user });
        const query = raw as { v?: string; part?: string };
        const version = query.v === undefined || query.v === "" ? undefined : /^[1-9]\d{0,8}$/.test(query.v) ? Number(query.v) : null;
        if (version === null) return errorPage(404, "Not found", `There is no version "${query.v}": versions are numbered 1, 2, …`, { base, user: session.user });
        try {
          return page(await artifactPage(services, { base, reader: { kind: "identity", id: session.principal.id }, user: session.user, artifactId: params.artifactId, v: version, part: query.part?.slice(0, 500), locale: localeOf(event.req) }));
        } catch (err) {
          return failed(err, session.user, params.artifactId);
        }
      },
    });

    routes.add({
      method: "GET",
      path: "/tokens",
      summary: "API tokens page (HTML)",
      description: "Your API tokens (spec 5 personal tokens): name, created, expiry, last use and state, a revoke button for each working one, and a form that makes one (the page calls POST /api/tokens and shows the secret once). Browser session; signed out, it sends you to /sign-in and back.",
      tags: ["pages"],
      auth: "none",
      responses: { 200: HTML[200], 303: HTML[303] },
      handler: async ({ event }) => {
        const session = await sessionOf(event);
        if (!session) return signIn(event.url);
        try {
          return page(tokensPage({ base, user: session.user, tokens: await tokens.listFor(session.principal.id), locale: localeOf(event.req) }));
        } catch (err) {
          return failed(err, session.user);
        }
      },
    });

    routes.add({
      method: "GET",
      path: "/artifact-frames/:token/**:path",
      summary: "A deck's files in its sandboxed frame",
      description: "Served from a short-lived link the deck page makes (spec 2.10): `index.html` with the kit, the theme and the artifact addresses resolved for the reader the link was made for; the deck's own files; images and screenshots of other artifacts the reader can open. The document is sandboxed (opaque origin) with a CSP allowing only its own files and jsDelivr, cdnjs, unpkg and Google Fonts. 410 when the link has expired.",
      tags: ["pages"],
      auth: "none",
      params: v.object({ token: v.string(), path: v.string() }),
      query: v.object({ part: v.optional(v.string()), thumbnail: v.optional(v.string()) }),
      responses: { 200: { description: "The file" }, 304: { description: "Not modified (If-None-Match)" }, 404: { description: "No such link or file (plain text)", contentType: "text/plain" }, 410: { description: "The link has expired: reload the page that made it (plain text)", contentType: "text/plain" } },
      handler: async ({ event, params, query }) => serveFrame(services, { base, publicOrigin: config.apiPublicOrigin, req: event.req, url: event.url, token: params.token, path: params.path, thumbnail: query.thumbnail !== undefined, locale: localeOf(event.req), origins: [...new Set([event.url.origin, new URL(config.publicOrigin).origin])] }),
    });

    const assets: Record<string, { type: string; load: () => Promise<string> | string }> = {
      "tokens.css": { type: "text/css", load: () => kitAssets().tokens },
      "pages.css": { type: "text/css", load: () => fs.readFileSync(path.join(here, "assets", "pages.css"), "utf8") },
      "pages.js": { type: "text/javascript", load: () => fs.readFileSync(path.join(here, "assets", "pages.js"), "utf8") },
      "sheet.css": { type: "text/css", load: () => sheetCss() },
      "sheet.js": { type: "text/javascript", load: () => browserScript("sheet") },
      "charts.js": { type: "text/javascript", load: () => browserScript("charts") },
      "echarts.js": { type: "text/javascript", load: () => fs.readFileSync(echartsBrowserPath(), "utf8") },
    };
    const cache = new Map<string, Promise<string>>();
    routes.add({
      method: "GET",
      path: "/assets/pages/:name",
      summary: "The pages' CSS and scripts",
      description: `One of: ${Object.keys(assets).join(", ")}.`,
      tags: ["pages"],
      auth: "none",
      params: v.object({ name: v.string() }),
      responses: { 200: { description: "CSS or JavaScript" }, 404: { description: "No such asset (plain text)", contentType: "text/plain" } },
      handler: async ({ params }) => {
        const asset = Object.hasOwn(assets, params.name) ? assets[params.name]! : undefined;
        if (!asset) return new Response(`No asset "${params.name}"`, { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
        if (!cache.has(params.name)) cache.set(params.name, Promise.resolve(asset.load()));
        const body = await cache.get(params.name)!;
        return new Response(body, { headers: { "content-type": `${asset.type}; charset=utf-8`, "cache-control": "no-cache", "x-content-type-options": "nosniff" } });
      },
    });
  },
});
