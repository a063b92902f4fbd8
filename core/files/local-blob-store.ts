/**
 * The filesystem blob backend (spec 8: the embedded default), under one directory (the runtime uses
 * `<dataDir>/blobs`):
 *
 * ```
 * <root>/.tmp/<uuid>.part          bodies being written (swept after an hour: left over by a crash)
 * <root>/ab/cd/abcd…<64 hex>       committed blobs, named by their SHA-256
 * ```
 *
 * A body is streamed into a temporary file of the same tree, fsynced, then renamed to its address (and
 * the directory fsynced), so a crash at any point leaves either nothing or the whole blob visible.
 */
import { createHash, randomUUID } from "node:crypto";
import fsp from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { ApiError } from "../errors";
import { fsyncDir } from "../fsync-dir";
import { writeInBatches } from "./batched-write";
import { assertBlobAddress, assertRange, healthCheck, meter, newMeterState, STALE_TEMP_MS, tooLarge, type BlobInfo, type BlobStore, type BlobWriteOptions, type ByteRange, type StageFileOptions, type StagedBlob } from "./blob-store";

const TMP_DIR = ".tmp";

function isNotFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException)?.code === "ENOENT";
}


/** The lowercase hex SHA-256 of an open file's bytes, read a MiB at a time into one buffer. */
async function hashFile(fh: fsp.FileHandle): Promise<string> {
  const hash = createHash("sha256");
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  for (let position = 0; ; ) {
    const { bytesRead } = await fh.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0) break;
    hash.update(buffer.subarray(0, bytesRead));
    position += bytesRead;
  }
  return hash.digest("hex");
}

/**
 * Creates the directory `dir` (a blob's `ab/cd`) with its missing parents, and flushes the entry of each
 * directory it created to disk (the entry lives in its parent), so a blob renamed or linked into `dir`
 * is still reachable after a crash. The caller flushes `dir` itself after adding the blob's entry.
 */
async function makeDirDurable(dir: string): Promise<void> {
  const first = await fsp.mkdir(dir, { recursive: true });
  if (first === undefined) return;
  for (let created = dir; ; created = path.dirname(created)) {
    await fsyncDir(path.dirname(created));
    if (created === first) break;
  }
}

/** Options of {@link LocalBlobStore.open}. */
export interface LocalBlobStoreOptions {
  /** Temporary files older than this (ms, by modification time) are deleted on open. Default 1 hour. */
  staleTempMs?: number;
  /** The clock, in epoch ms (tests). */
  now?: () => number;
}

/**
 * Content-addressed blobs in a local directory. See the module comment for the layout and the
 * crash-safety argument; see {@link BlobStore} for the contract of each method.
 */
export class LocalBlobStore implements BlobStore {
  readonly kind = "local" as const;
  /** {@link BlobStore.health}: the blob directory can be written. */
  readonly health = healthCheck("local", () => fsp.access(this.root, fsp.constants.W_OK));

  private constructor(readonly root: string) {}

  /**
   * Opens (creating) the store under `root` and deletes temporary files left over by a crash that are
   * older than `staleTempMs` (1 hour by default; younger ones may belong to a live upload of another
   * process sharing the directory).
   *
   * @param root the blob directory, e.g. `<dataDir>/blobs`
   * @throws the filesystem error when the directory cannot be created or read
   */
  static async open(root: string, options: LocalBlobStoreOptions = {}): Promise<LocalBlobStore> {
    const dir = path.resolve(root);
    await fsp.mkdir(path.join(dir, TMP_DIR), { recursive: true });
    const store = new LocalBlobStore(dir);
    await store.sweepTemporaryFiles(options.staleTempMs ?? STALE_TEMP_MS, (options.now ?? Date.now)());
    return store;
  }

  /**
   * Deletes temporary files last modified more than `olderThanMs` before `now`.
   * @returns how many were deleted
   */
  async sweepTemporaryFiles(olderThanMs: number, now = Date.now()): Promise<number> {
    const tmp = path.join(this.root, TMP_DIR);
    let swept = 0;
    for (const name of await fsp.readdir(tmp)) {
      const file = path.join(tmp, name);
      try {
        const st = await fsp.stat(file);
        if (now - st.mtimeMs > olderThanMs) {
          await fsp.rm(file, { force: true, recursive: true });
          swept++;
        }
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    return swept;
  }

  /** The path of the blob `sha256`: `<root>/ab/cd/<sha256>` ({@link blobPath}). @throws Error for a malformed address */
  pathOf(sha256: string): string {
    assertBlobAddress(sha256);
    return blobPath(this.root, sha256);
  }

  async write(body: Readable | AsyncIterable<Uint8Array>, options: BlobWriteOptions): Promise<BlobInfo> {
    const staged = await this.stage(body, options);
    await staged.commit();
    return { sha256: staged.sha256, size: staged.size };
  }

  async stage(body: Readable | AsyncIterable<Uint8Array>, options: BlobWriteOptions): Promise<StagedBlob> {
    const tmp = path.join(this.root, TMP_DIR, `${randomUUID()}.part`);
    const state = newMeterState();
    let fh: fsp.FileHandle | undefined;
    try {
      fh = await fsp.open(tmp, "wx");
      await writeInBatches(fh, meter(body, options.maxBytes, state, options.signal));
      await fh.sync();
      await fh.close();
      fh = undefined;
    } catch (err) {
      await fh?.close().catch(() => undefined);
      await fsp.rm(tmp, { force: true });
      throw err;
    }
    const sha256 = state.hash.digest("hex");
    let settled = false;
    const discard = async () => {
      settled = true;
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
    };
    return {
      sha256,
      size: state.size,
      commit: async () => {
        if (settled) throw new Error("This staged blob was already committed or discarded");
        settled = true;
        const target = this.pathOf(sha256);
        try {
          if (await this.exists(sha256)) {
            await fsp.rm(tmp, { force: true });
            return;
          }
          await makeDirDurable(path.dirname(target));
          // atomic: a concurrent commit of the same bytes replaces an identical file
          await fsp.rename(tmp, target);
          await fsyncDir(path.dirname(target));
        } catch (err) {
          await fsp.rm(tmp, { force: true }).catch(() => undefined);
          throw err;
        }
      },
      discard,
    };
  }

  /**
   * Stages the finished file `file` (see {@link BlobStore.stageFile}): makes it read-only (mode 0444),
   * flushes it to disk (fsync), hashes it unless `options.sha256` is given, and on `commit()` hard-links
   * it to its address, so its bytes are neither read nor written again. Where a link is refused (another filesystem: `EXDEV`; no hard
   * links: `EPERM`, `ENOTSUP`, `EMLINK`) the file is copied into a temporary file, flushed and renamed
   * instead. The link shares the file's storage: the caller must not write to `file` again, and may
   * delete it (the blob keeps its bytes). `discard()` leaves `file` alone.
   *
   * @throws {ApiError} `payload_too_large` over `options.maxBytes`; nothing staged
   * @throws the filesystem's error when `file` cannot be opened, read or flushed
   */
  async stageFile(file: string, options: StageFileOptions): Promise<StagedBlob> {
    if (options.sha256 !== undefined) assertBlobAddress(options.sha256);
    let sha256: string;
    let size: number;
    const fh = await fsp.open(file, "r");
    try {
      size = (await fh.stat()).size;
      if (size > options.maxBytes) throw tooLarge(options.maxBytes);
      // a blob is never written: a stray writer of the session's file gets EACCES (unless it runs as root)
      await fh.chmod(0o444).catch(() => undefined);
      // flushing needs no write access: the bytes must be on disk before a file row points at them
      [, sha256] = await Promise.all([fh.sync(), options.sha256 ?? hashFile(fh)]);
    } finally {
      await fh.close().catch(() => undefined);
    }
    let settled = false;
    return {
      sha256,
      size,
      commit: async () => {
        if (settled) throw new Error("This staged blob was already committed or discarded");
        settled = true;
        if (await this.exists(sha256)) return;
        const target = this.pathOf(sha256);
        await makeDirDurable(path.dirname(target));
        try {
          await fsp.link(file, target);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === "EXDEV" || code === "EPERM" || code === "ENOTSUP" || code === "EMLINK") await this.copyInto(file, target);
          // EEXIST: a concurrent commit of the same bytes got there first (its entry is flushed below too)
          else if (code !== "EEXIST") throw err;
        }
        await fsyncDir(path.dirname(target));
      },
      discard: async () => {
        settled = true;
      },
    };
  }

  /** Copies `file` to `target` through a flushed temporary file and a rename (the fallback of {@link stageFile}). */
  private async copyInto(file: string, target: string): Promise<void> {
    const tmp = path.join(this.root, TMP_DIR, `${randomUUID()}.part`);
    try {
      await fsp.copyFile(file, tmp, fsp.constants.COPYFILE_EXCL);
      // read-only like its source: flushing needs no write access
      const fh = await fsp.open(tmp, "r");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, target);
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
  }

  async read(sha256: string, range?: ByteRange): Promise<Readable> {
    const file = this.pathOf(sha256);
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(file, "r");
    } catch (err) {
      if (isNotFound(err)) throw new ApiError("not_found", "No such blob");
      throw err;
    }
    try {
      // the open descriptor keeps the bytes readable even if the blob is deleted meanwhile
      const { size } = await fh.stat();
      if (range) assertRange(range, size);
      return fh.createReadStream(range ? { start: range.start, end: range.end } : {});
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
  }

  async stat(sha256: string): Promise<BlobInfo | undefined> {
    try {
      const st = await fsp.stat(this.pathOf(sha256));
      return { sha256, size: st.size };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async exists(sha256: string): Promise<boolean> {
    return (await this.stat(sha256)) !== undefined;
  }

  async delete(sha256: string): Promise<void> {
    await fsp.rm(this.pathOf(sha256), { force: true });
  }

  async close(): Promise<void> {
    // nothing held open between calls
  }
}


/**
 * Where the local blob store under `root` keeps the blob `sha256`: `<root>/ab/cd/<sha256>` (the layout
 * of the module comment; a backup of a data directory keeps it under its `blobs/`). Unchecked: see
 * `LocalBlobStore.pathOf`.
 */
export function blobPath(root: string, sha256: string): string {
  return path.join(root, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
}
