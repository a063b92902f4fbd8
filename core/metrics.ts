/**
 * The service's metrics in Prometheus' text format (`GET /metrics`, plugins/metrics): prom-client's
 * registry with Node's process metrics (CPU, memory, heap, event-loop delay, GC; their standard names:
 * `process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`, …), and svc's own, all named `svc_…`:
 * the HTTP requests by route template (bounded: one series per route, method and status, never per
 * raw path), recorded by the route registry as each answer leaves; what plugins add with
 * {@link Metrics.gauge} and {@link Metrics.counter}: values read when Prometheus scrapes; and the
 * outcomes the runtime counts as they happen (action runs, webhook deliveries, events appended:
 * {@link Metrics.counter} without a read).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** prom-client's counter, as {@link Metrics.counter} answers it without a read (`inc(labels, by?)`). */
export type { Counter };

/** The HTTP request durations' buckets (seconds): 1 ms to 10 s. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Node's process metrics, collected once per process (they watch its event loop and GC), shared by its apps. */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * `name`, when it is one of svc's own (`svc_…`): the process registry's names are Node's, and svc's are
 * prefixed, so the two never clash at a scrape.
 * @throws Error otherwise
 */
function ownName(name: string): string {
  if (!name.startsWith("svc_")) throw new Error(`Metric ${name}: svc's metrics are named svc_…`);
  return name;
}

/** A labelled value a scrape reads: each sample's labels and value. */
export type MetricSamples = Array<{ labels?: Record<string, string>; value: number }>;

/** The `route` label of a request no route matched (an unknown path, a malformed one). */
export const UNMATCHED_ROUTE = "(unmatched)";

/**
 * The registry of one app (an app's metrics are its own: tests run several apps in one process; the
 * process metrics are the process's, collected once and answered with each app's).
 * `svc_http_requests_total{method,route,status}` and `svc_http_request_duration_seconds{method,route}`
 * are recorded by {@link Metrics.observeRequest}; a read of a gauge or counter that fails is counted in
 * `svc_metrics_read_failures_total{metric}` (shown from the next scrape: the scrape that failed had
 * read that counter already); in that scrape a gauge answers no labelled samples (NaN for one without
 * labels), a counter its last totals, and the other metrics answer as always.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<"method" | "route" | "status">;
  private readonly durations: Histogram<"method" | "route">;
  private readonly readFailures: Counter<"metric">;
  private readonly sockets: Gauge<"path">;
  constructor() {
    // from the start, not the first scrape: the GC and event-loop series cover the whole process
    processMetrics();
    this.requests = new Counter({ name: "svc_http_requests_total", help: "HTTP requests answered, by method, route template (or (unmatched)) and status", labelNames: ["method", "route", "status"], registers: [this.registry] });
    this.durations = new Histogram({ name: "svc_http_request_duration_seconds", help: "Time from a routed request's dispatch until its response's headers are ready, by method and route template (seconds; a streamed body's transfer is not in it)", labelNames: ["method", "route"], buckets: DURATION_BUCKETS, registers: [this.registry] });
    this.sockets = new Gauge({ name: "svc_websocket_connections", help: "WebSocket connections open, by endpoint (/ws/events, /ws/logs, /ws/agents)", labelNames: ["path"], registers: [this.registry] });
    this.readFailures = new Counter({ name: "svc_metrics_read_failures_total", help: "Scrapes in which a metric's read failed (it answered no samples then)", labelNames: ["metric"], registers: [this.registry] });
  }

  /**
   * Records one answered request.
   * @param route the route's template (`/api/actions/:actionId`), never the raw path; {@link UNMATCHED_ROUTE} when none matched
   * @param seconds from dispatch until the response's headers are ready; omitted for answers given
   *   before any route ran (an unknown path, a 405, a WebSocket path asked without an upgrade): counted only
   */
  observeRequest(method: string, route: string, status: number, seconds?: number): void {
    // prom-client hashes the labels on each call, with or without a child from `labels()`: no cache pays here
    if (seconds !== undefined) this.durations.observe({ method, route }, seconds);
    this.requests.inc({ method, route, status });
  }

  /** Counts a WebSocket connection opened (`delta` 1) or closed (-1) on the endpoint `path`. */
  openSockets(path: string, delta: 1 | -1): void {
    this.sockets.inc({ path }, delta);
  }

  /**
   * A gauge whose samples `read` answers at each scrape (a backlog, a lag, a part's health).
   * @param name `svc_…`, Prometheus' naming (base units: seconds, bytes)
   * @throws Error when the name does not start with `svc_`, or is taken in this registry
   */
  gauge(name: string, help: string, labelNames: string[], read: () => MetricSamples | Promise<MetricSamples>): void {
    this.readAtScrape<Gauge>(Gauge, name, help, labelNames, read, (gauge, got) => {
      // read first, then reset and set in one synchronous step: overlapping scrapes each set the whole value
      gauge.reset();
      // a failed read: no labelled samples, and NaN (unknown) for a gauge without labels, never a made-up 0
      if (!got) return labelNames.length === 0 ? void gauge.set(NaN) : undefined;
      for (const s of got) (s.labels ? gauge.set(s.labels, s.value) : gauge.set(s.value));
    });
  }

  /**
   * A counter, in one of two kinds:
   * - with `read`: its totals are kept elsewhere (the store's statistics) and `read` answers them at
   *   each scrape, each sample the total since the process started; answers nothing;
   * - without: the caller counts what happens as it happens (`.inc({ …labels })`, ~0.3 µs: prom-client
   *   hashes the labels) and this answers the counter. Its labels' values must come from a bounded set
   *   (the project's actions, webhooks, event types), never from a request's raw input.
   * @param name `svc_…_total`
   * @throws Error when the name does not start with `svc_`, or is taken in this registry
   */
  counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L>;
  counter(name: string, help: string, labelNames: string[], read: () => MetricSamples | Promise<MetricSamples>): void;
  counter(name: string, help: string, labelNames: string[], read?: () => MetricSamples | Promise<MetricSamples>): Counter | void {
    if (!read) return new Counter({ name: ownName(name), help, labelNames, registers: [this.registry] });
    this.readAtScrape<Counter>(Counter, name, help, labelNames, read, (counter, got) => {
      // a failed read keeps the totals of the last one: a counter never goes down
      if (!got) return;
      counter.reset();
      for (const s of got) (s.labels ? counter.inc(s.labels, s.value) : counter.inc(s.value));
    });
  }

  /**
   * A metric of `Kind` registered here whose samples `read` answers at each scrape and `write` puts in
   * it; a read that fails is counted (`svc_metrics_read_failures_total`) and given to `write` as
   * undefined, so the scrape goes on.
   */
  private readAtScrape<M extends Gauge | Counter>(Kind: new (config: { name: string; help: string; labelNames: string[]; registers: Registry[]; collect: (this: M) => Promise<void> }) => M, name: string, help: string, labelNames: string[], read: () => MetricSamples | Promise<MetricSamples>, write: (metric: M, got: MetricSamples | undefined) => void): void {
    const failures = this.readFailures;
    new Kind({
      name: ownName(name),
      help,
      labelNames,
      registers: [this.registry],
      async collect(this: M) {
        let got: MetricSamples | undefined;
        try {
          got = await read();
        } catch {
          failures.inc({ metric: name });
        }
        write(this, got);
      },
    });
  }

  /** The exposition (text format 0.0.4) of the process's metrics and this app's, and its content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    const both = Registry.merge([processMetrics(), this.registry]);
    return { body: await both.metrics(), contentType: both.contentType };
  }
}
