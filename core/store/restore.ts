/**
 * Checking a backup, and restoring one into a new data directory (`npm run svc -- restore <dir>
 * [--check]`; README "Backup and restore"). The backup is the directory `npm run svc -- backup` wrote
 * (core/store/backup.ts): whole when it holds `backup.json`.
 *
 * **What a check reads** ({@link checkBackup}), without writing anything in the backup (its databases
 * are opened `immutable`):
 * - `backup.json`, and that the file storage it was taken with (`SVC_FILE_STORAGE`) is the one the
 *   restore will run with: a backup taken with S3 holds no file bytes, and one taken with local storage
 *   holds bytes an S3 service would never read;
 * - `svc.db`: SQLite's `PRAGMA integrity_check`, and that it is svc's (it has a stream epoch);
 * - `temporal.db`, when the backup copied one: `PRAGMA integrity_check`;
 * - with local storage, every blob a file of `svc.db` names: present, and its bytes hash (SHA-256) to
 *   its name. A blob the backup itself reported missing (the file was deleted while it ran) is a
 *   warning; any other missing or damaged blob is a problem;
 * - the payload keys: as many as the backup copied, each of 32 bytes.
 *
 * **How a restore writes** ({@link restoreDataDir}): into `.<name>.restoring` beside a data directory
 * that does not exist yet (same filesystem), or into `.restoring` inside an empty one (a mount point, or
 * a directory of the service's user, stays as it is); then checks that copy as above, flushes it, and
 * renames it into place: in one step beside, entry by entry inside (the service refuses to start on a
 * data directory holding `.restoring`: `DataDirLock.acquire`). A restore that fails leaves
 * nothing behind; one cut short leaves that `.restoring` directory (the next restore refuses to start
 * until it is deleted). A data directory holding only `lost+found` (a new filesystem's root) is empty. Run as root into a directory another user owns, the files become that
 * user's. The data directory keeps `backup.json`, so the service's first start on it renews the stream
 * epoch (`startOnRestoredBackup`).
 */
import crypto from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { pathToFileURL } from "node:url";
import sqlite3 from "sqlite3";
import { fsyncDir, syncTree } from "../fsync-dir";
import { PAYLOAD_KEY_FILE, RETIRED_PAYLOAD_KEYS_DIR, retiredKeyFiles } from "../temporal/payload-keys";
import { blobPath } from "../files/local-blob-store";
import { BACKUP_MANIFEST, type BackupManifest } from "./backup";
import { openConnection } from "./sql";
import { RESTORING_DIR } from "./data-dir-lock";

/** What {@link checkBackup} found in a backup directory. */
export interface BackupCheck {
  /** The backup directory, absolute. */
  dir: string;
  /** Its `backup.json`. */
  manifest: BackupManifest;
  /** What makes it unusable, one sentence each; empty when it can be restored. */
  problems: string[];
  /** What a restore of it lacks but goes on without (files deleted while the backup ran), one sentence each. */
  warnings: string[];
  /** `temporal.db`: `ok` (checked), `damaged` (its check failed: in `problems`), or `absent` (the backup was taken with an external Temporal cluster, or before the first start). */
  temporal: "ok" | "absent" | "damaged";
  /** Local storage: the blobs checked and their size in bytes; S3: the bytes are in the bucket (not checked). */
  blobs: { storage: "local"; checked: number; bytes: number } | { storage: "s3" };
  /** Payload key files found (current and retired), each 32 bytes. */
  payloadKeys: number;
}

/**
 * Checks a backup directory (see the module comment), reading only.
 * @param dir the backup's directory
 * @param opts.blobStorage the file storage the restored service runs with (`SVC_FILE_STORAGE`)
 * @param opts.progress called with a line per step
 * @throws Error when `dir` holds no `backup.json` (not a backup, or one cut short) or it is not JSON;
 *   every other finding is in `problems`
 */
export async function checkBackup(dir: string, opts: { blobStorage: "local" | "s3"; progress?: (line: string) => void }): Promise<BackupCheck> {
  const say = opts.progress ?? (() => undefined);
  const root = path.resolve(dir);
  const manifest = readManifest(root);
  const problems: string[] = [];
  const warnings: string[] = [];
  const taken = manifest.blobs.storage;
  if (taken !== opts.blobStorage) {
    problems.push(
      taken === "s3"
        ? "the backup was taken with SVC_FILE_STORAGE=s3: the file bytes are in the bucket, not in the backup; restore with the same SVC_FILE_STORAGE and bucket settings"
        : `the backup holds the file bytes of local storage, and SVC_FILE_STORAGE is ${opts.blobStorage}: restore with SVC_FILE_STORAGE=local (the default)`,
    );
  }

  say(`checking svc.db (integrity_check${sizeOf(path.join(root, "svc.db"))})`);
  let shas: string[] = [];
  const svc = await integrity(path.join(root, "svc.db"), async (db) => {
    if (!(await db.get<{ value: string }>("SELECT value FROM meta WHERE key = 'stream_epoch'").catch(() => undefined))) return "it is not a database of svc (no stream epoch)";
    if (taken === "local") shas = (await db.all<{ sha256: string }>("SELECT DISTINCT sha256 FROM files ORDER BY sha256")).map((r) => r.sha256);
    return undefined;
  });
  if (svc) problems.push(`svc.db ${svc}`);

  let temporal: BackupCheck["temporal"] = "absent";
  if (manifest.temporal === "copied") {
    say(`checking temporal.db (integrity_check${sizeOf(path.join(root, "temporal.db"))})`);
    const found = await integrity(path.join(root, "temporal.db"));
    temporal = found ? "damaged" : "ok";
    if (found) problems.push(`temporal.db ${found}`);
  }

  let blobs: BackupCheck["blobs"] = { storage: "s3" };
  if (taken === "local") {
    say(`checking ${shas.length} blob${shas.length === 1 ? "" : "s"} (SHA-256)`);
    const reportedMissing = new Set(manifest.blobs.storage === "local" ? manifest.blobs.missing : []);
    let checked = 0;
    let bytes = 0;
    const missing: string[] = [];
    const damaged: string[] = [];
    for (const sha of shas) {
      const file = blobPath(path.join(root, "blobs"), sha);
      try {
        const hash = crypto.createHash("sha256");
        await pipeline(fs.createReadStream(file), async function* (chunks: AsyncIterable<Buffer>) {
          for await (const chunk of chunks) {
            hash.update(chunk);
            bytes += chunk.length;
          }
        });
        if (hash.digest("hex") !== sha) damaged.push(sha);
        checked++;
        if (checked % 1000 === 0) say(`  ${checked} of ${shas.length} blobs`);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        if (reportedMissing.has(sha)) warnings.push(`the bytes of blob ${sha} are not in the backup: its file was deleted while the backup ran (reading it answers 404)`);
        else missing.push(sha);
      }
    }
    if (missing.length) problems.push(`${missing.length} blob(s) that files of svc.db name are missing from blobs/: ${listed(missing)}`);
    if (damaged.length) problems.push(`${damaged.length} blob(s) are damaged (their bytes do not hash to their name): ${listed(damaged)}`);
    blobs = { storage: "local", checked, bytes };
  }

  const keyFiles = [...(fs.existsSync(path.join(root, PAYLOAD_KEY_FILE)) ? [path.join(root, PAYLOAD_KEY_FILE)] : []), ...retiredKeyFiles(root)];
  for (const file of keyFiles) {
    const size = fs.statSync(file).size;
    if (size !== 32) problems.push(`${path.relative(root, file)} holds ${size} bytes, not a 32-byte payload key`);
  }
  if (keyFiles.length < manifest.payloadKeys) problems.push(`the backup copied ${manifest.payloadKeys} payload key file(s) and holds ${keyFiles.length}: without them, the runs' inputs and results that hold download URLs cannot be read`);
  return { dir: root, manifest, problems, warnings, temporal, blobs, payloadKeys: keyFiles.length };
}

/** What {@link restoreDataDir} did. */
export interface RestoreReport {
  /** The data directory restored into, absolute (the directory a link named). */
  dataDir: string;
  /** The check of the restored copy (no `problems`: a restore with problems throws). */
  check: BackupCheck;
  /** Wall time of the whole restore (ms). */
  tookMs: number;
}

/** The error {@link restoreDataDir} throws when the backup's check found problems; nothing was written. */
export class BackupCheckFailed extends Error {
  constructor(readonly check: BackupCheck) {
    super(`the backup ${check.dir} cannot be restored: ${check.problems.join("; ")}`);
  }
}

/**
 * Restores the backup in `backupDir` into `dataDir`, a directory that does not exist yet or is empty
 * (see the module comment): copies it beside a new `dataDir` or inside an existing one (`.restoring`),
 * checks the copy ({@link checkBackup}), and moves it into place. A link to a directory is restored
 * through. The service must not run on `dataDir` (it holds nothing yet).
 * @param opts.blobStorage the file storage the restored service runs with (`SVC_FILE_STORAGE`)
 * @param opts.progress called with a line per step
 * @throws {BackupCheckFailed} when the copy has problems (nothing is left behind)
 * @throws Error when `dataDir` is not empty, is or is inside the backup (or the backup inside it), a
 *   restore into it is in progress or was cut short, `backupDir` is no backup, or a copy fails
 */
export async function restoreDataDir(backupDir: string, dataDir: string, opts: { blobStorage: "local" | "s3"; progress?: (line: string) => void }): Promise<RestoreReport> {
  const started = performance.now();
  const say = opts.progress ?? (() => undefined);
  const from = path.resolve(backupDir);
  readManifest(from);
  let to = path.resolve(dataDir);
  const existing = fs.existsSync(to) ? fs.lstatSync(to) : undefined;
  // a link to a directory: the directory it names is restored into
  if (existing?.isSymbolicLink()) to = fs.realpathSync(to);
  const target = existing ? fs.statSync(to) : undefined;
  if (target && !target.isDirectory()) throw new Error(`${to} is not a directory: a restore goes into a new or empty data directory`);
  if (to === from || to.startsWith(from + path.sep) || from.startsWith(to + path.sep)) throw new Error(`the data directory ${to} and the backup ${from} overlap: restore into a directory outside the backup`);
  // staged inside an existing directory (which may be a mount point, or another user's), else beside it
  const staging = target ? path.join(to, RESTORING_DIR) : path.join(path.dirname(to), `.${path.basename(to)}${RESTORING_DIR}`);
  if (fs.existsSync(staging)) throw new Error(`${staging} exists: a restore into ${to} is in progress, or was cut short (then empty ${to} and delete ${staging}, and restore again)`);
  // a new filesystem's root holds lost+found: it counts as empty
  if (target && fs.readdirSync(to).some((name) => name !== "lost+found")) {
    throw new Error(`${to} is not empty: a restore goes into a new or empty data directory (move the old one aside first; a running service on it must be stopped)`);
  }
  await fsp.mkdir(path.dirname(staging), { recursive: true });
  await fsp.mkdir(staging, { mode: 0o700 });
  try {
    say(`copying the backup into ${staging}`);
    // the manifest last: a copy without it is no backup
    for (const name of RESTORED_ENTRIES) {
      if (fs.existsSync(path.join(from, name))) await copyPrivate(path.join(from, name), path.join(staging, name));
    }
    const check = await checkBackup(staging, { blobStorage: opts.blobStorage, progress: say });
    if (check.problems.length) throw new BackupCheckFailed({ ...check, dir: from });
    // restored as root into a directory of the service's user: its files are that user's
    if (target && process.getuid?.() === 0 && (target.uid !== 0 || target.gid !== 0)) await chownTree(staging, target.uid, target.gid);
    say("flushing the copy to disk");
    await syncTree(staging);
    if (target) {
      // into place one entry at a time, the staging directory removed last: the service refuses to start
      // on a data directory that holds it (a restore cut short), see `DataDirLock.acquire`
      for (const name of RESTORED_ENTRIES) {
        if (fs.existsSync(path.join(staging, name))) await fsp.rename(path.join(staging, name), path.join(to, name));
      }
      await fsp.rmdir(staging);
      await fsyncDir(to);
    } else {
      await fsp.rename(staging, to);
      await fsyncDir(path.dirname(to));
    }
    return { dataDir: to, check: { ...check, dir: from }, tookMs: Math.round(performance.now() - started) };
  } catch (err) {
    await fsp.rm(staging, { recursive: true, force: true });
    throw err;
  }
}

/** What a restore copies from a backup, in this order (the manifest last). */
const RESTORED_ENTRIES = ["svc.db", "temporal.db", PAYLOAD_KEY_FILE, RETIRED_PAYLOAD_KEYS_DIR, "blobs", BACKUP_MANIFEST];

/** Gives a tree to `uid`:`gid` (a restore run as root into a directory of the service's user). */
async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  await fsp.chown(dir, uid, gid);
  for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(p, uid, gid);
    else await fsp.chown(p, uid, gid);
  }
}

/** Reads `<dir>/backup.json`. @throws Error when it is missing (naming what that means) or not JSON */
function readManifest(dir: string): BackupManifest {
  const file = path.join(dir, BACKUP_MANIFEST);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    const restored = fs.existsSync(path.join(dir, "restored-from-backup.json"));
    throw new Error(restored ? `${dir} is a data directory restored from a backup, not a backup: back it up (npm run svc -- backup <dir>)` : `${dir} holds no ${BACKUP_MANIFEST}: it is not a backup, or its backup was cut short (take another)`);
  }
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(text) as BackupManifest;
  } catch {
    throw new Error(`${file} is not JSON: the backup is damaged`);
  }
  const storage = (manifest as { blobs?: { storage?: unknown } } | null)?.blobs?.storage;
  if (typeof manifest !== "object" || manifest === null || typeof manifest.takenAt !== "string" || (storage !== "local" && storage !== "s3") || (manifest.temporal !== "copied" && manifest.temporal !== "absent") || typeof manifest.payloadKeys !== "number") {
    throw new Error(`${file} is not a backup's manifest (it lacks takenAt, temporal, blobs.storage or payloadKeys): the backup is damaged, or was not written by npm run svc -- backup`);
  }
  if (storage === "local" && !Array.isArray((manifest.blobs as { missing?: unknown }).missing)) throw new Error(`${file} is not a backup's manifest (blobs.missing is not a list): the backup is damaged`);
  return manifest;
}

/**
 * Runs SQLite's `PRAGMA integrity_check` on `file`, opened read-only and `immutable` (no journal, no
 * lock files made beside it), then `more` on the same connection.
 * @returns what is wrong (a phrase), or undefined when the database is whole
 */
async function integrity(file: string, more?: (db: Awaited<ReturnType<typeof openConnection>>) => Promise<string | undefined>): Promise<string | undefined> {
  if (!fs.existsSync(file)) return "is missing";
  let db: Awaited<ReturnType<typeof openConnection>>;
  try {
    db = await openConnection(`${pathToFileURL(file).href}?immutable=1`, sqlite3.OPEN_READONLY | sqlite3.OPEN_URI);
  } catch (err) {
    return `cannot be opened (${(err as Error).message})`;
  }
  try {
    const rows = await db.all<{ integrity_check: string }>("PRAGMA integrity_check(20)");
    if (rows.length !== 1 || rows[0]!.integrity_check !== "ok") return `is damaged: ${rows.map((r) => r.integrity_check).slice(0, 3).join("; ")}`;
    return await more?.(db);
  } catch (err) {
    return `is damaged (${(err as Error).message})`;
  } finally {
    await db.close();
  }
}

/** Copies a file or a directory tree, each file 0600 and each directory 0700 (what a data directory holds is its owner's alone). @throws Error on a symbolic link in it */
async function copyPrivate(from: string, to: string): Promise<void> {
  const stat = await fsp.lstat(from);
  if (stat.isSymbolicLink()) throw new Error(`${from} is a symbolic link: a backup svc wrote holds none (copy the backup with cp -a, or -L to follow links)`);
  if (stat.isDirectory()) {
    await fsp.mkdir(to, { mode: 0o700 });
    for (const entry of await fsp.readdir(from)) await copyPrivate(path.join(from, entry), path.join(to, entry));
    return;
  }
  await fsp.copyFile(from, to, fs.constants.COPYFILE_EXCL);
  await fsp.chmod(to, 0o600);
}

/** `, <n> MiB` of a file that is over 100 MiB (integrity_check reads all of it: a large one takes a while), else nothing. */
function sizeOf(file: string): string {
  const size = fs.existsSync(file) ? fs.statSync(file).size : 0;
  return size > 100 * 1048576 ? ` of ${Math.round(size / 1048576)} MiB: a while` : "";
}

/** The first five of `shas`, for a message. */
function listed(shas: string[]): string {
  return `${shas.slice(0, 5).join(", ")}${shas.length > 5 ? ", …" : ""}`;
}
