import * as v from "valibot";
import type { Hooks, Peer } from "crossws";
import type { Principal } from "../auth/permissions";
import { isApiError } from "../errors";

/** Sends one JSON frame. */
export function sendFrame(peer: Peer, frame: unknown): void {
  peer.send(JSON.stringify(frame));
}

/**
 * The subscription protocol shared by `/ws/events` and `/ws/logs` (spec 6.5): `connected` on open; a
 * `subscribe` message validated by `schema` (a second one replaces the first: one subscription per
 * socket); `unsubscribe` → `unsubscribed`; malformed messages → `{ type: "error", message }`; a read
 * error ends the subscription with `reset` (`cursor_expired`) or `error`. `start` acknowledges and
 * starts the subscription, answering its stop function.
 */
export function subscriptionSocket<S>(opts: {
  authenticate(request: Request): Promise<Principal>;
  schema: v.GenericSchema<unknown, S>;
  start(peer: Peer, principal: Principal, subscribe: S, onReadError: (err: unknown) => void): Promise<() => void>;
}): Partial<Hooks> {
  const subscriptions = new Map<string, () => void>();
  /** Bumped by every subscribe, unsubscribe and close: a subscription started for an older one is stopped at once. */
  const generations = new Map<string, number>();
  const stop = (peer: Peer) => {
    generations.set(peer.id, (generations.get(peer.id) ?? 0) + 1);
    subscriptions.get(peer.id)?.();
    subscriptions.delete(peer.id);
  };
  return {
    async upgrade(request) {
      return { context: { principal: await opts.authenticate(request) } };
    },
    open: (peer) => sendFrame(peer, { type: "connected" }),
    async message(peer, message) {
      let data: unknown;
      try {
        data = JSON.parse(message.text());
      } catch {
        return sendFrame(peer, { type: "error", message: "Messages are JSON objects" });
      }
      const type = (data as { type?: unknown })?.type;
      if (type === "unsubscribe") {
        stop(peer);
        return sendFrame(peer, { type: "unsubscribed" });
      }
      if (type !== "subscribe") return sendFrame(peer, { type: "error", message: `Unknown message type ${JSON.stringify(type)}` });
      const parsed = v.safeParse(opts.schema, data);
      if (!parsed.success) return sendFrame(peer, { type: "error", message: `Invalid subscribe: ${v.getDotPath(parsed.issues[0]) ?? "message"} ${parsed.issues[0].message}` });
      stop(peer);
      const generation = generations.get(peer.id)!;
      const current = () => generations.get(peer.id) === generation;
      const onReadError = (err: unknown) => {
        if (!current()) return;
        subscriptions.delete(peer.id);
        sendFrame(peer, isApiError(err) && err.code === "cursor_expired" ? { type: "reset", reason: "cursor_expired" } : { type: "error", message: isApiError(err) ? err.message : "The subscription failed" });
      };
      const unsubscribe = await opts.start(peer, peer.context.principal as Principal, parsed.output, onReadError);
      if (current()) subscriptions.set(peer.id, unsubscribe);
      else unsubscribe(); // superseded or closed while starting
    },
    close: (peer) => {
      stop(peer);
      generations.delete(peer.id);
    },
  };
}
