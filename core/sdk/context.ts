/**
 * Types of what handlers receive: records, ontology changes and the contexts of actions and system
 * code. Type-only, so workflow code (Temporal's isolate) can import it too.
 */
import type * as v from "valibot";
import type { Actor, AppendInputLike, StoredDomainEventLike } from "./events-types";
import type { ActionRunRecordSchema, DownloadUrlSchema, FileReferenceSchema, ObjectRecordSchema, SubjectSchema } from "./records";

export type { Actor };

/** An object record (spec 2.1); see {@link ObjectRecordSchema}. */
export type ObjectRecord = v.InferOutput<typeof ObjectRecordSchema>;

/** The identity of one link (spec 2.1). */
export interface LinkKey {
  sourceTypeId: string;
  sourceId: string;
  linkId: string;
  targetTypeId: string;
  targetId: string;
}

/** One change of an ontology write. Applied in order, all in one transaction with one `commitId`. */
export type OntologyChange =
  | { op: "object.upsert"; objectTypeId: string; primaryId: string; properties: Record<string, unknown> }
  | { op: "object.update"; objectTypeId: string; primaryId: string; properties: Record<string, unknown> }
  | { op: "object.delete"; objectTypeId: string; primaryId: string }
  | ({ op: "link.upsert"; properties?: Record<string, unknown> } & LinkKey)
  | ({ op: "link.delete" } & LinkKey)
  | { op: "telemetry.append"; objectTypeId: string; objectId: string; propertyId: string; value: number; unit?: string; at?: string };

/** A filter on one property: a bare value means equality. */
export type Condition =
  | string
  | number
  | boolean
  | null
  | { eq?: unknown; ne?: unknown; gt?: unknown; gte?: unknown; lt?: unknown; lte?: unknown; in?: unknown[]; contains?: string; exists?: boolean };

/** An object query (`POST /api/objects/query`). */
export interface ObjectQuery {
  objectTypeId: string;
  where?: Record<string, Condition>;
  orderBy?: { property: string; direction?: "asc" | "desc" };
  pageSize?: number;
  nextPageToken?: string;
}

/** A page of objects; `nextPageToken` is absent on the last page. */
export interface ObjectPage {
  data: ObjectRecord[];
  nextPageToken?: string;
}

/** Reads of the ontology (committed data). */
export interface OntologyReads {
  objects: {
    get(objectTypeId: string, primaryId: string): Promise<ObjectRecord | undefined>;
    query(query: ObjectQuery): Promise<ObjectPage>;
  };
}

/**
 * Buffered ontology writes. Nothing is written until the handler returns; then every change is
 * applied in one transaction with the run's completion (all or nothing).
 */
export interface OntologyWrites {
  objects: {
    /** Creates the object or merges `properties` into it. */
    upsert(objectTypeId: string, primaryId: string, properties: Record<string, unknown>): void;
    /** Merges `properties` into an existing object; the write fails if it does not exist. */
    update(objectTypeId: string, primaryId: string, properties: Record<string, unknown>): void;
    delete(objectTypeId: string, primaryId: string): void;
  };
  links: {
    /**
     * Creates the link or merges `properties` into it. Its ends need not exist yet (providers deliver
     * events out of order: an invoice before its customer); the direct write API refuses that.
     */
    upsert(link: LinkKey & { properties?: Record<string, unknown> }): void;
    delete(link: LinkKey): void;
  };
  telemetry: {
    /** Appends a point (`at` defaults to now). Its object need not exist yet, as for a link's ends. */
    append(point: { objectTypeId: string; objectId: string; propertyId: string; value: number; unit?: string; at?: string }): void;
  };
}

/** Reads and buffered writes together: what action, effect and system contexts carry. */
export interface OntologyAccess {
  objects: OntologyReads["objects"] & OntologyWrites["objects"];
  links: OntologyWrites["links"];
  telemetry: OntologyWrites["telemetry"];
}

/**
 * Buffered dataset writes (spec 2.4 `dataset.version.committed`). Each call becomes one committed
 * version of the dataset when the handler's writes commit, in the same transaction (nothing when the
 * handler throws). Rows are validated when the handler returns: a refusal (invalid_request naming the
 * call, row and column) fails the handler and writes nothing. A retried handler (same run) commits
 * nothing twice. While an HTTP transaction of the dataset is open, the commit is refused (409 `conflict`).
 */
export interface DatasetWrites {
  /** Version content = exactly `rows`: rows of other keys are removed. */
  snapshot(datasetId: string, rows: readonly Record<string, unknown>[]): void;
  /** Adds `rows`; a row whose key exists replaces it. */
  append(datasetId: string, rows: readonly Record<string, unknown>[]): void;
}

/** The SDK's events operations (spec 6.3) as handlers see them. */
export interface EventsApi {
  read(input: { topics?: string[]; types?: string[]; afterCursor?: string; limit?: number }): Promise<StoredDomainEventLike[]>;
  latestCursor(): Promise<string | undefined>;
  /** Appends supported non-ontology events; ontology types are refused. */
  append(events: AppendInputLike[]): Promise<void>;
}

/** A stored file reference (spec 2.6); see {@link FileReferenceSchema}. */
export type FileReference = v.InferOutput<typeof FileReferenceSchema>;

/** A created download URL (spec 2.6); see {@link DownloadUrlSchema}. */
export type DownloadUrl = v.InferOutput<typeof DownloadUrlSchema>;

/**
 * The SDK's blob operations (spec 2.6, 4.3 outbound file sharing). A download URL points at
 * `SVC_API_PUBLIC_ORIGIN` (creating one without it set throws, naming the variable); whoever holds it
 * reads that one file with no session until it expires or is revoked. Each call makes a distinct URL.
 */
export interface BlobsApi {
  /**
   * @param file a file reference (`{ id }` is enough), e.g. a `file` property's value
   * @param options.expiresInMs lifetime in ms (default 1 hour, at most 7 days)
   * @throws when the file does not exist or the public origin is not configured
   */
  createDownloadUrl(file: { id: string }, options?: { expiresInMs?: number }): Promise<DownloadUrl>;
  /**
   * Revokes a download URL by its id; it answers 410 from then on. A URL made longer ago than
   * `SVC_RUN_RETENTION_MS` that the retention deleted (it had expired) is done already: nothing happens.
   * @throws when there is no such URL (and it was made within the retention)
   */
  revokeDownloadUrl(id: string): Promise<void>;
}

/** What an artifact address points at; see `ResolutionSchema` (core/artifacts/resolve.ts). */
export interface ArtifactResolution {
  address: string;
  artifact: { id: string; kind: string; title: string; latestVersion: number };
  version: number;
  follows: "latest" | "fixed";
  file?: { path: string; contentType: string; size: number };
  part?: { kind: string; [key: string]: unknown };
}

/** An artifact version's entries: `path` inside the artifact, `file` a stored file reference (spec 2.7). */
export type ArtifactFiles = Array<{ path: string; file: { id: string } }>;

/**
 * The SDK's artifact operations for server code (spec 4.3). Code running as the system, outside any
 * request (workflow runs and the actions they run, effects, schedules, event schedules, syncs, pipelines,
 * webhooks, the seed), reaches every artifact of the project; an action's handler acts as its requester, who opens only their own (`resolve` and
 * `publishVersion` of another's artifact: not_found; `publish` for another `owner`: forbidden). Publishing is immediate (not part of the handler's buffered writes): a
 * published version stays even when the handler later fails.
 */
export interface ArtifactsApi {
  /** Stores bytes as a file to put into a version (at most 25 MiB). */
  upload(content: string | Uint8Array, options: { name: string; contentType?: string }): Promise<FileReference>;
  /**
   * Publishes a new artifact (version 1) owned by `owner` (a user identity id), checked like the API's.
   * In an action's handler the owner is the requester (`owner`, optional there, may only name them);
   * system code names one (invalid_request without).
   * @throws {ApiError} artifact_invalid (422) listing every problem; invalid_request when `owner` is no
   *   user identity of the project (no identity at all, or a service account); forbidden for another
   *   owner than an action's requester
   */
  publish(input: { kind: "document" | "sheet" | "slides" | "file"; title: string; files: ArtifactFiles; owner?: string }): Promise<{ artifact: { id: string; latestVersion: number }; version: { version: number; warnings: Array<{ code: string; message: string }> } }>;
  /**
   * Publishes the next version of an artifact; `kind`, when given, must be the artifact's (a version never changes it).
   * @throws {ApiError} artifact_invalid, not_found; conflict for another kind
   */
  publishVersion(artifactId: string, input: { kind?: "document" | "sheet" | "slides" | "file"; files: ArtifactFiles; title?: string }): Promise<{ version: number; warnings: Array<{ code: string; message: string }> }>;
  /** Resolves an address (as the system; in an action's handler, as its requester). @throws {ApiError} invalid_request, not_found */
  resolve(address: string): Promise<ArtifactResolution>;
}

/** A minimal structured logger (pino-compatible). */
export interface HandlerLogger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

/** The subject of an action run (spec 2.2); see {@link SubjectSchema}. */
export type Subject = v.InferOutput<typeof SubjectSchema>;

/** What an action handler receives (spec 4.2). Writes are applied with origin `action`, no actor. */
export interface ActionContext<P> extends OntologyAccess {
  datasets: DatasetWrites;
  blobs: BlobsApi;
  artifacts: ArtifactsApi;
  actionId: string;
  runId: string;
  subject?: Subject;
  params: P;
  /** The requester, kept on the run (writes themselves carry no actor, spec 2.3). */
  actor?: Actor;
  log: HandlerLogger;
  /**
   * Aborted when the server shuts down past its grace period (`SVC_SHUTDOWN_TIMEOUT_MS`; its reason is
   * `Error("the server is shutting down")`); from then on `blobs` and `artifacts` calls that store
   * something reject (an `AbortError`).
   */
  signal: AbortSignal;
}

/** The finished record of an action run (spec 2.2); see {@link ActionRunRecordSchema}. */
export type ActionRunRecord = v.InferOutput<typeof ActionRunRecordSchema>;

/** What an action's effect receives: the finished run, reads, and buffered system writes. */
export interface EffectContext extends OntologyAccess {
  datasets: DatasetWrites;
  run: ActionRunRecord;
  blobs: BlobsApi;
  artifacts: ArtifactsApi;
  log: HandlerLogger;
  events: EventsApi;
}

/** What system code (seed, schedules, syncs) receives: origin runtime, no actor (spec 2.3). */
export interface SystemContext extends OntologyAccess {
  datasets: DatasetWrites;
  log: HandlerLogger;
  blobs: BlobsApi;
  artifacts: ArtifactsApi;
  events: EventsApi;
}
