/**
 * The plugin-facing API: the one module built-in plugins import (Backstage's `backend-plugin-api`).
 * A plugin declares the services it uses as `deps` (DI tokens: the service classes themselves, or the
 * symbol tokens of configuration values) and receives them, resolved, in `setup`; it never reaches
 * into the container or into core's folders.
 */
import type { InjectionToken } from "./di";
import type { Config } from "./config";
import type { Logger } from "./logger";
import type { RouteRegistry } from "./http/routes";
import type { Lifecycle } from "./lifecycle";
import type { ProjectRegistry } from "./project/registry";
import type { Principal } from "./auth/permissions";
import { lazily } from "./lazy";

/** What every plugin's `setup` receives besides its declared deps. */
export interface PluginContext {
  /** Routes and WebSocket endpoints (validated with valibot, documented in OpenAPI). */
  routes: RouteRegistry;
  /** Lifecycle hooks (`ready`, `preClose`, `close`) and timers that stop at shutdown. */
  hooks: Pick<Lifecycle, "hook" | "every">;
  /** A child logger bound to `{ plugin: name }`. */
  log: Logger;
  config: Config;
  project: ProjectRegistry;
  /**
   * Authenticates a WebSocket upgrade (spec 5): a live browser session and an allowed Origin;
   * bearer tokens are refused. Throws a `Response` (401/403) that aborts the upgrade.
   */
  authenticateUpgrade(request: Request): Promise<Principal>;
}

/** DI tokens a plugin depends on, by the name it wants them under. */
export type PluginDeps = Record<string, InjectionToken<any>>;

/** The resolved services of {@link PluginDeps}. */
export type ResolvedDeps<D extends PluginDeps> = { [K in keyof D]: D[K] extends InjectionToken<infer T> ? T : never };

/** A plugin: a name, the services it uses, and a setup function awaited in order before the server starts. */
export interface Plugin<D extends PluginDeps = PluginDeps> {
  name: string;
  deps?: D;
  setup(ctx: PluginContext, deps: ResolvedDeps<D>): void | Promise<void>;
}

/**
 * Declares a plugin. A plugin builds only on this module and never imports another plugin.
 * @example definePlugin({ name: "status", deps: { outbox: Outbox }, setup({ routes }, { outbox }) { routes.add({ ... }) } })
 */
export function definePlugin<D extends PluginDeps = {}>(plugin: Plugin<D>): Plugin<D> {
  return plugin;
}

export { ApiError, isApiError } from "./errors";
export type { ErrorCode } from "./errors";
export { can, has, requirePermission, type Principal } from "./auth/permissions";
export { assertAllowedOrigin } from "./auth/authenticate";
export { CSRF_HEADER, SESSION_COOKIE, readCookie, readCookies, SessionService } from "./auth/sessions";
export { TokenService, tokenState, type TokenInfo } from "./auth/tokens";
export { CONFIG, type Config } from "./config";
export { LOGGER, type Logger } from "./logger";
export { Lifecycle } from "./lifecycle";
export { Database } from "./store/db";
export { EVENT_TOPICS, EVENT_TYPES, ONTOLOGY_TOPICS, TOPICS, eventSubject, type EventType, type StoredDomainEvent, type Topic } from "./events/catalog";
export { CATALOG_FIELDS, EventLog, requiredPayloadFields } from "./events/log";
export { Outbox } from "./events/outbox";
export { cursorPump } from "./events/pump";
export { LOG_LEVELS, LOG_RUN_KINDS, LogCapture, LogLineSchema } from "./logs/capture";
export { OntologyStore } from "./ontology/store";
export { DirectWrites, isObjectOrLinkChange, type DirectChange, type DirectWriteResult } from "./ontology/writes";
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, QUERY_OPERATORS, QUERY_WORDING, containsApplies, operandKind, type OperandKind } from "./ontology/query";
export { own, propertyDef, type ObjectTypeDefinition, type PropertyType } from "./sdk/project";
export { ObjectRecordSchema, SubjectSchema, ActionRunRecordSchema, RunErrorSchema, WorkflowRunErrorSchema, RUN_ERROR_CODES, type RunError } from "./sdk/records";
export { dateSchema, timestampSchema, isTimestamp, isCalendarDate } from "./sdk/time";
export { closeIfSlow, sendFrame, sendFrames, subscriptionSocket } from "./http/socket";
export { readBodyBytes, requestBodyStream } from "./http/body";
export type { RouteRegistry } from "./http/routes";
export { TemporalHost } from "./temporal/host";
export { ActionRunner } from "./runtime/actions";
export { WorkflowRuns, WorkflowRunStateSchema, InterventionStateSchema, WorkflowRunSummarySchema, WORKFLOW_RUN_STATUSES } from "./runtime/workflows";
export { HistoryEventSchema } from "./runtime/run-history";
export { WebhookDeliveries, type WebhookAnswer } from "./runtime/webhooks";
export { WebhookRunSchema } from "./runtime/webhook-runs";
export { ConnectorRuns, ConnectorRunStateSchema } from "./runtime/connector-runs";
export { ClientRunIdSchema } from "./runtime/run-state";
export { decodeListingToken, encodeListingToken } from "./http/listing-token";
export { RunStarter } from "./runtime/run-starter";
export { HealthReport, type Health } from "./runtime/health";
export { Metrics, type MetricSamples } from "./metrics";
export { DatasetStore, DATASET_FILE_MAX_BYTES } from "./datasets/store";
export { DatasetProjector } from "./datasets/projector";
export { DatasetSchema, DatasetVersionSchema, DatasetRowsPageSchema } from "./datasets/schemas";
export { ScheduleManager, ScheduleStateSchema } from "./runtime/schedules";
export { EventScheduleConsumers, EventScheduleStateSchema, DeadLetterSchema } from "./runtime/event-schedules";
export { FileStore } from "./files/file-store";
export { FILE_UPLOAD_MAX_BYTES, MAX_DOWNLOAD_URL_TTL_MS } from "./files/limits";
export { normalizeContentType } from "./files/content-type";
export { s3UploadTargetOf, type S3UploadTarget } from "./files/config";
export { lazily } from "./lazy";
export { parseRangeHeader } from "./files/blob-store";
export { writeInBatches } from "./files/batched-write";
export { FileReferenceSchema, DownloadUrlSchema } from "./sdk/records";
export type { FileReference } from "./sdk/context";
export { isFileValue, fileProperties } from "./ontology/validate";
export { serveFile } from "./http/file-response";
export { FastResponse, NOT_FRAMED, errorResponse, jsonResponse, jsonText } from "./http/response";
export { ArtifactStore } from "./artifacts/store";
export { ArtifactSchema, ArtifactVersionSchema, TitleSchema, VersionFilesSchema } from "./artifacts/schemas";
export { ARTIFACT_KINDS } from "./artifacts/content";
export { ResolutionSchema } from "./artifacts/resolve";
export { SheetData, SheetRowsSchema, CellTypeSchema } from "./artifacts/sheet-data";
/**
 * The S3 helpers the S3 blob store uses (`isMissing`, `listObjects`, `listMultipartUploads`, see
 * core/files/s3-blob-store.ts), imported on the first call: a plugin module that only S3 storage
 * loads awaits it, so the AWS SDK is not loaded with local storage (see core/files/config.ts).
 * @returns the helpers; it rejects only when the module cannot be imported
 */
export const loadS3Helpers = lazily(async () => {
  const { answerStorageAway, bucketWhere, isMissing, listMultipartUploads, listObjects } = await import("./files/s3-blob-store");
  return { answerStorageAway, bucketWhere, isMissing, listMultipartUploads, listObjects };
});
export { newId, nowIso } from "./ids";
export { kitAssets, kitDocument, themeStyle } from "./artifacts/kit";
export { EmbedRenderer, formatBytes, type EmbedOptions, type Shown } from "./artifacts/render/embed";
export { rewriteDeck } from "./artifacts/render/deck-frame";
export { html, raw, escapeHtml, RawHtml } from "./artifacts/render/html";
export { renderDocument } from "./artifacts/render/markdown";
export { chartInModes, workbookChart } from "./artifacts/render/chart";
export { artifactIdsIn, describeAddressPart, quoted, withoutArtifactIds } from "./artifacts/render/reader-text";
export { artifactFileUrl, formatCell } from "./artifacts/render/format";
export { renderSheetView } from "./artifacts/render/sheet-view";
export { browserScript, echartsBrowserPath, sheetCss } from "./artifacts/render/assets";
export { readTheme, readDeck, isImagePath, isEmptyDocument, contentTypeOf, ALLOWED_CDN_HOSTS, type Theme } from "./artifacts/content";
export { parseAddress, pageUrl, safePageUrl, type ArtifactAddress } from "./artifacts/address";
export type { VersionOutline } from "./artifacts/resolve";
export type { Artifact, ArtifactVersion } from "./artifacts/schemas";
export type { ArtifactReader } from "./artifacts/store";
export { AGENT_TOOLS } from "./sdk/connector";
export { AgentOutput, AGENT_OUTPUT_KINDS, encodeOutputCursor, decodeOutputCursor, type AgentOutputKind, type AgentRunAccess, type AgentRunState, type OutputRecord, type OutputRecordInput, type OutputScope } from "./agents/output";
export type { SocketMessageHandler } from "./http/socket";
export { AgentRuns, AgentRunStateSchema, ConversationMessageSchema, ConversationSchema } from "./runtime/agents";
export { RuleEngine, RuleInfoSchema, RuleStateSchema, TriggeredSubjectSchema, ruleInfo, type RuleInfo, type RuleState } from "./runtime/rules";
