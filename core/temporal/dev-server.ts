import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { ConfigError } from "../config";
import { frontendServes } from "./frontend-probe";

/** Options of the embedded Temporal dev server. */
export interface DevServerOptions {
  cliPath: string;
  /** gRPC port; the UI listens on `uiPort` (default port + 1000) unless `ui` is false. */
  port: number;
  ui: boolean;
  uiPort?: number;
  dbFile: string;
  namespace: string;
  /** How long to wait for the frontend to answer (the SDK's own launcher waits only ~5 s). */
  readyTimeoutMs?: number;
  log?: (line: string) => void;
}

/** A running dev server; {@link DevServer.stop} ends it. */
export interface DevServer {
  address: string;
  uiUrl?: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` over a SQLite file (WAL, `synchronous=NORMAL` like svc's own
 * store), with workflow updates and eager activity dispatch enabled, and waits until its frontend
 * answers `GetSystemInfo` and knows the namespace ({@link frontendServes}: node's HTTP/2 client, not the
 * SDK's), retrying every 100 ms for up to `readyTimeoutMs` (60 s by default).
 *
 * Its pid is kept beside the database (`<dbFile>.pid`). A server a previous run of the same data
 * directory left running (its process was killed with SIGKILL, which gives it no chance to stop its
 * child) is stopped first; it is recognised by that pid and its command line naming `dbFile`. Any other
 * process answering on `port` (or the UI port) is refused: the readiness probe would take it for this
 * server (another data directory's Temporal, whose runs svc would then start and read). The server is
 * also stopped when this process exits (`process.exit` included).
 *
 * @throws {ConfigError} `SVC_TEMPORAL_PORT` when the port or the UI port (port + 1000) is in use by another process
 * @throws Error when the process exits early (with the end of its output) or does not become ready in
 *   time (the process is killed)
 */
export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
  const address = `127.0.0.1:${opts.port}`;
  const uiPort = opts.uiPort ?? opts.port + 1000;
  const pidFile = `${opts.dbFile}.pid`;
  await stopLeftover(pidFile, opts.dbFile, opts.log);
  for (const [port, what] of [[opts.port, "the port"], ...(opts.ui ? [[uiPort, "the Temporal UI's port (SVC_TEMPORAL_PORT + 1000)"]] : [])] as Array<[number, string]>) {
    if (await answersOn(port)) {
      throw new ConfigError("SVC_TEMPORAL_PORT", `${opts.port}: ${what} ${port} is in use by another process (another svc's Temporal dev server?); stop it, set SVC_TEMPORAL_PORT to a free port, or set TEMPORAL_ADDRESS to use a Temporal server you run`);
    }
  }
  const args = [
    "server", "start-dev",
    "--ip", "127.0.0.1",
    "--port", String(opts.port),
    "--db-filename", opts.dbFile,
    "--sqlite-pragma", "journal_mode=WAL",
    // the durability of svc's own store (core/store/db.ts): a commit survives the process dying (kill -9);
    // a power cut may lose the last commits, never the file. FULL (SQLite's default) syncs the log at
    // every commit, each one waiting on the server's single connection (issue 15)
    "--sqlite-pragma", "synchronous=NORMAL",
    "--log-level", "warn",
    "--dynamic-config-value", "frontend.enableUpdateWorkflowExecution=true",
    "--dynamic-config-value", "frontend.enableUpdateWorkflowExecutionAsyncAccepted=true",
    // eager activity dispatch (off by default before server 1.32): an activity the workflow task schedules
    // comes back in the task's completion response to this worker, without an activity poll round trip
    "--dynamic-config-value", "system.enableActivityEagerExecution=true",
    // eager workflow start: a start requested with `requestEagerStart` answers with the run's first
    // workflow task for this process's worker (same connection), without a matching round trip
    "--dynamic-config-value", "system.enableEagerWorkflowStart=true",
    ...(opts.namespace !== "default" ? ["--namespace", opts.namespace] : []),
    ...(opts.ui ? ["--ui-port", String(uiPort)] : ["--headless"]),
  ];
  const child = spawn(opts.cliPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  const output: string[] = [];
  const collect = (d: Buffer) => {
    for (const line of d.toString().split("\n")) if (line.trim()) output.push(line);
    if (output.length > 40) output.splice(0, output.length - 40);
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  let exited: number | null | undefined;
  // the server ends with this process, however it ends (a forced exit after a second signal included)
  const killOnExit = () => void child.kill("SIGTERM");
  process.once("exit", killOnExit);
  if (child.pid !== undefined) fs.writeFileSync(pidFile, String(child.pid));
  const exitPromise = new Promise<void>((resolve) =>
    child.once("exit", (code) => {
      exited = code;
      process.off("exit", killOnExit);
      try {
        if (fs.readFileSync(pidFile, "utf8") === String(child.pid)) fs.rmSync(pidFile, { force: true });
      } catch {
        // already gone
      }
      resolve();
    }),
  );

  const stop = async () => {
    if (exited !== undefined) return;
    child.kill("SIGTERM");
    const killed = await Promise.race([exitPromise.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))]);
    if (!killed) {
      child.kill("SIGKILL");
      await exitPromise;
    }
  };

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  let lastError = "";
  while (Date.now() < deadline) {
    if (exited !== undefined) throw new Error(`The Temporal dev server exited with code ${exited} before it was ready:\n${output.join("\n")}`);
    try {
      await frontendServes(address, opts.namespace, 1000);
      if (exited !== undefined) continue; // another process answered (taken since the check above): reported at the loop's top
      opts.log?.(`Temporal dev server ready on ${address}${opts.ui ? ` (UI http://localhost:${uiPort})` : ""}`);
      return { address, uiUrl: opts.ui ? `http://localhost:${uiPort}` : undefined, process: child, stop };
    } catch (err) {
      lastError = (err as Error).message;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await stop();
  throw new Error(`The Temporal dev server did not become ready within ${opts.readyTimeoutMs ?? 60_000} ms (${lastError}):\n${output.join("\n")}`);
}

/** Whether something accepts TCP connections on 127.0.0.1:`port` (within 1 s). */
function answersOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/**
 * Stops the dev server a previous run of this data directory left running: the pid in `pidFile`, when
 * that process is alive and its command line names `dbFile` (so a pid reused by another program is left
 * alone). SIGTERM, then SIGKILL after 10 s. Without `/proc` (not Linux) nothing is stopped.
 */
async function stopLeftover(pidFile: string, dbFile: string, log?: (line: string) => void): Promise<void> {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, "utf8"));
  } catch {
    return;
  }
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  let cmdline = "";
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    // no such process, or no /proc
  }
  if (!Number.isSafeInteger(pid) || pid <= 0 || !alive() || !cmdline.includes("start-dev") || !cmdline.includes(dbFile)) {
    fs.rmSync(pidFile, { force: true });
    return;
  }
  log?.(`stopping the Temporal dev server (pid ${pid}) that a previous run of this data directory left running`);
  process.kill(pid, "SIGTERM");
  for (const end = Date.now() + 10_000; alive() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50));
  if (alive()) process.kill(pid, "SIGKILL");
  for (const end = Date.now() + 5_000; alive() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50));
  fs.rmSync(pidFile, { force: true });
}
