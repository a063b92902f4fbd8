import path from "node:path";
import { describe, expect, it } from "vitest";
import { client, eventually, startApp, tempDir } from "./helpers";
import { freePort } from "./setup/global";
import { ensureNatsServer, startNats } from "./setup/nats";
import { allCursors, expectScanContract, scanToEnd } from "./helpers-streams";
import { NatsEventStream } from "../core/events/nats-stream";
import type { DomainEventEnvelope } from "../core/events/catalog";

describe("NATS JetStream broker stream", () => {
  it("serves events with the built-in stream's cursor semantics, and survives a broker outage without losing or duplicating anything", async () => {
    const bin = ensureNatsServer();
    const dir = tempDir("svc-nats-");
    const port = await freePort();
    let nats = await startNats(bin, port, path.join(dir, "jetstream"));
    const app = await startApp({ env: { SVC_EVENT_STREAM: "nats", NATS_URL: `nats://127.0.0.1:${port}`, SVC_OUTBOX_RECOVERY_MS: "300" } });
    try {
      const c = client(app);
      const run = async (runId: string) => {
        const res = await c.post("/api/actions/invoice.approve", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1004" }, params: {}, runId });
        expect(res.status).toBe(200);
        expect(res.body.status).toBe("succeeded");
      };
      await run("before-outage");
      const read = async () => {
        const out: any[] = [];
        let cursor: string | undefined;
        for (;;) {
          const page = await c.get(`/api/events?limit=4${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
          expect(page.status).toBe(200);
          if (page.body.count === 0) return out;
          out.push(...page.body.events);
          cursor = page.body.events.at(-1).cursor;
        }
      };
      const first = await read();
      expect(first.map((e) => e.type)).toEqual(expect.arrayContaining(["object.created", "action.requested", "object.updated", "action.completed"]));
      // the seed's 9 objects and the 5 products projected from its price-list version
      expect(first.filter((e) => e.type === "object.created")).toHaveLength(14);

      await nats.stop();
      for (let i = 0; i < 4; i++) await run(`during-outage-${i}`); // writes still succeed; envelopes wait in the outbox
      const degraded = await eventually(async () => {
        const s = (await c.get("/api/status")).body;
        return s.status === "degraded" && s.parts.outbox.consecutiveFailures >= 3 ? s : undefined;
      }, 40_000, 250);
      expect(degraded.parts.outbox).toMatchObject({ status: "unhealthy", backlog: expect.any(Number), lastError: expect.any(String) });
      expect(degraded.parts.outbox.backlog).toBeGreaterThan(0);

      nats = await startNats(bin, port, path.join(dir, "jetstream"));
      await eventually(async () => (await c.get("/api/status")).body.status === "ok", 30_000, 250);
      const after = await read();
      const ids = after.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (let i = 0; i < 4; i++) {
        // the run's own events (its effect writes later, on Temporal, under the same correlation id)
        const mine = after.filter((e) => e.correlationId === `during-outage-${i}` && !e.origin?.effect).map((e) => e.type);
        expect(mine[0]).toBe("action.requested");
        expect(mine.at(-1)).toBe("action.completed");
        expect(mine).toContain("telemetry.appended");
      }
      // commit order per partition key
      const byKey = new Map<string, string[]>();
      for (const e of after) byKey.set(e.partitionKey, [...(byKey.get(e.partitionKey) ?? []), e.occurredAt]);
      for (const times of byKey.values()) expect(times).toEqual([...times].sort());
    } finally {
      await app.close();
      await nats.stop();
    }
  }, 120_000);

  it("scans with checkpoints as the built-in stream does: a filtered read says how far it examined the stream", async () => {
    const bin = ensureNatsServer();
    const port = await freePort();
    const nats = await startNats(bin, port, path.join(tempDir("svc-nats-"), "jetstream"));
    const stream = await NatsEventStream.open({ servers: `nats://127.0.0.1:${port}`, stream: "SVC_scan", subjectPrefix: "svc.scan", retentionMs: 3_600_000 });
    try {
      const types = ["action.requested", "action.completed", "rule.triggered"] as const;
      await stream.append(
        Array.from({ length: 40 }, (_, i) => ({
          id: `evt_n${i}`, schemaVersion: 1, projectId: "p", occurredAt: "2026-01-01T00:00:00.000Z", type: types[(i * i) % 3]!, topic: i * i % 3 === 2 ? "rules" : "actions", partitionKey: "k",
          payload: i * i % 3 === 2 ? { ruleId: "r", subject: { kind: "object", objectTypeId: "invoice", primaryId: `o${i % 2}` } } : { actionId: "diagnostics.noop", runId: `r${i}` },
        })) as DomainEventEnvelope[],
      );
      const cursors = await allCursors(stream);
      expect(cursors).toHaveLength(40);
      for (const after of [undefined, cursors[0], cursors[17], cursors[38], cursors[39]]) {
        for (const q of [{ types: ["rule.triggered"] }, { types: ["rule.triggered"], primaryId: "o1" }, { topics: ["actions"] as const }, {}]) {
          for (const limit of [1, 3, 500]) await expectScanContract(stream, { ...q, afterCursor: after, limit }, cursors);
          const expected = (await stream.read({ ...q, afterCursor: after, limit: 1000 })).map((e) => e.id);
          expect(await scanToEnd(stream, { ...q, afterCursor: after, limit: 2 })).toMatchObject({ ids: expected, through: cursors[39] });
        }
      }
    } finally {
      await stream.close();
      await nats.stop();
    }
  }, 60_000);

  it("answers cursor_expired for a cursor older than the stream's retention (max_age)", async () => {
    const bin = ensureNatsServer();
    const port = await freePort();
    const nats = await startNats(bin, port, path.join(tempDir("svc-nats-"), "jetstream"));
    const app = await startApp({ env: { SVC_EVENT_STREAM: "nats", NATS_URL: `nats://127.0.0.1:${port}`, SVC_EVENT_RETENTION_MS: "1500", SVC_NATS_STREAM: "SVC_expiry" } });
    try {
      const c = client(app);
      const [oldest] = (await c.get("/api/events?limit=1")).body.events;
      expect(oldest).toBeDefined();
      const at = new Date().toISOString();
      const append = (n: number) => c.post("/api/events", { events: [{ type: "schedule.triggered", payload: { scheduleId: "s", occurrenceAt: at, triggeredAt: at, occurrenceKey: `o${n}` }, idempotencyKey: "nightly" }] });
      expect((await append(1)).body.skipped).toEqual([]);
      expect((await append(2)).body.skipped).toEqual([{ index: 0, idempotencyKey: "nightly" }]);
      await new Promise((r) => setTimeout(r, 3000));
      await c.post("/api/actions/diagnostics.noop", { params: {} });
      const expired = await eventually(async () => {
        const res = await c.get(`/api/events?afterCursor=${encodeURIComponent(oldest.cursor)}`);
        return res.status === 410 ? res : undefined;
      }, 10_000, 250);
      expect(expired.body.error.code).toBe("cursor_expired");
      // the events went with the broker's max_age, and their keys from svc's store with them: a key
      // past the retention appends again (event_keys grew for ever under NATS before)
      const again = await eventually(async () => {
        const res = await append(3);
        return res.body.skipped.length === 0 ? res : undefined;
      }, 10_000, 250);
      expect(again.body.events).toHaveLength(1);
    } finally {
      await app.close();
      await nats.stop();
    }
  }, 60_000);
});
