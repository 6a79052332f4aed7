-- Migration 1: the tables of the tool itself on MariaDB (10.11) / MySQL, in the state the PostgreSQL
-- migrations 1 to 12 reach, for a fresh database (no data to carry over). The session runs with
-- sql_mode ANSI_QUOTES, PIPES_AS_CONCAT, NO_BACKSLASH_ESCAPES, STRICT_TRANS_TABLES and
-- time_zone +00:00: every DATETIME(3) holds UTC, and so does its CURRENT_TIMESTAMP(3) default.
--
-- Every table is InnoDB, utf8mb4 with the binary collation utf8mb4_bin, so keys compare byte for
-- byte as text does in PostgreSQL. InnoDB keys at most 3072 bytes per index, 4 bytes a character:
-- a text column in a key is a VARCHAR, VARCHAR(255) for names (models, tables, scopes,
-- categories, cells, sources, options, guids, shards) and VARCHAR(512) for the key of a row as text
-- (object_id, object_identifier, root_key, row_key, idempotency_key), so that each composite key
-- stays within 768 characters. The name of cascade_checkpoint, its key alone, is VARCHAR(768).
-- Payloads, row counts, root ids and errors, which may be long, are LONGTEXT.
-- AUTO_INCREMENT ids are never reused: InnoDB keeps the counter of each table across restarts.

CREATE TABLE IF NOT EXISTS cascade_scheduled_deletion (
    id BIGINT NOT NULL AUTO_INCREMENT,
    guid VARCHAR(255) NOT NULL,
    model VARCHAR(255) NOT NULL,
    object_id VARCHAR(512) NOT NULL,
    date_added DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    date_scheduled DATETIME(3) NOT NULL,
    actor TEXT,
    data LONGTEXT,
    in_progress BOOLEAN NOT NULL DEFAULT FALSE,
    heartbeat DATETIME(3),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error LONGTEXT,
    claim_token TEXT,
    claim_expires_at DATETIME(3),
    PRIMARY KEY (id),
    UNIQUE KEY cascade_scheduled_deletion_guid_key (guid),
    UNIQUE KEY cascade_scheduled_deletion_model_object_id_key (model, object_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS cascade_option (
    name VARCHAR(255) NOT NULL,
    value DOUBLE NOT NULL,
    updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- `rows` is a reserved word in MariaDB (window frames): the column is quoted, here and wherever
-- a statement names it.
CREATE TABLE IF NOT EXISTS cascade_run (
    id BIGINT NOT NULL AUTO_INCREMENT,
    started_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    finished_at DATETIME(3),
    actor TEXT NOT NULL,
    command TEXT NOT NULL,
    root_model TEXT NOT NULL,
    root_ids LONGTEXT NOT NULL,
    "rows" LONGTEXT,
    outcome TEXT NOT NULL,
    error LONGTEXT,
    heartbeat DATETIME(3),
    resumes BIGINT,
    host TEXT,
    pid BIGINT,
    process TEXT,
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Checkpoint names carry a model and the columns of its relations: the whole 3072 bytes.
CREATE TABLE IF NOT EXISTS cascade_checkpoint (
    name VARCHAR(768) NOT NULL,
    position TEXT NOT NULL,
    updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The claim and backoff of a shard by the outbox drainer, for each cell (the empty cell for a
-- scope without cells). A NULL shard_identifier is claimed as the empty string. Key: 3 x 255 characters = 3060 bytes.
CREATE TABLE IF NOT EXISTS cascade_outbox_shard (
    scope VARCHAR(255) NOT NULL,
    shard_identifier VARCHAR(255) NOT NULL,
    claim_token TEXT,
    claim_expires_at DATETIME(3),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(3),
    last_attempt_at DATETIME(3),
    last_error LONGTEXT,
    cell VARCHAR(255) NOT NULL DEFAULT '',
    failing_since DATETIME(3),
    PRIMARY KEY (scope, shard_identifier, cell)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The rows a cell has received while another cell of their scope has not yet.
CREATE TABLE IF NOT EXISTS cascade_outbox_delivered (
    outbox_id BIGINT NOT NULL,
    cell VARCHAR(255) NOT NULL,
    PRIMARY KEY (outbox_id, cell)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The codes of the scopes, categories and models (a name has one code, never reused).
CREATE TABLE IF NOT EXISTS cascade_outbox_name (
    code BIGINT NOT NULL AUTO_INCREMENT,
    name VARCHAR(255) NOT NULL,
    PRIMARY KEY (code),
    UNIQUE KEY cascade_outbox_name_name_key (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The rows of the outbox: scope, category and model as codes of cascade_outbox_name, scheduled_for and
-- scheduled_from NULL when they equal date_added. shard_identifier is no longer than that of
-- cascade_outbox_shard.
CREATE TABLE IF NOT EXISTS cascade_outbox_entry (
    id BIGINT NOT NULL AUTO_INCREMENT,
    scope_code INTEGER NOT NULL,
    shard_identifier VARCHAR(255),
    category_code INTEGER NOT NULL,
    model_code INTEGER NOT NULL,
    object_identifier VARCHAR(512) NOT NULL,
    payload LONGTEXT,
    date_added DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    scheduled_for DATETIME(3),
    scheduled_from DATETIME(3),
    PRIMARY KEY (id),
    KEY cascade_outbox_entry_shard_idx (scope_code, shard_identifier, id),
    -- A B-tree: the index is a hash one in PostgreSQL, which InnoDB does not have.
    KEY cascade_outbox_entry_object_idx (object_identifier)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS cascade_root_status (
    root_table VARCHAR(255) NOT NULL,
    root_key VARCHAR(512) NOT NULL,
    status TEXT NOT NULL,
    PRIMARY KEY (root_table, root_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Key: 4 + (255 + 512) x 4 = 3072 bytes, exactly the InnoDB limit.
CREATE TABLE IF NOT EXISTS cascade_nullified_row (
    run_id INTEGER NOT NULL,
    model VARCHAR(255) NOT NULL,
    row_key VARCHAR(512) NOT NULL,
    PRIMARY KEY (run_id, model, row_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS cascade_inbox (
    id BIGINT NOT NULL AUTO_INCREMENT,
    source VARCHAR(255) NOT NULL,
    idempotency_key VARCHAR(512) NOT NULL,
    category TEXT NOT NULL,
    model TEXT NOT NULL,
    object_key TEXT NOT NULL,
    payload LONGTEXT,
    sent_at TEXT,
    received_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    applied_at DATETIME(3),
    parked_at DATETIME(3),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error LONGTEXT,
    claim_token TEXT,
    claim_expires_at DATETIME(3),
    PRIMARY KEY (id),
    UNIQUE KEY cascade_inbox_source_idempotency_key_key (source, idempotency_key),
    -- MariaDB has no partial index: PostgreSQL (id) WHERE applied_at IS NULL AND parked_at IS NULL, here plain on (applied_at, parked_at, id).
    KEY cascade_inbox_pending_idx (applied_at, parked_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- cascade_outbox, the rows of the outbox with their old columns (names, not codes), as the
-- view in PostgreSQL. Read only: MariaDB has no INSTEAD OF triggers, so rows are written to and deleted from
-- cascade_outbox_entry. SQL SECURITY INVOKER: the view does not depend on the user who made it.
CREATE OR REPLACE SQL SECURITY INVOKER VIEW cascade_outbox AS
SELECT e.id, s.name AS scope, e.shard_identifier, c.name AS category, e.object_identifier, e.payload,
    COALESCE(e.scheduled_for, e.date_added) AS scheduled_for,
    COALESCE(e.scheduled_from, e.date_added) AS scheduled_from,
    e.date_added, m.name AS model
FROM cascade_outbox_entry e
JOIN cascade_outbox_name s ON s.code = e.scope_code
JOIN cascade_outbox_name c ON c.code = e.category_code
JOIN cascade_outbox_name m ON m.code = e.model_code;

-- The column of migration 11: the checksum of each applied migration (SHA-256 of its script, as hex).
ALTER TABLE cascade_schema_version ADD COLUMN IF NOT EXISTS checksum TEXT;
