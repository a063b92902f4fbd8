/**
 * `npm run svc -- backup <dir>` (core/store/backup.ts) of a running service, restored into a new data
 * directory: real SQLite files, the real Temporal dev server on the data directory's temporal.db, real
 * HTTP. What the backup held comes back (objects, a file's bytes, a run waiting on an intervention,
 * which then completes); what came after it does not; the live service's cursors are refused.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { expect, inject, it } from "vitest";
import { DEV_TOKEN, client, eventually, startApp, tempDir } from "./helpers";
import { freePort } from "./setup/global";
import { startDevServer } from "../core/temporal/dev-server";
import { BACKUP_MANIFEST, RESTORED_MANIFEST, backupDataDir } from "../core/store/backup";
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
    // the service's own positions on the stream: a rule's checkpoint and an event schedule's consumer
    const overdue = (primaryId: string, on: typeof app) => on.container.resolve(OntologyStore).commit([{ op: "object.update", objectTypeId: "invoice", primaryId, properties: { status: "overdue" } }], { origin: { kind: "runtime" }, correlationId: `overdue-${primaryId}` });
    await overdue("inv_1004", app);
    await eventually(async () => (await c.get("/api/objects/invoice/inv_1004")).body.properties.reminderSentAt, 20_000);

    cursorBefore = (await c.get("/api/events/latest-cursor")).body.latestCursor;
    const lines: string[] = [];
    const report = await backupDataDir(live, backup, { blobStorage: "local", progress: (line) => lines.push(line) });
    // the run was requested within the minute before: the restored service starts it again, and finds it started
    expect(report).toMatchObject({ temporal: "copied", runsToStartAgain: 1, interventionsResolvedBetweenSnapshots: 0, blobs: { storage: "local", missing: [] }, payloadKeys: 1 });
    expect(report.blobs).toMatchObject({ copied: expect.any(Number) });
    expect((report.blobs as { copied: number }).copied).toBeGreaterThanOrEqual(1);
    expect(lines).toEqual(expect.arrayContaining(["snapshot of svc.db", expect.stringMatching(/^copying \d+ blobs?$/)]));
    expect(JSON.parse(fs.readFileSync(path.join(backup, BACKUP_MANIFEST), "utf8"))).toMatchObject({ takenAt: report.takenAt, from: live });
    expect(fs.existsSync(path.join(backup, "uploads"))).toBe(false);
    for (const file of ["temporal-payload.key", "svc.db", "temporal.db", BACKUP_MANIFEST]) expect(fs.statSync(path.join(backup, file)).mode & 0o777, file).toBe(0o600);
    expect(fs.statSync(backup).mode & 0o777).toBe(0o700);

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

  // restore: the backup's contents in an empty data directory, Temporal on its temporal.db
  const restored = tempDir();
  fs.cpSync(backup, restored, { recursive: true });
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
