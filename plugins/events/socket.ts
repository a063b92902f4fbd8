import * as v from "valibot";
import type { Hooks } from "crossws";
import { EVENT_TYPES, TOPICS, closeIfSlow, eventSubject, sendFrame, sendFrames, subscriptionSocket, type EventLog, type Principal, type StoredDomainEvent, type Topic } from "../../core/plugin-api";

const Subscribe = v.strictObject({
  type: v.literal("subscribe"),
  topic: v.optional(v.picklist(TOPICS)),
  types: v.optional(v.array(v.picklist(EVENT_TYPES))),
  objectTypeId: v.optional(v.string()),
  primaryId: v.optional(v.string()),
  actionId: v.optional(v.string()),
  runId: v.optional(v.string()),
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(500))),
  afterCursor: v.optional(v.string()),
});

/** The event as an `event` frame carries it: the stored event plus its subject (spec 6.5). */
function frameEvent(e: StoredDomainEvent) {
  const subject = eventSubject(e.payload);
  return { ...e, ...(subject ? { subject } : {}) };
}

/**
 * Serialized `event` frames by event: live events are objects shared by every subscription (the
 * event feed), so each is serialized once per process rather than once per socket; the frame has one
 * shape for every socket. Entries go with their events.
 */
const eventFrames = new WeakMap<StoredDomainEvent, string>();

/** The `event` frame of `e` as JSON text. */
function eventFrame(e: StoredDomainEvent): string {
  let text = eventFrames.get(e);
  if (text === undefined) {
    text = JSON.stringify({ type: "event", event: frameEvent(e) });
    eventFrames.set(e, text);
  }
  return text;
}

/** How long after its last frame a subscription is sent a `checkpoint` for events it skipped (ms). */
export const CHECKPOINT_MS = 10_000;

/**
 * A subscription's `checkpoint` frames: `{ type: "checkpoint", cursor }` names the position past events
 * the subscription's filters or permissions skipped, to resume from (`afterCursor`) without missing
 * anything; a client that kept the cursor of its last `event` frame instead would see it expire with
 * the skipped events after it (410 / `reset`). At most one per `everyMs` after the socket's last event
 * or checkpoint frame: a checkpoint due sooner waits (one timer), and an event frame makes it moot.
 */
function checkpointFrames(peer: Parameters<typeof sendFrame>[0], everyMs: number) {
  let lastFrameAt = Date.now();
  let due: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  const send = () => {
    timer = undefined;
    if (due === undefined) return;
    sendFrame(peer, { type: "checkpoint", cursor: due });
    due = undefined;
    lastFrameAt = Date.now();
  };
  return {
    /** The subscription is past skipped events up to `cursor` (`FeedSubscriber.onCheckpoint`). */
    at: (cursor: string) => {
      due = cursor;
      const wait = lastFrameAt + everyMs - Date.now();
      if (wait <= 0) send();
      else timer ??= setTimeout(send, wait).unref();
    },
    /** An event frame went out: it carries the position itself. */
    passed: () => {
      due = undefined;
      lastFrameAt = Date.now();
    },
    stop: () => clearTimeout(timer),
  };
}

/**
 * `/ws/events` (spec 6.5): after `connected`, the client sends `subscribe` (topic, types, objectTypeId,
 * primaryId, actionId, runId, limit ≤ 500 = read batch size, afterCursor); the server answers
 * `subscribed` (its `afterCursor` names where the subscription starts: the newest event's cursor when
 * none was sent), then `event` frames, and `checkpoint` frames past skipped events (see
 * {@link checkpointFrames}). Without `afterCursor` only events committed after `subscribed`
 * arrive; with it, retained events after the cursor are replayed in order and live ones follow with no
 * gap and no duplicate (the replay reads the stream, then the subscription joins the shared feed; see
 * `EventFeed`). An expired cursor answers `reset` with
 * `cursor_expired`. Events are scoped to the session identity's view permissions. A socket whose
 * unsent data passes `maxBufferedBytes` is closed with 4008 (writers and other sockets never wait for
 * it: live events reach every socket from the process's shared event feed, a chunk of sockets per
 * macrotask, and sends are never awaited). Each event's frame is serialized once per process, not once per socket, and a
 * batch's frames leave in one socket write ({@link sendFrames}).
 */
export function eventsSocket(events: EventLog, authenticate: (req: Request) => Promise<Principal>, maxBufferedBytes: number, checkpointMs = CHECKPOINT_MS): Partial<Hooks> {
  return subscriptionSocket({
    authenticate,
    schema: Subscribe,
    // a cursor of another stream is refused before anything is acknowledged or stopped
    check: (sub) => sub.afterCursor === undefined || events.checkCursor(sub.afterCursor),
    async start(peer, principal, sub, onReadError) {
      // fix the starting point before acknowledging: everything committed after "subscribed" arrives, and
      // the acknowledgement names it, so a client that reconnects before any event came resumes there
      const start = sub.afterCursor ?? (await events.latestCursor());
      sendFrame(peer, { type: "subscribed", topic: sub.topic, types: sub.types, objectTypeId: sub.objectTypeId, primaryId: sub.primaryId, actionId: sub.actionId, runId: sub.runId, limit: sub.limit ?? 100, afterCursor: start ?? null });
      const checkpoints = checkpointFrames(peer, checkpointMs);
      let stop = () => {};
      stop = events.subscribe(
        {
          topics: sub.topic ? [sub.topic as Topic] : undefined,
          types: sub.types,
          objectTypeId: sub.objectTypeId,
          primaryId: sub.primaryId,
          actionId: sub.actionId,
          runId: sub.runId,
          afterCursor: start,
          fromStart: start === undefined,
          limit: sub.limit ?? 100,
          permissions: [...principal.permissions],
        },
        (batch) => {
          sendFrames(peer, batch.map(eventFrame)); // one write; not awaited: a slow socket only grows its own buffer
          checkpoints.passed();
          closeIfSlow(peer, maxBufferedBytes, () => stop());
        },
        onReadError,
        checkpoints.at,
      );
      return () => {
        checkpoints.stop();
        stop();
      };
    },
  });
}
