import * as v from "valibot";
import { WorkflowExecutionAlreadyStartedError } from "@temporalio/client";
import { readExecution } from "../temporal/execution";
import { WorkflowIdReusePolicy } from "@temporalio/common";
import type { Database } from "../store/db";
import type { EventLog } from "../events/log";
import type { ProjectRegistry } from "./registry";
import type { TemporalHost } from "../temporal/host";
import type { Actor } from "../events/catalog";
import { ApiError } from "../errors";
import { newId, nowIso } from "../ids";
import { parseOrThrow } from "../http/validation";

/** A sync or pipeline run's state (`GET /api/sync-runs/:runId`, `GET /api/pipeline-runs/:runId`). */
export interface ConnectorRunState {
  runId: string;
  kind: "sync" | "pipeline";
  syncId?: string;
  pipelineId?: string;
  status: "queued" | "running" | "completed" | "failed" | "cancelled" | "timed_out";
  input: unknown;
  result?: unknown;
  error?: { message: string };
  queuedAt: string;
  startedAt?: string;
  finishedAt?: string;
  steps?: Array<{ name: string; status: string; startedAt: string; finishedAt?: string; error?: { message: string } }>;
  links: { temporalWorkflowId: string; temporalRunId: string; temporalUi?: string };
}

const KIND = { sync: { table: "syncs", workflow: "syncRun", key: "syncId", topic: "syncs" }, pipeline: { table: "pipelines", workflow: "pipelineRun", key: "pipelineId", topic: "pipelines" } } as const;

/**
 * Sync and pipeline runs on Temporal (spec 4.3): a run request answers `{ runId }` once queued
 * (workflow id = runId; workflow type `syncRun` / `pipelineRun`); the run endpoint reports completion.
 */
export class ConnectorRuns {
  constructor(
    private readonly db: Database,
    private readonly events: EventLog,
    private readonly project: ProjectRegistry,
    private readonly temporal: TemporalHost,
  ) {}

  /**
   * Queues a run; sending the same runId again answers the same run.
   * @throws {ApiError} not_found, invalid_request (input), conflict (runId of another run), unavailable
   */
  async start(kind: "sync" | "pipeline", id: string, input: unknown, actor: Actor | undefined, runId = newId("run")): Promise<{ runId: string }> {
    const k = KIND[kind];
    const { definition } = this.project.connectorRun(k.table, id);
    const parsed = definition.input ? parseOrThrow(definition.input as v.GenericSchema<unknown, unknown>, input ?? {}, "input") : (input ?? null);
    const args = kind === "sync" ? { syncId: id, input: parsed } : { pipelineId: id, input: parsed, steps: (definition as { steps: Array<{ name: string }> }).steps.map((s) => s.name) };
    try {
      await this.temporal.client.workflow.start(k.workflow, { workflowId: runId, taskQueue: this.temporal.taskQueue, args: [args], workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE, memo: actor ? { actor } : undefined });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw new ApiError("unavailable", `Temporal did not queue the run: ${(err as Error).message}`);
      const row = await this.db.get<{ kind: string; definition_id: string }>("SELECT kind, definition_id FROM connector_runs WHERE run_id = ?", [runId]);
      if (!row || row.kind !== kind || row.definition_id !== id) throw new ApiError("conflict", `runId ${runId} belongs to another run`);
    }
    await this.db.transaction((tx) => tx.run("INSERT INTO connector_runs (run_id, kind, definition_id, input, actor, requested_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", [runId, kind, id, JSON.stringify(parsed), actor ? JSON.stringify(actor) : null, nowIso()]));
    return { runId };
  }

  /** The sync or pipeline id of a recorded run. @throws {ApiError} not_found */
  async definitionOf(kind: "sync" | "pipeline", runId: string): Promise<string> {
    const row = await this.db.get<{ definition_id: string }>("SELECT definition_id FROM connector_runs WHERE run_id = ? AND kind = ?", [runId, kind]);
    if (!row) throw new ApiError("not_found", `No ${kind} run "${runId}"`);
    return row.definition_id;
  }

  /** A run's state from Temporal and its recorded events. @throws {ApiError} not_found, unavailable */
  async get(kind: "sync" | "pipeline", runId: string): Promise<ConnectorRunState> {
    const k = KIND[kind];
    const row = await this.db.get<{ definition_id: string; input: string; requested_at: string }>("SELECT definition_id, input, requested_at FROM connector_runs WHERE run_id = ? AND kind = ?", [runId, kind]);
    if (!row) throw new ApiError("not_found", `No ${kind} run "${runId}"`);
    const execution = await readExecution(this.temporal.client.workflow.getHandle(runId), this.temporal.namespace);
    const events = await this.events.read({ runId, topics: [k.topic], limit: 1000 });
    const started = events.find((e) => e.type.endsWith(".run.started"));
    const ui = this.temporal.executionUrl(runId, execution.temporalRunId);
    const state: ConnectorRunState = {
      runId,
      kind,
      [k.key]: row.definition_id,
      status: execution.status !== "open" ? execution.status : started ? "running" : "queued",
      input: JSON.parse(row.input),
      ...(execution.result !== undefined ? { result: execution.result } : {}),
      ...(execution.error ? { error: { message: execution.error.message } } : {}),
      queuedAt: row.requested_at,
      ...(started ? { startedAt: started.occurredAt } : {}),
      ...(execution.closeTime ? { finishedAt: execution.closeTime } : {}),
      links: { temporalWorkflowId: runId, temporalRunId: execution.temporalRunId, ...(ui ? { temporalUi: ui } : {}) },
    };
    if (kind === "pipeline") {
      const steps = new Map<number, NonNullable<ConnectorRunState["steps"]>[number]>();
      for (const e of events) {
        const index = Number(e.payload.index);
        if (e.type === "pipeline.run.step.started") steps.set(index, { name: String(e.payload.step), status: "running", startedAt: e.occurredAt });
        if (e.type === "pipeline.run.step.finished" && steps.has(index)) Object.assign(steps.get(index)!, { status: e.payload.status, finishedAt: e.occurredAt, ...(e.payload.error ? { error: e.payload.error } : {}) });
      }
      state.steps = [...steps.values()];
    }
    return state;
  }
}
