import * as v from "valibot";
import { Database, EventScheduleConsumers, FileStore, Lifecycle, Outbox, RunStarter, TemporalHost, definePlugin, jsonResponse } from "../../core/plugin-api";

const PartSchema = v.looseObject({ status: v.picklist(["ok", "unhealthy"]) });
const StatusSchema = v.object({
  status: v.picklist(["ok", "degraded", "shutting_down"]),
  parts: v.object({ store: PartSchema, temporal: PartSchema, outbox: PartSchema, schedules: PartSchema, runStarts: PartSchema, files: PartSchema }),
  checkedAt: v.string(),
});

/**
 * `GET /api/status` (spec 4.1, 6.2): service health with its parts: the store (a read's latency, and
 * `writerWaitMs`, how long the single writer has kept a write waiting: unhealthy past 10 s), the Temporal
 * connection and the outbox (backlog, oldest age, failure streak). `degraded` when a part is
 * unhealthy: the outbox is unhealthy after {@link Outbox.DEGRADED_AFTER} consecutive drain failures
 * or when its oldest envelope is older than two recovery intervals. The `schedules` part lists the
 * event schedules' consumers (backlog, lag, retrying, dead-lettered) and is unhealthy while one has
 * dead-lettered events or an unpaused one lags more than `SVC_EVENT_SCHEDULE_MAX_LAG_MS`; `problems`
 * says which and why. The `runStarts` part counts workflow, sync and pipeline runs answered as queued
 * but not started on Temporal yet (`pending`, `oldestPendingAgeMs`, `inFlight`) and is unhealthy once
 * the oldest waited more than `SVC_RUN_START_MAX_AGE_MS` (e.g. during a Temporal outage). The `files`
 * part is the blob storage's (`storage`: `local` or `s3`): unhealthy when its directory cannot be
 * written, or its bucket does not answer a HeadBucket within 2 s (checked at most every 5 s).
 * `GET /health` answers the same status word without a token, as 200 (`ok`) or 503, for probes.
 */
/** The store part is unhealthy once the writer has kept a write waiting this long (ms). */
const WRITER_WAIT_UNHEALTHY_MS = 10_000;

export default definePlugin({
  name: "status",
  deps: { db: Database, lifecycle: Lifecycle, outbox: Outbox, temporal: TemporalHost, eventSchedules: EventScheduleConsumers, starter: RunStarter, files: FileStore },
  setup({ routes, config }, { db, lifecycle, outbox, temporal, eventSchedules, starter, files }) {
    /** The health report: every part checked now. */
    const report = async () => {
      const started = Date.now();
      const writerWaitMs = db.writerWaitMs();
      const store = await db.get("SELECT 1 AS ok").then(
        () =>
          writerWaitMs > WRITER_WAIT_UNHEALTHY_MS
            ? { status: "unhealthy" as const, latencyMs: Date.now() - started, writerWaitMs, error: `the writer has kept a write waiting ${writerWaitMs} ms (over ${WRITER_WAIT_UNHEALTHY_MS}): every write of the service waits behind it` }
            : { status: "ok" as const, latencyMs: Date.now() - started, writerWaitMs },
        (err: Error) => ({ status: "unhealthy" as const, writerWaitMs, error: err.message }),
      );
      const stats = await outbox.stats();
      const outboxHealthy = stats.consecutiveFailures < Outbox.DEGRADED_AFTER && (stats.oldestAgeMs ?? 0) < 2 * config.outboxRecoveryMs;
      const parts = {
        store,
        temporal: await temporal.health(),
        outbox: { status: outboxHealthy ? ("ok" as const) : ("unhealthy" as const), ...stats },
        schedules: eventSchedules.health(),
        runStarts: await starter.health(),
        files: await files.blobs.health(),
      };
      const healthy = Object.values(parts).every((p) => p.status === "ok");
      return { status: lifecycle.shuttingDown ? ("shutting_down" as const) : healthy ? ("ok" as const) : ("degraded" as const), parts, checkedAt: new Date().toISOString() };
    };
    routes.add({
      method: "GET",
      path: "/health",
      summary: "Health probe for load balancers and orchestrators",
      description: "The status word of `GET /api/status` with its HTTP status: 200 `ok`, 503 `degraded` or `shutting_down`. No token (a probe has none) and no detail (the parts need a token: `GET /api/status`).",
      tags: ["status"],
      auth: "none",
      responses: {
        200: { description: "Serving, every part healthy", schema: v.object({ status: v.literal("ok") }) },
        503: { description: "A part is unhealthy (`degraded`), or the service is shutting down (`shutting_down`)", schema: v.object({ status: v.picklist(["degraded", "shutting_down"]) }) },
      },
      async handler() {
        const { status } = await report();
        return jsonResponse({ status }, status === "ok" ? 200 : 503, { "cache-control": "no-store" });
      },
    });
    routes.add({
      method: "GET",
      path: "/api/status",
      summary: "Service health",
      description: "Health of the service and its parts: the store (a read's latency, and `writerWaitMs`: how long the single writer has kept a write waiting, unhealthy past 10 s), Temporal, the outbox, the event schedules' consumers (backlog, lag, dead letters), run starts (queued runs not yet started on Temporal, oldest age) and files (the blob storage: its directory writable, or its bucket's server answering within 2 s, checked at most every 5 s). `degraded` while any part is unhealthy (spec 6.2). Any valid token may read it.",
      tags: ["status"],
      auth: "bearer",
      responses: { 200: { description: "Health report", schema: StatusSchema } },
      handler: report,
    });
  },
});
