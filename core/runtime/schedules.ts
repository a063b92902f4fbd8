import type { ScheduleOverlapPolicy, ScheduleSpec } from "@temporalio/client";
import * as v from "valibot";
import { inject, injectable } from "../di";
import { TemporalHost } from "../temporal/host";
import { ProjectRegistry } from "../project/registry";
import type { OverlapPolicy, ScheduleDefinition } from "../sdk/connector";
import { LOGGER, type Logger } from "../logger";
import { ApiError, messageOf } from "../errors";
import { EventScheduleConsumers, EventScheduleStateSchema, type DeadLetter, type EventScheduleState } from "./event-schedules";
import { temporalClient } from "../temporal/sdk";

/** Why a declared cron / interval schedule has no Temporal schedule, as its state and a refusal say it. */
const NOT_ON_TEMPORAL = "not on Temporal: the service started with SVC_SCHEDULES=false, which leaves Temporal's schedules as they are, and this one was never created there; start once with SVC_SCHEDULES=true to create it";

/**
 * The error a start fails with when Temporal refuses a schedule (or cannot be reached): it names the
 * schedule and gives Temporal's reason, which the SDK's error keeps in its causes ("Failed to create
 * schedule", caused by "3 INVALID_ARGUMENT: interval is too small"); the original error stays its `cause`.
 */
function refusedSchedule(scheduleId: string, connectorId: string, err: unknown): Error {
  const reasons: string[] = [];
  for (let e: unknown = err; e instanceof Error && reasons.length < 4; e = e.cause) if (!reasons.includes(e.message)) reasons.push(e.message);
  return new Error(`Schedule "${scheduleId}" of connector "${connectorId}" could not be created or updated on Temporal: ${reasons.join(": ") || messageOf(err)}`, { cause: err });
}

/** A declared overlap policy as Temporal's. */
const overlapPolicy = (overlap: OverlapPolicy): ScheduleOverlapPolicy => {
  const { ScheduleOverlapPolicy: P } = temporalClient();
  return { skip: P.SKIP, bufferOne: P.BUFFER_ONE, bufferAll: P.BUFFER_ALL, cancelOther: P.CANCEL_OTHER, terminateOther: P.TERMINATE_OTHER, allowAll: P.ALLOW_ALL }[overlap];
};

/**
 * A cron or interval schedule as operators read it (`GET /api/schedules`): Temporal's state, next five and
 * recent runs. `description` is the declaration's; `note` is Temporal's (the description when it was
 * created, then what the last pause or unpause said). `onTemporal` false: declared but not on Temporal (a
 * start with `SVC_SCHEDULES=false` never created it); it fires nothing, lists no runs and says why in `note`.
 */
export const TemporalScheduleStateSchema = v.object({
  scheduleId: v.string(),
  onTemporal: v.boolean(),
  connectorId: v.string(),
  description: v.optional(v.string()),
  cron: v.optional(v.string()),
  every: v.optional(v.number()),
  timezone: v.string(),
  overlap: v.picklist(["skip", "bufferOne", "bufferAll", "cancelOther", "terminateOther", "allowAll"]),
  paused: v.boolean(),
  note: v.optional(v.string()),
  nextRuns: v.array(v.string()),
  recentRuns: v.array(v.object({ scheduledAt: v.string(), takenAt: v.string(), runId: v.string() })),
  temporalScheduleId: v.string(),
});

/** A schedule as operators read it: a cron / interval schedule on Temporal, or an event schedule with its consumer. */
export const ScheduleStateSchema = v.union([TemporalScheduleStateSchema, EventScheduleStateSchema]);
export type ScheduleState = v.InferOutput<typeof TemporalScheduleStateSchema> | EventScheduleState;

/**
 * Connectors' schedules. Cron and interval schedules are Temporal Schedules: each is upserted at startup
 * under the id `<taskQueue>:<scheduleId>` (so runtimes sharing a cluster on different task queues do not
 * collide); a schedule under that prefix that no connector declares any more is deleted. A firing starts
 * the `scheduleFiring` workflow, which appends `schedule.triggered` and runs the handler as an activity.
 * Event schedules (`on`, spec 6.1) are not on Temporal: reads and pause / unpause go to
 * {@link EventScheduleConsumers}; triggering one is refused (409).
 */
@injectable()
export class ScheduleManager {
  /** Per schedule, the triggers through the API in order (each waits for the one before). */
  private readonly triggerChain = new Map<string, Promise<void>>();
  /** Per schedule, the second (epoch s) of its last trigger through the API. */
  private readonly triggeredSecond = new Map<string, number>();

  constructor(
    @inject(TemporalHost) private readonly host: TemporalHost,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(LOGGER) private readonly log: Logger,
    @inject(EventScheduleConsumers) private readonly eventSchedules: EventScheduleConsumers,
  ) {}

  private temporalId(scheduleId: string): string {
    return `${this.host.taskQueue}:${scheduleId}`;
  }

  private declared(scheduleId: string): { connectorId: string; definition: ScheduleDefinition } {
    const found = this.project.schedules().find((s) => s.scheduleId === scheduleId);
    if (!found) throw new ApiError("not_found", `No schedule "${scheduleId}"`);
    return found;
  }

  /**
   * Upserts every declared cron / interval schedule and removes undeclared ones under this runtime's
   * prefix (event schedules are not Temporal Schedules).
   * @throws Error naming the schedule and Temporal's reason when Temporal refuses one (a cron field out
   *   of range, an interval or time zone its server does not take)
   */
  async sync(): Promise<void> {
    const client = this.host.client;
    const declared = this.project.schedules().filter((s) => s.definition.on === undefined);
    for (const { scheduleId, connectorId, definition } of declared) {
      const spec: ScheduleSpec = definition.cron ? { cronExpressions: [definition.cron], timezone: definition.timezone ?? "UTC" } : { intervals: [{ every: definition.every! }], timezone: definition.timezone ?? "UTC" };
      const action = { type: "startWorkflow" as const, workflowType: "scheduleFiring", taskQueue: this.host.taskQueue, args: [{ scheduleId }], workflowId: this.temporalId(scheduleId) };
      const policies = { overlap: overlapPolicy(definition.overlap ?? "skip"), catchupWindow: "1 minute" as const };
      try {
        try {
          await client.schedule.create({ scheduleId: this.temporalId(scheduleId), spec, action, policies, state: { paused: definition.paused ?? false, note: definition.description } });
          this.log.info({ scheduleId }, "created Temporal schedule");
        } catch (err) {
          if (!(err instanceof temporalClient().ScheduleAlreadyRunning)) throw err;
          await client.schedule.getHandle(this.temporalId(scheduleId)).update((previous) => ({ ...previous, spec, action, policies }));
        }
      } catch (err) {
        throw refusedSchedule(scheduleId, connectorId, err);
      }
    }
    const keep = new Set(declared.map((s) => this.temporalId(s.scheduleId)));
    const prefix = `${this.host.taskQueue}:`;
    for await (const summary of client.schedule.list()) {
      if (summary.scheduleId.startsWith(prefix) && !keep.has(summary.scheduleId)) {
        await client.schedule.getHandle(summary.scheduleId).delete().catch((err) => {
          if (!(err instanceof temporalClient().ScheduleNotFoundError)) throw err;
        });
        this.log.info({ scheduleId: summary.scheduleId }, "deleted Temporal schedule no longer declared");
      }
    }
  }

  /** Every declared schedule with its Temporal state and next runs. */
  async list(): Promise<ScheduleState[]> {
    return Promise.all(this.project.schedules().map((s) => this.describe(s.scheduleId)));
  }

  /** @throws {ApiError} not_found */
  async describe(scheduleId: string): Promise<ScheduleState> {
    const { connectorId, definition } = this.declared(scheduleId);
    if (definition.on) return this.eventSchedules.describe(scheduleId);
    let d;
    const declared = { scheduleId, connectorId, ...(definition.description ? { description: definition.description } : {}), ...(definition.cron ? { cron: definition.cron } : { every: definition.every }), timezone: definition.timezone ?? "UTC", overlap: definition.overlap ?? "skip" };
    try {
      d = await this.host.client.schedule.getHandle(this.temporalId(scheduleId)).describe();
    } catch (err) {
      if (!(err instanceof temporalClient().ScheduleNotFoundError)) throw err;
      return { ...declared, onTemporal: false, paused: false, note: NOT_ON_TEMPORAL, nextRuns: [], recentRuns: [], temporalScheduleId: this.temporalId(scheduleId) };
    }
    return {
      ...declared,
      onTemporal: true,
      paused: d.state.paused,
      ...(d.state.note ? { note: d.state.note } : {}),
      // a paused schedule runs at none of the times Temporal still computes for it
      nextRuns: d.state.paused ? [] : d.info.nextActionTimes.slice(0, 5).map((t) => t.toISOString()),
      recentRuns: d.info.recentActions.slice(-5).map((a) => ({ scheduledAt: a.scheduledAt.toISOString(), takenAt: a.takenAt.toISOString(), runId: a.action.workflow.workflowId })),
      temporalScheduleId: this.temporalId(scheduleId),
    };
  }

  /** Pauses a schedule (firings stop until unpaused). */
  async pause(scheduleId: string, note?: string): Promise<ScheduleState> {
    if (this.declared(scheduleId).definition.on) return this.eventSchedules.pause(scheduleId, note);
    await this.onTemporal(scheduleId, (handle) => handle.pause(note ?? "paused through the API"));
    return this.describe(scheduleId);
  }

  async unpause(scheduleId: string, note?: string): Promise<ScheduleState> {
    if (this.declared(scheduleId).definition.on) return this.eventSchedules.unpause(scheduleId, note);
    await this.onTemporal(scheduleId, (handle) => handle.unpause(note ?? "unpaused through the API"));
    return this.describe(scheduleId);
  }

  /**
   * `act` on the schedule's Temporal handle.
   * @throws {ApiError} conflict when the schedule is not on Temporal (see {@link NOT_ON_TEMPORAL})
   */
  private async onTemporal(scheduleId: string, act: (handle: ReturnType<TemporalHost["client"]["schedule"]["getHandle"]>) => Promise<void>): Promise<void> {
    try {
      await act(this.host.client.schedule.getHandle(this.temporalId(scheduleId)));
    } catch (err) {
      if (err instanceof temporalClient().ScheduleNotFoundError) throw new ApiError("conflict", `Schedule "${scheduleId}": ${NOT_ON_TEMPORAL}`, { scheduleId, onTemporal: false });
      throw err;
    }
  }

  /**
   * Fires a cron / interval schedule now (even when paused), with its overlap policy. Temporal names a
   * schedule's runs, and svc its occurrences (`<scheduleId>@<occurrenceAt>`), by the second: a second
   * trigger within the same second as the one before waits for the next second, so that each is an
   * occurrence of its own (two in one second shared one `schedule.triggered` and one key).
   * @throws {ApiError} not_found; conflict for an event schedule (it fires on matching events only)
   */
  async trigger(scheduleId: string): Promise<ScheduleState> {
    const { definition } = this.declared(scheduleId);
    if (definition.on) {
      throw new ApiError("conflict", `Schedule "${scheduleId}" is an event schedule: it fires once per matching event (${JSON.stringify(definition.on)}), not on demand. Append a matching event, or retry a dead-lettered one with POST /api/schedules/${scheduleId}/retry`, { scheduleId, on: definition.on });
    }
    const fire = async () => {
      const last = this.triggeredSecond.get(scheduleId);
      if (last !== undefined && Math.floor(Date.now() / 1000) <= last) await new Promise((r) => setTimeout(r, (last + 1) * 1000 - Date.now() + 5));
      this.triggeredSecond.set(scheduleId, Math.floor(Date.now() / 1000));
      await this.onTemporal(scheduleId, (handle) => handle.trigger());
    };
    const fired = (this.triggerChain.get(scheduleId) ?? Promise.resolve()).catch(() => undefined).then(fire);
    this.triggerChain.set(scheduleId, fired);
    await fired;
    return this.describe(scheduleId);
  }

  /**
   * Runs a dead-lettered event of an event schedule again.
   * @throws {ApiError} not_found (no schedule, or the event is not dead-lettered); conflict for a cron / interval schedule
   */
  async retry(scheduleId: string, eventId: string): Promise<EventScheduleState> {
    this.eventSchedule(scheduleId);
    return this.eventSchedules.retry(scheduleId, eventId);
  }

  /** A page of the event schedule's dead letters (see `EventScheduleConsumers.deadLetters`). @throws {ApiError} not_found; conflict for a cron / interval schedule; invalid_request for a token of another listing */
  async deadLetters(scheduleId: string, limit: number, pageToken?: string): Promise<{ data: DeadLetter[]; nextPageToken?: string }> {
    this.eventSchedule(scheduleId);
    return this.eventSchedules.deadLetters(scheduleId, limit, pageToken);
  }

  private eventSchedule(scheduleId: string): void {
    if (!this.declared(scheduleId).definition.on) throw new ApiError("conflict", `Schedule "${scheduleId}" is a cron / interval schedule: it has no event consumer, retries or dead letters (those are event schedules')`, { scheduleId });
  }
}
