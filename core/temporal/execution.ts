import type { WorkflowHandle } from "@temporalio/client";
import type { temporal } from "@temporalio/proto";
import { temporalClient, temporalProto } from "./sdk";
import { ApiError } from "../errors";
import { isUnreadablePayload } from "./payload-codec";

type PendingActivityInfo = temporal.api.workflow.v1.IPendingActivityInfo;

/**
 * An activity of an open run that has not completed, as Temporal's `PendingActivityInfo` reports it:
 * its type, which attempt runs or waits now (1 for the first), the retry policy's limit, and once an
 * attempt failed, that failure and when the next attempt is scheduled (ISO 8601 UTC). A handler that
 * keeps failing (a sync's bug, an API that is down) is visible here while Temporal retries it, instead
 * of only when the last attempt ends the run.
 */
export interface PendingActivity {
  activityType: string;
  attempt: number;
  /** The retry policy's maximum attempts; absent when unlimited. */
  maximumAttempts?: number;
  /** The last attempt's failure: its message and, for an application failure, its type. */
  lastFailure?: { message: string; type?: string };
  nextAttemptScheduleTime?: string;
}

/** A protobuf timestamp (seconds may be a `Long` or a string) as ISO 8601 UTC, or undefined when unset. */
export function isoOf(ts: { seconds?: unknown; nanos?: number | null } | null | undefined): string | undefined {
  if (!ts || ts.seconds === undefined || ts.seconds === null) return undefined;
  return new Date(Number(ts.seconds) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6)).toISOString();
}

/** The pending activities of a described execution, in Temporal's order. */
function pendingActivitiesOf(raw: { pendingActivities?: readonly PendingActivityInfo[] | null }): PendingActivity[] {
  return (raw.pendingActivities ?? []).map((a) => {
    const failure = a.lastFailure;
    const nextAttempt = isoOf(a.nextAttemptScheduleTime);
    return {
      activityType: a.activityType?.name ?? "",
      attempt: a.attempt ?? 1,
      ...(a.maximumAttempts ? { maximumAttempts: a.maximumAttempts } : {}),
      ...(failure ? { lastFailure: { message: failure.message ?? "", ...(failure.applicationFailureInfo?.type ? { type: failure.applicationFailureInfo.type } : {}) } } : {}),
      ...(nextAttempt ? { nextAttemptScheduleTime: nextAttempt } : {}),
    };
  });
}

/**
 * Why an open run does not move: its workflow task keeps failing (Temporal retries it for ever, and
 * the run shows as running or waiting meanwhile). The usual causes: the workflow code changed under a
 * run in flight (a nondeterminism error: the new code does not replay the run's history), or code
 * that throws outside what the run reports as its failure. `attempt` is the task's attempt now; `cause`
 * Temporal's (`NON_DETERMINISTIC_ERROR`, `WORKFLOW_WORKER_UNHANDLED_FAILURE`, …); `message` the failure's.
 */
export interface WorkflowTaskFailure {
  attempt: number;
  cause?: string;
  message: string;
}

/**
 * The failure of the run's workflow task when it is failing again and again (attempt above 1): from
 * the newest `WorkflowTaskFailed` event of its history (Temporal records the first failure of a series),
 * read backwards, one page. Undefined while the task is not failing.
 */
async function workflowTaskFailureOf(handle: WorkflowHandle, namespace: string, raw: { pendingWorkflowTask?: { attempt?: number | null } | null; workflowExecutionInfo?: { execution?: { runId?: string | null } | null } | null }): Promise<WorkflowTaskFailure | undefined> {
  const attempt = raw.pendingWorkflowTask?.attempt ?? 1;
  if (attempt <= 1) return undefined;
  const page = await handle.client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace,
    execution: { workflowId: handle.workflowId, runId: raw.workflowExecutionInfo?.execution?.runId ?? undefined },
    maximumPageSize: 50,
  });
  const failed = page.history?.events?.find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes;
  const cause = failed?.cause === undefined || failed.cause === null ? undefined : String(temporalProto().temporal.api.enums.v1.WorkflowTaskFailedCause[failed.cause as number] ?? failed.cause).replace(/^WORKFLOW_TASK_FAILED_CAUSE_/, "");
  return { attempt, ...(cause ? { cause } : {}), message: failed?.failure?.message ?? "the workflow task fails (its failure is not in the history's last events)" };
}

/** A Temporal execution as the run endpoints report it. */
export interface ExecutionOutcome {
  temporalRunId: string;
  /** `open` while the execution runs (callers refine it to queued, running or waiting). */
  status: "open" | "completed" | "failed" | "cancelled" | "timed_out";
  /** While open: its activities not completed yet ({@link PendingActivity}); none is an empty list. */
  pendingActivities?: PendingActivity[];
  /** While open and its workflow task keeps failing: why ({@link WorkflowTaskFailure}). */
  workflowTaskFailure?: WorkflowTaskFailure;
  /** When Temporal started the execution (its `StartTime`, as the run lists read it). */
  startTime: string;
  closeTime?: string;
  result?: unknown;
  /**
   * `code` (README "Run errors"): `workflow_failed` (the run failed: its code, or a step it awaited and
   * did not handle, threw; `type` and `message` say what), `result_unreadable` (completed, its result
   * encrypted with a key this data directory lost). `type`: the failure's type as Temporal recorded it;
   * `stack`: its stack trace (the thrown error's, for workflow code).
   */
  error?: { code: "workflow_failed" | "result_unreadable"; message: string; type?: string; stack?: string };
}

/**
 * Describes an execution: while it runs, its pending activities; once closed, its result or failure. TERMINATED reads as
 * `cancelled`; a failure's message is its cause's (the designer's error), not Temporal's wrapper.
 * @param forgotten the not_found message for a workflow id Temporal does not know (`TemporalHost.forgottenRun`)
 * @throws {ApiError} not_found when Temporal does not know the workflow id; unavailable when it does not answer
 */
export async function readExecution(handle: WorkflowHandle, namespace: string, forgotten: (runId: string) => string = (runId) => `Run "${runId}" is not known to Temporal (namespace ${namespace})`): Promise<ExecutionOutcome> {
  let d;
  try {
    d = await handle.describe();
  } catch (err) {
    if (err instanceof temporalClient().WorkflowNotFoundError) throw new ApiError("not_found", forgotten(handle.workflowId));
    throw new ApiError("unavailable", `Temporal did not answer: ${(err as Error).message}`);
  }
  const out: ExecutionOutcome = { temporalRunId: d.runId, status: "open", startTime: d.startTime.toISOString(), ...(d.closeTime ? { closeTime: d.closeTime.toISOString() } : {}) };
  switch (d.status.name) {
    case "RUNNING": {
      const failure = await workflowTaskFailureOf(handle, namespace, d.raw).catch(() => undefined);
      return { ...out, pendingActivities: pendingActivitiesOf(d.raw), ...(failure ? { workflowTaskFailure: failure } : {}) };
    }
    case "COMPLETED":
      try {
        return { ...out, status: "completed", result: await handle.result() };
      } catch (err) {
        // the run completed; only its result is unreadable here (encrypted with a key this data directory lost)
        if (!isUnreadablePayload(err)) throw err;
        return { ...out, status: "completed", error: { code: "result_unreadable", message: `The run completed, but its result cannot be read: ${(err as Error).message}` } };
      }
    case "CANCELLED":
    case "TERMINATED":
      return { ...out, status: "cancelled" };
    case "TIMED_OUT":
      return { ...out, status: "timed_out" };
    default:
      try {
        await handle.result();
        return { ...out, status: "failed" };
      } catch (err) {
        const { WorkflowFailedError, isGrpcServiceError } = temporalClient();
        if (!(err instanceof WorkflowFailedError)) {
          // the run failed (describe said so), but its failure did not come back
          if (isUnreadablePayload(err)) return { ...out, status: "failed", error: { code: "workflow_failed", message: `The run failed, but its failure cannot be read: ${(err as Error).message}` } };
          if (isGrpcServiceError(err)) throw new ApiError("unavailable", `Temporal did not answer: ${err.message}`);
        }
        let cause: unknown = err instanceof WorkflowFailedError ? err.cause : err;
        // an activity's (or child run's) failure wraps what failed in it: "Activity task failed" says
        // nothing. Whether a step failed or the run's code threw is not told apart by a code: a store
        // step (a local activity) fails as a plain ApplicationFailure, as the run's own code does
        while (cause instanceof Error && (cause.name === "ActivityFailure" || cause.name === "ChildWorkflowFailure") && cause.cause instanceof Error) cause = cause.cause;
        const type = (cause as { type?: string })?.type;
        // the stack Temporal recorded with the failure: for a designer's error, its own files and lines
        const stack = cause instanceof Error && cause.stack ? cause.stack : undefined;
        return { ...out, status: "failed", error: { code: "workflow_failed", message: (cause as Error)?.message ?? String(cause), ...(type ? { type } : {}), ...(stack ? { stack } : {}) } };
      }
  }
}
