import path from "node:path";
import { Client, Connection, WorkflowExecutionAlreadyStartedError } from "@temporalio/client";
import { WorkflowIdReusePolicy } from "@temporalio/common";
import type { Config } from "../config";
import type { Logger } from "../logger";
import type { SvcActivities } from "../sdk/activities-types";
import type { ActionRunRecord } from "../sdk/context";
import type { EffectStarter } from "../runtime/actions";
import { ensureTemporalCli } from "./cli";
import { startDevServer, type DevServer } from "./dev-server";
import { loadWorkflowBundle } from "./bundle";
import type { LogCapture } from "../logs/capture";

/** Health of the Temporal connection, for `/api/status`. */
export interface TemporalHealth {
  status: "ok" | "unhealthy";
  address: string;
  namespace: string;
  embedded: boolean;
  error?: string;
}

let runtimeInstalled = false;

/**
 * Everything Temporal for one runtime process: the embedded dev server when `TEMPORAL_ADDRESS` is
 * unset (or the configured cluster), a client, and one worker on the runtime's task queue that runs
 * the project's workflows and the runtime's activities.
 */
export class TemporalHost implements EffectStarter {
  private workerRun: Promise<void> | undefined;
  private worker: import("@temporalio/worker").Worker | undefined;
  private nativeConnection: import("@temporalio/worker").NativeConnection | undefined;

  private constructor(
    readonly client: Client,
    private readonly connection: Connection,
    readonly address: string,
    readonly namespace: string,
    readonly taskQueue: string,
    readonly uiUrl: string | undefined,
    private readonly devServer: DevServer | undefined,
    private readonly log: Logger,
  ) {}

  /**
   * Connects (starting the dev server first when no address is configured) and starts the worker.
   * @throws {TemporalCliError} when the CLI cannot be found or built; Error when the server or worker
   *   cannot start (the dev server is stopped again then)
   */
  static async start(opts: { config: Config; log: Logger; activities: SvcActivities; workflowsModule?: string; logs: LogCapture }): Promise<TemporalHost> {
    const { config, log } = opts;
    const t = config.temporal;
    let devServer: DevServer | undefined;
    let address = t.address;
    let uiUrl: string | undefined;
    if (!address) {
      const cliPath = await ensureTemporalCli(t.cliPath, (line) => log.info(line));
      log.info({ port: t.devServerPort }, "starting the Temporal dev server");
      devServer = await startDevServer({ cliPath, port: t.devServerPort, ui: t.ui, dbFile: path.join(config.dataDir, "temporal.db"), namespace: t.namespace, log: (line) => log.info(line) });
      address = devServer.address;
      uiUrl = devServer.uiUrl;
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 10_000 });
      const client = new Client({ connection, namespace: t.namespace });
      const host = new TemporalHost(client, connection, address, t.namespace, t.taskQueue, uiUrl, devServer, log);
      await host.startWorker(opts.activities, opts.workflowsModule, opts.logs);
      return host;
    } catch (err) {
      await devServer?.stop();
      throw err;
    }
  }

  private async startWorker(activities: SvcActivities, workflowsModule: string | undefined, logs: LogCapture): Promise<void> {
    const { NativeConnection, Worker, Runtime, DefaultLogger } = await import("@temporalio/worker");
    if (!runtimeInstalled) {
      runtimeInstalled = true;
      try {
        // shutdownSignals: [] — the app owns SIGINT/SIGTERM (installSignalHandlers) and drains the worker itself
        Runtime.install({ logger: new DefaultLogger("WARN", (entry) => this.log.warn({ temporal: entry.meta }, entry.message)), shutdownSignals: [] });
      } catch {
        // already installed in this process
      }
    }
    const workflowBundle = await loadWorkflowBundle(workflowsModule, (line) => this.log.info(line));
    this.nativeConnection = await NativeConnection.connect({ address: this.address });
    this.worker = await Worker.create({
      connection: this.nativeConnection,
      namespace: this.namespace,
      taskQueue: this.taskQueue,
      workflowBundle,
      activities,
      // workflow code's ctx.log (spec 2.5), captured with run context { kind: "workflow", id: runId }; not during replay
      sinks: {
        handlerLog: {
          write: {
            fn: (info, level: "debug" | "info" | "warn" | "error", message: string, fields: Record<string, unknown>) =>
              logs.logger(this.log, { kind: "workflow", id: info.workflowId }, { workflowId: info.workflowType })[level](fields, message),
            callDuringReplay: false,
          },
        },
      },
      shutdownGraceTime: "10 seconds",
    });
    this.workerRun = this.worker.run().catch((err) => this.log.error({ err }, "the Temporal worker stopped with an error"));
  }

  /** Starts an action's effect workflow; a second start for the same run is a no-op. */
  async startEffect(run: ActionRunRecord): Promise<void> {
    try {
      await this.client.workflow.start("actionEffect", {
        workflowId: `action-effect:${run.runId}`,
        taskQueue: this.taskQueue,
        args: [{ actionId: run.actionId, runId: run.runId }],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }

  /** Link to an execution in the Temporal UI, when the UI is served. */
  executionUrl(workflowId: string, runId?: string): string | undefined {
    if (!this.uiUrl) return undefined;
    return `${this.uiUrl}/namespaces/${encodeURIComponent(this.namespace)}/workflows/${encodeURIComponent(workflowId)}${runId ? `/${runId}` : ""}/history`;
  }

  /** Asks the frontend for its system info with a 2 s deadline. */
  async health(): Promise<TemporalHealth> {
    const base = { address: this.address, namespace: this.namespace, embedded: this.devServer !== undefined };
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
    await this.nativeConnection?.close().catch(() => undefined);
    await this.connection.close().catch(() => undefined);
    await this.devServer?.stop();
  }
}
