import type { Client } from "@temporalio/client";
import { temporalClient, temporalCommon } from "./sdk";

/** gRPC status code INVALID_ARGUMENT (grpc-js `status.INVALID_ARGUMENT`; not a direct dependency). */
const GRPC_INVALID_ARGUMENT = 3;

/** What {@link startRun} starts: a workflow type with its arguments under a workflow id. */
export interface StartRunOptions {
  /** Temporal workflow type (the designer's workflow id, `syncRun`, `actionEffect`, …). */
  workflowType: string;
  /** Temporal workflow id: the run's id, so a resend cannot start a second execution. */
  workflowId: string;
  taskQueue: string;
  args: unknown[];
  /** Stored on the execution (e.g. the requesting actor), readable by describe. */
  memo?: Record<string, unknown>;
}

/**
 * Starts a workflow execution once per workflow id (`REJECT_DUPLICATE`): the one place that owns
 * "already started". Asks for eager start (issue 15): when this process's worker has a free slot on the
 * task queue, the server answers the start with the run's first workflow task for it, without a
 * matching round trip; otherwise (no local worker, a server without it) the start is an ordinary one.
 * Answers `{ started: false }` when an execution with that id exists already, whatever its type:
 * callers decide whether that one is theirs.
 *
 * @throws the client's error for anything else (server unreachable, namespace missing, …)
 */
export async function startRun(client: Client, opts: StartRunOptions): Promise<{ started: boolean }> {
  try {
    await client.workflow.start(opts.workflowType, {
      workflowId: opts.workflowId,
      taskQueue: opts.taskQueue,
      args: opts.args,
      workflowIdReusePolicy: temporalCommon().WorkflowIdReusePolicy.REJECT_DUPLICATE,
      requestEagerStart: true,
      ...(opts.memo ? { memo: opts.memo } : {}),
    });
    return { started: true };
  } catch (err) {
    if (err instanceof temporalClient().WorkflowExecutionAlreadyStartedError) return { started: false };
    throw err;
  }
}

/**
 * Whether a start error is Temporal refusing the request itself (gRPC `INVALID_ARGUMENT`: a workflow id,
 * type, memo or input it will never take), so retrying cannot help. Anything else (unreachable,
 * deadline exceeded, overloaded, permission or namespace trouble an operator can fix) is transient.
 */
export function isPermanentStartError(err: unknown): boolean {
  const cause = (err as { cause?: unknown })?.cause;
  const { isGrpcServiceError } = temporalClient();
  const grpc = isGrpcServiceError(err) ? err : isGrpcServiceError(cause) ? cause : undefined;
  return grpc?.code === GRPC_INVALID_ARGUMENT;
}
