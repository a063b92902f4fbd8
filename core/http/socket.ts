import * as v from "valibot";
import type { Hooks, Peer } from "crossws";
import type { Principal } from "../auth/permissions";
import type { SessionWatch } from "../auth/sessions";
import { isApiError } from "../errors";

/** Close code for a consumer that cannot keep up (`/ws/events`, `/ws/logs`, `/ws/agents`): the client reconnects with its last cursor. */
export const SLOW_CONSUMER_CLOSE = 4008;

/** Close code for a socket whose session ended (signed out or expired): the client signs in again. */
export const SESSION_ENDED_CLOSE = 4401;

/** Tells `peer` its session has ended (an `error` frame, `unauthorized`) and closes it with {@link SESSION_ENDED_CLOSE}. */
function closeForEndedSession(peer: Peer): void {
  sendFrame(peer, { type: "error", code: "unauthorized", message: "The session has ended; sign in again" });
  peer.close(SESSION_ENDED_CLOSE, "session ended");
}

/** The longest a timer waits (ms): setTimeout fires at once for more. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Ends `peer` when the session it was opened with ends (`principal.session`, see `authenticateUpgrade`):
 * at once when this process signs it out, and when its expiry comes unless HTTP use renewed it (then
 * at the new expiry): an `error` frame (`unauthorized`), then close {@link SESSION_ENDED_CLOSE}.
 * Answers the function that stops watching; nothing to watch without a session.
 */
function watchSession(peer: Peer, principal: { session?: SessionWatch }, end: () => void): () => void {
  const session = principal.session;
  if (!session) return () => undefined;
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const close = () => {
    if (done) return;
    done = true;
    stopWatching();
    end();
    closeForEndedSession(peer);
  };
  const at = (expiresAt: number) => {
    timer = setTimeout(() => {
      session.active().then((renewed) => (done ? undefined : renewed === undefined ? close() : at(renewed)), () => at(Date.now() + 60_000));
    }, Math.min(Math.max(0, expiresAt - Date.now()), MAX_TIMER_MS));
    timer.unref();
  };
  const off = session.onEnded(close);
  const stopWatching = () => {
    clearTimeout(timer);
    off();
  };
  at(session.expiresAt);
  return () => {
    done = true;
    stopWatching();
  };
}

/**
 * Closes `peer` with {@link SLOW_CONSUMER_CLOSE} when its unsent data passes `maxBufferedBytes`
 * (`SVC_WS_MAX_BUFFERED_BYTES`), after `stop()` ends what feeds it; answers whether it did. Called
 * after each batch a stream sends, which never waits for the socket.
 */
export function closeIfSlow(peer: Peer, maxBufferedBytes: number, stop: () => void): boolean {
  if (peer.bufferedAmount <= maxBufferedBytes) return false;
  stop();
  peer.close(SLOW_CONSUMER_CLOSE, "slow consumer: reconnect with your last cursor");
  return true;
}

/** Sends one JSON frame. */
export function sendFrame(peer: Peer, frame: unknown): void {
  peer.send(JSON.stringify(frame));
}

/** The TCP socket under a peer of crossws's Node adapter (`peer._internal.ws` is ws's WebSocket, `_socket` its socket); undefined elsewhere. */
function tcpSocketOf(peer: Peer): { cork(): void; uncork(): void } | undefined {
  const socket = (peer as unknown as { _internal?: { ws?: { _socket?: { cork?: unknown; uncork?: unknown } } } })._internal?.ws?._socket;
  return typeof socket?.cork === "function" && typeof socket.uncork === "function" ? (socket as { cork(): void; uncork(): void }) : undefined;
}

/**
 * Sends text frames (already serialized, in order) in one write where the runtime allows it: under
 * crossws's Node adapter the peer's TCP socket is corked around the sends, so N frames leave in one
 * writev — one system call, and one wake-up of the reader — instead of N (on loopback a write costs
 * ~20 µs, most of the fan-out's time). Elsewhere, or should crossws or ws move their internals, the
 * frames are sent one by one, unchanged. Errors are `peer.send`'s (ws ignores sends on a closed socket).
 */
export function sendFrames(peer: Peer, frames: readonly string[]): void {
  const socket = frames.length > 1 ? tcpSocketOf(peer) : undefined;
  socket?.cork();
  try {
    for (const frame of frames) peer.send(frame);
  } finally {
    socket?.uncork();
  }
}

/**
 * Handles one client message of a type other than `subscribe`/`unsubscribe` (`replay` on
 * `/ws/agents`): it gets the parsed JSON as sent, validates it and answers on the peer itself; it
 * never changes the socket's subscription. A thrown `ApiError` becomes an error frame.
 */
export type SocketMessageHandler = (peer: Peer, principal: Principal, message: unknown) => Promise<void> | void;

/**
 * The subscription protocol shared by `/ws/events`, `/ws/logs` and `/ws/agents` (spec 6.5):
 * `connected` on open; a `subscribe` message validated by `schema` (a second one replaces the first:
 * one subscription per socket); `unsubscribe` → `unsubscribed`; malformed messages →
 * `{ type: "error", message }`; a read error ends the subscription with `reset` (`cursor_expired`) or
 * `error`. `start` acknowledges and starts the subscription, answering its stop function; when it
 * throws, no subscription is left and the error is sent as an `error` frame.
 *
 * A socket opened with a browser session ends with it (see `watchSession`): at sign-out, at expiry
 * unless HTTP use renewed it, and at the next message when the session ended elsewhere.
 *
 * Every `error` frame carries a `code` (spec 7: clients branch on codes, not messages):
 * `invalid_request` for malformed messages, the `ApiError`'s code otherwise (`invalid_request` for a
 * foreign cursor, say), `internal` for anything else, `unauthorized` when the session ended.
 *
 * Option for `/ws/agents`: `handlers` answer other message types (see {@link SocketMessageHandler}).
 */
export function subscriptionSocket<S>(opts: {
  authenticate(request: Request): Promise<Principal>;
  schema: v.GenericSchema<unknown, S>;
  start(peer: Peer, principal: Principal, subscribe: S, onReadError: (err: unknown) => void): Promise<() => void>;
  /** Checks a valid subscribe before anything else (its cursor, say): what it throws is answered as an `error` frame and the socket's subscription stays as it was. */
  check?(subscribe: S): void;
  handlers?: Record<string, SocketMessageHandler>;
}): Partial<Hooks> {
  const subscriptions = new Map<string, () => void>();
  /** By peer: stops following the session the socket was opened with. */
  const sessionWatches = new Map<string, () => void>();
  /** Whether the socket's session is still live (checked before each message: another process may have ended it); closes the socket when not. */
  const sessionLive = async (peer: Peer): Promise<boolean> => {
    const session = (peer.context.principal as { session?: SessionWatch }).session;
    if (!session || (await session.active()) !== undefined) return true;
    stop(peer);
    sessionWatches.get(peer.id)?.();
    closeForEndedSession(peer);
    return false;
  };
  /** Bumped by every subscribe, unsubscribe and close: a subscription started for an older one is stopped at once. */
  const generations = new Map<string, number>();
  const stop = (peer: Peer) => {
    generations.set(peer.id, (generations.get(peer.id) ?? 0) + 1);
    subscriptions.get(peer.id)?.();
    subscriptions.delete(peer.id);
  };
  const invalid = (peer: Peer, message: string) => sendFrame(peer, { type: "error", code: "invalid_request", message });
  const failed = (peer: Peer, err: unknown, fallback: string) => {
    const message = isApiError(err) ? err.message : fallback;
    sendFrame(peer, { type: "error", code: isApiError(err) ? err.code : "internal", message });
  };
  return {
    async upgrade(request) {
      return { context: { principal: await opts.authenticate(request) } };
    },
    open: (peer) => {
      sessionWatches.set(peer.id, watchSession(peer, peer.context.principal as { session?: SessionWatch }, () => stop(peer)));
      sendFrame(peer, { type: "connected" });
    },
    async message(peer, message) {
      let data: unknown;
      try {
        data = JSON.parse(message.text());
      } catch {
        return invalid(peer, "Messages are JSON objects");
      }
      const type = (data as { type?: unknown })?.type;
      if (type !== "unsubscribe" && !(await sessionLive(peer))) return;
      if (type === "unsubscribe") {
        stop(peer);
        return sendFrame(peer, { type: "unsubscribed" });
      }
      const handler = typeof type === "string" && type !== "subscribe" && opts.handlers && Object.hasOwn(opts.handlers, type) ? opts.handlers[type] : undefined;
      if (handler) {
        try {
          return await handler(peer, peer.context.principal as Principal, data);
        } catch (err) {
          return failed(peer, err, "The request failed");
        }
      }
      if (type !== "subscribe") return invalid(peer, `Unknown message type ${JSON.stringify(type)}`);
      const parsed = v.safeParse(opts.schema, data);
      if (!parsed.success) return invalid(peer, `Invalid subscribe: ${v.getDotPath(parsed.issues[0]) ?? "message"} ${parsed.issues[0].message}`);
      try {
        opts.check?.(parsed.output);
      } catch (err) {
        return failed(peer, err, "Invalid subscribe");
      }
      stop(peer);
      const generation = generations.get(peer.id)!;
      const current = () => generations.get(peer.id) === generation;
      const onReadError = (err: unknown) => {
        if (!current()) return;
        subscriptions.delete(peer.id);
        if (isApiError(err) && err.code === "cursor_expired") sendFrame(peer, { type: "reset", reason: "cursor_expired" });
        else failed(peer, err, "The subscription failed");
      };
      let unsubscribe: () => void;
      try {
        unsubscribe = await opts.start(peer, peer.context.principal as Principal, parsed.output, onReadError);
      } catch (err) {
        if (current()) failed(peer, err, "The subscription failed");
        return;
      }
      if (current()) subscriptions.set(peer.id, unsubscribe);
      else unsubscribe(); // superseded or closed while starting
    },
    close: (peer) => {
      stop(peer);
      generations.delete(peer.id);
      sessionWatches.get(peer.id)?.();
      sessionWatches.delete(peer.id);
    },
  };
}
