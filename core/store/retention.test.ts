/** Retention of the append-only tables (core/store/retention.ts) on a real SQLite file with the real schema. */
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Database } from "./db";
import { CLOCK_SLACK_MS, pruneBefore, pruneBoundarySql } from "./retention";
import { tempDir } from "../../test/helpers-fs";

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

/** A migrated store holding log lines appended at these times (epoch ms), in this order. */
async function logsAppendedAt(times: number[]): Promise<Database> {
  const db = await Database.open(path.join(tempDir("svc-retention-"), "svc.db"));
  opened.push(db);
  await db.transaction(async (tx) => {
    for (const t of times) await tx.run("INSERT INTO logs (at, appended_at, level, message, fields, run_kind, run_id) VALUES (?, ?, 'info', ?, '{}', 'action', 'run_1')", [new Date(t).toISOString(), t, `at ${t}`]);
  });
  return db;
}

const kept = async (db: Database) => (await db.all<{ seq: number }>("SELECT seq FROM logs ORDER BY seq")).map((r) => r.seq);
const mark = async (db: Database) => (await db.get<{ value: string }>("SELECT value FROM meta WHERE key = 'logs_pruned_through'"))?.value;

describe("pruneBefore", () => {
  it("deletes the rows older than the cutoff and records the last one deleted", async () => {
    const db = await logsAppendedAt([100, 200, 300, 400, 500]);
    expect(await db.transaction((tx) => pruneBefore(tx, "logs", "logs_pruned_through", 300, 1_000))).toEqual({ through: 2, changes: 2 });
    expect(await kept(db)).toEqual([3, 4, 5]);
    expect(await mark(db)).toBe("2");
    // nothing older left: nothing deleted, the mark stays
    expect(await db.transaction((tx) => pruneBefore(tx, "logs", "logs_pruned_through", 300, 1_000))).toBeUndefined();
    expect(await mark(db)).toBe("2");
  });

  it("deletes every row when all are older than the cutoff", async () => {
    const db = await logsAppendedAt([100, 200, 300]);
    expect(await db.transaction((tx) => pruneBefore(tx, "logs", "logs_pruned_through", 1_000, 2_000))).toEqual({ through: 3, changes: 3 });
    expect(await kept(db)).toEqual([]);
  });

  it("never deletes a row younger than the cutoff when the clock stepped back between appends", async () => {
    // seq 3 was appended after a step back of the clock: older-stamped than seq 2, which is young
    const db = await logsAppendedAt([100, 900, 150, 1_000]);
    expect(await db.transaction((tx) => pruneBefore(tx, "logs", "logs_pruned_through", 500, 1_100))).toEqual({ through: 1, changes: 1 });
    expect(await kept(db)).toEqual([2, 3, 4]);
  });

  it("is not held up by a row stamped in the future (a clock that jumped forward and was set right)", async () => {
    const now = 10_000_000;
    // seq 2 was stamped a year ahead; the clock was set right before seq 3
    const db = await logsAppendedAt([100, now + 365 * 86_400_000, 200, 300, now - 10]);
    expect(await db.transaction((tx) => pruneBefore(tx, "logs", "logs_pruned_through", now - 1_000, now))).toEqual({ through: 4, changes: 4 });
    expect(await kept(db)).toEqual([5]);
    // a stamp within the slack is the clock's time: it holds retention as a young row does
    const close = await logsAppendedAt([100, now + CLOCK_SLACK_MS, 200]);
    expect(await close.transaction((tx) => pruneBefore(tx, "logs", "logs_pruned_through", now - 1_000, now))).toEqual({ through: 1, changes: 1 });
  });

  it("finds the boundary without an index on appended_at", async () => {
    const db = await logsAppendedAt([100]);
    const indexes = await db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('events', 'logs')");
    expect(indexes.map((i) => i.name)).not.toEqual(expect.arrayContaining([expect.stringMatching(/appended/)]));
    const plan = await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${pruneBoundarySql("logs")}`, [0, 1]);
    // the outer MAX is a rowid range lookup, the inner scan goes in rowid order (no temporary sort)
    expect(plan.map((p) => p.detail).join("\n")).not.toMatch(/TEMP B-TREE/);
    expect(plan.map((p) => p.detail).join("\n")).toMatch(/INTEGER PRIMARY KEY \(rowid<\?\)/);
  });
});
