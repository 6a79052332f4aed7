-- Migration 3: a claim carries its own expiry (its worker's lease), so a worker started with a
-- shorter --lease never takes over a live claim of a worker with a longer one.
ALTER TABLE cascade_scheduled_deletion ADD COLUMN claim_expires_at TEXT;
