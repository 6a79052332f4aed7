-- Migration 8: fan-out to cells. A scope with `cells` delivers every message to each cell on its
-- own, so a claim, its attempts, backoff and last error belong to (scope, shard_identifier, cell);
-- a scope without cells uses the cell ''. `failing_since` is when the shard's current run of
-- failed deliveries began (a shard that failed before this migration counts from its last
-- attempt).
ALTER TABLE cascade_outbox_shard ADD COLUMN IF NOT EXISTS cell TEXT NOT NULL DEFAULT '';
ALTER TABLE cascade_outbox_shard ADD COLUMN IF NOT EXISTS failing_since TIMESTAMPTZ;
UPDATE cascade_outbox_shard SET failing_since = last_attempt_at WHERE attempts > 0;
ALTER TABLE cascade_outbox_shard DROP CONSTRAINT cascade_outbox_shard_pkey;
ALTER TABLE cascade_outbox_shard ADD PRIMARY KEY (scope, shard_identifier, cell);

-- The rows a cell has received while another cell of their scope has not yet: a row goes, with
-- its rows here, once every cell of its scope has it.
CREATE TABLE IF NOT EXISTS cascade_outbox_delivered (
    outbox_id BIGINT NOT NULL,
    cell TEXT NOT NULL,
    PRIMARY KEY (outbox_id, cell)
);
