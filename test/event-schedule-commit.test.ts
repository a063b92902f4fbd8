/**
 * An event schedule's group commit (`writeGroupCommit`, core/runtime/event-schedule-commit.ts; spec 6.1,
 * 2.4 `schedule.triggered`): the handlers of a batch written in one transaction, without a savepoint
 * each unless one is refused, their idempotency keys recorded but not looked up (the done marks and
 * cursor in the same transaction make them once-only), except an operator retry's. Real app, real
 * SQLite; the outcomes come from `HandlerRunner.execute` as the consumer's do.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp } from "./helpers";
import type { App } from "../core/app";
import { Database } from "../core/store/db";
import { EventLog } from "../core/events/log";
import type { DomainEventEnvelope } from "../core/events/catalog";
import { HandlerRunner, type HandlerRun } from "../core/runtime/handler";
import { EventScheduleStore } from "../core/runtime/event-schedule-store";
import { writeGroupCommit, type Outcome } from "../core/runtime/event-schedule-commit";
import type { Entry, RegisteredEventSchedule } from "../core/runtime/event-schedule-model";
import type { SystemContext } from "../core/sdk/context";

const SCHEDULE_ID = "commit-probe";
const schedule = { scheduleId: SCHEDULE_ID, connectorId: "probe", definition: { on: { types: ["sync.run.finished"] }, run: () => undefined } } as unknown as RegisteredEventSchedule;
const MAX_ATTEMPTS = 3;

describe("an event schedule's group commit", () => {
  let app: App;
  let db: Database;
  let events: EventLog;
  let handlers: HandlerRunner;
  let store: EventScheduleStore;
  beforeAll(async () => {
    app = await startApp();
    db = app.container.resolve(Database);
    events = app.container.resolve(EventLog);
    handlers = app.container.resolve(HandlerRunner);
    store = new EventScheduleStore(db, SCHEDULE_ID);
    await store.openConsumer(async () => ({ cursor: undefined, paused: false }));
  });
  afterAll(() => app?.close());

  /** Appends `n` matching events and answers them as the consumer's read window holds them. */
  async function read(n: number, revived = false): Promise<Entry[]> {
    const written = await events.append(Array.from({ length: n }, (_, i) => ({ type: "sync.run.finished" as const, partitionKey: `p${i}`, payload: { syncId: "probe", runId: `r${i}` } })));
    return written.map((e, i) => entry(e, i, revived));
  }
  const entry = (e: DomainEventEnvelope, i: number, revived: boolean): Entry => ({ id: e.id, event: { ...e, cursor: `cursor-${e.id}` } as Entry["event"], cursor: `cursor-${e.id}`, partition: `p${i}`, occurredAt: e.occurredAt, seq: i, state: "running", attempts: 0, nextAttemptAt: 0, hasRow: revived, revived });

  /** A handler's outcome for `entry`, as the consumer builds it: `HandlerRunner.execute` of `fn`. */
  async function ran(entry: Entry, fn: (ctx: SystemContext) => void, attempt = 1): Promise<Outcome> {
    const spec: HandlerRun = { run: { kind: "schedule", id: `${SCHEDULE_ID}@${entry.id}` }, correlationId: entry.id, key: `schedule:${SCHEDULE_ID}:${entry.id}` };
    return { entry, attempt, startedAt: new Date().toISOString(), spec, ok: true, buffered: await handlers.execute(spec, fn) };
  }
  const commit = (batch: Outcome[], window: Entry[]) => writeGroupCommit({ db, events, handlers }, store, schedule, MAX_ATTEMPTS, batch, { window, cursor: undefined, readCursor: () => window.at(-1)?.cursor }, new Date().toISOString());
  const triggeredFor = async (eventId: string) => (await db.all<{ n: number }>("SELECT seq AS n FROM events WHERE type = 'schedule.triggered' AND json_extract(envelope, '$.causationId') = ?", [eventId])).length;
  const customer = (id: string) => db.get<{ properties: string; version: number }>("SELECT properties, version FROM objects WHERE object_type_id = 'customer' AND primary_id = ?", [id]);

  it("writes a batch at two calls to SQLite per handler (the upsert's read and write): the keys are recorded, not looked up, and still de-duplicate later appends", async () => {
    const window = await read(10);
    const batch = await Promise.all(window.map((e, i) => ran(e, (ctx) => ctx.objects.upsert("customer", `cus_commit_${i}`, { name: `Commit ${i}` }))));
    const before = db.stats();
    const { results, popped, newCursor } = await commit(batch, window);
    const after = db.stats();
    expect(results.map((r) => r.status)).toEqual(Array(10).fill("done"));
    expect(popped).toEqual(window);
    expect(newCursor).toBe(window.at(-1)!.cursor);
    // BEGIN with the group's savepoint, then per handler SELECT + INSERT of its object, the cursor's UPDATE, then COMMIT with the deferred rows (events, keys, commits)
    expect(after.writerStatements - before.writerStatements).toBe(1 + 10 * 2 + 1 + 1);
    for (const [i, e] of window.entries()) {
      expect(JSON.parse((await customer(`cus_commit_${i}`))!.properties)).toEqual({ name: `Commit ${i}` });
      expect(await triggeredFor(e.id)).toBe(1);
      expect(await db.get("SELECT 1 AS one FROM commits WHERE idempotency_key = ?", [`schedule:${SCHEDULE_ID}:${e.id}`])).toEqual({ one: 1 });
    }
    // a later append with a key the commit recorded is a duplicate
    const key = `schedule.triggered:${SCHEDULE_ID}@${window[0]!.id}`;
    expect(await db.get("SELECT 1 AS one FROM event_keys WHERE idempotency_key = ?", [key])).toEqual({ one: 1 });
    expect(await events.append([{ type: "schedule.triggered", idempotencyKey: key, payload: { scheduleId: SCHEDULE_ID, occurrenceAt: window[0]!.occurredAt, triggeredAt: window[0]!.occurredAt, occurrenceKey: `${SCHEDULE_ID}@${window[0]!.id}` } }])).toEqual([]);
  });

  it("a handler whose writes are refused is rolled back alone: the others commit, its attempt fails ('commit refused: …'), nothing of it is written", async () => {
    const window = await read(4);
    const [a, refused, b, failed] = window as [Entry, Entry, Entry, Entry];
    const batch: Outcome[] = [
      await ran(a, (ctx) => ctx.objects.upsert("customer", "cus_refused_a", { name: "A" })),
      await ran(refused, (ctx) => {
        ctx.objects.upsert("customer", "cus_refused_x", { name: "X" });
        ctx.objects.update("customer", "cus_missing", { name: "Nobody" });
      }),
      await ran(b, (ctx) => ctx.objects.upsert("customer", "cus_refused_b", { name: "B" })),
      { entry: failed, attempt: MAX_ATTEMPTS, startedAt: new Date().toISOString(), spec: { run: { kind: "schedule", id: failed.id }, correlationId: failed.id, key: `schedule:${SCHEDULE_ID}:${failed.id}` }, ok: false, error: "boom" },
    ];
    const { results, popped } = await commit(batch, window);
    expect(results.map((r) => [r.o.entry.id, r.status])).toEqual([[a.id, "done"], [refused.id, "retrying"], [b.id, "done"], [failed.id, "dead"]]);
    expect(results[1]!.error).toBe('commit refused: No customer "cus_missing" to update');
    expect(results[3]!.error).toBe("boom");
    expect(popped).toEqual([a]);
    expect(await customer("cus_refused_a")).toBeDefined();
    expect(await customer("cus_refused_b")).toBeDefined();
    expect(await customer("cus_refused_x")).toBeUndefined();
    expect(await db.get("SELECT 1 AS one FROM commits WHERE idempotency_key = ?", [`schedule:${SCHEDULE_ID}:${refused.id}`])).toBeUndefined();
    expect([await triggeredFor(a.id), await triggeredFor(refused.id), await triggeredFor(b.id), await triggeredFor(failed.id)]).toEqual([1, 0, 1, 0]);
    const rows = await db.all<{ event_id: string; status: string; last_error: string }>("SELECT event_id, status, last_error FROM event_schedule_events WHERE schedule_id = ? ORDER BY event_id", [SCHEDULE_ID]);
    expect(rows).toEqual(
      [
        { event_id: refused.id, status: "retrying", last_error: 'commit refused: No customer "cus_missing" to update' },
        // finished beyond the cursor (the refused one holds it): a done mark
        { event_id: b.id, status: "done", last_error: null },
        { event_id: failed.id, status: "dead", last_error: "boom" },
      ].sort((x, y) => x.event_id.localeCompare(y.event_id)),
    );
  });

  it("an operator retry's keys are looked up: a revived event whose writes were committed before writes nothing twice", async () => {
    const [first] = await read(1);
    await commit([await ran(first!, (ctx) => ctx.objects.upsert("customer", "cus_revived", { name: "Once", balance: 1 }))], [first!]);
    // the same event again as an operator retry whose handler would write something else
    const again = { ...first!, revived: true, hasRow: true, state: "running" as const };
    const { results } = await commit([await ran(again, (ctx) => ctx.objects.upsert("customer", "cus_revived", { name: "Twice", balance: 2 }))], []);
    expect(results.map((r) => r.status)).toEqual(["done"]);
    const row = await customer("cus_revived");
    expect([JSON.parse(row!.properties), row!.version]).toEqual([{ name: "Once", balance: 1 }, 1]);
    expect(await triggeredFor(first!.id)).toBe(1);
  });
});
