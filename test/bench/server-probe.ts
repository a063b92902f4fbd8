/**
 * Where a benchmark target's latency goes, measured inside its process (test/bench/server.ts `app`), so
 * a tail seen by the load generator (which shares the machine's two cores) can be told apart from one
 * in the service, and a tail in the service from the causes it could have (issue 15: "where the
 * remaining time goes"):
 *
 * - server-side latency of every HTTP request, from Node's `http.server.request.start` to
 *   `http.server.response.finish` diagnostics channels (ms; p50, p99, p99.9, max);
 * - event-loop delay (`monitorEventLoopDelay`, 1 ms resolution; ms; max and p99);
 * - GC pauses (`PerformanceObserver` `gc` entries; ms; count, total, longest), and of them the full
 *   (mark-compact) ones apart (count, longest): a tail can come from a few long full GCs or from many
 *   scavenges, and the two call for different remedies;
 * - CPU time of all the process's threads and the time they spent runnable but waiting for a core
 *   (`/proc/self/task/<tid>/schedstat`, Linux; ms), in all and for the main thread alone.
 *
 * {@link ServerProbe.take} answers the figures since the previous call and starts a new interval.
 */
import diagnostics from "node:diagnostics_channel";
import fs from "node:fs";
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";

/** The figures of one interval (see the module comment; times in ms). */
export interface ProbeFigures {
  requests: number;
  serverP50: number;
  serverP99: number;
  serverP999: number;
  serverMax: number;
  loopDelayMax: number;
  loopDelayP99: number;
  gcPauses: number;
  gcMs: number;
  gcMaxMs: number;
  /** Of {@link ProbeFigures.gcPauses}, the full (mark-compact) ones. */
  gcFullPauses: number;
  /** The longest full GC pause, ms (0 when there was none). */
  gcFullMaxMs: number;
  cpuMs: number;
  /** CPU time of the main thread (JavaScript, the HTTP stack, GC's main-thread part), ms; the rest of `cpuMs` is the other threads (SQLite's work on libuv's pool, GC helpers, the Temporal worker). */
  cpuMainMs: number;
  runQueueMs: number;
  runQueueMainMs: number;
}

/** CPU time and run-queue wait of this process's threads so far, and the main thread's (ms; zeros where /proc is missing). */
function schedstat(): { cpu: number; wait: number; mainCpu: number; mainWait: number } {
  let cpu = 0;
  let wait = 0;
  let mainCpu = 0;
  let mainWait = 0;
  let tasks: string[] = [];
  try {
    tasks = fs.readdirSync("/proc/self/task");
  } catch {
    return { cpu, wait, mainCpu, mainWait };
  }
  for (const tid of tasks) {
    try {
      // "<ns on a cpu> <ns waiting on a run queue> <timeslices>"
      const [run, delay] = fs.readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8").split(" ").map(Number);
      cpu += run! / 1e6;
      wait += delay! / 1e6;
      if (tid === String(process.pid)) [mainCpu, mainWait] = [run! / 1e6, delay! / 1e6];
    } catch {
      // the thread ended meanwhile
    }
  }
  return { cpu, wait, mainCpu, mainWait };
}

/** GC counters of an interval before its first pause (ms; `full` counts the mark-compacts). */
const noGc = () => ({ pauses: 0, ms: 0, max: 0, full: 0, fullMax: 0 });

/** Starts measuring at once (see the module comment). */
export class ServerProbe {
  private latencies: number[] = [];
  private readonly loop = monitorEventLoopDelay({ resolution: 1 });
  private gc = noGc();
  private sched = schedstat();
  private readonly started = new WeakMap<object, number>();

  constructor() {
    this.loop.enable();
    diagnostics.subscribe("http.server.request.start", (message) => this.started.set((message as { response: object }).response, performance.now()));
    diagnostics.subscribe("http.server.response.finish", (message) => {
      const t0 = this.started.get((message as { response: object }).response);
      if (t0 !== undefined) this.latencies.push(performance.now() - t0);
    });
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        this.gc.pauses++;
        this.gc.ms += entry.duration;
        this.gc.max = Math.max(this.gc.max, entry.duration);
        if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
          this.gc.full++;
          this.gc.fullMax = Math.max(this.gc.fullMax, entry.duration);
        }
      }
    }).observe({ entryTypes: ["gc"] });
  }

  /** The figures since the previous call (or the start); starts the next interval. */
  take(): ProbeFigures {
    const sorted = this.latencies.sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
    const sched = schedstat();
    const figures: ProbeFigures = {
      requests: sorted.length,
      serverP50: at(0.5),
      serverP99: at(0.99),
      serverP999: at(0.999),
      serverMax: sorted.at(-1) ?? NaN,
      loopDelayMax: this.loop.max / 1e6,
      loopDelayP99: this.loop.percentile(99) / 1e6,
      gcPauses: this.gc.pauses,
      gcMs: this.gc.ms,
      gcMaxMs: this.gc.max,
      gcFullPauses: this.gc.full,
      gcFullMaxMs: this.gc.fullMax,
      cpuMs: sched.cpu - this.sched.cpu,
      cpuMainMs: sched.mainCpu - this.sched.mainCpu,
      runQueueMs: sched.wait - this.sched.wait,
      runQueueMainMs: sched.mainWait - this.sched.mainWait,
    };
    this.latencies = [];
    this.loop.reset();
    this.gc = noGc();
    this.sched = sched;
    return figures;
  }
}
