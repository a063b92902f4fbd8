/**
 * An event schedule's group commit (`writeGroupCommit`, core/runtime/event-schedule-commit.ts; spec 6.1,
 * 2.4 `schedule.triggered`): the handlers of a batch written in one transaction, without a savepoint
 * each unless one is refused, their idempotency keys recorded but not looked up (the done marks and
 * cursor in the same transaction make them once-only), except an operator retry's. Real app, real
 * SQLite; the outcomes come from `HandlerRunner.execute` as the consumer's do.
 */
import fc from "fast-check";
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
import type { OntologyChange, SystemContext } from "../core/sdk/context";
import { OntologyStore } from "../core/ontology/store";

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
  /** Resolves once the writer has run no statement for 250 ms (at most 10 s). */
  async function writerQuiet(): Promise<void> {
    let last = db.stats().writerStatements;
    for (let quietFor = 0, waited = 0; quietFor < 250 && waited < 10_000; waited += 50) {
      await new Promise((r) => setTimeout(r, 50));
      const now = db.stats().writerStatements;
      quietFor = now === last ? quietFor + 50 : 0;
      last = now;
    }
  }
  const commit = (batch: Outcome[], window: Entry[]) => writeGroupCommit({ db, events, handlers }, store, schedule, MAX_ATTEMPTS, batch, { window, cursor: undefined, readCursor: () => window.at(-1)?.cursor }, new Date().toISOString());
  const triggeredFor = async (eventId: string) => (await db.all<{ n: number }>("SELECT seq AS n FROM events WHERE type = 'schedule.triggered' AND json_extract(envelope, '$.causationId') = ?", [eventId])).length;
  const customer = (id: string) => db.get<{ properties: string; version: number }>("SELECT properties, version FROM objects WHERE object_type_id = 'customer' AND primary_id = ?", [id]);

  it("writes a batch in seven calls to SQLite whatever its size (its objects read in one and written in one, its keys looked up in one and recorded in one); the keys it records de-duplicate later appends", async () => {
    const window = await read(10);
    const batch = await Promise.all(window.map((e, i) => ran(e, (ctx) => ctx.objects.upsert("customer", `cus_commit_${i}`, { name: `Commit ${i}` }))));
    // what the append woke (the app's own followers) has written before the count starts: a writer that
    // joined the commit's group would add its statements to it
    await writerQuiet();
    const before = db.stats();
    const { results, popped, newCursor } = await commit(batch, window);
    const after = db.stats();
    expect(results.map((r) => r.status)).toEqual(Array(10).fill("done"));
    expect(popped).toEqual(window);
    expect(newCursor).toBe(window.at(-1)!.cursor);
    // BEGIN with the group's savepoint, the objects' SELECT, the derived keys' SELECT, the objects' INSERT, the event keys' INSERT, the cursor's UPDATE, then COMMIT with the deferred rows (events, keys, commits)
    expect(after.writerStatements - before.writerStatements).toBe(7);
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

  it("records its event keys before the database group's later callers run: a client's append with one of them in the same group commit is a duplicate", async () => {
    const window = await read(2);
    const batch = await Promise.all(window.map((e) => ran(e, (ctx) => ctx.events.append([{ type: "sync.run.started", payload: { syncId: "probe", runId: `keyed-${e.id}` } }]))));
    const triggeredKey = `schedule.triggered:${SCHEDULE_ID}@${window[0]!.id}`;
    const appendedKey = `schedule:${SCHEDULE_ID}:${window[1]!.id}:event:0`;
    await writerQuiet(); // the app's followers woken by the append: none of their commits in the count
    const commitsBefore = db.stats().commits;
    // started in the same tick: the append's transaction joins the group the commit's opened, after it
    const committing = commit(batch, window);
    const appending = events.append([
      { type: "schedule.triggered", idempotencyKey: triggeredKey, payload: { scheduleId: SCHEDULE_ID, occurrenceAt: "2026-01-01T00:00:00.000Z", triggeredAt: "2026-01-01T00:00:00.000Z", occurrenceKey: "client" } },
      { type: "sync.run.started", idempotencyKey: appendedKey, payload: { syncId: "probe", runId: "client" } },
    ]);
    const [{ results }, appended] = await Promise.all([committing, appending]);
    expect(db.stats().commits - commitsBefore).toBe(1); // one database group commit for both
    expect(results.map((r) => r.status)).toEqual(["done", "done"]);
    expect(appended).toEqual([]);
    for (const key of [triggeredKey, appendedKey]) {
      const rows = await db.all<{ n: number }>("SELECT seq AS n FROM events WHERE json_extract(envelope, '$.idempotencyKey') = ?", [key]);
      expect(rows).toHaveLength(1);
    }
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

  it("writes what one commit per handler writes (objects, versions, ontology events), for any batch of upserts, updates and deletes, a refused one included (property)", async () => {
    const ontology = app.container.resolve(OntologyStore);
    /** One change of a handler on object k of a run's three (some exist before the batch). */
    const change = fc.oneof(
      fc.record({ op: fc.constant("upsert" as const), k: fc.nat(2), name: fc.constantFrom("A", "B"), balance: fc.nat(3) }),
      fc.record({ op: fc.constant("update" as const), k: fc.nat(2), balance: fc.nat(3) }),
      fc.record({ op: fc.constant("delete" as const), k: fc.nat(2) }),
    );
    type Change = typeof change extends fc.Arbitrary<infer C> ? C : never;
    const toChanges = (prefix: string, list: Change[]): OntologyChange[] =>
      list.map((c) => {
        const primaryId = `${prefix}_${c.k}`;
        if (c.op === "delete") return { op: "object.delete", objectTypeId: "customer", primaryId };
        if (c.op === "update") return { op: "object.update", objectTypeId: "customer", primaryId, properties: { balance: c.balance } };
        return { op: "object.upsert", objectTypeId: "customer", primaryId, properties: { name: c.name, balance: c.balance } };
      });
    /** The run's objects and the ontology events its writes emitted, with the prefix taken out. */
    const state = async (prefix: string, since: string) => {
      const objects = await db.all<{ primary_id: string; properties: string; version: number; created_at: string }>("SELECT primary_id, properties, version, created_at FROM objects WHERE object_type_id = 'customer' AND primary_id GLOB ? ORDER BY primary_id", [`${prefix}_*`]);
      const emitted = await db.all<{ type: string; payload: string }>("SELECT type, json_extract(envelope, '$.payload') AS payload FROM events WHERE topic = 'objects' AND json_extract(envelope, '$.payload.primaryId') GLOB ? ORDER BY seq", [`${prefix}_*`]);
      const strip = (text: string) => text.replaceAll(prefix, "run");
      return { objects: objects.map((o) => ({ id: strip(o.primary_id), properties: JSON.parse(o.properties), version: o.version, createdBefore: o.created_at < since })), events: emitted.map((e) => ({ type: e.type, payload: JSON.parse(strip(e.payload)) })) };
    };
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(2), { maxLength: 3 }), fc.array(fc.array(change, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 5 }), async (existing, handlersChanges) => {
        run++;
        const [batched, alone] = [`cus_b${run}`, `cus_a${run}`];
        for (const prefix of [batched, alone]) {
          for (const k of new Set(existing)) await ontology.commit([{ op: "object.upsert", objectTypeId: "customer", primaryId: `${prefix}_${k}`, properties: { name: "Before", balance: 9 } }], { origin: { kind: "runtime" }, correlationId: "before" });
        }
        await new Promise((r) => setTimeout(r, 2));
        const since = new Date().toISOString();
        // the batch, as the consumer commits it
        const window = await read(handlersChanges.length);
        const outcomes = await Promise.all(window.map((e, i) => ran(e, (ctx) => {
          for (const c of toChanges(batched, handlersChanges[i]!)) {
            if (c.op === "object.delete") ctx.objects.delete(c.objectTypeId, c.primaryId);
            else if (c.op === "object.update") ctx.objects.update(c.objectTypeId, c.primaryId, c.properties);
            else if (c.op === "object.upsert") ctx.objects.upsert(c.objectTypeId, c.primaryId, c.properties);
          }
        })));
        const { results } = await commit(outcomes, window);
        // the reference: each handler's changes in a commit of its own, a refused one writing nothing
        const expected: string[] = [];
        for (const list of handlersChanges) {
          const ok = await ontology.commit(toChanges(alone, list), { origin: { kind: "runtime" }, correlationId: "alone" }).then(() => true, () => false);
          expected.push(ok ? "done" : "retrying");
        }
        expect(results.map((r) => r.status)).toEqual(expected);
        expect(await state(batched, since)).toEqual(await state(alone, since));
      }),
      { numRuns: 40 },
    );
  });

  it("an event handled again writes nothing twice: an operator retry's event read again after a restart (its row gone)", async () => {
    const [dead] = await read(1);
    const handler = (name: string) => (ctx: SystemContext) => {
      ctx.objects.upsert("customer", "cus_again", { name });
      void ctx.events.append([{ type: "sync.run.started", payload: { syncId: "again", runId: name } }]);
    };
    // the operator retry commits first (its row is deleted as it finishes) ...
    const revived = { ...dead!, revived: true, hasRow: true };
    expect((await commit([await ran(revived, handler("Retried"))], [])).results.map((r) => r.status)).toEqual(["done"]);
    // ... then, after a restart, the event is read again from the stored cursor, with no row to say it is done
    expect((await commit([await ran(dead!, handler("Again"))], [dead!])).results.map((r) => r.status)).toEqual(["done"]);
    const row = await customer("cus_again");
    expect([JSON.parse(row!.properties), row!.version]).toEqual([{ name: "Retried" }, 1]);
    expect(await triggeredFor(dead!.id)).toBe(1);
    expect(await db.all("SELECT json_extract(envelope, '$.payload.runId') AS runId FROM events WHERE type = 'sync.run.started' AND json_extract(envelope, '$.payload.syncId') = 'again'")).toEqual([{ runId: "Retried" }]);
  });

  it("an operator retry that finishes while its dead letter sits beyond the stored cursor leaves a done mark (a restart does not run it again); the mark goes once the cursor passes it", async () => {
    const [held, dead] = (await read(2)) as [Entry, Entry];
    const rowOf = async (id: string) => (await db.get<{ status: string }>("SELECT status FROM event_schedule_events WHERE schedule_id = ? AND event_id = ?", [SCHEDULE_ID, id]))?.status;
    // `held` still runs, so the stored cursor is before both; `dead` was dead-lettered, then retried (what store.revive leaves)
    await db.transaction((tx) => store.writeFailure(tx, "retrying", { eventId: dead.id, partitionKey: dead.partition, occurredAt: dead.occurredAt, attempts: 0, revived: true, event: dead.event }, new Date().toISOString()));
    const window: Entry[] = [held, { ...dead, state: "dead", hasRow: true, event: undefined }];
    const retried = { ...dead, revived: true, hasRow: true };
    expect((await commit([await ran(retried, (ctx) => ctx.objects.upsert("customer", "cus_retried", { name: "Retried" }))], window)).popped).toEqual([]);
    expect(await rowOf(dead.id)).toBe("done");
    // `held` finishes: the cursor moves past both events, and the mark goes with it
    window[1]!.state = "done";
    const { popped } = await commit([await ran(held, (ctx) => ctx.objects.upsert("customer", "cus_held", { name: "Held" }))], window);
    expect(popped.map((e) => e.id)).toEqual([held.id, dead.id]);
    expect(await rowOf(dead.id)).toBeUndefined();
  });

  it("an idempotency key a handler chose itself is looked up as always: used before, or by an earlier handler of the same batch", async () => {
    const started = (runId: string, idempotencyKey: string) => ({ type: "sync.run.started" as const, payload: { syncId: "chosen", runId }, idempotencyKey });
    expect(await events.append([started("api", "chosen-key-1")])).toHaveLength(1);
    const window = await read(3);
    const outcomes = await Promise.all(window.map((e, i) => ran(e, (ctx) => void ctx.events.append([started(`h${i}-1`, "chosen-key-1"), started(`h${i}-2`, "chosen-key-2")]))));
    expect((await commit(outcomes, window)).results.map((r) => r.status)).toEqual(["done", "done", "done"]);
    const stored = await db.all<{ runId: string }>("SELECT json_extract(envelope, '$.payload.runId') AS runId FROM events WHERE type = 'sync.run.started' AND json_extract(envelope, '$.payload.syncId') = 'chosen' ORDER BY seq");
    expect(stored.map((r) => r.runId)).toEqual(["api", "h0-2"]);
  });
});
