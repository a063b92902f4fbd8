/**
 * Event schedules (spec 6.1): a durable consumer per schedule runs its handler once per matching event,
 * in order per partition key and concurrently across partitions, with retries, dead letters and an
 * operator retry, pause with a visible backlog, and a restart (graceful or kill -9) that neither skips
 * nor repeats an event. Real app, real SQLite, real HTTP. The probe schedules are in
 * test/fixtures/event-schedule-project.ts: each records what it handled in a `tally` object.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { allEvents, client, eventually, startApp, startFixtureProcess, tempDir, tokenFor } from "./helpers";
import { freePort } from "./setup/global";
import { eventScheduleProject, probeControl, withLate } from "./fixtures/event-schedule-project";
import { OntologyStore } from "../core/ontology/store";
import { EVENT_STREAM, type StreamScan } from "../core/events/stream";
import type { App } from "../core/app";
import sqlite3 from "sqlite3";
import { Database } from "../core/store/db";
import { openConnection } from "../core/store/sql";
import { DEAD_LETTERS_PAGE } from "../core/runtime/event-schedules";
import { defineConnector, defineSchedule } from "../core/sdk";

type Client = ReturnType<typeof client>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Appends events with POST /api/events (as dev) and answers the stored ones. */
async function append(c: Client, events: Array<{ type: string; payload: Record<string, unknown>; partitionKey?: string }>): Promise<any[]> {
  const res = await c.post("/api/events", { events });
  expect(res.status, res.text).toBe(200);
  return res.body.events;
}

/** `sync.run.finished` events for the `ordered` schedule: `n` 0..count-1 in partition `partition`. */
const finished = (partition: string, count: number, extra: Record<string, unknown> = {}, from = 0) =>
  Array.from({ length: count }, (_, i) => ({ type: "sync.run.finished", partitionKey: partition, payload: { syncId: "probe", runId: `${partition}-${from + i}`, n: from + i, ...extra } }));

/** What a tally object recorded (empty when it does not exist yet). */
async function handled(c: Client, tallyId: string): Promise<unknown[]> {
  const res = await c.get(`/api/objects/tally/${encodeURIComponent(tallyId)}`);
  if (res.status === 404) return [];
  expect(res.status).toBe(200);
  return res.body.properties.handled;
}

async function schedule(c: Client, id: string): Promise<any> {
  const res = await c.get("/api/schedules");
  expect(res.status).toBe(200);
  return res.body.data.find((s: any) => s.scheduleId === id);
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/** What the `hangs` probe's `ctx.artifacts.upload` and `ctx.blobs.createDownloadUrl` answer once its attempt was given up on for `reason`. */
const refusedAfterAbort = (reason: string) =>
  ["ctx.artifacts.upload", "ctx.blobs.createDownloadUrl"].map((call) => ({
    call,
    name: "AbortError",
    message: `${call} refused: this handler was given up on (${reason}), so it may store nothing more`,
  }));

describe("event schedules", () => {
  let app: App & { dataDir: string };
  let c: Client;
  beforeAll(async () => {
    // no recovery pass during these tests: what wakes a consumer is the append notices
    app = await startApp({ project: eventScheduleProject, env: { SVC_EVENT_SCHEDULE_MAX_LAG_MS: "2000", SVC_OUTBOX_RECOVERY_MS: "3600000" } });
    c = client(app);
  });
  afterAll(() => app?.close());

  it("fires once per matching event (types, topics, objectTypeId), never for others, with schedule.triggered in the same commit", async () => {
    const [match] = await append(c, [
      ...finished("match", 1),
      { type: "sync.run.started", partitionKey: "other", payload: { syncId: "probe", runId: "not-ordered" } },
      { type: "rule.triggered", payload: { ruleId: "probe-rule", subject: { kind: "object", objectTypeId: "customer", primaryId: "cus_acme" } } },
    ]);
    // action.completed about an invoice matches invoice-actions; one without a subject does not
    expect((await c.post("/api/actions/diagnostics.noop", { params: {} })).body.status).toBe("succeeded");
    expect((await c.post("/api/actions/invoice.approve", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: {} })).body.status).toBe("succeeded");

    await eventually(async () => (await handled(c, "match")).length === 1 && (await handled(c, "invoice-actions")).length === 1 && (await handled(c, "dead")).length === 1);
    await sleep(300);
    expect(await handled(c, "match")).toEqual([0]);
    expect(await handled(c, "invoice-actions")).toEqual(["inv_1001"]);
    expect(await handled(c, "dead")).toEqual(["not-ordered"]);
    const ofOrdered = probeControl.calls.filter((x) => x.scheduleId === "ordered");
    expect(ofOrdered.map((x) => x.eventId)).toEqual([match.id]);

    const triggered = (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "ordered");
    expect(triggered).toHaveLength(1);
    expect(triggered[0]).toMatchObject({
      topic: "schedules",
      payload: { scheduleId: "ordered", occurrenceAt: match.occurredAt, triggeredAt: expect.any(String), occurrenceKey: `ordered@${match.id}`, eventId: match.id },
      origin: { kind: "runtime", connectorId: "probe", scheduleId: "ordered", eventId: match.id },
      correlationId: match.correlationId,
      causationId: match.id,
    });
    expect(triggered[0].actor).toBeUndefined();
    // the handler's write carries the same origin and correlation, and lies in the same commit window as schedule.triggered
    const write = (await allEvents(c, "&topic=objects")).find((e) => e.payload.objectTypeId === "tally" && e.payload.primaryId === "match");
    expect(write).toMatchObject({ type: "object.created", origin: { kind: "runtime", scheduleId: "ordered", eventId: match.id }, correlationId: match.correlationId, causationId: match.id });
    // the invoice-actions firing took the action event's correlation (the run)
    const action = (await allEvents(c, "&type=action.completed")).find((e) => e.payload.subject?.primaryId === "inv_1001");
    const invoiceTriggered = (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "invoice-actions");
    expect(invoiceTriggered.map((e) => [e.payload.eventId, e.correlationId])).toEqual([[action.id, action.correlationId]]);
  });

  it("wakes only for appends of a topic its selector can match, reads only the events that match, and its stored cursor keeps up", async () => {
    const stream = app.container.resolve(EVENT_STREAM);
    const scans = vi.spyOn(stream, "scan");
    const answered = async () => (await Promise.all(scans.mock.results.map((r) => r.value as Promise<StreamScan>))).reduce((n, scan) => n + scan.events.length, 0);
    try {
      // a topic no schedule follows (schedules): no consumer reads (the recovery pass is off in this app)
      await append(c, Array.from({ length: 100 }, (_, i) => ({ type: "schedule.triggered", payload: { scheduleId: "elsewhere", occurrenceAt: "2026-01-01T00:00:00.000Z", triggeredAt: "2026-01-01T00:00:00.000Z", occurrenceKey: `elsewhere@${i}` } })));
      await sleep(300);
      expect(scans.mock.calls).toEqual([]);
      // a topic two schedules follow (pipelines: "hangs" and "starts-paused"), of a type neither matches: they
      // read, find nothing, and their cursors move past both batches (flushed within a second)
      await append(c, Array.from({ length: 100 }, (_, i) => ({ type: "pipeline.run.step.started", partitionKey: "steps", payload: { pipelineId: "probe", runId: `step-${i}`, stepId: "s" } })));
      const latest = await stream.latestCursor();
      for (const id of ["hangs", "starts-paused"]) await eventually(async () => (await schedule(c, id)).consumer.cursor === latest, 5000, 100);
      expect(scans).toHaveBeenCalled();
      expect(await answered()).toBe(0);
    } finally {
      scans.mockRestore();
    }
  });

  it("keeps stream order within a partition and runs partitions concurrently", async () => {
    const before = probeControl.calls.length;
    const slow = finished("slow", 6, { slowMs: 150 });
    const fast = finished("fast", 6);
    const quick = finished("quick", 6);
    // interleaved in one append: slow, fast, quick, slow, fast, quick, …
    const appended = await append(c, slow.flatMap((s, i) => [s, fast[i]!, quick[i]!]));
    await eventually(async () => (await handled(c, "slow")).length === 6, 30_000);
    for (const p of ["slow", "fast", "quick"]) expect(await handled(c, p)).toEqual(range(0, 6));
    const calls = probeControl.calls.slice(before).filter((x) => x.scheduleId === "ordered");
    expect(calls).toHaveLength(18);
    for (const p of ["slow", "fast", "quick"]) {
      const mine = calls.filter((x) => x.partition === p);
      expect(mine.map((x) => x.n)).toEqual(range(0, 6));
      // the next one starts only after the previous one finished (and committed)
      for (let i = 1; i < mine.length; i++) expect(mine[i]!.start).toBeGreaterThanOrEqual(mine[i - 1]!.end);
    }
    const slowCalls = calls.filter((x) => x.partition === "slow");
    const fastCalls = calls.filter((x) => x.partition === "fast");
    // the fast partition does not wait for the slow one: it is done before the slow one is half-way
    expect(Math.max(...fastCalls.map((x) => x.end))).toBeLessThan(slowCalls[3]!.start);
    expect(fastCalls.some((f) => slowCalls.some((s) => f.start >= s.start && f.start < s.end))).toBe(true);
    // schedule.triggered of a partition appear in the partition's stream order
    const idsOf = (p: string) => appended.filter((e) => e.partitionKey === p).map((e) => e.id);
    const triggered = (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "ordered");
    for (const p of ["slow", "fast", "quick"]) expect(triggered.map((e) => e.payload.eventId).filter((id: string) => idsOf(p).includes(id))).toEqual(idsOf(p));
  });

  it("retries a failing handler with backoff, blocking only its partition", async () => {
    const before = probeControl.calls.length;
    const [flaky] = await append(c, finished("flaky", 1, { failTimes: 2 }));
    await append(c, finished("flaky", 1, {}, 1));
    const [other] = await append(c, finished("unblocked", 1));
    const mid = await eventually(async () => {
      const s = await schedule(c, "ordered");
      return s.consumer.retrying === 1 && s.consumer.lastError ? s : undefined;
    });
    // the flaky partition's two events are unfinished (the other partition's may be too, or done already)
    expect(mid.consumer).toMatchObject({ caughtUp: false, deadLettered: 0, lastError: { message: "probe failure on attempt 1", eventId: flaky.id } });
    expect(mid.consumer.backlog).toBeGreaterThanOrEqual(2);
    // its oldest unfinished event waits longer than SVC_EVENT_SCHEDULE_MAX_LAG_MS (2 s here): /api/status says so
    const lagging = await eventually(async () => {
      const body = (await c.get("/api/status")).body;
      return body.parts.schedules.problems.some((x: any) => x.scheduleId === "ordered" && x.problem.startsWith("lag")) ? body : undefined;
    });
    expect(lagging.status).toBe("degraded");
    await eventually(async () => (await handled(c, "unblocked")).length === 1);
    expect(await handled(c, "flaky")).toEqual([]);
    await eventually(async () => (await handled(c, "flaky")).length === 2, 15_000);
    expect(await handled(c, "flaky")).toEqual([0, 1]);
    const calls = probeControl.calls.slice(before);
    const attempts = calls.filter((x) => x.eventId === flaky.id);
    expect(attempts.map((x) => [x.attempt, x.ok])).toEqual([[1, false], [2, false], [3, true]]);
    // backoff: 1 s, then 2 s
    expect(attempts[1]!.start - attempts[0]!.end).toBeGreaterThanOrEqual(900);
    expect(attempts[2]!.start - attempts[1]!.end).toBeGreaterThanOrEqual(1900);
    // the other partition ran meanwhile; the flaky partition's next event only after the retry succeeded
    expect(calls.find((x) => x.eventId === other.id)!.end).toBeLessThan(attempts[1]!.start);
    expect(calls.find((x) => x.partition === "flaky" && x.n === 1)!.start).toBeGreaterThanOrEqual(attempts[2]!.end);
    const after = await schedule(c, "ordered");
    expect(after.consumer).toMatchObject({ backlog: 0, retrying: 0, caughtUp: true });
  }, 30_000);

  it("dead-letters after maxAttempts (the partition proceeds), shows it in /api/status, and an operator retry runs it", async () => {
    probeControl.failing.add("bad");
    const [bad, good] = await append(c, [
      { type: "sync.run.started", partitionKey: "dl", payload: { syncId: "probe", runId: "bad" } },
      { type: "sync.run.started", partitionKey: "dl", payload: { syncId: "probe", runId: "good" } },
    ]);
    await eventually(async () => (await handled(c, "dead")).includes("good"), 15_000);
    const dead = await schedule(c, "dead");
    expect(dead.consumer).toMatchObject({ backlog: 0, deadLettered: 1, lastError: { message: "probe refuses bad", eventId: bad.id } });
    const letters = await c.get("/api/schedules/dead/dead-letters");
    expect(letters.body.data).toEqual([{ eventId: bad.id, type: "sync.run.started", partitionKey: "dl", occurredAt: bad.occurredAt, attempts: 2, lastError: "probe refuses bad", deadAt: expect.any(String) }]);
    expect(probeControl.calls.filter((x) => x.eventId === bad.id).map((x) => x.attempt)).toEqual([1, 2]);
    const status = await c.get("/api/status");
    expect(status.body.status).toBe("degraded");
    expect(status.body.parts.schedules).toMatchObject({ status: "unhealthy", problems: [{ scheduleId: "dead", problem: expect.stringContaining("1 dead-lettered") }] });
    const triggered = async () => (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "dead").map((e) => e.payload.eventId);
    expect(await triggered()).not.toContain(bad.id);
    expect(await triggered()).toContain(good.id);

    // who may do what
    const alice = client(app, await tokenFor(app, "alice"));
    expect((await alice.post("/api/schedules/dead/retry", { eventId: bad.id })).status).toBe(403);
    expect((await c.post("/api/schedules/dead/retry", { eventId: good.id })).body.error.code).toBe("not_found");
    expect((await c.post("/api/schedules/nope/retry", { eventId: bad.id })).status).toBe(404);
    expect((await c.post("/api/schedules/dead/retry", {})).status).toBe(400);
    expect((await c.post("/api/schedules/dead/trigger", {})).status).toBe(409);

    probeControl.failing.delete("bad");
    const retried = await c.post("/api/schedules/dead/retry", { eventId: bad.id });
    expect(retried.status).toBe(200);
    expect(retried.body.consumer.deadLettered).toBe(0);
    await eventually(async () => (await handled(c, "dead")).includes("bad"));
    expect((await handled(c, "dead")).filter((x) => x === "bad" || x === "good")).toEqual(["good", "bad"]);
    expect((await triggered()).filter((id: string) => id === bad.id)).toHaveLength(1);
    expect((await c.get("/api/schedules/dead/dead-letters")).body.data).toEqual([]);
    expect((await c.post("/api/schedules/dead/retry", { eventId: bad.id })).status).toBe(404);
    expect((await c.get("/api/status")).body).toMatchObject({ status: "ok", parts: { schedules: { status: "ok", problems: [] } } });
  }, 30_000);

  it("pages its dead letters with nextPageToken, bound to the schedule", async () => {
    probeControl.failing.add("bad-a");
    probeControl.failing.add("bad-b");
    const [a, b] = await append(c, [
      { type: "sync.run.started", partitionKey: "dl-page", payload: { syncId: "probe", runId: "bad-a" } },
      { type: "sync.run.started", partitionKey: "dl-page", payload: { syncId: "probe", runId: "bad-b" } },
    ]);
    await eventually(async () => ((await schedule(c, "dead")).consumer.deadLettered === 2 ? true : undefined), 15_000);
    const first = await c.get("/api/schedules/dead/dead-letters?limit=1");
    expect(first.body.data.map((d: any) => d.eventId)).toEqual([a.id]);
    expect(first.body.nextPageToken).toEqual(expect.any(String));
    // limit is deprecated: the answer says so (RFC 9745), and one with pageSize does not
    expect([first.headers.get("deprecation"), first.headers.get("link")]).toEqual([`@${Date.UTC(2026, 10, 29) / 1000}`, '</docs>; rel="deprecation"; type="text/html"']);
    // pageSize, as the other listings name it (limit, its older name, above)
    const second = await c.get(`/api/schedules/dead/dead-letters?pageSize=1&nextPageToken=${first.body.nextPageToken}`);
    expect(second.body.data.map((d: any) => d.eventId)).toEqual([b.id]);
    expect(second.body).not.toHaveProperty("nextPageToken");
    expect(second.headers.get("deprecation")).toBeNull();
    expect((await c.get(`/api/schedules/dead/dead-letters?nextPageToken=garbage`)).status).toBe(400);
    expect((await c.get("/api/schedules/dead/dead-letters?pageSize=1&limit=2")).body.data).toHaveLength(1); // pageSize wins
    // a page reads from its position in an index of the schedule's dead letters, without sorting them all
    const conn = await openConnection(app.container.resolve(Database).file, sqlite3.OPEN_READONLY);
    const plan = (await conn.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${DEAD_LETTERS_PAGE}`, ["dead", "", "", 2]).finally(() => conn.close())).map((r) => r.detail);
    expect(plan).toEqual([expect.stringMatching(/^SEARCH event_schedule_events USING INDEX event_schedule_events_dead \(schedule_id=\? AND \(updated_at,event_id\)>\(\?,\?\)\)$/)]);
    probeControl.failing.delete("bad-a");
    probeControl.failing.delete("bad-b");
    // two retries at once: one is queued, the other is 409 saying so (it was 404 "not dead-lettered")
    const both = await Promise.all([c.post("/api/schedules/dead/retry", { eventId: a.id }), c.post("/api/schedules/dead/retry", { eventId: a.id })]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(both.find((r) => r.status === 409)!.body.error).toMatchObject({ code: "conflict", message: expect.stringContaining("being retried"), details: { status: "retrying" } });
    expect((await c.post("/api/schedules/dead/retry", { eventId: b.id })).status).toBe(200);
    await eventually(async () => {
      const s = (await schedule(c, "dead")).consumer;
      return s.deadLettered === 0 && s.backlog === 0 ? true : undefined;
    }, 30_000);
  }, 60_000);

  it("fails an attempt that runs past timeoutMs: its ctx.signal is aborted, what it writes after is dropped, the retry runs", async () => {
    const before = probeControl.calls.length;
    const refusedBefore = probeControl.afterAbort.length;
    const [hung] = await append(c, [{ type: "pipeline.run.finished", partitionKey: "hang", payload: { pipelineId: "probe", runId: "hang-1" } }]);
    const failed = await eventually(async () => {
      const s = await schedule(c, "hangs");
      return s.consumer.lastError ? s : undefined;
    });
    expect(failed).toMatchObject({ timeoutMs: 1500, consumer: { lastError: { message: "handler timed out after 1500 ms", eventId: hung.id } } });
    await eventually(async () => (await handled(c, "hangs")).length === 1, 10_000);
    await sleep(300);
    // only the retry's write: attempt 1's, made after its timeout, never committed
    expect(await handled(c, "hangs")).toEqual([2]);
    expect(probeControl.aborted).toEqual([{ eventId: hung.id, attempt: 1, reason: "handler timed out after 1500 ms" }]);
    // what it tried to store after the abort was refused, nothing of it done
    expect(probeControl.afterAbort.slice(refusedBefore)).toEqual(refusedAfterAbort("handler timed out after 1500 ms"));
    const attempts = probeControl.calls.slice(before).filter((x) => x.eventId === hung.id);
    expect(attempts.map((x) => x.attempt)).toEqual([1, 2]);
    expect(attempts[0]!.end - attempts[0]!.start).toBeGreaterThanOrEqual(1490);
    // the retry came after the timeout and the 1 s backoff
    expect(attempts[1]!.start - attempts[0]!.start).toBeGreaterThanOrEqual(2450);
    expect((await schedule(c, "hangs")).consumer).toMatchObject({ backlog: 0, retrying: 0, deadLettered: 0 });
    const triggered = (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "hangs");
    expect(triggered.map((e) => e.payload.eventId)).toEqual([hung.id]);
  }, 20_000);

  it("pauses: the consumer runs nothing, its backlog grows visibly; unpausing works it off in order", async () => {
    const paused = await c.post("/api/schedules/ordered/pause", { note: "maintenance" });
    expect(paused.body).toMatchObject({ scheduleId: "ordered", paused: true, note: "maintenance" });
    const events = await append(c, finished("held", 3));
    const held = await eventually(async () => {
      const s = await schedule(c, "ordered");
      return s.consumer.backlog === 3 ? s : undefined;
    });
    expect(held.consumer).toMatchObject({ caughtUp: false, oldestPendingAt: events[0].occurredAt, lagMs: expect.any(Number) });
    const status = (await c.get("/api/status")).body;
    expect(status.parts.schedules.schedules.find((s: any) => s.scheduleId === "ordered")).toMatchObject({ paused: true, backlog: 3, caughtUp: false });
    expect(await handled(c, "held")).toEqual([]);
    await sleep(2200);
    // a paused schedule's lag is expected: it is shown, not unhealthy
    expect((await c.get("/api/status")).body.parts.schedules.problems).toEqual([]);
    expect(await handled(c, "held")).toEqual([]);

    expect((await c.post("/api/schedules/ordered/unpause", {})).body.paused).toBe(false);
    await eventually(async () => (await handled(c, "held")).length === 3);
    expect(await handled(c, "held")).toEqual([0, 1, 2]);
    expect((await schedule(c, "ordered")).consumer).toMatchObject({ backlog: 0, caughtUp: true });
    // declared paused
    const starts = await schedule(c, "starts-paused");
    expect(starts).toMatchObject({ paused: true, on: { types: ["pipeline.run.started"] }, maxAttempts: 10, concurrency: 16, timeoutMs: 300_000 });
  }, 20_000);

  it("the sandbox's overdue-reminder stamps the invoice once per rule.triggered, without looping", async () => {
    await app.container.resolve(OntologyStore).commit([{ op: "object.update", objectTypeId: "invoice", primaryId: "inv_1004", properties: { status: "overdue" } }], { origin: { kind: "runtime" }, correlationId: "test-overdue" });
    const invoice = await eventually(async () => {
      const res = await c.get("/api/objects/invoice/inv_1004");
      return res.body.properties.reminderSentAt ? res.body : undefined;
    });
    expect(invoice.properties.status).toBe("overdue");
    await sleep(500);
    const rules = (await allEvents(c, "&topic=rules")).filter((e) => e.payload.subject.primaryId === "inv_1004");
    expect(rules.map((e) => e.type)).toEqual(["rule.triggered"]);
    const reminders = (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "overdue-reminder");
    expect(reminders).toHaveLength(1);
    expect(reminders[0]).toMatchObject({ payload: { eventId: rules[0].id }, correlationId: "test-overdue", causationId: rules[0].id });
    const stamps = (await allEvents(c, "&topic=objects")).filter((e) => e.payload.primaryId === "inv_1004" && e.origin?.scheduleId === "overdue-reminder");
    expect(stamps).toHaveLength(1);
    // an appended rule.triggered (an actor's) fires the schedule, which sends nothing
    await append(c, [{ type: "rule.triggered", payload: { ruleId: "invoice-overdue", subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1006" } } }]);
    await eventually(async () => (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "overdue-reminder").length === 2);
    expect((await c.get("/api/objects/invoice/inv_1006")).body.properties.reminderSentAt).toBeUndefined();
  });
});

describe("declaring an event schedule", () => {
  const run = async () => undefined;
  it.each([
    [{ on: { types: ["nope.event"] } }, 'Unknown event type "nope.event"'],
    [{ on: { topics: ["nope"] } }, 'Unknown topic "nope"'],
    [{ on: {} }, "needs topics or types"],
    [{ on: { types: ["object.created"], topics: ["actions"] } }, "could never match"],
    [{ on: { types: ["object.created"], subject: "x" } }, 'Unknown event selector field "subject"'],
    [{ on: { types: ["object.created"], objectTypeId: "" } }, "objectTypeId must be a non-empty string"],
    [{ on: { types: ["object.created"] }, cron: "* * * * *" }, "exactly one of cron, every or on"],
    [{ on: { types: ["object.created"] }, overlap: "skip" }, "timezone and overlap apply to cron"],
    [{ on: { types: ["object.created"] }, maxAttempts: 0 }, "maxAttempts must be an integer from 1 to 100"],
    [{ on: { types: ["object.created"] }, concurrency: 1.5 }, "concurrency must be an integer from 1 to 256"],
    [{ on: { types: ["object.created"] }, timeoutMs: 0 }, "timeoutMs must be an integer from 1 to 3600000"],
    [{ on: { types: ["object.created"] }, timeoutMs: 3_600_001 }, "timeoutMs must be an integer from 1 to 3600000"],
    [{ every: 1000, maxAttempts: 3 }, "event schedules (on) only"],
    [{ cron: "* * * * *", timeoutMs: 1000 }, "event schedules (on) only"],
  ])("refuses %j", (def, message) => {
    expect(() => defineSchedule({ ...(def as object), run } as never)).toThrow(message);
  });

  it("accepts a selector and refuses, at startup, an object type the project lacks", async () => {
    expect(defineSchedule({ on: { topics: ["objects"], types: ["object.updated"], objectTypeId: "invoice", partitionKey: "invoice:inv_1" }, maxAttempts: 1, concurrency: 1, run }).on).toEqual({ topics: ["objects"], types: ["object.updated"], objectTypeId: "invoice", partitionKey: "invoice:inv_1" });
    const bad = defineConnector({ id: "bad", schedules: { typo: defineSchedule({ on: { types: ["object.created"], objectTypeId: "invoices" }, run }) } });
    await expect(startApp({ project: { ...eventScheduleProject, connectors: [...eventScheduleProject.connectors, bad] } })).rejects.toThrow('Schedule "typo" of connector "bad": unknown object type "invoices"');
  });

  it("refuses, at startup, an event selector's object type named like an Object.prototype member", async () => {
    const bad = defineConnector({ id: "bad", schedules: { proto: defineSchedule({ on: { types: ["object.created"], objectTypeId: "constructor" }, run }) } });
    await expect(startApp({ project: { ...eventScheduleProject, connectors: [...eventScheduleProject.connectors, bad] } })).rejects.toThrow('Schedule "proto" of connector "bad": unknown object type "constructor"');
  });
});

describe("event schedules across restarts", () => {
  it("a graceful close mid-backlog, then a restart: every event handled exactly once, in order; a schedule added later starts at the newest event", async () => {
    let app = await startApp({ project: eventScheduleProject });
    const dataDir = app.dataDir;
    const partitions = ["r0", "r1", "r2"];
    try {
      let c = client(app);
      const before = probeControl.calls.length;
      const appended = await append(c, partitions.flatMap((p) => finished(p, 20, { slowMs: 25 })));
      await eventually(async () => (await handled(c, "r0")).length >= 4);
      await app.close();
      // closed mid-backlog: what ran before the close (in flight included) is far from all of it
      const doneAtClose = probeControl.calls.slice(before).filter((x) => x.scheduleId === "ordered" && x.ok).length;
      expect(doneAtClose).toBeGreaterThanOrEqual(4);
      expect(doneAtClose).toBeLessThan(60);
      app = await startApp({ dataDir, project: withLate });
      c = client(app);
      for (const p of partitions) await eventually(async () => (await handled(c, p)).length === 20, 30_000);
      for (const p of partitions) expect(await handled(c, p)).toEqual(range(0, 20));
      const calls = probeControl.calls.slice(before).filter((x) => x.scheduleId === "ordered");
      // graceful: what ran before the close committed then, so nothing ran twice
      expect(calls.filter((x) => x.ok).map((x) => x.eventId).sort()).toEqual(appended.map((e) => e.id).sort());
      const triggered = (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "ordered");
      expect(triggered.map((e) => e.payload.eventId).sort()).toEqual(appended.map((e) => e.id).sort());
      // `late` saw none of the history, and fires on what comes next
      await sleep(300);
      expect(await handled(c, "late")).toEqual([]);
      await append(c, finished("after", 1));
      await eventually(async () => (await handled(c, "late")).length === 1);
      expect(await handled(c, "late")).toEqual([0]);
    } finally {
      await app.close();
    }
  }, 90_000);

  it("a close that gives up on a running handler aborts its ctx.signal and commits nothing of it; after a restart the event runs again", async () => {
    let app = await startApp({ project: eventScheduleProject, env: { SVC_SHUTDOWN_TIMEOUT_MS: "200" } });
    const dataDir = app.dataDir;
    try {
      let c = client(app);
      const abortedBefore = probeControl.aborted.length;
      const refusedBefore = probeControl.afterAbort.length;
      const [hung] = await append(c, [{ type: "pipeline.run.finished", partitionKey: "closing", payload: { pipelineId: "probe", runId: "closing-1" } }]);
      await eventually(async () => probeControl.calls.some((x) => x.eventId === hung.id));
      await app.close();
      // the handler saw the abort and then wrote and returned normally: none of it was committed
      expect(probeControl.aborted.slice(abortedBefore)).toEqual([{ eventId: hung.id, attempt: 1, reason: "the server is shutting down" }]);
      expect(probeControl.afterAbort.slice(refusedBefore)).toEqual(refusedAfterAbort("the server is shutting down"));
      app = await startApp({ dataDir, project: eventScheduleProject });
      c = client(app);
      expect(await handled(c, "hangs")).toEqual([]);
      // not finished before the close: it runs again (attempt 1 hangs until its timeout, attempt 2 records)
      await eventually(async () => (await handled(c, "hangs")).length === 1, 15_000);
      expect(await handled(c, "hangs")).toEqual([2]);
      const triggered = (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "hangs");
      expect(triggered.map((e) => e.payload.eventId)).toEqual([hung.id]);
    } finally {
      await app.close();
    }
  }, 40_000);

  it("a close that gives up on a running action aborts its ctx.signal, and the action's storing calls are refused", async () => {
    const app = await startApp({ project: eventScheduleProject, env: { SVC_SHUTDOWN_TIMEOUT_MS: "200" } });
    try {
      const startedBefore = probeControl.action.started.length;
      const refusedBefore = probeControl.action.afterAbort.length;
      // answered only when the run finishes, which the close cuts short: its outcome is not what this tests
      const pending = client(app).post("/api/actions/probe.hangs", { params: {}, runId: "hangs-at-close" }).catch(() => undefined);
      await eventually(async () => probeControl.action.started.length > startedBefore);
      expect(probeControl.action.afterAbort.length).toBe(refusedBefore);
      await app.close();
      await pending;
      expect(probeControl.action.afterAbort.slice(refusedBefore)).toEqual(refusedAfterAbort("the server is shutting down"));
    } finally {
      await app.close();
    }
  }, 40_000);

  it("kill -9 mid-backlog, then a restart: no event skipped, none committed twice, order kept per partition", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    let child = await startFixtureProcess("event-schedule-server.ts", dataDir, port);
    const url = `http://127.0.0.1:${port}`;
    const c = client({ url } as App);
    const partitions = ["k0", "k1", "k2", "k3"];
    try {
      const appended = await append(c, partitions.flatMap((p) => finished(p, 25, { slowMs: 30 })));
      await eventually(async () => (await handled(c, "k0")).length >= 5);
      child.kill("SIGKILL");
      await child.exited;
      child = await startFixtureProcess("event-schedule-server.ts", dataDir, port);
      for (const p of partitions) await eventually(async () => (await handled(c, p)).length >= 25, 30_000);
      await sleep(300);
      for (const p of partitions) expect(await handled(c, p)).toEqual(range(0, 25));
      const triggered = (await allEvents(c, "&type=schedule.triggered")).filter((e) => e.payload.scheduleId === "ordered");
      expect(triggered.map((e) => e.payload.eventId).sort()).toEqual(appended.map((e) => e.id).sort());
      const s = await schedule(c, "ordered");
      expect(s.consumer).toMatchObject({ backlog: 0, caughtUp: true, deadLettered: 0 });
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 120_000);

  it("an expired cursor is reported and the consumer goes on from the oldest retained event", async () => {
    const env = { SVC_EVENT_RETENTION_MS: "1500" };
    let app = await startApp({ project: eventScheduleProject, env });
    const dataDir = app.dataDir;
    try {
      let c = client(app);
      expect((await c.post("/api/schedules/ordered/pause", {})).status).toBe(200);
      await append(c, finished("expired", 2));
      await sleep(2500); // retention prunes them (and the schedule's stored cursor) while it is paused
      await app.container.resolve(EVENT_STREAM).prune(1500); // the app's 150 ms prune timer, once more: a busy machine may not have run it yet
      await app.close();
      app = await startApp({ dataDir, project: eventScheduleProject, env });
      c = client(app);
      const s = await schedule(c, "ordered");
      expect(s.consumer.cursorExpiredAt).toEqual(expect.any(String));
      expect(s.paused).toBe(true);
      expect((await c.post("/api/schedules/ordered/unpause", {})).status).toBe(200);
      await append(c, finished("expired", 1, {}, 2));
      await eventually(async () => (await handled(c, "expired")).length >= 1);
      // the pruned two are gone with retention; what came after is handled
      expect(await handled(c, "expired")).toEqual([2]);
    } finally {
      await app.close();
    }
  }, 60_000);
});
