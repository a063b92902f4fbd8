import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** A fresh temporary directory (no vitest imports, so benchmarks can use it). */
export function tempDir(prefix = "svc-test-"): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Reads a whole stream into one buffer. */
export async function readAll(stream: AsyncIterable<Uint8Array | string>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

/** The error `p` rejects with. @throws Error when it resolves */
export async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

/** The parent pid of process `pid` from /proc (undefined when it is gone). */
function parentOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** The pids whose parent is `pid` (from /proc). */
export function childPids(pid: number): number[] {
  return fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e) && parentOf(Number(e)) === pid).map(Number);
}

/** Whether a process with this pid runs (a zombie, exited but not yet reaped by its parent, does not). */
export function processRuns(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat[stat.lastIndexOf(")") + 2] !== "Z";
  } catch {
    return false;
  }
}
