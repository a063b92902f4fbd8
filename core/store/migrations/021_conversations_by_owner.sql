-- A caller's conversations, a page at a time (GET /api/conversations, core/runtime/agents.ts): the
-- keyset (updated_at, id) descending is read along one index, where agent_conversations_by_owner
-- (owner, updated_at DESC) left SQLite to sort the ties of updated_at by id.
DROP INDEX agent_conversations_by_owner;
CREATE INDEX agent_conversations_by_owner ON agent_conversations (owner, updated_at DESC, id DESC);
