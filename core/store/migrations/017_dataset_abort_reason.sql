-- Why a dataset version was aborted: 'requested' (its writer aborted it) or 'idle' (it received no rows
-- for SVC_DATASET_TRANSACTION_IDLE_MS: core/datasets/store.ts). Versions aborted before this migration keep NULL.
ALTER TABLE dataset_versions ADD COLUMN abort_reason TEXT;
