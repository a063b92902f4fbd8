/**
 * README's Configuration table against the code: every environment variable that core/config.ts and
 * core/files/config.ts read has a row there, with its default and what it does; every row names a
 * variable the code reads.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
const CONFIG_MODULES = ["core/config.ts", "core/files/config.ts"];

/** `source` without its comments (so the tables in the modules' doc comments count for nothing). */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:\\])\/\/.*$/gm, "$1");
}

/**
 * The variables a config module reads: the keys of its valibot object schemas (`NAME: v.…`, what
 * `loadConfig` and `fileStorageConfigFromEnv` take from the environment) and its direct reads
 * (`env.NAME`, `env["NAME"]`).
 */
function variablesReadBy(file: string): Set<string> {
  const code = withoutComments(fs.readFileSync(path.join(ROOT, file), "utf8"));
  const names = [...code.matchAll(/^\s+([A-Z][A-Z0-9_]*): v\./gm), ...code.matchAll(/\benv(?:\.|\[\s*["'])([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]!);
  return new Set(names);
}

/** README's Configuration table: each row's variables (backticked in its first cell), default and meaning. */
function configurationTable(): { variables: string[]; default: string; meaning: string }[] {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("\n## Configuration\n"), readme.indexOf("\n## ", readme.indexOf("\n## Configuration\n") + 1));
  return section
    .split("\n")
    .filter((line) => /^\| `/.test(line))
    .map((line) => {
      const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
      return { variables: [...cells[0]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!), default: cells[1] ?? "", meaning: cells.slice(2).join("|") };
    });
}

/** Every TypeScript source of the service (no tests), as one text: where a row's variable must be read. */
function serviceSources(): string {
  const files = (dir: string): string[] =>
    fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) return files(rel);
      return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [rel] : [];
    });
  return ["core", "plugins", "sandbox"].flatMap(files).map((f) => withoutComments(fs.readFileSync(path.join(ROOT, f), "utf8"))).join("\n");
}

describe("README's configuration table", () => {
  const table = configurationTable();
  const documented = new Set(table.flatMap((row) => row.variables));
  const read = new Set(CONFIG_MODULES.flatMap((file) => [...variablesReadBy(file)]));

  it("finds the variables the config modules read (the check itself works)", () => {
    expect(read.size).toBeGreaterThan(40);
    for (const name of ["PORT", "HOST", "SVC_DEV_TOKEN", "SVC_ALLOWED_ORIGINS", "SVC_FILE_STORAGE", "SVC_S3_BUCKET", "SVC_S3_FORCE_PATH_STYLE", "ANTHROPIC_API_KEY"]) expect(read).toContain(name);
    expect(table.length).toBeGreaterThan(30);
  });

  it("has a row for every variable core/config.ts and core/files/config.ts read", () => {
    expect([...read].filter((name) => !documented.has(name)).sort()).toEqual([]);
  });

  it("gives every row a default and a meaning, and one row per variable", () => {
    for (const row of table) {
      expect(row.default, row.variables.join(", ")).not.toBe("");
      expect(row.meaning, row.variables.join(", ")).not.toBe("");
    }
    const names = table.flatMap((row) => row.variables.slice(0, 1));
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
  });

  it("lists only variables the service reads", () => {
    const sources = serviceSources();
    expect([...documented].filter((name) => !new RegExp(`\\b${name}\\b`).test(sources)).sort()).toEqual([]);
  });

  it("says an empty value is unset, and SVC_DEV_TOKEN's minimum length and none", () => {
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
    expect(readme).toMatch(/An empty value counts as unset/);
    const devToken = table.find((row) => row.variables[0] === "SVC_DEV_TOKEN")!;
    expect(devToken.meaning).toMatch(/at least 16 characters/);
    expect(devToken.meaning).toMatch(/`none`/);
  });
});
