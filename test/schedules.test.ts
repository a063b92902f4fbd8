import { describe, expect, it } from "vitest";
import { ScheduleNotFoundError } from "@temporalio/client";
import { client, eventually, startApp, tokenFor } from "./helpers";
import { sandboxProject } from "../sandbox/project";
import { defineConnector, defineSchedule } from "../core/sdk";

describe("connector schedules on Temporal", () => {
  it("upserts declared schedules, lets operators pause, unpause and trigger, and fires exactly once per occurrence", async () => {
    const taskQueue = `sched-${Math.random().toString(36).slice(2)}`;
    const app = await startApp({ taskQueue, env: { SVC_SCHEDULES: "true" } });
    try {
      const c = client(app);
      const listed = await c.get("/api/schedules");
      expect(listed.status).toBe(200);
      const [scan, reminder] = listed.body.data;
      expect(scan).toMatchObject({ scheduleId: "overdue-scan", connectorId: "billing", cron: "0 * * * *", timezone: "UTC", overlap: "skip", paused: false, temporalScheduleId: `${taskQueue}:overdue-scan` });
      expect(scan.nextRuns.length).toBeGreaterThan(0);
      expect(new Date(scan.nextRuns[0]).getUTCMinutes()).toBe(0);
      // the event schedule is listed beside it, with its consumer, and is not a Temporal Schedule
      expect(reminder).toMatchObject({ scheduleId: "overdue-reminder", connectorId: "billing", on: { types: ["rule.triggered"], objectTypeId: "invoice" }, paused: false, consumer: { backlog: 0, deadLettered: 0 } });
      expect(reminder.temporalScheduleId).toBeUndefined();
      await expect(app.temporal.client.schedule.getHandle(`${taskQueue}:overdue-reminder`).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);

      // paused, it lists no next runs (it will run at none of them)
      expect((await c.post("/api/schedules/overdue-scan/pause", { note: "maintenance" })).body).toMatchObject({ paused: true, note: "maintenance", nextRuns: [] });
      const unpaused = (await c.post("/api/schedules/overdue-scan/unpause", {})).body;
      expect([unpaused.paused, unpaused.nextRuns.length > 0]).toEqual([false, true]);
      // its description stays the declaration's; the note is what the last unpause said
      expect(unpaused).toMatchObject({ description: "Marks open invoices whose due date has passed as overdue.", note: "unpaused through the API" });
      expect((await c.post("/api/schedules/nope/trigger", {})).status).toBe(404);
      expect((await c.post("/api/schedules/overdue-reminder/trigger", {})).body.error.code).toBe("conflict");
      expect((await client(app, await tokenFor(app, "alice")).get("/api/schedules")).status).toBe(403);

      // a trigger records no note: one sent is refused, not dropped in silence
      const noted = await c.post("/api/schedules/overdue-scan/trigger", { note: "why" });
      expect([noted.status, noted.body.error.message]).toEqual([400, expect.stringContaining("a trigger takes no fields (send {}): only pause and unpause record a note")]);
      const triggered = await c.post("/api/schedules/overdue-scan/trigger", {});
      expect(triggered.status).toBe(200);
      const event = await eventually(async () => (await c.get("/api/events?type=schedule.triggered")).body.events.find((e: any) => e.payload.scheduleId === "overdue-scan"));
      expect(event.payload).toMatchObject({ scheduleId: "overdue-scan", occurrenceAt: expect.any(String), triggeredAt: expect.any(String), occurrenceKey: `overdue-scan@${event.payload.occurrenceAt}` });
      const invoice = await eventually(async () => {
        const res = await c.get("/api/objects/invoice/inv_1002");
        return res.body.properties.status === "overdue" ? res.body : undefined;
      });
      expect(invoice.properties.dueDate < event.payload.occurrenceAt.slice(0, 10)).toBe(true);
      expect((await c.get("/api/objects/invoice/inv_1001")).body.properties.status).toBe("open");

      await new Promise((r) => setTimeout(r, 500));
      const all = (await c.get("/api/events?limit=1000")).body.events;
      expect(all.filter((e: any) => e.type === "schedule.triggered" && e.payload.scheduleId === "overdue-scan")).toHaveLength(1);
      const writes = all.filter((e: any) => e.correlationId === event.payload.occurrenceKey && e.type === "object.updated" && e.origin.scheduleId === "overdue-scan");
      expect(writes.map((e: any) => e.payload.primaryId)).toEqual(["inv_1002"]);
      expect(writes[0].origin).toMatchObject({ kind: "runtime", connectorId: "billing", scheduleId: "overdue-scan" });

      // two triggers at once are two occurrences, never one occurrence key twice (Temporal names a
      // schedule's runs by the second: the second trigger waits for the next one). The schedule's overlap
      // policy is skip, so the second is skipped when the first's run is still running a second later (a
      // loaded machine: it failed so in a full CI run): one or two new occurrences, each its own key
      const both = await Promise.all([c.post("/api/schedules/overdue-scan/trigger", {}), c.post("/api/schedules/overdue-scan/trigger", {})]);
      expect(both.map((r) => r.status)).toEqual([200, 200]);
      const fired = async () => ((await c.get("/api/events?type=schedule.triggered&limit=1000")).body.events as any[]).filter((e) => e.payload.scheduleId === "overdue-scan");
      await eventually(async () => (await fired()).length >= 2);
      await new Promise((r) => setTimeout(r, 3000));
      const keys = (await fired()).map((e) => e.payload.occurrenceKey);
      expect(keys.length === 2 || keys.length === 3, JSON.stringify(keys)).toBe(true);
      expect(new Set(keys).size).toBe(keys.length);
    } finally {
      await app.close();
    }

    // The same runtime without the schedule declared removes it from Temporal.
    // (without its seed too: the seed commits the billing connector's price-list dataset)
    const without = { ...sandboxProject, connectors: sandboxProject.connectors.filter((c) => c.id !== "billing"), seed: undefined };
    const second = await startApp({ taskQueue, env: { SVC_SCHEDULES: "true" }, project: without });
    try {
      await eventually(async () => {
        try {
          await second.temporal.client.schedule.getHandle(`${taskQueue}:overdue-scan`).describe();
          return false;
        } catch (err) {
          return err instanceof ScheduleNotFoundError;
        }
      });
      expect((await client(second).get("/api/schedules")).body.data).toEqual([]);
    } finally {
      await second.close();
    }
  });

  it("with SVC_SCHEDULES=false and nothing created on Temporal: lists every schedule, says which are not on Temporal and why, and refuses pause, unpause and trigger with 409", async () => {
    const taskQueue = `sched-off-${Math.random().toString(36).slice(2)}`;
    const app = await startApp({ taskQueue });
    try {
      const c = client(app);
      const listed = await c.get("/api/schedules");
      expect(listed.status).toBe(200);
      const temporal = listed.body.data.filter((s: any) => s.cron !== undefined || s.every !== undefined);
      expect(temporal.length).toBeGreaterThan(0);
      for (const s of temporal) expect(s).toMatchObject({ onTemporal: false, nextRuns: [], recentRuns: [], note: expect.stringContaining("SVC_SCHEDULES=false") });
      const id = temporal[0].scheduleId;
      for (const action of ["pause", "unpause", "trigger"]) {
        const res = await c.post(`/api/schedules/${id}/${action}`, {});
        expect([action, res.status, res.body.error?.code, res.body.error?.message]).toEqual([action, 409, "conflict", expect.stringContaining("not on Temporal")]);
      }
    } finally {
      await app.close();
    }
  });

  it("fails the start naming the schedule and Temporal's reason when Temporal refuses it (a cron field out of range)", async () => {
    const taskQueue = `sched-bad-${Math.random().toString(36).slice(2)}`;
    const bad = defineConnector({ id: "bad-cron", schedules: { "minute-61": defineSchedule({ cron: "61 * * * *", run: async () => undefined }) } });
    const project = { ...sandboxProject, connectors: [...sandboxProject.connectors, bad] };
    const failed = await startApp({ taskQueue, env: { SVC_SCHEDULES: "true" }, project }).then(
      async (app) => {
        await app.close();
        return undefined;
      },
      (err: Error) => err,
    );
    expect(failed?.message).toMatch(/^Schedule "minute-61" of connector "bad-cron" could not be created or updated on Temporal: Failed to create schedule: .*Minute is not in range \[0-59\]/);
    expect(failed?.cause).toBeInstanceOf(Error);
  });
});
