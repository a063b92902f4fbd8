/**
 * Where the workflow-isolate code lives, for the Node side that bundles it (the app's entry points,
 * the test setup, the benchmarks). Node-only: the engine never imports this file.
 */
import { fileURLToPath } from "node:url";
import type { WorkflowEngine } from "../core/app";

/** The run engine (the workflow bundle's entry) and the stand-in for projects without workflows. */
export const WORKFLOW_ENGINE: WorkflowEngine = {
  module: fileURLToPath(new URL("./index.ts", import.meta.url)),
  emptyProjectWorkflows: fileURLToPath(new URL("./empty.ts", import.meta.url)),
};
