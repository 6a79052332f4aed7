//! `cascade_option`: the runtime values of `[options]` (rate limits), which running deletions
//! read again while they run.

use indexmap::IndexMap;

use super::{Database, DbError, migrate};

/// The option values stored in `cascade_option`; none when the table does not exist yet (it
/// is created on first write, and a read-only command never creates it).
pub async fn overrides(database: &Database) -> Result<IndexMap<String, f64>, DbError> {
    if !database.table_exists("cascade_option").await? {
        return Ok(IndexMap::new());
    }
    let mut options = database.sql();
    options.push("SELECT name, ").text("value").push(" AS value FROM cascade_option");
    let rows = database.fetch_records(&options.finish()).await?;
    rows.iter().map(|row| Ok((row.text("name")?, row.parsed("value")?))).collect()
}

/// Removes an option's runtime value, so the config's applies again; whether there was one.
pub async fn unset(database: &Database, name: &str) -> Result<bool, DbError> {
    if !database.table_exists("cascade_option").await? {
        return Ok(false);
    }
    let mut sql = database.sql();
    sql.push("DELETE FROM cascade_option WHERE name = ").bind_text(name);
    Ok(database.execute_alone(&sql.finish()).await? > 0)
}

/// Stores an option's runtime value (creating the tool's tables if needed).
pub async fn set(database: &Database, name: &str, value: f64) -> Result<(), DbError> {
    migrate(database).await?;
    let mut sql = database.sql();
    sql.push("INSERT INTO cascade_option (name, value) VALUES (").bind_text(name);
    sql.push(", CAST(").bind_text(&value.to_string()).push(" AS ").push(database.backend().double_type()).push("))");
    database.backend().on_duplicate(&mut sql, &["name"], &["value"], "updated_at = CURRENT_TIMESTAMP");
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}
