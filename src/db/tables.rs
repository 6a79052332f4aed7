//! Reading and writing the tool's own tables that every deletion uses: the audit of runs
//! (`cascade_run`) and the runtime values of options (`cascade_option`).

use indexmap::IndexMap;

use super::sql::{Param, Statement};
use super::{Database, DbError, migrate};

/// Records the start of a deletion in `cascade_run`; its id.
pub async fn start_run(
    database: &Database,
    actor: &str,
    command: &str,
    root_model: &str,
    root_ids: &[String],
) -> Result<i64, DbError> {
    let mut sql = database.sql();
    sql.push("INSERT INTO cascade_run (actor, command, root_model, root_ids, outcome) VALUES (");
    let ids = serde_json::Value::from_iter(root_ids.iter().map(|id| serde_json::json!(id))).to_string();
    sql.binds([actor, command, root_model, &ids, "running"].map(Param::text));
    sql.push(") RETURNING CAST(id AS TEXT)");
    let rows = database.fetch_texts_alone(&sql.finish()).await?;
    Ok(rows.first().and_then(|row| row.first().cloned().flatten()).and_then(|id| id.parse().ok()).unwrap_or(0))
}

/// Records how a deletion ended: rows per model (JSON), its outcome and error.
pub async fn finish_run(
    database: &Database,
    id: i64,
    rows: &str,
    outcome: &str,
    error: Option<&str>,
) -> Result<(), DbError> {
    let mut sql = database.sql();
    sql.push("UPDATE cascade_run SET finished_at = CURRENT_TIMESTAMP, rows = ").bind_text(rows);
    sql.push(", outcome = ").bind_text(outcome).push(", error = ");
    match error {
        Some(error) => sql.bind_text(error),
        None => sql.push("NULL"),
    };
    sql.push(" WHERE id = ").bind(Param::integer(id));
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}

/// The option values stored in `cascade_option`; none when the table does not exist yet (it
/// is created on first write, and a read-only command never creates it).
pub async fn option_overrides(database: &Database) -> Result<IndexMap<String, f64>, DbError> {
    if !database.table_exists("cascade_option").await? {
        return Ok(IndexMap::new());
    }
    let options = Statement {
        sql: "SELECT name, CAST(value AS TEXT) AS value FROM cascade_option".to_owned(),
        params: Vec::new(),
    };
    let rows = database.fetch_texts(&options).await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let mut fields = row.into_iter();
            let (name, value) = (fields.next().flatten()?, fields.next().flatten()?);
            Some((name, value.trim().parse().ok()?))
        })
        .collect())
}

/// Stores an option's runtime value (creating the tool's tables if needed).
pub async fn set_option(database: &Database, name: &str, value: f64) -> Result<(), DbError> {
    migrate(database).await?;
    let mut sql = database.sql();
    sql.push("INSERT INTO cascade_option (name, value) VALUES (").bind_text(name);
    sql.push(", CAST(").bind_text(&value.to_string());
    sql.push(" AS DOUBLE PRECISION)) ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = CURRENT_TIMESTAMP");
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}
