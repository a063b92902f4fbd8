import type { WorkflowHandle } from "@temporalio/client";
import { temporalClient } from "./sdk";
import { ApiError } from "../errors";

/** A Temporal execution as the run endpoints report it. */
export interface ExecutionOutcome {
  temporalRunId: string;
  /** `open` while the execution runs (callers refine it to queued, running or waiting). */
  status: "open" | "completed" | "failed" | "cancelled" | "timed_out";
  closeTime?: string;
  result?: unknown;
  error?: { message: string; type?: string };
}

/**
 * Describes an execution and, once closed, reads its result or failure. TERMINATED reads as
 * `cancelled`; a failure's message is its cause's (the designer's error), not Temporal's wrapper.
 * @throws {ApiError} not_found when Temporal does not know the workflow id; unavailable when it does not answer
 */
export async function readExecution(handle: WorkflowHandle, namespace: string): Promise<ExecutionOutcome> {
  let d;
  try {
    d = await handle.describe();
  } catch (err) {
    if (err instanceof temporalClient().WorkflowNotFoundError) throw new ApiError("not_found", `Run "${handle.workflowId}" is not known to Temporal (namespace ${namespace})`);
    throw new ApiError("unavailable", `Temporal did not answer: ${(err as Error).message}`);
  }
  const out: ExecutionOutcome = { temporalRunId: d.runId, status: "open", ...(d.closeTime ? { closeTime: d.closeTime.toISOString() } : {}) };
  switch (d.status.name) {
    case "RUNNING":
      return out;
    case "COMPLETED":
      return { ...out, status: "completed", result: await handle.result() };
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
        let cause: unknown = err instanceof temporalClient().WorkflowFailedError ? err.cause : err;
        // an activity's (or child run's) failure wraps what failed in it: "Activity task failed" says nothing
        while (cause instanceof Error && (cause.name === "ActivityFailure" || cause.name === "ChildWorkflowFailure") && cause.cause instanceof Error) cause = cause.cause;
        return { ...out, status: "failed", error: { message: (cause as Error)?.message ?? String(cause), ...((cause as { type?: string })?.type ? { type: (cause as { type?: string }).type } : {}) } };
      }
  }
}
