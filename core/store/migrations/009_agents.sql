-- Agents (spec 1, 4.3, 5, 6.5): conversations owned by the user who started them, reply runs on
-- Temporal (workflow id = run id), and each run's retained output for /ws/agents.
CREATE TABLE agent_conversations (
  id         TEXT PRIMARY KEY,              -- conv_<ulid>
  agent_id   TEXT NOT NULL,                 -- <connectorId>.<agentId> as declared
  owner      TEXT NOT NULL,                 -- identity id: only the owner reads it and its runs
  title      TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX agent_conversations_by_owner ON agent_conversations (owner, updated_at DESC);

CREATE TABLE agent_messages (
  conversation_id TEXT NOT NULL REFERENCES agent_conversations (id),
  seq             INTEGER NOT NULL,         -- 1, 2, … in the conversation
  role            TEXT NOT NULL,            -- user | assistant
  text            TEXT NOT NULL,
  run_id          TEXT,                     -- the reply run (assistant) or the run the message started (user)
  created_at      TEXT NOT NULL,
  PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;

CREATE TABLE agent_runs (
  id              TEXT PRIMARY KEY,         -- arun_<ulid>, also the Temporal workflow id
  conversation_id TEXT NOT NULL REFERENCES agent_conversations (id),
  agent_id        TEXT NOT NULL,
  owner           TEXT NOT NULL,
  message_seq     INTEGER NOT NULL,         -- the user message it answers
  status          TEXT NOT NULL,            -- queued | running | completed | failed | cancelled
  retry_of        TEXT,                     -- the failed run this one retries
  retried_by      TEXT,
  error           TEXT,                     -- JSON { message }
  usage           TEXT NOT NULL,            -- JSON { inputTokens, outputTokens, modelCalls }
  steps           TEXT NOT NULL DEFAULT '[]', -- JSON: the model and tool steps done so far (the activities' memo)
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX agent_runs_by_conversation ON agent_runs (conversation_id, created_at);

-- Retained output of reply runs (spec 6.5): text deltas, tool calls and results, published versions,
-- errors; and activity records (runs started and finished, artifacts published). `seq` orders
-- everything; the cursor is opaque over it. `key` makes appends from retried activities idempotent.
CREATE TABLE agent_output (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id     TEXT NOT NULL,
  owner      TEXT NOT NULL,
  kind       TEXT NOT NULL,
  data       TEXT NOT NULL,                 -- JSON
  key        TEXT UNIQUE,
  activity   INTEGER NOT NULL DEFAULT 0,    -- 1: also an activity record
  created_at TEXT NOT NULL
);
CREATE INDEX agent_output_by_run ON agent_output (run_id, seq);
CREATE INDEX agent_output_activity ON agent_output (owner, seq) WHERE activity = 1;
-- How far retention has removed output: a cursor at or below it may have missed records (rule 3).
CREATE TABLE agent_output_pruned (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  through_seq INTEGER NOT NULL
);

-- Versions an agent reply published carry the run's key, so a retried activity never publishes twice;
-- a retried failed reply withdraws them (no longer readable; numbers are not reused).
ALTER TABLE artifact_versions ADD COLUMN publish_key TEXT;
ALTER TABLE artifact_versions ADD COLUMN withdrawn_at TEXT;
CREATE UNIQUE INDEX artifact_versions_by_publish_key ON artifact_versions (publish_key) WHERE publish_key IS NOT NULL;
