-- Migration 8: fan-out to cells. A scope with `cells` delivers every message to each cell on its
-- own, so a claim, its attempts, backoff and last error belong to (scope, shard_identifier, cell);
-- a scope without cells uses the cell ''. `failing_since` is when the shard's current run of
-- failed deliveries began (a shard that failed before this migration counts from its last
-- attempt). SQLite cannot change a primary key in place: the table is made anew, rows kept.
CREATE TABLE cascade_outbox_shard_by_cell (
    scope TEXT NOT NULL,
    shard_identifier TEXT NOT NULL,
    cell TEXT NOT NULL DEFAULT '',
    claim_token TEXT,
    claim_expires_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_attempt_at TEXT,
    last_error TEXT,
    failing_since TEXT,
    PRIMARY KEY (scope, shard_identifier, cell)
);
INSERT INTO cascade_outbox_shard_by_cell (
    scope, shard_identifier, claim_token, claim_expires_at, attempts, next_attempt_at, last_attempt_at,
    last_error, failing_since
)
SELECT scope, shard_identifier, claim_token, claim_expires_at, attempts, next_attempt_at, last_attempt_at,
    last_error, CASE WHEN attempts > 0 THEN last_attempt_at END
FROM cascade_outbox_shard;
DROP TABLE cascade_outbox_shard;
ALTER TABLE cascade_outbox_shard_by_cell RENAME TO cascade_outbox_shard;

-- The rows a cell has received while another cell of their scope has not yet: a row goes, with
-- its rows here, once every cell of its scope has it.
CREATE TABLE IF NOT EXISTS cascade_outbox_delivered (
    outbox_id INTEGER NOT NULL,
    cell TEXT NOT NULL,
    PRIMARY KEY (outbox_id, cell)
) WITHOUT ROWID;
