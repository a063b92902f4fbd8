-- Interventions of workflow runs (spec 4.1; issue 4): the durable state lives in Temporal's history;
-- this index answers "what is open, for whom" without a worker.
CREATE TABLE interventions (
  id            TEXT PRIMARY KEY,          -- <runId>:<name>:<seq>
  run_id        TEXT NOT NULL,
  workflow_id   TEXT NOT NULL,
  name          TEXT NOT NULL,
  prompt        TEXT NOT NULL,
  assignees     TEXT NOT NULL,             -- JSON { identities?, permission? }
  answer_schema TEXT,                      -- JSON Schema of the answer
  status        TEXT NOT NULL,             -- open | submitted | cancelled | expired
  requested_at  TEXT NOT NULL,
  expires_at    TEXT,
  resolved_at   TEXT,
  answer        TEXT,                      -- JSON
  resolved_by   TEXT,                      -- JSON { type, id }
  reason        TEXT
) WITHOUT ROWID;
CREATE INDEX interventions_by_run ON interventions (run_id);
CREATE INDEX interventions_open ON interventions (status) WHERE status = 'open';
