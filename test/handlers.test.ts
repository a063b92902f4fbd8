/**
 * Connector code runs with a write buffer (core/runtime/handler.ts): what a handler writes or appends
 * is committed once per run, even when Temporal retries the activity after a commit whose completion
 * it never heard of; and run records are written before their executions are started.
 */
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkflowNotFoundError } from "@temporalio/client";
import { client, eventually, startApp } from "./helpers";
import { defineAction, defineConnector, definePipeline, defineProject, defineSchedule, defineSync } from "../core/sdk";
import { sandboxProject } from "../sandbox/project";
import { createActivities } from "../core/runtime/activities";
import { Database } from "../core/store/db";
import { EventLog } from "../core/events/log";
import { OntologyStore } from "../core/ontology/store";
import { ActionRunner } from "../core/runtime/actions";
import { ProjectRegistry } from "../core/project/registry";
import { HandlerRunner } from "../core/runtime/handler";
import type { App } from "../core/app";
import type { SvcActivities } from "../core/sdk/activities-types";
import type { SystemContext } from "../core/sdk/context";

/** Writes one customer and appends one non-ontology event, named after the caller. */
async function writeAndAppend(ctx: SystemContext, who: string) {
  ctx.objects.upsert("customer", `cus_${who}`, { name: who });
  await ctx.events.append([{ type: "rule.triggered", payload: { ruleId: `probe-${who}`, subject: { kind: "object", objectTypeId: "customer", primaryId: `cus_${who}` } } }]);
}

/** probe-flaky-sync's attempts so far, by run id. */
const flakyAttempts = new Map<string, number>();

const probe = defineConnector({
  id: "handler-probe",
  actions: {
    // writes once before it returns, then again from a timer after it returned (a floating call)
    "probe.late": defineAction({
      params: v.object({}),
      run: (ctx) => {
        ctx.objects.upsert("customer", "cus_late", { name: "before return" });
        const properties: Record<string, unknown> = { name: "changed after the call" };
        ctx.objects.upsert("customer", "cus_late_copy", properties);
        properties.name = 42;
        setImmediate(() => {
          ctx.objects.update("customer", "cus_late", { name: 42 });
          ctx.objects.upsert("no-such-type", "x", {});
          // an action's typed context has no events.append, the system context under it does (effects, syncs, …)
          void (ctx as unknown as SystemContext).events.append([{ type: "rule.triggered", payload: { ruleId: "late", subject: { kind: "object", objectTypeId: "customer", primaryId: "cus_late" } } }]);
        });
        return "returned";
      },
    }),
    // links an invoice to a customer written later (a provider's events out of order)
    "probe.link-ahead": defineAction({
      params: v.object({}),
      run: (ctx) => {
        ctx.links.upsert({ sourceTypeId: "invoice", sourceId: "inv_1001", linkId: "billedTo", targetTypeId: "customer", targetId: "cus_arrives_later" });
        ctx.telemetry.append({ objectTypeId: "customer", objectId: "cus_arrives_later", propertyId: "apiCalls", value: 1 });
        return "linked";
      },
    }),
    // throws what its params say: not always an Error
    "probe.throws": defineAction({
      params: v.object({ what: v.picklist(["object", "undefined", "fake-api-error", "json"]) }),
      run: (ctx) => {
        if (ctx.params.what === "object") throw { code: "not_found", message: "object message" };
        if (ctx.params.what === "undefined") throw undefined;
        if (ctx.params.what === "json") throw { reason: "no message here" };
        throw Object.assign(new Error("looks like one"), { name: "ApiError", code: "made_up" });
      },
    }),
    // a result or a payload JSON cannot carry
    "probe.bigint": defineAction({
      params: v.object({ where: v.picklist(["result", "payload"]) }),
      run: async (ctx) => {
        ctx.objects.upsert("customer", "cus_bigint", { name: "written with it" });
        if (ctx.params.where === "payload") {
          await (ctx as unknown as SystemContext).events.append([{ type: "rule.triggered", payload: { ruleId: "big", subject: { kind: "object", objectTypeId: "customer", primaryId: "cus_bigint" }, n: 1n } }]);
          return "ok";
        }
        return { n: 1n };
      },
    }),
    // never settles and ignores its ctx.signal
    "probe.forever": defineAction({ params: v.object({}), run: () => new Promise(() => undefined) }),
    "probe.effect": defineAction({ params: v.object({}), run: () => ({ ok: true }), effect: (ctx) => writeAndAppend(ctx, "effect") }),
    // what the store holds of its own run before and after a ctx.artifacts call (which commits on its own)
    "probe.store": defineAction({
      params: v.object({}),
      run: async (ctx) => {
        const before = await recordedStatus(ctx.runId);
        await ctx.artifacts.upload("probe", { name: "probe.txt", contentType: "text/plain" });
        return { before, afterStore: await recordedStatus(ctx.runId) };
      },
    }),
  },
  schedules: { "probe-schedule": defineSchedule({ every: 3_600_000, paused: true, run: (ctx) => writeAndAppend(ctx, "schedule") }) },
  syncs: {
    "probe-sync": defineSync({ run: async (ctx) => (await writeAndAppend(ctx, "sync"), { ok: true }) }),
    // writes, then answers a result Temporal cannot carry as JSON
    // fails its first two attempts (an upstream that is down for a moment), then succeeds
    "probe-flaky-sync": defineSync({
      run: async (ctx) => {
        const attempt = (flakyAttempts.get(ctx.runId) ?? 0) + 1;
        flakyAttempts.set(ctx.runId, attempt);
        if (attempt <= 2) throw new Error(`upstream answered 503 (attempt ${attempt})`);
        return { attempts: attempt };
      },
    }),
    "probe-bigint-sync": defineSync({ run: async (ctx) => (ctx.objects.upsert("customer", "cus_bigsync", { name: "written with it" }), { n: 1n }) }),
  },
  pipelines: { "probe-pipeline": definePipeline({ steps: [{ name: "only", run: async (ctx) => (await writeAndAppend(ctx, "pipeline"), { ok: true }) }] }) },
});
const project = defineProject({ ...sandboxProject, connectors: [...sandboxProject.connectors, probe] });

let app: App;
let activities: SvcActivities;
/** A run's status as committed (null: not recorded). */
const recordedStatus = async (runId: string) => (await app.container.resolve(Database).get<{ status: string }>("SELECT status FROM action_runs WHERE run_id = ?", [runId]))?.status ?? null;
beforeAll(async () => {
  // a threshold no quick handler reaches by chance: a probe.store run is recorded by its store, not by the timer
  app = await startApp({ project, env: { SVC_RECORD_RUNNING_AFTER_MS: "1000" } });
  const c = app.container;
  activities = createActivities({ db: c.resolve(Database), events: c.resolve(EventLog), ontology: c.resolve(OntologyStore), actions: c.resolve(ActionRunner), project: c.resolve(ProjectRegistry), handlers: c.resolve(HandlerRunner) });
});
afterAll(() => app?.close());

async function eventsOf(correlationId: string) {
  const res = await client(app).get("/api/events?limit=1000");
  return (res.body.events as Array<{ type: string; correlationId?: string; idempotencyKey?: string }>).filter((e) => e.correlationId === correlationId);
}

describe("a retried activity writes and appends once (spec 6.2: ids and keys stable across redelivery)", () => {
  it.each([
    ["sync", "probe-sync-run", () => activities.runSync({ syncId: "probe-sync", runId: "probe-sync-run", input: null })],
    ["pipeline step", "probe-pipeline-run", () => activities.runPipelineStep({ pipelineId: "probe-pipeline", runId: "probe-pipeline-run", index: 0, input: null, results: {} })],
    ["schedule", "probe-schedule@2026-01-01T00:00:00.000Z", () => activities.runSchedule({ scheduleId: "probe-schedule", occurrenceAt: "2026-01-01T00:00:00.000Z", triggeredAt: "2026-01-01T00:00:01.000Z", occurrenceKey: "probe-schedule@2026-01-01T00:00:00.000Z" })],
  ])("%s", async (_kind, correlationId, attempt) => {
    await attempt();
    await attempt(); // Temporal's retry of an activity whose first completion was lost
    const events = await eventsOf(correlationId);
    expect(events.filter((e) => e.type === "rule.triggered")).toHaveLength(1);
    expect(events.filter((e) => e.type === "object.created")).toHaveLength(1);
    expect(events.find((e) => e.type === "rule.triggered")!.idempotencyKey).toMatch(/:event:0$/);
  });

  it("action effect", async () => {
    const run = await client(app).post("/api/actions/probe.effect", { params: {}, runId: "probe-effect-run" });
    expect(run.body.status).toBe("succeeded");
    await activities.runActionEffect({ actionId: "probe.effect", runId: "probe-effect-run" });
    await activities.runActionEffect({ actionId: "probe.effect", runId: "probe-effect-run" });
    const events = await eventsOf("probe-effect-run");
    // the effect workflow started by the run may run it too: still once
    expect(events.filter((e) => e.type === "rule.triggered")).toHaveLength(1);
    expect(events.filter((e) => e.type === "object.created")).toHaveLength(1);
  });

  it("a commit of no changes records no idempotency key, and the key still makes a later commit with changes exactly-once", async () => {
    const handlers = app.container.resolve(HandlerRunner);
    const db = app.container.resolve(Database);
    const spec = { run: { kind: "sync", id: "empty" }, correlationId: "empty-run", key: "sync:empty-run" };
    await handlers.run(spec, { origin: { kind: "runtime" }, idempotencyKey: spec.key }, () => undefined);
    expect(await db.get("SELECT 1 AS one FROM commits WHERE idempotency_key = ?", [spec.key])).toBeUndefined();
    // the key still makes a commit that has changes exactly-once
    await handlers.run(spec, { origin: { kind: "runtime" }, idempotencyKey: spec.key }, (ctx) => writeAndAppend(ctx, "empty"));
    await handlers.run(spec, { origin: { kind: "runtime" }, idempotencyKey: spec.key }, (ctx) => writeAndAppend(ctx, "empty"));
    expect((await eventsOf("empty-run")).filter((e) => e.type === "object.created")).toHaveLength(1);
  });

  it("a handler that throws after appending writes nothing", async () => {
    const handlers = app.container.resolve(HandlerRunner);
    const spec = { run: { kind: "sync", id: "throws" }, correlationId: "throws-run", key: "sync:throws-run" };
    await expect(handlers.run(spec, { origin: { kind: "runtime" }, idempotencyKey: spec.key }, async (ctx) => {
      await writeAndAppend(ctx, "throws");
      throw new Error("handler failed after appending");
    })).rejects.toThrow("handler failed after appending");
    expect(await eventsOf("throws-run")).toEqual([]);
  });
});

describe("a workflow's read of an object type the project lacks", () => {
  it("fails for good naming the type (a misspelt type read as 'no such object'), while a missing object of a known type is null", async () => {
    await expect(activities.readObject({ objectTypeId: "custmer", primaryId: "cus_acme" } as never)).rejects.toMatchObject({ nonRetryable: true, type: "not_found", message: expect.stringMatching(/^Unknown object type "custmer"; the project's object types are: .*customer/) });
    expect(await activities.readObject({ objectTypeId: "customer", primaryId: "cus_nobody" } as never)).toBeNull();
  });
});

describe("writes a handler makes after it returned", () => {
  it("are dropped with a warning naming each call, never committed unchecked; a buffered object is a copy", async () => {
    const dev = client(app);
    const res = await dev.post("/api/actions/probe.late", { params: {}, runId: "late-1" });
    expect([res.status, res.body.status, res.body.result]).toEqual([200, "succeeded", "returned"]);
    const lines = await eventually(async () => {
      const got = (await dev.get("/api/logs?runKind=action&runId=late-1&levels=warn")).body.logs;
      return got.length >= 3 ? got : undefined;
    });
    expect(lines.map((l: any) => l.fields.call).sort()).toEqual(["ctx.events.append", "ctx.objects.update", "ctx.objects.upsert"]);
    expect(lines[0].message).toContain("was called after the handler returned: dropped");
    await new Promise((r) => setTimeout(r, 200));
    expect((await dev.get("/api/objects/customer/cus_late")).body.properties.name).toBe("before return");
    expect((await dev.get("/api/objects/customer/cus_late_copy")).body.properties.name).toBe("changed after the call");
    expect((await dev.get("/api/events?type=rule.triggered&limit=1000")).body.events.filter((e: any) => e.payload.ruleId === "late")).toEqual([]);
  });
});

describe("a handler's link to an object not written yet", () => {
  it("commits (providers deliver out of order), while the direct write API refuses the same link with 404", async () => {
    const dev = client(app);
    const run = await dev.post("/api/actions/probe.link-ahead", { params: {} });
    expect(run.body).toMatchObject({ status: "succeeded", result: "linked" });
    expect((await eventsOf(run.body.runId)).map((e) => e.type).sort()).toEqual(["action.completed", "action.requested", "link.created", "telemetry.appended"]);
    const direct = await dev.post("/api/ontology/writes", { changes: [{ op: "link.upsert", sourceTypeId: "invoice", sourceId: "inv_1002", linkId: "billedTo", targetTypeId: "customer", targetId: "cus_never" }] });
    expect(direct.status).toBe(404);
  });
});

describe("what a handler throws", () => {
  it("becomes a run error with a readable message, whatever was thrown; only a real error code passes as the run's code", async () => {
    const dev = client(app);
    const errorOf = async (what: string) => (await dev.post("/api/actions/probe.throws", { params: { what } })).body.error;
    expect(await errorOf("object")).toEqual({ code: "action_failed", message: "object message" });
    expect(await errorOf("undefined")).toEqual({ code: "action_failed", message: "undefined was thrown (throw an Error with a message)" });
    expect(await errorOf("json")).toEqual({ code: "action_failed", message: '{"reason":"no message here"}' });
    expect(await errorOf("fake-api-error")).toEqual({ code: "action_failed", message: "looks like one" });
  });
});

describe("a value JSON cannot carry", () => {
  it("in an action's result or in what it appends fails the run saying so, and nothing of it is written", async () => {
    const dev = client(app);
    const result = await dev.post("/api/actions/probe.bigint", { params: { where: "result" } });
    expect([result.body.status, result.body.error]).toEqual(["failed", { code: "action_failed", message: "The action's result cannot be written as JSON: Do not know how to serialize a BigInt" }]);
    const payload = await dev.post("/api/actions/probe.bigint", { params: { where: "payload" } });
    expect([payload.body.status, payload.body.error]).toEqual(["failed", { code: "action_failed", message: expect.stringMatching(/^The run's writes hold a value JSON cannot carry \(Do not know how to serialize a BigInt\); nothing was written$/) }]);
    expect((await dev.get("/api/objects/customer/cus_bigint")).status).toBe(404);
  });
});

describe("a sync whose result JSON cannot carry", () => {
  it("fails at once, saying why, and writes nothing (Temporal's conversion after the commit retried the run for minutes with its writes in)", async () => {
    const dev = client(app);
    const { runId } = (await dev.post("/api/syncs/probe-bigint-sync/runs", { input: {} })).body;
    const failed = await eventually(async () => {
      const r = await dev.get(`/api/sync-runs/${runId}`);
      return r.body.status === "failed" ? r.body : undefined;
    }, 20_000);
    expect(failed.error.message).toBe("The sync handler's result cannot be written as JSON: Do not know how to serialize a BigInt");
    expect((await dev.get("/api/objects/customer/cus_bigsync")).status).toBe(404);
  });
});

describe("a sync handler that Temporal retries", () => {
  it("shows its pending activity at the run endpoint while it is retried: the attempt, the last failure and when the next attempt is due; none once the run ended", async () => {
    const dev = client(app);
    const { runId } = (await dev.post("/api/syncs/probe-flaky-sync/runs", { input: {} })).body;
    // Temporal waits 1 s, then 2 s, before the next attempts: the run endpoint is read meanwhile
    const retrying = await eventually(async () => {
      const r = await dev.get(`/api/sync-runs/${runId}`);
      return r.body.status === "running" && r.body.pendingActivities?.[0]?.lastFailure ? r.body : undefined;
    }, 20_000, 50);
    const [pending] = retrying.pendingActivities;
    expect(pending).toMatchObject({ activityType: "runSync", maximumAttempts: 20, lastFailure: { message: expect.stringMatching(/^upstream answered 503 \(attempt [12]\)$/) } });
    expect(pending.attempt).toBeGreaterThanOrEqual(2);
    if (pending.nextAttemptScheduleTime) expect(Date.parse(pending.nextAttemptScheduleTime)).toBeGreaterThan(Date.now() - 5_000);
    const done = await eventually(async () => {
      const r = await dev.get(`/api/sync-runs/${runId}`);
      return r.body.status === "completed" ? r.body : undefined;
    }, 20_000);
    expect(done.result).toEqual({ attempts: 3 });
    expect(done).not.toHaveProperty("pendingActivities");
  });
});

describe("a handler that ignores its ctx.signal and never settles", () => {
  it("does not hold the shutdown: its run fails shutting_down a grace period after the handlers are given up on, and close completes", async () => {
    const own = await startApp({ project, env: { SVC_SHUTDOWN_TIMEOUT_MS: "200" } });
    let closed = false;
    try {
      const pending = client(own).post("/api/actions/probe.forever", { params: {}, runId: "forever-1" });
      await eventually(async () => (await own.container.resolve(ActionRunner)["inFlight"].size) > 0);
      const started = Date.now();
      const closing = own.close().then(() => (closed = true));
      const res = await pending;
      expect([res.status, res.body.status, res.body.error?.code]).toEqual([200, "failed", "shutting_down"]);
      await Promise.race([closing, new Promise((r) => setTimeout(r, 10_000))]);
      expect(closed).toBe(true);
      expect(Date.now() - started).toBeLessThan(8_000);
    } finally {
      if (!closed) void own.close();
    }
  }, 30_000);
});

describe("when an action run is recorded (SVC_RECORD_RUNNING_AFTER_MS)", () => {
  it("a run that ends at once is recorded with its completion: one commit, its events in order", async () => {
    const db = app.container.resolve(Database);
    const before = db.stats();
    const res = await client(app).post("/api/actions/diagnostics.noop", { params: {}, runId: "noop-one-commit" });
    const after = db.stats();
    expect(res.body).toMatchObject({ status: "succeeded", attempts: 1 });
    expect(after.commits - before.commits).toBe(1);
    expect((await eventsOf("noop-one-commit")).map((e) => e.type)).toEqual(["action.requested", "action.completed"]);
    expect(await recordedStatus("noop-one-commit")).toBe("succeeded");
  });

  it("a run that runs longer is recorded running while its handler runs, then finished", async () => {
    const running = client(app).post("/api/actions/diagnostics.sleep", { params: { ms: 2500 }, runId: "sleep-recorded" });
    const seen = await eventually(async () => {
      const res = await client(app).get("/api/actions/diagnostics.sleep/runs/sleep-recorded");
      return res.status === 200 ? res.body : undefined;
    });
    expect(seen).toMatchObject({ status: "running", attempts: 1 });
    expect((await eventsOf("sleep-recorded")).map((e) => e.type)).toEqual(["action.requested"]);
    expect((await running).body).toMatchObject({ status: "succeeded" });
    expect((await eventsOf("sleep-recorded")).map((e) => e.type)).toEqual(["action.requested", "action.completed"]);
    expect(await recordedStatus("sleep-recorded")).toBe("succeeded");
  });

  it("a handler's store outside its buffer (ctx.artifacts) waits until its run is recorded", async () => {
    const res = await client(app).post("/api/actions/probe.store", { params: {}, runId: "store-recorded" });
    expect(res.body).toMatchObject({ status: "succeeded", result: { before: null, afterStore: "running" } });
    expect(await recordedStatus("store-recorded")).toBe("succeeded");
  });
});

describe("run records are written before their executions start", () => {
  /** Makes every insert into `table` fail, as a full disk or a broken store would. */
  const refuseInserts = (table: string) => app.container.resolve(Database).transaction((tx) => tx.run(`CREATE TRIGGER refuse_${table} BEFORE INSERT ON ${table} BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`));
  const allowInserts = (table: string) => app.container.resolve(Database).transaction((tx) => tx.run(`DROP TRIGGER refuse_${table}`));
  const execution = (runId: string) => app.temporal.client.workflow.getHandle(runId).describe().then(() => "exists", (err) => (err instanceof WorkflowNotFoundError ? "none" : `error: ${err}`));

  it("a workflow run whose row cannot be written is never started on Temporal", async () => {
    await refuseInserts("workflow_runs");
    try {
      const res = await client(app).post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001" }, runId: "unrecordable-workflow-run" });
      expect(res.status).toBe(500);
    } finally {
      await allowInserts("workflow_runs");
    }
    expect(await execution("unrecordable-workflow-run")).toBe("none");
  });

  it("a sync run whose row cannot be written is never started on Temporal", async () => {
    await refuseInserts("connector_runs");
    try {
      const res = await client(app).post("/api/syncs/probe-sync/runs", { input: {}, runId: "unrecordable-sync-run" });
      expect(res.status).toBe(500);
    } finally {
      await allowInserts("connector_runs");
    }
    expect(await execution("unrecordable-sync-run")).toBe("none");
  });

  it("a sync run naming another execution's id is queued, then refused by its start and ends failed", async () => {
    // svc's own ids (an action's effect) have a ':', which a client's runId may not
    expect((await client(app).post("/api/syncs/probe-sync/runs", { input: {}, runId: "action-effect:sync-hijack" })).status).toBe(400);
    // a workflow run's id: a client's run of another kind
    const workflowRun = await client(app).post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1004", waitMs: 60_000 }, runId: "sync-hijack" });
    expect(workflowRun.status).toBe(200);
    await expect.poll(() => execution("sync-hijack")).toBe("exists");
    const res = await client(app).post("/api/syncs/probe-sync/runs", { input: {}, runId: "sync-hijack" });
    expect(res.status).toBe(200);
    await expect.poll(async () => (await client(app).get("/api/sync-runs/sync-hijack")).body.status, { timeout: 10_000 }).toBe("failed");
    const failed = (await client(app).get("/api/sync-runs/sync-hijack")).body;
    expect(failed.error.message).toMatch(/taken by another execution \(invoice-review\)/);
    const events = ((await client(app).get("/api/events?topic=syncs&limit=1000")).body.events as any[]).filter((e) => e.payload.runId === "sync-hijack");
    expect(events.map((e) => [e.type, e.payload.status])).toEqual([["sync.run.finished", "failed"]]);
    await client(app).post("/api/workflow-runs/sync-hijack/cancel", {});
  });
});
