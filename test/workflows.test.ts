/** Workflow runs on the real Temporal dev server (spec 4.1, 4.3). */
import { describe, expect, it } from "vitest";
import { Database } from "../core/store/db";
import { readExecution } from "../core/temporal/execution";
import { client, eventually, invoiceSubject, sandboxSuite, allEvents } from "./helpers";

const suite = sandboxSuite();

const dev = client(() => suite.app);

describe("workflow runs on Temporal", () => {
  it("queues a run, reports its state until it finishes, and records its events", async () => {
    const start = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001", waitMs: 300 } });
    expect(start.status).toBe(200);
    const { runId } = start.body;
    expect(runId).toMatch(/^run_/);
    const first = await dev.get(`/api/workflow-runs/${runId}`);
    expect(["queued", "running", "completed"]).toContain(first.body.status);
    const done = await eventually(async () => {
      const res = await dev.get(`/api/workflow-runs/${runId}`);
      return res.body.status === "completed" ? res.body : undefined;
    });
    expect(done).toMatchObject({ runId, workflowId: "invoice-review", input: { invoiceId: "inv_1001", waitMs: 300 }, result: { invoiceId: "inv_1001", reviewStatus: "reviewed", amount: 1200 }, links: { temporalWorkflowId: runId } });
    expect(done.nodes.map((n: any) => [n.name, n.status])).toEqual([["read invoice", "completed"], ["write review status", "completed"]]);
    expect((await dev.get("/api/objects/invoice/inv_1001")).body.properties.reviewStatus).toBe("reviewed");
    const events = (await allEvents(dev)).filter((e) => e.correlationId === runId);
    expect(events.map((e) => e.type)).toEqual(["workflow.run.queued", "workflow.run.started", "workflow.run.node.started", "workflow.run.node.finished", "workflow.run.node.started", "object.updated", "workflow.run.node.finished", "workflow.run.finished"]);
    const write = events.find((e) => e.type === "object.updated");
    expect(write.origin).toMatchObject({ kind: "runtime", workflowId: "invoice-review", runId });
    expect(write.actor).toBeUndefined();
    const described = await suite.app.temporal.client.workflow.getHandle(runId).describe();
    expect(described.type).toBe("invoice-review");
  });

  it("reports a failed run with its error", async () => {
    const { body } = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_missing", waitMs: 0 } });
    const failed = await eventually(async () => {
      const res = await dev.get(`/api/workflow-runs/${body.runId}`);
      return res.body.status === "failed" ? res.body : undefined;
    });
    expect(failed.error.message).toMatch(/No invoice "inv_missing"/);
    // the workflow's own code threw it (sandbox/workflows.ts), not a step it awaited
    expect(failed.error.code).toBe("workflow_failed");
    // a closed run is not running: cancelling it is 409, and it stays as it ended
    const cancel = await dev.post(`/api/workflow-runs/${body.runId}/cancel`, {});
    expect(cancel.status).toBe(409);
    expect(cancel.body.error).toMatchObject({ code: "conflict", message: `Run ${body.runId} is not running (it is failed)` });
    expect((await dev.get(`/api/workflow-runs/${body.runId}`)).body.status).toBe("failed");
  });

  it("answers a runId sent again with the same run, queued once, and refuses a runId of another workflow's run", async () => {
    const body = { input: { invoiceId: "inv_1001", waitMs: 0 }, runId: "sent-twice" };
    const [a, b] = await Promise.all([dev.post("/api/workflows/invoice-review/runs", body), dev.post("/api/workflows/invoice-review/runs", body)]);
    expect([a.status, a.body, b.status, b.body]).toEqual([200, { runId: "sent-twice" }, 200, { runId: "sent-twice" }]);
    await eventually(async () => ((await dev.get("/api/workflow-runs/sent-twice")).body.status === "completed" ? true : undefined));
    expect((await dev.post("/api/workflows/invoice-review/runs", body)).body).toEqual({ runId: "sent-twice" });
    // the same runId with another input is another run, not a retry of this one: refused, nothing queued
    const other = await dev.post("/api/workflows/invoice-review/runs", { ...body, input: { invoiceId: "inv_1003", waitMs: 0 } });
    expect([other.status, other.body.error.code]).toEqual([409, "conflict"]);
    expect(other.body.error.message).toMatch(/another input/);
    const events = (await allEvents(dev)).filter((e) => e.correlationId === "sent-twice");
    expect(events.filter((e) => e.type === "workflow.run.queued")).toHaveLength(1);
    expect(events.filter((e) => e.type === "workflow.run.started")).toHaveLength(1);
    // keys are one namespace: a queued event appended earlier with the key a start would use keeps it
    const appended = await dev.post("/api/events", { events: [{ type: "workflow.run.queued", payload: { workflowId: "invoice-review", runId: "pre-keyed" }, idempotencyKey: "pre-keyed:queued" }] });
    expect(appended.status).toBe(200);
    expect((await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001", waitMs: 0 }, runId: "pre-keyed" })).status).toBe(200);
    await eventually(async () => ((await dev.get("/api/workflow-runs/pre-keyed")).body.status === "completed" ? true : undefined));
    expect((await allEvents(dev)).filter((e) => e.idempotencyKey === "pre-keyed:queued")).toHaveLength(1);
    // a run recorded for a workflow the project no longer declares (an older version's) keeps its id
    const db = suite.app.container.resolve(Database);
    await db.transaction((tx) => tx.run("INSERT INTO workflow_runs (run_id, workflow_id, input, requested_at, start_status) VALUES ('older-run', 'retired-workflow', '{}', ?, 'failed')", [new Date().toISOString()]));
    const taken = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1002" }, runId: "older-run" });
    expect([taken.status, taken.body.error?.code, taken.body.error?.message]).toEqual([409, "conflict", "runId older-run belongs to a run of retired-workflow"]);
    expect(await db.all("SELECT workflow_id, start_status FROM workflow_runs WHERE run_id = 'older-run'")).toEqual([{ workflow_id: "retired-workflow", start_status: "failed" }]);
    expect((await allEvents(dev)).filter((e) => e.correlationId === "older-run")).toEqual([]);
  });

  it("says why a run does not move when its workflow task keeps failing (Temporal retries it for ever; the run read running with no error)", async () => {
    const { client: temporal, taskQueue, namespace } = suite.app.temporal;
    // a workflow task no worker can complete: workflow code that throws a plain TypeError (here the
    // engine's own syncRun given no arguments; a run whose code changed under it fails the same way)
    const handle = await temporal.workflow.start("syncRun", { workflowId: `stuck-${Date.now()}`, taskQueue, args: [null] });
    try {
      const stuck = await eventually(async () => (await readExecution(handle, namespace)).workflowTaskFailure, 30_000, 250);
      expect(stuck.attempt).toBeGreaterThan(1);
      expect(stuck.message).toMatch(/Cannot read properties of null \(reading 'syncId'\)/);
      expect(stuck.cause).toEqual(expect.any(String));
    } finally {
      await handle.terminate("test done");
    }
  });

  it("validates input and permissions before queuing", async () => {
    expect((await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: 7 } })).status).toBe(400);
    expect((await dev.post("/api/workflows/nope/runs", { input: {} })).status).toBe(404);
    expect((await client(suite.app, suite.tokens.auditor).post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001" } })).status).toBe(403);
    expect((await dev.get("/api/workflow-runs/run_unknown")).status).toBe(404);
    // svc's own Temporal ids have a ':' (schedule firings svc:<id>-<time>, action effects
    // action-effect:<runId>): a client's runId cannot have one, so no run can take the id of a start
    // svc makes later (a squatted id made svc take the client's run for its own: the firing or effect never ran)
    for (const runId of ["svc:overdue-scan-2026-11-29T10:13:33Z", "action-effect:approve-1004", "a:b"]) {
      const squat = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001" }, runId });
      expect(squat.status, runId).toBe(400);
      expect(squat.body.error.message).toMatch(/runId.*ids with : are svc's own on Temporal/);
      expect((await dev.post("/api/syncs/customer-sync/runs", { input: {}, runId })).status, runId).toBe(400);
    }
    // an execution the API did not start for this run (a sync's, under the same id) cannot be adopted by
    // naming its id: the request is queued (it does not wait for Temporal), then the start is refused
    // for good and the run ends failed
    await dev.post("/api/syncs/customer-sync/runs", { input: {}, runId: "shared-run-id" });
    await eventually(async () => (await suite.app.temporal.client.workflow.getHandle("shared-run-id").describe().catch(() => undefined)) !== undefined);
    const hijack = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001" }, runId: "shared-run-id" });
    expect(hijack.status).toBe(200);
    const refused = await eventually(async () => {
      const res = await dev.get("/api/workflow-runs/shared-run-id");
      return res.body.status === "failed" ? res.body : undefined;
    });
    expect(refused.error).toMatchObject({ code: "start_refused", message: expect.stringMatching(/taken by another execution \(syncRun\)/), type: "conflict" });
    expect(refused.links).toEqual({ temporalWorkflowId: "shared-run-id" });
    expect((await dev.get("/api/workflow-runs/shared-run-id/history")).body.events).toEqual([]);
    const finished = (await allEvents(dev)).filter((e) => e.correlationId === "shared-run-id" && e.topic === "workflows");
    expect(finished.map((e) => [e.type, e.payload.status])).toEqual([["workflow.run.queued", undefined], ["workflow.run.finished", "failed"]]);
    expect(finished[1]!.payload.error).toEqual(refused.error);
    expect((await suite.app.temporal.client.workflow.getHandle("shared-run-id").describe()).type).toBe("syncRun");
  });
});
