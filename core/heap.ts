import v8 from "node:v8";

/**
 * Sets V8's old-generation growing factor for this process (issue 15: the service's RSS flat under a
 * steady load): after each full GC, the old generation may grow to (1 + `percent`/100) × what survived
 * it before the next full GC starts. V8's own factor is dynamic, up to 4× when its GC keeps pace; under
 * a steady stream of requests the events held in memory for a few seconds (the stream's tail) are
 * promoted and die in the old generation, so with V8's factor the old generation and RSS climbed for
 * minutes (226 → 303 MB over the bench's 10-minute soak). The default, 100 % (2×), holds it flat
 * (259 MB after the load, 254 MB after the soak; RSS idle 141 MB). 20 % held it lower (218 → 219 MB)
 * but made full GCs frequent: with a live heap of ~36 MB V8's limit sat at ~60 MB and, under
 * `--trace-incremental-marking`, it started marking by its task with 24 MB still free, again and again
 * in any allocation burst, so a 25 MiB tus upload cost ~3 full GCs (its PATCHes
 * ran at half the speed: 108 against 217 ms per upload) and the action runs' p99 at max load was
 * 17–18 ms against 11–13 ms (test/bench/run.ts, `BENCH_ONLY=writes`, 3 alternated runs each).
 *
 * The process's start calls it (`sandbox/main.ts`, and the bench's server, which stands in for it);
 * `createApp` does not, since a host embedding the service owns its own process's GC. The flag is read
 * at each full GC, so setting it after start takes effect from the next one.
 *
 * @param percent `SVC_HEAP_GROWING_PERCENT` (0..1000); 0 leaves V8's own factor
 * @param execArgv the node flags of this process: a `--heap-growing-percent` given there wins
 * @returns the percent this call set, or undefined when it set nothing (0, or given to node)
 */
export function applyHeapGrowingPercent(percent: number, execArgv: readonly string[] = process.execArgv): number | undefined {
  if (percent <= 0) return undefined;
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a))) return undefined;
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
  return percent;
}

/**
 * glibc malloc arenas the service's start allows (`MALLOC_ARENA_MAX`), set by `npm start` and
 * `npm run start:prod` unless the environment already sets it. The service allocates native memory
 * from many threads — node-sqlite3's queries on libuv's pool, the Temporal worker's Rust core — and
 * glibc gives threads arenas of their own (up to 8 per core), each holding its freed memory: under the
 * bench's soak (`test/bench/startup.ts`) RSS rose ~25 MB in the soak's first minute while the V8 heap
 * grew 6 MB (246–258 MB; with 2 arenas 216–224 MB, after the soak 1.9 % below after load). CPU per request
 * at half load is unchanged within the noise (0.87–1.10 ms either way). glibc reads it at exec, so a
 * process cannot set it for itself: see {@link mallocArenaAdvice}.
 */
export const MALLOC_ARENA_MAX = 2;

/**
 * The warning a start logs when glibc's arenas are left at their default: on Linux, with neither
 * `MALLOC_ARENA_MAX` nor a `glibc.malloc.arena_max` in `GLIBC_TUNABLES` set (both are read by glibc
 * only; elsewhere, or under musl, setting them is harmless). Undefined when there is nothing to say.
 * @param env the process's environment
 * @param platform `process.platform`
 */
export function mallocArenaAdvice(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string | undefined {
  if (platform !== "linux" || env.MALLOC_ARENA_MAX || /(^|:)glibc\.malloc\.arena_max=/.test(env.GLIBC_TUNABLES ?? "")) return undefined;
  return `MALLOC_ARENA_MAX is not set: glibc's per-thread malloc arenas let the service's RSS grow by tens of MB under load; start it with MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX} (npm start and npm run start:prod do)`;
}
