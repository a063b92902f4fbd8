import v8 from "node:v8";

/**
 * Sets V8's old-generation growing factor for this process (issue 15: the service's RSS flat under a
 * steady load): after each full GC, the old generation may grow to (1 + `percent`/100) × what survived
 * it before the next full GC starts. V8's own factor is dynamic, up to 4× when its GC keeps pace; under
 * a steady stream of requests the events held in memory for a few seconds (the stream's tail) are
 * promoted and die in the old generation, so with V8's factor the old generation and RSS climbed for
 * minutes (226 → 303 MB over the bench's 10-minute soak; 212 → 253 MB with 20 %, flat after the
 * first minute). 20 % means more frequent full GCs, mostly concurrent. Under steady requests that cost
 * nothing measurable (about a fifth more GC pauses, CPU per request within the noise); in bursts that
 * allocate much at once it shows: a replay of 20,000 events through `GET /api/events` cost the
 * server 4–8 ms of CPU per page of 500 against 2–3 ms with V8's own factor.
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
