-- The query string of a delivery's URL, as received (without `?`; NULL without one): a provider's
-- routing tag or validation token, which `verify` and the handler read from the request's URL. Kept for
-- replays (core/runtime/webhooks.ts `replay`), which rebuild the URL with it; not shown by the API
-- (a provider may put a token there).
ALTER TABLE webhook_runs ADD COLUMN query TEXT;
