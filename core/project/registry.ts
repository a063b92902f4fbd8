import { own, type ProjectDefinition } from "../sdk/project";
import { checkConnector, SEGMENT_ID, SEGMENT_ID_RULE, type ActionDefinition, type AgentDefinition, type ConnectorDefinition, type RuleDefinition, type ScheduleDefinition } from "../sdk/connector";
import type { WorkflowDefinition } from "../sdk/workflow";
import { ApiError } from "../errors";
import { registerDatasets, type RegisteredDataset } from "./datasets";

export type { RegisteredDataset };

/** An action with the connector that declares it. */
export interface RegisteredAction {
  id: string;
  connectorId: string;
  definition: ActionDefinition<any>;
}

/**
 * The project as the runtime indexes it: actions by global id, connectors, workflows, and each
 * identity's permission set.
 *
 * @throws Error at construction when a connector is malformed (see `checkConnector`), two connectors
 *   share an id, two connectors declare the same action id (or schedule, sync, pipeline, agent, rule,
 *   dataset id), a workflow id is not one URL path segment, an action's subject names no object type of the project, the project declares
 *   workflows but no `workflowsModule`, or a dataset's declaration or projection is wrong (see
 *   `registerDatasets`)
 */
export class ProjectRegistry {
  readonly actions = new Map<string, RegisteredAction>();
  readonly connectors: ReadonlyMap<string, ConnectorDefinition>;
  readonly workflows: ReadonlyMap<string, WorkflowDefinition<any, any>>;
  private readonly permissions = new Map<string, ReadonlySet<string>>();
  private readonly datasetsById: ReadonlyMap<string, RegisteredDataset>;

  constructor(readonly definition: ProjectDefinition) {
    const connectors = new Map<string, ConnectorDefinition>();
    for (const connector of definition.connectors ?? []) {
      // what defineConnector checks, also for a connector made without it
      checkConnector(connector);
      // one id, one connector: the index kept the last of two, while the first one's actions still ran
      if (connectors.has(connector.id)) throw new Error(`Connector id "${connector.id}" is declared twice: connector ids are unique within a project`);
      connectors.set(connector.id, connector);
    }
    this.connectors = connectors;
    this.workflows = new Map(Object.entries(definition.workflows ?? {}));
    for (const id of this.workflows.keys()) if (!SEGMENT_ID.test(id)) throw new Error(`Workflow "${id}" of project "${definition.id}": ${SEGMENT_ID_RULE}`);
    // the worker runs the workflows the module names (bundled into Temporal's isolate); without one it
    // bundles none, and every run of a declared workflow would fail "This worker has no workflow"
    if (this.workflows.size > 0 && !definition.workflowsModule) throw new Error(`Project "${definition.id}" declares workflows (${[...this.workflows.keys()].join(", ")}) but no workflowsModule: name the module that exports them (its absolute path); the worker bundles the workflows from it`);
    for (const connector of definition.connectors ?? []) {
      for (const [id, def] of Object.entries(connector.actions ?? {})) {
        const other = this.actions.get(id);
        if (other) throw new Error(`Action "${id}" is declared by both "${other.connectorId}" and "${connector.id}"`);
        // a subject type the project lacks made every run a 403 ("lacks view:object:<type>"), as no one can hold it
        const subjectType = def.subject?.objectTypeId;
        if (subjectType !== undefined && !own(definition.objectTypes, subjectType)) throw new Error(`Action "${id}" of connector "${connector.id}": its subject's objectTypeId "${subjectType}" is no object type of the project (object types: ${Object.keys(definition.objectTypes).join(", ") || "none"})`);
        this.actions.set(id, { id, connectorId: connector.id, definition: def });
      }
    }
    for (const kind of ["schedules", "syncs", "pipelines", "agents", "rules", "datasets"] as const) {
      const seen = new Map<string, string>();
      for (const connector of definition.connectors ?? []) {
        for (const id of Object.keys(connector[kind] ?? {})) {
          if (seen.has(id)) throw new Error(`${kind.slice(0, -1)} "${id}" is declared by both "${seen.get(id)}" and "${connector.id}"`);
          seen.set(id, connector.id);
        }
      }
    }
    this.datasetsById = registerDatasets(definition);
    for (const [id, identity] of Object.entries(definition.identities)) {
      const list = typeof identity.permissions === "function" ? identity.permissions(definition) : identity.permissions;
      this.permissions.set(id, new Set(list));
    }
  }

  get id(): string {
    return this.definition.id;
  }

  /**
   * An agent by its global id, with its connector. An id named like an `Object.prototype` member
   * (`constructor`, `toString`) is no agent ({@link own}): ids come from request paths.
   * @throws {ApiError} not_found
   */
  agent(id: string): { id: string; connectorId: string; definition: AgentDefinition } {
    for (const connector of this.connectors.values()) {
      const definition = own(connector.agents, id);
      if (definition) return { id, connectorId: connector.id, definition };
    }
    throw new ApiError("not_found", `No agent "${id}"`);
  }

  /** Every declared agent. */
  agents(): Array<{ id: string; connectorId: string; definition: AgentDefinition }> {
    return [...this.connectors.values()].flatMap((c) => Object.entries(c.agents ?? {}).map(([id, definition]) => ({ id, connectorId: c.id, definition })));
  }

  /** Every declared rule with its connector (spec 2.4 `rule.*`), in declaration order. */
  rules(): Array<{ id: string; connectorId: string; definition: RuleDefinition }> {
    return [...this.connectors.values()].flatMap((c) => Object.entries(c.rules ?? {}).map(([id, definition]) => ({ id, connectorId: c.id, definition })));
  }

  /** Every declared dataset with its connector and row validator (spec 4.1 `GET /api/datasets`), in declaration order. */
  datasets(): RegisteredDataset[] {
    return [...this.datasetsById.values()];
  }

  /** A dataset by its global id. @throws {ApiError} not_found */
  dataset(id: string): RegisteredDataset {
    const found = this.datasetsById.get(id);
    if (!found) throw new ApiError("not_found", `No dataset "${id}"`);
    return found;
  }

  /** @throws {ApiError} not_found */
  action(id: string): RegisteredAction {
    const a = this.actions.get(id);
    if (!a) throw new ApiError("not_found", `No action "${id}"`);
    return a;
  }

  /** @throws {ApiError} not_found */
  workflow(id: string): WorkflowDefinition<any, any> {
    const w = this.workflows.get(id);
    if (!w) throw new ApiError("not_found", `No workflow "${id}"`);
    return w;
  }

  /**
   * A sync or pipeline by id, with its connector. An id named like an `Object.prototype` member
   * (`constructor`, `toString`) is none ({@link own}): ids come from request paths.
   * @throws {ApiError} not_found
   */
  connectorRun<K extends "syncs" | "pipelines">(kind: K, id: string): { connectorId: string; definition: NonNullable<ConnectorDefinition[K]>[string] } {
    for (const c of this.connectors.values()) {
      const def = own(c[kind] as Record<string, unknown> | undefined, id);
      if (def) return { connectorId: c.id, definition: def as NonNullable<ConnectorDefinition[K]>[string] };
    }
    throw new ApiError("not_found", `No ${kind === "syncs" ? "sync" : "pipeline"} "${id}"`);
  }

  /** Schedules of all connectors. */
  schedules(): Array<{ connectorId: string; scheduleId: string; definition: ScheduleDefinition }> {
    return [...this.connectors.values()].flatMap((c) => Object.entries(c.schedules ?? {}).map(([scheduleId, definition]) => ({ connectorId: c.id, scheduleId, definition })));
  }

  /** The identity's permissions, or undefined for an unknown identity. */
  identityPermissions(identityId: string): ReadonlySet<string> | undefined {
    return this.permissions.get(identityId);
  }

  /** The ids of the project's identities. */
  identityIds(): string[] {
    return [...this.permissions.keys()];
  }

  /** The identity's display name (its id when it has none), or undefined for an unknown identity. */
  identityName(identityId: string): string | undefined {
    const identity = own(this.definition.identities, identityId);
    return identity ? (identity.name ?? identityId) : undefined;
  }

  identityType(identityId: string): "user" | "serviceAccount" | undefined {
    return own(this.definition.identities, identityId)?.type;
  }
}
