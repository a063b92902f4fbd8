/**
 * Interventions inside a run (isolate code). Submissions and cancellations are Temporal updates with
 * validators: a refused one (no such open intervention, or an answer failing its valibot schema) is
 * rejected before it reaches history. Expiry is the workflow's own timer (`condition` with a timeout),
 * so it fires even while no worker runs; cancelling the run cancels what is open.
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
  status: "open" | "submitted" | "cancelled" | "expired";
  answer?: unknown;
  by?: By;
  reason?: string;
}

/**
 * Registers the update handlers and answers the `intervention` primitive of the workflow context.
 * @param records the run's recorder: each phase (index row + events, idempotent per phase) is written,
 *   with what the run queued before it, before the run waits or goes on
 */
export function installInterventions(workflowId: string, runId: string, records: Recorder) {
  const record = (input: RecordInterventionInput) => records.recordNow({ record: { intervention: input }, summary: `intervention ${input.name} ${input.phase}` });
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
    ({ name, interventionId, answer, by }) => {
      const entry = openEntry(name, interventionId);
      entry.status = "submitted";
      entry.answer = v.parse(entry.schema, answer);
      entry.by = by;
      return { interventionId: entry.id };
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
    ({ name, interventionId, by, reason }) => {
      const entry = openEntry(name, interventionId);
      entry.status = "cancelled";
      entry.by = by;
      entry.reason = reason;
      return { interventionId: entry.id };
    },
    { validator: ({ name, interventionId }) => void openEntry(name, interventionId) },
  );

  return async function intervention<A>(name: string, request: InterventionRequest<A>): Promise<InterventionOutcome<A>> {
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
    await record({ ...base, phase: "requested", prompt: request.prompt, assignees: request.assignees, answerSchema, expiresAt: new Date(Date.now() + request.expiresInMs).toISOString() });
    try {
      const resolved = await condition(() => entry.status !== "open", request.expiresInMs);
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
      throw err;
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
