-- Sync and pipeline runs requested through the API (spec 4.3); their state lives on Temporal.
CREATE TABLE connector_runs (
  run_id        TEXT PRIMARY KEY,
  kind          TEXT NOT NULL,             -- sync | pipeline
  definition_id TEXT NOT NULL,
  input         TEXT NOT NULL,
  actor         TEXT,
  requested_at  TEXT NOT NULL
) WITHOUT ROWID;
