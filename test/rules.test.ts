/**
 * Rules (spec 2.4 `rule.triggered`, `rule.resolved`) in the real app: the sandbox's `invoice-overdue`
 * triggers when an invoice becomes overdue and resolves when it is approved; `GET /api/rules` shows
 * triggered subjects only to identities that may view invoices; closing and reopening the app on the
 * same data dir neither repeats nor skips a rule event.
 */
import { describe, expect, it, vi } from "vitest";
import { allEvents, client, startApp, tokenFor } from "./helpers";
import { OntologyStore } from "../core/ontology/store";
import { RuleEngine } from "../core/runtime/rules";

const subject = (primaryId: string) => ({ kind: "object", objectTypeId: "invoice", primaryId });

describe("rules", () => {
  it("invoice-overdue triggers, lists, resolves, and survives a restart", async () => {
    let app = await startApp();
    const dataDir = app.dataDir;
    try {
      const markOverdue = (id: string) => app.container.resolve(OntologyStore).commit([{ op: "object.update", objectTypeId: "invoice", primaryId: id, properties: { status: "overdue" } }], { origin: { kind: "runtime" }, correlationId: `test-${id}` });
      await markOverdue("inv_1002");
      await markOverdue("inv_1004");
      const alice = client(app, await tokenFor(app, "alice"));
      const auditor = client(app, await tokenFor(app, "auditor"));
      await expect.poll(async () => (await alice.get("/api/rules")).body.data.find((r: any) => r.id === "invoice-overdue")?.triggered.length).toBe(2);
      const seen = (await alice.get("/api/rules")).body.data.find((r: any) => r.id === "invoice-overdue");
      expect(seen).toMatchObject({ id: "invoice-overdue", connectorId: "billing", objectTypeId: "invoice", where: { status: "overdue" }, title: "Invoice overdue" });
      expect(seen.triggered.map((t: any) => t.subject)).toEqual(expect.arrayContaining([subject("inv_1002"), subject("inv_1004")]));
      // the auditor may not view invoices: the rule is listed, its subjects are not
      const hidden = await auditor.get("/api/rules");
      expect(hidden.status).toBe(200);
      expect(hidden.body.data.find((r: any) => r.id === "invoice-overdue").triggered).toEqual([]);
      expect((await client(app, null).get("/api/rules")).status).toBe(401);

      const approved = await alice.post("/api/actions/invoice.approve", { subject: subject("inv_1002"), params: {} });
      expect(approved.body.status).toBe("succeeded");
      await expect.poll(async () => (await allEvents(alice, "&topic=rules")).length).toBe(3);
      const events = await allEvents(alice, "&topic=rules");
      expect(events.map((e) => [e.type, e.payload.subject.primaryId])).toEqual([
        ["rule.triggered", "inv_1002"],
        ["rule.triggered", "inv_1004"],
        ["rule.resolved", "inv_1002"],
      ]);
      for (const e of events) {
        expect(e).toMatchObject({ topic: "rules", origin: { kind: "runtime", ruleId: "invoice-overdue" }, payload: { ruleId: "invoice-overdue" } });
        expect(e.actor).toBeUndefined();
        expect(e.causationId).toEqual(expect.any(String));
      }
      expect(await allEvents(auditor, "&topic=rules")).toEqual([]);

      // restart on the same data: nothing is evaluated twice, and the next commit is evaluated once
      await app.close();
      app = await startApp({ dataDir });
      const dev = client(app);
      expect((await allEvents(dev, "&topic=rules")).map((e) => e.id)).toEqual(events.map((e) => e.id));
      await app.container.resolve(OntologyStore).commit([{ op: "object.delete", objectTypeId: "invoice", primaryId: "inv_1004" }], { origin: { kind: "runtime" }, correlationId: "test-delete" });
      await expect.poll(async () => (await allEvents(dev, "&topic=rules")).length).toBe(4);
      expect((await allEvents(dev, "&topic=rules")).at(-1)).toMatchObject({ type: "rule.resolved", payload: { subject: subject("inv_1004") } });
      expect((await dev.get("/api/rules")).body.data.find((r: any) => r.id === "invoice-overdue").triggered).toEqual([]);
    } finally {
      await app.close();
    }
  }, 120_000);

  it("runs no pass for appends without object events, and one for the next object write", async () => {
    const app = await startApp();
    try {
      const engine = app.container.resolve(RuleEngine);
      await engine.poke(); // caught up with the seed
      const step = vi.spyOn(engine, "step");
      const dev = client(app);
      for (let i = 0; i < 10; i++) expect((await dev.post("/api/actions/diagnostics.noop", { params: {} })).body.status).toBe("succeeded");
      await new Promise((r) => setTimeout(r, 100)); // the notices of the last commits
      expect(step).not.toHaveBeenCalled();
      await app.container.resolve(OntologyStore).commit([{ op: "object.update", objectTypeId: "invoice", primaryId: "inv_1006", properties: { status: "overdue" } }], { origin: { kind: "runtime" }, correlationId: "test-wake" });
      await expect.poll(async () => (await allEvents(dev, "&topic=rules")).map((e) => e.payload.subject.primaryId)).toEqual(["inv_1006"]);
      expect(step).toHaveBeenCalled();
    } finally {
      await app.close();
    }
  });
});
