/**
 * Schedules a connector declares (spec 2.3, 6.1): cron and interval schedules run by Temporal
 * Schedules, event schedules run by the runtime's durable consumer; their types and the checks
 * {@link defineSchedule} (and `checkConnector`, for schedules made without it) runs at declaration.
 */
import type { SystemContext } from "./context";
import { EVENT_TOPICS, TOPICS, type EventType, type StoredDomainEvent, type Topic } from "../events/catalog";
import { what } from "./value-kind";

/** Overlap policies of Temporal Schedules. */
export type OverlapPolicy = "skip" | "bufferOne" | "bufferAll" | "cancelOther" | "terminateOther" | "allowAll";

/**
 * An event selector (spec 6.1): which stored events an event schedule fires on. Every given field must
 * match; at least one of `topics` and `types`. `objectTypeId` / `primaryId` match the event's subject
 * (an ontology event's object, a link's source, an action's or a rule's subject); `partitionKey` the
 * envelope's partition key.
 */
export interface EventSelector {
  topics?: Topic[];
  types?: EventType[];
  objectTypeId?: string;
  primaryId?: string;
  partitionKey?: string;
}

/** What a schedule's handler receives: system writes (buffered, committed once per occurrence). */
export interface ScheduleContext extends SystemContext {
  scheduleId: string;
  /** ISO time of the occurrence: the scheduled time (cron, interval) or the event's `occurredAt` (event schedule). */
  occurrenceAt: string;
  /** Event schedules: the stored event that fired it. */
  event?: StoredDomainEvent;
  /** Event schedules: 1 for the first attempt at this event, 2 for the first retry, … */
  attempt?: number;
  /** Event schedules: aborted when the attempt times out (`timeoutMs`) or the server shuts down past its grace period. */
  signal?: AbortSignal;
}

/** The context of an event schedule's handler: `event` and `attempt` are always there. */
export interface EventScheduleContext extends ScheduleContext {
  event: StoredDomainEvent;
  attempt: number;
  signal: AbortSignal;
}

/**
 * A schedule a connector declares: exactly one of `cron`, `every` (run by a Temporal Schedule) or `on`
 * (an event schedule, spec 6.1: run once per matching stored event by the runtime's durable consumer,
 * in order per partition key, with retries; see core/runtime/event-schedules.ts).
 */
export interface ScheduleDefinition {
  /**
   * A cron expression as Temporal reads it: 5 fields (minute hour day-of-month month day-of-week), 6
   * (then a year) or 7 (second first, then a year), or `@hourly`, `@daily`, `@weekly`, `@monthly`,
   * `@yearly`; a `# comment` may end it. The time zone goes in `timezone`, not in the string.
   */
  cron?: string;
  /** Interval in whole milliseconds, at least 1000: Temporal's shortest interval is one second (and it runs intervals in whole seconds). */
  every?: number;
  /** Event selector: the schedule fires once per stored event it matches (events appended after it is first registered). */
  on?: EventSelector;
  /** cron / every only: an IANA time zone name (`UTC`, the default, `Europe/Berlin`), spelled as the tz database does. */
  timezone?: string;
  /** cron / every only. */
  overlap?: OverlapPolicy;
  /** Initial state when the schedule is first registered; afterwards pause / unpause through the API. */
  paused?: boolean;
  /** Event schedules: attempts per event before it is dead-lettered (1..100, default 10). */
  maxAttempts?: number;
  /** Event schedules: partitions handled at once (1..256, default 16). */
  concurrency?: number;
  /**
   * Event schedules: how long one attempt may run, in ms (1..3,600,000, default 300,000). Past it the
   * attempt fails with "handler timed out after N ms" (retried, then dead-lettered, like a throw), its
   * buffered writes (objects, links, events, dataset rows) are dropped, and `ctx.signal` is aborted so
   * the handler can stop its own work. Blobs and artifacts it already stored stay; from then on its
   * `ctx.blobs` and `ctx.artifacts` calls that store something reject (an `AbortError`). Order and
   * `concurrency` count attempts: a handler that ignores the signal may still run when the retry starts.
   */
  timeoutMs?: number;
  description?: string;
  run(ctx: ScheduleContext): Promise<void>;
}

/** Temporal's shortest schedule interval, in ms (its server refuses a shorter one: "interval is too small"). */
const MIN_SCHEDULE_INTERVAL_MS = 1000;

/** The overlap policies a cron / interval schedule may declare. */
const OVERLAP_POLICIES: readonly OverlapPolicy[] = ["skip", "bufferOne", "bufferAll", "cancelOther", "terminateOther", "allowAll"];

/** The cron shorthands Temporal reads, standing for 5 fields. */
const CRON_SHORTHANDS = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"];

/**
 * What is wrong with a cron string for a Temporal Schedule, read as Temporal's server reads it
 * (a trailing `# comment` dropped, then `@every <interval>`, a shorthand, or 5 to 7 fields), or
 * undefined when its shape is right. The fields' values (`61` minutes) are Temporal's to check: a
 * refusal then fails the start naming the schedule (core/runtime/schedules.ts).
 */
function cronProblem(cron: unknown): string | undefined {
  if (typeof cron !== "string") return `cron must be a string, not ${what(cron)}`;
  const trimmed = cron.trim();
  // Temporal reads a TZ= / CRON_TZ= prefix as the time zone, which then conflicts with `timezone` (UTC by default)
  if (/^(CRON_)?TZ=/.test(trimmed)) return `cron "${cron}" names its time zone (TZ= / CRON_TZ=): give the zone as timezone and leave it out of cron`;
  const expression = trimmed.split("#")[0]!.trim();
  if (expression.startsWith("@every")) return /^@every\s+\S/.test(expression) ? undefined : `cron "${cron}" has no interval after @every`;
  if (CRON_SHORTHANDS.includes(expression)) return undefined;
  const fields = expression === "" ? 0 : expression.split(/\s+/).length;
  if (fields < 5 || fields > 7) return `cron "${cron}" has ${fields} field${fields === 1 ? "" : "s"}; Temporal reads 5 (minute hour day-of-month month day-of-week), 6 (and a year) or 7 (second first, and a year), or ${CRON_SHORTHANDS.filter((x) => x !== "@annually" && x !== "@midnight").join(", ")}`;
  return undefined;
}

/**
 * What is wrong with a time zone name for a Temporal Schedule, or undefined when it is one: a name
 * `Intl` knows (the IANA tz database), spelled as the database spells it (Temporal's server loads zones
 * by file name: `utc` or `europe/berlin`, which `Intl` accepts, are none there).
 */
function timezoneProblem(timezone: unknown): string | undefined {
  if (typeof timezone !== "string") return `timezone must be a string (an IANA time zone name such as "Europe/Berlin"), not ${what(timezone)}`;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    return `timezone "${timezone}" is not an IANA time zone name (such as "UTC" or "Europe/Berlin")`;
  }
  if (resolved !== timezone && resolved.toLowerCase() === timezone.toLowerCase()) return `timezone "${timezone}" must be spelled "${resolved}" (Temporal reads time zone names case-sensitively)`;
  return undefined;
}

/**
 * Checks a schedule's declaration (see {@link defineSchedule}); also run by {@link checkConnector},
 * which names the schedule, for schedules made without `defineSchedule`.
 * @throws Error saying what is wrong
 */
export function checkSchedule(def: ScheduleDefinition): void {
  if (typeof def !== "object" || def === null) throw new Error(`A schedule must be a schedule definition (declare it with defineSchedule), not ${what(def)}`);
  if ([def.cron, def.every, def.on].filter((x) => x !== undefined).length !== 1) throw new Error("A schedule needs exactly one of cron, every or on");
  if (typeof def.run !== "function") throw new Error(`A schedule's run must be a function (the handler), not ${what(def.run)}`);
  if (def.on === undefined) {
    if (def.maxAttempts !== undefined || def.concurrency !== undefined || def.timeoutMs !== undefined) throw new Error("maxAttempts, concurrency and timeoutMs apply to event schedules (on) only");
    if (def.cron !== undefined) {
      const problem = cronProblem(def.cron);
      if (problem) throw new Error(problem);
    }
    if (def.every !== undefined && !(typeof def.every === "number" && Number.isInteger(def.every) && def.every >= MIN_SCHEDULE_INTERVAL_MS)) {
      throw new Error(`every must be a whole number of milliseconds, at least ${MIN_SCHEDULE_INTERVAL_MS} (Temporal's shortest interval is one second), not ${typeof def.every === "number" ? def.every : what(def.every)}`);
    }
    if (def.timezone !== undefined) {
      const problem = timezoneProblem(def.timezone);
      if (problem) throw new Error(problem);
    }
    if (def.overlap !== undefined && !OVERLAP_POLICIES.includes(def.overlap)) throw new Error(`overlap must be one of ${OVERLAP_POLICIES.join(", ")}, not ${typeof def.overlap === "string" ? `"${def.overlap}"` : what(def.overlap)}`);
    return;
  }
  checkEventSelector(def.on);
  if (def.timezone !== undefined || def.overlap !== undefined) throw new Error("timezone and overlap apply to cron and interval schedules only; an event schedule runs once per matching event");
  const intIn = (x: number | undefined, min: number, max: number) => x === undefined || (Number.isInteger(x) && x >= min && x <= max);
  if (!intIn(def.maxAttempts, 1, 100)) throw new Error("maxAttempts must be an integer from 1 to 100");
  if (!intIn(def.concurrency, 1, 256)) throw new Error("concurrency must be an integer from 1 to 256");
  if (!intIn(def.timeoutMs, 1, 3_600_000)) throw new Error("timeoutMs must be an integer from 1 to 3600000 (ms)");
}

/**
 * Declares a schedule: a cron expression, an interval (`every`, ms) or an event selector (`on`, spec 6.1).
 * @throws Error when not exactly one of `cron`, `every`, `on` is given, or `run` is no function; for
 *   cron / every: a cron string that is not 5 to 7 fields (or a shorthand such as `@hourly`) or names
 *   its own time zone, `every` not a whole number of ms of at least {@link MIN_SCHEDULE_INTERVAL_MS},
 *   a `timezone` that is no IANA time zone name (or is not spelled as the tz database spells it), an
 *   unknown `overlap`, or `maxAttempts`, `concurrency` or `timeoutMs`; for `on`: neither topics nor
 *   types, an unknown topic, type or selector field, a type outside the given topics, an empty string,
 *   `timezone` / `overlap` (cron only), `maxAttempts` outside 1..100, `concurrency` outside 1..256 or
 *   `timeoutMs` outside 1..3,600,000
 */
export function defineSchedule(def: Omit<ScheduleDefinition, "on" | "run"> & { on: EventSelector; run(ctx: EventScheduleContext): Promise<void> }): ScheduleDefinition;
export function defineSchedule(def: ScheduleDefinition): ScheduleDefinition;
export function defineSchedule(def: ScheduleDefinition): ScheduleDefinition {
  checkSchedule(def);
  return def;
}

/** @throws Error naming what is wrong with an event selector (see {@link defineSchedule}) */
function checkEventSelector(on: EventSelector): void {
  if (on === null || typeof on !== "object" || Array.isArray(on)) throw new Error("A schedule's on must be an event selector object");
  const known = ["topics", "types", "objectTypeId", "primaryId", "partitionKey"];
  for (const key of Object.keys(on)) if (!known.includes(key)) throw new Error(`Unknown event selector field "${key}"; fields are: ${known.join(", ")}`);
  if (!on.topics?.length && !on.types?.length) throw new Error("An event selector needs topics or types");
  for (const topic of on.topics ?? []) if (!(TOPICS as readonly string[]).includes(topic)) throw new Error(`Unknown topic "${topic}"; topics are: ${TOPICS.join(", ")}`);
  for (const type of on.types ?? []) {
    const topic = (EVENT_TOPICS as Record<string, Topic>)[type];
    if (!topic) throw new Error(`Unknown event type "${type}" (spec 2.4 catalog)`);
    if (on.topics?.length && !on.topics.includes(topic)) throw new Error(`Event type "${type}" is on topic "${topic}", which the selector's topics leave out: it could never match`);
  }
  for (const key of ["objectTypeId", "primaryId", "partitionKey"] as const) {
    if (on[key] !== undefined && (typeof on[key] !== "string" || on[key] === "")) throw new Error(`The event selector's ${key} must be a non-empty string`);
  }
}
