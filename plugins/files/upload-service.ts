/**
 * The tus side of upload sessions (spec 4.1 `/api/files/uploads`, 8; issue 10; routes and their docs in
 * `./uploads.ts`): `@tus/server`'s `Server` over the session store that fits the blob store, the owner
 * checks, turning a finished upload into a file, and tus's answers rewritten as spec 7's errors. It is
 * imported on the first upload request (or the first pass of the expiry timer), so `@tus/server` and the
 * session stores are not part of every start (issue 15).
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
 * When the last byte has arrived the upload becomes a file (content-type detection, SHA-256, content
 * addressing: the same file reference as `POST /api/files`): a local session's data file is flushed and
 * hard-linked into the blob store with the SHA-256 its PATCHes computed as they wrote
 * ({@link FileStore.uploadFile}; read once to hash it after a restart), an S3 session's bytes are
 * streamed into {@link FileStore.upload}. The session's own bytes are then deleted and its record keeps
 * the file id. The finishing response carries
 * `Upload-File-Id` and the reference as JSON; `GET /api/files/uploads/:id` answers it too. Until then no
 * file reference exists: a half upload is never a file.
 *
 * Sessions belong to the identity that created them (its `type:id` is kept in the record's metadata as
 * `svc_owner`); anyone else gets 404 for them. A session expires `SVC_UPLOAD_SESSION_TTL_MS` after its
 * last chunk (tus measures expiry from the record's `creation_date`; these stores move it forward on
 * every chunk) and answers 410 `upload_expired` from then on.
 *
 * Errors are the structured `{ error: { code, message } }` of spec 7, tus's own answers included (its
 * plain-text bodies are rewritten; its 403 for a missing `Upload-Offset` becomes 400).
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { EXPOSED_HEADERS, MemoryLocker, Metadata, Server as TusServer, TUS_RESUMABLE, type DataStore, type Upload } from "@tus/server";
import { ApiError, CSRF_HEADER, isApiError, jsonResponse, normalizeContentType, s3UploadTargetOf, type FileReference, type FileStore, type PluginContext, type Principal } from "../../core/plugin-api";
import { FILE_ID_KEY, UPLOAD_ID, UPLOADS_PATH, isExpired, type SessionStore } from "./upload-sessions";

/** Metadata key holding the creating identity, `type:id`. */
const OWNER_KEY = "svc_owner";
/** The response header naming the file an upload became. */
const FILE_ID_HEADER = "Upload-File-Id";
const JSON_TYPE = "application/json; charset=utf-8";

type Meta = Record<string, string | null>;

const ownerOf = (principal: Principal) => `${principal.type}:${principal.id}`;
/** Metadata without svc's own `svc_*` keys (owner, file id): what a client may set, and sees. */
const withoutSvcKeys = (meta: Meta | undefined): Meta => Object.fromEntries(Object.entries(meta ?? {}).filter(([k]) => !k.startsWith("svc_")));
/** `Upload-Metadata` as the client sent it ({@link withoutSvcKeys}). */
const clientMetadata = (meta: Meta | undefined): string => Metadata.stringify(withoutSvcKeys(meta)) ?? "";
const metaValue = (meta: Meta | undefined, ...keys: string[]) => keys.map((k) => meta?.[k]).find((x): x is string => typeof x === "string" && x !== "");

/** What one request carries through tus's hooks (keyed by the Request object tus passes them). */
interface Call {
  principal: Principal;
  /** The datastore id of the upload the URL names. */
  key?: string;
  /** An error of ours raised inside a hook: answered as it is instead of tus's plain text. */
  error?: ApiError;
}

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

/** The upload sessions' requests, answered by tus over one session store ({@link openUploadService}). */
export interface UploadService {
  /** Which store holds the sessions' bytes. */
  readonly storage: SessionStore["kind"];
  /**
   * Answers a tus request (`POST`, `HEAD`, `PATCH`, `DELETE`, `OPTIONS`) after authentication: the
   * version check, and for `urlId` (`/:id`) the owner check. @throws {ApiError} precondition_failed (no
   * `Tus-Resumable: 1.0.0`), not_found, unsupported_media_type, upload_expired, conflict,
   * payload_too_large; tus's own refusals come back as answers with spec 7's body
   */
  handle(req: Request, principal: Principal | undefined, urlId?: string): Promise<Response>;
  /**
   * The file reference a finished upload became (converting a complete upload the process did not get
   * to). @throws {ApiError} not_found (unknown, someone else's, not finished: details `offset`,
   * `length`; or its file was removed), upload_expired
   */
  finished(principal: Principal, urlId: string): Promise<FileReference>;
  /** Removes sessions expired more than their TTL ago. @returns how many */
  deleteExpired(): Promise<number>;
  /** Releases the store's sockets (S3). */
  close(): Promise<void>;
}

/**
 * Opens the session store that fits `files`' blob store and a tus server over it.
 * @param ctx `log`, `config` (`dataDir`, `uploadMaxBytes`, `uploadSessionTtlMs`, `apiPublicOrigin`, `allowedOrigins`)
 * @param files the file store finished uploads go into
 */
export async function openUploadService(ctx: Pick<PluginContext, "log" | "config">, files: FileStore): Promise<UploadService> {
  const { log, config } = ctx;
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
        const options = {
          name: metaValue(meta, "filename", "name"),
          declaredContentType: metaValue(meta, "filetype", "type"),
          maxBytes,
          // the uploading identity (metadata holds "<type>:<id>"), so its author may put it into artifacts
          createdBy: meta?.[OWNER_KEY]?.slice(meta[OWNER_KEY]!.indexOf(":") + 1),
        };
        // a local session's data file becomes the blob itself (hard-linked, hashed as it was written)
        const local = store.finishedFile?.(key, size);
        const reference = local ? await files.uploadFile(local.path, { ...options, sha256: local.sha256 }) : await files.upload(await store.open(key, size), options);
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
    // a browser app of an allowed origin uploads with its credentials (spec 5; core/http/cors.ts for the other routes)
    allowedCredentials: true,
    allowedHeaders: [CSRF_HEADER],
    exposedHeaders: [FILE_ID_HEADER, "Upload-Expires"],
    namingFunction: () => store.keyPrefix + randomBytes(16).toString("hex"),
    getFileIdFromRequest: (req) => calls.get(req as Request)?.key,
    generateUrl: (req, { path: base, id }) => `${config.apiPublicOrigin ?? new URL(req.url).origin}${base}/${urlIdOf(id)}`,
    onUploadCreate: async (req, upload) => {
      const call = calls.get(req as Request)!;
      // svc_* keys are ours: a client cannot set them
      const metadata = withoutSvcKeys(upload.metadata as Meta | undefined);
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
    onResponseError: (req, err) => {
      if ("status_code" in err) return undefined;
      // an error of ours from the store (a bucket that stopped answering: 503 `unavailable` naming it) is
      // answered as it is, not as tus's 500
      const call = calls.get(req as Request);
      if (isApiError(err) && call) {
        log.warn({ err, upload: call.key && urlIdOf(call.key) }, "upload request failed");
        call.error = err;
        return { status_code: err.status, body: err.message };
      }
      log.error({ err }, "upload request failed");
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
        case 413: {
          // which limit: the upload's own length when it has one below the service's
          const length = call.key ? (await store.record(call.key).catch(() => undefined))?.size : undefined;
          err =
            length !== undefined && length < maxBytes
              ? new ApiError("payload_too_large", `The body goes past the upload's length of ${length} bytes (Upload-Length)`, { limitBytes: length })
              : new ApiError("payload_too_large", `The upload is larger than the limit of ${maxBytes} bytes`, { limitBytes: maxBytes });
          break;
        }
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
      return new Response(null, { status: 200, headers: { ...headers, "Upload-Length": String(size), "Upload-Metadata": clientMetadata(rec.metadata as Meta) } });
    }
    // PATCH: a repeated final request (its answer was lost) gets the same answer again
    if (req.headers.get("upload-offset") !== String(size)) throw new ApiError("conflict", `The upload is complete at offset ${size}: it is file ${fileId} (send a PATCH at offset ${size} with an empty body for its reference)`, { offset: size, fileId }, headers);
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
    if (method === "POST" && urlId === undefined) {
      // tus answers both headers, or neither, with "Upload-Length or Upload-Defer-Length header required"
      const length = req.headers.get("upload-length"), deferred = req.headers.get("upload-defer-length");
      if (length !== null && deferred !== null) throw new ApiError("invalid_request", "Send Upload-Length (the size in bytes) or Upload-Defer-Length: 1 (size told later), not both", { field: "Upload-Defer-Length" });
      if (length === null && deferred === null) throw new ApiError("invalid_request", "Send Upload-Length (the size in bytes), or Upload-Defer-Length: 1 to tell the size later", { field: "Upload-Length" });
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
    // tus answers a HEAD with the record's whole metadata, svc's keys among it
    if (method === "HEAD" && res.headers.has("upload-metadata")) {
      const shown = clientMetadata(Metadata.parse(res.headers.get("upload-metadata") ?? undefined) as Meta);
      if (shown) res.headers.set("Upload-Metadata", shown);
      else res.headers.delete("Upload-Metadata");
    }
    // tus computes a PATCH's Upload-Expires from the activity before this chunk
    if (method === "PATCH" && res.headers.has("upload-expires")) res.headers.set("Upload-Expires", new Date(Date.now() + ttlMs).toUTCString());
    return res;
  };

  return {
    storage: store.kind,
    handle: viaTus,
    async finished(principal, urlId) {
      const { key, rec } = await ownRecord(principal, urlId);
      if (isExpired(rec, ttlMs)) throw expired();
      if ((rec.metadata as Meta | undefined)?.[FILE_ID_KEY]) return finalize(key, rec);
      let upload: Upload;
      try {
        upload = await store.getUpload(key);
      } catch (err) {
        const status = (err as { status_code?: number }).status_code;
        if (status === 404) throw new ApiError("not_found", `No upload "${urlId}"`);
        if (status === 410) throw expired();
        throw err;
      }
      if (upload.size === undefined || upload.offset !== upload.size) {
        throw new ApiError("not_found", `Upload ${urlId} is not finished: ${upload.offset} of ${upload.size ?? "(deferred)"} bytes received`, { offset: upload.offset, length: upload.size ?? null });
      }
      return finalize(key, upload);
    },
    deleteExpired: () => store.deleteExpired(),
    close: () => store.close(),
  };
}
