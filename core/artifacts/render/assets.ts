/**
 * The browser side of the artifact pages (spec 2.8–2.10): the scripts of render/browser/ bundled with
 * esbuild on first use, and where echarts' browser build is. The pages serve them at
 * `/assets/pages/<name>.js` and `/assets/pages/echarts.js`.
 */
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const BROWSER_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "browser");
const bundles = new Map<string, Promise<string>>();

/**
 * The scripts that exist: the `.ts` files of render/browser/ (e.g. `sheet`, `charts`), or in the
 * compiled build (`npm run build`) the `.js` bundles it wrote there instead.
 */
export function browserScriptNames(): string[] {
  const names = fs
    .readdirSync(BROWSER_DIR)
    .filter((f) => (f.endsWith(".ts") && !f.endsWith(".d.ts") && !f.endsWith(".test.ts")) || f.endsWith(".js"))
    .map((f) => f.replace(/\.[jt]s$/, ""));
  return [...new Set(names)].sort();
}

/**
 * Builds `render/browser/<name>.ts` into one minified IIFE for ES2020 (with what it imports, e.g.
 * render/format.ts); used on first request from source, and by `npm run build` to write the bundle.
 *
 * @throws Error when esbuild fails
 */
export async function buildBrowserScript(name: string, browserDir = BROWSER_DIR): Promise<string> {
  // esbuild is loaded when a script is built here (the compiled start ships them prebuilt)
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [path.join(browserDir, `${name}.ts`)],
    bundle: true,
    format: "iife",
    target: "es2020",
    minify: true,
    write: false,
    legalComments: "none",
    tsconfig: path.join(browserDir, "tsconfig.json"),
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}

/**
 * The browser bundle of `render/browser/<name>.ts` (with what it imports, e.g. render/format.ts): one
 * minified IIFE for ES2020, built with esbuild the first time (read from `<name>.js` in the compiled
 * build) and kept in memory. `sheet` is the sheet grid and tabs; `charts` draws `[data-svc-chart]`
 * elements (it needs the `echarts` global first).
 *
 * @param name a script name (letters, digits, dashes), see {@link browserScriptNames}
 * @returns the JavaScript
 * @throws Error (the promise rejects) for a name that is not a script, listing the scripts; or when
 *   esbuild fails (a broken source; not cached, so a fixed file builds next time)
 */
export async function browserScript(name: string): Promise<string> {
  let bundle = bundles.get(name);
  if (!bundle) {
    const names = browserScriptNames();
    if (!/^[a-z][a-z0-9-]*$/.test(name) || !names.includes(name)) throw new Error(`No browser script "${name}"; the scripts are ${names.join(", ")}`);
    // the compiled build ships the bundle prebuilt (no .ts sources there); from source esbuild builds it
    const prebuilt = path.join(BROWSER_DIR, `${name}.js`);
    bundle = fs.existsSync(prebuilt) ? fs.promises.readFile(prebuilt, "utf8") : buildBrowserScript(name);
    bundles.set(name, bundle);
    bundle.catch(() => bundles.delete(name));
  }
  return bundle;
}

/** The sheet view's stylesheet (render/sheet.css: tabs, grid, chart panels), read from disk each call. */
export function sheetCss(): string {
  return fs.readFileSync(path.join(path.dirname(BROWSER_DIR), "sheet.css"), "utf8");
}

/** The absolute path of echarts' minified browser build (`echarts/dist/echarts.min.js`, the global `echarts`). */
export function echartsBrowserPath(): string {
  const main = createRequire(import.meta.url).resolve("echarts"); // …/node_modules/echarts/dist/echarts.js (the require entry)
  return path.join(path.dirname(main), "echarts.min.js");
}
