/**
 * Stored files (spec 2.6, 4.1, 4.3, 8): file rows in SQLite over a content-addressed {@link BlobStore},
 * the references that hold them, the removal of files nobody ever referenced, and revocable download
 * URLs.
 *
 * - A file is stored first ({@link FileStore.upload}, answering a {@link FileReference}) and then
 *   referenced from objects, runs or artifacts ({@link FileStore.addReference}, inside the owner's own
 *   write transaction).
 * - Reading goes through the owner (spec 4.3); this service does not check permissions: the routes and
 *   the SDK check access to the owner first, then call {@link FileStore.open}.
 * - A download URL (`<SVC_API_PUBLIC_ORIGIN>/api/download/<secret>`) is a row holding the SHA-256 of a
 *   random secret, an expiry and a revocation time; the secret itself is never stored.
 *
 * Concurrency: rows and blobs change under a per-SHA-256 lock held across "commit the blob + insert the
 * row" (upload) and "delete the row + delete the blob" (collection), so a collection can never delete
 * a blob that a concurrent upload of the same bytes is about to point at. The lock is in-process: run
 * collection in the process that serves uploads.
 */
import { text as readText } from "node:stream/consumers";
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import fsp from "node:fs/promises";
import { addAbortSignal, Readable } from "node:stream";
import { ApiError, isApiError } from "../errors";
import { newId } from "../ids";
import type { Database, SqlValue, SqlWriter } from "../store/db";
import { assertRange, type BlobStore, type ByteRange, type StagedBlob } from "./blob-store";
import { decideContentType, looksBinary, normalizeContentType } from "./content-type";
import { hashSecret, publicOriginOf, SECRET_FORMAT } from "./download-urls";
import { sanitizeFileName } from "./file-names";
import { KeyedMutex } from "./keyed-mutex";
import { DEFAULT_DOWNLOAD_URL_TTL_MS, DEFAULT_UNREFERENCED_RETENTION_MS, MAX_DOWNLOAD_URL_TTL_MS } from "./limits";
import type { CreateDownloadUrlOptions, DownloadUrl, FileOwner, FileReference, FileStoreOptions, OpenedFile, UploadOptions } from "./types";

/** How many leading bytes are kept to detect the content type. */
const SNIFF_BYTES = 64 * 1024;

/** The first `bytes` bytes of `file` (fewer when it is shorter). */
async function readHead(file: string, bytes: number): Promise<Buffer> {
  const fh = await fsp.open(file, "r");
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

interface FileRow {
  id: string;
  name: string;
  content_type: string;
  declared_content_type: string | null;
  size: number;
  sha256: string;
  created_at: string;
}

function toReference(row: FileRow): FileReference {
  const ref: FileReference = { id: row.id, name: row.name, contentType: row.content_type, size: row.size, sha256: row.sha256, createdAt: row.created_at };
  if (row.declared_content_type) ref.declaredContentType = row.declared_content_type;
  return ref;
}

const FILE_COLUMNS = "id, name, content_type, declared_content_type, size, sha256, created_at";

function checkOwner(owner: FileOwner, pathRequired: boolean): void {
  const ok = (s: unknown, max: number) => typeof s === "string" && s.length > 0 && s.length <= max;
  if (!ok(owner?.kind, 100) || !ok(owner?.id, 500) || (pathRequired ? !ok(owner?.path, 500) : owner.path !== undefined && !ok(owner.path, 500))) {
    throw new ApiError("invalid_request", "A file owner needs a kind (1-100 characters), an id and a path (1-500 characters each)", { owner });
  }
}

/**
 * The file service: uploads, reads, references, collection of unreferenced files and download URLs.
 * Construct it once per runtime over the runtime's database and blob store.
 */
export class FileStore {
  private readonly locks = new KeyedMutex();
  private readonly now: () => number;
  private readonly onReadError: FileStoreOptions["onReadError"];

  /**
   * @param db the runtime's database (migration 007 creates `files`, `file_references`, `download_urls`, `blob_deletions`)
   * @param blobs where the bytes go (see `blobStoreFromEnv`)
   */
  constructor(
    private readonly db: Database,
    readonly blobs: BlobStore,
    options: FileStoreOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.onReadError = options.onReadError;
  }

  /**
   * Streams `body` into the blob store and records a file (spec 4.1 `POST /api/files`). Memory stays
   * flat (only the first 64 KiB are kept, to recognize the content type with `file-type`). 0-byte
   * files are valid.
   *
   * @returns the stored file reference
   * @throws {ApiError} `invalid_request` when `declaredContentType` is not a media type (nothing read)
   * @throws {ApiError} `payload_too_large` (413, details `{ limitBytes }`) over `maxBytes`; nothing stored
   * @throws the body's error, or the abort reason; nothing stored
   */
  async upload(body: Readable | AsyncIterable<Uint8Array>, options: UploadOptions): Promise<FileReference> {
    const declared = normalizeContentType(options.declaredContentType);
    const name = sanitizeFileName(options.name);
    if (options.signal && body instanceof Readable) addAbortSignal(options.signal, body);

    const head: Buffer[] = [];
    let headBytes = 0;
    async function* sniff(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<Uint8Array | string> {
      for await (const chunk of source) {
        if (headBytes < SNIFF_BYTES) {
          const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
          const part = Buffer.from(bytes.subarray(0, SNIFF_BYTES - headBytes));
          head.push(part);
          headBytes += part.length;
        }
        yield chunk;
      }
    }
    const staged = await this.blobs.stage(sniff(body as AsyncIterable<Uint8Array | string>) as AsyncIterable<Uint8Array>, { maxBytes: options.maxBytes, signal: options.signal });
    return this.record(staged, head.length === 1 ? head[0]! : Buffer.concat(head, headBytes), declared, name, options);
  }

  /**
   * Records the finished file `file` on this machine's disk as a stored file, like {@link upload} with
   * its bytes as the body, but without copying them where the blob store can take the file itself
   * ({@link BlobStore.stageFile}: the local store hard-links it; others are given its bytes). A finished
   * tus upload on local storage becomes a file this way (spec 4.1). The caller must not write to `file`
   * afterwards; it may delete it.
   *
   * @param options.sha256 the file's SHA-256 when the caller computed it over the bytes it wrote (the file is then not read to hash it)
   * @returns the stored file reference
   * @throws {ApiError} `invalid_request` when `declaredContentType` is not a media type (nothing read)
   * @throws {ApiError} `payload_too_large` over `maxBytes`; nothing stored
   * @throws the filesystem's error when `file` cannot be read; nothing stored
   */
  async uploadFile(file: string, options: UploadOptions & { sha256?: string }): Promise<FileReference> {
    if (!this.blobs.stageFile) return this.upload(createReadStream(file, { highWaterMark: 1024 * 1024 }), options);
    const declared = normalizeContentType(options.declaredContentType);
    const name = sanitizeFileName(options.name);
    const staged = await this.blobs.stageFile(file, { maxBytes: options.maxBytes, sha256: options.sha256 });
    let head: Buffer;
    try {
      head = await readHead(file, Math.min(SNIFF_BYTES, staged.size));
    } catch (err) {
      await staged.discard();
      throw err;
    }
    return this.record(staged, head, declared, name, options);
  }

  /**
   * The part of {@link upload} and {@link uploadFile} after the bytes are staged: recognizes the content
   * type from `head` (the first bytes), commits the blob and inserts the file row under the blob's lock.
   */
  private async record(staged: StagedBlob, head: Buffer, declared: string | undefined, name: string, options: UploadOptions): Promise<FileReference> {
    // file-type (~50 modules) is imported by the first upload, not at start-up (issue 15)
    const { fileTypeFromBuffer } = await import("file-type");
    let detected: string | undefined;
    try {
      detected = head.length > 0 ? (await fileTypeFromBuffer(head))?.mime : undefined;
    } catch {
      detected = undefined; // a truncated or odd header is simply not recognized
    }
    // text declared for bytes that are not (a multipart part without a type of its own is text/plain)
    if (!detected && declared?.startsWith("text/") && looksBinary(head, staged.size > head.length, /;\s*charset="?([^";]+)/i.exec(declared)?.[1])) detected = "application/octet-stream";
    const { contentType, declaredContentType } = decideContentType(declared, detected);
    const row: FileRow = { id: newId("file"), name, content_type: contentType, declared_content_type: declaredContentType ?? null, size: staged.size, sha256: staged.sha256, created_at: new Date(this.now()).toISOString() };

    await this.locks.run(staged.sha256, async () => {
      try {
        await staged.commit();
      } catch (err) {
        await staged.discard();
        throw err;
      }
      try {
        await this.db.transaction(async (tx) => {
          await tx.run(`INSERT INTO files (${FILE_COLUMNS}, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, [row.id, row.name, row.content_type, row.declared_content_type, row.size, row.sha256, row.created_at, options.createdBy ?? null]);
          // a deletion of these bytes queued by an earlier collection must not happen any more
          await tx.run("DELETE FROM blob_deletions WHERE sha256 = ?", [row.sha256]);
        });
      } catch (err) {
        // no row points at the blob we just committed: drop it unless another file uses it
        const other = await this.db.get("SELECT 1 AS one FROM files WHERE sha256 = ? LIMIT 1", [row.sha256]).catch(() => ({ one: 1 }));
        if (!other) await this.blobs.delete(row.sha256).catch(() => undefined);
        throw err;
      }
    });
    return toReference(row);
  }

  /** The file `fileId`, or undefined when there is none. */
  async get(fileId: string): Promise<FileReference | undefined> {
    const row = await this.db.get<FileRow>(`SELECT ${FILE_COLUMNS} FROM files WHERE id = ?`, [fileId]);
    return row ? toReference(row) : undefined;
  }

  /**
   * A whole file as UTF-8 text (a document, a deck's HTML, a theme). The caller checks access first.
   * @throws {ApiError} not_found when there is no such file
   */
  async text(fileId: string): Promise<string> {
    return readText((await this.open(fileId)).stream);
  }

  /**
   * Opens the bytes of `fileId`, all of them or the inclusive `range` (parse a `Range` header with
   * `parseRangeHeader`). The caller checks access to the owner first (spec 4.3).
   *
   * @throws {ApiError} `not_found` when there is no such file
   * @throws {ApiError} `range_not_satisfiable` (416, details `{ size }`, header `content-range: bytes * /size`) for a range outside the file
   * @throws Error when the file row exists but its blob is missing (an internal inconsistency, 500)
   * A read error of the returned stream goes to {@link FileStoreOptions.onReadError} as well as to the
   * stream's own `error` listeners.
   */
  async open(fileId: string, range?: ByteRange): Promise<OpenedFile> {
    const reference = await this.get(fileId);
    if (!reference) throw new ApiError("not_found", `No file "${fileId}"`);
    if (range) assertRange(range, reference.size);
    let stream: Readable;
    try {
      stream = await this.blobs.read(reference.sha256, range);
    } catch (err) {
      if (isApiError(err) && err.code === "not_found") throw new Error(`The bytes of file ${fileId} (sha256 ${reference.sha256}) are missing from the ${this.blobs.kind} blob store`);
      throw err;
    }
    const onReadError = this.onReadError;
    if (onReadError) {
      stream.once("error", (err: NodeJS.ErrnoException) => {
        // the reader went away: srvx's pipeline destroys the stream with ERR_STREAM_PREMATURE_CLOSE
        if (err.code === "ERR_STREAM_PREMATURE_CLOSE" || err.name === "AbortError") return;
        try {
          onReadError(err, reference);
        } catch {
          // a reporting callback must not turn a read error into an uncaught exception
        }
      });
    }
    return { reference, stream, range, size: reference.size, contentLength: range ? range.end - range.start + 1 : reference.size };
  }

  /**
   * Records that `owner` holds `fileId`, inside the caller's write transaction (the ontology's or a
   * run's), so the reference commits or rolls back with the write that made it. A referenced file is
   * never collected, even after its references are removed (run records and events may still hold it).
   * Adding the same reference twice is a no-op.
   *
   * @returns the file's reference
   * @throws {ApiError} `invalid_request` (details `{ fileId }`) when there is no such file, or the owner is malformed
   */
  async addReference(tx: SqlWriter, fileId: string, owner: FileOwner): Promise<FileReference> {
    checkOwner(owner, true);
    const file = await tx.get<FileRow>(`SELECT ${FILE_COLUMNS} FROM files WHERE id = ?`, [fileId]);
    if (!file) throw new ApiError("invalid_request", `No file "${fileId}": upload it first (POST /api/files)`, { fileId });
    const at = new Date(this.now()).toISOString();
    await tx.run("INSERT OR IGNORE INTO file_references (file_id, owner_kind, owner_id, path, created_at) VALUES (?, ?, ?, ?, ?)", [fileId, owner.kind, owner.id, owner.path, at]);
    await tx.run("UPDATE files SET referenced_at = ? WHERE id = ? AND referenced_at IS NULL", [at, fileId]);
    return toReference(file);
  }

  /**
   * Removes the references `owner` holds (all of them, or only those at `owner.path` when given),
   * inside the caller's write transaction.
   * @returns how many references were removed
   */
  async removeReferences(tx: SqlWriter, owner: { kind: string; id: string; path?: string }): Promise<number> {
    checkOwner(owner as FileOwner, false);
    const res =
      owner.path === undefined
        ? await tx.run("DELETE FROM file_references WHERE owner_kind = ? AND owner_id = ?", [owner.kind, owner.id])
        : await tx.run("DELETE FROM file_references WHERE owner_kind = ? AND owner_id = ? AND path = ?", [owner.kind, owner.id, owner.path]);
    return res.changes;
  }

  /** The references that hold `fileId`, oldest first. */
  async references(fileId: string): Promise<(FileOwner & { createdAt: string })[]> {
    const rows = await this.db.all<{ owner_kind: string; owner_id: string; path: string; created_at: string }>("SELECT owner_kind, owner_id, path, created_at FROM file_references WHERE file_id = ? ORDER BY created_at, owner_kind, owner_id, path", [fileId]);
    return rows.map((r) => ({ kind: r.owner_kind, id: r.owner_id, path: r.path, createdAt: r.created_at }));
  }

  /**
   * Deletes files that were never referenced, were created more than `olderThanMs` ago, and have no
   * live (unexpired, unrevoked) download URL; deletes a file's blob only when no other file row has the
   * same SHA-256. Blob deletions that failed earlier are retried first. Meant for a background pass.
   *
   * @param olderThanMs retention in ms; default {@link DEFAULT_UNREFERENCED_RETENTION_MS} (24 h)
   * @returns how many files were deleted
   * @throws the blob store's error when a blob cannot be deleted (the deletion stays queued and is retried next time)
   */
  async collectUnreferenced(olderThanMs = DEFAULT_UNREFERENCED_RETENTION_MS): Promise<number> {
    await this.retryBlobDeletions();
    const now = this.now();
    const cutoff = new Date(now - olderThanMs).toISOString();
    const eligible = "referenced_at IS NULL AND created_at < ? AND NOT EXISTS (SELECT 1 FROM download_urls d WHERE d.file_id = files.id AND d.revoked_at IS NULL AND d.expires_at > ?)";
    let deleted = 0;
    for (;;) {
      const batch = await this.db.all<{ id: string; sha256: string }>(`SELECT id, sha256 FROM files WHERE ${eligible} ORDER BY created_at LIMIT 200`, [cutoff, now]);
      let progress = 0;
      for (const file of batch) if (await this.deleteIf(file, eligible, [cutoff, now])) progress++;
      deleted += progress;
      if (batch.length < 200 || progress === 0) return deleted;
    }
  }

  /**
   * True when `identityId` uploaded `fileId` (spec 4.3: a file id alone reads nothing, so a caller may
   * hand a file to an action or an artifact only when it is theirs).
   */
  async uploadedBy(fileId: string, identityId: string): Promise<boolean> {
    return (await this.db.get("SELECT 1 AS one FROM files WHERE id = ? AND created_by = ?", [fileId, identityId])) !== undefined;
  }

  /**
   * Renames a file that nothing references yet (a multipart body whose `name` field came after its file
   * part). The name is sanitized like an upload's.
   * @returns the renamed reference
   * @throws {ApiError} not_found when there is no such unreferenced file
   */
  async rename(fileId: string, name: string): Promise<FileReference> {
    const changed = await this.db.transaction((tx) => tx.run("UPDATE files SET name = ? WHERE id = ? AND referenced_at IS NULL", [sanitizeFileName(name), fileId]));
    const reference = changed.changes ? await this.get(fileId) : undefined;
    if (!reference) throw new ApiError("not_found", `No unreferenced file "${fileId}" to rename`);
    return reference;
  }

  /**
   * Deletes a file that was just uploaded and is not wanted after all (a request refused after its file
   * part was stored): only while it was never referenced and has no live download URL; its blob goes
   * when no other file row uses the same bytes.
   * @returns whether it was deleted
   */
  async discard(fileId: string): Promise<boolean> {
    const file = await this.db.get<{ id: string; sha256: string }>("SELECT id, sha256 FROM files WHERE id = ?", [fileId]);
    if (!file) return false;
    const now = this.now();
    return this.deleteIf(file, "referenced_at IS NULL AND NOT EXISTS (SELECT 1 FROM download_urls d WHERE d.file_id = files.id AND d.revoked_at IS NULL AND d.expires_at > ?)", [now]);
  }

  /**
   * Deletes one file row when `condition` (SQL over `files`) still holds, under the lock of its bytes,
   * then its blob when no other row uses it (queued first, so a failed delete is retried).
   */
  private deleteIf(file: { id: string; sha256: string }, condition: string, params: SqlValue[]): Promise<boolean> {
    return this.locks.run(file.sha256, async () => {
      const outcome = await this.db.transaction(async (tx) => {
        const res = await tx.run(`DELETE FROM files WHERE id = ? AND ${condition}`, [file.id, ...params]);
        if (res.changes === 0) return "kept" as const; // referenced or shared meanwhile
        if (await tx.get("SELECT 1 AS one FROM files WHERE sha256 = ? LIMIT 1", [file.sha256])) return "deleted" as const;
        await tx.run("INSERT OR REPLACE INTO blob_deletions (sha256, queued_at) VALUES (?, ?)", [file.sha256, new Date(this.now()).toISOString()]);
        return "blob" as const;
      });
      if (outcome === "blob") {
        await this.blobs.delete(file.sha256);
        await this.db.transaction((tx) => tx.run("DELETE FROM blob_deletions WHERE sha256 = ?", [file.sha256]));
      }
      return outcome !== "kept";
    });
  }

  /** Deletes the blobs queued for deletion whose SHA-256 no file row uses (again); drops the rest from the queue. */
  private async retryBlobDeletions(): Promise<void> {
    const queued = await this.db.all<{ sha256: string }>("SELECT sha256 FROM blob_deletions ORDER BY queued_at LIMIT 1000");
    for (const { sha256 } of queued) {
      await this.locks.run(sha256, async () => {
        const used = await this.db.get("SELECT 1 AS one FROM files WHERE sha256 = ? LIMIT 1", [sha256]);
        if (!used) await this.blobs.delete(sha256);
        await this.db.transaction((tx) => tx.run("DELETE FROM blob_deletions WHERE sha256 = ?", [sha256]));
      });
    }
  }

  /**
   * Creates a download URL for one file (spec 2.6, 4.3): a random 32-byte secret in the URL, stored only
   * as its SHA-256. Each call makes a distinct URL. The caller checks that the creator may read the file.
   *
   * @throws {ApiError} `not_configured` (503) naming `SVC_API_PUBLIC_ORIGIN` when `publicOrigin` is missing; Error when it is not an http(s) origin
   * @throws {ApiError} `invalid_request` when `expiresInMs` is not a whole number from 1 to 7 days
   * @throws {ApiError} `not_found` when there is no such file
   */
  async createDownloadUrl(fileId: string, options: CreateDownloadUrlOptions): Promise<DownloadUrl> {
    const origin = publicOriginOf(options.publicOrigin);
    const ttl = options.expiresInMs ?? DEFAULT_DOWNLOAD_URL_TTL_MS;
    if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > MAX_DOWNLOAD_URL_TTL_MS) {
      throw new ApiError("invalid_request", `expiresInMs must be a whole number of milliseconds from 1 to ${MAX_DOWNLOAD_URL_TTL_MS} (7 days)`, { field: "expiresInMs" });
    }
    const secret = randomBytes(32).toString("base64url");
    const id = newId("dl");
    const now = this.now();
    const expiresAt = now + ttl;
    await this.db.transaction(async (tx) => {
      const file = await tx.get("SELECT 1 AS one FROM files WHERE id = ?", [fileId]);
      if (!file) throw new ApiError("not_found", `No file "${fileId}"`);
      await tx.run("INSERT INTO download_urls (id, file_id, secret_hash, expires_at, revoked_at, created_at, created_by) VALUES (?, ?, ?, ?, NULL, ?, ?)", [id, fileId, hashSecret(secret), expiresAt, new Date(now).toISOString(), options.createdBy ?? null]);
    });
    return { id, url: `${origin}/api/download/${secret}`, expiresAt: new Date(expiresAt).toISOString() };
  }

  /**
   * Revokes a download URL by its id; from then on it answers 410 `download_url_revoked`. Revoking
   * twice keeps the first revocation time.
   *
   * @param options.createdBy when given, only a URL created by this creator is revoked (others read as missing)
   * @returns the id and when it was revoked (ISO 8601)
   * @throws {ApiError} `not_found` when there is no download URL with this id (of that creator)
   */
  async revokeDownloadUrl(id: string, options: { createdBy?: string } = {}): Promise<{ id: string; revokedAt: string }> {
    const at = new Date(this.now()).toISOString();
    return this.db.transaction(async (tx) => {
      const row = await tx.get<{ revoked_at: string | null; created_by: string | null }>("SELECT revoked_at, created_by FROM download_urls WHERE id = ?", [id]);
      if (!row || (options.createdBy !== undefined && row.created_by !== options.createdBy)) throw new ApiError("not_found", `No download URL "${id}"`);
      if (row.revoked_at) return { id, revokedAt: row.revoked_at };
      await tx.run("UPDATE download_urls SET revoked_at = ? WHERE id = ?", [at, id]);
      return { id, revokedAt: at };
    });
  }

  /**
   * Resolves the secret of a download URL (the last path segment of `/api/download/<secret>`) to the
   * file it serves. No session is involved: the secret is the whole capability (spec 5).
   *
   * @throws {ApiError} `not_found` (404) for a secret that was never issued (or whose file is gone)
   * @throws {ApiError} `download_url_revoked` (410, details `{ revokedAt }`) after revocation
   * @throws {ApiError} `download_url_expired` (410, details `{ expiredAt }`) after expiry
   */
  async resolveDownloadUrl(secret: string): Promise<FileReference> {
    if (typeof secret !== "string" || !SECRET_FORMAT.test(secret)) throw new ApiError("not_found", "No such download URL");
    const row = await this.db.get<FileRow & { expires_at: number; revoked_at: string | null }>(
      `SELECT f.id, f.name, f.content_type, f.declared_content_type, f.size, f.sha256, f.created_at, d.expires_at, d.revoked_at
         FROM download_urls d JOIN files f ON f.id = d.file_id WHERE d.secret_hash = ?`,
      [hashSecret(secret)],
    );
    if (!row) throw new ApiError("not_found", "No such download URL");
    if (row.revoked_at) throw new ApiError("download_url_revoked", "This download URL was revoked", { revokedAt: row.revoked_at });
    if (this.now() >= row.expires_at) throw new ApiError("download_url_expired", "This download URL has expired", { expiredAt: new Date(row.expires_at).toISOString() });
    return toReference(row);
  }
}
