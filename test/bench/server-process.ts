import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { tempDir } from "../helpers-fs";
import { freePort } from "../setup/global";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** The kinds of benchmark target test/bench/server.ts runs. */
export type BenchServerKind = "bare" | "bare-files" | "app";

/**
 * Starts a benchmark target (test/bench/server.ts) in its own process on free ports with a fresh data
 * dir (and, for `app`, its own embedded Temporal dev server). BENCH_NODE_FLAGS adds node flags
 * (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). `child.pid` is the target's Node process itself.
 */
export async function startBenchServer(kind: BenchServerKind, env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess; stop(): Promise<void>; stats(): Promise<Record<string, number>> }> {
  const port = await freePort();
  const fullEnv = { ...process.env, PORT: String(port), SVC_DATA_DIR: tempDir("svc-bench-"), SVC_TEMPORAL_PORT: String(await freePort()), SVC_TEMPORAL_UI: "false", SVC_SCHEDULES: "false", LOG_LEVEL: "warn", ...env };
  const flags = (process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...flags, "--import", "tsx", "test/bench/server.ts", kind], { cwd: ROOT, env: fullEnv, stdio: ["ignore", "pipe", "inherit"] });
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
