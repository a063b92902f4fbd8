import fs from "node:fs";

/**
 * The modules a workflow bundle is built from. The app passes them in (core does not know where the
 * run engine lives): `engine` is the workflow-isolate entry (the run engine), and `projectWorkflows`
 * the project's module exporting `workflows`, resolved inside the engine as `svc-project-workflows`.
 */
export interface WorkflowModules {
  /** Absolute path of the run engine module (its default export runs every project workflow). */
  engine: string;
  /** Absolute path of the project's workflows module. */
  projectWorkflows: string;
}

const cache = new Map<string, Promise<{ code: string }>>();

/**
 * Bundles the workflow engine with the project's workflows module for Temporal's isolate (webpack,
 * a few seconds), once per process and pair of modules. `SVC_WORKFLOW_BUNDLE` names a prebuilt bundle
 * file instead (the test suite builds one in its global setup and shares it).
 *
 * @throws the bundler's error when the workflow code does not compile or imports Node modules
 */
export function loadWorkflowBundle(modules: WorkflowModules, log?: (line: string) => void): Promise<{ code: string }> {
  const prebuilt = process.env.SVC_WORKFLOW_BUNDLE;
  if (prebuilt) return Promise.resolve({ code: fs.readFileSync(prebuilt, "utf8") });
  const key = `${modules.engine}\u0000${modules.projectWorkflows}`;
  let pending = cache.get(key);
  if (!pending) {
    pending = (async () => {
      const started = Date.now();
      log?.("Bundling workflows for Temporal…");
      const { bundleWorkflowCode } = await import("@temporalio/worker");
      const bundle = await bundleWorkflowCode({
        workflowsPath: modules.engine,
        logger: quietBundlerLogger,
        webpackConfigHook: (config) => {
          config.resolve ??= {};
          config.resolve.alias = { ...(config.resolve.alias as Record<string, string>), "svc-project-workflows$": modules.projectWorkflows };
          return config;
        },
      });
      log?.(`Bundled workflows in ${Date.now() - started} ms`);
      return { code: bundle.code };
    })();
    cache.set(key, pending);
  }
  return pending;
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: (m: string) => console.warn(m), error: (m: string) => console.error(m), log: noop };
