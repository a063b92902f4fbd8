/** The SQLite wrapper's statement cache under concurrency (real files). */
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Database } from "./db";
import { tempDir } from "../../test/helpers-fs";

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

describe("Database", () => {
  it("answers every one of many concurrent gets of one cached statement, with and without parameters", async () => {
    const db = await Database.open(path.join(tempDir("svc-db-"), "svc.db"));
    opened.push(db);
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
