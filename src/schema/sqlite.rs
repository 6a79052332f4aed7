//! Reading the schema of a live SQLite database through its pragmas.

use sqlx::SqlitePool;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, query};

use super::{Column, ForeignKey, Index, OWN_TABLE_PREFIX, ReferentialAction, Schema, Table};
use crate::db::sql::KeyType;
use crate::db::{DbError, Kind};

pub(super) async fn introspect(pool: &SqlitePool) -> Result<Schema, DbError> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )
    .fetch_all(pool)
    .await?;
    // Every trigger in one read; a table's are picked from them.
    let triggers: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name")
            .fetch_all(pool)
            .await?;
    let mut tables = Vec::new();
    for name in names.into_iter().filter(|name| !name.starts_with(OWN_TABLE_PREFIX)) {
        let mut table = table(pool, name).await?;
        table.delete_triggers = (triggers.iter())
            .filter(|(_, on, sql)| on.eq_ignore_ascii_case(&table.name) && sql.as_deref().is_some_and(before_delete))
            .map(|(trigger, _, _)| trigger.clone())
            .collect();
        tables.push(table);
    }
    Ok(Schema::new(tables, Some(Kind::Sqlite)))
}

/// SQLite counts every change of its schema in `schema_version`.
pub(super) async fn version(pool: &SqlitePool) -> Result<String, DbError> {
    let version: i64 = sqlx::query_scalar("SELECT schema_version FROM pragma_schema_version").fetch_one(pool).await?;
    Ok(version.to_string())
}

/// Whether a `CREATE TRIGGER` statement fires before a delete: `DELETE ON` in its head (before
/// `BEGIN`), not after `AFTER` (SQLite's default is `BEFORE`) nor in `INSTEAD OF` (views).
fn before_delete(sql: &str) -> bool {
    let words: Vec<String> = sql
        .split(|c: char| c.is_whitespace() || c == '(' || c == ';')
        .filter(|word| !word.is_empty())
        .map(str::to_ascii_uppercase)
        .take_while(|word| word != "BEGIN")
        .collect();
    words.windows(3).any(|w| w[1] == "DELETE" && w[2] == "ON" && w[0] != "AFTER" && w[0] != "OF")
}

async fn table(pool: &SqlitePool, name: String) -> Result<Table, DbError> {
    let columns = query(r#"SELECT name, type, "notnull", pk FROM pragma_table_info(?) ORDER BY cid"#)
        .bind(&name)
        .fetch_all(pool)
        .await?;
    let mut primary_key: Vec<(i64, String)> =
        columns.iter().filter(|row| row.get::<i64, _>("pk") > 0).map(|row| (row.get("pk"), row.get("name"))).collect();
    primary_key.sort();
    let columns = columns
        .iter()
        .map(|row| {
            let data_type = row.get::<String, _>("type").to_lowercase();
            Column {
                name: row.get("name"),
                key_type: KeyType::of_declared(&data_type),
                data_type,
                nullable: row.get::<i64, _>("notnull") == 0 && row.get::<i64, _>("pk") == 0,
            }
        })
        .collect();
    Ok(Table {
        schema: None,
        partitioned: false,
        partition_key: None,
        off_search_path: false,
        delete_triggers: Vec::new(),
        foreign_keys: foreign_keys(pool, &name).await?,
        indexes: indexes(pool, &name).await?,
        primary_key: primary_key.into_iter().map(|(_, column)| column).collect(),
        columns,
        name,
    })
}

async fn foreign_keys(pool: &SqlitePool, table: &str) -> Result<Vec<ForeignKey>, DbError> {
    let rows = query(r#"SELECT id, "table", "from", "to", on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq"#)
        .bind(table)
        .fetch_all(pool)
        .await?;
    let mut keys: Vec<(i64, ForeignKey)> = Vec::new();
    for row in &rows {
        let id: i64 = row.get("id");
        if keys.last().is_none_or(|(last, _)| *last != id) {
            keys.push((id, new_foreign_key(row)));
        }
        let (_, key) = keys.last_mut().expect("pushed above");
        key.columns.push(row.get("from"));
        // `to` is NULL when the key references the parent's primary key implicitly.
        if let Some(to) = row.get::<Option<String>, _>("to") {
            key.referenced_columns.push(to);
        }
    }
    Ok(keys.into_iter().map(|(_, key)| key).collect())
}

fn new_foreign_key(row: &SqliteRow) -> ForeignKey {
    ForeignKey {
        name: None,
        columns: Vec::new(),
        referenced_schema: None,
        referenced_table: row.get("table"),
        referenced_columns: Vec::new(),
        on_delete: referential_action(&row.get::<String, _>("on_delete")),
    }
}

fn referential_action(text: &str) -> ReferentialAction {
    match text.to_ascii_uppercase().as_str() {
        "CASCADE" => ReferentialAction::Cascade,
        "SET NULL" => ReferentialAction::SetNull,
        "SET DEFAULT" => ReferentialAction::SetDefault,
        "RESTRICT" => ReferentialAction::Restrict,
        _ => ReferentialAction::NoAction,
    }
}

async fn indexes(pool: &SqlitePool, table: &str) -> Result<Vec<Index>, DbError> {
    let list = query(r#"SELECT name, "unique", partial FROM pragma_index_list(?) ORDER BY seq"#)
        .bind(table)
        .fetch_all(pool)
        .await?;
    let mut indexes = Vec::new();
    for row in list {
        let name: String = row.get("name");
        // Expression columns have no name; keep the plain columns up to the first of them.
        let columns: Vec<Option<String>> = sqlx::query_scalar("SELECT name FROM pragma_index_info(?) ORDER BY seqno")
            .bind(&name)
            .fetch_all(pool)
            .await?;
        let partial = row.get::<i64, _>("partial") != 0;
        let not_null_predicate = if partial {
            let create: Option<String> =
                sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?")
                    .bind(&name)
                    .fetch_one(pool)
                    .await?;
            create.map_or_else(Vec::new, |sql| super::predicate::not_null_columns_of_index(Kind::Sqlite, &sql))
        } else {
            Vec::new()
        };
        indexes.push(Index {
            expression: columns.iter().any(Option::is_none),
            columns: columns.into_iter().map_while(|column| column).collect(),
            unique: row.get::<i64, _>("unique") != 0,
            partial,
            not_null_predicate,
            invalid: false,
            name: Some(name),
        });
    }
    Ok(indexes)
}

#[cfg(test)]
mod tests {
    use super::before_delete;

    #[test]
    fn a_trigger_fires_before_a_delete_unless_after_or_instead_of() {
        assert!(before_delete("CREATE TRIGGER g BEFORE DELETE ON child BEGIN SELECT RAISE(ABORT, 'no'); END"));
        assert!(before_delete("create trigger g delete on child begin select 1; end"));
        assert!(!before_delete("CREATE TRIGGER g AFTER DELETE ON child BEGIN SELECT 1; END"));
        assert!(!before_delete("CREATE TRIGGER g INSTEAD OF DELETE ON v BEGIN SELECT 1; END"));
        assert!(!before_delete("CREATE TRIGGER g BEFORE UPDATE ON child BEGIN DELETE FROM t; END"));
    }
}
