-- Migration 1: the tool's own tables on SQLite. Idempotent, so a database made by 0.1.0 (which created them without a version) upgrades cleanly.

CREATE TABLE IF NOT EXISTS cascade_scheduled_deletion (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    guid TEXT NOT NULL UNIQUE,
    model TEXT NOT NULL,
    object_id TEXT NOT NULL,
    date_added TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    date_scheduled TEXT NOT NULL,
    actor TEXT,
    data TEXT,
    in_progress INTEGER NOT NULL DEFAULT 0,
    heartbeat TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    UNIQUE (model, object_id)
);

CREATE TABLE IF NOT EXISTS cascade_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    shard_identifier TEXT,
    category TEXT NOT NULL,
    object_identifier TEXT NOT NULL,
    payload TEXT,
    scheduled_for TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    scheduled_from TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    date_added TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS cascade_outbox_shard_idx ON cascade_outbox (scope, shard_identifier, scheduled_for);

CREATE TABLE IF NOT EXISTS cascade_option (
    name TEXT PRIMARY KEY,
    value REAL NOT NULL,
    updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE IF NOT EXISTS cascade_run (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    finished_at TEXT,
    actor TEXT NOT NULL,
    command TEXT NOT NULL,
    root_model TEXT NOT NULL,
    root_ids TEXT NOT NULL,
    rows TEXT,
    outcome TEXT NOT NULL,
    error TEXT
);

CREATE TABLE IF NOT EXISTS cascade_checkpoint (
    name TEXT PRIMARY KEY,
    position TEXT NOT NULL,
    updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
