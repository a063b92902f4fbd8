import { EventEmitter } from "node:events";
import * as v from "valibot";
import { inject, injectable } from "../di";
import { Database } from "../store/db";
import { EventLog } from "../events/log";
import { EVENT_STREAM, type EventStream } from "../events/stream";
import { EVENT_TYPES, TOPICS } from "../events/catalog";
import { ProjectRegistry } from "../project/registry";
import { own } from "../sdk/project";
import { Lifecycle } from "../lifecycle";
import { LOGGER, type Logger } from "../logger";
import { CONFIG, type Config } from "../config";
import { ApiError } from "../errors";
import { decodeListingToken, encodeListingToken, isTextPair } from "../http/listing-token";
import { HandlerRunner } from "./handler";
import { ScheduleConsumer } from "./event-schedule-consumer";
import { eventScheduleLimits, type RegisteredEventSchedule } from "./event-schedule-model";

/** An event selector as `GET /api/schedules` shows it (spec 6.1; see `EventSelector` in the SDK). */
export const EventSelectorSchema = v.object({
  topics: v.optional(v.array(v.picklist(TOPICS))),
  types: v.optional(v.array(v.picklist(EVENT_TYPES))),
  objectTypeId: v.optional(v.string()),
  primaryId: v.optional(v.string()),
  partitionKey: v.optional(v.string()),
});

/** The durable consumer of an event schedule: where it is in the stream and what is left to do. */
export const EventConsumerStateSchema = v.object({
  cursor: v.optional(v.pipe(v.string(), v.description("Stream position before which every matching event is finished (opaque, as `afterCursor` of GET /api/events); absent: from the oldest retained event"))),
  backlog: v.pipe(v.number(), v.description("Matching events read and not finished yet (pending, running or waiting for a retry)")),
  caughtUp: v.pipe(v.boolean(), v.description("Nothing unfinished and the stream read to its end")),
  oldestPendingAt: v.optional(v.pipe(v.string(), v.description("occurredAt of the oldest unfinished event"))),
  lagMs: v.optional(v.pipe(v.number(), v.description("Now minus oldestPendingAt, ms"))),
  running: v.number(),
  retrying: v.pipe(v.number(), v.description("Unfinished events that failed at least once")),
  deadLettered: v.pipe(v.number(), v.description("Events that failed maxAttempts times; retry one with POST /api/schedules/{scheduleId}/retry")),
  lastError: v.optional(v.object({ message: v.string(), eventId: v.string(), at: v.string() })),
  cursorExpiredAt: v.optional(v.pipe(v.string(), v.description("Last time the stored cursor had been pruned by retention; the consumer went on from the oldest retained event"))),
});

/** An event schedule as operators read it (`GET /api/schedules`). */
export const EventScheduleStateSchema = v.object({
  scheduleId: v.string(),
  connectorId: v.string(),
  on: EventSelectorSchema,
  paused: v.boolean(),
  note: v.optional(v.string()),
  description: v.optional(v.string()),
  maxAttempts: v.number(),
  concurrency: v.number(),
  timeoutMs: v.pipe(v.number(), v.description("How long one attempt of the handler may run (ms) before it fails as timed out")),
  consumer: EventConsumerStateSchema,
});
export type EventScheduleState = v.InferOutput<typeof EventScheduleStateSchema>;

/** A dead-lettered event of an event schedule. */
export const DeadLetterSchema = v.object({
  eventId: v.string(),
  type: v.string(),
  partitionKey: v.string(),
  occurredAt: v.string(),
  attempts: v.number(),
  lastError: v.string(),
  deadAt: v.string(),
});
export type DeadLetter = v.InferOutput<typeof DeadLetterSchema>;

/** The event schedules' part of `/api/status`. */
export interface EventSchedulesHealth {
  status: "ok" | "unhealthy";
  maxLagMs: number;
  schedules: Array<{ scheduleId: string; paused: boolean; backlog: number; lagMs?: number; retrying: number; deadLettered: number; caughtUp: boolean }>;
  /** Why it is unhealthy, per schedule. */
  problems: Array<{ scheduleId: string; problem: string }>;
}

/**
 * A page of a schedule's dead letters (parameters: schedule id, the position's `updated_at` and event id
 * (`""` for the first page), the rows to read): oldest first, read from the position through
 * `event_schedule_events_dead` (migration 019) without sorting the schedule's dead letters.
 */
export const DEAD_LETTERS_PAGE =
  "SELECT event_id, json_extract(event, '$.type') AS type, partition_key, occurred_at, attempts, last_error, updated_at FROM event_schedule_events WHERE schedule_id = ? AND status = 'dead' AND (updated_at, event_id) > (?, ?) ORDER BY updated_at, event_id LIMIT ?";

/**
 * The event schedules (spec 6.1: "declarative event schedules use event selectors and are defined and
 * registered separately"; appending an event runs nothing by itself). One durable consumer per
 * schedule whose definition has `on` ({@link ScheduleConsumer}), not on Temporal:
 *
 * - **Position.** Each reads the event stream from a stored cursor: the position before which every
 *   matching event is finished. A schedule seen for the first time starts at the newest event (it does
 *   not back-fill history). Events finished out of cursor order are recorded, so a restart (graceful or
 *   a crash) neither skips nor repeats one. An expired cursor (pruned by retention) is logged, shown as
 *   `cursorExpiredAt`, and the consumer goes on from the oldest retained event.
 * - **Matching.** All given selector fields must match (`topics`, `types`, `objectTypeId`, `primaryId`
 *   on the event's subject, `partitionKey`). A schedule never fires on what it produced itself (events
 *   whose `origin.scheduleId` is its id: its writes and its `schedule.triggered`).
 * - **Once per event.** The handler runs with `ctx.event`, `ctx.attempt`, `occurrenceAt` = the event's
 *   occurredAt (HandlerRunner, idempotency key `schedule:<scheduleId>:<eventId>`, origin `{ kind:
 *   "runtime", connectorId, scheduleId, eventId }`, correlationId = the event's or its id, causationId =
 *   the event id). Its writes, `schedule.triggered` `{ scheduleId, occurrenceAt, triggeredAt,
 *   occurrenceKey: "<scheduleId>@<eventId>", eventId }` and the consumer's progress commit in ONE
 *   transaction; handlers that finish together commit together (group commit).
 * - **Order.** Within a partition key events run strictly in stream order, the next only after the
 *   previous one committed; partitions run concurrently (up to `concurrency`, oldest first).
 * - **Failures.** A throw, an attempt running past `timeoutMs` (default 5 min; its buffered writes are
 *   dropped and `ctx.signal` aborted) or a write refused at commit is retried after 1 s, doubling up to 60 s, and
 *   blocks only its partition; after `maxAttempts` the event is dead-lettered (kept with its error, no
 *   `schedule.triggered`) and the partition proceeds. {@link EventScheduleConsumers.retry} runs a
 *   dead-lettered event again (attempts start over), next in its partition.
 * - **Pause.** Stored; a paused consumer starts no handler but keeps reading, so its backlog shows.
 *
 * Schedules no longer declared lose their stored state at startup (declared again, they start at the
 * newest event), as a cron schedule removed from the code is deleted from Temporal.
 *
 * @throws Error at construction when a selector names an unknown object type
 */
@injectable()
export class EventScheduleConsumers {
  /** `"committed"` `{ scheduleId, events: [{ eventId, occurredAt, partitionKey }], at }` after each commit that finished events. */
  readonly notifier = new EventEmitter();
  private readonly schedules: RegisteredEventSchedule[];
  private readonly consumers = new Map<string, ScheduleConsumer>();
  private started = false;

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(EVENT_STREAM) private readonly stream: EventStream,
    @inject(HandlerRunner) private readonly handlers: HandlerRunner,
    @inject(ProjectRegistry) project: ProjectRegistry,
    @inject(Lifecycle) lifecycle: Lifecycle,
    @inject(LOGGER) private readonly log: Logger,
    @inject(CONFIG) private readonly config: Config,
  ) {
    this.notifier.setMaxListeners(0);
    this.schedules = project.schedules().filter((s): s is RegisteredEventSchedule => s.definition.on !== undefined);
    for (const s of this.schedules) {
      const type = s.definition.on.objectTypeId;
      if (type !== undefined && !own(project.definition.objectTypes, type)) throw new Error(`Schedule "${s.scheduleId}" of connector "${s.connectorId}": unknown object type "${type}" in its event selector`);
    }
    lifecycle.every(config.outboxRecoveryMs, () => {
      for (const c of this.consumers.values()) c.poke();
    });
    lifecycle.hook("close", () => this.stop());
  }

  /** Whether `scheduleId` is a declared event schedule. */
  has(scheduleId: string): boolean {
    return this.schedules.some((s) => s.scheduleId === scheduleId);
  }

  /**
   * Loads every event schedule's stored state (creating it for new ones), forgets undeclared ones, then
   * starts the consumers (not awaiting their backlog).
   */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const declared = this.schedules.map((s) => s.scheduleId);
    const stale = await this.db.all<{ schedule_id: string }>(`SELECT schedule_id FROM event_schedule_consumers WHERE schedule_id NOT IN (SELECT value FROM json_each(?))`, [JSON.stringify(declared)]);
    if (stale.length) {
      await this.db.transaction(async (tx) => {
        for (const { schedule_id } of stale) {
          await tx.run("DELETE FROM event_schedule_events WHERE schedule_id = ?", [schedule_id]);
          await tx.run("DELETE FROM event_schedule_consumers WHERE schedule_id = ?", [schedule_id]);
        }
      });
      this.log.info({ schedules: stale.map((s) => s.schedule_id) }, "forgot the state of event schedules no longer declared");
    }
    for (const s of this.schedules) {
      const consumer = new ScheduleConsumer({ db: this.db, stream: this.stream, events: this.events, handlers: this.handlers, log: this.log, notifier: this.notifier }, s);
      await consumer.open();
      this.consumers.set(s.scheduleId, consumer);
    }
    for (const c of this.consumers.values()) c.start();
  }

  /** Stops every consumer; handlers in flight get up to `SVC_SHUTDOWN_TIMEOUT_MS` and what finished is committed. */
  async stop(): Promise<void> {
    await Promise.all([...this.consumers.values()].map((c) => c.stop(this.config.shutdownTimeoutMs)));
  }

  /** @throws {ApiError} not_found when no event schedule has this id (or the consumers are not started) */
  private consumer(scheduleId: string): ScheduleConsumer {
    const c = this.consumers.get(scheduleId);
    if (!c) throw new ApiError("not_found", `No event schedule "${scheduleId}"`);
    return c;
  }

  /** Every event schedule with its consumer's state. */
  list(): EventScheduleState[] {
    return this.schedules.map((s) => this.describe(s.scheduleId));
  }

  /** @throws {ApiError} not_found */
  describe(scheduleId: string): EventScheduleState {
    const c = this.consumer(scheduleId);
    const { connectorId, definition } = c.schedule;
    const { paused, note, ...consumer } = c.snapshot();
    return {
      scheduleId,
      connectorId,
      on: { ...definition.on },
      paused,
      ...(note !== undefined ? { note } : {}),
      ...(definition.description !== undefined ? { description: definition.description } : {}),
      ...eventScheduleLimits(definition),
      consumer,
    };
  }

  /** Pauses (stored): no handler starts; reading goes on, so the backlog grows visibly. @throws {ApiError} not_found */
  async pause(scheduleId: string, note?: string): Promise<EventScheduleState> {
    await this.consumer(scheduleId).setPaused(true, note ?? "paused through the API");
    return this.describe(scheduleId);
  }

  /** @throws {ApiError} not_found */
  async unpause(scheduleId: string, note?: string): Promise<EventScheduleState> {
    await this.consumer(scheduleId).setPaused(false, note ?? "unpaused through the API");
    return this.describe(scheduleId);
  }

  /**
   * Runs a dead-lettered event again (an operator's retry): its attempts start over and it runs next in
   * its partition; on success it commits like any other (writes, `schedule.triggered`).
   * @throws {ApiError} not_found when there is no such event schedule or the event is not dead-lettered for it
   */
  async retry(scheduleId: string, eventId: string): Promise<EventScheduleState> {
    await this.consumer(scheduleId).retry(eventId);
    return this.describe(scheduleId);
  }

  /**
   * The schedule's dead-lettered events, oldest first, at most `limit`, after the position of
   * `pageToken` (a `nextPageToken` this schedule's listing answered); `nextPageToken` names the next page when
   * there is one (a keyset on when they died and their event id: a retried event leaves the list
   * without shifting the pages).
   * @throws {ApiError} not_found; invalid_request for a token of another listing
   */
  async deadLetters(scheduleId: string, limit: number, pageToken?: string): Promise<{ data: DeadLetter[]; nextPageToken?: string }> {
    this.consumer(scheduleId);
    const filters = JSON.stringify(["dead-letters", scheduleId]);
    const after = pageToken === undefined ? undefined : decodeListingToken(pageToken, filters, isTextPair, "scheduleId");
    const rows = await this.db.all<{ event_id: string; type: string | null; partition_key: string; occurred_at: string; attempts: number; last_error: string | null; updated_at: string }>(
      DEAD_LETTERS_PAGE,
      [scheduleId, after?.[0] ?? "", after?.[1] ?? "", limit + 1],
    );
    const page = rows.slice(0, limit);
    const data = page.map((r) => ({ eventId: r.event_id, type: r.type ?? "", partitionKey: r.partition_key, occurredAt: r.occurred_at, attempts: r.attempts, lastError: r.last_error ?? "", deadAt: r.updated_at }));
    const last = page.at(-1);
    return { data, ...(rows.length > limit && last ? { nextPageToken: encodeListingToken([last.updated_at, last.event_id], filters) } : {}) };
  }

  /**
   * The `/api/status` part: `unhealthy` while any event schedule has dead-lettered events, or an
   * unpaused one's oldest unfinished event is older than `SVC_EVENT_SCHEDULE_MAX_LAG_MS` (a paused
   * schedule's lag is expected; its backlog is shown). `problems` says which and why.
   */
  health(): EventSchedulesHealth {
    const maxLagMs = this.config.eventScheduleMaxLagMs;
    const schedules: EventSchedulesHealth["schedules"] = [];
    const problems: EventSchedulesHealth["problems"] = [];
    for (const [scheduleId, c] of this.consumers) {
      const s = c.snapshot();
      schedules.push({ scheduleId, paused: s.paused, backlog: s.backlog, ...(s.lagMs !== undefined ? { lagMs: s.lagMs } : {}), retrying: s.retrying, deadLettered: s.deadLettered, caughtUp: s.caughtUp });
      if (s.deadLettered > 0) problems.push({ scheduleId, problem: `${s.deadLettered} dead-lettered event(s); see GET /api/schedules/${scheduleId}/dead-letters` });
      if (!s.paused && (s.lagMs ?? 0) > maxLagMs) problems.push({ scheduleId, problem: `lag ${s.lagMs} ms above ${maxLagMs} ms (oldest unfinished event from ${s.oldestPendingAt})` });
    }
    return { status: problems.length ? "unhealthy" : "ok", maxLagMs, schedules, problems };
  }
}
