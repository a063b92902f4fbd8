/**
 * The events INSERT of a group commit (`GroupStatement`, core/store/sql.ts) for the built-in SQLite
 * stream (`SqliteEventStream`, ./sqlite-stream.ts), and the entries it stores.
 */
import { batchOfParameter, batchOfRows, literalRows, type GroupStatement, type SqlStatements } from "../store/db";
import type { DomainEventEnvelope } from "./catalog";
import type { EventFacts } from "./stream";

/**
 * One event of `SqliteEventStream`'s in-memory tail: its seq, its filter facts and its stored JSON
 * text. The envelope object itself is not kept (a read from the tail parses the text, as a read from
 * SQLite parses the row's): the tail holds each event for seconds under load, long enough for V8 to
 * promote it, and the text is one object where the envelope is a dozen (issue 15, RSS under load).
 */
export interface TailEntry {
  seq: number;
  facts: EventFacts;
  json: string;
}

/**
 * An event queued on a group commit's INSERT, with its envelope; `seq` is 0 until it is stored (and
 * stays 0 when its id was stored before).
 */
export interface QueuedEvent extends TailEntry {
  event: DomainEventEnvelope;
}

/** The rows of the events table's columns after `seq`, `id` to `envelope` (12 values each). */
function eventRows(rows: readonly QueuedEvent[]): unknown[][] {
  const now = Date.now();
  return rows.map(({ event: e, facts: f, json }) => [
    e.id, e.type, e.topic, e.partitionKey, now, f.subjectType ?? null, f.subjectId ?? null,
    (f.actionId as string | undefined) ?? null, (f.runId as string | undefined) ?? null, f.perm1, f.perm2, json,
  ]);
}

/**
 * The INSERT of a group commit's events: one statement over all the rows, so that a group of 16
 * action runs has one statement for its events instead of 16; notes each stored row's seq on it.
 *
 * - `sql` (the group's one call, see `GroupStatement`) writes the rows as `VALUES (…), (…)` literals
 *   (`literalRows`; as one JSON string read through `json_each` when a value has no literal, see
 *   `batchOfRows`) with the seqs AUTOINCREMENT would give them: this process is the only writer, so
 *   they follow `nextSeq`. The statement fails instead of guessing (the first row's NOT NULL id) when
 *   `sqlite_sequence` is not below the first of them (another writer, or seqs used up by rows skipped
 *   before), and on an id or a seq stored before (their UNIQUE): the group then calls `run`. It is
 *   `INSERT OR FAIL` (no statement journal: see `insertRows` in core/store/sql.ts).
 * - `run` inserts from a JSON array of rows (`batchOfParameter`) with `RETURNING id, seq`: a row whose id
 *   was stored before, or earlier in the same group, keeps seq 0 and is not appended; then reads
 *   `sqlite_sequence` for `nextSeq`.
 */
export class EventInsert implements GroupStatement<QueuedEvent> {
  /**
   * The seq the next event stored through {@link EventInsert.sql} gets
   * (undefined until a first INSERT through `run` has read `sqlite_sequence`).
   */
  private nextSeq: number | undefined;

  /** {@link GroupStatement.run}: the INSERT with `RETURNING id, seq`, then `nextSeq` from `sqlite_sequence`. */
  async run(w: SqlStatements, rows: readonly QueuedEvent[]): Promise<void> {
    for (const row of rows) row.seq = 0;
    const stored = await w.all<{ id: string; seq: number }>(
      `WITH ${batchOfParameter(12)}
       INSERT INTO events (id, type, topic, partition_key, appended_at, subject_type, subject_id, action_id, run_id, perm1, perm2, envelope)
       SELECT c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11
       FROM batch WHERE true ORDER BY n ON CONFLICT (id) DO NOTHING RETURNING id, seq`,
      [JSON.stringify(eventRows(rows))],
    );
    const seqs = new Map(stored.map((r) => [r.id, r.seq]));
    for (const row of rows) {
      const seq = seqs.get(row.event.id);
      if (seq === undefined) continue;
      row.seq = seq;
      seqs.delete(row.event.id); // a later row with the same id was skipped
    }
    const next = await w.get<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'events'");
    this.nextSeq = (next?.seq ?? 0) + 1;
  }

  /** {@link GroupStatement.sql}: the INSERT with the rows' seqs from `nextSeq` (undefined until `run` has set it). */
  sql(rows: readonly QueuedEvent[]): string | undefined {
    if (this.nextSeq === undefined) return undefined;
    const first = this.nextSeq;
    this.nextSeq += rows.length;
    rows.forEach((row, i) => (row.seq = first + i));
    const values = eventRows(rows);
    // the first row's id: NULL (failing the INSERT) unless sqlite_sequence is below `first`
    const guard = (id: string) => `iif(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0) < ${first}, ${id}, NULL)`;
    const literals = literalRows(values, 12);
    if (!literals) {
      return `WITH ${batchOfRows(12, values)}
      INSERT OR FAIL INTO events (seq, id, type, topic, partition_key, appended_at, subject_type, subject_id, action_id, run_id, perm1, perm2, envelope)
      SELECT ${first} + n, ${guard("c0")}, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11
      FROM batch ORDER BY n`;
    }
    const tuples = literals.map((row, i) => `(${first + i}, ${i === 0 ? guard(row[0]!) : row[0]}, ${row.slice(1).join(", ")})`);
    return `INSERT OR FAIL INTO events (seq, id, type, topic, partition_key, appended_at, subject_type, subject_id, action_id, run_id, perm1, perm2, envelope) VALUES ${tuples.join(", ")}`;
  }
}
