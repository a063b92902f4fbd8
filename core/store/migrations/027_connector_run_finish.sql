-- When a sync or pipeline run ended, as svc recorded it: its `sync.run.finished` / `pipeline.run.finished`
-- record (written by the run's last step), or its end without starting (failed or cancelled while
-- queued: `start_finished_at`). The run retention (core/store/run-retention.ts) deletes the run's row that
-- long after, like a workflow run's (migration 025); a run without it is kept.
ALTER TABLE connector_runs ADD COLUMN finished_at TEXT;
UPDATE connector_runs SET finished_at = start_finished_at WHERE start_finished_at IS NOT NULL;
CREATE INDEX connector_runs_by_finish ON connector_runs (finished_at) WHERE finished_at IS NOT NULL;
