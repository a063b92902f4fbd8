/** The built-in event stream: the `events` table of the service's SQLite file (spec 6.2, 6.3). */
import { EventEmitter } from "node:events";
import type { Database, SqlParams, SqlWriter } from "../store/db";
import type { DomainEventEnvelope, StoredDomainEvent, Topic } from "./catalog";
import { decodeCursor, encodeCursor } from "./cursor";
import { ApiError } from "../errors";
import { pruneBefore } from "../store/retention";
import { eventFacts, eventJsonPage, type EventJsonPage, type EventStream, type StreamQuery, type StreamScan } from "./stream";
import { EventInsert, type QueuedEvent, type TailEntry } from "./event-insert";
import { EventTail } from "./event-tail";

/** A page read from SQLite as JSON bytes, with the seq of its last event (absent when empty) and of the newest event its read saw (absent: none). */
type ReadPage = Omit<EventJsonPage, "checkpoint"> & { lastSeq?: number; newestSeq?: number };

/** The page of no event. */
const EMPTY_PAGE: ReadPage = { count: 0, json: Buffer.alloc(0), lastCursor: undefined };

/** A query's identity as text (its fields in a fixed order), for the read-ahead cache. */
function queryKey(q: StreamQuery): string {
  return JSON.stringify([q.afterCursor, q.limit, q.topics, q.types, q.objectTypeId, q.primaryId, q.actionId, q.runId, q.permissions]);
}

/** The JSON text of a stored event from its envelope's JSON text: the cursor spliced in as its last field. */
function withCursor(envelopeJson: string, cursor: string): string {
  // the envelope is a JSON object (it ends with "}") without a cursor field; cursors are base64url
  return `${envelopeJson.slice(0, -1)},"cursor":"${cursor}"}`;
}

interface EventRow {
  seq: number;
  envelope: string;
}

/**
 * The built-in stream: the `events` table of the service's SQLite file, two days' retention by
 * default. Cursor = epoch + seq (see cursor.ts). Expired cursors (older than the last prune) are
 * refused with `cursor_expired` rather than silently skipping what was pruned.
 *
 * The service's instance is the one writer of its database, and it answers nothing past the newest
 * event whose commit hook has run ({@link SqliteEventStream.published}): the read connection sees a
 * group's `COMMIT` before the writer's callback runs the hooks that extend the in-memory tail and
 * queue the `"appended"` notice, and a read in that gap answered events the tail and the notice did
 * not have yet, so a read after such a cursor, answered from the tail, found nothing after it (a
 * follower of the notices got an event twice or never). An instance opened with `reader: true`
 * (tools, tests) writes nothing and answers whatever is committed.
 */
export class SqliteEventStream implements EventStream {
  readonly notifier = new EventEmitter();
  /** The events this process appended last (see {@link EventTail}): reads after a recent cursor are answered from it. */
  private readonly tail = new EventTail();

  /** Read-ahead pages by query (see {@link SqliteEventStream.readJson}), oldest first; at most {@link SqliteEventStream.READ_AHEAD_PAGES}. */
  private readonly readAhead = new Map<string, { at: number; page: Promise<ReadPage> }>();
  /** Most pages read ahead at once (one per reader catching up). */
  static readonly READ_AHEAD_PAGES = 8;
  /** A page read ahead and not asked for within this many ms is dropped. */
  static readonly READ_AHEAD_MS = 10_000;

  private constructor(
    private readonly db: Database,
    private readonly epoch: string,
    private prunedThrough: number,
    /**
     * The newest seq whose commit hook ran here (the stream's newest at open until then); undefined for
     * a stream opened with `reader: true`, which answers what is committed and writes nothing.
     */
    private published: number | undefined,
  ) {
    this.notifier.setMaxListeners(0);
  }

  /**
   * Opens the stream over an opened database.
   * @param opts.reader a stream that only reads a database another instance writes: it answers what is
   *   committed (the writer's own instance answers what its commit hooks have published); its writes throw
   */
  static async open(db: Database, { reader = false }: { reader?: boolean } = {}): Promise<SqliteEventStream> {
    const rows = await db.all<{ key: string; value: string }>("SELECT key, value FROM meta WHERE key IN ('stream_epoch', 'pruned_through')");
    const meta = Object.fromEntries(rows.map((r) => [r.key, r.value]));
    // retention may have deleted every event: the newest position issued is then the prune mark
    const prunedThrough = Number(meta.pruned_through ?? 0);
    const newest = reader ? undefined : Math.max((await db.get<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM events"))?.seq ?? 0, prunedThrough);
    return new SqliteEventStream(db, meta.stream_epoch!, prunedThrough, newest);
  }

  async append(envelopes: readonly DomainEventEnvelope[]): Promise<void> {
    if (envelopes.length === 0) return;
    await this.db.transaction((tx) => this.writeInTx(tx, envelopes));
  }

  /**
   * {@link EventStream.writeInTx}: queues the envelopes on the group's one INSERT of events
   * ({@link EventInsert}, run before the group's `COMMIT`; an id already stored is
   * skipped); once the transaction commits, the new events extend the in-memory tail and `"appended"`
   * is emitted (once per microtask, however many transactions of a group commit appended). The rows
   * are not readable inside `tx` (nothing reads events back in the transaction that wrote them).
   * @throws Error on a stream opened with `reader: true`
   */
  async writeInTx(tx: SqlWriter, envelopes: readonly DomainEventEnvelope[]): Promise<void> {
    if (this.published === undefined) throw new Error("this event stream was opened as a reader (SqliteEventStream.open with reader: true) and writes nothing");
    if (envelopes.length === 0) return;
    const rows: QueuedEvent[] = envelopes.map((event) => ({ event, facts: eventFacts(event), json: JSON.stringify(event), seq: 0 }));
    tx.defer(this.insertEvents, rows);
    tx.afterCommit(() => {
      const appended = rows.filter((r) => r.seq > 0);
      if (appended.length) this.committed(appended);
    });
  }

  /** The group commit's INSERT of this stream's events. */
  private readonly insertEvents = new EventInsert();

  /** The topics of the "appended" notice queued for this microtask (undefined: none queued). */
  private noticeTopics: Set<Topic> | undefined;

  /** Extends the tail with committed events (in seq order: hooks run in commit order) and queues the notice. */
  private committed(appended: QueuedEvent[]): void {
    this.published = Math.max(this.published!, appended[appended.length - 1]!.seq);
    this.tail.extend(appended);
    if (this.noticeTopics) {
      for (const entry of appended) this.noticeTopics.add(entry.facts.topic);
      return;
    }
    const topics = (this.noticeTopics = new Set(appended.map((entry) => entry.facts.topic)));
    queueMicrotask(() => {
      this.noticeTopics = undefined;
      this.notifier.emit("appended", topics);
    });
  }

  async read(q: StreamQuery): Promise<StoredDomainEvent[]> {
    const fromTail = this.readTail(q);
    if (fromTail) return fromTail.map((t) => this.storedEvent(t.json, t.seq));
    return (await this.select(q)).map((r) => this.storedEvent(r.envelope, r.seq));
  }

  /**
   * {@link EventStream.scan}: from the in-memory tail, the events that do not match are tested on their
   * precomputed facts and never parsed (with topics or types, only the events of those topics are
   * visited at all); from SQLite, the newest seq is read first and the filtered read stops there, so
   * the checkpoint is that seq unless the page filled up.
   */
  async scan(q: StreamQuery): Promise<StreamScan> {
    const tail = this.scanTail(q);
    if (tail) {
      const { entries, throughSeq } = tail;
      return { events: entries.map((t) => this.storedEvent(t.json, t.seq)), checkpoint: this.cursorAt(throughSeq), end: entries.length < q.limit };
    }
    const after = this.afterSeq(q);
    const newest = await this.newestSeq();
    if (newest === undefined || (after !== undefined && newest <= after)) return { events: [], checkpoint: undefined, end: true };
    const rows = await this.select(q, newest);
    const events = rows.map((r) => this.storedEvent(r.envelope, r.seq));
    const end = rows.length < q.limit;
    return { events, checkpoint: this.cursorAt(end ? newest : rows.at(-1)!.seq), end };
  }

  /**
   * {@link EventStream.readJson}: the stored envelope texts with the cursor spliced in, never parsed.
   * A full page read from SQLite starts reading the page after it (read-ahead): a reader catching up
   * asks for it next, and gets it without waiting on SQLite. A page read ahead is answered only when it
   * is full: events are appended in seq order, so the first `limit` events after a cursor never change
   * once they exist, while a shorter page may lack events committed since (read-your-writes holds).
   */
  async readJson(q: StreamQuery): Promise<EventJsonPage> {
    const tail = this.scanTail(q);
    if (tail) {
      const { entries, throughSeq } = tail;
      return eventJsonPage(entries.map((t) => this.storedJson(t.json, t.seq)), this.cursorAt(entries.at(-1)?.seq), this.cursorAt(throughSeq) ?? q.afterCursor);
    }
    let page = await this.takeReadAhead(q);
    if (page?.count !== q.limit) page = await this.readPage(q);
    if (page.count === q.limit && page.lastSeq !== undefined) {
      this.startReadAhead(q, page.lastSeq);
      return { count: page.count, json: page.json, lastCursor: page.lastCursor, checkpoint: page.lastCursor };
    }
    // a shorter page covered every event up to the newest as its read saw it: that is its checkpoint
    const after = this.afterSeq(q);
    const covered = page.newestSeq !== undefined && (after === undefined || page.newestSeq > after);
    return { count: page.count, json: page.json, lastCursor: page.lastCursor, checkpoint: covered ? this.cursorAt(page.newestSeq) : q.afterCursor };
  }

  /** Reads the page after `lastSeq` for the reader of `q`, unless the in-memory tail answers it. */
  private startReadAhead(q: StreamQuery, lastSeq: number): void {
    const first = this.tail.firstSeq;
    if (first !== undefined && lastSeq >= first - 1) return;
    const next = { ...q, afterCursor: encodeCursor(this.epoch, lastSeq) };
    // oldest first: drop what is stale, then what is over the bound
    for (const [key, entry] of this.readAhead) {
      if (!this.isStale(entry) && this.readAhead.size < SqliteEventStream.READ_AHEAD_PAGES) break;
      this.readAhead.delete(key);
    }
    const page = this.readPage(next);
    page.catch(() => undefined); // a failed read-ahead is read again when asked for
    this.readAhead.set(queryKey(next), { at: Date.now(), page });
  }

  /** The page read ahead for `q` (taken out of the cache), unless none was or it went stale. */
  private async takeReadAhead(q: StreamQuery): Promise<ReadPage | undefined> {
    const key = queryKey(q);
    const entry = this.readAhead.get(key);
    if (!entry) return undefined;
    this.readAhead.delete(key);
    return this.isStale(entry) ? undefined : entry.page.catch(() => undefined);
  }

  private isStale(entry: { at: number }): boolean {
    return Date.now() - entry.at >= SqliteEventStream.READ_AHEAD_MS;
  }

  /**
   * One page from SQLite as JSON bytes, with the seq of its last event and of the newest its read saw: one row holding the page's
   * seqs as text and its envelopes as one BLOB (their UTF-8 bytes, one per line), spliced with the
   * cursors into the page's bytes by {@link SqliteEventStream.spliceCursors}. node-sqlite3 makes a JS
   * object per row of `select`, which costs more than SQLite's whole read (1.45 against 0.62 ms for
   * 500 events), and a page's text as a JS string is decoded from UTF-8 here only to be encoded again
   * on the socket (both passes over ~230 kB were a third of `GET /api/events?limit=500`'s time).
   */
  private async readPage(q: StreamQuery): Promise<ReadPage> {
    // the writing stream reads up to what it has published (selectSql's bound, taken in the same step);
    // a reading one up to the newest event of the statement's own snapshot
    const published = this.published;
    const { sql, params } = this.selectSql(q);
    const newest = published === undefined ? ", (SELECT MAX(seq) FROM events) AS newest" : "";
    const page = await this.db.get<{ seqs: string | null; envelopes: Buffer | null; newest?: number | null }>(
      `SELECT group_concat(seq, ',') AS seqs, CAST(group_concat(envelope, char(10)) AS BLOB) AS envelopes${newest} FROM (${sql})`,
      params,
    );
    const newestSeq = (published !== undefined ? published : page?.newest) || undefined;
    if (!page?.seqs || !page.envelopes) return { ...EMPTY_PAGE, newestSeq };
    const seqs = page.seqs.split(",").map(Number);
    // group_concat follows the subquery's order in practice but SQLite does not promise it, and a
    // stored envelope is JSON.stringify's text (no raw newline) unless written by hand: anything else
    // is read again row by row
    let ordered = true;
    for (let i = 1; ordered && i < seqs.length; i++) ordered = seqs[i]! > seqs[i - 1]!;
    const json = ordered ? this.spliceCursors(page.envelopes, seqs) : undefined;
    if (json) return { count: seqs.length, json, lastSeq: seqs.at(-1), lastCursor: this.cursorAt(seqs.at(-1)), newestSeq };
    // read again up to the same newest event: the checkpoint stays what this read covered
    const rows = await this.select(q, newestSeq);
    const lastSeq = rows.at(-1)?.seq;
    return { ...eventJsonPage(rows.map((r) => this.storedJson(r.envelope, r.seq)), this.cursorAt(lastSeq)), lastSeq, newestSeq };
  }

  /**
   * The page's bytes from its envelopes' bytes (one per line, in the order of `seqs`): each envelope
   * with `,"cursor":"…"` spliced in before its closing brace, joined by commas. Undefined when the
   * lines do not match `seqs` one to one or a line does not end with `}`.
   */
  private spliceCursors(envelopes: Buffer, seqs: readonly number[]): Buffer | undefined {
    const cursors = seqs.map((seq) => `,"cursor":"${encodeCursor(this.epoch, seq)}"}`); // base64url: one byte per character
    let added = 0;
    for (const c of cursors) added += c.length - 1; // the closing brace is in both; a line's newline becomes its comma
    const out = Buffer.allocUnsafe(envelopes.length + added);
    let from = 0;
    let at = 0;
    for (let i = 0; i < seqs.length; i++) {
      const last = i === seqs.length - 1;
      const end = envelopes.indexOf(10, from);
      if (last ? end !== -1 : end === -1) return undefined;
      const stop = last ? envelopes.length : end;
      if (stop === from || envelopes[stop - 1] !== 0x7d) return undefined;
      at += envelopes.copy(out, at, from, stop - 1);
      at += out.write(cursors[i]!, at, "latin1");
      if (!last) out[at++] = 0x2c;
      from = stop + 1;
    }
    return out;
  }

  /** The cursor of position `seq` in this stream (undefined for undefined). */
  private cursorAt(seq: number | undefined): string | undefined {
    return seq === undefined ? undefined : encodeCursor(this.epoch, seq);
  }

  /** A stored event from its envelope's text (the tail's or a row's): {@link SqliteEventStream.storedJson}, parsed. */
  private storedEvent(envelopeJson: string, seq: number): StoredDomainEvent {
    return JSON.parse(this.storedJson(envelopeJson, seq)) as StoredDomainEvent;
  }

  /** A stored event's JSON text: its envelope's text with its cursor spliced in. */
  private storedJson(envelopeJson: string, seq: number): string {
    return withCursor(envelopeJson, encodeCursor(this.epoch, seq));
  }

  /**
   * The tail entries answering `q`, or undefined when its cursor is not inside the tail.
   * @throws {ApiError} cursor_expired, invalid_request (see {@link SqliteEventStream.afterSeq})
   */
  private readTail(q: StreamQuery): TailEntry[] | undefined {
    return this.scanTail(q)?.entries;
  }

  /**
   * {@link EventTail.scan} after `q`'s cursor, or undefined when that cursor is not inside the tail.
   * @throws {ApiError} as {@link SqliteEventStream.afterSeq}
   */
  private scanTail(q: StreamQuery): { entries: TailEntry[]; throughSeq: number | undefined } | undefined {
    return this.tail.scan(q, this.afterSeq(q));
  }

  /**
   * The position after which `q` reads (undefined: from the start).
   * @throws {ApiError} invalid_request for a cursor of another stream; cursor_expired for one older than the last prune
   */
  private afterSeq(q: StreamQuery): number | undefined {
    if (q.afterCursor === undefined) return undefined;
    const seq = this.seqOf(q.afterCursor);
    if (seq < this.prunedThrough) {
      throw new ApiError("cursor_expired", "The cursor points before the retained events; refetch current state and continue from latestCursor (GET /api/events/latest-cursor)", { afterCursor: q.afterCursor });
    }
    return seq;
  }

  /** Reads `q` from SQLite (one statement per filter shape, prepared once by the database's cache). */
  private select(q: StreamQuery, throughSeq?: number): Promise<EventRow[]> {
    const { sql, params } = this.selectSql(q, throughSeq);
    return this.db.all<EventRow>(sql, params);
  }

  /**
   * The query of the events answering `q` (seq, envelope), oldest first, up to `throughSeq` when given.
   * @throws {ApiError} as {@link SqliteEventStream.afterSeq}
   */
  private selectSql(q: StreamQuery, throughSeq?: number): { sql: string; params: SqlParams } {
    const where: string[] = [];
    const params: SqlParams = [];
    const seq = this.afterSeq(q);
    if (seq !== undefined) {
      where.push("seq > ?");
      params.push(seq);
    }
    const through = this.published === undefined ? throughSeq : Math.min(throughSeq ?? this.published, this.published);
    if (through !== undefined) {
      where.push("seq <= ?");
      params.push(through);
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
    params.push(q.limit);
    return { sql: `SELECT seq, envelope FROM events ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq LIMIT ?`, params };
  }

  /**
   * The position of a cursor of this stream. A position past the newest event this (writing) stream has
   * published was never issued by it (edited, or of a database restored from an older copy): following
   * it would skip every event up to there in silence, so it is refused like a cursor of another stream.
   * @throws {ApiError} invalid_request when `cursor` is not a cursor this stream issued
   */
  private seqOf(cursor: string): number {
    const seq = decodeCursor(this.epoch, cursor);
    if (this.published !== undefined && seq > this.published) throw new ApiError("invalid_request", "afterCursor is not a cursor of this event stream (it is past the newest event)", { afterCursor: cursor });
    return seq;
  }

  /** @throws {ApiError} invalid_request when `cursor` is not a cursor this stream issued */
  checkCursor(cursor: string): void {
    this.seqOf(cursor);
  }

  async latestCursor(): Promise<string | undefined> {
    return this.cursorAt(await this.newestSeq());
  }

  /** The seq of the newest event this stream answers (undefined when none; see the class). */
  private async newestSeq(): Promise<number | undefined> {
    if (this.published !== undefined) return this.published || undefined;
    return (await this.db.get<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM events"))?.seq ?? undefined;
  }

  async prune(retentionMs: number): Promise<number> {
    this.readAhead.clear();
    const cutoff = Date.now() - retentionMs;
    // the events' keys go by their own pass, for every stream kind (`pruneEventKeys`, core/events/log.ts)
    const pruned = await this.db.transaction((tx) => pruneBefore(tx, "events", "pruned_through", cutoff));
    if (!pruned) return 0;
    // only once committed: readers never see a cursor expire that is still retained
    this.prunedThrough = pruned.through;
    if (this.published !== undefined) this.published = Math.max(this.published, pruned.through); // never a latestCursor that is already expired
    this.tail.dropThrough(pruned.through);
    return pruned.changes;
  }
}
