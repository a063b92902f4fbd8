/**
 * Stream benchmarks (part of `npm run bench`):
 * 1. Fan-out: BENCH_WS_CLIENTS (default 1000) browser-session WebSocket clients subscribed to the
 *    `actions` topic; BENCH_WS_RUNS (default 100) action runs, each committing two events; latency is
 *    from the event's `occurredAt` (stamped just before its commit) to its receipt by each client.
 * 2. Replay: BENCH_REPLAY_EVENTS (default 20000) events written, then read back with
 *    `GET /api/events?limit=500` page after page; pages and events per second.
 * The server runs in its own process; clients run here (both share the machine's cores).
 */
import os from "node:os";
import NodeWebSocket from "crossws/websocket";
import { request } from "undici";
import { SANDBOX_DEV_TOKEN } from "../../sandbox/project";
import { cpuSeconds } from "../helpers-fs";
import { BENCH_APP, startBenchServer } from "./server-process";

const CLIENTS = Number(process.env.BENCH_WS_CLIENTS ?? 1000);
const RUNS = Number(process.env.BENCH_WS_RUNS ?? 100);
const REPLAY_EVENTS = Number(process.env.BENCH_REPLAY_EVENTS ?? 20_000);
/** CPU time (user + system, ms) the server process has used so far (Linux /proc; NaN elsewhere). */
const serverCpuMs = (pid: number | undefined): number => cpuSeconds(pid) * 1000;
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

const server = await startBenchServer("app", { SVC_WS_MAX_BUFFERED_BYTES: String(64 * 1024 * 1024) });
const base = server.url;
const api = async (method: "GET" | "POST", p: string, body?: unknown) => {
  const res = await request(`${base}${p}`, { method, headers: { "content-type": "application/json", authorization: `Bearer ${SANDBOX_DEV_TOKEN}` }, body: body === undefined ? undefined : JSON.stringify(body) });
  return (await res.body.json()) as any;
};

const signIn = await request(`${base}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity: "dev", password: "dev-sandbox-password" }) });
const cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;
await signIn.body.dump();

const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: object) => any;
const latencies: number[] = [];
let received = 0;
const sockets: any[] = [];
const connectStarted = Date.now();
await Promise.all(
  Array.from({ length: CLIENTS }, () =>
    new Promise<void>((resolve, reject) => {
      const ws = new Ctor(`${base.replace(/^http/, "ws")}/ws/events`, [], { headers: { cookie }, origin: base });
      sockets.push(ws);
      ws.on("error", reject);
      ws.on("message", (data: Buffer) => {
        const frame = JSON.parse(String(data));
        if (frame.type === "connected") ws.send(JSON.stringify({ type: "subscribe", topic: "actions" }));
        else if (frame.type === "subscribed") resolve();
        else if (frame.type === "event") {
          received++;
          latencies.push(Date.now() - Date.parse(frame.event.occurredAt));
        }
      });
    }),
  ),
);
const connectMs = Date.now() - connectStarted;
const fanStarted = Date.now();
const fanCpuStarted = serverCpuMs(server.child.pid);
for (let i = 0; i < RUNS; i++) await api("POST", "/api/actions/diagnostics.noop", { params: {} });
const expected = RUNS * 2 * CLIENTS;
const deadline = Date.now() + 120_000;
while (received < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
const fanSeconds = (Date.now() - fanStarted) / 1000;
const fanCpuMs = serverCpuMs(server.child.pid) - fanCpuStarted;
for (const ws of sockets) ws.terminate();
latencies.sort((a, b) => a - b);

// Replay: write events, then page through all of them.
const writers = 16;
let written = 0;
await Promise.all(Array.from({ length: writers }, async () => {
  while (written < REPLAY_EVENTS / 2) {
    written++;
    await api("POST", "/api/actions/diagnostics.noop", { params: {} });
  }
}));
const replayStarted = Date.now();
const replayCpuStarted = serverCpuMs(server.child.pid);
let cursor: string | undefined;
let pages = 0;
let events = 0;
for (;;) {
  const page = await api("GET", `/api/events?limit=500${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
  if (page.count === 0) break;
  pages++;
  events += page.count;
  cursor = page.events.at(-1).cursor;
}
const replaySeconds = (Date.now() - replayStarted) / 1000;
const replayCpuMs = serverCpuMs(server.child.pid) - replayCpuStarted;

const socketCount = CLIENTS.toLocaleString("en-US");
console.log(`\nstreams: node ${process.version}, ${os.cpus().length} cores, server ${BENCH_APP} (BENCH_APP); ${CLIENTS} WebSocket clients (connected and subscribed in ${connectMs} ms), ${RUNS} action runs (2 events each)\n`);
console.log("| case | figure |\n|---|---:|");
console.log(`| fan-out deliveries received | ${received} of ${expected} |`);
console.log(`| fan-out deliveries per second | ${(received / fanSeconds).toFixed(0)} |`);
console.log(`| /ws/events fan-out, ${socketCount} sockets, commit → receipt p50 / p99 | ${percentile(latencies, 50)} ms / ${percentile(latencies, 99)} ms |`);
console.log(`| fan-out server CPU per event committed (all sockets; the action runs included) | ${(fanCpuMs / (RUNS * 2)).toFixed(1)} ms |`);
console.log(`| replay GET /api/events pages of 500 | ${(pages / replaySeconds).toFixed(1)} pages/s, ${(events / replaySeconds).toFixed(0)} events/s (${events} events) |`);
console.log(`| replay server CPU per page of 500 | ${(replayCpuMs / Math.max(1, pages)).toFixed(2)} ms |\n`);

await server.stop();

// the one summary (test/bench/all.ts): issue 15's rows this script measures
const { reportRows, fmt, meets } = await import("./report");
const fanP99 = percentile(latencies, 99);
reportRows("streams", [
  { case: "/ws/events fan-out, 1,000 sockets, commit -> receipt", now: `p50 ${percentile(latencies, 50)} ms, p99 ${fanP99} ms (${CLIENTS} sockets, ${received} of ${expected} received)`, goal: "p99 < 50 ms", met: received < expected ? false : meets(fanP99, 50) },
  { case: "GET /api/events replay", now: `${fmt(events / replaySeconds)} events/s`, goal: ">= 100,000 events/s", met: meets(events / replaySeconds, 100_000, true) },
]);
