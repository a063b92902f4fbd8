-- Browser sessions (spec 5): passwords hashed with scrypt; sessions keyed by a hash of their cookie value.
CREATE TABLE passwords (
  identity_id TEXT PRIMARY KEY,
  hash        TEXT NOT NULL,               -- scrypt$N$r$p$salt$key (base64url)
  updated_at  TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE sessions (
  id          TEXT PRIMARY KEY,            -- SHA-256 of the cookie value
  identity_id TEXT NOT NULL,
  csrf_token  TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  expires_at  INTEGER NOT NULL,            -- epoch ms; renewed on HTTP use, not by WebSocket traffic
  ended_at    TEXT
) WITHOUT ROWID;
