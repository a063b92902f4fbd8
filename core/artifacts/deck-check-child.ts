/**
 * The deck-check process (spec 4.3; see `DeckCheckProcess` in ./deck-check-process.ts, which forks it):
 * one {@link DeckChecker} (playwright-core and its Chromium) outside the service's process. Started as
 * `node deck-check-child.js '<DeckCheckerOptions as JSON>'` with an IPC channel (advanced serialization:
 * maps pass as they are, a `Buffer` arrives as a plain `Uint8Array`: {@link asBuffer}).
 *
 * Messages in: `{ id, op: "warm" }`, `{ id, op: "check", deck }`, `{ op: "close" }`.
 * Messages out: `{ id, result }` (or `{ id, error }`) for each request, `{ log: line }` for each log line
 * of the checker.
 * It closes its browser and exits on `close`, when the channel to the service goes away (the service
 * exited, even by SIGKILL), and on SIGTERM (10 s at most, then it exits anyway); SIGINT is left to the
 * service (a Ctrl-C reaches the whole process group, and the service closes this process in its own
 * shutdown order; the browser is launched without Playwright's own signal handlers for that reason).
 */
import { DeckChecker, type DeckCheckerOptions, type DeckInput } from "./deck-check";
import { asBuffer, type DeckCheckRequest } from "./deck-check-process";

// a message after the service went away is dropped (without the callback it would be an uncaught error)
const send = (message: unknown) => void (process.connected && process.send?.(message, undefined, undefined, () => undefined));
const options = JSON.parse(process.argv[2] ?? "{}") as Omit<DeckCheckerOptions, "log">;
const checker = new DeckChecker({ ...options, log: (line) => send({ log: line }) });

let closing: Promise<void> | undefined;
function close(): Promise<void> {
  if (closing) return closing;
  setTimeout(() => process.exit(1), 10_000).unref(); // a browser that does not close does not keep this process
  closing = checker.close().finally(() => {
    if (process.connected) process.disconnect();
    process.exit(0);
  });
  return closing;
}

process.on("message", (message: DeckCheckRequest) => {
  if (message.op === "close") {
    void close();
    return;
  }
  const { id } = message;
  const work = message.op === "warm" ? checker.warm() : checker.check(withBuffers(message.deck));
  work.then(
    (result) => send({ id, result }),
    // the checker answers unchecked rather than throwing; should it throw, the service answers unchecked
    (err: unknown) => send({ id, error: (err as Error)?.message ?? String(err) }),
  );
});
process.on("disconnect", () => void close());
process.on("SIGTERM", () => void close());
process.on("SIGINT", () => undefined);

/** The files as `Buffer`s again. */
function withBuffers(deck: DeckInput): DeckInput {
  const files = new Map<string, Buffer>();
  for (const [name, bytes] of deck.files) files.set(name, asBuffer(bytes));
  return { ...deck, files };
}
