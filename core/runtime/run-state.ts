import * as v from "valibot";
import { readExecution, type ExecutionOutcome, type PendingActivity, type WorkflowTaskFailure } from "../temporal/execution";
import type { TemporalHost } from "../temporal/host";

/**
 * Where a run lives on Temporal: workflow id (= runId), Temporal run id, and the UI page when served.
 * A run not started on Temporal yet (or ended before its start) has no `temporalRunId` and no UI page.
 */
export const RunLinksSchema = v.object({ temporalWorkflowId: v.string(), temporalRunId: v.optional(v.string()), temporalUi: v.optional(v.string()) });

/**
 * The `runId` a client may choose for a run that becomes a Temporal workflow id (the start requests of
 * workflow, sync and pipeline runs): 1-128 ASCII letters, digits, `_`, `.` and `-`. No `:`: svc's own
 * workflow ids on Temporal have one (schedule firings `svc:<scheduleId>-<time>`, action effects
 * `action-effect:<actionRunId>`), so a client's run can never take the id of a start svc makes later
 * (which then took the client's run for its own and never ran).
 */
export const ClientRunIdSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.-]{1,128}$/, "must be 1-128 characters of letters, digits, _ . - (ids with : are svc's own on Temporal)"));

/**
 * The activities of a running run that have not completed (Temporal's `PendingActivityInfo`, see
 * `PendingActivity` in core/temporal/execution.ts): present while the run runs on Temporal, so a
 * handler Temporal keeps retrying shows its attempt and last failure before the run ends.
 */
export const PendingActivitySchema = v.object({
  activityType: v.string(),
  attempt: v.number(),
  maximumAttempts: v.optional(v.number()),
  lastFailure: v.optional(v.object({ message: v.string(), type: v.optional(v.string()) })),
  nextAttemptScheduleTime: v.optional(v.string()),
});

/**
 * Why a running run does not move (see `WorkflowTaskFailure` in core/temporal/execution.ts): its
 * workflow task keeps failing, most often because the workflow code changed under it.
 */
export const WorkflowTaskFailureSchema = v.object({ attempt: v.number(), cause: v.optional(v.string()), message: v.string() });

/** A run row's start columns (migration 013): `pending` until the starter started it on Temporal. */
export interface StartRow {
  requested_at: string;
  start_status: "pending" | "started" | "failed" | "cancelled";
  /** JSON `{ message, type? }` when Temporal refused the start for good. */
  start_error: string | null;
  start_finished_at: string | null;
}

/** Fields every run state shares (workflow, sync and pipeline runs). Times are ISO 8601 UTC. */
export interface RunStateBase {
  status: "queued" | "running" | "completed" | "failed" | "cancelled" | "timed_out";
  result?: unknown;
  /** See `ExecutionOutcome.error`; `start_refused` when Temporal refused to start the run. */
  error?: { code: string; message: string; type?: string; stack?: string };
  queuedAt: string;
  startedAt?: string;
  finishedAt?: string;
  /** While the run runs on Temporal: its activities not completed yet (see {@link PendingActivitySchema}). */
  pendingActivities?: PendingActivity[];
  /** While the run runs on Temporal and its workflow task keeps failing: why. */
  workflowTaskFailure?: WorkflowTaskFailure;
  links: v.InferOutput<typeof RunLinksSchema>;
}

/**
 * Reads a run's execution from Temporal and builds the fields every run state shares: an open
 * execution is `running` once its started event was recorded, else `queued`. `startedAt` is then
 * Temporal's start time of the execution, as the run lists show it (the started event is recorded a
 * few ms later, by the run's first step).
 *
 * @param queuedAt when the run was recorded
 * @param started whether its `*.run.started` event was recorded
 * @throws {ApiError} not_found when Temporal does not know the run (never started there, or ended longer
 *   ago than the namespace's retention: the message says which retention); unavailable when it does not answer
 */
export async function readRunState(temporal: TemporalHost, runId: string, queuedAt: string, started: boolean): Promise<RunStateBase & { execution: ExecutionOutcome }> {
  const execution = await readExecution(temporal.client.workflow.getHandle(runId), temporal.namespace, (id) => temporal.forgottenRun(id, queuedAt));
  const ui = temporal.executionUrl(runId, execution.temporalRunId);
  return {
    execution,
    status: execution.status !== "open" ? execution.status : started ? "running" : "queued",
    ...(execution.result !== undefined ? { result: execution.result } : {}),
    ...(execution.error ? { error: execution.error } : {}),
    queuedAt,
    ...(started ? { startedAt: execution.startTime } : {}),
    ...(execution.closeTime ? { finishedAt: execution.closeTime } : {}),
    ...(execution.pendingActivities ? { pendingActivities: execution.pendingActivities } : {}),
    ...(execution.workflowTaskFailure ? { workflowTaskFailure: execution.workflowTaskFailure } : {}),
    links: { temporalWorkflowId: runId, temporalRunId: execution.temporalRunId, ...(ui ? { temporalUi: ui } : {}) },
  };
}

/**
 * The shared fields of a run that is not started on Temporal (spec 3): `queued` while pending; `failed`
 * (with the refusal as `error`) or `cancelled` when it ended before its start. Reads no Temporal state.
 */
export function unstartedRunState(runId: string, row: StartRow): RunStateBase {
  const status = row.start_status === "pending" ? "queued" : row.start_status === "cancelled" ? "cancelled" : "failed";
  return {
    status,
    // stored as `{ message, type? }`: every refusal is a start_refused
    ...(row.start_error ? { error: { code: "start_refused", ...(JSON.parse(row.start_error) as { message: string; type?: string }) } } : {}),
    queuedAt: row.requested_at,
    ...(row.start_finished_at ? { finishedAt: row.start_finished_at } : {}),
    links: { temporalWorkflowId: runId },
  };
}

/**
 * A run's shared state fields from its row: from Temporal (`readRunState`, without the raw execution)
 * once it was started there, else from the row alone ({@link unstartedRunState}).
 * @param started whether the run's `*.run.started` event was recorded
 * @throws {ApiError} unavailable when Temporal does not answer for a started run
 */
export async function runStateFromRow(temporal: TemporalHost, runId: string, row: StartRow, started: boolean): Promise<RunStateBase> {
  if (row.start_status !== "started") return unstartedRunState(runId, row);
  const { execution: _execution, ...base } = await readRunState(temporal, runId, row.requested_at, started);
  return base;
}
