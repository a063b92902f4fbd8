/**
 * Issue 15 changed how a run records its run, node, step and intervention events three times, each
 * behind a Temporal patch: first one local activity per record (`svc-local-records`), then records
 * queued and carried by the run's next activity, or batched into one local activity where the run waits
 * or ends (`svc-batched-records`), then node work on svc's own store as local activities and no timer
 * for a zero wait (`svc-local-store-work`); the cancel-race fix then wrote decisions (a run's end, an
 * intervention's answer) by activities (`svc-durable-decisions`). Histories of the four older engines
 * (test/fixtures/histories and its local-records/, batched-records/ and local-store-work/ folders, made with
 * test/fixtures/histories/record.ts) must replay against today's bundle, open ones included, and a new
 * run must record the newest patch marker and carry its records.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Worker } from "@temporalio/worker";
import proto from "@temporalio/proto";
import { allEvents, client, eventually, startApp } from "./helpers";
import type { App } from "../core/app";

const { History } = proto.temporal.api.history.v1;
type HistoryJson = { events: Array<Record<string, any>> };

const FIXTURES = path.join(import.meta.dirname, "fixtures/histories");
/** The recorded histories of one engine generation, by name. */
const generation = (dir: string) => {
  const index = JSON.parse(fs.readFileSync(path.join(dir, "index.json"), "utf8")) as Record<string, { workflowId: string; workflowType: string }>;
  const read = (name: string) => JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), "utf8")) as HistoryJson;
  return { index, read, all: () => Object.entries(index).map(([name, r]) => ({ workflowId: r.workflowId, json: read(name) })) };
};
const first = generation(FIXTURES);
const local = generation(path.join(FIXTURES, "local-records"));
const batched = generation(path.join(FIXTURES, "batched-records"));
const localWork = generation(path.join(FIXTURES, "local-store-work"));
const RECORDED = ["pipeline-completed", "review-approved", "review-cancelled", "review-expired", "review-failed", "review-rejected", "review-reviewed", "review-waiting", "sync-completed"];
const toJson = (history: unknown) => History.toObject(History.fromObject(history as never), { longs: String, enums: String, bytes: String, defaults: false }) as HistoryJson;
const bundle = () => ({ code: fs.readFileSync(inject("workflowBundle"), "utf8") });

/** Replays each history against the test run's bundle; answers [workflowId, error message or undefined] per history. */
async function replay(histories: Array<{ workflowId: string; json: HistoryJson }>): Promise<Array<[string, string | undefined]>> {
  const out: Array<[string, string | undefined]> = [];
  const input = histories.map((h) => ({ workflowId: h.workflowId, history: History.fromObject(h.json as never) }));
  // the engine's log sink does nothing during replay; registered so the replay worker does not report it missing
  const sinks = { handlerLog: { write: { fn: () => undefined, callDuringReplay: false } } };
  for await (const result of Worker.runReplayHistories({ workflowBundle: bundle(), sinks }, input)) out.push([result.workflowId, result.error?.message]);
  return out;
}

const payload = (p: { data?: string } | undefined) => (p?.data ? JSON.parse(Buffer.from(p.data, "base64").toString("utf8")) : undefined);
const scheduled = (h: HistoryJson) => h.events.filter((e) => e.eventType === "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED").map((e) => e.activityTaskScheduledEventAttributes);
const scheduledActivities = (h: HistoryJson) => scheduled(h).map((a) => a.activityType.name as string);
const markers = (h: HistoryJson, name: string) => h.events.filter((e) => e.eventType === "EVENT_TYPE_MARKER_RECORDED" && e.markerRecordedEventAttributes.markerName === name);
const patchIds = (h: HistoryJson) => markers(h, "core_patch").map((m) => payload(m.markerRecordedEventAttributes.details["patch-data"].payloads[0]).id as string);
/** The activity type of each local activity marker. */
const localActivities = (h: HistoryJson) => markers(h, "core_local_activity").map((m) => payload(m.markerRecordedEventAttributes.details.data.payloads[0]).activity_type as string);
const count = (h: HistoryJson, type: string) => h.events.filter((e) => e.eventType === `EVENT_TYPE_${type}`).length;
/** The keys of the records an activity's input carries. */
const carriedKeys = (attributes: Record<string, any>) => ((payload(attributes.input?.payloads?.[0])?.records ?? []) as Array<Record<string, { key?: string; interventionId?: string }>>).map((r) => Object.values(r)[0]!.key);

describe("histories recorded before local records", () => {
  it("are the first engine's: records as activities, no patch marker", () => {
    expect(Object.keys(first.index).sort()).toEqual(RECORDED);
    for (const { json } of first.all()) {
      expect(patchIds(json)).toEqual([]);
      expect(scheduledActivities(json).some((a) => a === "recordWorkflowEvent" || a === "recordRunEvent")).toBe(true);
    }
    // the open one is still waiting on its intervention: nothing after the requested record and its timer
    const waiting = first.read("review-waiting");
    expect(waiting.events.at(-1)!.eventType).not.toMatch(/WORKFLOW_EXECUTION_(COMPLETED|FAILED|CANCELED)/);
    expect(scheduledActivities(waiting)).toContain("recordIntervention");
  });

  it("replay against today's bundle without a determinism error (completed, failed, cancelled and open runs, syncs, pipelines)", async () => {
    const histories = first.all();
    expect(await replay(histories)).toEqual(histories.map((h) => [h.workflowId, undefined]));
  });
});

describe("histories recorded with one local activity per record", () => {
  it("are the second engine's: the svc-local-records marker, a local activity per record", () => {
    expect(Object.keys(local.index).sort()).toEqual(RECORDED);
    for (const { json } of local.all()) {
      expect(patchIds(json)).toEqual(["svc-local-records"]);
      expect(scheduledActivities(json).filter((a) => a.startsWith("record"))).toEqual([]);
      expect(localActivities(json).length).toBeGreaterThan(1);
    }
    expect(localActivities(local.read("review-reviewed"))).toEqual(Array(6).fill("recordWorkflowEvent"));
    const waiting = local.read("review-waiting");
    expect(waiting.events.at(-1)!.eventType).not.toMatch(/WORKFLOW_EXECUTION_(COMPLETED|FAILED|CANCELED)/);
    expect(localActivities(waiting)).toContain("recordIntervention");
  });

  it("replay against today's bundle without a determinism error, the open one included", async () => {
    const histories = local.all();
    expect(await replay(histories)).toEqual(histories.map((h) => [h.workflowId, undefined]));
  });
});

describe("histories recorded with batched records", () => {
  it("are the third engine's: the svc-batched-records marker, node work as activities carrying the records, a timer for a zero wait", () => {
    expect(Object.keys(batched.index).sort()).toEqual(RECORDED);
    for (const { json } of batched.all()) {
      expect(patchIds(json)).toEqual(["svc-batched-records"]);
      expect(scheduledActivities(json).filter((a) => a.startsWith("record"))).toEqual([]);
      expect(new Set(localActivities(json))).toEqual(new Set(["recordBatch"]));
    }
    const reviewed = batched.read("review-reviewed");
    const runId = batched.index["review-reviewed"]!.workflowId;
    // the read carries the run's start and its node's; the write carries its node's start
    expect(scheduledActivities(reviewed)).toEqual(["readObject", "writeOntology"]);
    expect(scheduled(reviewed).map(carriedKeys)).toEqual([[`${runId}:started`, `${runId}:node:1:started`], [`${runId}:node:2:started`]]);
    // one batch before the 0 ms timer (the read's node finished), one at the end (the write's node, the run)
    expect(localActivities(reviewed)).toHaveLength(2);
    expect(count(reviewed, "TIMER_STARTED")).toBe(1);
    // workflow tasks: the first, after the read, after the timer, after the write
    expect(count(reviewed, "WORKFLOW_TASK_COMPLETED")).toBe(4);
    const waiting = batched.read("review-waiting");
    expect(waiting.events.at(-1)!.eventType).not.toMatch(/WORKFLOW_EXECUTION_(COMPLETED|FAILED|CANCELED)/);
  });

  it("replay against today's bundle without a determinism error, the open one included", async () => {
    const histories = batched.all();
    expect(await replay(histories)).toEqual(histories.map((h) => [h.workflowId, undefined]));
  });
});

describe("histories recorded with store work as local activities", () => {
  it("are the fourth engine's: the svc-local-store-work marker, every record and store work a local activity, a review one workflow task", () => {
    expect(Object.keys(localWork.index).sort()).toEqual(RECORDED);
    for (const { json } of localWork.all()) {
      expect(patchIds(json)).toEqual(["svc-local-store-work"]);
      expect(scheduledActivities(json).filter((a) => a.startsWith("record") || a === "readObject" || a === "writeOntology")).toEqual([]);
    }
    expect(count(localWork.read("review-reviewed"), "WORKFLOW_TASK_COMPLETED")).toBe(1);
    const waiting = localWork.read("review-waiting");
    expect(waiting.events.at(-1)!.eventType).not.toMatch(/WORKFLOW_EXECUTION_(COMPLETED|FAILED|CANCELED)/);
  });

  it("replay against today's bundle without a determinism error, the open one included", async () => {
    const histories = localWork.all();
    expect(await replay(histories)).toEqual(histories.map((h) => [h.workflowId, undefined]));
  });
});

describe("runs started now", () => {
  let app: App;
  let histories: Record<string, HistoryJson>;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    app = await startApp();
    const dev = client(app);
    const until = (url: string, status: string) => eventually(async () => ((await dev.get(url)).body.status === status ? true : undefined), 30_000);
    ids.reviewed = (await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001", waitMs: 0 } })).body.runId;
    ids.approved = (await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1002", waitMs: 0 } })).body.runId;
    ids.sync = (await dev.post("/api/syncs/customer-sync/runs", { input: {} })).body.runId;
    ids.pipeline = (await dev.post("/api/pipelines/monthly-statement/runs", { input: { month: "2026-11" } })).body.runId;
    // a run whose write fails: its invoice is deleted while the run sleeps between the read and the write
    expect((await dev.post("/api/ontology/writes", { changes: [{ op: "object.create", objectTypeId: "invoice", primaryId: "inv_gone", properties: { number: "INV-GONE", customerId: "cus_acme", amount: 10, currency: "USD", status: "open" } }] })).status).toBe(200);
    ids.failed = (await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_gone", waitMs: 1500 } })).body.runId;
    await eventually(async () => ((await allEvents(dev)).some((e) => e.correlationId === ids.failed && e.type === "workflow.run.node.finished") ? true : undefined), 30_000);
    expect((await dev.post("/api/ontology/writes", { changes: [{ op: "object.delete", objectTypeId: "invoice", primaryId: "inv_gone" }] })).status).toBe(200);
    await until(`/api/workflow-runs/${ids.approved}`, "waiting");
    expect((await dev.post(`/api/workflow-runs/${ids.approved}/interventions/approve/submit`, { answer: { approved: true } })).status).toBe(200);
    await Promise.all([
      until(`/api/workflow-runs/${ids.reviewed}`, "completed"),
      until(`/api/workflow-runs/${ids.approved}`, "completed"),
      until(`/api/workflow-runs/${ids.failed}`, "failed"),
      until(`/api/sync-runs/${ids.sync}`, "completed"),
      until(`/api/pipeline-runs/${ids.pipeline}`, "completed"),
    ]);
    histories = Object.fromEntries(await Promise.all(Object.entries(ids).map(async ([k, id]) => [k, toJson(await app.temporal.client.workflow.getHandle(id).fetchHistory())] as const)));
  });
  afterAll(() => app?.close());

  it("record the svc-durable-decisions marker, run their store work as local activities, start no timer for a zero wait, and write decisions by activities", () => {
    for (const h of Object.values(histories)) {
      expect(patchIds(h)).toEqual(["svc-durable-decisions"]);
      expect(scheduledActivities(h).filter((a) => a.startsWith("record") && a !== "recordBatch")).toEqual([]);
      expect(scheduledActivities(h).filter((a) => a === "readObject" || a === "writeOntology")).toEqual([]);
      // the run's end is written by an activity: the workflow task that closes the run writes nothing
      expect(scheduledActivities(h).at(-1)).toBe("recordBatch");
    }
    const reviewed = histories.reviewed!;
    // the read carries the run's start and its node's, the write the read's end and its own start; the
    // write's node and the run's end go in one recordBatch activity (store work stays local, no 0 ms timer)
    expect(scheduledActivities(reviewed)).toEqual(["recordBatch"]);
    expect(carriedKeys(scheduled(reviewed)[0]!)).toEqual([`${ids.reviewed}:node:2:finished`, `${ids.reviewed}:finished`]);
    expect(localActivities(reviewed)).toEqual(["readObject", "writeOntology"]);
    expect(count(reviewed, "TIMER_STARTED")).toBe(0);
    // workflow tasks: the first, and the one that closes the run after its end is written (was 1; 4 before local store work)
    expect(count(reviewed, "WORKFLOW_TASK_COMPLETED")).toBe(2);
    // the submission is written by an activity of the update's handler; an action stays an activity and carries what was queued
    const approved = histories.approved!;
    expect(scheduledActivities(approved)).toEqual(["recordBatch", "runAction", "recordBatch"]);
    expect(scheduled(approved)[0]!.input && payload(scheduled(approved)[0]!.input.payloads[0]).records.map((r: any) => r.intervention?.phase)).toEqual(["submitted"]);
    expect(carriedKeys(scheduled(approved)[1]!)).toEqual([`${ids.approved}:node:2:finished`, `${ids.approved}:node:3:started`]);
    expect(count(approved, "WORKFLOW_TASK_COMPLETED")).toBe(5);
    expect(count(batched.read("review-approved"), "WORKFLOW_TASK_COMPLETED")).toBe(6);
    expect(scheduledActivities(histories.sync!)).toEqual(["runSync", "recordBatch"]);
    expect(localActivities(histories.sync!)).toEqual([]);
    expect(localActivities(histories.pipeline!)).toEqual([]);
  });

  it("write every record once and in order, one carried by an activity whose work then failed included (written before the work)", async () => {
    const events = await allEvents(client(app));
    const of = (runId: string) => events.filter((e) => e.correlationId === runId && /^(workflow|pipeline)\./.test(e.type));
    expect(of(ids.reviewed!).map((e) => e.type)).toEqual(["workflow.run.queued", "workflow.run.started", "workflow.run.node.started", "workflow.run.node.finished", "workflow.run.node.started", "workflow.run.node.finished", "workflow.run.finished"]);
    expect(of(ids.pipeline!).map((e) => e.type)).toEqual(["pipeline.run.started", "pipeline.run.step.started", "pipeline.run.step.finished", "pipeline.run.step.started", "pipeline.run.step.finished", "pipeline.run.finished"]);
    // the write failed (its invoice was deleted): the node's start it carried is written by the final batch, once
    const failed = histories.failed!;
    expect(localActivities(failed)).toEqual(["readObject", "recordBatch", "writeOntology"]);
    expect(scheduledActivities(failed)).toEqual(["recordBatch"]);
    const laMarkers = markers(failed, "core_local_activity");
    expect(laMarkers.filter((m) => m.markerRecordedEventAttributes.failure).map((m) => payload(m.markerRecordedEventAttributes.details.data.payloads[0]).activity_type)).toEqual(["writeOntology"]);
    expect(count(failed, "TIMER_STARTED")).toBe(1);
    expect(of(ids.failed!).map((e) => [e.type, e.payload.node, e.payload.status])).toEqual([
      ["workflow.run.queued", undefined, undefined],
      ["workflow.run.started", undefined, undefined],
      ["workflow.run.node.started", "read invoice", undefined],
      ["workflow.run.node.finished", "read invoice", "completed"],
      ["workflow.run.node.started", "write review status", undefined],
      ["workflow.run.node.finished", "write review status", "failed"],
      ["workflow.run.finished", undefined, "failed"],
    ]);
  });

  it("keep history readable: a batch's marker lists its records' summaries, a local activity's marker its node's, the history endpoint names them", async () => {
    const res = await client(app).get(`/api/workflow-runs/${ids.approved}/history`);
    const events = res.body.events as Array<{ eventType: string; name?: string; summary?: string }>;
    const recordedMarkers = events.filter((e) => e.eventType === "MARKER_RECORDED");
    expect(recordedMarkers.map((e) => e.name)).toEqual(expect.arrayContaining(["patch svc-durable-decisions", "readObject", "recordBatch", "writeOntology"]));
    expect(events.map((e) => e.summary).filter(Boolean)).toEqual(
      expect.arrayContaining([
        "read invoice: read invoice inv_1002",
        "workflow.run.node.finished read invoice, workflow.run.node.started approve, intervention approve requested",
        "intervention approve submitted",
        "approve invoice: run action invoice.approve",
        "write review status: write 1 change",
        "workflow.run.node.finished write review status, workflow.run.finished",
      ]),
    );
  });

  it("replay, and a history whose patch marker names another patch does not (the check can fail)", async () => {
    const now = Object.entries(ids).map(([k, id]) => ({ workflowId: id, json: histories[k]! }));
    expect(await replay(now)).toEqual(now.map((h) => [h.workflowId, undefined]));
    const tampered = structuredClone(histories.reviewed!);
    const patch = markers(tampered, "core_patch")[0]!.markerRecordedEventAttributes.details["patch-data"].payloads[0];
    patch.data = Buffer.from(JSON.stringify({ id: "svc-some-other-patch", deprecated: false })).toString("base64");
    const [result] = await replay([{ workflowId: ids.reviewed!, json: tampered }]);
    expect(result?.[1]).toMatch(/nondetermin/i);
  });
});
