import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { MALLOC_ARENA_MAX } from "../../core/heap";
import { buildSandbox } from "../../sandbox/build";
import { benchDir, removedAtExit } from "../helpers-fs";
import { freePort } from "../setup/global";
import type { RunnerFigures } from "./runner-probe";

const ROOT = path.resolve(import.meta.dirname, "../..");

/**
 * What the benchmark targets run (`BENCH_APP`): `compiled` (the default) is the code of the production
 * start (`npm run build`, plain `node`): test/bench/server.ts bundled with the service by
 * sandbox/build.ts into a directory of its own under `.bench/` (`server-XXXXXX`, so bench processes
 * running at once do not build over each other's servers), once per bench process, removed when the
 * process exits; `tsx` runs the sources under tsx, as `npm start` and the tests do (tsx turns on source
 * maps, so every `Error.stack` costs more: the Temporal workflow thread builds one per promise).
 */
export const BENCH_APP = process.env.BENCH_APP === "tsx" ? "tsx" : "compiled";
let compiledServer: Promise<string> | undefined;
/** The compiled benchmark server's entry, built on first use. */
function compiledServerEntry(): Promise<string> {
  compiledServer ??= (async () => {
    // under the repository (node_modules must be reachable from it)
    fs.mkdirSync(path.join(ROOT, ".bench"), { recursive: true });
    const outdir = removedAtExit(fs.mkdtempSync(path.join(ROOT, ".bench", "server-")));
    process.stdout.write(`building the compiled benchmark server into ${path.relative(ROOT, outdir)} (BENCH_APP=tsx runs the sources)\n`);
    await buildSandbox(outdir, undefined, [{ in: "test/bench/server.ts", out: "sandbox/bench-server" }]);
    return path.join(outdir, "sandbox", "bench-server.js");
  })();
  return compiledServer;
}

/** The kinds of benchmark target test/bench/server.ts runs. */
export type BenchServerKind = "bare" | "bare-files" | "app";

/**
 * Spawns test/bench/server.ts as `kind` (compiled or under tsx: {@link BENCH_APP}, with
 * BENCH_NODE_FLAGS) on free ports with a fresh data dir and its own Temporal dev server port; the app
 * kinds get `MALLOC_ARENA_MAX` 2 unless this environment sets it, as the package's start scripts do
 * (the bare yardsticks keep glibc's default). `env` wins over all of it. stdout is piped, stderr inherited.
 */
async function spawnTarget(kind: BenchServerKind | "runner", env: Record<string, string> = {}): Promise<ChildProcess> {
  const fullEnv = { ...(kind === "app" || kind === "runner" ? { MALLOC_ARENA_MAX: String(MALLOC_ARENA_MAX) } : {}), ...process.env, PORT: String(await freePort()), SVC_DATA_DIR: benchDir("svc-bench-"), SVC_TEMPORAL_PORT: String(await freePort()), SVC_TEMPORAL_UI: "false", SVC_SCHEDULES: "false", LOG_LEVEL: "warn", ...env };
  const flags = (process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  const entry = BENCH_APP === "compiled" ? [await compiledServerEntry()] : ["--import", "tsx", "test/bench/server.ts"];
  return spawn(process.execPath, [...flags, ...entry, kind], { cwd: ROOT, env: fullEnv, stdio: ["ignore", "pipe", "inherit"] });
}

/**
 * Runs test/bench/server.ts `runner` in its own process (see `spawnTarget`) and answers the JSON line
 * it prints (`RUNNER {…}`, ./runner-probe.ts `RunnerFigures`).
 * @throws when the process exits without that line (its stderr is inherited)
 */
export async function runRunnerProbe(): Promise<RunnerFigures> {
  const child = await spawnTarget("runner");
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const m = /RUNNER (\{.*\})\n/.exec(out);
  if (!m) throw new Error(`the runner probe exited with ${code} without its figures`);
  return JSON.parse(m[1]!) as RunnerFigures;
}

/**
 * Starts a benchmark target (test/bench/server.ts, compiled or under tsx: {@link BENCH_APP}) in its own
 * process on free ports with a fresh data dir (and, for `app`, its own embedded Temporal dev server).
 * BENCH_NODE_FLAGS adds node flags (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). `child.pid` is the
 * target's Node process itself. The app runs with `MALLOC_ARENA_MAX` 2 unless this environment sets
 * it, as the package's start scripts do.
 */
export async function startBenchServer(kind: BenchServerKind, env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess; stop(): Promise<void>; stats(): Promise<Record<string, number>> }> {
  const child = await spawnTarget(kind, env);
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /READY (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  const stop = async () => {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  };
  /** `app` only: the store's counters (core/store/db.ts `DatabaseStats`), asked for with SIGUSR2. */
  const stats = () =>
    new Promise<Record<string, number>>((resolve) => {
      let out = "";
      const onData = (d: Buffer) => {
        out += d;
        const m = /STATS (\{.*\})\n/.exec(out);
        if (!m) return;
        child.stdout!.off("data", onData);
        resolve(JSON.parse(m[1]!));
      };
      child.stdout!.on("data", onData);
      child.kill("SIGUSR2");
    });
  return { url, child, stop, stats };
}
