/**
 * The recorder's queue (workflows/records.ts) outside Temporal's isolate: `@temporalio/workflow` is
 * replaced by a fake that logs each command the recorder issues, so the cases a live run rarely shows
 * (a carrier cancelled before it ran, a batch that failed) are checked here; test/replay.test.ts
 * checks the same recorder on the real dev server and its histories' replay.
 */
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { CarriedRecords, RunRecord } from "../core/sdk/activities-types";

/** Commands issued, in order: [how, activity, summary, input]. */
const issued: Array<[string, string, string | undefined, unknown]> = [];
const failing = new Set<string>();
const patches = new Set<string>();
/** Patch ids `patched` was asked about, in order (each one asked for live records its marker). */
const asked: string[] = [];
const proxy = (how: string) => (options: { summary?: string }) =>
  new Proxy({}, { get: (_, activity: string) => async (input: unknown) => {
    issued.push([how, activity, options.summary, input]);
    if (failing.has(activity)) throw new Error(`${activity} failed`);
  } });
vi.mock("@temporalio/workflow", () => ({ patched: (id: string) => (asked.push(id), patches.has(id)), proxyActivities: proxy("activity"), proxyLocalActivities: proxy("local") }));

const { batchSummary, clampSummary, createRecorder, recordingMode, BATCHED_RECORDS, DURABLE_DECISIONS, LOCAL_RECORDS, LOCAL_STORE_WORK, SUMMARY_BYTES } = await import("./records");

const nodeStarted = (key: string) => ({ type: "workflow.run.node.started", workflowId: "w", runId: "r", key });
const event = (key: string): { record: RunRecord; summary: string } => ({ record: { workflowEvent: nodeStarted(key) }, summary: `summary ${key}` });

beforeEach(() => {
  issued.length = 0;
  failing.clear();
  patches.clear();
  asked.length = 0;
});

describe("recordingMode", () => {
  it("answers the newest generation whose patch marker the run has", () => {
    expect(recordingMode()).toBe("activities");
    patches.add(LOCAL_RECORDS);
    expect(recordingMode()).toBe("local");
    patches.add(BATCHED_RECORDS);
    expect(recordingMode()).toBe("batched");
    patches.add(LOCAL_STORE_WORK);
    expect(recordingMode()).toBe("local-work");
    patches.add(DURABLE_DECISIONS);
    expect(recordingMode()).toBe("durable-decisions");
  });

  it("asks for the newest patch first, so a new run records only its marker", () => {
    patches.add(DURABLE_DECISIONS);
    expect(recordingMode()).toBe("durable-decisions");
    expect(asked).toEqual([DURABLE_DECISIONS]);
  });
});

// the newer generations record as `batched` did (they change what node work runs as, in workflows/index.ts),
// except for recordDurably (below)
describe.each(["batched", "local-work", "durable-decisions"] as const)("%s", (mode) => {
  it("queues records until a carrier takes them, in order, and the next carrier gets none", async () => {
    const records = createRecorder(mode);
    await records.record(event("a"));
    await records.record(event("b"));
    expect(issued).toEqual([]);
    const carried: Array<RunRecord[] | undefined> = [];
    const carrier = async (input: CarriedRecords & { id: string }) => void carried.push(input.records);
    await records.carry(carrier, { id: "first" });
    await records.carry(carrier, { id: "second" });
    expect(carried).toEqual([[event("a").record, event("b").record], undefined]);
  });

  it("queues a failed carrier's records again, in front of those queued meanwhile", async () => {
    const records = createRecorder(mode);
    await records.record(event("a"));
    await expect(records.carry(async () => { await records.record(event("b")); throw new Error("cancelled before it ran"); }, {})).rejects.toThrow("cancelled");
    await records.recordNow(event("c"));
    expect(issued).toEqual([["local", "recordBatch", "summary a, summary b, summary c", { records: [event("a").record, event("b").record, event("c").record] }]]);
  });

  it("writes what is queued before waiting, as one local activity naming every record", async () => {
    const records = createRecorder(mode);
    await records.record(event("a"));
    await records.record(event("b"));
    const order: string[] = [];
    await records.beforeWaiting(async () => void order.push(`wait after ${issued.length} batch`));
    expect(order).toEqual(["wait after 1 batch"]);
    expect(issued).toEqual([["local", "recordBatch", "summary a, summary b", { records: [event("a").record, event("b").record] }]]);
  });

  it("waits at once, without a batch, when nothing is queued", async () => {
    const records = createRecorder(mode);
    let waited = false;
    const waiting = records.beforeWaiting(async () => void (waited = true));
    expect(waited).toBe(true); // called before the first await: no command in between
    await waiting;
    expect(issued).toEqual([]);
  });

  it("does not queue a failed batch again (a failure path records its own outcome under the same key)", async () => {
    const records = createRecorder(mode);
    failing.add("recordBatch");
    await expect(records.recordNow(event("a"))).rejects.toThrow("recordBatch failed");
    failing.clear();
    await records.recordNow(event("b"));
    expect(issued.map(([, , , input]) => input)).toEqual([{ records: [event("a").record] }, { records: [event("b").record] }]);
  });
});

describe("older generations", () => {
  it("local: one local activity per record, issued at once; carriers carry nothing", async () => {
    const records = createRecorder("local");
    const pending = records.record(event("a"));
    expect(issued).toEqual([["local", "recordWorkflowEvent", "summary a", nodeStarted("a")]]);
    await pending;
    await records.recordNow({ record: { intervention: { phase: "expired", workflowId: "w", runId: "r", interventionId: "i", name: "approve" } }, summary: "intervention approve expired" });
    expect(issued[1]?.slice(0, 3)).toEqual(["local", "recordIntervention", "intervention approve expired"]);
    let carried: unknown = "not called";
    await records.carry(async (input: CarriedRecords) => void (carried = input.records), {});
    expect(carried).toBeUndefined();
  });

  it("activities: one activity per record, without a summary where the first engine gave none", async () => {
    const records = createRecorder("activities");
    await records.record({ ...event("a"), unnamed: true });
    await records.record({ record: { runEvent: { type: "sync.run.started", runId: "r", key: "k", payload: {} } }, summary: "sync.run.started" });
    expect(issued.map(([how, activity, summary]) => [how, activity, summary])).toEqual([
      ["activity", "recordWorkflowEvent", undefined],
      ["activity", "recordRunEvent", "sync.run.started"],
    ]);
  });
});

describe("summaries", () => {
  const bytes = (s: string) => Buffer.byteLength(s, "utf8");

  it("leave short summaries as they are", () => {
    expect(clampSummary("read invoice: read invoice inv_1")).toBe("read invoice: read invoice inv_1");
    expect(batchSummary(["a", "b"])).toBe("a, b");
  });

  it("cut a long one on a code point boundary, within the budget", () => {
    const cut = clampSummary("é".repeat(200) + "😀".repeat(100));
    expect(bytes(cut)).toBeLessThanOrEqual(SUMMARY_BYTES);
    expect(cut.endsWith("…")).toBe(true);
    expect(cut).not.toMatch(/\uFFFD/);
    expect(bytes(clampSummary("😀".repeat(100)))).toBeLessThanOrEqual(SUMMARY_BYTES);
  });

  it("name as many records of a long batch as fit, then how many more", () => {
    const summaries = Array.from({ length: 30 }, (_, i) => `workflow.run.node.started step number ${i}`);
    const summary = batchSummary(summaries);
    expect(bytes(summary)).toBeLessThanOrEqual(SUMMARY_BYTES);
    expect(summary).toMatch(/^workflow\.run\.node\.started step number 0, .*, and \d+ more$/);
    const named = summary.split(", ").length - 1;
    expect(summary.endsWith(`and ${30 - named} more`)).toBe(true);
    const huge = batchSummary(["x".repeat(1000), "y"]);
    expect(bytes(huge)).toBeLessThanOrEqual(SUMMARY_BYTES);
    expect(huge.endsWith("…, and 1 more")).toBe(true);
  });

  it("keep a batch's summary within the budget when the local activity is issued", async () => {
    const records = createRecorder("batched");
    for (let i = 0; i < 40; i++) await records.record(event(`key-${i}-${"n".repeat(20)}`));
    await records.beforeWaiting(async () => undefined);
    expect(bytes(issued[0]![2]!)).toBeLessThanOrEqual(SUMMARY_BYTES);
    expect((issued[0]![3] as { records: unknown[] }).records).toHaveLength(40);
  });
});

describe("recordDurably", () => {
  it("writes the queue and the decision by an activity in durable-decisions runs, by a local activity before", async () => {
    for (const [mode, how] of [["local-work", "local"], ["durable-decisions", "activity"]] as const) {
      issued.length = 0;
      const records = createRecorder(mode);
      await records.record(event("a"));
      await records.recordDurably(event("b"));
      expect(issued.map(([h, activity, , input]) => [h, activity, (input as { records: unknown[] }).records.length])).toEqual([[how, "recordBatch", 2]]);
    }
  });
});
