/**
 * Upload sessions for large files (spec 4.1 `/api/files/uploads`, 8; issue 10): the tus resumable-upload
 * protocol 1.0.0 (https://tus.io/protocols/resumable-upload) served by `@tus/server`'s `handleWeb`, so
 * existing clients (tus-js-client, Uppy) work unchanged. Extensions: creation, creation-with-upload,
 * creation-defer-length, termination, expiration.
 *
 * Where the bytes go while an upload is open:
 *
 * - local storage (`SVC_FILE_STORAGE=local`): `@tus/file-store` under `<dataDir>/uploads`, one data file
 *   `<id>` and one record `<id>.json` (written to a temporary file and renamed, so a crash never leaves
 *   a torn record): `./local-sessions.ts`;
 * - S3 (`SVC_FILE_STORAGE=s3`): `@tus/s3-store` in the same bucket as the blobs, under `uploads/`
 *   (spec 8: large uploads go straight to storage): a multipart upload at `uploads/<id>`, its record
 *   `uploads/<id>.info`, and `uploads/<id>.part` for a chunk smaller than an S3 part: `./s3-sessions.ts`.
 *
 * {@link openSessionStore} opens the one that fits the blob store (importing only that one);
 * `./upload-sessions.ts` holds what they share.
 *
 * When the last byte has arrived the upload is streamed into {@link FileStore.upload} (content-type
 * detection, SHA-256, content addressing: the same file reference as `POST /api/files`), the session's
 * own bytes are deleted and its record keeps the file id. The finishing response carries
 * `Upload-File-Id` and the reference as JSON; `GET /api/files/uploads/:id` answers it too. Until then no
 * file reference exists: a half upload is never a file.
 *
 * Sessions belong to the identity that created them (its `type:id` is kept in the record's metadata as
 * `svc_owner`); anyone else gets 404 for them. A session expires `SVC_UPLOAD_SESSION_TTL_MS` after its
 * last chunk (tus measures expiry from the record's `creation_date`; these stores move it forward on
 * every chunk), answers 410 `upload_expired` from then on, and a background pass removes it.
 *
 * Errors are the structured `{ error: { code, message } }` of spec 7, tus's own answers included (its
 * plain-text bodies are rewritten; its 403 for a missing `Upload-Offset` becomes 400).
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import * as v from "valibot";
import { EXPOSED_HEADERS, MemoryLocker, Metadata, Server as TusServer, TUS_RESUMABLE, type DataStore, type Upload } from "@tus/server";
import {
  ApiError,
  FileReferenceSchema,
  isApiError,
  jsonResponse,
  normalizeContentType,
  s3UploadTargetOf,
  type FileReference,
  type FileStore,
  type PluginContext,
  type Principal,
} from "../../core/plugin-api";
import { FILE_ID_KEY, UPLOAD_ID, isExpired, type SessionStore } from "./upload-sessions";

/** The collection URL of upload sessions. */
export const UPLOADS_PATH = "/api/files/uploads";

/** Metadata key holding the creating identity, `type:id`. */
const OWNER_KEY = "svc_owner";
/** The response header naming the file an upload became. */
const FILE_ID_HEADER = "Upload-File-Id";
const JSON_TYPE = "application/json; charset=utf-8";

type Meta = Record<string, string | null>;

// --- the routes ---------------------------------------------------------------------------------

const ownerOf = (principal: Principal) => `${principal.type}:${principal.id}`;
const metaValue = (meta: Meta | undefined, ...keys: string[]) => keys.map((k) => meta?.[k]).find((x): x is string => typeof x === "string" && x !== "");

/** What one request carries through tus's hooks (keyed by the Request object tus passes them). */
interface Call {
  principal: Principal;
  /** The datastore id of the upload the URL names. */
  key?: string;
  /** An error of ours raised inside a hook: answered as it is instead of tus's plain text. */
  error?: ApiError;
}

const UploadIdParams = v.object({ id: v.pipe(v.string(), v.description("The upload's id: the last segment of the `Location` the creation answered")) });

const HEADER_NOTES = {
  tus: "Every request but OPTIONS sends `Tus-Resumable: 1.0.0` (else 412 with `Tus-Version`).",
  create:
    "`Upload-Length` (bytes, at most `SVC_UPLOAD_MAX_BYTES`, default 5 GiB) or `Upload-Defer-Length: 1`; optional `Upload-Metadata` (comma-separated `key base64(value)` pairs): `filename` or `name` names the file, `filetype` or `type` declares its content type (checked against the bytes when the upload finishes, as for `POST /api/files`).",
};

/**
 * Opens the store of upload sessions for `files`' blob store: the S3 one (same bucket, endpoint and
 * credentials, under `<blob prefix>uploads/`) when the blobs are in S3, else files under `directory`.
 * Each is imported here, so `@tus/s3-store` loads only with S3 storage.
 * @param ttlMs how long a session lives after its last chunk (ms)
 */
async function openSessionStore(files: FileStore, directory: string, ttlMs: number): Promise<SessionStore & DataStore> {
  const target = s3UploadTargetOf(files.blobs);
  if (target) return new (await import("./s3-sessions")).S3SessionStore(target, ttlMs);
  return new (await import("./local-sessions")).LocalSessionStore(directory, ttlMs);
}

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
 * hourly) removes expired ones. With `SVC_FILE_STORAGE=s3` (`files.blobs` is the S3 backend) the
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
 * @throws Error when `<dataDir>/uploads` cannot be created
 */
export async function registerUploadRoutes(ctx: Pick<PluginContext, "routes" | "hooks" | "log" | "config">, files: FileStore): Promise<void> {
  const { routes, hooks, log, config } = ctx;
  const ttlMs = config.uploadSessionTtlMs;
  const maxBytes = config.uploadMaxBytes;
  const store = await openSessionStore(files, path.join(config.dataDir, "uploads"), ttlMs);
  const locker = new MemoryLocker();
  const calls = new WeakMap<Request, Call>();
  const finalizing = new Map<string, Promise<FileReference>>();
  const urlIdOf = (key: string) => key.slice(store.keyPrefix.length);

  /** Turns a complete upload into a file once (concurrent callers share the same conversion). */
  const finalize = (key: string, upload: Upload): Promise<FileReference> => {
    let running = finalizing.get(key);
    if (!running) {
      running = (async () => {
        const meta = upload.metadata as Meta | undefined;
        const done = meta?.[FILE_ID_KEY];
        if (done) {
          const existing = await files.get(done);
          if (!existing) throw new ApiError("not_found", `The file of upload ${urlIdOf(key)} was removed (never referenced within the retention period)`);
          return existing;
        }
        const size = upload.size ?? upload.offset;
        const reference = await files.upload(await store.open(key, size), {
          name: metaValue(meta, "filename", "name"),
          declaredContentType: metaValue(meta, "filetype", "type"),
          maxBytes,
          // the uploading identity (metadata holds "<type>:<id>"), so its author may put it into artifacts
          createdBy: meta?.[OWNER_KEY]?.slice(meta[OWNER_KEY]!.indexOf(":") + 1),
        });
        // under tus's lock, so a chunk being recorded cannot overwrite the record at the same time
        const lock = locker.newLock(key);
        await lock.lock(new AbortController().signal, () => undefined);
        try {
          await store.markConverted(key, reference.id);
        } finally {
          await lock.unlock();
        }
        log.info({ upload: urlIdOf(key), file: reference.id, size: reference.size }, "upload session finished");
        return reference;
      })().finally(() => finalizing.delete(key));
      finalizing.set(key, running);
    }
    return running;
  };

  const tus = new TusServer({
    path: UPLOADS_PATH,
    datastore: store,
    locker,
    maxSize: maxBytes,
    allowedOrigins: config.allowedOrigins,
    exposedHeaders: [FILE_ID_HEADER, "Upload-Expires"],
    namingFunction: () => store.keyPrefix + randomBytes(16).toString("hex"),
    getFileIdFromRequest: (req) => calls.get(req as Request)?.key,
    generateUrl: (req, { path: base, id }) => `${config.apiPublicOrigin ?? new URL(req.url).origin}${base}/${urlIdOf(id)}`,
    onUploadCreate: async (req, upload) => {
      const call = calls.get(req as Request)!;
      // svc_* keys are ours: a client cannot set them
      const metadata: Meta = Object.fromEntries(Object.entries(upload.metadata ?? {}).filter(([k]) => !k.startsWith("svc_")));
      try {
        normalizeContentType(metaValue(metadata, "filetype", "type"));
      } catch (err) {
        call.error = new ApiError("invalid_request", "Upload-Metadata filetype (or type) is not a media type such as application/pdf", { field: "Upload-Metadata" });
        throw { status_code: 400, body: call.error.message };
      }
      metadata[OWNER_KEY] = ownerOf(call.principal);
      return { metadata };
    },
    onUploadFinish: async (req, upload) => {
      const call = calls.get(req as Request)!;
      try {
        const reference = await finalize(upload.id, upload);
        return {
          // tus answers 204 to a PATCH, which cannot carry the reference; clients accept any 2xx
          ...(req.method === "PATCH" ? { status_code: 200 } : {}),
          headers: { [FILE_ID_HEADER]: reference.id, "Content-Type": JSON_TYPE },
          body: JSON.stringify(reference),
        };
      } catch (err) {
        if (!isApiError(err)) log.error({ err, upload: urlIdOf(upload.id) }, "turning a finished upload into a file failed");
        // the upload stays complete: repeating the final PATCH (or a GET) tries again
        call.error = isApiError(err) ? err : new ApiError("internal", "Internal server error");
        throw { status_code: call.error.status, body: call.error.message };
      }
    },
    onResponseError: (_req, err) => {
      if (!("status_code" in err)) log.error({ err }, "upload request failed");
      return undefined;
    },
  });

  /** CORS headers like tus's own, for the answers this module makes itself. */
  const cors = (req: Request): Record<string, string> => {
    const origin = req.headers.get("origin");
    const allowed = origin && config.allowedOrigins.includes(origin) ? origin : config.allowedOrigins[0];
    return { ...(allowed ? { "Access-Control-Allow-Origin": allowed } : {}), "Access-Control-Expose-Headers": `${EXPOSED_HEADERS}, ${FILE_ID_HEADER}, Upload-Expires` };
  };

  /** A tus error answer (plain text) as the structured error of spec 7, keeping tus's headers. */
  const structured = async (res: Response, call: Call, method: string): Promise<Response> => {
    const text = (await res.text()).trim();
    let err = call.error;
    if (!err) {
      switch (res.status) {
        case 400:
        case 403: // tus-node-server's answer to a missing Upload-Offset or Content-Type: a malformed request
          err = new ApiError("invalid_request", text || "Invalid tus request");
          break;
        case 404:
          err = new ApiError("not_found", "No such upload");
          break;
        case 409:
          err = new ApiError("conflict", "Upload-Offset does not match the upload's offset: ask it with HEAD and resume from there");
          break;
        case 410:
          err = new ApiError("upload_expired", "This upload session has expired; start a new one");
          break;
        case 413:
          err = new ApiError("payload_too_large", `The upload is larger than its Upload-Length or than the limit of ${maxBytes} bytes`, { limitBytes: maxBytes });
          break;
        case 501:
          err = new ApiError("not_implemented", text || "Not supported");
          break;
        default:
          log.error({ status: res.status, body: text }, "upload request failed");
          err = new ApiError("internal", "Internal server error");
      }
    }
    const headers = new Headers(res.headers);
    headers.delete("content-length");
    headers.set("content-type", JSON_TYPE);
    for (const [k, val] of Object.entries(err.headers ?? {})) headers.set(k, val);
    return new Response(method === "HEAD" ? null : JSON.stringify(err.toBody()), { status: err.status, headers });
  };

  /** The record of the caller's upload `urlId`, or 404 (also for someone else's: existence is not disclosed). */
  const ownRecord = async (principal: Principal, urlId: string): Promise<{ key: string; rec: Upload }> => {
    const missing = new ApiError("not_found", `No upload "${urlId}"`);
    if (!UPLOAD_ID.test(urlId)) throw missing;
    const key = store.keyPrefix + urlId;
    const rec = await store.record(key);
    if (!rec || (rec.metadata as Meta | undefined)?.[OWNER_KEY] !== ownerOf(principal)) throw missing;
    return { key, rec };
  };

  const expired = () => new ApiError("upload_expired", "This upload session has expired; start a new one");

  /** HEAD, PATCH and DELETE of an upload that already became a file (its bytes are gone; tus no longer serves it). */
  const answerConverted = async (req: Request, key: string, rec: Upload): Promise<Response> => {
    const size = rec.size ?? 0;
    const fileId = String((rec.metadata as Meta)[FILE_ID_KEY]);
    const headers: Record<string, string> = { "Tus-Resumable": TUS_RESUMABLE, ...cors(req) };
    if (req.method === "DELETE") {
      await store.purge(key);
      return new Response(null, { status: 204, headers });
    }
    Object.assign(headers, { "Upload-Offset": String(size), [FILE_ID_HEADER]: fileId, "Cache-Control": "no-store" });
    if (req.method === "HEAD") {
      return new Response(null, { status: 200, headers: { ...headers, "Upload-Length": String(size), "Upload-Metadata": Metadata.stringify(rec.metadata as Meta) ?? "" } });
    }
    // PATCH: a repeated final request (its answer was lost) gets the same answer again
    if (req.headers.get("upload-offset") !== String(size)) throw new ApiError("conflict", `The upload is complete at offset ${size}`, { offset: size }, headers);
    if (Number(req.headers.get("content-length") ?? "0") > 0) throw new ApiError("payload_too_large", `The upload is complete: its ${size} bytes have all arrived`, { limitBytes: size }, headers);
    const reference = await finalize(key, rec);
    return jsonResponse(reference, 200, { ...headers, "Content-Type": JSON_TYPE });
  };

  /** Hands a request to tus after authentication, the version check and (for `:id`) the owner check. */
  const viaTus = async (req: Request, principal: Principal | undefined, urlId?: string): Promise<Response> => {
    const method = req.method;
    if (method !== "OPTIONS") {
      if (req.headers.get("tus-resumable") !== TUS_RESUMABLE) {
        throw new ApiError("precondition_failed", `Send Tus-Resumable: ${TUS_RESUMABLE} (the tus protocol version this server speaks)`, { supported: [TUS_RESUMABLE] }, { "Tus-Resumable": TUS_RESUMABLE, "Tus-Version": TUS_RESUMABLE });
      }
    }
    const call: Call = { principal: principal! };
    if (urlId !== undefined && method !== "OPTIONS") {
      const { key, rec } = await ownRecord(principal!, urlId);
      call.key = key;
      if (method === "PATCH" && req.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase() !== "application/offset+octet-stream") {
        throw new ApiError("unsupported_media_type", "Send the bytes as Content-Type: application/offset+octet-stream", { contentType: req.headers.get("content-type") });
      }
      if ((rec.metadata as Meta | undefined)?.[FILE_ID_KEY]) {
        if (isExpired(rec, ttlMs) && method !== "DELETE") throw expired();
        return answerConverted(req, key, rec);
      }
    }
    calls.set(req, call);
    const res = await tus.handleWeb(req);
    if (res.status >= 400) {
      // the upload may have become a file between our look and tus's (a concurrent final request)
      if (call.key && (res.status === 404 || res.status === 410)) {
        const rec = await store.record(call.key);
        if ((rec?.metadata as Meta | undefined)?.[FILE_ID_KEY]) return answerConverted(req, call.key, rec!);
      }
      return structured(res, call, method);
    }
    // tus computes a PATCH's Upload-Expires from the activity before this chunk
    if (method === "PATCH" && res.headers.has("upload-expires")) res.headers.set("Upload-Expires", new Date(Date.now() + ttlMs).toUTCString());
    return res;
  };

  const common = { tags: ["files"] };
  const authErrors = {
    401: { description: "No valid bearer token or browser session (`unauthorized`)" },
    403: { description: "A browser session without its CSRF token or from an origin that is not allowed" },
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
      ...authErrors,
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
      ...authErrors,
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
      "Answers 204 with the new `Upload-Offset` and `Upload-Expires`. The request that completes the upload answers 200 with `Upload-File-Id` and the stored file reference as JSON (the same reference as `POST /api/files`: content type checked against the bytes, SHA-256); the session's own bytes are then deleted. Repeating that final request answers the same reference.",
    ].join("\n\n"),
    auth: "bearer",
    bodyMode: "raw",
    params: UploadIdParams,
    rawBodyDoc: { contentType: "application/offset+octet-stream", description: "The bytes from `Upload-Offset` on" },
    responses: {
      200: { description: "The upload is complete: `Upload-Offset`, `Upload-File-Id` and the file reference", schema: FileReferenceSchema },
      204: { description: "Chunk stored: `Upload-Offset` (new offset), `Upload-Expires`" },
      400: { description: "`Upload-Offset` missing or malformed, another malformed tus header, or an `Upload-Length` that cannot be set (`invalid_request`)" },
      ...authErrors,
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
      ...authErrors,
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
      ...authErrors,
      404: { description: "No such upload, not the caller's, not finished yet, or its file was removed (`not_found`)" },
      410: { description: "The session expired (`upload_expired`)" },
    },
    handler: async ({ principal, params }) => {
      const { key, rec } = await ownRecord(principal!, params.id);
      if (isExpired(rec, ttlMs)) throw expired();
      if ((rec.metadata as Meta | undefined)?.[FILE_ID_KEY]) return finalize(key, rec);
      let upload: Upload;
      try {
        upload = await store.getUpload(key);
      } catch (err) {
        const status = (err as { status_code?: number }).status_code;
        if (status === 404) throw new ApiError("not_found", `No upload "${params.id}"`);
        if (status === 410) throw expired();
        throw err;
      }
      if (upload.size === undefined || upload.offset !== upload.size) {
        throw new ApiError("not_found", `Upload ${params.id} is not finished: ${upload.offset} of ${upload.size ?? "(deferred)"} bytes received`, { offset: upload.offset, length: upload.size ?? null });
      }
      return finalize(key, upload);
    },
  });

  hooks.every(Math.min(Math.max(Math.floor(ttlMs / 4), 1000), 3_600_000), () =>
    store.deleteExpired().then(
      (n) => n && log.info({ removed: n, storage: store.kind }, "removed expired upload sessions"),
      (err) => log.warn({ err }, "removing expired upload sessions failed"),
    ),
  );
  hooks.hook("close", () => store.close());
}
