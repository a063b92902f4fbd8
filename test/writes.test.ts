/**
 * Direct ontology writes (`POST /api/ontology/writes`) and events.append over HTTP (`POST /api/events`)
 * against the real sandbox app (spec 2.3, 5, 6.2; issue 14).
 */
import { describe, expect, it } from "vitest";
import { allEvents, client, sandboxSuite } from "./helpers";

const suite = sandboxSuite();
const dev = () => client(() => suite.app);
const as = (who: "alice" | "auditor" | "opsBot") => client(() => suite.app, suite.tokens[who]);
const customer = (primaryId: string, name = "Acme") => ({ op: "object.create", objectTypeId: "customer", primaryId, properties: { name } });

describe("POST /api/ontology/writes", () => {
  it("commits objects, links and telemetry as one write with origin runtime and actor = the caller", async () => {
    const res = await dev().post("/api/ontology/writes", {
      changes: [
        customer("w-cust-1"),
        { op: "object.create", objectTypeId: "invoice", primaryId: "w-inv-1", properties: { number: "W-1", customerId: "w-cust-1", amount: 10, currency: "EUR", status: "open" } },
        { op: "link.upsert", linkId: "billedTo", sourceTypeId: "invoice", sourceId: "w-inv-1", targetTypeId: "customer", targetId: "w-cust-1" },
        { op: "telemetry.append", objectTypeId: "customer", objectId: "w-cust-1", propertyId: "apiCalls", value: 3 },
      ],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.events.map((e: any) => [e.type, e.commitOrdinal])).toEqual([["object.created", 0], ["object.created", 1], ["link.created", 2], ["telemetry.appended", 3]]);
    expect(res.body.objects).toEqual([{ objectTypeId: "customer", primaryId: "w-cust-1", version: 1 }, { objectTypeId: "invoice", primaryId: "w-inv-1", version: 1 }]);
    const stored = (await allEvents(dev())).filter((e) => e.commitId === res.body.commitId);
    expect(stored).toHaveLength(4);
    for (const e of stored) {
      expect(e.origin).toEqual({ kind: "runtime" });
      expect(e.actor).toEqual({ type: "user", id: "dev" });
      expect(e.correlationId).toBeTruthy();
    }
    expect(stored.map((e) => e.commitOrdinal).sort()).toEqual([0, 1, 2, 3]);
  });

  it("deletes an object's links with it, both ways, each with link.deleted before the object.deleted", async () => {
    const invoice = (primaryId: string) => ({ op: "object.create", objectTypeId: "invoice", primaryId, properties: { number: primaryId, customerId: "w-cust-del", amount: 1, currency: "EUR", status: "open" } });
    const billedTo = (sourceId: string) => ({ op: "link.upsert", linkId: "billedTo", sourceTypeId: "invoice", sourceId, targetTypeId: "customer", targetId: "w-cust-del", properties: { note: sourceId } });
    expect((await dev().post("/api/ontology/writes", { changes: [customer("w-cust-del"), invoice("w-inv-del-1"), invoice("w-inv-del-2"), billedTo("w-inv-del-1"), billedTo("w-inv-del-2")] })).status).toBe(200);
    const del = await dev().post("/api/ontology/writes", { changes: [{ op: "object.delete", objectTypeId: "customer", primaryId: "w-cust-del" }] });
    expect(del.status, del.text).toBe(200);
    expect(del.body.events.map((e: any) => [e.type, e.payload.sourceId ?? e.payload.primaryId])).toEqual([["link.deleted", "w-inv-del-1"], ["link.deleted", "w-inv-del-2"], ["object.deleted", "w-cust-del"]]);
    expect(del.body.events[0].payload).toEqual({ sourceTypeId: "invoice", sourceId: "w-inv-del-1", linkId: "billedTo", targetTypeId: "customer", targetId: "w-cust-del", propertyChanges: [{ property: "note", before: "w-inv-del-1" }] });
    // made again under the same id, it has no link from before; deleting a source takes its link too
    expect((await dev().post("/api/ontology/writes", { changes: [customer("w-cust-del"), billedTo("w-inv-del-1")] })).body.events.map((e: any) => e.type)).toEqual(["object.created", "link.created"]);
    const source = await dev().post("/api/ontology/writes", { changes: [{ op: "object.delete", objectTypeId: "invoice", primaryId: "w-inv-del-1" }, { op: "object.delete", objectTypeId: "invoice", primaryId: "w-inv-del-2" }] });
    expect(source.body.events.map((e: any) => e.type)).toEqual(["link.deleted", "object.deleted", "object.deleted"]);
  });

  it("says what an unwritable property is: a file property (set by connector code) or no property at all", async () => {
    const update = (properties: Record<string, unknown>) => dev().post("/api/ontology/writes", { changes: [{ op: "object.update", objectTypeId: "invoice", primaryId: "inv_1001", properties }] });
    const file = await update({ pdf: { id: "file_x" } });
    expect([file.status, file.body.error.message]).toEqual([400, expect.stringContaining('pdf is a file property of invoice: connector code sets it (ctx.writes with an uploaded file\'s reference { id: "file_…" }), not a direct write')]);
    const unknown = await update({ colour: "red" });
    expect(unknown.body.error.message).toMatch(/"colour" is not a writable property of invoice \(its properties: .*amount/);
  });

  it("takes dates and timestamps in the one grammar the connector path uses (a real day, a time zone), and documents it", async () => {
    const update = (properties: Record<string, unknown>) => dev().post("/api/ontology/writes", { changes: [{ op: "object.update", objectTypeId: "invoice", primaryId: "inv_1001", properties }] });
    for (const properties of [{ dueDate: "2026-02-30" }, { reviewedAt: "2026-02-30T00:00:00Z" }, { reviewedAt: "2026-01-01T00:00:00" }]) {
      const res = await update(properties);
      expect([JSON.stringify(properties), res.status, res.body.error?.message]).toEqual([JSON.stringify(properties), 400, expect.stringMatching(/must be (a date YYYY-MM-DD|an ISO 8601 timestamp with a time zone)/)]);
    }
    expect((await update({ dueDate: "2028-02-29", reviewedAt: "2026-01-31T13:00:00.5+01:00" })).status).toBe(200);
    const runs = await dev().get("/api/workflow-runs?startedAfter=2026-02-30T00:00:00Z");
    expect([runs.status, runs.body.error?.message]).toEqual([400, expect.stringContaining("must be an ISO 8601 timestamp with a time zone")]);
    const doc = (await dev().get("/docs/openapi.json")).body;
    const startedAfter = doc.paths["/api/workflow-runs"].get.parameters.find((p: any) => p.name === "startedAfter");
    expect(new RegExp(startedAfter.schema.pattern).test("2026-01-31T12:00:00Z") && !new RegExp(startedAfter.schema.pattern).test("2026-01-31 12:00:00Z")).toBe(true);
  });

  it("needs edit:object for objects and links, append:telemetry for telemetry, and writes nothing without them", async () => {
    const telemetry = { op: "telemetry.append", objectTypeId: "customer", objectId: "w-cust-1", propertyId: "apiCalls", value: 1 };
    for (const who of ["alice", "auditor", "opsBot"] as const) {
      const objects = await as(who).post("/api/ontology/writes", { changes: [customer(`w-perm-${who}`)] });
      expect(objects.status).toBe(403);
      expect(objects.body.error.details.permission).toBe("edit:object");
      const points = await as(who).post("/api/ontology/writes", { changes: [telemetry] });
      expect(points.status).toBe(403);
      expect(points.body.error.details.permission).toBe("append:telemetry");
      expect((await dev().get(`/api/objects/customer/w-perm-${who}`)).status).toBe(404);
    }
  });

  it("writes nothing when one change among good ones is refused (400 naming the index)", async () => {
    const bad = await dev().post("/api/ontology/writes", {
      changes: [customer("w-atomic-1"), { op: "object.update", objectTypeId: "customer", primaryId: "w-cust-1", properties: { balance: "lots" } }, customer("w-atomic-2")],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("invalid_request");
    expect(JSON.stringify(bad.body.error.details.issues)).toContain("body.changes.1");
    const missing = await dev().post("/api/ontology/writes", {
      changes: [customer("w-atomic-3"), { op: "object.update", objectTypeId: "customer", primaryId: "w-nobody", properties: { tier: "gold" } }],
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.details.index).toBe(1);
    for (const id of ["w-atomic-1", "w-atomic-2", "w-atomic-3"]) expect((await dev().get(`/api/objects/customer/${id}`)).status).toBe(404);
  });

  it("answers 409 with the current version for a stale expectedVersion, and writes with the right one", async () => {
    await dev().post("/api/ontology/writes", { changes: [customer("w-occ")] });
    const first = await dev().post("/api/ontology/writes", { changes: [{ op: "object.update", objectTypeId: "customer", primaryId: "w-occ", properties: { tier: "gold" }, expectedVersion: 1 }] });
    expect(first.status, first.text).toBe(200);
    expect(first.body.objects[0].version).toBe(2);
    const stale = await dev().post("/api/ontology/writes", { changes: [{ op: "object.update", objectTypeId: "customer", primaryId: "w-occ", properties: { tier: "silver" }, expectedVersion: 1 }] });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("conflict");
    expect(stale.body.error.details).toMatchObject({ index: 0, expectedVersion: 1, currentVersion: 2 });
    expect((await dev().get("/api/objects/customer/w-occ")).body.properties.tier).toBe("gold");
    const again = await dev().post("/api/ontology/writes", { changes: [customer("w-occ")] });
    expect(again.status).toBe(409);
    expect(again.body.error.details.currentVersion).toBe(2);
    const del = await dev().post("/api/ontology/writes", { changes: [{ op: "object.delete", objectTypeId: "customer", primaryId: "w-occ", expectedVersion: 2 }] });
    expect(del.status).toBe(200);
    expect(del.body.events[0].type).toBe("object.deleted");
    expect(del.body.objects).toEqual([{ objectTypeId: "customer", primaryId: "w-occ", version: null }]);
  });
});

describe("POST /api/events", () => {
  const triggered = { type: "schedule.triggered", payload: { scheduleId: "manual", occurrenceAt: "2026-01-01T00:00:00Z", triggeredAt: "2026-01-01T00:00:01Z", occurrenceKey: "manual:1" } };

  it("appends a supported non-ontology event with origin runtime and the caller as actor", async () => {
    const res = await dev().post("/api/events", { events: [triggered] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.count).toBe(1);
    const id = res.body.events[0].id;
    const stored = (await allEvents(dev(), "&topic=schedules")).find((e) => e.id === id);
    expect(stored).toMatchObject({ type: "schedule.triggered", origin: { kind: "runtime" }, actor: { type: "user", id: "dev" } });
  });

  it("says which events were skipped as appended before (by idempotencyKey), also within one request", async () => {
    const keyed = (key: string) => ({ ...triggered, idempotencyKey: key });
    const key = `dup-${Date.now()}`;
    const first = await dev().post("/api/events", { events: [keyed(key)] });
    expect([first.body.count, first.body.skipped]).toEqual([1, []]);
    const again = await dev().post("/api/events", { events: [triggered, keyed(key), keyed(`${key}-new`), keyed(`${key}-new`)] });
    expect(again.body.count).toBe(2);
    expect(again.body.skipped).toEqual([{ index: 1, idempotencyKey: key }, { index: 3, idempotencyKey: `${key}-new` }]);
  });

  it("refuses ontology event types with a clear error, and callers without append:events", async () => {
    const res = await dev().post("/api/events", { events: [{ type: "object.created", payload: { objectTypeId: "customer", primaryId: "x" } }] });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain("cannot be appended");
    const forbidden = await as("alice").post("/api/events", { events: [triggered] });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.details.permission).toBe("append:events");
  });

  it("refuses catalog fields of the wrong kind, and writes none of the batch", async () => {
    const before = (await allEvents(dev(), "&topic=workflows")).length;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ type: "workflow.run.finished", payload: { workflowId: 123, runId: "r-forged" } }, /payload\.workflowId/],
      [{ type: "workflow.run.finished", payload: { workflowId: "invoice-review", runId: "" } }, /payload\.runId must be a non-empty string/],
      [{ type: "action.failed", payload: { actionId: "a", runId: "r", error: "boom", finishedAt: "2026-01-01T00:00:00Z" } }, /payload\.error/],
      [{ type: "action.completed", payload: { actionId: "a", runId: "r", finishedAt: "yesterday" } }, /payload\.finishedAt must be an ISO 8601 timestamp/],
      [{ type: "rule.triggered", payload: { ruleId: "r", subject: "inv_1001" } }, /payload\.subject/],
    ];
    for (const [event, message] of cases) {
      const valid = { type: "workflow.run.queued", payload: { workflowId: "invoice-review", runId: "r-valid-neighbour" } };
      const res = await dev().post("/api/events", { events: [valid, event] });
      expect(res.status, JSON.stringify(event)).toBe(400);
      expect(res.body.error.message, JSON.stringify(event)).toMatch(message);
    }
    expect((await allEvents(dev(), "&topic=workflows")).length).toBe(before);
  });
});
