/**
 * Agent output over a real SQLite file (spec 6.5): append order and idempotent keys, cursor reads by
 * run and by activity owner, retention and rule 3 (reset), malformed cursors.
 */
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import pino from "pino";
import { Database } from "../store/db";
import { Lifecycle } from "../lifecycle";
import { isApiError } from "../errors";
import type { Config } from "../config";
import { encodeCursor } from "../events/cursor";
import { rejection, tempDir } from "../../test/helpers-fs";
import { AgentOutput, decodeOutputCursor, encodeOutputCursor, type OutputRecordInput } from "./output";

const RETENTION_MS = 60_000;
const opened: Array<{ db: Database; lifecycle: Lifecycle }> = [];

async function open() {
  const db = await Database.open(path.join(tempDir(), "svc.db"));
  const lifecycle = new Lifecycle();
  opened.push({ db, lifecycle });
  const output = new AgentOutput(db, { agentOutputRetentionMs: RETENTION_MS } as Config, lifecycle, pino({ level: "silent" }));
  const epoch = (await db.get<{ value: string }>("SELECT value FROM meta WHERE key = 'stream_epoch'"))!.value;
  return { db, output, epoch };
}

afterEach(async () => {
  for (const { db, lifecycle } of opened.splice(0)) {
    await lifecycle.stopTimers();
    await db.close();
  }
});

const text = (runId: string, delta: string, key?: string): OutputRecordInput => ({ runId, owner: "alice", kind: "text", data: { delta }, ...(key ? { key } : {}) });
const deltas = (records: Array<{ data: unknown }>) => records.map((r) => (r.data as { delta: string }).delta);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("AgentOutput", () => {
  it("appends in order in one transaction, notifies after commit, and skips a key already stored", async () => {
    const { output, db, epoch } = await open();
    let notified = 0;
    output.notifier.on("appended", () => notified++);
    const first = await output.append([text("arun_1", "a", "k1"), text("arun_1", "b", "k2"), text("arun_1", "c")]);
    expect(deltas(first)).toEqual(["a", "b", "c"]);
    expect(first.map((r) => decodeOutputCursor(epoch, r.cursor))).toEqual([1, 2, 3]);
    expect(first[0]).toEqual({ cursor: encodeOutputCursor(epoch, 1), runId: "arun_1", kind: "text", data: { delta: "a" }, at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) });
    expect(notified).toBe(1);

    // k1 again (with other data), a new record, and k3 twice in the same batch
    const again = await output.append([text("arun_1", "changed", "k1"), text("arun_1", "d", "k3"), text("arun_1", "e", "k3")]);
    // (an ignored INSERT may still use up a seq: positions are ordered, not dense)
    expect(decodeOutputCursor(epoch, again[1]!.cursor)).toBeGreaterThan(3);
    expect(again.map((r) => r.cursor)).toEqual([first[0]!.cursor, again[1]!.cursor, again[1]!.cursor]);
    expect(deltas(again)).toEqual(["a", "d", "d"]);
    expect(notified).toBe(2);
    await output.append([text("arun_1", "again", "k2")]);
    expect(notified).toBe(2); // nothing new: no wake-up

    const all = await output.read({ runId: "arun_1" }, undefined, 100);
    expect(all).toEqual({ records: [...first, again[1]], reset: false });

    // inside the caller's transaction: invisible until commit, then notifyAppended wakes readers
    const inTx = await db.transaction(async (tx) => {
      const stored = await output.appendInTx(tx, [text("arun_1", "f")]);
      expect((await output.read({ runId: "arun_1" }, again[1]!.cursor, 10)).records).toEqual([]);
      return stored;
    });
    output.notifyAppended();
    expect(notified).toBe(3);
    expect((await output.read({ runId: "arun_1" }, again[1]!.cursor, 10)).records).toEqual(inTx);
  });

  it("reads after a cursor in seq order, in pages, scoped by run or by activity owner", async () => {
    const { output } = await open();
    await output.append([
      text("arun_a", "a1"),
      { runId: "arun_a", owner: "alice", kind: "run.started", data: { runId: "arun_a", agentId: "demo.helper", conversationId: "conv_1" }, activity: true },
      text("arun_b", "b1"),
      { runId: "arun_x", owner: "bob", kind: "run.started", data: { runId: "arun_x" }, activity: true },
      text("arun_a", "a2"),
      { runId: "arun_b", owner: "alice", kind: "artifact.published", data: { artifactId: "art_1", version: 1 }, activity: true },
      { runId: "arun_a", owner: "alice", kind: "run.finished", data: { runId: "arun_a", status: "completed" }, activity: true },
    ]);
    const runA = await output.read({ runId: "arun_a" }, undefined, 100);
    expect(runA.records.map((r) => r.kind)).toEqual(["text", "run.started", "text", "run.finished"]);
    expect(runA.records.every((r) => r.runId === "arun_a")).toBe(true);

    const paged: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await output.read({ runId: "arun_a" }, cursor, 3);
      expect(page.reset).toBe(false);
      if (page.records.length === 0) break;
      paged.push(...page.records.map((r) => r.cursor));
      cursor = page.records.at(-1)!.cursor;
    }
    expect(paged).toEqual(runA.records.map((r) => r.cursor));

    const activity = await output.read({ activityOf: "alice" }, undefined, 100);
    expect(activity.records.map((r) => `${r.runId}:${r.kind}`)).toEqual(["arun_a:run.started", "arun_b:artifact.published", "arun_a:run.finished"]);
    expect((await output.read({ activityOf: "alice" }, activity.records[0]!.cursor, 1)).records.map((r) => r.kind)).toEqual(["artifact.published"]);
    expect((await output.read({ activityOf: "bob" }, undefined, 100)).records.map((r) => r.runId)).toEqual(["arun_x"]);

    expect(await output.latestCursor({ runId: "arun_a" })).toBe(runA.records.at(-1)!.cursor);
    expect(await output.latestCursor({ activityOf: "alice" })).toBe(activity.records.at(-1)!.cursor);
    expect(await output.latestCursor({ runId: "arun_none" })).toBeUndefined();
    expect(await output.latestCursor({ activityOf: "carol" })).toBeUndefined();
  });

  it("prunes old output, raises through_seq, and a cursor it passed reads with reset from the earliest retained record (rule 3)", async () => {
    const { output, db, epoch } = await open();
    expect(await output.prune()).toEqual({ deleted: 0, throughSeq: 0 });
    const old = await output.append([text("arun_1", "o1"), text("arun_2", "other"), text("arun_1", "o2")]);
    await sleep(5);
    const young = await output.append([text("arun_1", "y1"), text("arun_1", "y2")]);
    expect(young[0]!.at > old.at(-1)!.at).toBe(true);

    // a pass at which only the young records are within the retention
    const now = Date.parse(young[0]!.at) + RETENTION_MS;
    expect(await output.prune(now)).toEqual({ deleted: 3, throughSeq: 3 });
    expect(await db.get("SELECT through_seq FROM agent_output_pruned")).toEqual({ through_seq: 3 });
    expect(await output.prune(now)).toEqual({ deleted: 0, throughSeq: 3 });

    // from a pruned cursor: reset, and the earliest retained record first
    const fromOld = await output.read({ runId: "arun_1" }, old[0]!.cursor, 100);
    expect(fromOld.reset).toBe(true);
    expect(deltas(fromOld.records)).toEqual(["y1", "y2"]);
    expect((await output.read({ runId: "arun_1" }, encodeOutputCursor(epoch, 0), 0)).reset).toBe(true);
    // the last pruned position itself missed nothing; neither does a read without a cursor
    expect(await output.read({ runId: "arun_1" }, old.at(-1)!.cursor, 100)).toEqual({ records: young, reset: false });
    expect(await output.read({ runId: "arun_1" }, undefined, 100)).toEqual({ records: young, reset: false });
    expect(await output.read({ runId: "arun_1" }, young[0]!.cursor, 100)).toEqual({ records: [young[1]], reset: false });

    // a later pass past everything: the mark follows, new appends continue after it
    expect(await output.prune(Date.now() + RETENTION_MS + 1000)).toEqual({ deleted: 2, throughSeq: 5 });
    const next = await output.append([text("arun_1", "n1")]);
    expect(decodeOutputCursor(epoch, next[0]!.cursor)).toBe(6);
    expect(await output.read({ runId: "arun_1" }, young[1]!.cursor, 100)).toEqual({ records: next, reset: false });
    expect(await output.read({ runId: "arun_1" }, young[0]!.cursor, 100)).toEqual({ records: next, reset: true });
  });

  it("refuses malformed cursors with invalid_request", async () => {
    const { output, epoch } = await open();
    await output.append([text("arun_1", "a")]);
    const bad = [
      "",
      "not a cursor",
      "garbage",
      encodeCursor("epoch", 1), // an event stream cursor
      Buffer.from("ao1:-1").toString("base64url"),
      Buffer.from("ao1:1.5").toString("base64url"),
      Buffer.from("ao1:1:2").toString("base64url"),
      Buffer.from("ao2:1").toString("base64url"),
      encodeOutputCursor("0123456789ab", 1), // a cursor of another database (one deleted and made again)
      Buffer.from(`ao1:${"9".repeat(30)}`).toString("base64url"),
    ];
    for (const cursor of bad) {
      const err = await rejection(output.read({ runId: "arun_1" }, cursor, 10));
      expect(isApiError(err) && err.code, cursor).toBe("invalid_request");
      expect(() => decodeOutputCursor(epoch, cursor)).toThrow(/not a cursor of this agent output/);
    }
    expect(decodeOutputCursor(epoch, encodeOutputCursor(epoch, 42))).toBe(42);
    // a position past the newest record was never issued: refused, not followed past records to come
    const ahead = await rejection(output.read({ runId: "arun_1" }, encodeOutputCursor(epoch, 1_000_000), 10));
    expect(isApiError(ahead) && ahead.message).toBe("afterCursor is not a cursor of this agent output (it is past the newest record)");
    expect((await output.read({ runId: "arun_1" }, encodeOutputCursor(epoch, 1), 10)).records).toEqual([]);
    // the first form, issued before cursors carried the epoch, is still read
    expect(decodeOutputCursor(epoch, Buffer.from("ao1:7").toString("base64url"))).toBe(7);
    expect(encodeOutputCursor(epoch, 42)).not.toMatch(/42/);
  });
});
