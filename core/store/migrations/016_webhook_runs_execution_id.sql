-- Webhook runs without the UNIQUE index on execution_id (issue 15). A keyed delivery's execution id is
-- derived from its idempotency key (core/runtime/webhooks.ts, executionIdOf) so that a provider's retry
-- runs with the same execution even when the attempt a crash cut off was never recorded; inserting such
-- an id into a UNIQUE index wrote a random page of it for every delivery (~1 WAL page each when deliveries
-- are group-committed, ~23 % of SQLite's time per group, measured). The id is unique by construction (a
-- ULID, or the hash of a key webhook_runs_by_key keeps unique per webhook) and no query looks a run up
-- by it. SQLite cannot drop a column constraint: the table is rebuilt (nothing references it).
CREATE TABLE webhook_runs_rebuilt (
  id              TEXT PRIMARY KEY,        -- whrun_…
  execution_id    TEXT NOT NULL,           -- exec_…
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
INSERT INTO webhook_runs_rebuilt (id, execution_id, connector_id, webhook_id, idempotency_key, status, attempts, received_at, finished_at, content_type, headers, body, response, replay_of)
  SELECT id, execution_id, connector_id, webhook_id, idempotency_key, status, attempts, received_at, finished_at, content_type, headers, body, response, replay_of FROM webhook_runs;
DROP TABLE webhook_runs;
ALTER TABLE webhook_runs_rebuilt RENAME TO webhook_runs;
CREATE UNIQUE INDEX webhook_runs_by_key ON webhook_runs (connector_id, webhook_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
