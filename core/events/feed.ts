import type { StoredDomainEvent } from "./catalog";
import { compileEventFilter, eventFacts, type EventFacts, type EventStream, type StreamQuery } from "./stream";

/** What a feed subscription follows: a stream query without its cursor, and the batch size. */
export type FeedQuery = Omit<StreamQuery, "afterCursor">;

/** One subscription of an {@link EventFeed} (see {@link EventFeed.subscribe}). */
export interface FeedSubscriber {
  query: FeedQuery;
  /** Read after this cursor; undefined: from the start of the stream. */
  afterCursor: string | undefined;
  /** Gets the matching events in order, at most `query.limit` at a time; a returned promise holds the next batch back until it settles. */
  handler(batch: StoredDomainEvent[]): unknown;
  /** A handler that threw or rejected (the subscription carries on). */
  onHandlerError(err: unknown): void;
  /** A read that failed (an expired or foreign cursor, an unreachable broker): the subscription has ended. */
  onReadError(err: unknown): void;
  /**
   * Told, once the subscription is live and has looked at everything the feed holds, the cursor of the
   * last event it looked at when that event did not match (its filters or permissions skipped it):
   * the position a follower resumes from without missing anything (EventStoreDB's checkpoint of a
   * filtered subscription). A follower that keeps the cursor of its last matching event instead would
   * see it expire with the skipped events after it. Optional.
   */
  onCheckpoint?(cursor: string): void;
}

interface Entry {
  event: StoredDomainEvent;
  facts: EventFacts;
}

interface Sub extends FeedSubscriber {
  matches(f: EventFacts): boolean;
  /** The last event passed (delivered or filtered out); undefined before the first. */
  cursor: string | undefined;
  /** The last event handed to the handler, or the last checkpoint given: `cursor` when nothing was skipped since. */
  told: string | undefined;
  /** Live: absolute index of the next entry to look at. */
  next: number;
  state: "replay" | "live" | "stopped";
  /** A handler's promise is pending. */
  busy: boolean;
}

/**
 * The shared, bounded in-memory tail of the stream that live subscriptions are served from (spec 6.5),
 * above the {@link EventStream} interface so the SQLite and NATS streams both get it. One reader per
 * process follows the stream (one unfiltered read per append, not one per subscription) and keeps the
 * newest events (2,048 by default), each with its filter facts computed once. The events handed to
 * handlers are shared by every subscription: handlers must not change them.
 *
 * A subscription first reads the stream itself from its cursor with its filters (the replay, which
 * also validates the cursor: an expired or foreign one fails as a stream read does). Once a read
 * answers less than a full batch it has seen everything committed before it started — so at least
 * every event the feed held then — and it joins the feed right after the later of those events and the
 * last one it read: no gap and no duplicate. From then on each append is delivered to it from memory,
 * in the order of the stream: to the first `deliveryChunk` (64) live subscriptions synchronously, to
 * the rest in later macrotasks, a chunk at a time (see {@link EventFeed.drain}). A subscription that
 * falls behind the feed's window (its handler's promise held it back while the window moved on) or a
 * feed whose read fails goes back to reading the stream from its last cursor, the same way.
 */
export class EventFeed {
  /** How many of the newest events the feed keeps by default (it holds up to twice as many between trims). */
  static readonly SIZE = 2048;
  /** Batch size of the feed's own reads by default. */
  static readonly READ_LIMIT = 1000;
  /** How many live subscriptions are handed their events per macrotask by default (see {@link EventFeed.drain}). */
  static readonly DELIVERY_CHUNK = 64;
  private readonly size: number;
  private readonly readLimit: number;
  private readonly deliveryChunk: number;

  private entries: Entry[] = [];
  /** Absolute index of entries[0]. */
  private base = 0;
  /** Absolute index of each held event, by cursor. */
  private index = new Map<string, number>();
  /** The cursor the feed's next read starts after (undefined: the start of the stream). */
  private head: string | undefined;
  /** Bumped whenever the feed starts over; a joining subscription that saw another one reads again. */
  private generation = 0;
  private starting: Promise<void> | undefined;
  private following: Promise<void> | undefined;
  private again = false;
  private readonly live = new Set<Sub>();
  /** Live subscriptions with events not yet handed to them, in the order they are to get them. */
  private readonly pending = new Set<Sub>();
  /** A drain is scheduled (setImmediate): pushes only add to `pending`. */
  private draining = false;
  private subscriptions = 0;
  private readonly onAppended = () => void this.follow();

  /**
   * @param onFeedError told when the feed's own read fails (its subscriptions then read the stream themselves)
   * @param opts `size` (events kept) and `readLimit` (batch of the feed's reads); `readLimit` ≤ `size`,
   *   so one batch never pushes a subscription that was at the head out of the window; `deliveryChunk`
   *   (live subscriptions handed their events per macrotask, ≥ 1)
   */
  constructor(
    private readonly stream: EventStream,
    private readonly onFeedError: (err: unknown) => void = () => undefined,
    opts: { size?: number; readLimit?: number; deliveryChunk?: number } = {},
  ) {
    this.size = opts.size ?? EventFeed.SIZE;
    this.readLimit = Math.min(opts.readLimit ?? EventFeed.READ_LIMIT, this.size);
    this.deliveryChunk = Math.max(1, opts.deliveryChunk ?? EventFeed.DELIVERY_CHUNK);
  }

  /**
   * Starts a subscription: replays the stream after `afterCursor`, then follows the feed.
   * @returns the unsubscribe function (idempotent); after it no handler call starts
   */
  subscribe(subscriber: FeedSubscriber): () => void {
    const sub: Sub = { ...subscriber, matches: compileEventFilter(subscriber.query), cursor: subscriber.afterCursor, told: subscriber.afterCursor, next: 0, state: "replay", busy: false };
    this.subscriptions++;
    void this.replay(sub);
    return () => this.stop(sub);
  }

  /** Number of subscriptions served from memory right now (for tests and status). */
  get liveCount(): number {
    return this.live.size;
  }

  private stop(sub: Sub): void {
    if (sub.state === "stopped") return;
    sub.state = "stopped";
    this.live.delete(sub);
    this.pending.delete(sub);
    if (--this.subscriptions === 0) this.reset(); // nobody left: stop following the stream
  }

  /** Drops everything held and stops following; the next subscription starts the feed again. */
  private reset(): void {
    this.generation++;
    this.entries = [];
    this.index.clear();
    this.pending.clear();
    this.base = 0;
    this.head = undefined;
    this.starting = undefined;
    this.stream.notifier.off("appended", this.onAppended);
  }

  /** Starts following the stream from its newest event (once per generation). */
  private ready(): Promise<void> {
    if (!this.starting) {
      const generation = this.generation;
      const starting = this.stream.latestCursor().then((cursor) => {
        if (generation !== this.generation) return;
        this.head = cursor;
        this.stream.notifier.on("appended", this.onAppended);
      });
      this.starting = starting;
      starting.catch(() => {
        if (this.starting === starting) this.starting = undefined; // the next subscription tries again
      });
    }
    return this.starting;
  }

  /**
   * Reads the stream into the feed until it is at its end, then delivers to the live subscriptions.
   * Concurrent calls share one run, and a call during a run makes it read once more, so when the
   * returned promise settles the feed holds everything committed before the call. Never rejects: a
   * failed read hands every live subscription back to its own reads and starts the feed over.
   */
  private follow(): Promise<void> {
    if (this.following) {
      this.again = true;
      return this.following;
    }
    const run = async () => {
      do {
        this.again = false;
        for (;;) {
          if (this.subscriptions === 0) return; // nobody left to deliver to
          const generation = this.generation;
          await this.ready();
          if (generation !== this.generation) continue;
          const batch = await this.stream.read({ afterCursor: this.head, limit: this.readLimit });
          if (generation !== this.generation) continue; // started over meanwhile: read in the new one
          if (batch.length) this.push(batch);
          if (batch.length < this.readLimit) break;
        }
      } while (this.again);
    };
    this.following = run()
      .catch((err) => {
        this.onFeedError(err);
        const subs = [...this.live];
        this.live.clear();
        this.reset();
        for (const sub of subs) this.toReplay(sub);
      })
      .finally(() => {
        this.following = undefined;
      });
    return this.following;
  }

  private push(batch: StoredDomainEvent[]): void {
    for (const event of batch) {
      this.index.set(event.cursor, this.base + this.entries.length);
      this.entries.push({ event, facts: eventFacts(event) });
    }
    this.head = batch[batch.length - 1]!.cursor;
    if (this.entries.length > 2 * this.size) {
      const dropped = this.entries.splice(0, this.entries.length - this.size);
      for (const e of dropped) this.index.delete(e.event.cursor);
      this.base += dropped.length;
    }
    for (const sub of this.live) this.pending.add(sub);
    this.drain();
  }

  /**
   * Hands the pending subscriptions their events, `deliveryChunk` of them now and the rest in later
   * macrotasks (setImmediate), so that commits and requests are served between chunks rather than
   * after the whole fan-out. An event committed while a drain is under way reaches the subscriptions
   * not yet served together with the earlier ones, in one handler call (one socket write for
   * `/ws/events`), and the ones already served after them: each subscription still gets its events in
   * the order of the stream, once.
   */
  private drain(): void {
    if (this.draining) return;
    let served = 0;
    for (const sub of this.pending) {
      if (served === this.deliveryChunk) {
        this.draining = true;
        setImmediate(() => {
          this.draining = false;
          this.drain();
        });
        return;
      }
      this.pending.delete(sub);
      this.deliver(sub);
      served++;
    }
  }

  /** Hands the feed's events after `sub.next` to a live subscription, synchronously while its handler is. */
  private deliver(sub: Sub): void {
    if (sub.busy || sub.state !== "live") return;
    const end = this.base + this.entries.length;
    while (sub.next < end) {
      if (sub.next < this.base) {
        // it fell behind the window (its handler held it back): read the rest from the stream
        this.live.delete(sub);
        return this.toReplay(sub);
      }
      const batch: StoredDomainEvent[] = [];
      while (sub.next < end && batch.length < sub.query.limit) {
        const entry = this.entries[sub.next - this.base]!;
        sub.next++;
        sub.cursor = entry.event.cursor;
        if (sub.matches(entry.facts)) batch.push(entry.event);
      }
      if (batch.length === 0) continue;
      sub.told = batch[batch.length - 1]!.cursor;
      let result: unknown;
      try {
        result = sub.handler(batch);
      } catch (err) {
        sub.onHandlerError(err);
      }
      if (sub.state !== "live") return;
      if (isThenable(result)) {
        sub.busy = true;
        const done = () => {
          sub.busy = false;
          if (sub.state === "live") this.deliver(sub);
          else if (sub.state === "replay") void this.replay(sub);
        };
        result.then(done, (err) => {
          sub.onHandlerError(err);
          done();
        });
        return;
      }
    }
    // caught up with the feed, past events it skipped: the position to resume from
    if (sub.onCheckpoint && sub.cursor !== undefined && sub.cursor !== sub.told) {
      sub.told = sub.cursor;
      try {
        sub.onCheckpoint(sub.cursor);
      } catch (err) {
        sub.onHandlerError(err);
      }
    }
  }

  /** Moves a subscription back to reading the stream itself (after its handler, if one is running). */
  private toReplay(sub: Sub): void {
    if (sub.state === "stopped") return;
    sub.state = "replay";
    if (!sub.busy) void this.replay(sub);
  }

  /** Reads the stream for `sub` from its cursor until it is caught up, then joins the feed. */
  private async replay(sub: Sub): Promise<void> {
    try {
      for (;;) {
        if (sub.state !== "replay") return;
        await this.ready(); // an unreachable stream fails the subscription here, as its read would
        const generation = this.generation;
        // the feed catches up first, so it holds the event at sub.cursor (committed before this call)
        // unless that one is older than its window; and every event it holds now was committed before
        // the read below starts, so the read sees it
        await this.follow();
        if (sub.state !== "replay") return;
        const joinAt = this.base + this.entries.length;
        const batch = await this.stream.read({ ...sub.query, afterCursor: sub.cursor });
        if (sub.state !== "replay") return;
        if (batch.length) {
          sub.cursor = sub.told = batch[batch.length - 1]!.cursor;
          try {
            await sub.handler(batch);
          } catch (err) {
            sub.onHandlerError(err);
          }
          if (sub.state !== "replay") return;
        }
        if (batch.length === sub.query.limit) continue;
        // caught up with everything up to joinAt; make sure the feed holds whatever the read saw after it
        await this.follow();
        if (sub.state !== "replay") return;
        if (generation !== this.generation || joinAt < this.base) continue; // started over, or the window moved past joinAt
        const last = batch.length ? this.index.get(sub.cursor!) : undefined;
        sub.next = last !== undefined && last + 1 > joinAt ? last + 1 : joinAt;
        sub.state = "live";
        this.live.add(sub);
        return this.deliver(sub);
      }
    } catch (err) {
      if (sub.state === "stopped") return;
      this.stop(sub);
      sub.onReadError(err);
    }
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === "function";
}
