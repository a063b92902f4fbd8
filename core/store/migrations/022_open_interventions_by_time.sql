-- Open interventions for a caller, a page at a time (GET /api/interventions, core/runtime/workflows.ts):
-- the keyset (requested_at, id) is read along one partial index, where interventions_open (status)
-- left SQLite to sort every open intervention on each page.
DROP INDEX interventions_open;
CREATE INDEX interventions_open_by_time ON interventions (requested_at, id) WHERE status = 'open';
