/**
 * The activities the runtime registers on its Temporal worker, as workflow code calls them. Type-only
 * (shared by the isolate engine in `workflows/` and the Node implementation in `core/temporal`).
 */
import type { Sinks } from "@temporalio/workflow";
import type { ActionRunRecord, DownloadUrl, ObjectRecord, OntologyChange, Subject } from "./context";

export interface RecordWorkflowEventInput {
  type: string;
  workflowId: string;
  runId: string;
  payload?: Record<string, unknown>;
  /** Idempotency key of the event, so an activity retry never records it twice (within `SVC_EVENT_RETENTION_MS`: the keys' retention). */
  key: string;
}

/** Who may answer an intervention: listed identities, holders of a permission, or both (either suffices). */
export interface InterventionAssignees {
  identities?: string[];
  permission?: string;
}

/** A phase of an intervention, recorded in the index and as its event. */
export interface RecordInterventionInput {
  phase: "requested" | "submitted" | "cancelled" | "expired";
  workflowId: string;
  runId: string;
  interventionId: string;
  name: string;
  prompt?: string;
  assignees?: InterventionAssignees;
  answerSchema?: unknown;
  expiresAt?: string;
  answer?: unknown;
  by?: { type: string; id: string };
  reason?: string;
}

/** An event of a sync or pipeline run, recorded once per key. */
export interface RecordRunEventInput {
  type: string;
  payload: Record<string, unknown>;
  key: string;
  runId: string;
}

/**
 * One record of a run (issue 15, `svc-batched-records`): what `recordWorkflowEvent`, `recordRunEvent`
 * or `recordIntervention` records alone, as an entry of `recordBatch` or of the `records` an activity
 * writes before its own work.
 */
export type RunRecord = { workflowEvent: RecordWorkflowEventInput } | { runEvent: RecordRunEventInput } | { intervention: RecordInterventionInput };

/**
 * The records a run queued before calling an activity (issue 15): the activity writes them, in order and
 * once per key, before its own work. Absent in runs started before `svc-batched-records`.
 */
export interface CarriedRecords {
  records?: RunRecord[];
}

/** The sink workflow code logs through (Temporal sinks: called after the activation, not during replay). */
export interface SvcSinks extends Sinks {
  handlerLog: {
    write(level: "debug" | "info" | "warn" | "error", message: string, fields: Record<string, unknown>): void;
  };
}

export interface SvcActivities {
  /** Records a sync or pipeline run event once per key (a local activity for runs started since the `svc-local-records` patch). */
  recordRunEvent(input: RecordRunEventInput): Promise<void>;
  /** Runs a sync's handler; its writes are applied once per run. Answers its JSON result. */
  runSync(input: { syncId: string; runId: string; input: unknown } & CarriedRecords): Promise<unknown>;
  /** Runs one pipeline step; its writes are applied once per run and step. Answers its JSON result. */
  runPipelineStep(input: { pipelineId: string; runId: string; index: number; input: unknown; results: Record<string, unknown> } & CarriedRecords): Promise<unknown>;
  /** Records an intervention's phase once: its index row and events (requested also records run/node waiting); a local activity for runs started since the `svc-local-records` patch. */
  recordIntervention(input: RecordInterventionInput): Promise<void>;
  /**
   * Records a run or node event once per key (run as a local activity by runs started since issue 15's
   * `svc-local-records` patch, as an activity by older ones). `workflow.run.started` also writes the run's
   * `workflow.run.queued` first when the start request has not committed it yet (same key), so queued
   * always precedes started in the stream.
   */
  recordWorkflowEvent(input: RecordWorkflowEventInput): Promise<void>;
  /**
   * Records a run's queued records in one transaction, in order, once per key (a local activity of runs
   * started since `svc-batched-records`, where the run waits or ends before any other activity).
   */
  recordBatch(input: { records: RunRecord[] }): Promise<void>;
  readObject(input: { objectTypeId: string; primaryId: string } & CarriedRecords): Promise<ObjectRecord | null>;
  writeOntology(input: { workflowId: string; runId: string; changes: OntologyChange[]; key: string } & CarriedRecords): Promise<void>;
  runAction(input: { actionId: string; subject?: Subject; params?: Record<string, unknown>; runId: string; workflowRunId: string } & CarriedRecords): Promise<ActionRunRecord>;
  runActionEffect(input: { actionId: string; runId: string }): Promise<void>;
  /** `ctx.blobs.createDownloadUrl` of workflow code (a distinct URL per call; spec 2.6). */
  createDownloadUrl(input: { runId: string; fileId: string; expiresInMs?: number } & CarriedRecords): Promise<DownloadUrl>;
  /** `ctx.blobs.revokeDownloadUrl` of workflow code. */
  revokeDownloadUrl(input: { id: string } & CarriedRecords): Promise<void>;
  /** Appends `schedule.triggered` (once per occurrenceKey) and runs the schedule's handler (its writes once per occurrence). */
  runSchedule(input: { scheduleId: string; occurrenceAt: string; triggeredAt: string; occurrenceKey: string }): Promise<void>;
}

/** The status a reply run ends with (spec 4.3). */
export type AgentRunEnd = "completed" | "failed" | "cancelled";

/**
 * The activities of an agent reply (spec 4.3; workflow `agentReply`, id = run id). Each is idempotent on
 * (run, step, tool call): what a step did is stored with the run, so a retried or resumed activity
 * answers the stored result instead of calling the model or a tool again (never a second published version).
 */
export interface AgentActivities {
  /** Marks the run running (once) and answers the agent's step limit. */
  agentRunStarted(input: { runId: string }): Promise<{ maxSteps: number }>;
  /** One model call: streams its text into the run's output; answers how many tool calls it made (0: the reply is done). */
  agentModelStep(input: { runId: string; step: number }): Promise<{ toolCalls: number }>;
  /** Runs tool call `index` of step `step` as the conversation's user and stores its result. */
  agentToolCall(input: { runId: string; step: number; index: number }): Promise<void>;
  /**
   * Records how the run ended (once). `errorType`: the failure's type as Temporal carries it
   * (`ModelError`, `AgentStepLimit`, …), which gives the error its code; absent in runs that failed
   * before it was passed (their error reads `agent_failed`).
   */
  agentRunFinished(input: { runId: string; status: AgentRunEnd; error?: string; errorType?: string }): Promise<void>;
}
