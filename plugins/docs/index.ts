import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import * as v from "valibot";
import { ApiError, NOT_FRAMED, definePlugin } from "../../core/plugin-api";

const require = createRequire(import.meta.url);
const SWAGGER_DIR = path.dirname(require.resolve("swagger-ui-dist/package.json"));
const ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
};

/** The reference's page, its assets and script under `base` (the service's path prefix, a URL path: no quotes or angle brackets). */
const page = (base: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<title>svc API reference</title>
<link rel="stylesheet" href="${base}/docs/assets/swagger-ui.css" />
<link rel="icon" href="${base}/docs/assets/favicon-32x32.png" />
</head>
<body>
<div id="ui"></div>
<script src="${base}/docs/assets/swagger-ui-bundle.js"></script>
<script src="${base}/docs/init.js"></script>
</body>
</html>`;
const init = (base: string) => `window.ui = SwaggerUIBundle({ url: ${JSON.stringify(`${base}/docs/openapi.json`)}, dom_id: "#ui", deepLinking: true, persistAuthorization: true });`;

/**
 * `GET /docs` (spec 1): the OpenAPI 3.1 reference, rendered by Swagger UI served from this server
 * (no CDN), and `GET /docs/openapi.json`, generated from the routes' own valibot schemas. Operations
 * that accept bearer tokens carry `security: bearerAuth` and `x-svc-bearer-auth: true`. Behind a proxy's
 * path prefix (`SVC_API_PUBLIC_ORIGIN` with a path), the page loads everything under it and the
 * document's `servers` names it, so "Try it out" calls the service through the proxy.
 */
export default definePlugin({
  name: "docs",
  setup({ routes, project, config }) {
    const base = config.basePath;
    const PAGE = page(base);
    const INIT = init(base);
    let document: string | undefined;
    const doc = () =>
      (document ??= JSON.stringify(
        routes.openapi({ title: `${project.definition.name} API`, version: "0.0.1", description: `Project data service for **${project.definition.name}** (\`${project.id}\`). Authenticate with \`Authorization: Bearer <API_TOKEN>\` on operations marked with a lock. Errors are \`{ "error": { "code", "message", "details"? } }\`.` }, base),
      ));
    const send = (body: string | Uint8Array, type: string) => new Response(body as string, { headers: { "content-type": type, "cache-control": "no-cache" } });
    routes.add({ method: "GET", path: "/docs", summary: "API reference (HTML)", tags: ["docs"], auth: "none", responses: { 200: { description: "HTML page", contentType: "text/html" } }, handler: () => new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", ...NOT_FRAMED } }) });
    routes.add({ method: "GET", path: "/docs/init.js", summary: "API reference bootstrap script", tags: ["docs"], auth: "none", responses: { 200: { description: "JavaScript", contentType: "application/javascript" } }, handler: () => send(INIT, "application/javascript; charset=utf-8") });
    routes.add({ method: "GET", path: "/docs/openapi.json", summary: "OpenAPI 3.1 document", tags: ["docs"], auth: "none", responses: { 200: { description: "OpenAPI document", contentType: "application/json" } }, handler: () => send(doc(), "application/json; charset=utf-8") });
    routes.add({
      method: "GET",
      path: "/docs/assets/:file",
      summary: "API reference assets",
      tags: ["docs"],
      auth: "none",
      params: v.object({ file: v.string() }),
      responses: { 200: { description: "Static file (CSS, JavaScript or PNG)" }, 404: { description: "`not_found`: no such asset" } },
      handler: ({ params }) => {
        const type = ASSETS[params.file];
        if (!type) throw new ApiError("not_found", `No asset "${params.file}"`);
        return send(fs.readFileSync(path.join(SWAGGER_DIR, params.file)), type);
      },
    });
  },
});
