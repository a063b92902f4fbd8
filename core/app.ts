import path from "node:path";
import { container as rootContainer, type DependencyContainer } from "./di";
import { H3, serve } from "h3";
import { plugin as webSocketPlugin } from "crossws/server/node";
import { loadConfig, type Config } from "./config";
import { createLogger, type Logger } from "./logger";
import { TOKENS } from "./tokens";
import { Database } from "./store/db";
import { SqliteEventStream, type EventStream } from "./events/stream";
import { NatsEventStream } from "./events/nats-stream";
import { Outbox } from "./events/outbox";
import { EventLog } from "./events/log";
import { OntologyStore, WriteBuffer } from "./ontology/store";
import { ProjectRegistry } from "./runtime/registry";
import { ActionRunner } from "./runtime/actions";
import { WorkflowRuns } from "./runtime/workflows";
import { WebhookDeliveries } from "./runtime/webhooks";
import { TokenService } from "./auth/tokens";
import { SessionService } from "./auth/sessions";
import { authenticateRequest } from "./auth/authenticate";
import { RouteRegistry } from "./http/routes";
import { Lifecycle } from "./lifecycle";
import { LogCapture } from "./logs/capture";
import { TemporalHost } from "./temporal/host";
import { createActivities } from "./temporal/activities";
import { ScheduleManager } from "./temporal/schedules";
import { ConnectorRuns } from "./runtime/connector-runs";
import { ApiError, errorResponse } from "./errors";
import { eventsApi, ontologyAccess } from "./runtime/context";
import type { ProjectDefinition } from "./sdk/project";
import type { Plugin } from "./plugin";

/** Options of {@link createApp}. */
export interface AppOptions {
  project: ProjectDefinition;
  plugins: readonly Plugin[];
  /** Environment to read the config from (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Project defaults for the config (data dir, dev token). */
  defaults?: { dataDir?: string; devToken?: string };
  logger?: Logger;
}

/** A running service. */
export interface App {
  url: string;
  config: Config;
  container: DependencyContainer;
  temporal: TemporalHost;
  log: Logger;
  /** Graceful shutdown (idempotent): see {@link createApp}. */
  close(): Promise<void>;
}

/**
 * Assembles and starts the service: config (valibot, from the environment), SQLite store with
 * migrations, event log (outbox + built-in stream, recovery pass), ontology store, action runner,
 * Temporal (embedded dev server unless `TEMPORAL_ADDRESS`), plugins (routes), then the HTTP server.
 *
 * `close()` shuts down gracefully: new action runs and workflow runs get 503 `shutting_down` while
 * in-flight requests finish (up to `SVC_SHUTDOWN_TIMEOUT_MS`); then the server stops listening, the
 * outbox drains, plugins' shutdown hooks run, the worker drains, the dev server stops and the database
 * closes.
 *
 * @throws {ConfigError} on a bad environment variable; Error when the store, Temporal or the port fail
 */
export async function createApp(opts: AppOptions): Promise<App> {
  const config = loadConfig(opts.env ?? process.env, opts.defaults);
  const log = opts.logger ?? createLogger(config.logLevel);
  const project = new ProjectRegistry(opts.project);
  const container = rootContainer.createChildContainer();
  const lifecycle = new Lifecycle();

  const db = await Database.open(path.join(config.dataDir, "svc.db"));
  const stream: EventStream =
    config.eventStream === "nats"
      ? await NatsEventStream.open({ servers: config.natsUrl, stream: config.natsStream ?? `SVC_${opts.project.id.replace(/[^A-Za-z0-9_-]/g, "_")}`, subjectPrefix: `svc.${opts.project.id.replace(/[^A-Za-z0-9_-]/g, "_")}.events`, retentionMs: config.eventRetentionMs })
      : await SqliteEventStream.open(db);
  const outbox = new Outbox(db, stream, log);
  const logs = await LogCapture.open(db);
  container.register(TOKENS.Config, { useValue: config });
  container.register(TOKENS.Logger, { useValue: log });
  container.register(TOKENS.Database, { useValue: db });
  container.register(TOKENS.EventStream, { useValue: stream });
  container.register(TOKENS.Outbox, { useValue: outbox });
  container.register(TOKENS.Project, { useValue: project });
  container.register(TOKENS.Lifecycle, { useValue: lifecycle });
  container.register(TOKENS.Logs, { useValue: logs });
  container.registerSingleton(TOKENS.EventLog, EventLog);
  container.registerSingleton(TOKENS.OntologyStore, OntologyStore);
  container.registerSingleton(TOKENS.ActionRunner, ActionRunner);
  container.registerSingleton(TOKENS.WorkflowRuns, WorkflowRuns);
  container.registerSingleton(TOKENS.Tokens, TokenService);
  container.registerSingleton(TOKENS.WebhookDeliveries, WebhookDeliveries);

  const events = container.resolve(TOKENS.EventLog);
  const ontology = container.resolve(TOKENS.OntologyStore);
  const actions = container.resolve(TOKENS.ActionRunner);
  const workflows = container.resolve(TOKENS.WorkflowRuns);
  const tokens = container.resolve(TOKENS.Tokens);

  let temporal: TemporalHost | undefined;
  const timers: NodeJS.Timeout[] = [];
  try {
    // Anything committed but not drained before the last stop (crash between commit and drain).
    await outbox.drain();
    await seedOnce(db, opts.project, ontology, events, log);
    if (config.devToken && opts.project.devIdentity) await tokens.ensure(config.devToken, opts.project.devIdentity, "development");
    const sessions = new SessionService(db, project, config.sessionTtlMs);
    container.register(TOKENS.Sessions, { useValue: sessions });
    for (const [id, identity] of Object.entries(opts.project.identities)) if (identity.devPassword) await sessions.ensurePassword(id, identity.devPassword);

    temporal = await TemporalHost.start({ config, log, activities: createActivities({ db, events, ontology, actions, project, log, logs }), workflowsModule: opts.project.workflowsModule, logs });
    container.register(TOKENS.Temporal, { useValue: temporal });
    actions.setEffectStarter(temporal);
    workflows.setTemporal(temporal);
    const schedules = new ScheduleManager(temporal, project, log);
    if (config.syncSchedules) await schedules.sync();
    container.register(TOKENS.Schedules, { useValue: schedules });
    container.register(TOKENS.ConnectorRuns, { useValue: new ConnectorRuns(db, events, project, temporal) });

    const routes = new RouteRegistry((req, mode) => authenticateRequest(req, mode, { tokens, sessions, allowedOrigins: config.allowedOrigins }), lifecycle, log);
    for (const plugin of opts.plugins) {
      await plugin.setup({ container, routes, hooks: lifecycle, log: log.child({ plugin: plugin.name }), config, project });
    }
    const h3 = new H3({
      onError: (error, event) => {
        const cause = (error as { cause?: unknown }).cause;
        if (error.status === 404) return errorResponse(new ApiError("not_found", `No route ${event.req.method} ${event.url.pathname}`));
        if (error.status === 405) return errorResponse(new ApiError("method_not_allowed", `Method ${event.req.method} is not allowed here`));
        if (error.status >= 500) log.error({ err: cause ?? error, path: event.url.pathname }, "request failed");
        return errorResponse(error.status === 400 ? new ApiError("invalid_request", error.message) : cause ?? error);
      },
    });
    routes.mount(h3);
    const server = serve(h3, { port: config.port, hostname: config.host, silent: true, gracefulShutdown: false, plugins: [webSocketPlugin({})] });
    await server.ready();
    const url = (server.url ?? `http://${config.host}:${config.port}/`).replace(/\/$/, "");
    if (!(opts.env ?? process.env).SVC_ALLOWED_ORIGINS) {
      // the default allows this server's own origins, on the port actually bound (PORT=0 picks one)
      const port = new URL(url).port;
      for (const origin of [`http://localhost:${port}`, `http://127.0.0.1:${port}`]) if (!config.allowedOrigins.includes(origin)) config.allowedOrigins.push(origin);
    }

    await actions.startPendingEffects();
    timers.push(setInterval(() => void outbox.drain().then(() => actions.startPendingEffects()), config.outboxRecoveryMs));
    const prune = () => Promise.all([stream.prune(config.eventRetentionMs), logs.prune(config.eventRetentionMs)]).catch((err) => log.warn({ err }, "retention prune failed"));
    timers.push(setInterval(() => void prune(), Math.min(config.eventRetentionMs / 10, 3_600_000)));
    for (const t of timers) t.unref();
    await lifecycle.run("ready", (err) => log.error({ err }, "ready hook failed"));

    let closing: Promise<void> | undefined;
    const host = temporal;
    const close = () =>
      (closing ??= (async () => {
        lifecycle.shuttingDown = true;
        actions.stopAccepting();
        workflows.accepting = false;
        log.info("shutting down: finishing in-flight requests");
        const idle = await lifecycle.idle(config.shutdownTimeoutMs);
        if (!idle) {
          log.warn({ inFlight: lifecycle.inFlight }, "shutdown timeout: aborting the remaining action handlers");
          actions.abort.abort();
        }
        await actions.idle();
        // stop listening; idle keep-alive sockets close now, busy ones once their response is written
        const nodeServer = server.node?.server as import("node:http").Server | undefined;
        const sweeper = setInterval(() => nodeServer?.closeIdleConnections(), 25);
        const graceful = await Promise.race([server.close().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
        clearInterval(sweeper);
        if (!graceful) await server.close(true);
        for (const t of timers) clearInterval(t);
        await outbox.drain();
        await lifecycle.run("shutdown", (err) => log.error({ err }, "shutdown hook failed"));
        await host.shutdown();
        await logs.flush();
        await stream.close?.();
        await db.close();
        log.info("stopped");
      })());
    return { url, config, container, temporal, log, close };
  } catch (err) {
    for (const t of timers) clearInterval(t);
    await temporal?.shutdown().catch(() => undefined);
    await stream.close?.().catch(() => undefined);
    await db.close().catch(() => undefined);
    throw err;
  }
}

/** Runs the project's seed once, on a fresh database (origin runtime, no actor). */
async function seedOnce(db: Database, project: ProjectDefinition, ontology: OntologyStore, events: EventLog, log: Logger): Promise<void> {
  if (!project.seed) return;
  const done = await db.get<{ value: string }>("SELECT value FROM meta WHERE key = 'seeded'");
  if (done) return;
  const buffer = new WriteBuffer();
  await project.seed({ ...ontologyAccess(ontology, buffer), log: log.child({ run: { kind: "seed", id: "seed" } }), events: eventsApi(events, "seed") });
  await ontology.commit(buffer.changes, { origin: { kind: "runtime", seed: true }, correlationId: "seed", idempotencyKey: "seed" });
  await db.transaction((tx) => tx.run("INSERT INTO meta (key, value) VALUES ('seeded', ?)", [new Date().toISOString()]));
  log.info({ changes: buffer.changes.length }, "seeded the project");
}

/**
 * Closes the app on SIGINT/SIGTERM (a second signal forces exit) and exits when done.
 */
export function installSignalHandlers(app: App): void {
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (++signals > 1) {
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
