import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { NOT_FRAMED, definePlugin } from "../../core/plugin-api";

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * `/viewer`: a minimal live event viewer. It signs in for a browser session (POST /api/auth/sign-in),
 * follows /ws/events (resuming from its last cursor on reconnect) and can run `diagnostics.noop` with
 * the CSRF token to make events appear. Plain HTML and JavaScript, served from this server, under the
 * proxy's path prefix when there is one (`Config.basePath`).
 */
export default definePlugin({
  name: "viewer",
  setup({ routes, config }) {
    // under the service's path prefix (a URL path: no quotes or angle brackets), which app.js reads from <html data-base>
    const base = config.basePath;
    const page = fs.readFileSync(path.join(here, "page.html"), "utf8").replaceAll("{{BASE}}", () => base);
    const script = fs.readFileSync(path.join(here, "app.js"), "utf8");
    const send = (body: string, type: string) => new Response(body, { headers: { "content-type": type, "cache-control": "no-cache" } });
    routes.add({ method: "GET", path: "/viewer", summary: "Live event viewer (HTML)", tags: ["viewer"], auth: "none", responses: { 200: { description: "HTML page", contentType: "text/html" } }, handler: () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", ...NOT_FRAMED } }) });
    routes.add({ method: "GET", path: "/viewer/app.js", summary: "Live event viewer script", tags: ["viewer"], auth: "none", responses: { 200: { description: "JavaScript", contentType: "application/javascript" } }, handler: () => send(script, "application/javascript; charset=utf-8") });
  },
});
