-- Datasets (spec 1, 2.4 `dataset.version.committed`, 4.1 `GET /api/datasets`).
--
-- Versions are transactions: OPEN -> COMMITTED or ABORTED, numbered 1, 2, ... per dataset (an aborted
-- number is not reused); at most one open per dataset.
CREATE TABLE dataset_versions (
  dataset_id       TEXT NOT NULL,
  version          INTEGER NOT NULL,
  transaction_type TEXT NOT NULL CHECK (transaction_type IN ('snapshot', 'append')),
  status           TEXT NOT NULL CHECK (status IN ('open', 'committed', 'aborted')),
  row_count        INTEGER NOT NULL DEFAULT 0, -- rows written by this transaction (its input)
  total_rows       INTEGER,                    -- rows in the dataset as of this version, set at commit
  source           TEXT NOT NULL,              -- JSON {kind: 'http'|'upload'|'sync'|'pipeline'|'action'|..., id?, fileId?}
  idempotency_key  TEXT UNIQUE,                -- handlers' `<key>:dataset:<i>`: a retried handler commits once
  opened_at        TEXT NOT NULL,
  committed_at     TEXT,
  aborted_at       TEXT,
  opened_by        TEXT,                       -- JSON actor, or NULL for system code
  PRIMARY KEY (dataset_id, version)
) WITHOUT ROWID;
CREATE UNIQUE INDEX dataset_versions_one_open ON dataset_versions (dataset_id) WHERE status = 'open';

-- Committed rows as a temporal table: a row is in version N when
-- from_version <= N AND (to_version IS NULL OR to_version > N). Every committed version stays readable
-- without copying rows; rows of open transactions are never here (they wait in dataset_staged_rows).
CREATE TABLE dataset_rows (
  dataset_id   TEXT NOT NULL,
  row_key      TEXT NOT NULL,
  from_version INTEGER NOT NULL,
  to_version   INTEGER,
  data         TEXT NOT NULL,                  -- canonical JSON of the row (columns in declared order)
  PRIMARY KEY (dataset_id, row_key, from_version)
) WITHOUT ROWID;
-- the current rows (to_version IS NULL) by key: what a commit compares and closes
CREATE INDEX dataset_rows_current ON dataset_rows (dataset_id, row_key) WHERE to_version IS NULL;

-- Rows an open transaction has received, applied to dataset_rows at commit (one SQLite transaction)
-- and deleted then or at abort. The key set of a snapshot is known only here until commit.
CREATE TABLE dataset_staged_rows (
  dataset_id TEXT NOT NULL,
  version    INTEGER NOT NULL,
  row_key    TEXT NOT NULL,
  data       TEXT NOT NULL,
  PRIMARY KEY (dataset_id, version, row_key)
) WITHOUT ROWID;

-- Projection progress per dataset (a durable runtime job): projected_version is the last version
-- fully projected; while projecting, target_version is the version being projected and after_key the
-- last row key already projected (updated in the same transaction as each chunk's objects).
CREATE TABLE dataset_projections (
  dataset_id        TEXT PRIMARY KEY,
  projected_version INTEGER NOT NULL DEFAULT 0,
  target_version    INTEGER,
  after_key         TEXT,
  last_error        TEXT,
  updated_at        TEXT NOT NULL
) WITHOUT ROWID;
