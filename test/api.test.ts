import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, eventually, invoiceSubject, startApp, tokenFor } from "./helpers";
import { Database } from "../core/store/db";
import { TokenService } from "../core/auth/tokens";
import type { App } from "../core/app";

let app: App;
let dev: ReturnType<typeof client>;
let tokens: Record<string, string>;

beforeAll(async () => {
  app = await startApp();
  dev = client(app);
  tokens = { alice: await tokenFor(app, "alice"), auditor: await tokenFor(app, "auditor"), opsBot: await tokenFor(app, "ops-bot") };
});
afterAll(() => app?.close());

async function allEvents(c = dev, query = "") {
  const out: any[] = [];
  let cursor: string | undefined;
  for (;;) {
    const res = await c.get(`/api/events?limit=1000${query}${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
    expect(res.status).toBe(200);
    if (res.body.count === 0) return out;
    out.push(...res.body.events);
    cursor = res.body.events.at(-1).cursor;
  }
}

describe("authentication and permissions (spec 5)", () => {
  it("answers 401 without a token or with an unknown one, with the structured error", async () => {
    for (const c of [client(app, null), client(app, "svc_not_a_real_token")]) {
      const res = await c.get("/api/project");
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
  });

  it("stores tokens hashed, never in clear", async () => {
    const rows = await app.container.resolve(Database).all<{ token_hash: string }>("SELECT token_hash FROM api_tokens");
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const secret of [...Object.values(tokens), "svc_dev_sandbox_token"]) expect(rows.some((r) => r.token_hash.includes(secret))).toBe(false);
  });

  it("answers 403 when the identity lacks the permission, naming it", async () => {
    const res = await client(app, tokens.auditor).get("/api/objects?objectTypeId=invoice");
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: "forbidden", details: { permission: "view:object:invoice" } });
    expect((await client(app, tokens.auditor).get("/api/objects?objectTypeId=customer")).status).toBe(200);
    const run = await client(app, tokens.auditor).post("/api/actions/diagnostics.noop", {});
    expect(run.status).toBe(403);
  });

  it("a revoked token stops working", async () => {
    const service = app.container.resolve(TokenService);
    const { token, info } = await service.create("alice", "to-revoke");
    expect((await client(app, token).get("/api/project")).status).toBe(200);
    await service.revoke(info.id);
    expect((await client(app, token).get("/api/project")).status).toBe(401);
  });
});

describe("status, project, docs", () => {
  it("reports health with its parts", async () => {
    const res = await dev.get("/api/status");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "ok", parts: { store: { status: "ok" }, temporal: { status: "ok", embedded: false }, outbox: { status: "ok", backlog: expect.any(Number) } } });
  });

  it("describes the project", async () => {
    const res = await dev.get("/api/project");
    expect(res.body).toMatchObject({ id: "sandbox", name: "Sandbox billing" });
    expect(res.body.objectTypes.map((t: any) => t.id)).toEqual(["customer", "invoice"]);
    expect(res.body.actions.map((a: any) => a.id)).toEqual(expect.arrayContaining(["invoice.approve", "diagnostics.sleep", "diagnostics.fail"]));
    expect(res.body.workflows).toEqual([{ id: "invoice-review", title: "Review an invoice" }]);
    expect(res.body.linkTypes).toEqual([{ id: "billedTo", source: "invoice", target: "customer" }]);
    expect(res.body.connectors).toContainEqual({ id: "billing", actions: ["invoice.approve"], webhooks: [], schedules: ["overdue-scan"] });
  });

  it("serves the OpenAPI reference without a CDN, covering every route and marking bearer auth", async () => {
    const page = await client(app, null).get("/docs");
    expect(page.status).toBe(200);
    expect(page.text).not.toMatch(/https?:\/\//);
    const asset = await fetch(`${app.url}/docs/assets/swagger-ui-bundle.js`);
    expect(asset.status).toBe(200);
    const doc = (await client(app, null).get("/docs/openapi.json")).body;
    expect(doc.openapi).toBe("3.1.0");
    for (const [path, method] of [["/api/status", "get"], ["/api/project", "get"], ["/api/objects", "get"], ["/api/objects/query", "post"], ["/api/actions/{actionId}", "post"], ["/api/events", "get"], ["/api/workflows/{id}/runs", "post"], ["/api/workflow-runs/{runId}", "get"]] as const) {
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
      expect(doc.paths[path][method]["x-svc-bearer-auth"]).toBe(true);
      expect(doc.paths[path][method].security).toContainEqual({ bearerAuth: [] });
    }
    expect(doc.paths["/api/objects/query"].post.requestBody.content["application/json"].schema.properties.objectTypeId.type).toBe("string");
    expect(doc.paths["/docs"].get["x-svc-bearer-auth"]).toBe(false);
  });

  it("answers unknown routes with a structured 404", async () => {
    const res = await dev.get("/api/nothing-here");
    expect(res).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
  });
});

describe("objects and queries", () => {
  it("lists objects of a type page by page without gaps or repeats", async () => {
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const res = await dev.get(`/api/objects?objectTypeId=invoice&pageSize=4${token ? `&nextPageToken=${token}` : ""}`);
      expect(res.status).toBe(200);
      ids.push(...res.body.data.map((o: any) => o.primaryId));
      token = res.body.nextPageToken;
    } while (token);
    expect(ids).toEqual(["inv_1001", "inv_1002", "inv_1003", "inv_1004", "inv_1005", "inv_1006"]);
  });

  it("filters, sorts and pages a query with keyset tokens", async () => {
    const seen: any[] = [];
    let nextPageToken: string | undefined;
    do {
      const res = await dev.post("/api/objects/query", { objectTypeId: "invoice", where: { status: { ne: "void" } }, orderBy: { property: "amount", direction: "desc" }, pageSize: 2, nextPageToken });
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data);
      nextPageToken = res.body.nextPageToken;
    } while (nextPageToken);
    const amounts = seen.map((o) => o.properties.amount);
    expect(amounts).toEqual([...amounts].sort((a, b) => b - a));
    expect(seen.map((o) => o.primaryId).sort()).toEqual(["inv_1001", "inv_1002", "inv_1003", "inv_1004", "inv_1006"]);
    const contains = await dev.post("/api/objects/query", { objectTypeId: "customer", where: { name: { contains: "acme" } } });
    expect(contains.body.data.map((o: any) => o.primaryId)).toEqual(["cus_acme"]);
  });

  it("refuses unknown properties, operators and foreign page tokens with 400", async () => {
    expect((await dev.post("/api/objects/query", { objectTypeId: "invoice", where: { colour: "red" } })).body.error.code).toBe("invalid_request");
    expect((await dev.post("/api/objects/query", { objectTypeId: "invoice", where: { amount: { near: 3 } } })).status).toBe(400);
    const first = await dev.post("/api/objects/query", { objectTypeId: "invoice", pageSize: 1 });
    const other = await dev.post("/api/objects/query", { objectTypeId: "invoice", pageSize: 1, orderBy: { property: "amount" }, nextPageToken: first.body.nextPageToken });
    expect(other.body.error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/another query/) });
    expect((await dev.post("/api/objects/query", { objectTypeId: "ship" })).status).toBe(404);
  });
});

describe("action runs (spec 4.2)", () => {
  it("answers the finished run record and writes rows and events in one commit", async () => {
    const res = await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_1004"), params: { note: "looks right" }, runId: "approve-1004" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^run_/), actionId: "invoice.approve", runId: "approve-1004", status: "succeeded", subject: invoiceSubject("inv_1004"), params: { note: "looks right" }, startedAt: expect.any(String), finishedAt: expect.any(String) });
    expect(res.body.error).toBeUndefined();

    const invoice = await dev.get("/api/objects/invoice/inv_1004");
    expect(invoice.body.properties).toMatchObject({ status: "approved", approvalNote: "looks right" });

    const events = (await allEvents()).filter((e) => e.correlationId === "approve-1004");
    const types = events.map((e) => e.type);
    expect(types).toEqual(["action.requested", "object.updated", "telemetry.appended", "action.completed"]);
    const [requested, updated, telemetry, completed] = events;
    expect(requested).toMatchObject({ schemaVersion: 1, projectId: "sandbox", topic: "actions", actor: { type: "user", id: "dev" }, payload: { actionId: "invoice.approve", runId: "approve-1004", subject: invoiceSubject("inv_1004"), params: { note: "looks right" } } });
    for (const fact of [updated, telemetry]) {
      expect(fact.origin).toEqual({ kind: "action", actionId: "invoice.approve", runId: "approve-1004" });
      expect(fact.actor).toBeUndefined();
      expect(fact.causationId).toBe(requested.id);
      expect(fact.commitId).toBe(updated.commitId);
    }
    expect([updated.commitOrdinal, telemetry.commitOrdinal]).toEqual([0, 1]);
    expect(updated.payload.propertyChanges).toEqual(expect.arrayContaining([{ property: "status", before: "open", after: "approved" }, { property: "approvalNote", after: "looks right" }]));
    expect(updated.partitionKey).toBe("invoice:inv_1004");
    expect(telemetry.payload).toMatchObject({ objectTypeId: "customer", objectId: "cus_globex", propertyId: "apiCalls", value: 1, unit: "calls" });
    expect(completed.payload).toMatchObject({ actionId: "invoice.approve", runId: "approve-1004", finishedAt: res.body.finishedAt });
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });

  it("starts the declared effect on Temporal once per runId", async () => {
    await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_1006"), params: {}, runId: "approve-1006" });
    await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_1006"), params: {}, runId: "approve-1006" });
    const invoice = await eventually(async () => {
      const res = await dev.get("/api/objects/invoice/inv_1006");
      return res.body.properties.noticeSentAt ? res.body : undefined;
    });
    expect(invoice.properties.noticeSentAt).toEqual(expect.any(String));
    const executions = [];
    for await (const e of app.temporal.client.workflow.list({ query: `WorkflowId = "action-effect:approve-1006"` })) executions.push(e);
    expect(executions).toHaveLength(1);
    const effectEvents = (await allEvents()).filter((e) => e.correlationId === "approve-1006" && e.type === "object.updated" && e.origin?.effect);
    expect(effectEvents).toHaveLength(1);
  });

  it("records a failed run as 200 with status failed and its error, writing nothing", async () => {
    const before = (await dev.get("/api/objects/invoice/inv_1005")).body;
    const res = await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_1005"), params: {} });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "failed", error: { code: "invalid_request", message: expect.stringMatching(/void/) } });
    expect((await dev.get("/api/objects/invoice/inv_1005")).body).toEqual(before);
    const failed = (await allEvents()).filter((e) => e.correlationId === res.body.runId);
    expect(failed.map((e) => e.type)).toEqual(["action.requested", "action.failed"]);
    expect(failed[1].payload.error).toEqual(res.body.error);

    const thrown = await dev.post("/api/actions/diagnostics.fail", { params: { message: "boom" } });
    expect(thrown.body).toMatchObject({ status: "failed", error: { code: "action_failed", message: "boom" } });
    expect(thrown.text).not.toMatch(/at .*\.ts/);
  });

  it("refuses invalid params, subjects and bodies with 400 and records no run", async () => {
    const count = (await allEvents()).length;
    const cases = [
      ["/api/actions/diagnostics.sleep", { params: { ms: "soon" } }],
      ["/api/actions/diagnostics.sleep", { params: {}, extra: 1 }],
      ["/api/actions/invoice.approve", { params: {} }],
      ["/api/actions/invoice.approve", { subject: { kind: "object", objectTypeId: "customer", primaryId: "cus_acme" }, params: {} }],
      ["/api/actions/diagnostics.sleep", "{not json"],
    ] as const;
    for (const [path, body] of cases) {
      const res = await dev.post(path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    expect((await dev.post("/api/actions/diagnostics.sleep", "ms=1", { "content-type": "application/x-www-form-urlencoded" })).status).toBe(415);
    expect((await dev.post("/api/actions/nope", { params: {} })).status).toBe(404);
    expect((await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_9999"), params: {} })).status).toBe(404);
    expect((await allEvents()).length).toBe(count);
  });

  it("answers a resent runId with the recorded run without running it again", async () => {
    const first = await dev.post("/api/actions/diagnostics.noop", { params: {}, runId: "noop-once" });
    const count = (await allEvents()).length;
    const again = await dev.post("/api/actions/diagnostics.noop", { params: {}, runId: "noop-once" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await allEvents()).length).toBe(count);
    const other = await dev.post("/api/actions/diagnostics.fail", { params: { message: "x" }, runId: "noop-once" });
    expect(other.body.error.code).toBe("conflict");
  });

  it("answers 409 run_in_progress for a runId still running on this server", async () => {
    const slow = dev.post("/api/actions/diagnostics.sleep", { params: { ms: 800 }, runId: "slow-1" });
    await new Promise((r) => setTimeout(r, 150));
    const dup = await dev.post("/api/actions/diagnostics.sleep", { params: { ms: 800 }, runId: "slow-1" });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe("run_in_progress");
    expect((await slow).body.status).toBe("succeeded");
    expect((await dev.post("/api/actions/diagnostics.sleep", { params: { ms: 800 }, runId: "slow-1" })).body.status).toBe("succeeded");
  });
});

describe("request limits (spec 8)", () => {
  const big = JSON.stringify({ params: { message: "x".repeat(1024 * 1024 + 10) } });

  it("answers 413 for a body over 1 MiB sent with Content-Length", async () => {
    const res = await dev.post("/api/actions/diagnostics.fail", big);
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
  });

  it("answers 413 for a chunked body over 1 MiB (no Content-Length)", async () => {
    const url = new URL(`${app.url}/api/actions/diagnostics.fail`);
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { authorization: "Bearer svc_dev_sandbox_token", "content-type": "application/json", "transfer-encoding": "chunked" } }, (res) => {
        let data = "";
        res.on("data", (d) => (data += d));
        res.on("end", () => resolve({ status: res.statusCode!, body: data }));
      });
      req.on("error", reject);
      for (let i = 0; i < big.length; i += 64 * 1024) req.write(big.slice(i, i + 64 * 1024));
      req.end();
    });
    expect(status).toBe(413);
    expect(JSON.parse(body).error.code).toBe("payload_too_large");
  });
});

describe("events (spec 6.4, 5)", () => {
  it("pages with the last cursor, oldest first, without gaps or repeats", async () => {
    const all = await allEvents();
    expect(all.length).toBeGreaterThan(10);
    const paged: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await dev.get(`/api/events?limit=3${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
      if (res.body.count === 0) break;
      expect(res.body.count).toBe(res.body.events.length);
      paged.push(...res.body.events.map((e: any) => e.id));
      cursor = res.body.events.at(-1).cursor;
    }
    expect(paged).toEqual(all.map((e) => e.id));
    const topic = await dev.get("/api/events?topic=links&limit=1000");
    expect(topic.body.events.every((e: any) => e.topic === "links")).toBe(true);
    const type = await dev.get("/api/events?type=object.created&limit=1000");
    expect(type.body.count).toBeGreaterThanOrEqual(9);
    expect((await dev.get("/api/events?topic=gossip")).status).toBe(400);
  });

  it("scopes events to what the caller may view, and refuses a caller with no view permission", async () => {
    const seen = await allEvents(client(app, tokens.auditor));
    expect(seen.length).toBeGreaterThan(0);
    for (const e of seen) {
      const types = [e.payload.objectTypeId, e.payload.sourceTypeId, e.payload.targetTypeId, e.payload.subject?.objectTypeId].filter(Boolean);
      expect(types.length, e.type).toBeGreaterThan(0);
      expect(types.every((t) => t === "customer"), e.type).toBe(true);
    }
    expect(seen.some((e) => e.type.startsWith("link."))).toBe(false);
    const alice = await allEvents(client(app, tokens.alice));
    expect(alice.some((e) => e.type === "link.created")).toBe(true);
    expect(alice.some((e) => e.payload.actionId === "diagnostics.fail")).toBe(false);
    const none = await client(app, tokens.opsBot).get("/api/events");
    expect(none.status).toBe(200); // ops-bot may run actions: it sees their events
    expect(none.body.events.every((e: any) => e.topic === "actions" && e.payload.actionId.startsWith("diagnostics."))).toBe(true);
  });
});

describe("workflow runs on Temporal", () => {
  it("queues a run, reports its state until it finishes, and records its events", async () => {
    const start = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001", waitMs: 300 } });
    expect(start.status).toBe(200);
    const { runId } = start.body;
    expect(runId).toMatch(/^run_/);
    const first = await dev.get(`/api/workflow-runs/${runId}`);
    expect(["queued", "running", "completed"]).toContain(first.body.status);
    const done = await eventually(async () => {
      const res = await dev.get(`/api/workflow-runs/${runId}`);
      return res.body.status === "completed" ? res.body : undefined;
    });
    expect(done).toMatchObject({ runId, workflowId: "invoice-review", input: { invoiceId: "inv_1001", waitMs: 300 }, result: { invoiceId: "inv_1001", reviewStatus: "reviewed", amount: 1200 }, links: { temporalWorkflowId: runId } });
    expect(done.nodes.map((n: any) => [n.name, n.status])).toEqual([["read invoice", "completed"], ["write review status", "completed"]]);
    expect((await dev.get("/api/objects/invoice/inv_1001")).body.properties.reviewStatus).toBe("reviewed");
    const events = (await allEvents()).filter((e) => e.correlationId === runId);
    expect(events.map((e) => e.type)).toEqual(["workflow.run.queued", "workflow.run.started", "workflow.run.node.started", "workflow.run.node.finished", "workflow.run.node.started", "object.updated", "workflow.run.node.finished", "workflow.run.finished"]);
    const write = events.find((e) => e.type === "object.updated");
    expect(write.origin).toMatchObject({ kind: "runtime", workflowId: "invoice-review", runId });
    expect(write.actor).toBeUndefined();
    const described = await app.temporal.client.workflow.getHandle(runId).describe();
    expect(described.type).toBe("invoice-review");
  });

  it("reports a failed run with its error", async () => {
    const { body } = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_missing", waitMs: 0 } });
    const failed = await eventually(async () => {
      const res = await dev.get(`/api/workflow-runs/${body.runId}`);
      return res.body.status === "failed" ? res.body : undefined;
    });
    expect(failed.error.message).toMatch(/No invoice "inv_missing"/);
  });

  it("validates input and permissions before queuing", async () => {
    expect((await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: 7 } })).status).toBe(400);
    expect((await dev.post("/api/workflows/nope/runs", { input: {} })).status).toBe(404);
    expect((await client(app, tokens.auditor).post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001" } })).status).toBe(403);
    expect((await dev.get("/api/workflow-runs/run_unknown")).status).toBe(404);
    // an execution the API did not start (an action's effect) cannot be adopted by naming its id
    await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_1006"), params: {}, runId: "effect-owner" });
    await eventually(async () => (await app.temporal.client.workflow.getHandle("action-effect:effect-owner").describe().catch(() => undefined)) !== undefined);
    const hijack = await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001" }, runId: "action-effect:effect-owner" });
    expect(hijack.status).toBe(409);
    expect((await dev.get("/api/workflow-runs/action-effect:effect-owner")).status).toBe(404);
  });
});
