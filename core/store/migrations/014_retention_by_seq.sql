-- Retention finds its boundary in seq order (core/store/retention.ts): the appended_at indexes cost every
-- append a page write (~2 of the ~17.5 WAL pages of an action run, measured; issue 15) and are dropped.
DROP INDEX IF EXISTS events_by_appended;
DROP INDEX IF EXISTS logs_by_appended;
