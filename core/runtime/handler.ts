import { inject, injectable } from "../di";
import { Database, type SqlWriter } from "../store/db";
import { EventLog, type AppendInput } from "../events/log";
import { OntologyStore, WriteBuffer, type CommitResult, type WriteContext } from "../ontology/store";
import type { ObjectBatch } from "../ontology/object-batch";
import { validateChanges } from "../ontology/validate";
import { ProjectRegistry } from "../project/registry";
import { LogCapture, type RunRef } from "../logs/capture";
import { LOGGER, type Logger } from "../logger";
import { CONFIG, type Config } from "../config";
import { FileStore } from "../files/file-store";
import { FILE_UPLOAD_MAX_BYTES } from "../files/limits";
import { ArtifactStore, type ArtifactReader } from "../artifacts/store";
import { Readable } from "node:stream";
import type { Actor, DomainEventEnvelope, EventType, Origin } from "../events/catalog";
import type { ArtifactsApi, BlobsApi, HandlerLogger, OntologyChange, OntologyReads, SystemContext } from "../sdk/context";
import { eventsApi, ontologyAccess, ontologyReads } from "./context";
import { ApiError, isApiError } from "../errors";
import { idTime } from "../ids";
import { SHUTTING_DOWN } from "../lifecycle";
import { DatasetStore } from "../datasets/store";
import type { StagedRow } from "../datasets/rows";

/**
 * The record of a run whose handler has started (an action run's row and `action.requested`, a webhook
 * delivery's run and execution), committed lazily: the caller writes it with the run's completion, one
 * commit per run, unless the handler runs longer than `afterMs` (`SVC_RECORD_RUNNING_AFTER_MS`, default
 * 20 ms) or is about to store something outside its buffer (`ctx.blobs`, `ctx.artifacts`, a webhook's
 * `workflows.start`: pass {@link RunRecording.now} as {@link HandlerRunner.execute}'s `beforeStore`);
 * then `write` commits it on its own first, and the completion updates it. A process that dies before
 * either leaves no record of the run: nothing of its handler's buffered writes was committed, and the
 * retry runs it again (spec 3, spec 4.2 rule 4).
 */
export class RunRecording {
  private recorded: Promise<void> | undefined;
  private readonly timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * @param write commits the record in a transaction of its own
   * @param afterMs when to call `write` if the handler has not ended (ms); 0 calls it now, before the
   *   handler starts (every run then costs two commits)
   */
  constructor(private readonly write: () => Promise<void>, afterMs: number) {
    if (afterMs === 0) this.now().catch(() => undefined);
    else this.timer = setTimeout(() => this.now().catch(() => undefined), afterMs);
  }

  /** Commits the record now, once (later calls answer the same promise). @throws the commit's error */
  readonly now = (): Promise<void> => (this.recorded ??= this.write());

  /**
   * Call when the handler has ended: stops the timer, and answers whether the record was committed on
   * its own (awaited here: the completion then updates it, in a later group) or is left to the completion.
   * @throws the error of the record's own commit
   */
  async ended(): Promise<boolean> {
    clearTimeout(this.timer);
    if (!this.recorded) return false;
    await this.recorded;
    return true;
  }
}

/** Who a handler runs for: where its logs go and how its writes are keyed. */
export interface HandlerRun {
  /** Run context of its log lines (spec 2.5), e.g. `{ kind: "sync", id: runId }`. */
  run: RunRef;
  /** Extra fields bound to every log line (connector, schedule, step, attempt, …). */
  logFields?: Record<string, unknown>;
  /** correlationId of everything it writes: the execution's id (spec 2.3). */
  correlationId: string;
  /**
   * Base of the idempotency keys derived from the run: appended event i is keyed `<key>:event:<i>`,
   * so a retried handler (an activity retry, a provider retry) never appends twice.
   */
  key: string;
}

/** How the buffered writes are committed (spec 2.3 origin/actor table). */
export interface HandlerCommit {
  origin: Origin;
  /** The principal of a direct write; absent for actions and system code. */
  actor?: Actor;
  causationId?: string;
  /** Makes the ontology write exactly-once across retries (a second commit with it writes nothing). */
  idempotencyKey?: string;
  /**
   * Keys the caller looked up itself and found unused: the commit's (see `WriteContext.newKeys`) and the
   * appended events' (see `EventLog.writeInTx`: the caller records those with `EventLog.recordKeysNow`).
   */
  newKeys?: ReadonlySet<string>;
  /**
   * The objects of the caller's transaction, when it applies many handlers' changes in it (an event
   * schedule's group commit): the changes read and write objects through it, and the caller flushes it
   * in the same transaction (see `ObjectBatch`).
   */
  objects?: ObjectBatch;
}

/**
 * The context a handler definition receives: the runner's `ctx` (see {@link HandlerRunner.execute})
 * with its kind's own fields added (an action's `actionId`, `runId`, `params`, …; a webhook's `body`,
 * `request`, `delivery`, …), where `fields` win over `ctx`'s. The fields are added to `ctx` itself,
 * which `execute` makes for one run and never uses again, instead of spreading it into a new object:
 * on Node 20's V8, `{ ...ctx, a, b }` takes a slow path for every property added after the spread
 * (~0.8 µs each, ~5 µs for an action's six, against ~0.2 µs for `Object.assign`; measured with a
 * loop of a million, issue 15).
 * @typeParam H the definition's context type (inferred from where the result goes)
 * @returns `ctx`, now also holding `fields`
 */
export function handlerContext<H extends object>(ctx: SystemContext, fields: Omit<H, keyof SystemContext>): H {
  return Object.assign(ctx, fields) as H;
}

/** What a handler produced, validated but not written yet. */
export interface BufferedHandler<T> {
  result: T;
  changes: OntologyChange[];
  events: DomainEventEnvelope[];
  /** `ctx.datasets` calls in order, rows validated: each commits one dataset version. */
  datasets: Array<{ datasetId: string; transaction: "snapshot" | "append"; rows: StagedRow[] }>;
  log: HandlerLogger;
}

/**
 * Runs connector code (action, effect, webhook, schedule, sync and pipeline handlers, the project
 * seed) with a write buffer: reads go to committed data, ontology writes, `events.append` and `datasets` calls are
 * buffered, and nothing reaches the store until the caller commits — in one transaction, possibly
 * with its own run-record rows. A handler that throws writes nothing.
 */
@injectable()
export class HandlerRunner {
  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(OntologyStore) private readonly ontology: OntologyStore,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(LogCapture) private readonly logs: LogCapture,
    @inject(LOGGER) private readonly log: Logger,
    @inject(FileStore) private readonly files: FileStore,
    @inject(CONFIG) private readonly config: Config,
    @inject(ArtifactStore) private readonly artifactStore: ArtifactStore,
    @inject(DatasetStore) private readonly datasetStore: DatasetStore,
  ) {
    this.reads = ontologyReads(ontology);
  }

  /** The committed-data reads every context shares (they hold no per-run state). */
  private readonly reads: OntologyReads;

  /**
   * The SDK's artifact operations (spec 4.3); `publishedBy` is recorded on versions. Code running as the
   * system, outside any request (workflow runs and the actions they run, effects, schedules, event
   * schedules, syncs, pipelines, webhooks, the seed: durable work that runs later, whoever asked for it),
   * reaches every artifact. Code running inside a request (an action run's handler: `requestedBy`, its actor) acts as
   * its requester, who opens only their own: `resolve` and `publishVersion` reach the requester's
   * artifacts, `publish` makes one the requester owns (another `owner` is refused), and the files it
   * uploads are the requester's to put in a version.
   */
  artifacts(publishedBy: string, requestedBy?: Actor): ArtifactsApi {
    const author: ArtifactReader = requestedBy ? { kind: "identity", id: requestedBy.id } : { kind: "system" };
    return {
      upload: (content, options) =>
        this.files.upload(Readable.from([typeof content === "string" ? Buffer.from(content) : Buffer.from(content)]), { name: options.name, declaredContentType: options.contentType, maxBytes: FILE_UPLOAD_MAX_BYTES, createdBy: requestedBy?.id ?? publishedBy }),
      publish: (input) => {
        if (requestedBy && input.owner !== undefined && input.owner !== requestedBy.id) {
          throw new ApiError("forbidden", `An action run requested by "${requestedBy.id}" publishes artifacts "${requestedBy.id}" owns (owner "${input.owner}" was given); code outside a request (an effect, a schedule) publishes for others`, { owner: input.owner });
        }
        return this.artifactStore.publish({ kind: input.kind, title: input.title, files: input.files, owner: input.owner, author, publishedBy });
      },
      publishVersion: async (artifactId, input) => (await this.artifactStore.publish({ artifactId, kind: input.kind, files: input.files, title: input.title, author, publishedBy })).version,
      resolve: (address) => this.artifactStore.resolve(author, address),
    };
  }

  /**
   * The SDK's blob operations for code running as `createdBy` (a run, recorded on each URL for audit).
   * Download URLs point at `SVC_API_PUBLIC_ORIGIN` (spec 4.3).
   */
  blobs(createdBy: string): BlobsApi {
    return {
      createDownloadUrl: (file, options) => this.files.createDownloadUrl(file.id, { expiresInMs: options?.expiresInMs, publicOrigin: this.config.apiPublicOrigin, createdBy }),
      revokeDownloadUrl: async (id) => {
        try {
          await this.files.revokeDownloadUrl(id);
        } catch (err) {
          // a URL made longer ago than the run retention may have been deleted by it (core/store/run-retention.ts),
          // having expired: it works no more, as a revoked one
          const madeAt = idTime(id, "dl");
          if (!(isApiError(err) && err.code === "not_found" && madeAt !== undefined && madeAt < Date.now() - this.config.runRetentionMs)) throw err;
        }
      },
    };
  }

  /** The handler logger of a run (captured with its run context, spec 2.5). */
  logger(spec: Pick<HandlerRun, "run" | "logFields">): HandlerLogger {
    return this.logs.logger(this.log, spec.run, spec.logFields ?? {});
  }

  /**
   * Runs `fn` with a system context (reads, buffered writes, buffered appends and dataset versions, the run's logger) and
   * answers what it produced. The changes are validated against the project's types and the appended
   * events against the catalog (ontology types refused), and each `ctx.datasets` call's rows against its
   * dataset, before anything is answered.
   *
   * @param options.signal aborted when the caller gives up on the handler (a timeout, a shutdown that
   *   stops waiting): its buffered writes are never committed then, and from then on its `ctx.blobs` and
   *   `ctx.artifacts` calls that store something reject ({@link HandlerAbandonedError}); what they stored
   *   before stays
   * @param options.requestedBy the principal whose request runs the handler (an action run's actor):
   *   `ctx.artifacts` acts as them ({@link HandlerRunner.artifacts}); absent for system code
   * @param options.beforeStore awaited before each `ctx.blobs` and `ctx.artifacts` call that stores
   *   something (those commit on their own, outside the buffer): a caller that records its run lazily
   *   records it there first, so nothing the handler stores ever names a run that was not recorded
   * @throws whatever `fn` throws; {@link ApiError} invalid_request for invalid changes, events or rows
   *   (a refused row: `ctx.datasets.<snapshot|append> call <n>: …` naming row and column; `details.call`)
   */
  async execute<T>(spec: HandlerRun, fn: (ctx: SystemContext) => T | Promise<T>, options: { signal?: AbortSignal; beforeStore?: () => Promise<void>; requestedBy?: Actor } = {}): Promise<BufferedHandler<T>> {
    const buffer = new WriteBuffer();
    const appended: AppendInput[] = [];
    const datasetCalls: Array<{ datasetId: string; transaction: "snapshot" | "append"; rows: readonly unknown[] }> = [];
    const log = this.logger(spec);
    const blobs = this.blobs(`${spec.run.kind}:${spec.run.id}`);
    const artifacts = this.artifacts(`${spec.run.kind}:${spec.run.id}`, options.requestedBy);
    const { objects, links, telemetry } = ontologyAccess(this.reads, buffer);
    const ctx: SystemContext = {
      objects,
      links,
      telemetry,
      log,
      blobs: guardStores("ctx.blobs", blobs, ["createDownloadUrl", "revokeDownloadUrl"], options),
      artifacts: guardStores("ctx.artifacts", artifacts, ["upload", "publish", "publishVersion"], options),
      events: eventsApi(this.events, async (list) => {
        if (returned) return late("ctx.events.append", list[0]?.type);
        appended.push(...list.map((e) => ({ ...e, type: e.type as EventType })));
      }),
      datasets: {
        snapshot: (datasetId, rows) => void (returned ? late("ctx.datasets.snapshot", datasetId) : datasetCalls.push({ datasetId, transaction: "snapshot", rows: [...rows] })),
        append: (datasetId, rows) => void (returned ? late("ctx.datasets.append", datasetId) : datasetCalls.push({ datasetId, transaction: "append", rows: [...rows] })),
      },
    };
    // a write the handler makes after it returned (a floating promise, a timer) is dropped with a warning:
    // what is validated and committed is what it wrote before its promise settled
    let returned = false;
    const late = (call: string, what: unknown) =>
      log.warn({ call, what }, `${call} was called after the handler returned: dropped (await every call before returning)`);
    let result: T;
    try {
      result = await (options.signal ? settledOrAbandoned(fn(ctx), options.signal) : fn(ctx));
    } finally {
      returned = true;
      buffer.close((change) => {
        const [area, method] = change.op.split(".") as [string, string];
        const { properties: _values, ...named } = change as OntologyChange & { properties?: unknown };
        late(`ctx.${area === "object" ? "objects" : area === "link" ? "links" : "telemetry"}.${method}`, named);
      });
    }
    validateChanges(this.project.definition, buffer.changes);
    // Object.assign, not a spread with new properties after it (see handlerContext)
    const events = this.events.prepare(appended.map((e, i) => Object.assign({}, e, { correlationId: spec.correlationId, idempotencyKey: e.idempotencyKey ?? `${spec.key}:event:${i}` })));
    const datasets = datasetCalls.map((call, i) => {
      try {
        return { datasetId: call.datasetId, transaction: call.transaction, rows: this.datasetStore.checkRows(call.datasetId, call.rows) };
      } catch (err) {
        if (!isApiError(err)) throw err;
        const details = typeof err.details === "object" && err.details !== null ? err.details : {};
        throw new ApiError("invalid_request", `ctx.datasets.${call.transaction} call ${i + 1}: ${err.message}`, { ...details, call: i + 1 });
      }
    });
    return { result, changes: buffer.changes, events, datasets, log };
  }

  /**
   * Writes a handler's buffered changes, events and dataset versions inside the caller's transaction.
   * Dataset call i commits keyed `<spec.key>:dataset:<i>` (a retried handler commits it once), source
   * `{ kind: <run kind>, id: <run id> }`. The caller drains the event log after it commits.
   * @throws {ApiError} when a change is refused at commit (e.g. an update of a missing object, a write to
   *   a projected type), or conflict when a dataset has an open HTTP transaction
   */
  async commitInTx(tx: SqlWriter, buffered: BufferedHandler<unknown>, spec: HandlerRun, commit: HandlerCommit): Promise<CommitResult> {
    // the write context built field by field, not spread (see handlerContext)
    const context: WriteContext = { origin: commit.origin, actor: commit.actor, correlationId: spec.correlationId, causationId: commit.causationId, idempotencyKey: commit.idempotencyKey, newKeys: commit.newKeys };
    const result = await this.ontology.applyInTx(tx, buffered.changes, context, commit.objects);
    await this.events.writeInTx(tx, buffered.events, { newKeys: commit.newKeys });
    for (const [i, write] of buffered.datasets.entries()) {
      await this.datasetStore.commitInTx(tx, write.datasetId, {
        transaction: write.transaction,
        rows: write.rows,
        source: { kind: spec.run.kind, id: spec.run.id },
        ...(commit.actor ? { actor: commit.actor } : {}),
        correlationId: spec.correlationId,
        idempotencyKey: `${spec.key}:dataset:${i}`,
      });
    }
    return result;
  }

  /**
   * {@link HandlerRunner.execute} then commit in a transaction of its own, then drain: for handlers
   * whose run record lives elsewhere (Temporal activities, the seed).
   * @throws as `execute` and `commitInTx`
   */
  async run<T>(spec: HandlerRun, commit: HandlerCommit, fn: (ctx: SystemContext) => T | Promise<T>): Promise<T> {
    const buffered = await this.execute(spec, fn);
    await this.db.transaction((tx) => this.commitInTx(tx, buffered, spec, commit));
    await this.events.drain();
    return buffered.result;
  }
}

/** How long a handler given up on (its `ctx.signal` aborted) may take to settle before its caller stops waiting (ms). */
export const ABANDON_GRACE_MS = 1000;

/**
 * `work`, or a rejection once `signal` has been aborted for {@link ABANDON_GRACE_MS} without `work`
 * settling: a handler that ignores its `ctx.signal` (or hangs for ever) cannot hold its caller (a run in
 * flight, the shutdown waiting for it) past that. The rejection is an {@link ApiError} `shutting_down` when
 * the signal's reason is the shutdown's, else a plain Error naming the reason. What the handler does
 * afterwards is dropped (its buffer is closed by `execute`).
 */
function settledOrAbandoned<T>(work: T | Promise<T>, signal: AbortSignal): Promise<T> {
  if (!(work instanceof Promise)) return Promise.resolve(work);
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const giveUp = () => {
      timer = setTimeout(() => {
        const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
        const message = `The handler did not stop within ${ABANDON_GRACE_MS} ms of being given up on (${reason}); what it writes is dropped`;
        reject(reason === SHUTTING_DOWN ? new ApiError("shutting_down", message) : new Error(message));
      }, ABANDON_GRACE_MS);
      timer.unref();
    };
    if (signal.aborted) giveUp();
    else signal.addEventListener("abort", giveUp, { once: true });
    work.then(
      (value) => (clearTimeout(timer), signal.removeEventListener("abort", giveUp), resolve(value)),
      (err) => (clearTimeout(timer), signal.removeEventListener("abort", giveUp), reject(err)),
    );
  });
}

/**
 * What a handler's `ctx.blobs` or `ctx.artifacts` call that would store something rejects with once the
 * handler was given up on (its `ctx.signal` aborted): nothing of the call happened. `cause` is the
 * signal's reason (e.g. `handler timed out after 300000 ms`, `the server is shutting down`).
 */
export class HandlerAbandonedError extends Error {
  override readonly name = "AbortError";
  constructor(call: string, reason: unknown) {
    super(`${call} refused: this handler was given up on (${reason instanceof Error ? reason.message : String(reason)}), so it may store nothing more`, { cause: reason });
  }
}

/**
 * `api` with `methods` awaiting `beforeStore` first, and rejecting {@link HandlerAbandonedError} once
 * `signal` is aborted (checked at each call, and again after `beforeStore`). `api` itself when neither is given.
 */
function guardStores<T extends object>(name: string, api: T, methods: ReadonlyArray<keyof T & string>, { signal, beforeStore }: { signal?: AbortSignal; beforeStore?: () => Promise<void> }): T {
  if (!signal && !beforeStore) return api;
  const guarded = { ...api };
  const refused = (method: string) => (signal?.aborted ? new HandlerAbandonedError(`${name}.${method}`, signal.reason) : undefined);
  for (const method of methods) {
    const call = api[method] as (...args: unknown[]) => Promise<unknown>;
    (guarded as Record<string, unknown>)[method] = async (...args: unknown[]) => {
      let err = refused(method);
      if (err) throw err;
      if (beforeStore) {
        await beforeStore();
        if ((err = refused(method))) throw err;
      }
      return call(...args);
    };
  }
  return guarded;
}
