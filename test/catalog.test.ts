/**
 * Every event type of the catalog (spec 2.4) and every origin/actor row (spec 2.3) has a producer in
 * the sandbox: this test runs the README's "Who writes each event" commands (over HTTP, as `dev`) and
 * reads them back from the stream.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../core/events/catalog";
import { allEvents, client, eventually, invoiceSubject, startApp } from "./helpers";
import type { App } from "../core/app";

let app: App & { dataDir: string };
let dev: ReturnType<typeof client>;
let events: any[];

const json = (res: { status: number; body: any }, status = 200) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

async function workflowRun(input: Record<string, unknown>): Promise<string> {
  return json(await dev.post("/api/workflows/invoice-review/runs", { input })).runId;
}

async function waitingOn(runId: string): Promise<void> {
  await eventually(async () => (await dev.get(`/api/workflow-runs/${runId}`)).body?.status === "waiting", 30_000);
}

async function finished(path: string): Promise<any> {
  return eventually(async () => {
    const body = (await dev.get(path)).body;
    return ["completed", "failed", "cancelled"].includes(body?.status) ? body : undefined;
  }, 30_000);
}

beforeAll(async () => {
  app = await startApp({ env: { SVC_SCHEDULES: "true" } });
  dev = client(app);

  // direct writes: object.updated, link.updated, telemetry.appended, then object.created/.deleted and link.created/.deleted
  json(await dev.post("/api/ontology/writes", {
    changes: [
      { op: "object.update", objectTypeId: "customer", primaryId: "cus_acme", properties: { tier: "gold" } },
      { op: "link.upsert", sourceTypeId: "invoice", sourceId: "inv_1001", linkId: "billedTo", targetTypeId: "customer", targetId: "cus_acme", properties: { note: "main account" } },
      { op: "telemetry.append", objectTypeId: "customer", objectId: "cus_acme", propertyId: "apiCalls", value: 42 },
    ],
  }));
  json(await dev.post("/api/ontology/writes", {
    changes: [
      { op: "object.create", objectTypeId: "customer", primaryId: "cus_tmp", properties: { name: "Temporary" } },
      { op: "link.upsert", sourceTypeId: "invoice", sourceId: "inv_1006", linkId: "billedTo", targetTypeId: "customer", targetId: "cus_tmp" },
    ],
  }));
  json(await dev.post("/api/ontology/writes", {
    changes: [
      { op: "link.delete", sourceTypeId: "invoice", sourceId: "inv_1006", linkId: "billedTo", targetTypeId: "customer", targetId: "cus_tmp" },
      { op: "object.delete", objectTypeId: "customer", primaryId: "cus_tmp" },
    ],
  }));

  // actions: action.requested, action.completed, action.failed
  expect(json(await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_1001"), params: { note: "ok" } })).status).toBe("succeeded");
  expect(json(await dev.post("/api/actions/diagnostics.fail", { params: { message: "on purpose" } })).status).toBe("failed");

  // a Temporal schedule fires: schedule.triggered; overdue-scan marks inv_1002 overdue: rule.triggered;
  // approving it: rule.resolved
  json(await dev.post("/api/schedules/overdue-scan/trigger", {}));
  await eventually(async () => (await dev.get("/api/rules")).body?.data?.[0]?.triggered?.length > 0, 30_000);
  json(await dev.post("/api/actions/invoice.approve", { subject: invoiceSubject("inv_1002"), params: {} }));

  // a dataset version (dataset.version.committed) and its projection (origin projection, no actor)
  const version = json(await dev.post("/api/datasets/price-list/versions", { transaction: "append", rows: [{ sku: "SKU-CATALOG", name: "Catalog test", unitPrice: 5, currency: "USD" }] }), 201);
  expect(version.version).toBe(2); // the seed committed version 1
  await eventually(async () => (await dev.get("/api/datasets/price-list")).body?.projection?.projectedVersion === version.version, 30_000);

  // a sync and a pipeline
  const sync = json(await dev.post("/api/syncs/customer-sync/runs", { input: {} })).runId;
  const pipeline = json(await dev.post("/api/pipelines/monthly-statement/runs", { input: { month: "2026-11" } })).runId;
  expect((await finished(`/api/sync-runs/${sync}`)).status).toBe("completed");
  expect((await finished(`/api/pipeline-runs/${pipeline}`)).status).toBe("completed");

  // workflows: one approved (submitted), one whose intervention is cancelled, one that expires
  const approved = await workflowRun({ invoiceId: "inv_1004", waitMs: 0 });
  const cancelled = await workflowRun({ invoiceId: "inv_1006", waitMs: 0, approvalThreshold: 100 });
  const expired = await workflowRun({ invoiceId: "inv_1003", waitMs: 0, approvalThreshold: 100, approvalTimeoutMs: 1000 });
  await waitingOn(approved);
  await waitingOn(cancelled);
  json(await dev.post(`/api/workflow-runs/${approved}/interventions/approve/submit`, { answer: { approved: true } }));
  json(await dev.post(`/api/workflow-runs/${cancelled}/interventions/approve/cancel`, { reason: "duplicate" }));
  for (const run of [approved, cancelled, expired]) expect((await finished(`/api/workflow-runs/${run}`)).status).toBe("completed");

  events = await eventually(async () => {
    const all = await allEvents(dev);
    return EVENT_TYPES.every((t) => all.some((e) => e.type === t)) ? all : undefined;
  }, 30_000).catch(() => allEvents(dev));
}, 180_000);

afterAll(() => app?.close());

describe("the sandbox produces the whole catalog", () => {
  it("has a producer for every event type of spec 2.4", () => {
    const seen = new Set(events.map((e) => e.type));
    expect(EVENT_TYPES.filter((t) => !seen.has(t))).toEqual([]);
  });

  it("has every origin/actor row of spec 2.3", () => {
    const ontology = events.filter((e) => ["objects", "links", "telemetry"].includes(e.topic));
    const rows = new Set(ontology.map((e) => `${e.origin?.kind}/${e.actor ? e.actor.type : "absent"}`));
    expect([...rows].sort()).toEqual(["action/absent", "projection/absent", "runtime/absent", "runtime/user"]);
    // the direct write's events carry the caller
    const direct = ontology.find((e) => e.type === "telemetry.appended");
    expect(direct).toMatchObject({ origin: { kind: "runtime" }, actor: { type: "user", id: "dev" } });
    // an action's writes carry no actor (the requester stays on the run)
    const byAction = ontology.find((e) => e.origin?.kind === "action");
    expect(byAction.actor).toBeUndefined();
  });
});
