/**
 * The activities of an agent reply (spec 4.3; see {@link AgentActivities}). What a step did is stored
 * with the run before the activity answers, so a retried or resumed activity answers the stored result:
 * the model is not called again for a step it finished, and a tool call is not run again (publishing is
 * also keyed by the call in the artifact store, for the moment between publishing and storing).
 * Everything the reply produces is appended to the run's output for /ws/agents, keyed, so a retry never
 * duplicates a record.
 */
import { isApiError } from "../errors";
import { can, has } from "../auth/permissions";
import type { AgentActivities } from "../sdk/activities-types";
import type { ProjectRegistry } from "../project/registry";
import type { AgentOutput } from "../agents/output";
import { ModelError, type Model } from "../agents/model";
import { AGENT_RULES, agentErrorCode, isRunEnded, type AgentRuns, type StoredStep } from "./agents";
import type { AgentTools, PublishResult } from "./agent-tools";
import { temporalActivity, temporalCommon } from "../temporal/sdk";

/** How often a running step heartbeats, whatever the model or tool is doing (ms). */
export const HEARTBEAT_EVERY_MS = 5_000;

/** Runs `fn` heartbeating every {@link HEARTBEAT_EVERY_MS}, so Temporal notices a dead worker within the heartbeat timeout and delivers cancellation. */
async function beating<T>(fn: () => Promise<T>): Promise<T> {
  const ctx = temporalActivity().Context.current();
  const timer = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}

/**
 * Watches a run while one of its steps works: `ended()` once the run has ended (cancelled, or failed) and
 * `signal` aborted then or when Temporal cancels the activity. A cancelled reply is recorded ended at once
 * (its workflow does not wait for the step), while the step hears of it only at a heartbeat Temporal
 * answers, seconds later: without this the step went on streaming text, saving its usage and listing its
 * tool calls after the run's `run.finished`.
 */
function watchRun(runs: AgentRuns, runId: string, cancelled: AbortSignal): { signal: AbortSignal; ended(): boolean; dispose(): void } {
  const controller = new AbortController();
  let ended = false;
  // the event of a status change carries the status: the step stops at once, before run.finished is appended
  const stopWatching = runs.onEnded(runId, (status) => {
    ended = true;
    controller.abort(new Error(`run ${runId} ended (${status})`));
  });
  const onCancel = () => controller.abort(cancelled.reason);
  if (cancelled.aborted) onCancel();
  else cancelled.addEventListener("abort", onCancel, { once: true });
  return {
    signal: controller.signal,
    ended: () => ended,
    dispose: () => {
      stopWatching();
      cancelled.removeEventListener("abort", onCancel);
    },
  };
}

/**
 * @param deps.model the model for a model id (`scripted`, `openai-compatible:<model>`, …): the agent's
 *   own, else the service's default
 */
export function createAgentActivities(deps: { runs: AgentRuns; output: AgentOutput; tools: AgentTools; project: ProjectRegistry; model: (id: string | undefined) => Model }): AgentActivities {
  const { runs, output, tools, project } = deps;
  const append = (row: { id: string; owner: string }, kind: string, data: unknown, key: string, activity = false) => output.append([{ runId: row.id, owner: row.owner, kind, data, key: `${row.id}:${key}`, activity }]);
  return {
    async agentRunStarted({ runId }) {
      const row = await runs.runRow(runId);
      await runs.setStatus(runId, "running");
      return { maxSteps: project.agent(row.agent_id).definition.maxSteps ?? 8 };
    },

    agentModelStep: ({ runId, step }) => beating(async () => {
      const row = await runs.runRow(runId);
      const done = (JSON.parse(row.steps) as StoredStep[])[step];
      if (done) return { toolCalls: done.model.toolCalls.length };
      // a reply acts as its owner (spec 5: access to the agent): one whose use was taken from them stops here
      if (!has(runs.principalOf(row), can.useAgent(row.agent_id))) {
        throw temporalCommon().ApplicationFailure.nonRetryable(`${row.owner} may no longer use agent "${row.agent_id}" (${can.useAgent(row.agent_id)}): the reply stopped`, "forbidden");
      }
      const agent = project.agent(row.agent_id).definition;
      const ctx = temporalActivity().Context.current();
      const attempt = ctx.info.attempt;
      const watch = watchRun(runs, runId, ctx.cancellationSignal);
      try {
        // a retried model call streams its text again: readers drop what the failed attempt streamed of this step
        if (attempt > 1) await append(row, "text.reset", { step, attempt }, `${step}:${attempt}:reset`);
        let n = 0;
        let pending = Promise.resolve();
        const onText = (delta: string) => {
          ctx.heartbeat();
          const i = n++;
          // nothing is added to the output of a run that has ended
          pending = pending.then(() => (watch.ended() ? undefined : append(row, "text", { step, delta }, `${step}:${attempt}:text:${i}`).then(() => undefined)));
          return pending;
        };
        let result;
        try {
          result = await deps.model(agent.model).step(
            { system: `${agent.instructions}\n\n${AGENT_RULES}`, messages: await runs.history(row), tools: tools.definitions(agent.tools), signal: watch.signal, retry: !!row.retry_of },
            onText,
          );
        } catch (err) {
          await pending;
          // the run ended meanwhile: its workflow is closed and takes no answer from this step
          if (watch.ended()) return { toolCalls: 0 };
          if (err instanceof ModelError && !err.retryable) throw temporalCommon().ApplicationFailure.nonRetryable(err.message, "ModelError");
          throw err;
        }
        await pending;
        // saveStep keeps nothing for a run that has ended (its usage stays what it was at the end)
        if (!(await runs.saveStep(runId, step, { model: { text: result.text, toolCalls: result.toolCalls, usage: result.usage } }))) return { toolCalls: 0 };
        for (const [i, call] of result.toolCalls.entries()) await append(row, "tool.call", { step, id: call.id, name: call.name, input: call.input }, `${step}:call:${i}`);
        return { toolCalls: result.toolCalls.length };
      } finally {
        watch.dispose();
      }
    }),

    agentToolCall: ({ runId, step, index }) => beating(async () => {
      const row = await runs.runRow(runId);
      const stored = (JSON.parse(row.steps) as StoredStep[])[step];
      if (!stored) throw temporalCommon().ApplicationFailure.nonRetryable(`Step ${step} of ${runId} has no model answer`, "AgentStepMissing");
      if (stored.results[index]) return;
      // a tool of a run that has ended does not run (a publish after a cancel)
      if (isRunEnded(row.status)) return;
      const call = stored.model.toolCalls[index]!;
      let result: unknown;
      let isError = false;
      try {
        result = await tools.execute(call, { principal: runs.principalOf(row), agentId: row.agent_id, runId, step, index });
      } catch (err) {
        if (!isApiError(err)) throw err; // infrastructure: retried
        result = { error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } };
        isError = true;
      }
      if (!(await runs.saveStep(runId, step, { result: { index, result, isError } }))) return;
      await append(row, "tool.result", { step, id: call.id, name: call.name, result, isError }, `${step}:result:${index}`);
      if (!isError && (call.name === "publish_artifact" || call.name === "publish_version")) {
        const p = result as PublishResult;
        await append(row, "artifact.published", { artifactId: p.artifactId, version: p.version, title: p.title, kind: p.kind, address: p.address }, `${step}:published:${index}`, true);
      }
    }),

    async agentRunFinished({ runId, status, error, errorType }) {
      const row = await runs.runRow(runId);
      const failure = error === undefined ? undefined : { code: agentErrorCode(errorType), message: error };
      if (!(await runs.setStatus(runId, status, failure))) return;
      if (status === "failed" && failure) await append(row, "error", failure, "error");
      await append(row, "run.finished", { runId, status, ...(error ? { error } : {}) }, "run.finished", true);
    },
  };
}
