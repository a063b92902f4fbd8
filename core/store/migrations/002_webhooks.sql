-- Webhook runs (spec 2.12, 3): one row per admitted delivery, created atomically with its durable
-- execution (execution_id, the correlationId of everything the handler writes).
CREATE TABLE webhook_runs (
  id              TEXT PRIMARY KEY,        -- whrun_…
  execution_id    TEXT NOT NULL UNIQUE,    -- exec_…
  connector_id    TEXT NOT NULL,
  webhook_id      TEXT NOT NULL,
  idempotency_key TEXT,
  status          TEXT NOT NULL,           -- running | completed | failed
  attempts        INTEGER NOT NULL,
  received_at     TEXT NOT NULL,
  finished_at     TEXT,
  content_type    TEXT,
  headers         TEXT NOT NULL,           -- JSON; signature, secret and credential headers redacted
  body            BLOB NOT NULL,           -- raw bytes as received (for replay)
  response        TEXT,                    -- JSON { status, headers, body } sent on completion
  replay_of       TEXT                     -- the run this one replays
);
CREATE UNIQUE INDEX webhook_runs_by_key ON webhook_runs (connector_id, webhook_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE webhook_attempts (
  run_id      TEXT NOT NULL,
  attempt     INTEGER NOT NULL,
  started_at  TEXT NOT NULL,
  finished_at TEXT,
  status      TEXT NOT NULL,               -- running | completed | failed
  error       TEXT,                        -- JSON { message }
  PRIMARY KEY (run_id, attempt)
) WITHOUT ROWID;
