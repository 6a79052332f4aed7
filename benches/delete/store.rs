//! Where the bench's databases live: SQLite files in a temporary directory, or databases of a
//! PostgreSQL or MariaDB server. Each tree is built once per kind of foreign keys and copied for
//! every method (built again on MariaDB, which copies no database), so that each method starts
//! from the same fresh database.

use std::path::PathBuf;
use std::str::FromStr;

use sqlx::mysql::MySqlConnection;
use sqlx::postgres::PgConnection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Connection, Executor};

use crate::server::{Server, with_database};
use crate::tree::{Dialect, Keys, Tree};

/// A connection to either database, with the few operations the bench needs.
pub enum Conn {
    Sqlite(SqliteConnection),
    Postgres(PgConnection),
    Mysql(MySqlConnection),
}

macro_rules! on_either {
    ($conn:expr, $c:ident => $body:expr) => {
        match $conn {
            Conn::Sqlite($c) => $body,
            Conn::Postgres($c) => $body,
            Conn::Mysql($c) => $body,
        }
    };
}

impl Conn {
    /// Connects with sqlx's defaults (on SQLite: foreign keys enforced, the file's own journal
    /// mode, `synchronous` as SQLite's default).
    pub async fn connect(url: &str) -> Self {
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url).expect("a SQLite URL");
            Conn::Sqlite(SqliteConnection::connect_with(&options).await.expect("open the SQLite file"))
        } else if url.starts_with("mysql:") {
            Conn::Mysql(MySqlConnection::connect(url).await.expect("connect to MariaDB"))
        } else {
            Conn::Postgres(PgConnection::connect(url).await.expect("connect to PostgreSQL"))
        }
    }

    /// Runs `sql` (one statement, or several without parameters); the rows it changed.
    pub async fn execute(&mut self, sql: &str) -> u64 {
        let sql = AssertSqlSafe(sql.to_owned());
        on_either!(self, c => sqlx::raw_sql(sql).execute(&mut *c).await.map(|r| r.rows_affected()))
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// Runs `sql` with `keys` bound as its one parameter (see [`Dialect::in_keys`]).
    pub async fn execute_keys(&mut self, sql: &str, keys: &[i64]) -> u64 {
        let sql = AssertSqlSafe(sql.to_owned());
        let json = || serde_json::to_string(keys).expect("a JSON array");
        let result = match self {
            Conn::Sqlite(c) => sqlx::query(sql).bind(json()).execute(&mut *c).await.map(|r| r.rows_affected()),
            Conn::Mysql(c) => sqlx::query(sql).bind(json()).execute(&mut *c).await.map(|r| r.rows_affected()),
            Conn::Postgres(c) => sqlx::query(sql).bind(keys.to_vec()).execute(&mut *c).await.map(|r| r.rows_affected()),
        };
        result.unwrap_or_else(|error| panic!("{error}"))
    }

    /// The first column of every row of `sql`, as integers.
    pub async fn integers(&mut self, sql: &str) -> Vec<i64> {
        let sql = AssertSqlSafe(sql.to_owned());
        on_either!(self, c => sqlx::query_scalar::<_, i64>(sql).fetch_all(&mut *c).await)
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// One text value.
    pub async fn text(&mut self, sql: &str) -> String {
        let sql = AssertSqlSafe(sql.to_owned());
        on_either!(self, c => sqlx::query_scalar::<_, String>(sql).fetch_one(&mut *c).await)
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// The results of `COUNT(*)` queries.
    pub async fn counts(&mut self, queries: &[String]) -> Vec<u64> {
        let mut counts = Vec::new();
        for query in queries {
            let count = self.integers(query).await[0];
            counts.push(u64::try_from(count).expect("a count"));
        }
        counts
    }

    pub async fn close(self) {
        on_either!(self, c => c.close().await).expect("close");
    }
}

/// A database of the bench: its URL and where it is.
pub struct Database {
    pub url: String,
    name: String,
    /// What built it, on MariaDB: its copies are built the same way.
    script: Option<String>,
}

/// The SQLite files of a temporary directory, or a PostgreSQL or MariaDB server.
pub enum Store {
    Sqlite(PathBuf),
    Postgres(Server),
    Mysql(Server),
}

impl Store {
    pub fn name(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "SQLite",
            Store::Postgres(_) => "PostgreSQL",
            Store::Mysql(_) => "MariaDB",
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Store::Sqlite(_) => Dialect::Sqlite,
            Store::Postgres(_) => Dialect::Postgres,
            Store::Mysql(_) => Dialect::Mysql,
        }
    }

    fn database(&self, name: &str) -> Database {
        let url = match self {
            Store::Sqlite(dir) => format!("sqlite://{}", dir.join(format!("{name}.db")).display()),
            Store::Postgres(server) | Store::Mysql(server) => with_database(&server.url, name),
        };
        Database { url, name: name.to_owned(), script: None }
    }

    fn path(&self, database: &Database) -> PathBuf {
        let Store::Sqlite(dir) = self else { unreachable!("a SQLite store") };
        dir.join(format!("{}.db", database.name))
    }

    /// Builds `tree` with `keys` as the database `name`, in one transaction.
    pub async fn build(&self, name: &str, tree: &Tree, keys: Keys) -> Database {
        let mut database = self.database(name);
        let (create, after) = tree.schema(self.dialect(), keys);
        let inserts = tree.inserts(self.dialect());
        match self {
            Store::Sqlite(_) => {
                // Loaded without a journal or syncs; the file keeps SQLite's default rollback
                // journal (`journal_mode = OFF` does not persist), and is synced when copied.
                let options = SqliteConnectOptions::new()
                    .filename(self.path(&database))
                    .create_if_missing(true)
                    .foreign_keys(false)
                    .journal_mode(SqliteJournalMode::Off)
                    .synchronous(SqliteSynchronous::Off);
                let mut connection = Conn::Sqlite(SqliteConnection::connect_with(&options).await.expect("create"));
                connection.execute(&format!("BEGIN;\n{create}{inserts}{after}COMMIT;\n")).await;
                connection.close().await;
            }
            Store::Postgres(server) => {
                drop_database(&server.url, name).await;
                let mut admin = Conn::connect(&server.url).await;
                admin.execute(&format!("CREATE DATABASE {name}")).await;
                admin.close().await;
                let mut connection = Conn::connect(&database.url).await;
                connection.execute(&format!("BEGIN;\n{create}{inserts}COMMIT;\n")).await;
                connection.execute(&after).await;
                // Sets hint bits and the visibility map once, in the template, so that no method
                // pays for the first pass over freshly loaded rows.
                connection.execute("VACUUM ANALYZE").await;
                connection.close().await;
            }
            Store::Mysql(server) => {
                // Loaded with the checks off, the keys added unchecked; then the tables analyzed.
                let tables: Vec<&str> = tree.tables.iter().map(|table| table.name).collect();
                let script = format!(
                    "SET SESSION foreign_key_checks = 0, unique_checks = 0;\nBEGIN;\n{create}{inserts}COMMIT;\n{after}\
                     ANALYZE TABLE {};\n",
                    tables.join(", ")
                );
                mysql_build(server, &database, &script).await;
                database.script = Some(script);
            }
        }
        create_tool_tables(&database.url).await;
        database
    }

    /// A fresh copy of `template` named `name`, on disk before a method runs on it: a file copy
    /// synced on SQLite, `CREATE DATABASE ... TEMPLATE`, a checkpoint and `sync` on PostgreSQL.
    pub async fn copy(&self, template: &Database, name: &str) -> Database {
        let copy = self.database(name);
        match self {
            Store::Sqlite(_) => {
                let path = self.path(&copy);
                std::fs::copy(self.path(template), &path).expect("copy the SQLite file");
                std::fs::File::open(&path).and_then(|f| f.sync_all()).expect("sync the copy");
            }
            Store::Mysql(server) => {
                let script = template.script.as_deref().expect("the template's script");
                mysql_build(server, &copy, script).await;
                create_tool_tables(&copy.url).await;
                crate::disk::sync_page_cache();
            }
            Store::Postgres(server) => {
                drop_database(&server.url, name).await;
                let mut admin = Conn::connect(&server.url).await;
                admin.execute(&format!("CREATE DATABASE {name} TEMPLATE {}", template.name)).await;
                // Writes the copy's pages out now rather than during the method's run; needs a
                // superuser (the server of `scripts/pg-start` is one), skipped otherwise.
                if let Conn::Postgres(c) = &mut admin
                    && let Err(error) = c.execute("CHECKPOINT").await
                {
                    eprintln!("warning: no CHECKPOINT after copying ({error})");
                }
                admin.close().await;
                crate::disk::sync_page_cache();
            }
        }
        copy
    }

    pub async fn remove(&self, database: Database) {
        match self {
            Store::Sqlite(_) => {
                let path = self.path(&database);
                std::fs::remove_file(&path).expect("remove the SQLite file");
                let _ = std::fs::remove_file(path.with_extension("db-journal"));
            }
            Store::Postgres(server) | Store::Mysql(server) => drop_database(&server.url, &database.name).await,
        }
    }

    /// How durable commits are, read from a connection with the defaults that cascade and the
    /// hand-written loop use.
    pub async fn durability(&self, database: &Database) -> String {
        let mut connection = Conn::connect(&database.url).await;
        let settings = match self.dialect() {
            Dialect::Sqlite => {
                let journal = connection.text("PRAGMA journal_mode").await;
                let synchronous = connection.integers("PRAGMA synchronous").await[0];
                let level = ["OFF", "NORMAL", "FULL", "EXTRA"].get(synchronous as usize).copied().unwrap_or("?");
                format!("journal_mode={journal}, synchronous={level} (as sqlx and the sqlite3 shell open a file)")
            }
            Dialect::Postgres => {
                let version = connection.text("SHOW server_version").await;
                let fsync = connection.text("SHOW fsync").await;
                let commit = connection.text("SHOW synchronous_commit").await;
                format!("server {version}, fsync={fsync}, synchronous_commit={commit} (read from the server)")
            }
            Dialect::Mysql => {
                let version = connection.text("SELECT VERSION()").await;
                let flush = connection.text("SELECT CAST(@@innodb_flush_log_at_trx_commit AS CHAR)").await;
                let doublewrite = connection.text("SELECT CAST(@@innodb_doublewrite AS CHAR)").await;
                let binlog = connection.text("SELECT CAST(@@log_bin AS CHAR)").await;
                format!(
                    "server {version}, innodb_flush_log_at_trx_commit={flush}, innodb_doublewrite={doublewrite}, \
                     log_bin={binlog} (read from the server)"
                )
            }
        };
        connection.close().await;
        settings
    }
}

async fn drop_database(server: &str, name: &str) {
    let mut admin = Conn::connect(server).await;
    let force = if server.starts_with("mysql:") { "" } else { " WITH (FORCE)" };
    admin.execute(&format!("DROP DATABASE IF EXISTS {name}{force}")).await;
    admin.close().await;
}

/// The tool's tables, as in a database cascade has run on before: creating them is the first
/// run's cost only (as in the orphans bench).
async fn create_tool_tables(url: &str) {
    let tool = cascade::db::Database::connect(url, cascade::db::Access::ReadWrite).await.expect("connect");
    cascade::db::migrate(&tool).await.expect("the tool's tables");
    tool.close().await;
}

/// Creates the MariaDB database `database` (dropped first) and runs `script` in it.
async fn mysql_build(server: &Server, database: &Database, script: &str) {
    drop_database(&server.url, &database.name).await;
    let mut admin = Conn::connect(&server.url).await;
    admin.execute(&format!("CREATE DATABASE {}", database.name)).await;
    admin.close().await;
    let mut connection = Conn::connect(&database.url).await;
    connection.execute(script).await;
    connection.close().await;
}
