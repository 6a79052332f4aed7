//! The tool's own tables are versioned: `cascade_schema_version` holds one row per applied
//! migration, and every command that writes brings the tables to the newest version first.

use sha2::{Digest, Sha256};

use super::sql::{Param, Statement};
use std::sync::atomic::Ordering;

use super::driver::WriterLock;
use super::{Database, DbError};

/// The table recording which migrations have run.
pub const SCHEMA_VERSION_TABLE: &str = "cascade_schema_version";

const CREATE_VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS cascade_schema_version (
    version INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
)";

/// Creates or upgrades the tool's tables, in one transaction (others wait for it). Idempotent.
/// Returns the version the tables are at.
pub async fn migrate(database: &Database) -> Result<i64, DbError> {
    let migrations = database.driver.migrations();
    let known = migrations.len() as i64;
    if database.migrated.load(Ordering::SeqCst) {
        return Ok(known);
    }
    let mut transaction = database.begin_write().await?;
    transaction.lock_writers(WriterLock::Migration).await?;
    transaction.execute_script(CREATE_VERSION_TABLE).await?;
    let current = parse_version(&transaction.fetch_texts(&max_version(database)).await?);
    if current > known {
        transaction.rollback().await?;
        return Err(DbError::NewerTables { found: current, known });
    }
    if current < known {
        let tables = created_tables(migrations);
        if let Some(lock) = database.driver.lock_for_migration(&tables) {
            transaction.execute_script(&lock).await?;
        }
    }
    for (version, script) in (1..).zip(migrations).skip(usize::try_from(current).unwrap_or(0)) {
        transaction.execute_script(script).await?;
        let mut record = database.sql();
        record.push("INSERT INTO cascade_schema_version (version) VALUES (").bind(Param::integer(version)).push(")");
        transaction.execute(&record.finish()).await?;
        tracing::debug!(version, "migrated the tool's tables");
    }
    // Refused, the transaction is dropped: rolled back.
    if known >= database.driver.checksummed_from() {
        check_checksums(database, &mut transaction, migrations).await?;
    }
    transaction.commit().await?;
    database.migrated.store(true, Ordering::SeqCst);
    Ok(known)
}

/// A migration script's checksum: its SHA-256, as lowercase hex.
pub fn checksum(script: &str) -> String {
    format!("{:x}", Sha256::digest(script.as_bytes()))
}

/// Writes the checksum of each applied migration that has none (those applied before migration
/// 11, and those just applied), and refuses the database when an applied migration's checksum is
/// not this build's script's: another build (a development one, with an edited migration)
/// migrated it, and its tables may not be what this build expects.
async fn check_checksums(
    database: &Database,
    transaction: &mut super::Transaction,
    migrations: &[&'static str],
) -> Result<(), DbError> {
    let mut recorded = database.sql();
    recorded.push("SELECT ").text("version");
    recorded.push(" AS version, checksum FROM cascade_schema_version ORDER BY cascade_schema_version.version");
    for row in transaction.fetch_records(&recorded.finish()).await? {
        let version: i64 = row.parsed("version")?;
        let Some(script) = usize::try_from(version - 1).ok().and_then(|index| migrations.get(index)) else {
            continue;
        };
        let expected = checksum(script);
        match row.optional_text("checksum")? {
            Some(found) if found != expected => return Err(DbError::EditedMigration { version, found, expected }),
            Some(_) => {}
            None => {
                let mut record = database.sql();
                record.push("UPDATE cascade_schema_version SET checksum = ").bind_text(&expected);
                record.push(" WHERE version = ").bind(Param::integer(version));
                transaction.execute(&record.finish()).await?;
            }
        }
    }
    Ok(())
}

/// Every table the migrations create, in the order they first do: the tables a pending
/// migration may move rows out of.
fn created_tables(migrations: &[&'static str]) -> Vec<&'static str> {
    let mut tables = Vec::new();
    for script in migrations {
        for (at, _) in script.match_indices("CREATE TABLE ") {
            let rest = &script[at + "CREATE TABLE ".len()..];
            let rest = rest.strip_prefix("IF NOT EXISTS ").unwrap_or(rest);
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            if end > 0 && !tables.contains(&&rest[..end]) {
                tables.push(&rest[..end]);
            }
        }
    }
    tables
}

/// The version the tool's tables are at: 0 before the first migration.
pub async fn schema_version(database: &Database) -> Result<i64, DbError> {
    if !database.table_exists(SCHEMA_VERSION_TABLE).await? {
        return Ok(0);
    }
    Ok(parse_version(&database.fetch_texts(&max_version(database)).await?))
}

fn max_version(database: &Database) -> Statement {
    let mut sql = database.sql();
    sql.push("SELECT ").text("MAX(version)").push(" FROM cascade_schema_version");
    sql.finish()
}

fn parse_version(rows: &super::TextRows) -> i64 {
    super::first_text(rows).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::created_tables;

    #[test]
    fn the_tables_to_lock_are_read_from_the_migrations() {
        let scripts = ["CREATE TABLE IF NOT EXISTS a_b (x INT);\nCREATE TABLE c(y INT);", "CREATE TABLE a_b (z INT);"];
        assert_eq!(created_tables(&scripts), ["a_b", "c"]);
    }
}
