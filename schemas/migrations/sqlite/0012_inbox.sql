-- Migration 12: the inbox, tombstones received from another database's outbox. Each is applied
-- by a worker as the deletion of a remote model's local children, then kept (`applied_at`) for
-- the retention window. A message delivered again (the same source and idempotency key) is the
-- same row. A tombstone whose application keeps failing is parked (`parked_at`) with its error.
CREATE TABLE cascade_inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    category TEXT NOT NULL,
    model TEXT NOT NULL,
    object_key TEXT NOT NULL,
    payload TEXT,
    sent_at TEXT,
    received_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    applied_at TEXT,
    parked_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    claim_token TEXT,
    claim_expires_at TEXT,
    UNIQUE (source, idempotency_key)
);
CREATE INDEX cascade_inbox_pending_idx ON cascade_inbox (id) WHERE applied_at IS NULL AND parked_at IS NULL;
