import * as v from "valibot";
import { RunErrorSchema } from "../sdk/records";
import { inject, injectable } from "../di";
import { Database } from "../store/db";
import { EventLog } from "../events/log";
import { ProjectRegistry } from "../project/registry";
import { TemporalHost } from "../temporal/host";
import type { Actor } from "../events/catalog";
import { ApiError } from "../errors";
import { newId, nowIso } from "../ids";
import { parseOrThrow } from "../http/validation";
import { PendingActivitySchema, RunLinksSchema, WorkflowTaskFailureSchema, runStateFromRow, type StartRow } from "./run-state";
import { RunStarter } from "./run-starter";

/** A sync or pipeline run's state (`GET /api/sync-runs/:runId`, `GET /api/pipeline-runs/:runId`). */
export const ConnectorRunStateSchema = v.object({
  runId: v.string(),
  kind: v.picklist(["sync", "pipeline"]),
  syncId: v.optional(v.string()),
  pipelineId: v.optional(v.string()),
  status: v.picklist(["queued", "running", "completed", "failed", "cancelled", "timed_out"]),
  input: v.unknown(),
  result: v.optional(v.unknown()),
  error: v.optional(RunErrorSchema),
  queuedAt: v.string(),
  startedAt: v.optional(v.pipe(v.string(), v.description("When Temporal started the run; absent while the run is queued"))),
  finishedAt: v.optional(v.string()),
  steps: v.optional(v.array(v.object({ name: v.string(), status: v.picklist(["running", "completed", "failed", "cancelled"]), startedAt: v.string(), finishedAt: v.optional(v.string()), error: v.optional(RunErrorSchema) }))),
  pendingActivities: v.optional(v.array(PendingActivitySchema)),
  workflowTaskFailure: v.optional(WorkflowTaskFailureSchema),
  links: RunLinksSchema,
});
export type ConnectorRunState = v.InferOutput<typeof ConnectorRunStateSchema>;

const KIND = { sync: { table: "syncs", workflow: "syncRun", key: "syncId", topic: "syncs" }, pipeline: { table: "pipelines", workflow: "pipelineRun", key: "pipelineId", topic: "pipelines" } } as const;

/**
 * Sync and pipeline runs on Temporal (spec 4.3): a run request answers `{ runId }` once durably queued
 * in the store; the {@link RunStarter} starts it on Temporal afterwards (workflow id = runId; workflow
 * type `syncRun` / `pipelineRun`); the run endpoint reports completion.
 */
@injectable()
export class ConnectorRuns {
  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(TemporalHost) private readonly temporal: TemporalHost,
    @inject(RunStarter) private readonly starter: RunStarter,
  ) {}

  /**
   * Queues a run: validates the input, then one transaction writes the row (`start_status` pending);
   * the answer follows the commit and the {@link RunStarter} starts it on Temporal afterwards. Sending
   * the same runId again answers the same run without queuing another.
   * @throws {ApiError} not_found, invalid_request (input), conflict (runId of another run), shutting_down
   */
  async start(kind: "sync" | "pipeline", id: string, input: unknown, actor: Actor | undefined, runId = newId("run")): Promise<{ runId: string }> {
    if (!this.starter.accepting) throw new ApiError("shutting_down", "The server is shutting down; the run was not queued");
    const k = KIND[kind];
    const { definition } = this.project.connectorRun(k.table, id);
    const parsed = definition.input ? parseOrThrow(definition.input as v.GenericSchema<unknown, unknown>, input ?? {}, "input") : (input ?? null);
    const inserted = await this.db.transaction(async (tx) => {
      const row = await tx.get<{ kind: string; definition_id: string }>("SELECT kind, definition_id FROM connector_runs WHERE run_id = ?", [runId]);
      if (row && (row.kind !== kind || row.definition_id !== id)) throw new ApiError("conflict", `runId ${runId} belongs to another run`);
      if (row) return false;
      await tx.run("INSERT INTO connector_runs (run_id, kind, definition_id, input, actor, requested_at, start_status) VALUES (?, ?, ?, ?, ?, ?, 'pending')", [runId, kind, id, JSON.stringify(parsed), actor ? JSON.stringify(actor) : null, nowIso()]);
      return true;
    });
    if (inserted) this.starter.poke("connector_runs", runId);
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
    const row = await this.db.get<{ definition_id: string; input: string } & StartRow>("SELECT definition_id, input, requested_at, start_status, start_error, start_finished_at FROM connector_runs WHERE run_id = ? AND kind = ?", [runId, kind]);
    if (!row) throw new ApiError("not_found", `No ${kind} run "${runId}"`);
    const events = await this.events.read({ runId, topics: [k.topic], limit: 1000 });
    const { error, ...base } = await runStateFromRow(this.temporal, runId, row, events.some((e) => e.type.endsWith(".run.started")));
    const state: ConnectorRunState = { runId, kind, [k.key]: row.definition_id, input: JSON.parse(row.input), ...base, ...(error ? { error: { code: error.code, message: error.message } } : {}) };
    if (kind === "pipeline") {
      const steps = new Map<number, NonNullable<ConnectorRunState["steps"]>[number]>();
      for (const e of events) {
        const index = Number(e.payload.index);
        if (e.type === "pipeline.run.step.started") steps.set(index, { name: String(e.payload.step), status: "running", startedAt: e.occurredAt });
        if (e.type === "pipeline.run.step.finished" && steps.has(index)) {
          // the code follows from what became of the step (events recorded before codes carry `{ message }` alone)
          const error = e.payload.error as { message: string } | undefined;
          Object.assign(steps.get(index)!, { status: e.payload.status, finishedAt: e.occurredAt, ...(error ? { error: { code: e.payload.status === "cancelled" ? "cancelled" : "step_failed", message: error.message } } : {}) });
        }
      }
      state.steps = [...steps.values()];
    }
    return state;
  }
}
