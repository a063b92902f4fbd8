import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Worker } from "@temporalio/worker";
import path from "node:path";
import { client, eventually, startApp, tempDir, tokenFor } from "./helpers";
import { startDevServer } from "../core/temporal/dev-server";
import { bundleWorkflows } from "../core/temporal/bundle";
import { WORKFLOW_ENGINE } from "../workflows/modules";
import { freePort } from "./setup/global";
import type { App } from "../core/app";
import { OntologyStore } from "../core/ontology/store";
import { EventLog } from "../core/events/log";

const ROOT = path.resolve(import.meta.dirname, "..");

let app: App;
let dev: ReturnType<typeof client>;
let alice: ReturnType<typeof client>;
let auditor: ReturnType<typeof client>;
const finishedRuns: string[] = [];

beforeAll(async () => {
  app = await startApp();
  dev = client(app);
  alice = client(app, await tokenFor(app, "alice"));
  auditor = client(app, await tokenFor(app, "auditor"));
});
afterAll(() => app?.close());

async function startReview(c: ReturnType<typeof client>, input: Record<string, unknown>): Promise<string> {
  const res = await c.post("/api/workflows/invoice-review/runs", { input: { waitMs: 0, ...input } });
  expect(res.status).toBe(200);
  return res.body.runId;
}

async function until(c: ReturnType<typeof client>, runId: string, status: string) {
  return eventually(async () => {
    const r = await c.get(`/api/workflow-runs/${runId}`);
    return r.body.status === status ? r.body : undefined;
  }, 20_000);
}

async function runEvents(runId: string) {
  return ((await dev.get("/api/events?topic=workflows&limit=1000")).body.events as any[]).filter((e) => e.payload.runId === runId);
}

describe("interventions", () => {
  it("waits for an approver, refuses invalid answers without a trace, and continues with the approval", async () => {
    const runId = await startReview(alice, { invoiceId: "inv_1002", approvalTimeoutMs: 120_000 });
    const waiting = await until(alice, runId, "waiting");
    expect(waiting.interventions).toHaveLength(1);
    const [approve] = waiting.interventions;
    expect(approve).toMatchObject({ name: "approve", status: "open", assignees: { permission: "approve:invoice" }, prompt: expect.stringMatching(/INV-1002/), expiresAt: expect.any(String) });
    expect(approve.answerSchema).toMatchObject({ type: "object", properties: { approved: { type: "boolean" } } });
    expect((await runEvents(runId)).map((e) => e.type)).toEqual(expect.arrayContaining(["workflow.intervention.requested", "workflow.run.waiting", "workflow.run.node.waiting"]));

    // a second run waiting on its approval: the open interventions a page at a time
    const otherRun = await startReview(alice, { invoiceId: "inv_1002", approvalTimeoutMs: 120_000 });
    await until(alice, otherRun, "waiting");
    const open = await alice.get("/api/interventions?pageSize=200");
    expect(open.body.data.map((i: any) => i.runId)).toEqual(expect.arrayContaining([runId, otherRun]));
    expect(open.body).not.toHaveProperty("nextPageToken");
    const pagedOpen: any[] = [];
    let next: string | undefined;
    do {
      const page = await alice.get(`/api/interventions?pageSize=1${next ? `&nextPageToken=${next}` : ""}`);
      expect(page.body.data.length).toBeLessThanOrEqual(1);
      pagedOpen.push(...page.body.data);
      next = page.body.nextPageToken;
    } while (next);
    expect(pagedOpen).toEqual(open.body.data);
    expect((await auditor.get("/api/interventions")).body.data).toEqual([]);
    expect((await auditor.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: true } })).status).toBe(403);

    const invalid = await alice.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: "yes" } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatchObject({ code: "invalid_request", details: { issues: [{ path: "answer.approved", message: expect.any(String) }] } });
    expect((await alice.get(`/api/workflow-runs/${runId}/interventions`)).body.data[0].status).toBe("open");
    const history = (await alice.get(`/api/workflow-runs/${runId}/history`)).body.events;
    expect(history.some((e: any) => e.eventType.startsWith("WORKFLOW_EXECUTION_UPDATE"))).toBe(false);

    const submitted = await alice.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: true, note: "checked with sales" } });
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ status: "submitted", by: { type: "user", id: "alice" } });
    // the answer is the record as kept: a 200 means decided and recorded, so it carries the answer and when
    const kept = (await alice.get(`/api/workflow-runs/${runId}/interventions`)).body.data.find((i: { id: string }) => i.id === submitted.body.id);
    expect(submitted.body).toEqual(kept);
    expect(submitted.body).toMatchObject({ answer: { approved: true, note: "checked with sales" }, resolvedAt: expect.any(String) });
    const done = await until(alice, runId, "completed");
    expect(done.result).toMatchObject({ reviewStatus: "approved", approvedBy: "alice", actionRunId: expect.stringContaining(`${runId}:action:`) });
    expect(done.interventions[0]).toMatchObject({ status: "submitted", answer: { approved: true, note: "checked with sales" }, by: { id: "alice" } });
    expect(done.nodes.map((n: any) => n.name)).toEqual(["read invoice", "approve", "approve invoice", "write review status"]);
    const invoice = (await dev.get("/api/objects/invoice/inv_1002")).body.properties;
    expect(invoice).toMatchObject({ status: "approved", approvalNote: "checked with sales", reviewStatus: "approved" });
    expect((await alice.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: true } })).status).toBe(409);

    const events = await runEvents(runId);
    expect(events.filter((e) => e.type === "workflow.intervention.submitted")).toHaveLength(1);
    expect(events.find((e) => e.type === "workflow.intervention.submitted").payload).toMatchObject({ intervention: "approve", by: { id: "alice" }, answer: { approved: true } });
    const names = ((await alice.get(`/api/workflow-runs/${runId}/history`)).body.events as any[]).map((e) => e.name).filter(Boolean);
    expect(names).toEqual(expect.arrayContaining(["invoice-review", "readObject", "recordBatch", "submitIntervention", "runAction"]));
    const summaries = ((await alice.get(`/api/workflow-runs/${runId}/history`)).body.events as any[]).map((e) => e.summary).filter(Boolean);
    expect(summaries).toEqual(expect.arrayContaining(["read invoice: read invoice inv_1002", "workflow.run.node.finished read invoice, workflow.run.node.started approve, intervention approve requested", "approve invoice: run action invoice.approve", "write review status: write 1 change"]));
    // a zero wait starts no timer (the SDK's sleep(0) would be a 1 ms timer, fired about a second later)
    expect(summaries).not.toContain("wait 0 ms");

    // the history a page at a time: the same events, in order, none twice; each token bound to its run
    const whole = (await alice.get(`/api/workflow-runs/${runId}/history`)).body;
    expect(whole.nextPageToken).toBeUndefined();
    expect(whole.events.length).toBeGreaterThan(7);
    const paged: any[] = [];
    const tokens: string[] = [];
    let token: string | undefined;
    do {
      const page = await alice.get(`/api/workflow-runs/${runId}/history?pageSize=3${token ? `&nextPageToken=${encodeURIComponent(token)}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.events.length).toBeLessThanOrEqual(3);
      paged.push(...page.body.events);
      token = page.body.nextPageToken;
      if (token) tokens.push(token);
    } while (token);
    expect(paged).toEqual(whole.events);
    expect(tokens.length).toBeGreaterThanOrEqual(Math.ceil(whole.events.length / 3) - 1);
    expect((await alice.get(`/api/workflow-runs/${runId}/history?pageSize=3&nextPageToken=${encodeURIComponent(tokens[0]!)}`)).body.events).toEqual(whole.events.slice(3, 6));
    expect((await alice.post(`/api/workflow-runs/${otherRun}/cancel`, {})).status).toBe(200);
    const other = await alice.get(`/api/workflow-runs/${otherRun}/history?nextPageToken=${encodeURIComponent(tokens[0]!)}`);
    expect(other).toMatchObject({ status: 400, body: { error: { code: "invalid_request", message: expect.stringContaining("another run's history") } } });
    expect((await alice.get(`/api/workflow-runs/${runId}/history?pageSize=1001`)).status).toBe(400);
    // a token edited inside (Temporal's part made garbage) is Temporal's to refuse: a 400 naming it, not a 500
    const edited = JSON.parse(Buffer.from(tokens[0]!, "base64url").toString());
    edited.position[0] = Buffer.from("not a token of Temporal's").toString("base64");
    const refused = await alice.get(`/api/workflow-runs/${runId}/history?nextPageToken=${Buffer.from(JSON.stringify(edited)).toString("base64url")}`);
    expect(refused).toMatchObject({ status: 400, body: { error: { code: "invalid_request", message: expect.stringContaining("Temporal refused this nextPageToken") } } });
    finishedRuns.push(runId);
  });

  it("records a rejection as its own outcome", async () => {
    const runId = await startReview(dev, { invoiceId: "inv_1004" });
    await until(dev, runId, "waiting");
    expect((await dev.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: false } })).status).toBe(200);
    expect((await until(dev, runId, "completed")).result.reviewStatus).toBe("rejected");
    expect((await dev.get("/api/objects/invoice/inv_1004")).body.properties).toMatchObject({ status: "open", reviewStatus: "rejected" });
    finishedRuns.push(runId);
  });

  it("expires at its deadline, by the workflow's own timer", async () => {
    const runId = await startReview(dev, { invoiceId: "inv_1006", approvalThreshold: 100, approvalTimeoutMs: 1000 });
    const waiting = await until(dev, runId, "waiting");
    const done = await until(dev, runId, "completed");
    expect(done.result.reviewStatus).toBe("expired");
    const [intervention] = done.interventions;
    expect(intervention.status).toBe("expired");
    const late = Date.parse(intervention.resolvedAt) - Date.parse(waiting.interventions[0].expiresAt);
    expect(late).toBeLessThan(1000);
    expect((await runEvents(runId)).filter((e) => e.type === "workflow.intervention.expired")).toHaveLength(1);
    finishedRuns.push(runId);
  });

  it("can be cancelled by an authorised caller, and ends cancelled when the run is cancelled", async () => {
    const first = await startReview(dev, { invoiceId: "inv_1003", approvalThreshold: 100 });
    await until(dev, first, "waiting");
    expect((await auditor.post(`/api/workflow-runs/${first}/interventions/approve/cancel`, {})).status).toBe(403);
    expect((await dev.post(`/api/workflow-runs/${first}/interventions/approve/cancel`, { reason: "duplicate invoice" })).body).toMatchObject({ status: "cancelled", reason: "duplicate invoice" });
    expect((await until(dev, first, "completed")).result.reviewStatus).toBe("cancelled");
    finishedRuns.push(first);

    const second = await startReview(dev, { invoiceId: "inv_1003", approvalThreshold: 100 });
    await until(dev, second, "waiting");
    expect((await dev.post(`/api/workflow-runs/${second}/cancel`, {})).status).toBe(200);
    const cancelled = await until(dev, second, "cancelled");
    expect(cancelled.interventions[0]).toMatchObject({ status: "cancelled", reason: "the run was cancelled" });
    expect((await runEvents(second)).map((e) => e.type)).toEqual(expect.arrayContaining(["workflow.intervention.cancelled", "workflow.run.finished"]));
    expect((await dev.post(`/api/workflow-runs/${second}/interventions/approve/submit`, { answer: { approved: true } })).status).toBe(409);
  });

  /**
   * A submission and a run cancel racing end one way: the intervention's outcome, the run's state, its
   * `workflow.run.finished` and the HTTP answers agree, and a 2xx is never refused later nor a 503 given
   * for an answer that was applied.
   */
  async function expectOneOutcome(runId: string, submitted: { status: number; body: any }, cancelled: { status: number }) {
    expect([200, 409]).toContain(submitted.status);
    expect([200, 409]).toContain(cancelled.status);
    const state = await eventually(async () => {
      const r = (await dev.get(`/api/workflow-runs/${runId}`)).body;
      return ["completed", "cancelled"].includes(r.status) ? r : undefined;
    });
    const events = await eventually(async () => {
      const all = await runEvents(runId);
      return all.some((e) => e.type === "workflow.run.finished") ? all : undefined;
    });
    const finished = events.filter((e) => e.type === "workflow.run.finished");
    expect(finished.map((e) => e.payload.status)).toEqual([state.status]);
    const ends = events.filter((e) => /^workflow\.intervention\.(submitted|cancelled|expired)$/.test(e.type)).map((e) => e.type.split(".")[2]);
    expect(ends).toHaveLength(1);
    expect(state.interventions.map((i: any) => i.status)).toEqual(ends);
    expect(ends[0]).toBe(submitted.status === 200 ? "submitted" : "cancelled");
    if (state.status === "completed") expect(state.nodes.every((n: any) => n.status === "completed")).toBe(true);
    const nodeEnds = events.filter((e) => e.type === "workflow.run.node.finished").map((e) => `${e.payload.node}:${e.payload.status}`);
    expect(nodeEnds).toEqual(state.nodes.map((n: any) => `${n.name}:${n.status}`));
    const review = (await dev.get("/api/objects/invoice/inv_1006")).body.properties.reviewStatus;
    if (nodeEnds.includes("record rejected:completed")) expect(review).toBe("rejected");
    return { state, ends };
  }

  it("a submission and a run cancel sent together end one way, and the answers say which", async () => {
    for (let i = 0; i < 3; i++) {
      const runId = await startReview(dev, { invoiceId: "inv_1006", approvalThreshold: 100 });
      await until(dev, runId, "waiting");
      const submit = dev.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: false } });
      const cancel = await dev.post(`/api/workflow-runs/${runId}/cancel`, {});
      await expectOneOutcome(runId, await submit, cancel);
    }
  });

  it("a run cancel arriving while the submission's next node works does not undo the submission", async () => {
    const runId = await startReview(dev, { invoiceId: "inv_1006", approvalThreshold: 100 });
    await until(dev, runId, "waiting");
    // the cancel reaches Temporal while the worker is inside the workflow task that writes the rejection
    const store = app.container.resolve(OntologyStore);
    const commit = store.commit.bind(store);
    let cancel: Promise<{ status: number }> | undefined;
    store.commit = (async (changes: any, ctx: any) => {
      if (String(ctx?.idempotencyKey).startsWith(`${runId}:write:`) && !cancel) await (cancel = dev.post(`/api/workflow-runs/${runId}/cancel`, {}));
      return commit(changes, ctx);
    }) as typeof store.commit;
    try {
      const submitted = await dev.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: false } });
      await eventually(async () => cancel !== undefined);
      const { ends } = await expectOneOutcome(runId, submitted, await cancel!);
      expect(ends).toEqual(["submitted"]);
    } finally {
      store.commit = commit;
    }
  });

  it("a submission arriving while a run cancel is being written is refused, and the run ends cancelled", async () => {
    const runId = await startReview(dev, { invoiceId: "inv_1006", approvalThreshold: 100 });
    await until(dev, runId, "waiting");
    // the submission reaches Temporal while the worker writes the intervention's cancellation (the run is
    // cancelling but has not closed yet)
    const events = app.container.resolve(EventLog);
    const envelope = events.envelope.bind(events);
    let submit: Promise<{ status: number; body: any }> | undefined;
    events.envelope = ((input: any) => {
      if (input.type === "workflow.intervention.cancelled" && input.payload?.runId === runId && !submit) submit = dev.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: false } });
      return envelope(input);
    }) as typeof events.envelope;
    try {
      const cancelled = await dev.post(`/api/workflow-runs/${runId}/cancel`, {});
      await eventually(async () => submit !== undefined);
      const submitted = await submit!;
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(409);
      // refused by the run (its intervention is closed) or, once the cancellation is written, by the store
      expect(submitted.body.error.message).toMatch(/^(Intervention "approve" is already cancelled|Run \S+ has no open intervention "approve")$/);
      const { state, ends } = await expectOneOutcome(runId, submitted, cancelled);
      expect(ends).toEqual(["cancelled"]);
      expect(state.status).toBe("cancelled");
    } finally {
      events.envelope = envelope;
    }
  });

  it("lists runs by workflow, status and start time", async () => {
    const since = new Date(Date.now() - 10 * 60_000).toISOString();
    const listed = await eventually(async () => {
      const res = await dev.get(`/api/workflow-runs?workflowId=invoice-review&status=completed&startedAfter=${since}`);
      return finishedRuns.every((id) => res.body.data.some((r: any) => r.runId === id)) ? res.body.data : undefined;
    });
    expect(listed.every((r: any) => r.status === "completed" && r.workflowId === "invoice-review")).toBe(true);
    // a run's times are the same in the list and in the run (the run said when its started event was recorded)
    for (const r of listed.filter((l: any) => finishedRuns.includes(l.runId))) {
      const run = (await dev.get(`/api/workflow-runs/${r.runId}`)).body;
      expect([run.startedAt, run.finishedAt]).toEqual([r.startedAt, r.finishedAt]);
    }
    expect((await auditor.get("/api/workflow-runs")).body.data).toEqual([]);
    // paged two at a time with nextPageToken: the same runs in the same order, none twice, none missed
    const filter = `workflowId=invoice-review&startedAfter=${since}`;
    const whole = (await dev.get(`/api/workflow-runs?${filter}&pageSize=500`)).body;
    expect(whole.nextPageToken).toBeUndefined();
    expect(whole.data.length).toBeGreaterThan(4);
    const paged: string[] = [];
    let token: string | undefined;
    do {
      const page = (await dev.get(`/api/workflow-runs?${filter}&pageSize=2${token ? `&nextPageToken=${token}` : ""}`)).body;
      expect(page.data.length).toBeLessThanOrEqual(2);
      paged.push(...page.data.map((r: any) => r.runId));
      token = page.nextPageToken;
    } while (token);
    expect(paged).toEqual(whole.data.map((r: any) => r.runId));
    const first = (await dev.get(`/api/workflow-runs?${filter}&pageSize=1`)).body.nextPageToken;
    expect((await dev.get(`/api/workflow-runs?${filter}&status=failed&nextPageToken=${first}`)).body.error.message).toMatch(/other filters/);
    expect((await dev.get(`/api/workflow-runs?${filter}&nextPageToken=x`)).status).toBe(400);
  });

  it("replays every recorded history of the sandbox workflow deterministically", async () => {
    const histories = await Promise.all(finishedRuns.map(async (workflowId) => ({ workflowId, history: await app.temporal.client.workflow.getHandle(workflowId).fetchHistory() })));
    expect(histories.length).toBeGreaterThanOrEqual(4);
    const results = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: { code: fs.readFileSync(inject("workflowBundle"), "utf8") } }, histories)) results.push(result);
    expect(results.map((r) => [r.workflowId, r.error?.message])).toEqual(histories.map((h) => [h.workflowId, undefined]));

    // the same histories under a designer's later code whose answer schema has a new required field:
    // an answer accepted before stands (parsing it again with the new schema threw on every replay,
    // and the runs that had an answer were stuck)
    const source = fs.readFileSync(path.join(ROOT, "sandbox/workflows.ts"), "utf8");
    const tightened = source.replace("const Decision = v.object({ approved: v.boolean(),", "const Decision = v.object({ costCenter: v.string(), approved: v.boolean(),");
    expect(tightened).not.toBe(source);
    const module = path.join(ROOT, "test", `.tightened-workflows-${process.pid}.tmp.ts`);
    fs.writeFileSync(module, tightened);
    try {
      const { code } = await bundleWorkflows({ engine: WORKFLOW_ENGINE.module, projectWorkflows: module });
      const answered = histories.filter((h) => h.history.events?.some((e) => e.workflowExecutionUpdateAcceptedEventAttributes));
      expect(answered.length).toBeGreaterThan(0);
      const replayed = [];
      for await (const result of Worker.runReplayHistories({ workflowBundle: { code } }, answered)) replayed.push(result);
      expect(replayed.map((r) => [r.workflowId, r.error?.message])).toEqual(answered.map((h) => [h.workflowId, undefined]));
    } finally {
      fs.rmSync(module, { force: true });
    }
  });
});

describe("durability", () => {
  it("a run waiting on an intervention survives its worker stopping; after restart it can be submitted and nothing is recorded twice", async () => {
    const dataDir = tempDir();
    const taskQueue = `durable-${Math.random().toString(36).slice(2)}`;
    const first = await startApp({ dataDir, taskQueue });
    const runId = await startReview(client(first), { invoiceId: "inv_1002", approvalTimeoutMs: 300_000 });
    await until(client(first), runId, "waiting");
    await first.close(); // the worker is gone while the run waits

    const second = await startApp({ dataDir, taskQueue });
    try {
      const c = client(second);
      expect((await c.get(`/api/workflow-runs/${runId}`)).body.status).toBe("waiting");
      expect((await c.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: true } })).status).toBe(200);
      const done = await until(c, runId, "completed");
      expect(done.result.reviewStatus).toBe("approved");
      const events = ((await c.get("/api/events?limit=1000")).body.events as any[]).filter((e) => e.correlationId === runId);
      const counts = events.reduce<Record<string, number>>((acc, e) => ({ ...acc, [e.type]: (acc[e.type] ?? 0) + 1 }), {});
      expect(counts).toMatchObject({ "workflow.run.started": 1, "workflow.intervention.requested": 1, "workflow.intervention.submitted": 1, "workflow.run.finished": 1 });
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    } finally {
      await second.close();
    }
  });

  it("an intervention expires by the run's own timer while no worker runs, and the run finishes when one returns", async () => {
    const dataDir = tempDir();
    const taskQueue = `expiry-${Math.random().toString(36).slice(2)}`;
    const first = await startApp({ dataDir, taskQueue });
    const runId = await startReview(client(first), { invoiceId: "inv_1002", approvalTimeoutMs: 1500 });
    const waiting = await until(client(first), runId, "waiting");
    await first.close();
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(waiting.interventions[0].expiresAt) - Date.now()) + 1000));

    const second = await startApp({ dataDir, taskQueue });
    try {
      const done = await until(client(second), runId, "completed");
      expect(done.result.reviewStatus).toBe("expired");
      expect(done.interventions[0].status).toBe("expired");
      const history = (await client(second).get(`/api/workflow-runs/${runId}/history`)).body.events as any[];
      const fired = history.find((e) => e.eventType === "TIMER_FIRED");
      expect(Date.parse(fired.eventTime) - Date.parse(waiting.interventions[0].expiresAt)).toBeLessThan(1000);
    } finally {
      await second.close();
    }
  });

  it("a run waiting on an intervention survives a restart of the Temporal dev server over its database", async () => {
    const dir = tempDir();
    const port = await freePort();
    const serverOptions = { cliPath: inject("temporalCli"), port, ui: false, dbFile: path.join(dir, "temporal.db"), namespace: "default", readyTimeoutMs: 90_000 };
    let server = await startDevServer(serverOptions);
    const app = await startApp({ dataDir: dir, env: { TEMPORAL_ADDRESS: server.address } });
    try {
      const c = client(app);
      const runId = await startReview(c, { invoiceId: "inv_1002", approvalTimeoutMs: 300_000 });
      await until(c, runId, "waiting");
      await server.stop();
      server = await startDevServer(serverOptions);
      const waiting = await eventually(async () => {
        const r = await c.get(`/api/workflow-runs/${runId}`);
        return r.status === 200 && r.body.status === "waiting" ? r.body : undefined;
      }, 30_000, 250);
      expect(waiting.interventions[0].status).toBe("open");
      const submit = await eventually(async () => {
        const r = await c.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: false } });
        return r.status === 200 ? r : undefined;
      }, 30_000, 500);
      expect(submit.body.status).toBe("submitted");
      const done = await until(c, runId, "completed");
      expect(done.result.reviewStatus).toBe("rejected");
      const events = ((await c.get("/api/events?limit=1000")).body.events as any[]).filter((e) => e.correlationId === runId);
      expect(events.filter((e) => e.type === "workflow.intervention.requested")).toHaveLength(1);
      expect(events.filter((e) => e.type === "workflow.run.started")).toHaveLength(1);
    } finally {
      await app.close();
      await server.stop();
    }
  }, 120_000);
});
