import type { Client } from "@temporalio/client";
import type { InjectedSinks, NativeConnection } from "@temporalio/worker";
import { ConfigError, type Config } from "../config";
import type { Logger } from "../logger";
import type { WorkflowBundle } from "./bundle";
import type { DevServer } from "./dev-server";
import { startEmbeddedTemporal, type EmbeddedTemporal } from "./embedded";
import { DownloadUrlCodec, withoutSecretsInError } from "./payload-codec";
import { openPayloadKeys, type PayloadKeys } from "./payload-keys";
import { temporalClient } from "./sdk";

export { startEmbeddedTemporal, type EmbeddedTemporal } from "./embedded";

/** Health of the Temporal connection, for `/api/status`. */
export interface TemporalHealth {
  status: "ok" | "unhealthy";
  address: string;
  namespace: string;
  embedded: boolean;
  /** How long the namespace keeps a finished run (ms; its Retention Period), when Temporal said at start. */
  retentionMs?: number;
  error?: string;
}

/**
 * Why a connection to Temporal failed, in a few words: the SDK's transport error reads
 * `tonic::transport::Error(Transport, ConnectError(…Connection refused…))`.
 */
function connectFailure(err: unknown): string {
  const message = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, " ");
  if (/connection refused/i.test(message)) return "connection refused";
  if (/dns error|failed to lookup|name or service not known/i.test(message)) return "the host does not resolve";
  if (/timed? ?out|deadline/i.test(message)) return "timed out";
  return message;
}

let runtimeInstalled = false;

/** Keys of the SDK's log metadata that are never logged: an activity's task token completes the activity. */
const SECRET_META_KEYS = new Set(["taskToken", "base64TaskToken"]);

/** `value` without {@link SECRET_META_KEYS}, at any depth of plain objects and arrays (Errors and other instances as they are). */
function withoutSecrets(value: unknown, depth = 0): unknown {
  if (depth > 5 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => withoutSecrets(v, depth + 1));
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => !SECRET_META_KEYS.has(k)).map(([k, v]) => [k, withoutSecrets(v, depth + 1)]));
}

/**
 * The pino fields of a line the Temporal SDK logs (its `LogEntry.meta`): the metadata under `temporal`,
 * without activity task tokens, and the Error it carries (`error`, as in "Activity failed", or `err`,
 * `failure`) at `err`, the one field pino serializes an Error in (type, message, stack; nested
 * elsewhere an Error logs as `{}`).
 */
export function temporalLogFields(meta: Record<string, unknown> | undefined): { temporal?: unknown; err?: unknown } {
  if (!meta) return {};
  const rest: Record<string, unknown> = { ...meta };
  let err: unknown;
  for (const key of ["error", "err", "failure"]) {
    if (err === undefined && rest[key] instanceof Error) {
      err = rest[key];
      delete rest[key];
    }
  }
  const temporal = withoutSecrets(rest) as Record<string, unknown>;
  return { ...(Object.keys(temporal).length > 0 ? { temporal } : {}), ...(err !== undefined ? { err } : {}) };
}

/** Where the SDK's log lines go (its `DefaultLogger`'s function): pino, at error for ERROR, else warn, with {@link temporalLogFields}. */
export function temporalLogFunction(log: Logger): (entry: { level: string; message: string; meta?: Record<string, unknown> }) => void {
  return (entry) => {
    const fields = temporalLogFields(entry.meta);
    if (entry.level === "ERROR") log.error(fields, entry.message);
    else log.warn(fields, entry.message);
  };
}

/** Installs the SDK's Rust runtime once per process, logging through pino at WARN ({@link temporalLogFunction}). */
function installRuntime({ Runtime, DefaultLogger }: typeof import("@temporalio/worker"), log: Logger): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    // shutdownSignals: [] — the app owns SIGINT/SIGTERM (installSignalHandlers) and drains the worker itself
    Runtime.install({ logger: new DefaultLogger("WARN", temporalLogFunction(log)), shutdownSignals: [] });
  } catch {
    // already installed in this process
  }
}

/**
 * Temporal as infrastructure for one runtime process: the embedded dev server when `TEMPORAL_ADDRESS`
 * is unset (or the configured cluster), a client, and one worker on the runtime's task queue. Client and
 * worker share one `NativeConnection` (the SDK's Rust core does the gRPC, not grpc-js on the event
 * loop), which also lets a start ask for eager execution: the server answers it with the run's first
 * workflow task for this worker (issue 15; see `startRun`). It knows nothing of what runs on it: the
 * app passes the workflow bundle and the runtime's activities to {@link TemporalHost.startWorker}.
 */
export class TemporalHost {
  private workerRun: Promise<void> | undefined;
  private worker: import("@temporalio/worker").Worker | undefined;

  constructor(
    readonly client: Client,
    private readonly connection: NativeConnection,
    readonly address: string,
    readonly namespace: string,
    readonly taskQueue: string,
    readonly uiUrl: string | undefined,
    private readonly devServer: DevServer | undefined,
    private readonly log: Logger,
    /** The payload codec of the client and the worker ({@link DownloadUrlCodec}). */
    readonly payloadCodec: DownloadUrlCodec,
    /** How long the namespace keeps a finished run (ms; its Retention Period), as last read; undefined when Temporal did not say. */
    private retention?: number,
  ) {}

  /** How long the namespace keeps a finished run (ms; its Retention Period), as read at start or by the last {@link refreshRetention}; undefined when Temporal did not say. */
  get retentionMs(): number | undefined {
    return this.retention;
  }

  /**
   * Reads a cluster's namespace retention again (an operator may change it while svc runs; the embedded
   * server's is svc's own setting, read once). A failed read keeps the value known, and is logged.
   * @returns the retention now known (ms), or undefined
   */
  async refreshRetention(): Promise<number | undefined> {
    if (this.devServer) return this.retention;
    try {
      // with a deadline: a call to a server that does not answer may wait for ever (the retention pass waits on it)
      const ms = await this.connection.withDeadline(Date.now() + REFRESH_DEADLINE_MS, () => readNamespaceRetention(this.connection, this.namespace));
      if (ms !== undefined && ms !== this.retention) this.log.info({ namespace: this.namespace, retentionMs: ms, was: this.retention }, `the Temporal namespace keeps a finished run for ${formatRetention(ms)} now (its retention, set on the cluster)`);
      this.retention = ms ?? this.retention;
    } catch (err) {
      this.log.warn({ err, namespace: this.namespace }, "could not read the Temporal namespace's retention again; keeping the one known");
    }
    return this.retention;
  }

  /**
   * Connects, starting the dev server first when no address is configured (`TEMPORAL_ADDRESS` unset),
   * unless `opts.devServer` is that server already starting ({@link startEmbeddedTemporal}, called by an
   * entry point before it loads the rest of the service, so that both take their time at once).
   * `opts.loadAfter`, when given, is awaited before the SDK is loaded (about a second of this thread's
   * time; it must settle, and never reject: createApp settles it when the seed's deck check has been
   * handed to the checker, or the seed is done, or start-up failed).
   * @throws {TemporalCliError} when the CLI cannot be found or built; {@link ConfigError} naming
   *   `TEMPORAL_ADDRESS` when no server answers at the configured address; Error when the dev server
   *   cannot start or does not answer (it is stopped again then)
   */
  static async connect(opts: { config: Config; log: Logger; devServer?: Promise<EmbeddedTemporal>; loadAfter?: Promise<unknown> }): Promise<TemporalHost> {
    const { config, log } = opts;
    const t = config.temporal;
    let devServer: DevServer | undefined;
    let address = t.address;
    let uiUrl: string | undefined;
    if (!address) {
      const embedded = await (opts.devServer ?? startEmbeddedTemporal(config, (line) => log.info(line)));
      devServer = embedded.server;
      log.debug({ cliMs: embedded.cliMs, devServerMs: embedded.devServerMs }, "temporal start-up (ms)");
      address = devServer.address;
      uiUrl = devServer.uiUrl;
    }
    try {
      // download URLs' secrets stay out of the histories (./payload-codec.ts): the client and the worker
      // encode alike; the keys are read before any connection, so a key file that cannot be used ends the start cleanly
      let keys: PayloadKeys;
      try {
        keys = openPayloadKeys(config.dataDir, (file) => log.info({ file }, "wrote a new key for the Temporal payloads that hold download URLs: back it up with the data directory (runs holding such payloads cannot be read without it)"));
      } catch (err) {
        throw new ConfigError("SVC_DATA_DIR", (err as Error).message);
      }
      if (keys.laxFiles.length) log.warn({ files: keys.laxFiles }, "key files of the Temporal payloads are readable or writable by other users than their owner: chmod 600 them");
      await opts.loadAfter;
      const sdk = await import("@temporalio/worker");
      installRuntime(sdk, log);
      const connection = await sdk.NativeConnection.connect({ address }).catch((err: unknown) => {
        throw t.address ? new ConfigError("TEMPORAL_ADDRESS", `${t.address} has no Temporal server answering (${connectFailure(err)}): start one there, or unset TEMPORAL_ADDRESS to run the embedded dev server`) : err;
      });
      const codec = new DownloadUrlCodec(keys.current, keys.retired.map((r) => r.key));
      if (codec.retiredKeyIds.length) log.info({ keyId: codec.keyId, retiredKeyIds: codec.retiredKeyIds }, "Temporal payloads: encrypting with the current key, reading with the retired ones too");
      const client = new (temporalClient().Client)({ connection, namespace: t.namespace, dataConverter: { payloadCodecs: [codec] } });
      const retentionMs = await namespaceRetention(connection, t.namespace, devServer ? t.retentionMs : undefined, log);
      return new TemporalHost(client, connection, address, t.namespace, t.taskQueue, uiUrl, devServer, log, codec, retentionMs);
    } catch (err) {
      await devServer?.stop();
      throw err;
    }
  }

  /**
   * Starts the one worker of this process on the runtime's task queue.
   * @param opts.activities the activity implementations, by name
   * @param opts.workflowBundle the bundled workflow code, or the path of a file holding it (see `loadWorkflowBundle`)
   * @param opts.sinks Temporal sinks the workflow code calls (not during replay)
   * @throws Error when the worker cannot be created (bundle invalid, server unreachable)
   */
  async startWorker(opts: { activities: object; workflowBundle: WorkflowBundle; sinks?: InjectedSinks<any> }): Promise<void> {
    const { Worker } = await import("@temporalio/worker");
    this.worker = await Worker.create({
      connection: this.connection,
      namespace: this.namespace,
      taskQueue: this.taskQueue,
      workflowBundle: opts.workflowBundle,
      activities: opts.activities,
      sinks: opts.sinks,
      dataConverter: { payloadCodecs: [this.payloadCodec] },
      // a failure's message and stack stay plain text in the history (no codec sees them): an activity's
      // error (one repeating its input, say) keeps no download URL's secret
      interceptors: { activity: [() => ({ inbound: { execute: (input, next) => next(input).catch((err: unknown) => Promise.reject(withoutSecretsInError(err))) } })] },
      shutdownGraceTime: "10 seconds",
    });
    this.workerRun = this.worker.run().catch((err) => this.log.error({ err }, "the Temporal worker stopped with an error"));
  }

  /**
   * The message of a run svc recorded as started that Temporal does not know (any more): past the
   * namespace's retention, Temporal has deleted it; a run requested within the retention was lost with
   * Temporal's state (its data reset, or svc's data restored without Temporal's).
   * @param requestedAt when svc recorded the run (ISO 8601), when known
   */
  forgottenRun(runId: string, requestedAt?: string): string {
    const known = `Run "${runId}" is not known to Temporal (namespace ${this.namespace})`;
    if (requestedAt !== undefined && this.retentionMs !== undefined && Date.parse(requestedAt) > Date.now() - this.retentionMs) {
      return `${known}, though it was requested at ${requestedAt}, within the ${formatRetention(this.retentionMs)} the namespace keeps a finished run: Temporal lost its state (its data was reset, or svc's data was restored without Temporal's)`;
    }
    const kept = this.retentionMs === undefined ? "for its Retention Period" : `for ${formatRetention(this.retentionMs)}`;
    const set = this.devServer ? "SVC_TEMPORAL_RETENTION_MS" : "the namespace's retention on the cluster";
    return `${known}: a finished run is kept ${kept} (${set}), and one that ended longer ago is no longer readable`;
  }

  /** Link to an execution in the Temporal UI, when the UI is served. */
  executionUrl(workflowId: string, runId?: string): string | undefined {
    if (!this.uiUrl) return undefined;
    return `${this.uiUrl}/namespaces/${encodeURIComponent(this.namespace)}/workflows/${encodeURIComponent(workflowId)}${runId ? `/${runId}` : ""}/history`;
  }

  /** Asks the frontend for its system info with a 2 s deadline. */
  async health(): Promise<TemporalHealth> {
    const base = { address: this.address, namespace: this.namespace, embedded: this.devServer !== undefined, ...(this.retentionMs !== undefined ? { retentionMs: this.retentionMs } : {}) };
    try {
      await this.connection.withDeadline(Date.now() + 2000, () => this.connection.workflowService.getSystemInfo({}));
      return { status: "ok", ...base };
    } catch (err) {
      return { status: "unhealthy", ...base, error: (err as Error).message };
    }
  }

  /** Drains the worker (running activities finish), closes connections, stops the dev server. */
  async shutdown(): Promise<void> {
    if (this.worker && this.worker.getState() === "RUNNING") this.worker.shutdown();
    await this.workerRun;
    await this.connection.close().catch(() => undefined);
    await this.devServer?.stop();
  }
}

/**
 * Reads the namespace's retention (Temporal's Retention Period: how long it keeps a closed execution,
 * its history and result), and with `wantMs` (the embedded dev server: `SVC_TEMPORAL_RETENTION_MS`)
 * sets it first when it differs; the dev server creates its namespaces keeping runs for 1 day.
 * @returns the retention in ms, or undefined when a cluster does not let this service describe the namespace
 * @throws when the embedded dev server refuses the update
 */
async function namespaceRetention(connection: NativeConnection, namespace: string, wantMs: number | undefined, log: Logger): Promise<number | undefined> {
  const { msToTs } = await import("@temporalio/common/lib/time.js");
  const read = () => readNamespaceRetention(connection, namespace);
  if (wantMs === undefined) {
    const ms = await read().catch((err: unknown) => void log.warn({ err, namespace }, "could not read the Temporal namespace's retention"));
    if (ms !== undefined) log.info({ namespace, retentionMs: ms }, `the Temporal namespace keeps a finished run for ${formatRetention(ms)} (its retention, set on the cluster)`);
    return ms;
  }
  const was = await read();
  if (was !== wantMs) {
    await connection.workflowService.updateNamespace({ namespace, config: { workflowExecutionRetentionTtl: msToTs(wantMs) } });
    log.info({ namespace, retentionMs: wantMs, was }, `the embedded Temporal keeps a finished run for ${formatRetention(wantMs)} (SVC_TEMPORAL_RETENTION_MS)`);
  }
  return wantMs;
}

/** How long {@link TemporalHost.refreshRetention} waits for the namespace's answer (ms). */
const REFRESH_DEADLINE_MS = 5000;

/**
 * The namespace's Retention Period (ms), as `DescribeNamespace` answers it; undefined when it has none.
 * @throws the server's error (not allowed to describe the namespace, not reachable)
 */
async function readNamespaceRetention(connection: NativeConnection, namespace: string): Promise<number | undefined> {
  const { tsToMs } = await import("@temporalio/common/lib/time.js");
  const ttl = (await connection.workflowService.describeNamespace({ namespace })).config?.workflowExecutionRetentionTtl;
  return ttl ? tsToMs(ttl) : undefined;
}

/** A retention in words: whole days as days, else hours, else seconds ("30 days", "36 h", "5400 s"). */
export function formatRetention(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} day${ms === 86_400_000 ? "" : "s"}`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  return `${Math.round(ms / 1000)} s`;
}
