/**
 * The domain event envelope and catalog (spec 2.3, 2.4).
 */

/** Topics of the built-in catalog (spec 2.4). */
export const TOPICS = ["objects", "links", "telemetry", "actions", "schedules", "rules", "syncs", "pipelines", "workflows", "datasets"] as const;
export type Topic = (typeof TOPICS)[number];

/** Every event type of the catalog and its topic (spec 2.4). */
export const EVENT_TOPICS = {
  "object.created": "objects",
  "object.updated": "objects",
  "object.deleted": "objects",
  "telemetry.appended": "telemetry",
  "link.created": "links",
  "link.updated": "links",
  "link.deleted": "links",
  "action.requested": "actions",
  "action.completed": "actions",
  "action.failed": "actions",
  "schedule.triggered": "schedules",
  "rule.triggered": "rules",
  "rule.resolved": "rules",
  "sync.run.started": "syncs",
  "sync.run.finished": "syncs",
  "pipeline.run.started": "pipelines",
  "pipeline.run.step.started": "pipelines",
  "pipeline.run.step.finished": "pipelines",
  "pipeline.run.finished": "pipelines",
  "workflow.run.queued": "workflows",
  "workflow.run.started": "workflows",
  "workflow.run.node.started": "workflows",
  "workflow.run.waiting": "workflows",
  "workflow.run.node.waiting": "workflows",
  "workflow.run.node.finished": "workflows",
  "workflow.run.finished": "workflows",
  "workflow.intervention.requested": "workflows",
  "workflow.intervention.submitted": "workflows",
  "workflow.intervention.cancelled": "workflows",
  "workflow.intervention.expired": "workflows",
  "dataset.version.committed": "datasets",
} as const satisfies Record<string, Topic>;
export type EventType = keyof typeof EVENT_TOPICS;
export const EVENT_TYPES = Object.keys(EVENT_TOPICS) as EventType[];

/** Ontology facts: emitted only by the service after a write commits; callers cannot append them (spec 6.2). */
export const ONTOLOGY_TOPICS: ReadonlySet<Topic> = new Set(["objects", "links", "telemetry"]);

/** Who caused a write (spec 2.3). Absent for trusted internal executions. */
export interface Actor {
  type: "user" | "serviceAccount" | "system";
  id: string;
}

/** What produced an event (spec 2.3): an action, a runtime write, a projection, a telemetry append. */
export type Origin =
  | { kind: "action"; actionId: string; runId: string }
  | { kind: "runtime"; [key: string]: unknown }
  | { kind: "projection"; datasetId: string; /** The dataset version being projected. */ version?: number }
  | { kind: "telemetry"; [key: string]: unknown };

/** A property change inside an ontology event: `before` is absent on create, `after` on delete. */
export interface PropertyChange {
  property: string;
  before?: unknown;
  after?: unknown;
}

/**
 * A stored domain event (spec 2.3): the envelope plus `type`, `topic`, `partitionKey`, `payload` and
 * the opaque `cursor` assigned by the stream.
 */
export interface StoredDomainEvent {
  id: string;
  schemaVersion: 1;
  projectId: string;
  occurredAt: string;
  correlationId?: string;
  causationId?: string;
  idempotencyKey?: string;
  actor?: Actor;
  metadata?: Record<string, unknown>;
  origin?: Origin;
  commitId?: string;
  commitOrdinal?: number;
  type: EventType;
  topic: Topic;
  partitionKey: string;
  payload: Record<string, unknown>;
  cursor: string;
}

/** An envelope before the stream assigns its cursor. */
export type DomainEventEnvelope = Omit<StoredDomainEvent, "cursor">;

/**
 * The object an event is about (spec 6.5 "subject"): the object of object and telemetry events, the
 * source of link events, the subject of action and rule events; undefined for the others. Stream
 * filters (`objectTypeId`, `primaryId`) and `event` frames use it.
 */
export function eventSubject(payload: Record<string, any>): { objectTypeId: string; primaryId: string } | undefined {
  const objectTypeId = payload.objectTypeId ?? payload.sourceTypeId ?? payload.subject?.objectTypeId;
  if (objectTypeId === undefined) return undefined;
  return { objectTypeId, primaryId: payload.primaryId ?? payload.objectId ?? payload.sourceId ?? payload.subject?.primaryId };
}

/** The subject an event is about, as used for authorization and stream filters. */
export interface EventSubject {
  objectTypeId?: string;
  primaryId?: string;
  actionId?: string;
  runId?: string;
}
