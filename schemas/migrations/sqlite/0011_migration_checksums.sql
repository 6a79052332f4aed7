-- Migration 11: each applied migration's checksum (SHA-256 of its script, as hex), written by the
-- release that applies it (and, for the migrations before this one, by the release that applies
-- this one). A release refuses a database whose applied migration differs from its own script of
-- the same version: a shipped migration is never edited, so such a database was migrated by
-- another build (a development one) and its tables may not be what this release expects.
ALTER TABLE cascade_schema_version ADD COLUMN checksum TEXT;
