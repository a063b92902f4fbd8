/**
 * Upload sessions on local storage (`SVC_FILE_STORAGE=local`, see `./uploads.ts`): `@tus/file-store`
 * under `<dataDir>/uploads`, one data file `<id>` and one record `<id>.json` (written to a temporary
 * file and renamed, so a crash never leaves a torn record).
 */
import { createHash, randomBytes, type Hash } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { ERRORS, Upload, type KvStore } from "@tus/server";
import { FileStore as TusFileStore } from "@tus/file-store";
import { nowIso, writeInBatches } from "../../core/plugin-api";
import { FILE_ID_KEY, UPLOAD_ID, isExpired, type SessionStore } from "./upload-sessions";

/** Upload records as `<dir>/<id>.json`, each written to a temporary file and renamed (a crash never tears one). */
class RecordFiles implements KvStore<Upload> {
  constructor(private readonly dir: string) {}

  private file(key: string): string {
    if (!UPLOAD_ID.test(key)) throw new Error(`Not an upload id: ${JSON.stringify(key)}`);
    return path.join(this.dir, `${key}.json`);
  }

  async get(key: string): Promise<Upload | undefined> {
    try {
      return JSON.parse(await fsp.readFile(this.file(key), "utf8")) as Upload;
    } catch {
      return undefined;
    }
  }

  async set(key: string, value: Upload): Promise<void> {
    const file = this.file(key);
    const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(value));
    await fsp.rename(tmp, file);
  }

  async delete(key: string): Promise<void> {
    await fsp.rm(this.file(key), { force: true });
  }

  async list(): Promise<string[]> {
    return (await fsp.readdir(this.dir)).filter((n) => /^[0-9a-f]{32}\.json$/.test(n)).map((n) => n.slice(0, -".json".length));
  }

  /** Removes temporary record files older than `olderThanMs` (left by a crash between write and rename). */
  async sweepTemporary(olderThanMs: number): Promise<void> {
    for (const name of await fsp.readdir(this.dir)) {
      if (!name.endsWith(".tmp")) continue;
      const file = path.join(this.dir, name);
      const stat = await fsp.stat(file).catch(() => undefined);
      if (stat && Date.now() - stat.mtimeMs > olderThanMs) await fsp.rm(file, { force: true });
    }
  }
}

/** The SHA-256 of an upload's first `offset` bytes, updated as PATCHes write them. */
interface RunningHash {
  offset: number;
  hash: Hash;
}

/** Upload sessions as files under one directory (see the module comment). */
export class LocalSessionStore extends TusFileStore implements SessionStore {
  readonly kind = "local" as const;
  readonly keyPrefix = "";
  private readonly records: RecordFiles;
  /**
   * Per upload, the hash of the bytes written so far by this process, so a finished upload is not read
   * again to hash it ({@link finishedFile}). Missing after a restart, or after a write whose bytes on
   * disk could not be matched to what was hashed: the file is then read once at the finish.
   */
  private readonly hashes = new Map<string, RunningHash>();

  constructor(directory: string, private readonly ttlMs: number) {
    // @tus/file-store creates the directory asynchronously and throws outside any promise on failure
    fs.mkdirSync(directory, { recursive: true });
    const records = new RecordFiles(directory);
    super({ directory, configstore: records, expirationPeriodInMilliseconds: ttlMs });
    this.records = records;
  }

  private dataPath(key: string): string {
    if (!UPLOAD_ID.test(key)) throw new Error(`Not an upload id: ${JSON.stringify(key)}`);
    return path.join(this.directory, key);
  }

  /** Moves the upload's last activity (tus's `creation_date`) to now. */
  private async touch(key: string): Promise<void> {
    const rec = await this.records.get(key);
    if (rec) await this.records.set(key, new Upload({ ...rec, creation_date: nowIso() }));
  }

  /**
   * Writes a PATCH's bytes at `offset` (tus's `DataStore.write`), a MiB at a time ({@link writeInBatches};
   * `@tus/file-store`'s own write streams each chunk through a `Transform` into a `WriteStream`).
   * @returns the upload's new offset
   * @throws tus's `FILE_WRITE_ERROR` when the body breaks off or the disk fails; the bytes that came
   *   before are written (the client's HEAD finds them), as `@tus/file-store` does
   */
  override async write(readable: Readable, key: string, offset: number): Promise<number> {
    const known = this.hashes.get(key);
    this.hashes.delete(key);
    // hash on from where the last write of this process ended, or from the start
    const running: RunningHash | undefined = known?.offset === offset ? known : offset === 0 ? { offset: 0, hash: createHash("sha256") } : undefined;
    let bodyFailed = false;
    async function* hashing(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
      try {
        for await (const chunk of source) {
          running!.hash.update(chunk);
          running!.offset += chunk.length;
          yield chunk;
        }
      } catch (err) {
        bodyFailed = true;
        throw err;
      }
    }
    let file: fsp.FileHandle | undefined;
    try {
      file = await fsp.open(this.dataPath(key), "r+");
      const end = offset + (await writeInBatches(file, running ? hashing(readable) : readable, offset));
      // every byte hashed was written: running.offset is `end`
      if (running) this.hashes.set(key, running);
      return end;
    } catch {
      // writeInBatches writes what came before a broken body: the hash still holds when the file ends
      // where it does; after a failed write the bytes on disk are not trusted to be what was hashed
      if (running && file && bodyFailed) {
        const size = await file.stat().then((st) => st.size, () => -1);
        if (size === running.offset) this.hashes.set(key, running);
      }
      throw ERRORS.FILE_WRITE_ERROR;
    } finally {
      await file?.close().catch(() => undefined);
      // bytes that arrived before a dropped connection are kept too: that is activity
      await this.touch(key).catch(() => undefined);
    }
  }

  /**
   * The data file of the finished upload `key` of `size` bytes, to become a file without a copy
   * (`FileStore.uploadFile`), with its SHA-256 when this process hashed all its bytes as they were
   * written (a restart in between, or a write it could not account for, leaves it out). Consumes the
   * running hash.
   */
  finishedFile(key: string, size: number): { path: string; sha256?: string } {
    const running = this.hashes.get(key);
    this.hashes.delete(key);
    return { path: this.dataPath(key), ...(running?.offset === size ? { sha256: running.hash.digest("hex") } : {}) };
  }

  override async getUpload(key: string): Promise<Upload> {
    const rec = await this.records.get(key);
    if (rec?.metadata?.[FILE_ID_KEY]) return new Upload({ ...rec, offset: rec.size ?? 0 });
    return super.getUpload(key);
  }

  record(key: string): Promise<Upload | undefined> {
    return this.records.get(key);
  }

  async open(key: string, size: number): Promise<Readable> {
    // read a MiB at a time (the default is 64 KiB: a hop to libuv's pool per 64 KiB of a finished upload)
    return size === 0 ? Readable.from([]) : fs.createReadStream(this.dataPath(key), { highWaterMark: 1024 * 1024 });
  }

  async markConverted(key: string, fileId: string): Promise<void> {
    const rec = await this.records.get(key);
    if (!rec) throw new Error(`Upload ${key} has no record`);
    await this.records.set(key, new Upload({ ...rec, offset: rec.size ?? 0, creation_date: nowIso(), metadata: { ...rec.metadata, [FILE_ID_KEY]: fileId } }));
    this.hashes.delete(key);
    await fsp.rm(this.dataPath(key), { force: true });
  }

  async purge(key: string): Promise<void> {
    this.hashes.delete(key);
    await fsp.rm(this.dataPath(key), { force: true });
    await this.records.delete(key);
  }

  override async deleteExpired(): Promise<number> {
    let removed = 0;
    for (const key of await this.records.list()) {
      const rec = await this.records.get(key);
      if (rec && isExpired(rec, this.ttlMs)) {
        await this.purge(key);
        removed++;
      }
    }
    await this.records.sweepTemporary(Math.max(this.ttlMs, 3_600_000));
    return removed;
  }

  async close(): Promise<void> {}
}

