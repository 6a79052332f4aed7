//! `cascade_outbox_name`: the integer code of each scope, category and model name an outbox row
//! holds (migration 9). A name is registered before the first row that holds it is written and
//! keeps its code for good, so rows only ever name codes that exist.

use super::sql::{Param, SqlBuilder};
use super::{Database, DbError};

/// `(SELECT code ...)`: the code of `name`, NULL while it is not registered.
pub(crate) fn push_code(sql: &mut SqlBuilder, name: &str) {
    sql.push("(SELECT code FROM cascade_outbox_name WHERE name = ").bind_text(name).push(")");
}

/// `(SELECT code ... IN (...))`: the codes of `names` that are registered.
pub(crate) fn push_codes<'a>(sql: &mut SqlBuilder, names: impl IntoIterator<Item = &'a String>) {
    sql.push("(SELECT code FROM cascade_outbox_name WHERE name IN (");
    sql.binds(names.into_iter().map(|name| Param::text(name))).push("))");
}

/// Registers `names` (each once; a name already there keeps its code), in a statement that
/// commits by itself: two writers registering the same name at once both go on.
pub(crate) async fn register(database: &Database, names: &[&str]) -> Result<(), DbError> {
    if names.is_empty() {
        return Ok(());
    }
    let mut sql = database.sql();
    sql.push("INSERT INTO cascade_outbox_name (name) VALUES ");
    for (index, name) in names.iter().enumerate() {
        sql.push(if index == 0 { "(" } else { ", (" }).bind_text(name).push(")");
    }
    sql.push(" ON CONFLICT (name) DO NOTHING");
    database.execute(&sql.finish()).await.map(drop)
}
