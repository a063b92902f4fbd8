/**
 * Issue 15: run, node and intervention records became local activities behind `patched("svc-local-records")`.
 * Histories recorded by the engine before that change (test/fixtures/histories, made with
 * test/fixtures/histories/record.ts) must replay against today's bundle, the open one included, and a
 * new run must record the patch marker and its records as markers, one server round trip per node.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Worker } from "@temporalio/worker";
import proto from "@temporalio/proto";
import { client, eventually, startApp } from "./helpers";
import type { App } from "../core/app";

const { History } = proto.temporal.api.history.v1;
type HistoryJson = { events: Array<Record<string, any>> };

const DIR = path.join(import.meta.dirname, "fixtures/histories");
const recorded = JSON.parse(fs.readFileSync(path.join(DIR, "index.json"), "utf8")) as Record<string, { workflowId: string; workflowType: string }>;
const readJson = (name: string) => JSON.parse(fs.readFileSync(path.join(DIR, `${name}.json`), "utf8")) as HistoryJson;
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

const scheduledActivities = (h: HistoryJson) => h.events.filter((e) => e.eventType === "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED").map((e) => e.activityTaskScheduledEventAttributes.activityType.name as string);
const markers = (h: HistoryJson, name: string) => h.events.filter((e) => e.eventType === "EVENT_TYPE_MARKER_RECORDED" && e.markerRecordedEventAttributes.markerName === name);
const count = (h: HistoryJson, type: string) => h.events.filter((e) => e.eventType === `EVENT_TYPE_${type}`).length;

describe("histories recorded before local records", () => {
  it("are the old engine's: records as activities, no patch marker", () => {
    expect(Object.keys(recorded).sort()).toEqual(["pipeline-completed", "review-approved", "review-cancelled", "review-expired", "review-failed", "review-rejected", "review-reviewed", "review-waiting", "sync-completed"]);
    for (const name of Object.keys(recorded)) {
      const h = readJson(name);
      expect(markers(h, "core_patch")).toEqual([]);
      expect(scheduledActivities(h).some((a) => a === "recordWorkflowEvent" || a === "recordRunEvent")).toBe(true);
    }
    // the open one is still waiting on its intervention: nothing after the requested record and its timer
    const waiting = readJson("review-waiting");
    expect(waiting.events.at(-1)!.eventType).not.toMatch(/WORKFLOW_EXECUTION_(COMPLETED|FAILED|CANCELED)/);
    expect(scheduledActivities(waiting)).toContain("recordIntervention");
  });

  it("replay against today's bundle without a determinism error (completed, failed, cancelled and open runs, syncs, pipelines)", async () => {
    const histories = Object.entries(recorded).map(([name, r]) => ({ workflowId: r.workflowId, json: readJson(name) }));
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
    await until(`/api/workflow-runs/${ids.approved}`, "waiting");
    expect((await dev.post(`/api/workflow-runs/${ids.approved}/interventions/approve/submit`, { answer: { approved: true } })).status).toBe(200);
    await Promise.all([until(`/api/workflow-runs/${ids.reviewed}`, "completed"), until(`/api/workflow-runs/${ids.approved}`, "completed"), until(`/api/sync-runs/${ids.sync}`, "completed")]);
    histories = Object.fromEntries(await Promise.all(Object.entries(ids).map(async ([k, id]) => [k, toJson(await app.temporal.client.workflow.getHandle(id).fetchHistory())] as const)));
  });
  afterAll(() => app?.close());

  it("record the patch marker and their records as local activity markers: one server round trip per node", () => {
    for (const h of Object.values(histories)) {
      expect(markers(h, "core_patch")).toHaveLength(1);
      expect(scheduledActivities(h).filter((a) => a.startsWith("record"))).toEqual([]);
    }
    const reviewed = histories.reviewed!;
    // run started, 2 × node started/finished, run finished; the node's own work (read, write) stays an activity
    expect(markers(reviewed, "core_local_activity")).toHaveLength(6);
    expect(scheduledActivities(reviewed)).toEqual(["readObject", "writeOntology"]);
    // workflow tasks: the first, after the read, after the timer, after the write (was 10 with records as activities)
    expect(count(reviewed, "WORKFLOW_TASK_COMPLETED")).toBe(4);
    expect(count(histories.approved!, "WORKFLOW_TASK_COMPLETED")).toBeLessThan(count(readJson("review-approved"), "WORKFLOW_TASK_COMPLETED"));
  });

  it("keep history readable: markers carry the summaries, the history endpoint names them", async () => {
    const res = await client(app).get(`/api/workflow-runs/${ids.approved}/history`);
    const events = res.body.events as Array<{ eventType: string; name?: string; summary?: string }>;
    const recordedMarkers = events.filter((e) => e.eventType === "MARKER_RECORDED");
    expect(recordedMarkers.map((e) => e.name)).toEqual(expect.arrayContaining(["patch svc-local-records", "recordWorkflowEvent", "recordIntervention"]));
    expect(events.map((e) => e.summary).filter(Boolean)).toEqual(
      expect.arrayContaining(["workflow.run.started", "workflow.run.node.started read invoice", "intervention approve requested", "intervention approve submitted", "approve invoice: run action invoice.approve", "workflow.run.finished"]),
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
