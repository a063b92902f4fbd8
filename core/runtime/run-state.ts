import * as v from "valibot";
import { WorkflowNotFoundError } from "@temporalio/client";
import { readExecution, type ExecutionOutcome } from "../temporal/execution";
import type { TemporalHost } from "../temporal/host";
import { startRun, type StartRunOptions } from "../temporal/start";
import { ApiError } from "../errors";

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

/**
 * Starts a run on Temporal after its row was written (issue 9: an execution never exists unrecorded).
 * When this request wrote the row (`recordedBefore` false) and the execution turns out not to be ours,
 * or Temporal certainly has none after a refused start, `forget()` removes the row again. When the start
 * failed and Temporal's state is unknown (a timeout after it may have accepted), the row stays: a resend
 * with the same runId reconciles it.
 *
 * @param ours whether an existing execution of that id (by its workflow type) is this run
 * @throws {ApiError} unavailable (Temporal did not queue it), conflict (the id is another execution's)
 */
export async function startRecordedRun(temporal: TemporalHost, opts: StartRunOptions, recordedBefore: boolean, forget: () => Promise<void>, ours: (workflowType: string) => boolean): Promise<void> {
  const existingType = () =>
    temporal.client.workflow
      .getHandle(opts.workflowId)
      .describe()
      .then(
        (d) => d.type as string | null,
        (err) => (err instanceof WorkflowNotFoundError ? null : undefined),
      );
  let started: boolean;
  try {
    ({ started } = await startRun(temporal.client, opts));
  } catch (err) {
    const type = await existingType();
    if (type === null && !recordedBefore) await forget();
    if (type === null || type === undefined) throw new ApiError("unavailable", `Temporal did not queue the run: ${(err as Error).message}`);
    started = false;
  }
  if (!started && !recordedBefore) {
    const type = await existingType();
    // an execution this API did not record (an effect, a schedule firing, another run): never adopt it
    if (type === undefined) throw new ApiError("unavailable", "Temporal did not say whether the run exists; send the same runId again");
    if (type === null || !ours(type)) {
      await forget();
      throw new ApiError("conflict", `runId ${opts.workflowId} is taken by another execution`);
    }
  }
}
