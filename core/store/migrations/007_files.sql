-- Files (spec 2.6): stored files, the references that hold them, and revocable download URLs.
-- The bytes live in the blob store (local directory or S3 bucket) under their SHA-256; a blob is shared
-- by every file row with the same sha256.
CREATE TABLE files (
  id                    TEXT PRIMARY KEY,  -- file_<ulid>
  name                  TEXT NOT NULL,     -- sanitized file name (no path, no control characters)
  content_type          TEXT NOT NULL,     -- what the bytes are (sniffed), else the declared type
  declared_content_type TEXT,              -- the uploader's type, kept only when the bytes said otherwise
  size                  INTEGER NOT NULL,  -- bytes
  sha256                TEXT NOT NULL,     -- lowercase hex; the blob's address
  created_at            TEXT NOT NULL,     -- ISO 8601 UTC
  referenced_at         TEXT               -- first time a reference held it; NULL: never referenced
) WITHOUT ROWID;
CREATE INDEX files_by_sha256 ON files (sha256);
CREATE INDEX files_unreferenced ON files (created_at) WHERE referenced_at IS NULL;

-- Who holds a file: an object property, a run's params or result, an artifact file, …
CREATE TABLE file_references (
  file_id    TEXT NOT NULL REFERENCES files (id),
  owner_kind TEXT NOT NULL,                -- object | run | artifact | …
  owner_id   TEXT NOT NULL,                -- e.g. invoice/inv_1001, a run id
  path       TEXT NOT NULL,                -- where in the owner, e.g. /properties/pdf
  created_at TEXT NOT NULL,
  PRIMARY KEY (file_id, owner_kind, owner_id, path)
) WITHOUT ROWID;
CREATE INDEX file_references_by_owner ON file_references (owner_kind, owner_id, path);

-- Download URLs (spec 2.6, 4.3): the URL's secret is the capability; only its hash is stored.
CREATE TABLE download_urls (
  id          TEXT PRIMARY KEY,            -- dl_<ulid>
  file_id     TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
  secret_hash TEXT NOT NULL UNIQUE,        -- SHA-256 of the secret, base64url
  expires_at  INTEGER NOT NULL,            -- epoch ms
  revoked_at  TEXT,                        -- ISO 8601 UTC; NULL while valid
  created_at  TEXT NOT NULL,
  created_by  TEXT                         -- identity or run that created it, for audit
) WITHOUT ROWID;
CREATE INDEX download_urls_by_file ON download_urls (file_id);

-- Blobs whose last file row was deleted, to delete from the blob store (retried until done).
CREATE TABLE blob_deletions (
  sha256     TEXT PRIMARY KEY,
  queued_at  TEXT NOT NULL
) WITHOUT ROWID;
