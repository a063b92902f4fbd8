-- When a workflow run ended, as svc recorded it: its `workflow.run.finished` record (written by the run's
-- last step), or its end without starting (failed or cancelled while queued: `start_finished_at`). The
-- run retention (core/store/run-retention.ts) deletes a run's row and its interventions that long after;
-- a run that ended before this column existed, or whose end was never recorded (terminated in
-- Temporal's UI), has none and is kept.
ALTER TABLE workflow_runs ADD COLUMN finished_at TEXT;
UPDATE workflow_runs SET finished_at = start_finished_at WHERE start_finished_at IS NOT NULL;
CREATE INDEX workflow_runs_by_finish ON workflow_runs (finished_at) WHERE finished_at IS NOT NULL;
