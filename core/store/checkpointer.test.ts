/** WAL checkpoints of the store (core/store/checkpointer.ts) through the Database that runs them (real files). */
import fs from "node:fs";
import path from "node:path";
import sqlite3 from "sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { Database } from "./db";
import { WalCheckpointer } from "./checkpointer";
import { tempDir } from "../../test/helpers-fs";

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

/** A database with one table of blobs. */
async function openWithBlobs(): Promise<Database> {
  const db = await Database.open(path.join(tempDir("svc-db-"), "svc.db"));
  opened.push(db);
  await db.transaction((tx) => tx.run("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB)"));
  return db;
}

describe("WalCheckpointer", () => {
  it("checkpoints the WAL on its own connection after commits, never inside a writer's COMMIT", async () => {
    const db = await openWithBlobs();
    const { size: before } = fs.statSync(db.file);
    // ~2,500 pages in one commit: SQLite's automatic checkpoint (1,000 pages) would copy them into the
    // database file during this COMMIT
    await db.transaction(async (tx) => {
      for (let i = 0; i < 2_500; i++) await tx.run("INSERT INTO blobs (data) VALUES (?)", [Buffer.alloc(4000, i % 256)]);
    });
    expect(fs.statSync(db.file).size - before).toBeLessThan(1024 * 1024);
    expect(fs.statSync(`${db.file}-wal`).size).toBeGreaterThan(10 * 1024 * 1024);
    const deadline = Date.now() + 10 * WalCheckpointer.INTERVAL_MS;
    while (fs.statSync(db.file).size - before < 10 * 1024 * 1024 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(fs.statSync(db.file).size - before).toBeGreaterThan(10 * 1024 * 1024);
    expect(db.stats().checkpoints).toBeGreaterThanOrEqual(1);
    // no commits since: no more checkpoints
    const n = db.stats().checkpoints;
    await new Promise((r) => setTimeout(r, 3 * WalCheckpointer.INTERVAL_MS));
    expect(db.stats().checkpoints).toBe(n);
    expect(await db.get("SELECT COUNT(*) AS n FROM blobs")).toEqual({ n: 2_500 });
  });

  it("keeps the WAL from growing without end under steady writes and reads: the writer rewinds it once it is large", async () => {
    const db = await openWithBlobs();
    let reading = true;
    // short reads one after another, as requests make them: a passive checkpoint alone never finds a
    // moment with the WAL all copied back and nobody on it, so SQLite never rewinds it
    let id = 0;
    const reads = (async () => {
      while (reading) await db.get("SELECT id FROM blobs WHERE id = ?", [id++ % 1000]);
    })();
    const batches = Math.ceil((3 * WalCheckpointer.RESTART_FRAMES) / 100);
    const pages = batches * 100;
    for (let i = 0; i < batches; i++) {
      await db.transaction(async (tx) => {
        for (let k = 0; k < 100; k++) await tx.run("INSERT INTO blobs (data) VALUES (?)", [Buffer.alloc(4000, k)]);
      });
      await new Promise((r) => setTimeout(r, (4 * WalCheckpointer.INTERVAL_MS) / batches));
    }
    reading = false;
    await reads;
    expect(db.stats().walRewinds).toBeGreaterThanOrEqual(1);
    // the WAL file was rewound, not extended by every page written (4 KiB pages plus frame headers)
    expect(fs.statSync(`${db.file}-wal`).size).toBeLessThan(pages * 4096 * 0.8);
    expect(await db.get("SELECT COUNT(*) AS n FROM blobs")).toEqual({ n: pages });
  });

  it("falls back to a RESTART checkpoint while a reader holds an old snapshot, and rewinds the WAL once it lets go", async () => {
    const db = await openWithBlobs();
    /** About `frames` WAL frames at once, then a small commit every 50 ms for `ms` (each checkpoint tick needs commits). */
    const write = async (frames: number, ms: number) => {
      await db.transaction(async (tx) => {
        for (let k = 0; k < frames; k++) await tx.run("INSERT INTO blobs (data) VALUES (?)", [Buffer.alloc(4000, k % 256)]);
      });
      for (const until = Date.now() + ms; Date.now() < until; ) {
        await db.transaction((tx) => tx.run("INSERT INTO blobs (data) VALUES (?)", [Buffer.alloc(10)]));
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await write(10, 0);
    // a reader in a long read transaction, on a snapshot in the WAL: no pass can copy past it
    const pin = await new Promise<sqlite3.Database>((resolve, reject) => {
      const c = new sqlite3.Database(db.file, sqlite3.OPEN_READONLY, (err) => (err ? reject(err) : resolve(c)));
    });
    const exec = (sql: string) => new Promise<void>((resolve, reject) => pin.exec(sql, (err) => (err ? reject(err) : resolve())));
    await exec("BEGIN");
    await new Promise((resolve, reject) => pin.get("SELECT COUNT(*) AS n FROM blobs", (err, row) => (err ? reject(err) : resolve(row))));
    // a WAL long enough for a rewind, over enough checkpoint ticks for the fallback
    await write(WalCheckpointer.RESTART_FRAMES, (WalCheckpointer.RESTART_FALLBACK_AFTER + 2) * WalCheckpointer.INTERVAL_MS);
    expect(db.stats().walRestartFallbacks).toBeGreaterThanOrEqual(1);
    expect(db.stats().walRewinds).toBe(0);
    await exec("COMMIT");
    await new Promise<void>((resolve) => pin.close(() => resolve()));
    await write(WalCheckpointer.RESTART_FRAMES, 3 * WalCheckpointer.INTERVAL_MS);
    expect(db.stats().walRewinds).toBeGreaterThanOrEqual(1);
  });
});
