import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import pino from "pino";
import { Database } from "../store/db";
import { SqliteEventStream } from "../events/sqlite-stream";
import type { EventStream } from "../events/stream";
import { Outbox } from "../events/outbox";
import { EVENT_KEYS_BATCH, EVENT_KEYS_DUE, EventLog, pruneEventKeys, type AppendInput } from "../events/log";
import { ProjectRegistry } from "../project/registry";
import { OntologyStore } from "../ontology/store";
import { FileStore } from "../files/file-store";
import { LocalBlobStore } from "../files/local-blob-store";
import { ApiError } from "../errors";
import { sandboxProject } from "../../sandbox/project";
import { tempDir } from "../../test/helpers-fs";
import { Metrics } from "../metrics";

const log = pino({ level: "silent" });
const opened: Database[] = [];

/**
 * The SQLite stream seen as a broker stream: append and read only, so the event log writes through
 * the outbox (what NATS gets; test/nats.test.ts runs the real broker).
 */
function asBroker(stream: SqliteEventStream): EventStream {
  return {
    append: (e) => stream.append(e),
    read: (q) => stream.read(q),
    latestCursor: () => stream.latestCursor(),
    prune: (ms) => stream.prune(ms),
    notifier: stream.notifier,
  };
}

async function open(dir = tempDir(), opts: { broker?: boolean } = {}) {
  const db = await Database.open(path.join(dir, "svc.db"));
  opened.push(db);
  const sqlite = await SqliteEventStream.open(db);
  const stream = opts.broker ? asBroker(sqlite) : sqlite;
  const outbox = new Outbox(db, stream, log);
  const project = new ProjectRegistry(sandboxProject);
  const metrics = new Metrics();
  const events = new EventLog(db, outbox, stream, project, log, metrics);
  const ontology = new OntologyStore(db, events, project, new FileStore(db, await LocalBlobStore.open(path.join(path.dirname(db.file), "blobs"))));
  return { dir, db, stream, sqlite, outbox, events, ontology, metrics };
}

afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

const scheduleEvent = (n: number) => { const at = new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(); return { type: "schedule.triggered" as const, payload: { scheduleId: "s", occurrenceAt: at, triggeredAt: at, occurrenceKey: `k${n}` } }; };

describe("event log (SQLite files, outbox, stream)", () => {
  it.each([false, true])("counts the events it wrote once their transaction commits, none rolled back (svc_events_appended_total; broker stream: %s)", async (broker) => {
    const { db, events, metrics } = await open(undefined, { broker });
    const appended = async () => (await metrics.registry.getSingleMetric("svc_events_appended_total")!.get()).values.find((v) => v.labels.type === "schedule.triggered")?.value ?? 0;
    await db.transaction((tx) => events.writeInTx(tx, events.prepare([scheduleEvent(1), scheduleEvent(2)])));
    expect(await appended()).toBe(2);
    // a caller that throws, a savepoint rolled back: nothing of theirs was written, nothing counted
    await expect(db.transaction(async (tx) => { await events.writeInTx(tx, events.prepare([scheduleEvent(3)])); throw new Error("refused"); })).rejects.toThrow("refused");
    await db.transaction((tx) => tx.savepoint(async () => { await events.writeInTx(tx, events.prepare([scheduleEvent(4)])); throw new Error("undone"); }).catch(() => undefined));
    expect(await appended()).toBe(2);
    // a write that throws (a payload JSON cannot carry), caught by a caller that goes on and commits: not counted
    const unwritable = events.envelope({ type: "schedule.triggered", payload: { ...scheduleEvent(6).payload, n: 1n } });
    await db.transaction(async (tx) => {
      await expect(events.writeInTx(tx, [unwritable])).rejects.toThrow(/BigInt/);
      await events.writeInTx(tx, events.prepare([scheduleEvent(7)]));
    });
    expect(await appended()).toBe(3);
    // an idempotency key already used writes nothing the second time
    const keyed = () => events.prepare([{ ...scheduleEvent(5), idempotencyKey: "once" }]);
    await db.transaction((tx) => events.writeInTx(tx, keyed()));
    await db.transaction((tx) => events.writeInTx(tx, keyed()));
    expect(await appended()).toBe(4);
    await events.drain(5000);
    expect((await events.read({ limit: 100 })).length).toBe(4);
  });

  it("pages with the last cursor without gaps or repeats, oldest first", async () => {
    const { events } = await open();
    await events.append(Array.from({ length: 37 }, (_, i) => scheduleEvent(i)));
    const all = await events.read({ limit: 1000 });
    expect(all).toHaveLength(37);
    const paged: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await events.read({ afterCursor: cursor, limit: 5 });
      if (page.length === 0) break;
      paged.push(...page.map((e) => e.id));
      cursor = page[page.length - 1]!.cursor;
    }
    expect(paged).toEqual(all.map((e) => e.id));
    expect(new Set(paged).size).toBe(37);
    expect(all.map((e) => e.payload.occurrenceKey)).toEqual(Array.from({ length: 37 }, (_, i) => `k${i}`));
    expect(all[0]!.cursor).not.toMatch(/^\d+$/);
  });

  it("refuses a cursor of another database and answers cursor_expired after retention pruned past it", async () => {
    const a = await open();
    const b = await open();
    await a.events.append([scheduleEvent(1)]);
    await b.events.append([scheduleEvent(1), scheduleEvent(2)]);
    const [first] = await a.events.read({ limit: 1 });
    await expect(b.events.read({ afterCursor: first!.cursor, limit: 10 })).rejects.toMatchObject({ code: "invalid_request" });
    await expect(b.events.read({ afterCursor: "not-a-cursor", limit: 10 })).rejects.toMatchObject({ code: "invalid_request" });

    const [oldest] = await b.events.read({ limit: 1 });
    await new Promise((r) => setTimeout(r, 20));
    expect(await b.stream.prune(5)).toBe(2);
    await expect(b.events.read({ afterCursor: oldest!.cursor, limit: 10 })).rejects.toMatchObject({ code: "cursor_expired" });
  });

  it("refuses appends of ontology events and of payloads lacking catalog fields, writing nothing", async () => {
    const { events } = await open();
    await expect(events.append([scheduleEvent(1), { type: "object.created", payload: { objectTypeId: "invoice", primaryId: "x" } }])).rejects.toThrow(ApiError);
    await expect(events.append([{ type: "schedule.triggered", payload: { scheduleId: "s" } }])).rejects.toThrow(/lacks occurrenceAt/);
    expect(await events.read({ limit: 10 })).toHaveLength(0);
  });

  it("refuses catalog fields of another kind, as POST /api/events does (handlers' ctx.events.append goes through here), writing nothing", async () => {
    const { events } = await open();
    const cases: Array<[AppendInput, RegExp]> = [
      [{ type: "workflow.run.finished", payload: { workflowId: 123, runId: "r" } }, /workflowId must be a non-empty string/],
      [{ type: "workflow.run.finished", payload: { workflowId: "w", runId: "" } }, /runId must be a non-empty string/],
      [{ type: "action.failed", payload: { actionId: "a", runId: "r", error: "boom", finishedAt: "2026-01-01T00:00:00Z" } }, /error must be an object with a message/],
      [{ type: "action.completed", payload: { actionId: "a", runId: "r", finishedAt: "yesterday" } }, /finishedAt must be an ISO 8601 timestamp/],
      [{ type: "rule.triggered", payload: { ruleId: "r", subject: "inv_1" } }, /subject must be \{ kind: "object", objectTypeId, primaryId \}/],
    ];
    for (const [input, message] of cases) await expect(events.append([scheduleEvent(1), input]), input.type).rejects.toThrow(message);
    expect(await events.read({ limit: 10 })).toHaveLength(0);
  });

  it("de-duplicates appends on idempotencyKey", async () => {
    const { events } = await open();
    await events.append([{ ...scheduleEvent(1), idempotencyKey: "k" }]);
    await events.append([{ ...scheduleEvent(2), idempotencyKey: "k" }]);
    expect(await events.read({ limit: 10 })).toHaveLength(1);
  });

  it.each([{ broker: false }, { broker: true }])("looks up a batch's keys in one statement: used keys, repeats in the batch and unkeyed events (broker %o)", async (opts) => {
    const { db, events } = await open(tempDir(), opts);
    await events.append([{ ...scheduleEvent(0), idempotencyKey: "used" }]);
    const batch = [
      { ...scheduleEvent(1), idempotencyKey: "a" },
      { ...scheduleEvent(2), idempotencyKey: "used" },
      scheduleEvent(3),
      { ...scheduleEvent(4), idempotencyKey: "a" },
      { ...scheduleEvent(5), idempotencyKey: "b" },
    ].map((input) => events.envelope(input));
    const before = db.stats().writerStatements;
    const written = await db.transaction((tx) => events.writeInTx(tx, batch));
    expect(written.map((e) => e.payload.occurrenceKey)).toEqual(["k1", "k3", "k5"]);
    // BEGIN, the keys' one INSERT … RETURNING (one per key before), COMMIT carrying the events
    if (!opts.broker) expect(db.stats().writerStatements - before).toBe(3);
    await events.drain(2000);
    const read = await events.read({ limit: 10 });
    expect(read.map((e) => e.payload.occurrenceKey)).toEqual(["k0", "k1", "k3", "k5"]);
    expect(await db.all("SELECT idempotency_key AS key, event_id AS id FROM event_keys ORDER BY key")).toEqual([
      { key: "a", id: batch[0]!.id },
      { key: "b", id: batch[4]!.id },
      { key: "used", id: read[0]!.id },
    ]);
  });

  it.each([{ broker: false }, { broker: true }])("forgets the event keys recorded before the retention's cutoff, a batch per transaction along their time index, whatever the stream (broker %o)", async (opts) => {
    const { db, events } = await open(tempDir(), opts);
    await events.append([{ ...scheduleEvent(1), idempotencyKey: "old" }]);
    await events.append([{ ...scheduleEvent(2), idempotencyKey: "recent" }]);
    // "old" and two batches and a bit of other keys recorded a day ago
    const dayAgo = new Date(Date.now() - 86_400_000).toISOString();
    await db.transaction((tx) => tx.run("UPDATE event_keys SET created_at = ? WHERE idempotency_key = 'old'", [dayAgo]));
    const filler = Array.from({ length: 2 * EVENT_KEYS_BATCH + 2 }, (_, i) => [`filler-${i}`, `evt_${i}`, dayAgo]);
    await db.transaction((tx) => tx.run("INSERT INTO event_keys (idempotency_key, event_id, created_at) SELECT value->>0, value->>1, value->>2 FROM json_each(?)", [JSON.stringify(filler)]));
    const before = db.stats().transactions;
    expect(await pruneEventKeys(db, Date.now() - 3_600_000)).toBe(filler.length + 1);
    expect(db.stats().transactions - before).toBe(3);
    expect(await db.all("SELECT idempotency_key AS key FROM event_keys")).toEqual([{ key: "recent" }]);
    // the forgotten key appends again; the kept one is still a duplicate
    await events.append([{ ...scheduleEvent(3), idempotencyKey: "old" }, { ...scheduleEvent(4), idempotencyKey: "recent" }]);
    await events.drain(2000);
    expect((await events.read({ limit: 10 })).map((e) => e.payload.occurrenceKey)).toEqual(["k1", "k2", "k3"]);
    // a key whose event still waits in the outbox (a broker down longer than the retention) stays
    await db.transaction(async (tx) => {
      await tx.run("INSERT INTO event_keys (idempotency_key, event_id, created_at) VALUES ('waiting', 'evt_waiting', ?)", [dayAgo]);
      await tx.run("INSERT INTO outbox (event_id, envelope, created_at) VALUES ('evt_waiting', '{}', ?)", [dayAgo]);
    });
    expect(await pruneEventKeys(db, Date.now() - 3_600_000)).toBe(0);
    expect(await db.get("SELECT event_id FROM event_keys WHERE idempotency_key = 'waiting'")).toEqual({ event_id: "evt_waiting" });
    // a batch is found along the index, not by a scan of every key; the outbox by its event id
    const plan = (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${EVENT_KEYS_DUE}`, [dayAgo])).map((p) => p.detail).join("\n");
    expect(plan).toMatch(/^SEARCH k USING INDEX event_keys_by_time \(created_at<\?\)/);
    expect(plan).toMatch(/SEARCH o USING COVERING INDEX sqlite_autoindex_outbox_\d \(event_id=\?\)/);
    expect(plan).not.toMatch(/\bSCAN\b/);
  });

  it("puts a transaction's events in the SQLite stream exactly when it commits: none of a caller rolled back, nothing in the outbox", async () => {
    const { db, stream, events } = await open();
    let notices = 0;
    stream.notifier.on("appended", () => notices++);
    const ok = (n: number) => db.transaction((tx) => events.writeInTx(tx, [events.envelope(scheduleEvent(n))]));
    const failing = db.transaction(async (tx) => {
      await events.writeInTx(tx, [events.envelope(scheduleEvent(99))]);
      throw new Error("handler failed");
    });
    // one group commit: three callers, the middle one rolled back to its savepoint
    const results = await Promise.allSettled([ok(1), failing, ok(2)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const read = await events.read({ limit: 10 });
    expect(read.map((e) => e.payload.occurrenceKey)).toEqual(["k1", "k2"]);
    // the tail (answers reads after a cursor) holds the committed events, contiguous
    expect((await events.read({ afterCursor: read[0]!.cursor, limit: 10 })).map((e) => e.payload.occurrenceKey)).toEqual(["k2"]);
    expect(await db.get("SELECT COUNT(*) AS n FROM outbox")).toEqual({ n: 0 });
    expect(notices).toBe(1); // once for the group
    // nothing is visible before the commit, and a crash after it loses nothing: the events are rows of the same commit
    const before = db.stats().commits;
    await ok(3);
    expect(db.stats().commits - before).toBe(1);
    expect(await events.read({ limit: 10 })).toHaveLength(3);
  });

  it("recovers envelopes committed but never drained with a broker stream (crash between commit and drain)", async () => {
    const first = await open(undefined, { broker: true });
    // commit rows and their events without draining, as a process killed right after COMMIT would
    await first.db.transaction((tx) =>
      first.ontology.applyInTx(tx, [{ op: "object.upsert", objectTypeId: "customer", primaryId: "c1", properties: { name: "C1" } }], { origin: { kind: "runtime" }, correlationId: "crash" }),
    );
    expect((await first.outbox.stats()).backlog).toBe(1);
    expect(await first.events.read({ limit: 10 })).toHaveLength(0);
    await first.db.close();
    opened.splice(opened.indexOf(first.db), 1);

    const second = await open(first.dir, { broker: true });
    expect((await second.outbox.stats()).backlog).toBe(1);
    await second.outbox.drain(); // what startup and the 60 s recovery pass do
    const [event] = await second.events.read({ limit: 10 });
    expect(event).toMatchObject({ type: "object.created", correlationId: "crash", payload: { objectTypeId: "customer", primaryId: "c1" } });
    expect((await second.outbox.stats()).backlog).toBe(0);
    // draining again (a redelivery) adds nothing: ids are stable, the stream ignores repeats
    await second.stream.append([{ ...event!, cursor: undefined } as never]);
    expect(await second.events.read({ limit: 10 })).toHaveLength(1);
  });

  it("keeps envelopes durable while the stream rejects them, counting failures", async () => {
    const { db, stream, sqlite, events } = await open(undefined, { broker: true });
    const down = async () => {
      throw new Error("broker down");
    };
    const failing = Object.assign(Object.create(stream), { append: down });
    const outbox = new Outbox(db, failing, log);
    await db.transaction((tx) => events.writeInTx(tx, [events.envelope(scheduleEvent(1))]));
    for (let i = 0; i < Outbox.DEGRADED_AFTER; i++) await outbox.drain();
    expect(await outbox.stats()).toMatchObject({ backlog: 1, consecutiveFailures: Outbox.DEGRADED_AFTER, lastError: "broker down" });
    // the SQLite stream takes the outbox's delete into its append: one commit delivers the batch
    // (envelopes an older version left in the outbox of a SQLite stream)
    const commits = db.stats().commits;
    await new Outbox(db, sqlite, log).drain();
    expect(db.stats().commits - commits).toBe(1);
    expect(await events.read({ limit: 10 })).toHaveLength(1);
    expect(await outbox.stats()).toMatchObject({ backlog: 0 });
  });
});
