import * as v from "valibot";
import { EVENT_TOPICS, EVENT_TYPES, ONTOLOGY_TOPICS, CATALOG_FIELDS, EventLog, can, newId, requirePermission, requiredPayloadFields, type EventType, type RouteRegistry } from "../../core/plugin-api";

/** Event types a caller may append (spec 6.2): every catalog type outside the ontology topics. */
export const APPENDABLE_TYPES = EVENT_TYPES.filter((t) => !ONTOLOGY_TOPICS.has(EVENT_TOPICS[t]));

const REFUSED = "object.*, link.* and telemetry.* events are emitted by the service after an ontology write and cannot be appended (spec 6.2); write the change with POST /api/ontology/writes";

/** One event: a variant on `type` whose payload must carry the type's catalog fields (spec 2.4), each of its kind. */
const EventInput = v.variant(
  "type",
  APPENDABLE_TYPES.map((type) =>
    v.strictObject({
      type: v.literal(type),
      payload: v.pipe(v.looseObject(Object.fromEntries(requiredPayloadFields(type).map((f) => [f, CATALOG_FIELDS[f]?.schema ?? v.unknown()]))), v.check((p) => !Array.isArray(p), "must be an object")),
      partitionKey: v.optional(v.pipe(v.string(), v.minLength(1))),
      idempotencyKey: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200), v.description("An event whose key was appended before is skipped"))),
    }),
  ) as any,
  `must be a supported non-ontology event type (${REFUSED})`,
);

const AppendedSchema = v.object({
  count: v.number(),
  skipped: v.pipe(
    v.array(v.object({ index: v.number(), idempotencyKey: v.string() })),
    v.description("The events not written because their `idempotencyKey` was appended before (or earlier in this request): their index in `events` as sent, and the key"),
  ),
  events: v.array(v.looseObject({ id: v.string(), type: v.string(), topic: v.string(), partitionKey: v.string(), payload: v.record(v.string(), v.unknown()), origin: v.looseObject({ kind: v.literal("runtime") }), actor: v.object({ type: v.picklist(["user", "serviceAccount"]), id: v.string() }) })),
});

/**
 * `POST /api/events` (spec 6.2, 6.3 `events.append` over HTTP): appends supported non-ontology events
 * in one transaction with `origin.kind` `runtime` and `actor` = the caller. Needs `append:events`.
 * Ontology types are refused with 400 `invalid_request` whose message says why; nothing is written.
 */
export function addAppendRoute(routes: RouteRegistry, events: EventLog): void {
  routes.add({
    method: "POST",
    path: "/api/events",
    summary: "Append events",
    description: `Appends \`events\` (1 to 100; each \`type\`, \`payload\` with the type's catalog fields: ids non-empty strings, times ISO 8601 timestamps, \`subject\` \`{ kind: "object", objectTypeId, primaryId }\`, \`error\` an object with a \`message\`; optional \`partitionKey\`, \`idempotencyKey\`) in one transaction. Each carries \`origin.kind\` \`runtime\` and \`actor\` = the caller. Appending runs nothing (spec 6.1). Needs append:events. ${REFUSED}.`,
    tags: ["events"],
    auth: "bearer",
    body: v.strictObject({ events: v.pipe(v.array(EventInput), v.minLength(1), v.maxLength(100)) }),
    responses: {
      200: { description: "The events written; an event whose `idempotencyKey` was appended before is not written again and is listed in `skipped`", schema: AppendedSchema },
      400: { description: `\`invalid_request\`: the body does not match this operation's schema or is not valid JSON; an ontology event type is refused here (${REFUSED})` },
      403: { description: "`forbidden`: the identity lacks `append:events` (`details.permission`)" },
    },
    handler: async ({ principal, body }) => {
      requirePermission(principal!, can.appendEvents());
      const actor = { type: principal!.type, id: principal!.id };
      const correlationId = newId("append");
      const inputs = body.events as Array<{ type: EventType; payload: Record<string, unknown>; partitionKey?: string; idempotencyKey?: string }>;
      const written = await events.append(inputs.map((e) => ({ ...e, actor, origin: { kind: "runtime" as const }, correlationId })));
      // a keyed input is written at most once: the first of its key that no earlier append took
      const writtenKeys = new Set(written.map((e) => e.idempotencyKey).filter((k): k is string => k !== undefined));
      const skipped: Array<{ index: number; idempotencyKey: string }> = [];
      for (const [index, e] of inputs.entries()) {
        if (e.idempotencyKey === undefined) continue;
        if (writtenKeys.delete(e.idempotencyKey)) continue;
        skipped.push({ index, idempotencyKey: e.idempotencyKey });
      }
      return { count: written.length, events: written, skipped };
    },
  });
}
