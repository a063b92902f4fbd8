import { compileEventFilter, eventFacts, scanEvents, topicsOf, type EventFacts, type StreamQuery, type StreamScan } from "../events/stream";
import type { StoredDomainEvent, Topic } from "../events/catalog";
import { ApiError, isApiError, messageOf } from "../errors";
import { nowIso } from "../ids";
import { SHUTTING_DOWN } from "../lifecycle";
import { SerialPass } from "../serial-pass";
import { handlerContext, type HandlerRun } from "./handler";
import { EventScheduleStore, type EventRow } from "./event-schedule-store";
import { writeGroupCommit, type Outcome } from "./event-schedule-commit";
import { eventScheduleLimits, PartitionQueues, RETRY_BASE_MS, retryDelayMs, type ConsumerDeps, type ConsumerSnapshot, type Entry, type RegisteredEventSchedule } from "./event-schedule-model";

/** Events per stream read. */
const READ_BATCH = 500;
/** The reader stops reading ahead while this many matching events are unfinished (memory bound). */
export const MAX_BACKLOG = 10_000;
/** A cursor move over non-matching events only is written at most this often (a crash re-reads them). */
const CURSOR_FLUSH_MS = 1000;


/**
 * The durable stream consumer of ONE event schedule (spec 6.1). See `EventScheduleConsumers` for the
 * rules; in short: reads the stream after its stored cursor, runs the handler once per matching event,
 * strictly in stream order within a partition key and concurrently across partitions (up to
 * `concurrency`), and commits finished handlers together (group commit): their writes, their
 * `schedule.triggered`, the done marks, retries, dead letters and the new cursor in ONE transaction.
 */
export class ScheduleConsumer {
  private cursor: string | undefined;
  private readCursor: string | undefined;
  private readonly window: Entry[] = [];
  private readonly known = new Map<string, Entry>();
  private readonly revived = new Map<string, Entry>();
  private readonly partitions = new PartitionQueues();
  private readonly rows = new Map<string, EventRow>();
  private seq = 0;
  private revivedSeq = Number.MIN_SAFE_INTEGER;
  private runningCount = 0;
  private outcomes: Outcome[] = [];
  private committing: Promise<void> | undefined;
  private capped = false;
  private atEnd = false;
  private cursorDirty = false;
  private flushRequested = false;
  private flushTimer: NodeJS.Timeout | undefined;
  private retryTimer: { at: number; timer: NodeJS.Timeout } | undefined;
  private stopping = true;
  private idle: Array<() => void> = [];
  private deadCount = 0;
  private lastError: ConsumerSnapshot["lastError"];
  private paused = false;
  private note: string | undefined;
  private cursorExpiredAt: string | undefined;
  /** The selector's stream filters, compiled once (every event read is tested). */
  private readonly selects: (facts: EventFacts) => boolean;
  /** The selector's stream filters as a read's query (the stream skips what they exclude). */
  private readonly query: Omit<StreamQuery, "limit" | "afterCursor">;
  private readonly maxAttempts: number;
  private readonly concurrency: number;
  /** How long one attempt may run (ms) before it fails as timed out. */
  private readonly timeoutMs: number;
  /** The attempts running now, each with what abandons it (stop() giving up on it: no outcome, its signal aborted). */
  private readonly inFlight = new Map<AbortController, () => void>();
  /**
   * The topics the selector can match (undefined: any). An append notice without one of them wakes no
   * read (nor does it need to: nothing in it can match); the cursor then moves over those events at the
   * next read, at the latest on the recovery pass (`SVC_OUTBOX_RECOVERY_MS`). A failed read is retried
   * on any notice.
   */
  private readonly topics: readonly Topic[] | undefined;
  private readonly onAppended = (topics?: ReadonlySet<Topic>) => {
    if (!topics || !this.topics || this.reads.failed || this.topics.some((t) => topics.has(t))) this.poke();
  };
  /** The reader: one read pass at a time, one more when poked meanwhile; it pauses while capped. */
  private readonly reads = new SerialPass(() => this.readPass(), {
    stopped: () => this.stopping || this.capped,
    onError: (err) => this.deps.log.error({ err, scheduleId: this.id }, "event schedule read failed; retried on the next append or recovery pass"),
  });
  private readonly store: EventScheduleStore;

  constructor(
    private readonly deps: ConsumerDeps,
    readonly schedule: RegisteredEventSchedule,
  ) {
    const on = schedule.definition.on;
    this.query = { topics: on.topics, types: on.types, objectTypeId: on.objectTypeId, primaryId: on.primaryId };
    this.selects = compileEventFilter(this.query);
    this.topics = topicsOf(this.query);
    ({ maxAttempts: this.maxAttempts, concurrency: this.concurrency, timeoutMs: this.timeoutMs } = eventScheduleLimits(schedule.definition));
    this.store = new EventScheduleStore(deps.db, schedule.scheduleId);
  }

  private get id(): string {
    return this.schedule.scheduleId;
  }

  /**
   * Loads (or creates) the stored state. A schedule seen for the first time starts at the newest event
   * of the stream (no back-fill), paused when its definition says so.
   */
  async open(): Promise<void> {
    const row = await this.store.openConsumer(async () => ({ cursor: await this.deps.stream.latestCursor(), paused: this.schedule.definition.paused === true }));
    if (row.created) this.deps.log.info({ scheduleId: this.id }, "registered event schedule: it fires on events appended from now on (no back-fill)");
    this.cursor = this.readCursor = row.cursor ?? undefined;
    this.paused = row.paused === 1;
    this.note = row.note ?? undefined;
    this.cursorExpiredAt = row.cursor_expired_at ?? undefined;
    const rows = await this.store.eventRows();
    let latestError: EventRow | undefined;
    for (const r of rows) {
      if (r.last_error && (!latestError || r.updated_at > latestError.updated_at)) latestError = r;
      if (r.status === "dead") this.deadCount++;
      if (r.status === "retrying" && r.revived === 1 && r.event) this.addRevived(JSON.parse(r.event) as StoredDomainEvent, r.attempts, r.next_attempt_at ?? 0);
      else this.rows.set(r.event_id, r);
    }
    if (latestError) this.lastError = { message: latestError.last_error!, eventId: latestError.event_id, at: latestError.updated_at };
  }

  /** Starts following the stream (woken by the stream's "appended" notifier). */
  start(): void {
    if (!this.stopping) return;
    this.stopping = false;
    this.deps.stream.notifier.on("appended", this.onAppended);
    this.poke();
  }

  /** Reads again (new events or the recovery timer). */
  poke(): void {
    void this.reads.poke();
    this.kick();
  }

  /**
   * Stops: no new handler starts; handlers in flight get up to `timeoutMs` to finish, and what finished
   * is committed with the cursor. A handler still running then is abandoned (its `ctx.signal` is
   * aborted; it runs again after restart).
   */
  async stop(timeoutMs: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.deps.stream.notifier.off("appended", this.onAppended);
    clearTimeout(this.flushTimer);
    clearTimeout(this.retryTimer?.timer);
    this.flushTimer = this.retryTimer = undefined;
    await this.reads.idle();
    if (this.runningCount > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([new Promise<void>((r) => this.idle.push(r)), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
    }
    // given up on: no outcome (what they do from now on is never committed), signals aborted; they run again after restart
    for (const abandon of [...this.inFlight.values()]) abandon();
    await this.committing;
    this.flushRequested = true;
    await (this.committing = this.commitLoop());
    this.committing = undefined;
  }

  /** Drives the three parts: dispatch handlers, read ahead, commit what finished. */
  private kick(): void {
    this.dispatch();
    if (this.stopping) return;
    if (this.capped && this.partitions.size < MAX_BACKLOG) {
      this.capped = false;
      void this.reads.poke();
    }
    if (!this.committing && (this.outcomes.length > 0 || this.flushRequested)) {
      this.committing = this.commitLoop().finally(() => {
        this.committing = undefined;
        this.kick();
      });
    }
    if (this.cursorDirty && !this.flushTimer && !this.committing) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        this.flushRequested = true;
        this.kick();
      }, CURSOR_FLUSH_MS);
      this.flushTimer.unref();
    }
  }

  /** One read pass: batches after the read position until the end of the stream, a stop, or the backlog cap. */
  private async readPass(): Promise<void> {
    while (!this.stopping) {
      if (this.partitions.size >= MAX_BACKLOG) {
        this.capped = true;
        break;
      }
      let scan: StreamScan;
      try {
        // filtered by the selector, with the stream's checkpoint: the read position moves over the
        // events that do not match without reading them, so the stored cursor keeps up with the stream
        // even when nothing matches (and never outruns what the stream examined)
        scan = await scanEvents(this.deps.stream, { ...this.query, afterCursor: this.readCursor, limit: READ_BATCH });
      } catch (err) {
        if (!isApiError(err) || err.code !== "cursor_expired") throw err;
        await this.expired();
        continue;
      }
      const moved = scan.checkpoint !== undefined && scan.checkpoint !== this.readCursor;
      if (moved) {
        this.readCursor = scan.checkpoint;
        this.cursorDirty = true;
      }
      for (const e of scan.events) this.admit(e);
      if (scan.events.length) this.dispatch();
      // a read that examined nothing new (a broker's fetch that came back empty) ends the pass: the next append or recovery pass reads on
      this.atEnd = scan.end;
      if (scan.end || !moved) break;
    }
    // arms the cursor's flush (no later notice may come to do it: only those of the selector's topics wake this consumer)
    if (this.cursorDirty && !this.stopping) this.kick();
  }

  /** Whether the schedule fires on `e`: the selector, and never on what this schedule itself produced. */
  matches(e: StoredDomainEvent): boolean {
    if (!this.selects(eventFacts(e))) return false;
    const { partitionKey } = this.schedule.definition.on;
    if (partitionKey !== undefined && e.partitionKey !== partitionKey) return false;
    return (e.origin as { scheduleId?: unknown } | undefined)?.scheduleId !== this.id;
  }

  private admit(e: StoredDomainEvent): void {
    if (!this.matches(e) || this.known.has(e.id) || this.revived.has(e.id)) return;
    const row = this.rows.get(e.id);
    if (row) this.rows.delete(e.id);
    const state = row?.status === "done" ? "done" : row?.status === "dead" ? "dead" : "pending";
    const entry: Entry = { id: e.id, event: state === "pending" ? e : undefined, cursor: e.cursor, partition: e.partitionKey, occurredAt: e.occurredAt, seq: this.seq++, state, attempts: row?.attempts ?? 0, nextAttemptAt: row?.next_attempt_at ?? 0, hasRow: row !== undefined, revived: false };
    this.window.push(entry);
    this.known.set(e.id, entry);
    if (state === "pending") this.partitions.add(entry);
  }

  private addRevived(event: StoredDomainEvent, attempts: number, nextAttemptAt: number): void {
    const entry: Entry = { id: event.id, event, cursor: event.cursor, partition: event.partitionKey, occurredAt: event.occurredAt, seq: this.revivedSeq++, state: "pending", attempts, nextAttemptAt, hasRow: true, revived: true };
    this.revived.set(event.id, entry);
    this.partitions.add(entry);
  }

  /** Starts the head of every partition that may run (oldest first), up to `concurrency` at once. */
  private dispatch(): void {
    if (this.stopping || this.paused) return;
    const free = this.concurrency - this.runningCount;
    if (free <= 0) return;
    const now = Date.now();
    const { ready, wake } = this.partitions.ready(now, free);
    for (const entry of ready) this.run(entry);
    if (wake < Infinity && (!this.retryTimer || this.retryTimer.at > wake)) {
      clearTimeout(this.retryTimer?.timer);
      const timer = setTimeout(() => {
        this.retryTimer = undefined;
        this.kick();
      }, wake - now);
      timer.unref();
      this.retryTimer = { at: wake, timer };
    }
  }

  private run(entry: Entry): void {
    const event = entry.event!;
    const { scheduleId, definition } = this.schedule;
    entry.state = "running";
    this.runningCount++;
    const attempt = entry.attempts + 1;
    const startedAt = nowIso();
    const spec: HandlerRun = {
      run: { kind: "schedule", id: `${scheduleId}@${event.id}` },
      logFields: { scheduleId, eventId: event.id, attempt },
      correlationId: event.correlationId ?? event.id,
      key: `schedule:${scheduleId}:${event.id}`,
    };
    const abort = new AbortController();
    let settled = false;
    let timer: NodeJS.Timeout | undefined = undefined;
    /**
     * Ends the attempt once: with the handler's outcome, the timeout's when it comes first, or none when
     * stop() abandons it. Whatever settles later is dropped, its writes with it.
     */
    const settle = (outcome: Outcome | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.inFlight.delete(abort);
      if (outcome) this.outcomes.push(outcome);
      this.runningCount--;
      if (this.runningCount === 0) for (const resolve of this.idle.splice(0)) resolve();
      if (outcome) this.kick();
    };
    this.inFlight.set(abort, () => {
      settle(undefined);
      abort.abort(new Error(SHUTTING_DOWN));
    });
    timer = setTimeout(() => {
      const error = `handler timed out after ${this.timeoutMs} ms`;
      abort.abort(new Error(error));
      this.deps.handlers.logger(spec).warn({ timeoutMs: this.timeoutMs }, "event schedule handler timed out; the attempt failed and its writes are dropped");
      settle({ entry, attempt, startedAt, spec, ok: false, error });
    }, this.timeoutMs);
    timer.unref();
    void this.deps.handlers
      .execute(spec, (ctx) => definition.run(handlerContext(ctx, { scheduleId, occurrenceAt: event.occurredAt, event, attempt, signal: abort.signal })), { signal: abort.signal })
      .then(
        (buffered) => settle({ entry, attempt, startedAt, spec, ok: true, buffered }),
        (err) => settle({ entry, attempt, startedAt, spec, ok: false, error: messageOf(err) }),
      );
  }

  private async commitLoop(): Promise<void> {
    while (this.outcomes.length > 0 || this.flushRequested) {
      this.flushRequested = false;
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
      const batch = this.outcomes.splice(0);
      try {
        await this.commit(batch);
      } catch (err) {
        // nothing of the batch was written: its handlers run again (not counted as attempts)
        this.deps.log.error({ err, scheduleId: this.id, events: batch.length }, "event schedule commit failed; the handlers run again");
        for (const o of batch) {
          o.entry.state = "pending";
          o.entry.nextAttemptAt = Date.now() + RETRY_BASE_MS;
        }
        return;
      }
    }
  }

  /** One group commit ({@link writeGroupCommit}: one transaction, then the outbox drain), then applies what it wrote to memory. */
  private async commit(batch: Outcome[]): Promise<void> {
    const { log } = this.deps;
    const { scheduleId } = this.schedule;
    const now = nowIso();
    const { results, popped, newCursor, readAtSnapshot } = await writeGroupCommit(this.deps, this.store, this.schedule, this.maxAttempts, batch, { window: this.window, cursor: this.cursor, readCursor: () => this.readCursor }, now);
    // committed: apply to memory
    const done: Array<{ eventId: string; occurredAt: string; partitionKey: string }> = [];
    const poppedSet = new Set(popped);
    for (const { o, status, error } of results) {
      const entry = o.entry;
      if (status === "retrying") {
        entry.state = "pending";
        entry.attempts = o.attempt;
        entry.nextAttemptAt = Date.now() + retryDelayMs(o.attempt);
        entry.hasRow = true;
        this.lastError = { message: error!, eventId: entry.id, at: now };
        log.warn({ scheduleId, eventId: entry.id, attempt: o.attempt, error, retryInMs: retryDelayMs(o.attempt) }, "event schedule handler failed; retrying");
        continue;
      }
      this.partitions.remove(entry);
      entry.event = undefined;
      entry.hasRow = status === "dead" || (!poppedSet.has(entry) && !entry.revived);
      if (entry.revived) {
        this.revived.delete(entry.id);
        // its dead letter still in the read window now carries the done mark (see writeGroupCommit)
        const read = this.known.get(entry.id);
        if (status === "done" && read && !poppedSet.has(read)) read.state = "done";
      }
      entry.state = status;
      if (status === "dead") {
        this.deadCount++;
        this.lastError = { message: error!, eventId: entry.id, at: now };
        log.warn({ scheduleId, eventId: entry.id, attempts: o.attempt, error }, "event schedule handler failed its last attempt; the event is dead-lettered (POST /api/schedules/:id/retry)");
      } else {
        done.push({ eventId: entry.id, occurredAt: entry.occurredAt, partitionKey: entry.partition });
      }
    }
    this.window.splice(0, popped.length);
    for (const entry of popped) if (this.known.get(entry.id) === entry) this.known.delete(entry.id);
    this.cursor = newCursor;
    // reads made during the transaction moved the read position past the snapshot: flush it later
    this.cursorDirty = this.readCursor !== readAtSnapshot;
    if (done.length) this.deps.notifier.emit("committed", { scheduleId, events: done, at: Date.now() });
  }

  /** The stored cursor was pruned by retention: warn, record it, go on from the oldest retained event. */
  private async expired(): Promise<void> {
    const at = nowIso();
    this.deps.log.warn({ scheduleId: this.id, cursor: this.readCursor }, "event schedule cursor expired (events were pruned by retention before this schedule read them); continuing from the oldest retained event");
    this.readCursor = undefined;
    this.cursorExpiredAt = at;
    await this.store.markExpired(at);
  }

  /** Stores the paused flag (with an optional note); a paused consumer keeps reading, so its backlog shows. */
  async setPaused(paused: boolean, note: string | undefined): Promise<void> {
    await this.store.setPaused(paused, note);
    this.paused = paused;
    this.note = note;
    this.kick();
  }

  /**
   * An operator retry of a dead-lettered event: it runs again (attempts start over), next in its partition.
   * @throws {ApiError} not_found when the event is not dead-lettered for this schedule
   */
  async retry(eventId: string): Promise<void> {
    const event = await this.store.revive(eventId);
    if (!event) throw new ApiError("not_found", `Event "${eventId}" is not dead-lettered for schedule "${this.id}"`, { scheduleId: this.id, eventId });
    this.rows.delete(eventId);
    this.deadCount--;
    this.addRevived(event, 0, 0);
    this.kick();
  }

  /** The consumer's state now. */
  snapshot(): ConsumerSnapshot {
    const { oldest, retrying } = this.partitions.stats();
    return {
      paused: this.paused,
      ...(this.note !== undefined ? { note: this.note } : {}),
      ...(this.cursor !== undefined ? { cursor: this.cursor } : {}),
      backlog: this.partitions.size,
      caughtUp: this.partitions.size === 0 && this.atEnd,
      ...(oldest ? { oldestPendingAt: oldest.occurredAt, lagMs: Math.max(0, Date.now() - Date.parse(oldest.occurredAt)) } : {}),
      running: this.runningCount,
      retrying,
      deadLettered: this.deadCount,
      ...(this.lastError ? { lastError: this.lastError } : {}),
      ...(this.cursorExpiredAt ? { cursorExpiredAt: this.cursorExpiredAt } : {}),
    };
  }
}
