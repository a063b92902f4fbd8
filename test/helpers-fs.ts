import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** A fresh temporary directory (no vitest imports, so benchmarks can use it). */
export function tempDir(prefix = "svc-test-"): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** The directories {@link removedAtExit} was given. */
const toRemoveAtExit = new Set<string>();

/**
 * Answers `dir`, which is removed (with what it holds) when this process exits, normally or by an
 * uncaught error; not when a signal kills it.
 */
export function removedAtExit(dir: string): string {
  if (toRemoveAtExit.size === 0) process.once("exit", () => toRemoveAtExit.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
  toRemoveAtExit.add(dir);
  return dir;
}

/**
 * A fresh temporary directory removed when this process exits ({@link removedAtExit}): for the
 * benchmarks' data dirs, which hold gigabytes after a soak (the startup bench's were left behind, 683
 * of them, 63 GB, until the disk was full).
 */
export function benchDir(prefix: string): string {
  return removedAtExit(tempDir(prefix));
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

/**
 * The fields of /proc/<pid>/stat after the command name (Linux): [0] the state, [1] the parent pid,
 * [11] and [12] the user and system CPU time in clock ticks. Undefined when the process is gone (or
 * there is no /proc).
 */
function procStat(pid: number | undefined): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** The pids whose parent is `pid`, those whose command line contains `command` when given (from /proc). */
export function childPids(pid: number, command?: string): number[] {
  const children = fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e) && Number(procStat(Number(e))?.[1]) === pid).map(Number);
  if (command === undefined) return children;
  return children.filter((child) => {
    try {
      return fs.readFileSync(`/proc/${child}/cmdline`, "utf8").includes(command);
    } catch {
      return false; // gone meanwhile
    }
  });
}

/** A process's state letter from /proc (`R` running, `S` sleeping, `T` stopped, `Z` zombie, …), undefined when it is gone. */
export function processState(pid: number): string | undefined {
  return procStat(pid)?.[0];
}

/** Whether a process with this pid runs (a zombie, exited but not yet reaped by its parent, does not). */
export function processRuns(pid: number): boolean {
  const state = processState(pid);
  return state !== undefined && state !== "Z";
}

/** CPU time (user + system) process `pid` has used so far, in seconds (USER_HZ = 100); NaN when unknown. */
export function cpuSeconds(pid: number | undefined): number {
  const fields = procStat(pid);
  return fields ? (Number(fields[11]) + Number(fields[12])) / 100 : NaN;
}
