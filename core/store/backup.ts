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
 * restore records nothing twice (its records are keyed). A run started in the moment between the two
 * snapshots is in svc's store but unknown to the restored Temporal: the backup names how many started
 * then (none, almost always). Blobs are copied after svc's snapshot, so every file it names has its
 * bytes, unless the file was deleted in between: those are named in the report.
 *
 * **Cursors.** The restored service must not answer cursors the live one gave out after the snapshot:
 * the events after it are lost, and new ones would take their positions, so a client holding such a
 * cursor would skip them silently. The snapshot therefore gets a new `stream_epoch`: every cursor of
 * the live service (events, logs, agent output) is refused by the restored one (400 "not a cursor of
 * this event stream"), and clients read again from the start or from current state (spec 6.2 rule 2).
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
import { fsyncDir } from "../fsync-dir";
import { openConnection } from "./sql";

/** What {@link backupDataDir} copied, and what it could not (spec of the report: README "Backup and restore"). */
export interface BackupReport {
  /** The backup directory, absolute. */
  dir: string;
  /** When svc's snapshot was taken (ISO 8601): the backup's point in time. */
  takenAt: string;
  /** `copied`: the embedded dev server's state; `absent`: this data directory has none (an external Temporal cluster, or never started). */
  temporal: "copied" | "absent";
  /** Runs (workflow, sync, pipeline) whose start svc recorded after Temporal's snapshot began: the restored Temporal may not know them. */
  runsStartedBetweenSnapshots: number;
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

  let temporal: BackupReport["temporal"] = "absent";
  // a run whose start svc recorded from here on may be missing from Temporal's snapshot
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
  let runsStartedBetweenSnapshots = 0;
  let shas: string[] = [];
  try {
    // a new epoch: the live service's cursors are refused by the restored one (see the module comment)
    await copy.run("UPDATE meta SET value = ? WHERE key = 'stream_epoch'", [crypto.randomBytes(6).toString("hex")]);
    if (temporal === "copied") {
      for (const table of ["workflow_runs", "connector_runs"]) {
        const row = await copy.get<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE start_status = 'started' AND start_finished_at >= ?`, [temporalAt]);
        runsStartedBetweenSnapshots += row?.n ?? 0;
      }
    }
    if (opts.blobStorage === "local") shas = (await copy.all<{ sha256: string }>("SELECT DISTINCT sha256 FROM files ORDER BY sha256")).map((r) => r.sha256);
  } finally {
    await copy.close();
  }

  let blobs: BackupReport["blobs"] = { storage: "s3" };
  if (opts.blobStorage === "local") {
    say(`copying ${shas.length} blob${shas.length === 1 ? "" : "s"}`);
    const missing: string[] = [];
    let bytes = 0;
    let copied = 0;
    for (const sha of shas) {
      const rel = path.join("blobs", sha.slice(0, 2), sha.slice(2, 4), sha);
      try {
        await fsp.mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
        await fsp.copyFile(path.join(src, rel), path.join(dir, rel), fs.constants.COPYFILE_EXCL);
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
  for (const rel of ["temporal-payload.key", ...listKeys(path.join(src, "temporal-payload-keys")).map((name) => path.join("temporal-payload-keys", name))]) {
    if (!fs.existsSync(path.join(src, rel))) continue;
    await fsp.mkdir(path.dirname(path.join(dir, rel)), { recursive: true, mode: 0o700 });
    await fsp.copyFile(path.join(src, rel), path.join(dir, rel), fs.constants.COPYFILE_EXCL);
    await fsp.chmod(path.join(dir, rel), 0o600);
    payloadKeys++;
  }

  const report: BackupReport = { dir, takenAt, temporal, runsStartedBetweenSnapshots, blobs, payloadKeys, tookMs: Math.round(performance.now() - started) };
  // the manifest last, once everything before it is on disk: a backup without one was cut short
  await syncTree(dir);
  await fsp.writeFile(path.join(dir, BACKUP_MANIFEST), `${JSON.stringify({ ...report, from: src }, null, 2)}\n`, { mode: 0o600, flush: true });
  await fsyncDir(dir);
  return report;
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

/** The `.key` files of the retired keys' directory (none when it does not exist). */
function listKeys(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith(".key")).map((e) => e.name);
}

/** Flushes every file and directory under `dir` (a backup must survive a crash right after it says it is done). */
async function syncTree(dir: string): Promise<void> {
  for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) await syncTree(p);
    else {
      const fh = await fsp.open(p, "r");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    }
  }
  await fsyncDir(dir);
}
