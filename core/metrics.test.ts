/**
 * The metrics registry (./metrics.ts) scraped as Prometheus would: reads at scrape time that fail or
 * overlap, the HTTP series' labels, names outside svc's prefix.
 */
import { expect, it } from "vitest";
import { Metrics } from "./metrics";

/** The samples of a text exposition: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  return new Map(text.split("\n").filter((l) => l && !l.startsWith("#")).map((l) => [l.slice(0, l.lastIndexOf(" ")), Number(l.slice(l.lastIndexOf(" ") + 1))]));
}

it("answers every other metric when one read fails, and counts the failure", async () => {
  const metrics = new Metrics();
  metrics.gauge("svc_test_broken", "fails", [], () => Promise.reject(new Error("the store is away")));
  metrics.gauge("svc_test_backlog", "works", ["schedule"], () => [{ labels: { schedule: "a" }, value: 3 }]);
  const got = samples((await metrics.scrape()).body);
  expect(got.get('svc_test_backlog{schedule="a"}')).toBe(3);
  // the failure is counted as it happens, so it shows from the next scrape on
  expect(samples((await metrics.scrape()).body).get('svc_metrics_read_failures_total{metric="svc_test_broken"}')).toBeGreaterThanOrEqual(1);
  expect(got.get("svc_test_broken")).toBeNaN(); // unknown, not 0
  expect(got.get("process_cpu_user_seconds_total")).toBeGreaterThan(0);
});

it("keeps a counter's last totals when its read fails: a counter never goes down", async () => {
  const metrics = new Metrics();
  let fail = false;
  metrics.counter("svc_test_commits_total", "totals", [], () => (fail ? Promise.reject(new Error("away")) : [{ value: 9 }]));
  expect(samples((await metrics.scrape()).body).get("svc_test_commits_total")).toBe(9);
  fail = true;
  expect(samples((await metrics.scrape()).body).get("svc_test_commits_total")).toBe(9);
});

it("reports a counter's total once however many scrapes overlap, and a gauge's labels as the last read gave them", async () => {
  const metrics = new Metrics();
  let total = 5;
  let schedules = ["a", "b"];
  metrics.counter("svc_test_calls_total", "a total kept elsewhere", [], async () => [{ value: total }]);
  metrics.gauge("svc_test_lag", "per schedule", ["schedule"], async () => schedules.map((schedule) => ({ labels: { schedule }, value: 1 })));
  const [one, two] = await Promise.all([metrics.scrape(), metrics.scrape()]);
  expect([samples(one.body).get("svc_test_calls_total"), samples(two.body).get("svc_test_calls_total")]).toEqual([5, 5]);
  total = 7;
  schedules = ["b"];
  const later = samples((await metrics.scrape()).body);
  expect(later.get("svc_test_calls_total")).toBe(7);
  expect([later.has('svc_test_lag{schedule="a"}'), later.get('svc_test_lag{schedule="b"}')]).toEqual([false, 1]);
});

it("records requests by route template, method and status, timing only the routed ones", async () => {
  const metrics = new Metrics();
  metrics.observeRequest("POST", "/api/actions/:actionId", 200, 0.004);
  metrics.observeRequest("POST", "/api/actions/:actionId", 200, 0.02);
  metrics.observeRequest("POST", "/api/actions/:actionId", 404, 0.001);
  metrics.observeRequest("GET", "(unmatched)", 404);
  const got = samples((await metrics.scrape()).body);
  expect(got.get('svc_http_requests_total{method="POST",route="/api/actions/:actionId",status="200"}')).toBe(2);
  expect(got.get('svc_http_requests_total{method="POST",route="/api/actions/:actionId",status="404"}')).toBe(1);
  expect(got.get('svc_http_requests_total{method="GET",route="(unmatched)",status="404"}')).toBe(1);
  expect(got.get('svc_http_request_duration_seconds_count{method="POST",route="/api/actions/:actionId"}')).toBe(3);
  expect(got.get('svc_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/api/actions/:actionId"}')).toBe(2);
  expect(got.has('svc_http_request_duration_seconds_count{method="GET",route="(unmatched)"}')).toBe(false);
});

it("refuses a metric named outside svc_, which could clash with Node's at a scrape", () => {
  expect(() => new Metrics().gauge("nodejs_heap_size_used_bytes", "clash", [], () => [])).toThrow("Metric nodejs_heap_size_used_bytes: svc's metrics are named svc_…");
});
