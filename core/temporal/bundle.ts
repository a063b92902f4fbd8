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

/** A workflow bundle as the worker takes it: the code itself, or the path of a file holding it. */
export type WorkflowBundle = { code: string } | { codePath: string };

const cache = new Map<string, Promise<{ code: string }>>();

/**
 * Where `npm run build` writes the prebuilt bundle of a project's workflows module, and where
 * {@link loadWorkflowBundle} looks for it: beside the module, its extension replaced by
 * `.workflow-bundle.js` (`dist/sandbox/workflows.ts` → `dist/sandbox/workflows.workflow-bundle.js`; in
 * the compiled build a module's path is the one its source has, under dist/). The source tree never
 * holds one, so tsx starts and tests always bundle the current code.
 */
export function prebuiltWorkflowBundlePath(projectWorkflows: string): string {
  return projectWorkflows.replace(/\.[cm]?[jt]s$/, "") + ".workflow-bundle.js";
}

/**
 * The workflow bundle for the worker, in this order: `SVC_WORKFLOW_BUNDLE` (a prebuilt bundle file:
 * the test suite builds one in its global setup and shares it); the bundle `npm run build` wrote beside
 * the project's workflows module ({@link prebuiltWorkflowBundlePath}); else it bundles the engine with
 * the project's workflows (webpack, a few seconds), once per process and pair of modules.
 *
 * @throws the bundler's error when the workflow code does not compile or imports Node modules
 */
export function loadWorkflowBundle(modules: WorkflowModules, log?: (line: string) => void): Promise<WorkflowBundle> {
  const prebuilt = process.env.SVC_WORKFLOW_BUNDLE;
  if (prebuilt) return Promise.resolve({ codePath: prebuilt });
  const built = prebuiltWorkflowBundlePath(modules.projectWorkflows);
  if (fs.existsSync(built)) return Promise.resolve({ codePath: built });
  return bundleWorkflows(modules, log);
}

/**
 * Bundles the workflow engine with the project's workflows module for Temporal's isolate (webpack,
 * a few seconds), once per process and pair of modules (the build calls it to write the prebuilt file).
 *
 * @throws the bundler's error when the workflow code does not compile or imports Node modules
 */
export function bundleWorkflows(modules: WorkflowModules, log?: (line: string) => void): Promise<{ code: string }> {
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
      return { code: escapeBeyondLatin1(bundle.code) };
    })();
    cache.set(key, pending);
  }
  return pending;
}

/**
 * `code` (JavaScript source) with every UTF-16 unit above U+00FF written as a `\uXXXX` escape, so that
 * V8 holds it as a one-byte (Latin-1) string: a single `…` or `—` (a comment, a template literal)
 * otherwise makes the whole source a two-byte string of twice the size for as long as the process runs
 * (issue 15, idle RSS). Used on the workflow bundle (2.4 MB with its inline source map, held in the main
 * thread and in the workflow thread) and by the build on the modules esbuild emits. An escape means the
 * same character in a comment, a string, an untagged template, a regular expression (a surrogate pair's
 * two escapes are one code point under the `u` flag) and an identifier; only a tagged template's `raw`
 * strings would see the escape itself, and neither the bundle nor our modules read raw strings (our one
 * tag, `html`, reads the cooked ones). A source map is not rewritten: on the few lines holding such a
 * character, columns after it shift by 5.
 */
export function escapeBeyondLatin1(code: string): string {
  return code.replace(/[^\u0000-\u00ff]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * `code` (a bundle from {@link bundleWorkflows}) with its inline source map's `sourcesContent` (the
 * original source of every module, 0.86 MB of the sandbox's 2.4 MB bundle) left out; `mappings`,
 * `sources` and `names` stay, so workflow stack traces are still mapped to the original files and lines.
 * The build writes the prebuilt bundle this way (issue 15, idle RSS): the worker keeps the whole code,
 * inline map included, and the parsed map beside it in the workflow thread; only a debugger showing the
 * original source needs the contents. The map is found as the SDK finds it (the last
 * `//# sourceMappingURL=data:`, then `base64,`); code without one is answered unchanged.
 */
export function withoutSourcesContent(code: string): string {
  const comment = code.lastIndexOf("//# sourceMappingURL=data:");
  const base64 = comment < 0 ? -1 : code.indexOf("base64,", comment);
  if (base64 < 0) return code;
  const head = base64 + "base64,".length;
  const map = JSON.parse(Buffer.from(code.slice(head).trimEnd(), "base64").toString("utf8")) as { sourcesContent?: unknown };
  delete map.sourcesContent;
  return code.slice(0, head) + Buffer.from(JSON.stringify(map)).toString("base64");
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: (m: string) => console.warn(m), error: (m: string) => console.error(m), log: noop };
