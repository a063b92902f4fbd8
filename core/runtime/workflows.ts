import { inject, injectable } from "../di";
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowNotFoundError } from "@temporalio/client";
import { WorkflowIdReusePolicy } from "@temporalio/common";
import { TOKENS } from "../tokens";
import type { Database } from "../store/db";
import type { EventLog } from "../events/log";
import type { ProjectRegistry } from "./registry";
import type { TemporalHost } from "../temporal/host";
import type { Actor } from "../events/catalog";
import { ApiError } from "../errors";
import { newId, nowIso } from "../ids";
import { parseOrThrow } from "../http/validation";

/** Run states of a workflow run (spec 3: states beyond the events are ours to name). */
export type WorkflowRunStatus = "queued" | "running" | "completed" | "failed" | "cancelled" | "timed_out";

/** A node of a run, from its node events. */
export interface WorkflowNodeState {
  name: string;
  status: "running" | "completed" | "failed" | "cancelled";
  startedAt: string;
  finishedAt?: string;
}

/** The state of a workflow run (`GET /api/workflow-runs/:runId`). */
export interface WorkflowRunState {
  runId: string;
  workflowId: string;
  status: WorkflowRunStatus;
  input: unknown;
  result?: unknown;
  error?: { message: string; type?: string };
  queuedAt: string;
  startedAt?: string;
  finishedAt?: string;
  nodes: WorkflowNodeState[];
  links: { temporalWorkflowId: string; temporalRunId: string; temporalUi?: string };
}

/**
 * Workflow runs over Temporal (spec 4.1, 4.3): a run is a Temporal execution whose workflow id is the
 * runId and whose workflow type is the designer's workflow id.
 */
@injectable()
export class WorkflowRuns {
  private temporal: TemporalHost | undefined;
  accepting = true;

  constructor(
    @inject(TOKENS.Database) private readonly db: Database,
    @inject(TOKENS.EventLog) private readonly events: EventLog,
    @inject(TOKENS.Project) private readonly project: ProjectRegistry,
  ) {}

  setTemporal(host: TemporalHost): void {
    this.temporal = host;
  }

  private host(): TemporalHost {
    if (!this.temporal) throw new ApiError("unavailable", "Temporal is not connected yet");
    return this.temporal;
  }

  /**
   * Queues a run on Temporal, then records it and `workflow.run.queued`. Sending the same `runId`
   * again answers the same run without starting another.
   * @throws {ApiError} not_found (workflow), invalid_request (input), conflict (runId of another
   *   workflow), shutting_down, unavailable (Temporal unreachable)
   */
  async start(workflowId: string, input: unknown, actor: Actor | undefined, runId = newId("run")): Promise<{ runId: string }> {
    if (!this.accepting) throw new ApiError("shutting_down", "The server is shutting down; the run was not queued");
    const definition = this.project.workflow(workflowId);
    const parsed = parseOrThrow(definition.input, input ?? {}, "input");
    const host = this.host();
    try {
      await host.client.workflow.start(workflowId, {
        workflowId: runId,
        taskQueue: host.taskQueue,
        args: [parsed],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        memo: actor ? { actor } : undefined,
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw new ApiError("unavailable", `Temporal did not queue the run: ${(err as Error).message}`);
      const row = await this.db.get<{ workflow_id: string }>("SELECT workflow_id FROM workflow_runs WHERE run_id = ?", [runId]);
      if (row && row.workflow_id !== workflowId) throw new ApiError("conflict", `runId ${runId} belongs to a run of ${row.workflow_id}`);
    }
    const queued = this.events.envelope({ type: "workflow.run.queued", payload: { workflowId, runId }, idempotencyKey: `${runId}:queued`, correlationId: runId, actor });
    await this.db.transaction(async (tx) => {
      await tx.run("INSERT INTO workflow_runs (run_id, workflow_id, input, actor, requested_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", [runId, workflowId, JSON.stringify(parsed), actor ? JSON.stringify(actor) : null, nowIso()]);
      await this.events.writeInTx(tx, [queued]);
    });
    await this.events.drain();
    return { runId };
  }

  /** The workflow id of a recorded run. @throws {ApiError} not_found */
  async workflowOf(runId: string): Promise<string> {
    const row = await this.db.get<{ workflow_id: string }>("SELECT workflow_id FROM workflow_runs WHERE run_id = ?", [runId]);
    if (!row) throw new ApiError("not_found", `No workflow run "${runId}"`);
    return row.workflow_id;
  }

  /** Reads a run's state from Temporal and its recorded events. @throws {ApiError} not_found */
  async get(runId: string): Promise<WorkflowRunState> {
    const row = await this.db.get<{ workflow_id: string; input: string; requested_at: string }>("SELECT workflow_id, input, requested_at FROM workflow_runs WHERE run_id = ?", [runId]);
    if (!row) throw new ApiError("not_found", `No workflow run "${runId}"`);
    const host = this.host();
    const handle = host.client.workflow.getHandle(runId);
    let description;
    try {
      description = await handle.describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new ApiError("not_found", `Run "${runId}" is not known to Temporal (namespace ${host.namespace})`);
      throw new ApiError("unavailable", `Temporal did not answer: ${(err as Error).message}`);
    }
    const events = await this.events.read({ runId, topics: ["workflows"], limit: 1000 });
    const started = events.find((e) => e.type === "workflow.run.started");
    const nodes = new Map<number, WorkflowNodeState>();
    for (const e of events) {
      const n = Number(/:node:(\d+):/.exec(e.idempotencyKey ?? "")?.[1]);
      if (!n) continue;
      if (e.type === "workflow.run.node.started") nodes.set(n, { name: String(e.payload.node), status: "running", startedAt: e.occurredAt });
      else if (e.type === "workflow.run.node.finished" && nodes.has(n)) Object.assign(nodes.get(n)!, { status: e.payload.status, finishedAt: e.occurredAt });
    }
    const state: WorkflowRunState = {
      runId,
      workflowId: row.workflow_id,
      status: "running",
      input: JSON.parse(row.input),
      queuedAt: row.requested_at,
      ...(started ? { startedAt: started.occurredAt } : {}),
      nodes: [...nodes.values()],
      links: { temporalWorkflowId: runId, temporalRunId: description.runId, ...(host.executionUrl(runId, description.runId) ? { temporalUi: host.executionUrl(runId, description.runId) } : {}) },
    };
    if (description.closeTime) state.finishedAt = description.closeTime.toISOString();
    switch (description.status.name) {
      case "RUNNING":
        state.status = started ? "running" : "queued";
        break;
      case "COMPLETED":
        state.status = "completed";
        state.result = await handle.result();
        break;
      case "CANCELLED":
        state.status = "cancelled";
        break;
      case "TIMED_OUT":
        state.status = "timed_out";
        break;
      default: {
        state.status = description.status.name === "TERMINATED" ? "cancelled" : "failed";
        try {
          await handle.result();
        } catch (err) {
          const cause = err instanceof WorkflowFailedError ? err.cause : err;
          state.error = { message: (cause as Error)?.message ?? String(cause), type: (cause as { type?: string })?.type ?? (cause as Error)?.name };
        }
      }
    }
    return state;
  }
}
