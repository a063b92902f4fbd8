-- Run starts (spec 3, 4.3; issue 15): a workflow, sync or pipeline run is "queued" once its row and
-- (for workflows) `workflow.run.queued` are committed here; the starter (core/runtime/run-starter.ts)
-- starts it on Temporal afterwards. start_status: pending (not started on Temporal yet), started,
-- failed (Temporal refused it for good; start_error says why), cancelled (cancelled before it started).
-- Rows from before this migration were started when they were written.
ALTER TABLE workflow_runs ADD COLUMN start_status TEXT NOT NULL DEFAULT 'started';
ALTER TABLE workflow_runs ADD COLUMN start_error TEXT;       -- JSON { message, type? } when failed
ALTER TABLE workflow_runs ADD COLUMN start_finished_at TEXT;  -- when it became failed or cancelled without starting
CREATE INDEX workflow_runs_pending ON workflow_runs (requested_at) WHERE start_status = 'pending';
-- the run search lists runs Temporal does not hold (pending, failed or cancelled before their start) from here
CREATE INDEX workflow_runs_unstarted ON workflow_runs (start_status, requested_at) WHERE start_status <> 'started';

ALTER TABLE connector_runs ADD COLUMN start_status TEXT NOT NULL DEFAULT 'started';
ALTER TABLE connector_runs ADD COLUMN start_error TEXT;
ALTER TABLE connector_runs ADD COLUMN start_finished_at TEXT;
CREATE INDEX connector_runs_pending ON connector_runs (requested_at) WHERE start_status = 'pending';
