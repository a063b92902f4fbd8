import { EventEmitter } from "node:events";
import type { SqlWriter } from "../store/db";
import type { InjectionToken } from "../di";
import { EVENT_TOPICS, eventSubject, type DomainEventEnvelope, type StoredDomainEvent, type Topic } from "./catalog";
import { eventPermissions } from "../auth/permissions";

/** A read of the stream, oldest first (spec 6.3 `events.read`). */
export interface StreamQuery {
  afterCursor?: string;
  topics?: readonly Topic[];
  types?: readonly string[];
  objectTypeId?: string;
  primaryId?: string;
  actionId?: string;
  runId?: string;
  /** At most this many events (1..1000). */
  limit: number;
  /** When set, only events whose required permissions are all in this list (spec 5). */
  permissions?: readonly string[];
}

/**
 * Stored events as JSON, ready to be spliced into an answer: `json` is the UTF-8 bytes of the
 * events' JSON texts (each a stored event, cursor included, as `JSON.parse` would read it back into
 * what {@link EventStream.read} answers), oldest first, joined by commas: the inside of a JSON array,
 * without its brackets (empty for no event). `count` is how many events it holds.
 */
export interface EventJsonPage {
  count: number;
  json: Buffer;
  /** The `cursor` of the page's last event (undefined for no event). */
  lastCursor: string | undefined;
  /**
   * Where the reader continues (its next `afterCursor`), as {@link StreamScan}'s checkpoint: the last
   * event's cursor on a full page; on a shorter one (the reader is caught up), the newest position the
   * read covered, past the events the query skipped (other filters, other permissions), so a reader
   * whose filter matches nothing for a while keeps a cursor inside the retained window; the query's own
   * `afterCursor` when the read covered nothing (undefined for an empty stream read from its start).
   */
  checkpoint: string | undefined;
}

/**
 * Stored events' JSON texts as an {@link EventJsonPage}: their UTF-8 bytes joined by commas, encoded
 * once; `lastCursor` is the last text's cursor, `checkpoint` as given (default: `lastCursor`).
 */
export function eventJsonPage(texts: readonly string[], lastCursor: string | undefined, checkpoint: string | undefined = lastCursor): EventJsonPage {
  return { count: texts.length, json: Buffer.from(texts.join(",")), lastCursor, checkpoint };
}

/**
 * What a filtered read examined (EventStoreDB's "checkpoint" of a filtered subscription): `events` are
 * what `read` answers for the query; `checkpoint` is the cursor of the last event the read examined,
 * matching or not (undefined when it examined none: the position stays `afterCursor`), and every event
 * up to it that answers the query is in `events`, so reading on after `checkpoint` misses nothing.
 * `end` is true when the read reached the stream's last event as it stood during the read.
 */
export interface StreamScan {
  events: StoredDomainEvent[];
  checkpoint: string | undefined;
  end: boolean;
}

/** DI token of the process's {@link EventStream} (built-in SQLite or NATS JetStream). */
export const EVENT_STREAM = Symbol("svc.EventStream") as InjectionToken<EventStream>;

/**
 * Where envelopes go after the outbox (spec 6.2). The built-in one is {@link SqliteEventStream};
 * a broker stream implements the same contract.
 *
 * Contract: `append` is idempotent on envelope id and keeps the given order; cursors are opaque and
 * strictly increasing in append order; `read` answers events after the cursor, oldest first.
 */
export interface EventStream {
  append(envelopes: readonly DomainEventEnvelope[]): Promise<void>;
  read(query: StreamQuery): Promise<StoredDomainEvent[]>;
  /**
   * The same events as {@link EventStream.read} as one JSON text's bytes (see {@link EventJsonPage}),
   * for answers that only pass them on (`GET /api/events`). Optional: without it callers serialize
   * what `read` answers ({@link readEventsJson}).
   */
  readJson?(query: StreamQuery): Promise<EventJsonPage>;
  /**
   * A filtered read that also answers how far it looked ({@link StreamScan}), so that a follower of a
   * few events (an event schedule) moves its stored position over the events that do not match
   * without reading them. Optional: without it {@link scanEvents} reads unfiltered and filters here.
   * @throws {ApiError} as `read` (cursor_expired, invalid_request)
   */
  scan?(query: StreamQuery): Promise<StreamScan>;
  /**
   * Appends inside the caller's own transaction, for a stream kept in the same SQLite database as the
   * rows the events describe: the events are in the stream exactly when those rows commit (no outbox,
   * no drain, nothing to recover after a crash), and `"appended"` is emitted after that commit.
   * Idempotent on envelope id like `append`. The outbox uses it too, to delete what it delivered in the
   * same commit. Optional: a broker stream has no such transaction, and its events go through the
   * outbox (spec 6.2).
   */
  writeInTx?(tx: SqlWriter, envelopes: readonly DomainEventEnvelope[]): Promise<void>;
  latestCursor(): Promise<string | undefined>;
  /**
   * Checks that `cursor` is one of this stream's (not whether it is still retained), before a
   * subscription acknowledges it. Optional: without it a foreign cursor is refused by the first read.
   * @throws {ApiError} invalid_request when it is not
   */
  checkCursor?(cursor: string): void;
  /** Drops events older than `retentionMs`; answers how many were dropped. */
  prune(retentionMs: number): Promise<number>;
  /**
   * Emits `"appended"` after each successful append, with the topics appended (`ReadonlySet<Topic>`;
   * notices may be coalesced, then the set holds every topic since the last one). A follower that
   * reads only some topics can skip a notice without them.
   */
  readonly notifier: EventEmitter;
  /** Releases connections (broker streams). */
  close?(): Promise<void>;
}

/**
 * What the stream's filters and permissions look at in one event (the SQLite stream's columns):
 * computed once per event by {@link eventFacts} so that many subscriptions can test it cheaply.
 */
export interface EventFacts {
  topic: Topic;
  type: string;
  subjectType: string | undefined;
  subjectId: string | undefined;
  actionId: unknown;
  runId: unknown;
  perm1: string;
  perm2: string | null;
}

/** The {@link EventFacts} of an event (its subject per `eventSubject`, its permissions per `eventPermissions`). */
export function eventFacts(e: Pick<DomainEventEnvelope, "topic" | "type" | "payload">): EventFacts {
  const p = e.payload as Record<string, any>;
  const subject = eventSubject(p);
  const [perm1, perm2] = eventPermissions(e);
  return { topic: e.topic, type: e.type, subjectType: subject?.objectTypeId, subjectId: subject?.primaryId, actionId: p.actionId, runId: p.runId, perm1, perm2 };
}

/**
 * The topics a read can match, from its `topics` and `types` filters (a type belongs to one topic);
 * undefined when it is not narrowed to topics (or names a type outside the catalog: read everything).
 */
export function topicsOf(q: Pick<StreamQuery, "topics" | "types">): readonly Topic[] | undefined {
  let topics: Set<Topic> | undefined = q.topics?.length ? new Set(q.topics) : undefined;
  if (q.types?.length) {
    const ofTypes = new Set<Topic>();
    for (const type of q.types) {
      const topic = (EVENT_TOPICS as Record<string, Topic>)[type];
      if (topic === undefined) return topics ? [...topics] : undefined;
      ofTypes.add(topic);
    }
    topics = topics ? new Set([...topics].filter((t) => ofTypes.has(t))) : ofTypes;
  }
  return topics ? [...topics] : undefined;
}

/**
 * A query's subject filters and permissions as one predicate over {@link EventFacts} (what SQL does for
 * SQLite): empty `topics`/`types` lists filter nothing; with `permissions`, an event passes when every
 * permission it requires is in the list (spec 5). Built once per query; the sets make each test O(1).
 */
export function compileEventFilter(q: Omit<StreamQuery, "limit" | "afterCursor">): (f: EventFacts) => boolean {
  const topics = q.topics?.length ? new Set<string>(q.topics) : undefined;
  const types = q.types?.length ? new Set<string>(q.types) : undefined;
  const permissions = q.permissions ? new Set(q.permissions) : undefined;
  const { objectTypeId, primaryId, actionId, runId } = q;
  return (f) =>
    (topics === undefined || topics.has(f.topic)) &&
    (types === undefined || types.has(f.type)) &&
    (objectTypeId === undefined || f.subjectType === objectTypeId) &&
    (primaryId === undefined || f.subjectId === primaryId) &&
    (actionId === undefined || f.actionId === actionId) &&
    (runId === undefined || f.runId === runId) &&
    (permissions === undefined || (permissions.has(f.perm1) && (f.perm2 === null || permissions.has(f.perm2))));
}

/**
 * A read as stored events' JSON ({@link EventJsonPage}): the stream's own `readJson` when it has one,
 * else its `scan` (for the checkpoint) or `read`, serialized here.
 */
export async function readEventsJson(stream: EventStream, q: StreamQuery): Promise<EventJsonPage> {
  if (stream.readJson) return stream.readJson(q);
  if (stream.scan) {
    const { events, checkpoint } = await stream.scan(q);
    return eventJsonPage(events.map((e) => JSON.stringify(e)), events.at(-1)?.cursor, checkpoint ?? q.afterCursor);
  }
  const events = await stream.read(q);
  return eventJsonPage(events.map((e) => JSON.stringify(e)), events.at(-1)?.cursor, events.at(-1)?.cursor ?? q.afterCursor);
}

/**
 * A filtered read with its checkpoint ({@link StreamScan}): the stream's own `scan` when it has one
 * (which skips non-matching events without parsing them), else one unfiltered `read` of `q.limit`
 * events filtered here (the checkpoint is the last event read; `end` when fewer came).
 * @throws {ApiError} as {@link EventStream.read}
 */
export async function scanEvents(stream: EventStream, q: StreamQuery): Promise<StreamScan> {
  if (stream.scan) return stream.scan(q);
  const batch = await stream.read({ afterCursor: q.afterCursor, limit: q.limit });
  const matches = compileEventFilter(q);
  return { events: batch.filter((e) => matches(eventFacts(e))), checkpoint: batch.at(-1)?.cursor, end: batch.length < q.limit };
}
