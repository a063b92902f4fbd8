/**
 * Blob storage (spec 2.6, 8): the bytes of stored files, content-addressed by their SHA-256.
 *
 * A blob is immutable and named by the lowercase hex SHA-256 of its bytes, so two files with the same
 * bytes share one blob and a write of bytes that are already stored ends in the same single blob. The
 * file rows that point at blobs (names, content types, references) live in SQLite (see `file-store.ts`);
 * this layer only moves bytes. Two backends implement {@link BlobStore}: the local filesystem
 * (`local-blob-store.ts`, the default) and S3-compatible object storage (`s3-blob-store.ts`).
 */
import { createHash, type Hash } from "node:crypto";
import { addAbortSignal, Readable } from "node:stream";
import { ApiError } from "../errors";

/** What a stored blob is: its content address (lowercase hex SHA-256, 64 chars) and its size in bytes. */
export interface BlobInfo {
  sha256: string;
  size: number;
}

/**
 * An inclusive byte range, as HTTP `Range: bytes=start-end` means it: `start` and `end` are 0-based
 * offsets and both bytes are included, so `{ start: 0, end: 0 }` is the first byte. A valid range of a
 * blob of `size` bytes has `0 <= start <= end < size` (a 0-byte blob has no valid range).
 */
export interface ByteRange {
  start: number;
  end: number;
}

/** Options of {@link BlobStore.write} and {@link BlobStore.stage}. */
export interface BlobWriteOptions {
  /**
   * The most bytes the body may have (inclusive; spec 8: 25 MiB through `POST /api/files`). One byte
   * more and the write fails with `ApiError("payload_too_large")`, reading no further than that byte.
   */
  maxBytes: number;
  /** Aborts the write (the promise rejects with an `AbortError` or the signal's reason); nothing is left behind. */
  signal?: AbortSignal;
}

/** Options of {@link BlobStore.stageFile}. */
export interface StageFileOptions {
  /** The most bytes the file may have (inclusive). */
  maxBytes: number;
  /**
   * The file's SHA-256 (64 lowercase hex digits) when the caller computed it over the very bytes it
   * wrote (a tus upload hashes its chunks as they are written); the store then does not read the file.
   * Without it the store reads the file once to hash it.
   */
  sha256?: string;
}

/**
 * A body that has been streamed and hashed into temporary storage but is not visible under its
 * content address yet. Exactly one of {@link commit} or {@link discard} must be called.
 */
export interface StagedBlob extends BlobInfo {
  /**
   * Makes the blob readable under its content address (atomically: a reader sees the whole blob or
   * nothing). When a blob with the same address already exists the staged copy is dropped. Either way
   * the temporary storage is released.
   * @throws the backend's I/O error; the staged copy is then released too
   */
  commit(): Promise<void>;
  /** Drops the staged copy. Never throws; safe to call after a failed commit. */
  discard(): Promise<void>;
}

/**
 * Content-addressed blob storage. Implementations never expose partial blobs: a write that fails
 * (limit exceeded, source stream error, abort, crash) leaves nothing readable and, apart from temporary
 * files a crash may leave (swept when the store is opened again), nothing stored.
 */
export interface BlobStore {
  /** `local` or `s3`, for status pages and logs. */
  readonly kind: "local" | "s3";

  /**
   * Streams `body` into the store, computing its SHA-256 and size as the bytes pass (memory stays
   * bounded whatever the size), and answers where it landed. Equivalent to {@link stage} then
   * `commit()`. Concurrent writes of the same bytes end in one stored blob.
   *
   * @throws {ApiError} `payload_too_large` (413, details `{ limitBytes }`) when the body has more than
   *   `maxBytes` bytes; nothing is left behind
   * @throws the body's own error when the source stream fails, or the abort reason; nothing is left behind
   */
  write(body: Readable | AsyncIterable<Uint8Array>, options: BlobWriteOptions): Promise<BlobInfo>;

  /**
   * Streams and hashes `body` into temporary storage without making it visible yet, so a caller can
   * serialize the final step with its own bookkeeping (the file store holds a per-hash lock across
   * `commit()` and its row insert so a concurrent garbage collection cannot delete the blob in between).
   *
   * @throws the same errors as {@link write}, with nothing left behind
   */
  stage(body: Readable | AsyncIterable<Uint8Array>, options: BlobWriteOptions): Promise<StagedBlob>;

  /**
   * Stages a finished file on this machine's disk without copying its bytes where the backend can (the
   * local one hard-links it into place on `commit()`; it copies only across filesystems). Backends
   * without it are given the file's bytes through {@link stage}. The file must not change afterwards:
   * the blob may share its storage. `discard()` leaves the file where it is; it stays the caller's.
   *
   * @param file the file's path
   * @throws {ApiError} `payload_too_large` when the file has more than `maxBytes` bytes
   * @throws the filesystem's error (e.g. `ENOENT`) when the file cannot be read or flushed
   */
  stageFile?(file: string, options: StageFileOptions): Promise<StagedBlob>;

  /**
   * Opens the blob (or the inclusive `range` of it) for reading.
   *
   * @throws {ApiError} `not_found` when no blob has this address
   * @throws {ApiError} `range_not_satisfiable` (416, details `{ size }`) when the range is not within the blob
   */
  read(sha256: string, range?: ByteRange): Promise<Readable>;

  /** The blob's address and size, or `undefined` when it is not stored. */
  stat(sha256: string): Promise<BlobInfo | undefined>;

  /** True when a blob with this address is stored. */
  exists(sha256: string): Promise<boolean>;

  /** Deletes the blob; deleting a missing blob is not an error. */
  delete(sha256: string): Promise<void>;

  /**
   * Whether the store answers (`GET /api/status`'s `files` part, spec 4.1): `ok` with how long the
   * check took, or `unhealthy` with why. Never throws; at most one check runs every few seconds (the
   * last answer is reused meanwhile), and a check waits at most 2 s.
   */
  health(): Promise<BlobStoreHealth>;

  /** Releases the backend's resources (sockets). The store is unusable afterwards. */
  close(): Promise<void>;
}

/** What {@link BlobStore.health} answers. */
export type BlobStoreHealth = { status: "ok"; storage: "local" | "s3"; latencyMs: number } | { status: "unhealthy"; storage: "local" | "s3"; error: string };

/** How long a {@link BlobStore.health} answer is reused (ms). */
export const HEALTH_REUSE_MS = 5_000;
/** How long a {@link BlobStore.health} check waits for the store (ms). */
export const HEALTH_WAIT_MS = 2_000;

/**
 * A {@link BlobStore.health} over `check` (which throws when the store does not answer): reuses an
 * answer for {@link HEALTH_REUSE_MS}, gives up on a check after {@link HEALTH_WAIT_MS}.
 */
export function healthCheck(storage: "local" | "s3", check: (signal: AbortSignal) => Promise<unknown>): () => Promise<BlobStoreHealth> {
  let last: { at: number; answer: Promise<BlobStoreHealth> } | undefined;
  return () => {
    if (last && Date.now() - last.at < HEALTH_REUSE_MS) return last.answer;
    const began = Date.now();
    const signal = AbortSignal.timeout(HEALTH_WAIT_MS);
    const answer = Promise.race([
      check(signal),
      new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error(`no answer within ${HEALTH_WAIT_MS} ms`)), { once: true })),
    ]).then(
      (): BlobStoreHealth => ({ status: "ok", storage, latencyMs: Date.now() - began }),
      (err: unknown): BlobStoreHealth => ({ status: "unhealthy", storage, error: (err as Error)?.message ?? String(err) }),
    );
    last = { at: began, answer };
    return answer;
  };
}

/** How long a temporary upload may sit before the store sweeps it as left over by a crash: 1 hour. */
export const STALE_TEMP_MS = 3_600_000;

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Checks that `sha256` is a content address (64 lowercase hex digits), so it can be used in file paths
 * and object keys safely.
 * @throws {ApiError} `not_found` otherwise (an address that cannot exist names nothing)
 */
export function assertBlobAddress(sha256: string): void {
  if (typeof sha256 !== "string" || !SHA256_HEX.test(sha256)) throw new ApiError("not_found", "No such blob");
}

/**
 * Checks an inclusive range against a blob of `size` bytes.
 * @throws {ApiError} `range_not_satisfiable` (details `{ size }`) unless `0 <= start <= end < size`
 */
export function assertRange(range: ByteRange, size: number): void {
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || start > end || end >= size) {
    throw new ApiError("range_not_satisfiable", `Range ${start}-${end} is not within the ${size} bytes of the file`, { size }, { "content-range": `bytes */${size}` });
  }
}

/**
 * Parses an HTTP `Range` header (RFC 9110 section 14) against a representation of `size` bytes.
 *
 * Only one `bytes` range is honored: `bytes=a-b`, `bytes=a-` and `bytes=-n` (the last n bytes). A
 * missing header, another unit, or several ranges answer `undefined` (serve the whole content, which
 * RFC 9110 allows); a syntactically valid range that lies outside the content answers
 * `"unsatisfiable"` (answer 416 with `Content-Range: bytes * / size`). An end past the content is clamped.
 *
 * @returns the inclusive range to serve, `undefined` for the whole content, or `"unsatisfiable"`
 */
export function parseRangeHeader(header: string | undefined | null, size: number): ByteRange | "unsatisfiable" | undefined {
  if (!header) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return undefined;
  const [, a = "", b = ""] = m;
  if (a === "" && b === "") return undefined;
  if (a === "") {
    const suffix = Number(b);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(a);
  const end = b === "" ? size - 1 : Math.min(Number(b), size - 1);
  if (b !== "" && Number(b) < start) return undefined; // invalid range-spec: ignore the header
  if (start >= size) return "unsatisfiable";
  return { start, end };
}

/** Running totals of a {@link meter}ed body: bytes so far and the hash being computed. */
export interface MeterState {
  size: number;
  hash: Hash;
}

/** A fresh {@link MeterState}. */
export function newMeterState(): MeterState {
  return { size: 0, hash: createHash("sha256") };
}

/** The `payload_too_large` error every backend throws for a body over `maxBytes`. */
export function tooLarge(maxBytes: number): ApiError {
  return new ApiError("payload_too_large", `The file is larger than the limit of ${maxBytes} bytes`, { limitBytes: maxBytes });
}

/**
 * Passes the chunks of `body` through, adding them to `state` (size and SHA-256) and throwing
 * {@link tooLarge} as soon as more than `maxBytes` bytes have come (a `TypeError` for a `maxBytes` that
 * is not a whole number). Stopping the iteration (an error downstream, or the limit) destroys the
 * source stream, so a too-large body is not read further.
 * Strings are encoded as UTF-8.
 */
export async function* meter(body: Readable | AsyncIterable<Uint8Array | string>, maxBytes: number, state: MeterState, signal?: AbortSignal): AsyncGenerator<Buffer> {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new TypeError(`maxBytes must be a whole number of bytes, not ${maxBytes}`);
  signal?.throwIfAborted();
  // an abort while the source is idle must end the wait, not only the next chunk
  if (signal && body instanceof Readable) addAbortSignal(signal, body);
  for await (const raw of body as AsyncIterable<Uint8Array | string>) {
    signal?.throwIfAborted();
    const chunk = typeof raw === "string" ? Buffer.from(raw, "utf8") : Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    if (chunk.length === 0) continue;
    if (state.size + chunk.length > maxBytes) throw tooLarge(maxBytes);
    state.size += chunk.length;
    state.hash.update(chunk);
    yield chunk;
  }
  signal?.throwIfAborted();
}
