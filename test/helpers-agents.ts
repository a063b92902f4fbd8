import { Database } from "../core/store/db";
import { newId, nowIso } from "../core/ids";

/**
 * A reply run of the sandbox's assistant owned by `owner`, written as rows (a conversation and its
 * queued run, with the user's `message` when given), with no Temporal execution behind it: tests that
 * need a run an identity could not have started (it may not use the agent) or whose output they write themselves.
 */
export async function insertAgentRun(db: Database, owner: string, message?: string): Promise<{ conversationId: string; runId: string }> {
  const conversationId = newId("conv");
  const runId = newId("arun");
  const now = nowIso();
  await db.transaction(async (tx) => {
    await tx.run("INSERT INTO agent_conversations (id, agent_id, owner, title, created_at, updated_at) VALUES (?, 'assistant', ?, 'test', ?, ?)", [conversationId, owner, now, now]);
    if (message !== undefined) await tx.run("INSERT INTO agent_messages (conversation_id, seq, role, text, run_id, created_at) VALUES (?, 1, 'user', ?, ?, ?)", [conversationId, message, runId, now]);
    await tx.run("INSERT INTO agent_runs (id, conversation_id, agent_id, owner, message_seq, status, usage, created_at, updated_at) VALUES (?, ?, 'assistant', ?, 1, 'queued', ?, ?, ?)", [runId, conversationId, owner, JSON.stringify({ inputTokens: 0, outputTokens: 0, modelCalls: 0 }), now, now]);
  });
  return { conversationId, runId };
}
