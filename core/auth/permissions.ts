import { ApiError } from "../errors";
import type { DomainEventEnvelope } from "../events/catalog";

/**
 * Permission strings (spec 5). Being authenticated grants nothing by itself; each route names the
 * permission it needs. There is deliberately no wildcard: no grant reads everything.
 *
 * | Helper | String | Grants |
 * |---|---|---|
 * | `can.view("invoice")` | `view:object:invoice` | read objects of that type and events about them |
 * | `can.edit()` | `edit:object` | direct object and link writes, `POST /api/ontology/writes` (origin runtime, actor = caller) |
 * | `can.appendTelemetry()` | `append:telemetry` | direct telemetry appends, `POST /api/ontology/writes` |
 * | `can.appendEvents()` | `append:events` | `POST /api/events`: append supported non-ontology events (spec 6.2) |
 * | `can.runAction(id)` | `run:action:<id>` | run that action; see its runs and events without a subject |
 * | `can.runWorkflow(id)` | `run:workflow:<id>` | start runs of that workflow, read them and their events |
 * | `can.runSync(id)` / `can.runPipeline(id)` | `run:sync:<id>` / `run:pipeline:<id>` | start and read runs of that sync or pipeline |
 * | `can.observe("logs")` | `observe:logs` | read handler logs |
 * | `can.viewTopic(topic)` | `view:topic:<topic>` | events of a topic without an object subject (schedules, syncs, ...) |
 * | `can.manage("webhooks")` | `manage:webhooks` | list and read webhook runs, replay deliveries |
 * | `can.manage("schedules")` | `manage:schedules` | list schedules, pause, unpause, trigger |
 * | `can.useAgent(id)` | `use:agent:<id>` | start conversations with that agent; read and stream only your own, while you hold it |
 * | `can.viewDataset(id)` | `view:dataset:<id>` | read that dataset, its versions and rows, and its `dataset.version.committed` events |
 * | `can.editDataset(id)` | `edit:dataset:<id>` | open, write, commit and abort that dataset's transactions over HTTP |
 */
export const can = {
  view: (objectTypeId: string) => `view:object:${objectTypeId}`,
  edit: () => "edit:object",
  appendTelemetry: () => "append:telemetry",
  appendEvents: () => "append:events",
  runAction: (actionId: string) => `run:action:${actionId}`,
  runWorkflow: (workflowId: string) => `run:workflow:${workflowId}`,
  runSync: (syncId: string) => `run:sync:${syncId}`,
  runPipeline: (pipelineId: string) => `run:pipeline:${pipelineId}`,
  observe: (what: "logs") => `observe:${what}`,
  viewTopic: (topic: string) => `view:topic:${topic}`,
  manage: (what: "webhooks" | "schedules") => `manage:${what}`,
  useAgent: (agentId: string) => `use:agent:${agentId}`,
  viewDataset: (datasetId: string) => `view:dataset:${datasetId}`,
  editDataset: (datasetId: string) => `edit:dataset:${datasetId}`,
} as const;

/** The authenticated caller of a request. */
export interface Principal {
  type: "user" | "serviceAccount";
  id: string;
  permissions: ReadonlySet<string>;
}

/** True when the principal holds `permission`. */
export function has(principal: Principal, permission: string): boolean {
  return principal.permissions.has(permission);
}

/**
 * Throws `forbidden` (403) unless the principal holds `permission`.
 * @throws {ApiError} forbidden, with `details.permission` naming what is missing
 */
export function requirePermission(principal: Principal, permission: string): void {
  if (!principal.permissions.has(permission)) {
    throw new ApiError("forbidden", `This identity lacks the permission ${permission}`, { permission });
  }
}

/**
 * The permissions needed to see an event (spec 5: visibility follows the subject). Both entries must
 * be held; the second is set only for links (view access to both endpoint types).
 */
export function eventPermissions(e: Pick<DomainEventEnvelope, "topic" | "payload">): [string, string | null] {
  const p = e.payload as Record<string, any>;
  switch (e.topic) {
    case "objects":
    case "telemetry":
      return [can.view(String(p.objectTypeId)), null];
    case "links":
      return [can.view(String(p.sourceTypeId)), can.view(String(p.targetTypeId))];
    case "actions":
    case "rules":
      if (p.subject?.objectTypeId) return [can.view(String(p.subject.objectTypeId)), null];
      return e.topic === "actions" ? [can.runAction(String(p.actionId)), null] : [can.viewTopic(e.topic), null];
    case "workflows":
      return [can.runWorkflow(String(p.workflowId)), null];
    case "datasets":
      return [can.viewDataset(String(p.datasetId)), null];
    default:
      return [can.viewTopic(e.topic), null];
  }
}
