/**
 * Event-schedule consumer benchmark (part of `npm run bench`; issue 14, spec 6.1): the lag of an event
 * schedule at BENCH_ES_RATE (default 500) events/s for BENCH_ES_SECONDS (default 10) s.
 *
 * The sandbox app (embedded Temporal) runs IN this process. Events (`sync.run.finished`, 16 partition
 * keys round-robin) are appended through the app's append operation (`EventLog.append`, what
 * `POST /api/events` calls) at evenly spaced instants, each call not waiting for the previous one.
 *
 * 1. Yardstick: the sandbox without the bench schedule; the same appends; latency from an event's
 *    `occurredAt` (stamped just before its append transaction) to its delivery to an
 *    `events.subscribe` subscriber (woken by the stream's "appended" notifier).
 * 2. Consumer: the sandbox plus `bench-consumer` (`on: { types: ["sync.run.finished"] }`, concurrency
 *    16), whose handler upserts one customer per partition; lag = the time the handler's commit
 *    finished (the consumers' "committed" notification) minus the event's `occurredAt`. Also the backlog
 *    high-water mark (sampled every 5 ms), the mean events per group commit, and the subscriber
 *    latency of phase 1 measured again with the consumer running.
 * It is a benchmark: it prints figures and exits 0 whatever they are.
 */
import os from "node:os";
import pino from "pino";
import { createApp, type App } from "../../core/app";
import { EventLog } from "../../core/events/log";
import { Database } from "../../core/store/db";
import { EventScheduleConsumers } from "../../core/runtime/event-schedules";
import { defineConnector, defineProject, defineSchedule, type ProjectDefinition } from "../../core/sdk";
import { builtinPlugins } from "../../plugins";
import { sandboxProject, SANDBOX_DEV_TOKEN } from "../../sandbox/project";
import { WORKFLOW_ENGINE } from "../../workflows/modules";
import { benchDir } from "../helpers-fs";
import { freePort } from "../setup/global";
import { pacedSends } from "./pacing";
import { percentile, reportRows } from "./report";

const RATE = Number(process.env.BENCH_ES_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_ES_SECONDS ?? 10);
const PARTITIONS = 16;
const TOTAL = RATE * SECONDS;
const ms = (x: number) => (Number.isNaN(x) ? "n/a" : `${x < 10 ? x.toFixed(1) : x.toFixed(0)} ms`);
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

const bench = defineConnector({
  id: "bench",
  schedules: {
    "bench-consumer": defineSchedule({
      on: { types: ["sync.run.finished"] },
      concurrency: 16,
      async run(ctx) {
        const { n } = ctx.event.payload as { n: number };
        ctx.objects.upsert("customer", `cus_bench_${ctx.event.partitionKey}`, { name: "Bench customer", balance: n });
      },
    }),
  },
});
const withConsumer = defineProject({ ...sandboxProject, connectors: [...sandboxProject.connectors, bench] });

async function start(project: ProjectDefinition): Promise<App> {
  return createApp({
    project,
    plugins: builtinPlugins,
    workflowEngine: WORKFLOW_ENGINE,
    defaults: { devToken: SANDBOX_DEV_TOKEN },
    logger: pino({ level: "warn" }),
    env: { ...process.env, PORT: "0", SVC_DATA_DIR: benchDir("svc-bench-"), SVC_TEMPORAL_PORT: String(await freePort()), SVC_TEMPORAL_UI: "false", SVC_SCHEDULES: "false", SVC_DECK_CHECKS: "false" },
  });
}

/** Appends TOTAL events at evenly spaced instants; answers when the last append call returned, and how late the calls were. */
async function offer(app: App): Promise<{ seconds: number; lateP99: number }> {
  const events = app.container.resolve(EventLog);
  const started = performance.now();
  const late: number[] = [];
  const calls: Promise<unknown>[] = [];
  for await (const { i, late: lateMs } of pacedSends(RATE, TOTAL)) {
    late.push(lateMs);
    const partition = `p${i % PARTITIONS}`;
    calls.push(events.append([{ type: "sync.run.finished", partitionKey: partition, payload: { syncId: "bench", runId: `bench-${i}`, n: i } }]));
  }
  await Promise.all(calls);
  late.sort((a, b) => a - b);
  return { seconds: (performance.now() - started) / 1000, lateP99: percentile(late, 99) };
}

/** Subscribes to the bench events and collects occurredAt → receipt latencies. */
function subscriber(app: App): { latencies: number[]; stop: () => void } {
  const latencies: number[] = [];
  const stop = app.container.resolve(EventLog).subscribe({ types: ["sync.run.finished"] }, (batch) => {
    const now = Date.now();
    for (const e of batch) latencies.push(now - Date.parse(e.occurredAt));
  });
  return { latencies, stop };
}

console.log(`\nevent schedules: ${RATE} events/s for ${SECONDS} s (${TOTAL} events, ${PARTITIONS} partition keys); Node ${process.version}, ${os.cpus().length} cores\n`);

// 1. yardstick: no event schedule for these events
const plain = await start(sandboxProject);
const sub1 = subscriber(plain);
await sleep(500);
const offered1 = await offer(plain);
const deadline1 = Date.now() + 30_000;
while (sub1.latencies.length < TOTAL && Date.now() < deadline1) await sleep(20);
sub1.stop();
await plain.close();
const yard = [...sub1.latencies].sort((a, b) => a - b);

// 2. the same appends with the bench schedule consuming them
const app = await start(withConsumer);
const consumers = app.container.resolve(EventScheduleConsumers);
const lags: number[] = [];
let commits = 0;
consumers.notifier.on("committed", (c: { scheduleId: string; events: Array<{ occurredAt: string }>; at: number }) => {
  if (c.scheduleId !== "bench-consumer") return;
  commits++;
  for (const e of c.events) lags.push(c.at - Date.parse(e.occurredAt));
});
let backlogMax = 0;
const sampler = setInterval(() => {
  backlogMax = Math.max(backlogMax, consumers.describe("bench-consumer").consumer.backlog);
}, 5);
const sub2 = subscriber(app);
await sleep(500);
const db = app.container.resolve(Database);
const before = db.stats();
const offered2 = await offer(app);
const deadline2 = Date.now() + 60_000;
while ((lags.length < TOTAL || sub2.latencies.length < TOTAL) && Date.now() < deadline2) await sleep(20);
clearInterval(sampler);
const after = db.stats();
sub2.stop();
const state = consumers.describe("bench-consumer");
await app.close();
lags.sort((a, b) => a - b);
const withSub = [...sub2.latencies].sort((a, b) => a - b);

console.log("| case | figure |\n|---|---:|");
console.log(`| offered rate (phase 1 / phase 2) | ${(TOTAL / offered1.seconds).toFixed(0)} / ${(TOTAL / offered2.seconds).toFixed(0)} events/s (append calls late p99 ${ms(offered1.lateP99)} / ${ms(offered2.lateP99)}) |`);
console.log(`| yardstick: occurredAt → events.subscribe delivery, no schedule, p50 / p99 / max | ${ms(percentile(yard, 50))} / ${ms(percentile(yard, 99))} / ${ms(yard.at(-1) ?? NaN)} (${yard.length} of ${TOTAL}) |`);
console.log(`| consumer lag: occurredAt → handler's commit finished, p50 / p99 / max | ${ms(percentile(lags, 50))} / ${ms(percentile(lags, 99))} / ${ms(lags.at(-1) ?? NaN)} (${lags.length} of ${TOTAL} handled) |`);
console.log(`| same subscriber with the consumer running, p50 / p99 | ${ms(percentile(withSub, 50))} / ${ms(percentile(withSub, 99))} |`);
console.log(`| backlog high-water mark | ${backlogMax} events |`);
console.log(`| events per group commit (mean) | ${(lags.length / Math.max(1, commits)).toFixed(1)} (${commits} commits) |`);
console.log(`| writer statements per event (appends and the consumer's commits) | ${((after.writerStatements - before.writerStatements) / TOTAL).toFixed(1)} (${after.commits - before.commits} commits of the writer) |`);
console.log(`| consumer at the end | backlog ${state.consumer.backlog}, dead-lettered ${state.consumer.deadLettered}, caught up ${state.consumer.caughtUp} |\n`);
// the one summary (test/bench/all.ts)
reportRows("event-schedules", [{ case: `event schedule consumer lag, ${RATE} events/s, p99`, now: `${ms(percentile(lags, 99))} (${lags.length} of ${TOTAL} handled; yardstick subscriber p99 ${ms(percentile(yard, 99))})`, goal: "-", met: null }]);
process.exit(0);
