/** BatchedLookup over a real SQLite file: concurrent point reads share one statement. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Database } from "./db";
import { BatchedLookup } from "./batched-lookup";

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-lookup-"));
  db = await Database.open(path.join(dir, "svc.db"));
  await db.transaction(async (tx) => {
    for (let i = 0; i < 5; i++) await tx.run("INSERT INTO action_runs (id, run_id, action_id, status, params, started_at) VALUES (?, ?, 'a', 'succeeded', '{}', 'now')", [`run_${i}`, `r${i}`]);
  });
});
afterEach(async () => {
  await db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const lookup = () => new BatchedLookup<string, { id: string; run_id: string }>(db, "SELECT k.key AS lookup, r.id, r.run_id FROM json_each(?) AS k JOIN action_runs AS r ON r.run_id = k.value");

describe("BatchedLookup", () => {
  it("answers each caller its own row (or undefined), a key asked twice both times, in one statement per batch", async () => {
    const runs = lookup();
    const before = db.stats().readerStatements;
    const keys = ["r3", "missing", "r0", "r3", "r4", "it's \"quoted\""];
    const rows = await Promise.all(keys.map((k) => runs.get(k)));
    expect(rows).toEqual([{ id: "run_3", run_id: "r3" }, undefined, { id: "run_0", run_id: "r0" }, { id: "run_3", run_id: "r3" }, { id: "run_4", run_id: "r4" }, undefined]);
    expect(db.stats().readerStatements - before).toBe(1);
  });

  it("batches the lookups asked for while one is in flight into the next statement, and sees later commits", async () => {
    const runs = lookup();
    const before = db.stats().readerStatements;
    const first = runs.get("r1");
    await Promise.resolve();
    await Promise.resolve();
    const later = ["r2", "r9", "r2"].map((k) => runs.get(k));
    expect(await first).toEqual({ id: "run_1", run_id: "r1" });
    expect(await Promise.all(later)).toEqual([{ id: "run_2", run_id: "r2" }, undefined, { id: "run_2", run_id: "r2" }]);
    expect(db.stats().readerStatements - before).toBe(2);
    await db.transaction((tx) => tx.run("INSERT INTO action_runs (id, run_id, action_id, status, params, started_at) VALUES ('run_9', 'r9', 'a', 'running', '{}', 'now')"));
    expect(await runs.get("r9")).toEqual({ id: "run_9", run_id: "r9" });
  });

  it("rejects every caller of a batch whose statement fails, and serves the next batch", async () => {
    // fails while it runs: json() of a key that is not JSON text
    const broken = new BatchedLookup<string, object>(db, "SELECT k.key AS lookup, json(k.value) AS parsed FROM json_each(?) AS k");
    const answers = await Promise.allSettled([broken.get("not json"), broken.get("b")]);
    expect(answers.map((a) => a.status)).toEqual(["rejected", "rejected"]);
    expect(String((answers[0] as PromiseRejectedResult).reason)).toMatch(/malformed JSON/);
    expect(await broken.get("[1]")).toEqual({ parsed: "[1]" });
    expect(await lookup().get("r0")).toEqual({ id: "run_0", run_id: "r0" });
  });
});
