import { EventEmitter } from "node:events";
import type { Database, SqlParams } from "../store/db";
import type { InjectionToken } from "../di";
import { eventSubject, type DomainEventEnvelope, type StoredDomainEvent, type Topic } from "./catalog";
import { decodeCursor, encodeCursor } from "./cursor";
import { eventPermissions } from "../auth/permissions";
import { ApiError } from "../errors";
import { pruneBefore } from "../store/retention";

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
  latestCursor(): Promise<string | undefined>;
  /** Drops events older than `retentionMs`; answers how many were dropped. */
  prune(retentionMs: number): Promise<number>;
  /** Emits `"appended"` after each successful append. */
  readonly notifier: EventEmitter;
  /** Releases connections (broker streams). */
  close?(): Promise<void>;
}

/** True when a stored event passes a query's subject filters and permissions (what SQL does for SQLite). */
export function eventMatches(e: DomainEventEnvelope, q: StreamQuery): boolean {
  const p = e.payload as Record<string, any>;
  if (q.topics?.length && !q.topics.includes(e.topic)) return false;
  if (q.types?.length && !q.types.includes(e.type)) return false;
  const subject = eventSubject(p);
  if (q.objectTypeId !== undefined && subject?.objectTypeId !== q.objectTypeId) return false;
  if (q.primaryId !== undefined && subject?.primaryId !== q.primaryId) return false;
  if (q.actionId !== undefined && p.actionId !== q.actionId) return false;
  if (q.runId !== undefined && p.runId !== q.runId) return false;
  if (q.permissions) {
    const [a, b] = eventPermissions(e);
    if (!q.permissions.includes(a) || (b !== null && !q.permissions.includes(b))) return false;
  }
  return true;
}

interface EventRow {
  seq: number;
  envelope: string;
}

/**
 * The built-in stream: the `events` table of the service's SQLite file, two days' retention by
 * default. Cursor = epoch + seq (see cursor.ts). Expired cursors (older than the last prune) are
 * refused with `cursor_expired` rather than silently skipping what was pruned.
 */
export class SqliteEventStream implements EventStream {
  readonly notifier = new EventEmitter();
  /**
   * The last {@link SqliteEventStream.TAIL_SIZE} events this process appended, contiguous and in seq
   * order. This process is the only writer of its data dir, so a read whose cursor falls inside the
   * tail is answered from memory with the same filters — live subscribers (one reader per socket)
   * then cost no query per append. Older cursors read SQLite.
   */
  private tail: Array<{ seq: number; event: DomainEventEnvelope }> = [];
  static readonly TAIL_SIZE = 10_000;

  private constructor(
    private readonly db: Database,
    private readonly epoch: string,
    private prunedThrough: number,
  ) {
    this.notifier.setMaxListeners(0);
  }

  /** Opens the stream over an opened database. */
  static async open(db: Database): Promise<SqliteEventStream> {
    const rows = await db.all<{ key: string; value: string }>("SELECT key, value FROM meta WHERE key IN ('stream_epoch', 'pruned_through')");
    const meta = Object.fromEntries(rows.map((r) => [r.key, r.value]));
    return new SqliteEventStream(db, meta.stream_epoch!, Number(meta.pruned_through ?? 0));
  }

  async append(envelopes: readonly DomainEventEnvelope[]): Promise<void> {
    if (envelopes.length === 0) return;
    const now = Date.now();
    const appended: Array<{ seq: number; event: DomainEventEnvelope }> = [];
    await this.db.transaction(async (tx) => {
      for (const e of envelopes) {
        const [perm1, perm2] = eventPermissions(e);
        const p = e.payload as Record<string, any>;
        const subject = eventSubject(p);
        const subjectType = subject?.objectTypeId ?? null;
        const subjectId = subject?.primaryId ?? null;
        const { changes, lastID } = await tx.run(
          `INSERT INTO events (id, type, topic, partition_key, appended_at, subject_type, subject_id, action_id, run_id, perm1, perm2, envelope)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
          [e.id, e.type, e.topic, e.partitionKey, now, subjectType, subjectId, p.actionId ?? null, p.runId ?? null, perm1, perm2, JSON.stringify(e)],
        );
        if (changes === 1) appended.push({ seq: lastID, event: e });
      }
    });
    if (appended.length) {
      const last = this.tail[this.tail.length - 1];
      // keep the tail contiguous: it only ever extends what this process appended right after it
      if (last && appended[0]!.seq !== last.seq + 1) this.tail = [];
      this.tail.push(...appended);
      if (this.tail.length > SqliteEventStream.TAIL_SIZE) this.tail.splice(0, this.tail.length - SqliteEventStream.TAIL_SIZE);
      if (this.tail[this.tail.length - 1]!.seq - this.tail[0]!.seq !== this.tail.length - 1) this.tail = []; // a gap: fall back to SQLite
    }
    this.notifier.emit("appended");
  }

  async read(q: StreamQuery): Promise<StoredDomainEvent[]> {
    const where: string[] = [];
    const params: SqlParams = [];
    if (q.afterCursor !== undefined) {
      const seq = decodeCursor(this.epoch, q.afterCursor);
      if (seq < this.prunedThrough) {
        throw new ApiError("cursor_expired", "The cursor points before the retained events; refetch current state and continue from latestCursor", { afterCursor: q.afterCursor });
      }
      const first = this.tail[0];
      if (first && seq >= first.seq - 1) {
        const out: StoredDomainEvent[] = [];
        for (let i = seq - first.seq + 1; i < this.tail.length && out.length < q.limit; i++) {
          const { seq: s, event } = this.tail[i]!;
          if (eventMatches(event, q)) out.push({ ...event, cursor: encodeCursor(this.epoch, s) });
        }
        return out;
      }
      where.push("seq > ?");
      params.push(seq);
    }
    const inList = (column: string, values: readonly string[]) => {
      where.push(`${column} IN (${values.map(() => "?").join(",")})`);
      params.push(...values);
    };
    if (q.topics?.length) inList("topic", q.topics);
    if (q.types?.length) inList("type", q.types);
    if (q.objectTypeId !== undefined) inList("subject_type", [q.objectTypeId]);
    if (q.primaryId !== undefined) inList("subject_id", [q.primaryId]);
    if (q.actionId !== undefined) inList("action_id", [q.actionId]);
    if (q.runId !== undefined) inList("run_id", [q.runId]);
    if (q.permissions) {
      where.push("perm1 IN (SELECT value FROM json_each(?)) AND (perm2 IS NULL OR perm2 IN (SELECT value FROM json_each(?)))");
      const list = JSON.stringify(q.permissions);
      params.push(list, list);
    }
    const sql = `SELECT seq, envelope FROM events ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq LIMIT ?`;
    params.push(q.limit);
    const rows = await this.db.all<EventRow>(sql, params);
    return rows.map((r) => ({ ...(JSON.parse(r.envelope) as DomainEventEnvelope), cursor: encodeCursor(this.epoch, r.seq) }));
  }

  async latestCursor(): Promise<string | undefined> {
    const row = await this.db.get<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM events");
    return row?.seq ? encodeCursor(this.epoch, row.seq) : undefined;
  }

  async prune(retentionMs: number): Promise<number> {
    const cutoff = Date.now() - retentionMs;
    const pruned = await this.db.transaction(async (tx) => {
      const done = await pruneBefore(tx, "events", "pruned_through", cutoff);
      if (done) await tx.run("DELETE FROM event_keys WHERE created_at < ?", [new Date(cutoff).toISOString()]);
      return done;
    });
    if (!pruned) return 0;
    // only once committed: readers never see a cursor expire that is still retained
    this.prunedThrough = pruned.through;
    this.tail = this.tail.filter((t) => t.seq > pruned.through);
    return pruned.changes;
  }
}
