import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, eventually, startApp, tokenFor } from "./helpers";
import type { App } from "../core/app";

let app: App;
let dev: ReturnType<typeof client>;
beforeAll(async () => {
  app = await startApp();
  dev = client(app);
});
afterAll(() => app?.close());

const until = (path: string, status: string) =>
  eventually(async () => {
    const r = await dev.get(path);
    return r.body.status === status ? r.body : undefined;
  });

describe("syncs and pipelines (spec 4.3)", () => {
  it("runs a sync on Temporal: runId once queued, completion at its run endpoint, sync.run.* events, writes once", async () => {
    const start = await dev.post("/api/syncs/customer-sync/runs", { input: {} });
    expect(start.status).toBe(200);
    const { runId } = start.body;
    const done = await until(`/api/sync-runs/${runId}`, "completed");
    expect(done).toMatchObject({ runId, kind: "sync", syncId: "customer-sync", result: { synced: 3 }, startedAt: expect.any(String), finishedAt: expect.any(String) });
    expect((await dev.get("/api/objects/customer/cus_umbrella")).body.properties.name).toBe("Umbrella Ltd");
    const events = ((await dev.get("/api/events?topic=syncs")).body.events as any[]).filter((e) => e.payload.runId === runId);
    expect(events.map((e) => [e.type, e.payload.syncId])).toEqual([["sync.run.started", "customer-sync"], ["sync.run.finished", "customer-sync"]]);
    const writes = ((await dev.get("/api/events?topic=objects&limit=1000")).body.events as any[]).filter((e) => e.correlationId === runId);
    expect(writes.map((e) => e.payload.primaryId).sort()).toEqual(["cus_globex", "cus_umbrella"]);
    // the same runId again answers the same run
    expect((await dev.post("/api/syncs/customer-sync/runs", { input: {}, runId })).body).toEqual({ runId });
  });

  it("runs a pipeline step by step with step events, passing results on", async () => {
    const { runId } = (await dev.post("/api/pipelines/monthly-statement/runs", { input: { month: "2026-11" } })).body;
    const done = await until(`/api/pipeline-runs/${runId}`, "completed");
    expect(done.steps.map((s: any) => [s.name, s.status])).toEqual([["collect unpaid invoices", "completed"], ["update balances", "completed"]]);
    expect(done.result["update balances"]).toEqual({ customers: 3 });
    const acme = (await dev.get("/api/objects/customer/cus_acme")).body.properties;
    expect(acme).toMatchObject({ balance: 16200, unpaidInvoices: 2, statementMonth: "2026-11" });
    const types = ((await dev.get("/api/events?topic=pipelines")).body.events as any[]).filter((e) => e.payload.runId === runId).map((e) => e.type);
    expect(types).toEqual(["pipeline.run.started", "pipeline.run.step.started", "pipeline.run.step.finished", "pipeline.run.step.started", "pipeline.run.step.finished", "pipeline.run.finished"]);
  });

  it("says why a failed sync failed at its run endpoint, as its sync.run.finished says (not the activity wrapper's 'Activity task failed')", async () => {
    const { runId } = (await dev.post("/api/syncs/price-list-sync/runs", { input: { rows: [{ sku: "S-1", name: "s", unitPrice: "bad", currency: "USD" }] } })).body;
    const failed = await until(`/api/sync-runs/${runId}`, "failed");
    const finished = ((await dev.get("/api/events?topic=syncs&limit=1000")).body.events as any[]).find((e) => e.type === "sync.run.finished" && e.payload.runId === runId);
    expect(finished.payload.error).toEqual({ code: "workflow_failed", message: expect.stringMatching(/unitPrice/) });
    expect(failed.error.message).toBe(finished.payload.error.message);
    // the sync's handler (an activity) failed and the run did not handle it
    expect(failed.error.code).toBe("workflow_failed");
  });

  it("validates input and permissions before queuing", async () => {
    expect((await dev.post("/api/pipelines/monthly-statement/runs", { input: { month: "November" } })).status).toBe(400);
    expect((await dev.post("/api/syncs/nope/runs", {})).status).toBe(404);
    const alice = client(app, await tokenFor(app, "alice"));
    expect((await alice.post("/api/syncs/customer-sync/runs", {})).status).toBe(403);
    expect((await dev.get("/api/sync-runs/run_nope")).status).toBe(404);
  });
});
