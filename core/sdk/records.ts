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

/**
 * Why a run failed (spec 7: clients branch on `code`, never on `message`), the same shape for every run
 * kind; the codes of each kind are in README "Run errors" ({@link RUN_ERROR_CODES}). `message` is for
 * people and may change. A workflow run's error adds Temporal's `type` and `stack`.
 */
export const RunErrorSchema = v.object({
  code: v.pipe(v.string(), v.description("What failed, for clients to branch on (README \"Run errors\"); a handler's own ApiError code passes through as it is")),
  message: v.string(),
});
export type RunError = v.InferOutput<typeof RunErrorSchema>;

/**
 * A run error as a store keeps it (JSON `{ code, message }`) read back; errors stored before they had
 * codes (`{ message }`) get `legacyCode(message)`.
 */
export function storedRunError(json: string, legacyCode: (message: string) => string): RunError {
  const { code, message } = JSON.parse(json) as { code?: string; message: string };
  return { code: code ?? legacyCode(message), message };
}

/** A workflow, sync or pipeline run's error: a {@link RunErrorSchema} with Temporal's failure `type` and, for workflow code, its `stack`. */
export const WorkflowRunErrorSchema = v.object({
  ...RunErrorSchema.entries,
  type: v.optional(v.pipe(v.string(), v.description("The failure's type as Temporal recorded it: the thrown error's name, or an ApiError's code from a step"))),
  stack: v.optional(v.pipe(v.string(), v.description("Where the error was thrown, as Temporal recorded it: for an error of the workflow's code, its files and lines"))),
});

/**
 * The codes the runtime itself gives a run's error, by run kind (spec 7; README "Run errors"). An
 * action run's handler may also fail it with an `ApiError` of its own, whose code passes through.
 */
export const RUN_ERROR_CODES = {
  /** Action runs: the handler threw (not an ApiError); its writes could not be committed. */
  action: ["action_failed", "commit_failed"],
  /**
   * Workflow, sync and pipeline runs: the run failed (its code, or a step it awaited and did not
   * handle, threw: the error's `type` and `message` say what); Temporal refused to start the run; the
   * run completed but its result cannot be read (its payload key is lost).
   */
  workflow: ["workflow_failed", "start_refused", "result_unreadable"],
  /** A pipeline run's step: it failed; it was cancelled with its run. */
  pipelineStep: ["step_failed", "cancelled"],
  /**
   * A webhook delivery's attempt: the handler threw; its answer cannot be sent over HTTP; its writes
   * were refused at commit; the process stopped during the attempt; recorded before attempts had codes.
   */
  webhookAttempt: ["handler_failed", "invalid_answer", "commit_failed", "interrupted", "failed"],
  /** An agent's reply run: a model call failed; the reply needed more model calls than allowed; anything else. */
  agent: ["model_failed", "step_limit", "agent_failed"],
} as const;

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
  error: v.optional(RunErrorSchema),
  attempts: v.number(),
});
