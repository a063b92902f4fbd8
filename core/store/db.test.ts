/** The SQLite wrapper's statement cache and group commit under concurrency (real files). */
import path from "node:path";
import sqlite3 from "sqlite3";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { Database, rowsStatement, type GroupStatement, type SqlWriter } from "./db";
import { tempDir } from "../../test/helpers-fs";
import { closedAfterTest, closeOpenedDatabases, openWithTable } from "../../test/helpers-db";

afterEach(closeOpenedDatabases);

describe("Database", () => {
  it("answers every one of many concurrent gets of one cached statement, with and without parameters", async () => {
    const db = closedAfterTest(await Database.open(path.join(tempDir("svc-db-"), "svc.db")));
    await db.transaction(async (tx) => {
      await tx.run("CREATE TABLE t (seq INTEGER PRIMARY KEY, v TEXT NOT NULL)");
      for (let i = 1; i <= 5; i++) await tx.run("INSERT INTO t (v) VALUES (?)", [`v${i}`]);
    });
    // node-sqlite3 resets a statement before a get only when it binds parameters: the second of two
    // queued parameterless gets used to step past the first one's row and answer nothing
    const bare = await Promise.all(Array.from({ length: 50 }, () => db.get<{ m: number }>("SELECT MAX(seq) AS m FROM t")));
    expect(bare).toEqual(Array.from({ length: 50 }, () => ({ m: 5 })));
    const bound = await Promise.all(Array.from({ length: 50 }, (_, i) => db.get<{ v: string }>("SELECT v FROM t WHERE seq = ?", [(i % 5) + 1])));
    expect(bound.map((r) => r?.v)).toEqual(Array.from({ length: 50 }, (_, i) => `v${(i % 5) + 1}`));
    // and the reader sees later commits (no statement left holding an old snapshot)
    await db.transaction((tx) => tx.run("INSERT INTO t (v) VALUES ('v6')"));
    expect(await db.get<{ m: number }>("SELECT MAX(seq) AS m FROM t")).toEqual({ m: 6 });
  });
});

/** A second, read-only connection to the file: sees only what is committed (durable in the WAL). */
async function observer(file: string): Promise<{ count(sql: string, params?: unknown[]): Promise<number>; close(): Promise<void> }> {
  const conn = await new Promise<sqlite3.Database>((resolve, reject) => {
    const c = new sqlite3.Database(file, sqlite3.OPEN_READONLY, (err) => (err ? reject(err) : resolve(c)));
  });
  return {
    count: (sql, params = []) => new Promise((resolve, reject) => conn.get(sql, params, (err, row: { n: number }) => (err ? reject(err) : resolve(row.n)))),
    close: () => new Promise((resolve) => conn.close(() => resolve())),
  };
}

/** Into `t (v)` through the rows' text; into `u (v)` through a text that fails (no such table) and a `run` that writes. */
const intoT = rowsStatement<[string]>(1, "INSERT INTO t (v) SELECT c0 FROM batch ORDER BY n");
const intoU: GroupStatement<string> = {
  run: async (w, items) => void (await w.run("INSERT INTO u (v) SELECT value FROM json_each(?)", [JSON.stringify(items)])),
  sql: () => "INSERT INTO no_such_table VALUES (1)",
};

/** One caller's plan: how many rows it inserts, and after how many of them it throws (or never). */
interface Plan {
  rows: number;
  throwAfter: number | null;
}

/**
 * Runs the plans as concurrent transactions; answers which settled how. Each successful caller checks,
 * when its promise resolves, that a second connection already sees all its rows.
 */
async function runPlans(db: Database, plans: Plan[], seen: { count(sql: string, params?: unknown[]): Promise<number> }) {
  const outcomes = await Promise.allSettled(
    plans.map((plan, caller) =>
      db
        .transaction(async (tx) => {
          for (let r = 0; r < plan.rows; r++) {
            if (plan.throwAfter === r) throw new Error(`caller ${caller} fails after ${r} rows`);
            await tx.run("INSERT INTO rows (caller, n) VALUES (?, ?)", [caller, r]);
            // reads its own writes inside its transaction
            expect((await tx.get<{ n: number }>("SELECT COUNT(*) AS n FROM rows WHERE caller = ?", [caller]))!.n).toBe(r + 1);
          }
          if (plan.throwAfter === plan.rows) throw new Error(`caller ${caller} fails at the end`);
          return caller;
        })
        .then(async (value) => ({ value, visible: await seen.count("SELECT COUNT(*) AS n FROM rows WHERE caller = ?", [caller]) })),
    ),
  );
  return outcomes;
}

async function checkPlans(db: Database, plans: Plan[], outcomes: Awaited<ReturnType<typeof runPlans>>): Promise<void> {
  for (const [caller, plan] of plans.entries()) {
    const outcome = outcomes[caller]!;
    const stored = (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM rows WHERE caller = ?", [caller]))!.n;
    if (plan.throwAfter === null) {
      expect(outcome).toEqual({ status: "fulfilled", value: { value: caller, visible: plan.rows } });
      expect(stored).toBe(plan.rows);
    } else {
      expect(outcome.status).toBe("rejected");
      expect(String((outcome as PromiseRejectedResult).reason)).toContain(`caller ${caller} fails`);
      expect(stored).toBe(0);
    }
  }
}

describe("Database.writerWaitMs", () => {
  it("is 0 when idle, and while a transaction holds the writer, how long it and the callers behind it have waited", async () => {
    const db = await openWithTable(["CREATE TABLE rows (caller INTEGER NOT NULL, n INTEGER NOT NULL)"]);
    try {
      expect(db.writerWaitMs()).toBe(0);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const holding = db.transaction(async (tx) => {
        await tx.run("INSERT INTO rows VALUES (1, 1)");
        await held;
      });
      const behind = db.transaction((tx) => tx.run("INSERT INTO rows VALUES (2, 1)"));
      await new Promise((r) => setTimeout(r, 120));
      expect(db.writerWaitMs()).toBeGreaterThanOrEqual(100);
      release();
      await Promise.all([holding, behind]);
      expect(db.writerWaitMs()).toBe(0);
    } finally {
      await db.close();
    }
  });
});

describe("Database.close", () => {
  it("with interruptAfterMs, interrupts a statement that would run for ever: its caller gets the error, and the close ends", async () => {
    const db = await openWithTable(["CREATE TABLE rows (caller INTEGER NOT NULL, n INTEGER NOT NULL)"]);
    const endless = db.transaction((tx) => tx.get("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c"));
    endless.catch(() => undefined);
    const behind = db.transaction((tx) => tx.run("INSERT INTO rows VALUES (1, 1)"));
    behind.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    let interrupted = false;
    await db.close({ interruptAfterMs: 200, onInterrupt: () => (interrupted = true) });
    expect(interrupted).toBe(true);
    await expect(endless).rejects.toThrow(/interrupt/i);
  });
});

describe("Database group commit", () => {
  it("commits exactly the callers that did not throw, each resolved only once its rows are visible to another connection", async () => {
    const db = await openWithTable(["CREATE TABLE rows (caller INTEGER NOT NULL, n INTEGER NOT NULL)"]);
    const seen = await observer(db.file);
    try {
      // a seeded mix: a third throw (before any row, between rows, after the last row)
      let seed = 42;
      const rand = (k: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % k);
      const plans: Plan[] = Array.from({ length: 300 }, () => {
        const rows = rand(4);
        return { rows, throwAfter: rand(3) === 0 ? rand(rows + 1) : null };
      });
      const before = db.stats();
      const outcomes = await runPlans(db, plans, seen);
      await checkPlans(db, plans, outcomes);
      const after = db.stats();
      expect(after.transactions - before.transactions).toBe(300);
      // callers queued together shared COMMITs
      expect(after.commits - before.commits).toBeLessThan(300 / 4);
    } finally {
      await seen.close();
    }
  });

  it("holds for any mix of callers and failures (property)", async () => {
    const db = await openWithTable(["CREATE TABLE rows (caller INTEGER NOT NULL, n INTEGER NOT NULL)"]);
    const seen = await observer(db.file);
    try {
      const plan = fc.integer({ min: 0, max: 3 }).chain((rows) => fc.record({ rows: fc.constant(rows), throwAfter: fc.option(fc.integer({ min: 0, max: rows }), { freq: 3 }) }));
      await fc.assert(
        fc.asyncProperty(fc.array(plan, { minLength: 1, maxLength: 80 }), async (plans) => {
          await db.transaction((tx) => tx.run("DELETE FROM rows"));
          await checkPlans(db, plans, await runPlans(db, plans, seen));
        }),
        { numRuns: 40 },
      );
    } finally {
      await seen.close();
    }
  });

  it("rejects every caller of a group whose COMMIT fails, and writes none of it", async () => {
    const db = await openWithTable(
      [
        "CREATE TABLE parent (id INTEGER PRIMARY KEY)",
        "CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)",
      ],
      { oneGroup: true },
    );
    // queued in one tick: one group. The orphan passes its own statement (the check is deferred) and fails the COMMIT.
    const results = await Promise.allSettled([
      db.transaction((tx) => tx.run("INSERT INTO parent (id) VALUES (1)")),
      db.transaction((tx) => tx.run("INSERT INTO child (id, parent_id) VALUES (1, 99)")),
      db.transaction((tx) => tx.run("INSERT INTO parent (id) VALUES (2)")),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const r of results) expect(String((r as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY/);
    expect(await db.get("SELECT COUNT(*) AS n FROM parent")).toEqual({ n: 0 });
    // the writer is usable again
    await db.transaction((tx) => tx.run("INSERT INTO parent (id) VALUES (3)"));
    expect(await db.get("SELECT COUNT(*) AS n FROM parent")).toEqual({ n: 1 });
  });

  it("rejects the group's earlier callers when SQLite itself rolls the transaction back", async () => {
    const db = await openWithTable(
      ["CREATE TABLE t (v TEXT NOT NULL)", "CREATE TRIGGER boom BEFORE INSERT ON t WHEN NEW.v = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'boom refused'); END"],
      { oneGroup: true },
    );
    const results = await Promise.allSettled([
      db.transaction((tx) => tx.run("INSERT INTO t (v) VALUES ('a')")),
      db.transaction((tx) => tx.run("INSERT INTO t (v) VALUES ('boom')")),
      db.transaction((tx) => tx.run("INSERT INTO t (v) VALUES ('c')")),
    ]);
    expect(results[0]!.status).toBe("rejected");
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/rolled back by SQLite/);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/boom refused/);
    // the caller after the lost group runs in a new transaction
    expect(results[2]!.status).toBe("fulfilled");
    expect(await db.all("SELECT v FROM t")).toEqual([{ v: "c" }]);
  });

  it("undoes a caller's tx.savepoint that throws alone (its statements, deferred writes and commit hooks); the caller's other work commits", async () => {
    const db = await openWithTable(["CREATE TABLE t (v TEXT NOT NULL)"], { oneGroup: true });
    const deferred = rowsStatement<[string]>(1, "INSERT INTO t (v) SELECT c0 FROM batch");
    const hooked: string[] = [];
    const part = (tx: SqlWriter, v: string, fail: boolean) =>
      tx.savepoint(async () => {
        await tx.run("INSERT INTO t (v) VALUES (?)", [`${v}-run`]);
        tx.defer(deferred, [[`${v}-deferred`]]);
        tx.afterCommit(() => void hooked.push(v));
        if (fail) throw new Error(`${v} refused`);
        return v;
      });
    const [, kept] = await Promise.all([
      db.transaction((tx) => tx.run("INSERT INTO t (v) VALUES ('first')")),
      db.transaction(async (tx) => {
        const before = await part(tx, "before", false);
        await expect(part(tx, "undone", true)).rejects.toThrow("undone refused");
        return [before, await part(tx, "after", false)];
      }),
    ]);
    expect(kept).toEqual(["before", "after"]);
    expect((await db.all<{ v: string }>("SELECT v FROM t")).map((r) => r.v).sort()).toEqual(["after-deferred", "after-run", "before-deferred", "before-run", "first"]);
    expect(hooked).toEqual(["before", "after"]);
  });

  it("rejects a caller whose tx.savepoint finds its transaction rolled back by SQLite: its later statements are refused and nothing of the group is written", async () => {
    const db = await openWithTable(["CREATE TABLE t (v TEXT NOT NULL)", "CREATE TRIGGER boom BEFORE INSERT ON t WHEN NEW.v = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'rolled back whole'); END"], { oneGroup: true });
    const seen: string[] = [];
    const [first, second] = await Promise.allSettled([
      db.transaction((tx) => tx.run("INSERT INTO t (v) VALUES ('first')")),
      db.transaction(async (tx) => {
        await tx.run("INSERT INTO t (v) VALUES ('before')");
        // as a caller that goes on after a part failed: the part's error says the transaction is lost
        await tx.savepoint(() => tx.run("INSERT INTO t (v) VALUES ('boom')")).catch((err: unknown) => void seen.push((err as Error).constructor.name));
        await tx.run("INSERT INTO t (v) VALUES ('after')").catch((err: unknown) => void seen.push((err as Error).constructor.name));
      }),
    ]);
    expect(seen).toEqual(["TransactionLost", "TransactionLost"]);
    expect([first.status, second.status]).toEqual(["rejected", "rejected"]);
    expect(String((second as PromiseRejectedResult).reason)).toContain("rolled back whole");
    expect(await db.all("SELECT v FROM t")).toEqual([]);
  });

  it("answers a caller's result, and lastID/changes of its statements, as a lone transaction would", async () => {
    const db = await openWithTable(["CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT NOT NULL)"]);
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => db.transaction(async (tx) => (await tx.run("INSERT INTO t (v) VALUES (?)", [`v${i}`])).lastID)));
    expect(ids).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const changed = await db.transaction((tx) => tx.run("UPDATE t SET v = 'x' WHERE id <= 5"));
    expect(changed.changes).toBe(5);
  });

  it("runs afterCommit hooks once the commit is visible, in caller order, before the callers resolve; never for rolled-back writes", async () => {
    const db = await openWithTable(["CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"], { oneGroup: true });
    const seen = await observer(db.file);
    const log: string[] = [];
    const hook = (name: string) => async () => {
      // another connection sees the caller's row when its hook runs: the hook follows the COMMIT
      log.push(`${name}:${await seen.count("SELECT COUNT(*) AS n FROM t WHERE v = ?", [name])}`);
    };
    const pending: Array<Promise<void>> = [];
    const caller = (name: string, fail = false) =>
      db.transaction(async (tx) => {
        await tx.run("INSERT INTO t (v) VALUES (?)", [name]);
        tx.afterCommit(() => void pending.push(hook(name)()));
        tx.afterCommit(() => void log.push(`${name}:second`));
        if (fail) throw new Error(`${name} failed`);
      }).then(() => void log.push(`${name}:resolved`));
    // one group: a, b (rolled back to its savepoint), c; then a failed COMMIT runs no hook either
    const results = await Promise.allSettled([caller("a"), caller("b", true), caller("c")]);
    await Promise.all(pending);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(log.filter((l) => l.endsWith("second") || l.endsWith("resolved"))).toEqual(["a:second", "c:second", "a:resolved", "c:resolved"]);
    expect(log.filter((l) => /:\d$/.test(l)).sort()).toEqual(["a:1", "c:1"]);
    await seen.close();

    const fk = await openWithTable(
      [
        "CREATE TABLE parent (id INTEGER PRIMARY KEY)",
        "CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)",
      ],
      { oneGroup: true },
    );
    let ran = 0;
    const failed = await Promise.allSettled([
      fk.transaction(async (tx) => void tx.afterCommit(() => ran++)),
      fk.transaction(async (tx) => {
        await tx.run("INSERT INTO child (id, parent_id) VALUES (1, 99)");
        tx.afterCommit(() => ran++);
      }),
    ]);
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(ran).toBe(0);
  });

  it("runs a deferred statement once per group over its successful callers' items, in caller order, before the COMMIT", async () => {
    const db = await openWithTable(["CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT NOT NULL)"], { oneGroup: true });
    const seen = await observer(db.file);
    const runs: string[][] = [];
    const insert: GroupStatement<{ v: string; id?: number }> = {
      async run(w, items) {
        runs.push(items.map((i) => i.v));
        for (const item of items) item.id = (await w.run("INSERT INTO t (v) VALUES (?)", [item.v])).lastID;
      },
    };
    const hooked: string[] = [];
    const visible: Array<Promise<string>> = [];
    const caller = (name: string, values: string[], fail = false) =>
      db.transaction(async (tx) => {
        const items: Array<{ v: string; id?: number }> = values.map((v) => ({ v }));
        tx.defer(insert, items);
        // not written yet inside the caller's transaction
        expect(await tx.get("SELECT COUNT(*) AS n FROM t WHERE v = ?", [values[0]!])).toEqual({ n: 0 });
        tx.afterCommit(() => {
          visible.push(seen.count("SELECT COUNT(*) AS n FROM t WHERE v = ?", [values[0]!]).then((n) => `${name}:${n}`));
          hooked.push(`${name}:${items.map((i) => i.id).join(",")}`);
        });
        if (fail) throw new Error(`${name} failed`);
        return name;
      });
    // one group: a (2 items), b (fails: its items are dropped), c (1 item); then a lone caller
    const results = await Promise.allSettled([caller("a", ["a1", "a2"]), caller("b", ["b1"], true), caller("c", ["c1"])]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await caller("d", ["d1"])).toBe("d");
    expect(runs).toEqual([["a1", "a2", "c1"], ["d1"]]);
    expect(await db.all("SELECT id, v FROM t ORDER BY id")).toEqual([{ id: 1, v: "a1" }, { id: 2, v: "a2" }, { id: 3, v: "c1" }, { id: 4, v: "d1" }]);
    // the hooks saw the statement's results, and another connection saw the rows
    expect(hooked).toEqual(["a:1,2", "c:3", "d:4"]);
    expect(await Promise.all(visible)).toEqual(["a:1", "c:1", "d:1"]);
    await seen.close();
  });

  it("opens no savepoint for a caller that only defers: a group of them costs BEGIN, the deferred statement and COMMIT", async () => {
    const db = await openWithTable(["CREATE TABLE t (v TEXT NOT NULL)"], { oneGroup: true });
    const insert: GroupStatement<string> = {
      run: async (w, items) => void (await w.run("INSERT INTO t (v) SELECT value FROM json_each(?)", [JSON.stringify(items)])),
    };
    const before = db.stats();
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        db.transaction(async (tx) => {
          tx.defer(insert, [`v${i}`]);
          if (i === 7) throw new Error("caller 7 fails"); // nothing of its own to roll back
        }),
      ),
    );
    const after = db.stats();
    expect(results.filter((r) => r.status === "rejected")).toHaveLength(1);
    expect(after.commits - before.commits).toBe(1);
    expect(after.writerStatements - before.writerStatements).toBe(3);
    expect((await db.all<{ v: string }>("SELECT v FROM t ORDER BY rowid")).map((r) => r.v)).toEqual(Array.from({ length: 20 }, (_, i) => `v${i}`).filter((v) => v !== "v7"));
    // a caller that runs statements after one that only deferred still rolls back alone
    await Promise.allSettled([
      db.transaction(async (tx) => void tx.defer(insert, ["d1"])),
      db.transaction(async (tx) => {
        await tx.run("INSERT INTO t (v) VALUES ('undone')");
        throw new Error("fails after a write");
      }),
      db.transaction(async (tx) => void (await tx.run("INSERT INTO t (v) VALUES ('kept')"))),
      db.transaction(async (tx) => void tx.defer(insert, ["d2"])),
    ]);
    expect((await db.all<{ v: string }>("SELECT v FROM t WHERE v IN ('d1', 'undone', 'kept', 'd2') ORDER BY rowid")).map((r) => r.v)).toEqual(["kept", "d1", "d2"]);
  });

  it("rejects every caller of a group whose deferred statement throws, and writes none of the group", async () => {
    const db = await openWithTable(["CREATE TABLE t (v TEXT NOT NULL UNIQUE)"], { oneGroup: true });
    const insert: GroupStatement<string> = {
      async run(w, items) {
        for (const v of items) await w.run("INSERT INTO t (v) VALUES (?)", [v]);
      },
    };
    let hooks = 0;
    const results = await Promise.allSettled([
      db.transaction(async (tx) => {
        await tx.run("INSERT INTO t (v) VALUES ('direct')");
        tx.afterCommit(() => hooks++);
      }),
      db.transaction(async (tx) => void tx.defer(insert, ["x"])),
      db.transaction(async (tx) => void tx.defer(insert, ["x"])), // the duplicate fails the statement
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const r of results) expect(String((r as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
    expect(hooks).toBe(0);
    expect(await db.all("SELECT v FROM t")).toEqual([]);
    // the writer is usable again
    await db.transaction(async (tx) => void tx.defer(insert, ["y"]));
    expect(await db.all("SELECT v FROM t")).toEqual([{ v: "y" }]);
  });

  it("commits a group whose deferred statements all offer their text in one call to SQLite, BEGIN and COMMIT included", async () => {
    const db = await openWithTable(["CREATE TABLE t (v TEXT NOT NULL)", "CREATE TABLE u (v TEXT NOT NULL, n INTEGER)"], { oneGroup: true });
    const intoUn = rowsStatement<[string, number]>(2, "INSERT INTO u (v, n) SELECT c0, c1 FROM batch ORDER BY n");
    const before = db.stats();
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        db.transaction(async (tx) => {
          tx.defer(intoT, [[`v${i}`]]);
          if (i % 2 === 0) tx.defer(intoUn, [[`u${i}`, i]]);
          if (i === 7) throw new Error("caller 7 fails");
          return i;
        }),
      ),
    );
    const after = db.stats();
    expect(results.filter((r) => r.status === "rejected")).toHaveLength(1);
    expect(after.commits - before.commits).toBe(1);
    expect(after.writerStatements - before.writerStatements).toBe(1);
    expect(after.deferredFallbacks).toBe(before.deferredFallbacks);
    expect((await db.all<{ v: string }>("SELECT v FROM t ORDER BY rowid")).map((r) => r.v)).toEqual(Array.from({ length: 20 }, (_, i) => `v${i}`).filter((v) => v !== "v7"));
    expect(await db.all("SELECT v, n FROM u ORDER BY rowid")).toEqual(Array.from({ length: 10 }, (_, k) => ({ v: `u${2 * k}`, n: 2 * k })));
  });

  it("undoes a one call that failed in its deferred statements and runs them one by one, each once", async () => {
    const db = await openWithTable(["CREATE TABLE t (v TEXT NOT NULL)", "CREATE TABLE u (v TEXT NOT NULL)"], { oneGroup: true });
    const hooked: string[] = [];
    const results = await Promise.all([
      db.transaction(async (tx) => {
        await tx.run("INSERT INTO t (v) VALUES ('direct')");
        tx.afterCommit(() => hooked.push("a"));
        return "a";
      }),
      db.transaction(async (tx) => {
        tx.defer(intoT, [["deferred"]]);
        tx.defer(intoU, ["u1"]);
        tx.afterCommit(() => hooked.push("b"));
        return "b";
      }),
    ]);
    expect(results).toEqual(["a", "b"]);
    expect(hooked).toEqual(["a", "b"]);
    expect(db.stats().deferredFallbacks).toBe(1);
    expect(await db.all("SELECT v FROM t ORDER BY rowid")).toEqual([{ v: "direct" }, { v: "deferred" }]);
    expect(await db.all("SELECT v FROM u")).toEqual([{ v: "u1" }]);
  });

  it("rolls back a one call that began the transaction and failed in its deferred statements, and runs them one by one in a new one", async () => {
    const db = await openWithTable(["CREATE TABLE t (v TEXT NOT NULL)", "CREATE TABLE u (v TEXT NOT NULL)"], { oneGroup: true });
    const before = db.stats();
    // callers that only defer: the one call is BEGIN IMMEDIATE … COMMIT, and intoT's text ran before intoU's failed
    expect(await Promise.all(["a", "b"].map((v) => db.transaction(async (tx) => (tx.defer(intoT, [[v]]), tx.defer(intoU, [`u${v}`]), v))))).toEqual(["a", "b"]);
    expect(db.stats().deferredFallbacks - before.deferredFallbacks).toBe(1);
    expect(db.stats().commits - before.commits).toBe(1);
    expect(await db.all("SELECT v FROM t ORDER BY rowid")).toEqual([{ v: "a" }, { v: "b" }]);
    expect(await db.all("SELECT v FROM u ORDER BY rowid")).toEqual([{ v: "ua" }, { v: "ub" }]);
    // the writer is out of any transaction: a later group commits on its own
    await db.transaction(async (tx) => void tx.defer(intoT, [["c"]]));
    expect(await db.all("SELECT v FROM t ORDER BY rowid")).toEqual([{ v: "a" }, { v: "b" }, { v: "c" }]);
  });

  it("rejects every caller of a group whose deferred statements fail in the one call and one by one, and writes none of it", async () => {
    const db = await openWithTable(["CREATE TABLE t (v TEXT NOT NULL UNIQUE)"], { oneGroup: true });
    const insert = rowsStatement<[string]>(1, "INSERT INTO t (v) SELECT c0 FROM batch ORDER BY n");
    const results = await Promise.allSettled([
      db.transaction(async (tx) => void (await tx.run("INSERT INTO t (v) VALUES ('direct')"))),
      db.transaction(async (tx) => void tx.defer(insert, [["x"]])),
      db.transaction(async (tx) => void tx.defer(insert, [["x"]])), // the duplicate fails the statement
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const r of results) expect(String((r as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
    expect(db.stats().deferredFallbacks).toBe(1);
    expect(await db.all("SELECT v FROM t")).toEqual([]);
    await db.transaction(async (tx) => void tx.defer(insert, [["y"]]));
    expect(await db.all("SELECT v FROM t")).toEqual([{ v: "y" }]);
  });

  it("costs no call to SQLite for a group that writes nothing", async () => {
    const db = await openWithTable(["CREATE TABLE t (v TEXT NOT NULL)"]);
    const before = db.stats();
    let hooks = 0;
    expect(await Promise.all([db.transaction(async () => 1), db.transaction(async (tx) => (tx.afterCommit(() => hooks++), 2))])).toEqual([1, 2]);
    expect(hooks).toBe(1);
    expect(db.stats().writerStatements).toBe(before.writerStatements);
    expect(db.stats().commits).toBe(before.commits);
  });

  it("rejects the callers of a group whose BEGIN fails (another process holds the write lock), and begins again once it is free", async () => {
    const file = path.join(tempDir("svc-db-"), "svc.db");
    const db = closedAfterTest(await Database.open(file, { busyTimeoutMs: 50, groupMs: 10_000 }));
    await db.transaction((tx) => tx.run("CREATE TABLE t (v TEXT NOT NULL)"));
    const insert = rowsStatement<[string]>(1, "INSERT INTO t (v) SELECT c0 FROM batch ORDER BY n");
    const other = await new Promise<sqlite3.Database>((resolve, reject) => {
      const c = new sqlite3.Database(file, sqlite3.OPEN_READWRITE, (err) => (err ? reject(err) : resolve(c)));
    });
    const exec = (sql: string) => new Promise<void>((resolve, reject) => other.exec(sql, (err) => (err ? reject(err) : resolve())));
    await exec("BEGIN IMMEDIATE");
    try {
      // callers that only defer: the group's one call fails at its BEGIN
      const deferring = await Promise.allSettled([db.transaction(async (tx) => void tx.defer(insert, [["a"]])), db.transaction(async (tx) => void tx.defer(insert, [["b"]]))]);
      for (const r of deferring) expect(String((r as PromiseRejectedResult).reason)).toMatch(/SQLITE_BUSY/);
      // a caller that runs a statement begins the transaction: it gets SQLITE_BUSY, the caller before it hears why
      const [first, second] = await Promise.allSettled([
        db.transaction(async (tx) => void tx.defer(insert, [["c"]])),
        db.transaction(async (tx) => void (await tx.run("INSERT INTO t (v) VALUES ('d')"))),
      ]);
      expect(String((first as PromiseRejectedResult).reason)).toMatch(/could not begin \(SQLITE_BUSY/);
      expect(String((second as PromiseRejectedResult).reason)).toMatch(/SQLITE_BUSY/);
    } finally {
      await exec("COMMIT");
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
    expect(db.stats().deferredFallbacks).toBe(0);
    await Promise.all([db.transaction(async (tx) => void tx.defer(insert, [["e"]])), db.transaction((tx) => tx.run("INSERT INTO t (v) VALUES ('f')"))]);
    expect(await db.all("SELECT v FROM t ORDER BY rowid")).toEqual([{ v: "f" }, { v: "e" }]);
  });
});
