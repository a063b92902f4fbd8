/**
 * `npm run svc -- backup <dir>` (core/store/backup.ts) of a running service, restored into a new data
 * directory: real SQLite files, the real Temporal dev server on the data directory's temporal.db, real
 * HTTP. What the backup held comes back (objects, a file's bytes, a run waiting on an intervention,
 * which then completes); what came after it does not; the live service's cursors are refused.
 */
import { execFile } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { expect, inject, it } from "vitest";
import { DEV_TOKEN, client, eventually, startApp, tempDir } from "./helpers";
import { freePort } from "./setup/global";
import { startDevServer } from "../core/temporal/dev-server";
import { BACKUP_MANIFEST, RESTORED_MANIFEST, backupDataDir } from "../core/store/backup";
import { BackupCheckFailed, checkBackup, restoreDataDir } from "../core/store/restore";
import { OntologyStore } from "../core/ontology/store";
import { Database } from "../core/store/db";

const ROOT = path.resolve(import.meta.dirname, "..");

/** The Temporal dev server on `dir`'s temporal.db, as the embedded one keeps it. */
async function temporalOn(dir: string) {
  return startDevServer({ cliPath: inject("temporalCli"), port: await freePort(), ui: false, dbFile: path.join(dir, "temporal.db"), namespace: "default", readyTimeoutMs: 90_000 });
}

async function runStatus(c: ReturnType<typeof client>, runId: string, status: string) {
  return eventually(async () => {
    const r = await c.get(`/api/workflow-runs/${runId}`);
    return r.status === 200 && r.body.status === status ? r.body : undefined;
  }, 30_000, 250);
}

it("backs a running service up, and the backup restored into a new data directory serves what it held and goes on", { timeout: 180_000 }, async () => {
  const live = tempDir();
  const taskQueue = `backup-${Math.random().toString(36).slice(2)}`;
  let server = await temporalOn(live);
  let app = await startApp({ dataDir: live, taskQueue, env: { TEMPORAL_ADDRESS: server.address } });
  const backup = path.join(tempDir(), "backup");
  let runId: string;
  let syncRunId: string;
  let liveCursor: string;
  let cursorBefore: string;
  let fileId: string;
  try {
    const c = client(app);
    // before the backup: a file with its bytes, an object holding it, a run waiting for a person
    const form = new FormData();
    form.append("file", new Blob(["the invoice's bytes"], { type: "text/plain" }), "inv.txt");
    const uploaded = await fetch(`${app.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}` }, body: form });
    fileId = ((await uploaded.json()) as { id: string }).id;
    expect((await c.post("/api/actions/invoice.attach-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: { file: { id: fileId } } })).body.status).toBe("succeeded");
    runId = (await c.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1002", waitMs: 0, approvalTimeoutMs: 300_000 } })).body.runId;
    await runStatus(c, runId, "waiting");
    // a sync that finished before the backup: queued again in the copy (requested within its minute), its end cleared
    syncRunId = (await c.post("/api/syncs/customer-sync/runs", { input: {} })).body.runId;
    await eventually(async () => (await c.get(`/api/sync-runs/${syncRunId}`)).body.status === "completed", 30_000, 250);
    // the service's own positions on the stream: a rule's checkpoint and an event schedule's consumer
    const overdue = (primaryId: string, on: typeof app) => on.container.resolve(OntologyStore).commit([{ op: "object.update", objectTypeId: "invoice", primaryId, properties: { status: "overdue" } }], { origin: { kind: "runtime" }, correlationId: `overdue-${primaryId}` });
    await overdue("inv_1004", app);
    await eventually(async () => (await c.get("/api/objects/invoice/inv_1004")).body.properties.reminderSentAt, 20_000);

    cursorBefore = (await c.get("/api/events/latest-cursor")).body.latestCursor;
    const lines: string[] = [];
    const report = await backupDataDir(live, backup, { blobStorage: "local", progress: (line) => lines.push(line) });
    // the run was requested within the minute before: the restored service starts it again, and finds it started
    expect(report).toMatchObject({ temporal: "copied", runsToStartAgain: 2, interventionsResolvedBetweenSnapshots: 0, blobs: { storage: "local", missing: [] }, payloadKeys: 1 });
    expect(report.blobs).toMatchObject({ copied: expect.any(Number) });
    expect((report.blobs as { copied: number }).copied).toBeGreaterThanOrEqual(1);
    expect(lines).toEqual(expect.arrayContaining(["snapshot of svc.db", expect.stringMatching(/^copying \d+ blobs?$/)]));
    expect(JSON.parse(fs.readFileSync(path.join(backup, BACKUP_MANIFEST), "utf8"))).toMatchObject({ takenAt: report.takenAt, from: live });
    expect(fs.existsSync(path.join(backup, "uploads"))).toBe(false);
    for (const file of ["temporal-payload.key", "svc.db", "temporal.db", BACKUP_MANIFEST]) expect(fs.statSync(path.join(backup, file)).mode & 0o777, file).toBe(0o600);
    expect(fs.statSync(backup).mode & 0o777).toBe(0o700);
    // the blobs too: their files 0600, their directories 0700
    const blobDirs = fs.readdirSync(path.join(backup, "blobs")).map((d) => path.join(backup, "blobs", d));
    const blobFiles = blobDirs.flatMap((d) => fs.readdirSync(d).flatMap((e) => fs.readdirSync(path.join(d, e)).map((f) => path.join(d, e, f))));
    expect(blobFiles.length).toBeGreaterThanOrEqual(1);
    for (const file of blobFiles) expect(fs.statSync(file).mode & 0o777, file).toBe(0o600);
    for (const dir of [...blobDirs, ...blobFiles.map((f) => path.dirname(f))]) expect(fs.statSync(dir).mode & 0o777, dir).toBe(0o700);

    // after it: an event and a cursor the restored service never saw
    await c.post("/api/actions/diagnostics.noop", { params: {} });
    liveCursor = (await c.get("/api/events/latest-cursor")).body.latestCursor;
    expect(liveCursor).toEqual(expect.any(String));
    // a second backup into the same directory is refused, naming it
    await expect(backupDataDir(live, backup, { blobStorage: "local" })).rejects.toThrow(`${backup} is not empty`);
  } finally {
    await app.close();
    await server.stop();
  }

  // restore: into an empty data directory (checked, then renamed into place), Temporal on its temporal.db
  const restored = tempDir();
  const restoreLines: string[] = [];
  const restoreReport = await restoreDataDir(backup, restored, { blobStorage: "local", progress: (line) => restoreLines.push(line) });
  expect(restoreReport.check).toMatchObject({ problems: [], warnings: [], temporal: "ok", blobs: { storage: "local" }, payloadKeys: 1 });
  expect(restoreLines).toEqual(expect.arrayContaining(["checking svc.db (integrity_check)", "checking temporal.db (integrity_check)", expect.stringMatching(/^checking \d+ blobs? \(SHA-256\)$/)]));
  expect(fs.readdirSync(path.dirname(restored)).filter((name) => name.endsWith(".restoring"))).toEqual([]);
  for (const file of ["temporal-payload.key", "svc.db", "temporal.db", BACKUP_MANIFEST]) expect(fs.statSync(path.join(restored, file)).mode & 0o777, file).toBe(0o600);
  expect(fs.statSync(restored).mode & 0o777).toBe(0o700);
  server = await temporalOn(restored);
  app = await startApp({ dataDir: restored, taskQueue, env: { TEMPORAL_ADDRESS: server.address } });
  try {
    const c = client(app);
    // the first start renewed the epoch once more (another restore of the backup gets its own) and said so
    expect(fs.existsSync(path.join(restored, BACKUP_MANIFEST))).toBe(false);
    expect(fs.existsSync(path.join(restored, RESTORED_MANIFEST))).toBe(true);
    const epoch = async (db: { get<T>(sql: string): Promise<T | undefined> }) => (await db.get<{ value: string }>("SELECT value FROM meta WHERE key = 'stream_epoch'"))!.value;
    const copied = await Database.open(path.join(backup, "svc.db"));
    try {
      expect(await epoch(app.container.resolve(Database))).not.toBe(await epoch(copied));
    } finally {
      await copied.close();
    }
    expect((await c.get("/api/objects/invoice/inv_1001")).body.properties.pdf).toMatchObject({ id: fileId });
    const content = await fetch(`${app.url}/api/objects/invoice/inv_1001/files/content?path=/properties/pdf`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(await content.text()).toBe("the invoice's bytes");
    // the noop after the backup is not there; the live service's cursor is not this one's
    const events = (await c.get("/api/events?limit=1000")).body.events as Array<{ type: string; payload: { actionId?: string } }>;
    expect(events.filter((e) => e.payload.actionId === "diagnostics.noop")).toEqual([]);
    // every cursor of the live service is refused, one from before the backup too: what its reader
    // built from later reads may hold what the restore lost, so it starts again from current state
    for (const cursor of [liveCursor, cursorBefore]) {
      const refused = await c.get(`/api/events?afterCursor=${cursor}`);
      expect([refused.status, refused.body.error.message]).toEqual([400, "afterCursor is not a cursor of this event stream"]);
    }
    // the rules and the event schedules go on from where they were, on the new epoch
    await app.container.resolve(OntologyStore).commit([{ op: "object.update", objectTypeId: "invoice", primaryId: "inv_1006", properties: { status: "overdue" } }], { origin: { kind: "runtime" }, correlationId: "overdue-inv_1006" });
    await eventually(async () => (await c.get("/api/objects/invoice/inv_1006")).body.properties.reminderSentAt, 20_000);
    const ruleEvents = ((await c.get("/api/events?topic=rules&limit=1000")).body.events as Array<{ type: string; payload: { subject: { primaryId: string } } }>).filter((e) => e.payload.subject.primaryId === "inv_1006");
    expect(ruleEvents.map((e) => e.type)).toEqual(["rule.triggered"]);
    expect((await c.get("/api/status")).body.status).toBe("ok");
    // the sync, closed in Temporal's snapshot, is taken as started and not run again: its end is Temporal's
    // close (else the run retention, which counts from it, kept the row for ever)
    const db = app.container.resolve(Database);
    const sync = await eventually(async () => {
      const row = await db.get<{ start_status: string; finished_at: string | null }>("SELECT start_status, finished_at FROM connector_runs WHERE run_id = ?", [syncRunId]);
      return row?.start_status === "started" ? row : undefined;
    }, 30_000, 250);
    expect(Date.parse(sync.finished_at!)).toBeLessThan(Date.now());
    expect((await c.get(`/api/sync-runs/${syncRunId}`)).body.status).toBe("completed");
    // the run waits where it waited, and goes on
    expect((await runStatus(c, runId, "waiting")).interventions[0].status).toBe("open");
    const submit = await eventually(async () => {
      const r = await c.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: true } });
      return r.status === 200 ? r : undefined;
    }, 30_000, 500);
    expect(submit.body.status).toBe("submitted");
    expect((await runStatus(c, runId, "completed")).result.reviewStatus).toBe("approved");
  } finally {
    await app.close();
    await server.stop();
  }
});

it("npm run svc -- backup: says what it copied, and refuses a data directory without svc.db or a backup directory inside it", { timeout: 120_000 }, async () => {
  const live = tempDir();
  const app = await startApp({ dataDir: live });
  await app.close();
  const run = (args: string[], env: Record<string, string>) =>
    promisify(execFile)(process.execPath, ["--import", "tsx", "sandbox/cli.ts", ...args], { cwd: ROOT, env: { ...process.env, ...env } }).then(
      (r) => ({ code: 0, ...r }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
    );
  const dest = path.join(tempDir(), "b");
  const ok = await run(["backup", dest], { SVC_DATA_DIR: live });
  expect(ok.code, ok.stderr).toBe(0);
  expect(ok.stdout).toMatch(/the backup's point in time is \d{4}-/);
  expect(ok.stdout).toContain("temporal.db: none here (an external Temporal cluster keeps its own state: back it up there)");
  expect(fs.existsSync(path.join(dest, "svc.db"))).toBe(true);
  // a relative directory is the caller's: npm runs the script in the package's directory, and says where it was run (INIT_CWD)
  const caller = tempDir();
  const relative = await run(["backup", "nightly"], { SVC_DATA_DIR: live, INIT_CWD: caller });
  expect(relative.code, relative.stderr).toBe(0);
  expect(relative.stdout).toContain(`into ${path.join(caller, "nightly")}`);
  expect(fs.existsSync(path.join(caller, "nightly", "backup.json"))).toBe(true);
  const inside = await run(["backup", path.join(live, "backup")], { SVC_DATA_DIR: live });
  expect([inside.code, inside.stderr]).toEqual([1, expect.stringContaining("is inside the data directory")]);
  const nothing = await run(["backup", path.join(tempDir(), "c")], { SVC_DATA_DIR: tempDir() });
  expect([nothing.code, nothing.stderr]).toEqual([2, expect.stringContaining("holds no svc database")]);
  expect((await run(["backup"], { SVC_DATA_DIR: live })).code).toBe(2);
});

/** A stopped service's data directory holding the sandbox's files and two uploaded ones, a backup of it, its blobs' names and their bytes in all. */
async function backedUp(): Promise<{ live: string; backup: string; shas: string[]; bytes: number }> {
  const live = tempDir();
  const app = await startApp({ dataDir: live });
  try {
    for (const text of ["first file's bytes", "second file's bytes"]) {
      const form = new FormData();
      form.append("file", new Blob([text], { type: "text/plain" }), "f.txt");
      expect((await fetch(`${app.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}` }, body: form })).status).toBe(200);
    }
  } finally {
    await app.close();
  }
  const backup = path.join(tempDir(), "backup");
  await backupDataDir(live, backup, { blobStorage: "local" });
  const db = await Database.open(path.join(backup, "svc.db"));
  const blobs = await db.all<{ sha256: string; size: number }>("SELECT DISTINCT sha256, size FROM files ORDER BY sha256");
  await db.close();
  expect(blobs.length).toBeGreaterThanOrEqual(2);
  return { live, backup, shas: blobs.map((b) => b.sha256), bytes: blobs.reduce((n, b) => n + b.size, 0) };
}

const blobOf = (dir: string, sha: string) => path.join(dir, "blobs", sha.slice(0, 2), sha.slice(2, 4), sha);

it("restore refuses a damaged backup, naming what is wrong, and writes nothing", { timeout: 120_000 }, async () => {
  const { backup, shas, bytes } = await backedUp();
  const whole = await checkBackup(backup, { blobStorage: "local" });
  expect(whole).toMatchObject({ problems: [], warnings: [], temporal: "absent", blobs: { storage: "local", checked: shas.length, bytes } });
  const parent = tempDir();
  const target = path.join(parent, "data");
  /** Damages a fresh copy of the backup, and answers the problems a restore of it reports (it must throw). */
  const refused = async (damage: (copy: string) => void, storage: "local" | "s3" = "local") => {
    const copy = path.join(tempDir(), "b");
    fs.cpSync(backup, copy, { recursive: true });
    damage(copy);
    const err = await restoreDataDir(copy, target, { blobStorage: storage }).then(() => undefined, (e: unknown) => e);
    // nothing is left behind: no data directory, no half-copied one beside it
    expect(fs.readdirSync(parent)).toEqual([]);
    if (!(err instanceof BackupCheckFailed)) throw err ?? new Error("the damaged backup was restored");
    // the check alone finds the same, and writes nothing into the backup (no journal, no lock files)
    const before = fs.readdirSync(copy).sort();
    expect((await checkBackup(copy, { blobStorage: storage })).problems).toEqual(err.check.problems);
    expect(fs.readdirSync(copy).sort()).toEqual(before);
    return err.check.problems;
  };
  // a blob's bytes changed
  expect(await refused((copy) => fs.appendFileSync(blobOf(copy, shas[0]!), "x"))).toEqual([`1 blob(s) are damaged (their bytes do not hash to their name): ${shas[0]}`]);
  // a blob gone
  expect(await refused((copy) => fs.rmSync(blobOf(copy, shas[1]!)))).toEqual([`1 blob(s) that files of svc.db name are missing from blobs/: ${shas[1]}`]);
  // svc.db's pages overwritten in the middle
  const garbled = await refused((copy) => {
    const file = path.join(copy, "svc.db");
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, crypto.randomBytes(16384), 0, 16384, Math.floor(fs.statSync(file).size / 2 / 4096) * 4096);
    fs.closeSync(fd);
  });
  expect(garbled[0]).toMatch(/^svc\.db is damaged/);
  // a payload key cut short, and one gone
  const key = path.join("temporal-payload-keys", "retired.key");
  fs.mkdirSync(path.join(backup, "temporal-payload-keys"), { mode: 0o700 });
  fs.writeFileSync(path.join(backup, key), crypto.randomBytes(32), { mode: 0o600 });
  const manifest = JSON.parse(fs.readFileSync(path.join(backup, BACKUP_MANIFEST), "utf8"));
  fs.writeFileSync(path.join(backup, BACKUP_MANIFEST), JSON.stringify({ ...manifest, payloadKeys: manifest.payloadKeys + 1 }));
  expect((await checkBackup(backup, { blobStorage: "local" })).problems).toEqual([]);
  expect(await refused((copy) => fs.truncateSync(path.join(copy, key), 5))).toEqual([`${key} holds 5 bytes, not a 32-byte payload key`]);
  expect(await refused((copy) => fs.rmSync(path.join(copy, key)))).toEqual([expect.stringMatching(/^the backup copied \d+ payload key file\(s\) and holds \d+: without them/)]);
  // a service that would read its bytes from S3
  expect(await refused(() => undefined, "s3")).toEqual([expect.stringContaining("restore with SVC_FILE_STORAGE=local")]);
  // no manifest: not a backup (or one cut short)
  fs.renameSync(path.join(backup, BACKUP_MANIFEST), path.join(backup, "kept.json"));
  await expect(restoreDataDir(backup, target, { blobStorage: "local" })).rejects.toThrow(`${backup} holds no backup.json: it is not a backup, or its backup was cut short`);
  fs.renameSync(path.join(backup, "kept.json"), path.join(backup, BACKUP_MANIFEST));
  expect(fs.readdirSync(parent)).toEqual([]);
  // a data directory that holds anything, and a restore cut short beside it, are refused
  fs.mkdirSync(target);
  fs.writeFileSync(path.join(target, "svc.db"), "");
  await expect(restoreDataDir(backup, target, { blobStorage: "local" })).rejects.toThrow(`${target} is not empty`);
  fs.rmSync(target, { recursive: true });
  fs.mkdirSync(path.join(parent, ".data.restoring"));
  await expect(restoreDataDir(backup, target, { blobStorage: "local" })).rejects.toThrow("a restore into");
  fs.rmSync(path.join(parent, ".data.restoring"), { recursive: true });
  // and the whole backup restores
  expect((await restoreDataDir(backup, target, { blobStorage: "local" })).check.problems).toEqual([]);
  expect(fs.readdirSync(parent)).toEqual(["data"]);
});

it("restore of a backup missing a file deleted while it ran: restored, with a warning naming the blob", { timeout: 120_000 }, async () => {
  const { backup, shas } = await backedUp();
  // as the backup reports a file deleted between svc's snapshot and the copy of its bytes
  fs.rmSync(blobOf(backup, shas[0]!));
  const manifest = JSON.parse(fs.readFileSync(path.join(backup, BACKUP_MANIFEST), "utf8"));
  fs.writeFileSync(path.join(backup, BACKUP_MANIFEST), JSON.stringify({ ...manifest, blobs: { ...manifest.blobs, missing: [shas[0]] } }));
  const target = path.join(tempDir(), "data");
  const r = await restoreDataDir(backup, target, { blobStorage: "local" });
  expect(r.check).toMatchObject({ problems: [], warnings: [expect.stringContaining(`the bytes of blob ${shas[0]} are not in the backup`)], blobs: { checked: shas.length - 1 } });
  expect(fs.existsSync(blobOf(target, shas[1]!))).toBe(true);
});

it("npm run svc -- restore: checks, restores into SVC_DATA_DIR, and refuses a damaged backup or a data directory in use", { timeout: 120_000 }, async () => {
  const { backup, shas } = await backedUp();
  const run = (args: string[], env: Record<string, string>) =>
    promisify(execFile)(process.execPath, ["--import", "tsx", "sandbox/cli.ts", ...args], { cwd: ROOT, env: { ...process.env, ...env } }).then(
      (r) => ({ code: 0, ...r }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
    );
  const target = path.join(tempDir(), "data");
  const checked = await run(["restore", backup, "--check"], { SVC_DATA_DIR: target });
  expect(checked.code, checked.stderr).toBe(0);
  expect(checked.stdout).toContain("is whole:");
  expect(checked.stdout).toMatch(new RegExp(`file bytes: ${shas.length} blob\\(s\\), \\d+\\.\\d MiB, each matching its SHA-256`));
  expect(fs.existsSync(target)).toBe(false);
  // a relative backup directory is the caller's (INIT_CWD), as for backup
  const restored = await run(["restore", path.basename(backup)], { SVC_DATA_DIR: target, INIT_CWD: path.dirname(backup) });
  expect(restored.code, restored.stderr).toBe(0);
  expect(restored.stdout).toContain(`restoring ${backup} into ${target}`);
  expect(restored.stdout).toContain("its first start gives the event stream a new epoch");
  // the restored service starts on it and serves the files
  const app = await startApp({ dataDir: target });
  try {
    expect((await client(app).get("/api/status")).body.status).toBe("ok");
    const rows = await app.container.resolve(Database).all<{ sha256: string }>("SELECT sha256 FROM files ORDER BY sha256");
    expect(rows.map((r) => r.sha256)).toEqual(shas);
    for (const sha of shas) expect(fs.existsSync(blobOf(target, sha))).toBe(true);
    expect(fs.existsSync(path.join(target, RESTORED_MANIFEST))).toBe(true);
  } finally {
    await app.close();
  }
  const again = await run(["restore", backup], { SVC_DATA_DIR: target });
  expect([again.code, again.stderr]).toEqual([1, expect.stringContaining(`${target} is not empty`)]);
  fs.appendFileSync(blobOf(backup, shas[0]!), "x");
  const damaged = await run(["restore", backup], { SVC_DATA_DIR: path.join(tempDir(), "data") });
  expect([damaged.code, damaged.stderr]).toEqual([1, expect.stringContaining(`blob(s) are damaged (their bytes do not hash to their name): ${shas[0]}`)]);
  expect(damaged.stderr).toContain("(nothing was written)");
  expect((await run(["restore"], { SVC_DATA_DIR: target })).code).toBe(2);
});

it("restore into a link to an empty directory fills that directory; a file, a manifest without its fields and a link inside the backup are refused by name", { timeout: 120_000 }, async () => {
  const { backup, shas } = await backedUp();
  // a link to an empty directory (a volume mounted elsewhere, say): restored into it, staged inside it
  const real = path.join(tempDir(), "volume");
  fs.mkdirSync(real, { mode: 0o750 });
  const link = path.join(tempDir(), "data");
  fs.symlinkSync(real, link);
  const r = await restoreDataDir(backup, link, { blobStorage: "local" });
  expect(r.dataDir).toBe(real);
  expect(fs.readdirSync(real).sort()).toEqual(fs.readdirSync(backup).sort());
  expect(fs.readdirSync(real)).toEqual(expect.arrayContaining(["backup.json", "blobs", "svc.db"]));
  expect(fs.existsSync(blobOf(real, shas[0]!))).toBe(true);
  // the directory itself is left as it was (its owner's mode)
  expect(fs.statSync(real).mode & 0o777).toBe(0o750);
  // a new filesystem's root (lost+found only) is empty; a restore cut short inside one is named
  const volume = path.join(tempDir(), "volume");
  fs.mkdirSync(path.join(volume, "lost+found"), { recursive: true });
  fs.mkdirSync(path.join(volume, ".restoring"));
  fs.writeFileSync(path.join(volume, "svc.db"), "part of a backup");
  await expect(restoreDataDir(backup, volume, { blobStorage: "local" })).rejects.toThrow(`${path.join(volume, ".restoring")} exists: a restore into ${volume} is in progress, or was cut short (then empty ${volume} and delete ${path.join(volume, ".restoring")}, and restore again)`);
  fs.rmSync(path.join(volume, ".restoring"), { recursive: true });
  fs.rmSync(path.join(volume, "svc.db"));
  expect((await restoreDataDir(backup, volume, { blobStorage: "local" })).check.problems).toEqual([]);
  expect(fs.readdirSync(volume)).toContain("lost+found");
  // a file where the data directory should be
  const file = path.join(tempDir(), "data");
  fs.writeFileSync(file, "");
  await expect(restoreDataDir(backup, file, { blobStorage: "local" })).rejects.toThrow(`${file} is not a directory`);
  // a manifest without its fields
  const broken = path.join(tempDir(), "b");
  fs.cpSync(backup, broken, { recursive: true });
  fs.writeFileSync(path.join(broken, "backup.json"), JSON.stringify({ takenAt: "2026-01-01T00:00:00.000Z" }));
  await expect(checkBackup(broken, { blobStorage: "local" })).rejects.toThrow("is not a backup's manifest (it lacks takenAt, temporal, blobs.storage or payloadKeys)");
  // a link inside the backup: not something a backup holds
  const linked = path.join(tempDir(), "b");
  fs.cpSync(backup, linked, { recursive: true });
  fs.rmSync(blobOf(linked, shas[0]!));
  fs.symlinkSync(blobOf(backup, shas[0]!), blobOf(linked, shas[0]!));
  const target = path.join(tempDir(), "data");
  await expect(restoreDataDir(linked, target, { blobStorage: "local" })).rejects.toThrow("is a symbolic link: a backup svc wrote holds none");
  expect(fs.existsSync(target)).toBe(false);
});
