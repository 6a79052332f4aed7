//! Reading the schema of a live MySQL (MariaDB) database from `information_schema`: the tables of
//! the connection's database (the URL's), which its names need no qualifier for.

use std::collections::HashMap;

use sqlx::mysql::MySqlRow;
use sqlx::{MySqlPool, Row, query};

use super::{Column, ForeignKey, Index, OWN_TABLE_PREFIX, PartitionKey, ReferentialAction, Schema, Table};
use crate::db::sql::KeyType;
use crate::db::{DbError, Kind};

/// Base tables (not views) of the connection's database, by name.
const TABLES: &str = "
    SELECT CAST(table_name AS CHAR) AS name FROM information_schema.tables
    WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'
    ORDER BY table_name";

/// How the partitioned tables are partitioned, one row per table: a correlated read of
/// `information_schema.partitions` per table opened every table of the server.
const PARTITIONED: &str = "
    SELECT CAST(table_name AS CHAR) AS table_name, CAST(MAX(partition_method) AS CHAR) AS partition_method,
           CAST(MAX(partition_expression) AS CHAR) AS partition_expression
    FROM information_schema.partitions
    WHERE table_schema = DATABASE() AND partition_name IS NOT NULL
    GROUP BY table_name";

/// Columns in declared order, with their full type (`bigint(20) unsigned`) and its base name.
const COLUMNS: &str = "
    SELECT CAST(table_name AS CHAR) AS table_name, CAST(column_name AS CHAR) AS name,
           CAST(column_type AS CHAR) AS column_type, CAST(data_type AS CHAR) AS data_type,
           is_nullable = 'YES' AS nullable
    FROM information_schema.columns WHERE table_schema = DATABASE()
    ORDER BY table_name, ordinal_position";

/// Index parts in order; the primary key is the index `PRIMARY`. A part without a column is an
/// expression (MySQL 8's functional indexes); one with a prefix length covers part of a column.
const INDEXES: &str = "
    SELECT CAST(table_name AS CHAR) AS table_name, CAST(index_name AS CHAR) AS name, non_unique = 0 AS is_unique,
           CAST(column_name AS CHAR) AS column_name, sub_part IS NOT NULL AS prefix
    FROM information_schema.statistics WHERE table_schema = DATABASE()
    ORDER BY table_name, index_name, seq_in_index";

/// Foreign keys, one row per column pair in order, with their ON DELETE rule.
const FOREIGN_KEYS: &str = "
    SELECT CAST(k.table_name AS CHAR) AS table_name, CAST(k.constraint_name AS CHAR) AS name,
           CAST(k.column_name AS CHAR) AS column_name,
           CAST(NULLIF(k.referenced_table_schema, DATABASE()) AS CHAR) AS referenced_schema,
           CAST(k.referenced_table_name AS CHAR) AS referenced_table,
           CAST(k.referenced_column_name AS CHAR) AS referenced_column, CAST(r.delete_rule AS CHAR) AS on_delete
    FROM information_schema.key_column_usage k
    JOIN information_schema.referential_constraints r
      ON r.constraint_schema = k.constraint_schema AND r.constraint_name = k.constraint_name
     AND r.table_name = k.table_name
    WHERE k.table_schema = DATABASE() AND k.referenced_table_name IS NOT NULL
    ORDER BY k.table_name, k.constraint_name, k.ordinal_position";

/// The tables' `BEFORE DELETE` triggers.
const DELETE_TRIGGERS: &str = "
    SELECT CAST(event_object_table AS CHAR) AS table_name, CAST(trigger_name AS CHAR) AS name
    FROM information_schema.triggers
    WHERE event_object_schema = DATABASE() AND event_manipulation = 'DELETE' AND action_timing = 'BEFORE'
    ORDER BY event_object_table, trigger_name";

/// What DDL on a table of the database changes, as one text: for each read above, how many rows
/// it has and a checksum of what they say.
const VERSION: &str = "
    SELECT CONCAT_WS(' ',
        (SELECT CONCAT(COUNT(*), '/', COALESCE(SUM(CRC32(CONCAT_WS(',', table_name, column_name, column_type,
                is_nullable, ordinal_position))), 0))
         FROM information_schema.columns WHERE table_schema = DATABASE()),
        (SELECT CONCAT(COUNT(*), '/', COALESCE(SUM(CRC32(CONCAT_WS(',', table_name, index_name, non_unique,
                column_name, seq_in_index, sub_part))), 0))
         FROM information_schema.statistics WHERE table_schema = DATABASE()),
        (SELECT CONCAT(COUNT(*), '/', COALESCE(SUM(CRC32(CONCAT_WS(',', table_name, constraint_name,
                referenced_table_name, delete_rule))), 0))
         FROM information_schema.referential_constraints WHERE constraint_schema = DATABASE()),
        (SELECT CONCAT(COUNT(*), '/', COALESCE(SUM(CRC32(CONCAT_WS(',', event_object_table, trigger_name,
                event_manipulation, action_timing))), 0))
         FROM information_schema.triggers WHERE event_object_schema = DATABASE()),
        DATABASE())";

pub(super) async fn version(pool: &MySqlPool) -> Result<String, DbError> {
    Ok(sqlx::query_scalar(VERSION).fetch_one(pool).await?)
}

/// How keys of a column of the base type `data_type` are bound.
fn key_type(data_type: &str) -> KeyType {
    match data_type.to_ascii_lowercase().as_str() {
        "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint" => KeyType::Integer,
        "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext" => KeyType::Text,
        other => KeyType::Other(other.to_owned()),
    }
}

/// A foreign key's ON DELETE rule. InnoDB checks `NO ACTION` at once, row by row, as
/// `RESTRICT`: nothing defers it to the statement's end.
fn referential_action(rule: &str) -> ReferentialAction {
    match rule {
        "CASCADE" => ReferentialAction::Cascade,
        "SET NULL" => ReferentialAction::SetNull,
        "SET DEFAULT" => ReferentialAction::SetDefault,
        _ => ReferentialAction::Restrict,
    }
}

pub(super) async fn introspect(pool: &MySqlPool) -> Result<Schema, DbError> {
    let mut connection = pool.acquire().await?;
    let mut tables: Vec<Table> = query(TABLES)
        .fetch_all(&mut *connection)
        .await?
        .iter()
        .map(|row| Table { name: row.get("name"), ..Table::default() })
        .filter(|table| !table.name.starts_with(OWN_TABLE_PREFIX))
        .collect();
    let position: HashMap<String, usize> =
        tables.iter().enumerate().map(|(index, table)| (table.name.clone(), index)).collect();
    let table_of = |row: &MySqlRow| position.get(&row.get::<String, _>("table_name")).copied();

    for row in query(PARTITIONED).fetch_all(&mut *connection).await? {
        let Some(index) = table_of(&row) else { continue };
        let method: String = row.get("partition_method");
        let expression: Option<String> = row.get("partition_expression");
        tables[index].partitioned = true;
        tables[index].partition_key = Some(partition_key(&method, expression.as_deref().unwrap_or_default()));
    }

    for row in query(COLUMNS).fetch_all(&mut *connection).await? {
        let Some(index) = table_of(&row) else { continue };
        let data_type: String = row.get("data_type");
        tables[index].columns.push(Column {
            name: row.get("name"),
            data_type: row.get("column_type"),
            nullable: row.get::<i64, _>("nullable") != 0,
            key_type: key_type(&data_type),
        });
    }
    let mut indexes: Vec<(usize, Index)> = Vec::new();
    for row in query(INDEXES).fetch_all(&mut *connection).await? {
        let Some(table) = table_of(&row) else { continue };
        let name: String = row.get("name");
        let column: Option<String> = row.get("column_name");
        let prefix = row.get::<i64, _>("prefix") != 0;
        let index = match indexes.last_mut() {
            Some((last, index)) if *last == table && index.name.as_deref() == Some(&name) => index,
            _ => {
                let unique = row.get::<i64, _>("is_unique") != 0;
                indexes.push((table, Index::new(Some(name), Vec::new(), unique)));
                &mut indexes.last_mut().expect("just pushed").1
            }
        };
        // A prefix covers lookups by the column, but its uniqueness is the prefix's, not the
        // column's; an expression ends the columns the index leads with.
        match column {
            Some(column) if !index.expression => {
                index.columns.push(column);
                index.unique &= !prefix;
            }
            _ => index.expression = true,
        }
    }
    for (table, index) in indexes {
        if index.name.as_deref() == Some("PRIMARY") {
            tables[table].primary_key = index.columns.clone();
        }
        tables[table].indexes.push(index);
    }
    let mut keys: Vec<(usize, ForeignKey)> = Vec::new();
    for row in query(FOREIGN_KEYS).fetch_all(&mut *connection).await? {
        let Some(table) = table_of(&row) else { continue };
        let name: String = row.get("name");
        let key = match keys.last_mut() {
            Some((last, key)) if *last == table && key.name.as_deref() == Some(&name) => key,
            _ => {
                keys.push((
                    table,
                    ForeignKey {
                        name: Some(name),
                        columns: Vec::new(),
                        referenced_schema: row.get("referenced_schema"),
                        referenced_table: row.get("referenced_table"),
                        referenced_columns: Vec::new(),
                        on_delete: referential_action(&row.get::<String, _>("on_delete")),
                    },
                ));
                &mut keys.last_mut().expect("just pushed").1
            }
        };
        key.columns.push(row.get("column_name"));
        key.referenced_columns.push(row.get("referenced_column"));
    }
    for (table, key) in keys {
        tables[table].foreign_keys.push(key);
    }
    for row in query(DELETE_TRIGGERS).fetch_all(&mut *connection).await? {
        if let Some(table) = table_of(&row) {
            tables[table].delete_triggers.push(row.get("name"));
        }
    }
    Ok(Schema::new(tables, Some(Kind::Mysql)))
}

/// How a table is partitioned, from `information_schema.partitions`: `RANGE COLUMNS` is a range
/// on its columns (`"entered_at"`, `"a","b"`); a `RANGE` over one function of one column
/// (`to_days("entered_at")`) is a range on that column through the function. Any other
/// expression is one part with no column.
fn partition_key(method: &str, expression: &str) -> PartitionKey {
    let method = method.to_ascii_lowercase();
    let strategy = method.strip_suffix(" columns").unwrap_or(&method).to_owned();
    // Quoted as the session's `sql_mode` quotes: the tool's sessions read `"` as a quote.
    let column = |part: &str| {
        let part = part.trim();
        let quoted = ['`', '"'].into_iter().find_map(|quote| {
            let name = part.strip_prefix(quote)?.strip_suffix(quote)?;
            Some(name.replace(&format!("{quote}{quote}"), &quote.to_string()))
        });
        let name = quoted.unwrap_or_else(|| part.to_owned());
        let plain = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        plain.then_some(name)
    };
    let function_of_column = expression.trim().strip_suffix(')').and_then(|call| {
        let (function, argument) = call.split_once('(')?;
        let function = function.trim();
        let named = !function.is_empty() && function.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        Some((named.then(|| function.to_ascii_lowercase())?, column(argument)?))
    });
    match function_of_column {
        Some((function, column)) => PartitionKey { strategy, columns: vec![Some(column)], function: Some(function) },
        None => PartitionKey { strategy, columns: expression.split(',').map(column).collect(), function: None },
    }
}

#[cfg(test)]
mod tests {
    use super::partition_key;

    #[test]
    fn range_columns_and_a_function_of_one_column_are_ranges_on_the_column() {
        let columns = partition_key("RANGE COLUMNS", "`entered_at`");
        assert_eq!(
            (columns.strategy.as_str(), columns.columns, columns.function),
            ("range", vec![Some("entered_at".to_owned())], None)
        );
        let ansi = partition_key("RANGE COLUMNS", r#""entered_at""#);
        assert_eq!(ansi.columns, [Some("entered_at".to_owned())], "the tool's sessions quote with \"");
        let days = partition_key("RANGE", "to_days(`entered_at`)");
        assert_eq!((days.columns, days.function.as_deref()), (vec![Some("entered_at".to_owned())], Some("to_days")));
        assert!(partition_key("RANGE", "month(`entered_at`)").columns == [Some("entered_at".to_owned())]);
        assert!(!partition_key("RANGE", "month(`entered_at`)").is_range_on("entered_at"));
        assert_eq!(partition_key("RANGE", "`a` + `b`").columns, [None]);
        assert_eq!(partition_key("RANGE COLUMNS", "`a`,`b`").columns, [Some("a".to_owned()), Some("b".to_owned())]);
    }
}
