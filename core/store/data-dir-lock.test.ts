/** One service process per data directory (core/store/data-dir-lock.ts), against real files and processes. */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers-fs";
import { DataDirLock } from "./data-dir-lock";

describe("DataDirLock", () => {
  it("refuses a second holder in the same process until the first releases", async () => {
    const dir = tempDir();
    const first = await DataDirLock.acquire(dir);
    await expect(DataDirLock.acquire(dir)).rejects.toThrow(`Invalid configuration: SVC_DATA_DIR ${dir} is in use by another svc process (pid ${process.pid}): one service process per data directory`);
    await first.release();
    const again = await DataDirLock.acquire(dir);
    await again.release();
    expect(fs.existsSync(path.join(dir, "svc.lock.pid"))).toBe(false);
  });

  it("refuses a data directory holding a restore cut short (.restoring), naming SVC_DATA_DIR and what to do", async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, ".restoring"));
    await expect(DataDirLock.acquire(dir)).rejects.toThrow(`Invalid configuration: SVC_DATA_DIR ${dir} holds .restoring: a restore into it (npm run svc -- restore) was cut short, so it holds part of a backup; empty it and restore again`);
    expect(fs.existsSync(path.join(dir, "svc.lock"))).toBe(false);
  });

  it("refuses while another process holds it, and is free once that process is killed with SIGKILL (no stale lock)", async () => {
    const dir = tempDir();
    const script = path.join(tempDir(), "hold.mts");
    fs.writeFileSync(script, `import { DataDirLock } from ${JSON.stringify(path.resolve("core/store/data-dir-lock.ts"))}; await DataDirLock.acquire(${JSON.stringify(dir)}); process.stdout.write("HELD\\n"); setInterval(() => {}, 1000);`);
    const holder = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      holder.stdout!.on("data", (d) => String(d).includes("HELD") && resolve());
      holder.once("exit", (code) => reject(new Error(`the holder exited (${code})`)));
    });
    await expect(DataDirLock.acquire(dir)).rejects.toThrow(`is in use by another svc process (pid ${holder.pid})`);
    holder.kill("SIGKILL");
    await new Promise((r) => holder.once("exit", r));
    const lock = await DataDirLock.acquire(dir);
    await lock.release();
  });
});
