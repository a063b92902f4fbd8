/**
 * The public authoring SDK: what connector authors, workflow designers and project authors import.
 * Connectors import only this module (or `core/sdk/*` for type-only use inside workflows).
 */
export { defineConnector, defineAction, defineWebhook, defineSchedule, defineSync, definePipeline } from "./sdk/connector";
export type { ActionDefinition, SyncDefinition, PipelineDefinition, PipelineStep, ConnectorRunContext, WebhookDefinition, WebhookRequest, WebhookResponse, WebhookContext, WebhookDelivery, ScheduleDefinition, ConnectorDefinition, OverlapPolicy, WebhookFormat } from "./sdk/connector";
export { defineWorkflow } from "./sdk/workflow";
export type { WorkflowContext, WorkflowDefinition } from "./sdk/workflow";
export { defineProject } from "./sdk/project";
export type { ProjectDefinition, ObjectTypeDefinition, LinkTypeDefinition, TelemetryDefinition, IdentityDefinition, PropertyType } from "./sdk/project";
export type * from "./sdk/context";
export { definePlugin } from "./plugin";
export type { Plugin, PluginContext } from "./plugin";
export { ApiError } from "./errors";
export * from "./sdk/signatures";
export type { ErrorCode } from "./errors";
export { can } from "./auth/permissions";
export { allPermissions } from "./runtime/registry";
export { createApp, installSignalHandlers } from "./app";
export type { App, AppOptions } from "./app";
