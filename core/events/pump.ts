import type { EventEmitter } from "node:events";

/**
 * Follows a cursor-ordered source: reads everything after `afterCursor` (or, without one, after the
 * newest item at the time of the call), hands batches to `handler` in order, and reads again whenever
 * `notifier` emits "appended". One reader per subscription, driven by one cursor, so a replay turns
 * into live delivery with no gap and no duplicate. Handler errors go to `onHandlerError` and the pump
 * continues; a read error (an expired or foreign cursor) stops it and goes to `onReadError`.
 *
 * @returns the unsubscribe function
 */
export function cursorPump<T extends { cursor: string }>(opts: {
  read(afterCursor: string | undefined): Promise<T[]>;
  latestCursor(): Promise<string | undefined>;
  notifier: EventEmitter;
  afterCursor?: string;
  /** With no afterCursor: start at the beginning instead of after the newest item. */
  fromStart?: boolean;
  handler(batch: T[]): unknown;
  onHandlerError(err: unknown): void;
  onReadError(err: unknown): void;
}): () => void {
  let cursor = opts.afterCursor;
  let stopped = false;
  let running = false;
  let pending = false;
  const ready = opts.afterCursor !== undefined || opts.fromStart ? Promise.resolve() : opts.latestCursor().then((c) => void (cursor = c));
  const stop = () => {
    stopped = true;
    opts.notifier.off("appended", onAppended);
  };
  const pump = async () => {
    if (running) return void (pending = true);
    running = true;
    try {
      await ready;
      do {
        pending = false;
        for (;;) {
          if (stopped) return;
          const batch = await opts.read(cursor);
          if (batch.length === 0 || stopped) break;
          cursor = batch[batch.length - 1]!.cursor;
          try {
            await opts.handler(batch);
          } catch (err) {
            opts.onHandlerError(err);
          }
        }
      } while (pending && !stopped);
    } catch (err) {
      stop();
      opts.onReadError(err);
    } finally {
      running = false;
    }
  };
  const onAppended = () => void pump();
  opts.notifier.on("appended", onAppended);
  void pump();
  return stop;
}
