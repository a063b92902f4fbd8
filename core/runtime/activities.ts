import type { InjectedSinks } from "@temporalio/worker";
import type { CarriedRecords, RecordInterventionInput, RecordRunEventInput, RecordWorkflowEventInput, RunRecord, SvcActivities, SvcSinks } from "../sdk/activities-types";
import type { LogCapture } from "../logs/capture";
import type { Logger } from "../logger";
import type { AppendInput, EventLog } from "../events/log";
import type { Database, SqlWriter } from "../store/db";
import type { OntologyStore } from "../ontology/store";
import type { ActionRunner } from "./actions";
import type { ProjectRegistry } from "../project/registry";
import type { Actor, DomainEventEnvelope, EventType } from "../events/catalog";
import { handlerContext, type HandlerRunner, type HandlerCommit, type HandlerRun } from "./handler";
import { assigneesProblem } from "./intervention-assignees";
import type { RunTable } from "./run-starter";
import type { SystemContext } from "../sdk/context";
import { ApiError, isApiError, messageOf } from "../errors";
import { nowIso } from "../ids";
import { temporalCommon } from "../temporal/sdk";
import { own } from "../sdk/project";

/** Errors that retrying cannot fix become non-retryable failures; others are retried. */
function toFailure(err: unknown): unknown {
  if (isApiError(err) && ["invalid_request", "not_found", "forbidden", "conflict", "not_configured"].includes(err.code)) {
    return temporalCommon().ApplicationFailure.nonRetryable(err.message, err.code, err.details);
  }
  return err;
}

/**
 * The runtime's activities (see {@link SvcActivities}), registered on the Temporal worker by the app:
 * every ontology write and appended event is idempotent on a key derived from the workflow run, so
 * Temporal's retries never record or apply them twice. The SDK's `blobs` and `artifacts` operations
 * act at once and are not keyed: a retried activity may create a second download URL or publish again.
 * A run's records (run, node, step, intervention events) come alone (`record*`), batched
 * (`recordBatch`), or carried by the activity that does the run's next piece of work (`records`, written
 * first in their own transaction; see workflows/records.ts).
 */
export function createActivities(deps: { db: Database; events: EventLog; ontology: OntologyStore; actions: ActionRunner; project: ProjectRegistry; handlers: HandlerRunner }): SvcActivities {
  const { db, events, ontology, actions, project, handlers } = deps;
  /**
   * Runs connector code and commits its buffered writes and events once per `spec.key`. Its result must
   * be JSON (Temporal carries it as a JSON payload): one that is not (a BigInt, a cycle) fails the
   * activity for good before anything is committed; Temporal's conversion after the commit failed every
   * retry of a run whose writes were already in.
   */
  const runHandler = async <T>(spec: HandlerRun, origin: HandlerCommit["origin"], fn: (ctx: SystemContext) => T | Promise<T>): Promise<T> => {
    const checked = async (ctx: SystemContext) => {
      const result = await fn(ctx);
      try {
        JSON.stringify(result);
      } catch (err) {
        throw new ApiError("invalid_request", `The ${spec.run.kind} handler's result cannot be written as JSON: ${messageOf(err)}`);
      }
      return result;
    };
    try {
      return await handlers.run(spec, { origin, idempotencyKey: spec.key }, checked);
    } catch (err) {
      throw toFailure(err);
    }
  };
  /** What one record writes in the caller's transaction: its rows, and the envelopes to append after them. */
  interface Written {
    envelopes: DomainEventEnvelope[];
    /** Whoever waits for this record must find its events in the stream (it ends a run, or is an intervention's). */
    awaitDrain: boolean;
  }
  /** An intervention's phase: its index row (inserted when requested, updated after) and its events. */
  const interventionInTx = async (tx: SqlWriter, input: RecordInterventionInput): Promise<Written> => {
    const now = nowIso();
    const payload = { workflowId: input.workflowId, runId: input.runId, interventionId: input.interventionId, intervention: input.name };
    const common = { correlationId: input.runId, origin: { kind: "runtime" as const, workflowId: input.workflowId, runId: input.runId } };
    if (input.phase === "requested") {
      await tx.run(
        `INSERT INTO interventions (id, run_id, workflow_id, name, prompt, assignees, answer_schema, status, requested_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?, ?) ON CONFLICT (id) DO NOTHING`,
        [input.interventionId, input.runId, input.workflowId, input.name, input.prompt ?? "", JSON.stringify(input.assignees ?? {}), input.answerSchema === undefined ? null : JSON.stringify(input.answerSchema), now, input.expiresAt ?? null],
      );
      return {
        awaitDrain: true,
        envelopes: [
          events.envelope({ ...common, type: "workflow.intervention.requested", payload: { ...payload, prompt: input.prompt, assignees: input.assignees, expiresAt: input.expiresAt }, idempotencyKey: `${input.interventionId}:requested` }),
          events.envelope({ ...common, type: "workflow.run.waiting", payload: { ...payload }, idempotencyKey: `${input.interventionId}:run.waiting` }),
          events.envelope({ ...common, type: "workflow.run.node.waiting", payload: { ...payload, node: input.name }, idempotencyKey: `${input.interventionId}:node.waiting` }),
        ],
      };
    }
    await tx.run("UPDATE interventions SET status = ?, resolved_at = COALESCE(resolved_at, ?), answer = ?, resolved_by = ?, reason = ? WHERE id = ?", [
      input.phase, now, input.answer === undefined ? null : JSON.stringify(input.answer), input.by ? JSON.stringify(input.by) : null, input.reason ?? null, input.interventionId,
    ]);
    return {
      awaitDrain: true,
      envelopes: [
        events.envelope({
          ...common,
          type: `workflow.intervention.${input.phase}`,
          payload: { ...payload, ...(input.by ? { by: input.by } : {}), ...(input.reason ? { reason: input.reason } : {}), ...(input.phase === "submitted" ? { answer: input.answer } : {}) },
          idempotencyKey: `${input.interventionId}:${input.phase}`,
        }),
      ],
    };
  };
  /**
   * Records a run's end, as the run retention counts from it (`finished_at`: migration 025 for workflow
   * runs, 027 for sync and pipeline runs), in the transaction of its finished record; a replayed record
   * keeps the first.
   */
  const recordEnd = (tx: SqlWriter, table: RunTable, runId: string) => tx.run(`UPDATE ${table} SET finished_at = ? WHERE run_id = ? AND finished_at IS NULL`, [nowIso(), runId]);
  /**
   * A run or node event. `workflow.run.queued` comes first in the run's events: the start request commits
   * it with the run's row before the run can start (issue 15), so `workflow.run.started` finds it written;
   * it stays for runs queued by older versions, which committed it after the Temporal start (same key:
   * written once).
   */
  const workflowEventInTx = async (tx: SqlWriter, input: RecordWorkflowEventInput): Promise<Written> => {
    const inputs: AppendInput[] = [];
    if (input.type === "workflow.run.started") {
      const row = await tx.get<{ actor: string | null }>("SELECT actor FROM workflow_runs WHERE run_id = ?", [input.runId]);
      const actor = row?.actor ? (JSON.parse(row.actor) as Actor) : undefined;
      if (row) inputs.push({ type: "workflow.run.queued", payload: { workflowId: input.workflowId, runId: input.runId }, idempotencyKey: `${input.runId}:queued`, correlationId: input.runId, ...(actor ? { actor } : {}) });
    }
    inputs.push({
      type: input.type as EventType,
      payload: { workflowId: input.workflowId, runId: input.runId, ...input.payload },
      idempotencyKey: input.key,
      correlationId: input.runId,
      origin: { kind: "runtime", workflowId: input.workflowId, runId: input.runId },
    });
    if (input.type === "workflow.run.finished") await recordEnd(tx, "workflow_runs", input.runId);
    return { envelopes: events.prepare(inputs), awaitDrain: input.type === "workflow.run.finished" };
  };
  /** A sync or pipeline run's event. */
  const runEventInTx = async (tx: SqlWriter, input: RecordRunEventInput): Promise<Written> => {
    const finished = input.type.endsWith(".run.finished");
    if (finished) await recordEnd(tx, "connector_runs", input.runId);
    return {
      envelopes: events.prepare([{ type: input.type as EventType, payload: input.payload, idempotencyKey: input.key, correlationId: input.runId, origin: { kind: "runtime", runId: input.runId } }]),
      awaitDrain: finished,
    };
  };
  /**
   * Writes a run's records in one transaction, in order, each once per key, then drains the outbox to the
   * stream. Only a record that ends a run or is an intervention's awaits the drain, so whoever sees the
   * run ended (or waiting) finds all its events in the stream (the drain is in commit order); for the
   * others the drain starts and the run goes on, as its next step does not need it.
   */
  const writeRecords = async (all: readonly RunRecord[]) => {
    // an intervention nobody could answer does not open (it would wait, silently, until it expires): the
    // records before and beside it are written, then the activity fails for good, naming why (the run
    // fails with it). Runs in flight replay the activity's recorded outcome: no patch is needed.
    let refused: string | undefined;
    let end = all.length;
    for (const [i, record] of all.entries()) {
      if (!("intervention" in record) || record.intervention.phase !== "requested") continue;
      const problem = assigneesProblem(project, record.intervention.assignees);
      if (!problem) continue;
      refused = `Intervention "${record.intervention.name}" of run ${record.intervention.runId} cannot open: ${problem}`;
      end = i;
      break;
    }
    const records = all.slice(0, end);
    if (records.length) await writeRecordsInTx(records);
    if (refused) throw temporalCommon().ApplicationFailure.nonRetryable(refused, "InvalidIntervention");
  };
  const writeRecordsInTx = async (records: readonly RunRecord[]) => {
    let awaitDrain = false;
    await db.transaction(async (tx) => {
      const envelopes: DomainEventEnvelope[] = [];
      for (const record of records) {
        const written = "workflowEvent" in record ? await workflowEventInTx(tx, record.workflowEvent) : "runEvent" in record ? await runEventInTx(tx, record.runEvent) : await interventionInTx(tx, record.intervention);
        envelopes.push(...written.envelopes);
        awaitDrain ||= written.awaitDrain;
      }
      await events.writeInTx(tx, envelopes);
    });
    if (awaitDrain) await events.drain();
    else void events.drain();
  };
  const activities: SvcActivities = {
    recordIntervention: (input) => writeRecords([{ intervention: input }]),
    recordWorkflowEvent: (input) => writeRecords([{ workflowEvent: input }]),
    recordRunEvent: (input) => writeRecords([{ runEvent: input }]),
    recordBatch: (input) => writeRecords(input.records),
    async readObject(input) {
      // a misspelt type would read as "no such object", and the run go on (or fail) for the wrong reason
      if (!own(project.definition.objectTypes, input.objectTypeId)) {
        throw toFailure(new ApiError("not_found", `Unknown object type "${input.objectTypeId}"; the project's object types are: ${Object.keys(project.definition.objectTypes).join(", ")}`));
      }
      return (await ontology.getObject(input.objectTypeId, input.primaryId)) ?? null;
    },
    async writeOntology(input) {
      try {
        await ontology.commit(input.changes, { origin: { kind: "runtime", workflowId: input.workflowId, runId: input.runId }, correlationId: input.runId, idempotencyKey: input.key });
      } catch (err) {
        throw toFailure(err);
      }
    },
    async runAction(input) {
      try {
        return await actions.run({ actionId: input.actionId, subject: input.subject, params: input.params ?? {}, runId: input.runId });
      } catch (err) {
        throw toFailure(err);
      }
    },
    async runSchedule(input) {
      const found = project.schedules().find((s) => s.scheduleId === input.scheduleId);
      if (!found) throw temporalCommon().ApplicationFailure.nonRetryable(`No schedule "${input.scheduleId}" is declared any more`, "not_found");
      await events.append([{ type: "schedule.triggered", payload: { ...input }, idempotencyKey: `schedule.triggered:${input.occurrenceKey}`, correlationId: input.occurrenceKey, partitionKey: input.scheduleId, origin: { kind: "runtime", connectorId: found.connectorId, scheduleId: input.scheduleId } }]);
      await runHandler(
        { run: { kind: "schedule", id: input.occurrenceKey }, logFields: { scheduleId: input.scheduleId }, correlationId: input.occurrenceKey, key: `schedule:${input.occurrenceKey}` },
        { kind: "runtime", connectorId: found.connectorId, scheduleId: input.scheduleId },
        (ctx) => found.definition.run(handlerContext(ctx, { scheduleId: input.scheduleId, occurrenceAt: input.occurrenceAt })),
      );
    },
    async runSync(input) {
      const { connectorId, definition } = project.connectorRun("syncs", input.syncId);
      const result = await runHandler(
        { run: { kind: "sync", id: input.runId }, logFields: { syncId: input.syncId }, correlationId: input.runId, key: `sync:${input.runId}` },
        { kind: "runtime", connectorId, syncId: input.syncId, runId: input.runId },
        (ctx) => definition.run(handlerContext(ctx, { runId: input.runId, input: input.input, syncId: input.syncId })),
      );
      return result ?? null;
    },
    async runPipelineStep(input) {
      const { connectorId, definition } = project.connectorRun("pipelines", input.pipelineId);
      const step = definition.steps[input.index];
      if (!step) throw temporalCommon().ApplicationFailure.nonRetryable(`Pipeline ${input.pipelineId} has no step ${input.index}`, "not_found");
      const result = await runHandler(
        { run: { kind: "pipeline", id: input.runId }, logFields: { pipelineId: input.pipelineId, step: step.name }, correlationId: input.runId, key: `pipeline:${input.runId}:${input.index}` },
        { kind: "runtime", connectorId, pipelineId: input.pipelineId, step: step.name, runId: input.runId },
        (ctx) => step.run(handlerContext(ctx, { runId: input.runId, input: input.input, pipelineId: input.pipelineId, results: input.results })),
      );
      return result ?? null;
    },
    async createDownloadUrl(input) {
      try {
        return await handlers.blobs(`workflow:${input.runId}`).createDownloadUrl({ id: input.fileId }, { expiresInMs: input.expiresInMs });
      } catch (err) {
        throw toFailure(err);
      }
    },
    async revokeDownloadUrl(input) {
      try {
        await handlers.blobs("workflow").revokeDownloadUrl(input.id);
      } catch (err) {
        throw toFailure(err);
      }
    },
    async runActionEffect(input) {
      const run = await actions.get(input.runId);
      const effect = project.action(input.actionId).definition.effect;
      if (!effect) return;
      await runHandler(
        { run: { kind: "action", id: input.runId }, logFields: { actionId: input.actionId, effect: true }, correlationId: input.runId, key: `effect:${input.runId}` },
        { kind: "runtime", actionId: input.actionId, runId: input.runId, effect: true },
        (ctx) => effect(handlerContext(ctx, { run })),
      );
    },
  };
  for (const name of CARRIERS) {
    const work = activities[name] as (input: CarriedRecords) => Promise<unknown>;
    Object.assign(activities, {
      [name]: async (input: CarriedRecords) => {
        if (input.records?.length) await writeRecords(input.records);
        return work(input);
      },
    });
  }
  return activities;
}

/** The activities that first write the records a run queued before calling them (`CarriedRecords`). */
const CARRIERS = ["readObject", "writeOntology", "runAction", "runSync", "runPipelineStep", "createDownloadUrl", "revokeDownloadUrl"] as const satisfies ReadonlyArray<keyof SvcActivities>;

/**
 * The sinks workflow code logs through (spec 2.5): `ctx.log` of a workflow run is captured with run
 * context `{ kind: "workflow", id: runId }`, after the activation and never during replay.
 */
export function createSinks(logs: LogCapture, log: Logger): InjectedSinks<SvcSinks> {
  return {
    handlerLog: {
      write: {
        fn: (info, level, message, fields) => logs.logger(log, { kind: "workflow", id: info.workflowId }, { workflowId: info.workflowType })[level](fields, message),
        callDuringReplay: false,
      },
    },
  };
}
