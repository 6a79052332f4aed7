-- Migration 7: every tombstone names the model it is about, so rows of two models sharing a
-- category never coalesce into one message. Rows written before carry ''.
ALTER TABLE cascade_outbox ADD COLUMN model TEXT NOT NULL DEFAULT '';
