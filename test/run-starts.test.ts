/**
 * Run starts (spec 3, 4.3; issue 15): workflow, sync and pipeline run requests answer once the run is
 * durably queued in svc's store; the starter starts it on Temporal afterwards, exactly once, also after a
 * kill -9 or a Temporal outage; a run cancelled before its start never starts.
 */
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkflowNotFoundError } from "@temporalio/client";
import { inject } from "vitest";
import { client, eventually, startApp, startFixtureProcess, tempDir, allEvents } from "./helpers";
import { freePort } from "./setup/global";
import { RunStarter } from "../core/runtime/run-starter";
import { Database } from "../core/store/db";
import { startRun } from "../core/temporal/start";
import type { App } from "../core/app";

type TestApp = Awaited<ReturnType<typeof startApp>>;

/** Whether Temporal knows an execution with this workflow id. */
const execution = (app: App, runId: string) =>
  app.temporal.client.workflow
    .getHandle(runId)
    .describe()
    .then(
      () => "exists",
      (err) => (err instanceof WorkflowNotFoundError ? "none" : `error: ${err}`),
    );

/** How many executions (open or closed) Temporal holds under this workflow id. */
async function executionsOf(app: App, runId: string): Promise<number> {
  let n = 0;
  for await (const _ of app.temporal.client.workflow.list({ query: `WorkflowId = '${runId}'` })) n++;
  return n;
}

const statusOf = async (c: ReturnType<typeof client>, path: string) => (await c.get(path)).body.status as string;

describe("runs answered once queued in the store, started by the starter", () => {
  let app: TestApp;
  let dev: ReturnType<typeof client>;
  let starter: RunStarter;
  beforeAll(async () => {
    app = await startApp({ env: { SVC_RUN_START_MAX_AGE_MS: "300" } });
    dev = client(app);
    starter = app.container.resolve(RunStarter);
  });
  afterAll(() => app?.close());

  it("answers while the starter is paused: the run reads queued, /api/status shows the pending start, and it completes once resumed", async () => {
    starter.pause();
    try {
      const start = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001", waitMs: 0 } });
      expect(start.status).toBe(200);
      const { runId } = start.body;
      const sync = await dev.post("/api/syncs/customer-sync/runs", { input: {} });
      expect(sync.status).toBe(200);
      const queued = await dev.get(`/api/workflow-runs/${runId}`);
      expect(queued.status).toBe(200);
      expect(queued.body).toMatchObject({ runId, workflowId: "invoice-review", status: "queued", input: { invoiceId: "inv_1001", waitMs: 0 }, nodes: [], interventions: [], links: { temporalWorkflowId: runId } });
      expect(queued.body.links.temporalRunId).toBeUndefined();
      expect((await dev.get(`/api/sync-runs/${sync.body.runId}`)).body).toMatchObject({ status: "queued", syncId: "customer-sync" });
      expect(await execution(app, runId)).toBe("none");
      // the queued event is committed with the row, before any start
      expect((await allEvents(dev)).filter((e) => e.correlationId === runId).map((e) => e.type)).toEqual(["workflow.run.queued"]);
      expect((await dev.get(`/api/workflow-runs/${runId}/history`)).body.events).toEqual([]);
      // the search lists it (Temporal does not hold it yet) as running, and only under its own filters
      const listed = (await dev.get("/api/workflow-runs?workflowId=invoice-review&status=running")).body.data;
      expect(listed.find((r: { runId: string }) => r.runId === runId)).toMatchObject({ workflowId: "invoice-review", status: "running", startedAt: queued.body.queuedAt });
      // the run's own words for not ended filter the same (they were refused with 400)
      for (const status of ["queued", "waiting"]) expect((await dev.get(`/api/workflow-runs?workflowId=invoice-review&status=${status}`)).body.data.map((r: { runId: string }) => r.runId), status).toContain(runId);
      expect((await dev.get("/api/workflow-runs?status=completed")).body.data.map((r: { runId: string }) => r.runId)).not.toContain(runId);
      expect((await dev.get(`/api/workflow-runs?startedAfter=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.data).toEqual([]);

      const status = await dev.get("/api/status");
      expect(status.body.parts.runStarts).toMatchObject({ pending: 2, inFlight: 0, maxAgeMs: 300, paused: true });
      expect(status.body.parts.runStarts.oldestPendingAgeMs).toBeGreaterThanOrEqual(0);
      await new Promise((r) => setTimeout(r, 400));
      const late = await dev.get("/api/status");
      expect(late.body.status).toBe("degraded");
      expect(late.body.parts.runStarts.status).toBe("unhealthy");
      expect(late.body.parts.runStarts.problem).toMatch(/waited/);
      starter.resume();
      const done = await eventually(async () => ((await dev.get(`/api/workflow-runs/${runId}`)).body.status === "completed" ? true : undefined));
      expect(done).toBe(true);
      await eventually(async () => ((await statusOf(dev, `/api/sync-runs/${sync.body.runId}`)) === "completed" ? true : undefined));
      expect((await allEvents(dev)).filter((e) => e.correlationId === runId).map((e) => e.type).filter((t) => t.startsWith("workflow.run.") && !t.includes("node"))).toEqual(["workflow.run.queued", "workflow.run.started", "workflow.run.finished"]);
      const after = await dev.get("/api/status");
      expect(after.body.parts.runStarts).toMatchObject({ status: "ok", pending: 0 });
      expect(after.body.parts.runStarts.oldestPendingAgeMs).toBeUndefined();
      expect(await executionsOf(app, runId)).toBe(1);
    } finally {
      starter.resume();
    }
  });

  it("cancels a queued run without ever starting it; its interventions answer as for a run with none", async () => {
    starter.pause();
    let runId: string;
    try {
      runId = (await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1002" } })).body.runId;
      expect(await statusOf(dev, `/api/workflow-runs/${runId}`)).toBe("queued");
      expect((await dev.get(`/api/workflow-runs/${runId}/interventions`)).body).toEqual({ data: [] });
      const submit = await dev.post(`/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: true } });
      expect(submit.status).toBe(404);
      const cancel = await dev.post(`/api/workflow-runs/${runId}/cancel`, {});
      expect(cancel.status).toBe(200);
      expect(cancel.body).toEqual({ runId, cancelRequested: true });
      const cancelled = (await dev.get(`/api/workflow-runs/${runId}`)).body;
      expect(cancelled).toMatchObject({ status: "cancelled", finishedAt: expect.any(String) });
      const listed = (await dev.get("/api/workflow-runs?status=cancelled")).body.data;
      expect(listed.find((r: { runId: string }) => r.runId === runId)).toMatchObject({ status: "cancelled", finishedAt: cancelled.finishedAt });
      // a second cancel: the run is not running
      expect((await dev.post(`/api/workflow-runs/${runId}/cancel`, {})).status).toBe(409);
    } finally {
      starter.resume();
    }
    // a recovery pass after resuming finds nothing pending: the run is never started
    expect(await starter.recover()).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(await execution(app, runId)).toBe("none");
    const events = (await allEvents(dev)).filter((e) => e.correlationId === runId);
    expect(events.map((e) => [e.type, e.payload.status])).toEqual([["workflow.run.queued", undefined], ["workflow.run.finished", "cancelled"]]);
  });

  it("a start whose mark was lost (started on Temporal, still pending in the store) counts as started: one execution", async () => {
    starter.pause();
    let runId: string;
    try {
      runId = (await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001", waitMs: 0 } })).body.runId;
      // what the starter does before its mark commits; a crash then leaves the row pending
      const { input } = (await dev.get(`/api/workflow-runs/${runId}`)).body; // as validated, defaults filled in
      expect(await startRun(app.temporal.client, { workflowType: "invoice-review", workflowId: runId, taskQueue: app.temporal.taskQueue, args: [input] })).toEqual({ started: true });
    } finally {
      starter.resume();
    }
    expect(await starter.recover()).toBe(0); // poked at the request already: held, not picked twice
    await eventually(async () => ((await statusOf(dev, `/api/workflow-runs/${runId}`)) === "completed" ? true : undefined));
    expect(await executionsOf(app, runId)).toBe(1);
  });

  it("answers 503 shutting_down and queues nothing once shutdown began", async () => {
    const other = await startApp();
    const c = client(other);
    // an action in flight keeps the server answering while it shuts down
    const slow = c.post("/api/actions/diagnostics.sleep", { params: { ms: 1500 } });
    await new Promise((r) => setTimeout(r, 200));
    const closing = other.close();
    await new Promise((r) => setTimeout(r, 50));
    const wf = await c.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001" }, runId: "queued-at-shutdown" });
    const sync = await c.post("/api/syncs/customer-sync/runs", { input: {}, runId: "sync-at-shutdown" });
    expect((await slow).status).toBe(200);
    await closing;
    expect([wf.status, wf.body.error?.code]).toEqual([503, "shutting_down"]);
    expect([sync.status, sync.body.error?.code]).toEqual([503, "shutting_down"]);
    const db = await Database.open(path.join(other.dataDir, "svc.db"));
    try {
      expect(await db.all("SELECT run_id FROM workflow_runs")).toEqual([]);
      expect(await db.all("SELECT run_id FROM connector_runs")).toEqual([]);
    } finally {
      await db.close();
    }
  });
});

describe("a run answered as queued survives a kill -9 before its start", () => {
  it("is started exactly once by the restarted process and completes", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const c = client(() => ({ url: `http://127.0.0.1:${port}` }) as App);
    // this process answers runs but never starts them: the kill lands between the answer and the start
    let child = await startFixtureProcess("run-start-server.ts", dataDir, port, { SVC_TEST_PAUSE_RUN_STARTER: "1" });
    let runId: string;
    let syncRunId: string;
    try {
      const res = await c.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001", waitMs: 0 } });
      expect(res.status).toBe(200);
      runId = res.body.runId;
      syncRunId = (await c.post("/api/syncs/customer-sync/runs", { input: {} })).body.runId;
      expect(await statusOf(c, `/api/workflow-runs/${runId}`)).toBe("queued");
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
    child = await startFixtureProcess("run-start-server.ts", dataDir, port);
    try {
      await eventually(async () => ((await statusOf(c, `/api/workflow-runs/${runId}`)) === "completed" ? true : undefined), 30_000);
      await eventually(async () => ((await statusOf(c, `/api/sync-runs/${syncRunId}`)) === "completed" ? true : undefined), 30_000);
      const viewer = await startApp({ taskQueue: `run-start-server.ts-${port}` });
      try {
        expect(await executionsOf(viewer, runId)).toBe(1);
        expect(await executionsOf(viewer, syncRunId)).toBe(1);
      } finally {
        await viewer.close();
      }
      const types = (await allEvents(c)).filter((e) => e.correlationId === runId).map((e) => e.type);
      expect(types.filter((t) => t === "workflow.run.started")).toHaveLength(1);
      expect(types[0]).toBe("workflow.run.queued");
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 120_000);
});

/** A TCP proxy in front of the test run's Temporal server that can be taken down and brought back on the same port. */
async function temporalProxy() {
  const [host, port] = (inject("temporalAddress") as string).split(":");
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const listenPort = await freePort();
  const up = () =>
    new Promise<void>((resolve, reject) => {
      server = net.createServer((socket) => {
        const upstream = net.connect(Number(port), host);
        for (const s of [socket, upstream]) {
          sockets.add(s);
          s.on("close", () => sockets.delete(s));
          s.on("error", () => undefined);
        }
        socket.pipe(upstream).pipe(socket);
      });
      server.once("error", reject);
      server.listen(listenPort, "127.0.0.1", () => resolve());
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      sockets.clear();
      server ? server.close(() => resolve()) : resolve();
      server = undefined;
    });
  await up();
  return { address: `127.0.0.1:${listenPort}`, up, down };
}

describe("a Temporal outage", () => {
  it("does not refuse run requests: runs stay queued, /api/status shows them, and they start once Temporal is back", async () => {
    const proxy = await temporalProxy();
    const app = await startApp({ env: { TEMPORAL_ADDRESS: proxy.address, SVC_RUN_START_MAX_AGE_MS: "500" } });
    const dev = client(app);
    try {
      await proxy.down();
      const started = Date.now();
      const res = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1005", waitMs: 0 } });
      expect(res.status).toBe(200);
      const { runId } = res.body;
      expect(await statusOf(dev, `/api/workflow-runs/${runId}`)).toBe("queued");
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - started))));
      const status = (await dev.get("/api/status")).body;
      expect(status.status).toBe("degraded");
      expect(status.parts.temporal.status).toBe("unhealthy");
      expect(status.parts.runStarts).toMatchObject({ status: "unhealthy", pending: 1 });
      expect(await statusOf(dev, `/api/workflow-runs/${runId}`)).toBe("queued");
      await proxy.up();
      await eventually(async () => ((await statusOf(dev, `/api/workflow-runs/${runId}`)) === "completed" ? true : undefined), 60_000, 250);
      expect((await dev.get("/api/status")).body.parts.runStarts).toMatchObject({ status: "ok", pending: 0 });
      expect(await executionsOf(app, runId)).toBe(1);
    } finally {
      await proxy.up().catch(() => undefined);
      await app.close();
      await proxy.down();
    }
  }, 120_000);
});
