import { inject, injectable } from "../di";
import { CONFIG, type Config } from "../config";
import { Lifecycle } from "../lifecycle";
import { Database } from "../store/db";
import { Outbox } from "../events/outbox";
import { TemporalHost } from "../temporal/host";
import { FileStore } from "../files/file-store";
import { EventScheduleConsumers } from "./event-schedules";
import { RunStarter } from "./run-starter";

/** The store part is unhealthy once the writer has kept a write waiting this long (ms). */
export const WRITER_WAIT_UNHEALTHY_MS = 10_000;

/**
 * The service's health (spec 6.2), part by part, as `GET /api/status` answers it, `GET /health`
 * summarizes it and `GET /metrics` exposes it (`svc_health_part_healthy`): the store (a read's
 * latency, and `writerWaitMs`, how long the single writer has kept a write waiting: unhealthy past
 * 10 s), the Temporal connection, the outbox (backlog, oldest age, failure streak: unhealthy after
 * {@link Outbox.DEGRADED_AFTER} consecutive drain failures or when its oldest envelope is older than two
 * recovery intervals), the event schedules' consumers (backlog, lag, retrying, dead-lettered:
 * unhealthy while one has dead-lettered events or an unpaused one lags more than
 * `SVC_EVENT_SCHEDULE_MAX_LAG_MS`), run starts (runs answered as queued but not started on Temporal:
 * unhealthy once the oldest waited more than `SVC_RUN_START_MAX_AGE_MS`) and files (the blob storage:
 * its directory writable, or its bucket answering a HeadBucket within 2 s, checked at most every 5 s).
 */
@injectable()
export class HealthReport {
  constructor(
    @inject(CONFIG) private readonly config: Config,
    @inject(Database) private readonly db: Database,
    @inject(Lifecycle) private readonly lifecycle: Lifecycle,
    @inject(Outbox) private readonly outbox: Outbox,
    @inject(TemporalHost) private readonly temporal: TemporalHost,
    @inject(EventScheduleConsumers) private readonly eventSchedules: EventScheduleConsumers,
    @inject(RunStarter) private readonly starter: RunStarter,
    @inject(FileStore) private readonly files: FileStore,
  ) {}

  /** Every part checked now; `degraded` while one is unhealthy, `shutting_down` once the service stops. */
  async check() {
    const started = Date.now();
    const writerWaitMs = this.db.writerWaitMs();
    const store = this.db.get("SELECT 1 AS ok").then(
      () =>
        writerWaitMs > WRITER_WAIT_UNHEALTHY_MS
          ? { status: "unhealthy" as const, latencyMs: Date.now() - started, writerWaitMs, error: `the writer has kept a write waiting ${writerWaitMs} ms (over ${WRITER_WAIT_UNHEALTHY_MS}): every write of the service waits behind it` }
          : { status: "ok" as const, latencyMs: Date.now() - started, writerWaitMs },
      (err: Error) => ({ status: "unhealthy" as const, writerWaitMs, error: err.message }),
    );
    // the parts are checked at once: with Temporal and a bucket both away, a check takes one timeout, not two
    const [storePart, stats, temporal, runStarts, files] = await Promise.all([store, this.outbox.stats(), this.temporal.health(), this.starter.health(), this.files.blobs.health()]);
    const outboxHealthy = stats.consecutiveFailures < Outbox.DEGRADED_AFTER && (stats.oldestAgeMs ?? 0) < 2 * this.config.outboxRecoveryMs;
    const parts = {
      store: storePart,
      temporal,
      outbox: { status: outboxHealthy ? ("ok" as const) : ("unhealthy" as const), ...stats },
      schedules: this.eventSchedules.health(),
      runStarts,
      files,
    };
    const healthy = Object.values(parts).every((p) => p.status === "ok");
    return { status: this.lifecycle.shuttingDown ? ("shutting_down" as const) : healthy ? ("ok" as const) : ("degraded" as const), parts, checkedAt: new Date().toISOString() };
  }
}

/** What {@link HealthReport.check} answers. */
export type Health = Awaited<ReturnType<HealthReport["check"]>>;
