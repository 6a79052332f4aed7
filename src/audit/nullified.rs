//! `cascade_nullified_row`: the rows a run set to NULL, by model and key, kept while it runs, so
//! that a row it nullifies and later deletes is reported deleted only, and a row that two
//! relations nullify is counted once (as the plan counts them).

use super::outcome::RUNNING;
use crate::db::sql::{Param, SqlBuilder, Statement};
use crate::db::{Backend, Database, DbError, Transaction};

/// How many recorded keys one read returns.
pub(crate) const KEYS_PER_READ: u64 = 1_000;

/// Records that the run `run_id` set the rows `keys` (as text) of `model` to NULL, in the
/// transaction that did (a row recorded before stays recorded once).
pub(crate) async fn record(
    transaction: &mut Transaction,
    run_id: i64,
    model: &str,
    keys: Vec<String>,
) -> Result<(), DbError> {
    if keys.is_empty() {
        return Ok(());
    }
    let records: Vec<serde_json::Value> = keys.into_iter().map(|key| serde_json::json!({ "key": key })).collect();
    let statement =
        record_statement(transaction.backend(), Param::integer(run_id), model, Param::json_records(records));
    transaction.execute(&statement).await?;
    Ok(())
}

/// The insert of [`record`]: `keys` a JSON array of `{"key"}` objects.
pub(crate) fn record_statement(backend: &'static dyn Backend, run_id: Param, model: &str, keys: Param) -> Statement {
    let mut sql = SqlBuilder::new(backend);
    sql.push("INSERT INTO cascade_nullified_row (run_id, model, row_key) SELECT ").bind(run_id);
    sql.push(", ").bind_text(model).push(", ").push(&backend.json_field("key")).push(" FROM ");
    backend.json_records(&mut sql, keys, &["key"]);
    sql.push(" WHERE true");
    backend.on_duplicate(&mut sql, &["run_id", "model", "row_key"], &[], "");
    sql.finish()
}

/// Up to [`KEYS_PER_READ`] keys of `model` that the run `run_id` recorded, in order, after the
/// key `after`.
pub(crate) async fn recorded(
    database: &Database,
    run_id: i64,
    model: &str,
    after: Option<&str>,
) -> Result<Vec<String>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT row_key FROM cascade_nullified_row WHERE run_id = ").bind(Param::integer(run_id));
    sql.push(" AND model = ").bind_text(model);
    if let Some(after) = after {
        sql.push(" AND row_key > ").bind_text(after);
    }
    sql.push(" ORDER BY row_key LIMIT ").push(&KEYS_PER_READ.to_string());
    Ok(crate::db::first_column(database.fetch_texts(&sql.finish()).await?))
}

/// Forgets what the run `run_id` recorded, and what runs that no longer run recorded (a run
/// killed before it could forget its own).
pub(crate) async fn forget(database: &Database, run_id: i64) -> Result<(), DbError> {
    let mut sql = database.sql();
    sql.push("DELETE FROM cascade_nullified_row WHERE run_id = ").bind(Param::integer(run_id));
    sql.push(" OR run_id IN (SELECT id FROM cascade_run WHERE outcome <> ").bind_text(RUNNING);
    sql.push(")");
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}
