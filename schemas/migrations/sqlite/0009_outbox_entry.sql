-- Migration 9: narrower tombstones. Writing a tombstone per deleted row is the costliest part of a
-- deletion with an outbox, and most of it was the row's text columns and indexes. The rows now
-- live in `cascade_outbox_entry`: scope, category and model as integer codes of
-- `cascade_outbox_name` (a name has one code, never reused), the shard and object identifiers
-- without a type, holding an integer where their text is one written the usual way (`7`, not
-- `07`) and text otherwise, `scheduled_for` and `scheduled_from` NULL when they equal
-- `date_added`, an index on (scope, shard, id) for the drain order and one on the object alone
-- for coalescing. `cascade_outbox` becomes a view with its old columns, which
-- also takes inserts (an application writing its own outbox rows, a trigger).
CREATE TABLE cascade_outbox_name (
    code INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
INSERT OR IGNORE INTO cascade_outbox_name (name)
SELECT scope FROM cascade_outbox UNION SELECT category FROM cascade_outbox UNION SELECT model FROM cascade_outbox;

CREATE TABLE cascade_outbox_entry (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_code INTEGER NOT NULL,
    shard_identifier,
    category_code INTEGER NOT NULL,
    model_code INTEGER NOT NULL,
    object_identifier NOT NULL,
    payload TEXT,
    date_added TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    scheduled_for TEXT,
    scheduled_from TEXT
);
-- Ids are never reused (a cell's deliveries and a drainer's position name them): the new table
-- goes on from the old one's sequence.
INSERT INTO sqlite_sequence (name, seq)
SELECT 'cascade_outbox_entry', seq FROM sqlite_sequence WHERE name = 'cascade_outbox';
INSERT INTO cascade_outbox_entry (
    id, scope_code, shard_identifier, category_code, model_code, object_identifier, payload, date_added,
    scheduled_for, scheduled_from
)
SELECT o.id, s.code, CASE WHEN CAST(CAST(o.shard_identifier AS INTEGER) AS TEXT) = o.shard_identifier THEN CAST(o.shard_identifier AS INTEGER) ELSE o.shard_identifier END, c.code, m.code,
    CASE WHEN CAST(CAST(o.object_identifier AS INTEGER) AS TEXT) = o.object_identifier THEN CAST(o.object_identifier AS INTEGER) ELSE o.object_identifier END, o.payload, o.date_added,
    NULLIF(o.scheduled_for, o.date_added), NULLIF(o.scheduled_from, o.date_added)
FROM cascade_outbox o
JOIN cascade_outbox_name s ON s.name = o.scope
JOIN cascade_outbox_name c ON c.name = o.category
JOIN cascade_outbox_name m ON m.name = o.model
ORDER BY o.id;
DROP TABLE cascade_outbox;
CREATE INDEX cascade_outbox_entry_shard_idx ON cascade_outbox_entry (scope_code, shard_identifier, id);
CREATE INDEX cascade_outbox_entry_object_idx ON cascade_outbox_entry (object_identifier);

CREATE VIEW cascade_outbox AS
SELECT e.id, s.name AS scope, CAST(e.shard_identifier AS TEXT) AS shard_identifier, c.name AS category,
    CAST(e.object_identifier AS TEXT) AS object_identifier, e.payload,
    COALESCE(e.scheduled_for, e.date_added) AS scheduled_for,
    COALESCE(e.scheduled_from, e.date_added) AS scheduled_from,
    e.date_added, m.name AS model
FROM cascade_outbox_entry e
JOIN cascade_outbox_name s ON s.code = e.scope_code
JOIN cascade_outbox_name c ON c.code = e.category_code
JOIN cascade_outbox_name m ON m.code = e.model_code;

CREATE TRIGGER cascade_outbox_insert INSTEAD OF INSERT ON cascade_outbox
BEGIN
    INSERT OR IGNORE INTO cascade_outbox_name (name) VALUES (NEW.scope), (NEW.category), (COALESCE(NEW.model, ''));
    INSERT INTO cascade_outbox_entry (
        id, scope_code, shard_identifier, category_code, model_code, object_identifier, payload, date_added,
        scheduled_for, scheduled_from
    ) VALUES (
        NEW.id,
        (SELECT code FROM cascade_outbox_name WHERE name = NEW.scope),
        CASE WHEN CAST(CAST(CAST(NEW.shard_identifier AS TEXT) AS INTEGER) AS TEXT) = CAST(NEW.shard_identifier AS TEXT) THEN CAST(CAST(NEW.shard_identifier AS TEXT) AS INTEGER) ELSE CAST(NEW.shard_identifier AS TEXT) END,
        (SELECT code FROM cascade_outbox_name WHERE name = NEW.category),
        (SELECT code FROM cascade_outbox_name WHERE name = COALESCE(NEW.model, '')),
        CASE WHEN CAST(CAST(CAST(NEW.object_identifier AS TEXT) AS INTEGER) AS TEXT) = CAST(NEW.object_identifier AS TEXT) THEN CAST(CAST(NEW.object_identifier AS TEXT) AS INTEGER) ELSE CAST(NEW.object_identifier AS TEXT) END,
        NEW.payload,
        COALESCE(NEW.date_added, CURRENT_TIMESTAMP),
        NEW.scheduled_for,
        NEW.scheduled_from
    );
END;

CREATE TRIGGER cascade_outbox_delete INSTEAD OF DELETE ON cascade_outbox
BEGIN
    DELETE FROM cascade_outbox_entry WHERE id = OLD.id;
END;
