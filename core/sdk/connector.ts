import type * as v from "valibot";
import type { ActionContext, Condition, EffectContext, SystemContext } from "./context";
import { EVENT_TOPICS, TOPICS, type EventType, type StoredDomainEvent, type Topic } from "../events/catalog";
import type { DatasetDefinition } from "./datasets";

/** The delivery a webhook handler is running for (spec 3). */
export interface WebhookDelivery {
  /** The Webhook run (`whrun_…`); stable across provider retries of the same idempotency key. */
  runId: string;
  /** The durable execution's id; the correlationId of everything the handler writes. */
  executionId: string;
  /** 1 for the first attempt, 2 for the first provider retry, … */
  attempt: number;
  connectorId: string;
  webhookId: string;
  idempotencyKey: string | null;
}

/** What a webhook handler receives: system writes (buffered, committed at completion), the parsed body, the raw request. */
export interface WebhookContext<B> extends SystemContext {
  body: B;
  request: WebhookRequest;
  delivery: WebhookDelivery;
  workflows: {
    /** Starts a workflow run; its runId is derived from the execution, so a retried delivery does not start it twice. */
    start(workflowId: string, input: unknown): Promise<{ runId: string }>;
  };
}

type Schema = v.GenericSchema<unknown, any>;

/**
 * An action (spec 2.2, 4.2): validated params, a handler whose ontology writes commit atomically with
 * the run's completion, and an optional effect that starts afterwards on Temporal (once per runId).
 */
export interface ActionDefinition<P = any> {
  /** valibot schema of `params`; the handler receives its output. */
  params: v.GenericSchema<unknown, P>;
  /** When set, a subject of this object type is required. */
  subject?: { objectTypeId: string };
  title?: string;
  description?: string;
  /** Runs the action. A throw fails the run (HTTP 200, status `failed`); the return value is `result`. */
  run(ctx: ActionContext<P>): Promise<unknown> | unknown;
  /**
   * The action's declared effect: runs after a successful run as a Temporal activity with retries
   * (workflow id `action-effect:<runId>`, so it never starts twice). Its writes are system writes.
   */
  effect?(ctx: EffectContext): Promise<void>;
}

/** Body formats of a webhook (spec 2.12). */
export type WebhookFormat = "json" | "text" | "raw";

/** The request as `verify` and `idempotencyKey` see it: raw bytes before any parsing. */
export interface WebhookRequest {
  method: string;
  headers: Headers;
  rawBody: Uint8Array;
  url: URL;
}

/** A response a webhook handler may return (spec 2.12). */
export interface WebhookResponse {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/**
 * An inbound webhook (spec 2.12, 3): POST only; `verify` runs on the raw bytes; then the body is
 * parsed in its `format` (and validated by `schema` for json); `idempotencyKey` de-duplicates
 * provider retries; `handle` runs once per delivery.
 */
export interface WebhookDefinition<B = unknown> {
  format: WebhookFormat;
  schema?: v.GenericSchema<unknown, B>;
  verify?(request: WebhookRequest): void | Promise<void>;
  /**
   * The delivery's key: a non-empty string (a provider's retry sends the same), or null / undefined for
   * none (each delivery a new one). A throw, or any other answer, refuses the delivery (400, nothing stored).
   */
  idempotencyKey?(request: WebhookRequest, body: B): string | null | undefined;
  handle(ctx: WebhookContext<B>): Promise<WebhookResponse | void> | WebhookResponse | void;
  description?: string;
}

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

/** What a sync or pipeline step receives: system writes (committed once per run or step), the run's input. */
export interface ConnectorRunContext<I> extends SystemContext {
  runId: string;
  input: I;
}

/**
 * A sync (spec 4.3): brings outside data into the ontology. Runs on Temporal as an activity with
 * retries; its writes are applied once per run; `sync.run.started` / `sync.run.finished` are recorded.
 */
export interface SyncDefinition<I = any> {
  input?: v.GenericSchema<unknown, I>;
  title?: string;
  description?: string;
  run(ctx: ConnectorRunContext<I> & { syncId: string }): Promise<unknown>;
}

/** One step of a pipeline; it sees the results of the steps before it. */
export interface PipelineStep<I = any> {
  name: string;
  run(ctx: ConnectorRunContext<I> & { pipelineId: string; results: Record<string, unknown> }): Promise<unknown>;
}

/**
 * A pipeline (spec 4.3): ordered steps, each an activity with retries whose writes are applied once;
 * `pipeline.run.started`, `pipeline.run.step.started` / `.finished` and `pipeline.run.finished` are recorded.
 */
export interface PipelineDefinition<I = any> {
  input?: v.GenericSchema<unknown, I>;
  title?: string;
  description?: string;
  steps: PipelineStep<I>[];
}

/** A connector plugin: its id and what it declares. Action, schedule, sync and pipeline ids are global across the project. */
export interface ConnectorDefinition {
  id: string;
  title?: string;
  description?: string;
  actions?: Record<string, ActionDefinition<any>>;
  webhooks?: Record<string, WebhookDefinition<any>>;
  schedules?: Record<string, ScheduleDefinition>;
  syncs?: Record<string, SyncDefinition<any>>;
  pipelines?: Record<string, PipelineDefinition<any>>;
  /** Agents by id (global across the project): conversations whose replies run durably (spec 1, 4.3). */
  agents?: Record<string, AgentDefinition>;
  /** Rules by id (global across the project): conditions over objects of one type (spec 2.4 `rule.*`). */
  rules?: Record<string, RuleDefinition>;
  /** Datasets by id (global across the project): versioned rows, optionally projected into objects (see `defineDataset`). */
  datasets?: Record<string, DatasetDefinition>;
}

/**
 * A rule (spec 2.4): a condition over objects of one type, in the filter language of
 * `POST /api/objects/query` (`where`: property → value or `{ eq, ne, gt, gte, lt, lte, in, contains,
 * exists }`, all conditions ANDed; `primaryId` is a property too). After each ontology commit the
 * objects of `objectTypeId` it created, updated or deleted are evaluated: one that starts matching gets
 * `rule.triggered` `{ ruleId, subject }`, one that stops matching (or is deleted) `rule.resolved`.
 */
export interface RuleDefinition {
  objectTypeId: string;
  where: Record<string, Condition>;
  title?: string;
  description?: string;
}

/**
 * Declares a rule. Unknown properties and operators are refused when the app starts (the same checks
 * as `POST /api/objects/query`).
 * @throws Error when `objectTypeId` is empty or `where` is not an object
 */
export function defineRule(def: RuleDefinition): RuleDefinition {
  if (typeof def.objectTypeId !== "string" || def.objectTypeId === "") throw new Error("A rule needs an objectTypeId");
  if (def.where === null || typeof def.where !== "object" || Array.isArray(def.where)) throw new Error("A rule's where must be an object of conditions");
  return def;
}

/**
 * The tools an agent may use (spec 4.3), each acting as the user of the conversation: read objects
 * they may see, run actions they may run, publish an artifact, publish the next version of one, read
 * an artifact by address.
 */
export const AGENT_TOOLS = ["read_objects", "run_action", "publish_artifact", "publish_version", "read_artifact"] as const;
export type AgentTool = (typeof AGENT_TOOLS)[number];

/**
 * An agent (spec 1, 4.3): its instructions (the system prompt, before the runtime's own rules such as
 * pinning versions in addresses), the tools it may use (default: all of {@link AGENT_TOOLS}), and the
 * model (default: the service's `SVC_AGENT_MODEL`, the scripted model unless configured).
 */
export interface AgentDefinition {
  title?: string;
  instructions: string;
  tools?: readonly AgentTool[];
  /** `scripted`, `openai-compatible:<model>` or `anthropic:<model>`; default the service's. */
  model?: string;
  /** The most model calls one reply makes (default 8): a reply that needs more fails, saying so. */
  maxSteps?: number;
}

/**
 * Declares an agent.
 * @throws Error when a tool is not one of {@link AGENT_TOOLS} or maxSteps is not 1..50
 */
export function defineAgent(def: AgentDefinition): AgentDefinition {
  for (const tool of def.tools ?? []) if (!(AGENT_TOOLS as readonly string[]).includes(tool)) throw new Error(`Unknown agent tool "${tool}"; tools are: ${AGENT_TOOLS.join(", ")}`);
  if (def.maxSteps !== undefined && !(Number.isInteger(def.maxSteps) && def.maxSteps >= 1 && def.maxSteps <= 50)) throw new Error("maxSteps must be an integer from 1 to 50");
  return def;
}

/** Declares a sync; `input` (a valibot schema) types `ctx.input`. */
export function defineSync<S extends Schema | undefined = undefined>(def: Omit<SyncDefinition<S extends Schema ? v.InferOutput<S> : undefined>, "input"> & { input?: S }): SyncDefinition<S extends Schema ? v.InferOutput<S> : undefined> {
  return def as SyncDefinition<any>;
}

/**
 * Declares a pipeline.
 * @throws Error when it has no steps or two steps share a name
 */
export function definePipeline<S extends Schema | undefined = undefined>(def: Omit<PipelineDefinition<S extends Schema ? v.InferOutput<S> : undefined>, "input"> & { input?: S }): PipelineDefinition<S extends Schema ? v.InferOutput<S> : undefined> {
  if (def.steps.length === 0) throw new Error("A pipeline needs at least one step");
  if (new Set(def.steps.map((s) => s.name)).size !== def.steps.length) throw new Error("Pipeline step names must be unique");
  return def as PipelineDefinition<any>;
}

/**
 * Declares an action; `params` types the handler's `ctx.params`.
 * @example defineAction({ params: v.object({ ms: v.number() }), run: async (ctx) => ctx.params.ms })
 */
export function defineAction<S extends Schema>(def: Omit<ActionDefinition<v.InferOutput<S>>, "params"> & { params: S }): ActionDefinition<v.InferOutput<S>> {
  return def as ActionDefinition<v.InferOutput<S>>;
}

/** Declares a webhook; with a `schema`, `body` is typed by it. */
export function defineWebhook<S extends Schema | undefined = undefined>(
  def: Omit<WebhookDefinition<S extends Schema ? v.InferOutput<S> : unknown>, "schema"> & { schema?: S },
): WebhookDefinition<S extends Schema ? v.InferOutput<S> : unknown> {
  return def as WebhookDefinition<any>;
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
function checkSchedule(def: ScheduleDefinition): void {
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

/** A connector id: a lowercase slug (a-z, 0-9 and `-`, starting with a letter). */
const CONNECTOR_ID = /^[a-z][a-z0-9-]*$/;

/**
 * An action id: lowercase slugs (as connector ids) joined by dots, e.g. `invoice.approve`,
 * `invoice.attach-pdf`. It is a path segment (`/api/actions/<id>`) and part of a permission string
 * (`run:action:<id>`): no spaces, no `/`, never empty.
 */
const ACTION_ID = /^[a-z][a-z0-9-]*(?:\.[a-z][a-z0-9-]*)*$/;

/**
 * The id of a webhook, schedule, sync, pipeline, agent, rule or dataset: one URL path segment as it is
 * written (`/api/webhooks/<connector>/<id>`, `/api/datasets/<id>`, …; also a workflow's id, checked by the project registry) and part of permission strings
 * and Temporal ids: ASCII letters, digits, `-`, `_` and `.`, starting with a letter or a digit (so
 * never `.` or `..`, which URL resolution removes), never empty.
 */
export const SEGMENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** What {@link SEGMENT_ID} asks for, for a refusal's message. */
export const SEGMENT_ID_RULE = "an id is one URL path segment: ASCII letters, digits, -, _ and ., starting with a letter or a digit (no spaces, no /, not empty)";

/** How a refusal names a thing of each kind a connector declares by id. */
const KIND_NAMES = { webhooks: "Webhook", schedules: "Schedule", syncs: "Sync", pipelines: "Pipeline", agents: "Agent", rules: "Rule", datasets: "Dataset" } as const;

/** The body formats a webhook may declare (spec 2.12). */
const WEBHOOK_FORMATS: readonly WebhookFormat[] = ["json", "text", "raw"];

/**
 * Whether `x` is a synchronous valibot schema (what `v.object(…)`, `v.string()`, `v.pipe(…)` make):
 * an object of kind `schema` that valibot can run. An async one (`v.objectAsync`) is not: the runtime
 * parses with `v.safeParse`, which runs synchronously.
 */
function isValibotSchema(x: unknown): x is v.GenericSchema {
  if (typeof x !== "object" || x === null) return false;
  const schema = x as { kind?: unknown; async?: unknown; "~run"?: unknown };
  return schema.kind === "schema" && schema.async !== true && typeof schema["~run"] === "function";
}

/** What a value is, for a refusal's message: `undefined`, `null`, `an array`, `an async valibot schema`, `an object`, `a string`, … */
function what(x: unknown): string {
  if (x === undefined || x === null) return String(x);
  if (Array.isArray(x)) return "an array";
  if (typeof x === "object") return (x as { async?: unknown }).async === true ? "an async valibot schema (…Async)" : "an object";
  return `a ${typeof x}`; // a string, number, bigint, boolean, symbol or function
}

/**
 * Checks what a connector declares that the runtime would otherwise find only when a request comes:
 * its id (a lowercase slug), the ids of its webhooks, schedules, syncs, pipelines, agents, rules and
 * datasets (one URL path segment each), each action's id, `run` and `params` (and `subject`'s shape, `effect`),
 * each webhook's `format`, `handle` (and `schema`, `verify`, `idempotencyKey` when given), each
 * schedule as {@link defineSchedule} does (then naming it). Called by
 * {@link defineConnector}, and by the project registry at start for connectors made without it.
 * @throws Error naming the connector and the action or webhook, and what is wrong with it
 */
export function checkConnector(def: ConnectorDefinition): void {
  // RegExp.test converts what it is given to a string: `undefined` passed as "undefined"
  if (typeof def.id !== "string") throw new Error(`A connector's id must be a string (a lowercase slug), not ${def.id === null ? "null" : typeof def.id}`);
  if (!CONNECTOR_ID.test(def.id)) throw new Error(`Connector id "${def.id}" must be a lowercase slug`);
  for (const kind of ["webhooks", "schedules", "syncs", "pipelines", "agents", "rules", "datasets"] as const) {
    for (const id of Object.keys(def[kind] ?? {})) {
      if (!SEGMENT_ID.test(id)) throw new Error(`${KIND_NAMES[kind]} "${id}" of connector "${def.id}": ${SEGMENT_ID_RULE}`);
    }
  }
  for (const [id, action] of Object.entries(def.actions ?? {})) {
    const fail = (problem: string): never => {
      throw new Error(`Action "${id}" of connector "${def.id}": ${problem}`);
    };
    if (!ACTION_ID.test(id)) fail("an action id is lowercase slugs joined by dots (a-z, 0-9 and -, each part starting with a letter, e.g. invoice.approve): no spaces, no /, not empty");
    if (typeof action !== "object" || action === null) fail(`is ${what(action)}, not an action definition (declare it with defineAction)`);
    if (typeof action.run !== "function") fail(`its run must be a function (the handler), not ${what(action.run)}`);
    if (!isValibotSchema(action.params)) fail(`its params must be a valibot schema (e.g. v.object({ … })), not ${what(action.params)}`);
    if (action.subject !== undefined && (typeof action.subject !== "object" || action.subject === null || typeof action.subject.objectTypeId !== "string" || action.subject.objectTypeId === "")) fail("its subject must be { objectTypeId: <an object type of the project> }");
    if (action.effect !== undefined && typeof action.effect !== "function") fail(`its effect must be a function, not ${what(action.effect)}`);
  }
  for (const [id, webhook] of Object.entries(def.webhooks ?? {})) {
    const fail = (problem: string): never => {
      throw new Error(`Webhook "${id}" of connector "${def.id}": ${problem}`);
    };
    if (typeof webhook !== "object" || webhook === null) fail(`is ${what(webhook)}, not a webhook definition (declare it with defineWebhook)`);
    if (!WEBHOOK_FORMATS.includes(webhook.format)) fail(`its format must be one of ${WEBHOOK_FORMATS.join(", ")}, not ${typeof webhook.format === "string" ? `"${webhook.format}"` : what(webhook.format)}`);
    if (typeof webhook.handle !== "function") fail(`its handle must be a function (the handler), not ${what(webhook.handle)}`);
    if (webhook.schema !== undefined && !isValibotSchema(webhook.schema)) fail(`its schema must be a valibot schema, not ${what(webhook.schema)}`);
    for (const fn of ["verify", "idempotencyKey"] as const) if (webhook[fn] !== undefined && typeof webhook[fn] !== "function") fail(`its ${fn} must be a function, not ${what(webhook[fn])}`);
  }
  for (const [id, schedule] of Object.entries(def.schedules ?? {})) {
    try {
      checkSchedule(schedule);
    } catch (err) {
      throw new Error(`Schedule "${id}" of connector "${def.id}": ${(err as Error).message}`);
    }
  }
}

/**
 * Declares a connector, checking what it declares ({@link checkConnector}).
 * @throws Error when the id is not a string or not a lowercase slug, a webhook, schedule, sync,
 *   pipeline, agent, rule or dataset id is not one URL path segment, or an action, webhook or
 *   schedule is malformed: an action id that is not lowercase slugs joined by dots, no `run`
 *   function, `params` not a valibot schema; a webhook without a `handle` function or with a format
 *   other than json, text or raw; a schedule {@link defineSchedule} would refuse (then named)
 */
export function defineConnector<const C extends ConnectorDefinition>(def: C): C {
  checkConnector(def);
  return def;
}
