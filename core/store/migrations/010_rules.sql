-- Rules (spec 2.4 `rule.triggered`, `rule.resolved`): the evaluator's checkpoint (the last stream cursor
-- it processed) and the (rule, subject) pairs currently triggered. Both are written in the same
-- transaction as the rule events the evaluator puts in the outbox, so a commit is evaluated once.
CREATE TABLE rule_checkpoints (
  consumer   TEXT PRIMARY KEY,              -- "rules"
  cursor     TEXT NOT NULL,                 -- opaque stream cursor of the last processed event
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE rule_states (
  rule_id        TEXT NOT NULL,
  object_type_id TEXT NOT NULL,
  primary_id     TEXT NOT NULL,
  triggered_at   TEXT NOT NULL,             -- occurredAt of its rule.triggered
  event_id       TEXT NOT NULL,             -- id of its rule.triggered
  PRIMARY KEY (rule_id, object_type_id, primary_id)
) WITHOUT ROWID;
