/**
 * `npm run bench`: throughput and latency of the service's hot paths next to a bare h3 handler
 * measured in the same run on the same machine, and the ratio. Each server runs in its own process
 * (test/bench/server.ts); the load generator runs here.
 *
 * 1. Action runs: `POST /api/actions/diagnostics.noop` — authenticate, validate, run the handler, then
 *    one transaction records the run with `action.requested`, its completion and `action.completed` (the
 *    handler ends within `SVC_RECORD_RUNNING_AFTER_MS`), drain the outbox to the stream.
 * 2. Webhook ingestion: signed Standard Webhooks deliveries to the sandbox's `standard-webhooks`
 *    connector, each with its own `webhook-id` — verify (HMAC), parse, look the key up (batched reads),
 *    trivial handler, one transaction records the run, execution and attempt completed, respond 202.
 *
 * 3. Workflow runs: `POST /api/workflows/invoice-review/runs` (answer = queued in the store) at max load,
 *    then how fast the queued runs complete on the embedded dev server (completed runs per second), then
 *    intervention latency: from sending a submission to the `workflow.run.node.started` of the next node
 *    (server timestamps), one run at a time. Printed with them: CPU per completed run of the service
 *    process (all threads; the start requests and this script's event polling included) and of the
 *    embedded Temporal dev server, and one run's history length (events, workflow tasks, activities,
 *    markers). `BENCH_ONLY=workflows` runs the yardstick and these rows only.
 *
 * Max load: autocannon, closed loop, BENCH_CONCURRENCY connections (default 16) for BENCH_SECONDS
 * (default 10), in BENCH_ROUNDS rounds (default 3) of the bare handler, action runs and webhook
 * deliveries one after the other, both servers up throughout. A row's req/s, p50 and p99 are the
 * medians of its rounds, and its ratio is the median of the rounds' own ratios (each against the bare
 * handler of the same round, measured seconds apart): on a shared two-core machine one 10-second run of
 * the same code moves ±15 %, and a slow spell slows both sides of a round's ratio alike.
 *
 * Half load: an open-loop generator sending at evenly spaced instants at half the measured rate
 * (autocannon's own rate limit sends each second's quota in a burst), reporting p50/p99 of the
 * responses from each request's intended send time. The generator shares the machine's two cores with
 * the server, so the same generator is also run against the bare handler at the same rate: its p99
 * there is the floor this generator reaches on this machine, printed beside the service's. Before each
 * round and each bare run the app is left to settle (under a tenth of a core, at most 10 s), so what a
 * round left behind (WAL checkpoints, drains) does not slow the next one.
 */
import crypto from "node:crypto";
import os from "node:os";
import autocannon from "autocannon";
import { Agent, request } from "undici";
import { Webhook } from "standardwebhooks";
import { SANDBOX_DEV_TOKEN, SANDBOX_WEBHOOK_SECRETS } from "../../sandbox/project";
import { cpuSeconds, childPids } from "../helpers-fs";
import { pacedSends } from "./pacing";
import { fmt, median, meets, percentile, reportRows, type BenchRow } from "./report";
import { BENCH_APP, startBenchServer } from "./server-process";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONCURRENCY ?? 16);
const rounds = Math.max(1, Math.floor(Number(process.env.BENCH_ROUNDS ?? 3)));

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function closedLoop(name: string, opts: autocannon.Options): Promise<Figures> {
  const r = await autocannon({ connections, duration: seconds, ...opts });
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}


/** A max-load row over its rounds: req/s, p50 and p99 are the rounds' medians, errors their sum. */
interface RoundFigures extends Figures {
  rounds: Figures[];
}

/** The medians of `rounds` (see {@link RoundFigures}). */
function medianOf(name: string, rounds: Figures[]): RoundFigures {
  return { name, rps: median(rounds.map((r) => r.rps)), p50: median(rounds.map((r) => r.p50)), p99: median(rounds.map((r) => r.p99)), errors: rounds.reduce((t, r) => t + r.errors, 0), rounds };
}

/** Each round's `row / yardstick` req/s, in round order (empty when `row` was not measured). */
function roundRatios(row: RoundFigures, yardstick: RoundFigures): number[] {
  return row.rounds.map((r, i) => r.rps / yardstick.rounds[i]!.rps);
}

/**
 * Sends `make()` requests at evenly spaced instants, `rate` per second, for `seconds`; latency is
 * measured from each send's `from` (./pacing.ts: the intended instant, a late send charged its lateness).
 */
async function openLoop(name: string, url: string, rate: number, make: () => { body: string; headers: Record<string, string> }): Promise<Figures> {
  const dispatcher = new Agent({ connections: 64, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const inflight: Promise<void>[] = [];
  for await (const { from } of pacedSends(rate, Math.round(rate * seconds))) {
    const { body, headers } = make();
    inflight.push(
      request(url, { method: "POST", body, headers, dispatcher })
        .then(async (res) => {
          await res.body.dump();
          if (res.statusCode >= 300) errors++;
          latencies.push(performance.now() - from);
        })
        .catch(() => void errors++),
    );
  }
  await Promise.all(inflight);
  await dispatcher.close();
  const sorted = latencies.sort((a, b) => a - b);
  return { name, rps: latencies.length / ((performance.now() - started) / 1000), p50: Number(percentile(sorted, 50).toFixed(1)), p99: Number(percentile(sorted, 99).toFixed(1)), errors };
}

const json = { "content-type": "application/json" };
const signer = new Webhook(SANDBOX_WEBHOOK_SECRETS.standardWebhooks);
const signedDelivery = () => {
  const id = `msg_${crypto.randomUUID()}`;
  const at = new Date();
  const body = JSON.stringify({ type: "bench.ping", data: { id } });
  return { body, headers: { ...json, "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signer.sign(id, at, body) } };
};

console.log(`\nsvc bench: ${connections} connections, ${seconds} s per case, ${rounds} rounds, node ${process.version}, ${os.cpus().length} cores, servers ${BENCH_APP} (BENCH_APP)\n`);
const bare = await startBenchServer("bare");
const bareOpts: autocannon.Options = { url: `${bare.url}/bare`, method: "POST", headers: json, body: "{}" };
const app = await startBenchServer("app");
const actionOpts: autocannon.Options = { url: `${app.url}/api/actions/diagnostics.noop`, method: "POST", headers: { ...json, authorization: `Bearer ${SANDBOX_DEV_TOKEN}` }, body: JSON.stringify({ params: {} }) };
const webhookUrl = `${app.url}/api/webhooks/standard-webhooks/events`;
const webhookOpts: autocannon.Options = { url: webhookUrl, method: "POST", requests: [{ setupRequest: (req) => ({ ...req, ...signedDelivery() }) }] };
// BENCH_ONLY=workflows: the yardstick and the workflow rows only (start, completion, intervention)
const only = process.env.BENCH_ONLY;
const skipped = (name: string): RoundFigures => ({ name: `${name} (skipped: BENCH_ONLY=${only})`, rps: NaN, p50: NaN, p99: NaN, errors: 0, rounds: [] });
let action = skipped("action run");
let webhook = skipped("webhook delivery");
let webhookHalf: Figures = skipped("webhook delivery at half load");
let actionHalf: Figures = skipped("action run at half load");
/** The same generator against the bare handler at each half-load rate: this machine's floor for the paced p99s. */
let webhookHalfFloor: Figures = skipped("bare h3 handler at the webhook half-load rate");
let actionHalfFloor: Figures = skipped("bare h3 handler at the action half-load rate");
const STORE_COUNTERS = ["writerStatements", "readerStatements", "transactions", "commits"] as const;
/** The store's counters (core/store/db.ts `DatabaseStats`) summed over spans of requests; `perRequest()` divides them by the requests sent. */
const storeCounters = () => {
  const sums: Record<string, number> = {};
  let requests = 0;
  return {
    /**
     * Adds the counters' growth over `send` (which answers how many requests it sent), drains included;
     * answers what the service's probe saw over the same span (test/bench/server-probe.ts: its window
     * starts at the first `app.stats()` here).
     */
    async over(send: () => Promise<number>): Promise<Record<string, number>> {
      const before = await app.stats();
      requests += await send();
      await new Promise((r) => setTimeout(r, 500)); // the drains after the last requests
      const after = await app.stats();
      for (const k of STORE_COUNTERS) sums[k] = (sums[k] ?? 0) + after[k]! - before[k]!;
      return after;
    },
    perRequest(): string {
      const per = (k: string) => ((sums[k] ?? 0) / requests).toFixed(1);
      return `${per("writerStatements")} writer + ${per("readerStatements")} reader statements, ${per("transactions")} transactions, ${per("commits")} commits`;
    },
  };
};
/**
 * Runs a phase and notes the WAL rewinds during it and how long the store's writer paused for them (no
 * commit can happen meanwhile: every request arriving then waits; `DatabaseStats.walRestartMs`), and
 * what the service's probe saw over it (test/bench/server-probe.ts): the latency measured inside the
 * service (the generator shares the two cores, so its own p99 can be longer), event-loop delay, GC
 * pauses, CPU, and how long the service's threads were runnable but waited for a core.
 */
const rewinds = async (name: string, phase: () => Promise<Figures>) => {
  const before = await app.stats();
  const t0 = performance.now();
  const figures = await phase();
  const phaseS = (performance.now() - t0) / 1000;
  const after = await app.stats();
  const n = after.walRestarts! - before.walRestarts!;
  const ms = after.walRestartMs! - before.walRestartMs!;
  const rewound = after.walRewinds! - before.walRewinds!;
  const fallbacks = after.walRestartFallbacks! - before.walRestartFallbacks!;
  // inside the service over the same phase (test/bench/server-probe.ts): its own latency, and what could stretch it
  statementLines.push(
    `inside the service during ${name}:`.padEnd(52) +
      ` server-side p50 ${after.serverP50!.toFixed(1)} / p99 ${after.serverP99!.toFixed(1)} / p99.9 ${after.serverP999!.toFixed(1)} / max ${after.serverMax!.toFixed(1)} ms (${after.requests} requests);` +
      ` event-loop delay max ${after.loopDelayMax!.toFixed(1)} ms (p99 ${after.loopDelayP99!.toFixed(1)}); GC ${after.gcPauses} pauses, longest ${after.gcMaxMs!.toFixed(1)} ms (of them full ${after.gcFullPauses}, longest ${after.gcFullMaxMs!.toFixed(1)} ms);` +
      ` CPU ${(after.cpuMs! / 1000 / phaseS).toFixed(2)} cores (per request: main thread ${((after.cpuMainMs! * 1000) / after.requests!).toFixed(0)} µs, other threads ${(((after.cpuMs! - after.cpuMainMs!) * 1000) / after.requests!).toFixed(0)} µs); runnable but waiting for a core ${(after.runQueueMs! / phaseS).toFixed(0)} ms/s (main thread ${(after.runQueueMainMs! / phaseS).toFixed(0)} ms/s)`,
  );
  statementLines.push(`WAL rewinds during ${name}:`.padEnd(52) + ` ${rewound}; the writer paused for ${n} passes, ${ms.toFixed(1)} ms in all (${n ? (ms / n).toFixed(1) : "-"} ms each; longest of the run so far ${after.walRestartMaxMs} ms; RESTART fallbacks ${fallbacks})`);
  return figures;
};
const sequential = (count: number, opts: autocannon.Options) => async () => {
  for (let i = 0; i < count; i++) {
    const setup = (opts.requests?.[0] as { setupRequest?: (r: object) => { body?: string; headers?: Record<string, string> } } | undefined)?.setupRequest;
    const req = setup?.({}) ?? {};
    const res = await request(opts.url!, { method: "POST", body: req.body ?? (opts.body as string), headers: req.headers ?? opts.headers });
    await res.body.dump();
  }
  return count;
};
/**
 * Waits until the app process uses under a tenth of a core over half a second (at most `maxMs`): the
 * work a round leaves behind (WAL checkpoints, drains, the event followers catching up) must not land
 * on the next round's bare handler, whose ratio it would lift. Answers the ms waited.
 */
const settle = async (maxMs = 10_000): Promise<number> => {
  const t0 = performance.now();
  let last = cpuSeconds(app.child.pid);
  while (performance.now() - t0 < maxMs) {
    await new Promise((r) => setTimeout(r, 500));
    const now = cpuSeconds(app.child.pid);
    if (now - last < 0.05) break;
    last = now;
  }
  return performance.now() - t0;
};
const settled: number[] = [];
/** One closed-loop round of `opts`, added to `into`; answers how many requests it made. */
const round = (name: string, opts: autocannon.Options, into: Figures[]) => async () => {
  const f = await closedLoop(name, opts);
  into.push(f);
  return Math.round(f.rps * seconds);
};
const statementLines: string[] = [];
const bareRounds: Figures[] = [];
const actionRounds: Figures[] = [];
const webhookRounds: Figures[] = [];
const BARE = "bare h3 handler (POST /bare)";
const ACTION = "action run (POST /api/actions/diagnostics.noop)";
const WEBHOOK = "webhook delivery, signed Standard Webhooks, max load";
await closedLoop("warm-up", { ...bareOpts, duration: 2 });
if (only === "workflows") {
  bareRounds.push(await closedLoop(BARE, bareOpts));
} else {
  await closedLoop("warm-up", { ...actionOpts, duration: 2 });
  await closedLoop("warm-up", { ...webhookOpts, duration: 2 });
  for (const [what, opts] of [["action run", actionOpts], ["webhook delivery", webhookOpts]] as const) {
    const counters = storeCounters();
    await counters.over(sequential(200, opts));
    statementLines.push(`statements per ${what} (one at a time):`.padEnd(52) + ` ${counters.perRequest()}`);
  }
  // the rounds: bare, actions, webhooks, one after the other (see the module comment)
  const actionCounters = storeCounters();
  const webhookCounters = storeCounters();
  // the service's CPU per request in each max-load round (the probe's window is the round and its
  // drains): a steadier figure than req/s on a machine whose cores the generator shares
  const cpuPerRequest: Record<"action" | "webhook", Array<Record<string, number>>> = { action: [], webhook: [] };
  for (let r = 0; r < rounds; r++) {
    settled.push(await settle());
    bareRounds.push(await closedLoop(BARE, bareOpts));
    cpuPerRequest.action.push(await actionCounters.over(round(ACTION, actionOpts, actionRounds)));
    settled.push(await settle());
    cpuPerRequest.webhook.push(await webhookCounters.over(round(WEBHOOK, webhookOpts, webhookRounds)));
  }
  const perRequest = (list: Array<Record<string, number>>, pick: (f: Record<string, number>) => number) => list.map((f) => ((pick(f) * 1000) / f.requests!).toFixed(0)).join(" / ");
  for (const [what, list] of [["action run", cpuPerRequest.action], ["webhook delivery", cpuPerRequest.webhook]] as const) {
    statementLines.push(`CPU per ${what} (max load), by round:`.padEnd(52) + ` main thread ${perRequest(list, (f) => f.cpuMainMs!)} µs; other threads ${perRequest(list, (f) => f.cpuMs! - f.cpuMainMs!)} µs`);
  }
  settled.push(await settle());
  statementLines.push(`before each round, the app settled (under 0.1 core) in:`.padEnd(52) + ` ${settled.map((ms) => (ms / 1000).toFixed(1)).join(" / ")} s`);
  action = medianOf(ACTION, actionRounds);
  webhook = medianOf(WEBHOOK, webhookRounds);
  statementLines.push(`statements per action run (max load):`.padEnd(52) + ` ${actionCounters.perRequest()}`);
  statementLines.push(`statements per webhook delivery (max load):`.padEnd(52) + ` ${webhookCounters.perRequest()}`);
  const paced = (rate: number) => () => openLoop(`bare h3 handler at ${rate}/s, paced (the generator's floor)`, `${bare.url}/bare`, rate, () => ({ body: "{}", headers: json }));
  const half = Math.max(1, Math.round(webhook.rps / 2));
  webhookHalf = await rewinds("webhook delivery at half load", () => openLoop(`webhook delivery at half that load (${half}/s, paced)`, webhookUrl, half, signedDelivery));
  await settle();
  webhookHalfFloor = await paced(half)();
  const actionHalfRate = Math.max(1, Math.round(action.rps / 2));
  actionHalf = await rewinds("action run at half load", () => openLoop(`action run at half its max load (${actionHalfRate}/s, paced)`, actionOpts.url!, actionHalfRate, () => ({ body: actionOpts.body as string, headers: actionOpts.headers as Record<string, string> })));
  await settle();
  actionHalfFloor = await paced(actionHalfRate)();
}
const baseline = medianOf(BARE, bareRounds);
await bare.stop();
/** A row's ratio to the yardstick: the median of its rounds' ratios (NaN when it was not measured). */
const ratio = (row: RoundFigures) => {
  const ratios = roundRatios(row, baseline);
  return ratios.length ? median(ratios) : NaN;
};
/** The ratio with each round's beside it. */
const ratioText = (row: RoundFigures) => {
  const ratios = roundRatios(row, baseline);
  return ratios.length > 1 ? `${ratio(row).toFixed(3)} (rounds ${ratios.map((r) => r.toFixed(3)).join(" / ")})` : ratio(row).toFixed(3);
};
/** A paced p99 with the generator's floor beside it. */
const pacedText = (row: Figures, floor: Figures) => `${row.p99} ms (the generator against the bare handler at the same rate: ${floor.p99} ms)`;
/** The max-load rows' req/s round by round. */
const roundLines = () =>
  rounds > 1
    ? ([["bare handler", bareRounds], ["action runs", actionRounds], ["webhook deliveries", webhookRounds]] as const).map(([name, list]) => `${`req/s by round, ${name}:`.padEnd(52)} ${list.map((f) => fmt(f.rps)).join(" / ") || "-"}`)
    : [];
/** Issue 15's rows of the write path (the summary's, test/bench/all.ts): the yardstick, action runs, webhook deliveries. */
function writeRows(): BenchRow[] {
  return [
    { case: "bare h3 handler (same run, the yardstick)", now: `${fmt(baseline.rps)} req/s${baseline.rounds.length > 1 ? ` (median of ${baseline.rounds.length} rounds: ${baseline.rounds.map((f) => fmt(f.rps)).join(" / ")})` : ""}`, goal: "-", met: null },
    // the row's two goals: the max-load ratio and the p99 at half load (paced); met when both hold
    { case: "action runs (diagnostics.noop)", now: `${fmt(action.rps)} req/s (ratio ${ratioText(action)}), p99 ${pacedText(actionHalf, actionHalfFloor)} at half load`, goal: "ratio >= 0.25, p99 < 10 ms at half load", met: bothMet(meets(ratio(action), 0.25, true), meets(actionHalf.p99, 10)) },
    { case: "signed webhook deliveries, max load", now: `${fmt(webhook.rps)} req/s (ratio ${ratioText(webhook)})`, goal: "ratio >= 0.20", met: meets(ratio(webhook), 0.2, true) },
    { case: "webhook p99 at half load (paced)", now: pacedText(webhookHalf, webhookHalfFloor), goal: "< 20 ms", met: meets(webhookHalf.p99, 20) },
  ];
}
/** Both goals of a row: false when either misses, null when either was not measured. */
const bothMet = (a: boolean | null, b: boolean | null): boolean | null => (a === false || b === false ? false : a === null || b === null ? null : true);
// BENCH_ONLY=writes: the yardstick and the write-path rows only (actions, webhooks, statements per request)
if (only === "writes") {
  await app.stop();
  console.log("| case | req/s | p50 ms | p99 ms | errors |\n|---|---:|---:|---:|---:|");
  for (const r of [baseline, action, actionHalf, actionHalfFloor, webhook, webhookHalf, webhookHalfFloor]) console.log(`| ${r.name} | ${r.rps.toFixed(1)} | ${r.p50} | ${r.p99} | ${r.errors} |`);
  console.log(`\naction runs / bare handler:        ${ratioText(action)}`);
  console.log(`webhook deliveries / bare handler: ${ratioText(webhook)} (target >= 0.2)`);
  console.log(`webhook p99 at half load:          ${pacedText(webhookHalf, webhookHalfFloor)} (target < 20 ms)`);
  console.log(`action p99 at half load:           ${pacedText(actionHalf, actionHalfFloor)} (target < 10 ms)`);
  console.log(roundLines().join("\n"));
  console.log(statementLines.join("\n") + "\n");
  reportRows("run", writeRows());
  process.exit(0);
}

const auth = { ...json, authorization: `Bearer ${SANDBOX_DEV_TOKEN}` };
const api = async (method: string, path: string, body?: unknown) => {
  const res = await request(`${app.url}${path}`, { method: method as "GET", headers: auth, body: body === undefined ? undefined : JSON.stringify(body) });
  return (await res.body.json()) as any;
};
/**
 * Reads the events of `type` after `cursor` (all of them when absent), page by page; answers them and the
 * cursor to read on from. The completion poll below reads on from its last cursor, so each poll costs
 * the service the events that are new, not the whole log again.
 */
const eventsOf = async (type: string, cursor?: string) => {
  const out: any[] = [];
  for (;;) {
    const page = await api("GET", `/api/events?type=${type}&limit=1000${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
    if (page.count === 0) return { events: out, cursor };
    out.push(...page.events);
    cursor = page.events.at(-1).cursor as string;
  }
};
/** The embedded Temporal dev server: the app process's child running `temporal server start-dev`. */
const temporalPid = app.child.pid === undefined ? undefined : childPids(app.child.pid, "start-dev")[0];
let finishedCursor = (await eventsOf("workflow.run.finished")).cursor;
let lastRun: string | undefined;
const cpuBefore = { app: cpuSeconds(app.child.pid), temporal: cpuSeconds(temporalPid) };
const statsBefore = await app.stats();
const startT0 = Date.now();
const starts = await closedLoop("workflow run start (POST → queued)", { url: `${app.url}/api/workflows/invoice-review/runs`, method: "POST", headers: auth, body: JSON.stringify({ input: { invoiceId: "inv_1001", waitMs: 0 } }) });
const started = Math.round(starts.rps * seconds);
let finished = 0;
const drainDeadline = Date.now() + 600_000;
while (Date.now() < drainDeadline) {
  const page = await eventsOf("workflow.run.finished", finishedCursor);
  finishedCursor = page.cursor;
  finished += page.events.length;
  lastRun = page.events.at(-1)?.payload.runId ?? lastRun;
  if (finished >= started) break;
  await new Promise((r) => setTimeout(r, 1000));
}
const completionSeconds = (Date.now() - startT0) / 1000;
const cpuPerRun = { app: ((cpuSeconds(app.child.pid) - cpuBefore.app) * 1000) / finished, temporal: ((cpuSeconds(temporalPid) - cpuBefore.temporal) * 1000) / finished };
// the store's counters per run over the same span (the completion poll's event reads included, on the reader)
const statsAfter = await app.stats();
const perRun = (k: string) => ((statsAfter[k]! - statsBefore[k]!) / finished).toFixed(1);
// one run's history: how many events and workflow tasks (server round trips) a run costs
const lastHistory = ((await api("GET", `/api/workflow-runs/${lastRun}/history`)).events ?? []) as Array<{ eventType: string }>;
const historyOf = (type: string) => lastHistory.filter((e) => e.eventType === type).length;
const completed: Figures = { name: `workflow runs completed (${finished} of ~${started} started)`, rps: finished / completionSeconds, p50: NaN, p99: NaN, errors: 0 };

const submitLatencies: number[] = [];
let cursor: string | undefined;
const samples = Number(process.env.BENCH_INTERVENTIONS ?? 30);
for (let i = 0; i < samples; i++) {
  const { runId } = await api("POST", "/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1004", waitMs: 0, approvalThreshold: 0 } });
  for (;;) {
    const state = await api("GET", `/api/workflow-runs/${runId}`);
    if (state.status === "waiting") break;
    await new Promise((r) => setTimeout(r, 20));
  }
  // move the cursor to the end of the stream, then watch for this run's next node
  for (;;) {
    const page = await api("GET", `/api/events?topic=workflows&limit=1000${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
    if (page.count === 0) break;
    cursor = page.events.at(-1).cursor;
  }
  const sentAt = Date.now();
  await api("POST", `/api/workflow-runs/${runId}/interventions/approve/submit`, { answer: { approved: false } });
  let found: any;
  while (!found) {
    const page = await api("GET", `/api/events?topic=workflows&limit=1000${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
    if (page.count > 0) cursor = page.events.at(-1).cursor;
    found = (page.events as any[]).find((e) => e.payload.runId === runId && e.type === "workflow.run.node.started" && String(e.payload.node).startsWith("record"));
    if (!found) await new Promise((r) => setTimeout(r, 10));
  }
  submitLatencies.push(Date.parse(found.occurredAt) - sentAt);
}
const sortedSubmit = submitLatencies.sort((a, b) => a - b);
const submit: Figures = { name: `intervention submit → next node started (${samples} runs, one at a time)`, rps: NaN, p50: percentile(sortedSubmit, 50), p99: percentile(sortedSubmit, 99), errors: 0 };
await app.stop();

console.log("| case | req/s | p50 ms | p99 ms | errors |\n|---|---:|---:|---:|---:|");
for (const r of [baseline, action, actionHalf, actionHalfFloor, webhook, webhookHalf, webhookHalfFloor, starts, completed, submit]) console.log(`| ${r.name} | ${Number.isNaN(r.rps) ? "" : r.rps.toFixed(1)} | ${Number.isNaN(r.p50) ? "" : r.p50} | ${Number.isNaN(r.p99) ? "" : r.p99} | ${r.errors} |`);
console.log(`\naction runs / bare handler:        ${ratioText(action)}`);
console.log(`webhook deliveries / bare handler: ${ratioText(webhook)} (target >= 0.2)`);
console.log(`webhook p99 at half load:          ${pacedText(webhookHalf, webhookHalfFloor)} (target < 20 ms)`);
console.log(`action p99 at half load:           ${pacedText(actionHalf, actionHalfFloor)} (target < 10 ms)`);
for (const line of roundLines()) console.log(line);
console.log(`workflow runs completed per second: ${completed.rps.toFixed(1)} (Temporal TS SDK stress floor: 35/s on a 4-core runner)`);
console.log(`CPU per workflow run (start + completion): service ${cpuPerRun.app.toFixed(0)} ms, Temporal dev server ${cpuPerRun.temporal.toFixed(0)} ms`);
console.log(`statements per workflow run (start + completion):    ${perRun("writerStatements")} writer + ${perRun("readerStatements")} reader statements, ${perRun("transactions")} transactions, ${perRun("commits")} commits`);
if (statementLines.length) console.log(statementLines.join("\n"));
console.log(`one run's history (invoice-review, no approval): ${lastHistory.length} events, ${historyOf("WORKFLOW_TASK_COMPLETED")} workflow tasks, ${historyOf("ACTIVITY_TASK_SCHEDULED")} activities, ${historyOf("MARKER_RECORDED")} markers\n`);

// the one summary (test/bench/all.ts): issue 15's rows this script measures
reportRows("run", [
  ...writeRows(),
  { case: "workflow runs completed", now: `${completed.rps.toFixed(1)}/s`, goal: ">= 35/s", met: meets(completed.rps, 35, true) },
  { case: "workflow run start, POST -> queued", now: `p50 ${starts.p50} ms`, goal: "p50 < 50 ms", met: meets(starts.p50, 50) },
  { case: "intervention submit -> next node started", now: `p50 ${submit.p50} ms, p99 ${submit.p99} ms`, goal: "p99 < 100 ms", met: meets(submit.p99, 100) },
]);
