/**
 * Starts the sandbox: `npm start`. Listens on PORT (3002), keeps its data in sandbox/.data, starts the
 * Temporal dev server (fetching or building the Temporal CLI on first start) unless TEMPORAL_ADDRESS is set.
 *
 * The dev server is started first, from the config alone, and the service's modules load meanwhile
 * (both take over a second); `createApp` adopts the server (issue 15: ready in seconds). On a fresh data
 * dir (no `svc.db` yet) the seed publishes the sandbox's deck, and its deck check in Chromium is what
 * start-up waits for: the deck-check process and its browser are started here too, and handed over.
 */
import fs from "node:fs";
import os from "node:os";
import { deckCheckProcessFor, type DeckCheckProcess } from "../core/artifacts/deck-check-process";
import { ConfigError, databaseFile, loadConfig } from "../core/config";
import { DataDirLock } from "../core/store/data-dir-lock";
import { createLogger, type Logger } from "../core/logger";
import { applyHeapGrowingPercent, mallocArenaAdvice } from "../core/heap";
import { logUnhandledRejections, shutdownSignals } from "../core/lifecycle";
import { TemporalCliError } from "../core/temporal/cli";
import { startEmbeddedTemporal, type EmbeddedTemporal } from "../core/temporal/embedded";
import { sandboxBanner } from "./banner";
import { SANDBOX_DATA_DIR, SANDBOX_DEV_TOKEN } from "./defaults";

const started = Date.now();
let temporal: Promise<EmbeddedTemporal> | undefined;
let decks: DeckCheckProcess | undefined;
let dataDirLock: DataDirLock | undefined;
/** The process's logger, once the config has given its level. */
let logger: Logger | undefined;
/** Whether createApp owns the dev server (it stops it when it fails). */
let handedOver = false;
/**
 * SIGINT or SIGTERM before the service handles signals itself (modules loading, createApp running):
 * stop the dev server started here (it would outlive this process, holding its port), then exit with
 * 128 + the signal's number, as the default handler would. A second signal exits at once (a first
 * start may still be fetching the Temporal CLI), unless it is the first one delivered again (within
 * `SIGNAL_REPEAT_MS`: the process group and npm start's wrappers each pass on one Ctrl-C).
 */
const classifySignal = shutdownSignals();
const signalledWhileStarting = (signal: NodeJS.Signals) => {
  const code = 128 + (os.constants.signals[signal] ?? 15);
  const kind = classifySignal();
  if (kind === "repeat") return;
  if (kind === "again") process.exit(code);
  process.stderr.write(`\n${signal} while starting: stopping the Temporal dev server (again to exit now)\n`);
  void Promise.all([temporal?.then((e) => e.server.stop(), () => undefined), decks?.close()]).finally(() => process.exit(code));
};
process.on("SIGINT", signalledWhileStarting);
process.on("SIGTERM", signalledWhileStarting);
try {
  // download URLs point at the public origin (spec 4.3); the sandbox defaults it to its own address
  const env = { ...process.env, SVC_API_PUBLIC_ORIGIN: process.env.SVC_API_PUBLIC_ORIGIN || `http://localhost:${process.env.PORT || 3002}` };
  const defaults = { dataDir: SANDBOX_DATA_DIR, devToken: SANDBOX_DEV_TOKEN };
  const config = loadConfig(env, defaults);
  const log = (logger = createLogger(config.logLevel));
  applyHeapGrowingPercent(config.heapGrowingPercent);
  const arenaAdvice = mallocArenaAdvice();
  if (arenaAdvice) log.warn(arenaAdvice);
  // one service process per data directory, taken before its Temporal dev server starts (which stops a
  // dev server this data directory's previous run left behind: with the lock held, that is an orphan)
  dataDirLock = await DataDirLock.acquire(config.dataDir);
  if (!config.temporal.address) {
    temporal = startEmbeddedTemporal(config, (line) => log.info(line));
    temporal.catch(() => undefined); // observed by createApp, which reports it
  }
  if (config.deckChecks && !fs.existsSync(databaseFile(config.dataDir))) {
    decks = deckCheckProcessFor(config, log);
    void decks.warm(); // never throws: a browser that cannot start makes the seed's check answer unchecked
  }
  const [{ createApp, installSignalHandlers }, { WORKFLOW_ENGINE }, { builtinPlugins }, { sandboxProject }] = await Promise.all([
    import("../core"),
    import("../workflows/modules"),
    import("../plugins"),
    import("./project"),
  ]);
  handedOver = true;
  const app = await createApp({ project: sandboxProject, plugins: builtinPlugins, workflowEngine: WORKFLOW_ENGINE, env, defaults, logger: log, temporalDevServer: temporal, deckCheckProcess: decks, dataDirLock });
  process.off("SIGINT", signalledWhileStarting);
  process.off("SIGTERM", signalledWhileStarting);
  installSignalHandlers(app);
  logUnhandledRejections(log);
  process.stdout.write(sandboxBanner(app, { seconds: (Date.now() - started) / 1000, devIdentity: sandboxProject.devIdentity ?? "dev" }));
} catch (err) {
  if (!handedOver) await Promise.all([temporal?.then((e) => e.server.stop(), () => undefined), decks?.close(), dataDirLock?.release()]);
  // a setting the service cannot start with (createApp logs those it meets itself)
  if (!handedOver && err instanceof ConfigError) logger?.error({ variable: err.variable }, err.message);
  if (err instanceof ConfigError || err instanceof TemporalCliError) {
    process.stderr.write(`\n${err.message}\n`);
    process.exit(2);
  }
  throw err;
}
