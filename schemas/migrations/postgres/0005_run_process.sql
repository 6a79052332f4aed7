-- Migration 5: a run records the host and process that run it (its id, and what tells it apart
-- from any other: boot, PID namespace, start time), so a later run on the same host tells at once
-- that its process died (killed, crashed) instead of waiting for its heartbeat to go stale, and a
-- clean-up refuses to start while the same clean-up runs.
ALTER TABLE cascade_run ADD COLUMN IF NOT EXISTS host TEXT;
ALTER TABLE cascade_run ADD COLUMN IF NOT EXISTS pid BIGINT;
ALTER TABLE cascade_run ADD COLUMN IF NOT EXISTS process TEXT;
