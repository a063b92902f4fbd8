/**
 * The group commit's statements (core/store/sql.ts) over real SQLite files: `rowsStatement` and
 * `insertRows` write in the group's one call (their `sql`) exactly what their one-by-one `run` writes,
 * and `statementsInOrder` keeps its statements' order on both paths.
 */
import { afterEach, describe, expect, it } from "vitest";
import { insertRows, rowsStatement, statementsInOrder, type GroupStatement } from "./db";
import { closeOpenedDatabases, openWithTable } from "../../test/helpers-db";

afterEach(closeOpenedDatabases);

/** Every kind of value a row may hold, each with the SQLite type it is stored as. */
const VALUES: Array<[value: unknown, type: string]> = [
  ["it's", "text"], ["''", "text"], ["'); DROP TABLE t; --", "text"], ["$& $' $` $$ $1", "text"], ['back\\slash "quoted"', "text"], ["ünïcödé 🎉", "text"], ["two\nlines", "text"], ["", "text"],
  [null, "null"], [undefined, "null"], [0, "integer"], [-0, "integer"], [-7, "integer"], [1.5, "real"], [-2.25e-7, "real"], [1e21, "real"], [2 ** 60, "integer"], [Number.NaN, "null"], [Infinity, "null"], [true, "integer"], [false, "integer"],
];

/** Texts with no plain SQL literal: the one call writes them as JSON. */
const NO_LITERAL = ["nul \u0000 inside", "lone \ud800 surrogate"];

/** Into `t (k, v)`, the two ways a group statement may read its rows. */
const statements: Array<[name: string, statement: GroupStatement<[number, unknown]>]> = [
  ["rowsStatement", rowsStatement(2, "INSERT INTO t (k, v) SELECT c0, c1 FROM batch ORDER BY n")],
  ["insertRows", insertRows("t", ["k", "v"])],
];

describe.each(statements)("%s", (_name, insert) => {
  it("writes values as literals in the one call, each with the type and value the one-by-one statement writes", async () => {
    const db = await openWithTable(["CREATE TABLE t (k INTEGER, v)"]); // v without affinity: each value keeps its type
    const rows = VALUES.map(([v], k) => [k, v] as [number, unknown]);
    expect(insert.sql!(rows)).toMatch(/VALUES \((0, )?0, 'it''s'\)/);
    await db.transaction(async (tx) => void tx.defer(insert, rows));
    expect(db.stats().deferredFallbacks).toBe(0);
    const read = "SELECT k, v, typeof(v) AS type FROM t ORDER BY k";
    const fast = await db.all<{ k: number; v: unknown; type: string }>(read);
    await db.transaction((tx) => tx.run("DELETE FROM t"));
    await db.transaction((tx) => insert.run(tx, rows));
    expect(await db.all(read)).toEqual(fast);
    expect(fast.map((r) => r.type)).toEqual(VALUES.map(([, type]) => type));
  });

  it("writes a NUL and a lone surrogate through the one call as JSON, as the one-by-one statement writes them", async () => {
    const db = await openWithTable(["CREATE TABLE t (k INTEGER, v TEXT)"]);
    expect(insert.sql!([[0, NO_LITERAL[0]]])).toContain("json_each('[[0,\"nul \\u0000 inside\"]]')");
    expect(insert.sql!([[0, NO_LITERAL[1]]])).toContain("json_each(");
    const values = [...VALUES.filter(([v]) => typeof v === "string").map(([v]) => v as string), ...NO_LITERAL, null];
    const rows = values.map((v, k) => [k, v] as [number, unknown]);
    await db.transaction(async (tx) => void tx.defer(insert, rows));
    expect(db.stats().deferredFallbacks).toBe(0);
    const fast = await db.all<{ k: number; v: string | null }>("SELECT k, v FROM t ORDER BY k");
    await db.transaction((tx) => tx.run("DELETE FROM t"));
    await db.transaction((tx) => insert.run(tx, rows));
    expect(await db.all("SELECT k, v FROM t ORDER BY k")).toEqual(fast);
    // a lone surrogate is no UTF-8: SQLite's JSON keeps its three bytes, read back as three U+FFFD (on both paths)
    expect(fast.map((r) => r.v)).toEqual(values.map((v) => (v === null ? null : v.replace(/\ud800/, "\ufffd".repeat(3)))));
  });
});

describe("insertRows", () => {
  it("is one plain INSERT OR FAIL … VALUES in the group's one call", () => {
    const insert = insertRows<[string, number]>("t", ["a", "b"], { onConflict: "ON CONFLICT DO NOTHING" });
    expect(insert.sql!([["x", 1], ["y", 2]])).toBe("INSERT OR FAIL INTO t (a, b) VALUES ('x', 1), ('y', 2) ON CONFLICT DO NOTHING");
    expect(() => insertRows("t", ["a", "b"], { values: ["c0"] })).toThrow(/2 columns but 1 values/);
  });

  it("writes each column's expression over the item's values (constants, functions, a value twice), the same on both paths", async () => {
    const db = await openWithTable(["CREATE TABLE t (id TEXT, attempt INTEGER, body BLOB, copy TEXT, note TEXT)"]);
    const insert = insertRows<[id: string, bodyHex: string]>("t", ["id", "attempt", "body", "copy", "note"], { values: ["c0", "1", "unhex(c1)", "c0", "'c1 is not a reference'"] });
    const rows: Array<[string, string]> = [["r1", "00ff10"], ["r2", ""], ["r3 \u0000", "abcd"]];
    const read = "SELECT id, attempt, hex(body) AS body, typeof(body) AS type, copy, note FROM t ORDER BY rowid";
    await db.transaction(async (tx) => void tx.defer(insert, rows.slice(0, 2)));
    await db.transaction(async (tx) => void tx.defer(insert, rows.slice(2))); // no literal for the NUL: through JSON
    const fast = await db.all(read);
    expect(fast).toEqual([
      { id: "r1", attempt: 1, body: "00FF10", type: "blob", copy: "r1", note: "c1 is not a reference" },
      { id: "r2", attempt: 1, body: "", type: "blob", copy: "r2", note: "c1 is not a reference" },
      { id: "r3 \u0000", attempt: 1, body: "ABCD", type: "blob", copy: "r3 \u0000", note: "c1 is not a reference" },
    ]);
    await db.transaction((tx) => tx.run("DELETE FROM t"));
    await db.transaction((tx) => insert.run(tx, rows));
    expect(await db.all(read)).toEqual(fast);
    expect(db.stats().deferredFallbacks).toBe(0);
  });

  it("skips rows by its upsert clause on both paths; without one, a conflict fails the group and writes none of it", async () => {
    const db = await openWithTable(["CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)"], { oneGroup: true });
    const skipping = insertRows<[string, number]>("t", ["k", "v"], { onConflict: "ON CONFLICT DO NOTHING" });
    await db.transaction(async (tx) => void tx.defer(skipping, [["a", 1], ["b", 2], ["a", 3]]));
    await db.transaction((tx) => skipping.run(tx, [["b", 4], ["c", 5]]));
    expect(await db.all("SELECT k, v FROM t ORDER BY k")).toEqual([{ k: "a", v: 1 }, { k: "b", v: 2 }, { k: "c", v: 5 }]);
    expect(db.stats().deferredFallbacks).toBe(0);

    const failing = insertRows<[string, number]>("t", ["k", "v"]);
    const callers = [db.transaction(async (tx) => void tx.defer(failing, [["d", 6]])), db.transaction(async (tx) => void tx.defer(failing, [["a", 7]]))];
    const outcomes = await Promise.allSettled(callers);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE constraint failed: t.k/);
    expect(db.stats().deferredFallbacks).toBe(1); // the one call failed, then `run` one by one
    expect(await db.all("SELECT k FROM t ORDER BY k")).toEqual([{ k: "a" }, { k: "b" }, { k: "c" }]);
  });
});

describe("statementsInOrder", () => {
  it("writes its statements in the order given, in one call or one by one, and offers no text when one of them has none", async () => {
    const db = await openWithTable(["CREATE TABLE runs (id TEXT PRIMARY KEY)", "CREATE TABLE attempts (run_id TEXT NOT NULL REFERENCES runs (id), attempt INTEGER)"]);
    const both = statementsInOrder<[string]>(insertRows("runs", ["id"]), insertRows("attempts", ["run_id", "attempt"], { values: ["c0", "1"] }));
    expect(both.sql!([["r1"]])).toBe("INSERT OR FAIL INTO runs (id) VALUES ('r1');\nINSERT OR FAIL INTO attempts (run_id, attempt) VALUES ('r1', 1)");
    await db.transaction(async (tx) => void tx.defer(both, [["r1"], ["r2"]]));
    await db.transaction((tx) => both.run(tx, [["r3"]]));
    expect(await db.all("SELECT run_id, attempt FROM attempts ORDER BY rowid")).toEqual(["r1", "r2", "r3"].map((run_id) => ({ run_id, attempt: 1 })));
    const runOnly: GroupStatement<[string]> = { run: async (w, items) => void (await w.run("INSERT INTO runs (id) VALUES (?)", [items[0]![0]])) };
    expect(statementsInOrder(both, runOnly).sql!([["r4"]])).toBeUndefined();
  });
});
