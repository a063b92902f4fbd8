/**
 * `GET /metrics` over real HTTP: Prometheus' text format, read line by line (one sample per line): the
 * HTTP series by route template, the store's counters, the health parts, Node's process metrics; a
 * token is needed, as for /api/status.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import NodeWebSocket from "crossws/websocket";
import { Webhook } from "standardwebhooks";
import { DEV_TOKEN, client, eventually, startApp } from "./helpers";
import type { App } from "../core/app";
import { Database } from "../core/store/db";
import { SANDBOX_WEBHOOK_SECRETS } from "../sandbox/project";
import { Metrics } from "../core/metrics";
import { TokenService } from "../core/auth/tokens";

let app: App;
beforeAll(async () => {
  app = await startApp();
});
afterAll(() => app?.close());

/** The samples of a text exposition: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function scrape(): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
}

describe("GET /metrics", () => {
  it("counts requests by route template and status, with their durations, and exposes the store, the health parts and the process", async () => {
    const dev = client(app);
    const before = samples((await scrape()).text);
    const action = 'svc_http_requests_total{method="POST",route="/api/actions/:actionId",status="200"}';
    for (let i = 0; i < 3; i++) expect((await dev.post("/api/actions/diagnostics.noop", { params: {} })).status).toBe(200);
    expect((await dev.post("/api/actions/no.such-action", { params: {} })).status).toBe(404);
    const { status, type, text } = await scrape();
    expect([status, type]).toEqual([200, "text/plain; version=0.0.4; charset=utf-8"]);
    const now = samples(text);
    expect(now.get(action)! - (before.get(action) ?? 0)).toBe(3);
    expect(now.get('svc_http_requests_total{method="POST",route="/api/actions/:actionId",status="404"}')).toBeGreaterThanOrEqual(1);
    // one series per route template: the action's id is no label of the HTTP series (svc_action_runs_total has it)
    expect(text.split("\n").filter((line) => line.startsWith("svc_http_") && line.includes("diagnostics.noop"))).toEqual([]);
    expect(text).toContain('svc_action_runs_total{action="diagnostics.noop",status="succeeded"}');
    expect(now.get('svc_http_request_duration_seconds_count{method="POST",route="/api/actions/:actionId"}')).toBeGreaterThanOrEqual(4);
    expect(now.get('svc_http_request_duration_seconds_bucket{le="10",method="POST",route="/api/actions/:actionId"}')).toBe(now.get('svc_http_request_duration_seconds_count{method="POST",route="/api/actions/:actionId"}'));
    expect(now.get("svc_store_commits_total")).toBeGreaterThan(before.get("svc_store_commits_total") ?? 0);
    expect(now.get("svc_store_transactions_total")).toBeGreaterThanOrEqual(now.get("svc_store_commits_total")!);
    for (const part of ["store", "temporal", "outbox", "schedules", "runStarts", "files"]) expect(now.get(`svc_health_part_healthy{part="${part}"}`), part).toBe(1);
    expect(now.get("svc_run_starts_pending")).toBe(0);
    expect(now.has("svc_outbox_backlog")).toBe(true);
    expect(now.get("process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(now.get("nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    // the scrape itself is counted
    expect(now.get('svc_http_requests_total{method="GET",route="/metrics",status="200"}')).toBeGreaterThanOrEqual(1);
  });

  it("counts the answers given before any route ran: an unknown path, a 405, a WebSocket path asked without an upgrade", async () => {
    const dev = client(app);
    const count = async () => samples((await scrape()).text);
    const before = await count();
    expect((await dev.get("/api/no-such-thing")).status).toBe(404);
    expect((await dev.call("DELETE", "/api/status")).status).toBe(405);
    expect((await dev.get("/ws/events")).status).toBe(401);
    const after = await count();
    const grew = (series: string) => (after.get(series) ?? 0) - (before.get(series) ?? 0);
    expect(grew('svc_http_requests_total{method="GET",route="(unmatched)",status="404"}')).toBe(1);
    expect(grew('svc_http_requests_total{method="DELETE",route="/api/status",status="405"}')).toBe(1);
    expect(grew('svc_http_requests_total{method="GET",route="/ws/events",status="401"}')).toBe(1);
  });

  it("counts the WebSocket connections open on each endpoint, from open to close; a refused upgrade is none", async () => {
    const open = async () => samples((await scrape()).text).get('svc_websocket_connections{path="/ws/events"}') ?? 0;
    const signedIn = await fetch(`${app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity: "dev", password: "dev-sandbox-password" }) });
    const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0]!;
    const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: { headers: Record<string, string>; origin?: string }) => any;
    const connect = (headers: Record<string, string>) => {
      const socket = new Ctor(`${app.url.replace(/^http/, "ws")}/ws/events`, [], { headers, origin: app.url });
      socket.on("error", () => undefined);
      return { socket, opened: new Promise<void>((resolve) => socket.on("open", () => resolve())), refused: new Promise<number>((resolve) => socket.on("unexpected-response", (_req: unknown, res: { statusCode: number }) => resolve(res.statusCode))) };
    };
    const before = await open();
    const [a, b] = [connect({ cookie }), connect({ cookie })];
    await Promise.all([a.opened, b.opened]);
    expect(await connect({}).refused).toBe(401);
    await eventually(async () => ((await open()) === before + 2 ? true : undefined), 5000);
    a.socket.close(1000, "done");
    await eventually(async () => ((await open()) === before + 1 ? true : undefined), 5000);
    b.socket.close(1000, "done");
    await eventually(async () => ((await open()) === before ? true : undefined), 5000);
  });

  it("counts action runs by action and final status, and the events appended by type", async () => {
    const dev = client(app);
    const before = samples((await scrape()).text);
    for (let i = 0; i < 2; i++) expect((await dev.post("/api/actions/diagnostics.noop", { params: {} })).status).toBe(200);
    const failed = await dev.post("/api/actions/diagnostics.fail", { params: { message: "metrics" } });
    expect(failed.body.status).toBe("failed");
    // a resent runId of an ended run answers its record: no new run
    expect((await dev.post("/api/actions/diagnostics.noop", { params: {}, runId: "metrics-once" })).status).toBe(200);
    expect((await dev.post("/api/actions/diagnostics.noop", { params: {}, runId: "metrics-once" })).status).toBe(200);
    // a refused request is no run
    expect((await dev.post("/api/actions/diagnostics.fail", { params: { message: "" } })).status).toBe(400);
    const after = samples((await scrape()).text);
    const grew = (series: string) => (after.get(series) ?? 0) - (before.get(series) ?? 0);
    expect(grew('svc_action_runs_total{action="diagnostics.noop",status="succeeded"}')).toBe(3);
    expect(grew('svc_action_runs_total{action="diagnostics.fail",status="failed"}')).toBe(1);
    expect(grew('svc_events_appended_total{type="action.requested"}')).toBe(4);
    expect(grew('svc_events_appended_total{type="action.completed"}')).toBe(3);
    expect(grew('svc_events_appended_total{type="action.failed"}')).toBe(1);
  });

  it("counts webhook deliveries by connector, webhook and outcome", async () => {
    const url = `${app.url}/api/webhooks/standard-webhooks/events`;
    const signer = new Webhook(SANDBOX_WEBHOOK_SECRETS.standardWebhooks);
    const deliver = async (body: string, id = `msg_${crypto.randomUUID()}`, by = signer) => {
      const at = new Date();
      const headers = { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": by.sign(id, at, body) };
      return (await fetch(url, { method: "POST", headers, body })).status;
    };
    const before = samples((await scrape()).text);
    expect(await deliver('{"type":"metrics.ping"}', "msg_metrics_once")).toBe(202);
    expect(await deliver('{"type":"metrics.ping"}', "msg_metrics_once")).toBe(202);
    expect(await deliver("not json")).toBe(400);
    expect(await deliver('{"type":"metrics.ping"}', undefined, new Webhook(`whsec_${Buffer.from("another-secret-entirely-123").toString("base64")}`))).toBe(401);
    expect((await fetch(`${app.url}/api/webhooks/standard-webhooks/no-such-webhook`, { method: "POST", body: "{}" })).status).toBe(404);
    const after = samples((await scrape()).text);
    const grew = (outcome: string) => (after.get(`svc_webhook_deliveries_total{connector="standard-webhooks",webhook="events",outcome="${outcome}"}`) ?? 0) - (before.get(`svc_webhook_deliveries_total{connector="standard-webhooks",webhook="events",outcome="${outcome}"}`) ?? 0);
    expect(["completed", "duplicate", "invalid_request", "unauthorized", "failed", "in_progress"].map(grew)).toEqual([1, 1, 1, 1, 0, 0]);
    // a path's words are no label: an unknown webhook is not counted here
    expect((await scrape()).text).not.toContain("no-such-webhook");
  });

  it("reports the open interventions and how long the oldest has waited", async () => {
    const db = app.container.resolve(Database);
    const gauges = async () => {
      const now = samples((await scrape()).text);
      return { open: now.get("svc_interventions_open")!, oldest: now.get("svc_interventions_oldest_open_age_seconds")! };
    };
    const before = await gauges();
    const requestedAt = new Date(Date.now() - 3_600_000).toISOString();
    await db.transaction((tx) => tx.run("INSERT INTO interventions (id, run_id, workflow_id, name, prompt, assignees, status, requested_at) VALUES ('metrics:ask:1', 'metrics', 'invoice-review', 'ask', 'p', '{}', 'open', ?)", [requestedAt]));
    try {
      // a scrape within a second of the last one's read answers that read
      const now = await eventually(async () => {
        const g = await gauges();
        return g.open === before.open + 1 && g;
      }, 5000);
      expect(now.oldest).toBeGreaterThanOrEqual(3600);
    } finally {
      await db.transaction((tx) => tx.run("DELETE FROM interventions WHERE id = 'metrics:ask:1'"));
    }
  });

  it("names in README's alerting rules only series the service exposes", async () => {
    const readme = fs.readFileSync(path.join(import.meta.dirname, "..", "README.md"), "utf8");
    const rules = /```yaml\n(groups:[\s\S]*?)```/.exec(readme)?.[1];
    expect(rules).toBeDefined();
    const named = new Set([...rules!.matchAll(/\bsvc_[a-z_]+/g)].map((m) => m[0]));
    expect(named.size).toBeGreaterThan(8);
    // every series of the exposition has its # TYPE line, labelled series included (one with no sample yet too)
    const exposed = new Set([...(await scrape()).text.matchAll(/^# TYPE (svc_[a-z_]+) /gm)].map((m) => m[1]!));
    expect([...named].filter((name) => !exposed.has(name))).toEqual([]);
  });

  it("reports how long each working API token with an expiry has left, by token, identity and identity type; none for revoked or unexpiring ones", async () => {
    const tokens = app.container.resolve(TokenService);
    const bot = await tokens.create("ops-bot", "ci", { expiresInMs: 10 * 86_400_000 });
    const user = await tokens.create("alice", "laptop", { expiresInMs: 3_600_000 });
    const forever = await tokens.create("alice", "forever");
    const revoked = await tokens.create("ops-bot", "old", { expiresInMs: 86_400_000 });
    await tokens.revoke(revoked.info.id);
    const now = samples((await scrape()).text);
    const left = (id: string, identity: string, type: string) => now.get(`svc_api_token_expires_in_seconds{token="${id}",identity="${identity}",identity_type="${type}"}`);
    expect(left(bot.info.id, "ops-bot", "serviceAccount")).toBeGreaterThan(10 * 86_400 - 60);
    expect(left(bot.info.id, "ops-bot", "serviceAccount")).toBeLessThanOrEqual(10 * 86_400);
    expect(left(user.info.id, "alice", "user")).toBeGreaterThan(3_600 - 60);
    const text = (await scrape()).text;
    expect(text).not.toContain(forever.info.id);
    expect(text).not.toContain(revoked.info.id);
    await tokens.revoke(bot.info.id);
    await tokens.revoke(user.info.id);
  });

  it("reports the same totals to overlapping scrapes", async () => {
    const [a, b] = await Promise.all([scrape(), scrape()]);
    const commits = (text: string) => samples(text).get("svc_store_commits_total");
    expect(commits(a.text)).toBe(commits(b.text));
  });

  it("needs a token, as /api/status does", async () => {
    const res = await fetch(`${app.url}/metrics`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe("unauthorized");
  });
});

describe("GET /metrics when the store fails under a request", () => {
  it("counts an action run and a webhook delivery the store could not record as error, apart from failed runs", async () => {
    const broken = await startApp();
    try {
      const metrics = broken.container.resolve(Metrics);
      const value = async (name: string, labels: Record<string, string>) =>
        (await metrics.registry.getSingleMetric(name)!.get()).values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value ?? 0;
      // the token is looked up once (cached after); then the store goes away: the run and the delivery
      // reach their commits and fail there
      expect((await client(broken).post("/api/actions/diagnostics.noop", { params: {} })).status).toBe(200);
      await broken.container.resolve(Database).close();
      expect((await client(broken).post("/api/actions/diagnostics.noop", { params: {} })).status).toBe(500);
      const body = '{"type":"metrics.ping"}';
      const id = `msg_${crypto.randomUUID()}`;
      const at = new Date();
      const headers = { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(SANDBOX_WEBHOOK_SECRETS.standardWebhooks).sign(id, at, body) };
      expect((await fetch(`${broken.url}/api/webhooks/standard-webhooks/events`, { method: "POST", headers, body })).status).toBe(500);
      expect(await value("svc_action_runs_total", { action: "diagnostics.noop", status: "error" })).toBe(1);
      expect(await value("svc_action_runs_total", { action: "diagnostics.noop", status: "failed" })).toBe(0);
      expect(await value("svc_webhook_deliveries_total", { connector: "standard-webhooks", webhook: "events", outcome: "error" })).toBe(1);
      expect(await value("svc_webhook_deliveries_total", { connector: "standard-webhooks", webhook: "events", outcome: "failed" })).toBe(0);
    } finally {
      await broken.close();
    }
  });
});
