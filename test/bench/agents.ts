/**
 * Agent stream benchmark (part of `npm run bench`; issue 13, spec 6.5): how `/ws/agents` delivers reply
 * output to subscribed sockets, next to the `/ws/events` fan-out of the same run as a yardstick.
 *
 * The sandbox app (embedded Temporal, the scripted model) runs IN this process, so the bench can wrap
 * the app's `AgentOutput.append` and stamp `performance.now()` for every appended cursor; the clients
 * (real WebSockets over loopback) run here too and share the event loop with the server.
 *
 * 1. Yardstick: BENCH_AGENTS_EVENT_SOCKETS (default 100) sockets on `/ws/events` subscribed to `actions`;
 *    BENCH_AGENTS_EVENT_RUNS (default 50) action runs one after the other (2 events each); commit →
 *    receipt from the event's `occurredAt` (stamped just before its commit), as test/bench/streams.ts.
 * 2. Agents: BENCH_AGENTS_REPLIES (default 10) replies of the `assistant` agent started at once
 *    ("Write a report titled Bench N … Go slowly.": the scripted model streams a word every 150 ms), and
 *    BENCH_AGENTS_PER_REPLY (default 10) sockets of `dev` subscribed to each run (`{ type: "subscribe",
 *    runId }`) as soon as its runId is known. Figures:
 *    - record frames per second over all sockets: every `record` frame received / the time from the
 *      first to the last one received (the rate offered is what 10 slow replies produce, so this is the
 *      delivered rate at that load, not a ceiling);
 *    - token-to-socket latency: for every `text` record and every socket that received it live (appended
 *      after the socket got `subscribed`), from the call of `AgentOutput.append` that wrote it to its
 *      receipt, p50/p99 over all (socket, record) pairs; goal p99 < 50 ms. Also split into the append
 *      itself (its write transaction) and commit → receipt, with appends/s, the output reads the
 *      subscriptions make (one per socket per commit) and the event loop's delay.
 * It is a benchmark: it prints figures and exits 0 whatever they are.
 */
import os from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import NodeWebSocket from "crossws/websocket";
import pino from "pino";
import { request } from "undici";
import { createApp } from "../../core/app";
import { AgentOutput, type OutputRecordInput, type OutputScope } from "../../core/agents/output";
import { builtinPlugins } from "../../plugins";
import { sandboxProject, SANDBOX_DEV_TOKEN } from "../../sandbox/project";
import { WORKFLOW_ENGINE } from "../../workflows/modules";
import { benchDir } from "../helpers-fs";
import { freePort } from "../setup/global";
import { percentile, reportRows } from "./report";

const EVENT_SOCKETS = Number(process.env.BENCH_AGENTS_EVENT_SOCKETS ?? 100);
const EVENT_RUNS = Number(process.env.BENCH_AGENTS_EVENT_RUNS ?? 50);
const REPLIES = Number(process.env.BENCH_AGENTS_REPLIES ?? 10);
const PER_REPLY = Number(process.env.BENCH_AGENTS_PER_REPLY ?? 10);
const AGENT = "assistant";
const GOAL_P99_MS = 50;
const sortedOf = (xs: number[]) => [...xs].sort((a, b) => a - b);
const ms = (x: number) => (Number.isNaN(x) ? "n/a" : `${x < 10 ? x.toFixed(1) : x.toFixed(0)} ms`);
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

const app = await createApp({
  project: sandboxProject,
  plugins: builtinPlugins,
  workflowEngine: WORKFLOW_ENGINE,
  defaults: { devToken: SANDBOX_DEV_TOKEN },
  logger: pino({ level: "warn" }),
  env: {
    ...process.env,
    PORT: "0",
    SVC_DATA_DIR: benchDir("svc-bench-"),
    SVC_TEMPORAL_PORT: String(await freePort()),
    SVC_TEMPORAL_UI: "false",
    SVC_SCHEDULES: "false",
    SVC_DECK_CHECKS: "false",
    SVC_WS_MAX_BUFFERED_BYTES: String(64 * 1024 * 1024),
  },
});
const base = app.url;

// Stamp every appended cursor: when append was called (the token exists) and when it returned (committed,
// "appended" emitted). Reads are counted too: every live subscription reads once per commit.
const output = app.container.resolve(AgentOutput);
const appendCalled = new Map<string, number>();
const appendCommitted = new Map<string, number>();
const appends: Array<{ at: number; ms: number; records: number }> = [];
const reads: Array<{ at: number; ms: number }> = [];
const originalAppend = output.append.bind(output);
const originalRead = output.read.bind(output);
output.append = async (records: OutputRecordInput[]) => {
  const called = performance.now();
  const stored = await originalAppend(records);
  const done = performance.now();
  appends.push({ at: called, ms: done - called, records: records.length });
  for (const r of stored) {
    if (appendCalled.has(r.cursor)) continue; // a keyed record answered again: not a new one
    appendCalled.set(r.cursor, called);
    appendCommitted.set(r.cursor, done);
  }
  return stored;
};
output.read = async (scope: OutputScope, afterCursor: string | undefined, limit: number) => {
  const started = performance.now();
  try {
    return await originalRead(scope, afterCursor, limit);
  } finally {
    reads.push({ at: started, ms: performance.now() - started });
  }
};

const api = async (method: "GET" | "POST", p: string, body?: unknown) => {
  const res = await request(`${base}${p}`, { method, headers: { "content-type": "application/json", authorization: `Bearer ${SANDBOX_DEV_TOKEN}` }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await res.body.json()) as any;
  if (res.statusCode >= 300) throw new Error(`${method} ${p} answered ${res.statusCode}: ${JSON.stringify(json)}`);
  return json;
};

const signIn = await request(`${base}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity: "dev", password: "dev-sandbox-password" }) });
const cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;
await signIn.body.dump();

const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: object) => any;
const all: any[] = [];
/** A session socket on `path`; `onFrame` sees every frame with its receipt time; resolves on `connected`. */
function connect(path: string, onFrame: (ws: any, frame: any, at: number) => void): Promise<any> {
  return new Promise((resolve, reject) => {
    const ws = new Ctor(`${base.replace(/^http/, "ws")}${path}`, [], { headers: { cookie }, origin: base });
    all.push(ws);
    ws.on("error", reject);
    ws.on("message", (data: Buffer) => {
      const at = performance.now();
      const frame = JSON.parse(String(data));
      if (frame.type === "connected") resolve(ws);
      onFrame(ws, frame, at);
    });
  });
}

// 1. Yardstick: /ws/events fan-out.
const eventLatencies: number[] = [];
let eventsReceived = 0;
const subscribedEvents: Array<Promise<void>> = [];
await Promise.all(
  Array.from({ length: EVENT_SOCKETS }, () => {
    let subscribed!: () => void;
    subscribedEvents.push(new Promise<void>((r) => (subscribed = r)));
    return connect("/ws/events", (ws, frame) => {
      if (frame.type === "connected") ws.send(JSON.stringify({ type: "subscribe", topic: "actions" }));
      else if (frame.type === "subscribed") subscribed();
      else if (frame.type === "event") {
        eventsReceived++;
        eventLatencies.push(Date.now() - Date.parse(frame.event.occurredAt));
      }
    });
  }),
);
await Promise.all(subscribedEvents);
const eventsExpected = EVENT_RUNS * 2 * EVENT_SOCKETS;
const fanStarted = performance.now();
for (let i = 0; i < EVENT_RUNS; i++) await api("POST", "/api/actions/diagnostics.noop", { params: {} });
for (const deadline = Date.now() + 60_000; eventsReceived < eventsExpected && Date.now() < deadline; ) await sleep(20);
const fanSeconds = (performance.now() - fanStarted) / 1000;
const eventSockets = all.splice(0);
await closeAll(eventSockets);

// 2. Agents: REPLIES slow replies, PER_REPLY sockets subscribed to each.
interface Receipt {
  cursor: string;
  kind: string;
  at: number;
  subscribedAt: number;
}
const receipts: Receipt[] = [];
const finished = new Set<any>(); // sockets that received their run's run.finished record
const finalStatus = new Map<string, string>(); // runId → status, from run.finished
const subscribedAt = new Map<any, number>();
const agentSockets = await Promise.all(
  Array.from({ length: REPLIES * PER_REPLY }, () =>
    connect("/ws/agents", (ws, frame, at) => {
      if (frame.type === "subscribed") subscribedAt.set(ws, at);
      else if (frame.type === "record") {
        receipts.push({ cursor: frame.cursor, kind: frame.record.kind, at, subscribedAt: subscribedAt.get(ws) ?? Infinity });
        if (frame.record.kind === "run.finished") {
          finished.add(ws);
          finalStatus.set(frame.runId, frame.record.data.status);
        }
      } else if (frame.type === "error") console.error("error frame", frame);
    }),
  ),
);
const appendsBefore = appends.length;
const readsBefore = reads.length;
const LOOP_RESOLUTION_MS = 10;
const loopDelay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
loopDelay.enable();
const agentsStarted = performance.now();
const runIds = await Promise.all(
  Array.from({ length: REPLIES }, async (_, i) => {
    const started = await api("POST", `/api/agents/${AGENT}/conversations`, { message: `Write a report titled Bench ${i + 1} token streaming to one hundred sockets. Go slowly.` });
    const runId: string = started.runId;
    for (const ws of agentSockets.slice(i * PER_REPLY, (i + 1) * PER_REPLY)) ws.send(JSON.stringify({ type: "subscribe", runId }));
    return runId;
  }),
);
for (const deadline = Date.now() + 180_000; finished.size < agentSockets.length && Date.now() < deadline; ) await sleep(50);
await sleep(200);
loopDelay.disable();
const agentsSeconds = (performance.now() - agentsStarted) / 1000;
const agentAppends = appends.slice(appendsBefore);
const agentReads = reads.slice(readsBefore);
await closeAll(agentSockets);

// Figures.
const events = sortedOf(eventLatencies);
const recordTimes = receipts.map((r) => r.at);
const recordWindow = recordTimes.length > 1 ? (Math.max(...recordTimes) - Math.min(...recordTimes)) / 1000 : NaN;
const framesPerSecond = receipts.length / recordWindow;
const textReceipts = receipts.filter((r) => r.kind === "text");
const live = textReceipts.filter((r) => (appendCalled.get(r.cursor) ?? -Infinity) > r.subscribedAt);
const tokenToSocket = sortedOf(live.map((r) => r.at - appendCalled.get(r.cursor)!));
const commitToSocket = sortedOf(live.map((r) => r.at - appendCommitted.get(r.cursor)!));
const appendMs = sortedOf(agentAppends.map((a) => a.ms));
const appendWindow = agentAppends.length > 1 ? (agentAppends.at(-1)!.at - agentAppends[0]!.at) / 1000 : NaN;
const readMs = sortedOf(agentReads.map((r) => r.ms));
const readWindow = agentReads.length > 1 ? (agentReads.at(-1)!.at - agentReads[0]!.at) / 1000 : NaN;
const textRecords = new Set(textReceipts.map((r) => r.cursor)).size;
const completed = runIds.filter((id) => finalStatus.get(id) === "completed").length;
const tokenP99 = percentile(tokenToSocket, 99);

console.log(`\nagents: ${os.cpus().length} cores, Node ${process.version}; app in-process (embedded Temporal, scripted model, SQLite); clients in the same process`);
console.log(`/ws/events: ${EVENT_SOCKETS} sockets, ${EVENT_RUNS} action runs (2 events each). /ws/agents: ${REPLIES} replies × ${PER_REPLY} sockets each, a word per 150 ms; ${completed} of ${REPLIES} replies completed in ${agentsSeconds.toFixed(1)} s\n`);
console.log("| case | p50 | p99 | figure | goal |\n|---|---:|---:|---:|---|");
console.log(`| /ws/events fan-out, ${EVENT_SOCKETS} sockets, commit -> receipt | ${ms(percentile(events, 50))} | ${ms(percentile(events, 99))} | ${eventsReceived} of ${eventsExpected} deliveries, ${(eventsReceived / fanSeconds).toFixed(0)}/s | |`);
console.log(`| /ws/agents record frames/s to ${REPLIES * PER_REPLY} sockets, ${REPLIES} replies streaming | | | ${framesPerSecond.toFixed(0)} frames/s (${receipts.length} frames in ${recordWindow.toFixed(1)} s) | |`);
console.log(`| /ws/agents token-to-socket latency | ${ms(percentile(tokenToSocket, 50))} | ${ms(tokenP99)} | ${live.length} live (socket, text record) pairs | p99 < ${GOAL_P99_MS} ms: ${tokenP99 < GOAL_P99_MS ? "met" : "MISSED"} |`);
console.log("\nwhere the agent latency goes:");
console.log(`  append call -> commit (one write transaction per record)  p50 ${ms(percentile(appendMs, 50))}, p99 ${ms(percentile(appendMs, 99))}; ${agentAppends.length} appends, ${(agentAppends.length / appendWindow).toFixed(0)} appends/s (${textRecords} text records)`);
console.log(`  commit -> receipt on the socket                           p50 ${ms(percentile(commitToSocket, 50))}, p99 ${ms(percentile(commitToSocket, 99))}`);
console.log(`  output reads by subscriptions                             ${agentReads.length} reads, ${(agentReads.length / readWindow).toFixed(0)} reads/s, each p50 ${ms(percentile(readMs, 50))}, p99 ${ms(percentile(readMs, 99))} (queued on the read connection)`);
const lag = (ns: number) => ms(Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS));
console.log(`  event loop lag while streaming (beyond its ${LOOP_RESOLUTION_MS} ms timer)   p50 ${lag(loopDelay.percentile(50))}, p99 ${lag(loopDelay.percentile(99))}, max ${lag(loopDelay.max)}`);
console.log(`  text frames replayed (appended before the socket's subscribed): ${textReceipts.length - live.length} of ${textReceipts.length}\n`);

await app.close();
// the one summary (test/bench/all.ts)
reportRows("agents", [
  { case: "/ws/agents token-to-socket latency", now: `p50 ${ms(percentile(tokenToSocket, 50))}, p99 ${ms(tokenP99)}`, goal: `p99 < ${GOAL_P99_MS} ms`, met: tokenP99 < GOAL_P99_MS },
  { case: `/ws/events fan-out, ${EVENT_SOCKETS} sockets, in-process app`, now: `p50 ${ms(percentile(events, 50))}, p99 ${ms(percentile(events, 99))}`, goal: "-", met: null },
]);
process.exit(0);

/** Closes sockets with a normal close and waits (at most 5 s) for them to finish closing. */
async function closeAll(sockets: any[]) {
  await Promise.race([
    Promise.all(
      sockets.map(
        (ws) =>
          new Promise<void>((resolve) => {
            if (ws.readyState === 3) return resolve();
            ws.once("close", () => resolve());
            ws.close(1000, "bench done");
          }),
      ),
    ),
    sleep(5_000),
  ]);
  for (const ws of sockets) if (ws.readyState !== 3) ws.terminate();
}
