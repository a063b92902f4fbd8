/**
 * Workflow authoring (spec 4.1, 4.3). This module runs inside Temporal's workflow isolate as well as
 * in Node, so it is type-only apart from {@link defineWorkflow}: no I/O, no Node imports.
 */
import type * as v from "valibot";
import type { ActionRunRecord, BlobsApi, ObjectRecord, OntologyChange, Subject } from "./context";
import type { InterventionAssignees } from "./activities-types";

export type { InterventionAssignees };

/** A request for a person's decision inside a run. */
export interface InterventionRequest<A> {
  /** Shown to the person answering. */
  prompt: string;
  /**
   * valibot schema of the answer (synchronous: not a `…Async` one); an answer that fails it is refused
   * (400) and the intervention stays open. Anything else fails the run when the intervention opens.
   */
  answer: v.GenericSchema<unknown, A>;
  /**
   * Who may answer: identities, or holders of a permission. At least one identity of the project must
   * be able to: an intervention nobody could answer (no one named, only identities the project does not
   * define, a permission no identity holds) does not open, and the run fails, saying why.
   */
  assignees: InterventionAssignees;
  /**
   * Milliseconds until it expires (a durable timer: it expires even while no worker runs). Required,
   * with no default: a missing, zero, negative or non-number value fails the run when the intervention
   * opens, saying so.
   */
  expiresInMs: number;
}

/** How an intervention ended: exactly one of these. */
export type InterventionOutcome<A> =
  | { status: "submitted"; answer: A; by: { type: string; id: string } }
  | { status: "cancelled"; by?: { type: string; id: string }; reason?: string }
  | { status: "expired" };

/**
 * The durable primitives a workflow run uses. Each is recorded in Temporal's history under the name
 * the designer gave, so the history reads as the workflow was written.
 */
export interface WorkflowContext {
  workflowId: string;
  runId: string;
  /**
   * Handler logs of the run (spec 2.5; run context `{ kind: "workflow", id: runId }`). Written through
   * a Temporal sink, so replays do not log twice.
   */
  log: {
    debug(message: string, fields?: Record<string, unknown>): void;
    info(message: string, fields?: Record<string, unknown>): void;
    warn(message: string, fields?: Record<string, unknown>): void;
    error(message: string, fields?: Record<string, unknown>): void;
  };
  /** A named step: records `workflow.run.node.started` / `.finished` around `fn`. */
  node<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * A durable timer of `ms` milliseconds (survives worker and server restarts); `name` labels it in
   * Temporal's history. `ms <= 0` returns at once and starts no timer (runs started before the
   * `svc-local-store-work` patch keep the 1 ms timer they recorded).
   */
  sleep(ms: number, name?: string): Promise<void>;
  objects: {
    get(objectTypeId: string, primaryId: string): Promise<ObjectRecord | undefined>;
  };
  /** Applies ontology changes as one system write (origin runtime, no actor), exactly once. */
  write(changes: OntologyChange[]): Promise<void>;
  /**
   * Asks a person for a decision and waits for it: the run is `waiting` until the intervention is
   * submitted (answer validated), cancelled, or expires. Names are unique among a run's open interventions.
   */
  intervention<A>(name: string, request: InterventionRequest<A>): Promise<InterventionOutcome<A>>;
  /** Download URLs for files the run holds (spec 2.6), each call an activity. */
  blobs: BlobsApi;
  actions: {
    /** Runs a project action as an activity; the run has its own record and runId. */
    run(actionId: string, input: { subject?: Subject; params?: Record<string, unknown> }): Promise<ActionRunRecord>;
  };
  /**
   * Runs `fn` to its end even when the run is cancelled (Temporal's `CancellationScope.nonCancellable`):
   * for cleanup in a `finally` or `catch` after a cancellation, whose writes, actions and timers would
   * otherwise be cancelled before they start. The run still ends `cancelled` once the cancellation that
   * reached it propagates. Work inside is not cancellable: keep it short.
   */
  nonCancellable<T>(fn: () => Promise<T>): Promise<T>;
}

/** A workflow: typed input and a `run` function executed durably on Temporal. */
export interface WorkflowDefinition<I = unknown, O = unknown> {
  input: v.GenericSchema<unknown, I>;
  title?: string;
  description?: string;
  run(ctx: WorkflowContext, input: I): Promise<O>;
}

/**
 * Declares a workflow. Its id is the key under which the project lists it; that id is also its
 * Temporal workflow type.
 */
export function defineWorkflow<S extends v.GenericSchema<unknown, any>, O>(def: { input: S; title?: string; description?: string; run(ctx: WorkflowContext, input: v.InferOutput<S>): Promise<O> }): WorkflowDefinition<v.InferOutput<S>, O> {
  return def;
}
