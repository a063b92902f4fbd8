-- Stream identity: cursors carry it so a cursor of another database is refused.
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('stream_epoch', lower(hex(randomblob(6))));

-- Ontology (spec 2.1)
CREATE TABLE objects (
  object_type_id TEXT NOT NULL,
  primary_id     TEXT NOT NULL,
  properties     TEXT NOT NULL,           -- JSON object
  version        INTEGER NOT NULL,
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  PRIMARY KEY (object_type_id, primary_id)
) WITHOUT ROWID;

CREATE TABLE links (
  source_type_id TEXT NOT NULL,
  source_id      TEXT NOT NULL,
  link_id        TEXT NOT NULL,
  target_type_id TEXT NOT NULL,
  target_id      TEXT NOT NULL,
  properties     TEXT,                    -- JSON object or NULL
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  PRIMARY KEY (source_type_id, source_id, link_id, target_type_id, target_id)
) WITHOUT ROWID;
CREATE INDEX links_by_target ON links (target_type_id, target_id);

CREATE TABLE telemetry (
  seq            INTEGER PRIMARY KEY,
  object_type_id TEXT NOT NULL,
  object_id      TEXT NOT NULL,
  property_id    TEXT NOT NULL,
  value          TEXT NOT NULL,           -- JSON value
  unit           TEXT,
  at             TEXT NOT NULL
);
CREATE INDEX telemetry_series ON telemetry (object_type_id, object_id, property_id, at);

-- One row per ontology write; an idempotency key makes a retried write (activity retry) a no-op.
CREATE TABLE commits (
  commit_id       TEXT PRIMARY KEY,
  idempotency_key TEXT UNIQUE,
  correlation_id  TEXT,
  created_at      TEXT NOT NULL
) WITHOUT ROWID;

-- Transactional outbox (spec 6.2): envelopes written with their rows, drained to the stream.
CREATE TABLE outbox (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id   TEXT NOT NULL UNIQUE,
  envelope   TEXT NOT NULL,               -- JSON StoredDomainEvent without cursor
  created_at TEXT NOT NULL,
  attempts   INTEGER NOT NULL DEFAULT 0,
  last_error TEXT
);

-- Idempotency keys of appended events (envelope field idempotencyKey).
CREATE TABLE event_keys (
  idempotency_key TEXT PRIMARY KEY,
  event_id        TEXT NOT NULL,
  created_at      TEXT NOT NULL
) WITHOUT ROWID;

-- The built-in stream: append-only, cursor = epoch + seq.
CREATE TABLE events (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  id            TEXT NOT NULL UNIQUE,
  type          TEXT NOT NULL,
  topic         TEXT NOT NULL,
  partition_key TEXT NOT NULL,
  appended_at   INTEGER NOT NULL,         -- epoch ms, for retention
  subject_type  TEXT,
  subject_id    TEXT,
  action_id     TEXT,
  run_id        TEXT,
  perm1         TEXT NOT NULL,            -- permission needed to see the event
  perm2         TEXT,                     -- second one (links: both endpoint types)
  envelope      TEXT NOT NULL
);
CREATE INDEX events_by_topic ON events (topic, seq);
CREATE INDEX events_by_type ON events (type, seq);
CREATE INDEX events_by_appended ON events (appended_at);

-- Action runs (spec 2.2, 4.2).
CREATE TABLE action_runs (
  id            TEXT PRIMARY KEY,
  run_id        TEXT NOT NULL UNIQUE,
  action_id     TEXT NOT NULL,
  status        TEXT NOT NULL,            -- running | succeeded | failed
  subject       TEXT,                     -- JSON
  params        TEXT NOT NULL,            -- JSON
  actor         TEXT,                     -- JSON { type, id }
  attempts      INTEGER NOT NULL DEFAULT 1,
  started_at    TEXT NOT NULL,
  finished_at   TEXT,
  result        TEXT,                     -- JSON value the handler returned
  error         TEXT,                     -- JSON { code, message }
  effect_status TEXT                      -- NULL: none | pending | started
);
CREATE INDEX action_runs_pending_effects ON action_runs (effect_status) WHERE effect_status = 'pending';

-- Workflow runs requested through the API (state itself lives on Temporal).
CREATE TABLE workflow_runs (
  run_id       TEXT PRIMARY KEY,
  workflow_id  TEXT NOT NULL,
  input        TEXT NOT NULL,
  actor        TEXT,
  requested_at TEXT NOT NULL
) WITHOUT ROWID;

-- API tokens (spec 5): only a SHA-256 hash is stored.
CREATE TABLE api_tokens (
  id          TEXT PRIMARY KEY,
  token_hash  TEXT NOT NULL UNIQUE,
  identity_id TEXT NOT NULL,
  name        TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  revoked_at  TEXT
) WITHOUT ROWID;
