import { EventEmitter } from "node:events";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { DomainEventEnvelope, StoredDomainEvent } from "./catalog";
import { compileEventFilter, eventFacts, type EventStream, type StreamQuery, type StreamScan } from "./stream";
import { decodeCursor, encodeCursor } from "./cursor";
import { eventPermissions } from "../auth/permissions";
import { ApiError, errorCode, messageOf } from "../errors";
import { ConfigError } from "../config";

/** Options of the NATS JetStream stream. */
export interface NatsStreamOptions {
  servers: string;
  /** JetStream stream name (one per project). */
  stream: string;
  /** Subject prefix; events are published on `<prefix>.<topic>.<type>`. */
  subjectPrefix: string;
  /** Retention (`max_age`) set on the stream. */
  retentionMs: number;
}

/**
 * A custom broker stream on NATS JetStream (spec 6.2), with the built-in stream's cursor semantics:
 * cursor = the stream's creation time (epoch) + the JetStream sequence, opaque; `append` publishes with
 * `msgID` = event id, so the server drops a redelivered id within its duplicate window (2 minutes, or
 * the retention when shorter: JetStream requires it) and
 * consumers de-duplicate on id beyond it; retention is the stream's `max_age`. JetStream silently clips
 * a start sequence older than the first kept message, so expiry is detected here: a cursor below the
 * first retained sequence answers `cursor_expired`.
 *
 * Reads use an ordered consumer from the cursor's next sequence and filter in the client (topic, type,
 * subject, permissions), since filters are not known to JetStream's subjects.
 */
export class NatsEventStream implements EventStream {
  readonly notifier = new EventEmitter();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly opts: NatsStreamOptions,
    private readonly epoch: string,
  ) {
    this.notifier.setMaxListeners(0);
  }

  /**
   * Connects (reconnecting forever once connected) and creates the stream when missing.
   * @throws {ConfigError} naming `NATS_URL` (the service's setting of `servers`) when no server answers
   *   there at startup (connection refused, a host that does not resolve)
   */
  static async open(opts: NatsStreamOptions): Promise<NatsEventStream> {
    const nc = await connect({ servers: opts.servers, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, name: "svc" }).catch((err: unknown) => {
      const cause = errorCode((err as { cause?: unknown }).cause);
      const why = `${messageOf(err)}${cause ? `, ${cause}` : ""}`;
      throw new ConfigError("NATS_URL", `${opts.servers} has no NATS server answering (${why}): start nats-server there, or set NATS_URL to one`);
    });
    const jsm = await jetstreamManager(nc);
    let info;
    try {
      info = await jsm.streams.info(opts.stream);
    } catch {
      info = await jsm.streams.add({ name: opts.stream, subjects: [`${opts.subjectPrefix}.>`], max_age: opts.retentionMs * 1_000_000, duplicate_window: Math.min(120_000, opts.retentionMs) * 1_000_000, storage: StorageType.File });
    }
    const epoch = `nats${Date.parse(info.created).toString(36)}`;
    return new NatsEventStream(nc, jetstream(nc), jsm, opts, epoch);
  }

  async append(envelopes: readonly DomainEventEnvelope[]): Promise<void> {
    for (const e of envelopes) {
      await this.js.publish(`${this.opts.subjectPrefix}.${e.topic}.${e.type}`, JSON.stringify(e), { msgID: e.id, timeout: 2000 });
    }
    if (envelopes.length) this.notifier.emit("appended", new Set(envelopes.map((e) => e.topic)));
  }

  async read(q: StreamQuery): Promise<StoredDomainEvent[]> {
    return (await this.scan(q)).events;
  }

  /**
   * {@link EventStream.scan}: the ordered consumer's messages are examined one by one; the checkpoint is
   * the last one examined (the page's last event when it filled up, else the stream's last message as
   * it stood when the read began, unless a fetch came back empty before it).
   */
  async scan(q: StreamQuery): Promise<StreamScan> {
    const state = (await this.info()).state;
    let start = state.first_seq;
    if (q.afterCursor !== undefined) {
      const seq = decodeCursor(this.epoch, q.afterCursor);
      if (seq + 1 < state.first_seq && state.messages > 0) throw new ApiError("cursor_expired", "The cursor points before the retained events; refetch current state and continue from latestCursor (GET /api/events/latest-cursor)", { afterCursor: q.afterCursor });
      start = Math.max(seq + 1, state.first_seq);
    }
    if (state.messages === 0 || start > state.last_seq) return { events: [], checkpoint: undefined, end: true };
    const consumer = await this.js.consumers.get(this.opts.stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start });
    const out: StoredDomainEvent[] = [];
    const matches = compileEventFilter(q);
    let next = start;
    let examined: number | undefined;
    while (out.length < q.limit && next <= state.last_seq) {
      const batch = Math.min(500, state.last_seq - next + 1);
      const messages = await consumer.fetch({ max_messages: batch, expires: 2000 });
      let got = 0;
      for await (const m of messages) {
        got++;
        next = m.seq + 1;
        if (out.length < q.limit) {
          examined = m.seq;
          const e = m.json<DomainEventEnvelope>();
          if (matches(eventFacts(e))) out.push({ ...e, cursor: encodeCursor(this.epoch, m.seq) });
        }
        if (got >= batch) break;
      }
      if (got === 0) break;
    }
    await consumer.delete().catch(() => undefined);
    return { events: out, checkpoint: examined === undefined ? undefined : encodeCursor(this.epoch, examined), end: out.length < q.limit && examined === state.last_seq };
  }

  /** @throws {ApiError} invalid_request when `cursor` is not a cursor of this stream */
  checkCursor(cursor: string): void {
    decodeCursor(this.epoch, cursor);
  }

  async latestCursor(): Promise<string | undefined> {
    const { state } = await this.info();
    return state.messages > 0 ? encodeCursor(this.epoch, state.last_seq) : undefined;
  }

  /** Retention is the stream's `max_age`: nothing to prune here. */
  async prune(): Promise<number> {
    return 0;
  }

  private async info() {
    try {
      return await this.jsm.streams.info(this.opts.stream);
    } catch (err) {
      throw new ApiError("unavailable", `The event broker did not answer: ${(err as Error).message}`);
    }
  }

  /** Drains and closes the connection. */
  async close(): Promise<void> {
    await this.nc.drain().catch(() => undefined);
  }
}
