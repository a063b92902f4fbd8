/**
 * The run engine, bundled into Temporal's workflow isolate (deterministic; no I/O: everything that
 * touches the world is an activity).
 *
 * - The default export runs every project workflow: Temporal falls back to it for any workflow type
 *   without its own export, and the type is the designer's workflow id (`invoice-review`), so
 *   Temporal's history and UI show the designer's names.
 * - `actionEffect` runs an action's declared effect (workflow id `action-effect:<runId>`).
 *
 * `svc-project-workflows` is an alias set at bundle time to the project's workflows module.
 */
import { ActivityFailure, ApplicationFailure, CancellationScope, ChildWorkflowFailure, isCancellation, proxySinks, sleep, workflowInfo, TemporalFailure } from "@temporalio/workflow";
import { defineSearchAttributeKey, SearchAttributeType } from "@temporalio/common";
import { workflows } from "svc-project-workflows";
import type { RecordRunEventInput, RecordWorkflowEventInput, SvcSinks } from "../core/sdk/activities-types";
import type { WorkflowContext, WorkflowDefinition } from "../core/sdk/workflow";
import { withoutDownloadSecrets } from "../core/sdk/download-url-secrets";
import { installInterventions } from "./interventions";
import { activities, clampSummary, createRecorder, named, namedLocal, recordingMode, runsLocalWork, type Recorder, type RecordingMode } from "./records";
export { agentReply } from "./agents";

const { handlerLog } = proxySinks<SvcSinks>();

/** A run or node event as a record, its summary the event type and the node's name. */
const workflowEvent = (input: RecordWorkflowEventInput, unnamed = false) => ({ record: { workflowEvent: input }, summary: `${input.type}${input.payload?.node ? ` ${String(input.payload.node)}` : ""}`, unnamed });
/** A sync or pipeline event as a record. */
const runEvent = (input: RecordRunEventInput, summary: string) => ({ record: { runEvent: input }, summary });

/** Runs an action's effect as an activity with retries. */
export async function actionEffect(input: { actionId: string; runId: string }): Promise<void> {
  await activities.runActionEffect(input);
}

const ScheduledStartTime = defineSearchAttributeKey("TemporalScheduledStartTime", SearchAttributeType.DATETIME);

/**
 * One firing of a connector's schedule (started by a Temporal Schedule). The occurrence is the
 * scheduled time Temporal records on the run, so `occurrenceKey` is the same for every retry of one
 * occurrence and the handler's effects happen once.
 */
export async function scheduleFiring(input: { scheduleId: string }): Promise<void> {
  const info = workflowInfo();
  const scheduled = info.typedSearchAttributes.get(ScheduledStartTime) ?? info.startTime;
  const occurrenceAt = scheduled.toISOString();
  await activities.runSchedule({ scheduleId: input.scheduleId, occurrenceAt, triggeredAt: info.startTime.toISOString(), occurrenceKey: `${input.scheduleId}@${occurrenceAt}` });
}

/**
 * The message of anything workflow code threw: an Error's message, a string, an object's string
 * `message`, else its JSON text (the same rule as core/errors.ts `messageOf`, which the isolate may not import).
 */
function thrownMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === "string") return err;
  if (typeof err === "object" && err !== null && typeof (err as { message?: unknown }).message === "string") return (err as { message: string }).message;
  if (err === undefined || err === null) return `${err} was thrown (throw an Error with a message)`;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

/**
 * The failure a run ends with for what its code threw (a plain Error would only fail the workflow task
 * and retry it forever): non-retryable, of the error's name as its type, carrying the thrown error's
 * own stack (the designer's files and lines, mapped by the worker), not this function's.
 */
function designerFailure(err: unknown): ApplicationFailure {
  // Temporal keeps a failure's message and stack as plain text in the history: no download URL's secret
  const failure = ApplicationFailure.nonRetryable(withoutDownloadSecrets(thrownMessage(err)), err instanceof Error ? err.name : "Error");
  if (err instanceof Error && err.stack) failure.stack = withoutDownloadSecrets(err.stack);
  return failure;
}

/** A failure the run reports and ends with: a Temporal failure as it is, anything else as {@link designerFailure}. */
function failRun(err: unknown): never {
  if (err instanceof TemporalFailure) throw err;
  throw designerFailure(err);
}

/** The message a failed activity or child run reports: its cause's (what failed inside), else the error's own. */
const messageOf = (err: unknown) => {
  const cause = (err as { cause?: unknown })?.cause;
  return (cause instanceof Error ? cause.message : undefined) ?? thrownMessage(err);
};

/**
 * The message a workflow run ends with: for an activity's or child run's failure, what failed inside
 * it ("Activity task failed" says nothing); for anything else the code threw, its own message (an
 * Error's own `cause` is the designer's business, not a wrapper).
 */
const runFailureMessage = (err: unknown) => (err instanceof ActivityFailure || err instanceof ChildWorkflowFailure ? messageOf(err) : thrownMessage(err));

/** A sync run (spec 4.3): workflow id = runId; `sync.run.started`, the handler as an activity, `sync.run.finished`. */
export async function syncRun(args: { syncId: string; input: unknown }): Promise<unknown> {
  const records = createRecorder(recordingMode());
  const runId = workflowInfo().workflowId;
  const event = (type: string, extra: Record<string, unknown> = {}) => runEvent({ type, runId, key: `${runId}:${type}`, payload: { syncId: args.syncId, runId, ...extra } }, type);
  await records.record(event("sync.run.started"));
  try {
    const result = await records.carry(named(`sync ${args.syncId}`).runSync, { syncId: args.syncId, runId, input: args.input });
    await records.recordDurably(event("sync.run.finished", { status: "completed" }));
    return result;
  } catch (err) {
    // the error's code as the run's state answers it (README "Run errors"); a record's input is no part of replay's checks
    const cancelled = isCancellation(err);
    await CancellationScope.nonCancellable(() => records.recordDurably(event("sync.run.finished", { status: cancelled ? "cancelled" : "failed", error: { code: cancelled ? "cancelled" : "workflow_failed", message: messageOf(err) } })));
    return failRun(err);
  }
}

/** A pipeline run (spec 4.3): each step an activity, with step events; results flow to later steps. */
export async function pipelineRun(args: { pipelineId: string; input: unknown; steps: string[] }): Promise<Record<string, unknown>> {
  const records = createRecorder(recordingMode());
  const runId = workflowInfo().workflowId;
  const event = (type: string, key: string, extra: Record<string, unknown> = {}) =>
    runEvent({ type, runId, key: `${runId}:${key}`, payload: { pipelineId: args.pipelineId, runId, ...extra } }, `${type}${extra.step ? ` ${String(extra.step)}` : ""}`);
  const results: Record<string, unknown> = {};
  await records.record(event("pipeline.run.started", "started"));
  let current: { index: number; step: string } | undefined;
  try {
    for (const [index, step] of args.steps.entries()) {
      current = { index, step };
      await records.record(event("pipeline.run.step.started", `step:${index}:started`, { step, index }));
      results[step] = await records.carry(named(`step ${step}`).runPipelineStep, { pipelineId: args.pipelineId, runId, index, input: args.input, results });
      await records.record(event("pipeline.run.step.finished", `step:${index}:finished`, { step, index, status: "completed" }));
    }
    await records.recordDurably(event("pipeline.run.finished", "finished", { status: "completed" }));
    return results;
  } catch (err) {
    const status = isCancellation(err) ? "cancelled" : "failed";
    await CancellationScope.nonCancellable(async () => {
      if (current) await records.record(event("pipeline.run.step.finished", `step:${current.index}:finished`, { ...current, status, error: { code: status === "cancelled" ? "cancelled" : "step_failed", message: messageOf(err) } }));
      await records.recordDurably(event("pipeline.run.finished", "finished", { status, error: { code: status === "cancelled" ? "cancelled" : "workflow_failed", message: messageOf(err) } }));
    });
    return failRun(err);
  }
}

function createContext(workflowId: string, runId: string, records: Recorder, mode: RecordingMode): WorkflowContext {
  let seq = 0;
  let node: string | undefined;
  const localWork = runsLocalWork(mode);
  const record = (type: string, key: string, payload?: Record<string, unknown>) => records.record(workflowEvent({ type, workflowId, runId, key, payload }));
  const label = (what: string) => (node ? `${node}: ${what}` : what);
  const inNode = (what: string) => named(label(what));
  /** Node work on svc's own store: a local activity in `local-work` runs, an activity in older ones (see records.ts). */
  const storeWork = (what: string) => (localWork ? namedLocal(label(what)) : inNode(what));
  const intervention = installInterventions(workflowId, runId, records, mode === "durable-decisions");
  const write = (level: "debug" | "info" | "warn" | "error") => (message: string, fields: Record<string, unknown> = {}) => handlerLog.write(level, message, fields);
  return {
    workflowId,
    runId,
    log: { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") },
    intervention,
    async node(name, fn) {
      const n = ++seq;
      await record("workflow.run.node.started", `${runId}:node:${n}:started`, { node: name });
      const outer = node;
      node = name;
      try {
        const result = await fn();
        node = outer;
        await record("workflow.run.node.finished", `${runId}:node:${n}:finished`, { node: name, status: "completed" });
        return result;
      } catch (err) {
        node = outer;
        await CancellationScope.nonCancellable(() => record("workflow.run.node.finished", `${runId}:node:${n}:finished`, { node: name, status: isCancellation(err) ? "cancelled" : "failed" }));
        throw err;
      }
    },
    // a zero wait is no wait in `local-work` runs (older runs replay the 1 ms timer they recorded)
    sleep: (ms, name) => (localWork && ms <= 0 ? Promise.resolve() : records.beforeWaiting(() => sleep(ms, { summary: clampSummary(name ?? label(`wait ${ms} ms`)) }))),
    objects: {
      get: async (objectTypeId, primaryId) => (await records.carry(storeWork(`read ${objectTypeId} ${primaryId}`).readObject, { objectTypeId, primaryId })) ?? undefined,
    },
    write: (changes) => records.carry(storeWork(`write ${changes.length} change${changes.length === 1 ? "" : "s"}`).writeOntology, { workflowId, runId, changes, key: `${runId}:write:${++seq}` }),
    blobs: {
      createDownloadUrl: (file, options) => records.carry(storeWork("create a download URL").createDownloadUrl, { runId, fileId: file.id, expiresInMs: options?.expiresInMs }),
      revokeDownloadUrl: (id) => records.carry(storeWork("revoke a download URL").revokeDownloadUrl, { id }),
    },
    actions: {
      run: (actionId, input) => records.carry(inNode(`run action ${actionId}`).runAction, { actionId, subject: input.subject, params: input.params, runId: `${runId}:action:${++seq}`, workflowRunId: runId }),
    },
    nonCancellable: (fn) => CancellationScope.nonCancellable(fn),
  };
}

/** The dynamic workflow: dispatches on the workflow type to the project's definition. */
export default async function projectWorkflow(input: unknown): Promise<unknown> {
  const mode = recordingMode();
  const records = createRecorder(mode);
  const info = workflowInfo();
  const workflowId = info.workflowType;
  const runId = info.workflowId;
  const definition = (workflows as Record<string, WorkflowDefinition<unknown, unknown>>)[workflowId];
  if (!definition) throw ApplicationFailure.nonRetryable(`This worker has no workflow "${workflowId}"`, "UnknownWorkflow");
  // by an activity in `durable-decisions` runs: the workflow task that closes the run then writes nothing (records.ts)
  const finished = (payload: Record<string, unknown>) =>
    CancellationScope.nonCancellable(() => records.recordDurably(workflowEvent({ type: "workflow.run.finished", workflowId, runId, key: `${runId}:finished`, payload }, true)));
  await records.record(workflowEvent({ type: "workflow.run.started", workflowId, runId, key: `${runId}:started` }, true));
  try {
    const result = await definition.run(createContext(workflowId, runId, records, mode), input);
    // a result Temporal cannot carry (its payloads are JSON) would fail the closing task for ever after
    // `finished` said completed: it fails the run here instead, by name
    try {
      JSON.stringify(result);
    } catch (err) {
      throw new Error(`The workflow's result cannot be written as JSON: ${thrownMessage(err)}`);
    }
    await finished({ status: "completed" });
    return result;
  } catch (err) {
    if (isCancellation(err)) {
      await finished({ status: "cancelled" });
      throw err;
    }
    await finished({ status: "failed", error: { code: "workflow_failed", message: runFailureMessage(err) } });
    if (err instanceof TemporalFailure) throw err;
    // A designer's error fails the run (a plain Error would only fail the workflow task and retry it forever).
    throw designerFailure(err);
  }
}
