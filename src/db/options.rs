//! Runtime values of `[options]`: rows of the table `cascade_option` override the config.

use indexmap::IndexMap;
use sqlx::Row;

use super::sql::{Param, SqlBuilder, SqlValue};
use super::{Database, DbError};
use crate::config::Config;

const OPTION_TABLE_EXISTS_SQLITE: &str =
    "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'cascade_option'";
const OPTION_TABLE_EXISTS_POSTGRES: &str = "SELECT COUNT(*) FROM pg_class WHERE oid = to_regclass('cascade_option')";
const OPTIONS: &str = "SELECT name, CAST(value AS TEXT) AS value FROM cascade_option";

/// The overrides stored in the database; none when the table does not exist yet (it is created
/// on first use, and a read-only command never creates it).
pub async fn read_overrides(database: &Database) -> Result<IndexMap<String, f64>, DbError> {
    let rows = match database {
        Database::Sqlite(pool) => {
            let exists: i64 = sqlx::query_scalar(OPTION_TABLE_EXISTS_SQLITE).fetch_one(pool).await?;
            if exists == 0 {
                return Ok(IndexMap::new());
            }
            sqlx::query(OPTIONS)
                .fetch_all(pool)
                .await?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect::<Vec<(String, String)>>()
        }
        Database::Postgres(pool) => {
            let exists: i64 = sqlx::query_scalar(OPTION_TABLE_EXISTS_POSTGRES).fetch_one(pool).await?;
            if exists == 0 {
                return Ok(IndexMap::new());
            }
            sqlx::query(OPTIONS).fetch_all(pool).await?.iter().map(|r| (r.get(0), r.get(1))).collect()
        }
    };
    Ok(rows.into_iter().filter_map(|(name, value)| Some((name, value.trim().parse().ok()?))).collect())
}

/// Every option's current value: the config's, overridden by `cascade_option`.
pub async fn current(config: &Config, database: &Database) -> Result<IndexMap<String, f64>, DbError> {
    let mut values = config.option_values();
    values.extend(read_overrides(database).await?);
    Ok(values)
}

/// Stores an option's runtime value (creating the tool's tables if needed).
pub async fn set(database: &Database, name: &str, value: f64) -> Result<(), DbError> {
    super::tables::ensure(database).await?;
    let mut sql = SqlBuilder::new(database.dialect());
    sql.push("INSERT INTO cascade_option (name, value) VALUES (").bind(Param::Value(SqlValue::Text(name.to_owned())));
    sql.push(", CAST(").bind(Param::Value(SqlValue::Text(value.to_string())));
    sql.push(" AS DOUBLE PRECISION)) ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = CURRENT_TIMESTAMP");
    let mut transaction = database.begin_write().await?;
    transaction.execute(&sql.finish()).await?;
    transaction.commit().await
}
