/**
 * Upload sessions for large files (spec 4.1 `/api/files/uploads`, 8; issue 10): the tus resumable-upload
 * protocol 1.0.0 (https://tus.io/protocols/resumable-upload) served by `@tus/server`'s `handleWeb`, so
 * existing clients (tus-js-client, Uppy) work unchanged. Extensions: creation, creation-with-upload,
 * creation-defer-length, termination, expiration.
 *
 * This module declares the routes (with their OpenAPI documentation) and the expiry timer. What answers
 * them, tus over the session store that fits the blob store, is `./upload-service.ts`, imported on the
 * first request or the timer's first pass: `@tus/server` and the stores stay out of start-up (issue 15).
 */
import fs from "node:fs";
import path from "node:path";
import * as v from "valibot";
import { FileReferenceSchema, lazily, s3UploadTargetOf, type FileStore, type PluginContext, type Principal } from "../../core/plugin-api";
import { UPLOADS_PATH } from "./upload-sessions";

const UploadIdParams = v.object({ id: v.pipe(v.string(), v.description("The upload's id: the last segment of the `Location` the creation answered")) });

const HEADER_NOTES = {
  tus: "Every request but OPTIONS sends `Tus-Resumable: 1.0.0` (else 412 with `Tus-Version`).",
  create:
    "`Upload-Length` (bytes, at most `SVC_UPLOAD_MAX_BYTES`, default 5 GiB) or `Upload-Defer-Length: 1`; optional `Upload-Metadata` (comma-separated `key base64(value)` pairs): `filename` or `name` names the file, `filetype` or `type` declares its content type (checked against the bytes when the upload finishes, as for `POST /api/files`).",
};

/**
 * Mounts the tus upload-session routes (spec 4.1 `/api/files/uploads`, 8; issue 10) on `ctx.routes`:
 *
 * - `POST /api/files/uploads` creates a session (201, `Location` at `SVC_API_PUBLIC_ORIGIN` when set,
 *   else at the request's own origin; `Upload-Expires`); with `Content-Type:
 *   application/offset+octet-stream` the body is its first bytes (creation-with-upload);
 * - `HEAD /api/files/uploads/:id` answers `Upload-Offset` (where to resume) and `Upload-Length`;
 * - `PATCH /api/files/uploads/:id` appends bytes at `Upload-Offset` (204 with the new offset); the
 *   request that completes the upload answers 200 (201 for a creation that carried every byte) with
 *   `Upload-File-Id` and the file reference as JSON;
 * - `DELETE /api/files/uploads/:id` terminates a session (a finished upload's file stays);
 * - `GET /api/files/uploads/:id` answers the file reference once finished (404 before);
 * - `OPTIONS` on both paths (no authentication) answers `Tus-Version`, `Tus-Extension`, `Tus-Max-Size`.
 *
 * Every other request is authenticated like every API call (`auth: "bearer"`: a bearer token or a
 * browser session) and sees only its own sessions (404 for anyone else's). Limits: `maxSize` =
 * `config.uploadMaxBytes` bytes (413 `payload_too_large`); sessions expire `config.uploadSessionTtlMs`
 * ms after their last chunk (410 `upload_expired`), and a timer (every quarter of the TTL, at most
 * hourly) removes expired ones (its first pass, or the first request, opens the session store and tus:
 * `./upload-service.ts`). With `SVC_FILE_STORAGE=s3` (`files.blobs` is the S3 backend) the
 * bytes go to the same bucket under `uploads/` (@tus/s3-store), otherwise under `<dataDir>/uploads`
 * (@tus/file-store).
 *
 * A finished upload becomes a file through `files.upload` (content type from the bytes, SHA-256,
 * content addressing); a process that dies during that step leaves the complete upload, which the
 * next `GET` (or a final `PATCH`) converts.
 *
 * @param ctx the files plugin's context: `routes`, `hooks` (the expiry timer, closing the S3 client),
 *   `log`, `config` (`dataDir`, `uploadMaxBytes`, `uploadSessionTtlMs`, `apiPublicOrigin`, `allowedOrigins`)
 * @param files the file store finished uploads go into
 * @throws Error when `<dataDir>/uploads` cannot be created (local storage)
 */
export function registerUploadRoutes(ctx: Pick<PluginContext, "routes" | "hooks" | "log" | "config">, files: FileStore): void {
  const { routes, hooks, log, config } = ctx;
  const ttlMs = config.uploadSessionTtlMs;
  // a directory that cannot be made fails the start, not the first upload
  if (!s3UploadTargetOf(files.blobs)) fs.mkdirSync(path.join(config.dataDir, "uploads"), { recursive: true });
  let opened = false;
  const openService = lazily(async () => (await import("./upload-service")).openUploadService({ log, config }, files));
  const service = () => ((opened = true), openService());
  const viaTus = async (req: Request, principal: Principal | undefined, urlId?: string) => (await service()).handle(req, principal, urlId);

  const common = { tags: ["files"] };
  const errorsOfAll = {
    401: { description: "No valid bearer token or browser session (`unauthorized`)" },
    403: { description: "A browser session without its CSRF token or from an origin that is not allowed" },
    // every route reads or writes the sessions' storage
    503: { description: "The S3 bucket did not answer in time (`unavailable`, naming the bucket; `SVC_FILE_STORAGE=s3`)" },
  };
  const tusVersion = { 412: { description: "`Tus-Resumable` missing or not `1.0.0` (`precondition_failed`; the answer carries `Tus-Version: 1.0.0`)" } };

  routes.add({
    ...common,
    method: "POST",
    path: UPLOADS_PATH,
    summary: "Create an upload session (tus)",
    description: [
      "tus 1.0.0 creation (https://tus.io/protocols/resumable-upload): for files larger than `POST /api/files` takes (25 MiB), with resumable chunks. Works with tus-js-client and Uppy as they are.",
      `${HEADER_NOTES.tus} ${HEADER_NOTES.create}`,
      "Answers 201 with `Location` (the upload URL, at `SVC_API_PUBLIC_ORIGIN` when set, else at the request's origin) and `Upload-Expires` (the session expires `SVC_UPLOAD_SESSION_TTL_MS`, default 24 h, after its last chunk).",
      "creation-with-upload: with `Content-Type: application/offset+octet-stream` the body is the first bytes (the answer then has `Upload-Offset`); when it holds all of them the answer also carries `Upload-File-Id` and the file reference as JSON.",
      "The session belongs to the caller: other identities get 404 for it.",
    ].join("\n\n"),
    auth: "bearer",
    bodyMode: "raw",
    rawBodyDoc: { contentType: "application/offset+octet-stream", description: "Optional: the first bytes of the file (creation-with-upload); usually empty" },
    responses: {
      201: { description: "Created: `Location`, `Upload-Expires`, `Tus-Resumable`; with creation-with-upload `Upload-Offset`, and when complete `Upload-File-Id` with the file reference as JSON" },
      400: { description: "Neither or both of `Upload-Length` and `Upload-Defer-Length`, a malformed tus header or `Upload-Metadata`, or a `filetype` that is not a media type (`invalid_request`)" },
      ...errorsOfAll,
      ...tusVersion,
      413: { description: "`Upload-Length` (or the bytes sent) over `SVC_UPLOAD_MAX_BYTES` (`payload_too_large`, details `limitBytes`)" },
      501: { description: "`Upload-Concat` (the concatenation extension is not offered; `not_implemented`)" },
    },
    handler: ({ event, principal }) => viaTus(event.req as Request, principal),
  });

  for (const p of [UPLOADS_PATH, `${UPLOADS_PATH}/:id`]) {
    routes.add({
      ...common,
      method: "OPTIONS",
      path: p,
      summary: p === UPLOADS_PATH ? "Discover the tus capabilities" : "Discover the tus capabilities (of an upload URL)",
      description: "No authentication (CORS preflights and capability discovery). Answers 204 with `Tus-Version: 1.0.0`, `Tus-Extension: creation,creation-with-upload,creation-defer-length,termination,expiration`, `Tus-Max-Size` (`SVC_UPLOAD_MAX_BYTES`) and the CORS headers (`Access-Control-Allow-Methods`, `-Headers`, `-Max-Age`; origins from `SVC_ALLOWED_ORIGINS`).",
      auth: "none",
      ...(p === UPLOADS_PATH ? {} : { params: UploadIdParams }),
      responses: { 204: { description: "The capabilities, in headers" } },
      handler: ({ event }) => viaTus(event.req as Request, undefined),
    });
  }

  routes.add({
    ...common,
    method: "HEAD",
    path: `${UPLOADS_PATH}/:id`,
    summary: "Ask an upload's offset (tus)",
    description: `Where to resume after a dropped connection. ${HEADER_NOTES.tus} Answers \`Upload-Offset\` (bytes received), \`Upload-Length\` (or \`Upload-Defer-Length: 1\`), \`Upload-Metadata\` and \`Cache-Control: no-store\`; a finished upload has \`Upload-Offset\` = \`Upload-Length\` and \`Upload-File-Id\`. Error answers have no body (HEAD).`,
    auth: "bearer",
    params: UploadIdParams,
    responses: {
      200: { description: "The offset, in headers" },
      400: { description: "A malformed tus header (`invalid_request`)" },
      ...errorsOfAll,
      404: { description: "No such upload, or not the caller's (`not_found`)" },
      410: { description: "The session expired (`upload_expired`)" },
      ...tusVersion,
    },
    handler: ({ event, principal, params }) => viaTus(event.req as Request, principal, params.id),
  });

  routes.add({
    ...common,
    method: "PATCH",
    path: `${UPLOADS_PATH}/:id`,
    summary: "Upload a chunk (tus)",
    description: [
      `${HEADER_NOTES.tus} \`Upload-Offset\` must equal the upload's offset (ask it with HEAD), \`Content-Type: application/offset+octet-stream\`; the body is the next bytes (any size up to what remains; with a deferred length, send \`Upload-Length\` once known).`,
      "Answers 204 with the new `Upload-Offset` and `Upload-Expires`. The request that completes the upload answers 200 with `Upload-File-Id` and the stored file reference as JSON (the same reference as `POST /api/files`: content type checked against the bytes, SHA-256); the session's own bytes are then deleted. After a lost answer, HEAD tells the upload complete (its `Upload-Offset` is its length, with `Upload-File-Id`), and a PATCH at that offset with an empty body answers the reference again; sending the last chunk again at its old offset is 409 `conflict` (tus's rule), naming the file.",
    ].join("\n\n"),
    auth: "bearer",
    bodyMode: "raw",
    params: UploadIdParams,
    rawBodyDoc: { contentType: "application/offset+octet-stream", description: "The bytes from `Upload-Offset` on" },
    responses: {
      200: { description: "The upload is complete: `Upload-Offset`, `Upload-File-Id` and the file reference", schema: FileReferenceSchema },
      204: { description: "Chunk stored: `Upload-Offset` (new offset), `Upload-Expires`" },
      400: { description: "`Upload-Offset` missing or malformed, another malformed tus header, or an `Upload-Length` that cannot be set (`invalid_request`)" },
      ...errorsOfAll,
      404: { description: "No such upload, or not the caller's (`not_found`)" },
      409: { description: "`Upload-Offset` is not the upload's offset (`conflict`)" },
      410: { description: "The session expired (`upload_expired`)" },
      ...tusVersion,
      413: { description: "More bytes than `Upload-Length` or than `SVC_UPLOAD_MAX_BYTES` (`payload_too_large`)" },
      415: { description: "`Content-Type` is not `application/offset+octet-stream` (`unsupported_media_type`)" },
    },
    handler: ({ event, principal, params }) => viaTus(event.req as Request, principal, params.id),
  });

  routes.add({
    ...common,
    method: "DELETE",
    path: `${UPLOADS_PATH}/:id`,
    summary: "Terminate an upload session (tus)",
    description: `tus termination: the session and the bytes received are deleted. For an upload that already became a file only the session goes; the file stays (it is removed like any file that is never referenced). ${HEADER_NOTES.tus}`,
    auth: "bearer",
    params: UploadIdParams,
    responses: {
      204: { description: "Terminated" },
      400: { description: "A malformed tus header (`invalid_request`)" },
      ...errorsOfAll,
      404: { description: "No such upload, or not the caller's (`not_found`)" },
      410: { description: "The session's bytes are gone (`upload_expired`)" },
      ...tusVersion,
    },
    handler: ({ event, principal, params }) => viaTus(event.req as Request, principal, params.id),
  });

  routes.add({
    ...common,
    method: "GET",
    path: `${UPLOADS_PATH}/:id`,
    summary: "Read the file reference of a finished upload",
    description:
      "For clients that only see tus's 204s: the file reference the upload became (the same as the finishing PATCH answered). 404 `not_found` while bytes are missing (details `offset`, `length`), for an unknown upload or someone else's. A complete upload that was not yet turned into a file (the process stopped in between) is turned into one now. No `Tus-Resumable` needed.",
    auth: "bearer",
    params: UploadIdParams,
    responses: {
      200: { description: "The file reference", schema: FileReferenceSchema },
      ...errorsOfAll,
      404: { description: "No such upload, not the caller's, not finished yet, or its file was removed (`not_found`)" },
      410: { description: "The session expired (`upload_expired`)" },
    },
    handler: async ({ principal, params }) => (await service()).finished(principal!, params.id),
  });

  hooks.every(Math.min(Math.max(Math.floor(ttlMs / 4), 1000), 3_600_000), async () => {
    try {
      const uploads = await service();
      const n = await uploads.deleteExpired();
      if (n) log.info({ removed: n, storage: uploads.storage }, "removed expired upload sessions");
    } catch (err) {
      log.warn({ err }, "removing expired upload sessions failed");
    }
  });
  hooks.hook("close", async () => {
    if (opened) await (await openService().catch(() => undefined))?.close();
  });
}
