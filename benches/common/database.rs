//! The benches' own statements, through cascade's connections (the settings the tool runs with):
//! fresh PostgreSQL databases, the durability of commits, and the bench's arguments.

use cascade::db::Statement;
use cascade::db::{Access, Database, Kind};

/// A statement without parameters.
pub fn statement(sql: &str) -> Statement {
    Statement { sql: sql.to_owned(), params: Vec::new() }
}

/// An empty database `name` on the PostgreSQL server at `server`; its URL.
pub async fn fresh_database(server: &str, name: &str) -> String {
    let admin = Database::connect(server, Access::ReadWrite).await.expect("connect to the server");
    for sql in [format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), format!("CREATE DATABASE {name}")] {
        admin.execute(&statement(&sql)).await.expect("create the bench database");
    }
    admin.close().await;
    crate::server::with_database(server, name)
}

/// How durable a commit is, read through `database` (a connection as cascade opens it): the
/// server's version, `fsync` and `synchronous_commit` on PostgreSQL; `journal_mode` and
/// `synchronous` on SQLite.
pub async fn durability(database: &Database) -> String {
    let (queries, names): (&[&str], &[&str]) = match database.kind() {
        Kind::Postgres => (
            &[
                "SELECT current_setting('server_version')",
                "SELECT current_setting('fsync')",
                "SELECT current_setting('synchronous_commit')",
            ],
            &["server_version", "fsync", "synchronous_commit"],
        ),
        Kind::Sqlite => (
            &[
                "SELECT sqlite_version()",
                "PRAGMA journal_mode",
                "SELECT CAST(synchronous AS TEXT) FROM pragma_synchronous",
            ],
            &["sqlite_version", "journal_mode", "synchronous"],
        ),
        Kind::Mysql => (
            &[
                "SELECT @@version",
                "SELECT CAST(@@innodb_flush_log_at_trx_commit AS CHAR)",
                "SELECT CAST(@@sync_binlog AS CHAR)",
            ],
            &["server_version", "innodb_flush_log_at_trx_commit", "sync_binlog"],
        ),
    };
    let mut values = Vec::new();
    for (query, name) in queries.iter().zip(names) {
        let rows = database.fetch_texts(&statement(query)).await.expect("a setting");
        let mut value = cascade::db::first_text(&rows).unwrap_or("?").to_owned();
        if *name == "synchronous" {
            // SQLite answers a number.
            value =
                ["OFF", "NORMAL", "FULL", "EXTRA"].get(value.parse::<usize>().unwrap_or(9)).unwrap_or(&"?").to_string();
        }
        values.push(format!("{name}={value}"));
    }
    values.join(", ")
}
