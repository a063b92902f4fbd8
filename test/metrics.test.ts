/**
 * `GET /metrics` over real HTTP: Prometheus' text format, read line by line (one sample per line): the
 * HTTP series by route template, the store's counters, the health parts, Node's process metrics; a
 * token is needed, as for /api/status.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import NodeWebSocket from "crossws/websocket";
import { DEV_TOKEN, client, eventually, startApp } from "./helpers";
import type { App } from "../core/app";

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
    // one series per route template: the action's id is no label
    expect(text).not.toContain("diagnostics.noop");
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
