/**
 * A SIGTERM that reaches `npm start` while it is still starting (the embedded Temporal dev server is
 * already running, the service's modules are loading) stops the dev server too: nothing is left
 * behind holding its port. On a fresh data dir the deck-check process started beside it goes as well.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { freePort } from "./setup/global";
import { tempDir } from "./helpers";

const ROOT = path.resolve(import.meta.dirname, "..");

/** Pids of `pid`'s child processes (Linux /proc). */
const childrenOf = (pid: number): number[] => {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
};
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, "utf8")); // a zombie is gone
  } catch {
    return false;
  }
};

describe("the sandbox process (npm start) signalled while starting", () => {
  it("stops the Temporal dev server and the deck-check process it started and exits 143 on SIGTERM before the service is up", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(await freePort()), SVC_DATA_DIR: tempDir(), SVC_TEMPORAL_PORT: String(await freePort()), SVC_TEMPORAL_UI: "false", LOG_LEVEL: "info" };
    delete env.TEMPORAL_ADDRESS;
    delete env.SVC_WORKFLOW_BUNDLE;
    const child = spawn(process.execPath, ["--import", "tsx", "sandbox/main.ts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    const childWith = (command: string) => childrenOf(child.pid!).find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(command));
    let devServer: number | undefined;
    let deckCheck: number | undefined;
    const deadline = Date.now() + 30_000;
    while ((devServer === undefined || deckCheck === undefined) && Date.now() < deadline) {
      devServer ??= childWith("start-dev");
      // a fresh data dir: main.ts starts the deck-check process for the seed's deck before the modules load
      deckCheck ??= childWith("deck-check-child");
      if (devServer === undefined || deckCheck === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    try {
      expect(devServer, out).toBeDefined();
      expect(deckCheck, out).toBeDefined();
      child.kill("SIGTERM");
      expect(await exited).toBe(143);
      // the signal came while starting (the service never said it was up), and the dev server went with it
      expect(out).not.toContain("svc sandbox is up");
      const gone = Date.now() + 10_000;
      while (alive(devServer!) && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
      expect(alive(devServer!)).toBe(false);
      while (alive(deckCheck!) && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
      expect(alive(deckCheck!)).toBe(false);
    } finally {
      child.kill("SIGKILL");
      // left behind: the test failed
      for (const pid of [devServer, deckCheck]) if (pid !== undefined && alive(pid)) process.kill(pid, "SIGKILL");
    }
  });
});
