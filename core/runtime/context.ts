import type { EventLog } from "../events/log";
import type { OntologyStore } from "../ontology/store";
import type { EventsApi, OntologyAccess, OntologyReads } from "../sdk/context";
import type { WriteBuffer } from "../ontology/store";
import type { EventType, Topic } from "../events/catalog";

/** The read half of a handler context: committed ontology data. */
export function ontologyReads(ontology: OntologyStore): OntologyReads {
  return {
    objects: {
      get: (objectTypeId, primaryId) => ontology.getObject(objectTypeId, primaryId),
      query: (q) => ontology.query(q),
    },
  };
}

/**
 * The SDK's events operations bound to the event log (spec 6.3), for trusted handler code: reads
 * are not scoped to a principal; appends carry `correlationId`.
 */
export function eventsApi(log: EventLog, correlationId?: string): EventsApi {
  return {
    read: (input) => log.read({ topics: input.topics as Topic[] | undefined, types: input.types, afterCursor: input.afterCursor, limit: Math.min(input.limit ?? 100, 1000) }),
    latestCursor: () => log.latestCursor(),
    append: async (events) => {
      await log.append(events.map((e) => ({ ...e, type: e.type as EventType, correlationId })));
    },
  };
}

/**
 * Reads plus buffered writes, the ontology half of action, effect and system contexts. Nothing is
 * written until the caller commits `buffer.changes`.
 */
export function ontologyAccess(ontology: OntologyStore, buffer: WriteBuffer): OntologyAccess {
  const reads = ontologyReads(ontology);
  return { objects: { ...reads.objects, ...buffer.objects }, links: buffer.links, telemetry: buffer.telemetry };
}
