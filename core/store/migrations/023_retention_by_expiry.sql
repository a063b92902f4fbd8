-- The run retention's pass (core/store/run-retention.ts) finds spent download URLs and browser sessions
-- by when they expire, without reading every row inside its write transaction.
CREATE INDEX download_urls_by_expiry ON download_urls (expires_at);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
