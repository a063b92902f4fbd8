import path from "node:path";
import type { Config } from "../config";
import { ensureTemporalCli } from "./cli";
import { startDevServer, type DevServer } from "./dev-server";

/**
 * Starts the embedded Temporal dev server of `config` (`TEMPORAL_ADDRESS` unset): finds, fetches or
 * builds the CLI (`SVC_TEMPORAL_CLI`, the svc cache), then runs `temporal server start-dev` on
 * `SVC_TEMPORAL_PORT` with its SQLite file in the data dir. It needs no more than the config, so an
 * entry point may call it before loading the rest of the service and hand the promise to
 * `TemporalHost.connect` (core/temporal/host.ts); whoever holds the promise stops the server if it never
 * gets there. This module loads no more than Node's own modules and the CLI helpers (the Temporal client
 * is imported while the server starts), so an entry point can import it first.
 *
 * @param log progress lines (the CLI fetch or build, the server's start)
 * @throws {TemporalCliError} when the CLI cannot be found or built; Error when the server does not start
 */
export async function startEmbeddedTemporal(config: Config, log: (line: string) => void): Promise<EmbeddedTemporal> {
  const t = config.temporal;
  const started = performance.now();
  const cliPath = await ensureTemporalCli(t.cliPath, log);
  const found = performance.now();
  log(`starting the Temporal dev server on port ${t.devServerPort}`);
  const server = await startDevServer({ cliPath, port: t.devServerPort, ui: t.ui, dbFile: path.join(config.dataDir, "temporal.db"), namespace: t.namespace, log });
  return { server, cliMs: Math.round(found - started), devServerMs: Math.round(performance.now() - found) };
}

/** A started embedded dev server, with how long (ms) finding the CLI and starting the server took. */
export interface EmbeddedTemporal {
  server: DevServer;
  cliMs: number;
  devServerMs: number;
}
