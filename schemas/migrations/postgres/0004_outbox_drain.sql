-- Migration 4: the outbox drainer. A shard (scope, shard_identifier) is claimed by one drainer at a
-- time through its row here, which also holds its backoff after a failed delivery. A NULL
-- shard_identifier is claimed as ''. Rows leave this table when their shard is delivered.
CREATE TABLE IF NOT EXISTS cascade_outbox_shard (
    scope TEXT NOT NULL,
    shard_identifier TEXT NOT NULL,
    claim_token TEXT,
    claim_expires_at TIMESTAMPTZ,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ,
    last_attempt_at TIMESTAMPTZ,
    last_error TEXT,
    PRIMARY KEY (scope, shard_identifier)
);

-- A shard's messages are read in id order, and a message's older rows (its coalescing key) are
-- found and deleted by key.
DROP INDEX IF EXISTS cascade_outbox_shard_idx;
CREATE INDEX IF NOT EXISTS cascade_outbox_shard_order_idx ON cascade_outbox (scope, shard_identifier, id);
-- A hash index: deletions write tombstones in no order of their objects, and a B-tree on the
-- object would nearly double the cost of writing them; looking an object up needs only equality.
CREATE INDEX IF NOT EXISTS cascade_outbox_object_idx ON cascade_outbox USING hash (object_identifier);
