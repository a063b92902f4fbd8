/**
 * Interventions inside a run (isolate code). Submissions and cancellations are Temporal updates with
 * validators: a refused one (no such open intervention, or an answer failing its valibot schema) is
 * rejected before it reaches history. Expiry is the workflow's own timer (`condition` with a timeout),
 * so it fires even while no worker runs; cancelling the run cancels what is open.
 *
 * An intervention ends exactly one way. In `durable-decisions` runs (see records.ts) an accepted update
 * writes its outcome itself, by an activity, before the update completes: the activity runs only once
 * Temporal has the update's acceptance in history, so a 2xx to the client means the outcome is both
 * decided and written, and a workflow task Temporal throws away (a run cancel arriving meanwhile) has
 * written nothing of it. While that write runs the intervention is `deciding`: other updates are
 * refused, the expiry timer and a run cancellation no longer end it, and the run goes on once the
 * outcome is written. Older runs keep recording the outcome from the run's own path.
 */
import { ApplicationFailure, CancellationScope, condition, defineUpdate, isCancellation, setHandler } from "@temporalio/workflow";
import * as v from "valibot";
import { toJsonSchema } from "@valibot/to-json-schema";
import type { RecordInterventionInput } from "../core/sdk/activities-types";
import type { Recorder } from "./records";
import type { InterventionOutcome, InterventionRequest } from "../core/sdk/workflow";

type By = { type: string; id: string };

/** Update: submit an answer. Rejected (type `NotOpen` or `InvalidAnswer`) by its validator. */
export const submitIntervention = defineUpdate<{ interventionId: string }, [{ name: string; interventionId?: string; answer: unknown; by: By }]>("submitIntervention");
/** Update: cancel an open intervention. Rejected (type `NotOpen`) by its validator. */
export const cancelIntervention = defineUpdate<{ interventionId: string }, [{ name: string; interventionId?: string; by?: By; reason?: string }]>("cancelIntervention");

interface Entry {
  id: string;
  schema: v.GenericSchema<unknown, unknown>;
  /** `deciding`: an update was accepted and its handler is writing the outcome (`durable-decisions` runs). */
  status: "open" | "deciding" | "submitted" | "cancelled" | "expired";
  answer?: unknown;
  by?: By;
  reason?: string;
}

/**
 * What is wrong with an intervention's request, or undefined when it can open: `answer` must be a
 * synchronous valibot schema (the submit update's validator runs it: anything else made every submission
 * fail inside Temporal, answered 503 as if Temporal were away), and `expiresInMs` a positive number of
 * milliseconds whose deadline is a date (the expiry timer needs it; without one the run failed
 * "Invalid time value"). Deterministic: the same run asks the same thing on replay. The schema test is
 * `isValibotSchema`'s (core/sdk/connector.ts), written again: the workflow isolate may import no SDK values.
 */
export function interventionRequestProblem(request: unknown): string | undefined {
  if (typeof request !== "object" || request === null) return "its request must be { prompt, answer, assignees, expiresInMs }";
  const { answer, expiresInMs } = request as { answer?: unknown; expiresInMs?: unknown };
  const schema = (typeof answer === "object" && answer !== null ? answer : {}) as { kind?: unknown; async?: unknown; "~run"?: unknown };
  if (schema.kind !== "schema" || schema.async === true || typeof schema["~run"] !== "function") {
    const was = answer === null ? "null" : schema.async === true ? "an async valibot schema" : typeof answer === "object" ? "an object" : typeof answer;
    return `its answer must be a valibot schema (e.g. v.object({ approved: v.boolean() })), not ${was}`;
  }
  if (typeof expiresInMs !== "number" || !(expiresInMs > 0) || !Number.isFinite(new Date(Date.now() + expiresInMs).getTime())) {
    return `its expiresInMs must be a positive number of milliseconds (how long it stays open before it expires; it has no default), not ${typeof expiresInMs === "number" ? expiresInMs : typeof expiresInMs}`;
  }
  return undefined;
}

/**
 * Registers the update handlers and answers the `intervention` primitive of the workflow context.
 * @param records the run's recorder: each phase (index row + events, idempotent per phase) is written,
 *   with what the run queued before it, before the run waits or goes on
 * @param durable `durable-decisions` runs: an accepted update writes its outcome by an activity before
 *   it completes (see the module doc); false replays the commands older runs recorded
 */
export function installInterventions(workflowId: string, runId: string, records: Recorder, durable = false) {
  const entry = (input: RecordInterventionInput) => ({ record: { intervention: input }, summary: `intervention ${input.name} ${input.phase}` });
  const record = (input: RecordInterventionInput) => records.recordNow(entry(input));
  /**
   * Writes the outcome an accepted update decided (`durable` runs), whatever happens to the run
   * meanwhile; the intervention is `deciding` until then. When the write fails for good, the
   * intervention is open again and the update fails: nothing of it was written.
   */
  const decide = async (target: Entry, outcome: "submitted" | "cancelled", input: RecordInterventionInput, apply: () => void) => {
    target.status = "deciding";
    try {
      await CancellationScope.nonCancellable(() => records.recordDurably(entry(input)));
    } catch (err) {
      target.status = "open";
      throw err;
    }
    apply();
    target.status = outcome;
  };
  const baseOf = (target: Entry, name: string) => ({ workflowId, runId, interventionId: target.id, name });
  const entries = new Map<string, Entry>();
  let seq = 0;
  /** The open intervention of that name — and, when the caller names one, exactly that one (the API checked its assignees). */
  const openEntry = (name: string, interventionId?: string): Entry => {
    const entry = entries.get(name);
    if (!entry || entry.status !== "open" || (interventionId !== undefined && entry.id !== interventionId)) throw ApplicationFailure.create({ type: "NotOpen", message: `Run ${runId} has no open intervention "${name}"`, nonRetryable: true });
    return entry;
  };

  setHandler(
    submitIntervention,
    async ({ name, interventionId, answer, by }) => {
      const target = openEntry(name, interventionId);
      // the validator accepted this answer before Temporal took the update; a replay does not run the
      // validator, and parsing again with an answer schema changed since (a field made required) threw
      // on every replay, leaving the run stuck: what was accepted stands, as it was sent
      const again = v.safeParse(target.schema, answer);
      const parsed = again.success ? again.output : answer;
      const apply = () => {
        target.answer = parsed;
        target.by = by;
      };
      if (durable) await decide(target, "submitted", { ...baseOf(target, name), phase: "submitted", answer: parsed, by }, apply);
      else {
        target.status = "submitted";
        apply();
      }
      return { interventionId: target.id };
    },
    {
      validator: ({ name, interventionId, answer }) => {
        const result = v.safeParse(openEntry(name, interventionId).schema, answer);
        if (!result.success) {
          const issues = result.issues.map((i) => ({ path: v.getDotPath(i) ? `answer.${v.getDotPath(i)}` : "answer", message: i.message }));
          throw ApplicationFailure.create({ type: "InvalidAnswer", message: `Invalid answer: ${issues[0]!.path} ${issues[0]!.message}`, details: [issues], nonRetryable: true });
        }
      },
    },
  );
  setHandler(
    cancelIntervention,
    async ({ name, interventionId, by, reason }) => {
      const target = openEntry(name, interventionId);
      const apply = () => {
        target.by = by;
        target.reason = reason;
      };
      if (durable) await decide(target, "cancelled", { ...baseOf(target, name), phase: "cancelled", by, reason }, apply);
      else {
        target.status = "cancelled";
        apply();
      }
      return { interventionId: target.id };
    },
    { validator: ({ name, interventionId }) => void openEntry(name, interventionId) },
  );

  return async function intervention<A>(name: string, request: InterventionRequest<A>): Promise<InterventionOutcome<A>> {
    // a malformed request fails the run before anything of the intervention is recorded
    const problem = interventionRequestProblem(request);
    if (problem) throw ApplicationFailure.create({ type: "InvalidIntervention", message: `Intervention "${name}" of run ${runId}: ${problem}`, nonRetryable: true });
    if (entries.get(name)?.status === "open") throw ApplicationFailure.nonRetryable(`Intervention "${name}" is already open in run ${runId}`);
    const entry: Entry = { id: `${runId}:${name}:${++seq}`, schema: request.answer as v.GenericSchema<unknown, unknown>, status: "open" };
    entries.set(name, entry);
    const base = { workflowId, runId, interventionId: entry.id, name };
    let answerSchema: unknown;
    try {
      answerSchema = toJsonSchema(request.answer as never, { errorMode: "ignore" });
    } catch {
      answerSchema = undefined;
    }
    try {
      await record({ ...base, phase: "requested", prompt: request.prompt, assignees: request.assignees, answerSchema, expiresAt: new Date(Date.now() + request.expiresInMs).toISOString() });
    } catch (err) {
      // it did not open (the record was refused: nobody could answer it): code that goes on may ask again
      entries.delete(name);
      throw err;
    }
    const deadline = Date.now() + request.expiresInMs;
    // the first wait is the whole expiry, as older runs recorded it; a wait again (a failed write) the rest
    for (let timeout = request.expiresInMs; ; timeout = Math.max(1, deadline - Date.now())) {
      try {
        const resolved = await condition(() => entry.status !== "open", timeout);
        if (!resolved) {
          entry.status = "expired";
          await CancellationScope.nonCancellable(() => record({ ...base, phase: "expired" }));
          return { status: "expired" };
        }
      } catch (err) {
        if (isCancellation(err) && entry.status === "open") {
          entry.status = "cancelled";
          await CancellationScope.nonCancellable(() => record({ ...base, phase: "cancelled", reason: "the run was cancelled" }));
        }
        // an accepted update decided first: its outcome is the intervention's (the run's cancellation reaches the next step)
        if (!(isCancellation(err) && entry.status === "deciding")) throw err;
      }
      if (!durable) break;
      // the update's handler writes the outcome; when its write failed for good the intervention is open again
      await CancellationScope.nonCancellable(() => condition(() => entry.status !== "deciding"));
      if (entry.status === "open") continue;
      if (entry.status === "submitted") return { status: "submitted", answer: entry.answer as A, by: entry.by! };
      return { status: "cancelled", ...(entry.by ? { by: entry.by } : {}), ...(entry.reason ? { reason: entry.reason } : {}) };
    }
    // terminal records survive a run cancellation arriving meanwhile, so the index never stays "open"
    if (entry.status === "submitted") {
      await CancellationScope.nonCancellable(() => record({ ...base, phase: "submitted", answer: entry.answer, by: entry.by }));
      return { status: "submitted", answer: entry.answer as A, by: entry.by! };
    }
    await CancellationScope.nonCancellable(() => record({ ...base, phase: "cancelled", by: entry.by, reason: entry.reason }));
    return { status: "cancelled", ...(entry.by ? { by: entry.by } : {}), ...(entry.reason ? { reason: entry.reason } : {}) };
  };
}
