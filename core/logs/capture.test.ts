/** Handler log capture (spec 2.5): a flush's lines, stored and read back, against a real SQLite file. */
import path from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Database } from "../store/db";
import { SqliteEventStream } from "../events/sqlite-stream";
import { tempDir } from "../../test/helpers-fs";
import { LogCapture, logsPageQuery } from "./capture";

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

async function openCapture(): Promise<{ db: Database; capture: LogCapture }> {
  const db = await Database.open(path.join(tempDir("svc-logs-"), "svc.db"));
  opened.push(db);
  await SqliteEventStream.open(db); // sets the stream epoch the log cursors carry
  return { db, capture: await LogCapture.open(db) };
}

describe("LogCapture", () => {
  it("never throws for what a handler logs: circular objects, BigInts, undefined, nested errors with causes (logging must not fail a run)", async () => {
    const { capture } = await openCapture();
    const log = capture.logger(pino({ level: "info", enabled: false }), { kind: "action", id: "run_odd" });
    const circular: Record<string, unknown> = { name: "loop" };
    circular.self = circular;
    circular.list = [circular, 1];
    expect(() => log.info({ req: circular }, "circular")).not.toThrow();
    expect(() => log.info({ big: 12345678901234567890n, fn: () => 1, sym: Symbol("s"), nan: Number.NaN, when: new Date(0) }, "odd values")).not.toThrow();
    expect(() => log.info(undefined as unknown as object)).not.toThrow();
    expect(() => log.warn({ detail: { cause: new Error("outer", { cause: new TypeError("inner") }) } }, "nested error")).not.toThrow();
    await capture.flush();
    const lines = await capture.read({ run: { kind: "action", id: "run_odd" }, limit: 10 });
    expect(lines.map((l) => [l.message, l.fields])).toEqual([
      ["circular", { req: { name: "loop", self: "[Circular]", list: ["[Circular]", 1] } }],
      ["odd values", { big: "12345678901234567890", nan: null, when: "1970-01-01T00:00:00.000Z" }],
      ["", {}],
      ["nested error", { detail: { cause: { type: "Error", message: "outer", cause: { type: "TypeError", message: "inner" } } } }],
    ]);
  });

  it("stores a flush's lines in their order, exactly as logged, in one call to SQLite", async () => {
    const { db, capture } = await openCapture();
    const silent = pino({ level: "silent" });
    const a = capture.logger(silent, { kind: "action", id: "run_a" }, { actionId: "diagnostics.noop" });
    const b = capture.logger(silent, { kind: "webhook", id: "whrun_b" });
    // what the batch INSERT writes into SQL text must come back as it was: quotes, `$&`, NUL, astral
    const messages = ["plain", "it's \"quoted\"", "$& and $' stay", "nul \u0000 inside", "ünïcödé 🧾", "'); DROP TABLE logs; --"];
    messages.forEach((m, i) => (i % 2 ? b.warn({ i, nested: { list: [i, null] } }, m) : a.info(m)));
    const before = db.stats();
    await capture.flush();
    expect(db.stats().writerStatements - before.writerStatements).toBe(1);
    const lines = await capture.read({ limit: 100 });
    expect(lines.map((l) => l.message)).toEqual(messages);
    expect(lines.map((l) => [l.level, l.run])).toEqual(messages.map((_, i) => (i % 2 ? ["warn", { kind: "webhook", id: "whrun_b" }] : ["info", { kind: "action", id: "run_a" }])));
    expect(lines[0]!.fields).toEqual({ actionId: "diagnostics.noop" });
    expect(lines[1]!.fields).toEqual({ i: 1, nested: { list: [1, null] } });
    // cursors follow the order: reading on after the third line answers the rest
    expect((await capture.read({ limit: 100, afterCursor: lines[2]!.cursor })).map((l) => l.message)).toEqual(messages.slice(3));
  });

  it("writes a handler's lines to the process log with the run bound, making the pino child only at the first line", async () => {
    const { capture } = await openCapture();
    const written: Record<string, unknown>[] = [];
    const base = pino({ level: "info" }, { write: (line: string) => void written.push(JSON.parse(line) as Record<string, unknown>) });
    const child = vi.spyOn(base, "child");
    capture.logger(base, { kind: "action", id: "run_quiet" }); // a run that logs nothing costs no child
    expect(child).not.toHaveBeenCalled();
    const log = capture.logger(base, { kind: "action", id: "run_a" }, { actionId: "diagnostics.noop" });
    log.info("first");
    log.warn({ n: 2 }, "second");
    expect(child).toHaveBeenCalledTimes(1);
    expect(written.map(({ msg, run, actionId, n }) => ({ msg, run, actionId, n }))).toEqual([
      { msg: "first", run: { kind: "action", id: "run_a" }, actionId: "diagnostics.noop", n: undefined },
      { msg: "second", run: { kind: "action", id: "run_a" }, actionId: "diagnostics.noop", n: 2 },
    ]);
    await capture.flush();
  });

  it("captures a line below the service's level without making a pino child or writing it to the process log", async () => {
    const { capture } = await openCapture();
    const written: string[] = [];
    const base = pino({ level: "warn" }, { write: (line: string) => void written.push(line) });
    const child = vi.spyOn(base, "child");
    const log = capture.logger(base, { kind: "webhook", id: "whrun_q" }, { connectorId: "c", webhookId: "w", attempt: 1 });
    log.info({ messageId: "msg_1" }, "received");
    expect(child).not.toHaveBeenCalled();
    expect(written).toEqual([]);
    log.warn("slow");
    expect(child).toHaveBeenCalledTimes(1);
    expect(written.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(["slow"]);
    await capture.flush();
    const lines = await capture.read({ limit: 10 });
    expect(lines.map((l) => [l.level, l.message, l.fields])).toEqual([
      ["info", "received", { connectorId: "c", webhookId: "w", attempt: 1, messageId: "msg_1" }],
      ["warn", "slow", { connectorId: "c", webhookId: "w", attempt: 1 }],
    ]);
  });
});

describe("logsPageQuery", () => {
  it("follows by kinds along the seqs after the position, and reads from the start by kinds or by run along logs_by_run", async () => {
    const { db } = await openCapture();
    const plan = async (q: Parameters<typeof logsPageQuery>[0], afterSeq: number | undefined) => {
      const { sql, params } = logsPageQuery(q, 1000, afterSeq);
      return (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => r.detail).join(" | ");
    };
    // a follower by kinds: the primary key's range, no sort (it read every line of those kinds and sorted them)
    expect(await plan({ kinds: ["action", "webhook"], limit: 100 }, 900)).toMatch(/^SEARCH logs USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)$/);
    // from the start by kinds, and by run: the index
    expect(await plan({ kinds: ["action"], limit: 100 }, undefined)).toMatch(/^SEARCH logs USING INDEX logs_by_run \(run_kind=\?\)/);
    expect(await plan({ run: { kind: "action", id: "run_1" }, kinds: ["action"], limit: 100 }, 900)).toMatch(/^SEARCH logs USING INDEX logs_by_run \(run_kind=\? AND run_id=\? AND seq>\? AND seq<\?\)$/);
  });

  it("answers the same lines either way", async () => {
    const { capture } = await openCapture();
    const log = (kind: string, id: string) => capture.logger(pino({ level: "info", enabled: false }), { kind, id });
    for (let i = 0; i < 30; i++) log(["action", "webhook", "sync"][i % 3]!, `run_${i}`).info({ i }, `line ${i}`);
    await capture.flush();
    const all = await capture.read({ limit: 100 });
    const after = all[4]!.cursor;
    const followed = await capture.read({ kinds: ["sync", "webhook"], afterCursor: after, limit: 100 });
    expect(followed.map((l) => l.message)).toEqual(all.slice(5).filter((l) => l.run.kind !== "action").map((l) => l.message));
  });
});
