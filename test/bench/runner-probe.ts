/**
 * The handler runner in process, without HTTP (issue 15: "where the remaining time goes"): what one
 * handler run and one action run cost the main thread, and what an action run allocates. Runs inside
 * the compiled benchmark server (test/bench/server.ts `runner`), on the sandbox app with its real
 * SQLite file, so the figures are those of the production bundle; test/bench/runner.ts prints them.
 *
 * These figures move far less than the HTTP rows of run.ts on a shared two-core machine (the load
 * generator is not in the process, and only the main thread's own CPU time is counted), so they are
 * the place to see a change to the runner.
 */
import fs from "node:fs";
import { Session } from "node:inspector/promises";
import type { App } from "../../core/app";
import { ActionRunner } from "../../core/runtime/actions";
import { handlerContext, HandlerRunner, type HandlerRun } from "../../core/runtime/handler";

/** The runner's figures (µs of main-thread CPU; KiB allocated). */
export interface RunnerFigures {
  /** Where the main thread's CPU time was read: `/proc/thread-self/schedstat`, or the whole process's (`process.cpuUsage`) where there is no /proc. */
  clock: "main thread" | "process";
  /** The yardstick of the same run: calling a noop handler directly with a context of the same fields, µs. */
  directCallUs: number;
  /** `HandlerRunner.execute` of the same noop handler (context, buffer, validation), µs. */
  executeUs: number;
  /** `ActionRunner.run` of `diagnostics.noop`, 16 at a time (group commits form as under load), per run, µs. */
  actionRunUs: number;
  /** The same, all the process's threads (SQLite's work on libuv's pool included), per run, µs. */
  actionRunAllThreadsUs: number;
  /** Bytes allocated per action run, garbage included (V8's sampling heap profiler), KiB. */
  allocatedKiB: number;
  /** Which functions allocated those bytes: the twelve allocating most, KiB per action run each, named by the bundle file and the line the function starts at. */
  allocatingFunctions: Array<{ site: string; kib: number }>;
}

/** CPU time of the calling (main) thread, µs, or of the process where /proc is missing. */
function mainThreadCpu(): { us: number; clock: RunnerFigures["clock"] } {
  try {
    return { us: Number(fs.readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]) / 1000, clock: "main thread" };
  } catch {
    const u = process.cpuUsage();
    return { us: u.user + u.system, clock: "process" };
  }
}

/** Median over 5 rounds of `n` awaited calls of `f` (after n/5 warm-up calls): µs of the clock per call, and of all threads. */
async function perCall(n: number, f: () => Promise<unknown>): Promise<{ us: number; allUs: number; clock: RunnerFigures["clock"] }> {
  for (let i = 0; i < n / 5; i++) await f();
  const rounds: Array<{ us: number; allUs: number }> = [];
  let clock: RunnerFigures["clock"] = "main thread";
  for (let r = 0; r < 5; r++) {
    const t0 = mainThreadCpu();
    const all0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await f();
    const t1 = mainThreadCpu();
    const all = process.cpuUsage(all0);
    clock = t1.clock;
    rounds.push({ us: (t1.us - t0.us) / n, allUs: (all.user + all.system) / n });
  }
  rounds.sort((a, b) => a.us - b.us);
  return { ...rounds[2]!, clock };
}

/**
 * Measures the runner of `app` (see the module comment). Takes ~10 s on two cores.
 * @throws when the sandbox's `diagnostics.noop` action fails
 */
export async function measureRunner(app: App): Promise<RunnerFigures> {
  const handlers = app.container.resolve(HandlerRunner);
  const actions = app.container.resolve(ActionRunner);
  const spec: HandlerRun = { run: { kind: "action", id: "run_bench" }, logFields: { actionId: "diagnostics.noop" }, correlationId: "run_bench", key: "action:run_bench" };
  const signal = new AbortController().signal;
  const noop = (ctx: object) => void ctx;
  const fields = { actionId: "diagnostics.noop", runId: "run_bench", subject: undefined, params: {}, actor: undefined, signal };
  const direct = await perCall(50_000, async () => noop({ ...fields }));
  const execute = await perCall(50_000, () => handlers.execute(spec, (ctx) => noop(handlerContext(ctx, fields)), { signal, beforeStore: async () => undefined }));
  const actor = { type: "user" as const, id: "dev" };
  const sixteen = () => Promise.all(Array.from({ length: 16 }, () => actions.run({ actionId: "diagnostics.noop", params: {}, actor })));
  const runs = await perCall(500, sixteen);

  // allocation: V8's sampling heap profiler, keeping the samples of objects collected meanwhile
  const session = new Session();
  session.connect();
  let allocated = 0;
  const bySite = new Map<string, number>();
  const batches = 200;
  try {
    await session.post("HeapProfiler.enable");
    await session.post("HeapProfiler.startSampling", { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
    for (let i = 0; i < batches; i++) await sixteen();
    type Node = { selfSize: number; children: Node[]; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number } };
    const { profile } = (await session.post("HeapProfiler.stopSampling")) as unknown as { profile: { head: Node } };
    const walk = (n: Node): void => {
      allocated += n.selfSize;
      const { functionName, url, lineNumber } = n.callFrame;
      const site = `${functionName || "(anonymous)"} (${url ? `${url.split("/").slice(-2).join("/")}, function at line ${lineNumber + 1}, column ${n.callFrame.columnNumber + 1}` : "native"})`;
      bySite.set(site, (bySite.get(site) ?? 0) + n.selfSize);
      n.children.forEach(walk);
    };
    walk(profile.head);
  } finally {
    session.disconnect();
  }
  const perRunKiB = (bytes: number) => bytes / (batches * 16) / 1024;
  const allocatingFunctions = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([site, bytes]) => ({ site, kib: perRunKiB(bytes) }));
  return { clock: runs.clock, directCallUs: direct.us, executeUs: execute.us, actionRunUs: runs.us / 16, actionRunAllThreadsUs: runs.allUs / 16, allocatedKiB: perRunKiB(allocated), allocatingFunctions };
}
