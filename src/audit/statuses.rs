//! `cascade_root_status`: the status each root row had before a deletion marked it in progress,
//! kept from the marking transaction until the deletion succeeds, so the archive holds the row
//! as it was (and a rerun after an interruption still knows it).

use indexmap::IndexMap;

use crate::db::Keys;
use crate::db::sql::{KeyType, Param, SqlBuilder};
use crate::db::{Database, DbError, Transaction};

/// Keeps the statuses root rows of `table` had before the deletion marked them in progress
/// (key → status as JSON), in the marking transaction; a status kept by an earlier, interrupted
/// run of the same rows stays.
pub(crate) async fn remember(
    transaction: &mut Transaction,
    table: &str,
    statuses: &[(String, String)],
) -> Result<(), DbError> {
    if statuses.is_empty() {
        return Ok(());
    }
    let backend = transaction.backend();
    let records: Vec<serde_json::Value> =
        statuses.iter().map(|(key, status)| serde_json::json!({ "key": key, "status": status })).collect();
    let mut sql = SqlBuilder::new(backend);
    sql.push("INSERT INTO cascade_root_status (root_table, root_key, status) SELECT ").bind_text(table);
    sql.push(", ").push(&backend.json_field("key")).push(", ").push(&backend.json_field("status")).push(" FROM ");
    backend.json_records(&mut sql, Param::json_records(records), &["key", "status"]);
    sql.push(" WHERE true");
    backend.on_duplicate(&mut sql, &["root_table", "root_key"], &[], "");
    transaction.execute(&sql.finish()).await?;
    Ok(())
}

/// The statuses kept for root rows `keys` of `table` (key → status as JSON).
pub(crate) async fn remembered(
    database: &Database,
    table: &str,
    keys: &[String],
) -> Result<IndexMap<String, String>, DbError> {
    let mut sql = database.sql();
    sql.push("SELECT root_key, status FROM cascade_root_status WHERE root_table = ").bind_text(table);
    sql.push(" AND ").key_list("root_key", &KeyType::Text, Param::Keys(Keys::Texts(keys.to_vec())));
    Ok(database.fetch_pairs(&sql.finish()).await?.into_iter().collect())
}

/// Forgets the statuses kept for root rows `keys` of `table` once they are deleted.
pub(crate) async fn forget(database: &Database, table: &str, keys: &[String]) -> Result<(), DbError> {
    let mut sql = database.sql();
    sql.push("DELETE FROM cascade_root_status WHERE root_table = ").bind_text(table);
    sql.push(" AND ").key_list("root_key", &KeyType::Text, Param::Keys(Keys::Texts(keys.to_vec())));
    database.execute_alone(&sql.finish()).await?;
    Ok(())
}
