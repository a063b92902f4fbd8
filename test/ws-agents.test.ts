/**
 * `/ws/agents` (spec 6.5) against the real app and real WebSocket clients over loopback: the socket
 * the agents plugin registers, with the app's AgentRuns as the access check. Most runs are rows
 * written straight into agent_conversations/agent_runs (so their output is exactly what the test
 * appends); one reply is started through the HTTP API.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import NodeWebSocket from "crossws/websocket";
import { client, eventually, startApp, tokenFor } from "./helpers";
import { AgentOutput, type OutputRecord } from "../core/agents/output";
import { AgentRuns } from "../core/runtime/agents";
import { Database } from "../core/store/db";
import { nowIso } from "../core/ids";
import type { App } from "../core/app";
import { insertAgentRun } from "./helpers-agents";

let app: App;
let output: AgentOutput;
const open: Array<{ terminate(): void }> = [];
const cookies = new Map<string, string>();

beforeAll(async () => {
  app = await startApp();
  output = app.container.resolve(AgentOutput);
  for (const [identity, password] of [["dev", "dev-sandbox-password"], ["auditor", "auditor-sandbox-password"], ["alice", "alice-sandbox-password"]] as const) {
    const res = await fetch(`${app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity, password }) });
    cookies.set(identity, (res.headers.get("set-cookie") ?? "").split(";")[0]!);
  }
});
afterAll(async () => {
  for (const s of open) s.terminate();
  await app?.close();
});

/** A WebSocket client on /ws/agents that collects frames (see test/ws-events.test.ts). */
function connect(headers: Record<string, string>, origin: string | undefined = app.url) {
  const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: { headers: Record<string, string>; origin?: string }) => any;
  const socket = new Ctor(`${app.url.replace(/^http/, "ws")}/ws/agents`, [], { headers, ...(origin ? { origin } : {}) });
  open.push(socket);
  socket.on("error", () => undefined);
  const frames: any[] = [];
  socket.on("message", (data: Buffer) => frames.push(JSON.parse(String(data))));
  const refused = new Promise<number>((resolve) => socket.on("unexpected-response", (_req: unknown, res: { statusCode: number }) => resolve(res.statusCode)));
  const next = (predicate: (f: any) => boolean, timeoutMs = 10_000) => eventually(async () => frames.find(predicate), timeoutMs, 10);
  const records = (runId?: string) => frames.filter((f) => f.type === "record" && (runId === undefined || f.runId === runId));
  return { socket, frames, refused, next, records, send: (frame: unknown) => socket.send(JSON.stringify(frame)) };
}

async function signedIn(identity: "dev" | "auditor" | "alice") {
  const ws = connect({ cookie: cookies.get(identity)! });
  await ws.next((f) => f.type === "connected");
  return ws;
}

/** A reply run of `owner`, written as rows (no Temporal execution behind it). */
async function insertRun(owner: string): Promise<string> {
  return (await insertAgentRun(app.container.resolve(Database), owner)).runId;
}

async function setStatus(runId: string, status: string) {
  await app.container.resolve(Database).transaction((tx) => tx.run("UPDATE agent_runs SET status = ?, updated_at = ? WHERE id = ?", [status, nowIso(), runId]));
  app.container.resolve(AgentRuns).changes.emit("changed", runId);
}

const owners = new Map<string, string>();
async function run(owner: string) {
  const id = await insertRun(owner);
  owners.set(id, owner);
  return id;
}
const text = (runId: string, delta: string) => output.append([{ runId, owner: owners.get(runId)!, kind: "text", data: { delta } }]).then((r) => r[0]!);
const activity = (runId: string, kind: string, data: Record<string, unknown> = {}) => output.append([{ runId, owner: owners.get(runId)!, kind, data: { runId, ...data }, activity: true }]).then((r) => r[0]!);
async function retained(runId: string, afterCursor?: string): Promise<OutputRecord[]> {
  const out: OutputRecord[] = [];
  for (let cursor = afterCursor; ; ) {
    const page = await output.read({ runId }, cursor, 500);
    if (page.records.length === 0) return out;
    out.push(...page.records);
    cursor = page.records.at(-1)!.cursor;
  }
}
const asFrame = (r: OutputRecord) => ({ type: "record", runId: r.runId, cursor: r.cursor, record: { kind: r.kind, data: r.data, at: r.at } });

describe("/ws/agents (spec 6.5)", () => {
  it("refuses upgrades without a session, with a bearer token, or from a foreign origin", async () => {
    expect(await connect({}).refused).toBe(401);
    expect(await connect({ authorization: `Bearer ${await tokenFor(app, "dev")}` }).refused).toBe(401);
    expect(await connect({ cookie: cookies.get("dev")! }, "https://evil.example").refused).toBe(403);
  });

  it("subscribing from the start replays the retained records, then live ones, in order with no gap and no duplicate", async () => {
    const runId = await run("dev");
    for (let i = 0; i < 5; i++) await text(runId, `before-${i}`);
    const sockets: Array<ReturnType<typeof connect>> = [];
    for (const _ of [1, 2, 3]) sockets.push(await signedIn("dev"));
    // append one record at a time while the sockets subscribe at different points of the loop
    for (let i = 0; i < 90; i++) {
      if (i % 30 === 10) sockets[(i - 10) / 30]!.send({ type: "subscribe", runId });
      await text(runId, `during-${i}`);
    }
    const last = await text(runId, "last");
    const expected = (await retained(runId)).map(asFrame);
    expect(expected).toHaveLength(96);
    for (const ws of sockets) {
      await ws.next((f) => f.type === "record" && f.cursor === last.cursor);
      expect(ws.frames.slice(0, 3).map((f) => f.type)).toEqual(["connected", "subscribed", "run.snapshot"]);
      expect(ws.frames[1]).toEqual({ type: "subscribed", runId, cursor: null });
      expect(ws.frames[2].run).toMatchObject({ runId, agentId: "assistant", status: "queued", published: [], usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 } });
      expect(ws.records()).toEqual(expected);
    }
    // every change of the run's state sends a new snapshot
    await setStatus(runId, "running");
    for (const ws of sockets) expect((await ws.next((f) => f.type === "run.snapshot" && f.run.status === "running")).run.runId).toBe(runId);
  });

  it("resumes after a cursor: acknowledges it and sends only what follows, then live records", async () => {
    const runId = await run("dev");
    const written: OutputRecord[] = [];
    for (let i = 0; i < 6; i++) written.push(await text(runId, `r${i}`));
    const ws = await signedIn("dev");
    ws.send({ type: "subscribe", runId, afterCursor: written[2]!.cursor });
    expect(await ws.next((f) => f.type === "subscribed")).toEqual({ type: "subscribed", runId, cursor: written[2]!.cursor });
    const live = await text(runId, "live");
    await ws.next((f) => f.type === "record" && f.cursor === live.cursor);
    expect(ws.records()).toEqual([...written.slice(3), live].map(asFrame));
    expect(ws.frames.map((f) => f.type).indexOf("run.snapshot")).toBeLessThan(ws.frames.map((f) => f.type).indexOf("record"));
  });

  it("acknowledges a null cursor and resumes from the earliest retained record once retention passed the cursor (rule 3)", async () => {
    const runId = await run("dev");
    const old = [await text(runId, "old-1"), await text(runId, "old-2")];
    await new Promise((r) => setTimeout(r, 10));
    const kept = [await text(runId, "kept-1"), await text(runId, "kept-2")];
    const pruned = await output.prune(Date.parse(kept[0]!.at) + app.config.agentOutputRetentionMs);
    expect(pruned.deleted).toBeGreaterThanOrEqual(2);

    const ws = await signedIn("dev");
    ws.send({ type: "subscribe", runId, afterCursor: old[0]!.cursor });
    expect(await ws.next((f) => f.type === "subscribed")).toEqual({ type: "subscribed", runId, cursor: null });
    await ws.next((f) => f.type === "record" && f.cursor === kept[1]!.cursor);
    expect(ws.records()).toEqual(kept.map(asFrame));

    ws.send({ type: "replay", runId, afterCursor: old[0]!.cursor, limit: 1 });
    expect(await ws.next((f) => f.type === "replay")).toEqual({ type: "replay", runId, cursor: null, records: [asFrame(kept[0]!)], nextCursor: kept[0]!.cursor });
    // the last pruned record itself: everything after it is retained, so nothing was missed
    const atMark = await signedIn("dev");
    atMark.send({ type: "subscribe", runId, afterCursor: old[1]!.cursor });
    expect(await atMark.next((f) => f.type === "subscribed")).toEqual({ type: "subscribed", runId, cursor: old[1]!.cursor });
    await atMark.next((f) => f.type === "record" && f.cursor === kept[1]!.cursor);
    expect(atMark.records()).toEqual(kept.map(asFrame));
  });

  it("refuses a cursor of another run's output (it skipped this run's records before it in silence), on subscribe and on replay", async () => {
    const a = await run("dev");
    const early = await text(a, "a-1");
    const b = await run("dev");
    const bCursor = (await text(b, "b-1")).cursor;
    const ws = await signedIn("dev");
    ws.send({ type: "subscribe", runId: a, afterCursor: bCursor });
    expect(await ws.next((f) => f.type === "error")).toEqual({ type: "error", code: "invalid_request", message: expect.stringMatching(/^afterCursor is a cursor of another run's output/) });
    ws.send({ type: "replay", runId: a, afterCursor: bCursor });
    await eventually(async () => ws.frames.filter((f) => f.type === "error").length === 2);
    expect(ws.frames.some((f) => f.type === "subscribed" || f.type === "replay")).toBe(false);
    // its own cursor is taken
    ws.send({ type: "replay", runId: a, afterCursor: early.cursor });
    expect(await ws.next((f) => f.type === "replay")).toMatchObject({ runId: a, cursor: early.cursor, records: [] });
  });

  it("refuses an activity subscription from an identity that may use no agent (spec 5), as the HTTP API does", async () => {
    const ws = await signedIn("auditor");
    ws.send({ type: "subscribe", activity: true });
    expect(await ws.next((f) => f.type === "error")).toEqual({ type: "error", code: "forbidden", message: expect.stringMatching(/^You may use no agent of this project/) });
    await new Promise((r) => setTimeout(r, 100));
    expect(ws.frames.some((f) => f.type === "subscribed")).toBe(false);
  });

  it("refuses the run of an owner who may no longer use its agent (spec 5: access to the agent and the run), over the socket and HTTP alike", async () => {
    // the auditor's own run of the assistant, whose use the auditor does not have (taken away since)
    const runId = await run("auditor");
    await text(runId, "said before");
    const ws = await signedIn("auditor");
    ws.send({ type: "subscribe", runId });
    expect(await ws.next((f) => f.type === "error")).toEqual({ type: "error", code: "forbidden", message: 'You may not use agent "assistant" (needs use:agent:assistant)' });
    ws.send({ type: "replay", runId });
    await eventually(async () => ws.frames.filter((f) => f.type === "error").length === 2);
    expect(ws.frames.filter((f) => f.type === "error").map((f) => f.code)).toEqual(["forbidden", "forbidden"]);
    expect(ws.frames.some((f) => ["subscribed", "record", "run.snapshot", "replay"].includes(f.type))).toBe(false);
    const auditor = client(app, await tokenFor(app, "auditor"));
    const conversationId = (await app.container.resolve(Database).get<{ conversation_id: string }>("SELECT conversation_id FROM agent_runs WHERE id = ?", [runId]))!.conversation_id;
    for (const path of [`/api/agent-runs/${runId}`, `/api/agent-runs/${runId}/output`, `/api/conversations/${conversationId}`, `/api/conversations/${conversationId}/messages`]) expect((await auditor.get(path)).status, path).toBe(403);
    expect((await auditor.post(`/api/conversations/${conversationId}/messages`, { text: "still there?" })).status).toBe(403);
  });

  it("answers another user's run with a not_found error frame and no subscription", async () => {
    const runId = await run("dev");
    await text(runId, "secret");
    const ws = await signedIn("auditor");
    ws.send({ type: "subscribe", runId });
    expect(await ws.next((f) => f.type === "error")).toEqual({ type: "error", code: "not_found", message: expect.any(String) });
    ws.send({ type: "replay", runId });
    await eventually(async () => ws.frames.filter((f) => f.type === "error").length === 2);
    ws.send({ type: "subscribe", runId: "arun_missing" });
    await eventually(async () => ws.frames.filter((f) => f.type === "error").length === 3);
    await text(runId, "more");
    await new Promise((r) => setTimeout(r, 200));
    expect(ws.frames.filter((f) => f.type === "error").map((f) => f.code)).toEqual(["not_found", "not_found", "not_found"]);
    expect(ws.frames.some((f) => ["subscribed", "record", "run.snapshot", "replay"].includes(f.type))).toBe(false);
  });

  it("replays bounded pages without touching the subscription", async () => {
    const runId = await run("dev");
    const written: OutputRecord[] = [];
    for (let i = 0; i < 7; i++) written.push(await text(runId, `p${i}`));
    const ws = await signedIn("dev");
    ws.send({ type: "subscribe", runId, afterCursor: written.at(-1)!.cursor });
    await ws.next((f) => f.type === "subscribed");

    const pages: any[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 4; i++) {
      ws.send({ type: "replay", runId, limit: 3, ...(cursor ? { afterCursor: cursor } : {}) });
      const page = await ws.next((f) => f.type === "replay" && !pages.includes(f));
      pages.push(page);
      cursor = page.nextCursor;
    }
    expect(pages.map((p) => p.records.length)).toEqual([3, 3, 1, 0]);
    expect(pages.flatMap((p) => p.records)).toEqual(written.map(asFrame));
    expect(pages.map((p) => p.cursor)).toEqual([null, written[2]!.cursor, written[5]!.cursor, written[6]!.cursor]);
    expect(pages[3]).toEqual({ type: "replay", runId, cursor: written[6]!.cursor, records: [], nextCursor: written[6]!.cursor });
    ws.send({ type: "replay", runId });
    expect((await ws.next((f) => f.type === "replay" && !pages.includes(f))).records).toHaveLength(7); // default limit 100

    // the subscription still follows the run
    const live = await text(runId, "live");
    expect(await ws.next((f) => f.type === "record")).toEqual(asFrame(live));
    expect(ws.records()).toHaveLength(1);

    for (const bad of [{ type: "replay", runId, limit: 0 }, { type: "replay", runId, limit: 501 }, { type: "replay" }, { type: "replay", runId, afterCursor: "nope" }]) {
      const before = ws.frames.length;
      ws.send(bad);
      const frame = await ws.next((f) => ws.frames.indexOf(f) >= before && f.type === "error");
      expect(frame).toMatchObject({ type: "error", code: "invalid_request" });
    }
  });

  it("an activity subscription sees only the activity records of the caller's runs", async () => {
    const mine = await run("dev");
    const theirs = await run("alice");
    const devWs = await signedIn("dev");
    const aliceWs = await signedIn("alice");
    const earlier = await activity(mine, "run.started", { agentId: "assistant" });
    devWs.send({ type: "subscribe", activity: true });
    aliceWs.send({ type: "subscribe", activity: true });
    expect(await devWs.next((f) => f.type === "subscribed")).toEqual({ type: "subscribed", activity: true, cursor: null });
    await aliceWs.next((f) => f.type === "subscribed");

    const expectedMine = [
      await activity(mine, "artifact.published", { artifactId: "art_x", version: 1, title: "T", kind: "document", address: "artifact:art_x@1" }),
      await activity(mine, "run.finished", { status: "completed" }),
    ];
    await text(mine, "not activity");
    const expectedTheirs = [await activity(theirs, "run.started"), await activity(theirs, "run.finished", { status: "failed" })];
    await devWs.next((f) => f.type === "record" && f.cursor === expectedMine[1]!.cursor);
    await aliceWs.next((f) => f.type === "record" && f.cursor === expectedTheirs[1]!.cursor);
    await new Promise((r) => setTimeout(r, 100));

    expect(devWs.records(mine)).toEqual(expectedMine.map(asFrame)); // live only: not the earlier one
    expect(devWs.records(theirs)).toEqual([]);
    expect(aliceWs.records()).toEqual(expectedTheirs.map(asFrame));
    expect(devWs.frames.some((f) => f.type === "run.snapshot")).toBe(false);

    // with a cursor: retained activity after it, then live
    const resumed = await signedIn("dev");
    resumed.send({ type: "subscribe", activity: true, afterCursor: earlier.cursor });
    expect(await resumed.next((f) => f.type === "subscribed")).toEqual({ type: "subscribed", activity: true, cursor: earlier.cursor });
    await resumed.next((f) => f.type === "record" && f.cursor === expectedMine[1]!.cursor);
    expect(resumed.records(mine)).toEqual(expectedMine.map(asFrame));
    expect(resumed.records().every((f) => owners.get(f.runId) !== "alice")).toBe(true);
  });

  it("reports malformed messages as invalid_request and answers unsubscribe", async () => {
    const runId = await run("dev");
    const ws = await signedIn("dev");
    const errors = () => ws.frames.filter((f) => f.type === "error");
    const messages: unknown[] = [
      "not json",
      { type: "hello" },
      { type: "subscribe" },
      { type: "subscribe", runId, activity: true },
      { type: "subscribe", runId, extra: 1 },
      { type: "subscribe", runId, afterCursor: "not-a-cursor" },
      { type: "subscribe", activity: true, afterCursor: "bm90LWEtY3Vyc29y" },
    ];
    for (const [i, m] of messages.entries()) {
      ws.socket.send(typeof m === "string" ? m : JSON.stringify(m));
      await eventually(async () => errors().length === i + 1);
    }
    expect(errors().map((f) => f.code)).toEqual(messages.map(() => "invalid_request"));
    expect(ws.frames.some((f) => f.type === "subscribed")).toBe(false);
    ws.send({ type: "subscribe", runId });
    await ws.next((f) => f.type === "subscribed");
    ws.send({ type: "unsubscribe" });
    await ws.next((f) => f.type === "unsubscribed");
    await text(runId, "after unsubscribe");
    await new Promise((r) => setTimeout(r, 200));
    expect(ws.records()).toEqual([]);
  });

  it("streams a reply started through the HTTP API: snapshot, its records, and snapshots as its state changes", async () => {
    const dev = client(app, await tokenFor(app, "dev"));
    const agentId: string = (await dev.get("/api/project")).body.agents[0].id;
    const started = await dev.post(`/api/agents/${agentId}/conversations`, { message: "hello" });
    expect(started.status).toBe(200);
    const runId: string = started.body.runId;
    const ws = await signedIn("dev");
    ws.send({ type: "subscribe", runId });
    expect(await ws.next((f) => f.type === "subscribed")).toEqual({ type: "subscribed", runId, cursor: null });
    expect((await ws.next((f) => f.type === "run.snapshot")).run).toMatchObject({ runId, conversationId: started.body.conversation.id, agentId });
    expect((await ws.next((f) => f.type === "record" && f.record.kind === "run.started")).record.data).toMatchObject({ runId });
    const ended = await ws.next((f) => f.type === "run.snapshot" && ["completed", "failed", "cancelled"].includes(f.run.status), 45_000);
    expect(ended.run.status).toBe("completed");
    await new Promise((r) => setTimeout(r, 300));
    expect(ws.records()).toEqual((await retained(runId)).map(asFrame));
  });
});
