import type { Database, SqlWriter } from "../store/db";
import type { StoredDomainEvent } from "../events/catalog";
import { nowIso } from "../ids";
import { ApiError } from "../errors";

/** A row of `event_schedule_events` (migration 012): an event finished out of cursor order, being retried, or dead-lettered. */
export interface EventRow {
  event_id: string;
  status: "done" | "retrying" | "dead";
  partition_key: string;
  occurred_at: string;
  attempts: number;
  next_attempt_at: number | null;
  last_error: string | null;
  revived: number;
  event: string | null;
  updated_at: string;
}

/** The stored state of one event schedule's consumer (`event_schedule_consumers`). */
export interface ConsumerRow {
  cursor: string | null;
  paused: number;
  note: string | null;
  cursor_expired_at: string | null;
}

/** What a finished attempt wrote about its event: the fields of its row. */
export interface EventRowWrite {
  eventId: string;
  partitionKey: string;
  occurredAt: string;
  attempts: number;
  /** Epoch ms of the next attempt (`retrying`). */
  nextAttemptAt?: number;
  error?: string;
  revived: boolean;
  /** The stored event (`retrying`, `dead`): an operator retry needs it, also after retention. */
  event?: StoredDomainEvent;
}

/**
 * The SQL of one event schedule's consumer (tables of migration 012), so the consumer itself holds only
 * its rules. Methods taking `tx` write inside the caller's transaction; the others open their own.
 */
export class EventScheduleStore {
  constructor(
    private readonly db: Database,
    private readonly scheduleId: string,
  ) {}

  /** The consumer's row, created with `cursor` and `paused` when the schedule is seen for the first time (`created` true then). */
  async openConsumer(initial: () => Promise<{ cursor: string | undefined; paused: boolean }>): Promise<ConsumerRow & { created: boolean }> {
    const row = await this.db.get<ConsumerRow>("SELECT cursor, paused, note, cursor_expired_at FROM event_schedule_consumers WHERE schedule_id = ?", [this.scheduleId]);
    if (row) return { ...row, created: false };
    const { cursor, paused } = await initial();
    const now = nowIso();
    await this.db.transaction((tx) => tx.run("INSERT INTO event_schedule_consumers (schedule_id, cursor, paused, created_at, updated_at) VALUES (?, ?, ?, ?, ?)", [this.scheduleId, cursor ?? null, paused ? 1 : 0, now, now]));
    return { cursor: cursor ?? null, paused: paused ? 1 : 0, note: null, cursor_expired_at: null, created: true };
  }

  /** Every event row of the schedule, oldest event first. */
  eventRows(): Promise<EventRow[]> {
    return this.db.all<EventRow>("SELECT * FROM event_schedule_events WHERE schedule_id = ? ORDER BY occurred_at, event_id", [this.scheduleId]);
  }

  /** Marks an event finished after the cursor (`done`: its event body is dropped). */
  async writeDone(tx: SqlWriter, w: EventRowWrite, now: string): Promise<void> {
    await tx.run(
      `INSERT INTO event_schedule_events (schedule_id, event_id, status, partition_key, occurred_at, attempts, updated_at) VALUES (?, ?, 'done', ?, ?, ?, ?)
       ON CONFLICT (schedule_id, event_id) DO UPDATE SET status = 'done', attempts = excluded.attempts, next_attempt_at = NULL, event = NULL, revived = 0, updated_at = excluded.updated_at`,
      [this.scheduleId, w.eventId, w.partitionKey, w.occurredAt, w.attempts, now],
    );
  }

  /** Records a failed attempt: `retrying` (with the next attempt time) or `dead`. */
  async writeFailure(tx: SqlWriter, status: "retrying" | "dead", w: EventRowWrite, now: string): Promise<void> {
    await tx.run(
      `INSERT INTO event_schedule_events (schedule_id, event_id, status, partition_key, occurred_at, attempts, next_attempt_at, last_error, revived, event, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (schedule_id, event_id) DO UPDATE SET status = excluded.status, attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error, revived = excluded.revived, event = excluded.event, updated_at = excluded.updated_at`,
      [this.scheduleId, w.eventId, status, w.partitionKey, w.occurredAt, w.attempts, w.nextAttemptAt ?? null, w.error ?? null, status === "retrying" && w.revived ? 1 : 0, JSON.stringify(w.event ?? null), now],
    );
  }

  /** Removes an event's row (`onlyDone`: only when it is a `done` mark, so a dead letter stays). */
  async deleteRow(tx: SqlWriter, eventId: string, onlyDone: boolean): Promise<void> {
    await tx.run(`DELETE FROM event_schedule_events WHERE schedule_id = ? AND event_id = ?${onlyDone ? " AND status = 'done'" : ""}`, [this.scheduleId, eventId]);
  }

  async saveCursor(tx: SqlWriter, cursor: string | undefined, now: string): Promise<void> {
    await tx.run("UPDATE event_schedule_consumers SET cursor = ?, updated_at = ? WHERE schedule_id = ?", [cursor ?? null, now, this.scheduleId]);
  }

  async markExpired(at: string): Promise<void> {
    await this.db.transaction((tx) => tx.run("UPDATE event_schedule_consumers SET cursor_expired_at = ?, updated_at = ? WHERE schedule_id = ?", [at, at, this.scheduleId]));
  }

  async setPaused(paused: boolean, note: string | undefined): Promise<void> {
    const now = nowIso();
    await this.db.transaction((tx) => tx.run("UPDATE event_schedule_consumers SET paused = ?, note = ?, updated_at = ? WHERE schedule_id = ?", [paused ? 1 : 0, note ?? null, now, this.scheduleId]));
  }

  /**
   * Turns a dead letter into an operator retry (`retrying`, attempts 0, `revived`) and answers its event,
   * or undefined when the event is not dead-lettered for this schedule (nothing written then).
   */
  async revive(eventId: string): Promise<StoredDomainEvent | undefined> {
    return this.db.transaction(async (tx) => {
      const found = await tx.get<{ event: string | null; status: string }>("SELECT event, status FROM event_schedule_events WHERE schedule_id = ? AND event_id = ?", [this.scheduleId, eventId]);
      // not dead-lettered (any more): a retry queued already, or an event that never died, is a conflict, not a missing event
      if (found && found.status !== "dead") throw new ApiError("conflict", `Event "${eventId}" is not dead-lettered for schedule "${this.scheduleId}": it is ${found.status === "retrying" ? "being retried" : found.status}`, { scheduleId: this.scheduleId, eventId, status: found.status });
      if (!found?.event || found.event === "null") return undefined;
      await tx.run("UPDATE event_schedule_events SET status = 'retrying', attempts = 0, next_attempt_at = 0, revived = 1, updated_at = ? WHERE schedule_id = ? AND event_id = ?", [nowIso(), this.scheduleId, eventId]);
      return JSON.parse(found.event) as StoredDomainEvent;
    });
  }
}
