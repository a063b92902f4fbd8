-- When an open dataset transaction last received rows (or was opened): one idle past
-- SVC_DATASET_TRANSACTION_IDLE_MS is aborted (core/datasets/store.ts). A transaction open across the
-- upgrade gets a full idle period from now (its opened_at may be long past); finished versions keep NULL.
ALTER TABLE dataset_versions ADD COLUMN touched_at TEXT;
UPDATE dataset_versions SET touched_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE status = 'open';
