/**
 * The public authoring SDK: the only module connectors import (and what project definitions use).
 * It loads no server code: no h3, no SQLite, no Temporal client.
 */
export { defineConnector, defineAction, defineWebhook, defineSchedule, defineSync, definePipeline, defineAgent, defineRule, AGENT_TOOLS } from "./connector";
export type { ActionDefinition, SyncDefinition, PipelineDefinition, PipelineStep, ConnectorRunContext, WebhookDefinition, WebhookRequest, WebhookResponse, WebhookContext, WebhookDelivery, ScheduleDefinition, ConnectorDefinition, OverlapPolicy, WebhookFormat, AgentDefinition, AgentTool, RuleDefinition } from "./connector";
export { defineDataset, rowKey, DATASET_COLUMN_TYPES } from "./datasets";
export type { DatasetDefinition, DatasetColumnDefinition, DatasetColumnType, DatasetProjection, DatasetColumn } from "./datasets";
export type { EventSelector, ScheduleContext, EventScheduleContext } from "./connector";
export { defineWorkflow } from "./workflow";
export type { WorkflowContext, WorkflowDefinition } from "./workflow";
export { defineProject } from "./project";
export type { ProjectDefinition, ObjectTypeDefinition, LinkTypeDefinition, TelemetryDefinition, IdentityDefinition, PropertyType } from "./project";
export type * from "./context";
export { ObjectRecordSchema, SubjectSchema, ActionRunRecordSchema } from "./records";
export * from "./signatures";
export { ApiError } from "../errors";
export type { ErrorCode } from "../errors";
export { can } from "../auth/permissions";
export { allPermissions } from "./project";
