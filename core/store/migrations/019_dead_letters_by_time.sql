-- A schedule's dead letters in the order GET /api/schedules/:id/dead-letters pages them (when they died,
-- then the event id): each page reads from its position instead of sorting all of them.
CREATE INDEX event_schedule_events_dead ON event_schedule_events (schedule_id, updated_at, event_id) WHERE status = 'dead';
