/**
 * The house rules of ARCHITECTURE.md, checked on the import graph (every import, type-only ones too):
 * no import circle anywhere, and arrows that point the way the floors say.
 */
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
const FOLDERS = ["core", "plugins", "connectors", "workflows", "sandbox"];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(rel);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") && !entry.name.endsWith(".d.ts") ? [rel] : [];
  });
}

/** Every file's imports, resolved to repo-relative paths (packages keep their bare name). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of FOLDERS.flatMap(sourceFiles)) {
    const info = ts.preProcessFile(fs.readFileSync(path.join(ROOT, file), "utf8"), true, true);
    graph.set(
      file,
      info.importedFiles.map(({ fileName }) => {
        if (!fileName.startsWith(".")) return fileName;
        const base = path.join(path.dirname(file), fileName);
        for (const candidate of [base, `${base}.ts`, path.join(base, "index.ts")]) if (fs.existsSync(path.join(ROOT, candidate)) && fs.statSync(path.join(ROOT, candidate)).isFile()) return candidate;
        return base;
      }),
    );
  }
  return graph;
}

/** The import cycles of the graph (each as a path that returns to its start); empty when there are none. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, "visiting");
    stack.push(file);
    for (const dep of graph.get(file) ?? []) {
      if (!graph.has(dep)) continue;
      if (state.get(dep) === "visiting") found.push([...stack.slice(stack.indexOf(dep)), dep]);
      else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

const graph = importGraph();
const violations = (from: (file: string) => boolean, allowed: (dep: string, file: string) => boolean) =>
  [...graph].filter(([file]) => from(file)).flatMap(([file, deps]) => deps.filter((dep) => !allowed(dep, file)).map((dep) => `${file} -> ${dep}`));
const isPackage = (dep: string) => !dep.includes("/") || !FOLDERS.some((f) => dep.startsWith(`${f}/`));
/** Same folder of its own: `plugins/<name>/`, `connectors/<id>/`, or `workflows/`. */
const within = (dep: string, file: string) => {
  const parts = file.split("/");
  return dep.startsWith(`${parts.slice(0, parts.length > 2 ? 2 : 1).join("/")}/`);
};

describe("architecture", () => {
  it("has no import circle", () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(cycles(graph).map((c) => c.join(" -> "))).toEqual([]);
  });

  it("finds a circle when there is one (the checker itself works)", () => {
    expect(cycles(new Map([["a.ts", ["b.ts"]], ["b.ts", ["c.ts"]], ["c.ts", ["a.ts"]]]))).toEqual([["a.ts", "b.ts", "c.ts", "a.ts"]]);
  });

  it("connectors import only the public SDK (core/sdk) and their own folder", () => {
    expect(violations((f) => f.startsWith("connectors/"), (dep, file) => isPackage(dep) || dep === "core/sdk/index.ts" || within(dep, file))).toEqual([]);
  });

  it("plugins import only the plugin API (core/plugin-api) and their own folder, never another plugin", () => {
    expect(violations((f) => f.startsWith("plugins/") && f !== "plugins/index.ts", (dep, file) => isPackage(dep) || dep === "core/plugin-api.ts" || within(dep, file))).toEqual([]);
  });

  it("core imports nothing above it (plugins, connectors, workflows, sandbox)", () => {
    expect(violations((f) => f.startsWith("core/"), (dep) => isPackage(dep) || dep.startsWith("core/"))).toEqual([]);
  });

  it("floor 0 (the SDK, errors, ids, the event catalog, permission strings) imports nothing above it", () => {
    const floor0 = (f: string) => /^core\/(sdk\/|errors\.ts|ids\.ts|events\/catalog\.ts|auth\/permissions\.ts)/.test(f);
    expect(violations(floor0, (dep) => isPackage(dep) || floor0(dep))).toEqual([]);
  });

  it("the SDK, the project definition and Temporal infrastructure import nothing of the runtime, HTTP or the app", () => {
    const high = (dep: string) => /^core\/(runtime|http|app|plugin-api|index)\b/.test(dep);
    expect(violations((f) => /^core\/(sdk|project|temporal)\//.test(f), (dep) => !high(dep))).toEqual([]);
  });

  it("the SDK connectors import loads no server code: no h3, crossws, sqlite3, pino or Temporal client/worker", () => {
    const reached = new Set<string>();
    const walk = (file: string) => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const dep of graph.get(file) ?? []) walk(dep);
    };
    walk("core/sdk/index.ts");
    expect(reached.size).toBeGreaterThan(5);
    const server = [...reached].filter((dep) => /^(h3|crossws|sqlite3|pino|@temporalio\/(client|worker))(\/|$)/.test(dep) || /^core\/(app|store|http|runtime|temporal)\b/.test(dep));
    expect(server).toEqual([]);
  });

  it("workflow isolate code imports only Temporal's workflow packages, valibot and type-only SDK modules", () => {
    const isolate = (f: string) => f.startsWith("workflows/") && f !== "workflows/modules.ts";
    const allowed = (dep: string, file: string) => ["@temporalio/workflow", "@temporalio/common", "valibot", "@valibot/to-json-schema", "svc-project-workflows"].includes(dep) || within(dep, file) || /^core\/sdk\/(activities-types|workflow|context|events-types|download-url-secrets)\.ts$/.test(dep);
    expect(violations(isolate, allowed)).toEqual([]);
    // the one value module among them is pure: it imports nothing
    expect(fs.readFileSync(path.join(ROOT, "core/sdk/download-url-secrets.ts"), "utf8")).not.toMatch(/^\s*import\b/m);
  });
});

describe("connectors: only the public SDK and valibot, a README, and one factory export", () => {
  const connectors = fs.readdirSync(path.join(ROOT, "connectors"), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  const factoryOf = (dir: string) => `${dir.replace(/-(\w)/g, (_m, c: string) => c.toUpperCase())}Connector`;
  it("covers every connector folder", () => {
    expect(connectors).toEqual(expect.arrayContaining(["diagnostics", "github", "slack", "standard-webhooks", "stripe"]));
  });
  it.each(connectors.map((dir) => [dir, factoryOf(dir)]))("connectors/%s", async (dir, factory) => {
    const source = fs.readFileSync(path.join(ROOT, "connectors", dir, "index.ts"), "utf8");
    const specifiers = [...source.matchAll(/\bfrom\s+["']([^"']+)["']/g)].map((m) => m[1]);
    expect(specifiers.length).toBeGreaterThan(0);
    for (const s of specifiers) expect(["../../core/sdk", "valibot"]).toContain(s);
    expect(fs.existsSync(path.join(ROOT, "connectors", dir, "README.md"))).toBe(true);
    const mod = await import(`../connectors/${dir}/index.ts`);
    expect(Object.keys(mod)).toEqual([factory]);
  });
});
