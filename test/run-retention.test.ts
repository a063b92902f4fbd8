/**
 * The run retention (core/store/run-retention.ts, README "Retention"): what a pass deletes of ended
 * action runs, webhook deliveries, spent download URLs and browser sessions, what it keeps (runs still
 * running, effects still pending), and what a client sees after (a resent runId runs again, a resent
 * delivery is new). Real SQLite, real HTTP; a pass is run with its clock moved past the retention.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import sqlite3 from "sqlite3";
import { Webhook } from "standardwebhooks";
import { DEV_TOKEN, client, eventually, startApp, tempDir, uploadFile } from "./helpers";
import { Database } from "../core/store/db";
import { openConnection } from "../core/store/sql";
import { databaseFile } from "../core/config";
import { ACTION_RUNS_DUE, BATCH, CONNECTOR_RUNS_DUE, DELETE_DOWNLOAD_URLS_DUE, DELETE_SESSIONS_DUE, RunRetention, TemporalRetentionHistory, TEMPORAL_RETENTION_KEY, UNKEY_DATASET_VERSIONS, UNKEY_PIPELINE_DATASETS, UNKEY_PIPELINE_STEPS, UNKEY_WORKFLOW_WRITES, WEBHOOK_RUNS_DUE, WORKFLOW_RUNS_DUE } from "../core/store/run-retention";
import { Metrics } from "../core/metrics";
import { TemporalHost } from "../core/temporal/host";
import { SANDBOX_WEBHOOK_SECRETS } from "../sandbox/project";
import { newId } from "../core/ids";
import { encodeTime } from "ulid";
import { HandlerRunner } from "../core/runtime/handler";
import { RunStarter } from "../core/runtime/run-starter";
import { WebhookDeliveries } from "../core/runtime/webhooks";
import Stripe from "stripe";
import { OntologyStore } from "../core/ontology/store";

const RETENTION_MS = 30 * 86_400_000;
let app: Awaited<ReturnType<typeof startApp>>;
beforeAll(async () => {
  app = await startApp({ env: { SVC_API_PUBLIC_ORIGIN: "https://files.example.com" } });
}, 120_000);
afterAll(() => app?.close());

const count = async (sql: string, params: unknown[] = []) => (await app.container.resolve(Database).get<{ n: number }>(`SELECT count(*) AS n FROM ${sql}`, params as string[]))!.n;
const write = (sql: string, params: unknown[] = []) => app.container.resolve(Database).transaction((tx) => tx.run(sql, params as string[]));

async function deliver(id: string): Promise<number> {
  const body = JSON.stringify({ type: "retention.ping", data: { id } });
  const at = new Date();
  const headers = { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(SANDBOX_WEBHOOK_SECRETS.standardWebhooks).sign(id, at, body) };
  return (await fetch(`${app.url}/api/webhooks/standard-webhooks/events`, { method: "POST", headers, body })).status;
}

describe("run retention (SVC_RUN_RETENTION_MS, 30 days by default)", () => {
  it("deletes what ended longer ago than the retention, keeps what runs or waits, and a resent runId or delivery is new again", async () => {
    const dev = client(app);
    const retention = app.container.resolve(RunRetention);
    // an action run that ended, one holding a file, a delivery, a download URL, a session
    const runId = `run_retention_${Date.now()}`;
    expect((await dev.post("/api/actions/diagnostics.noop", { params: {}, runId })).body.status).toBe("succeeded");
    const file = await uploadFile(app, "%PDF-1.4 retention", "r.pdf", "application/pdf");
    const attach = await dev.post("/api/actions/invoice.attach-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: { file: { id: file.id } } });
    expect(attach.body.status).toBe("succeeded");
    expect(await count("file_references WHERE owner_kind = 'run' AND owner_id = ?", [attach.body.runId])).toBeGreaterThanOrEqual(1);
    const messageId = `msg_retention_${Date.now()}`;
    expect(await deliver(messageId)).toBe(202);
    const url = await dev.post("/api/objects/invoice/inv_1001/files/download-urls", { path: "/properties/pdf" });
    expect(url.status).toBe(200);
    const signIn = await fetch(`${app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json", origin: app.url }, body: JSON.stringify({ identity: "alice", password: "alice-sandbox-password" }) });
    expect(signIn.status).toBe(200);
    // what must stay: a run still running (a process died under it), an effect not started yet, a delivery still running
    const running = newId("run");
    await write("INSERT INTO action_runs (id, run_id, action_id, status, params, started_at) VALUES (?, ?, 'diagnostics.noop', 'running', '{}', ?)", [running, running, new Date().toISOString()]);
    const pending = newId("run");
    await write("INSERT INTO action_runs (id, run_id, action_id, status, params, started_at, finished_at, effect_status) VALUES (?, ?, 'diagnostics.noop', 'succeeded', '{}', ?, ?, 'pending')", [pending, pending, new Date().toISOString(), new Date().toISOString()]);
    // an action run whose effect started: its effect is the Temporal run action-effect:<runId>, once per runId
    const effected = newId("run");
    await write("INSERT INTO action_runs (id, run_id, action_id, status, params, started_at, finished_at, effect_status) VALUES (?, ?, 'diagnostics.noop', 'succeeded', '{}', ?, ?, 'started')", [effected, effected, new Date().toISOString(), new Date().toISOString()]);
    const deliveryRunning = newId("whrun");
    await write("INSERT INTO webhook_runs (id, execution_id, connector_id, webhook_id, status, attempts, received_at, headers, body) VALUES (?, ?, 'standard-webhooks', 'events', 'running', 1, ?, '{}', x'7b7d')", [deliveryRunning, newId("exec"), new Date().toISOString()]);

    // now: nothing is old enough
    expect(await retention.prune()).toEqual({ action_runs: 0, webhook_runs: 0, workflow_runs: 0, connector_runs: 0, download_urls: 0, sessions: 0 });
    const actionRuns = await count("action_runs");
    const deliveries = await count("webhook_runs");
    expect(actionRuns).toBeGreaterThanOrEqual(4);

    // past the retention (and the URL's hour, and the session's 8 h and a day)
    const later = Date.now() + RETENTION_MS + 2 * 86_400_000;
    const deleted = await retention.prune(later);
    expect(deleted).toMatchObject({ action_runs: actionRuns - 3, webhook_runs: deliveries - 1 });
    expect(deleted.download_urls).toBeGreaterThanOrEqual(1);
    expect(deleted.sessions).toBeGreaterThanOrEqual(1);
    expect(await count("action_runs WHERE id IN (?, ?, ?)", [running, pending, effected])).toBe(3);
    expect(await count("action_runs")).toBe(3);
    expect(await count("webhook_runs")).toBe(1);
    expect(await count("webhook_attempts WHERE run_id <> ?", [deliveryRunning])).toBe(0);
    expect(await count("file_references WHERE owner_kind = 'run'")).toBe(0);
    expect(await count("download_urls")).toBe(0);
    expect(await count("sessions")).toBe(0);
    // the file stays (a referenced file is never collected): the object still holds it
    expect(await count("files WHERE id = ?", [file.id])).toBe(1);

    // what a client sees: the run is gone, its runId runs again; the provider's message id is a new delivery
    expect((await dev.get(`/api/action-runs/${runId}`)).status).toBe(404);
    const again = await dev.post("/api/actions/diagnostics.noop", { params: {}, runId });
    expect([again.status, again.body.status, again.body.attempts]).toEqual([200, "succeeded", 1]);
    expect(await deliver(messageId)).toBe(202);
    expect(await count("webhook_runs WHERE status = 'completed'")).toBe(1);
    // the download URL answers 404 (it answered 410 while its row was kept)
    const gone = await fetch(url.body.url.replace("https://files.example.com", app.url));
    expect(gone.status).toBe(404);

    // counted, by table
    const metrics = await (await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).text();
    expect(metrics).toContain(`svc_retention_deleted_total{table="action_runs"} ${actionRuns - 3}`);
    expect(metrics).toContain(`svc_retention_deleted_total{table="webhook_runs"} ${deliveries - 1}`);
  });

  it("deletes in batches, each its own transaction, until none is left", async () => {
    const at = new Date().toISOString();
    await app.container.resolve(Database).transaction(async (tx) => {
      for (let i = 0; i < 2 * BATCH + 7; i++) {
        const id = newId("run");
        await tx.run("INSERT INTO action_runs (id, run_id, action_id, status, params, started_at, finished_at) VALUES (?, ?, 'diagnostics.noop', 'failed', '{}', ?, ?)", [id, id, at, at]);
      }
    });
    const transactions = app.container.resolve(Database).stats().transactions;
    const deleted = await app.container.resolve(RunRetention).prune(Date.now() + RETENTION_MS + 1000);
    expect(deleted.action_runs).toBeGreaterThanOrEqual(2 * BATCH + 7);
    // three batches of action runs at least (500, 500, the rest), and one for each table deleted by expiry
    expect(app.container.resolve(Database).stats().transactions - transactions).toBeGreaterThanOrEqual(3 + 2);
    // the run still running, the effect still pending and the one started, of the test before, stay, and only they
    expect(await count("action_runs")).toBe(3);
    expect(await count("action_runs WHERE status = 'running' OR effect_status IS NOT NULL")).toBe(3);
  });

  it("a provider's retry of a keyed delivery after its run was deleted is a new delivery in full: its writes apply again", async () => {
    const event = { id: `evt_retention_${Date.now()}`, object: "event", type: "invoice.paid", data: { object: { id: "in_retention_1", object: "invoice", number: "RET-0001", customer: "cus_retention_1", customer_name: "Retention Customer", customer_email: "r@retention.test", amount_due: 1000, currency: "eur", status: "paid", due_date: 1798761600 } } };
    const payload = JSON.stringify(event);
    const send = async () => {
      const header = new Stripe("sk_test_unused").webhooks.generateTestHeaderString({ payload, secret: SANDBOX_WEBHOOK_SECRETS.stripe });
      return (await fetch(`${app.url}/api/webhooks/stripe/events`, { method: "POST", headers: { "content-type": "application/json", "stripe-signature": header }, body: payload })).status;
    };
    const dev = client(app);
    expect(await send()).toBe(202);
    expect((await dev.get("/api/objects/invoice/in_retention_1")).status).toBe(200);
    // within the retention: a duplicate, nothing written again
    await app.container.resolve(OntologyStore).commit([{ op: "object.delete", objectTypeId: "invoice", primaryId: "in_retention_1" }], { origin: { kind: "runtime" }, correlationId: "retention-delete" });
    expect(await send()).toBe(202);
    expect((await dev.get("/api/objects/invoice/in_retention_1")).status).toBe(404);
    // past it: the run and its keys are gone, and the retry writes the invoice again
    expect((await app.container.resolve(RunRetention).prune(Date.now() + RETENTION_MS + 1000)).webhook_runs).toBeGreaterThanOrEqual(1);
    expect(await count("commits WHERE idempotency_key LIKE 'webhook:%'")).toBe(0);
    expect(await send()).toBe(202);
    expect((await dev.get("/api/objects/invoice/in_retention_1")).body.properties).toMatchObject({ number: "RET-0001", status: "paid" });
    expect(await count("webhook_runs WHERE idempotency_key = ?", [event.id])).toBe(1);
  });

  it("a retry that read its stored run before the retention deleted it reopens nothing (it becomes a new delivery), and leaves no attempt behind", async () => {
    // the run as the retry read it: failed, then deleted by a pass before the retry's reopen
    const gone = { id: newId("whrun"), execution_id: newId("exec"), connector_id: "standard-webhooks", webhook_id: "events", idempotency_key: "msg_gone", status: "failed", attempts: 1, received_at: new Date().toISOString(), finished_at: new Date().toISOString(), content_type: "application/json", headers: "{}", body: Buffer.from("{}"), response: null, replay_of: null };
    const reopened = await (app.container.resolve(WebhookDeliveries) as unknown as { reopen(row: typeof gone): Promise<unknown> }).reopen(gone);
    expect(reopened).toBeUndefined();
    expect(await count("webhook_attempts WHERE run_id = ?", [gone.id])).toBe(0);
  });

  it("ctx.blobs.revokeDownloadUrl of a URL the retention may have deleted (made longer ago than it) does nothing; of one made since, unknown, it still throws", async () => {
    const blobs = app.container.resolve(HandlerRunner).blobs("test");
    const old = `dl_${encodeTime(Date.now() - RETENTION_MS - 86_400_000, 10)}${"0".repeat(16)}`;
    await expect(blobs.revokeDownloadUrl(old)).resolves.toBeUndefined();
    await expect(blobs.revokeDownloadUrl(newId("dl"))).rejects.toThrow("No download URL");
    await expect(blobs.revokeDownloadUrl("dl_not-an-id")).rejects.toThrow("No download URL");
  });

  it("reads only the rows it deletes: each search is along an index, never a scan of the table", async () => {
    // on a connection of its own: EXPLAIN QUERY PLAN statements left cached on the app's reader kept it on
    // an old snapshot (later reads missed later commits; the app never runs them)
    const db = await openConnection(databaseFile(app.dataDir), sqlite3.OPEN_READONLY);
    onTestFinished(() => db.close());
    const plans = async (sql: string) => (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => "x"))).map((r) => r.detail);
    expect(await plans(ACTION_RUNS_DUE)).toEqual(["SEARCH action_runs USING INDEX sqlite_autoindex_action_runs_1 (id>? AND id<?)"]);
    expect(await plans(WEBHOOK_RUNS_DUE)).toEqual(["SEARCH webhook_runs USING INDEX sqlite_autoindex_webhook_runs_1 (id>? AND id<?)"]);
    for (const [sql, table, index] of [[DELETE_DOWNLOAD_URLS_DUE, "download_urls", "download_urls_by_expiry"], [DELETE_SESSIONS_DUE, "sessions", "sessions_by_expiry"]]) {
      const steps = await plans(sql!);
      // the deletion by primary key, and its list read along the expiry index
      expect(steps.join("\n"), table).toMatch(new RegExp(`SEARCH ${table} USING (COVERING )?INDEX ${index} \\(expires_at<\\?\\)`));
      expect(steps.join("\n"), table).not.toMatch(/\bSCAN (?!j\b)/);
    }
    const wfDue = (await plans(WORKFLOW_RUNS_DUE)).join("\n");
    // along the end's index, paged after the last (end, runId) read; each run's action runs along theirs
    expect(wfDue).toMatch(/^SEARCH w USING INDEX workflow_runs_by_finish \(\(finished_at,run_id\)>\(\?,\?\) AND finished_at<\?\)/);
    expect(wfDue).toMatch(/SEARCH a USING COVERING INDEX sqlite_autoindex_action_runs_\d \(run_id>\? AND run_id<\?\)/);
    expect(wfDue).not.toMatch(/\bSCAN\b/);
    const connectorDue = (await plans(CONNECTOR_RUNS_DUE)).join("\n");
    expect(connectorDue).toMatch(/^SEARCH c USING INDEX connector_runs_by_finish \(\(finished_at,run_id\)>\(\?,\?\) AND finished_at<\?\)/);
    expect(connectorDue).not.toMatch(/\bSCAN\b/);
    for (const statement of [UNKEY_WORKFLOW_WRITES, UNKEY_PIPELINE_STEPS]) {
      const writes = (await plans(statement)).join("\n");
      expect(writes).toMatch(/SEARCH c USING COVERING INDEX sqlite_autoindex_commits_\d \(idempotency_key>\? AND idempotency_key<\?\)/);
      expect(writes).not.toMatch(/SCAN (c|commits)\b/);
    }
    // the dataset versions' keys: each run's range along the keys' unique index
    for (const statement of [UNKEY_DATASET_VERSIONS, UNKEY_PIPELINE_DATASETS]) {
      const unkey = (await plans(statement)).join("\n");
      expect(unkey).toMatch(/SEARCH d USING COVERING INDEX sqlite_autoindex_dataset_versions_1 \(idempotency_key>\? AND idempotency_key<\?\)/);
      expect(unkey).not.toMatch(/SCAN (d|dataset_versions)\b/);
    }
  });

  it("deletes a workflow run's row and its interventions once it ended longer ago than the retention and Temporal's, and forgets its write keys; a run that waits, or whose end was never recorded, stays", async () => {
    const dev = client(app);
    const db = app.container.resolve(Database);
    const start = async (input: object) => (await dev.post("/api/workflows/invoice-review/runs", { input })).body.runId as string;
    const state = (runId: string) => dev.get(`/api/workflow-runs/${runId}`);
    // a small invoice: reviewed, with one write (its commit key <runId>:write:<n>)
    const small = await start({ invoiceId: "inv_1001", waitMs: 0, approvalThreshold: 1_000_000 });
    // a large one: an intervention, rejected, then a write
    const large = await start({ invoiceId: "inv_1002", waitMs: 0, approvalThreshold: 0 });
    await eventually(async () => (await state(large)).body.status === "waiting", 30_000);
    expect((await dev.post(`/api/workflow-runs/${large}/interventions/approve/submit`, { answer: { approved: false } })).status).toBe(200);
    // one still waiting for its decision
    const waiting = await start({ invoiceId: "inv_1002", waitMs: 0, approvalThreshold: 0 });
    for (const runId of [small, large]) await eventually(async () => (await state(runId)).body.status === "completed", 30_000);
    await eventually(async () => (await state(waiting)).body.status === "waiting");
    // a run that ended before its end was recorded (an older version, or terminated in Temporal's UI)
    const unrecorded = `run_unrecorded_${Date.now()}`;
    await write("INSERT INTO workflow_runs (run_id, workflow_id, input, requested_at, start_status) VALUES (?, 'invoice-review', '{}', ?, 'started')", [unrecorded, new Date(Date.now() - 90 * 86_400_000).toISOString()]);
    const ended = await db.all<{ run_id: string; finished_at: string | null }>("SELECT run_id, finished_at FROM workflow_runs WHERE run_id IN (?, ?, ?)", [small, large, waiting]);
    expect(Object.fromEntries(ended.map((r) => [r.run_id, r.finished_at !== null]))).toEqual({ [small]: true, [large]: true, [waiting]: false });
    expect(await count("interventions WHERE run_id = ?", [large])).toBe(1);
    const writeKeys = () => count("commits WHERE (idempotency_key > ? AND idempotency_key < ?) OR (idempotency_key > ? AND idempotency_key < ?)", [`${small}:write:`, `${small}:write;`, `${large}:write:`, `${large}:write;`]);
    expect(await writeKeys()).toBe(2);

    const later = Date.now() + RETENTION_MS + 2 * 86_400_000;
    // while Temporal's retention is unknown (not connected, or not readable), no workflow run goes
    expect((await new RunRetention(db, RETENTION_MS, new Metrics(), () => undefined).prune(later)).workflow_runs).toBe(0);
    // within the longer of the two retentions, none either: Temporal may still have the run
    const temporalMs = app.container.resolve(TemporalHost).retentionMs!;
    expect((await new RunRetention(db, RETENTION_MS, new Metrics(), () => RETENTION_MS * 3).prune(later)).workflow_runs).toBe(0);
    // nor within a day past Temporal's (it counts from the execution's close, a little later, and deletes in the background)
    expect((await new RunRetention(db, 3_600_000, new Metrics(), () => temporalMs).prune(Date.now() + temporalMs + 12 * 3_600_000)).workflow_runs).toBe(0);
    expect(await count("workflow_runs WHERE run_id IN (?, ?)", [small, large])).toBe(2);

    // past both: the two ended runs go, with the intervention and their write keys (the commits stay)
    expect(temporalMs).toBeLessThan(RETENTION_MS);
    const deleted = await app.container.resolve(RunRetention).prune(later);
    expect(deleted.workflow_runs).toBeGreaterThanOrEqual(2);
    expect(await count("workflow_runs WHERE run_id IN (?, ?)", [small, large])).toBe(0);
    expect(await count("workflow_runs WHERE run_id IN (?, ?)", [waiting, unrecorded])).toBe(2);
    expect(await count("interventions WHERE run_id = ?", [large])).toBe(0);
    expect(await count("interventions WHERE run_id = ?", [waiting])).toBe(1);
    expect(await writeKeys()).toBe(0);
    expect((await state(small)).status).toBe(404);
    const metrics = await (await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).text();
    expect(metrics).toMatch(/svc_retention_deleted_total\{table="workflow_runs"\} [1-9]/);
    // the one waiting is cancelled, so that it does not wait on the shared Temporal server after the test
    expect((await dev.post(`/api/workflow-runs/${waiting}/cancel`, {})).status).toBeLessThan(300);
  }, 90_000);

  it("deletes sync and pipeline runs' rows like workflow runs', and forgets their handlers' commit and dataset keys; one queued again, or whose end was never recorded, stays", async () => {
    const dev = client(app);
    const db = app.container.resolve(Database);
    // a sync that upserts objects (commit key sync:<runId>), one that snapshots a dataset (sync:<runId>:dataset:0),
    // a pipeline whose second step writes balances (pipeline:<runId>:1)
    const customers = (await dev.post("/api/syncs/customer-sync/runs", { input: {} })).body.runId as string;
    const prices = (await dev.post("/api/syncs/price-list-sync/runs", { input: {} })).body.runId as string;
    const statement = (await dev.post("/api/pipelines/monthly-statement/runs", { input: { month: "2026-11" } })).body.runId as string;
    // and one that Temporal refused to start: ended while queued (RunStarter.end)
    const starter = app.container.resolve(RunStarter);
    starter.pause();
    let refused: string;
    try {
      refused = (await dev.post("/api/syncs/customer-sync/runs", { input: {} })).body.runId as string;
      expect(await starter.end("connector_runs", refused, { status: "failed", error: { code: "start_refused", message: "refused for the test" } })).toBe(true);
    } finally {
      starter.resume();
    }
    const runs = [["sync", customers], ["sync", prices], ["pipeline", statement], ["sync", refused]] as const;
    for (const [kind, runId] of runs) await eventually(async () => ["completed", "failed"].includes((await dev.get(`/api/${kind}-runs/${runId}`)).body.status), 30_000);
    const ended = await db.all<{ run_id: string }>("SELECT run_id FROM connector_runs WHERE run_id IN (?, ?, ?, ?) AND finished_at IS NOT NULL", [customers, prices, statement, refused]);
    expect(ended).toHaveLength(4);
    const keys = () =>
      Promise.all([
        count("commits WHERE idempotency_key = ?", [`sync:${customers}`]),
        count("dataset_versions WHERE idempotency_key = ?", [`sync:${prices}:dataset:0`]),
        count("commits WHERE idempotency_key = ?", [`pipeline:${statement}:1`]),
      ]);
    expect(await keys()).toEqual([1, 1, 1]);
    // a run queued again (a restored backup's) and one whose end was never recorded (before migration 027)
    const old = new Date(Date.now() - 90 * 86_400_000).toISOString();
    const [queued, unrecorded] = [`run_sync_queued_${Date.now()}`, `run_sync_unrecorded_${Date.now()}`];
    await write("INSERT INTO connector_runs (run_id, kind, definition_id, input, requested_at, start_status) VALUES (?, 'sync', 'customer-sync', '{}', ?, 'started')", [unrecorded, old]);
    // the queued one inside a transaction that is rolled back: the run starter never sees it
    const due = await db
      .transaction(async (tx) => {
        await tx.run("INSERT INTO connector_runs (run_id, kind, definition_id, input, requested_at, start_status, finished_at) VALUES (?, 'sync', 'customer-sync', '{}', ?, 'pending', ?)", [queued, old, old]);
        const rows = await tx.all<{ id: string }>(CONNECTOR_RUNS_DUE, [new Date().toISOString(), "", ""]);
        throw Object.assign(new Error("rolled back"), { rows });
      })
      .catch((err: { rows?: Array<{ id: string }> }) => err.rows!.map((r) => r.id));
    expect(due).not.toContain(queued);
    expect(due).toEqual(expect.arrayContaining([customers, prices, statement]));

    const later = Date.now() + RETENTION_MS + 2 * 86_400_000;
    // never while Temporal's retention is unknown, nor within it and its day
    expect((await new RunRetention(db, RETENTION_MS, new Metrics(), () => undefined).prune(later)).connector_runs).toBe(0);
    const temporalMs = app.container.resolve(TemporalHost).retentionMs!;
    expect((await new RunRetention(db, 3_600_000, new Metrics(), () => temporalMs).prune(Date.now() + temporalMs + 12 * 3_600_000)).connector_runs).toBe(0);
    expect(await count("connector_runs WHERE run_id IN (?, ?, ?)", [customers, prices, statement])).toBe(3);

    const deleted = await app.container.resolve(RunRetention).prune(later);
    expect(deleted.connector_runs).toBeGreaterThanOrEqual(4);
    expect(await count("connector_runs WHERE run_id IN (?, ?, ?, ?)", [customers, prices, statement, refused])).toBe(0);
    expect(await count("connector_runs WHERE run_id = ?", [unrecorded])).toBe(1);
    // the commits and the version stay, without their keys
    expect(await keys()).toEqual([0, 0, 0]);
    expect(await count("dataset_versions WHERE dataset_id = 'price-list' AND idempotency_key IS NULL")).toBeGreaterThanOrEqual(1);
    for (const [kind, runId] of runs) expect((await dev.get(`/api/${kind}-runs/${runId}`)).status).toBe(404);
    const metrics = await (await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).text();
    expect(metrics).toMatch(/svc_retention_deleted_total\{table="connector_runs"\} [1-9]/);
  }, 90_000);

  it("after Temporal's retention is lowered, keeps the longer one for the runs that closed before, until they passed it (and across a restart)", async () => {
    const db = await Database.open(path.join(tempDir(), "svc.db"));
    onTestFinished(() => db.close());
    const DAY = 86_400_000;
    const t0 = Date.parse("2026-11-01T00:00:00Z");
    const history = new TemporalRetentionHistory(db);
    expect(await history.effective(undefined, t0)).toBeUndefined();
    expect(await history.effective(10 * DAY, t0)).toBe(10 * DAY);
    // a run that closed under the 10 days, 5 days before the retention is lowered to 1
    await db.transaction((tx) => tx.run("INSERT INTO workflow_runs (run_id, workflow_id, input, requested_at, start_status, finished_at) VALUES ('run_lowered', 'invoice-review', '{}', ?, 'started', ?)", [new Date(t0 - 5 * DAY).toISOString(), new Date(t0 - 5 * DAY).toISOString()]));
    let current = 10 * DAY;
    const retention = new RunRetention(db, 3_600_000, new Metrics(), (nowMs) => new TemporalRetentionHistory(db).effective(current, nowMs));
    const pass = async (at: number) => (await retention.prune(at)).workflow_runs;
    expect(await pass(t0)).toBe(0);
    current = DAY;
    // without the history the cutoff would be 1 day and its margin: the run, closed 5 days ago, would go while Temporal has it
    expect(await pass(t0 + 3_600_000)).toBe(0);
    expect(await history.effective(DAY, t0 + 4 * DAY)).toBe(10 * DAY);
    // remembered in the store: a restarted service holds it too
    expect(JSON.parse((await db.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", [TEMPORAL_RETENTION_KEY]))!.value)).toEqual({ currentMs: DAY, held: [{ ms: 10 * DAY, until: t0 + 3_600_000 + 11 * DAY }] });
    expect(await new TemporalRetentionHistory(db).effective(DAY, t0 + 5 * DAY)).toBe(10 * DAY);
    // the run passes the 10 days and the margin: it goes
    expect(await pass(t0 + 6 * DAY + 2 * 3_600_000)).toBe(1);
    // lowered again: both held, each until the runs that closed under it passed it
    expect(await history.effective(2 * 3_600_000, t0 + 8 * DAY)).toBe(10 * DAY);
    const held = async () => JSON.parse((await db.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", [TEMPORAL_RETENTION_KEY]))!.value).held;
    // each held a day past it too (Temporal deletes late: the margin)
    expect(await held()).toEqual([{ ms: 10 * DAY, until: t0 + 3_600_000 + 11 * DAY }, { ms: DAY, until: t0 + 10 * DAY }]);
    expect(await history.effective(2 * 3_600_000, t0 + 10 * DAY + 1)).toBe(10 * DAY);
    expect(await held()).toEqual([{ ms: 10 * DAY, until: t0 + 3_600_000 + 11 * DAY }]);
    expect(await history.effective(2 * 3_600_000, t0 + 11 * DAY + 3_600_000 + 1)).toBe(2 * 3_600_000);
    expect(await held()).toEqual([]);
    // raised: the new one at once (runs that closed before keep the shorter; their rows only stay longer)
    expect(await history.effective(20 * DAY, t0 + 30 * DAY)).toBe(20 * DAY);
  });

  it("keeps an ended workflow run that is queued again (a restored backup's), or one of whose action runs is kept (started again, it would skip that action)", async () => {
    const db = app.container.resolve(Database);
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    const [pending, held, free] = ["run_wf_pending", "run_wf_held", "run_wf_free"].map((id) => `${id}_${Date.now()}`) as [string, string, string];
    // inside a transaction that is rolled back: the run starter never sees these rows
    const due = await db
      .transaction(async (tx) => {
        for (const [runId, status] of [[pending, "pending"], [held, "started"], [free, "started"]] as const) {
          await tx.run("INSERT INTO workflow_runs (run_id, workflow_id, input, requested_at, start_status, finished_at) VALUES (?, 'invoice-review', '{}', ?, ?, ?)", [runId, old, status, old]);
        }
        // the held run's action run, with its effect (kept for good); the free one's neighbours do not hold it
        for (const [runId, effect] of [[`${held}:action:2`, "started"], [`${free}x:action:1`, "started"], [`${free}:actions:1`, null]] as const) {
          const id = newId("run");
          await tx.run("INSERT INTO action_runs (id, run_id, action_id, status, params, started_at, finished_at, effect_status) VALUES (?, ?, 'diagnostics.noop', 'succeeded', '{}', ?, ?, ?)", [id, runId, old, old, effect]);
        }
        const rows = await tx.all<{ id: string }>(WORKFLOW_RUNS_DUE, [new Date().toISOString(), "", ""]);
        throw Object.assign(new Error("rolled back"), { rows });
      })
      .catch((err: { rows?: Array<{ id: string }> }) => err.rows!.map((r) => r.id));
    expect(due.filter((id) => [pending, held, free].includes(id))).toEqual([free]);
    expect(await count("workflow_runs WHERE run_id IN (?, ?, ?)", [pending, held, free])).toBe(0);
  });

  it("forgets the write keys of the workflow runs it deletes, and only theirs (a runId may hold \":write:\")", async () => {
    const db = app.container.resolve(Database);
    const keys = ["run_a:write:1", "run_a:write:12", "run_a:write:3:write:1", "run_ab:write:1", "run_a:writex:1", "run_a:write:"];
    await db.transaction(async (tx) => {
      for (const [i, key] of keys.entries()) await tx.run("INSERT INTO commits (commit_id, idempotency_key, created_at) VALUES (?, ?, ?)", [`cmt_unkey_${i}`, key, new Date().toISOString()]);
      await tx.run(UNKEY_WORKFLOW_WRITES, [JSON.stringify(["run_a"])]);
    });
    const left = await db.all<{ commit_id: string; idempotency_key: string | null }>("SELECT commit_id, idempotency_key FROM commits WHERE commit_id LIKE 'cmt_unkey_%' ORDER BY commit_id");
    expect(left.map((r) => r.idempotency_key)).toEqual([null, null, "run_a:write:3:write:1", "run_ab:write:1", "run_a:writex:1", "run_a:write:"]);
  });

  it("forgets the step keys of the pipeline runs it deletes, commits' and dataset versions', and only theirs", async () => {
    const db = app.container.resolve(Database);
    const commitKeys = ["pipeline:p1:0", "pipeline:p1:12", "pipeline:p1:0:write:1", "pipeline:p12:0", "pipeline:p1:x", "pipeline:p1:", "sync:p1"];
    const versionKeys = ["pipeline:p1:0:dataset:0", "pipeline:p1:3:dataset:12", "pipeline:p1:0:dataset:1:dataset:0", "pipeline:p1:x:dataset:0", "pipeline:p1:0:dataset:", "pipeline:p12:0:dataset:0", "pipeline:p1:0:datasetx:0"];
    await db.transaction(async (tx) => {
      for (const [i, key] of commitKeys.entries()) await tx.run("INSERT INTO commits (commit_id, idempotency_key, created_at) VALUES (?, ?, ?)", [`cmt_pipeline_${i}`, key, new Date().toISOString()]);
      for (const [i, key] of versionKeys.entries()) await tx.run("INSERT INTO dataset_versions (dataset_id, version, transaction_type, status, source, idempotency_key, opened_at) VALUES ('unkey-pipeline', ?, 'append', 'aborted', '{}', ?, ?)", [i + 1, key, new Date().toISOString()]);
      await tx.run(UNKEY_PIPELINE_STEPS, [JSON.stringify(["p1"])]);
      await tx.run(UNKEY_PIPELINE_DATASETS, [JSON.stringify(["p1"])]);
    });
    const commits = await db.all<{ idempotency_key: string | null }>("SELECT idempotency_key FROM commits WHERE commit_id LIKE 'cmt_pipeline_%' ORDER BY commit_id");
    expect(commits.map((r) => r.idempotency_key)).toEqual([null, null, "pipeline:p1:0:write:1", "pipeline:p12:0", "pipeline:p1:x", "pipeline:p1:", "sync:p1"]);
    const versions = await db.all<{ idempotency_key: string | null }>("SELECT idempotency_key FROM dataset_versions WHERE dataset_id = 'unkey-pipeline' ORDER BY version");
    expect(versions.map((r) => r.idempotency_key)).toEqual([null, null, "pipeline:p1:0:dataset:1:dataset:0", "pipeline:p1:x:dataset:0", "pipeline:p1:0:dataset:", "pipeline:p12:0:dataset:0", "pipeline:p1:0:datasetx:0"]);
  });

  it("forgets the dataset keys of the runs it deletes, and only theirs (a runId may hold \":dataset:\")", async () => {
    const db = app.container.resolve(Database);
    const keys = ["action:a:dataset:0", "action:a:dataset:12", "action:a:dataset:7:dataset:0", "action:ab:dataset:0", "action:a:datasetx:0"];
    await db.transaction(async (tx) => {
      for (const [i, key] of keys.entries()) await tx.run("INSERT INTO dataset_versions (dataset_id, version, transaction_type, status, source, idempotency_key, opened_at) VALUES ('unkey-test', ?, 'append', 'aborted', '{}', ?, ?)", [i + 1, key, new Date().toISOString()]);
      await tx.run(UNKEY_DATASET_VERSIONS, [JSON.stringify(["action:a"])]);
    });
    const left = await db.all<{ idempotency_key: string | null }>("SELECT idempotency_key FROM dataset_versions WHERE dataset_id = 'unkey-test' ORDER BY version");
    expect(left.map((r) => r.idempotency_key)).toEqual([null, null, "action:a:dataset:7:dataset:0", "action:ab:dataset:0", "action:a:datasetx:0"]);
  });
});
