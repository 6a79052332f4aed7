//! `cascade_checkpoint`: named positions a resumable run keeps (the last root key a clean-up's
//! scan deleted, the partition a prune is detaching), each saved in the transaction whose work it
//! records.

use crate::db::sql::{Param, SqlBuilder};
use crate::db::{Database, DbError, Transaction, migrate};

/// Sets the checkpoint `name` to `position` (creating or moving it), in the transaction whose
/// work it records.
pub(crate) async fn save(transaction: &mut Transaction, name: &str, position: &str) -> Result<(), DbError> {
    let mut sql = SqlBuilder::new(transaction.backend());
    sql.push("INSERT INTO cascade_checkpoint (name, position) VALUES (")
        .binds([Param::text(name), Param::text(position)]);
    sql.push(")");
    transaction.backend().on_duplicate(&mut sql, &["name"], &["position"], "updated_at = CURRENT_TIMESTAMP");
    transaction.execute(&sql.finish()).await?;
    Ok(())
}

/// [`save`] in a transaction of its own (creating the tool's tables if needed).
pub(crate) async fn save_alone(database: &Database, name: &str, position: &str) -> Result<(), DbError> {
    migrate(database).await?;
    let mut transaction = database.begin_write().await?;
    save(&mut transaction, name, position).await?;
    transaction.commit().await
}

/// The position of the checkpoint `name`, if one is kept.
pub(crate) async fn position(database: &Database, name: &str) -> Result<Option<String>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT position FROM cascade_checkpoint WHERE name = ").bind_text(name);
    Ok(database.fetch_texts(&sql.finish()).await?.into_iter().next().and_then(|row| row.into_iter().next().flatten()))
}

/// Every checkpoint whose name starts with `prefix`: (name, position), by name.
pub(crate) async fn with_prefix(database: &Database, prefix: &str) -> Result<Vec<(String, String)>, DbError> {
    if !database.table_exists("cascade_checkpoint").await? {
        return Ok(Vec::new());
    }
    let mut sql = database.sql();
    sql.push("SELECT name, position FROM cascade_checkpoint WHERE substr(name, 1, CAST(");
    sql.bind(Param::integer(i64::try_from(prefix.chars().count()).unwrap_or(i64::MAX))).push(" AS INTEGER)) = ");
    sql.bind_text(prefix).push(" ORDER BY name");
    database.fetch_pairs(&sql.finish()).await
}

/// Removes the checkpoint `name` inside `transaction`.
pub(crate) async fn remove(transaction: &mut Transaction, name: &str) -> Result<(), DbError> {
    let mut sql = SqlBuilder::new(transaction.backend());
    sql.push("DELETE FROM cascade_checkpoint WHERE name = ").bind_text(name);
    transaction.execute(&sql.finish()).await?;
    Ok(())
}

/// [`remove`] in a transaction of its own.
pub(crate) async fn remove_alone(database: &Database, name: &str) -> Result<(), DbError> {
    let mut transaction = database.begin_write().await?;
    remove(&mut transaction, name).await?;
    transaction.commit().await
}
