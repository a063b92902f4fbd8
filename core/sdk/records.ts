/**
 * Records the API answers and handlers receive, declared once as valibot schemas: the routes document
 * them in OpenAPI and the runtime's types are derived from them (`v.InferOutput`), so the document and
 * the code cannot drift apart.
 */
import * as v from "valibot";

/** The subject of an action run (spec 2.2): `{ kind: "object", objectTypeId, primaryId }`. */
export const SubjectSchema = v.strictObject({
  kind: v.literal("object"),
  objectTypeId: v.pipe(v.string(), v.minLength(1)),
  primaryId: v.pipe(v.string(), v.minLength(1)),
});

/** An object record (spec 2.1). `version` starts at 1 and grows by one per changing write. */
export const ObjectRecordSchema = v.object({
  objectTypeId: v.string(),
  primaryId: v.string(),
  properties: v.record(v.string(), v.unknown()),
  version: v.number(),
  createdAt: v.string(),
  updatedAt: v.string(),
});

/** The finished record of an action run (spec 2.2): `status` `failed` carries `error`. */
export const ActionRunRecordSchema = v.object({
  id: v.string(),
  actionId: v.string(),
  runId: v.string(),
  status: v.picklist(["running", "succeeded", "failed"]),
  subject: v.optional(SubjectSchema),
  params: v.record(v.string(), v.unknown()),
  result: v.optional(v.unknown()),
  startedAt: v.string(),
  finishedAt: v.optional(v.string()),
  error: v.optional(v.object({ code: v.string(), message: v.string() })),
  attempts: v.number(),
});
