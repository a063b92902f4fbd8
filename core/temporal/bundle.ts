import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const ENGINE = path.join(ROOT, "workflows/index.ts");
const EMPTY = path.join(ROOT, "workflows/empty.ts");
const cache = new Map<string, Promise<{ code: string }>>();

/**
 * Bundles the workflow engine with the project's workflows module for Temporal's isolate (webpack,
 * a few seconds), once per process and module. `SVC_WORKFLOW_BUNDLE` names a prebuilt bundle file
 * instead (the test suite builds one in its global setup and shares it).
 *
 * @param workflowsModule absolute path of the project's module exporting `workflows`
 * @throws the bundler's error when the workflow code does not compile or imports Node modules
 */
export function loadWorkflowBundle(workflowsModule: string | undefined, log?: (line: string) => void): Promise<{ code: string }> {
  const prebuilt = process.env.SVC_WORKFLOW_BUNDLE;
  if (prebuilt) return Promise.resolve({ code: fs.readFileSync(prebuilt, "utf8") });
  const target = workflowsModule ?? EMPTY;
  let pending = cache.get(target);
  if (!pending) {
    pending = (async () => {
      const started = Date.now();
      log?.("Bundling workflows for Temporal…");
      const { bundleWorkflowCode } = await import("@temporalio/worker");
      const bundle = await bundleWorkflowCode({
        workflowsPath: ENGINE,
        logger: quietBundlerLogger,
        webpackConfigHook: (config) => {
          config.resolve ??= {};
          config.resolve.alias = { ...(config.resolve.alias as Record<string, string>), "svc-project-workflows$": target };
          return config;
        },
      });
      log?.(`Bundled workflows in ${Date.now() - started} ms`);
      return { code: bundle.code };
    })();
    cache.set(target, pending);
  }
  return pending;
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: (m: string) => console.warn(m), error: (m: string) => console.error(m), log: noop };
