//! Reading the schema of a live PostgreSQL database from its catalogs: every table of every
//! user schema, those on the search_path first (only they answer to an unqualified name). A
//! partitioned table is one table; keys and indexes declared on its partitions count as its own.

use std::collections::HashMap;

use sqlx::{PgPool, Row, query};

use super::{Column, ForeignKey, Index, OWN_TABLE_PREFIX, PartitionKey, ReferentialAction, Schema, Table};
use crate::db::sql::KeyType;
use crate::db::{DbError, Kind};

/// The tables: ordinary and partitioned, not partitions, of every schema but the system's; those
/// on the search_path first, in its order.
const TABLES: &str = "
    SELECT c.oid::int8 AS oid, n.nspname::text AS schema, c.relname::text AS name, c.relkind = 'p' AS partitioned,
           n.nspname <> ALL (current_schemas(false)) AS off_search_path,
           CASE pt.partstrat WHEN 'r' THEN 'range' WHEN 'l' THEN 'list' WHEN 'h' THEN 'hash' END AS partition_strategy,
           ARRAY(SELECT a.attname::text FROM unnest(pt.partattrs::int2[]) WITH ORDINALITY k(attnum, ord)
                 LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum ORDER BY k.ord)
               AS partition_columns
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_partitioned_table pt ON pt.partrelid = c.oid
    WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
      AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
    ORDER BY COALESCE(array_position(current_schemas(false), n.nspname), 2147483647), n.nspname, c.relname";

/// Columns with their declared type and, for binding keys, the type under any domains: the
/// catalog says what a type is, never its name. The domains' base types are read once for all
/// columns (a lookup per column made this the slowest read of a large schema), and the tables
/// are matched by `oid` as the catalog's index has it.
const COLUMNS: &str = "
    WITH RECURSIVE domains(oid, base) AS (
        SELECT t.oid, t.typbasetype FROM pg_type t WHERE t.typtype = 'd'
        UNION ALL
        SELECT d.oid, t.typbasetype FROM domains d JOIN pg_type t ON t.oid = d.base AND t.typtype = 'd'
    ), bases AS (
        SELECT d.oid, d.base FROM domains d JOIN pg_type t ON t.oid = d.base AND t.typtype <> 'd'
    )
    SELECT a.attrelid::int8 AS oid, a.attname::text AS name, format_type(a.atttypid, a.atttypmod) AS data_type,
           NOT a.attnotnull AS nullable, COALESCE(b.base, a.atttypid) AS base_oid,
           format_type(COALESCE(b.base, a.atttypid), NULL) AS base_type
    FROM pg_attribute a LEFT JOIN bases b ON b.oid = a.atttypid
    WHERE a.attrelid = ANY (CAST($1 AS oid[])) AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attrelid, a.attnum";

/// How keys of a column whose type (under its domains) is `base_oid` are bound.
fn key_type(base_oid: u32, base_type: String) -> KeyType {
    match base_oid {
        20 | 21 | 23 => KeyType::Integer,  // int8, int2, int4
        25 | 1042 | 1043 => KeyType::Text, // text, char(n), varchar(n)
        _ => KeyType::Other(base_type),
    }
}

/// Primary keys, unique constraints and foreign keys, on the tables and on their partitions
/// (mapped to the partition root). Constraints cloned from a parent (conparentid <> 0) are left
/// out: the parent's own row stands for them.
const CONSTRAINTS: &str = "
    SELECT COALESCE(pg_partition_root(con.conrelid), con.conrelid)::int8 AS oid,
           con.contype::text AS kind, con.conname::text AS name,
           ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.ord) AS columns,
           rn.nspname::text AS referenced_schema, rc.relname::text AS referenced_table,
           ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.ord)
               AS referenced_columns,
           con.confdeltype::text AS on_delete
    FROM pg_constraint con
    LEFT JOIN pg_class rc ON rc.oid = COALESCE(pg_partition_root(con.confrelid), con.confrelid)
    LEFT JOIN pg_namespace rn ON rn.oid = rc.relnamespace
    WHERE con.contype IN ('p', 'u', 'f') AND con.conparentid = 0
      AND COALESCE(pg_partition_root(con.conrelid), con.conrelid)::int8 = ANY ($1)
    ORDER BY con.conrelid, con.conname";

/// Indexes with their key columns in order (NULL for an expression), mapped to partition roots.
const INDEXES: &str = "
    SELECT COALESCE(pg_partition_root(i.indrelid), i.indrelid)::int8 AS oid, ic.relname::text AS name,
           i.indisunique AS is_unique, pg_get_expr(i.indpred, i.indrelid) AS predicate, NOT i.indisvalid AS invalid,
           ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
                 LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                 WHERE k.ord <= i.indnkeyatts ORDER BY k.ord) AS columns
    FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
    WHERE COALESCE(pg_partition_root(i.indrelid), i.indrelid)::int8 = ANY ($1)
    ORDER BY i.indrelid, ic.relname";

/// The tables' own `BEFORE DELETE` triggers (`tgtype` bits: 2 = before, 8 = delete), enabled,
/// not internal (foreign keys are enforced by internal triggers), mapped to partition roots; a
/// partition's clone of its root's trigger has the same name.
const DELETE_TRIGGERS: &str = "
    SELECT DISTINCT COALESCE(pg_partition_root(t.tgrelid), t.tgrelid)::int8 AS oid, t.tgname::text AS name
    FROM pg_trigger t
    WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' AND t.tgtype & 2 <> 0 AND t.tgtype & 8 <> 0
      AND COALESCE(pg_partition_root(t.tgrelid), t.tgrelid)::int8 = ANY ($1)
    ORDER BY 1, 2";

/// What DDL on a user table changes: for each catalog the reads above use, how many rows belong to
/// the user schemas' relations and the sum of their `xmin` (a row that DDL changes is written
/// anew, with the transaction's id; `VACUUM` and `ANALYZE` update in place and change neither),
/// with the search path the reads put first. An index is a relation of its own; a foreign key's
/// internal triggers come and go with its constraint. About 12 µs per column of the schema.
const VERSION: &str = "
    WITH relations AS (
        SELECT c.oid, c.xmin, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
    )
    SELECT concat_ws(' ',
        (SELECT count(*) || '/' || COALESCE(sum(xmin::text::int8), 0) FROM relations),
        (SELECT count(*) || '/' || COALESCE(sum(a.xmin::text::int8), 0)
         FROM pg_attribute a JOIN relations r ON r.oid = a.attrelid AND r.relkind IN ('r', 'p') WHERE a.attnum > 0),
        (SELECT count(*) || '/' || COALESCE(sum(con.xmin::text::int8), 0)
         FROM pg_constraint con JOIN relations r ON r.oid = con.conrelid),
        (SELECT count(*) || '/' || COALESCE(sum(t.xmin::text::int8), 0)
         FROM pg_trigger t JOIN relations r ON r.oid = t.tgrelid WHERE NOT t.tgisinternal),
        (SELECT count(*) || '/' || COALESCE(sum(t.xmin::text::int8), 0) FROM pg_type t WHERE t.typtype = 'd'),
        current_schemas(false)::text)";

pub(super) async fn version(pool: &PgPool) -> Result<String, DbError> {
    Ok(sqlx::query_scalar(VERSION).fetch_one(pool).await?)
}

pub(super) async fn introspect(pool: &PgPool) -> Result<Schema, DbError> {
    // One connection for all five reads: a connection goes back to the pool in the background, so
    // the next read through the pool would often open a second one (a new server process, whose
    // catalog caches start cold).
    let mut connection = pool.acquire().await?;
    let mut tables: Vec<(i64, Table)> =
        query(TABLES)
            .fetch_all(&mut *connection)
            .await?
            .iter()
            .map(|row| {
                (
                    row.get("oid"),
                    Table {
                        schema: Some(row.get("schema")),
                        name: row.get("name"),
                        partitioned: row.get("partitioned"),
                        partition_key: row.get::<Option<String>, _>("partition_strategy").map(|strategy| {
                            PartitionKey { strategy, columns: row.get("partition_columns"), function: None }
                        }),
                        off_search_path: row.get("off_search_path"),
                        ..Table::default()
                    },
                )
            })
            .filter(|(_, table)| !table.name.starts_with(OWN_TABLE_PREFIX))
            .collect();
    let oids: Vec<i64> = tables.iter().map(|(oid, _)| *oid).collect();
    let position: HashMap<i64, usize> = oids.iter().enumerate().map(|(index, oid)| (*oid, index)).collect();

    for row in query(COLUMNS).bind(&oids).fetch_all(&mut *connection).await? {
        if let Some(table) = table_mut(&mut tables, &position, row.get("oid")) {
            let base_oid: Option<sqlx::postgres::types::Oid> = row.get("base_oid");
            let base_type: Option<String> = row.get("base_type");
            table.columns.push(Column {
                name: row.get("name"),
                data_type: row.get("data_type"),
                nullable: row.get("nullable"),
                key_type: key_type(base_oid.map_or(0, |oid| oid.0), base_type.unwrap_or_default()),
            });
        }
    }
    for row in query(CONSTRAINTS).bind(&oids).fetch_all(&mut *connection).await? {
        let Some(table) = table_mut(&mut tables, &position, row.get("oid")) else {
            continue;
        };
        let columns: Vec<String> = row.get("columns");
        match row.get::<String, _>("kind").as_str() {
            "p" => table.primary_key = columns,
            "u" => add_index(table, Index::new(Some(row.get("name")), columns, true)),
            _ => {
                let key = ForeignKey {
                    name: Some(row.get("name")),
                    columns,
                    referenced_schema: row.get("referenced_schema"),
                    referenced_table: row.get::<Option<String>, _>("referenced_table").unwrap_or_default(),
                    referenced_columns: row.get("referenced_columns"),
                    on_delete: referential_action(&row.get::<String, _>("on_delete")),
                };
                // A partitioned table's key stands on each partition too (under other names).
                if !table.foreign_keys.iter().any(|known| known.same_reference(&key)) {
                    table.foreign_keys.push(key);
                }
            }
        }
    }
    for row in query(INDEXES).bind(&oids).fetch_all(&mut *connection).await? {
        let Some(table) = table_mut(&mut tables, &position, row.get("oid")) else {
            continue;
        };
        let columns: Vec<Option<String>> = row.get("columns");
        let predicate: Option<String> = row.get("predicate");
        let index = Index {
            name: Some(row.get("name")),
            expression: columns.iter().any(Option::is_none),
            columns: columns.into_iter().map_while(|column| column).collect(),
            unique: row.get("is_unique"),
            partial: predicate.is_some(),
            not_null_predicate: predicate
                .map_or_else(Vec::new, |text| super::predicate::not_null_columns_in_text(Kind::Postgres, &text)),
            invalid: row.get("invalid"),
        };
        add_index(table, index);
    }
    for row in query(DELETE_TRIGGERS).bind(&oids).fetch_all(&mut *connection).await? {
        if let Some(table) = table_mut(&mut tables, &position, row.get("oid")) {
            table.delete_triggers.push(row.get("name"));
        }
    }
    Ok(Schema::new(tables.into_iter().map(|(_, table)| table).collect(), Some(Kind::Postgres)))
}

fn table_mut<'a>(tables: &'a mut [(i64, Table)], position: &HashMap<i64, usize>, oid: i64) -> Option<&'a mut Table> {
    position.get(&oid).map(|&index| &mut tables[index].1)
}

/// Partitions repeat their parent's indexes; one per column list and kind is enough to know what
/// leads and what is unique.
fn add_index(table: &mut Table, index: Index) {
    let same = |existing: &Index| {
        let kind = |index: &Index| {
            (index.columns.clone(), index.unique, index.partial, index.not_null_predicate.clone(), index.expression)
        };
        kind(existing) == kind(&index) && existing.invalid == index.invalid
    };
    if !table.indexes.iter().any(same) {
        table.indexes.push(index);
    }
}

fn referential_action(code: &str) -> ReferentialAction {
    match code {
        "c" => ReferentialAction::Cascade,
        "n" => ReferentialAction::SetNull,
        "d" => ReferentialAction::SetDefault,
        "r" => ReferentialAction::Restrict,
        _ => ReferentialAction::NoAction,
    }
}
