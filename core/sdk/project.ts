import type { ConnectorDefinition } from "./connector";
import type { WorkflowDefinition } from "./workflow";
import type { SystemContext } from "./context";
import { can } from "../auth/permissions";
import { TOPICS } from "../events/catalog";

/**
 * Property types of object and link properties. `date` is `YYYY-MM-DD`, `datetime` an ISO 8601 timestamp with
 * a time zone (the grammars of core/sdk/time.ts: `2026-02-30` is no date). `file`
 * holds a file reference (spec 2.6): write `{ id: "file_…" }` of an uploaded file; the stored value is
 * the whole reference `{ id, name, contentType, size, sha256 }`, and the file is read through the object
 * (`GET /api/objects/:type/:id/files/content?path=/properties/<name>`). File properties exist on object
 * types only.
 */
export type PropertyType = "string" | "number" | "integer" | "boolean" | "date" | "datetime" | "json" | "file";

export interface PropertyDefinition {
  type: PropertyType;
  required?: boolean;
  description?: string;
}

/** An object type (spec 2.1): objects are identified by `objectTypeId` and `primaryId`. */
export interface ObjectTypeDefinition {
  title?: string;
  description?: string;
  properties: Record<string, PropertyType | PropertyDefinition>;
}

/** A link type from one object type to another (spec 2.1). */
export interface LinkTypeDefinition {
  source: string;
  target: string;
  description?: string;
  properties?: Record<string, PropertyType | PropertyDefinition>;
}

/** A telemetry property on an object type (spec 2.1): numeric points with an optional unit. */
export interface TelemetryDefinition {
  objectTypeId: string;
  unit?: string;
  description?: string;
}

/** An identity that API tokens can carry (spec 5). */
export interface IdentityDefinition {
  type: "user" | "serviceAccount";
  name?: string;
  /** Permission strings (see `can`), or a function of the project for "every permission there is". */
  permissions: readonly string[] | ((project: ProjectDefinition) => readonly string[]);
  /** Development password of a user, set at startup when the user has none (sandboxes only). */
  devPassword?: string;
}

/**
 * A project: its ontology, identities, connectors and workflows. The runtime serves one project.
 */
export interface ProjectDefinition {
  id: string;
  name: string;
  objectTypes: Record<string, ObjectTypeDefinition>;
  linkTypes?: Record<string, LinkTypeDefinition>;
  telemetry?: Record<string, TelemetryDefinition>;
  identities: Record<string, IdentityDefinition>;
  connectors?: readonly ConnectorDefinition[];
  workflows?: Record<string, WorkflowDefinition<any, any>>;
  /**
   * Absolute path of the module that exports `workflows` (the same record as above). It is bundled
   * into Temporal's workflow isolate, so it may import only isolate-safe code.
   */
  workflowsModule?: string;
  /** Seed data, run once on a fresh database (origin runtime, no actor). */
  seed?: (ctx: SystemContext) => Promise<void>;
  /** Identity of the development token (`SVC_DEV_TOKEN`), when the project has one. */
  devIdentity?: string;
}

/**
 * `record[key]` when `key` is the record's own entry, else undefined: an id from a request that names
 * a member of `Object.prototype` (`constructor`, `toString`, `__proto__`) is no object type, link type,
 * telemetry property or identity.
 */
export function own<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Normalizes a property declaration to its object form. */
export function propertyDef(p: PropertyType | PropertyDefinition): PropertyDefinition {
  return typeof p === "string" ? { type: p } : p;
}

/**
 * Declares a project and checks its cross-references (link endpoints, telemetry object types,
 * identities' workflow and action names are free-form) and that no object type has a property named
 * `primaryId`.
 *
 * @throws Error naming the first dangling reference
 */
export function defineProject<const P extends ProjectDefinition>(project: P): P {
  for (const [id, type] of Object.entries(project.objectTypes)) {
    // `primaryId` names the object's id in queries (`where`, `orderBy`) and writes
    if (Object.hasOwn(type.properties, "primaryId")) throw new Error(`Object type "${id}" declares a property "primaryId": that name is the object's id in queries; rename the property`);
  }
  // references name the records' own entries: "constructor" or "hasOwnProperty" is no object type or identity
  for (const [id, link] of Object.entries(project.linkTypes ?? {})) {
    for (const end of [link.source, link.target]) {
      if (!own(project.objectTypes, end)) throw new Error(`Link type "${id}" refers to unknown object type "${end}"`);
    }
  }
  for (const [id, t] of Object.entries(project.telemetry ?? {})) {
    if (!own(project.objectTypes, t.objectTypeId)) throw new Error(`Telemetry "${id}" refers to unknown object type "${t.objectTypeId}"`);
  }
  if (project.devIdentity !== undefined && !own(project.identities, project.devIdentity)) throw new Error(`devIdentity "${project.devIdentity}" is not an identity`);
  return project;
}

/**
 * Every permission the project defines (view per object type, edit, telemetry, run per action and per
 * workflow, logs, view and edit per dataset, each topic). Meant for a development identity; it is an explicit list, not a
 * wildcard.
 */
export function allPermissions(project: ProjectDefinition): string[] {
  const actions = (project.connectors ?? []).flatMap((c) => Object.keys(c.actions ?? {}));
  return [
    ...Object.keys(project.objectTypes).map(can.view),
    can.edit(),
    can.appendTelemetry(),
    can.appendEvents(),
    ...actions.map(can.runAction),
    ...Object.keys(project.workflows ?? {}).map(can.runWorkflow),
    ...(project.connectors ?? []).flatMap((c) => [...Object.keys(c.syncs ?? {}).map(can.runSync), ...Object.keys(c.pipelines ?? {}).map(can.runPipeline)]),
    can.observe("logs"),
    can.manage("webhooks"),
    can.manage("schedules"),
    ...(project.connectors ?? []).flatMap((c) => Object.keys(c.agents ?? {}).map(can.useAgent)),
    ...(project.connectors ?? []).flatMap((c) => Object.keys(c.datasets ?? {}).flatMap((id) => [can.viewDataset(id), can.editDataset(id)])),
    ...TOPICS.map(can.viewTopic),
  ];
}
