/**
 * The service's metrics in Prometheus' text format (`GET /metrics`, plugins/metrics): prom-client's
 * registry with Node's process metrics (CPU, memory, heap, event-loop delay, GC; their standard names:
 * `process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`, …), and svc's own, all named `svc_…`:
 * the HTTP requests by route template (bounded: one series per route, method and status, never per
 * raw path), recorded by the route registry as each answer leaves, and what plugins add with
 * {@link Metrics.gauge} and {@link Metrics.counter}: values read when Prometheus scrapes, so nothing on
 * the request path but the HTTP series.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

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

/** A labelled value a scrape reads: each sample's labels and value. */
export type MetricSamples = Array<{ labels?: Record<string, string>; value: number }>;

/**
 * The registry of one app (an app's metrics are its own: tests run several apps in one process; the
 * process metrics are the process's, collected once and answered with each app's).
 * `svc_http_requests_total{method,route,status}` and `svc_http_request_duration_seconds{method,route}`
 * are recorded by {@link Metrics.observeRequest}.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<"method" | "route" | "status">;
  private readonly durations: Histogram<"method" | "route">;
  /** Children by `method route` and `method route status`: the labels are resolved once per series. */
  private readonly durationOf = new Map<string, Histogram.Internal<"method" | "route">>();
  private readonly countOf = new Map<string, Counter.Internal>();

  constructor() {
    // from the start, not the first scrape: the GC and event-loop series cover the whole process
    processMetrics();
    this.requests = new Counter({ name: "svc_http_requests_total", help: "HTTP requests answered, by method, route template and status", labelNames: ["method", "route", "status"], registers: [this.registry] });
    this.durations = new Histogram({ name: "svc_http_request_duration_seconds", help: "Time from a request's dispatch to its answer, by method and route template (seconds)", labelNames: ["method", "route"], buckets: DURATION_BUCKETS, registers: [this.registry] });
  }

  /**
   * Records one answered request.
   * @param route the route's template (`/api/actions/:actionId`), never the raw path
   * @param seconds from dispatch to the answer
   */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const series = `${method} ${route}`;
    let duration = this.durationOf.get(series);
    if (!duration) this.durationOf.set(series, (duration = this.durations.labels(method, route)));
    duration.observe(seconds);
    const counted = `${series} ${status}`;
    let count = this.countOf.get(counted);
    if (!count) this.countOf.set(counted, (count = this.requests.labels(method, route, String(status))));
    count.inc();
  }

  /**
   * A gauge whose samples `read` answers at each scrape (a backlog, a lag, a part's health).
   * @param name `svc_…`, Prometheus' naming (base units: seconds, bytes)
   * @throws Error when the name is taken in this registry
   */
  gauge(name: string, help: string, labelNames: string[], read: () => MetricSamples | Promise<MetricSamples>): void {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const s of await read()) (s.labels ? this.set(s.labels, s.value) : this.set(s.value));
      },
    });
  }

  /**
   * A counter whose totals `read` answers at each scrape (totals kept elsewhere, e.g. the store's
   * statistics): each sample is the total since the process started.
   * @param name `svc_…_total`
   * @throws Error when the name is taken in this registry
   */
  counter(name: string, help: string, labelNames: string[], read: () => MetricSamples | Promise<MetricSamples>): void {
    new Counter({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const s of await read()) (s.labels ? this.inc(s.labels, s.value) : this.inc(s.value));
      },
    });
  }

  /** The exposition (text format 0.0.4) of the process's metrics and this app's, and its content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    const both = Registry.merge([processMetrics(), this.registry]);
    return { body: await both.metrics(), contentType: both.contentType };
  }
}
