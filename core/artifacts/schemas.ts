/**
 * The artifact records the API answers and accepts (spec 2.7, 3, 9), declared once as valibot
 * schemas: the routes document and validate with them, and the store's types are derived from them.
 */
import * as v from "valibot";
import { FileReferenceSchema } from "../sdk/records";
import { ARTIFACT_KINDS } from "./content";

/** An artifact (spec 2.7): its creation response is `{ artifact }`. */
export const ArtifactSchema = v.object({
  id: v.string(),
  kind: v.picklist(ARTIFACT_KINDS),
  title: v.string(),
  owner: v.string(),
  latestVersion: v.number(),
  createdAt: v.string(),
  updatedAt: v.string(),
});
export type Artifact = v.InferOutput<typeof ArtifactSchema>;

/**
 * A warning a version was published with: a dependent that no longer finds what it shows
 * (`dependent_broken`, with the dependent's `artifactId`, the `address` it shows and the `reason` that
 * address no longer resolves), a deck check's finding on a slide (`overflow`, `footer_overlap`, `text_overlap`,
 * `text_cut_off`, `small_text`, `contrast`, `contrast_review`, `broken_image`), `deck_unchecked`, a
 * sheet's CSV that no sheet of `workbook.json` names (`sheet_file_unused`, with `file`), or a document
 * that shows nothing (`document_empty`, with `file`).
 */
export const PublishWarningSchema = v.object({
  code: v.string(),
  message: v.string(),
  file: v.optional(v.string()),
  artifactId: v.optional(v.string()),
  address: v.optional(v.string()),
  reason: v.optional(v.string()),
  slide: v.optional(v.number()),
  element: v.optional(v.string()),
});

/** A published version: immutable (spec 3, 9). */
export const ArtifactVersionSchema = v.object({
  artifactId: v.string(),
  version: v.number(),
  title: v.string(),
  files: v.array(v.object({ path: v.string(), file: FileReferenceSchema })),
  outline: v.record(v.string(), v.unknown()),
  warnings: v.array(PublishWarningSchema),
  publishedAt: v.string(),
  publishedBy: v.optional(v.string()),
});
export type ArtifactVersion = v.InferOutput<typeof ArtifactVersionSchema>;

/** The version input (spec 2.7): entries `{ path, file }` where `file` names a stored file. */
export const VersionFilesSchema = v.pipe(
  v.array(v.strictObject({ path: v.pipe(v.string(), v.minLength(1), v.maxLength(500)), file: v.looseObject({ id: v.pipe(v.string(), v.regex(/^file_[0-9A-Za-z]+$/, "must be a file id file_…")) }) })),
  v.minLength(1, "a version has at least one file"),
  v.maxLength(1000, "a version has at most 1000 files"),
);
/** A title of an artifact or version (spec 2.7): trimmed, 1 to 200 characters. */
export const TitleSchema = v.pipe(v.string(), v.trim(), v.minLength(1, "a title must not be empty"), v.maxLength(200, "a title has at most 200 characters"));
