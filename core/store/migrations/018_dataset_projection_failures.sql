-- Rows a dataset's projection could not write (its mapping threw, or the object it made was refused):
-- skipped so the projection goes on, listed here with the version and the reason, and removed when a
-- later version's projection writes the row's key (core/datasets/projector.ts).
CREATE TABLE dataset_projection_failures (
  dataset_id TEXT NOT NULL,
  row_key    TEXT NOT NULL,
  version    INTEGER NOT NULL,             -- the version whose projection skipped the row
  error      TEXT NOT NULL,
  failed_at  TEXT NOT NULL,
  PRIMARY KEY (dataset_id, row_key)
) WITHOUT ROWID;
