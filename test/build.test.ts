import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, inject, it } from "vitest";
import { buildSandbox } from "../sandbox/build";
import { ensureChromium } from "./setup/chromium";
import { freePort } from "./setup/global";
import { DEV_TOKEN, tempDir } from "./helpers";
import { childPids } from "./helpers-fs";

const ROOT = path.resolve(import.meta.dirname, "..");

/**
 * What an ES module of the build loads when it starts: the modules it imports statically (`import …
 * from`, `export … from`), theirs in turn, and for `entry` also the modules it imports with `import()`
 * (the entry point loads the service that way); with the packages they import statically.
 */
function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const imported = (file: string, pattern: RegExp) => [...fs.readFileSync(file, "utf8").matchAll(pattern)].map((m) => m[1]!);
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of imported(file, /(?:^|\n)\s*(?:import|export)\s*(?:[^"';]*?\sfrom\s*)?"([^"]+)"/g)) {
      if (spec.startsWith(".")) visit(path.resolve(path.dirname(file), spec));
      else packages.add(spec);
    }
  };
  visit(entry);
  for (const spec of imported(entry, /import\("(\.[^"]+)"\)/g)) visit(path.resolve(path.dirname(entry), spec));
  return { files, packages };
}

describe("the compiled production start (npm run build, npm run start:prod)", () => {
  it("defaults to the data dir npm start and npm run svc use, the source tree's sandbox/.data (not one under the outdir)", async () => {
    const outdir = tempDir("svc-build-");
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(outdir, "node_modules"), "dir");
    // sandbox/defaults.ts as the compiled start bundles it (the same import.meta rewrite), as an entry of its own to read it
    await buildSandbox(outdir, () => undefined, [{ in: "sandbox/defaults.ts", out: "sandbox/defaults-probe" }]);
    const compiled = (await import(pathToFileURL(path.join(outdir, "sandbox/defaults-probe.js")).href)) as typeof import("../sandbox/defaults");
    expect(compiled.SANDBOX_DATA_DIR).toBe(path.join(ROOT, "sandbox", ".data"));
    expect((await import("../sandbox/defaults")).SANDBOX_DATA_DIR).toBe(path.join(ROOT, "sandbox", ".data"));
  });

  it("builds into a directory of its own and serves from it with plain node: status, an action run, a workflow on the prebuilt bundle, the seed's deck checked by the deck-check process, assets; SIGTERM stops it", async () => {
    ensureChromium(); // the seed's deck is checked
    const outdir = tempDir("svc-build-");
    // the bundle keeps packages external: they resolve from a node_modules beside the build (dist/ finds the repo's)
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(outdir, "node_modules"), "dir");
    await buildSandbox(outdir);
    for (const file of ["sandbox/main.js", "sandbox/deck-check-child.js", "sandbox/workflows.workflow-bundle.js", "core/store/migrations/001_init.sql", "core/artifacts/render/browser/sheet.js", "core/artifacts/kit/kit.js", "plugins/pages/assets/pages.css"]) {
      expect(fs.existsSync(path.join(outdir, file)), file).toBe(true);
    }
    expect(fs.readdirSync(path.join(outdir, "core/store/migrations")).sort()).toEqual(fs.readdirSync(path.join(ROOT, "core/store/migrations")).sort());
    // every emitted module is one-byte for V8 (no UTF-16 unit above U+00FF)
    for (const file of fs.readdirSync(path.join(outdir, "sandbox")).filter((f) => f.endsWith(".js"))) {
      expect(fs.readFileSync(path.join(outdir, "sandbox", file), "utf8").match(/[^\u0000-\u00ff]/g)?.slice(0, 3) ?? [], file).toEqual([]);
    }
    // no module the start imports (main.js, the modules it imports, and theirs) imports statically: the
    // AWS SDK (with local storage only S3 storage imports its chunk), Temporal's SDK (loaded when the
    // service connects: core/temporal/sdk.ts) nor tus (loaded by the first upload request)
    const started = staticGraph(path.join(outdir, "sandbox/main.js"));
    expect(started.files.size).toBeGreaterThan(5);
    expect(started.packages.has("sqlite3")).toBe(true); // the walk sees the start's packages
    expect([...started.packages].filter((p) => p.startsWith("@aws-sdk/") || p.startsWith("@tus/") || p.startsWith("@temporalio/"))).toEqual([]);
    // the prebuilt workflow bundle maps stack traces without carrying the sources' text
    const bundled = fs.readFileSync(path.join(outdir, "sandbox/workflows.workflow-bundle.js"), "utf8");
    const map = JSON.parse(Buffer.from(bundled.slice(bundled.lastIndexOf("base64,") + 7), "base64").toString("utf8")) as { mappings: string; sources: string[]; sourcesContent?: unknown };
    expect(map.sourcesContent).toBeUndefined();
    expect(map.sources.some((s) => s.includes("workflows/"))).toBe(true);
    expect(map.mappings.length).toBeGreaterThan(1000);

    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), SVC_DATA_DIR: tempDir(), TEMPORAL_ADDRESS: inject("temporalAddress"), SVC_TASK_QUEUE: `build-${port}`, SVC_SCHEDULES: "false", LOG_LEVEL: "info" };
    delete env.SVC_WORKFLOW_BUNDLE; // the compiled start finds its own prebuilt workflow bundle
    // run from elsewhere: nothing may be read from the source tree
    const child = spawn(process.execPath, [path.join(outdir, "sandbox/main.js")], { cwd: tempDir(), env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const base = `http://127.0.0.1:${port}`;
    const auth = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" };
    try {
      const deadline = Date.now() + 30_000;
      let status = 0;
      while (status !== 200 && Date.now() < deadline && child.exitCode === null) {
        status = await fetch(`${base}/api/status`, { headers: auth }).then((r) => r.status, () => 0);
        if (status !== 200) await new Promise((r) => setTimeout(r, 50));
      }
      expect(status, out).toBe(200);
      expect(out).not.toContain("Bundling workflows");
      // a fresh data dir: main.js started the deck-check process before the service's modules loaded,
      // and the service adopted it (one process, not a second one of its own)
      expect(childPids(child.pid!, "deck-check-child"), out).toHaveLength(1);

      const run = await fetch(`${base}/api/actions/diagnostics.noop`, { method: "POST", headers: auth, body: JSON.stringify({ params: {} }) });
      expect(run.status).toBe(200);
      expect(((await run.json()) as { status: string }).status).toBe("succeeded");

      const started = await fetch(`${base}/api/workflows/invoice-review/runs`, { method: "POST", headers: auth, body: JSON.stringify({ input: { invoiceId: "inv_1001", waitMs: 0 } }) });
      expect(started.status).toBeLessThan(300);
      const { runId } = (await started.json()) as { runId: string };
      let runStatus = "";
      const runDeadline = Date.now() + 30_000;
      while (!["completed", "failed"].includes(runStatus) && Date.now() < runDeadline) {
        runStatus = ((await (await fetch(`${base}/api/workflow-runs/${runId}`, { headers: auth })).json()) as { status: string }).status;
        if (runStatus !== "completed") await new Promise((r) => setTimeout(r, 100));
      }
      expect(runStatus).toBe("completed");

      // the seed published a deck on this fresh data dir: checked in the compiled deck-check process
      const seeded = out.split("\n").filter((l) => l.includes("published the sandbox's artifacts")).map((l) => JSON.parse(l) as { deck: string })[0];
      expect(seeded?.deck, out).toMatch(/^art_/);
      const shot = await fetch(`${base}/api/artifacts/${seeded!.deck}/versions/1/checks/1`, { headers: auth });
      expect(shot.status, out).toBe(200);
      expect(shot.headers.get("content-type")).toBe("image/png");

      // the deck's page, rendered by the compiled (escaped) `html` templates: characters above U+00FF intact
      const signedIn = await fetch(`${base}/sign-in`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", origin: base }, body: "identity=dev&password=dev-sandbox-password&next=%2Fartifacts" });
      expect(signedIn.status, out).toBe(303);
      const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
      const deckPage = await (await fetch(`${base}/artifacts/${seeded!.deck}`, { headers: { cookie } })).text();
      expect(deckPage).toContain("‹ Previous");
      expect(deckPage).toContain("Keys: ← →");

      const script = await fetch(`${base}/assets/pages/sheet.js`);
      expect(script.status).toBe(200);
      expect(await script.text()).toBe(fs.readFileSync(path.join(outdir, "core/artifacts/render/browser/sheet.js"), "utf8"));
      expect((await fetch(`${base}/viewer`)).status).toBe(200);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  });
});
