-- Handler logs (spec 2.5): lines written by action, webhook, schedule, sync, pipeline and effect handlers.
CREATE TABLE logs (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  at          TEXT NOT NULL,
  appended_at INTEGER NOT NULL,            -- epoch ms, for retention
  level       TEXT NOT NULL,               -- debug | info | warn | error
  message     TEXT NOT NULL,
  fields      TEXT NOT NULL,               -- JSON object
  run_kind    TEXT NOT NULL,
  run_id      TEXT NOT NULL
);
CREATE INDEX logs_by_run ON logs (run_kind, run_id, seq);
CREATE INDEX logs_by_appended ON logs (appended_at);
