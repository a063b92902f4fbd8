import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
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
 * @throws Error when the process exits early (with the end of its output, e.g. a port in use) or
 *   does not become ready in time (the process is killed)
 */
export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
  const address = `127.0.0.1:${opts.port}`;
  const uiPort = opts.uiPort ?? opts.port + 1000;
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
  const exitPromise = new Promise<void>((resolve) => child.once("exit", (code) => ((exited = code), resolve())));

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
