import * as v from "valibot";
import { readExecution, type ExecutionOutcome } from "../temporal/execution";
import type { TemporalHost } from "../temporal/host";

/** Where a run lives on Temporal: workflow id (= runId), Temporal run id, and the UI page when served. */
export const RunLinksSchema = v.object({ temporalWorkflowId: v.string(), temporalRunId: v.string(), temporalUi: v.optional(v.string()) });

/** Fields every run state shares (workflow, sync and pipeline runs). Times are ISO 8601 UTC. */
export interface RunStateBase {
  status: "queued" | "running" | "completed" | "failed" | "cancelled" | "timed_out";
  result?: unknown;
  error?: { message: string; type?: string };
  queuedAt: string;
  startedAt?: string;
  finishedAt?: string;
  links: v.InferOutput<typeof RunLinksSchema>;
}

/**
 * Reads a run's execution from Temporal and builds the fields every run state shares: an open
 * execution is `running` once its started event was recorded, else `queued`.
 *
 * @param queuedAt when the run was recorded
 * @param startedAt when its `*.run.started` event occurred, if it did
 * @throws {ApiError} not_found when Temporal does not know the run; unavailable when it does not answer
 */
export async function readRunState(temporal: TemporalHost, runId: string, queuedAt: string, startedAt: string | undefined): Promise<RunStateBase & { execution: ExecutionOutcome }> {
  const execution = await readExecution(temporal.client.workflow.getHandle(runId), temporal.namespace);
  const ui = temporal.executionUrl(runId, execution.temporalRunId);
  return {
    execution,
    status: execution.status !== "open" ? execution.status : startedAt ? "running" : "queued",
    ...(execution.result !== undefined ? { result: execution.result } : {}),
    ...(execution.error ? { error: execution.error } : {}),
    queuedAt,
    ...(startedAt ? { startedAt } : {}),
    ...(execution.closeTime ? { finishedAt: execution.closeTime } : {}),
    links: { temporalWorkflowId: runId, temporalRunId: execution.temporalRunId, ...(ui ? { temporalUi: ui } : {}) },
  };
}
