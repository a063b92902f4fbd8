/**
 * Agents' conversations and reply runs (spec 1, 4.3, 5): a conversation belongs to the user who started
 * it; each user message queues a reply run on Temporal (workflow `agentReply`, id = run id) and answers
 * `{ runId }`; only the owner reads a conversation or its runs (404 for everyone else). Cancel keeps what
 * the reply published; retrying a failed reply withdraws what it published, then runs again.
 */
import { EventEmitter } from "node:events";
import * as v from "valibot";
import { inject, injectable } from "../di";
import { ApiError } from "../errors";
import { ANOTHER_CALLERS_TOKEN, decodeListingToken, isPositiveInteger, isTextPair, keysetPage } from "../http/listing-token";
import { newId, nowIso } from "../ids";
import { can, has, type Principal } from "../auth/permissions";
import { Database, type SqlWriter } from "../store/db";
import { ProjectRegistry } from "../project/registry";
import { TemporalHost } from "../temporal/host";
import { startRun } from "../temporal/start";
import { ArtifactStore } from "../artifacts/store";
import { AgentOutput, type AgentRunAccess, type AgentRunState } from "../agents/output";
import type { ModelMessage, ToolCall } from "../agents/model";
import type { AgentRunEnd } from "../sdk/activities-types";
import { RunErrorSchema, storedRunError, type RUN_ERROR_CODES, type RunError } from "../sdk/records";
import type { PublishResult } from "./agent-tools";

export const AGENT_RUN_STATUSES = ["queued", "running", "completed", "failed", "cancelled"] as const;

/**
 * An agent run's error code (README "Run errors") from the failure's type as the workflow passed it:
 * `model_failed` (a model call failed for good: `ModelError`), `step_limit` (the reply needed more
 * model calls than the agent allows: `AgentStepLimit`), `agent_failed` (anything else, or no type).
 */
export function agentErrorCode(errorType: string | undefined): (typeof RUN_ERROR_CODES.agent)[number] {
  return errorType === "ModelError" ? "model_failed" : errorType === "AgentStepLimit" ? "step_limit" : "agent_failed";
}

/** Whether a reply run's status is an end (completed, failed, cancelled): it takes no more steps. */
export const isRunEnded = (status: string): status is AgentRunEnd => status !== "queued" && status !== "running";

/** A reply run's state (spec 6.5 `run.snapshot`): status, what it published (and whether withdrawn), usage. */
export const AgentRunStateSchema = v.object({
  runId: v.string(),
  conversationId: v.string(),
  agentId: v.string(),
  status: v.picklist(AGENT_RUN_STATUSES),
  retryOf: v.optional(v.string()),
  retriedBy: v.optional(v.string()),
  published: v.array(v.object({ artifactId: v.string(), version: v.number(), title: v.string(), kind: v.string(), address: v.string(), withdrawn: v.boolean() })),
  usage: v.object({ inputTokens: v.number(), outputTokens: v.number(), modelCalls: v.number() }),
  error: v.optional(RunErrorSchema),
  createdAt: v.string(),
  updatedAt: v.string(),
});

/** One message of a conversation: the caller's (`user`) or the agent's reply (`assistant`), numbered 1, 2, … (`seq`). */
export const ConversationMessageSchema = v.object({ seq: v.number(), role: v.picklist(["user", "assistant"]), text: v.string(), runId: v.optional(v.string()), createdAt: v.string() });
export type ConversationMessage = v.InferOutput<typeof ConversationMessageSchema>;

/** A conversation with its messages (oldest first) and its reply runs. */
export const ConversationSchema = v.object({
  id: v.string(),
  agentId: v.string(),
  title: v.string(),
  owner: v.string(),
  createdAt: v.string(),
  updatedAt: v.string(),
  messages: v.array(ConversationMessageSchema),
  runs: v.array(AgentRunStateSchema),
});
export type Conversation = v.InferOutput<typeof ConversationSchema>;

/** What one step of a run did: the model's answer, then each tool call's result (the activities' memo). */
export interface StoredStep {
  model: { text: string; toolCalls: ToolCall[]; usage: { inputTokens: number; outputTokens: number } };
  results: Array<{ result: unknown; isError: boolean } | null>;
}

export interface RunRow {
  id: string;
  conversation_id: string;
  agent_id: string;
  owner: string;
  message_seq: number;
  status: AgentRunState["status"];
  retry_of: string | null;
  retried_by: string | null;
  error: string | null;
  usage: string;
  steps: string;
  created_at: string;
  updated_at: string;
}
interface ConversationRow { id: string; agent_id: string; owner: string; title: string; created_at: string; updated_at: string }

/** The runtime's rules every agent is given after its own instructions (spec 4.3). */
export const AGENT_RULES = [
  "Publish what the user asks for as an artifact (publish_artifact). When the user asks for a change to something you published, publish the next version of that same artifact (publish_version), never a new one.",
  "Pin versions in every artifact address you write: artifact:<id>@<version>. An address without a version follows the latest version.",
  "Decks are laid out in a headless browser when published; fix what the deck check warns about when the user asks.",
].join("\n");

/** A caller's conversations after a position `(updated_at, id)`, newest first: parameters owner, updated_at, id, limit. */
export const CONVERSATIONS_PAGE = "SELECT * FROM agent_conversations WHERE owner = ? AND (updated_at, id) < (?, ?) ORDER BY updated_at DESC, id DESC LIMIT ?";
/** The first page of {@link CONVERSATIONS_PAGE}: parameters owner, limit. */
export const CONVERSATIONS_FIRST_PAGE = "SELECT * FROM agent_conversations WHERE owner = ? ORDER BY updated_at DESC, id DESC LIMIT ?";

/** Conversations and reply runs; also what /ws/agents checks access with ({@link AgentRunAccess}). */
@injectable()
export class AgentRuns implements AgentRunAccess {
  /** Emits ("changed", runId, status?) whenever a run's state changes (`status` when its status changed). */
  readonly changes = new EventEmitter();

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(TemporalHost) private readonly temporal: TemporalHost,
    @inject(ArtifactStore) private readonly artifacts: ArtifactStore,
    @inject(AgentOutput) private readonly output: AgentOutput,
  ) {
    this.changes.setMaxListeners(0);
  }

  /**
   * Starts a conversation with an agent, and queues the reply to `message` when given.
   * @throws {ApiError} not_found (no such agent), forbidden (no `use:agent:<id>`)
   */
  async start(principal: Principal, agentId: string, input: { title?: string; message?: string }): Promise<{ conversation: Conversation; runId?: string }> {
    this.project.agent(agentId);
    requireAgentUse(principal, agentId);
    const id = newId("conv");
    const now = nowIso();
    const title = input.title ?? (input.message ? input.message.slice(0, 80) : `Conversation with ${agentId}`);
    await this.db.transaction((tx) => tx.run("INSERT INTO agent_conversations (id, agent_id, owner, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)", [id, agentId, principal.id, title, now, now]));
    const runId = input.message !== undefined ? (await this.post(principal, id, input.message)).runId : undefined;
    return { conversation: await this.conversation(principal, id), ...(runId ? { runId } : {}) };
  }

  /**
   * Posts a user message and queues its reply run; answers once Temporal has it (spec 4.3).
   * @throws {ApiError} not_found, forbidden, conflict (a reply is still queued or running), unavailable (Temporal refused)
   */
  async post(principal: Principal, conversationId: string, text: string): Promise<{ runId: string; conversationId: string }> {
    const conv = await this.conversationRow(principal, conversationId);
    const runId = newId("arun");
    const now = nowIso();
    await this.db.transaction(async (tx) => {
      const busy = await tx.get<{ id: string }>("SELECT id FROM agent_runs WHERE conversation_id = ? AND status IN ('queued', 'running')", [conversationId]);
      if (busy) throw new ApiError("conflict", `A reply is still running in this conversation (${busy.id}); wait for it or cancel it`, { runId: busy.id });
      const seq = ((await tx.get<{ n: number | null }>("SELECT MAX(seq) AS n FROM agent_messages WHERE conversation_id = ?", [conversationId]))?.n ?? 0) + 1;
      await tx.run("INSERT INTO agent_messages (conversation_id, seq, role, text, run_id, created_at) VALUES (?, ?, 'user', ?, ?, ?)", [conversationId, seq, text, runId, now]);
      await this.insertRun(tx, { runId, conv, seq, retryOf: null, now });
    });
    await this.queue(runId, conversationId);
    return { runId, conversationId };
  }

  /** {@link AgentRunAccess.requireSomeAgent}: the principal may use at least one of the project's agents. @throws {ApiError} forbidden */
  requireSomeAgent(principal: Principal): void {
    const agents = this.project.agents().map((a) => a.id);
    if (!agents.some((id) => has(principal, can.useAgent(id)))) throw new ApiError("forbidden", `You may use no agent of this project (each needs use:agent:<id>: ${agents.join(", ") || "none declared"})`);
  }

  /** A conversation of the caller's. @throws {ApiError} not_found (also for another user's) */
  async conversation(principal: Principal, id: string): Promise<Conversation> {
    const conv = await this.conversationRow(principal, id);
    const messages = await this.db.all<MessageRow>("SELECT * FROM agent_messages WHERE conversation_id = ? ORDER BY seq", [id]);
    const runs = await this.db.all<RunRow>("SELECT * FROM agent_runs WHERE conversation_id = ? ORDER BY created_at, id", [id]);
    return {
      id: conv.id, agentId: conv.agent_id, title: conv.title, owner: conv.owner, createdAt: conv.created_at, updatedAt: conv.updated_at,
      messages: messages.map(toMessage),
      runs: await Promise.all(runs.map((r) => this.toState(r))),
    };
  }

  /**
   * A conversation's messages, oldest first, a page at a time (`GET /api/conversations/:id/messages`):
   * keyset on `seq` along the table's key. A page holds at most `pageSize` messages, and
   * `nextPageToken` when more follow (bound to this conversation).
   * @param page.pageSize 1 to 200; `page.nextPageToken` from the page before
   * @throws {ApiError} not_found for a conversation that is not the caller's; invalid_request for a
   *   token this listing did not issue (another conversation's included)
   */
  async messages(principal: Principal, id: string, page: { pageSize: number; nextPageToken?: string }): Promise<{ data: ConversationMessage[]; nextPageToken?: string }> {
    await this.conversationRow(principal, id);
    const filters = JSON.stringify({ conversationId: id });
    const after = page.nextPageToken === undefined ? 0 : decodeListingToken(page.nextPageToken, filters, isPositiveInteger, { refusal: "nextPageToken belongs to another conversation's messages: send one this conversation's listing answered" });
    const rows = await this.db.all<MessageRow>("SELECT * FROM agent_messages WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?", [id, after, page.pageSize + 1]);
    return keysetPage(rows, page.pageSize, filters, toMessage, (m) => m.seq);
  }

  /**
   * The caller's conversations, the most recently updated first, a page at a time (keyset on
   * `(updated_at, id)` along `agent_conversations_by_owner`, migration 021: no sort; a conversation
   * updated while you page moves to the front, so a later page may miss it).
   * @param page.pageSize 1 to 200; `page.nextPageToken` from the page before
   * @throws {ApiError} invalid_request for a `nextPageToken` this listing did not issue (another caller's included)
   */
  async conversations(principal: Principal, page: { pageSize: number; nextPageToken?: string }): Promise<{ data: Array<Omit<Conversation, "messages" | "runs">>; nextPageToken?: string }> {
    const filters = JSON.stringify({ owner: principal.id });
    // the listing's one "filter" is the caller
    const after = page.nextPageToken === undefined ? undefined : decodeListingToken(page.nextPageToken, filters, isTextPair, ANOTHER_CALLERS_TOKEN);
    const rows = await this.db.all<ConversationRow>(after ? CONVERSATIONS_PAGE : CONVERSATIONS_FIRST_PAGE, [principal.id, ...(after ?? []), page.pageSize + 1]);
    const summary = (c: ConversationRow) => ({ id: c.id, agentId: c.agent_id, title: c.title, owner: c.owner, createdAt: c.created_at, updatedAt: c.updated_at });
    return keysetPage(rows, page.pageSize, filters, summary, (c) => [c.updatedAt, c.id]);
  }

  /** A run's state, for its conversation's owner only, while they may use its agent. @throws {ApiError} not_found; forbidden */
  async state(principal: Principal, runId: string): Promise<AgentRunState> {
    return this.toState(await this.runRow(runId, principal));
  }

  /**
   * Cancels a queued or running reply: what it already published stays (spec 4.3).
   * @throws {ApiError} not_found; conflict (409) when the run has ended (as cancelling a workflow run that has ended)
   */
  async cancel(principal: Principal, runId: string): Promise<AgentRunState> {
    // its owner may stop it even once the agent's use was taken from them (its steps stop then anyway)
    const row = await this.runRow(runId, principal, { agentUse: false });
    if (isRunEnded(row.status)) throw new ApiError("conflict", `Run ${runId} is not running (it is ${row.status})`, { status: row.status });
    let stopWatching = () => undefined as void;
    const ended = new Promise<void>((resolve) => (stopWatching = this.onEnded(runId, () => resolve())));
    try {
      await this.temporal.client.workflow.getHandle(runId).cancel();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([ended, new Promise((resolve) => (timer = setTimeout(resolve, AgentRuns.CANCEL_WAIT_MS)).unref())]);
      clearTimeout(timer);
    } finally {
      stopWatching();
    }
    return this.toState(await this.runRow(runId));
  }

  /** How long a cancel waits for the run to record its end before it answers (ms). */
  static readonly CANCEL_WAIT_MS = 10_000;

  /**
   * Calls `fn` once with the run's status when the run has ended (at once when it has already), from the
   * runs' change events (a status change carries the new status: no read) or a read of its row. What a
   * cancel waits on, and what a reply's step stops on (agent-activities.ts). Answers the stop of the watch.
   */
  onEnded(runId: string, fn: (status: AgentRunEnd) => void): () => void {
    let done = false;
    const end = (status: AgentRunEnd) => {
      if (done) return;
      stop();
      fn(status);
    };
    const read = () => void this.db.get<{ status: string }>("SELECT status FROM agent_runs WHERE id = ?", [runId]).then((r) => r && isRunEnded(r.status) && end(r.status), () => undefined);
    const onChange = (id: string, status?: string) => {
      if (id !== runId || done) return;
      if (status === undefined) read();
      else if (isRunEnded(status)) end(status);
    };
    const stop = () => {
      done = true;
      this.changes.off("changed", onChange);
    };
    this.changes.on("changed", onChange);
    read();
    return stop;
  }

  /**
   * Retries a failed reply (spec 4.3): first withdraws every version it published (no longer readable;
   * numbers are not reused; addresses pinned to them show as unavailable), then queues a new run that
   * answers the same message. @throws {ApiError} not_found, conflict (not failed, or already retried)
   */
  async retry(principal: Principal, runId: string): Promise<{ runId: string; conversationId: string }> {
    const row = await this.runRow(runId, principal);
    if (row.status !== "failed") throw new ApiError("conflict", `Only a failed reply can be retried; ${runId} is ${row.status}`, { status: row.status });
    if (row.retried_by) throw new ApiError("conflict", `${runId} was already retried by ${row.retried_by}`, { retriedBy: row.retried_by });
    const withdrawn = await this.artifacts.withdraw(`agent:${runId}:`);
    await this.output.append(withdrawn.map((w) => ({ runId, owner: row.owner, kind: "artifact.withdrawn", data: w, key: `${runId}:withdrawn:${w.artifactId}@${w.version}`, activity: true })));
    const newRunId = newId("arun");
    const now = nowIso();
    const conv = (await this.db.get<ConversationRow>("SELECT * FROM agent_conversations WHERE id = ?", [row.conversation_id]))!;
    await this.db.transaction(async (tx) => {
      const again = await tx.get<{ retried_by: string | null }>("SELECT retried_by FROM agent_runs WHERE id = ?", [runId]);
      if (again?.retried_by) throw new ApiError("conflict", `${runId} was already retried by ${again.retried_by}`);
      await tx.run("UPDATE agent_runs SET retried_by = ?, updated_at = ? WHERE id = ?", [newRunId, now, runId]);
      await this.insertRun(tx, { runId: newRunId, conv, seq: row.message_seq, retryOf: runId, now });
    });
    this.changes.emit("changed", runId);
    await this.queue(newRunId, row.conversation_id);
    return { runId: newRunId, conversationId: row.conversation_id };
  }

  // ---- used by the reply's activities ----

  /**
   * The run: with `principal`, one of theirs while they may use its agent (spec 5: agent streams, and
   * the run's HTTP reads alike, need access to the agent and the run; `options.agentUse: false`: its owner
   * without it, to stop it); without, any owner's (system code).
   * @throws {ApiError} not_found (no such run, or another user's); forbidden (its agent's use was taken from the caller)
   */
  async runRow(runId: string, principal?: Principal, options: { agentUse?: boolean } = {}): Promise<RunRow> {
    const row = await this.db.get<RunRow>("SELECT * FROM agent_runs WHERE id = ?", [runId]);
    if (!row || (principal && row.owner !== principal.id)) throw new ApiError("not_found", `No agent run "${runId}"`);
    if (principal && options.agentUse !== false) requireAgentUse(principal, row.agent_id);
    return row;
  }

  /** The identity the run acts as: the conversation's owner, with their current permissions. */
  principalOf(row: RunRow): Principal {
    return { type: this.project.identityType(row.owner) ?? "user", id: row.owner, permissions: this.project.identityPermissions(row.owner) ?? new Set() };
  }

  /**
   * Stores what a step did (the model's answer, or a tool result) and adds usage; emits a change.
   * @returns false, storing nothing, when the run has ended (a step that finished after a cancel)
   */
  async saveStep(runId: string, step: number, update: { model?: StoredStep["model"]; result?: { index: number; result: unknown; isError: boolean } }): Promise<boolean> {
    const saved = await this.db.transaction(async (tx) => {
      const row = (await tx.get<RunRow>("SELECT * FROM agent_runs WHERE id = ?", [runId]))!;
      // a run that has ended keeps what it had then: a step that finished after a cancel adds nothing
      if (isRunEnded(row.status)) return false;
      const steps = JSON.parse(row.steps) as StoredStep[];
      const usage = JSON.parse(row.usage) as AgentRunState["usage"];
      if (update.model && !steps[step]) {
        steps[step] = { model: update.model, results: update.model.toolCalls.map(() => null) };
        usage.inputTokens += update.model.usage.inputTokens;
        usage.outputTokens += update.model.usage.outputTokens;
        usage.modelCalls += 1;
      }
      if (update.result && steps[step] && !steps[step]!.results[update.result.index]) steps[step]!.results[update.result.index] = { result: update.result.result, isError: update.result.isError };
      await tx.run("UPDATE agent_runs SET steps = ?, usage = ?, updated_at = ? WHERE id = ?", [JSON.stringify(steps), JSON.stringify(usage), nowIso(), runId]);
      return true;
    });
    if (saved) this.changes.emit("changed", runId);
    return saved;
  }

  /** Sets the run's status (running once; an end once) and, on completion, stores the reply's text as the assistant message. @returns whether it changed */
  async setStatus(runId: string, status: "running" | AgentRunEnd, error?: RunError): Promise<boolean> {
    const changed = await this.db.transaction(async (tx) => {
      const row = (await tx.get<RunRow>("SELECT * FROM agent_runs WHERE id = ?", [runId]))!;
      if (isRunEnded(row.status) || (status === "running" && row.status === "running")) return false;
      const now = nowIso();
      await tx.run("UPDATE agent_runs SET status = ?, error = ?, updated_at = ? WHERE id = ?", [status, error ? JSON.stringify(error) : null, now, runId]);
      if (status !== "running") {
        const text = (JSON.parse(row.steps) as StoredStep[]).map((s) => s.model.text).filter(Boolean).join("\n\n");
        if (status === "completed" || text) {
          const seq = ((await tx.get<{ n: number | null }>("SELECT MAX(seq) AS n FROM agent_messages WHERE conversation_id = ?", [row.conversation_id]))?.n ?? 0) + 1;
          await tx.run("INSERT INTO agent_messages (conversation_id, seq, role, text, run_id, created_at) VALUES (?, ?, 'assistant', ?, ?, ?)", [row.conversation_id, seq, text, runId, now]);
        }
        await tx.run("UPDATE agent_conversations SET updated_at = ? WHERE id = ?", [now, row.conversation_id]);
      }
      return true;
    });
    // the status rides with the event: a step watching its run stops at once (agent-activities.ts watchRun)
    if (changed) this.changes.emit("changed", runId, status);
    return changed;
  }

  /**
   * The messages the model sees for a run: the conversation before its message (earlier replies with
   * their tool calls and results, except replies that failed and were retried), its message, and what
   * this run did so far.
   */
  async history(row: RunRow): Promise<ModelMessage[]> {
    const messages = await this.db.all<{ seq: number; role: "user" | "assistant"; text: string; run_id: string | null }>("SELECT seq, role, text, run_id FROM agent_messages WHERE conversation_id = ? AND seq <= ? ORDER BY seq", [row.conversation_id, row.message_seq]);
    const runs = await this.db.all<RunRow>("SELECT * FROM agent_runs WHERE conversation_id = ? AND retried_by IS NULL AND id <> ? ORDER BY created_at", [row.conversation_id, row.id]);
    const out: ModelMessage[] = [];
    for (const m of messages) {
      if (m.role === "user") {
        out.push({ role: "user", text: m.text });
        const answer = runs.filter((r) => r.message_seq === m.seq).at(-1);
        if (answer && m.seq < row.message_seq) out.push(...stepsAsMessages(JSON.parse(answer.steps)));
      }
    }
    out.push(...stepsAsMessages(JSON.parse(row.steps)));
    return out;
  }

  private async insertRun(tx: SqlWriter, r: { runId: string; conv: ConversationRow; seq: number; retryOf: string | null; now: string }): Promise<void> {
    await tx.run("INSERT INTO agent_runs (id, conversation_id, agent_id, owner, message_seq, status, retry_of, usage, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?)", [
      r.runId, r.conv.id, r.conv.agent_id, r.conv.owner, r.seq, r.retryOf, JSON.stringify({ inputTokens: 0, outputTokens: 0, modelCalls: 0 }), r.now, r.now,
    ]);
    await tx.run("UPDATE agent_conversations SET updated_at = ? WHERE id = ?", [r.now, r.conv.id]);
  }

  /** Starts the reply on Temporal; a refusal removes the run again (nothing half-written) and answers 503. */
  private async queue(runId: string, conversationId: string): Promise<void> {
    const row = await this.runRow(runId);
    try {
      await startRun(this.temporal.client, { workflowType: "agentReply", workflowId: runId, taskQueue: this.temporal.taskQueue, args: [] });
    } catch (err) {
      await this.db.transaction(async (tx) => {
        await tx.run("DELETE FROM agent_messages WHERE conversation_id = ? AND run_id = ? AND role = 'user' AND seq = ?", [conversationId, runId, row.message_seq]);
        await tx.run("DELETE FROM agent_runs WHERE id = ?", [runId]);
        if (row.retry_of) await tx.run("UPDATE agent_runs SET retried_by = NULL WHERE id = ?", [row.retry_of]);
      });
      throw new ApiError("unavailable", `Temporal did not queue the reply: ${(err as Error).message}`);
    }
    await this.output.append([{ runId, owner: row.owner, kind: "run.started", data: { runId, agentId: row.agent_id, conversationId, ...(row.retry_of ? { retryOf: row.retry_of } : {}) }, key: `${runId}:run.started`, activity: true }]);
    this.changes.emit("changed", runId);
  }

  /**
   * A conversation of the caller's, while they may use its agent (spec 5: access to the agent and the run).
   * @throws {ApiError} not_found (no such conversation, or another user's); forbidden (its agent's use was taken from the caller)
   */
  private async conversationRow(principal: Principal, id: string): Promise<ConversationRow> {
    const conv = await this.db.get<ConversationRow>("SELECT * FROM agent_conversations WHERE id = ?", [id]);
    if (!conv || conv.owner !== principal.id) throw new ApiError("not_found", `No conversation "${id}"`);
    requireAgentUse(principal, conv.agent_id);
    return conv;
  }

  private async toState(row: RunRow): Promise<AgentRunState> {
    const steps = JSON.parse(row.steps) as StoredStep[];
    const published: AgentRunState["published"] = [];
    for (const step of steps) {
      step.results.forEach((r, i) => {
        const name = step.model.toolCalls[i]?.name;
        if (r && !r.isError && (name === "publish_artifact" || name === "publish_version")) {
          const p = r.result as PublishResult;
          published.push({ artifactId: p.artifactId, version: p.version, title: p.title, kind: p.kind, address: p.address, withdrawn: false });
        }
      });
    }
    for (const p of published) {
      const v2 = await this.db.get<{ withdrawn_at: string | null }>("SELECT withdrawn_at FROM artifact_versions WHERE artifact_id = ? AND version = ?", [p.artifactId, p.version]);
      p.withdrawn = !!v2?.withdrawn_at;
    }
    return {
      runId: row.id, conversationId: row.conversation_id, agentId: row.agent_id, status: row.status,
      ...(row.retry_of ? { retryOf: row.retry_of } : {}), ...(row.retried_by ? { retriedBy: row.retried_by } : {}),
      published, usage: JSON.parse(row.usage), ...(row.error ? { error: storedRunError(row.error, () => "agent_failed" /* failed before errors had codes */) } : {}), createdAt: row.created_at, updatedAt: row.updated_at,
    };
  }
}

/** A run's stored steps as model messages: each step's answer, then its tool results. */
/** Refuses a principal without `use:agent:<agentId>` (spec 5). @throws {ApiError} forbidden */
function requireAgentUse(principal: Principal, agentId: string): void {
  if (!has(principal, can.useAgent(agentId))) throw new ApiError("forbidden", `You may not use agent "${agentId}" (needs ${can.useAgent(agentId)})`);
}

function stepsAsMessages(steps: StoredStep[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const s of steps) {
    if (!s) continue;
    out.push({ role: "assistant", text: s.model.text, toolCalls: s.model.toolCalls });
    s.results.forEach((r, i) => {
      const call = s.model.toolCalls[i]!;
      if (r) out.push({ role: "tool", toolCallId: call.id, toolName: call.name, result: r.result, ...(r.isError ? { isError: true } : {}) });
    });
  }
  return out;
}

interface MessageRow {
  seq: number;
  role: "user" | "assistant";
  text: string;
  run_id: string | null;
  created_at: string;
}

const toMessage = (m: MessageRow): ConversationMessage => ({ seq: m.seq, role: m.role, text: m.text, ...(m.run_id ? { runId: m.run_id } : {}), createdAt: m.created_at });
