//! The tool's own tables (`cascade_*`), created on first use by the commands that write.

use super::sql::{Param, SqlBuilder, SqlValue};
use super::{Database, DbError};

const SQLITE: &str = include_str!("../../schemas/tables.sqlite.sql");
const POSTGRES: &str = include_str!("../../schemas/tables.postgres.sql");

/// Creates the tool's tables that do not exist yet. Idempotent.
pub async fn ensure(database: &Database) -> Result<(), DbError> {
    match database {
        Database::Sqlite(pool) => sqlx::raw_sql(SQLITE).execute(pool).await?,
        Database::Postgres(pool) => {
            // Two processes creating the tables at once would race on the catalog; an advisory
            // lock makes the second wait for the first.
            let mut transaction = pool.begin().await?;
            sqlx::query("SELECT pg_advisory_xact_lock(4242424242)").execute(&mut *transaction).await?;
            sqlx::raw_sql(POSTGRES).execute(&mut *transaction).await?;
            transaction.commit().await?;
            return Ok(());
        }
    };
    Ok(())
}

/// Records the start of a deletion in `cascade_run`; its id.
pub async fn start_run(
    database: &Database,
    actor: &str,
    command: &str,
    root_model: &str,
    root_ids: &[String],
) -> Result<i64, DbError> {
    let mut sql = SqlBuilder::new(database.dialect());
    sql.push("INSERT INTO cascade_run (actor, command, root_model, root_ids, outcome) VALUES (");
    let ids = serde_json::to_string(root_ids).expect("ids serialise");
    sql.binds([actor, command, root_model, &ids, "running"].map(|v| Param::Value(SqlValue::Text(v.to_owned()))));
    sql.push(") RETURNING CAST(id AS TEXT)");
    let mut transaction = database.begin_write().await?;
    let rows = transaction.fetch_texts(&sql.finish()).await?;
    transaction.commit().await?;
    Ok(rows.first().and_then(|row| row.first().cloned().flatten()).and_then(|id| id.parse().ok()).unwrap_or(0))
}

/// Records how a deletion ended: rows per model (JSON), `succeeded`, `failed` or `interrupted`.
pub async fn finish_run(
    database: &Database,
    id: i64,
    rows: &str,
    outcome: &str,
    error: Option<&str>,
) -> Result<(), DbError> {
    let mut sql = SqlBuilder::new(database.dialect());
    sql.push("UPDATE cascade_run SET finished_at = CURRENT_TIMESTAMP, rows = ").bind(text(rows));
    sql.push(", outcome = ").bind(text(outcome)).push(", error = ");
    match error {
        Some(error) => sql.bind(text(error)),
        None => sql.push("NULL"),
    };
    sql.push(" WHERE id = ").bind(Param::Value(SqlValue::Integer(id)));
    let mut transaction = database.begin_write().await?;
    transaction.execute(&sql.finish()).await?;
    transaction.commit().await
}

fn text(value: &str) -> Param {
    Param::Value(SqlValue::Text(value.to_owned()))
}
