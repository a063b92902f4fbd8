-- API tokens with an expiry (`npm run svc -- tokens create --expires-in 90d`; NULL: none) and the last
-- time one authenticated a request (written at most hourly per token: core/auth/tokens.ts).
ALTER TABLE api_tokens ADD COLUMN expires_at TEXT;
ALTER TABLE api_tokens ADD COLUMN last_used_at TEXT;
-- An identity's tokens, newest first (GET /api/tokens) and counted (its working tokens), without a scan.
CREATE INDEX api_tokens_by_identity ON api_tokens (identity_id, created_at);
