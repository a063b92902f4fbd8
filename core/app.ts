import { container as rootContainer, type DependencyContainer } from "./di";
import { H3, serve, type H3Event } from "h3";
import { plugin as webSocketPlugin } from "crossws/server/node";
import { CONFIG, ConfigError, dataDirError, databaseFile, listenError, loadConfig, type Config } from "./config";
import { LOGGER, createLogger, type Logger } from "./logger";
import { Database } from "./store/db";
import { EVENT_STREAM, type EventStream } from "./events/stream";
import { SqliteEventStream } from "./events/sqlite-stream";
import { Outbox } from "./events/outbox";
import { EventLog, pruneEventKeys } from "./events/log";
import { OntologyStore } from "./ontology/store";
import { ProjectRegistry } from "./project/registry";
import { ActionRunner } from "./runtime/actions";
import { WorkflowRuns } from "./runtime/workflows";
import { WebhookDeliveries } from "./runtime/webhooks";
import { ConnectorRuns } from "./runtime/connector-runs";
import { RunStarter } from "./runtime/run-starter";
import { HealthReport } from "./runtime/health";
import { ScheduleManager } from "./runtime/schedules";
import { HandlerRunner } from "./runtime/handler";
import { createActivities, createSinks } from "./runtime/activities";
import { createAgentActivities } from "./runtime/agent-activities";
import { AgentRuns } from "./runtime/agents";
import { AgentTools } from "./runtime/agent-tools";
import { RuleEngine } from "./runtime/rules";
import { DatasetStore } from "./datasets/store";
import { DatasetProjector } from "./datasets/projector";
import { EventScheduleConsumers } from "./runtime/event-schedules";
import { modelFromEnv } from "./agents/providers";
import type { Model } from "./agents/model";
import { TokenService } from "./auth/tokens";
import { SessionService } from "./auth/sessions";
import { authenticateRequest, authenticateUpgrade } from "./auth/authenticate";
import { Metrics, UNMATCHED_ROUTE } from "./metrics";
import { RunRetention, TemporalRetentionHistory } from "./store/run-retention";
import { RouteRegistry } from "./http/routes";
import { Cors } from "./http/cors";
import { Lifecycle, shutdownSignals } from "./lifecycle";
import { LogCapture } from "./logs/capture";
import { TemporalHost, type EmbeddedTemporal } from "./temporal/host";
import { loadWorkflowBundle } from "./temporal/bundle";
import { FileStore } from "./files/file-store";
import { blobStoreFromEnv } from "./files/config";
import { ArtifactStore } from "./artifacts/store";
import { SheetData } from "./artifacts/sheet-data";
import { EmbedRenderer } from "./artifacts/render/embed";
import { DeckCheckProcess, deckCheckProcessFor } from "./artifacts/deck-check-process";
import { chromiumPathWarning } from "./artifacts/chromium";
import { DataDirLock } from "./store/data-dir-lock";
import { startOnRestoredBackup } from "./store/backup";
import { asPublicOrigin } from "./files/download-urls";
import { AgentOutput } from "./agents/output";
import { h3ErrorResponse } from "./http/response";
import type { ProjectDefinition } from "./sdk/project";
import type { Plugin, PluginDeps, ResolvedDeps } from "./plugin-api";

/** Where the workflow-isolate code lives (see `workflows/modules.ts`): the app bundles it for the worker. */
export interface WorkflowEngine {
  /** Absolute path of the run engine module. */
  module: string;
  /** Absolute path of a module exporting `workflows = {}`, for projects without a workflows module. */
  emptyProjectWorkflows: string;
}

/** How long the close waits for the store's writer before it interrupts the statement it runs (ms). */
const DB_CLOSE_INTERRUPT_MS = 5_000;

/** How long after ready the deck-check process and its browser are started (milliseconds; see createApp). */
export const DECK_WARM_DELAY_MS = 2000;

/** Options of {@link createApp}. */
export interface AppOptions {
  project: ProjectDefinition;
  plugins: readonly Plugin<any>[];
  /** The workflow engine to bundle with the project's workflows. */
  workflowEngine: WorkflowEngine;
  /** Environment to read the config from (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Project defaults for the config (data dir, dev token). */
  defaults?: { dataDir?: string; devToken?: string };
  logger?: Logger;
  /**
   * The embedded Temporal dev server, already starting ({@link startEmbeddedTemporal} with this app's
   * config): an entry point starts it before it loads the rest of the service. The app owns it from
   * the call on (stops it at close, or when the start fails). Ignored when `TEMPORAL_ADDRESS` is set.
   */
  temporalDevServer?: Promise<EmbeddedTemporal>;
  /**
   * The deck-check process (spec 4.3), made with this app's config ({@link deckCheckProcessFor}) and
   * already warming: an entry point that finds a fresh data dir (a seed to run, whose deck check is what
   * start-up waits for) starts it before it loads the rest of the service, so Chromium launches while
   * the modules load. The app owns it from the call on (closes it at close, or when the start fails).
   */
  deckCheckProcess?: DeckCheckProcess;
  /**
   * The data directory's lock ({@link DataDirLock}), already taken by an entry point that starts the
   * Temporal dev server first. The app takes it itself otherwise, and releases it last at close.
   */
  dataDirLock?: DataDirLock;
}

/**
 * The development token (`SVC_DEV_TOKEN`, else the project's default, of the project's `devIdentity`) at a
 * start: `active` (it works), `revoked` (revoked earlier: a revocation sticks across starts), `disabled`
 * (`SVC_DEV_TOKEN=none`: the one stored earlier, if any, is revoked now), `none` (no value, or the project
 * has no development identity).
 */
export type DevTokenStatus = "active" | "revoked" | "disabled" | "none";

/** The name the development token is stored under (`npm run svc -- tokens list` shows it). */
const DEV_TOKEN_NAME = "development";

/** A running service. */
export interface App {
  url: string;
  config: Config;
  container: DependencyContainer;
  temporal: TemporalHost;
  log: Logger;
  /** The development token at this start (see {@link DevTokenStatus}). */
  devTokenStatus: DevTokenStatus;
  /** Dispatches a request in-process through the same h3 app the server runs (no socket). */
  fetch(request: Request): Promise<Response>;
  /** Graceful shutdown (idempotent): see {@link createApp}. */
  close(): Promise<void>;
}

/**
 * Assembles and starts the service: config (valibot, from the environment), SQLite store with
 * migrations, event log (outbox + stream, recovery pass), Temporal (embedded dev server unless
 * `TEMPORAL_ADDRESS`), the runtime services, the worker, plugins (routes), then the HTTP server.
 * Each part registers its own lifecycle hooks as it is created.
 *
 * `close()` shuts down gracefully: `preClose` hooks stop new action and workflow runs (503
 * `shutting_down`) while in-flight requests finish (up to `SVC_SHUTDOWN_TIMEOUT_MS`, then handlers'
 * abort signal fires); the server stops listening; timers stop; `close` hooks run in reverse order of
 * registration (plugins, runs, worker and dev server, outbox drain, log flush, stream, database).
 *
 * @throws {ConfigError} on a bad environment variable, and naming the variable when what it names cannot
 *   be used: a data dir that is a file or not writable, a port in use, a host that does not resolve, no
 *   Temporal server at `TEMPORAL_ADDRESS`, no NATS server at `NATS_URL` (logged once); Error when the
 *   store, Temporal or the port fail otherwise (whatever was opened is closed again)
 */
export async function createApp(opts: AppOptions): Promise<App> {
  const config = loadConfig(opts.env ?? process.env, opts.defaults);
  const log = opts.logger ?? createLogger(config.logLevel);
  const project = new ProjectRegistry(opts.project);
  const container = rootContainer.createChildContainer();
  const lifecycle = new Lifecycle();
  const logError = (what: string) => (err: unknown) => log.error({ err }, what);
  const phase = startupPhases();

  /** Whether the Temporal connection (and so a pre-started dev server) is in the close hooks yet. */
  let adopted = false;
  /** Settles when the seed is done, or start-up failed: Temporal's SDK loads then at the latest (see below). */
  let seedDone!: () => void;
  const seedWaiting = new Promise<void>((resolve) => (seedDone = resolve));
  /** The worker's start, under way while the seed and the stream followers start (see below). */
  let startingWorker: Promise<TemporalHost> | undefined;
  try {
    // one service process per data directory: released last (close hooks run in reverse)
    const lock = opts.dataDirLock ?? (await DataDirLock.acquire(config.dataDir));
    lifecycle.hook("close", () => lock.release());
    // one process and one browser for every deck check (spec 4.3), stopped when idle; nothing starts
    // while checks are off. A seed to run may publish decks, and on a fresh data dir its deck check is
    // what start-up waits for: the process is started now (unless the entry point did, earlier), its
    // browser's launch (about a second, on the other core) beside the rest of start-up
    const decks = opts.deckCheckProcess ?? deckCheckProcessFor(config, log);
    // a Chromium that cannot be launched is otherwise found only by a publish, which answers unchecked
    const chromiumWarning = config.deckChecks ? chromiumPathWarning(config.chromiumPath, Boolean((opts.env ?? process.env).SVC_CHROMIUM_PATH)) : undefined;
    if (chromiumWarning) log.warn({ chromiumPath: config.chromiumPath }, chromiumWarning);
    lifecycle.hook("close", () => decks.close());
    const db = await Database.open(databaseFile(config.dataDir)).catch((err: unknown) => {
      throw dataDirError(err, config.dataDir);
    });
    phase("store (open, migrations)");
    // the first start on a restored backup (its backup.json is here): a new stream epoch, so no cursor of the service it was taken from, nor of another restore of it, is answered
    const restored = await startOnRestoredBackup(config.dataDir, db);
    if (restored) log.warn({ takenAt: restored.takenAt, from: restored.from }, "this data directory was restored from a backup: the event stream has a new epoch, so clients' cursors of before are refused (they read again from current state); backup.json is now restored-from-backup.json, so this happens once");
    // a statement still running 5 s into the close (the handlers' own shutdown wait is over by then) is
    // interrupted: the process exits instead of waiting on it
    lifecycle.hook("close", () => db.close({ interruptAfterMs: DB_CLOSE_INTERRUPT_MS, onInterrupt: () => log.warn({ writerWaitMs: db.writerWaitMs() }, `shutdown: the store's writer is still busy after ${DB_CLOSE_INTERRUPT_MS} ms; interrupting its statement (its transaction is rolled back)`) }));
    const seeding = opts.project.seed !== undefined && !(await seeded(db));
    if (seeding && config.deckChecks) void decks.warm();
    const slug = opts.project.id.replace(/[^A-Za-z0-9_-]/g, "_");
    const stream: EventStream =
      config.eventStream === "nats"
        ? // loaded only when configured (the NATS client is not part of every start)
          await (await import("./events/nats-stream")).NatsEventStream.open({ servers: config.natsUrl, stream: config.natsStream ?? `SVC_${slug}`, subjectPrefix: `svc.${slug}.events`, retentionMs: config.eventRetentionMs })
        : await SqliteEventStream.open(db);
    lifecycle.hook("close", () => stream.close?.());
    const logs = await LogCapture.open(db);
    lifecycle.hook("close", () => logs.flush());
    const outbox = new Outbox(db, stream, log);
    lifecycle.hook("close", () => outbox.drain());
    lifecycle.every(config.outboxRecoveryMs, () => outbox.drain());
    lifecycle.every(Math.min(config.eventRetentionMs / 10, 3_600_000), () =>
      // the events' idempotency keys are svc's, whatever the stream: they go by their own pass (a broker's events
      // expire in the broker); each settles before the pass ends (shutdown waits for the pass, then closes the store)
      Promise.allSettled([stream.prune(config.eventRetentionMs), logs.prune(config.eventRetentionMs), pruneEventKeys(db, Date.now() - config.eventRetentionMs, () => lifecycle.shuttingDown)]).then((settled) => {
        for (const [i, s] of settled.entries()) if (s.status === "rejected") log.warn({ err: s.reason, what: ["events", "logs", "event keys"][i] }, "retention prune failed");
      }),
    );
    const blobs = await blobStoreFromEnv(opts.env ?? process.env, config.dataDir);
    lifecycle.hook("close", () => blobs.close());
    const files = new FileStore(db, blobs, { onReadError: (err, file) => log.error({ err, fileId: file.id, sha256: file.sha256, blobStore: blobs.kind }, "reading a file's bytes failed") });
    lifecycle.every(Math.min(config.fileRetentionMs / 4, 3_600_000), () =>
      files.collectUnreferenced(config.fileRetentionMs).then(
        (n) => n && log.info({ removed: n }, "removed files never referenced"),
        (err) => log.warn({ err }, "removing unreferenced files failed"),
      ),
    );
    phase("event stream, logs, files");
    // Temporal (the CLI found or fetched, the dev server started, ~1.5 s) comes up while the recovery drain,
    // the seed, projections, rules and event schedules start, none of which uses it; awaited before the
    // first service that does. The close hook keeps its place in the order (and waits for a pending connect).
    adopted = true;
    // On a fresh data dir whose seed publishes a deck, start-up waits for that deck's check in Chromium
    // (in another process), and this thread has nothing to do meanwhile. Loading Temporal's SDK (about
    // a second of this thread's time) waits for that moment, or for the seed's end, so that the seed
    // reaches its check that much sooner and the check hides the load (issue 15: ready in < 3 s).
    const sdkMayLoad = seeding && config.deckChecks ? Promise.race([decks.whenChecking(), seedWaiting]) : undefined;
    const connecting = TemporalHost.connect({ config, log, devServer: opts.temporalDevServer, loadAfter: sdkMayLoad });
    // the run retention deletes workflow, sync and pipeline runs' rows once Temporal forgot them: its
    // namespace's retention, known once connected (the rejection is observed where `connecting` is awaited:
    // none unhandled meanwhile), read again by each pass
    let connected: TemporalHost | undefined;
    connecting.then((t) => (connected = t), () => undefined);
    lifecycle.hook("close", async () => (await connecting.catch(() => undefined))?.shutdown());
    // the workflow bundle (prebuilt by `npm run build`, else webpack, seconds) is made meanwhile too
    const bundling = loadWorkflowBundle({ engine: opts.workflowEngine.module, projectWorkflows: opts.project.workflowsModule ?? opts.workflowEngine.emptyProjectWorkflows }, (line) => log.info(line));
    bundling.catch(() => undefined);

    container.register(CONFIG, { useValue: config });
    container.register(LOGGER, { useValue: log });
    container.register(Lifecycle, { useValue: lifecycle });
    container.register(Metrics, { useValue: new Metrics() });
    const temporalRetention = new TemporalRetentionHistory(db);
    const runRetention = new RunRetention(db, config.runRetentionMs, container.resolve(Metrics), async (nowMs) => temporalRetention.effective(await connected?.refreshRetention(), nowMs));
    container.register(RunRetention, { useValue: runRetention });
    const retentionPass = () =>
      runRetention.prune().then(
        (deleted) => Object.values(deleted).some((n) => n > 0) && log.info({ deleted }, "retention: deleted ended runs (action, webhook, workflow, sync, pipeline) and spent download URLs (SVC_RUN_RETENTION_MS), expired sessions"),
        (err) => log.warn({ err }, "run retention failed"),
      );
    // at start (a service restarted more often than the period still prunes), then periodically
    lifecycle.hook("ready", () => void lifecycle.after(0, retentionPass));
    lifecycle.every(Math.min(config.runRetentionMs / 10, 3_600_000), retentionPass);
    lifecycle.hook("preClose", () => runRetention.stop());
    container.register(ProjectRegistry, { useValue: project });
    container.register(Database, { useValue: db });
    container.register(EVENT_STREAM, { useValue: stream });
    container.register(Outbox, { useValue: outbox });
    container.register(LogCapture, { useValue: logs });
    container.register(FileStore, { useValue: files });
    // started a while after ready, not at it: its start (playwright-core, Chromium: about a second of
    // CPU) would compete with the first requests on a small machine (issue 15); the first publish still
    // finds the browser up
    if (config.deckChecks) lifecycle.hook("ready", () => lifecycle.after(DECK_WARM_DELAY_MS, () => decks.warm()));
    container.register(DeckCheckProcess, { useValue: decks });
    container.register(SessionService, { useValue: new SessionService(db, project, config.sessionTtlMs, config.publicOrigin, log) });
    for (const service of [EventLog, OntologyStore, HandlerRunner, TokenService, ActionRunner, WorkflowRuns, WebhookDeliveries, ConnectorRuns, ScheduleManager, ArtifactStore, SheetData, EmbedRenderer, AgentOutput, AgentTools, AgentRuns, RuleEngine, EventScheduleConsumers, RunStarter, HealthReport]) {
      container.registerSingleton(service as never, service as never);
    }
    for (const service of [DatasetStore, DatasetProjector]) container.registerSingleton(service as never, service as never);

    // The worker starts as soon as Temporal is connected and the workflow bundle is ready, while the
    // recovery drain, the seed, projections, rules and event schedules run (none of them needs it; on a
    // fresh data dir the seed's deck check in Chromium takes seconds); awaited before the schedules sync.
    const handlers = container.resolve(HandlerRunner);
    startingWorker = (async () => {
      const temporal = await connecting;
      container.register(TemporalHost, { useValue: temporal });
      const actions = container.resolve(ActionRunner);
      container.resolve(WorkflowRuns);
      const workflowBundle = await bundling;
      const began = performance.now();
      await temporal.startWorker({
        workflowBundle,
        activities: {
          ...createActivities({ db, events: container.resolve(EventLog), ontology: container.resolve(OntologyStore), actions, project, handlers }),
          ...createAgentActivities({ runs: container.resolve(AgentRuns), output: container.resolve(AgentOutput), tools: container.resolve(AgentTools), project, model: models(config, opts.env ?? process.env) }),
        },
        sinks: createSinks(logs, log),
      });
      log.debug({ workerMs: Math.round(performance.now() - began) }, "Temporal worker started");
      return temporal;
    })();
    startingWorker.catch(() => undefined); // observed where it is awaited

    // The development token and passwords are stored beside the recovery drain and the seed (each
    // password's scrypt hash, ~0.1 s, runs in libuv's thread pool while a fresh seed waits on its deck
    // check); start-up goes on once both are done, and fails with the first error.
    const tokens = container.resolve(TokenService);
    const sessions = container.resolve(SessionService);
    const devToken: Promise<DevTokenStatus> = config.devTokenDisabled
      ? tokens.revokeNamed(DEV_TOKEN_NAME).then((revoked) => {
          if (revoked > 0) log.info({ revoked }, "SVC_DEV_TOKEN=none: revoked the development token stored by an earlier start");
          return "disabled";
        })
      : config.devToken && opts.project.devIdentity
        ? tokens.ensure(config.devToken, opts.project.devIdentity, DEV_TOKEN_NAME)
        : Promise.resolve("none");
    const credentials = Promise.all([devToken, ...Object.entries(opts.project.identities).map(([id, identity]) => identity.devPassword && sessions.ensurePassword(id, identity.devPassword))]);
    const seed = (async () => {
      // Anything committed but not drained before the last stop (crash between commit and drain).
      await outbox.drain();
      if (seeding) await runSeed(db, opts.project, handlers, log).finally(seedDone);
      await container.resolve(EventLog).drain();
    })();
    for (const settled of await Promise.allSettled([seed, credentials])) if (settled.status === "rejected") throw settled.reason;
    const devTokenStatus = await devToken;
    if (devTokenStatus === "revoked") log.warn("the development token was revoked and stays so: requests with it are refused (set SVC_DEV_TOKEN to a new value to have one again)");

    phase("recovery drain, seed, tokens");
    // dataset projections catch up with every committed version (the seed's included; waited for up to 5 s), then follow the stream
    await container.resolve(DatasetProjector).start(5000);
    // dataset transactions left open by a client that went away are aborted once idle (the next open of the dataset does it too)
    const datasets = container.resolve(DatasetStore);
    lifecycle.every(Math.min(config.datasetTransactionIdleMs / 4, 900_000), () =>
      datasets.expireIdle().then(
        (aborted) => aborted.length > 0 && log.info({ aborted, idleMs: config.datasetTransactionIdleMs }, "aborted idle dataset transactions"),
        (err) => log.warn({ err }, "aborting idle dataset transactions failed"),
      ),
    );
    // the runtime services register their own lifecycle hooks when created
    // rules catch up with every commit since their checkpoint (the seed's included), then follow the stream
    await container.resolve(RuleEngine).start();
    // event schedules (spec 6.1): each consumer resumes from its stored cursor; a new one starts at the newest event
    await container.resolve(EventScheduleConsumers).start();
    phase("projections, rules, event schedules");
    const temporal = await startingWorker;
    phase("temporal (CLI, dev server, connection), workflow bundle, worker: what remained after the steps above");
    if (config.syncSchedules) await container.resolve(ScheduleManager).sync();
    phase("schedules");

    const metrics = container.resolve(Metrics);
    const routes = new RouteRegistry((req, mode) => authenticateRequest(req, mode, { tokens, sessions, allowedOrigins: config.allowedOrigins }), lifecycle, log, metrics, () => config.apiPublicOrigin, new Cors(config.allowedOrigins));
    for (const plugin of opts.plugins) {
      const deps = Object.fromEntries(Object.entries((plugin.deps ?? {}) as PluginDeps).map(([name, token]) => [name, container.resolve(token)])) as ResolvedDeps<PluginDeps>;
      await plugin.setup(
        { routes, hooks: lifecycle, log: log.child({ plugin: plugin.name }), config, project, authenticateUpgrade: (req) => authenticateUpgrade(req, { sessions, allowedOrigins: config.allowedOrigins }) },
        deps,
      );
    }
    const h3 = new H3({
      ...(config.accessLog ? accessLogHooks(log) : {}),
      onError: (error, event) => {
        const answer = h3ErrorResponse(error, event, log);
        // answered before any route's dispatch (an unknown path, a malformed one): counted under its matched template, else (unmatched)
        metrics.observeRequest(event.req.method, (event.context as { matchedRoute?: { route?: string } }).matchedRoute?.route ?? UNMATCHED_ROUTE, answer.status);
        return answer;
      },
    });
    phase("plugins");
    routes.mount(h3);
    const server = serve(h3, { port: config.port, hostname: config.host, silent: true, gracefulShutdown: false, plugins: [webSocketPlugin({})] });
    await server.ready().catch((err: unknown) => {
      throw listenError(err, config.port, config.host);
    });
    const url = (server.url ?? `http://${config.host}:${config.port}/`).replace(/\/$/, "");
    if (config.port === 0) {
      // PORT=0 picks a port when listening: a public origin on port 0 (the default one, or the sandbox's
      // http://localhost:<PORT>) names the port actually bound, so links and download URLs reach this server
      const bound = new URL(url).port;
      const onBoundPort = (origin: string) => {
        if (!URL.canParse(origin)) return origin;
        const u = new URL(origin);
        if (u.port !== "0") return origin;
        u.port = bound;
        // a path prefix stays as it was (without trailing slashes, as config.ts keeps it)
        return asPublicOrigin(u.href) ?? origin;
      };
      config.publicOrigin = onBoundPort(config.publicOrigin);
      if (config.apiPublicOrigin) config.apiPublicOrigin = onBoundPort(config.apiPublicOrigin);
      config.allowedOrigins.splice(0, config.allowedOrigins.length, ...config.allowedOrigins.map(onBoundPort));
    }
    if (!(opts.env ?? process.env).SVC_ALLOWED_ORIGINS) {
      // the default allows this server's own origins, on the port actually bound (PORT=0 picks one)
      const port = new URL(url).port;
      for (const origin of [`http://localhost:${port}`, `http://127.0.0.1:${port}`]) if (!config.allowedOrigins.includes(origin)) config.allowedOrigins.push(origin);
    }
    phase("listen");
    await lifecycle.run("ready", logError("ready hook failed"));
    log.debug({ phases: phase.done(), totalMs: Math.round(performance.now()) }, "start-up phases (ms)");

    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        lifecycle.shuttingDown = true;
        log.info("shutting down: finishing in-flight requests");
        await lifecycle.run("preClose", logError("preClose hook failed"));
        if (!(await lifecycle.idle(config.shutdownTimeoutMs))) {
          log.warn({ inFlight: lifecycle.inFlight }, "shutdown timeout: aborting the remaining handlers");
          lifecycle.abortInFlight();
        }
        // stop listening; idle keep-alive sockets close now, busy ones once their response is written
        const nodeServer = server.node?.server as import("node:http").Server | undefined;
        const sweeper = setInterval(() => nodeServer?.closeIdleConnections(), 25);
        const graceful = await Promise.race([server.close().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
        clearInterval(sweeper);
        if (!graceful) await server.close(true);
        await lifecycle.stopTimers();
        await lifecycle.run("close", logError("close hook failed"));
        log.info("stopped");
      })());
    return { url, config, container, temporal, log, devTokenStatus, fetch: (request) => Promise.resolve(h3.fetch(request)), close };
  } catch (err) {
    // a setting the service cannot start with (a data dir it cannot use, a port in use, no Temporal or
    // NATS server at the configured address): logged once here, thrown for the entry point to report
    if (err instanceof ConfigError) log.error({ variable: err.variable }, err.message);
    seedDone(); // a connect still waiting for the seed goes on (the close hooks then shut it down)
    await startingWorker?.catch(() => undefined); // the close hooks then stop a worker it started
    await lifecycle.stopTimers();
    await lifecycle.run("close", () => undefined);
    // a dev server started for this app that it failed before adopting
    if (!adopted) await opts.temporalDevServer?.then((e) => e.server.stop(), () => undefined);
    throw err;
  }
}

/**
 * Start-up timing: `phase(name)` records the milliseconds since the previous mark under `name` (the
 * first entry is the process's time before `createApp`: module loading); `phase.done()` answers them.
 * Logged at debug level as "start-up phases (ms)"; test/bench/startup.ts prints them.
 */
function startupPhases(): ((name: string) => void) & { done(): Record<string, number> } {
  let mark = performance.now();
  const phases: Record<string, number> = { "process start to createApp (module loading)": Math.round(mark) };
  const phase = (name: string) => {
    const now = performance.now();
    phases[name] = Math.round(now - mark);
    mark = now;
  };
  return Object.assign(phase, { done: () => ({ ...phases, "ready hooks": Math.round(performance.now() - mark) }) });
}

/** Whether the project's seed has run on this database. */
async function seeded(db: Database): Promise<boolean> {
  return (await db.get<{ value: string }>("SELECT value FROM meta WHERE key = 'seeded'")) !== undefined;
}

/** Runs the project's seed on a fresh database (origin runtime, no actor; spec 2.3) and marks it seeded, in one transaction. */
async function runSeed(db: Database, project: ProjectDefinition, handlers: HandlerRunner, log: Logger): Promise<void> {
  const spec = { run: { kind: "seed", id: "seed" }, correlationId: "seed", key: "seed" };
  const buffered = await handlers.execute(spec, (ctx) => project.seed!(ctx));
  await db.transaction(async (tx) => {
    await handlers.commitInTx(tx, buffered, spec, { origin: { kind: "runtime", seed: true }, idempotencyKey: "seed" });
    await tx.run("INSERT INTO meta (key, value) VALUES ('seeded', ?)", [new Date().toISOString()]);
  });
  log.info({ changes: buffered.changes.length }, "seeded the project");
}

/**
 * Closes the app on SIGINT/SIGTERM and exits when done (0, or 1 when closing failed). A signal within
 * `SIGNAL_REPEAT_MS` (core/lifecycle.ts) of the first is the same request delivered again (a terminal's
 * process group, npm relaying it to `npm start`'s service) and is ignored; a later one exits at once (1).
 */
export function installSignalHandlers(app: App): void {
  const classify = shutdownSignals();
  const onSignal = (signal: NodeJS.Signals) => {
    const kind = classify();
    if (kind === "repeat") return void app.log.debug({ signal }, "signal repeated within the first one's window (process group, npm relaying it): still shutting down");
    if (kind === "again") {
      app.log.warn("second signal: exiting now");
      process.exit(1);
    }
    app.log.info({ signal }, "received signal");
    app.close().then(
      () => process.exit(0),
      (err) => {
        app.log.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

/**
 * The agents' models by id (`scripted`, `openai-compatible:<model>`, `anthropic:<model>`), made once
 * each from `env` (keys and base URL: the environment the app was made with, which its configuration
 * was checked against); undefined is the service's `SVC_AGENT_MODEL`.
 */
function models(config: Config, env: NodeJS.ProcessEnv | Record<string, string | undefined>): (id: string | undefined) => Model {
  const made = new Map<string, Model>();
  return (id) => {
    const key = id ?? config.agentModel;
    if (!made.has(key)) made.set(key, modelFromEnv({ ...env, SVC_AGENT_MODEL: key }));
    return made.get(key)!;
  };
}

/**
 * `SVC_ACCESS_LOG`'s hooks: one info line per HTTP request once its answer is made, `{ method, path,
 * status, ms, clientAddress, identity }` ("request"). The path has no query, and the secrets some paths
 * carry are masked: a download URL's (`/api/download/…`) and a deck frame's link (`/artifact-frames/…/`).
 * Off by default: a line per request costs the hot paths (issue 15).
 */
function accessLogHooks(log: Logger): { onRequest(event: H3Event): void; onResponse(response: Response, event: H3Event): void } {
  return {
    onRequest: (event) => void (event.context.startedAt = performance.now()),
    onResponse: (response, event) => {
      const path = event.url.pathname.replace(/^\/api\/download\/[^/]+/, "/api/download/…").replace(/^\/artifact-frames\/[^/]+/, "/artifact-frames/…");
      const started = event.context.startedAt as number | undefined;
      log.info({ method: event.req.method, path, status: response.status, ms: started === undefined ? undefined : Math.round((performance.now() - started) * 10) / 10, clientAddress: event.req.ip, identity: event.context.identity }, "request");
    },
  };
}
