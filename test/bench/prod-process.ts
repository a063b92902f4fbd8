/**
 * The start-up bench's process handling: start the sandbox (compiled or under tsx) on free ports with a
 * fresh or given data dir, time spawn → first answer of `/api/status`, read its RSS from /proc, stop it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { MALLOC_ARENA_MAX } from "../../core/heap";
import { SANDBOX_DEV_TOKEN } from "../../sandbox/project";
import { benchDir, childPids } from "../helpers-fs";
import { freePort } from "../setup/global";

export const ROOT = path.resolve(import.meta.dirname, "../..");

/** How the sandbox is started: `node <outdir>/sandbox/main.js`, or `node --import tsx sandbox/main.ts`. */
export type StartKind = { compiled: string } | "tsx";

/** A started sandbox: its URL, the Node process, the ms from spawn to the first 200 of `/api/status`, its output. */
export interface StartedSandbox {
  url: string;
  child: ChildProcess;
  dataDir: string;
  readyMs: number;
  /** stdout and stderr so far (JSON log lines: the process is not on a terminal). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts the sandbox and polls `GET /api/status` every 20 ms until it answers 200. BENCH_NODE_FLAGS
 * adds node flags (as for `startBenchServer`). `MALLOC_ARENA_MAX` is 2 unless this environment sets
 * it, as the package's start scripts do.
 * @param opts.dataDir the data dir (default: a fresh one)
 * @param opts.env more environment (e.g. `SVC_CACHE_DIR`)
 * @param opts.timeoutMs how long to wait for ready (default 120 s)
 * @throws Error when the process exits first or is not ready in time (it is killed then)
 */
export async function startSandbox(kind: StartKind, opts: { dataDir?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<StartedSandbox> {
  const port = await freePort();
  const dataDir = opts.dataDir ?? benchDir("svc-bench-start-");
  // glibc's arenas as `npm start` and `npm run start:prod` set them (unless this environment does)
  const env: NodeJS.ProcessEnv = { MALLOC_ARENA_MAX: String(MALLOC_ARENA_MAX), ...process.env, PORT: String(port), SVC_DATA_DIR: dataDir, SVC_TEMPORAL_PORT: String(await freePort()), SVC_TEMPORAL_UI: "false", LOG_LEVEL: "debug", ...opts.env };
  delete env.SVC_WORKFLOW_BUNDLE;
  delete env.TEMPORAL_ADDRESS;
  const flags = (process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  const args = [...flags, ...(kind === "tsx" ? ["--import", "tsx", "sandbox/main.ts"] : [path.join(kind.compiled, "sandbox/main.js")])];
  const spawned = performance.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  let exited: number | null | undefined;
  child.once("exit", (code) => (exited = code));
  const deadline = spawned + (opts.timeoutMs ?? 120_000);
  const stop = async () => {
    if (exited !== undefined) return;
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await gone;
  };
  for (;;) {
    if (exited !== undefined) throw new Error(`the sandbox exited with ${exited} before it was ready:\n${out.slice(-3000)}`);
    if (performance.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the sandbox was not ready in ${opts.timeoutMs ?? 120_000} ms:\n${out.slice(-3000)}`);
    }
    const ok = await fetch(`${url}/api/status`, { headers: { authorization: `Bearer ${SANDBOX_DEV_TOKEN}` } }).then(
      async (res) => (await res.arrayBuffer(), res.status === 200),
      () => false,
    );
    if (ok) return { url, child, dataDir, readyMs: performance.now() - spawned, output: () => out, stop };
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resident memory of one process in MB (VmRSS of /proc/<pid>/status: that process only, not its children). */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * Resident memory of the children of `pid` whose command line contains `match`, in MB (0 when none),
 * e.g. the deck-check process (`deck-check-child`), which the service forks and stops when idle.
 */
export function childRssMb(pid: number, match: string): number {
  let total = 0;
  for (const child of childPids(pid, match)) {
    try {
      total += rssMb(child);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** The start-up phases the app logged at debug level ("start-up phases (ms)"), and the Temporal split. */
export function phasesOf(output: string): Record<string, number> {
  let phases: Record<string, number> = {};
  let temporal: Record<string, number> = {};
  for (const line of output.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const entry = JSON.parse(line);
      if (entry.msg === "start-up phases (ms)") phases = entry.phases;
      if (entry.msg === "temporal start-up (ms)") temporal = { "  of which the Temporal CLI lookup (or fetch)": entry.cliMs, "  of which the dev server start": entry.devServerMs };
    } catch {
      // a pretty or partial line
    }
  }
  const ordered: Record<string, number> = {};
  for (const [name, ms] of Object.entries(phases)) {
    ordered[name] = ms;
    if (name.startsWith("temporal")) Object.assign(ordered, temporal);
  }
  return ordered;
}

