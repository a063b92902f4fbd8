/** The embedded Temporal dev server (core/temporal/dev-server.ts): its port, and the server a killed run left behind. */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
import { freePort } from "./setup/global";
import { tempDir } from "./helpers-fs";
import { startDevServer } from "../core/temporal/dev-server";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("the embedded Temporal dev server", () => {
  it("refuses a port another process answers on (it would take that server for its own), naming SVC_TEMPORAL_PORT", async () => {
    const port = await freePort();
    const first = await startDevServer({ cliPath: inject("temporalCli"), port, ui: false, dbFile: path.join(tempDir(), "temporal.db"), namespace: "default", readyTimeoutMs: 90_000 });
    try {
      const other = path.join(tempDir(), "temporal.db");
      await expect(startDevServer({ cliPath: inject("temporalCli"), port, ui: false, dbFile: other, namespace: "default", readyTimeoutMs: 90_000 })).rejects.toThrow(
        `Invalid configuration: SVC_TEMPORAL_PORT ${port}: the port ${port} is in use by another process`,
      );
      expect(fs.existsSync(`${other}.pid`)).toBe(false);
    } finally {
      await first.stop();
    }
  });

  it("stops the server a killed run of the same data directory left running, then starts its own", async () => {
    const port = await freePort();
    const dbFile = path.join(tempDir(), "temporal.db");
    // a run of the service that is then killed with SIGKILL: its dev server lives on, orphaned
    const script = `import { startDevServer } from ${JSON.stringify(path.resolve("core/temporal/dev-server.ts"))}; const s = await startDevServer(${JSON.stringify({ cliPath: inject("temporalCli"), port, ui: false, dbFile, namespace: "default", readyTimeoutMs: 90_000 })}); process.stdout.write("READY " + s.process.pid + "\\n"); setInterval(() => {}, 1000);`;
    const scriptFile = path.join(tempDir(), "run.mts");
    fs.writeFileSync(scriptFile, script);
    // node itself (not the tsx wrapper, whose child would live on) is what SIGKILL ends
    const run = spawn(process.execPath, ["--import", "tsx", scriptFile], { stdio: ["ignore", "pipe", "inherit"] });
    const orphan = await new Promise<number>((resolve, reject) => {
      let out = "";
      run.stdout!.on("data", (d) => {
        out += d;
        const m = /READY (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      run.once("exit", (code) => reject(new Error(`the run exited (${code}) before its server was ready`)));
    });
    run.kill("SIGKILL");
    await new Promise((r) => run.once("exit", r));
    expect([alive(orphan), fs.readFileSync(`${dbFile}.pid`, "utf8")]).toEqual([true, String(orphan)]);

    const lines: string[] = [];
    const server = await startDevServer({ cliPath: inject("temporalCli"), port, ui: false, dbFile, namespace: "default", readyTimeoutMs: 90_000, log: (line) => lines.push(line) });
    try {
      expect(lines[0]).toBe(`stopping the Temporal dev server (pid ${orphan}) that a previous run of this data directory left running`);
      expect(alive(orphan)).toBe(false);
      expect(fs.readFileSync(`${dbFile}.pid`, "utf8")).toBe(String(server.process.pid));
    } finally {
      await server.stop();
    }
    expect(fs.existsSync(`${dbFile}.pid`)).toBe(false);
  });
});
