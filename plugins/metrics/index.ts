import { Database, HealthReport, Metrics, TokenService, WorkflowRuns, definePlugin, type Health, type MetricSamples } from "../../core/plugin-api";

/** How long after it settled one read (the health check, the open interventions) still serves the gauges (ms): a scrape reads each gauge, and the read runs once. */
const READ_REUSE_MS = 1000;

/**
 * `read` shared by the gauges of a scrape: one call serves every caller while it runs and for
 * {@link READ_REUSE_MS} after it settled, never after it failed (the gauges of that scrape answer
 * nothing: `svc_metrics_read_failures_total`; the next scrape reads again).
 */
function shared<T>(read: () => Promise<T>): () => Promise<T> {
  let last: { settledAt?: number; value: Promise<T> } | undefined;
  return () => {
    if (last && (last.settledAt === undefined || Date.now() - last.settledAt <= READ_REUSE_MS)) return last.value;
    const current: NonNullable<typeof last> = { value: read() };
    last = current;
    current.value.then(
      () => void (current.settledAt = Date.now()),
      () => void (last === current && (last = undefined)),
    );
    return current.value;
  };
}

/**
 * `GET /metrics`: the service's metrics in Prometheus' text format (core/metrics.ts): Node's process
 * metrics, the HTTP requests by route template (`svc_http_requests_total`,
 * `svc_http_request_duration_seconds`), the open WebSockets (`svc_websocket_connections{path}`), the
 * runtime's outcomes as they happen (`svc_action_runs_total`, `svc_webhook_deliveries_total`,
 * `svc_events_appended_total`, `svc_retention_deleted_total`: counted by the runtime itself), the open
 * interventions, the API tokens' time to expiry, the store's counters (`svc_store_…_total`: calls to SQLite,
 * transactions, group commits, WAL checkpoints) and the health report's parts as gauges
 * (`svc_health_part_healthy{part}`, the outbox's backlog, queued runs not started, each event schedule's
 * backlog, lag and dead letters), read when Prometheus scrapes. Any valid token may read it, as
 * `GET /api/status`: scrape with a service account's token (`authorization: { credentials: … }`).
 */
export default definePlugin({
  name: "metrics",
  deps: { metrics: Metrics, health: HealthReport, db: Database, workflows: WorkflowRuns, tokens: TokenService },
  setup({ routes, project }, { metrics, health, db, workflows, tokens }) {
    const report = shared(() => health.check());
    const parts = async (pick: (p: Health["parts"]) => MetricSamples) => pick((await report()).parts);

    metrics.gauge("svc_health_part_healthy", "1 while the part is healthy, 0 while it is not (GET /api/status)", ["part"], async () =>
      Object.entries((await report()).parts).map(([part, p]) => ({ labels: { part }, value: p.status === "ok" ? 1 : 0 })),
    );
    metrics.gauge("svc_store_writer_wait_seconds", "How long the single writer has kept a write waiting (seconds; 0 when none waits)", [], () => parts((p) => [{ value: p.store.writerWaitMs / 1000 }]));
    metrics.gauge("svc_outbox_backlog", "Envelopes in the outbox not yet appended to the broker stream", [], () => parts((p) => [{ value: p.outbox.backlog }]));
    metrics.gauge("svc_outbox_oldest_age_seconds", "Age of the oldest envelope in the outbox (seconds; 0 when empty)", [], () => parts((p) => [{ value: (p.outbox.oldestAgeMs ?? 0) / 1000 }]));
    metrics.gauge("svc_run_starts_pending", "Workflow, sync and pipeline runs answered as queued and not started on Temporal yet", [], () => parts((p) => [{ value: p.runStarts.pending }]));
    metrics.gauge("svc_run_starts_oldest_pending_age_seconds", "How long the oldest of them has waited (seconds; 0 when none)", [], () => parts((p) => [{ value: (p.runStarts.oldestPendingAgeMs ?? 0) / 1000 }]));
    const perSchedule = (value: (s: Health["parts"]["schedules"]["schedules"][number]) => number) => () => parts((p) => p.schedules.schedules.map((s) => ({ labels: { schedule: s.scheduleId }, value: value(s) })));
    metrics.gauge("svc_event_schedule_backlog", "Events an event schedule's consumer has yet to handle", ["schedule"], perSchedule((s) => s.backlog));
    metrics.gauge("svc_event_schedule_lag_seconds", "Age of the oldest event an event schedule's consumer has not finished (seconds; 0 when caught up)", ["schedule"], perSchedule((s) => (s.lagMs ?? 0) / 1000));
    metrics.gauge("svc_event_schedule_retrying", "Events an event schedule's consumer is retrying", ["schedule"], perSchedule((s) => s.retrying));
    metrics.gauge("svc_event_schedule_dead_letters", "Events an event schedule dead-lettered (GET /api/schedules/{id}/dead-letters)", ["schedule"], perSchedule((s) => s.deadLettered));

    const open = shared(() => workflows.openInterventionsSummary());
    metrics.gauge("svc_interventions_open", "Interventions open: workflow runs waiting for a person's answer (GET /api/interventions)", [], async () => [{ value: (await open()).open }]);
    metrics.gauge("svc_interventions_oldest_open_age_seconds", "How long the oldest open intervention has waited (seconds; 0 when none is open)", [], async () => {
      const { oldestRequestedAt } = await open();
      return [{ value: oldestRequestedAt === undefined ? 0 : Math.max(0, (Date.now() - Date.parse(oldestRequestedAt)) / 1000) }];
    });

    // a service account's token that expires stops a script or an integration: alert on those (README "Metrics")
    metrics.gauge("svc_api_token_expires_in_seconds", "Seconds until each working API token with an expiry stops working, by token id, identity and identity type (user, serviceAccount)", ["token", "identity", "identity_type"], async () =>
      (await tokens.expiring()).map((t) => ({ labels: { token: t.id, identity: t.identityId, identity_type: project.identityType(t.identityId) ?? "unknown" }, value: Math.max(0, (Date.parse(t.expiresAt) - Date.now()) / 1000) })),
    );

    const store = (value: (s: ReturnType<Database["stats"]>) => number) => () => [{ value: value(db.stats()) }];
    metrics.counter("svc_store_writer_calls_total", "Calls to SQLite on the writer connection", [], store((s) => s.writerStatements));
    metrics.counter("svc_store_reader_calls_total", "Calls to SQLite on the read connection", [], store((s) => s.readerStatements));
    metrics.counter("svc_store_transactions_total", "Write transactions run (each caller of a group commit)", [], store((s) => s.transactions));
    metrics.counter("svc_store_commits_total", "Group commits: one COMMIT for all the transactions that joined it", [], store((s) => s.commits));
    metrics.counter("svc_store_wal_checkpoints_total", "WAL checkpoints run by the checkpointer connection", [], store((s) => s.checkpoints));
    metrics.counter("svc_store_wal_restart_seconds_total", "Time the writer spent copying back the WAL's last frames between groups (seconds)", [], store((s) => s.walRestartMs / 1000));

    routes.add({
      method: "GET",
      path: "/metrics",
      summary: "Metrics in Prometheus' text format",
      description: "Node's process metrics (CPU, memory, heap, event-loop delay, GC) and svc's own, named `svc_…`: HTTP requests by method, route template and status, and their durations; WebSocket connections open by endpoint; action runs by action and status, webhook deliveries by connector, webhook and outcome, events appended by type; the open interventions and the oldest one's age; the store's calls, transactions, group commits and WAL checkpoints; the health report's parts (`svc_health_part_healthy{part}`), the outbox's backlog, queued runs not started on Temporal, each event schedule's backlog, lag and dead letters. Any valid token may read it (as `GET /api/status`).",
      tags: ["status"],
      auth: "bearer",
      responses: { 200: { description: "The exposition, text format 0.0.4", contentType: "text/plain; version=0.0.4; charset=utf-8" } },
      handler: async () => {
        const { body, contentType } = await metrics.scrape();
        return new Response(body, { headers: { "content-type": contentType, "cache-control": "no-store" } });
      },
    });
  },
});
