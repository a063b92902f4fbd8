import crypto from "node:crypto";
import path from "node:path";
import sqlite3 from "sqlite3";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { sign as signGitHub } from "@octokit/webhooks-methods";
import { client, eventually, startApp, tempDir, startFixtureProcess } from "./helpers";
import { freePort } from "./setup/global";
import { PROBE_SECRET, webhookProject } from "./fixtures/webhook-project";
import { SANDBOX_WEBHOOK_SECRETS } from "../sandbox/project";
import { Database } from "../core/store/db";
import { WebhookDeliveries, type DeliveryOutcome } from "../core/runtime/webhooks";
import { Metrics } from "../core/metrics";
import type { App } from "../core/app";

let app: App;
let dev: ReturnType<typeof client>;
/** The app's log lines at warn and above, parsed. */
const logged: Array<Record<string, unknown>> = [];
beforeAll(async () => {
  app = await startApp({ project: webhookProject, logger: pino({ level: "warn" }, { write: (line: string) => void logged.push(JSON.parse(line)) }) });
  dev = client(app);
});
afterAll(() => app?.close());

const probeSigner = new Webhook(PROBE_SECRET);

/** A delivery signed by the `standardwebhooks` reference library, as a Standard Webhooks sender would. */
function standardDelivery(body: unknown, opts: { id?: string; at?: Date; signer?: Webhook } = {}) {
  const payload = typeof body === "string" ? body : JSON.stringify(body);
  const id = opts.id ?? `msg_${crypto.randomUUID()}`;
  const at = opts.at ?? new Date();
  const signature = (opts.signer ?? probeSigner).sign(id, at, payload);
  return { payload, headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signature } as Record<string, string> };
}

function post(url: string, payload: string | Uint8Array, headers: Record<string, string>, method = "POST") {
  return fetch(url, { method, headers, body: method === "GET" ? undefined : (payload as string) });
}

const probeUrl = () => `${app.url}/api/webhooks/probe/events`;
async function runs(connectorId = "probe") {
  return (await dev.get(`/api/webhook-runs?connectorId=${connectorId}&pageSize=200`)).body.data as any[];
}
/** `svc_webhook_deliveries_total{connector="probe",webhook="events",outcome}` as the app's registry holds it now. */
async function probeDeliveries(outcome: DeliveryOutcome): Promise<number> {
  const metric = await app.container.resolve(Metrics).registry.getSingleMetric("svc_webhook_deliveries_total")!.get();
  return metric.values.find((v) => v.labels.connector === "probe" && v.labels.webhook === "events" && v.labels.outcome === outcome)?.value ?? 0;
}
async function eventsOf(correlationId: string) {
  return ((await dev.get("/api/events?limit=1000")).body.events as any[]).filter((e) => e.correlationId === correlationId);
}

describe("webhook delivery table (spec 3)", () => {
  it("verifies, parses, admits, handles and completes a signed delivery: 202, one run, writes with the execution's correlation id", async () => {
    const d = standardDelivery({ customerId: "cus_probe1", name: "Probe One" });
    const res = await post(probeUrl(), d.payload, d.headers);
    expect(res.status).toBe(202);
    const [run] = (await runs()).filter((r) => r.idempotencyKey === d.headers["webhook-id"]);
    expect(run).toMatchObject({ status: "completed", connectorId: "probe", webhookId: "events", executionId: expect.stringMatching(/^exec_/), response: { status: 202 } });
    expect(run.attempts).toHaveLength(1);
    expect(run.attempts[0]).toMatchObject({ attempt: 1, status: "completed", startedAt: expect.any(String), finishedAt: expect.any(String) });
    const events = await eventsOf(run.executionId);
    expect(events.map((e) => e.type)).toEqual(["object.created"]);
    expect(events[0].origin).toMatchObject({ kind: "runtime", connectorId: "probe", webhookId: "events", runId: run.id });
    expect(events[0].actor).toBeUndefined();
  });

  it.each([
    ["a wrong secret", () => standardDelivery({ customerId: "x", name: "x" }, { signer: new Webhook("whsec_" + Buffer.from("another-secret-entirely-123").toString("base64")) })],
    ["an altered body", () => ({ ...standardDelivery({ customerId: "x", name: "x" }), payload: JSON.stringify({ customerId: "y", name: "x" }) })],
    ["a stale timestamp", () => standardDelivery({ customerId: "x", name: "x" }, { at: new Date(Date.now() - 10 * 60_000) })],
    ["a future timestamp", () => standardDelivery({ customerId: "x", name: "x" }, { at: new Date(Date.now() + 10 * 60_000) })],
    ["missing signature headers", () => ({ payload: JSON.stringify({ customerId: "x", name: "x" }), headers: { "content-type": "application/json" } })],
  ])("refuses %s with 401 and creates no execution", async (_name, make) => {
    const before = (await runs()).length;
    const d = make();
    const res = await post(probeUrl(), d.payload, d.headers);
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe("unauthorized");
    expect((await runs()).length).toBe(before);
  });

  it("refuses bodies that do not parse or validate with 400, methods other than POST with 405, unknown webhooks with 404, big bodies with 413: none is an execution", async () => {
    const before = (await runs()).length;
    const malformed = standardDelivery("{not json");
    expect((await post(probeUrl(), malformed.payload, malformed.headers)).status).toBe(400);
    const invalid = standardDelivery({ customerId: 42 });
    const invalidRes = await post(probeUrl(), invalid.payload, invalid.headers);
    expect(invalidRes.status).toBe(400);
    expect(((await invalidRes.json()) as any).error.code).toBe("invalid_request");
    const get = await fetch(probeUrl());
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect((await fetch(probeUrl(), { method: "PUT", body: "{}" })).status).toBe(405);
    const ok = standardDelivery({ customerId: "x", name: "x" });
    expect((await post(`${app.url}/api/webhooks/nobody/events`, ok.payload, ok.headers)).status).toBe(404);
    expect((await post(`${app.url}/api/webhooks/probe/other`, ok.payload, ok.headers)).status).toBe(404);
    const big = standardDelivery({ customerId: "x", name: "x".repeat(1024 * 1024) });
    expect((await post(probeUrl(), big.payload, big.headers)).status).toBe(413);
    expect((await runs()).length).toBe(before);
  });

  it("refuses a delivery whose idempotency key function answers no non-empty string with 400, storing nothing; a string key de-duplicates", async () => {
    const keyedUrl = `${app.url}/api/webhooks/probe/keyed`;
    const send = (key: unknown) => post(keyedUrl, JSON.stringify({ key }), { "content-type": "application/json" });
    const before = (await runs()).filter((r) => r.webhookId === "keyed").length;
    for (const [key, answered] of [[{ id: 1 }, "an object"], [{ id: 2 }, "an object"], [7, "the number 7"], ["", "an empty string"], [[1], "an array"], [true, "the boolean true"]] as const) {
      const res = await send(key);
      expect([key, res.status, ((await res.json()) as any).error]).toEqual([
        key,
        400,
        { code: "invalid_request", message: `The delivery has no usable idempotency key: the webhook's idempotencyKey answered ${answered}; a key is a non-empty string (null or undefined for none)` },
      ]);
    }
    expect((await runs()).filter((r) => r.webhookId === "keyed").length).toBe(before);
    // the string "7" is a key of its own (7 was made "7" before), once
    const first = await send("7");
    expect([first.status, ((await first.json()) as any).key]).toEqual([200, "7"]);
    expect(await send("7").then((r) => r.json())).toEqual({ status: "duplicate" });
    // null: no key, each delivery a new one
    expect((await Promise.all([send(null), send(null)])).map((r) => r.status)).toEqual([200, 200]);
    expect((await runs()).filter((r) => r.webhookId === "keyed").map((r) => r.idempotencyKey).sort()).toEqual(["7", null, null]);
  });

  it("answers 404 for webhook ids named like Object.prototype members, before verify, and stores nothing", async () => {
    const before = (await runs("stripe")).length;
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const res = await post(`${app.url}/api/webhooks/stripe/${name}`, "{}", { "content-type": "application/json" });
      expect([name, res.status, ((await res.json()) as any).error.message]).toEqual([name, 404, `No webhook "${name}" on connector "stripe"`]);
    }
    expect((await runs("stripe")).length).toBe(before);
  });

  it("completes each of many concurrent deliveries (group-committed together) with its one attempt", async () => {
    const sent = Array.from({ length: 16 }, (_, i) => standardDelivery({ customerId: `cus_many${i}`, name: `Many ${i}` }));
    expect((await Promise.all(sent.map((d) => post(probeUrl(), d.payload, d.headers)))).map((r) => r.status)).toEqual(sent.map(() => 202));
    const byKey = new Map((await runs()).map((r) => [r.idempotencyKey, r]));
    for (const d of sent) {
      const run = byKey.get(d.headers["webhook-id"]);
      expect(run).toMatchObject({ status: "completed", finishedAt: expect.any(String), response: { status: 202 } });
      expect(run.attempts).toEqual([expect.objectContaining({ attempt: 1, status: "completed", finishedAt: run.finishedAt })]);
    }
  });

  it("stores a first delivery's exact bytes with its run and attempt, and a handler that writes nothing costs one commit of one call to SQLite", async () => {
    const db = app.container.resolve(Database);
    // the sandbox's Standard Webhooks connector: its handler logs and writes nothing. The body carries what
    // the one-call form must escape when it writes values into SQL text: quotes, NUL (as JSON escapes it), astral
    const body = `{"type":"bench.ping","data":{"note":"O'Brien \\"Bytes\\" \\u0000 \u00fcn\u00ef \u{1F9FE} '); DROP TABLE webhook_runs; --"}}`;
    const signer = new Webhook(SANDBOX_WEBHOOK_SECRETS.standardWebhooks);
    const d = standardDelivery(body, { signer });
    await app.container.resolve(WebhookDeliveries).storedKeysLoaded;
    const before = db.stats();
    expect((await post(`${app.url}/api/webhooks/standard-webhooks/events`, d.payload, d.headers)).status).toBe(202);
    const after = db.stats();
    const [stored] = await db.all<{ id: string; body: Buffer; status: string; attempts: number }>("SELECT id, body, status, attempts FROM webhook_runs WHERE idempotency_key = ?", [d.headers["webhook-id"]!]);
    expect(Buffer.compare(stored!.body, Buffer.from(body, "utf8"))).toBe(0);
    expect(stored).toMatchObject({ status: "completed", attempts: 1 });
    expect(await db.all("SELECT attempt, status FROM webhook_attempts WHERE run_id = ?", [stored!.id])).toEqual([{ attempt: 1, status: "completed" }]);
    // the run is recorded with its completion (the handler ended at once): one group commit (nothing
    // else runs meanwhile) of one call, BEGIN … COMMIT; a key never stored needs no read (the stored keys' filter)
    expect(after.commits - before.commits).toBe(1);
    expect(after.writerStatements - before.writerStatements).toBe(1);
    expect(after.readerStatements - before.readerStatements).toBe(0);
    expect(stored!.id).toMatch(/^whrun_/);
  });

  it("admits fresh deliveries sent together with a duplicate of a completed one: each fresh one once, the duplicate not again", async () => {
    const db = app.container.resolve(Database);
    const done = standardDelivery({ customerId: "cus_mixdup", name: "Mixed duplicate" });
    expect((await post(probeUrl(), done.payload, done.headers)).status).toBe(202);
    const fresh = Array.from({ length: 8 }, (_, i) => standardDelivery({ customerId: `cus_mix${i}`, name: `Mix ${i}` }));
    const before = db.stats();
    const answers = await Promise.all([done, ...fresh].map((d) => post(probeUrl(), d.payload, d.headers)));
    expect(answers.map((r) => r.status)).toEqual(Array(9).fill(202));
    // the duplicate is answered from its key's lookup: nothing of it reaches the writer, and the fresh
    // ones' group calls never fall back to statement by statement
    expect(db.stats().deferredFallbacks - before.deferredFallbacks).toBe(0);
    const byKey = new Map((await runs()).map((r) => [r.idempotencyKey, r]));
    for (const d of fresh) expect(byKey.get(d.headers["webhook-id"])).toMatchObject({ status: "completed", attempts: [expect.objectContaining({ attempt: 1, status: "completed" })] });
    const again = byKey.get(done.headers["webhook-id"]);
    expect(again.attempts).toHaveLength(1);
    expect(await eventsOf(again.executionId)).toHaveLength(1);
  });

  it("answers duplicates of deliveries stored before a restart, while the stored keys are read and after, and looks up no new key", async () => {
    const first = await startApp({ project: webhookProject });
    const url = `${first.url}/api/webhooks/probe/events`;
    const stored = Array.from({ length: 30 }, (_, i) => standardDelivery({ customerId: `cus_restart${i}`, name: `Restart ${i}` }));
    for (const d of stored) expect((await post(url, d.payload, d.headers)).status).toBe(202);
    await first.close();
    const second = await startApp({ project: webhookProject, dataDir: first.dataDir });
    try {
      const again = `${second.url}/api/webhooks/probe/events`;
      const deliveries = second.container.resolve(WebhookDeliveries);
      // sent at once with the start: answered from the lookup or the filter, whichever is ready
      const early = await Promise.all(stored.slice(0, 15).map((d) => post(again, d.payload, d.headers).then((r) => r.json())));
      expect(early).toEqual(Array(15).fill({ status: "duplicate" }));
      await deliveries.storedKeysLoaded;
      const db = second.container.resolve(Database);
      const before = db.stats();
      for (const d of stored.slice(15)) expect(await post(again, d.payload, d.headers).then((r) => r.json())).toEqual({ status: "duplicate" });
      expect(db.stats().readerStatements - before.readerStatements).toBe(15); // each stored key is looked up (sent one at a time)
      const fresh = standardDelivery({ customerId: "cus_restart_new", name: "New after restart" });
      const beforeFresh = db.stats();
      expect((await post(again, fresh.payload, fresh.headers)).status).toBe(202);
      expect(db.stats().readerStatements - beforeFresh.readerStatements).toBe(0);
      expect((await post(again, fresh.payload, fresh.headers).then((r) => r.json()))).toEqual({ status: "duplicate" });
      const rows = await db.all<{ n: number }>("SELECT count(*) AS n FROM webhook_runs WHERE connector_id = 'probe' AND idempotency_key LIKE 'msg_%'");
      expect(rows[0]!.n).toBeGreaterThanOrEqual(31);
    } finally {
      await second.close();
    }
  });

  it("pages webhook runs with an opaque token that only continues its own listing (a raw run id was taken as is: garbage looked like the end)", async () => {
    for (let i = 0; i < 3; i++) {
      const delivery = standardDelivery({ customerId: `cus_page_${i}`, name: "Paged" });
      await post(probeUrl(), delivery.payload, delivery.headers);
    }
    const all = (await dev.get("/api/webhook-runs?connectorId=probe&pageSize=200")).body.data.map((r: { id: string }) => r.id);
    const paged: string[] = [];
    let token: string | undefined;
    do {
      const page = (await dev.get(`/api/webhook-runs?connectorId=probe&pageSize=2${token ? `&nextPageToken=${token}` : ""}`)).body;
      paged.push(...page.data.map((r: { id: string }) => r.id));
      token = page.nextPageToken;
    } while (token);
    expect(paged).toEqual(all);
    const first = (await dev.get("/api/webhook-runs?connectorId=probe&pageSize=1")).body.nextPageToken;
    for (const [query, message] of [[`connectorId=probe&nextPageToken=garbage`, /not a token of this listing/], [`connectorId=probe&status=failed&nextPageToken=${first}`, /other filters/]] as const) {
      const res = await dev.get(`/api/webhook-runs?${query}`);
      expect([res.status, res.body.error.code], query).toEqual([400, "invalid_request"]);
      expect(res.body.error.message).toMatch(message);
    }
  });

  it("answers a duplicate of a completed delivery 202 without running it again", async () => {
    const d = standardDelivery({ customerId: "cus_dup", name: "Dup" });
    expect((await post(probeUrl(), d.payload, d.headers)).status).toBe(202);
    const again = await post(probeUrl(), d.payload, d.headers);
    expect(again.status).toBe(202);
    const mine = (await runs()).filter((r) => r.idempotencyKey === d.headers["webhook-id"]);
    expect(mine).toHaveLength(1);
    expect(mine[0].attempts).toHaveLength(1);
    expect(await eventsOf(mine[0].executionId)).toHaveLength(1);
  });

  it("runs concurrent duplicates exactly once", async () => {
    const d = standardDelivery({ customerId: "cus_concurrent", name: "Concurrent" });
    const counted = async () => Promise.all((["completed", "duplicate", "in_progress"] as const).map(probeDeliveries));
    const before = await counted();
    const answers = await Promise.all(Array.from({ length: 12 }, () => post(probeUrl(), d.payload, d.headers)));
    expect(answers.map((r) => r.status)).toEqual(Array(12).fill(202));
    // svc_webhook_deliveries_total: one ran, the other eleven found it running or completed
    const [completed, duplicate, inProgress] = (await counted()).map((n, i) => n - before[i]!);
    expect(completed).toBe(1);
    expect(duplicate! + inProgress!).toBe(11);
    const mine = (await runs()).filter((r) => r.idempotencyKey === d.headers["webhook-id"]);
    expect(mine).toHaveLength(1);
    expect(mine[0].attempts).toHaveLength(1);
    expect((await eventsOf(mine[0].executionId)).map((e) => e.type)).toEqual(["object.created"]);
  });

  it("marks a throwing handler's run failed with 500, and the provider's retry re-attempts it with the same execution", async () => {
    const d = standardDelivery({ customerId: "cus_flaky", name: "Flaky", failTimes: 1 });
    const failedBefore = await probeDeliveries("failed");
    const first = await post(probeUrl(), d.payload, d.headers);
    expect(first.status).toBe(500);
    expect((await probeDeliveries("failed")) - failedBefore).toBe(1);
    const body = (await first.json()) as any;
    expect(body.error.code).toBe("internal");
    expect(JSON.stringify(body)).not.toMatch(/flaky failure|at .*\.ts/);
    let [run] = (await runs()).filter((r) => r.idempotencyKey === d.headers["webhook-id"]);
    expect(run).toMatchObject({ status: "failed", attempts: [{ attempt: 1, status: "failed", error: { code: "handler_failed", message: "flaky failure on attempt 1" } }] });
    expect(await eventsOf(run.executionId)).toHaveLength(0);

    const retry = await post(probeUrl(), d.payload, d.headers);
    expect(retry.status).toBe(202);
    const [after] = (await runs()).filter((r) => r.idempotencyKey === d.headers["webhook-id"]);
    expect(after.id).toBe(run.id);
    expect(after.executionId).toBe(run.executionId);
    expect(after.status).toBe("completed");
    expect(after.attempts.map((a: any) => a.status)).toEqual(["failed", "completed"]);
    expect((await eventsOf(run.executionId)).map((e) => e.type)).toEqual(["object.created"]);
    run = after;
  });

  it("fails an attempt whose answer HTTP cannot carry before anything of it is written (status, a body with 204, a header name, a BigInt)", async () => {
    for (const badAnswer of ["status", "body204", "header", "bigint"]) {
      const d = standardDelivery({ customerId: `cus_bad_${badAnswer}`, name: "Bad answer", badAnswer });
      const res = await post(probeUrl(), d.payload, d.headers);
      expect([badAnswer, res.status, ((await res.json()) as any).error.message]).toEqual([badAnswer, 500, "The webhook handler's answer was invalid; nothing was written"]);
      const [run] = (await runs()).filter((r) => r.idempotencyKey === d.headers["webhook-id"]);
      expect(run, badAnswer).toMatchObject({ status: "failed", attempts: [{ attempt: 1, status: "failed", error: { code: "invalid_answer", message: expect.stringContaining("The webhook handler's answer cannot be sent: ") } }] });
      expect(await eventsOf(run.executionId), badAnswer).toHaveLength(0);
      expect((await dev.get(`/api/objects/customer/cus_bad_${badAnswer}`)).status, badAnswer).toBe(404);
    }
  });

  it("answers with the handler's response, and lets handlers start workflows and append events once per delivery", async () => {
    const d = standardDelivery({ customerId: "cus_resp", name: "Resp", respond: true, startReview: "inv_1003", appendEvent: true, failTimes: 0 });
    const res = await post(probeUrl(), d.payload, d.headers);
    expect(res.status).toBe(201);
    expect(res.headers.get("x-probe")).toBe("yes");
    expect(await res.json()).toEqual({ received: "cus_resp", attempt: 1 });
    const [run] = (await runs()).filter((r) => r.idempotencyKey === d.headers["webhook-id"]);
    expect(run.response).toMatchObject({ status: 201, body: { received: "cus_resp", attempt: 1 } });
    const wfRunId = `${run.executionId}-wf-1`;
    const state = await eventually(async () => {
      const r = await dev.get(`/api/workflow-runs/${wfRunId}`);
      return r.body.status === "completed" ? r.body : undefined;
    });
    expect(state.workflowId).toBe("invoice-review");
    const events = await eventsOf(run.executionId);
    expect(events.map((e) => e.type).sort()).toEqual(["object.created", "rule.triggered"]);
  });

  it("never stores or echoes signature headers, and replays a stored delivery into a new run", async () => {
    const d = standardDelivery({ customerId: "cus_replay", name: "Replay" });
    await post(probeUrl(), d.payload, d.headers);
    const [run] = (await runs()).filter((r) => r.idempotencyKey === d.headers["webhook-id"]);
    expect(run.request.headers["webhook-signature"]).toBe("[redacted]");
    expect(run.request.headers["webhook-id"]).toBe(d.headers["webhook-id"]);
    const rows = await app.container.resolve(Database).all<{ headers: string }>("SELECT headers FROM webhook_runs");
    expect(rows.some((r) => r.headers.includes(d.headers["webhook-signature"]!.slice(3)))).toBe(false);

    const replay = await dev.post(`/api/webhook-runs/${run.id}/replay`, {});
    expect(replay.status).toBe(200);
    expect(replay.body.run).toMatchObject({ status: "completed", replayOf: run.id, idempotencyKey: null });
    expect(replay.body.run.executionId).not.toBe(run.executionId);
    expect(replay.body.response.status).toBe(202);
    // the run's id as every other run kind names it (runId), and the 202 names the run it made
    expect((await dev.get(`/api/webhook-runs/${run.id}`)).body).toMatchObject({ id: run.id, runId: run.id });
    expect(replay.body.run.runId).toBe(replay.body.run.id);
    const fresh = standardDelivery({ customerId: "cus_replay_2", name: "Replay 2" });
    const accepted = await fetch(probeUrl(), { method: "POST", body: fresh.payload, headers: fresh.headers });
    const answer = (await accepted.json()) as { status: string; runId: string };
    expect([accepted.status, answer.status]).toEqual([202, "accepted"]);
    expect((await dev.get(`/api/webhook-runs/${answer.runId}`)).body.idempotencyKey).toBe(fresh.headers["webhook-id"]);
    expect((await dev.get("/api/webhook-runs/whrun_nope")).status).toBe(404);
  });

  it("hands the handler the query string of the delivery's URL, and a replay the same one", async () => {
    const d = standardDelivery({ customerId: "cus_query", name: "Query", respond: true });
    const res = await post(`${probeUrl()}?tenant=acme&region=eu`, d.payload, d.headers);
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ received: "cus_query", query: "?tenant=acme&region=eu" });
    const [run] = (await runs()).filter((r) => r.idempotencyKey === d.headers["webhook-id"]);
    expect(run.response.body).toMatchObject({ query: "?tenant=acme&region=eu" });
    const replay = await dev.post(`/api/webhook-runs/${run.id}/replay`, {});
    expect(replay.body.response.status).toBe(201);
    expect((await dev.get(`/api/webhook-runs/${replay.body.run.id}`)).body.response.body).toMatchObject({ received: "cus_query", query: "?tenant=acme&region=eu" });
    // a delivery without one has none, replayed too
    const plain = standardDelivery({ customerId: "cus_query_2", name: "No query", respond: true });
    expect(await (await post(probeUrl(), plain.payload, plain.headers)).json()).not.toHaveProperty("query");
    const [plainRun] = (await runs()).filter((r) => r.idempotencyKey === plain.headers["webhook-id"]);
    const plainReplay = await dev.post(`/api/webhook-runs/${plainRun.id}/replay`, {});
    expect((await dev.get(`/api/webhook-runs/${plainReplay.body.run.id}`)).body.response.body).not.toHaveProperty("query");
  });
});

describe("providers' own signers as senders", () => {
  it("Stripe: a delivery signed by stripe's test header generator updates invoices and customers, once per event id", async () => {
    const secret = SANDBOX_WEBHOOK_SECRETS.stripe;
    const event = {
      id: `evt_${crypto.randomUUID().replaceAll("-", "")}`,
      object: "event",
      type: "invoice.paid",
      data: { object: { id: "in_stripe_1", object: "invoice", number: "STR-0001", customer: "cus_stripe_1", customer_name: "Stripe Customer", customer_email: "pay@stripe.test", amount_due: 123456, currency: "eur", status: "paid", due_date: 1798761600 } },
    };
    const payload = JSON.stringify(event);
    const header = new Stripe("sk_test_unused").webhooks.generateTestHeaderString({ payload, secret });
    const send = () => post(`${app.url}/api/webhooks/stripe/events`, payload, { "content-type": "application/json", "stripe-signature": header });
    expect((await send()).status).toBe(202);
    const invoice = (await dev.get("/api/objects/invoice/in_stripe_1")).body;
    expect(invoice.properties).toMatchObject({ number: "STR-0001", customerId: "cus_stripe_1", amount: 1234.56, currency: "EUR", status: "paid", dueDate: "2027-01-01" });
    expect((await dev.get("/api/objects/customer/cus_stripe_1")).body.properties).toMatchObject({ name: "Stripe Customer", email: "pay@stripe.test" });
    expect((await send()).status).toBe(202);
    expect((await runs("stripe")).filter((r) => r.idempotencyKey === event.id)).toHaveLength(1);
    const stale = new Stripe("sk_test_unused").webhooks.generateTestHeaderString({ payload, secret, timestamp: Math.floor(Date.now() / 1000) - 3600 });
    expect((await post(`${app.url}/api/webhooks/stripe/events`, payload, { "content-type": "application/json", "stripe-signature": stale })).status).toBe(401);
  });

  it("GitHub: @octokit/webhooks-methods signatures pass, X-GitHub-Delivery de-duplicates, a wrong secret is 401", async () => {
    const payload = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1, repository: { full_name: "acme/app" } });
    const delivery = crypto.randomUUID();
    const headers = (signature: string) => ({ "content-type": "application/json", "x-github-event": "ping", "x-github-delivery": delivery, "x-hub-signature-256": signature });
    const url = `${app.url}/api/webhooks/github/events`;
    expect((await post(url, payload, headers(await signGitHub(SANDBOX_WEBHOOK_SECRETS.github, payload)))).status).toBe(202);
    expect((await post(url, payload, headers(await signGitHub(SANDBOX_WEBHOOK_SECRETS.github, payload)))).status).toBe(202);
    expect((await runs("github")).filter((r) => r.idempotencyKey === delivery)).toHaveLength(1);
    expect((await post(url, payload, headers(await signGitHub("not-the-secret", payload)))).status).toBe(401);
    // the operator sees the refusal: which webhook, why, from where
    expect(logged.filter((l) => l.connectorId === "github" && l.msg === "webhook delivery failed verification (401, not stored)")).toEqual([expect.objectContaining({ level: 40, webhookId: "events", reason: expect.any(String), clientAddress: expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/) })]);
  });

  it("Slack: answers url_verification, accepts form bodies, refuses stale timestamps", async () => {
    // Slack's documented scheme: v0= hex HMAC-SHA256 of "v0:<timestamp>:<raw body>" with the signing secret.
    const slackHeaders = (body: string, type: string, ts = Math.floor(Date.now() / 1000)) => ({
      "content-type": type,
      "x-slack-request-timestamp": String(ts),
      "x-slack-signature": "v0=" + crypto.createHmac("sha256", SANDBOX_WEBHOOK_SECRETS.slack).update(`v0:${ts}:${body}`).digest("hex"),
    });
    const url = `${app.url}/api/webhooks/slack/events`;
    const challenge = JSON.stringify({ type: "url_verification", token: "x", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
    const res = await post(url, challenge, slackHeaders(challenge, "application/json"));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
    const form = new URLSearchParams({ command: "/invoices", text: "open", trigger_id: "13345224609.738474920.8088930838d88f008e0", user_id: "U2147483697" }).toString();
    expect((await post(url, form, slackHeaders(form, "application/x-www-form-urlencoded"))).status).toBeLessThan(300);
    expect((await post(url, form, slackHeaders(form, "application/x-www-form-urlencoded", Math.floor(Date.now() / 1000) - 600))).status).toBe(401);
  });

  it("without an idempotency key, every accepted request is a new delivery", async () => {
    const slackHeaders = (body: string, ts = Math.floor(Date.now() / 1000)) => ({
      "content-type": "application/x-www-form-urlencoded",
      "x-slack-request-timestamp": String(ts),
      "x-slack-signature": "v0=" + crypto.createHmac("sha256", SANDBOX_WEBHOOK_SECRETS.slack).update(`v0:${ts}:${body}`).digest("hex"),
    });
    const form = new URLSearchParams({ command: "/status", text: "no trigger id here" }).toString();
    const before = (await runs("slack")).filter((r) => r.idempotencyKey === null).length;
    for (let i = 0; i < 2; i++) expect((await post(`${app.url}/api/webhooks/slack/events`, form, slackHeaders(form))).status).toBeLessThan(300);
    const keyless = (await runs("slack")).filter((r) => r.idempotencyKey === null);
    expect(keyless.length - before).toBe(2);
    expect(new Set(keyless.map((r) => r.executionId)).size).toBe(keyless.length);
  });

  it("Standard Webhooks connector: the generic connector accepts the reference library's signatures", async () => {
    const signer = new Webhook(SANDBOX_WEBHOOK_SECRETS.standardWebhooks);
    const d = standardDelivery({ type: "invoice.created", data: { id: "x" } }, { signer });
    expect((await post(`${app.url}/api/webhooks/standard-webhooks/events`, d.payload, d.headers)).status).toBe(202);
    expect((await runs("standard-webhooks")).map((r) => r.idempotencyKey)).toContain(d.headers["webhook-id"]);
  });

  it("takes a delivery whose URL carries the provider's own query parameters (a routing tag, a validation token): verified and handled, not refused as an unknown parameter", async () => {
    const signer = new Webhook(SANDBOX_WEBHOOK_SECRETS.standardWebhooks);
    const d = standardDelivery({ type: "invoice.created", data: { id: "with-query" } }, { signer });
    const res = await post(`${app.url}/api/webhooks/standard-webhooks/events?tenant=acme&validationToken=abc`, d.payload, d.headers);
    expect(res.status).toBe(202);
    expect((await runs("standard-webhooks")).map((r) => r.idempotencyKey)).toContain(d.headers["webhook-id"]);
    // the signature is still checked: a query does not get a bad one through
    expect((await post(`${app.url}/api/webhooks/standard-webhooks/events?tenant=acme`, d.payload, { ...d.headers, "webhook-signature": "v1,AAAA" })).status).toBe(401);
  });
});

describe("a process killed in the middle of a handler", () => {
  const start = (dataDir: string, port: number, env: Record<string, string> = {}) => startFixtureProcess("webhook-server.ts", dataDir, port, env);
  /** The execution id the fixture's hanging handler prints (`HANGING <executionId>`). */
  const hangingExecution = (child: Awaited<ReturnType<typeof start>>) =>
    new Promise<string>((resolve) => {
      let out = "";
      child.stdout!.on("data", (d) => {
        out += d;
        const m = /HANGING (\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
    });

  /**
   * Starts the fixture process (with `env`), sends a delivery of `body` whose handler hangs on attempt 1,
   * runs `whileHanging` meanwhile, kills the process (SIGKILL) and starts it again over the same data dir
   * (with `restartEnv`). The caller sends the provider's retry and stops the process.
   */
  async function killedMidHandler<T>(body: Record<string, unknown>, env: Record<string, string>, whileHanging: (api: (path: string) => Promise<any>, child: Awaited<ReturnType<typeof start>>) => Promise<T>, restartEnv: Record<string, string> = {}) {
    const dataDir = tempDir();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/api/webhooks/probe/events`;
    const api = (path: string) => fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: "Bearer svc_dev_sandbox_token" } }).then((r) => r.json() as Promise<any>);
    let child = await start(dataDir, port, env);
    const d = standardDelivery({ ...body, hangOnAttempt: 1 });
    const hanging = post(url, d.payload, d.headers).catch((err: Error) => err);
    const seen = await whileHanging(api, child);
    child.kill("SIGKILL");
    expect(await hanging).toBeInstanceOf(Error);
    await child.exited;
    child = await start(dataDir, port, restartEnv);
    const stop = async () => {
      child.kill("SIGTERM");
      await child.exited;
    };
    return { seen, d, api, dataDir, retry: () => post(url, d.payload, d.headers), stop };
  }

  it("completes on the provider's retry after restart, with nothing duplicated", async () => {
    const k = await killedMidHandler({ customerId: "cus_killed", name: "Killed" }, {}, (api) => eventually(async () => (await api("/api/webhook-runs?connectorId=probe")).data.some((r: any) => r.status === "running")));
    try {
      expect((await k.retry()).status).toBe(202);
      const [run] = (await k.api("/api/webhook-runs?connectorId=probe")).data;
      expect(run.status).toBe("completed");
      expect(run.attempts.map((a: any) => a.status)).toEqual(["failed", "completed"]);
      expect(run.attempts[0].error).toEqual({ code: "interrupted", message: expect.stringMatching(/interrupted/) });
      // stored with its code, not read back from the message as for attempts stored before codes
      const stored = await new Promise<string>((resolve, reject) => {
        const db = new sqlite3.Database(path.join(k.dataDir, "svc.db"), sqlite3.OPEN_READONLY, (err) => err && reject(err));
        db.get("SELECT error FROM webhook_attempts WHERE run_id = ? AND attempt = 1", [run.id], (err, row: { error: string }) => (err ? reject(err) : db.close(() => resolve(row.error))));
      });
      expect(JSON.parse(stored)).toEqual({ code: "interrupted", message: expect.stringMatching(/interrupted/) });
      const events = (await k.api("/api/events?limit=1000")).events.filter((e: any) => e.correlationId === run.executionId);
      expect(events.map((e: any) => e.type)).toEqual(["object.created"]);
      expect((await k.retry()).status).toBe(202);
      expect((await k.api("/api/webhook-runs?connectorId=probe")).data).toHaveLength(1);
    } finally {
      await k.stop();
    }
  });

  it("runs a delivery cut off before its run was recorded again on the retry, with the same execution, once", async () => {
    // a threshold the hanging handler never reaches: its run is not recorded when the process dies; after
    // the restart it is attempt 1 again (nothing of the first was recorded), so the fixture must not hang
    const k = await killedMidHandler(
      { customerId: "cus_unrecorded", name: "Unrecorded" },
      { SVC_RECORD_RUNNING_AFTER_MS: "600000" },
      async (api, child) => {
        const executionId = await hangingExecution(child);
        expect((await api("/api/webhook-runs?connectorId=probe")).data).toEqual([]);
        return executionId;
      },
      { PROBE_NO_HANG: "1" },
    );
    try {
      expect((await k.retry()).status).toBe(202);
      const runs = (await k.api("/api/webhook-runs?connectorId=probe")).data;
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ status: "completed", executionId: k.seen, idempotencyKey: k.d.headers["webhook-id"] });
      expect(runs[0].attempts.map((a: any) => [a.attempt, a.status])).toEqual([[1, "completed"]]);
      const events = (await k.api("/api/events?limit=1000")).events.filter((e: any) => e.correlationId === k.seen);
      expect(events.map((e: any) => e.type)).toEqual(["object.created"]);
    } finally {
      await k.stop();
    }
  });

  it("records a run before its handler starts a workflow, so a retry after a kill starts that workflow once", async () => {
    // the threshold is never reached: only the workflow start has the run recorded first
    const k = await killedMidHandler({ customerId: "cus_started", name: "Started", startReview: "inv_1003" }, { SVC_RECORD_RUNNING_AFTER_MS: "600000" }, async (api, child) => {
      const executionId = await hangingExecution(child);
      const [recorded] = (await api("/api/webhook-runs?connectorId=probe")).data;
      expect(recorded).toMatchObject({ status: "running", executionId });
      expect((await api(`/api/workflow-runs/${executionId}-wf-1`)).runId).toBe(`${executionId}-wf-1`);
      return recorded;
    });
    const executionId = k.seen.executionId;
    try {
      expect((await k.retry()).status).toBe(202);
      const [run] = (await k.api("/api/webhook-runs?connectorId=probe")).data;
      expect(run).toMatchObject({ id: k.seen.id, status: "completed", executionId });
      expect(run.attempts.map((a: any) => a.status)).toEqual(["failed", "completed"]);
      const queued = (await k.api("/api/events?type=workflow.run.queued&limit=1000")).events.filter((e: any) => e.payload.runId.startsWith(executionId));
      expect(queued.map((e: any) => e.payload.runId)).toEqual([`${executionId}-wf-1`]);
    } finally {
      await k.stop();
    }
  });
});
