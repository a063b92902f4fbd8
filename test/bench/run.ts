/**
 * `npm run bench`: throughput and latency of the service's hot paths next to a bare h3 handler
 * measured in the same run on the same machine, and the ratio. Each server runs in its own process
 * (test/bench/server.ts); the load generator runs here.
 *
 * 1. Action runs: `POST /api/actions/diagnostics.noop` — authenticate, validate, record the run (one
 *    transaction with `action.requested`), run the handler, commit completion (a second transaction with
 *    `action.completed`), drain the outbox to the stream.
 * 2. Webhook ingestion: signed Standard Webhooks deliveries to the sandbox's `standard-webhooks`
 *    connector, each with its own `webhook-id` — verify (HMAC), parse, admit durably (one transaction),
 *    trivial handler, complete (one transaction), respond 202.
 *
 * Max load: autocannon, closed loop, BENCH_CONCURRENCY connections (default 16) for BENCH_SECONDS
 * (default 10). Half load: an open-loop generator sending at evenly spaced instants at half the
 * measured webhook rate (autocannon's own rate limit sends each second's quota in a burst), reporting
 * p50/p99 of the responses. The generator shares the machine's two cores with the server.
 */
import crypto from "node:crypto";
import os from "node:os";
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import autocannon from "autocannon";
import { Agent, request } from "undici";
import { Webhook } from "standardwebhooks";
import { SANDBOX_DEV_TOKEN, SANDBOX_WEBHOOK_SECRETS } from "../../sandbox/project";
import { tempDir } from "../helpers-fs";
import { freePort } from "../setup/global";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ROOT = path.resolve(import.meta.dirname, "../..");

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function start(kind: "bare" | "app"): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), SVC_DATA_DIR: tempDir("svc-bench-"), SVC_TEMPORAL_PORT: String(await freePort()), SVC_TEMPORAL_UI: "false", SVC_SCHEDULES: "false", LOG_LEVEL: "warn" };
  const child = spawn(process.execPath, [...(process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter(Boolean), "--import", "tsx", "test/bench/server.ts", kind], { cwd: ROOT, env, stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /READY (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return { url, child };
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

async function closedLoop(name: string, opts: autocannon.Options): Promise<Figures> {
  const r = await autocannon({ connections, duration: seconds, ...opts });
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/** Sends `make()` requests at evenly spaced instants, `rate` per second, for `seconds`; latency is measured from the intended send time. */
async function openLoop(name: string, url: string, rate: number, make: () => { body: string; headers: Record<string, string> }): Promise<Figures> {
  const dispatcher = new Agent({ connections: 64, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const started = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const { body, headers } = make();
    inflight.push(
      request(url, { method: "POST", body, headers, dispatcher })
        .then(async (res) => {
          await res.body.dump();
          if (res.statusCode >= 300) errors++;
          latencies.push(performance.now() - due);
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

console.log(`\nsvc bench: ${connections} connections, ${seconds} s per case, node ${process.version}, ${os.cpus().length} cores\n`);
const bare = await start("bare");
const baseline = await closedLoop("bare h3 handler (POST /bare)", { url: `${bare.url}/bare`, method: "POST", headers: json, body: "{}" });
await stop(bare.child);

const app = await start("app");
const actionOpts: autocannon.Options = { url: `${app.url}/api/actions/diagnostics.noop`, method: "POST", headers: { ...json, authorization: `Bearer ${SANDBOX_DEV_TOKEN}` }, body: JSON.stringify({ params: {} }) };
const webhookUrl = `${app.url}/api/webhooks/standard-webhooks/events`;
const webhookOpts: autocannon.Options = { url: webhookUrl, method: "POST", requests: [{ setupRequest: (req) => ({ ...req, ...signedDelivery() }) }] };
await closedLoop("warm-up", { ...actionOpts, duration: 2 });
await closedLoop("warm-up", { ...webhookOpts, duration: 2 });
const action = await closedLoop("action run (POST /api/actions/diagnostics.noop)", actionOpts);
const webhook = await closedLoop("webhook delivery, signed Standard Webhooks, max load", webhookOpts);
const half = Math.max(1, Math.round(webhook.rps / 2));
const webhookHalf = await openLoop(`webhook delivery at half that load (${half}/s, paced)`, webhookUrl, half, signedDelivery);
await stop(app.child);

console.log("| case | req/s | p50 ms | p99 ms | errors |\n|---|---:|---:|---:|---:|");
for (const r of [baseline, action, webhook, webhookHalf]) console.log(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} |`);
console.log(`\naction runs / bare handler:        ${(action.rps / baseline.rps).toFixed(3)}`);
console.log(`webhook deliveries / bare handler: ${(webhook.rps / baseline.rps).toFixed(3)} (target >= 0.2)`);
console.log(`webhook p99 at half load:          ${webhookHalf.p99} ms (target < 20 ms)\n`);
