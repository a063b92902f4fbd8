import type * as v from "valibot";
import type { ActionContext, Condition, EffectContext, SystemContext } from "./context";
import type { DatasetDefinition } from "./datasets";
import { checkSchedule, type ScheduleDefinition } from "./schedule";
import { what } from "./value-kind";

export { defineSchedule } from "./schedule";
export type { EventScheduleContext, EventSelector, OverlapPolicy, ScheduleContext, ScheduleDefinition } from "./schedule";

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


/**
 * Checks what a connector declares that the runtime would otherwise find only when a request comes:
 * its id (a lowercase slug), the ids of its webhooks, schedules, syncs, pipelines, agents, rules and
 * datasets (one URL path segment each), each action's id, `run` and `params` (and `subject`'s shape, `effect`),
 * each webhook's `format`, `handle` (and `schema`, `verify`, `idempotencyKey` when given), each
 * schedule as `defineSchedule` (./schedule.ts) does (then naming it). Called by
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
 *   other than json, text or raw; a schedule `defineSchedule` (./schedule.ts) would refuse (then named)
 */
export function defineConnector<const C extends ConnectorDefinition>(def: C): C {
  checkConnector(def);
  return def;
}
