//! Deleting a tree of about a million rows: `cascade delete` against the database's own
//! `ON DELETE CASCADE`. Run: `cargo bench --bench delete` (`-- --rows N` for another size; the
//! default is 1,000,000).
//!
//! The tree is `root` (1 row) → `l1` (100 rows) → `l2` (rows / 100) → `l3` (the rest), every
//! relation column indexed, with enforced foreign keys; a second root keeps 27 rows that must
//! survive. The config deletes `root`, `l1` and `l2` per_row and `l3` in bulk, with the default
//! chunk sizes, no rate limit and no outbox. The cascade delete runs as a child process of the
//! release binary (its peak RSS read by `/usr/bin/time -f %M`); the native side is one
//! `DELETE FROM root WHERE id = 1` on a copy of the schema whose foreign keys are all
//! `ON DELETE CASCADE`. SQLite runs at the full size and at a tenth of it (for the RSS), and
//! PostgreSQL at the full size against `CASCADE_TEST_POSTGRES_URL` or a throwaway server started
//! with `scripts/pg-start`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Connection, Executor, Row};

const DEFAULT_ROWS: u64 = 1_000_000;
const L1_ROWS: u64 = 100;
const TABLES: [&str; 4] = ["root", "l1", "l2", "l3"];
/// The rows under the second root, per table: they must survive every deletion.
const SURVIVORS: [u64; 4] = [1, 2, 4, 20];
const CONFIG: &str = r#"# The benchmark tree: default chunk sizes, no rate limit, no outbox.
[models.root]
table = "root"
children = [{ model = "l1", column = "root_id" }]

[models.l1]
table = "l1"
children = [{ model = "l2", column = "l1_id" }]

[models.l2]
table = "l2"
children = [{ model = "l3", column = "l2_id" }]

[models.l3]
table = "l3"
strategy = "bulk"
"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Sqlite,
    Postgres,
}

/// Rows per table under the root being deleted.
#[derive(Debug, Clone, Copy)]
struct Shape {
    l1: u64,
    l2: u64,
    l3: u64,
}

impl Shape {
    fn new(rows: u64) -> Self {
        let l2 = (rows / 100).max(L1_ROWS);
        Self { l1: L1_ROWS, l2, l3: rows.saturating_sub(1 + L1_ROWS + l2).max(l2) }
    }

    fn per_table(&self) -> [u64; 4] {
        [1, self.l1, self.l2, self.l3]
    }

    fn total(&self) -> u64 {
        self.per_table().iter().sum()
    }
}

/// One line of the results table.
struct Measured {
    database: &'static str,
    rows: u64,
    cascade: CascadeRun,
    native: Duration,
    build: Duration,
}

/// What one `cascade delete` process reported.
struct CascadeRun {
    deleted: BTreeMap<String, u64>,
    rows: u64,
    chunks: u64,
    elapsed_ms: f64,
    max_chunk_ms: f64,
    /// The process from start to exit: connecting, checking the schema and counting included.
    wall: Duration,
    rss_kib: Option<u64>,
}

fn main() {
    let rows = rows_argument();
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_cascade"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("cascades");
    std::fs::create_dir(&config).expect("the config directory");
    std::fs::write(config.join("bench.toml"), CONFIG).expect("the config");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    eprintln!("cascade binary: {}", binary.display());

    let mut results = Vec::new();
    for size in [rows, rows / 10] {
        let shape = Shape::new(size);
        eprintln!("SQLite, {} rows: building…", shape.total());
        let plain = dir.path().join(format!("plain-{size}.db"));
        let cascading = dir.path().join(format!("cascade-{size}.db"));
        let start = Instant::now();
        runtime.block_on(async {
            tokio::join!(build_sqlite(&plain, shape, false), build_sqlite(&cascading, shape, true));
        });
        let build = start.elapsed();
        eprintln!("SQLite, {} rows: built in {:.1} s; deleting…", shape.total(), build.as_secs_f64());
        let url = format!("sqlite://{}", plain.display());
        let cascade = run_cascade(&binary, &config, &url);
        let native = runtime.block_on(native_sqlite(&cascading));
        let after = runtime.block_on(async { counts(&sqlite_pool(&plain).await).await });
        check("SQLite", shape, &cascade, &after, &native);
        results.push(Measured { database: "SQLite", rows: shape.total(), cascade, native: native.elapsed, build });
    }

    let shape = Shape::new(rows);
    let server = PgServer::start();
    if let Some(server) = &server {
        eprintln!("PostgreSQL, {} rows: building…", shape.total());
        let start = Instant::now();
        let (plain, cascading) = runtime.block_on(async {
            let plain = create_database(&server.url, "cascade_bench_plain").await;
            let cascading = create_database(&server.url, "cascade_bench_cascade").await;
            tokio::join!(build_postgres(&plain, shape, false), build_postgres(&cascading, shape, true));
            (plain, cascading)
        });
        let build = start.elapsed();
        eprintln!("PostgreSQL, {} rows: built in {:.1} s; deleting…", shape.total(), build.as_secs_f64());
        let cascade = run_cascade(&binary, &config, &plain);
        let native = runtime.block_on(native_postgres(&cascading));
        let after = runtime.block_on(async {
            let pool = sqlx::PgPool::connect(&plain).await.expect("connect to PostgreSQL");
            let after = counts(&pool).await;
            pool.close().await;
            after
        });
        check("PostgreSQL", shape, &cascade, &after, &native);
        results.push(Measured { database: "PostgreSQL", rows: shape.total(), cascade, native: native.elapsed, build });
        runtime.block_on(async {
            drop_database(&server.url, "cascade_bench_plain").await;
            drop_database(&server.url, "cascade_bench_cascade").await;
        });
    }
    drop(server);
    report(&results);
}

/// `--rows N` (or `--rows=N`) among the arguments; cargo adds `--bench`, which is ignored.
fn rows_argument() -> u64 {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = match arg.strip_prefix("--rows") {
            Some("") => args.next(),
            Some(rest) if rest.starts_with('=') => Some(rest[1..].to_owned()),
            _ => continue,
        };
        return value.and_then(|v| v.replace(['_', ','], "").parse().ok()).expect("--rows takes a number of rows");
    }
    DEFAULT_ROWS
}

/// The DDL run before loading and the statements run after it. SQLite declares its foreign keys
/// with the tables (it cannot add them later) and loads with enforcement off; PostgreSQL adds
/// and validates them once the rows are in, which is much faster than a trigger per row.
fn schema(dialect: Dialect, cascade: bool) -> (String, String) {
    let on_delete = if cascade { " ON DELETE CASCADE" } else { "" };
    let (key, integer) = match dialect {
        Dialect::Sqlite => ("INTEGER PRIMARY KEY", "INTEGER"),
        Dialect::Postgres => ("bigint PRIMARY KEY", "bigint"),
    };
    let mut create = format!("CREATE TABLE root (id {key});\n");
    let mut after = String::new();
    for pair in TABLES.windows(2) {
        let (parent, child) = (pair[0], pair[1]);
        let column = format!("{parent}_id");
        let reference = format!("REFERENCES {parent} (id){on_delete}");
        match dialect {
            Dialect::Sqlite => {
                create.push_str(&format!("CREATE TABLE {child} (id {key}, {column} {integer} NOT NULL {reference});\n"))
            }
            Dialect::Postgres => {
                create.push_str(&format!("CREATE TABLE {child} (id {key}, {column} {integer} NOT NULL);\n"));
                after.push_str(&format!("ALTER TABLE {child} ADD FOREIGN KEY ({column}) {reference};\n"));
            }
        }
        after.push_str(&format!("CREATE INDEX {child}_{column} ON {child} ({column});\n"));
    }
    if dialect == Dialect::Postgres {
        after.push_str("ANALYZE;\n");
    }
    (create, after)
}

/// `INSERT`s of every row: the big tree under root 1, contiguous blocks of children under each
/// parent, then the survivors under root 2 with the next ids.
fn inserts(dialect: Dialect, shape: Shape) -> String {
    let series = |table: &str, column: &str, from: u64, to: u64, parent: String| match dialect {
        Dialect::Sqlite => format!(
            "INSERT INTO {table} (id, {column}) WITH RECURSIVE s(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM s \
             WHERE i < {to}) SELECT i, {parent} FROM s;\n"
        ),
        Dialect::Postgres => format!(
            "INSERT INTO {table} (id, {column}) SELECT i, {parent} FROM generate_series({from}::bigint, {to}::bigint) \
             AS s(i);\n"
        ),
    };
    let mut sql = String::from("INSERT INTO root (id) VALUES (1), (2);\n");
    sql += &series("l1", "root_id", 1, shape.l1, "1".into());
    sql += &series("l2", "l1_id", 1, shape.l2, format!("(i - 1) * {} / {} + 1", shape.l1, shape.l2));
    sql += &series("l3", "l2_id", 1, shape.l3, format!("(i - 1) * {} / {} + 1", shape.l2, shape.l3));
    // Under root 2: 2 l1 rows, 2 l2 rows each, 5 l3 rows each.
    sql += &series("l1", "root_id", shape.l1 + 1, shape.l1 + 2, "2".into());
    sql += &series("l2", "l1_id", shape.l2 + 1, shape.l2 + 4, format!("{} + (i - {} - 1) / 2 + 1", shape.l1, shape.l2));
    sql +=
        &series("l3", "l2_id", shape.l3 + 1, shape.l3 + 20, format!("{} + (i - {} - 1) / 5 + 1", shape.l2, shape.l3));
    sql
}

/// A SQLite file with the tree, in one transaction. The file keeps SQLite's default rollback
/// journal; both sides of the comparison connect with sqlx's defaults (synchronous = FULL).
async fn build_sqlite(path: &Path, shape: Shape, cascade: bool) {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .foreign_keys(false)
        .journal_mode(SqliteJournalMode::Off)
        .synchronous(SqliteSynchronous::Off);
    let mut connection = sqlx::SqliteConnection::connect_with(&options).await.expect("create the SQLite file");
    let (create, after) = schema(Dialect::Sqlite, cascade);
    let script = format!("BEGIN;\n{create}{}{after}COMMIT;\n", inserts(Dialect::Sqlite, shape));
    sqlx::raw_sql(AssertSqlSafe(script)).execute(&mut connection).await.expect("load the SQLite file");
    connection.close().await.expect("close");
}

async fn sqlite_pool(path: &Path) -> sqlx::SqlitePool {
    let options = SqliteConnectOptions::new().filename(path).foreign_keys(true);
    sqlx::SqlitePool::connect_with(options).await.expect("open the SQLite file")
}

/// Rows per table.
async fn counts<DB: sqlx::Database>(pool: &sqlx::Pool<DB>) -> [u64; 4]
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> <DB as sqlx::Database>::Arguments: sqlx::IntoArguments<DB>,
    i64: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    let mut counts = [0; 4];
    for (count, table) in counts.iter_mut().zip(TABLES) {
        let row = sqlx::query(AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
            .fetch_one(pool)
            .await
            .expect("count rows");
        *count = u64::try_from(row.get::<i64, _>(0)).expect("a count");
    }
    counts
}

/// The database's own cascade: rows per table before and after, and the time of the DELETE.
struct Native {
    before: [u64; 4],
    after: [u64; 4],
    elapsed: Duration,
}

async fn native_sqlite(path: &Path) -> Native {
    let pool = sqlite_pool(path).await;
    let before = counts(&pool).await;
    let mut connection = pool.acquire().await.expect("a connection");
    connection.execute("PRAGMA foreign_keys = ON").await.expect("foreign keys on");
    let start = Instant::now();
    connection.execute("DELETE FROM root WHERE id = 1").await.expect("the native DELETE");
    let elapsed = start.elapsed();
    drop(connection);
    let after = counts(&pool).await;
    pool.close().await;
    Native { before, after, elapsed }
}

async fn native_postgres(url: &str) -> Native {
    let pool = sqlx::PgPool::connect(url).await.expect("connect to PostgreSQL");
    let before = counts(&pool).await;
    let start = Instant::now();
    pool.execute("DELETE FROM root WHERE id = 1").await.expect("the native DELETE");
    let elapsed = start.elapsed();
    let after = counts(&pool).await;
    pool.close().await;
    Native { before, after, elapsed }
}

/// Runs `cascade delete root 1 --confirm --format json`, under `/usr/bin/time -f %M` when
/// available for the peak RSS.
fn run_cascade(binary: &Path, config: &Path, url: &str) -> CascadeRun {
    let time = Path::new("/usr/bin/time");
    let mut command = if time.exists() {
        let mut command = Command::new(time);
        command.args(["-f", "%M"]).arg(binary);
        command
    } else {
        eprintln!("warning: /usr/bin/time not found: no peak RSS");
        Command::new(binary)
    };
    command.arg("--config").arg(config).args(["delete", "root", "1", "--confirm", "--format", "json"]);
    command.args(["--database-url", url]);
    let start = Instant::now();
    let output = command.output().expect("run cascade");
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cascade delete failed ({}):\n{stderr}", output.status);
    let rss_kib = time.exists().then(|| stderr.lines().last().and_then(|l| l.trim().parse().ok())).flatten();
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON summary");
    let number = |key: &str| summary[key].as_f64().unwrap_or_else(|| panic!("`{key}` in the summary: {summary}"));
    let deleted: BTreeMap<String, u64> = summary["deleted"]
        .as_object()
        .expect("`deleted` in the summary")
        .iter()
        .map(|(model, rows)| (model.clone(), rows.as_u64().expect("a row count")))
        .collect();
    CascadeRun {
        rows: deleted.values().sum(),
        deleted,
        chunks: number("chunks") as u64,
        elapsed_ms: number("elapsed_ms"),
        max_chunk_ms: number("max_chunk_ms"),
        wall,
        rss_kib,
    }
}

/// Both sides deleted the whole tree under root 1, table by table, and nothing of root 2.
fn check(database: &str, shape: Shape, cascade: &CascadeRun, after: &[u64; 4], native: &Native) {
    let expected = shape.per_table();
    for (index, table) in TABLES.iter().enumerate() {
        let by_cascade = cascade.deleted.get(*table).copied().unwrap_or(0);
        let by_native = native.before[index] - native.after[index];
        assert_eq!(by_cascade, expected[index], "{database}: cascade deleted {by_cascade} `{table}` rows");
        assert_eq!(by_native, expected[index], "{database}: the native DELETE deleted {by_native} `{table}` rows");
        assert_eq!(after[index], SURVIVORS[index], "{database}: `{table}` rows of root 2 after cascade");
        assert_eq!(native.after[index], SURVIVORS[index], "{database}: `{table}` rows of root 2 after the DELETE");
    }
}

/// A PostgreSQL server: `CASCADE_TEST_POSTGRES_URL`, or one started by `scripts/pg-start` and
/// stopped (also on a panic) when this is dropped.
struct PgServer {
    url: String,
    started: bool,
}

impl PgServer {
    fn start() -> Option<Self> {
        if let Ok(url) = std::env::var("CASCADE_TEST_POSTGRES_URL") {
            return Some(Self { url, started: false });
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-start");
        match Command::new(&script).output() {
            Ok(output) if output.status.success() => {
                let url = String::from_utf8_lossy(&output.stdout).trim().to_owned();
                Some(Self { url, started: true })
            }
            Ok(output) => {
                eprintln!("warning: no PostgreSQL (scripts/pg-start: {})", String::from_utf8_lossy(&output.stderr));
                None
            }
            Err(error) => {
                eprintln!("warning: no PostgreSQL (scripts/pg-start: {error})");
                None
            }
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.started {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-stop");
            if let Err(error) = Command::new(script).arg(&self.url).status() {
                eprintln!("warning: could not stop PostgreSQL at {}: {error}", self.url);
            }
        }
    }
}

/// `url` with its database replaced by `database` (the query string, such as `?host=`, kept).
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let (scheme, rest) = base.split_once("://").expect("a postgres:// URL");
    let authority = rest.split('/').next().unwrap_or(rest);
    let mut result = format!("{scheme}://{authority}/{database}");
    if let Some(query) = query {
        result = format!("{result}?{query}");
    }
    result
}

/// A fresh, empty database; its URL.
async fn create_database(server: &str, name: &str) -> String {
    drop_database(server, name).await;
    let mut admin = sqlx::PgConnection::connect(server).await.expect("connect to PostgreSQL");
    admin.execute(AssertSqlSafe(format!("CREATE DATABASE {name}"))).await.expect("create the database");
    admin.close().await.expect("close");
    with_database(server, name)
}

async fn drop_database(server: &str, name: &str) {
    let mut admin = sqlx::PgConnection::connect(server).await.expect("connect to PostgreSQL");
    admin.execute(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).await.expect("drop");
    admin.close().await.expect("close");
}

async fn build_postgres(url: &str, shape: Shape, cascade: bool) {
    let mut connection = sqlx::PgConnection::connect(url).await.expect("connect to PostgreSQL");
    let (create, after) = schema(Dialect::Postgres, cascade);
    let load = format!("BEGIN;\n{create}{}COMMIT;\n", inserts(Dialect::Postgres, shape));
    sqlx::raw_sql(AssertSqlSafe(load)).execute(&mut connection).await.expect("load PostgreSQL");
    sqlx::raw_sql(AssertSqlSafe(after)).execute(&mut connection).await.expect("keys, indexes and ANALYZE");
    connection.close().await.expect("close");
}

fn report(results: &[Measured]) {
    let mib = |kib: Option<u64>| kib.map_or("n/a".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0));
    println!(
        "| database | rows | cascade delete rows/s | native DELETE rows/s | ratio (cascade/native) | longest chunk \
         transaction (ms) | peak RSS (MiB) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for m in results {
        let cascade = m.cascade.rows as f64 / m.cascade.wall.as_secs_f64();
        let native = m.rows as f64 / m.native.as_secs_f64();
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.2} | {:.1} | {} |",
            m.database,
            m.rows,
            cascade,
            native,
            rounded_down(cascade / native),
            m.cascade.max_chunk_ms,
            mib(m.cascade.rss_kib)
        );
    }
    let sqlite: Vec<&Measured> = results.iter().filter(|m| m.database == "SQLite").collect();
    if let [full, tenth] = sqlite[..] {
        println!(
            "\nPeak RSS of the SQLite cascade delete: {} MiB at {} rows, {} MiB at {} rows.",
            mib(full.cascade.rss_kib),
            full.rows,
            mib(tenth.cascade.rss_kib),
            tenth.rows
        );
    }

    println!("\nDetails:\n");
    println!(
        "| database | rows | chunks | cascade elapsed_ms | cascade process wall (connect + check + count + delete) | native \
         DELETE | build both databases |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for m in results {
        println!(
            "| {} | {} | {} | {:.0} ms | {:.0} ms | {:.0} ms | {:.1} s |",
            m.database,
            m.rows,
            m.cascade.chunks,
            m.cascade.elapsed_ms,
            m.cascade.wall.as_secs_f64() * 1e3,
            m.native.as_secs_f64() * 1e3,
            m.build.as_secs_f64()
        );
    }

    println!("\nTargets:\n");
    for m in results {
        let ratio = rounded_down(
            (m.cascade.rows as f64 / m.cascade.wall.as_secs_f64()) / (m.rows as f64 / m.native.as_secs_f64()),
        );
        let verdict = |met: bool| if met { "met" } else { "MISSED" };
        println!(
            "- {} ({} rows): throughput at least 0.7× native: {:.2}× ({}); no chunk over 100 ms: longest {:.1} ms \
             ({}); peak RSS under 100 MiB: {} MiB ({})",
            m.database,
            m.rows,
            ratio,
            verdict(ratio >= 0.7),
            m.cascade.max_chunk_ms,
            verdict(m.cascade.max_chunk_ms <= 100.0),
            mib(m.cascade.rss_kib),
            verdict(m.cascade.rss_kib.is_some_and(|k| k < 100 * 1024)),
        );
    }
    if let [full, tenth] = sqlite[..]
        && let (Some(big), Some(small)) = (full.cascade.rss_kib, tenth.cascade.rss_kib)
    {
        let growth = big as f64 / small as f64;
        println!(
            "- peak RSS flat with size (SQLite, {}× the rows): {:.2}× the RSS ({})",
            full.rows / tenth.rows.max(1),
            growth,
            if growth <= 1.25 { "met" } else { "MISSED" }
        );
    }
    println!(
        "\nNative DELETE: one `DELETE FROM root WHERE id = 1` with ON DELETE CASCADE on every foreign key, one \
         transaction. Cascade rows/s: rows deleted / the whole process's wall time (start-up, connecting, schema \
         checks, recording the run and the deletion). Ratios are rounded down to two decimals. Durability: SQLite \
         files as sqlx creates them (rollback journal, synchronous=FULL); PostgreSQL as `scripts/pg-start` runs \
         it (fsync=off, synchronous_commit=off)."
    );
}

/// Two decimals, rounded down, so that a target missed by a little never reads as met.
fn rounded_down(ratio: f64) -> f64 {
    (ratio * 100.0).floor() / 100.0
}
