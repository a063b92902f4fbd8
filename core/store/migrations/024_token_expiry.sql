-- API tokens with an expiry (`npm run svc -- tokens create --expires-in 90d`; NULL: none) and the last
-- time one authenticated a request (written at most hourly per token: core/auth/tokens.ts).
ALTER TABLE api_tokens ADD COLUMN expires_at TEXT;
ALTER TABLE api_tokens ADD COLUMN last_used_at TEXT;
