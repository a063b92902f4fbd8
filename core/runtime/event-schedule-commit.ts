import { messageOf } from "../errors";
import type { BufferedHandler, HandlerRun } from "./handler";
import type { DomainEventEnvelope } from "../events/catalog";
import { ObjectBatch } from "../ontology/object-batch";
import { TransactionLost, type SqlWriter } from "../store/db";
import type { EventScheduleStore, EventRowWrite } from "./event-schedule-store";
import { retryDelayMs, type ConsumerDeps, type Entry, type RegisteredEventSchedule } from "./event-schedule-model";

/*
 * The group commit of an event schedule's consumer (spec 6.1, 2.4 `schedule.triggered`): the one
 * transaction that writes what a batch of finished handlers did. The consumer (event-schedule-consumer.ts)
 * decides when to commit and applies the result to its memory afterwards.
 */

/** A finished handler run, waiting for its group commit: its buffered writes, or why it failed. */
export type Outcome = { entry: Entry; attempt: number; startedAt: string; spec: HandlerRun } & ({ ok: true; buffered: BufferedHandler<unknown> } | { ok: false; error: string });

/** What became of one outcome in the commit. `error` is set for `retrying` and `dead`. */
export interface CommitResult {
  o: Outcome;
  status: "done" | "retrying" | "dead";
  error?: string;
}

/** What a committed group changed, for the consumer to apply to its memory. */
export interface GroupCommit {
  results: CommitResult[];
  /** The finished prefix of the read window (in read order) that the new cursor moved past. */
  popped: Entry[];
  /** The stored cursor now (unchanged when nothing was popped and the window was not all finished). */
  newCursor: string | undefined;
  /** The consumer's read position when the cursor was chosen: reads made later still need a flush. */
  readAtSnapshot: string | undefined;
}

/** What the commit reads of the consumer: its window and cursors (read synchronously inside the transaction). */
export interface CommitView {
  /** The matching events in read order, finished ones included until the cursor moves past them. */
  window: readonly Entry[];
  /** The stored cursor before this commit. */
  cursor: string | undefined;
  /** The consumer's read position now (it moves while the transaction waits on SQLite). */
  readCursor: () => string | undefined;
}


/**
 * Writes one group commit in ONE transaction: per successful handler, its buffered writes
 * (`HandlerRunner.commitInTx`, origin `{ kind: "runtime", connectorId, scheduleId, eventId }`,
 * causationId = the event, idempotencyKey `schedule:<scheduleId>:<eventId>`) and its
 * `schedule.triggered` (`occurrenceKey` `<scheduleId>@<eventId>`). The keys derived from the events are
 * looked up for the whole group in one statement ({@link unusedKeys}); the unused commit keys are
 * recorded by a deferred statement, the unused event keys by one statement at the end of the callback
 * (visible to the database group's later callers); a used one makes its write a duplicate, as a lookup
 * of its own would. The handlers are written first without savepoints, their objects through one `ObjectBatch` (read in one
 * statement, written in one or two); when one's writes are refused, that attempt is rolled back whole
 * and the group is written again with a SAVEPOINT per handler and no batch: the refused handler is
 * rolled back to its savepoint alone and counts as a failed attempt (`commit refused: …`). Failed
 * attempts become `retrying` (next attempt after `retryDelayMs`) or, at `maxAttempts`, `dead`. Then the
 * new cursor: after the longest finished (done or dead) prefix of the window, or the read position when
 * the whole window is finished; done marks are written for events finished beyond that prefix (an
 * operator retry's too, while its dead letter is in the window: {@link readBeyondCursor}), rows of
 * popped events are deleted, and the cursor is saved when it moved.
 *
 * Then, when a handler's writes were committed, starts draining the outbox (not awaited). Writes
 * nothing to the consumer's memory.
 * @param now ISO timestamp for the rows' `updated_at`
 * @throws whatever the transaction throws (then nothing of the batch was written)
 */
export async function writeGroupCommit(deps: Pick<ConsumerDeps, "db" | "events" | "handlers">, store: EventScheduleStore, schedule: RegisteredEventSchedule, maxAttempts: number, batch: Outcome[], view: CommitView, now: string): Promise<GroupCommit> {
  // first without a SAVEPOINT per handler (two calls to SQLite each): a refused handler is rare, and
  // then the whole attempt is rolled back and the group written again with them
  if (batch.some((o) => o.ok)) {
    try {
      return await writeGroup(deps, store, schedule, maxAttempts, batch, view, now, false);
    } catch {
      // a refused handler (HandlerRefused), or anything else that failed this attempt (nothing of it was
      // written): the attempt with savepoints tells which handler, or fails the commit with its error
    }
  }
  return writeGroup(deps, store, schedule, maxAttempts, batch, view, now, true);
}

/**
 * Whether an operator retry's event is still in the read window after this commit (its dead letter sat
 * beyond the stored cursor): it then finishes with a done mark, as a read event does, so that a restart,
 * which reads on from the stored cursor, does not run it again; the mark goes when the cursor passes it.
 */
function readBeyondCursor(window: readonly Entry[], popped: ReadonlySet<Entry>, revived: Entry): boolean {
  const read = window.find((e) => e.id === revived.id);
  return read !== undefined && !popped.has(read);
}

/** Thrown out of a transaction written without savepoints when a handler's writes were refused. */
class HandlerRefused extends Error {}

/** A `schedule.triggered`'s `occurrenceKey` for an event (spec 2.4), and its idempotency key. */
const occurrenceKeyOf = (scheduleId: string, eventId: string) => `${scheduleId}@${eventId}`;
const triggeredKey = (scheduleId: string, eventId: string) => `schedule.triggered:${occurrenceKeyOf(scheduleId, eventId)}`;

/**
 * The idempotency keys a handler's commit derives from its event (nothing else in the runtime uses
 * them): its `schedule.triggered`'s, its ontology commit's (`spec.key`, when it changes anything) and its appended
 * events' `<spec.key>:event:<i>` (keys a handler chose itself are not among them: another caller of
 * the same group commit may write those, so `EventLog.writeInTx` looks them up as always). The event
 * keys among them are recorded at the end of the commit's callback (`EventLog.recordKeysNow`), so that
 * a later caller of the same database group (a client's append with one of them) finds them used.
 */
function derivedKeys(scheduleId: string, o: Outcome & { ok: true }): string[] {
  const keys = [triggeredKey(scheduleId, o.entry.id)];
  if (o.buffered.changes.length) keys.push(o.spec.key);
  o.buffered.events.forEach((e, i) => {
    if (e.idempotencyKey === `${o.spec.key}:event:${i}`) keys.push(e.idempotencyKey);
  });
  return keys;
}

/**
 * Which of `keys` no commit and no event has used yet, in one statement: what makes a handler's writes
 * once-only without a lookup per key (an event can be handled again: an operator retry of a dead letter
 * that sat beyond the stored cursor is read again after a restart, its row gone).
 */
async function unusedKeys(tx: SqlWriter, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const list = JSON.stringify(keys);
  const used = await tx.all<{ key: string }>(
    "SELECT idempotency_key AS key FROM commits WHERE idempotency_key IN (SELECT value FROM json_each(?1)) UNION ALL SELECT idempotency_key FROM event_keys WHERE idempotency_key IN (SELECT value FROM json_each(?1))",
    [list],
  );
  const unused = new Set(keys);
  for (const { key } of used) unused.delete(key);
  return unused;
}

/** {@link writeGroupCommit}'s transaction; without `savepoints`, a refused handler throws {@link HandlerRefused} (nothing written). */
async function writeGroup(deps: Pick<ConsumerDeps, "db" | "events" | "handlers">, store: EventScheduleStore, schedule: RegisteredEventSchedule, maxAttempts: number, batch: Outcome[], view: CommitView, now: string, savepoints: boolean): Promise<GroupCommit> {
  const { db, events, handlers } = deps;
  const { scheduleId, connectorId } = schedule;
  let results: CommitResult[] = [];
  let popped: Entry[] = [];
  let newCursor = view.cursor;
  let readAtSnapshot = view.readCursor();
  await db.transaction(async (tx) => {
    results = [];
    /** The written events whose keys are among `newKeys`: writeInTx did not record them, recordKeysNow does at the end. */
    const keyed: DomainEventEnvelope[] = [];
    // without savepoints, the handlers' objects are read in one statement and written in one
    const objects = savepoints ? undefined : new ObjectBatch();
    await objects?.load(tx, batch.flatMap((o) => (o.ok ? o.buffered.changes : [])));
    const newKeys = await unusedKeys(tx, batch.flatMap((o) => (o.ok ? derivedKeys(scheduleId, o) : [])));
    for (const o of batch) {
      const e = o.entry.event!;
      let error = o.ok ? undefined : o.error;
      if (o.ok) {
        const origin = { kind: "runtime" as const, connectorId, scheduleId, eventId: e.id };
        const write = async () => {
          await handlers.commitInTx(tx, o.buffered, o.spec, { origin, causationId: e.id, idempotencyKey: o.spec.key, newKeys, objects });
          const occurrenceKey = occurrenceKeyOf(scheduleId, e.id);
          const triggered = events.envelope({ type: "schedule.triggered", payload: { scheduleId, occurrenceAt: e.occurredAt, triggeredAt: o.startedAt, occurrenceKey, eventId: e.id }, origin, correlationId: o.spec.correlationId, causationId: e.id, idempotencyKey: triggeredKey(scheduleId, e.id) });
          await events.writeInTx(tx, [triggered], { newKeys });
          return [...o.buffered.events, triggered].filter((w) => w.idempotencyKey !== undefined && newKeys.has(w.idempotencyKey));
        };
        try {
          keyed.push(...(await (savepoints ? tx.savepoint(write) : write())));
          results.push({ o, status: "done" });
          continue;
        } catch (err) {
          if (err instanceof TransactionLost) throw err;
          if (!savepoints) throw new HandlerRefused(messageOf(err), { cause: err });
          error = `commit refused: ${messageOf(err)}`;
        }
      }
      results.push({ o, status: o.attempt >= maxAttempts ? "dead" : "retrying", error });
    }
    await objects?.flush(tx);
    // in this callback, not deferred to the COMMIT: the database group's later callers (a client's
    // append with one of these keys) must find them used
    await events.recordKeysNow(tx, keyed);
    // the new cursor: after the longest finished prefix of what was read (a synchronous snapshot)
    const finished = new Map(results.map((r) => [r.o.entry, r.status]));
    const window = view.window;
    let k = 0;
    while (k < window.length) {
      const entry = window[k]!;
      const state = finished.get(entry) ?? entry.state;
      if (state !== "done" && state !== "dead") break;
      k++;
    }
    popped = window.slice(0, k);
    readAtSnapshot = view.readCursor();
    newCursor = k === window.length ? readAtSnapshot : k > 0 ? popped[k - 1]!.cursor : view.cursor;
    const poppedSet = new Set(popped);
    for (const { o, status, error } of results) {
      const entry = o.entry;
      const w: EventRowWrite = { eventId: entry.id, partitionKey: entry.partition, occurredAt: entry.occurredAt, attempts: o.attempt, error, revived: entry.revived, event: entry.event };
      if (status !== "done") await store.writeFailure(tx, status, { ...w, nextAttemptAt: status === "retrying" ? Date.now() + retryDelayMs(o.attempt) : undefined }, now);
      else if (!entry.revived ? !poppedSet.has(entry) : readBeyondCursor(window, poppedSet, entry)) await store.writeDone(tx, w, now);
      else if (entry.hasRow) await store.deleteRow(tx, entry.id, false);
    }
    for (const entry of popped) if (entry.hasRow && !finished.has(entry)) await store.deleteRow(tx, entry.id, true);
    if (newCursor !== view.cursor) await store.saveCursor(tx, newCursor, now);
  });
  // committed: append what the handlers wrote to the stream (right away, before the caller's memory work)
  if (results.some((r) => r.status === "done")) void events.drain();
  return { results, popped, newCursor, readAtSnapshot };
}
