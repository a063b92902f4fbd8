/**
 * `npm run bench`: action runs per second and p50/p99 latency at a fixed concurrency, next to a bare h3
 * handler measured in the same run on the same machine, and the ratio.
 *
 * The action is `diagnostics.noop`: each request authenticates, validates, records the run (one
 * transaction with `action.requested`), runs the handler, commits completion (a second transaction with
 * `action.completed`) and drains the outbox to the stream. Temporal is the embedded dev server.
 *
 * Env: BENCH_SECONDS (default 10), BENCH_CONCURRENCY (default 16).
 */
import autocannon from "autocannon";
import { H3, serve } from "h3";
import pino from "pino";
import { createApp } from "../../core/app";
import { builtinPlugins } from "../../plugins";
import { sandboxProject, SANDBOX_DEV_TOKEN } from "../../sandbox/project";
import { tempDir } from "../helpers-fs";
import { freePort } from "../setup/global";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONCURRENCY ?? 16);

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(name: string, url: string, opts: Partial<autocannon.Options> = {}): Promise<Figures> {
  const result = await autocannon({ url, connections, duration: seconds, method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${SANDBOX_DEV_TOKEN}` }, body: JSON.stringify({ params: {} }), ...opts });
  return { name, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

const bare = new H3().post("/bare", () => ({ ok: true }));
const bareServer = serve(bare, { port: await freePort(), hostname: "127.0.0.1", silent: true, gracefulShutdown: false });
await bareServer.ready();

const app = await createApp({
  project: sandboxProject,
  plugins: builtinPlugins,
  defaults: { devToken: SANDBOX_DEV_TOKEN },
  logger: pino({ level: "warn" }),
  env: { ...process.env, PORT: "0", SVC_DATA_DIR: tempDir("svc-bench-"), SVC_TEMPORAL_PORT: String(await freePort()), SVC_TEMPORAL_UI: "false" },
});

console.log(`\nsvc bench: ${connections} connections, ${seconds} s each, node ${process.version}\n`);
await load("warm-up", `${app.url}/api/actions/diagnostics.noop`, { duration: 2 });
const baseline = await load("bare h3 handler (POST /bare)", `${bareServer.url!.replace(/\/$/, "")}/bare`);
const action = await load("action run (POST /api/actions/diagnostics.noop)", `${app.url}/api/actions/diagnostics.noop`);
const rows = [baseline, action];
console.log("| case | req/s | p50 ms | p99 ms | errors |\n|---|---:|---:|---:|---:|");
for (const r of rows) console.log(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} |`);
console.log(`\naction runs / bare handler: ${(action.rps / baseline.rps).toFixed(3)} (${(baseline.rps / action.rps).toFixed(1)}x slower)\n`);

await app.close();
await bareServer.close(true);
