import type { EventEmitter } from "node:events";
import type { Database } from "../store/db";
import type { EventLog } from "../events/log";
import type { EventStream } from "../events/stream";
import type { StoredDomainEvent } from "../events/catalog";
import type { Logger } from "../logger";
import type { EventSelector, ScheduleDefinition } from "../sdk/connector";
import type { HandlerRunner } from "./handler";

/*
 * The model of the event schedules' consumers (spec 6.1): what a consumer tracks per event, its
 * partition queues, its retry delays and what it reports. The rules are in event-schedules.ts.
 */

/** An event schedule with its connector (a schedule whose definition has `on`). */
export interface RegisteredEventSchedule {
  scheduleId: string;
  connectorId: string;
  definition: ScheduleDefinition & { on: EventSelector };
}

/**
 * An event schedule's limits, its definition's or the defaults: `maxAttempts` 10, `concurrency` 16,
 * `timeoutMs` 300,000 (5 minutes: past it an attempt fails as timed out, retried like a throw, its
 * buffered writes dropped and its `ctx.signal` aborted). What the consumer runs by and `GET /api/schedules` shows.
 */
export function eventScheduleLimits(definition: ScheduleDefinition): { maxAttempts: number; concurrency: number; timeoutMs: number } {
  return { maxAttempts: definition.maxAttempts ?? 10, concurrency: definition.concurrency ?? 16, timeoutMs: definition.timeoutMs ?? 300_000 };
}

/** First retry after 1 s, doubling per failed attempt, at most 60 s. */
export const RETRY_BASE_MS = 1000;
export const RETRY_MAX_MS = 60_000;

/** Delay before the next attempt after `attempts` failed ones (ms). */
export const retryDelayMs = (attempts: number) => Math.min(RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1), RETRY_MAX_MS);

/** What the consumer reports (see `EventConsumerStateSchema` in event-schedules.ts). */
export interface ConsumerSnapshot {
  paused: boolean;
  note?: string;
  cursor?: string;
  backlog: number;
  caughtUp: boolean;
  oldestPendingAt?: string;
  lagMs?: number;
  running: number;
  retrying: number;
  deadLettered: number;
  lastError?: { message: string; eventId: string; at: string };
  cursorExpiredAt?: string;
}

export interface ConsumerDeps {
  db: Database;
  stream: EventStream;
  events: EventLog;
  handlers: HandlerRunner;
  log: Logger;
  /** Emits `"committed"` `{ scheduleId, events: [{ eventId, occurredAt, partitionKey }], at }` (epoch ms) after each commit that finished events. */
  notifier: EventEmitter;
}

/** One matching event as an event schedule's consumer tracks it. */
export interface Entry {
  id: string;
  /** The stored event; dropped once finished. */
  event: StoredDomainEvent | undefined;
  cursor: string;
  partition: string;
  occurredAt: string;
  /** Read order (revived entries: below every read entry). */
  seq: number;
  state: "pending" | "running" | "done" | "dead";
  /** Failed attempts so far. */
  attempts: number;
  /** Epoch ms before which it does not run (a retry's backoff). */
  nextAttemptAt: number;
  /** A row exists in event_schedule_events. */
  hasRow: boolean;
  /** An operator retry of a dead-lettered event: tracked by its row, not by the cursor. */
  revived: boolean;
}

/**
 * The unfinished entries of one consumer by partition key, each partition in read order (`seq`). Only a
 * partition's head may run, and only while it is `pending` (not running, not waiting for its commit)
 * and its backoff has passed: that is what keeps a partition strictly ordered and lets a failing event
 * block its own partition only.
 */
export class PartitionQueues {
  private readonly queues = new Map<string, Entry[]>();
  /** Unfinished entries (the backlog). */
  size = 0;

  /** Adds an entry at its place by `seq` (behind a running head: a revived entry runs next). */
  add(entry: Entry): void {
    let queue = this.queues.get(entry.partition);
    if (!queue) this.queues.set(entry.partition, (queue = []));
    let i = queue.length;
    while (i > 0 && queue[i - 1]!.state === "pending" && queue[i - 1]!.seq > entry.seq) i--;
    queue.splice(i, 0, entry);
    this.size++;
  }

  /** Removes a finished entry (done or dead-lettered): its partition proceeds. */
  remove(entry: Entry): void {
    const queue = this.queues.get(entry.partition);
    const i = queue?.indexOf(entry) ?? -1;
    if (i < 0) return;
    queue!.splice(i, 1);
    if (queue!.length === 0) this.queues.delete(entry.partition);
    this.size--;
  }

  /**
   * The heads that may run now, oldest first, at most `free`; `wake` is the earliest backoff end of a
   * head that may not run yet (Infinity when none).
   */
  ready(now: number, free: number): { ready: Entry[]; wake: number } {
    let wake = Infinity;
    const ready: Entry[] = [];
    for (const queue of this.queues.values()) {
      const head = queue[0]!;
      if (head.state !== "pending") continue;
      if (head.nextAttemptAt > now) wake = Math.min(wake, head.nextAttemptAt);
      else ready.push(head);
    }
    if (ready.length > free) ready.sort((a, b) => a.seq - b.seq);
    return { ready: ready.slice(0, free), wake };
  }

  /** The oldest unfinished entry and how many unfinished ones failed at least once. */
  stats(): { oldest?: Entry; retrying: number } {
    let oldest: Entry | undefined;
    let retrying = 0;
    for (const queue of this.queues.values()) {
      if (!oldest || queue[0]!.seq < oldest.seq) oldest = queue[0];
      for (const entry of queue) if (entry.attempts > 0) retrying++;
    }
    return { oldest, retrying };
  }
}
