/**
 * The in-memory tail of the built-in SQLite stream (`SqliteEventStream`, ./sqlite-stream.ts; spec 6.2,
 * 6.4): the events this process appended last, so that reads and scans after a recent cursor are
 * answered from memory.
 */
import { compileEventFilter, topicsOf, type StreamQuery } from "./stream";
import type { TailEntry } from "./event-insert";

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
 * The last {@link EventTail.SIZE} events this process appended (up to a tenth more between trims),
 * contiguous and in seq order, each with its filter facts and stored JSON text. This process is the
 * only writer of its data dir, so a read whose cursor falls inside the tail is answered from memory
 * with the same filters; older cursors read SQLite.
 */
export class EventTail {
  static readonly SIZE = 10_000;
  private entries: TailEntry[] = [];
  /**
   * Per topic, the seqs of the tail's events of that topic, ascending, so that a read filtered by topic
   * or type visits only that topic's events: a follower waiting for rare events (the rule engine reads
   * `objects` after its checkpoint, which only moves when one comes) scanned the whole tail on every
   * append otherwise (a fifth of the service's CPU under a load of action runs). Seqs that fell out of
   * the tail's front are dropped lazily ({@link EventTail.trimTopicIndex}).
   */
  private byTopic = new Map<string, number[]>();

  /** The seq of the tail's first event (undefined when it is empty). */
  get firstSeq(): number | undefined {
    return this.entries[0]?.seq;
  }

  /**
   * Extends the tail with committed events, in seq order. When they do not follow its last event
   * (another writer's seqs in between, or a re-appended id that used up a seq), the tail starts over:
   * it only ever holds a contiguous run of seqs.
   */
  extend(appended: readonly TailEntry[]): void {
    const last = this.entries[this.entries.length - 1];
    if (last && appended[0]!.seq !== last.seq + 1) this.reset();
    for (const { seq, facts, json } of appended) {
      this.entries.push({ seq, facts, json }); // without the envelope (see TailEntry)
      const seqs = this.byTopic.get(facts.topic);
      if (seqs) seqs.push(seq);
      else this.byTopic.set(facts.topic, [seq]);
    }
    // trimmed a tenth at a time: a splice on every commit moved the whole tail (3.6 % of the service's
    // CPU under a load of action runs)
    if (this.entries.length > EventTail.SIZE * 1.1) {
      this.entries.splice(0, this.entries.length - EventTail.SIZE);
      this.trimTopicIndex();
    }
    if (this.entries[this.entries.length - 1]!.seq - this.entries[0]!.seq !== this.entries.length - 1) this.reset(); // a gap: fall back to SQLite
  }

  /** Drops the events through `seq` (pruned from the stream). */
  dropThrough(seq: number): void {
    this.entries = this.entries.filter((t) => t.seq > seq);
    this.trimTopicIndex();
  }

  private reset(): void {
    this.entries = [];
    this.byTopic.clear();
  }

  /** Drops the topic index's seqs before the tail's first one, once they are more than a tenth of the tail (amortized). */
  private trimTopicIndex(): void {
    const first = this.entries[0]?.seq ?? Infinity;
    for (const [topic, seqs] of this.byTopic) {
      if (seqs[0]! >= first) continue;
      const stale = firstAbove(seqs, first - 1);
      if (stale === seqs.length) this.byTopic.delete(topic);
      else if (stale > EventTail.SIZE / 10) seqs.splice(0, stale);
    }
  }

  /**
   * The tail's entries after `afterSeq` answering `q`'s filters, up to `q.limit`, and the seq the scan
   * examined through (the last entry's when the page filled up, else the tail's last: nothing after the
   * cursor is left unexamined; undefined when nothing came after it); undefined when `afterSeq` is not
   * inside the tail (the caller reads SQLite). Non-matching events are tested on their facts, never
   * parsed; with topics or types only those topics' events are visited.
   */
  scan(q: StreamQuery, afterSeq: number | undefined): { entries: TailEntry[]; throughSeq: number | undefined } | undefined {
    const first = this.entries[0];
    if (afterSeq === undefined || !first || afterSeq < first.seq - 1) return undefined;
    const matches = compileEventFilter(q);
    const out: TailEntry[] = [];
    const last = this.entries[this.entries.length - 1]!.seq;
    const through = () => (out.length === q.limit ? out[out.length - 1]!.seq : last > afterSeq ? last : undefined);
    const topics = topicsOf(q);
    if (!topics) {
      for (let i = afterSeq - first.seq + 1; i < this.entries.length && out.length < q.limit; i++) {
        if (matches(this.entries[i]!.facts)) out.push(this.entries[i]!);
      }
      return { entries: out, throughSeq: through() };
    }
    // only the events of the topics asked for, merged in seq order (a handful of topics at most)
    const lists = topics.map((t) => this.byTopic.get(t)).filter((l): l is number[] => l !== undefined);
    const next = lists.map((l) => firstAbove(l, Math.max(afterSeq, first.seq - 1)));
    while (out.length < q.limit) {
      let pick = -1;
      for (let k = 0; k < lists.length; k++) {
        if (next[k]! < lists[k]!.length && (pick < 0 || lists[k]![next[k]!]! < lists[pick]![next[pick]!]!)) pick = k;
      }
      if (pick < 0) break;
      const entry = this.entries[lists[pick]![next[pick]!++]! - first.seq]!;
      if (matches(entry.facts)) out.push(entry);
    }
    return { entries: out, throughSeq: through() };
  }
}
