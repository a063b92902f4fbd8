-- Artifacts (spec 2.7–2.11, 4.3, 9): an artifact has a kind, a title, an owner and numbered versions;
-- a published version never changes (no UPDATE or DELETE of artifact_versions anywhere in the code).
CREATE TABLE artifacts (
  id             TEXT PRIMARY KEY,          -- art_<ulid>
  kind           TEXT NOT NULL,             -- document | sheet | slides | file
  title          TEXT NOT NULL,             -- the latest version's title
  owner          TEXT NOT NULL,             -- identity id: only the owner opens it (system code reaches all)
  latest_version INTEGER NOT NULL,
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL              -- when the latest version was published
) WITHOUT ROWID;
CREATE INDEX artifacts_by_owner ON artifacts (owner, updated_at DESC, id DESC);

CREATE TABLE artifact_versions (
  artifact_id  TEXT NOT NULL REFERENCES artifacts (id),
  version      INTEGER NOT NULL,            -- 1, 2, … never reused
  title        TEXT NOT NULL,
  files        TEXT NOT NULL,               -- JSON [{ path, file: FileReference }], sorted by path
  outline      TEXT NOT NULL,               -- JSON: what addresses can name (sections, sheets, charts, slides)
  warnings     TEXT NOT NULL,               -- JSON [{ code, message, … }] produced at publish time
  published_at TEXT NOT NULL,
  published_by TEXT,                        -- identity id, or run that published it for its owner
  PRIMARY KEY (artifact_id, version)
) WITHOUT ROWID;

-- The reverse index of what shows what (spec 4.3 dependents): one row per artifact address a version
-- contains; target_version NULL means the address follows the latest version.
CREATE TABLE artifact_links (
  source_id      TEXT NOT NULL,
  source_version INTEGER NOT NULL,
  address        TEXT NOT NULL,             -- as written (canonical form)
  target_id      TEXT NOT NULL,
  target_version INTEGER,
  PRIMARY KEY (source_id, source_version, address)
) WITHOUT ROWID;
CREATE INDEX artifact_links_by_target ON artifact_links (target_id, target_version);

-- Who uploaded a file: an author may put into an artifact the files they uploaded themselves.
ALTER TABLE files ADD COLUMN created_by TEXT;
