-- When an open dataset transaction last received rows (or was opened): one idle past
-- SVC_DATASET_TRANSACTION_IDLE_MS is aborted (core/datasets/store.ts). NULL on rows written before this
-- migration: their opened_at stands in.
ALTER TABLE dataset_versions ADD COLUMN touched_at TEXT;
