/**
 * `npm run build` (after `npm run typecheck`): the compiled production start of the sandbox, into
 * `dist/` (or `--outdir <dir>`). Run `npm run start:prod` (`node dist/sandbox/main.js`) afterwards.
 *
 * Why esbuild and not `tsc` emit: the code imports relative modules without extensions
 * (`moduleResolution: bundler`), which plain Node ESM does not resolve; `tsc` emits those specifiers as
 * written, so emitting with it would mean rewriting every relative import in the tree. esbuild (already a
 * dependency) bundles our modules into a few files with every package left external (`node_modules` is
 * loaded as it is), honours the legacy `experimentalDecorators` of tsconfig.json (no emitted metadata is
 * needed: injection is explicit), and takes well under a second. Type checking stays with `tsc`.
 *
 * What dist/ holds:
 * - `sandbox/deck-check-child.js`: the deck-check process's entry (forked by the service's
 *   `DeckCheckProcess`, which looks for it there);
 * - `sandbox/main.js` (+ `.map`; like every emitted module, one-byte: characters above U+00FF are
 *   `\u` escapes): the entry, with the modules it needs to start Temporal's dev server
 *   (config, logger, the CLI); the rest of the service in chunks beside it (`sandbox/<name>-<hash>.js`),
 *   imported once the dev server is starting (code splitting). Each module's `import.meta.url` is rewritten to the place
 *   its source has under dist/ (`core/store/db.ts` → `dist/core/store/db.js`), so code that reads files
 *   beside its source keeps working; except `sandbox/defaults.ts`'s, which stays on its source file, so
 *   that the compiled sandbox's default data dir is the source tree's `sandbox/.data`, as for `npm start`
 *   and `npm run svc` (see `SOURCE_TREE_URLS`);
 * - those files, copied to the same places: every file of core/, plugins/, connectors/, workflows/ and
 *   sandbox/ that is not TypeScript, Markdown or a tsconfig (SQL migrations, the pages' and the slides
 *   kit's CSS/JS, `deck-check.page.js`, the viewer);
 * - the browser bundles of `core/artifacts/render/browser/*.ts` prebuilt as `.js` beside them;
 * - the Temporal workflow bundle (engine + the sandbox's workflows) beside the sandbox's workflows module
 *   (`sandbox/workflows.workflow-bundle.js`), so start-up does not run webpack; its inline source map
 *   without `sourcesContent` (stack traces are still mapped; see `withoutSourcesContent`);
 * - `package.json` `{ "type": "module" }` (the outdir may be outside this package).
 * A `node_modules` must be reachable from the outdir (it is for `dist/`; elsewhere link it).
 * The outdir is emptied first, except `sandbox/.data` (where builds before the shared default data dir
 * kept the compiled sandbox's data: `SVC_DATA_DIR=dist/sandbox/.data` goes on with it) and `node_modules`.
 */
import fs from "node:fs";
import path from "node:path";
import { build, type Plugin } from "esbuild";
import { bundleWorkflows, escapeBeyondLatin1, prebuiltWorkflowBundlePath, withoutSourcesContent } from "../core/temporal/bundle";
import { DECK_CHECK_CHILD_OUTPUT } from "../core/artifacts/deck-check-process";
import { browserScriptNames, buildBrowserScript } from "../core/artifacts/render/assets";
import { WORKFLOW_ENGINE } from "../workflows/modules";
import { sandboxProject } from "./project";

const ROOT = path.resolve(import.meta.dirname, "..");
const SOURCE_FOLDERS = ["core", "plugins", "connectors", "workflows", "sandbox"];
const ENTRY = "sandbox/main.ts";
const DECK_CHECK_CHILD = "core/artifacts/deck-check-child.ts";

/**
 * Our modules whose `import.meta.url` stays the URL of their source file (reached from the bundle's own
 * URL, so a checkout that moves as a whole keeps working) instead of becoming their place under the
 * outdir: `sandbox/defaults.ts` names the default data dir, the source tree's `sandbox/.data`, which the
 * compiled start shares with `npm start` and the CLI (`npm run svc`, which runs from source).
 */
const SOURCE_TREE_URLS = new Set(["sandbox/defaults.ts"]);

/** A further entry point bundled with the service (`in`: path from the repository root; `out`: output path in `outdir`, no extension). */
export interface ExtraEntry {
  in: string;
  out: string;
}

/**
 * Builds the compiled sandbox into `outdir` (see the module comment); answers the milliseconds of each step.
 * `extraEntries` are bundled with it, sharing its chunks (the benchmarks' server: test/bench/server-process.ts);
 * give them an `out` under `sandbox/`, where `import.meta.url` of the bundled modules is resolved from.
 * @throws Error when esbuild or the workflow bundler fails
 */
export async function buildSandbox(outdir: string, log: (line: string) => void = () => undefined, extraEntries: readonly ExtraEntry[] = []): Promise<Record<string, number>> {
  const times: Record<string, number> = {};
  let mark = performance.now();
  const step = (name: string) => {
    const now = performance.now();
    times[name] = Math.round(now - mark);
    mark = now;
    log(`  ${name}: ${times[name]} ms`);
  };
  clean(outdir);
  const outfile = path.join(outdir, ENTRY.replace(/\.ts$/, ".js"));
  await build({
    // the deck-check process's entry (core/artifacts/deck-check-child.ts, forked by the service) sits
    // beside main.js, where every output file is: the `import.meta.url` rewrite below is relative to them
    entryPoints: [
      { in: path.join(ROOT, ENTRY), out: ENTRY.replace(/\.ts$/, "") },
      { in: path.join(ROOT, DECK_CHECK_CHILD), out: DECK_CHECK_CHILD_OUTPUT },
      ...extraEntries.map((e) => ({ in: path.join(ROOT, e.in), out: e.out })),
    ],
    outdir,
    outbase: ROOT,
    // the modules main.ts imports dynamically (the service) go to chunks beside it, each importing its own
    // packages: main.js starts the Temporal dev server before they load (in one file every package import
    // would be hoisted to the top and loaded first)
    splitting: true,
    chunkNames: "sandbox/[name]-[hash]",
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    sourcemap: true,
    tsconfig: path.join(ROOT, "tsconfig.json"),
    logLevel: "warning",
    plugins: [mirrorImportMeta(outdir, outfile)],
  });
  fs.writeFileSync(path.join(outdir, "package.json"), JSON.stringify({ type: "module", private: true }, null, 2) + "\n");
  // one-byte sources: esbuild leaves comments and tagged templates (our `html`, which reads the cooked
  // strings) as written, and one `—` or `…` makes V8 hold a whole chunk as a two-byte string (the largest
  // chunk: 0.9 MB of heap instead of 0.45 MB for as long as the process runs; see escapeBeyondLatin1)
  for (const file of fs.readdirSync(path.join(outdir, "sandbox"))) {
    if (!file.endsWith(".js")) continue;
    const at = path.join(outdir, "sandbox", file);
    const code = fs.readFileSync(at, "utf8");
    const escaped = escapeBeyondLatin1(code);
    if (escaped !== code) fs.writeFileSync(at, escaped);
  }
  step("bundle (esbuild)");
  for (const folder of SOURCE_FOLDERS) copyAssets(path.join(ROOT, folder), path.join(outdir, folder));
  step("assets");
  const browserDir = path.join(ROOT, "core/artifacts/render/browser");
  fs.mkdirSync(path.join(outdir, "core/artifacts/render/browser"), { recursive: true });
  for (const name of browserScriptNames()) fs.writeFileSync(path.join(outdir, "core/artifacts/render/browser", `${name}.js`), await buildBrowserScript(name, browserDir));
  step("browser bundles");
  const projectWorkflows = sandboxProject.workflowsModule!;
  const { code } = await bundleWorkflows({ engine: WORKFLOW_ENGINE.module, projectWorkflows });
  // without the sources' text in its source map: production holds the bundle in the workflow thread
  fs.writeFileSync(prebuiltWorkflowBundlePath(path.join(outdir, path.relative(ROOT, projectWorkflows))), withoutSourcesContent(code));
  step("workflow bundle (webpack)");
  return times;
}

/** Empties `outdir` (creating it), keeping `sandbox/.data` and a `node_modules` (link) placed there. */
function clean(outdir: string): void {
  fs.mkdirSync(outdir, { recursive: true });
  for (const entry of fs.readdirSync(outdir)) {
    if (entry !== "sandbox" && entry !== "node_modules") fs.rmSync(path.join(outdir, entry), { recursive: true, force: true });
  }
  const sandbox = path.join(outdir, "sandbox");
  if (fs.existsSync(sandbox)) for (const entry of fs.readdirSync(sandbox)) if (entry !== ".data") fs.rmSync(path.join(sandbox, entry), { recursive: true, force: true });
}

/** Copies the files code reads at run time (not TypeScript, Markdown, tsconfig or dot files) from `from` to `to`. */
function copyAssets(from: string, to: string): void {
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    const source = path.join(from, entry.name);
    if (entry.isDirectory()) copyAssets(source, path.join(to, entry.name));
    else if (entry.isFile() && !/\.(ts|md)$/.test(entry.name) && entry.name !== "tsconfig.json") {
      fs.mkdirSync(to, { recursive: true });
      fs.copyFileSync(source, path.join(to, entry.name));
    }
  }
}

/**
 * An esbuild plugin: in each of our modules, `import.meta.url` (and `.dirname`, `.filename`) becomes the
 * URL its source has under `outdir`, computed from the bundle's own URL at run time (so dist/ can move);
 * in those of {@link SOURCE_TREE_URLS}, the URL of the source file itself, computed the same way.
 */
function mirrorImportMeta(outdir: string, outfile: string): Plugin {
  return {
    name: "mirror-import-meta",
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, async (args) => {
        if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
        const source = await fs.promises.readFile(args.path, "utf8");
        if (!source.includes("import.meta.")) return { contents: source, loader: "ts" };
        const fromRoot = path.relative(ROOT, args.path);
        const mirrored = SOURCE_TREE_URLS.has(fromRoot.split(path.sep).join("/")) ? args.path : path.join(outdir, fromRoot).replace(/\.ts$/, ".js");
        const relative = path.relative(path.dirname(outfile), mirrored).split(path.sep).join("/");
        const url = `new URL(${JSON.stringify(relative)}, import.meta.url)`;
        const contents = source
          .replaceAll("import.meta.url", `${url}.href`)
          .replaceAll("import.meta.dirname", `__svcPath.dirname(__svcUrl.fileURLToPath(${url}))`)
          .replaceAll("import.meta.filename", `__svcUrl.fileURLToPath(${url})`);
        const helpers = contents !== source && /__svc(Path|Url)\./.test(contents) ? 'import * as __svcPath from "node:path"; import * as __svcUrl from "node:url";\n' : "";
        return { contents: helpers + contents, loader: "ts" };
      });
    },
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const at = process.argv.indexOf("--outdir");
  const outdir = path.resolve(at > 0 && process.argv[at + 1] ? process.argv[at + 1]! : path.join(ROOT, "dist"));
  const started = performance.now();
  process.stdout.write(`Building the compiled sandbox into ${outdir}\n`);
  await buildSandbox(outdir, (line) => process.stdout.write(`${line}\n`));
  process.stdout.write(`Built in ${Math.round(performance.now() - started)} ms. Start it with: npm run start:prod (node ${path.relative(process.cwd(), path.join(outdir, "sandbox/main.js"))})\n`);
}
