/**
 * A backup of a data directory, taken while the service runs or not (`npm run svc -- backup <dir>`;
 * README "Backup and restore"). What a data directory holds, and what the backup does with it:
 *
 * | In the data directory | In the backup |
 * |---|---|
 * | `temporal.db` (the embedded Temporal dev server's state) | a consistent snapshot (`VACUUM INTO`), taken first |
 * | `svc.db` (objects, events, runs, tokens, …) | a consistent snapshot, taken second, its `stream_epoch` renewed (below) |
 * | `blobs/` (local file storage) | every blob a file row of the `svc.db` snapshot names, copied after it |
 * | `temporal-payload.key`, `temporal-payload-keys/` | copied (mode 0600) |
 * | `uploads/` (resumable uploads in progress), `svc.lock` | left out: an upload in progress starts again |
 *
 * **Order.** Temporal's snapshot is taken before svc's: what a run's steps recorded in svc's store is
 * then at least as new as what Temporal remembers of the run, and a step Temporal runs again after a
 * restore records nothing twice (its records are keyed). A run svc started on Temporal while the
 * snapshots were taken may be unknown to the restored Temporal: in the copy, the runs requested since
 * a minute before Temporal's snapshot began go back to `pending`, and the restored service starts them
 * again (one Temporal already has is adopted as started, `RunStarter`). An intervention answered in
 * that moment may be answered in svc's copy and not in Temporal's: the report counts those (none,
 * almost always). Blobs are copied after svc's snapshot, so every file it names has its bytes, unless
 * the file was deleted in between: those are named in the report.
 *
 * **Cursors.** The restored service must not answer cursors the live one gave out after the snapshot:
 * the events after it are lost, and new ones would take their positions, so a client holding such a
 * cursor would skip them silently. So the stream gets a new `stream_epoch` ({@link renewStreamEpoch})
 * twice: in the copy, and again at the first start on a restored data directory (its `backup.json`
 * says it is one), so that two restores of one backup do not share cursors either. Every cursor the
 * live service gave out (events, logs, agent output) is then refused (400 "not a cursor of this event
 * stream"), and clients read again from current state (spec 6.2 rule 2). The service's own positions
 * on the stream (rules' checkpoints, event schedules' consumers) are carried over to the new epoch.
 *
 * With S3 file storage the bytes are the bucket's to back up (versioning, replication); with an
 * external Temporal cluster (`TEMPORAL_ADDRESS`), its persistence is; with NATS as the event stream,
 * the broker's stream is. The report says which parts it did not copy.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import sqlite3 from "sqlite3";
import { fsyncDir, syncTree } from "../fsync-dir";
import { decodeCursor, encodeCursor } from "../events/cursor";
import { openConnection, type SqlStatements } from "./sql";
import { blobPath } from "../files/local-blob-store";
import { retiredKeyFiles } from "../temporal/payload-keys";

/** What {@link backupDataDir} copied, and what it could not (spec of the report: README "Backup and restore"). */
export interface BackupReport {
  /** The backup directory, absolute. */
  dir: string;
  /** When svc's snapshot was taken (ISO 8601): the backup's point in time. */
  takenAt: string;
  /** `copied`: the embedded dev server's state; `absent`: this data directory has none (an external Temporal cluster, or never started). */
  temporal: "copied" | "absent";
  /** Runs (workflow, sync, pipeline) started on Temporal and requested since a minute before its snapshot began: `pending` again in the copy, so the restored service starts (or adopts) them. */
  runsToStartAgain: number;
  /** Interventions answered or cancelled since Temporal's snapshot began: the restored Temporal may still wait for them (their runs are named in the log of the restored service's start). */
  interventionsResolvedBetweenSnapshots: number;
  /** Local blobs copied, and the files named by the snapshot whose bytes were gone by then (deleted meanwhile); `storage: "s3"` when the bytes are in a bucket (not copied). */
  blobs: { storage: "local"; copied: number; bytes: number; missing: string[] } | { storage: "s3" };
  /** Payload key files copied (current and retired). */
  payloadKeys: number;
  /** Wall time of the whole backup (ms). */
  tookMs: number;
}

/** The file the backup writes last, describing itself: its presence says the backup is whole. */
export const BACKUP_MANIFEST = "backup.json";

/**
 * Backs up `dataDir` into `dest` (see the module comment).
 * @param dest a directory that does not exist yet, or an empty one
 * @param opts.blobStorage where the file bytes are (`SVC_FILE_STORAGE`): `local` copies `blobs/`
 * @param opts.progress called with a line per step (for the command line)
 * @throws Error when `dest` holds anything, `dataDir` holds no `svc.db`, or a snapshot or copy fails
 *   (what was written to `dest` is then not a backup: it has no {@link BACKUP_MANIFEST})
 */
export async function backupDataDir(dataDir: string, dest: string, opts: { blobStorage: "local" | "s3"; progress?: (line: string) => void }): Promise<BackupReport> {
  const started = performance.now();
  const say = opts.progress ?? (() => undefined);
  const src = path.resolve(dataDir);
  const dir = path.resolve(dest);
  if (!fs.existsSync(path.join(src, "svc.db"))) throw new Error(`${src} holds no svc.db: not a data directory of svc`);
  if (dir === src || dir.startsWith(src + path.sep)) throw new Error(`the backup directory ${dir} is inside the data directory ${src}: choose one outside it`);
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) throw new Error(`${dir} is not empty: a backup goes into a new or empty directory`);
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  // what it holds is the service's (password, token and session hashes, runs' inputs and results): its owner's alone
  await fsp.chmod(dir, 0o700);

  let temporal: BackupReport["temporal"] = "absent";
  // when Temporal's snapshot began: what svc did around and after it may be missing from that snapshot
  const temporalAt = new Date().toISOString();
  if (fs.existsSync(path.join(src, "temporal.db"))) {
    say("snapshot of temporal.db (the embedded Temporal dev server's state)");
    await snapshot(path.join(src, "temporal.db"), path.join(dir, "temporal.db"));
    temporal = "copied";
  }
  say("snapshot of svc.db");
  const takenAt = new Date().toISOString();
  await snapshot(path.join(src, "svc.db"), path.join(dir, "svc.db"));

  const copy = await openConnection(path.join(dir, "svc.db"), sqlite3.OPEN_READWRITE);
  let runsToStartAgain = 0;
  let interventionsResolvedBetweenSnapshots = 0;
  let shas: string[] = [];
  try {
    await renewStreamEpoch(copy);
    if (temporal === "copied") {
      // a run's start is not timed in the store: every run requested since a minute before Temporal's
      // snapshot began that svc started is started again (or adopted: RunStarter) by the restored service
      const since = new Date(Date.parse(temporalAt) - RESTART_RUNS_REQUESTED_WITHIN_MS).toISOString();
      for (const table of ["workflow_runs", "connector_runs"]) {
        // (a run's recorded end goes too: started again, it ends again, and the retention counts from then)
        runsToStartAgain += (await copy.run(`UPDATE ${table} SET start_status = 'pending', finished_at = NULL WHERE start_status = 'started' AND requested_at >= ?`, [since])).changes;
      }
      interventionsResolvedBetweenSnapshots = (await copy.get<{ n: number }>("SELECT count(*) AS n FROM interventions WHERE resolved_at >= ?", [temporalAt]))?.n ?? 0;
    }
    if (opts.blobStorage === "local") shas = (await copy.all<{ sha256: string }>("SELECT DISTINCT sha256 FROM files ORDER BY sha256")).map((r) => r.sha256);
  } finally {
    await copy.close();
  }
  for (const file of ["svc.db", "temporal.db"]) if (fs.existsSync(path.join(dir, file))) await fsp.chmod(path.join(dir, file), 0o600);

  let blobs: BackupReport["blobs"] = { storage: "s3" };
  if (opts.blobStorage === "local") {
    say(`copying ${shas.length} blob${shas.length === 1 ? "" : "s"}`);
    const missing: string[] = [];
    let bytes = 0;
    let copied = 0;
    for (const sha of shas) {
      const rel = blobPath("blobs", sha);
      try {
        await fsp.mkdir(path.dirname(path.join(dir, rel)), { recursive: true, mode: 0o700 });
        await fsp.copyFile(path.join(src, rel), path.join(dir, rel), fs.constants.COPYFILE_EXCL);
        await fsp.chmod(path.join(dir, rel), 0o600);
        bytes += (await fsp.stat(path.join(dir, rel))).size;
        copied++;
        if (copied % 1000 === 0) say(`  ${copied} of ${shas.length} blobs`);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        missing.push(sha);
      }
    }
    blobs = { storage: "local", copied, bytes, missing };
  }

  let payloadKeys = 0;
  const copyKey = async (rel: string) => {
    await fsp.mkdir(path.dirname(path.join(dir, rel)), { recursive: true, mode: 0o700 });
    await fsp.copyFile(path.join(src, rel), path.join(dir, rel), fs.constants.COPYFILE_EXCL);
    await fsp.chmod(path.join(dir, rel), 0o600);
    payloadKeys++;
  };
  // the current key first, then the retired ones: a rotation in between retires the copied key into
  // the retired directory (read after), so the backup holds every key that encrypted something
  if (fs.existsSync(path.join(src, "temporal-payload.key"))) await copyKey("temporal-payload.key");
  for (const file of retiredKeyFiles(src)) await copyKey(path.relative(src, file));

  const report: BackupReport = { dir, takenAt, temporal, runsToStartAgain, interventionsResolvedBetweenSnapshots, blobs, payloadKeys, tookMs: Math.round(performance.now() - started) };
  // the manifest last, once everything before it is on disk, and whole or not at all (a temporary
  // file renamed): a backup without one was cut short
  await syncTree(dir);
  const manifest: BackupManifest = { ...report, from: src };
  await fsp.writeFile(path.join(dir, `${BACKUP_MANIFEST}.tmp`), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600, flush: true });
  await fsp.rename(path.join(dir, `${BACKUP_MANIFEST}.tmp`), path.join(dir, BACKUP_MANIFEST));
  await fsyncDir(dir);
  return report;
}

/** What `backup.json` becomes at the first start on a restored data directory ({@link startOnRestoredBackup}). */
export const RESTORED_MANIFEST = "restored-from-backup.json";

/**
 * The first start on a data directory restored from a backup (it holds `backup.json`): renews the
 * stream epoch ({@link renewStreamEpoch}, in one transaction) and renames `backup.json` to
 * {@link RESTORED_MANIFEST}, so it happens once. Answers the manifest, or undefined on any other start.
 * @param db the directory's store, open, before its event stream is
 */
export async function startOnRestoredBackup(dataDir: string, db: { transaction<T>(fn: (tx: SqlStatements) => Promise<T>): Promise<T> }): Promise<BackupManifest | undefined> {
  const file = path.join(dataDir, BACKUP_MANIFEST);
  if (!fs.existsSync(file)) return undefined;
  const manifest = JSON.parse(await fsp.readFile(file, "utf8")) as BackupManifest;
  await db.transaction((tx) => renewStreamEpoch(tx));
  await fsp.rename(file, path.join(dataDir, RESTORED_MANIFEST));
  await fsyncDir(dataDir);
  return manifest;
}

/** `backup.json`: the report, and the data directory it was taken from. */
export type BackupManifest = BackupReport & { from: string };

/** How long before Temporal's snapshot a run may have been requested and still be started again by the restored service (ms). */
const RESTART_RUNS_REQUESTED_WITHIN_MS = 60_000;

/**
 * Gives the event stream a new epoch (`meta.stream_epoch`): every cursor given out before is refused
 * from then on (see the module comment). The service's own stored positions on the stream (rules'
 * `rule_checkpoints.cursor`, event schedules' `event_schedule_consumers.cursor`) are re-encoded with
 * it, so they go on where they were; a stored value that is not a cursor of the old epoch is left as it is.
 * @param db a connection to `svc.db`, or a transaction on it
 * @returns the new epoch
 */
export async function renewStreamEpoch(db: SqlStatements): Promise<string> {
  const old = (await db.get<{ value: string }>("SELECT value FROM meta WHERE key = 'stream_epoch'"))!.value;
  const epoch = crypto.randomBytes(6).toString("hex");
  await db.run("UPDATE meta SET value = ? WHERE key = 'stream_epoch'", [epoch]);
  const moved = (cursor: string | null) => {
    if (cursor === null) return null;
    try {
      return encodeCursor(epoch, decodeCursor(old, cursor));
    } catch {
      return cursor;
    }
  };
  for (const r of await db.all<{ consumer: string; cursor: string }>("SELECT consumer, cursor FROM rule_checkpoints")) await db.run("UPDATE rule_checkpoints SET cursor = ? WHERE consumer = ?", [moved(r.cursor), r.consumer]);
  for (const r of await db.all<{ schedule_id: string; cursor: string | null }>("SELECT schedule_id, cursor FROM event_schedule_consumers")) await db.run("UPDATE event_schedule_consumers SET cursor = ? WHERE schedule_id = ?", [moved(r.cursor), r.schedule_id]);
  return epoch;
}

/** A consistent copy of the SQLite database `from` at `to` (`VACUUM INTO`, one read transaction: writers go on meanwhile in WAL mode). */
async function snapshot(from: string, to: string): Promise<void> {
  const source = await openConnection(from, sqlite3.OPEN_READONLY);
  try {
    await source.exec("PRAGMA busy_timeout = 10000");
    await source.run("VACUUM INTO ?", [to]);
  } finally {
    await source.close();
  }
}

