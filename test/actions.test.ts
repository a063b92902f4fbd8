/** Action runs (spec 4.2) over HTTP with effects on the real Temporal dev server, and the request body limit (spec 8). */
import http from "node:http";
import { describe, expect, it } from "vitest";
import { client, eventually, invoiceSubject, sandboxSuite, allEvents } from "./helpers";

const suite = sandboxSuite();

const dev = client(() => suite.app);

describe("action runs (spec 4.2)", () => {
  it("answers the finished run record and writes rows and events in one commit", async () => {
    const res = await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_1004"), params: { note: "looks right" }, runId: "approve-1004" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^run_/), actionId: "invoice.approve", runId: "approve-1004", status: "succeeded", subject: invoiceSubject("inv_1004"), params: { note: "looks right" }, startedAt: expect.any(String), finishedAt: expect.any(String) });
    expect(res.body.error).toBeUndefined();

    const invoice = await dev.get("/api/objects/invoice/inv_1004");
    expect(invoice.body.properties).toMatchObject({ status: "approved", approvalNote: "looks right" });

    const events = (await allEvents(dev)).filter((e) => e.correlationId === "approve-1004");
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

  it("reads a run by its id alone at /api/action-runs/:runId, as the other run kinds are read; a run of an action the caller may not run is 404, as one that does not exist", async () => {
    const res = await dev.post("/api/actions/diagnostics.noop", { params: {}, runId: "by-id-alone-1" });
    const byRunId = await dev.get("/api/action-runs/by-id-alone-1");
    expect([byRunId.status, byRunId.body]).toEqual([200, res.body]);
    expect((await dev.get(`/api/action-runs/${res.body.id}`)).body).toEqual(res.body); // the record's id names it too
    // so a new run may not take that id as its runId: it would shadow this run there
    const shadow = await dev.post("/api/actions/diagnostics.noop", { params: {}, runId: res.body.id });
    expect([shadow.status, shadow.body.error?.code, shadow.body.error?.message]).toEqual([409, "conflict", `runId ${res.body.id} is taken (it is another run's record id): choose another runId`]);
    expect((await dev.get(`/api/action-runs/${res.body.id}`)).body).toEqual(res.body);
    // a generated runId resent (a retry of a run the server named) is still its own run's
    const named = await dev.post("/api/actions/diagnostics.noop", { params: {} });
    expect((await dev.post("/api/actions/diagnostics.noop", { params: {}, runId: named.body.runId })).body).toEqual(named.body);
    // auditor may not run diagnostics.noop: the run is not told apart from a run that does not exist
    const auditor = client(() => suite.app, suite.tokens.auditor);
    const hidden = await auditor.get("/api/action-runs/by-id-alone-1");
    const missing = await auditor.get("/api/action-runs/no-such-run");
    expect([hidden.status, hidden.body.error.message]).toEqual([404, 'No action run "by-id-alone-1"']);
    expect([missing.status, missing.body.error.message]).toEqual([404, 'No action run "no-such-run"']);
    // ops-bot runs diagnostics.noop but may not view invoices: a run about an invoice is not its to read,
    // on either route (its record shows the subject, params and result); one without a subject is
    const opsBot = client(() => suite.app, suite.tokens.opsBot);
    await dev.post("/api/actions/diagnostics.noop", { subject: invoiceSubject("inv_1001"), params: {}, runId: "by-id-about-invoice" });
    for (const path of ["/api/action-runs/by-id-about-invoice", "/api/actions/diagnostics.noop/runs/by-id-about-invoice"]) {
      const about = await opsBot.get(path);
      expect([about.status, about.body.error?.message], path).toEqual([404, 'No action run "by-id-about-invoice"']);
    }
    expect((await opsBot.get("/api/action-runs/by-id-alone-1")).status).toBe(200);
    // a run of another action, through an action the caller may run: the same answer as none
    const other = await opsBot.get(`/api/actions/diagnostics.fail/runs/by-id-alone-1`);
    expect([other.status, other.body.error.message]).toEqual([404, 'No action run "by-id-alone-1"']);
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
    for await (const e of suite.app.temporal.client.workflow.list({ query: `WorkflowId = "action-effect:approve-1006"` })) executions.push(e);
    expect(executions).toHaveLength(1);
    const effectEvents = (await allEvents(dev)).filter((e) => e.correlationId === "approve-1006" && e.type === "object.updated" && e.origin?.effect);
    expect(effectEvents).toHaveLength(1);
  });

  it("records a failed run as 200 with status failed and its error, writing nothing", async () => {
    const before = (await dev.get("/api/objects/invoice/inv_1005")).body;
    const res = await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_1005"), params: {} });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "failed", error: { code: "invalid_request", message: expect.stringMatching(/void/) } });
    expect((await dev.get("/api/objects/invoice/inv_1005")).body).toEqual(before);
    const failed = (await allEvents(dev)).filter((e) => e.correlationId === res.body.runId);
    expect(failed.map((e) => e.type)).toEqual(["action.requested", "action.failed"]);
    expect(failed[1].payload.error).toEqual(res.body.error);

    const thrown = await dev.post("/api/actions/diagnostics.fail", { params: { message: "boom" } });
    expect(thrown.body).toMatchObject({ status: "failed", error: { code: "action_failed", message: "boom" } });
    expect(thrown.text).not.toMatch(/at .*\.ts/);
  });

  it("refuses invalid params, subjects and bodies with 400 and records no run", async () => {
    const count = (await allEvents(dev)).length;
    const cases = [
      ["/api/actions/diagnostics.sleep", { params: { ms: "soon" } }],
      ["/api/actions/diagnostics.sleep", { params: {}, extra: 1 }],
      ["/api/actions/invoice.approve", { params: {} }],
      ["/api/actions/invoice.approve", { subject: { kind: "object", objectTypeId: "customer", primaryId: "cus_acme" }, params: {} }],
      ["/api/actions/diagnostics.sleep", "{not json"],
      ["/api/actions/diagnostics.noop", []], // an array is not the object a run request is
      ["/api/actions/diagnostics.noop", [1]],
    ] as const;
    for (const [path, body] of cases) {
      const res = await dev.post(path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      if (Array.isArray(body)) expect(res.body.error.message).toBe("Invalid body: body expected a JSON object, got an array");
    }
    // params nested 10,000 deep: a 40 KB body that parsed, then overflowed the stack when written back (a 500)
    const deep = await dev.post("/api/actions/diagnostics.noop", `{"params":{"x":${"[".repeat(10_000)}${"]".repeat(10_000)}}}`);
    expect([deep.status, deep.body.error.message]).toEqual([400, "The body nests arrays and objects deeper than 256 levels"]);
    expect((await dev.post("/api/actions/diagnostics.sleep", "ms=1", { "content-type": "application/x-www-form-urlencoded" })).status).toBe(415);
    expect((await dev.post("/api/actions/nope", { params: {} })).status).toBe(404);
    expect((await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_9999"), params: {} })).status).toBe(404);
    expect((await allEvents(dev)).length).toBe(count);
  });

  it("answers a resent runId with its recorded run even when the run's subject is gone since (spec 4.2 rule 4)", async () => {
    const invoice = { number: "INV-GONE", customerId: "cus_acme", amount: 10, currency: "USD", status: "open" };
    expect((await dev.post("/api/ontology/writes", { changes: [{ op: "object.create", objectTypeId: "invoice", primaryId: "inv_gone", properties: invoice }] })).status).toBe(200);
    const first = await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_gone"), params: {}, runId: "approve-gone" });
    expect(first.body.status).toBe("succeeded");
    expect((await dev.post("/api/ontology/writes", { changes: [{ op: "object.delete", objectTypeId: "invoice", primaryId: "inv_gone" }] })).status).toBe(200);
    const count = (await allEvents(dev)).length;
    const again = await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_gone"), params: {}, runId: "approve-gone" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await allEvents(dev)).length).toBe(count);
    // a new run of it is refused: the subject does not exist
    expect((await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_gone"), params: {} })).status).toBe(404);
  });

  it("answers a resent runId with the recorded run without running it again", async () => {
    const first = await dev.post("/api/actions/diagnostics.noop", { params: {}, runId: "noop-once" });
    const count = (await allEvents(dev)).length;
    const again = await dev.post("/api/actions/diagnostics.noop", { params: {}, runId: "noop-once" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await allEvents(dev)).length).toBe(count);
    const other = await dev.post("/api/actions/diagnostics.fail", { params: { message: "x" }, runId: "noop-once" });
    expect(other.body.error.code).toBe("conflict");
  });

  it("stores each of many concurrent runs (group-committed together) as it answered it, failed ones with their error", async () => {
    const sent = Array.from({ length: 24 }, (_, i) =>
      i % 4 === 3 ? (["/api/actions/diagnostics.fail", { params: { message: `boom ${i}` }, runId: `many-${i}` }] as const) : (["/api/actions/diagnostics.noop", { params: {}, runId: `many-${i}` }] as const),
    );
    const first = await Promise.all(sent.map(([path, body]) => dev.post(path, body)));
    expect(first.map((r) => r.body.status)).toEqual(sent.map(([path]) => (path.endsWith("fail") ? "failed" : "succeeded")));
    // a resent runId answers the stored record: every column the completion wrote
    const again = await Promise.all(sent.map(([path, body]) => dev.post(path, body)));
    expect(again.map((r) => r.body)).toEqual(first.map((r) => r.body));
    expect(again[3]!.body.error).toEqual({ code: "action_failed", message: "boom 3" });
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
    const url = new URL(`${suite.app.url}/api/actions/diagnostics.fail`);
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

  it("closes a keep-alive connection after refusing a chunked body far over 1 MiB, so the next request is answered", async () => {
    const url = new URL(`${suite.app.url}/api/actions/diagnostics.noop`);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const send = (chunks: number) =>
      new Promise<{ status: number; connection?: string }>((resolve, reject) => {
        const req = http.request({ agent, host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { authorization: "Bearer svc_dev_sandbox_token", "content-type": "application/json", "transfer-encoding": "chunked" } }, (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
        });
        req.on("error", (err) => ((err as NodeJS.ErrnoException).code === "EPIPE" || (err as NodeJS.ErrnoException).code === "ECONNRESET" ? undefined : reject(err)));
        if (chunks === 0) return void req.end(JSON.stringify({ params: {} }));
        req.write('{"params":{"message":"');
        const chunk = "x".repeat(64 * 1024);
        let sent = 0;
        const pump = () => {
          while (sent < chunks) {
            sent++;
            if (!req.write(chunk)) return void req.once("drain", pump);
          }
          req.end('"}}');
        };
        pump();
      });
    try {
      // 3 MiB: the server stops reading long before the end
      expect(await send(48)).toEqual({ status: 413, connection: "close" });
      const started = Date.now();
      expect((await send(0)).status).toBe(200);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      agent.destroy();
    }
  });
});
