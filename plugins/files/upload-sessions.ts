/**
 * What the two stores of upload sessions (`./local-sessions.ts`, `./s3-sessions.ts`) add to tus's
 * `DataStore`, and what they share with the routes (`./uploads.ts`) and the tus server over them
 * (`./upload-service.ts`, which opens the one that fits).
 */
import type { Readable } from "node:stream";
import type { Upload } from "@tus/server";

/** The collection URL of upload sessions (spec 4.1). */
export const UPLOADS_PATH = "/api/files/uploads";
/** An upload's id in its URL: 32 lowercase hex digits (128 random bits). */
export const UPLOAD_ID = /^[0-9a-f]{32}$/;
/** Metadata key holding the file id once the upload became a file. */
export const FILE_ID_KEY = "svc_file_id";

/** What both datastores add to tus's `DataStore` for this module. */
export interface SessionStore {
  readonly kind: "local" | "s3";
  /** Prepended to the URL id to make the datastore's id (`uploads/` on S3, nothing locally). */
  readonly keyPrefix: string;
  /** The stored record of an upload, without reading its bytes; undefined when there is none. */
  record(key: string): Promise<Upload | undefined>;
  /** The finished bytes of an upload of `size` bytes. */
  open(key: string, size: number): Promise<Readable>;
  /**
   * The finished upload's data file on this machine's disk, and its SHA-256 when it was hashed as it
   * was written: the local store's, which becomes a file without a copy. Absent on S3 (use {@link open}).
   */
  finishedFile?(key: string, size: number): { path: string; sha256?: string };
  /** Records that the upload became file `fileId`, restarts its expiry, and deletes its bytes (the record stays). */
  markConverted(key: string, fileId: string): Promise<void>;
  /** Deletes everything an upload left (bytes, record, multipart upload); missing pieces are fine. */
  purge(key: string): Promise<void>;
  /** Removes sessions whose last activity is more than the TTL ago; answers how many. */
  deleteExpired(): Promise<number>;
  /** Releases sockets. */
  close(): Promise<void>;
  getUpload(key: string): Promise<Upload>;
}


/** Last activity (tus's `creation_date`, moved forward on every chunk) more than `ttlMs` ago. */
export function isExpired(rec: Pick<Upload, "creation_date">, ttlMs: number): boolean {
  const last = Date.parse(rec.creation_date ?? "");
  return Number.isFinite(last) && Date.now() > last + ttlMs;
}
