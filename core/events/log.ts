import * as v from "valibot";
import { inject, injectable } from "../di";
import { SubjectSchema } from "../sdk/records";
import { timestampSchema, TIMESTAMP_WORDS } from "../sdk/time";
import { Database, type SqlWriter } from "../store/db";
import { ProjectRegistry } from "../project/registry";
import { Outbox } from "./outbox";
import { EVENT_STREAM, readEventsJson, type EventJsonPage, type EventStream, type StreamQuery } from "./stream";
import { EVENT_TOPICS, ONTOLOGY_TOPICS, type Actor, type DomainEventEnvelope, type EventType, type Origin, type StoredDomainEvent } from "./catalog";
import { ApiError } from "../errors";
import { EventFeed } from "./feed";
import { newId, nowIso } from "../ids";
import { LOGGER, type Logger } from "../logger";
import { Metrics, type Counter } from "../metrics";

/** One event to append: `type` and `payload`, plus optional envelope fields (spec 2.3, 6.2). */
export interface AppendInput {
  type: EventType;
  payload: Record<string, unknown>;
  partitionKey?: string;
  correlationId?: string;
  causationId?: string;
  idempotencyKey?: string;
  actor?: Actor;
  metadata?: Record<string, unknown>;
  origin?: Origin;
  commitId?: string;
  commitOrdinal?: number;
}

/** `[idempotencyKey, eventId, createdAt]`: one event's key, as `event_keys` stores it. */
type EventKeyRow = [string, string, string];
/** Records the keys of a JSON array of {@link EventKeyRow}s; a key already there (or earlier in the array) is left as it is. */
const INSERT_EVENT_KEYS = "INSERT INTO event_keys (idempotency_key, event_id, created_at) SELECT value->>0, value->>1, value->>2 FROM json_each(?) WHERE true ON CONFLICT DO NOTHING";

/**
 * Records `rows`' idempotency keys in the caller's transaction, in one statement whatever their number
 * (one awaited call to SQLite: a workflow's batch of records carries a key per record).
 * @returns the ids of the events whose key was unused, so recorded now (the first row of two with one
 *   key in `rows`); undefined when `rows` is empty (no statement)
 */
async function recordKeys(tx: SqlWriter, rows: readonly EventKeyRow[]): Promise<Set<string> | undefined> {
  if (rows.length === 0) return undefined;
  if (rows.length === 1) {
    const [key, id, at] = rows[0]!;
    const { changes } = await tx.run("INSERT INTO event_keys (idempotency_key, event_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [key, id, at]);
    return new Set(changes ? [id] : []);
  }
  const stored = await tx.all<{ event_id: string }>(`${INSERT_EVENT_KEYS} RETURNING event_id`, [JSON.stringify(rows)]);
  return new Set(stored.map((r) => r.event_id));
}

/** Event keys deleted per transaction by {@link pruneEventKeys}. */
export const EVENT_KEYS_BATCH = 2000;
/**
 * A batch of the event keys recorded before `[ISO 8601 cutoff]` whose event is not waiting in the outbox
 * (a broker down longer than the retention: a key stays while its event is unpublished, so an append
 * again under it is still refused; once published, the key goes by the time it was recorded, though the
 * broker's `max_age` counts from the publication), along `event_keys_by_time`; exported for its
 * query-plan test.
 */
export const EVENT_KEYS_DUE = `SELECT k.idempotency_key FROM event_keys AS k WHERE k.created_at < ? AND NOT EXISTS (SELECT 1 FROM outbox AS o WHERE o.event_id = k.event_id) ORDER BY k.created_at LIMIT ${EVENT_KEYS_BATCH}`;

/**
 * The event keys' retention (spec 6.2): deletes the idempotency keys recorded before `cutoffMs` (epoch
 * ms; the app passes now minus `SVC_EVENT_RETENTION_MS`), whatever the stream: the built-in stream's
 * events go in the same pass, a broker's (NATS's `max_age`) in the broker, and their keys in
 * `event_keys` only here. A key forgotten lets an event appended again under it be written: its first
 * event is past the retention (a cursor to it answers `cursor_expired`); a key whose event still waits
 * in the outbox stays ({@link EVENT_KEYS_DUE}). Deletes {@link EVENT_KEYS_BATCH}
 * keys a transaction along `event_keys_by_time` (migration 026), each a short write beside the
 * requests of its group commit, until none is left before the cutoff or `stopped()` says so.
 * @returns the keys deleted
 */
export async function pruneEventKeys(db: Database, cutoffMs: number, stopped: () => boolean = () => false): Promise<number> {
  const cutoff = new Date(cutoffMs).toISOString();
  let deleted = 0;
  for (;;) {
    const { changes } = await db.transaction((tx) =>
      tx.run(`DELETE FROM event_keys WHERE idempotency_key IN (${EVENT_KEYS_DUE})`, [cutoff]),
    );
    deleted += changes;
    if (changes < EVENT_KEYS_BATCH || stopped()) return deleted;
  }
}

/** Payload fields each catalog type must carry (spec 2.4), checked on append. */
const REQUIRED_FIELDS: Partial<Record<EventType, string[]>> = {
  "action.requested": ["actionId", "runId"],
  "action.completed": ["actionId", "runId", "finishedAt"],
  "action.failed": ["actionId", "runId", "error", "finishedAt"],
  "schedule.triggered": ["scheduleId", "occurrenceAt", "triggeredAt", "occurrenceKey"],
  "rule.triggered": ["ruleId", "subject"],
  "rule.resolved": ["ruleId", "subject"],
  "sync.run.started": ["syncId", "runId"],
  "sync.run.finished": ["syncId", "runId"],
  "pipeline.run.started": ["pipelineId", "runId"],
  "pipeline.run.step.started": ["pipelineId", "runId"],
  "pipeline.run.step.finished": ["pipelineId", "runId"],
  "pipeline.run.finished": ["pipelineId", "runId"],
  "dataset.version.committed": ["datasetId"],
};
for (const t of Object.keys(EVENT_TOPICS) as EventType[]) if (t.startsWith("workflow.")) REQUIRED_FIELDS[t] = ["workflowId", "runId"];

const ID = { schema: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")), what: "a non-empty string" };
const TIMESTAMP = { schema: timestampSchema(), what: TIMESTAMP_WORDS };
/**
 * What each catalog field holds, as the service writes it (spec 2.4): ids are non-empty strings, times
 * ISO 8601 timestamps, `subject` an object reference, `error` an object with a `message`; `what` says
 * it in words. {@link EventLog.prepare} checks every append with these schemas, and `POST /api/events`
 * (plugins/events/append.ts) validates and documents its body with them. A field not named here
 * (`params`) may hold any value.
 */
export const CATALOG_FIELDS: Readonly<Record<string, { schema: v.GenericSchema; what: string }>> = {
  actionId: ID, runId: ID, scheduleId: ID, occurrenceKey: ID, ruleId: ID, syncId: ID, pipelineId: ID, workflowId: ID, datasetId: ID,
  finishedAt: TIMESTAMP, occurrenceAt: TIMESTAMP, triggeredAt: TIMESTAMP,
  subject: { schema: SubjectSchema, what: '{ kind: "object", objectTypeId, primaryId }' },
  error: { schema: v.looseObject({ message: v.string() }), what: "an object with a message" },
};

/**
 * The payload fields an appended event of `type` must carry (spec 2.4), as {@link EventLog.prepare}
 * checks them; empty for types without required fields. Routes use it to document their bodies.
 */
export function requiredPayloadFields(type: EventType): readonly string[] {
  return REQUIRED_FIELDS[type] ?? [];
}

/** The partition key used when none is given: the run, else the subject. */
function defaultPartitionKey(p: Record<string, any>): string {
  if (p.runId) return String(p.runId);
  if (p.objectTypeId) return `${p.objectTypeId}:${p.primaryId ?? p.objectId}`;
  if (p.sourceTypeId) return `${p.sourceTypeId}:${p.sourceId}`;
  if (p.subject?.objectTypeId) return `${p.subject.objectTypeId}:${p.subject.primaryId}`;
  return String(p.scheduleId ?? p.datasetId ?? p.ruleId ?? "global");
}

/**
 * The domain event log (spec 6): builds envelopes, writes them through the outbox and reads them from
 * the stream. This is the service behind the SDK's `events.read`, `events.latestCursor`,
 * `events.subscribe` and `events.append` (spec 6.3).
 */
@injectable()
export class EventLog {
  private readonly projectId: string;
  /** The live tail every subscription of this process is served from (see {@link EventFeed}). */
  private readonly feed: EventFeed;
  /** `svc_events_appended_total{type}`: the events this process wrote to the log, counted as their transaction commits. */
  private readonly appended: Counter<"type">;

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(Outbox) private readonly outbox: Outbox,
    @inject(EVENT_STREAM) private readonly stream: EventStream,
    @inject(ProjectRegistry) project: ProjectRegistry,
    @inject(LOGGER) private readonly log: Logger,
    @inject(Metrics) metrics: Metrics,
  ) {
    this.appended = metrics.counter("svc_events_appended_total", "Domain events this process wrote to the event log, by type, counted when their transaction commits (with a broker stream they reach it through the outbox: svc_outbox_backlog)", ["type"]);
    this.projectId = project.id;
    this.feed = new EventFeed(stream, (err) => this.log.warn({ err }, "the event feed's read failed; subscriptions read the stream themselves"));
  }

  /** Builds a complete envelope (id, schemaVersion 1, projectId, occurredAt, topic, partitionKey). */
  envelope(input: AppendInput): DomainEventEnvelope {
    const e: DomainEventEnvelope = {
      id: newId("evt"),
      schemaVersion: 1,
      projectId: this.projectId,
      occurredAt: nowIso(),
      type: input.type,
      topic: EVENT_TOPICS[input.type],
      partitionKey: input.partitionKey ?? defaultPartitionKey(input.payload),
      payload: input.payload,
    };
    for (const key of ["correlationId", "causationId", "idempotencyKey", "actor", "metadata", "origin", "commitId", "commitOrdinal"] as const) {
      if (input[key] !== undefined) (e as any)[key] = input[key];
    }
    return e;
  }

  /**
   * Writes envelopes inside the caller's transaction (any type, including ontology facts: this is the
   * runtime's own path): straight into the stream when it lives in the same database (the built-in
   * SQLite stream: the events are readable exactly when the transaction commits), else into the outbox
   * (a broker stream, spec 6.2). An envelope whose `idempotencyKey` was already appended is skipped.
   * Call {@link EventLog.drain} after the transaction commits (it answers at once without an outbox).
   *
   * @param options.newKeys keys the caller looked up itself in this transaction and found unused (an
   *   event schedule's group commit looks up all its derived keys in one statement): an envelope with
   *   one of them is written without a lookup, and the caller records its key itself, once for all its
   *   writes, with {@link EventLog.recordKeysNow}. The other keys are looked up together, in one
   *   statement.
   * @returns the envelopes actually written
   */
  async writeInTx(tx: SqlWriter, envelopes: readonly DomainEventEnvelope[], options?: { newKeys?: ReadonlySet<string> }): Promise<DomainEventEnvelope[]> {
    const newKeys = options?.newKeys;
    const lookedUp: EventKeyRow[] = [];
    for (const e of envelopes) {
      if (e.idempotencyKey !== undefined && !newKeys?.has(e.idempotencyKey)) lookedUp.push([e.idempotencyKey, e.id, e.occurredAt]);
    }
    const stored = await recordKeys(tx, lookedUp);
    const written = stored ? envelopes.filter((e) => e.idempotencyKey === undefined || newKeys?.has(e.idempotencyKey) || stored.has(e.id)) : [...envelopes];
    await this.writeUnkeyed(tx, written);
    return written;
  }

  /**
   * Records the idempotency keys of `envelopes`, written with {@link EventLog.writeInTx}'s `newKeys`,
   * in one statement (a key already there is left as it is). Run in the caller's own callback, not
   * deferred to the group's COMMIT: a later caller of the same database group (a client's
   * `POST /api/events` with one of these keys) then finds them used. Envelopes without a key are ignored.
   */
  async recordKeysNow(tx: SqlWriter, envelopes: readonly DomainEventEnvelope[]): Promise<void> {
    const rows: EventKeyRow[] = envelopes.flatMap((e) => (e.idempotencyKey === undefined ? [] : [[e.idempotencyKey, e.id, e.occurredAt] as EventKeyRow]));
    if (rows.length) await tx.run(INSERT_EVENT_KEYS, [JSON.stringify(rows)]);
  }

  /** Writes `envelopes` into the stream (in the transaction) or the outbox, without looking at their keys. */
  private async writeUnkeyed(tx: SqlWriter, envelopes: readonly DomainEventEnvelope[]): Promise<void> {
    if (envelopes.length === 0) return;
    if (this.stream.writeInTx) await this.stream.writeInTx(tx, envelopes);
    else await this.outbox.enqueue(tx, envelopes);
    // once written (a write that threw and was caught in the same savepoint is not counted)
    tx.afterCommit(() => {
      for (const e of envelopes) this.appended.inc({ type: e.type });
    });
  }

  /**
   * Appends the outbox to the stream now (never throws; see {@link Outbox.drain}), waiting at most
   * `maxWaitMs`: the envelopes are already durable, so a slow or unreachable broker never holds up the
   * writer (the drain carries on in the background and the recovery pass retries). With a stream that
   * writes in the caller's transaction nothing waits in the outbox: it answers at once (the recovery
   * pass still drains what an older version left there).
   */
  drain(maxWaitMs = 250): Promise<void> {
    if (this.stream.writeInTx) return Promise.resolve();
    const drained = this.outbox.drain();
    return Promise.race([drained, new Promise<void>((resolve) => setTimeout(resolve, maxWaitMs).unref())]);
  }

  /**
   * Validates supported non-ontology events and builds their envelopes without writing anything
   * (for callers that commit them later in their own transaction with {@link EventLog.writeInTx}).
   *
   * @throws {ApiError} invalid_request for an unknown type, an ontology type (object.*, link.*,
   *   telemetry.* are emitted only by the service) or a payload missing its catalog fields, or holding one
   *   of another kind (an id that is not a non-empty string, a time that is no ISO timestamp, …)
   */
  prepare(inputs: readonly AppendInput[]): DomainEventEnvelope[] {
    return inputs.map((input, index) => {
      const topic = EVENT_TOPICS[input.type];
      if (!topic) throw new ApiError("invalid_request", `Unknown event type "${input.type}"`, { index });
      if (ONTOLOGY_TOPICS.has(topic)) {
        throw new ApiError("invalid_request", `"${input.type}" is an ontology event: it is emitted by the service after an ontology write and cannot be appended`, { index, type: input.type });
      }
      const required = REQUIRED_FIELDS[input.type] ?? [];
      const missing = required.filter((f) => input.payload?.[f] === undefined);
      if (missing.length) throw new ApiError("invalid_request", `Payload of "${input.type}" lacks ${missing.join(", ")}`, { index, missing });
      for (const f of required) {
        const field = CATALOG_FIELDS[f];
        if (field && !v.is(field.schema, input.payload[f])) throw new ApiError("invalid_request", `Payload of "${input.type}": ${f} must be ${field.what}`, { index, field: f });
      }
      return this.envelope(input);
    });
  }

  /**
   * Appends supported non-ontology events (spec 6.2, 6.3 `events.append`) in one transaction, then
   * drains. Events whose idempotencyKey was seen before are skipped.
   *
   * @throws {ApiError} as {@link EventLog.prepare}; nothing is written then
   */
  async append(inputs: readonly AppendInput[]): Promise<DomainEventEnvelope[]> {
    const envelopes = this.prepare(inputs);
    const written = await this.db.transaction((tx) => this.writeInTx(tx, envelopes));
    await this.drain();
    return written;
  }

  /** Reads stored events oldest first (spec 6.3 `events.read`). */
  read(query: StreamQuery): Promise<StoredDomainEvent[]> {
    return this.stream.read(query);
  }

  /** Newest retained cursor, or undefined for an empty stream (spec 6.3). */
  latestCursor(): Promise<string | undefined> {
    return this.stream.latestCursor();
  }

  /**
   * Checks that `cursor` is a cursor of this stream (`EventStream.checkCursor`), e.g. before a
   * subscription is acknowledged. @throws {ApiError} invalid_request when it is not
   */
  checkCursor(cursor: string): void {
    this.stream.checkCursor?.(cursor);
  }

  /**
   * Reads stored events as JSON bytes ({@link EventJsonPage}: the texts of the stored events, cursor
   * included, oldest first, joined by commas): the same events as {@link EventLog.read}, for answers
   * that pass them on without looking inside.
   */
  readJson(query: StreamQuery): Promise<EventJsonPage> {
    return readEventsJson(this.stream, query);
  }

  /**
   * Streams new events to `handler` in batches of at most `limit` (default 500) (spec 6.3
   * `events.subscribe`), starting after `query.afterCursor`, from the start with `fromStart`, else
   * after the newest event at the time of the call. Retained events are replayed from the stream,
   * then live ones come from the process's shared {@link EventFeed}, in order with no gap and no
   * duplicate. The events are shared with other subscriptions: the handler must not change them. A
   * handler's promise holds the next batch back; handler errors are swallowed and logged. A read
   * error (an expired or foreign cursor) ends the subscription and goes to `onReadError` when given
   * (else it is logged). `onCheckpoint`, when given, is told the position past skipped events once the
   * subscription is caught up (see `FeedSubscriber.onCheckpoint`). Answers the unsubscribe function.
   */
  subscribe(query: Omit<StreamQuery, "limit"> & { limit?: number; fromStart?: boolean }, handler: (events: StoredDomainEvent[]) => unknown, onReadError?: (err: unknown) => void, onCheckpoint?: (cursor: string) => void): () => void {
    const { afterCursor, fromStart, limit, ...filters } = query;
    const readError = onReadError ?? ((err: unknown) => this.log.warn({ err }, "events.subscribe read failed"));
    const start = (cursor: string | undefined) =>
      this.feed.subscribe({
        query: { ...filters, limit: limit ?? 500 },
        afterCursor: cursor,
        handler,
        onHandlerError: (err) => this.log.warn({ err }, "events.subscribe handler failed; error swallowed"),
        onReadError: readError,
        ...(onCheckpoint ? { onCheckpoint } : {}),
      });
    if (afterCursor !== undefined || fromStart) return start(afterCursor);
    let stopped = false;
    let stop: () => void = () => undefined;
    this.latestCursor().then(
      (cursor) => {
        if (!stopped) stop = start(cursor);
      },
      (err) => {
        if (!stopped) readError(err);
      },
    );
    return () => {
      stopped = true;
      stop();
    };
  }
}
