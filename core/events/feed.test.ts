/**
 * The shared event feed (spec 6.5 delivery for every subscription of a process), over a real SQLite
 * stream. The oracle is the stream's own filtered read from the subscription's cursor: whatever the
 * interleaving of appends, subscriptions, slow handlers and a window small enough to be overrun, each
 * subscription receives exactly that, in order, once.
 */
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { Database } from "../store/db";
import { SqliteEventStream } from "./sqlite-stream";
import type { EventStream, StreamQuery } from "./stream";
import { EventFeed, type FeedQuery } from "./feed";
import type { DomainEventEnvelope, StoredDomainEvent } from "./catalog";
import { NatsEventStream } from "./nats-stream";
import { ApiError } from "../errors";
import { tempDir } from "../../test/helpers-fs";
import { freePort } from "../../test/setup/global";
import { ensureNatsServer, startNats } from "../../test/setup/nats";

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

async function openStream(): Promise<SqliteEventStream> {
  const db = await Database.open(path.join(tempDir("svc-feed-"), "svc.db"));
  opened.push(db);
  return SqliteEventStream.open(db);
}

let serial = 0;
/** One envelope of a few shapes: schedules (view:topic:schedules), actions of two runs (run:action:diagnostics.noop). */
function envelope(kind: number): DomainEventEnvelope {
  const n = serial++;
  const base = { id: `evt_feed_${n}`, schemaVersion: 1 as const, projectId: "sandbox", occurredAt: new Date().toISOString() };
  if (kind === 0) return { ...base, type: "schedule.triggered", topic: "schedules", partitionKey: "s", payload: { scheduleId: "s", occurrenceAt: `${n}`, triggeredAt: `${n}`, occurrenceKey: `k${n}` } };
  const runId = kind === 1 ? "r1" : "r2";
  return { ...base, type: n % 2 ? "action.completed" : "action.requested", topic: "actions", partitionKey: runId, payload: { actionId: "diagnostics.noop", runId, finishedAt: "t" } };
}

/** Everything the stream answers for `query` after `afterCursor`, page by page. */
async function readAll(stream: EventStream, query: FeedQuery, afterCursor: string | undefined): Promise<string[]> {
  const out: string[] = [];
  for (let cursor = afterCursor; ; ) {
    const page = await stream.read({ ...query, afterCursor: cursor, limit: 1000 });
    if (page.length === 0) return out;
    out.push(...page.map((e) => e.id));
    cursor = page[page.length - 1]!.cursor;
  }
}

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 5));
  }
}

const FILTERS: Array<Omit<FeedQuery, "limit">> = [{}, { topics: ["schedules"] }, { types: ["action.completed"] }, { runId: "r1" }, { permissions: ["run:action:diagnostics.noop"] }, { permissions: ["view:topic:schedules", "run:action:diagnostics.noop"], topics: ["actions"] }];

type Op =
  | { op: "append"; kinds: number[] }
  | { op: "subscribe"; filter: number; start: "latest" | "start" | number; limit: number; slow: boolean }
  | { op: "unsubscribe"; which: number }
  | { op: "pause" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("append" as const), kinds: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 6 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("subscribe" as const), filter: fc.integer({ min: 0, max: FILTERS.length - 1 }), start: fc.oneof(fc.constant("latest" as const), fc.constant("start" as const), fc.nat()), limit: fc.integer({ min: 1, max: 4 }), slow: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("unsubscribe" as const), which: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ op: "pause" as const }) },
);

describe("event feed", () => {
  it("delivers to every subscription exactly the stream's filtered read after its cursor, in order and once (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 4 }), async (ops, deliveryChunk) => {
        const stream = await openStream();
        await stream.append([envelope(0), envelope(1)]);
        // a window of 6 events, read 3 at a time: slow handlers fall out of it and read the stream again;
        // a few live subscriptions served per macrotask, so appends land while deliveries are under way
        const feed = new EventFeed(stream, (err) => {
          throw err;
        }, { size: 6, readLimit: 3, deliveryChunk });
        const subs: Array<{ query: FeedQuery; start: string | undefined; got: string[]; stop: () => void; stopped: boolean; afterStop: number }> = [];
        const appends: Promise<void>[] = [];
        for (const o of ops) {
          if (o.op === "append") appends.push(stream.append(o.kinds.map(envelope)));
          else if (o.op === "pause") await new Promise((r) => setTimeout(r, 2));
          else if (o.op === "unsubscribe") {
            const s = subs[o.which % Math.max(1, subs.length)];
            if (s && !s.stopped) {
              s.stopped = true;
              s.stop();
            }
          } else {
            let start: string | undefined;
            if (o.start === "latest") start = await stream.latestCursor();
            else if (typeof o.start === "number") {
              const all = await stream.read({ limit: 1000 });
              start = all[o.start % all.length]?.cursor;
            }
            const query: FeedQuery = { ...FILTERS[o.filter]!, limit: o.limit };
            const s = { query, start, got: [] as string[], stop: () => {}, stopped: false, afterStop: 0 };
            s.stop = feed.subscribe({
              query,
              afterCursor: start,
              handler: (batch: StoredDomainEvent[]) => {
                if (s.stopped) s.afterStop++;
                expect(batch.length).toBeLessThanOrEqual(o.limit);
                s.got.push(...batch.map((e) => e.id));
                if (o.slow) return new Promise((r) => setTimeout(r, 1));
              },
              onHandlerError: (err) => {
                throw err;
              },
              onReadError: (err) => {
                throw err;
              },
            });
            subs.push(s);
          }
        }
        await Promise.all(appends);
        for (const s of subs) {
          const expected = await readAll(stream, s.query, s.start);
          if (s.stopped) {
            expect(s.afterStop).toBe(0);
            expect(expected.slice(0, s.got.length)).toEqual(s.got);
          } else {
            await waitFor(() => s.got.length >= expected.length);
            await new Promise((r) => setTimeout(r, 5)); // nothing more, nothing twice
            expect(s.got).toEqual(expected);
          }
        }
        const active = subs.filter((s) => !s.stopped).length;
        await waitFor(() => feed.liveCount === active); // every caught-up subscription is served from memory
        for (const s of subs) s.stop();
      }),
      { numRuns: 60 },
    );
  });

  it("reads the stream once per append however many subscriptions follow it", async () => {
    const stream = await openStream();
    await stream.append([envelope(0)]);
    let reads = 0;
    const counting: EventStream = { append: (e) => stream.append(e), read: (q: StreamQuery) => (reads++, stream.read(q)), latestCursor: () => stream.latestCursor(), prune: (ms) => stream.prune(ms), notifier: stream.notifier };
    const feed = new EventFeed(counting);
    const start = await stream.latestCursor();
    const got = Array.from({ length: 200 }, () => [] as string[]);
    const stops = got.map((g, i) => feed.subscribe({ query: { ...FILTERS[i % FILTERS.length]!, limit: 100 }, afterCursor: start, handler: (b) => void g.push(...b.map((e) => e.id)), onHandlerError: () => {}, onReadError: () => {} }));
    await waitFor(() => feed.liveCount === 200);
    reads = 0;
    for (let i = 0; i < 10; i++) await stream.append([envelope(i % 3), envelope((i + 1) % 3)]);
    await waitFor(() => got[0]!.length === 20);
    expect(reads).toBeLessThanOrEqual(10); // one read per append (fewer when appends come together), not one per subscription
    for (const [i, g] of got.entries()) expect(g).toEqual(await readAll(stream, { ...FILTERS[i % FILTERS.length]!, limit: 100 }, start));
    for (const stop of stops) stop();
  });

  it("serves its live subscriptions a chunk per macrotask: an append landing meanwhile reaches the ones not yet served with the earlier events, in one handler call", async () => {
    const stream = await openStream();
    let resolveSecond: () => void = () => {};
    const secondRead = new Promise<void>((r) => (resolveSecond = r));
    const second = envelope(1);
    const watching: EventStream = {
      append: (e) => stream.append(e),
      read: async (q: StreamQuery) => {
        const page = await stream.read(q);
        if (page.some((e) => e.id === second.id)) setTimeout(resolveSecond, 0); // after the feed's push
        return page;
      },
      latestCursor: () => stream.latestCursor(),
      prune: (ms) => stream.prune(ms),
      notifier: stream.notifier,
    };
    const feed = new EventFeed(watching, undefined, { deliveryChunk: 2 });
    const start = await stream.latestCursor();
    const calls = Array.from({ length: 6 }, () => [] as string[][]);
    const stops = calls.map((c) => feed.subscribe({ query: { limit: 10 }, afterCursor: start, handler: (b) => void c.push(b.map((e) => e.id)), onHandlerError: () => {}, onReadError: () => {} }));
    await waitFor(() => feed.liveCount === 6);
    vi.useFakeTimers({ toFake: ["setImmediate"] }); // the drain's next chunk waits for runAllTimers
    try {
      const first = envelope(1);
      await stream.append([first]);
      await waitFor(() => calls[1]!.length === 1);
      expect(calls.map((c) => c.length)).toEqual([1, 1, 0, 0, 0, 0]); // a chunk of 2, the rest scheduled
      await stream.append([second]);
      await secondRead;
      expect(calls.map((c) => c.length)).toEqual([1, 1, 0, 0, 0, 0]); // a drain is under way: nothing out of turn
      vi.runAllTimers();
      for (const c of calls.slice(0, 2)) expect(c).toEqual([[first.id], [second.id]]);
      for (const c of calls.slice(2)) expect(c).toEqual([[first.id, second.id]]);
    } finally {
      vi.useRealTimers();
      for (const stop of stops) stop();
    }
  });

  it("hands its subscriptions back to their own reads when its read fails, losing nothing", async () => {
    const stream = await openStream();
    let failFeedRead = false;
    const flaky: EventStream = {
      append: (e) => stream.append(e),
      read: async (q: StreamQuery) => {
        // the feed's own reads are the unfiltered ones
        if (failFeedRead && q.topics === undefined && q.runId === undefined) {
          failFeedRead = false;
          throw new Error("broker hiccup");
        }
        return stream.read(q);
      },
      latestCursor: () => stream.latestCursor(),
      prune: (ms) => stream.prune(ms),
      notifier: stream.notifier,
    };
    const feedErrors: unknown[] = [];
    const feed = new EventFeed(flaky, (err) => feedErrors.push(err));
    const start = await stream.latestCursor();
    const got: string[] = [];
    const stop = feed.subscribe({ query: { topics: ["schedules"], limit: 10 }, afterCursor: start, handler: (b) => void got.push(...b.map((e) => e.id)), onHandlerError: () => {}, onReadError: (err) => feedErrors.push(err) });
    await waitFor(() => feed.liveCount === 1);
    failFeedRead = true;
    await stream.append([envelope(0), envelope(1), envelope(0)]);
    await stream.append([envelope(0)]);
    await waitFor(() => got.length === 3);
    expect(feedErrors).toHaveLength(1);
    expect((feedErrors[0] as Error).message).toBe("broker hiccup");
    expect(got).toEqual(await readAll(stream, { topics: ["schedules"], limit: 10 }, start));
    await waitFor(() => feed.liveCount === 1); // back on the feed
    stop();
  });

  it("fails a subscription whose cursor expired or belongs to another stream, as a read would", async () => {
    const stream = await openStream();
    await stream.append([envelope(0), envelope(0)]);
    const [oldest] = await stream.read({ limit: 1 });
    await new Promise((r) => setTimeout(r, 10));
    await stream.append([envelope(0)]);
    await stream.prune(5);
    const feed = new EventFeed(stream);
    const errors: unknown[] = [];
    const subscribe = (afterCursor: string) => feed.subscribe({ query: { limit: 10 }, afterCursor, handler: () => errors.push("delivered"), onHandlerError: () => {}, onReadError: (err) => errors.push(err) });
    subscribe(oldest!.cursor);
    subscribe("bm90LWEtY3Vyc29y");
    await waitFor(() => errors.length === 2);
    expect(errors.map((e) => (e instanceof ApiError ? e.code : e)).sort()).toEqual(["cursor_expired", "invalid_request"]);
    expect(feed.liveCount).toBe(0);
  });

  it("serves the NATS JetStream stream the same way (the feed sits above the stream interface)", async () => {
    const dir = tempDir("svc-feed-nats-");
    const port = await freePort();
    const nats = await startNats(ensureNatsServer(), port, path.join(dir, "jetstream"));
    const stream = await NatsEventStream.open({ servers: `nats://127.0.0.1:${port}`, stream: "feedtest", subjectPrefix: "feedtest", retentionMs: 3_600_000 });
    try {
      await stream.append([envelope(0), envelope(1), envelope(2)]);
      const [first] = await stream.read({ limit: 1 });
      const feed = new EventFeed(stream);
      const subs = FILTERS.map((filter, i) => {
        const query: FeedQuery = { ...filter, limit: 2 };
        const got: string[] = [];
        const start = i % 2 ? first!.cursor : undefined; // half replay from a cursor, half from the start
        const stop = feed.subscribe({ query, afterCursor: start, handler: (b) => void got.push(...b.map((e) => e.id)), onHandlerError: () => {}, onReadError: (err) => got.push(`error: ${err}`) });
        return { query, got, start, stop };
      });
      await waitFor(() => feed.liveCount === subs.length, 20_000);
      for (let i = 0; i < 6; i++) await stream.append([envelope(i % 3), envelope((i + 1) % 3)]);
      for (const s of subs) {
        const expected = await readAll(stream, s.query, s.start);
        await waitFor(() => s.got.length >= expected.length, 20_000);
        expect(s.got).toEqual(expected);
        s.stop();
      }
    } finally {
      await stream.close();
      await nats.stop();
    }
  }, 60_000);
});
