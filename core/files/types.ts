/**
 * The public types of the file service (spec 2.6, 4.1, 4.3): file references, their owners, opened
 * files, download URLs, and the options of `FileStore` (core/files/file-store.ts).
 */
import type { Readable } from "node:stream";
import type { ByteRange } from "./blob-store";
// the rest are named by the {@link} references of the docs below
import type { sanitizeFileName } from "./file-names";
import type { DEFAULT_DOWNLOAD_URL_TTL_MS, FILE_UPLOAD_MAX_BYTES, MAX_DOWNLOAD_URL_TTL_MS } from "./limits";

/**
 * A stored file, as the API answers it (spec 2.6). `contentType` is what the bytes are when they could
 * be recognized and differed from the declared type (then `declaredContentType` keeps what the
 * uploader said); otherwise the declared type, or `application/octet-stream`.
 */
export interface FileReference {
  /** `file_<ulid>` */
  id: string;
  /** Sanitized name: no path, no control characters, at most 255 UTF-8 bytes. */
  name: string;
  contentType: string;
  /** Present only when the bytes said something else than the uploader. */
  declaredContentType?: string;
  /** Bytes. */
  size: number;
  /** Lowercase hex SHA-256 of the bytes (also a strong ETag). */
  sha256: string;
  /** ISO 8601 UTC. */
  createdAt: string;
}

/** Who holds a file reference, and where: e.g. `{ kind: "object", id: "invoice/inv_1001", path: "/properties/pdf" }`. */
export interface FileOwner {
  /** `object`, `run`, `artifact`, … (free text, at most 100 characters). */
  kind: string;
  /** The owner's id within its kind (at most 500 characters). */
  id: string;
  /** Where in the owner the reference is, e.g. `/properties/pdf` (at most 500 characters). */
  path: string;
}

/** Options of `FileStore.upload`. */
export interface UploadOptions {
  /** The uploader's file name; sanitized with {@link sanitizeFileName} (missing: `file`). */
  name?: string;
  /** The uploader's content type, e.g. from the multipart part header; checked against the bytes. */
  declaredContentType?: string;
  /** The most bytes accepted (inclusive), e.g. {@link FILE_UPLOAD_MAX_BYTES}. */
  maxBytes: number;
  /** Aborts the upload (client gone); nothing is left behind. */
  signal?: AbortSignal;
  /** The identity that uploads it (an author may put their own uploads into artifacts, spec 4.3). */
  createdBy?: string;
}

/** An open file: its reference, its bytes (all or the range), and what to put in the response headers. */
export interface OpenedFile {
  reference: FileReference;
  /** The bytes; destroy it when the response is abandoned. */
  stream: Readable;
  /** The inclusive range being served (answer 206 with `Content-Range: bytes start-end/size`), or undefined for all. */
  range?: ByteRange;
  /** Total size of the file in bytes. */
  size: number;
  /** Bytes in `stream` (the `Content-Length`). */
  contentLength: number;
}

/** A created download URL (spec 2.6): the URL is shown once; only its id can be used afterwards. */
export interface DownloadUrl {
  /** `dl_<ulid>`, used to revoke it. */
  id: string;
  /** `<publicOrigin>/api/download/<secret>`: whoever holds it reads the file, with no session, until it expires. */
  url: string;
  /** ISO 8601 UTC. */
  expiresAt: string;
}

/** Options of `FileStore.createDownloadUrl`. */
export interface CreateDownloadUrlOptions {
  /** Lifetime in ms, 1 to {@link MAX_DOWNLOAD_URL_TTL_MS}; default {@link DEFAULT_DOWNLOAD_URL_TTL_MS} (1 hour). */
  expiresInMs?: number;
  /** The API's public origin (`SVC_API_PUBLIC_ORIGIN`), e.g. `https://api.example.com`; required. */
  publicOrigin: string | undefined;
  /** Who created it (identity or run id), kept for audit. */
  createdBy?: string;
}

/** Options of the `FileStore` constructor. */
export interface FileStoreOptions {
  /** The clock, in epoch ms (tests move it to expire URLs and age files). */
  now?: () => number;
  /**
   * Called when the byte stream of an opened file fails (a disk read error, an S3 connection cut
   * mid-body). By then the answer is on its way: srvx answers 500 when nothing was sent yet, else cuts
   * the connection; this is where the failure gets logged. A reader going away is not a failure (the
   * `ERR_STREAM_PREMATURE_CLOSE` or `AbortError` its pipeline destroys the stream with is not reported).
   * What the callback throws is dropped.
   */
  onReadError?: (err: Error, file: FileReference) => void;
}
