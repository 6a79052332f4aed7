//! The databases tests run against: SQLite files in a temporary directory and databases on the
//! PostgreSQL and MariaDB test servers; twin tests that run one body on SQLite and PostgreSQL
//! (`on_each_database!`); and the tests skipped without a server, each one counted.

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use tempfile::TempDir;

use super::block_on;

/// The directory where each test that skips a server leaves a file named after itself
/// (`MODULE::TEST`, the module being its file of `tests/it/`) that names the server
/// (`PostgreSQL`, `MariaDB`), for `scripts/test` to count per module once the tests have run.
pub const SKIPPED_DIR: &str = "CASCADE_TEST_SKIPPED_DIR";

/// Makes the names of the databases the test binary creates unique.
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The PostgreSQL server for tests, from `CASCADE_TEST_POSTGRES_URL`. Without it the test is
/// skipped locally (and the skip counted), but fails in CI (`CI` set), where a missing server
/// must never pass silently.
pub fn postgres_server() -> Option<String> {
    match std::env::var("CASCADE_TEST_POSTGRES_URL") {
        Ok(url) => Some(url),
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("CI is set but CASCADE_TEST_POSTGRES_URL is not: .ci/run starts PostgreSQL with scripts/pg-start")
        }
        Err(_) => {
            record_skip("PostgreSQL", "CASCADE_TEST_POSTGRES_URL=$(scripts/pg-start)");
            None
        }
    }
}

/// The MariaDB (MySQL) server for tests, from `CASCADE_TEST_MYSQL_URL`: skipped without it
/// locally, a failure in CI, as [`postgres_server`].
pub fn mysql_server() -> Option<String> {
    match std::env::var("CASCADE_TEST_MYSQL_URL") {
        Ok(url) => Some(url),
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("CI is set but CASCADE_TEST_MYSQL_URL is not: .ci/run starts MariaDB with scripts/mariadb-start")
        }
        Err(_) => {
            record_skip("MariaDB", "CASCADE_TEST_MYSQL_URL=$(scripts/mariadb-start)");
            None
        }
    }
}

/// A new MariaDB database on `server` with `ddl` applied: its name and URL.
fn mysql_database_on(server: &str, ddl: &str) -> (String, String) {
    let name = database_name();
    let url = with_database(server, &name);
    block_on(async {
        let admin = sqlx::MySqlPool::connect(server).await.expect("connect to the test server");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin)
            .await
            .expect("create a test database");
        admin.close().await;
        let pool = sqlx::MySqlPool::connect(&url).await.expect("connect to the test database");
        // Recursive inserts of deep test trees: MariaDB stops at 1,000 iterations by default.
        let ddl = format!("SET SESSION max_recursive_iterations = 4294967295;\n{ddl}");
        sqlx::raw_sql(sqlx::AssertSqlSafe(ddl)).execute(&pool).await.expect("apply the test schema");
        pool.close().await;
    });
    (name, url)
}

/// Records that the running test skips the server `what` (started by `start`): in
/// `SKIPPED_DIR` when `scripts/test` gave one, else on the terminal.
fn record_skip(what: &str, start: &str) {
    // The test harness names each test's thread after the test: `MODULE::TEST`.
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("(unnamed test)").to_owned();
    match std::env::var_os(SKIPPED_DIR) {
        Some(dir) => std::fs::write(Path::new(&dir).join(&test), what).expect("record a skipped test"),
        None => {
            // Written to the stream itself: the harness keeps what `eprintln!` prints in a test that
            // passes, and this one passes without having run.
            let line = format!("{test}: {what} skipped, no server (export {start})\n");
            std::io::stderr().write_all(line.as_bytes()).expect("write to stderr");
        }
    }
}

/// A new, empty PostgreSQL database with `ddl` applied; its URL. `None` when skipped.
pub fn postgres_database(ddl: &str) -> Option<String> {
    postgres_server().map(|server| postgres_database_on(&server, ddl))
}

/// A new PostgreSQL database on `server` with `ddl` applied; its URL.
pub fn postgres_database_on(server: &str, ddl: &str) -> String {
    let name = database_name();
    let url = with_database(server, &name);
    block_on(async {
        let admin = sqlx::PgPool::connect(server).await.expect("connect to the test server");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin)
            .await
            .expect("create a test database");
        admin.close().await;
        let pool = sqlx::PgPool::connect(&url).await.expect("connect to the test database");
        sqlx::raw_sql(sqlx::AssertSqlSafe(ddl.to_owned())).execute(&pool).await.expect("apply the test schema");
        pool.close().await;
    });
    url
}

/// A name no other test's database has.
fn database_name() -> String {
    let number = DATABASES.fetch_add(1, Ordering::Relaxed);
    // The clock too: a process id comes back (one process per test), and with it a name an
    // earlier test's database still has.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("cascade_test_{}_{nanos}_{number}", std::process::id())
}

/// The server URL with another database name (keeping `?host=...` or `?socket=...`).
fn with_database(server: &str, name: &str) -> String {
    let (base, query) = server.split_once('?').map_or((server, None), |(b, q)| (b, Some(q)));
    let (authority, _) = base.rsplit_once('/').expect("a server URL has a database path");
    match query {
        Some(query) => format!("{authority}/{name}?{query}"),
        None => format!("{authority}/{name}"),
    }
}

/// A new SQLite database file in `dir` with `ddl` applied; its URL.
pub fn sqlite_database(dir: &Path, ddl: &str) -> String {
    let path = dir.join(format!("test_{}.db", DATABASES.fetch_add(1, Ordering::Relaxed)));
    let url = format!("sqlite://{}", path.display());
    block_on(async {
        let options: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("a sqlite URL");
        let pool = sqlx::SqlitePool::connect_with(options.create_if_missing(true)).await.expect("create the database");
        sqlx::raw_sql(sqlx::AssertSqlSafe(ddl.to_owned())).execute(&pool).await.expect("apply the test schema");
        pool.close().await;
    });
    url
}

/// Where a twin test makes its databases, as many as it needs.
pub enum Databases {
    /// Files in a temporary directory, removed with it.
    Sqlite(TempDir),
    /// Databases on the test server at this URL.
    Postgres(String),
    /// Databases on the MariaDB test server at this URL, and those made so far, dropped with
    /// this: every schema on the server slows its `information_schema` down.
    Mysql(String, Mutex<Vec<String>>),
}

impl Drop for Databases {
    fn drop(&mut self) {
        let Self::Mysql(server, made) = self else { return };
        let (server, made) = (server.clone(), std::mem::take(made.get_mut().unwrap_or_else(PoisonError::into_inner)));
        // A thread of its own: a test may drop this inside its own runtime.
        let dropped = std::thread::spawn(move || {
            block_on(async {
                let admin = sqlx::MySqlPool::connect(&server).await?;
                for name in made {
                    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}")))
                        .execute(&admin)
                        .await?;
                }
                admin.close().await;
                Ok::<_, sqlx::Error>(())
            })
        });
        if let Ok(Err(error)) = dropped.join() {
            eprintln!("warning: could not drop the test's MariaDB databases: {error}");
        }
    }
}

impl Databases {
    pub fn sqlite() -> Self {
        Self::Sqlite(tempfile::tempdir().expect("a temporary directory"))
    }

    /// `None` when there is no server: the test is skipped (see `postgres_server`).
    pub fn postgres() -> Option<Self> {
        postgres_server().map(Self::Postgres)
    }

    /// `None` when there is no server: the test is skipped (see `mysql_server`).
    pub fn mysql() -> Option<Self> {
        mysql_server().map(|server| Self::Mysql(server, Mutex::default()))
    }

    /// A new database with `ddl` applied; its URL.
    pub fn create(&self, ddl: &str) -> String {
        match self {
            Self::Sqlite(dir) => sqlite_database(dir.path(), ddl),
            Self::Postgres(server) => postgres_database_on(server, ddl),
            Self::Mysql(server, made) => {
                let (name, url) = mysql_database_on(server, ddl);
                made.lock().unwrap_or_else(PoisonError::into_inner).push(name);
                url
            }
        }
    }

    /// [`Self::create`] with the `TEXT` columns of `ddl` as `varchar(255)` on MariaDB, where InnoDB
    /// indexes no `TEXT` column without a length: for tests whose text columns are keys.
    pub fn create_keyable(&self, ddl: &str) -> String {
        if !self.is_mysql() {
            return self.create(ddl);
        }
        let mut keyable = String::with_capacity(ddl.len());
        let mut rest = ddl;
        let next_text = |rest: &str| [rest.find(" TEXT"), rest.find(" text")].into_iter().flatten().min();
        while let Some(at) = next_text(rest) {
            let (before, after) = rest.split_at(at);
            let ends = after[5..].chars().next().is_none_or(|next| ",) \n".contains(next));
            keyable.push_str(before);
            keyable.push_str(if ends { " varchar(255)" } else { &after[..5] });
            rest = &after[5..];
        }
        keyable.push_str(rest);
        self.create(&keyable)
    }

    /// For what only MySQL writes its own way (its DDL, its triggers).
    pub fn is_mysql(&self) -> bool {
        matches!(self, Self::Mysql(..))
    }

    /// For a check only SQLite makes (`PRAGMA foreign_key_check`).
    pub fn is_sqlite(&self) -> bool {
        matches!(self, Self::Sqlite(_))
    }
}

/// Twin tests, one on SQLite and one on PostgreSQL (and a third on MariaDB when a third name is
/// given), from one body: `$body` runs with `$databases` (a `Databases`) to make its databases
/// on, and in each test its own values (after the test's name) bound to the names after
/// `$databases`:
///
/// ```ignore
/// on_each_database!(counts_on_sqlite("INTEGER"), counts_on_postgres("bigint"), |databases, int| {
///     check_counts(&databases.create(&schema(int)));
/// });
/// ```
///
/// The PostgreSQL and MariaDB tests are skipped without a server, and fail without one in CI (see
/// `postgres_server`).
macro_rules! on_each_database {
    ($sqlite:ident, $postgres:ident, $mariadb:ident, |$databases:ident| $body:expr $(,)?) => {
        $crate::common::on_each_database!($sqlite(), $postgres(), |$databases| $body);

        #[test]
        fn $mariadb() {
            let Some($databases) = $crate::common::databases::Databases::mysql() else { return };
            $body;
        }
    };
    ($sqlite:ident, $postgres:ident, |$databases:ident| $body:expr $(,)?) => {
        $crate::common::on_each_database!($sqlite(), $postgres(), |$databases| $body);
    };
    (
        $sqlite:ident($($sqlite_value:expr),* $(,)?),
        $postgres:ident($($postgres_value:expr),* $(,)?),
        $mariadb:ident($($mariadb_value:expr),* $(,)?),
        |$databases:ident $(, $name:ident)*| $body:expr $(,)?
    ) => {
        $crate::common::on_each_database!(
            $sqlite($($sqlite_value),*),
            $postgres($($postgres_value),*),
            |$databases $(, $name)*| $body
        );

        #[test]
        fn $mariadb() {
            let Some($databases) = $crate::common::databases::Databases::mysql() else { return };
            $(let $name = $mariadb_value;)*
            $body;
        }
    };
    (
        $sqlite:ident($($sqlite_value:expr),* $(,)?),
        $postgres:ident($($postgres_value:expr),* $(,)?),
        |$databases:ident $(, $name:ident)*| $body:expr $(,)?
    ) => {
        #[test]
        fn $sqlite() {
            let $databases = $crate::common::databases::Databases::sqlite();
            $(let $name = $sqlite_value;)*
            $body;
        }

        #[test]
        fn $postgres() {
            let Some($databases) = $crate::common::databases::Databases::postgres() else { return };
            $(let $name = $postgres_value;)*
            $body;
        }
    };
}

pub(crate) use on_each_database;
