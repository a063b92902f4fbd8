/**
 * An agent's reply (spec 4.3): a durable run on Temporal (workflow id = run id). Model calls and tool
 * calls are activities, so a worker that dies mid-reply resumes at the step it was at, and a step
 * already done is answered from what the run stored (a published version is never published again).
 * Cancelling keeps what the reply already published; a failure ends the run failed (a retry is a new run).
 */
import { ApplicationFailure, CancellationScope, isCancellation, proxyActivities, workflowInfo } from "@temporalio/workflow";
import type { AgentActivities } from "../core/sdk/activities-types";

const bookkeeping = proxyActivities<AgentActivities>({
  startToCloseTimeout: "1 minute",
  retry: { initialInterval: "1 second", backoffCoefficient: 2, maximumInterval: "30 seconds", maximumAttempts: 20 },
});
/**
 * Model and tool calls take a while; they heartbeat every 5 s, so a dead worker's step is retried on
 * another within 15 s, and a cancelled reply stops at its next heartbeat.
 */
const steps = proxyActivities<AgentActivities>({
  startToCloseTimeout: "10 minutes",
  heartbeatTimeout: "15 seconds",
  retry: { initialInterval: "2 seconds", backoffCoefficient: 2, maximumInterval: "1 minute", maximumAttempts: 5, nonRetryableErrorTypes: ["ModelError", "AgentStepLimit"] },
});

/** Runs one reply: model step, its tool calls, again, until the model answers without tools. */
export async function agentReply(): Promise<void> {
  const runId = workflowInfo().workflowId;
  try {
    const { maxSteps } = await bookkeeping.agentRunStarted({ runId });
    for (let step = 0; ; step++) {
      if (step >= maxSteps) throw ApplicationFailure.nonRetryable(`The reply needed more than ${maxSteps} model calls`, "AgentStepLimit");
      const { toolCalls } = await steps.agentModelStep({ runId, step });
      if (toolCalls === 0) break;
      for (let index = 0; index < toolCalls; index++) await steps.agentToolCall({ runId, step, index });
    }
    await bookkeeping.agentRunFinished({ runId, status: "completed" });
  } catch (err) {
    const cancelled = isCancellation(err);
    const cause = (err as { cause?: unknown }).cause;
    const message = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
    // what failed: a step's activity failure wraps it (ModelError), the step limit is thrown here; an
    // activity's input is no part of replay's checks (its type and id are), so runs in flight replay
    const type = cause instanceof ApplicationFailure ? cause.type : err instanceof ApplicationFailure ? err.type : undefined;
    await CancellationScope.nonCancellable(() => bookkeeping.agentRunFinished({ runId, status: cancelled ? "cancelled" : "failed", ...(cancelled ? {} : { error: message, ...(type ? { errorType: type } : {}) }) }));
    if (cancelled) throw err;
    throw ApplicationFailure.nonRetryable(message, "AgentReplyFailed");
  }
}
