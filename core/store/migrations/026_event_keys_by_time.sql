-- The event keys' retention (core/events/log.ts `pruneEventKeys`) deletes the keys recorded before the
-- event retention's cutoff, for every stream kind (a broker stream's events expire in the broker, their
-- keys here), a batch per transaction along this index instead of one scan of the whole table.
CREATE INDEX event_keys_by_time ON event_keys (created_at);
