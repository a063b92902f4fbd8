import * as v from "valibot";
import {
  ActionRunner,
  ApiError,
  DownloadUrlSchema,
  FILE_UPLOAD_MAX_BYTES,
  MAX_DOWNLOAD_URL_TTL_MS,
  FileReferenceSchema,
  FileStore,
  OntologyStore,
  can,
  definePlugin,
  fileProperties,
  isFileValue,
  own,
  requirePermission,
  serveFile,
  type Principal,
} from "../../core/plugin-api";
import { receiveFile } from "./upload";
import { registerUploadRoutes } from "./uploads";

const PropertyPath = v.pipe(
  v.string(),
  v.regex(/^\/properties\/[A-Za-z_][A-Za-z0-9_]*$/, "must be a property path /properties/<name>"),
  v.description("The property holding the file, as `/properties/<name>`"),
);
const Disposition = v.optional(v.pipe(v.picklist(["attachment", "inline"]), v.description("`attachment` (default) or `inline`; HTML, SVG, XML and scripts are always attachments")));
const ObjectParams = v.object({ objectTypeId: v.string(), primaryId: v.string() });
const ExpiresInMs = v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_DOWNLOAD_URL_TTL_MS), v.description("Lifetime in milliseconds, default 3,600,000 (1 hour), at most 7 days")));
const FILE_HEADERS = "Answers the bytes with `Content-Type`, `Content-Disposition` (safe filename), `ETag` (the SHA-256), `Accept-Ranges` and `X-Content-Type-Options: nosniff`; one `Range` gets 206, a range outside the file 416.";

/** The file id held at the JSON pointer `path` of `value` (e.g. `/params/file` of a run record), if a file reference is there. */
function fileAt(value: unknown, path: string): string | undefined {
  let node = value;
  for (const part of path.split("/").slice(1)) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return isFileValue(node) ? node.id : undefined;
}

/**
 * Files (spec 2.6, 4.1, 4.3, 5, 8):
 *
 * - `POST /api/files`: one multipart file part (at most 25 MiB) streamed to storage; answers the file
 *   reference. A file id alone reads nothing: files are read through the owner that holds them.
 * - `GET /api/objects/:objectTypeId/:primaryId/files/content?path=/properties/<name>`: the bytes of an
 *   object's `file` property, after `view:object:<type>`.
 * - `GET /api/actions/:actionId/runs/:runId/files/content?path=/params/...|/result/...`: a file a run
 *   holds in its params or result, after `run:action:<id>`.
 * - Download URLs: created for a file the caller may read through its owner, revoked by their creator;
 *   `GET /api/download/:secret` needs no session (the URL is the capability) and answers 410 once
 *   expired or revoked.
 */
export default definePlugin({
  name: "files",
  deps: { files: FileStore, ontology: OntologyStore, actions: ActionRunner },
  async setup({ routes, project, config, hooks, log }, { files, ontology, actions }) {
    // the domain types these routes answer, named in the OpenAPI document (FileReference, DownloadUrl)
    routes.component("FileReference", FileReferenceSchema);
    routes.component("DownloadUrl", DownloadUrlSchema);
    registerUploadRoutes({ routes, hooks, log, config }, files);
    /** The file id an object holds at `path`, after the view check (404 unknown type, 403, 404 no object, 400 not a file property); the ids as the route decoded them. */
    const objectFile = async (principal: Principal, objectTypeId: string, primaryId: string, path: string) => {
      const type = own(project.definition.objectTypes, objectTypeId);
      if (!type) throw new ApiError("not_found", `Unknown object type "${objectTypeId}"`);
      requirePermission(principal, can.view(objectTypeId));
      const name = path.slice("/properties/".length);
      if (!fileProperties(type.properties).includes(name)) throw new ApiError("not_found", `${objectTypeId} has no file property "${name}"; its file properties are: ${fileProperties(type.properties).join(", ") || "none"}`, { path, fileProperties: fileProperties(type.properties) });
      const object = await ontology.getObject(objectTypeId, primaryId);
      if (!object) throw new ApiError("not_found", `No ${objectTypeId} "${primaryId}"`);
      const value = object.properties[name];
      if (!isFileValue(value)) throw new ApiError("not_found", `${objectTypeId} "${primaryId}" holds no file at ${path}`, { path });
      return value.id;
    };
    const creator = (principal: Principal) => `${principal.type}:${principal.id}`;

    routes.add({
      method: "POST",
      path: "/api/files",
      summary: "Upload a file",
      description: [
        "Multipart form data with exactly one file part named `file`, and optionally a `name` field (at most 255 characters; else the part's filename names the file). No other parts.",
        `At most ${FILE_UPLOAD_MAX_BYTES} bytes (25 MiB): larger bodies are refused with 413 \`payload_too_large\` whether or not Content-Length is sent, and nothing is stored; use an upload session (\`/api/files/uploads\`, tus) for larger files.`,
        "The content type is checked against the bytes: when they say otherwise, the reference keeps what they are as `contentType` and the declared type as `declaredContentType`.",
        "The reference's id reads nothing by itself: attach it to an object's `file` property (or pass it to an action) and read it through that owner. Files never referenced are removed after `SVC_FILE_RETENTION_MS` (24 h).",
      ].join("\n\n"),
      tags: ["files"],
      auth: "bearer",
      bodyMode: "raw",
      rawBodyDoc: {
        contentType: "multipart/form-data",
        description: "One file part named `file` and an optional `name` field; no other parts",
        schema: { type: "object", required: ["file"], additionalProperties: false, properties: { name: { type: "string", maxLength: 255, description: "The file's name (default: the part's filename)" }, file: { type: "string", format: "binary", description: `The file, at most ${FILE_UPLOAD_MAX_BYTES} bytes` } } },
      },
      responses: {
        200: { description: "The stored file reference", schema: FileReferenceSchema },
        400: { description: "No file part, several file parts, another part than `file` and `name`, a name over 255 characters, or a malformed body" },
        413: { description: "The file is larger than 25 MiB" },
        415: { description: "The body is not multipart/form-data" },
      },
      handler: ({ event, principal }) => receiveFile(event.req, files, FILE_UPLOAD_MAX_BYTES, { signal: event.req.signal, createdBy: principal!.id }),
    });

    for (const method of ["GET", "HEAD"] as const) {
      routes.add({
        method,
        path: "/api/objects/:objectTypeId/:primaryId/files/content",
        summary: method === "GET" ? "Read a file an object holds" : "Check a file an object holds (headers only)",
        description: `Spec 4.1, 4.3: the file is read through the object holding it, after checking that the caller may view that object (\`view:object:<objectTypeId>\`). ${FILE_HEADERS}`,
        tags: ["files"],
        auth: "bearer",
        params: ObjectParams,
        query: v.object({ path: PropertyPath, disposition: Disposition }),
        responses: { 200: { description: "The file's bytes" }, 206: { description: "The requested range" }, 304: { description: "Not modified (If-None-Match)" }, 416: { description: "Range outside the file" } },
        handler: async ({ event, principal, params, query }) => serveFile(event.req, files, await objectFile(principal!, params.objectTypeId, params.primaryId, query.path), query.disposition),
      });
    }

    routes.add({
      method: "GET",
      path: "/api/actions/:actionId/runs/:runId/files/content",
      summary: "Read a file an action run holds",
      description: `A file reference \`{ id }\` in the run's params or result, by JSON pointer (\`/params/<name>\`, \`/result/<name>\`, nested paths too), after \`run:action:<actionId>\`. ${FILE_HEADERS}`,
      tags: ["files"],
      auth: "bearer",
      params: v.object({ actionId: v.string(), runId: v.string() }),
      query: v.object({ path: v.pipe(v.string(), v.regex(/^\/(params|result)(\/[^/]+)+$/, "must be a JSON pointer under /params or /result"), v.description("Where the run holds the file, e.g. `/params/file`")), disposition: Disposition }),
      responses: { 200: { description: "The file's bytes" }, 206: { description: "The requested range" }, 304: { description: "Not modified (If-None-Match)" }, 416: { description: "Range outside the file" } },
      handler: async ({ event, principal, params, query }) => {
        requirePermission(principal!, can.runAction(params.actionId));
        const run = await actions.get(params.runId);
        if (run.actionId !== params.actionId) throw new ApiError("not_found", `No run "${params.runId}" of ${params.actionId}`);
        const fileId = fileAt(run, query.path);
        if (!fileId || !(await files.references(fileId)).some((r) => r.kind === "run" && r.id === run.runId && r.path === query.path)) {
          throw new ApiError("not_found", `Run ${params.runId} holds no file at ${query.path}`, { path: query.path });
        }
        return serveFile(event.req, files, fileId, query.disposition);
      },
    });

    routes.add({
      method: "POST",
      path: "/api/objects/:objectTypeId/:primaryId/files/download-urls",
      summary: "Create a download URL for a file an object holds",
      description: "Spec 2.6, 4.3: a distinct URL per call at `SVC_API_PUBLIC_ORIGIN` (503 `not_configured` when it is unset: local addresses are unreachable for external services). Whoever holds the URL reads that one file with no session until it expires (default 1 hour) or is revoked. Needs view access to the object.",
      tags: ["files"],
      auth: "bearer",
      params: ObjectParams,
      body: v.strictObject({ path: PropertyPath, expiresInMs: ExpiresInMs }),
      responses: { 200: { description: "The URL (shown once), its id and expiry", schema: DownloadUrlSchema }, 503: { description: "`not_configured`: `SVC_API_PUBLIC_ORIGIN` is not set, so there is no public address to put in the URL" } },
      handler: async ({ principal, params, body }) => {
        const fileId = await objectFile(principal!, params.objectTypeId, params.primaryId, body.path);
        return files.createDownloadUrl(fileId, { expiresInMs: body.expiresInMs, publicOrigin: config.apiPublicOrigin, createdBy: creator(principal!) });
      },
    });

    routes.add({
      method: "POST",
      path: "/api/download-urls/:id/revoke",
      summary: "Revoke a download URL",
      description: "The URL answers 410 `download_url_revoked` from then on. Through this route only its creator revokes it (server code may revoke any URL by id with `blobs.revokeDownloadUrl`).",
      tags: ["files"],
      auth: "bearer",
      params: v.object({ id: v.string() }),
      body: v.strictObject({}),
      responses: { 200: { description: "Revoked", schema: v.object({ id: v.string(), revokedAt: v.string() }) } },
      handler: ({ principal, params }) => files.revokeDownloadUrl(params.id, { createdBy: creator(principal!) }),
    });

    for (const method of ["GET", "HEAD"] as const) {
      routes.add({
        method,
        path: "/api/download/:secret",
        summary: method === "GET" ? "Read a file through a download URL" : "Check a download URL (headers only)",
        description: `Spec 2.6, 5: no session; the URL is the capability and serves only its one file. 410 \`download_url_expired\` or \`download_url_revoked\` once it no longer does. ${FILE_HEADERS}`,
        tags: ["files"],
        auth: "none",
        // opened from chats and mail that add their own parameters
        anyQuery: true,
        params: v.object({ secret: v.string() }),
        responses: { 200: { description: "The file's bytes" }, 206: { description: "The requested range" }, 304: { description: "Not modified (If-None-Match)" }, 410: { description: "Expired or revoked" }, 416: { description: "Range outside the file" } },
        handler: async ({ event, params }) => serveFile(event.req, files, (await files.resolveDownloadUrl(params.secret)).id),
      });
    }
  },
});
