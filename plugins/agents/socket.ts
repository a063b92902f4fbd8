/**
 * `/ws/agents` (spec 6.5): agent reply output and agent activity over WebSocket. Same session and
 * Origin rules as `/ws/events` (a browser session cookie and an allowed Origin; bearer tokens are
 * refused at the upgrade with 401). One subscription per socket: a second `subscribe` replaces the
 * first.
 *
 * Client messages:
 *
 * - `{ type: "subscribe", runId, afterCursor? }`: one reply run's output. Access is checked first
 *   (only the run's conversation owner; otherwise `{ type: "error", code: "not_found", message }` and
 *   no subscription; `forbidden` for an owner whose `use:agent:<id>` was taken away). Then `{ type: "subscribed", runId, cursor }`, where `cursor` is the
 *   `afterCursor` acknowledged, or `null` when none was given or when retention removed output after
 *   it (rule 3: the output resumes from the earliest retained record); then
 *   `{ type: "run.snapshot", run }` (the run's state: status, published versions, usage, error); then
 *   the retained records after the cursor (without one: all retained records of the run), then live
 *   ones, in order, with no gap and no duplicate, each as
 *   `{ type: "record", runId, cursor, record: { kind, data, at } }`; and a new `run.snapshot` whenever
 *   the run's state changes.
 * - `{ type: "subscribe", activity: true, afterCursor? }`: activity records (`run.started`,
 *   `run.finished`, `artifact.published`) of the runs the caller owns, as `record` frames (`runId`
 *   per record), no snapshots. Acknowledged `{ type: "subscribed", activity: true, cursor }`. Without
 *   `afterCursor` only records appended after `subscribed` arrive. An identity that may use no agent
 *   of the project gets a `forbidden` error frame (spec 5).
 * - A cursor is a position in the whole agent output: one of another run's output (or outside the
 *   caller's activity) is refused with `invalid_request`, on subscribe and replay (it skipped this
 *   scope's records before it in silence).
 * - `{ type: "replay", runId, afterCursor?, limit? }` (limit 1..500, default 100): one bounded page,
 *   access checked the same way: `{ type: "replay", runId, cursor, records, nextCursor }` where `cursor`
 *   is acknowledged as for `subscribed`, `records` are the page's `record` frames and `nextCursor` the
 *   last record's cursor (or the given cursor, or null, when the page is empty). It does not touch the
 *   subscription.
 * - `{ type: "unsubscribe" }` → `{ type: "unsubscribed" }`.
 *
 * Malformed messages (not JSON, unknown type, bad fields, a cursor this output did not issue) answer
 * `{ type: "error", code: "invalid_request", message }`. Sockets that cannot keep up are closed with
 * 4008; reconnect with the last cursor.
 */
import * as v from "valibot";
import type { Hooks, Peer } from "crossws";
import { ApiError, closeIfSlow, cursorPump, sendFrame, subscriptionSocket, type AgentOutput, type AgentRunAccess, type OutputRecord, type OutputScope, type Principal } from "../../core/plugin-api";

/** Records per read while replaying and following. */
const READ_BATCH = 500;

const Cursor = v.pipe(v.string(), v.minLength(1));
const Subscribe = v.pipe(
  v.strictObject({
    type: v.literal("subscribe"),
    runId: v.optional(v.pipe(v.string(), v.minLength(1))),
    activity: v.optional(v.literal(true)),
    afterCursor: v.optional(Cursor),
  }),
  v.check((s) => (s.runId !== undefined) !== (s.activity === true), "needs either runId or activity: true"),
);
type Subscribe = v.InferOutput<typeof Subscribe>;
const Replay = v.strictObject({
  type: v.literal("replay"),
  runId: v.pipe(v.string(), v.minLength(1)),
  afterCursor: v.optional(Cursor),
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(500))),
});

/** A record as its `record` frame carries it. */
const recordFrame = (r: OutputRecord) => ({ type: "record", runId: r.runId, cursor: r.cursor, record: { kind: r.kind, data: r.data, at: r.at } });

/**
 * The `/ws/agents` hooks (see the module comment for the protocol).
 *
 * @param deps.output the retained output and its notifier
 * @param deps.runs the access check and state of runs (the agent runs service)
 * @param deps.authenticateUpgrade the plugin context's upgrade authentication (session + Origin)
 * @param deps.maxBufferedBytes a socket whose unsent data passes this is closed with 4008 (default 4 MiB)
 */
export function agentsSocket(deps: { output: AgentOutput; runs: AgentRunAccess; authenticateUpgrade: (req: Request) => Promise<Principal>; maxBufferedBytes?: number }): Partial<Hooks> {
  const { output, runs } = deps;
  const maxBufferedBytes = deps.maxBufferedBytes ?? 4 * 1024 * 1024;

  /** The cursor to acknowledge: the one given, or null when there is none or retention passed it (rule 3). @throws ApiError invalid_request */
  const acknowledge = async (scope: OutputScope, afterCursor: string | undefined): Promise<string | null> => {
    if (afterCursor === undefined) return null;
    const { reset } = await output.read(scope, afterCursor, 0);
    return reset ? null : afterCursor;
  };

  /** Follows `scope` from `start` (from its first record when undefined), sending `record` frames. */
  const follow = (peer: Peer, scope: OutputScope, start: string | undefined, onReadError: (err: unknown) => void) => {
    let stop = () => {};
    stop = cursorPump<OutputRecord>({
      read: async (afterCursor) => (await output.read(scope, afterCursor, READ_BATCH)).records,
      latestCursor: () => output.latestCursor(scope),
      notifier: output.notifier,
      afterCursor: start,
      fromStart: start === undefined,
      handler: (batch) => {
        for (const r of batch) sendFrame(peer, recordFrame(r));
        closeIfSlow(peer, maxBufferedBytes, () => stop());
      },
      onHandlerError: () => undefined,
      onReadError,
    });
    return () => stop();
  };

  const startRun = async (peer: Peer, principal: Principal, runId: string, afterCursor: string | undefined, onReadError: (err: unknown) => void) => {
    let stopped = false;
    let ready = false;
    let refreshing = false;
    let again = false;
    const refresh = async () => {
      if (refreshing) return void (again = true);
      refreshing = true;
      try {
        do {
          again = false;
          const run = await runs.state(principal, runId).catch(() => undefined);
          if (run && !stopped) sendFrame(peer, { type: "run.snapshot", run });
        } while (again && !stopped);
      } finally {
        refreshing = false;
      }
    };
    const onChange = (changed: string) => {
      if (changed !== runId || stopped) return;
      if (ready) void refresh();
      else again = true;
    };
    // listen before reading the state: a change in between still sends a snapshot
    runs.changes.on("changed", onChange);
    let stopPump: () => void;
    try {
      const run = await runs.state(principal, runId);
      const cursor = await acknowledge({ runId }, afterCursor);
      sendFrame(peer, { type: "subscribed", runId, cursor });
      sendFrame(peer, { type: "run.snapshot", run });
      ready = true;
      if (again) void refresh();
      // retained records after a passed cursor are exactly the earliest retained ones (rule 3)
      stopPump = follow(peer, { runId }, afterCursor, onReadError);
    } catch (err) {
      runs.changes.off("changed", onChange);
      throw err;
    }
    return () => {
      stopped = true;
      runs.changes.off("changed", onChange);
      stopPump();
    };
  };

  const startActivity = async (peer: Peer, principal: Principal, afterCursor: string | undefined, onReadError: (err: unknown) => void) => {
    runs.requireSomeAgent(principal);
    const scope = { activityOf: principal.id };
    const cursor = await acknowledge(scope, afterCursor);
    // fix the starting point before acknowledging: everything appended after "subscribed" arrives
    const start = afterCursor ?? (await output.latestCursor(scope));
    sendFrame(peer, { type: "subscribed", activity: true, cursor });
    return follow(peer, scope, start, onReadError);
  };

  return subscriptionSocket<Subscribe>({
    authenticate: deps.authenticateUpgrade,
    schema: Subscribe,
    start: (peer, principal, sub, onReadError) =>
      sub.runId !== undefined ? startRun(peer, principal, sub.runId, sub.afterCursor, onReadError) : startActivity(peer, principal, sub.afterCursor, onReadError),
    handlers: {
      async replay(peer, principal, message) {
        const parsed = v.safeParse(Replay, message);
        if (!parsed.success) throw new ApiError("invalid_request", `Invalid replay: ${v.getDotPath(parsed.issues[0]) ?? "message"} ${parsed.issues[0].message}`);
        const { runId, afterCursor, limit } = parsed.output;
        await runs.state(principal, runId);
        const page = await output.read({ runId }, afterCursor, limit ?? 100);
        sendFrame(peer, {
          type: "replay",
          runId,
          cursor: page.reset ? null : (afterCursor ?? null),
          records: page.records.map(recordFrame),
          nextCursor: page.records.at(-1)?.cursor ?? afterCursor ?? null,
        });
      },
    },
  });
}
