/**
 * The host: what a process entry point imports to run a project (the sandbox, tests, benchmarks).
 * Connectors never import this module: they import `core/sdk`.
 */
export * from "./sdk/index";
export { createApp, installSignalHandlers } from "./app";
export type { App, AppOptions, DevTokenStatus, WorkflowEngine } from "./app";
export { definePlugin } from "./plugin-api";
export type { Plugin, PluginContext } from "./plugin-api";
