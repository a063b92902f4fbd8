import { ApplicationFailure } from "@temporalio/common";
import type { SvcActivities } from "../sdk/activities-types";
import type { EventLog } from "../events/log";
import type { Database } from "../store/db";
import type { OntologyStore } from "../ontology/store";
import { WriteBuffer } from "../ontology/store";
import type { ActionRunner } from "../runtime/actions";
import type { ProjectRegistry } from "../runtime/registry";
import type { Logger } from "../logger";
import type { LogCapture } from "../logs/capture";
import type { EventType } from "../events/catalog";
import { isApiError } from "../errors";
import { eventsApi, ontologyAccess } from "../runtime/context";

/** Errors that retrying cannot fix become non-retryable failures; others are retried. */
function toFailure(err: unknown): unknown {
  if (isApiError(err) && ["invalid_request", "not_found", "forbidden", "conflict"].includes(err.code)) {
    return ApplicationFailure.nonRetryable(err.message, err.code, err.details);
  }
  return err;
}

/**
 * The runtime's activities (see {@link SvcActivities}): every write is idempotent on a key derived from
 * the workflow run, so Temporal's retries never record or apply anything twice.
 */
export function createActivities(deps: { db: Database; events: EventLog; ontology: OntologyStore; actions: ActionRunner; project: ProjectRegistry; log: Logger; logs: LogCapture }): SvcActivities {
  const { db, events, ontology, actions, project, log, logs } = deps;
  return {
    async recordIntervention(input) {
      const now = new Date().toISOString();
      const payload = { workflowId: input.workflowId, runId: input.runId, interventionId: input.interventionId, intervention: input.name };
      const common = { correlationId: input.runId, origin: { kind: "runtime" as const, workflowId: input.workflowId, runId: input.runId } };
      const envelopes =
        input.phase === "requested"
          ? [
              events.envelope({ ...common, type: "workflow.intervention.requested", payload: { ...payload, prompt: input.prompt, assignees: input.assignees, expiresAt: input.expiresAt }, idempotencyKey: `${input.interventionId}:requested` }),
              events.envelope({ ...common, type: "workflow.run.waiting", payload: { ...payload }, idempotencyKey: `${input.interventionId}:run.waiting` }),
              events.envelope({ ...common, type: "workflow.run.node.waiting", payload: { ...payload, node: input.name }, idempotencyKey: `${input.interventionId}:node.waiting` }),
            ]
          : [
              events.envelope({
                ...common,
                type: `workflow.intervention.${input.phase}`,
                payload: { ...payload, ...(input.by ? { by: input.by } : {}), ...(input.reason ? { reason: input.reason } : {}), ...(input.phase === "submitted" ? { answer: input.answer } : {}) },
                idempotencyKey: `${input.interventionId}:${input.phase}`,
              }),
            ];
      await db.transaction(async (tx) => {
        if (input.phase === "requested") {
          await tx.run(
            `INSERT INTO interventions (id, run_id, workflow_id, name, prompt, assignees, answer_schema, status, requested_at, expires_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?, ?) ON CONFLICT (id) DO NOTHING`,
            [input.interventionId, input.runId, input.workflowId, input.name, input.prompt ?? "", JSON.stringify(input.assignees ?? {}), input.answerSchema === undefined ? null : JSON.stringify(input.answerSchema), now, input.expiresAt ?? null],
          );
        } else {
          await tx.run("UPDATE interventions SET status = ?, resolved_at = COALESCE(resolved_at, ?), answer = ?, resolved_by = ?, reason = ? WHERE id = ?", [
            input.phase, now, input.answer === undefined ? null : JSON.stringify(input.answer), input.by ? JSON.stringify(input.by) : null, input.reason ?? null, input.interventionId,
          ]);
        }
        await events.writeInTx(tx, envelopes);
      });
      await events.drain();
    },
    async recordWorkflowEvent(input) {
      await events.append([
        {
          type: input.type as EventType,
          payload: { workflowId: input.workflowId, runId: input.runId, ...input.payload },
          idempotencyKey: input.key,
          correlationId: input.runId,
          origin: { kind: "runtime", workflowId: input.workflowId, runId: input.runId },
        },
      ]);
    },
    async readObject(input) {
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
      if (!found) throw ApplicationFailure.nonRetryable(`No schedule "${input.scheduleId}" is declared any more`, "not_found");
      await events.append([{ type: "schedule.triggered", payload: { ...input }, idempotencyKey: `schedule.triggered:${input.occurrenceKey}`, correlationId: input.occurrenceKey, partitionKey: input.scheduleId, origin: { kind: "runtime", connectorId: found.connectorId, scheduleId: input.scheduleId } }]);
      const buffer = new WriteBuffer();
      const runLog = logs.logger(log, { kind: "schedule", id: input.occurrenceKey }, { scheduleId: input.scheduleId });
      await found.definition.run({ ...ontologyAccess(ontology, buffer), log: runLog, events: eventsApi(events, input.occurrenceKey), scheduleId: input.scheduleId, occurrenceAt: input.occurrenceAt });
      try {
        await ontology.commit(buffer.changes, { origin: { kind: "runtime", connectorId: found.connectorId, scheduleId: input.scheduleId }, correlationId: input.occurrenceKey, idempotencyKey: `schedule:${input.occurrenceKey}` });
      } catch (err) {
        throw toFailure(err);
      }
    },
    async recordRunEvent(input) {
      await events.append([{ type: input.type as EventType, payload: input.payload, idempotencyKey: input.key, correlationId: input.runId, origin: { kind: "runtime", runId: input.runId } }]);
    },
    async runSync(input) {
      const { connectorId, definition } = project.connectorRun("syncs", input.syncId);
      const buffer = new WriteBuffer();
      const runLog = logs.logger(log, { kind: "sync", id: input.runId }, { syncId: input.syncId });
      const result = await definition.run({ ...ontologyAccess(ontology, buffer), log: runLog, events: eventsApi(events, input.runId), runId: input.runId, input: input.input, syncId: input.syncId });
      try {
        await ontology.commit(buffer.changes, { origin: { kind: "runtime", connectorId, syncId: input.syncId, runId: input.runId }, correlationId: input.runId, idempotencyKey: `sync:${input.runId}` });
      } catch (err) {
        throw toFailure(err);
      }
      return result ?? null;
    },
    async runPipelineStep(input) {
      const { connectorId, definition } = project.connectorRun("pipelines", input.pipelineId);
      const step = definition.steps[input.index];
      if (!step) throw ApplicationFailure.nonRetryable(`Pipeline ${input.pipelineId} has no step ${input.index}`, "not_found");
      const buffer = new WriteBuffer();
      const runLog = logs.logger(log, { kind: "pipeline", id: input.runId }, { pipelineId: input.pipelineId, step: step.name });
      const result = await step.run({ ...ontologyAccess(ontology, buffer), log: runLog, events: eventsApi(events, input.runId), runId: input.runId, input: input.input, pipelineId: input.pipelineId, results: input.results });
      try {
        await ontology.commit(buffer.changes, { origin: { kind: "runtime", connectorId, pipelineId: input.pipelineId, step: step.name, runId: input.runId }, correlationId: input.runId, idempotencyKey: `pipeline:${input.runId}:${input.index}` });
      } catch (err) {
        throw toFailure(err);
      }
      return result ?? null;
    },
    async runActionEffect(input) {
      const run = await actions.get(input.runId);
      const effect = project.action(input.actionId).definition.effect;
      if (!effect) return;
      const buffer = new WriteBuffer();
      const runLog = logs.logger(log, { kind: "action", id: input.runId }, { actionId: input.actionId, effect: true });
      await effect({ ...ontologyAccess(ontology, buffer), run, log: runLog, events: eventsApi(events, input.runId) });
      try {
        await ontology.commit(buffer.changes, { origin: { kind: "runtime", actionId: input.actionId, runId: input.runId, effect: true }, correlationId: input.runId, idempotencyKey: `effect:${input.runId}` });
      } catch (err) {
        throw toFailure(err);
      }
    },
  };
}
