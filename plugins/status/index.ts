import * as v from "valibot";
import { HealthReport, definePlugin, jsonResponse } from "../../core/plugin-api";

const PartSchema = v.looseObject({ status: v.picklist(["ok", "unhealthy"]) });
const StatusSchema = v.object({
  status: v.picklist(["ok", "degraded", "shutting_down"]),
  parts: v.object({ store: PartSchema, temporal: PartSchema, outbox: PartSchema, schedules: PartSchema, runStarts: PartSchema, files: PartSchema }),
  checkedAt: v.string(),
});

/**
 * `GET /api/status` (spec 4.1, 6.2): service health with its parts (core/runtime/health.ts
 * `HealthReport`): the store, the Temporal connection, the outbox, the event schedules' consumers, run
 * starts and files; `degraded` when a part is unhealthy, and `problems` or `error` say why.
 * `GET /health` answers the same status word without a token, as 200 (`ok`) or 503, for probes.
 */
export default definePlugin({
  name: "status",
  deps: { health: HealthReport },
  setup({ routes }, { health }) {
    const report = () => health.check();
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
