/**
 * How a run writes its records (run, node, step and intervention events; isolate code), in five
 * generations chosen once per run at its start by Temporal patches, so that every recorded history
 * replays with the commands it was recorded with (issue 15):
 *
 * - `activities`: no patch marker (runs started before issue 15): one activity per record.
 * - `local`: the `svc-local-records` marker: one local activity per record (a `MARKER_RECORDED` each).
 * - `batched`: the `svc-batched-records` marker: records queue in the run and are written first by the
 *   next activity the run calls (its input's `records`), or, where the run waits or ends before any
 *   activity, by one local activity `recordBatch` holding all of them. A node then costs no record of
 *   its own in the common case: `read invoice` is `readObject` carrying `workflow.run.started` and the
 *   node's `started`.
 * - `local-work`: the `svc-local-store-work` marker (new runs): records as in `batched`, and the node
 *   work that only touches svc's own store (`readObject`, `writeOntology`, `createDownloadUrl`,
 *   `revokeDownloadUrl`: milliseconds each) runs as local activities inside the workflow task instead
 *   of costing an activity task and a workflow task each; a wait of 0 ms or less starts no timer (the
 *   SDK's `sleep(0)` is a 1 ms timer, which the server fires on its next timer tick, about a second
 *   later). An invoice review without approval is one workflow task instead of four. Handlers (syncs,
 *   pipeline steps, actions) stay activities: they may call the outside world and take long.
 * - `durable-decisions`: the `svc-durable-decisions` marker (new runs): as `local-work`, except that a
 *   record that states a decision is written by an activity (`recordBatch`), never by a local activity
 *   ({@link Recorder.recordDurably}): a run's `finished` record, and an intervention's submission or
 *   cancellation by update (written by the update's handler before the update completes). A local
 *   activity writes svc's store inside the workflow task, before Temporal has taken that task; the
 *   server refuses a task that closes the run while something new arrived for it (a cancel request, an
 *   update: `UNHANDLED_COMMAND`), and the task is run again from the last one taken, with the new
 *   arrival, and may decide otherwise (a run cancelled instead of completed, a submission lost) over
 *   what was already written. An activity runs only once the task that asked for it is in history, so
 *   what it writes follows a decision Temporal has kept, and the task that closes the run writes
 *   nothing itself. An invoice review without approval is then two workflow tasks and one activity.
 *
 * Records are idempotent on their keys, so a record written twice (an activity retried, a carrier that
 * failed after writing them, whose records are queued again) is written once.
 */
import { patched, proxyActivities, proxyLocalActivities } from "@temporalio/workflow";
import type { CarriedRecords, RunRecord, SvcActivities } from "../core/sdk/activities-types";

/** Options of the run's activities (records as activities, and every activity doing a node's work). */
export const ACTIVITY_OPTIONS = {
  startToCloseTimeout: "1 minute",
  retry: { initialInterval: "1 second", backoffCoefficient: 2, maximumInterval: "30 seconds", maximumAttempts: 20 },
} as const;

/** Activities without a summary (the first engine's run start and end carried none). */
export const activities = proxyActivities<SvcActivities>(ACTIVITY_OPTIONS);

/**
 * Most UTF-8 bytes of a summary we give Temporal. The server refuses a command whose summary payload is
 * above `limit.userMetadataSummarySize` (400 bytes by default, counted after JSON encoding, so quotes
 * and escapes count twice), and a refused workflow task is retried for ever: leave room.
 */
export const SUMMARY_BYTES = 256;

const utf8Bytes = (s: string) => {
  let n = 0;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return n;
};

/** `summary` cut to `bytes` (UTF-8) on a code point boundary, ending with `…` (3 bytes) when cut. */
export function clampSummary(summary: string, bytes = SUMMARY_BYTES): string {
  if (utf8Bytes(summary) <= bytes) return summary;
  let out = "";
  let used = 0;
  for (const ch of summary) {
    used += utf8Bytes(ch);
    if (used > bytes - 3) break;
    out += ch;
  }
  return `${out}…`;
}

/** The summary of a batch: its records' summaries in order, as many as fit, then `and N more`. */
export function batchSummary(summaries: readonly string[]): string {
  let out = "";
  for (const [i, summary] of summaries.entries()) {
    const next = out ? `${out}, ${summary}` : summary;
    const rest = summaries.length - i - 1;
    if (utf8Bytes(rest ? `${next}, and ${rest} more` : next) > SUMMARY_BYTES) {
      if (out) return `${out}, and ${summaries.length - i} more`;
      const suffix = rest ? `, and ${rest} more` : "";
      return clampSummary(summary, SUMMARY_BYTES - suffix.length) + suffix;
    }
    out = next;
  }
  return out;
}

/** Activities whose history entries carry `summary` (the designer's node name, clamped), so history reads as written. */
export const named = (summary: string) => proxyActivities<SvcActivities>({ ...ACTIVITY_OPTIONS, summary: clampSummary(summary) });

/**
 * Patch id of issue 15's first change: records as local activities, one each. Runs recorded before it
 * (no marker) keep recording with activities until they end. Once no such run is open this becomes
 * `deprecatePatch`, and later goes.
 */
export const LOCAL_RECORDS = "svc-local-records";

/** Patch id of issue 15's second change: records queued and carried by the run's next activity, or batched. */
export const BATCHED_RECORDS = "svc-batched-records";

/** Patch id of issue 15's third change: node work on svc's store as local activities, no timer for a zero wait. */
export const LOCAL_STORE_WORK = "svc-local-store-work";

/** Patch id of the cancel-race fix: decisions (a run's end, an intervention's answer) written by activities. */
export const DURABLE_DECISIONS = "svc-durable-decisions";

/**
 * Local activities run by this worker inside the workflow task (retries back off inside the task up to
 * `localRetryThreshold`, then on a server timer).
 */
const LOCAL_OPTIONS = { startToCloseTimeout: "1 minute", retry: ACTIVITY_OPTIONS.retry } as const;

/** Local activities whose history markers carry `summary` (clamped), like {@link named}'s activities. */
export const namedLocal = (summary: string) => proxyLocalActivities<SvcActivities>({ ...LOCAL_OPTIONS, summary: clampSummary(summary) });

/** Which generation a run records with (see the module doc). */
export type RecordingMode = "activities" | "local" | "batched" | "local-work" | "durable-decisions";

/** True in the modes that run store work as local activities (`local-work` and later). */
export const runsLocalWork = (mode: RecordingMode) => mode === "local-work" || mode === "durable-decisions";

/**
 * The run's recording generation. Must be called first thing in a run (before any command): a new run
 * records the `svc-durable-decisions` marker and answers `durable-decisions`; a replay answers what its history
 * was recorded with, for the whole run, also once its replay catches up (`patched` alone would switch
 * mid-run when the worker executes live).
 */
export function recordingMode(): RecordingMode {
  if (patched(DURABLE_DECISIONS)) return "durable-decisions";
  if (patched(LOCAL_STORE_WORK)) return "local-work";
  if (patched(BATCHED_RECORDS)) return "batched";
  return patched(LOCAL_RECORDS) ? "local" : "activities";
}

/** A record with the summary its history entry shows (`unnamed`: the first engine gave none). */
export interface Entry {
  record: RunRecord;
  summary: string;
  unnamed?: boolean;
}

/**
 * A run's records (see the module doc). In `activities` and `local` mode every call issues exactly the
 * command the older engines issued at that point; `beforeWaiting` and `carry` add none.
 */
export interface Recorder {
  /** Records `entry`: at once (`activities`, `local`), or queued until the next carrier or flush (the newer two). */
  record(entry: Entry): Promise<void>;
  /** Records `entry` and writes everything queued before answering (a run about to wait or end). */
  recordNow(entry: Entry): Promise<void>;
  /**
   * Writes what is queued (`batched`, `local-work`: one `recordBatch` local activity), then calls `wait`
   * (a timer, a condition): what the run did shows before it waits. `wait` is called at once when
   * nothing is queued (always in the older modes, so their commands keep their order).
   */
  beforeWaiting<T>(wait: () => Promise<T>): Promise<T>;
  /**
   * Records `entry` (a decision: the run's end, an intervention's answer) with what is queued before it,
   * by an activity in `durable-decisions` runs: written only once the workflow task that decided it is
   * in Temporal's history (see the module doc). As {@link Recorder.recordNow} in the older modes, so their
   * commands stay what they recorded.
   */
  recordDurably(entry: Entry): Promise<void>;
  /**
   * Calls `activity` (an activity or a local activity) with `input` plus the queued records to write
   * first (`batched`, `local-work`; `records` stays absent when nothing is queued, and in the older
   * modes); when the call fails (the node's work failed, or it was cancelled before it ran) they are
   * queued again, in front, for the next carrier: the records themselves did not fail, and may not have
   * been written.
   */
  carry<I extends CarriedRecords, T>(activity: (input: I) => Promise<T>, input: I): Promise<T>;
}

/** The per-record activity an older engine called for `record`. */
function callSingle(proxy: SvcActivities, record: RunRecord): Promise<void> {
  if ("workflowEvent" in record) return proxy.recordWorkflowEvent(record.workflowEvent);
  if ("runEvent" in record) return proxy.recordRunEvent(record.runEvent);
  return proxy.recordIntervention(record.intervention);
}

/** The recorder of a run in `mode` (see {@link recordingMode}). */
export function createRecorder(mode: RecordingMode): Recorder {
  if (mode === "activities" || mode === "local") {
    const proxy = (entry: Entry): SvcActivities => (mode === "local" ? namedLocal(entry.summary) : entry.unnamed ? activities : named(entry.summary));
    const record = (entry: Entry) => callSingle(proxy(entry), entry.record);
    return { record, recordNow: record, recordDurably: record, beforeWaiting: (wait) => wait(), carry: (activity, input) => activity(input) };
  }
  let queued: Entry[] = [];
  /**
   * One local activity for everything queued. Not queued again when it fails: like the older engines'
   * single records, a record whose activity failed is not written (a node's or run's `finished` is then
   * recorded again by the failure path, with the same key and the outcome it ends with).
   */
  const flush = async (durably = false) => {
    const batch = queued;
    queued = [];
    const summary = batchSummary(batch.map((e) => e.summary));
    await (durably ? named(summary) : namedLocal(summary)).recordBatch({ records: batch.map((e) => e.record) });
  };
  const recordNow = async (entry: Entry) => {
    queued.push(entry);
    await flush();
  };
  return {
    record: async (entry) => void queued.push(entry),
    recordNow,
    recordDurably:
      mode === "durable-decisions"
        ? async (entry) => {
            queued.push(entry);
            await flush(true);
          }
        : recordNow,
    beforeWaiting: async (wait) => {
      if (queued.length) await flush();
      return wait();
    },
    carry: async (activity, input) => {
      const batch = queued;
      queued = [];
      try {
        return await activity(batch.length ? { ...input, records: batch.map((e) => e.record) } : input);
      } catch (err) {
        queued = [...batch, ...queued];
        throw err;
      }
    },
  };
}
