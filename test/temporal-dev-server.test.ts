/** The embedded Temporal dev server (core/temporal/dev-server.ts): its port, and the server a killed run left behind. */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
import { freePort } from "./setup/global";
import { tempDir } from "./helpers-fs";
import pino from "pino";
import { msToTs, tsToMs } from "@temporalio/common/lib/time";
import { startDevServer } from "../core/temporal/dev-server";
import { TemporalHost, formatRetention } from "../core/temporal/host";
import { loadConfig } from "../core/config";

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

describe("the namespace's retention (how long Temporal keeps a finished run)", () => {
  it("is set to SVC_TEMPORAL_RETENTION_MS on the embedded dev server at every start (it creates namespaces keeping runs 1 day), and only read on a cluster", { timeout: 120_000 }, async () => {
    const dataDir = tempDir();
    const server = await startDevServer({ cliPath: inject("temporalCli"), port: await freePort(), ui: false, dbFile: path.join(dataDir, "temporal.db"), namespace: "default", readyTimeoutMs: 90_000 });
    const lines: Array<Record<string, any>> = [];
    const log = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const retentionOf = async (host: TemporalHost) => tsToMs((await host.client.workflowService.describeNamespace({ namespace: "default" })).config!.workflowExecutionRetentionTtl!);
    // the embedded server: set, from its default of 1 day
    const embedded = await TemporalHost.connect({ config: loadConfig({ SVC_DATA_DIR: dataDir, SVC_TEMPORAL_RETENTION_MS: String(36 * 3_600_000) }), log, devServer: Promise.resolve({ server, cliMs: 0, devServerMs: 0 }) });
    let external: TemporalHost | undefined;
    try {
      expect(await retentionOf(embedded)).toBe(36 * 3_600_000);
      expect(lines.find((l) => l.msg.startsWith("the embedded Temporal keeps"))).toMatchObject({ msg: "the embedded Temporal keeps a finished run for 36 h (SVC_TEMPORAL_RETENTION_MS)", retentionMs: 36 * 3_600_000, was: 86_400_000 });
      expect(await embedded.health()).toMatchObject({ status: "ok", embedded: true, retentionMs: 36 * 3_600_000 });
      expect(embedded.forgottenRun("run_1")).toBe('Run "run_1" is not known to Temporal (namespace default): a finished run is kept for 36 h (SVC_TEMPORAL_RETENTION_MS), and one that ended longer ago is no longer readable');
      // the same server as a cluster (TEMPORAL_ADDRESS): its retention is its own, read and said, never changed
      lines.length = 0;
      external = await TemporalHost.connect({ config: loadConfig({ SVC_DATA_DIR: dataDir, TEMPORAL_ADDRESS: server.address, SVC_TEMPORAL_RETENTION_MS: String(7 * 86_400_000) }), log });
      expect(await retentionOf(external)).toBe(36 * 3_600_000);
      expect(external.retentionMs).toBe(36 * 3_600_000);
      expect(lines.map((l) => l.msg)).toContain("the Temporal namespace keeps a finished run for 36 h (its retention, set on the cluster)");
      expect(external.forgottenRun("run_1")).toContain("kept for 36 h (the namespace's retention on the cluster)");
      // an operator changes the cluster's retention while svc runs: each retention pass reads it again
      lines.length = 0;
      await external.client.workflowService.updateNamespace({ namespace: "default", config: { workflowExecutionRetentionTtl: msToTs(2 * 86_400_000) } });
      expect(await external.refreshRetention()).toBe(2 * 86_400_000);
      expect(external.retentionMs).toBe(2 * 86_400_000);
      expect(lines.find((l) => l.msg.endsWith("now (its retention, set on the cluster)"))).toMatchObject({ msg: "the Temporal namespace keeps a finished run for 2 days now (its retention, set on the cluster)", retentionMs: 2 * 86_400_000, was: 36 * 3_600_000 });
      // the embedded server's is svc's own setting: not read again
      expect(await embedded.refreshRetention()).toBe(36 * 3_600_000);
    } finally {
      await external?.shutdown();
      await embedded.shutdown();
    }
  });

  it("SVC_TEMPORAL_RETENTION_MS: 30 days by default, at least 1 h, whole seconds; SVC_RUN_RETENTION_MS at least the events' retention", () => {
    const env = { SVC_DATA_DIR: tempDir() };
    expect(loadConfig(env).temporal.retentionMs).toBe(30 * 86_400_000);
    expect(() => loadConfig({ ...env, SVC_TEMPORAL_RETENTION_MS: "60000" })).toThrow("SVC_TEMPORAL_RETENTION_MS must be at least 3600000");
    expect(() => loadConfig({ ...env, SVC_TEMPORAL_RETENTION_MS: "3600500" })).toThrow("SVC_TEMPORAL_RETENTION_MS must be whole seconds");
    // the run retention is never shorter than the events' keys live (a resend's events would be dropped)
    expect(loadConfig({ ...env, SVC_RUN_RETENTION_MS: String(3 * 86_400_000) }).runRetentionMs).toBe(3 * 86_400_000);
    expect(() => loadConfig({ ...env, SVC_RUN_RETENTION_MS: "3600000" })).toThrow("SVC_RUN_RETENTION_MS must be at least SVC_EVENT_RETENTION_MS (172800000)");
    expect(loadConfig({ ...env, SVC_RUN_RETENTION_MS: "3600000", SVC_EVENT_RETENTION_MS: "3600000" }).runRetentionMs).toBe(3_600_000);
    expect(formatRetention(86_400_000)).toBe("1 day");
    expect(formatRetention(5_400_000)).toBe("5400 s");
  });
});
