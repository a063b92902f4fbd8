// One connection's promise access (core/store/sql.ts) over a real SQLite file: statements whose SQL
// fails to prepare, and reads that must see the commits before them.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import sqlite3 from "sqlite3";
import { openConnection, sqlText, type Connection } from "./sql";
import { Database } from "./db";

let dir: string;
let conn: Connection;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-sql-"));
  conn = await openConnection(path.join(dir, "t.db"), sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE);
  await conn.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)");
});
afterEach(async () => {
  await conn.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Settles `p` or answers "pending" after `ms` (a promise that never settles is the bug this guards). */
const settled = <T>(p: Promise<T>, ms = 2000) =>
  Promise.race([p.then((value) => ({ value }), (error: Error) => ({ error })), new Promise<"pending">((r) => setTimeout(() => r("pending"), ms))]);

describe("openConnection", () => {
  it("rejects every call queued on a statement that fails to prepare, and prepares it again on the next call", async () => {
    const calls = [conn.run("INSERT INTO nope (k) VALUES (?)", ["a"]), conn.get("INSERT INTO nope (k) VALUES (?)", ["b"]), conn.all("INSERT INTO nope (k) VALUES (?)", ["c"])];
    const outcomes = await Promise.all(calls.map((c) => settled(c)));
    for (const outcome of outcomes) {
      expect(outcome).not.toBe("pending");
      expect((outcome as { error: Error }).error.message).toMatch(/no such table: nope/);
    }
    // the failed statement left the cache: once the table exists the same text runs
    await conn.exec("CREATE TABLE nope (k TEXT)");
    await expect(conn.run("INSERT INTO nope (k) VALUES (?)", ["d"])).resolves.toMatchObject({ changes: 1 });
    await expect(conn.all("SELECT k FROM nope")).resolves.toEqual([{ k: "d" }]);
  });

  it("answers a syntax error as SQLite's error and goes on with the other statements", async () => {
    const bad = settled(conn.get("SELEC 1"));
    const good = conn.run("INSERT INTO t (k, v) VALUES (?, ?)", ["x", 1]);
    expect(await bad).toMatchObject({ error: expect.objectContaining({ message: expect.stringMatching(/syntax error/) }) });
    await expect(good).resolves.toMatchObject({ changes: 1 });
    await expect(conn.get("SELECT v FROM t WHERE k = ?", ["x"])).resolves.toEqual({ v: 1 });
  });
});

describe("sqlText", () => {
  it("writes a literal SQLite reads back as the same text, with and without quotes", async () => {
    const texts = ["", "plain", "it's", "''", JSON.stringify([["a'b", "c''d", "$&", "\\'"]]), "naïve ✓ 😀"];
    for (const text of texts) expect(await conn.get(`SELECT ${sqlText(text)} AS t`)).toEqual({ t: text });
  });
});

describe("Database.transaction with a statement that fails to prepare", () => {
  it("rejects that caller alone; the group's other callers commit", async () => {
    const db = await Database.open(path.join(dir, "g.db"), { groupMs: 200 });
    try {
      await db.transaction((tx) => tx.run("CREATE TABLE kv (k TEXT PRIMARY KEY)"));
      const first = db.transaction((tx) => tx.run("INSERT INTO kv (k) VALUES ('a')"));
      const broken = settled(db.transaction((tx) => tx.run("INSERT INTO missing (k) VALUES ('b')")));
      const last = db.transaction((tx) => tx.run("INSERT INTO kv (k) VALUES ('c')"));
      expect(await broken).toMatchObject({ error: expect.objectContaining({ message: expect.stringMatching(/no such table: missing/) }) });
      await Promise.all([first, last]);
      expect(await db.all("SELECT k FROM kv ORDER BY k")).toEqual([{ k: "a" }, { k: "c" }]);
    } finally {
      await db.close();
    }
  });
});

describe("Database reads after a commit", () => {
  it("a read that starts after a commit resolved sees it, while other reads keep the reader busy", async () => {
    const db = await Database.open(path.join(dir, "r.db"));
    let stop = false;
    try {
      await db.transaction(async (tx) => {
        await tx.run("CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)");
        await tx.run("INSERT INTO kv (k, v) VALUES (-1, 'a'), (-2, 'b')");
      });
      // gets of other statements, back to back: each one's row used to keep its statement (and the
      // reader's snapshot) open until a reset that ran after the get had answered
      const busy = (sql: string) => (async () => {
        while (!stop) await db.get(sql);
      })();
      const loops = [busy("SELECT v FROM kv WHERE k = -1"), busy("SELECT v FROM kv WHERE k = -2"), busy("SELECT count(*) AS n FROM kv"), busy("SELECT max(k) AS m FROM kv")];
      const missed: number[] = [];
      for (let k = 1; k <= 300; k++) {
        await db.transaction((tx) => tx.run("INSERT INTO kv (k, v) VALUES (?, 'x')", [k]));
        if (!(await db.get("SELECT v FROM kv WHERE k = ?", [k]))) missed.push(k);
      }
      stop = true;
      await Promise.all(loops);
      expect(missed).toEqual([]);
    } finally {
      stop = true;
      await db.close();
    }
  });
});
