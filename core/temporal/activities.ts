import { ApplicationFailure } from "@temporalio/common";
import type { SvcActivities } from "../sdk/activities-types";
import type { EventLog } from "../events/log";
import type { OntologyStore } from "../ontology/store";
import { WriteBuffer } from "../ontology/store";
import type { ActionRunner } from "../runtime/actions";
import type { ProjectRegistry } from "../runtime/registry";
import type { Logger } from "../logger";
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
export function createActivities(deps: { events: EventLog; ontology: OntologyStore; actions: ActionRunner; project: ProjectRegistry; log: Logger }): SvcActivities {
  const { events, ontology, actions, project, log } = deps;
  return {
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
      const runLog = log.child({ run: { kind: "schedule", id: input.occurrenceKey }, scheduleId: input.scheduleId });
      await found.definition.run({ ...ontologyAccess(ontology, buffer), log: runLog, events: eventsApi(events, input.occurrenceKey), scheduleId: input.scheduleId, occurrenceAt: input.occurrenceAt });
      try {
        await ontology.commit(buffer.changes, { origin: { kind: "runtime", connectorId: found.connectorId, scheduleId: input.scheduleId }, correlationId: input.occurrenceKey, idempotencyKey: `schedule:${input.occurrenceKey}` });
      } catch (err) {
        throw toFailure(err);
      }
    },
    async runActionEffect(input) {
      const run = await actions.get(input.runId);
      const effect = project.action(input.actionId).definition.effect;
      if (!effect) return;
      const buffer = new WriteBuffer();
      const runLog = log.child({ run: { kind: "action", id: input.runId }, actionId: input.actionId, effect: true });
      await effect({ ...ontologyAccess(ontology, buffer), run, log: runLog, events: eventsApi(events, input.runId) });
      try {
        await ontology.commit(buffer.changes, { origin: { kind: "runtime", actionId: input.actionId, runId: input.runId, effect: true }, correlationId: input.runId, idempotencyKey: `effect:${input.runId}` });
      } catch (err) {
        throw toFailure(err);
      }
    },
  };
}
