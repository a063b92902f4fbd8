/**
 * How workflow code's failures and cancellations read: a result that is not JSON (Temporal's payloads
 * are) fails the run by name; an error the code throws fails it with that error's own stack; an
 * intervention nobody could answer fails it instead of waiting; cleanup in `ctx.nonCancellable` runs
 * when the run is cancelled.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import pino from "pino";
import { client, eventually, startApp, tempDir, uploadFile } from "./helpers";
import { temporalProto } from "../core/temporal/sdk";
import { Worker } from "@temporalio/worker";
import { bundleWorkflows } from "../core/temporal/bundle";
import { DownloadUrlCodec } from "../core/temporal/payload-codec";
import { openPayloadKey, rotatePayloadKey } from "../core/temporal/payload-keys";
import { readExecution } from "../core/temporal/execution";
import { TemporalHost } from "../core/temporal/host";
import { Database } from "../core/store/db";
import { Client, Connection } from "@temporalio/client";
import { WORKFLOW_ENGINE } from "../workflows/modules";
import { workflows as sandboxWorkflows } from "../sandbox/workflows";
import { defineProject } from "../core/sdk";
import { sandboxProject } from "../sandbox/project";
import { workflows } from "./fixtures/odd-workflows";

let app: Awaited<ReturnType<typeof startApp>>;
const oddApp = { project: defineProject({ ...sandboxProject, workflows, workflowsModule: path.join(import.meta.dirname, "fixtures/odd-workflows.ts") }), ownWorkflowBundle: true, env: { SVC_API_PUBLIC_ORIGIN: "https://files.example.com" } };
beforeAll(async () => {
  app = await startApp(oddApp);
}, 120_000);
afterAll(() => app?.close());

/** Starts `workflowId` and answers its run state once it failed. */
async function failedRun(workflowId: string) {
  return failedRunWith(workflowId, {});
}

/** Starts `workflowId` with `input` and answers its run state once it failed. */
async function failedRunWith(workflowId: string, input: unknown) {
  const dev = client(app);
  const { runId } = (await dev.post(`/api/workflows/${workflowId}/runs`, { input })).body;
  const failed = await eventually(async () => {
    const r = await dev.get(`/api/workflow-runs/${runId}`);
    return r.body.status === "failed" ? r.body : undefined;
  }, 60_000);
  return { runId, failed };
}

it("a workflow whose result JSON cannot carry fails with that reason, and the event log agrees (it stayed running, its finished event saying completed)", async () => {
  const { runId, failed } = await failedRun("odd-result");
  expect(failed.error?.message ?? JSON.stringify(failed)).toContain("The workflow's result cannot be written as JSON: Do not know how to serialize a BigInt");
  const events = ((await client(app).get("/api/events?topic=workflows&limit=1000")).body.events as any[]).filter((e) => e.payload.runId === runId);
  expect(events.find((e) => e.type === "workflow.run.finished")?.payload.status).toBe("failed");
}, 90_000);

it("an error the workflow's code throws fails the run with its name and its own stack: the designer's function, file and line, not the engine's", async () => {
  const { failed } = await failedRun("odd-throw");
  expect(failed.error).toMatchObject({ code: "workflow_failed", message: "totals do not add up", type: "TypeError" });
  const stack: string = failed.error.stack ?? "";
  expect(stack).toContain("checkTotals");
  expect(stack).toMatch(/odd-workflows\.ts:\d+/);
  // the engine's own wrapping is not where it says the error was thrown
  expect(stack.split("\n")[1]).not.toMatch(/designerFailure|failRun|workflows\/index\.ts/);
}, 90_000);

describe("an intervention nobody could answer", () => {
  it.each([
    ["names nobody", {}, /its assignees name nobody: give identities .* or a permission/],
    ["names an identity the project does not define", { identities: ["bbo"] }, /nobody could answer it \(no identity "bbo" in this project\); the project's identities are: .*alice/],
    ["names a permission no identity holds", { permission: "approve:everything" }, /no identity holds the permission "approve:everything"/],
    ["is not an assignees object", { identities: "alice" }, /its assignees must be \{ identities\?: string\[\], permission\?: string \}/],
  ])("%s: does not open, and fails the run saying why (it waited, silently, until it expired)", async (_, assignees, reason) => {
    const dev = client(app);
    const { runId } = (await dev.post("/api/workflows/odd-assignees/runs", { input: { assignees } })).body;
    const failed = await eventually(async () => {
      const r = await dev.get(`/api/workflow-runs/${runId}`);
      return r.body.status === "failed" ? r.body : r.body.status === "waiting" ? r.body : undefined;
    }, 60_000);
    expect(failed.status).toBe("failed");
    expect(failed.error.message).toMatch(new RegExp(`Intervention "confirm" of run ${runId} cannot open: `));
    expect(failed.error.message).toMatch(reason);
    expect(failed.error.type).toBe("InvalidIntervention");
    expect(failed.interventions).toEqual([]);
    const events = ((await dev.get("/api/events?topic=workflows&limit=1000")).body.events as any[]).filter((e) => e.payload.runId === runId);
    // what came before it was written; the intervention was not; the run's end says why
    expect(events.map((e) => e.type)).toEqual(["workflow.run.queued", "workflow.run.started", "workflow.run.node.started", "workflow.run.node.finished", "workflow.run.finished"]);
    expect(events.at(-1).payload).toMatchObject({ status: "failed", error: { code: "workflow_failed", message: failed.error.message } });
  }, 90_000);

  it("one an identity of the project could answer opens and waits", async () => {
    const dev = client(app);
    const { runId } = (await dev.post("/api/workflows/odd-assignees/runs", { input: { assignees: { identities: ["bbo", "alice"] } } })).body;
    const waiting = await eventually(async () => {
      const r = await dev.get(`/api/workflow-runs/${runId}`);
      return r.body.status === "waiting" || r.body.status === "failed" ? r.body : undefined;
    }, 60_000);
    expect(waiting).toMatchObject({ status: "waiting", interventions: [{ name: "confirm", status: "open", assignees: { identities: ["bbo", "alice"] } }] });
    expect((await dev.post(`/api/workflow-runs/${runId}/cancel`, {})).status).toBe(200);
  }, 90_000);
});

it("a run's cleanup in ctx.nonCancellable runs when the run is cancelled, and the run ends cancelled", async () => {
  const dev = client(app);
  const customerId = `cus_cleanup_${Date.now()}`;
  const { runId } = (await dev.post("/api/workflows/odd-cleanup/runs", { input: { customerId } })).body;
  await eventually(async () => ((await dev.get(`/api/workflow-runs/${runId}`)).body.status === "running" ? true : undefined), 60_000);
  expect((await dev.post(`/api/workflow-runs/${runId}/cancel`, {})).status).toBe(200);
  const ended = await eventually(async () => {
    const r = await dev.get(`/api/workflow-runs/${runId}`);
    return ["cancelled", "failed", "completed"].includes(r.body.status) ? r.body : undefined;
  }, 60_000);
  expect(ended.status, JSON.stringify(ended.error)).toBe("cancelled");
  const written = await dev.get(`/api/objects/customer/${customerId}`);
  expect(written.status).toBe(200);
  expect(written.body.properties).toMatchObject({ name: "cleaned up" });
}, 90_000);

it("at start, open runs of a workflow the project no longer defines are named in a warning, with what to do", async () => {
  const dataDir = tempDir();
  const taskQueue = `orphans-${Date.now()}`;
  const first = await startApp({ dataDir, taskQueue });
  let runId: string;
  try {
    runId = (await client(first).post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1002", waitMs: 0, approvalTimeoutMs: 600_000 } })).body.runId;
    await eventually(async () => ((await client(first).get(`/api/workflow-runs/${runId}`)).body.status === "waiting" ? true : undefined), 60_000);
  } finally {
    await first.close();
  }
  // the project renamed invoice-review: its run is still open on Temporal
  const { "invoice-review": _renamed, ...rest } = sandboxWorkflows;
  const lines: any[] = [];
  const second = await startApp({ dataDir, taskQueue, project: defineProject({ ...sandboxProject, workflows: rest }), logger: pino({ level: "warn" }, { write: (line: string) => void lines.push(JSON.parse(line)) }) });
  try {
    const warned = await eventually(async () => lines.find((l) => l.workflowId === "invoice-review"), 20_000);
    expect(warned).toMatchObject({ level: 40, open: 1, runIds: [runId!] });
    expect(warned.msg).toMatch(/1 run is open of workflow "invoice-review", which the project no longer defines: .*Declare the workflow again under that id .* or cancel them/);
  } finally {
    await second.close();
  }
  // the sandbox's own project has nothing to warn about: the test's run is cancelled by a third start
  const third = await startApp({ dataDir, taskQueue });
  try {
    expect((await client(third).post(`/api/workflow-runs/${runId!}/cancel`, {})).status).toBe(200);
  } finally {
    await third.close();
  }
}, 120_000);

/** Runs `odd-share` on `target` (a file shared by a download URL written into a new customer) until it ends; answers its run state. */
async function sharedRun(target: typeof app) {
  const dev = client(target);
  const file = await uploadFile(target, "quarterly numbers", "q3.txt", "text/plain");
  const customerId = `cus_share_${Date.now()}`;
  const { runId } = (await dev.post("/api/workflows/odd-share/runs", { input: { fileId: file.id, customerId } })).body;
  const done = await eventually(async () => {
    const r = await dev.get(`/api/workflow-runs/${runId}`);
    return ["completed", "failed"].includes(r.body.status) ? r.body : undefined;
  }, 60_000);
  expect(done.status, JSON.stringify(done.error)).toBe("completed");
  return { runId: runId as string, customerId, done };
}

/** The raw bytes of a run's history as Temporal stores it (no codec). */
async function rawHistory(target: typeof app, runId: string): Promise<Buffer> {
  const raw = await target.temporal.client.workflowService.getWorkflowExecutionHistory({ namespace: target.temporal.namespace, execution: { workflowId: runId } });
  return Buffer.from(temporalProto().temporal.api.history.v1.History.encode(raw.history!).finish());
}

it("a download URL made by workflow code keeps its secret out of the run's Temporal history, and the run still answers it", async () => {
  const dev = client(app);
  const { runId, customerId, done } = await sharedRun(app);
  // the run's result and the object it wrote carry the URL, which works
  const url: string = done.result.url;
  expect(url).toMatch(/^https:\/\/files\.example\.com\/api\/download\/[A-Za-z0-9_-]{43}$/);
  const secret = url.split("/").pop()!;
  expect((await dev.get(`/api/objects/customer/${customerId}`)).body.properties.name).toBe(`shared at ${url}`);
  const read = await fetch(`${app.url}/api/download/${secret}`);
  expect([read.status, await read.text()]).toEqual([200, "quarterly numbers"]);
  // the history as Temporal stores it (no codec): neither the secret nor the URL's path, and the
  // payloads that held it encrypted (at least the activity's result and the run's result)
  const bytes = await rawHistory(app, runId);
  expect(bytes.includes(secret)).toBe(false);
  expect(bytes.includes("/api/download/")).toBe(false);
  expect(bytes.toString("latin1").split("binary/encrypted").length - 1).toBeGreaterThanOrEqual(2);
  // and the rest of the history stays readable: the run's input, as it was sent
  expect(bytes.includes(customerId)).toBe(true);
  // the run's history read through the API decodes the timer's summary, which holds the URL
  const events = (await dev.get(`/api/workflow-runs/${runId}/history`)).body.events as Array<{ eventType: string; summary?: string }>;
  expect(events.find((e) => e.eventType === "TIMER_STARTED")?.summary).toBe(`mailed ${url}`);
  // the history replays with the codec (and only with it: its encrypted payloads are not JSON without it)
  const history = await app.temporal.client.workflow.getHandle(runId).fetchHistory();
  const bundle = await bundleWorkflows({ engine: WORKFLOW_ENGINE.module, projectWorkflows: path.join(import.meta.dirname, "fixtures/odd-workflows.ts") });
  const sinks = { handlerLog: { write: { fn: () => undefined, callDuringReplay: false } } };
  const replayed = async (payloadCodecs: DownloadUrlCodec[]) => (await Worker.runReplayHistory({ workflowBundle: bundle, sinks, dataConverter: { payloadCodecs } }, history, runId).then(() => "ok", (err: Error) => err.message));
  expect(await replayed([app.temporal.payloadCodec])).toBe("ok");
  expect(await replayed([])).not.toBe("ok");
  // read with another key (the data directory's key lost and made again): the run is still completed,
  // saying its result cannot be read and why (it was a 500)
  const connection = await Connection.connect({ address: inject("temporalAddress") });
  try {
    const otherKey = new Client({ connection, namespace: app.temporal.namespace, dataConverter: { payloadCodecs: [new DownloadUrlCodec(openPayloadKey(tempDir()))] } });
    const read = await readExecution(otherKey.workflow.getHandle(runId), app.temporal.namespace);
    expect(read).toMatchObject({ status: "completed", error: { code: "result_unreadable", message: expect.stringMatching(/^The run completed, but its result cannot be read: a Temporal payload is encrypted with key \w+, not this data directory's temporal-payload\.key \(\w+\) nor a retired key in its temporal-payload-keys\/, none$/) } });
    expect(read).not.toHaveProperty("result");
  } finally {
    await connection.close();
  }
}, 120_000);

it("after a key rotation, a restarted service reads the runs the retired key encrypted and encrypts new ones with the new key", async () => {
  const opts = { ...oddApp, dataDir: tempDir(), taskQueue: `rotation-${Date.now()}` };
  const first = await startApp(opts);
  let before: Awaited<ReturnType<typeof sharedRun>>;
  let oldKey: string;
  try {
    before = await sharedRun(first);
    oldKey = first.temporal.payloadCodec.keyId;
    expect((await rawHistory(first, before.runId)).includes(oldKey)).toBe(true);
  } finally {
    await first.close();
  }
  const { retired, current } = rotatePayloadKey(opts.dataDir);
  expect(retired).toBe(oldKey);
  const second = await startApp(opts);
  try {
    expect(second.temporal.payloadCodec).toMatchObject({ keyId: current, retiredKeyIds: [retired] });
    // the old run's result, encrypted with the retired key, reads as it did
    const read = (await client(second).get(`/api/workflow-runs/${before.runId}`)).body;
    expect(read, JSON.stringify(read.error)).toMatchObject({ status: "completed", result: { url: before.done.result.url } });
    expect(read).not.toHaveProperty("error");
    // a new run's payloads name the new key, not the retired one
    const after = await sharedRun(second);
    const bytes = await rawHistory(second, after.runId);
    expect([bytes.includes(current), bytes.includes(retired), bytes.includes("/api/download/")]).toEqual([true, false, false]);
  } finally {
    await second.close();
  }
}, 180_000);

it("a workflow that fails naming a download URL keeps its secret out of the history's failure (plain text there), and its error says which link it was", async () => {
  const dev = client(app);
  const file = await uploadFile(app, "quarterly numbers", "q3.txt", "text/plain");
  const { runId, failed } = await failedRunWith("odd-share-fails", { fileId: file.id });
  expect(failed.error.message).toBe("could not mail https://files.example.com/api/download/[secret] (nor https%3A%2F%2Ffiles.example.com%2Fapi%2Fdownload%2F[secret])");
  expect(failed.error.stack).not.toMatch(/download\/[A-Za-z0-9_-]{43}/);
  const raw = await app.temporal.client.workflowService.getWorkflowExecutionHistory({ namespace: app.temporal.namespace, execution: { workflowId: runId } });
  const text = Buffer.from(temporalProto().temporal.api.history.v1.History.encode(raw.history!).finish()).toString("latin1");
  expect(text).toContain("could not mail https://files.example.com/api/download/[secret]");
  expect(text).not.toMatch(/(\/api\/download\/|%2Fapi%2Fdownload%2F)[A-Za-z0-9_-]{43}/i);
  expect((await dev.get(`/api/workflow-runs/${runId}`)).status).toBe(200);
}, 90_000);

describe("a run Temporal no longer keeps (ended longer ago than the namespace's retention)", () => {
  it("reads 404, saying how long the namespace keeps a finished run and where that is set, or that Temporal lost a run requested within it; its history alike", async () => {
    // a run the store recorded as started that Temporal does not have: as one its retention deleted
    const runId = `run_forgotten_${Date.now()}`;
    await app.container.resolve(Database).transaction((tx) => tx.run("INSERT INTO workflow_runs (run_id, workflow_id, input, requested_at, start_status) VALUES (?, 'invoice-review', '{}', ?, 'started')", [runId, new Date(Date.now() - 40 * 86_400_000).toISOString()]));
    const dev = client(app);
    const kept = app.container.resolve(TemporalHost).retentionMs;
    // the test server's namespace: Temporal's default of 1 day, read at start and reported
    expect(kept).toBe(86_400_000);
    expect((await dev.get("/api/status")).body.parts.temporal).toMatchObject({ status: "ok", embedded: false, retentionMs: 86_400_000 });
    const expected = `Run "${runId}" is not known to Temporal (namespace default): a finished run is kept for 1 day (the namespace's retention on the cluster), and one that ended longer ago is no longer readable`;
    for (const path of [`/api/workflow-runs/${runId}`, `/api/workflow-runs/${runId}/history`]) {
      const r = await dev.get(path);
      expect([r.status, r.body.error.code, r.body.error.message], path).toEqual([404, "not_found", expected]);
    }
    // one requested within the retention was not deleted by it: Temporal lost its state
    const lost = `run_lost_${Date.now()}`;
    const at = new Date(Date.now() - 3_600_000).toISOString();
    await app.container.resolve(Database).transaction((tx) => tx.run("INSERT INTO workflow_runs (run_id, workflow_id, input, requested_at, start_status) VALUES (?, 'invoice-review', '{}', ?, 'started')", [lost, at]));
    for (const path of [`/api/workflow-runs/${lost}`, `/api/workflow-runs/${lost}/history`]) {
      const r = await dev.get(path);
      expect([r.status, r.body.error.message], path).toEqual([404, `Run "${lost}" is not known to Temporal (namespace default), though it was requested at ${at}, within the 1 day the namespace keeps a finished run: Temporal lost its state (its data was reset, or svc's data was restored without Temporal's)`]);
    }
  });
});
