import { afterAll, beforeAll, describe, expect, it } from "vitest";
import NodeWebSocket from "crossws/websocket";
import { client, eventually, startApp, tokenFor } from "./helpers";
import { EventLog } from "../core/events/log";
import { Database } from "../core/store/db";
import { EVENT_STREAM } from "../core/events/stream";
import { LogCapture } from "../core/logs/capture";
import { LOGGER, type Logger } from "../core/logger";
import type { App } from "../core/app";

let app: App;
let dev: ReturnType<typeof client>;
const open: Array<{ terminate(): void }> = [];

beforeAll(async () => {
  app = await startApp({ env: { SVC_WS_CHECKPOINT_MS: "200" } });
  dev = client(app);
});
afterAll(async () => {
  for (const s of open) (s as { terminate(): void }).terminate();
  await app?.close();
});

async function sessionCookie(identity: string, password: string): Promise<string> {
  const res = await fetch(`${app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity, password }) });
  return (res.headers.get("set-cookie") ?? "").split(";")[0]!;
}

/** A WebSocket client (the `ws` implementation crossws ships for Node) that collects frames. */
function connect(headers: Record<string, string>, origin: string | undefined = app.url) {
  const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: { headers: Record<string, string>; origin?: string }) => any;
  const socket = new Ctor(`${app.url.replace(/^http/, "ws")}/ws/events`, [], { headers, ...(origin ? { origin } : {}) });
  open.push(socket);
  socket.on("error", () => undefined); // refused upgrades are asserted through "unexpected-response"
  const frames: any[] = [];
  socket.on("message", (data: Buffer) => frames.push(JSON.parse(String(data))));
  const refused = new Promise<number>((resolve) => socket.on("unexpected-response", (_req: unknown, res: { statusCode: number }) => resolve(res.statusCode)));
  const opened = new Promise<void>((resolve) => socket.on("open", () => resolve()));
  const closed = new Promise<number>((resolve) => socket.on("close", (code: number) => resolve(code)));
  const next = (predicate: (f: any) => boolean, timeoutMs = 10_000) => eventually(async () => frames.find(predicate), timeoutMs, 20);
  return { socket, frames, refused, opened, closed, next, send: (frame: unknown) => socket.send(JSON.stringify(frame)) };
}

const noop = () => dev.post("/api/actions/diagnostics.noop", { params: {} });

describe("/ws/events (spec 6.5)", () => {
  it("refuses upgrades without a session, with a bearer token, or from a foreign origin", async () => {
    expect(await connect({}).refused).toBe(401);
    expect(await connect({ cookie: "svc_session=%E0%A4%A" }).refused).toBe(401); // not percent-encoding: no session, not a 500
    expect(await connect({ authorization: "Bearer svc_dev_sandbox_token" }).refused).toBe(401);
    const cookie = await sessionCookie("dev", "dev-sandbox-password");
    expect(await connect({ cookie }, "https://evil.example").refused).toBe(403);
  });

  it("sends connected, acknowledges subscribe, and without afterCursor streams only new events", async () => {
    const ws = connect({ cookie: await sessionCookie("dev", "dev-sandbox-password") });
    await ws.next((f) => f.type === "connected");
    ws.send({ type: "subscribe", topic: "actions" });
    // the acknowledgement names where the subscription starts: the newest event's cursor, the one a
    // client that reconnects before any event came resumes from
    const latest = (await dev.get("/api/events/latest-cursor")).body.latestCursor;
    expect(await ws.next((f) => f.type === "subscribed")).toMatchObject({ topic: "actions", limit: 100, afterCursor: latest });
    expect(latest).toEqual(expect.any(String));
    const { body } = await noop();
    const frame = await ws.next((f) => f.type === "event" && f.event.payload.runId === body.runId && f.event.type === "action.completed");
    expect(frame.event).toMatchObject({ id: expect.any(String), topic: "actions", cursor: expect.any(String), occurredAt: expect.any(String), projectId: "sandbox" });
    expect(ws.frames.filter((f) => f.type === "event").every((f) => f.event.topic === "actions")).toBe(true);
    expect(ws.frames.some((f) => f.type === "event" && f.event.type === "object.created")).toBe(false);
  });

  it("replays retained events after a cursor in order, then follows live ones with no gap and no duplicate", async () => {
    const firstPage = (await dev.get("/api/events?limit=5")).body.events;
    const cursor = firstPage.at(-1).cursor;
    const ws = connect({ cookie: await sessionCookie("dev", "dev-sandbox-password") });
    await ws.next((f) => f.type === "connected");
    const writes = Promise.all(Array.from({ length: 5 }, () => noop()));
    ws.send({ type: "subscribe", afterCursor: cursor, limit: 7 });
    await writes;
    const last = (await noop()).body.runId;
    await ws.next((f) => f.type === "event" && f.event.payload.runId === last && f.event.type === "action.completed");
    const expected: string[] = [];
    let c = cursor;
    for (;;) {
      const page = await dev.get(`/api/events?limit=1000&afterCursor=${encodeURIComponent(c)}`);
      if (page.body.count === 0) break;
      expected.push(...page.body.events.map((e: any) => e.id));
      c = page.body.events.at(-1).cursor;
    }
    const received = ws.frames.filter((f) => f.type === "event").map((f) => f.event.id);
    expect(received).toEqual(expected);
  });

  it("scopes events to the session identity, replaces a subscription on a second subscribe, and reports bad messages", async () => {
    const ws = connect({ cookie: await sessionCookie("auditor", "auditor-sandbox-password") });
    await ws.next((f) => f.type === "connected");
    ws.send({ type: "subscribe", afterCursor: (await dev.get("/api/events?limit=1")).body.events[0].cursor });
    await ws.next((f) => f.type === "event" && f.event.payload.objectTypeId === "customer");
    await new Promise((r) => setTimeout(r, 300));
    const seen = ws.frames.filter((f) => f.type === "event");
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((f) => f.event.subject?.objectTypeId === "customer" && (f.event.payload.targetTypeId ?? "customer") === "customer")).toBe(true);

    // a cursor that is not one of this stream: an error frame, no acknowledgement, and the subscription stays
    const acknowledged = ws.frames.filter((f) => f.type === "subscribed").length;
    const refusals = () => ws.frames.filter((f) => f.type === "error" && f.code === "invalid_request" && f.message === "afterCursor is not a cursor of this event stream").length;
    for (const [i, afterCursor] of ["garbage", ""].entries()) {
      ws.send({ type: "subscribe", afterCursor });
      await eventually(async () => refusals() > i);
    }
    const before = ws.frames.length;
    await dev.post("/api/ontology/writes", { changes: [{ op: "object.update", objectTypeId: "customer", primaryId: "cus_acme", properties: { tier: "silver" } }] });
    await ws.next((f) => f.type === "event" && ws.frames.indexOf(f) >= before && f.event.type === "object.updated");
    expect(ws.frames.filter((f) => f.type === "subscribed").length).toBe(acknowledged);

    ws.send({ type: "subscribe", limit: 1000 });
    expect(await ws.next((f) => f.type === "error" && /limit/.test(f.message))).toBeTruthy();
    ws.send({ type: "hello" });
    expect(await ws.next((f) => f.type === "error" && /Unknown message type/.test(f.message))).toBeTruthy();
    ws.send({ type: "unsubscribe" });
    expect(await ws.next((f) => f.type === "unsubscribed")).toBeTruthy();
  });

  it("serves many sockets subscribing at once, each only what is committed after its subscribed and in its own scope", async () => {
    // 1,000 sockets subscribing at once once read the newest cursor as "none" (a statement shared by
    // concurrent gets) and were replayed the whole history; live events now reach them from one feed
    const [devCookie, aliceCookie] = [await sessionCookie("dev", "dev-sandbox-password"), await sessionCookie("alice", "alice-sandbox-password")];
    const sockets = [...Array.from({ length: 24 }, () => ({ who: "dev", ws: connect({ cookie: devCookie }) })), ...Array.from({ length: 12 }, () => ({ who: "alice", ws: connect({ cookie: aliceCookie }) }))];
    await Promise.all(sockets.map((s) => s.ws.next((f) => f.type === "connected")));
    for (const s of sockets) s.ws.send({ type: "subscribe" });
    await Promise.all(sockets.map((s) => s.ws.next((f) => f.type === "subscribed")));
    const aliceRest = client(app, await tokenFor(app, "alice"));
    const lastCursor = async (c: ReturnType<typeof client>) => {
      let cursor: string | undefined;
      for (;;) {
        const page = await c.get(`/api/events?limit=1000${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
        if (page.body.count === 0) return cursor;
        cursor = page.body.events.at(-1).cursor;
      }
    };
    const mark = await lastCursor(dev);
    for (let i = 0; i < 3; i++) {
      await noop();
      expect((await dev.post("/api/ontology/writes", { changes: [{ op: "object.create", objectTypeId: "customer", primaryId: `fan-${i}-${Date.now()}`, properties: { name: `Fan ${i}` } }] })).status).toBe(200);
    }
    const expected = async (c: ReturnType<typeof client>) => (await c.get(`/api/events?limit=1000&afterCursor=${encodeURIComponent(mark!)}`)).body.events.map((e: any) => e.id);
    const want = { dev: await expected(dev), alice: await expected(aliceRest) };
    expect(want.dev.length).toBeGreaterThan(want.alice.length); // alice may not see diagnostics.noop runs
    expect(want.alice.length).toBeGreaterThanOrEqual(3);
    for (const s of sockets) {
      const target = want[s.who as "dev" | "alice"];
      await eventually(async () => s.ws.frames.filter((f) => f.type === "event").length >= target.length);
    }
    await new Promise((r) => setTimeout(r, 200)); // nothing more arrives
    for (const s of sockets) expect(s.ws.frames.filter((f) => f.type === "event").map((f) => f.event.id)).toEqual(want[s.who as "dev" | "alice"]);
    for (const s of sockets) s.ws.socket.terminate();
  });

  it("keeps a caught-up filtered reader's position inside the retained window: nextCursor over HTTP, checkpoint frames over WebSocket (the last matching event's cursor expires with the skipped events after it)", async () => {
    await dev.post("/api/actions/diagnostics.fail", { params: { message: "one to follow" } });
    const failedOnly = async (afterCursor?: string) => (await dev.get(`/api/events?type=action.failed&limit=1000${afterCursor ? `&afterCursor=${encodeURIComponent(afterCursor)}` : ""}`)).body;
    const first = await failedOnly();
    const lastFailed = first.events.at(-1).cursor;
    expect(first.nextCursor).toBe((await dev.get("/api/events/latest-cursor")).body.latestCursor);
    // a socket following the same filter from there
    const ws = connect({ cookie: await sessionCookie("dev", "dev-sandbox-password") });
    await ws.next((f) => f.type === "connected");
    ws.send({ type: "subscribe", types: ["action.failed"], afterCursor: first.nextCursor });
    await ws.next((f) => f.type === "subscribed");
    // then only events the filter skips
    for (let i = 0; i < 3; i++) await noop();
    const newest = (await dev.get("/api/events/latest-cursor")).body.latestCursor;
    const caughtUp = await failedOnly(first.nextCursor);
    expect([caughtUp.count, caughtUp.nextCursor]).toEqual([0, newest]);
    const checkpoint = await ws.next((f) => f.type === "checkpoint" && f.cursor === newest);
    expect(ws.frames.filter((f) => f.type === "event")).toEqual([]);
    expect(checkpoint).toEqual({ type: "checkpoint", cursor: newest });
    // the retained window moves past every one of those events: the last action.failed's cursor has
    // expired, the position past the skipped ones has not
    await new Promise((r) => setTimeout(r, 20));
    await app.container.resolve(EVENT_STREAM).prune(5);
    expect((await dev.get(`/api/events?type=action.failed&afterCursor=${encodeURIComponent(lastFailed)}`)).status).toBe(410);
    const resumed = await dev.get(`/api/events?type=action.failed&afterCursor=${encodeURIComponent(newest)}`);
    expect([resumed.status, resumed.body.count, resumed.body.nextCursor]).toEqual([200, 0, newest]);
  });

  it("ends a socket when its session ends: at sign-out (an error frame, close 4401, no more events), and at the next message when another process ended it", async () => {
    const signIn = await fetch(`${app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json", origin: app.url }, body: JSON.stringify({ identity: "alice", password: "alice-sandbox-password" }) });
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
    const { csrfToken } = (await signIn.json()) as { csrfToken: string };
    const ws = connect({ cookie });
    await ws.next((f) => f.type === "connected");
    ws.send({ type: "subscribe" });
    await ws.next((f) => f.type === "subscribed");
    expect((await fetch(`${app.url}/api/auth/sign-out`, { method: "POST", headers: { cookie, origin: app.url, "x-svc-csrf": csrfToken } })).status).toBe(200);
    expect(await ws.closed).toBe(4401);
    expect(ws.frames.at(-1)).toEqual({ type: "error", code: "unauthorized", message: "The session has ended; sign in again" });

    // a session ended behind this process's back (its row, as another process would): the next message finds it
    const dev2 = await sessionCookie("dev", "dev-sandbox-password");
    const other = connect({ cookie: dev2 });
    await other.next((f) => f.type === "connected");
    await app.container.resolve(Database).transaction((tx) => tx.run("UPDATE sessions SET ended_at = ? WHERE ended_at IS NULL", [new Date().toISOString()]));
    other.send({ type: "subscribe", afterCursor: (await dev.get("/api/events?limit=1")).body.events[0]?.cursor });
    expect(await other.closed).toBe(4401);
    expect(other.frames.filter((f) => f.type === "subscribed" || f.type === "event")).toEqual([]);
  });

  it("answers reset with cursor_expired for a cursor older than the retained events", async () => {
    await noop(); // one retained event at least (the test before pruned them all)
    const [oldest] = (await dev.get("/api/events?limit=1")).body.events;
    await noop();
    await new Promise((r) => setTimeout(r, 20));
    await app.container.resolve(EVENT_STREAM).prune(5);
    const ws = connect({ cookie: await sessionCookie("dev", "dev-sandbox-password") });
    await ws.next((f) => f.type === "connected");
    ws.send({ type: "subscribe", afterCursor: oldest.cursor });
    expect(await ws.next((f) => f.type === "reset")).toEqual({ type: "reset", reason: "cursor_expired" });
  });
});

describe("slow consumers", () => {
  it("closes a socket that cannot keep up (4008) while writers and other sockets carry on", async () => {
    const slowApp = await startApp({ env: { SVC_WS_MAX_BUFFERED_BYTES: "65536" } });
    try {
      const cookie = ((await fetch(`${slowApp.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity: "dev", password: "dev-sandbox-password" }) })).headers.get("set-cookie") ?? "").split(";")[0]!;
      const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: object) => any;
      const url = `${slowApp.url.replace(/^http/, "ws")}/ws/events`;
      const make = () => {
        const ws = new Ctor(url, [], { headers: { cookie }, origin: slowApp.url });
        open.push(ws);
        const frames: any[] = [];
        ws.on("message", (d: Buffer) => frames.push(JSON.parse(String(d))));
        const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on("close", (code: number, reason: Buffer) => resolve({ code, reason: String(reason) })));
        return { ws, frames, closed };
      };
      const slow = make();
      const fast = make();
      for (const s of [slow, fast]) {
        await eventually(async () => s.frames.some((f) => f.type === "connected"));
        s.ws.send(JSON.stringify({ type: "subscribe", topic: "schedules", limit: 500 }));
        await eventually(async () => s.frames.some((f) => f.type === "subscribed"));
      }
      slow.ws._socket.pause(); // stop reading: the server's send buffer for this socket grows
      const events = slowApp.container.resolve(EventLog);
      const padding = "x".repeat(4096);
      const total = 1500;
      const started = Date.now();
      for (let i = 0; i < total; i += 100) {
        await events.append(Array.from({ length: 100 }, (_, j) => ({ type: "schedule.triggered" as const, payload: { scheduleId: "slow", occurrenceAt: new Date(Date.UTC(2026, 0, 1) + (i + j) * 1000).toISOString(), triggeredAt: "2026-01-01T00:00:00.000Z", occurrenceKey: `k${i + j}`, padding } })));
      }
      const writeMs = Date.now() - started;
      slow.ws._socket.resume(); // read again: the frames already sent, then the server's close frame
      expect(await slow.closed).toEqual({ code: 4008, reason: "slow consumer: reconnect with your last cursor" });
      await eventually(async () => fast.frames.filter((f) => f.type === "event").length === total, 20_000);
      expect(fast.frames.filter((f) => f.type === "event").map((f) => f.event.payload.occurrenceKey)).toEqual(Array.from({ length: total }, (_, i) => `k${i}`));
      expect(writeMs).toBeLessThan(15_000);
    } finally {
      await slowApp.close();
    }
  });

  it("closes a /ws/logs socket that cannot keep up (4008), at SVC_WS_MAX_BUFFERED_BYTES", async () => {
    const slowApp = await startApp({ env: { SVC_WS_MAX_BUFFERED_BYTES: "65536" } });
    try {
      const cookie = ((await fetch(`${slowApp.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity: "dev", password: "dev-sandbox-password" }) })).headers.get("set-cookie") ?? "").split(";")[0]!;
      const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: object) => any;
      const ws = new Ctor(`${slowApp.url.replace(/^http/, "ws")}/ws/logs`, [], { headers: { cookie }, origin: slowApp.url });
      open.push(ws);
      const frames: any[] = [];
      ws.on("message", (d: Buffer) => frames.push(JSON.parse(String(d))));
      const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on("close", (code: number, reason: Buffer) => resolve({ code, reason: String(reason) })));
      await eventually(async () => frames.some((f) => f.type === "connected"));
      ws.send(JSON.stringify({ type: "subscribe", run: { kind: "action", id: "slow-logs" } }));
      await eventually(async () => frames.some((f) => f.type === "subscribed"));
      ws._socket.pause(); // stop reading: the server's send buffer for this socket grows
      const logs = slowApp.container.resolve(LogCapture);
      const log = logs.logger(slowApp.container.resolve<Logger>(LOGGER), { kind: "action", id: "slow-logs" });
      const padding = "x".repeat(4096);
      for (let i = 0; i < 1500; i++) log.debug({ i, padding }, "a long line");
      await logs.flush();
      await new Promise((r) => setTimeout(r, 500)); // the pump reads and sends
      ws._socket.resume();
      expect(await closed).toEqual({ code: 4008, reason: "slow consumer: reconnect with your last cursor" });
      const received = frames.filter((f) => f.type === "logs").flatMap((f) => f.logs).length;
      expect(received).toBeLessThan(1500);
    } finally {
      await slowApp.close();
    }
  });
});
