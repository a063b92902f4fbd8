/**
 * Stream benchmarks (part of `npm run bench`):
 * 1. Fan-out: BENCH_WS_CLIENTS (default 1000) browser-session WebSocket clients subscribed to the
 *    `actions` topic; latency is from the event's `occurredAt` (stamped just before its commit) to its
 *    receipt by each client. Twice BENCH_WS_RUNS (default 100) action runs, each committing two events:
 *    first back to back, each POST sent when the previous one is answered (deliveries per second; its
 *    latencies include the queue at the clients, whose 1,000 sockets share one process and one core;
 *    it also warms the server up), then paced at BENCH_WS_RATE (default 10) runs per second, started
 *    on schedule (the summary's row: latency at a stated rate).
 * 2. Replay: BENCH_REPLAY_EVENTS (default 20000) events written, then read back with
 *    `GET /api/events?limit=500` page after page, one request ahead (the next page is asked for when
 *    a page's `Link: rel="next"` header arrives, before its body is parsed): one warm-up, then three
 *    replays with the client parsing each page as it arrives and three parsing after the clock,
 *    alternated; pages and events per second (see `replay` below).
 * The server runs in its own process; clients run here (both share the machine's cores).
 */
import os from "node:os";
import NodeWebSocket from "crossws/websocket";
import { request } from "undici";
import { SANDBOX_DEV_TOKEN } from "../../sandbox/project";
import { cpuSeconds } from "../helpers-fs";
import { pacedSends } from "./pacing";
import { fmt, meets, percentile, reportRows } from "./report";
import { BENCH_APP, startBenchServer } from "./server-process";

const CLIENTS = Number(process.env.BENCH_WS_CLIENTS ?? 1000);
const RUNS = Number(process.env.BENCH_WS_RUNS ?? 100);
const RATE = Number(process.env.BENCH_WS_RATE ?? 10);
const REPLAY_EVENTS = Number(process.env.BENCH_REPLAY_EVENTS ?? 20_000);
/** CPU time (user + system, ms) the server process has used so far (Linux /proc; NaN elsewhere). */
const serverCpuMs = (pid: number | undefined): number => cpuSeconds(pid) * 1000;

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
/** Latencies (ms) of the phase under way; `received` counts its deliveries. */
let latencies: number[] = [];
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
        const at = Date.now(); // receipt, before this client's own parse
        const frame = JSON.parse(String(data));
        if (frame.type === "connected") ws.send(JSON.stringify({ type: "subscribe", topic: "actions" }));
        else if (frame.type === "subscribed") resolve();
        else if (frame.type === "event") {
          received++;
          latencies.push(at - Date.parse(frame.event.occurredAt));
        }
      });
    }),
  ),
);
const connectMs = Date.now() - connectStarted;

/** One fan-out phase's figures: latencies sorted (ms), deliveries expected and received, wall seconds, server CPU ms per event. */
interface FanOutRun {
  latencies: number[];
  expected: number;
  received: number;
  seconds: number;
  cpuMsPerEvent: number;
}

/** Runs RUNS action runs (`pace`: one every 1/RATE s, on schedule; else back to back) and waits for every delivery (or 120 s). */
async function fanOut(pace: boolean): Promise<FanOutRun> {
  latencies = [];
  received = 0;
  const started = Date.now();
  const cpuStarted = serverCpuMs(server.child.pid);
  const runs: Promise<unknown>[] = [];
  if (pace) for await (const _ of pacedSends(RATE, RUNS)) runs.push(api("POST", "/api/actions/diagnostics.noop", { params: {} }));
  else for (let i = 0; i < RUNS; i++) await api("POST", "/api/actions/diagnostics.noop", { params: {} });
  await Promise.all(runs);
  const expected = RUNS * 2 * CLIENTS;
  const deadline = Date.now() + 120_000;
  while (received < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const seconds = (Date.now() - started) / 1000;
  const cpuMsPerEvent = (serverCpuMs(server.child.pid) - cpuStarted) / (RUNS * 2);
  return { latencies: latencies.sort((a, b) => a - b), expected, received, seconds, cpuMsPerEvent };
}
const backToBack = await fanOut(false);
const paced = await fanOut(true);
for (const ws of sockets) ws.terminate();

// Replay: write events, then page through all of them.
const writers = 16;
let written = 0;
await Promise.all(Array.from({ length: writers }, async () => {
  while (written < REPLAY_EVENTS / 2) {
    written++;
    await api("POST", "/api/actions/diagnostics.noop", { params: {} });
  }
}));
/**
 * Pages through every event from the start with `GET /api/events?limit=500`, one request ahead: the next
 * page is asked for as soon as a page's headers name it (`Link: <…>; rel="next"`, on full pages), and
 * the page's body is read while the server answers the next one. After a short page (no link) it
 * continues from the page's last cursor, until a page is empty. With `parseInLoop` each body is parsed
 * as it arrives, as a consumer would; without it, bodies are kept and parsed after the clock stops, so
 * that the client's JSON.parse (~2 ms per page) does not take the server's core on this 2-core machine.
 * Either way every page is parsed and checked, off the clock: each count matches its events, no id twice.
 */
/** One replay's figures: wall seconds, the server's CPU ms, pages and distinct events read. */
interface ReplayRun {
  seconds: number;
  cpuMs: number;
  pages: number;
  events: number;
}

async function replay(parseInLoop: boolean): Promise<ReplayRun> {
  const started = Date.now();
  const cpuStarted = serverCpuMs(server.child.pid);
  const getPage = (p: string) => request(`${base}${p}`, { headers: { authorization: `Bearer ${SANDBOX_DEV_TOKEN}` } });
  type Page = { count: number; events: { id: string; cursor: string }[] };
  const read: (Page | Buffer)[] = []; // in the order read
  let res = await getPage("/api/events?limit=500");
  for (;;) {
    if (res.statusCode !== 200) throw new Error(`GET /api/events answered ${res.statusCode}: ${await res.body.text()}`);
    const next = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link ?? ""))?.[1];
    const ahead = next === undefined ? undefined : getPage(next);
    if (parseInLoop || next === undefined) {
      const page = (await res.body.json()) as Page;
      read.push(page);
      if (page.count === 0) break;
      res = await (ahead ?? getPage(`/api/events?limit=500&afterCursor=${encodeURIComponent(page.events.at(-1)!.cursor)}`));
    } else {
      read.push(Buffer.from(await res.body.arrayBuffer()));
      res = await ahead!;
    }
  }
  const seconds = (Date.now() - started) / 1000;
  const cpuMs = serverCpuMs(server.child.pid) - cpuStarted;
  // the check, off the clock
  const pagesRead = read.map((p) => (Buffer.isBuffer(p) ? (JSON.parse(p.toString("utf8")) as Page) : p)).filter((p) => p.count > 0);
  const ids = new Set<string>();
  for (const p of pagesRead) {
    if (p.count !== p.events.length) throw new Error(`a page's count ${p.count} is not its ${p.events.length} events`);
    for (const e of p.events) {
      if (ids.has(e.id)) throw new Error(`event ${e.id} read twice`);
      ids.add(e.id);
    }
  }
  return { seconds, cpuMs, pages: pagesRead.length, events: ids.size };
}
// one replay to warm up (the server's JIT, and the writes' aftermath: the first replay right after
// them cost the server twice the CPU per page of the next ones), then three of each kind, alternated
const warmUp = await replay(true);
const replays = { parsedInLoop: [] as ReplayRun[], parsedAfter: [] as ReplayRun[] };
for (let round = 0; round < 3; round++) {
  replays.parsedInLoop.push(await replay(true));
  replays.parsedAfter.push(await replay(false));
}
const eventsPerSecond = (runs: ReplayRun[]) => runs.reduce((n, r) => n + r.events, 0) / runs.reduce((n, r) => n + r.seconds, 0);
const replayRow = (label: string, runs: ReplayRun[]) =>
  `| replay GET /api/events pages of 500, ${label} | ${runs.map((r) => `${(r.events / r.seconds).toFixed(0)} events/s (${(r.pages / r.seconds).toFixed(1)} pages/s, server CPU ${(r.cpuMs / Math.max(1, r.pages)).toFixed(2)} ms per page)`).join("; ")}; ${eventsPerSecond(runs).toFixed(0)} events/s over all ${runs.length} (${runs[0]!.events} events each) |`;
const replayRate = eventsPerSecond(replays.parsedInLoop);

console.log(`\nstreams: node ${process.version}, ${os.cpus().length} cores, server ${BENCH_APP} (BENCH_APP); ${CLIENTS} WebSocket clients (connected and subscribed in ${connectMs} ms), ${RUNS} action runs (2 events each) back to back, then ${RUNS} paced at ${RATE}/s\n`);
console.log("| case | figure |\n|---|---:|");
const fanRow = (label: string, run: FanOutRun) =>
  [
    `| fan-out ${label}: deliveries received | ${run.received} of ${run.expected} |`,
    `| fan-out ${label}: deliveries per second | ${(run.received / run.seconds).toFixed(0)} |`,
    `| fan-out ${label}: commit → receipt p50 / p99 | ${percentile(run.latencies, 50)} ms / ${percentile(run.latencies, 99)} ms |`,
    `| fan-out ${label}: server CPU per event committed (all sockets; the action runs included) | ${run.cpuMsPerEvent.toFixed(1)} ms |`,
  ].join("\n");
console.log(fanRow("back to back", backToBack));
console.log(fanRow(`paced, ${RATE} runs/s (the summary's row)`, paced));
console.log(replayRow("warm-up (not counted)", [warmUp]));
console.log(replayRow("client parses each page as it arrives (the summary's row)", replays.parsedInLoop));
console.log(`${replayRow("client parses after the clock (the server's rate without the client's JSON.parse on a shared core)", replays.parsedAfter)}\n`);

await server.stop();

// the one summary (test/bench/all.ts): issue 15's rows this script measures
const fanP99 = percentile(paced.latencies, 99);
reportRows("streams", [
  {
    case: "/ws/events fan-out, 1,000 sockets, commit -> receipt",
    now: `p50 ${percentile(paced.latencies, 50)} ms, p99 ${fanP99} ms at ${RATE} action runs/s (${RATE * 2} events/s; ${CLIENTS} sockets, ${paced.received} of ${paced.expected} received); back to back: p99 ${percentile(backToBack.latencies, 99)} ms at ${fmt(backToBack.received / backToBack.seconds)} deliveries/s`,
    goal: "p99 < 50 ms",
    met: paced.received < paced.expected ? false : meets(fanP99, 50),
  },
  { case: "GET /api/events replay", now: `${fmt(replayRate)} events/s (client parsing each page as it arrives, after one warm-up replay at ${fmt(warmUp.events / warmUp.seconds)}; parsing after the clock: ${fmt(eventsPerSecond(replays.parsedAfter))})`, goal: ">= 100,000 events/s", met: meets(replayRate, 100_000, true) },
]);
