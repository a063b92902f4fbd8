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

/**
 * A stored file reference (spec 2.6), as `POST /api/files` answers it and `file` properties hold it.
 * `contentType` is what the bytes are when recognized; `declaredContentType` is kept only when the
 * uploader said something else. `size` in bytes; `sha256` lowercase hex (also the ETag).
 */
export const FileReferenceSchema = v.object({
  id: v.pipe(v.string(), v.regex(/^file_[0-9A-Za-z]+$/)),
  name: v.string(),
  contentType: v.string(),
  declaredContentType: v.optional(v.string()),
  size: v.number(),
  sha256: v.string(),
  createdAt: v.optional(v.string()),
});

/** A created download URL (spec 2.6): `url` is the capability (shown once); `id` revokes it. */
export const DownloadUrlSchema = v.object({ id: v.string(), url: v.string(), expiresAt: v.string() });

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
