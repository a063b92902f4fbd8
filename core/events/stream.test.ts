/** The SQLite stream's JSON reads (GET /api/events) against its object reads, from memory and from SQLite. */
import path from "node:path";
import sqlite3 from "sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { Database } from "../store/db";
import { SqliteEventStream } from "./sqlite-stream";
import { EventTail } from "./event-tail";
import { readEventsJson, type EventJsonPage, type StreamQuery } from "./stream";
import type { DomainEventEnvelope } from "./catalog";
import { tempDir } from "../../test/helpers-fs";
import { allCursors, expectScanContract, readOnly, scanToEnd } from "../../test/helpers-streams";

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

/** The events of a JSON page, parsed (and checked against its count and its last cursor). */
const eventsOf = (page: EventJsonPage): unknown[] => {
  const events = JSON.parse(`[${page.json.toString("utf8")}]`) as { cursor: string }[];
  expect(events).toHaveLength(page.count);
  expect(page.lastCursor).toBe(events.at(-1)?.cursor);
  return events;
};

const envelopes = (n: number): DomainEventEnvelope[] =>
  Array.from({ length: n }, (_, i) =>
    i % 3 === 0
      ? { id: `evt_s${i}`, schemaVersion: 1, projectId: "p", occurredAt: "2026-01-01T00:00:00.000Z", type: "schedule.triggered", topic: "schedules", partitionKey: "s", payload: { scheduleId: "s", occurrenceAt: `${i}`, triggeredAt: "t", occurrenceKey: `k${i}`, note: 'quotes " and \\ and ünïcödé 🎉' } }
      : { id: `evt_a${i}`, schemaVersion: 1, projectId: "p", occurredAt: "2026-01-01T00:00:00.000Z", type: i % 3 === 1 ? "action.requested" : "action.completed", topic: "actions", partitionKey: `r${i}`, payload: { actionId: "diagnostics.noop", runId: `r${i % 2}`, finishedAt: "t" }, correlationId: "c", metadata: { nested: { list: [1, 2] } } },
  );

describe("SqliteEventStream.readJson", () => {
  it("answers the JSON text of exactly what read answers, from the in-memory tail and from SQLite", async () => {
    const file = path.join(tempDir("svc-stream-"), "svc.db");
    const db = await Database.open(file);
    opened.push(db);
    const writer = await SqliteEventStream.open(db);
    await writer.append(envelopes(40));
    const fresh = await SqliteEventStream.open(db, { reader: true }); // empty tail: every read goes to SQLite
    const [, third] = await writer.read({ limit: 3 });
    const queries: StreamQuery[] = [
      { limit: 1000 },
      { limit: 7, afterCursor: third!.cursor },
      { limit: 1000, topics: ["actions"], runId: "r1" },
      { limit: 1000, permissions: ["view:topic:schedules"] },
      { limit: 5, types: ["action.completed"], afterCursor: third!.cursor, permissions: ["run:action:diagnostics.noop"] },
    ];
    for (const stream of [writer, fresh]) {
      for (const q of queries) {
        const objects = await stream.read(q);
        const page = await readEventsJson(stream, q);
        expect(objects.length).toBeGreaterThan(0);
        expect(eventsOf(page)).toEqual(objects);
      }
    }
    // a stream without readJson (a broker stream may lack it) is served by serializing read
    const plain = { read: (q: StreamQuery) => fresh.read(q) } as unknown as SqliteEventStream;
    expect(eventsOf(await readEventsJson(plain, queries[2]!))).toEqual(await fresh.read(queries[2]!));
  });

  it("reads a page from SQLite in one row, and row by row when a stored text holds a raw newline", async () => {
    const file = path.join(tempDir("svc-stream-"), "svc.db");
    const db = await Database.open(file);
    opened.push(db);
    const writer = await SqliteEventStream.open(db);
    const lines = envelopes(30).map((e, i) => (i === 4 ? { ...e, payload: { ...e.payload, text: "two\nlines\r\n" } } : e));
    await writer.append(lines);
    const fresh = await SqliteEventStream.open(db, { reader: true });
    const same = async () => {
      for (const q of [{ limit: 1000 }, { limit: 4, afterCursor: (await fresh.read({ limit: 2 }))[1]!.cursor }, { limit: 1000, topics: ["schedules"] }] as StreamQuery[]) {
        const page = await fresh.readJson(q);
        expect(page.count).toBeGreaterThan(0);
        expect(eventsOf(page)).toEqual(await fresh.read(q));
      }
    };
    await same();
    const before = db.stats().readerStatements;
    await fresh.readJson({ limit: 1000 });
    expect(db.stats().readerStatements - before).toBe(1); // the whole page in one statement
    // an envelope stored as indented JSON (raw newlines): the page is split wrong, seen, and read row by row
    await db.transaction((tx) => tx.run("UPDATE events SET envelope = ? WHERE id = ?", [JSON.stringify(lines[7], null, 2), lines[7]!.id]));
    await same();
    expect(eventsOf(await fresh.readJson({ limit: 1000 }))).toHaveLength(30);
  });
});

describe("SqliteEventStream appends", () => {
  it("stores a group's events in the one call of its COMMIT with the seqs AUTOINCREMENT gives them, and falls back to RETURNING when it cannot know them", async () => {
    const file = path.join(tempDir("svc-stream-"), "svc.db");
    const db = await Database.open(file);
    opened.push(db);
    const stream = await SqliteEventStream.open(db);
    const all = envelopes(12);
    const stored = () => db.all<{ id: string; seq: number }>("SELECT id, seq FROM events ORDER BY seq");
    const append = async (list: DomainEventEnvelope[]) => {
      const before = db.stats();
      await stream.append(list);
      const after = db.stats();
      return { statements: after.writerStatements - before.writerStatements, fallbacks: after.deferredFallbacks - before.deferredFallbacks };
    };
    // the first append reads the sequence (RETURNING); the next ones are one call each
    await append(all.slice(0, 3));
    expect(await append(all.slice(3, 6))).toEqual({ statements: 1, fallbacks: 0 });
    expect(await stored()).toEqual(all.slice(0, 6).map((e, i) => ({ id: e.id, seq: i + 1 })));
    // an id stored before: the one call fails on it, and RETURNING skips it (its seq is used up, as AUTOINCREMENT does)
    expect((await append([all[1]!, all[6]!])).fallbacks).toBe(1);
    expect((await stored()).slice(6)).toEqual([{ id: all[6]!.id, seq: 8 }]);
    expect(await append([all[7]!])).toEqual({ statements: 1, fallbacks: 0 });
    expect((await stored()).slice(7)).toEqual([{ id: all[7]!.id, seq: 9 }]);
    // another writer used seqs up: the one call refuses to guess, and the seq follows sqlite_sequence
    const other = await new Promise<sqlite3.Database>((resolve, reject) => {
      const c = new sqlite3.Database(file, sqlite3.OPEN_READWRITE, (err) => (err ? reject(err) : resolve(c)));
    });
    await new Promise<void>((resolve, reject) => other.exec("UPDATE sqlite_sequence SET seq = seq + 100 WHERE name = 'events'", (err) => (err ? reject(err) : resolve())));
    await new Promise<void>((resolve) => other.close(() => resolve()));
    expect((await append([all[8]!])).fallbacks).toBe(1);
    expect(await append(all.slice(9, 12))).toEqual({ statements: 1, fallbacks: 0 });
    expect((await stored()).slice(8)).toEqual([110, 111, 112, 113].map((seq, i) => ({ id: all[8 + i]!.id, seq })));
    // the in-memory tail answers what SQLite answers, cursors included
    const fresh = await SqliteEventStream.open(db, { reader: true });
    expect(await stream.read({ limit: 1000 })).toEqual(await fresh.read({ limit: 1000 }));
    expect((await fresh.read({ limit: 1000 })).map((e) => e.id)).toEqual(all.map((e) => e.id));
  });
});

describe("SqliteEventStream read-ahead", () => {
  it("reads the next full page while a reader catching up is busy, and answers it only when it is full", async () => {
    const db = await Database.open(path.join(tempDir("svc-stream-"), "svc.db"));
    opened.push(db);
    const writer = await SqliteEventStream.open(db);
    await writer.append(envelopes(40));
    const reader = await SqliteEventStream.open(db, { reader: true }); // empty tail: every page comes from SQLite
    const statements = () => db.stats().readerStatements;
    const settle = () => new Promise((r) => setTimeout(r, 50));

    const first = await reader.readJson({ limit: 15 });
    await settle(); // the read-ahead of the second page ran meanwhile
    const afterFirst = statements();
    const cursorOf = (page: EventJsonPage) => (eventsOf(page).at(-1) as { cursor: string }).cursor;
    const second = await reader.readJson({ limit: 15, afterCursor: cursorOf(first) });
    expect(statements()).toBe(afterFirst + 1); // answered from the read-ahead: the one statement is the third page's read-ahead
    expect(eventsOf(second)).toEqual(await writer.read({ limit: 15, afterCursor: cursorOf(first) }));
    await settle();

    // the third page was read ahead with 10 events; 5 more are committed before it is asked for: a
    // short page read ahead may lack them, so it is read again and answers all 15
    await writer.append(envelopes(45).slice(40).map((e) => ({ ...e, id: `${e.id}_late` })));
    const third = await reader.readJson({ limit: 15, afterCursor: cursorOf(second) });
    expect(third.count).toBe(15);
    expect(eventsOf(third)).toEqual(await writer.read({ limit: 15, afterCursor: cursorOf(second) }));

    // another reader's filters are another read-ahead: never answered across queries
    const actions = await reader.readJson({ limit: 5, topics: ["actions"] });
    await settle();
    const schedules = await reader.readJson({ limit: 5, topics: ["schedules"], afterCursor: cursorOf(actions) });
    expect(eventsOf(schedules)).toEqual(await writer.read({ limit: 5, topics: ["schedules"], afterCursor: cursorOf(actions) }));
  });
});

describe("SqliteEventStream tail", () => {
  const TOPIC_OF = { "schedule.triggered": "schedules", "action.requested": "actions", "action.completed": "actions", "object.created": "objects", "rule.triggered": "rules" } as const;
  const TYPES = Object.keys(TOPIC_OF) as Array<keyof typeof TOPIC_OF>;
  const event = (i: number, type: keyof typeof TOPIC_OF): DomainEventEnvelope => ({
    id: `evt_${i}`,
    schemaVersion: 1,
    projectId: "p",
    occurredAt: "2026-01-01T00:00:00.000Z",
    type,
    topic: TOPIC_OF[type],
    partitionKey: "k",
    payload: type === "object.created" ? { objectTypeId: "invoice", primaryId: `o${i % 4}` } : type === "rule.triggered" ? { ruleId: "r", subject: { objectTypeId: "invoice", primaryId: "o1" } } : { actionId: "diagnostics.noop", runId: `r${i % 3}`, scheduleId: "s", occurrenceAt: "t", triggeredAt: "t", occurrenceKey: `k${i}`, finishedAt: "t" },
  });

  it("answers every filtered read from memory exactly as SQLite does, across tail trims (property)", async () => {
    const db = await Database.open(path.join(tempDir("svc-stream-"), "svc.db"));
    opened.push(db);
    const writer = await SqliteEventStream.open(db);
    const size = EventTail.SIZE;
    // more events than the tail holds, in runs of one topic (the rule engine's case: few of its topic)
    const types: Array<keyof typeof TOPIC_OF> = [];
    for (let i = 0; types.length < size + 2_500; i++) types.push(...Array.from({ length: 1 + (i * 7919) % 400 }, () => TYPES[(i * 31) % TYPES.length]!));
    for (let i = 0; i < types.length; i += 500) await writer.append(types.slice(i, i + 500).map((t, k) => event(i + k, t)));
    const fresh = await SqliteEventStream.open(db, { reader: true }); // empty tail: every read goes to SQLite
    const cursors: string[] = [];
    for (;;) {
      const page = await fresh.read({ limit: 1000, afterCursor: cursors.at(-1) });
      if (page.length === 0) break;
      cursors.push(...page.map((e) => e.cursor));
    }
    expect(cursors).toHaveLength(types.length);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          // after the event at this index: inside the tail (the last TAIL_SIZE events, up to a tenth more
          // between trims), at its first event, or before it
          at: fc.oneof(fc.constantFrom(types.length - size - 1, types.length - Math.ceil(size * 1.1) - 1), fc.integer({ min: types.length - Math.ceil(size * 1.1) - 1, max: types.length - 1 })),
          topics: fc.option(fc.subarray(["schedules", "actions", "objects", "rules"] as const, { minLength: 1 }), { nil: undefined }),
          types: fc.option(fc.subarray(TYPES, { minLength: 1 }), { nil: undefined }),
          primaryId: fc.option(fc.constantFrom("o1", "o2"), { nil: undefined }),
          limit: fc.integer({ min: 1, max: 600 }),
        }),
        async ({ at, topics, types: typeFilter, primaryId, limit }) => {
          const q: StreamQuery = { afterCursor: cursors[at], topics: topics as StreamQuery["topics"], types: typeFilter, primaryId, limit };
          expect((await writer.read(q)).map((e) => e.id)).toEqual((await fresh.read(q)).map((e) => e.id));
          // scans, with their checkpoints: from the tail (or SQLite before it) and from SQLite
          const [hot, cold] = [await expectScanContract(writer, q, cursors), await expectScanContract(fresh, q, cursors)];
          expect({ ...hot, events: hot.events.map((e) => e.id) }).toEqual({ ...cold, events: cold.events.map((e) => e.id) });
        },
      ),
      { numRuns: 150 },
    );
  });

  it("a follower scanning page by page collects exactly the filtered read and ends at the stream's last cursor, with scan and without (property)", async () => {
    const db = await Database.open(path.join(tempDir("svc-stream-"), "svc.db"));
    opened.push(db);
    const writer = await SqliteEventStream.open(db);
    const kinds = Array.from({ length: 900 }, (_, i) => TYPES[(i * i + 3 * i) % TYPES.length]!);
    for (let i = 0; i < kinds.length; i += 300) await writer.append(kinds.slice(i, i + 300).map((t, k) => event(i + k, t)));
    const fresh = await SqliteEventStream.open(db, { reader: true });
    const cursors = await allCursors(fresh);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          at: fc.integer({ min: -1, max: kinds.length - 1 }),
          types: fc.option(fc.subarray(TYPES, { minLength: 1 }), { nil: undefined }),
          primaryId: fc.option(fc.constantFrom("o1", "o2"), { nil: undefined }),
          limit: fc.integer({ min: 1, max: 400 }),
        }),
        async ({ at, types: typeFilter, primaryId, limit }) => {
          const q: StreamQuery = { afterCursor: at < 0 ? undefined : cursors[at], types: typeFilter, primaryId, limit };
          const expected = (await fresh.read({ ...q, limit: 1000 })).map((e) => e.id);
          for (const stream of [writer, fresh, readOnly(fresh)]) {
            const { ids, through } = await scanToEnd(stream, q);
            expect(ids).toEqual(expected);
            expect(through).toBe(cursors.at(-1));
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe("SqliteEventStream notices", () => {
  it("emits one \"appended\" per microtask with the topics of every commit since the last notice", async () => {
    const db = await Database.open(path.join(tempDir("svc-stream-"), "svc.db"));
    opened.push(db);
    const stream = await SqliteEventStream.open(db);
    const notices: string[][] = [];
    stream.notifier.on("appended", (topics: ReadonlySet<string>) => notices.push([...topics].sort()));
    const [schedule, action] = envelopes(2);
    // two appends that commit together (as callers of one group commit do) notify once, with both topics
    await db.transaction(async (tx) => {
      await stream.writeInTx(tx, [schedule!]);
      await stream.writeInTx(tx, [action!]);
    });
    await stream.append([{ ...action!, id: "evt_other" }]);
    await stream.append([action!]); // already stored: nothing appended, no notice
    await new Promise((resolve) => setImmediate(resolve));
    expect(notices).toEqual([["actions", "schedules"], ["actions"]]);
  });

  it("answers nothing past its last notice between a COMMIT and the commit hook that notifies it (a follower of the notices misses nothing)", async () => {
    const db = await Database.open(path.join(tempDir("svc-stream-"), "svc.db"), { groupMs: 10_000 }); // both callers in one group, however slow the machine
    opened.push(db);
    const stream = await SqliteEventStream.open(db);
    const all = envelopes(8);
    await stream.append(all.slice(0, 3));
    const before = await stream.latestCursor();
    let inGap: Promise<[string | undefined, string[]]> | undefined;
    const noticed = new Promise((resolve) => stream.notifier.once("appended", resolve));
    // two callers of one group commit: the first's commit hook runs after the COMMIT, before the
    // second's (which extends the tail and queues the notice); the read connection already sees the rows
    const commits = db.stats().commits;
    await Promise.all([
      db.transaction(async (tx) => {
        tx.afterCommit(() => (inGap = Promise.all([stream.latestCursor(), stream.read({ limit: 100 }).then((events) => events.map((e) => e.id))])));
      }),
      db.transaction((tx) => stream.writeInTx(tx, all.slice(3))),
    ]);
    expect(db.stats().commits - commits).toBe(1);
    const [latest, read] = await inGap!;
    expect(latest).toBe(before);
    expect(read).toEqual(all.slice(0, 3).map((e) => e.id));
    await noticed;
    // after the notice, a read after the cursor answered in the gap has exactly the events it did not
    expect((await stream.read({ limit: 100, afterCursor: latest })).map((e) => e.id)).toEqual(all.slice(3).map((e) => e.id));
    // a stream that never writes has no hooks to wait for: it reads what is committed
    expect((await (await SqliteEventStream.open(db, { reader: true })).read({ limit: 100 })).map((e) => e.id)).toEqual(all.map((e) => e.id));
  });

  it("answers only what its own hooks published from the moment it opens, before its first write too; a reader answers what is committed and writes nothing", async () => {
    const db = await Database.open(path.join(tempDir("svc-stream-"), "svc.db"));
    opened.push(db);
    const all = envelopes(5);
    const other = await SqliteEventStream.open(db);
    await other.append(all.slice(0, 3));
    const stream = await SqliteEventStream.open(db); // the newest at open: seq 3
    const reader = await SqliteEventStream.open(db, { reader: true });
    // rows committed that this instance's hooks never published (here another instance's; in the
    // service, its own in the gap before its hooks run) are not answered, not even by scan
    await other.append(all.slice(3));
    const three = all.slice(0, 3).map((e) => e.id);
    expect((await stream.read({ limit: 100 })).map((e) => e.id)).toEqual(three);
    expect(JSON.parse(`[${(await stream.readJson({ limit: 100 })).json.toString("utf8")}]`).map((e: { id: string }) => e.id)).toEqual(three);
    const scan = await stream.scan({ limit: 100 });
    expect(scan.events.map((e) => e.id)).toEqual(three);
    expect(scan.checkpoint).toBe(await stream.latestCursor());
    expect(await stream.latestCursor()).toBe((await reader.read({ limit: 3 }))[2]!.cursor);
    expect((await reader.read({ limit: 100 })).map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect(await reader.latestCursor()).toBe((await reader.read({ limit: 100 }))[4]!.cursor);
    await expect(reader.append([{ ...all[0]!, id: "evt_new" }])).rejects.toThrow(/opened as a reader/);
    expect((await reader.read({ limit: 100 })).map((e) => e.id)).not.toContain("evt_new");
  });
});

describe("SqliteEventStream appends in a group commit", () => {
  it("stores the events of one group's callers in caller order with contiguous seqs, skipping ids stored before or earlier in the group", async () => {
    const db = await Database.open(path.join(tempDir("svc-stream-"), "svc.db"));
    opened.push(db);
    const stream = await SqliteEventStream.open(db);
    const all = envelopes(9);
    await stream.append([all[0]!]);
    const callers: DomainEventEnvelope[][] = [
      [all[1]!, all[2]!],
      [all[0]!, all[3]!], // all[0] was stored before
      [all[4]!], // fails: none of its events is stored
      [all[5]!, all[3]!, all[6]!], // all[3] was queued earlier in the group
      [all[7]!, all[8]!],
    ];
    const results = await Promise.allSettled(
      callers.map((events, i) =>
        db.transaction(async (tx) => {
          await stream.writeInTx(tx, events);
          if (i === 2) throw new Error("caller 2 fails");
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"]);
    const expected = [0, 1, 2, 3, 5, 6, 7, 8].map((i) => all[i]!.id);
    // from the in-memory tail, and from SQLite (a fresh stream's tail is empty)
    const fromTail = await stream.read({ limit: 100 });
    const fromSqlite = await (await SqliteEventStream.open(db, { reader: true })).read({ limit: 100 });
    expect(fromTail.map((e) => e.id)).toEqual(expected);
    expect(fromSqlite).toEqual(fromTail);
    // a read after any cursor answers the rest, from memory as from SQLite
    for (const [k, e] of fromTail.entries()) {
      expect((await stream.read({ limit: 100, afterCursor: e.cursor })).map((x) => x.id)).toEqual(expected.slice(k + 1));
    }
    const rows = await db.all<{ id: string; topic: string; subject_type: string | null; run_id: string | null; appended_at: number }>(
      "SELECT id, topic, subject_type, run_id, appended_at FROM events ORDER BY seq",
    );
    expect(rows.map((r) => r.id)).toEqual(expected);
    // the columns the filters read are those of the envelope
    expect(rows[1]).toMatchObject({ id: all[1]!.id, topic: "actions", run_id: "r1", subject_type: null });
    expect(typeof rows[1]!.appended_at).toBe("number");
    expect((await stream.read({ limit: 100, runId: "r1" })).map((e) => e.id)).toEqual((await (await SqliteEventStream.open(db, { reader: true })).read({ limit: 100, runId: "r1" })).map((e) => e.id));
  });
});
