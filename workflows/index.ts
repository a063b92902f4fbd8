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
import { ApplicationFailure, CancellationScope, isCancellation, patched, proxyActivities, proxyLocalActivities, proxySinks, sleep, workflowInfo, TemporalFailure } from "@temporalio/workflow";
import { defineSearchAttributeKey, SearchAttributeType } from "@temporalio/common";
import { workflows } from "svc-project-workflows";
import type { SvcActivities, SvcSinks } from "../core/sdk/activities-types";

const { handlerLog } = proxySinks<SvcSinks>();
import type { WorkflowContext, WorkflowDefinition } from "../core/sdk/workflow";
import { installInterventions } from "./interventions";
export { agentReply } from "./agents";

const ACTIVITY_OPTIONS = {
  startToCloseTimeout: "1 minute",
  retry: { initialInterval: "1 second", backoffCoefficient: 2, maximumInterval: "30 seconds", maximumAttempts: 20 },
} as const;
const activities = proxyActivities<SvcActivities>(ACTIVITY_OPTIONS);

/** Activities whose history entries carry `summary` (the designer's node name), so history reads as written. */
const named = (summary: string) => proxyActivities<SvcActivities>({ ...ACTIVITY_OPTIONS, summary });

/**
 * Patch id of issue 15's change: run, node, step and intervention records run as local activities
 * (executed by this worker inside the workflow task, one `MARKER_RECORDED` entry each, with the same
 * summary) instead of activities with a server round trip each; a node then costs one round trip, its
 * own work. Runs whose history was recorded before (no marker) keep recording with activities until
 * they end: {@link recordsLocally} decides once per run, at its start. Once no such run is open, this
 * becomes `deprecatePatch(LOCAL_RECORDS)`, and later goes.
 */
const LOCAL_RECORDS = "svc-local-records";

/**
 * Whether this run records its events with local activities. Called first thing in a run (before
 * any command): a new run records the patch marker and answers true; a replay of a history without
 * the marker answers false, and so does the rest of that run, also after its replay catches up
 * (`patched` alone would switch mid-run once the worker executes live).
 */
const recordsLocally = (): boolean => patched(LOCAL_RECORDS);

/**
 * Records are idempotent on their keys, so a local activity that runs again (retry, or a workflow task
 * retried after a worker died) writes nothing twice. Retries back off inside the workflow task (the
 * worker heartbeats the task meanwhile) up to `localRetryThreshold`, then on a server timer.
 */
const LOCAL_OPTIONS = { startToCloseTimeout: "1 minute", retry: ACTIVITY_OPTIONS.retry } as const;

/**
 * The bookkeeping proxy of a run: local activities for runs that record locally, else exactly the
 * activities their history was recorded with (`unnamed`: the old code's run start and end carried no summary).
 */
const recorder =
  (local: boolean) =>
  (summary: string, unnamed = false): SvcActivities =>
    local ? proxyLocalActivities<SvcActivities>({ ...LOCAL_OPTIONS, summary }) : unnamed ? activities : named(summary);

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

/** A failure the run reports and ends with (a plain Error would only fail the workflow task and retry forever). */
function failRun(err: unknown): never {
  if (err instanceof TemporalFailure) throw err;
  throw ApplicationFailure.nonRetryable(err instanceof Error ? err.message : String(err), err instanceof Error ? err.name : "Error");
}

const messageOf = (err: unknown) => {
  const cause = (err as { cause?: unknown })?.cause;
  return (cause instanceof Error ? cause.message : undefined) ?? (err instanceof Error ? err.message : String(err));
};

/** A sync run (spec 4.3): workflow id = runId; `sync.run.started`, the handler as an activity, `sync.run.finished`. */
export async function syncRun(args: { syncId: string; input: unknown }): Promise<unknown> {
  const record = recorder(recordsLocally());
  const runId = workflowInfo().workflowId;
  const event = (type: string, extra: Record<string, unknown> = {}) => record(type).recordRunEvent({ type, runId, key: `${runId}:${type}`, payload: { syncId: args.syncId, runId, ...extra } });
  await event("sync.run.started");
  try {
    const result = await named(`sync ${args.syncId}`).runSync({ syncId: args.syncId, runId, input: args.input });
    await event("sync.run.finished", { status: "completed" });
    return result;
  } catch (err) {
    await CancellationScope.nonCancellable(() => event("sync.run.finished", { status: isCancellation(err) ? "cancelled" : "failed", error: { message: messageOf(err) } }));
    return failRun(err);
  }
}

/** A pipeline run (spec 4.3): each step an activity, with step events; results flow to later steps. */
export async function pipelineRun(args: { pipelineId: string; input: unknown; steps: string[] }): Promise<Record<string, unknown>> {
  const record = recorder(recordsLocally());
  const runId = workflowInfo().workflowId;
  const event = (type: string, key: string, extra: Record<string, unknown> = {}) => record(`${type}${extra.step ? ` ${String(extra.step)}` : ""}`).recordRunEvent({ type, runId, key: `${runId}:${key}`, payload: { pipelineId: args.pipelineId, runId, ...extra } });
  const results: Record<string, unknown> = {};
  await event("pipeline.run.started", "started");
  let current: { index: number; step: string } | undefined;
  try {
    for (const [index, step] of args.steps.entries()) {
      current = { index, step };
      await event("pipeline.run.step.started", `step:${index}:started`, { step, index });
      results[step] = await named(`step ${step}`).runPipelineStep({ pipelineId: args.pipelineId, runId, index, input: args.input, results });
      await event("pipeline.run.step.finished", `step:${index}:finished`, { step, index, status: "completed" });
    }
    await event("pipeline.run.finished", "finished", { status: "completed" });
    return results;
  } catch (err) {
    const status = isCancellation(err) ? "cancelled" : "failed";
    await CancellationScope.nonCancellable(async () => {
      if (current) await event("pipeline.run.step.finished", `step:${current.index}:finished`, { ...current, status, error: { message: messageOf(err) } });
      await event("pipeline.run.finished", "finished", { status, error: { message: messageOf(err) } });
    });
    return failRun(err);
  }
}

function createContext(workflowId: string, runId: string, bookkeeping: (summary: string) => SvcActivities): WorkflowContext {
  let seq = 0;
  let node: string | undefined;
  const record = (type: string, key: string, payload?: Record<string, unknown>) => bookkeeping(`${type}${payload?.node ? ` ${String(payload.node)}` : ""}`).recordWorkflowEvent({ type, workflowId, runId, key, payload });
  const inNode = (what: string) => named(node ? `${node}: ${what}` : what);
  const intervention = installInterventions(workflowId, runId, (input) => bookkeeping(`intervention ${input.name} ${input.phase}`).recordIntervention(input));
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
    sleep: (ms, name) => sleep(ms, { summary: name ?? (node ? `${node}: wait ${ms} ms` : `wait ${ms} ms`) }),
    objects: {
      get: async (objectTypeId, primaryId) => (await inNode(`read ${objectTypeId} ${primaryId}`).readObject({ objectTypeId, primaryId })) ?? undefined,
    },
    write: (changes) => inNode(`write ${changes.length} change${changes.length === 1 ? "" : "s"}`).writeOntology({ workflowId, runId, changes, key: `${runId}:write:${++seq}` }),
    blobs: {
      createDownloadUrl: (file, options) => inNode("create a download URL").createDownloadUrl({ runId, fileId: file.id, expiresInMs: options?.expiresInMs }),
      revokeDownloadUrl: (id) => inNode("revoke a download URL").revokeDownloadUrl({ id }),
    },
    actions: {
      run: (actionId, input) => inNode(`run action ${actionId}`).runAction({ actionId, subject: input.subject, params: input.params, runId: `${runId}:action:${++seq}`, workflowRunId: runId }),
    },
  };
}

/** The dynamic workflow: dispatches on the workflow type to the project's definition. */
export default async function projectWorkflow(input: unknown): Promise<unknown> {
  const bookkeeping = recorder(recordsLocally());
  const info = workflowInfo();
  const workflowId = info.workflowType;
  const runId = info.workflowId;
  const definition = (workflows as Record<string, WorkflowDefinition<unknown, unknown>>)[workflowId];
  if (!definition) throw ApplicationFailure.nonRetryable(`This worker has no workflow "${workflowId}"`, "UnknownWorkflow");
  const finished = (payload: Record<string, unknown>) =>
    CancellationScope.nonCancellable(() => bookkeeping("workflow.run.finished", true).recordWorkflowEvent({ type: "workflow.run.finished", workflowId, runId, key: `${runId}:finished`, payload }));
  await bookkeeping("workflow.run.started", true).recordWorkflowEvent({ type: "workflow.run.started", workflowId, runId, key: `${runId}:started` });
  try {
    const result = await definition.run(createContext(workflowId, runId, bookkeeping), input);
    await finished({ status: "completed" });
    return result;
  } catch (err) {
    if (isCancellation(err)) {
      await finished({ status: "cancelled" });
      throw err;
    }
    const message = err instanceof Error ? err.message : String(err);
    await finished({ status: "failed", error: { message } });
    if (err instanceof TemporalFailure) throw err;
    // A designer's error fails the run (a plain Error would only fail the workflow task and retry it forever).
    throw ApplicationFailure.nonRetryable(message, err instanceof Error ? err.name : "Error");
  }
}
