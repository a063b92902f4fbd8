-- Event schedules (spec 6.1): one durable stream consumer per schedule whose trigger is an event selector.
-- Everything here is written in the same transaction as the handlers' writes and `schedule.triggered`,
-- so a restart neither skips nor repeats an event (core/runtime/event-schedules.ts).
CREATE TABLE event_schedule_consumers (
  schedule_id       TEXT PRIMARY KEY,
  cursor            TEXT,                 -- stream position before which every matching event is finished; NULL: from the oldest retained event
  paused            INTEGER NOT NULL DEFAULT 0,
  note              TEXT,                 -- why it was paused / unpaused
  cursor_expired_at TEXT,                 -- last time the cursor was found pruned by retention (the consumer went on from the oldest retained event)
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL
) WITHOUT ROWID;

-- Per (schedule, event): events finished out of cursor order ('done', removed once the cursor passes
-- them), events being retried ('retrying', with attempts and the next attempt time) and dead-lettered
-- events ('dead', kept until an operator retries them). `revived` marks an operator retry of a
-- dead-lettered event, which is tracked here rather than by the cursor.
CREATE TABLE event_schedule_events (
  schedule_id     TEXT NOT NULL,
  event_id        TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('done', 'retrying', 'dead')),
  partition_key   TEXT NOT NULL,
  occurred_at     TEXT NOT NULL,
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,               -- epoch ms ('retrying')
  last_error      TEXT,
  revived         INTEGER NOT NULL DEFAULT 0,
  event           TEXT,                  -- the stored event as JSON ('retrying', 'dead'): an operator retry needs it after retention
  updated_at      TEXT NOT NULL,
  PRIMARY KEY (schedule_id, event_id)
) WITHOUT ROWID;
CREATE INDEX event_schedule_events_status ON event_schedule_events (schedule_id, status);
