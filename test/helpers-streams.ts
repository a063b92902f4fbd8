/** Checks of the event stream contract shared by the SQLite and the NATS stream tests (spec 6.2, `EventStream.scan`). */
import { expect } from "vitest";
import { scanEvents, type EventStream, type StreamQuery, type StreamScan } from "../core/events/stream";

/** Every event's cursor in the stream, oldest first (unfiltered pages of 1,000). */
export async function allCursors(stream: EventStream): Promise<string[]> {
  const cursors: string[] = [];
  for (;;) {
    const page = await stream.read({ limit: 1000, afterCursor: cursors.at(-1) });
    if (page.length === 0) return cursors;
    cursors.push(...page.map((e) => e.cursor));
  }
}

/**
 * `stream.scan(q)` against the contract: its events are exactly `stream.read(q)`'s; a full page ends at
 * its last event (`end` false); a shorter one examined the whole stream (`cursors`, every cursor of the
 * stream oldest first), so its checkpoint is the stream's last cursor and `end` is true, or undefined
 * when nothing came after `q.afterCursor`.
 */
export async function expectScanContract(stream: EventStream, q: StreamQuery, cursors: readonly string[]): Promise<StreamScan> {
  const scan = await stream.scan!(q);
  const read = await stream.read(q);
  expect(scan.events).toEqual(read);
  const full = read.length === q.limit;
  const nothingAfter = q.afterCursor === cursors.at(-1);
  expect({ checkpoint: scan.checkpoint, end: scan.end }).toEqual(full ? { checkpoint: read.at(-1)!.cursor, end: false } : { checkpoint: nothingAfter ? undefined : cursors.at(-1), end: true });
  return scan;
}

/**
 * The events a follower collects scanning `q` page by page (`scanEvents`, each page after the previous
 * checkpoint) until a page says `end`; `through` is the last checkpoint. Fails after 10,000 pages.
 */
export async function scanToEnd(stream: EventStream, q: StreamQuery): Promise<{ ids: string[]; through: string | undefined; pages: number }> {
  const ids: string[] = [];
  let through = q.afterCursor;
  for (let pages = 1; pages <= 10_000; pages++) {
    const scan = await scanEvents(stream, { ...q, afterCursor: through });
    ids.push(...scan.events.map((e) => e.id));
    through = scan.checkpoint ?? through;
    if (scan.end) return { ids, through, pages };
  }
  throw new Error("scanToEnd: no end after 10,000 pages");
}

/** `stream` seen through `read` alone (no `scan`, no `readJson`): what `scanEvents` falls back on for a stream without `scan`. */
export const readOnly = (stream: EventStream): EventStream => ({ read: (q) => stream.read(q) }) as EventStream;
