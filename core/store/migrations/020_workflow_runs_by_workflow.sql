-- The workflows that have runs, read at start to name open runs of workflows the project no longer
-- defines (core/runtime/workflows.ts WORKFLOW_IDS_WITH_RUNS): one index seek per workflow, where
-- `SELECT DISTINCT workflow_id` read every run's row with its input.
CREATE INDEX workflow_runs_by_workflow ON workflow_runs (workflow_id);
