/** The built-in event stream: the `events` table of the service's SQLite file (spec 6.2, 6.3). */
import { EventEmitter } from "node:events";
import type { Database, SqlParams, SqlWriter } from "../store/db";
import { EVENT_TOPICS, type DomainEventEnvelope, type StoredDomainEvent, type Topic } from "./catalog";
import { decodeCursor, encodeCursor } from "./cursor";
import { ApiError } from "../errors";
import { pruneBefore } from "../store/retention";
import { compileEventFilter, eventFacts, type EventStream, type StreamQuery } from "./stream";
import { EventInsert, type TailEntry } from "./event-insert";

/** A page read from SQLite as JSON texts, with the seq of its last event (absent when empty). */
type ReadPage = { texts: string[]; lastSeq?: number };

/** A query's identity as text (its fields in a fixed order), for the read-ahead cache. */
function queryKey(q: StreamQuery): string {
  return JSON.stringify([q.afterCursor, q.limit, q.topics, q.types, q.objectTypeId, q.primaryId, q.actionId, q.runId, q.permissions]);
}

/** The JSON text of a stored event from its envelope's JSON text: the cursor spliced in as its last field. */
function withCursor(envelopeJson: string, cursor: string): string {
  // the envelope is a JSON object (it ends with "}") without a cursor field; cursors are base64url
  return `${envelopeJson.slice(0, -1)},"cursor":"${cursor}"}`;
}

/** Index of the first element of ascending `seqs` greater than `after` (`seqs.length` when none). */
function firstAbove(seqs: readonly number[], after: number): number {
  let lo = 0;
  let hi = seqs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (seqs[mid]! > after) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * The topics a read can match, from its `topics` and `types` filters (a type belongs to one topic);
 * undefined when it is not narrowed to topics (or names a type outside the catalog: read everything).
 */
function readTopics(q: StreamQuery): readonly string[] | undefined {
  let topics: Set<string> | undefined = q.topics?.length ? new Set(q.topics) : undefined;
  if (q.types?.length) {
    const ofTypes = new Set<string>();
    for (const type of q.types) {
      const topic = (EVENT_TOPICS as Record<string, string>)[type];
      if (topic === undefined) return topics ? [...topics] : undefined;
      ofTypes.add(topic);
    }
    topics = topics ? new Set([...topics].filter((t) => ofTypes.has(t))) : ofTypes;
  }
  return topics ? [...topics] : undefined;
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
   * The last {@link SqliteEventStream.TAIL_SIZE} events this process appended (up to a tenth more
   * between trims), contiguous and in seq
   * order, each with its stored JSON text. This process is the only writer of its data dir, so a read
   * whose cursor falls inside the tail is answered from memory with the same filters. Older cursors
   * read SQLite.
   */
  private tail: TailEntry[] = [];
  static readonly TAIL_SIZE = 10_000;
  /**
   * Per topic, the seqs of the tail's events of that topic, ascending, so that a read filtered by topic
   * or type visits only that topic's events: a follower waiting for rare events (the rule engine reads
   * `objects` after its checkpoint, which only moves when one comes) scanned the whole tail on every
   * append otherwise (a fifth of the service's CPU under a load of action runs). Seqs that fell out of
   * the tail's front are dropped lazily ({@link SqliteEventStream.trimTopicIndex}).
   */
  private tailByTopic = new Map<string, number[]>();

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
    await this.db.transaction((tx) => this.writeInTx(tx, envelopes));
  }

  /**
   * {@link EventStream.writeInTx}: queues the envelopes on the group's one INSERT of events
   * ({@link EventInsert}, run before the group's `COMMIT`; an id already stored is
   * skipped); once the transaction commits, the new events extend the in-memory tail and `"appended"`
   * is emitted (once per microtask, however many transactions of a group commit appended). The rows
   * are not readable inside `tx` (nothing reads events back in the transaction that wrote them).
   */
  async writeInTx(tx: SqlWriter, envelopes: readonly DomainEventEnvelope[]): Promise<void> {
    if (envelopes.length === 0) return;
    const rows: TailEntry[] = envelopes.map((event) => ({ event, facts: eventFacts(event), json: JSON.stringify(event), seq: 0 }));
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
  private committed(appended: TailEntry[]): void {
    const last = this.tail[this.tail.length - 1];
    // keep the tail contiguous: it only ever extends what this process appended right after it
    // (a re-appended id still uses up a seq under AUTOINCREMENT, so redelivery leaves a gap)
    if (last && appended[0]!.seq !== last.seq + 1) this.resetTail();
    for (const entry of appended) {
      this.tail.push(entry);
      const seqs = this.tailByTopic.get(entry.event.topic);
      if (seqs) seqs.push(entry.seq);
      else this.tailByTopic.set(entry.event.topic, [entry.seq]);
    }
    // trimmed a tenth at a time: a splice on every commit moved the whole tail (3.6 % of the service's
    // CPU under a load of action runs)
    if (this.tail.length > SqliteEventStream.TAIL_SIZE * 1.1) {
      this.tail.splice(0, this.tail.length - SqliteEventStream.TAIL_SIZE);
      this.trimTopicIndex();
    }
    if (this.tail[this.tail.length - 1]!.seq - this.tail[0]!.seq !== this.tail.length - 1) this.resetTail(); // a gap: fall back to SQLite
    if (this.noticeTopics) {
      for (const entry of appended) this.noticeTopics.add(entry.event.topic);
      return;
    }
    const topics = (this.noticeTopics = new Set(appended.map((entry) => entry.event.topic)));
    queueMicrotask(() => {
      this.noticeTopics = undefined;
      this.notifier.emit("appended", topics);
    });
  }

  private resetTail(): void {
    this.tail = [];
    this.tailByTopic.clear();
  }

  /** Drops the topic index's seqs before the tail's first one, once they are more than a tenth of the tail (amortized). */
  private trimTopicIndex(): void {
    const first = this.tail[0]?.seq ?? Infinity;
    for (const [topic, seqs] of this.tailByTopic) {
      if (seqs[0]! >= first) continue;
      const stale = firstAbove(seqs, first - 1);
      if (stale === seqs.length) this.tailByTopic.delete(topic);
      else if (stale > SqliteEventStream.TAIL_SIZE / 10) seqs.splice(0, stale);
    }
  }

  async read(q: StreamQuery): Promise<StoredDomainEvent[]> {
    const fromTail = this.readTail(q);
    if (fromTail) return fromTail.map((t) => ({ ...t.event, cursor: encodeCursor(this.epoch, t.seq) }));
    const rows = await this.select(q);
    return rows.map((r) => ({ ...(JSON.parse(r.envelope) as DomainEventEnvelope), cursor: encodeCursor(this.epoch, r.seq) }));
  }

  /**
   * {@link EventStream.readJson}: the stored envelope texts with the cursor spliced in, never parsed.
   * A full page read from SQLite starts reading the page after it (read-ahead): a reader catching up
   * asks for it next, and gets it without waiting on SQLite. A page read ahead is answered only when it
   * is full: events are appended in seq order, so the first `limit` events after a cursor never change
   * once they exist, while a shorter page may lack events committed since (read-your-writes holds).
   */
  async readJson(q: StreamQuery): Promise<string[]> {
    const fromTail = this.readTail(q);
    if (fromTail) return fromTail.map((t) => this.storedJson(t.json, t.seq));
    let page = await this.takeReadAhead(q);
    if (page?.texts.length !== q.limit) page = await this.readPage(q);
    if (page.texts.length === q.limit && page.lastSeq !== undefined) this.startReadAhead(q, page.lastSeq);
    return page.texts;
  }

  /** Reads the page after `lastSeq` for the reader of `q`, unless the in-memory tail answers it. */
  private startReadAhead(q: StreamQuery, lastSeq: number): void {
    const first = this.tail[0];
    if (first && lastSeq >= first.seq - 1) return;
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

  /** One page from SQLite as texts, with the seq of its last event. */
  private async readPage(q: StreamQuery): Promise<ReadPage> {
    // the page as two texts from one row (seqs, envelopes): node-sqlite3 makes a JS object per row of
    // `select`, which costs more than SQLite's whole read (1.45 against 0.62 ms for 500 events)
    const { sql, params } = this.selectSql(q);
    const page = await this.db.get<{ seqs: string | null; envelopes: string | null }>(
      `SELECT group_concat(seq, ',') AS seqs, group_concat(envelope, char(10)) AS envelopes FROM (${sql})`,
      params,
    );
    if (!page?.seqs || page.envelopes === null) return { texts: [] };
    const seqs = page.seqs.split(",");
    // a stored envelope is JSON.stringify's text: no raw newline. group_concat follows the subquery's
    // order in practice but SQLite does not promise it: anything else is read again row by row
    const envelopes = page.envelopes.split("\n");
    let ordered = envelopes.length === seqs.length;
    for (let i = 1; ordered && i < seqs.length; i++) ordered = Number(seqs[i]) > Number(seqs[i - 1]);
    if (!ordered) {
      const rows = await this.select(q);
      return { texts: rows.map((r) => this.storedJson(r.envelope, r.seq)), lastSeq: rows.at(-1)?.seq };
    }
    return { texts: envelopes.map((envelope, i) => this.storedJson(envelope, Number(seqs[i]))), lastSeq: Number(seqs.at(-1)) };
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
    const seq = this.afterSeq(q);
    const first = this.tail[0];
    if (seq === undefined || !first || seq < first.seq - 1) return undefined;
    const matches = compileEventFilter(q);
    const out: TailEntry[] = [];
    const topics = readTopics(q);
    if (!topics) {
      for (let i = seq - first.seq + 1; i < this.tail.length && out.length < q.limit; i++) {
        if (matches(this.tail[i]!.facts)) out.push(this.tail[i]!);
      }
      return out;
    }
    // only the events of the topics asked for, merged in seq order (a handful of topics at most)
    const lists = topics.map((t) => this.tailByTopic.get(t)).filter((l): l is number[] => l !== undefined);
    const next = lists.map((l) => firstAbove(l, Math.max(seq, first.seq - 1)));
    while (out.length < q.limit) {
      let pick = -1;
      for (let k = 0; k < lists.length; k++) {
        if (next[k]! < lists[k]!.length && (pick < 0 || lists[k]![next[k]!]! < lists[pick]![next[pick]!]!)) pick = k;
      }
      if (pick < 0) break;
      const entry = this.tail[lists[pick]![next[pick]!++]! - first.seq]!;
      if (matches(entry.facts)) out.push(entry);
    }
    return out;
  }

  /**
   * The position after which `q` reads (undefined: from the start).
   * @throws {ApiError} invalid_request for a cursor of another stream; cursor_expired for one older than the last prune
   */
  private afterSeq(q: StreamQuery): number | undefined {
    if (q.afterCursor === undefined) return undefined;
    const seq = decodeCursor(this.epoch, q.afterCursor);
    if (seq < this.prunedThrough) {
      throw new ApiError("cursor_expired", "The cursor points before the retained events; refetch current state and continue from latestCursor", { afterCursor: q.afterCursor });
    }
    return seq;
  }

  /** Reads `q` from SQLite (one statement per filter shape, prepared once by the database's cache). */
  private select(q: StreamQuery): Promise<EventRow[]> {
    const { sql, params } = this.selectSql(q);
    return this.db.all<EventRow>(sql, params);
  }

  /** The query of the events answering `q` (seq, envelope), oldest first. @throws {ApiError} as {@link SqliteEventStream.afterSeq} */
  private selectSql(q: StreamQuery): { sql: string; params: SqlParams } {
    const where: string[] = [];
    const params: SqlParams = [];
    const seq = this.afterSeq(q);
    if (seq !== undefined) {
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
    params.push(q.limit);
    return { sql: `SELECT seq, envelope FROM events ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq LIMIT ?`, params };
  }

  async latestCursor(): Promise<string | undefined> {
    const row = await this.db.get<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM events");
    return row?.seq ? encodeCursor(this.epoch, row.seq) : undefined;
  }

  async prune(retentionMs: number): Promise<number> {
    this.readAhead.clear();
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
    this.trimTopicIndex();
    return pruned.changes;
  }
}
