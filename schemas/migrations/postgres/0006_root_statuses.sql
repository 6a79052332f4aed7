-- Migration 6: the statuses root rows had before a deletion marked them in progress live in a
-- table of their own (the archive writes them back into the archived rows), moved out of
-- cascade_checkpoint, where they were kept as checkpoints named
-- `status-before-deletion:{table}:{key}` (the table name holds no ':').
CREATE TABLE cascade_root_status (
    root_table TEXT NOT NULL,
    root_key TEXT NOT NULL,
    status TEXT NOT NULL,
    PRIMARY KEY (root_table, root_key)
);
INSERT INTO cascade_root_status (root_table, root_key, status)
SELECT split_part(rest, ':', 1), substr(rest, strpos(rest, ':') + 1), position
FROM (SELECT substr(name, 24) AS rest, position FROM cascade_checkpoint
      WHERE substr(name, 1, 23) = 'status-before-deletion:') AS kept
WHERE strpos(rest, ':') > 0;
DELETE FROM cascade_checkpoint WHERE substr(name, 1, 23) = 'status-before-deletion:';
