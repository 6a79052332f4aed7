//! Helpers shared by the integration tests: the binary, run in a temporary project directory.

pub mod browser;
pub mod cluster;
pub mod databases;
pub mod diamond;
pub mod framing;
pub mod github;
pub mod inert;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod lsp;
pub mod mutation;
pub mod outbox;
pub mod prometheus;
pub mod random;
pub mod running;
pub mod tools;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use tempfile::TempDir;

pub(crate) use databases::{on_each_database, postgres_database, sqlite_database};

/// The `cascade` binary, run inside `dir` with a clean environment for its settings.
pub fn cascade(dir: &Path) -> Command {
    let mut command = Command::cargo_bin("cascade").expect("the cascade binary is built");
    command.current_dir(dir).env_remove("CASCADE_DATABASE_URL").env_remove("CASCADE_LOG").env("NO_COLOR", "1");
    command
}

/// Runs `command`, which must succeed; its standard output read as JSON.
pub fn json_output(command: &mut Command) -> serde_json::Value {
    let output = command.output().expect("run cascade");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{command:?} failed: {stderr}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| panic!("{command:?}: {error}"))
}

/// A temporary directory holding `files` (relative paths, parents created).
pub fn project(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a file has a parent")).expect("create directories");
        std::fs::write(path, text).expect("write a fixture file");
    }
    dir
}

/// The repository root, where `cascades/`, `schemas/` and the README live.
pub fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs hand-written SQL against a test database (any dialect) through the library; every
/// column as text.
pub fn texts(url: &str, sql: &str) -> Vec<Vec<Option<String>>> {
    // The tests' own statements cast to text the standard way, which MySQL spells `CHAR`.
    let sql = if url.starts_with("mysql:") { sql.replace(" AS TEXT)", " AS CHAR)") } else { sql.to_owned() };
    block_on(async {
        let database = cascade::db::Database::connect(url, cascade::db::Access::ReadWrite).await.unwrap();
        let statement = cascade::db::Statement { sql, params: Vec::new() };
        let rows = database.fetch_texts(&statement).await.unwrap();
        database.close().await;
        rows
    })
}

/// The number a `SELECT COUNT(*) ...` (or any one-integer query) returns.
pub fn count(url: &str, sql: &str) -> u64 {
    texts(url, &format!("SELECT {}", as_text(url, &format!("({sql})"))))[0][0].as_deref().unwrap().parse().unwrap()
}

/// `CAST(expression AS TEXT)` as the database at `url` writes it.
pub fn as_text(url: &str, expression: &str) -> String {
    let text = if url.starts_with("mysql:") { "CHAR" } else { "TEXT" };
    format!("CAST({expression} AS {text})")
}

/// How long a test waits for a signal (a row, a log line, a file) before it fails.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Checks for a signal with `check` every 20 ms until it gives one; `None` past `deadline`.
pub fn poll<T>(deadline: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(signal) = check() {
            return Some(signal);
        }
        if started.elapsed() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `done` until it holds; fails the test when `what` has not happened by the deadline.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let held = poll(DEADLINE, || done().then_some(()));
    assert!(held.is_some(), "timed out waiting until {what}");
}

/// Waits for `child` to exit; past `deadline` kills it and fails the test, naming `what`.
pub fn wait_for_exit(child: &mut std::process::Child, what: &str, deadline: Duration) -> std::process::ExitStatus {
    let exited = poll(deadline, || child.try_wait().unwrap_or_else(|error| panic!("wait for {what}: {error}")));
    exited.unwrap_or_else(|| {
        let _ = child.kill();
        panic!("{what} did not exit within {deadline:?}")
    })
}

/// Every row of every table (the tool's own included), each as a JSON object, sorted: a
/// fingerprint of the whole database that two states can be compared by. Tables in the
/// connection's default schema are named bare, others `schema.table`.
pub fn dump(url: &str) -> BTreeMap<String, Vec<String>> {
    let sqlite = url.starts_with("sqlite:");
    let mysql = url.starts_with("mysql:");
    let tables = if mysql {
        "SELECT table_name, '\"' || replace(table_name, '\"', '\"\"') || '\"' FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'"
    } else if sqlite {
        "SELECT name, '\"' || replace(name, '\"', '\"\"') || '\"' FROM sqlite_schema \
         WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    } else {
        "SELECT CASE WHEN table_schema = current_schema() THEN table_name ELSE table_schema || '.' || table_name END, \
         quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables \
         WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'"
    };
    texts(url, tables)
        .into_iter()
        .map(|row| {
            let (name, quoted) = (row[0].clone().unwrap(), row[1].clone().unwrap());
            let object = if mysql {
                let columns: Vec<String> = texts(
                    url,
                    &format!(
                        "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() \
                         AND table_name = {} ORDER BY ordinal_position",
                        quote(&name)
                    ),
                )
                .into_iter()
                .map(|column| {
                    let column = column[0].clone().unwrap();
                    format!("{}, t.\"{}\"", quote(&column), column.replace('"', "\"\""))
                })
                .collect();
                format!("JSON_OBJECT({})", columns.join(", "))
            } else if sqlite {
                let columns: Vec<String> = texts(url, &format!("SELECT name FROM pragma_table_info({})", quote(&name)))
                    .into_iter()
                    .map(|column| {
                        let column = column[0].clone().unwrap();
                        format!("{}, \"{}\"", quote(&column), column.replace('"', "\"\""))
                    })
                    .collect();
                format!("json_object({})", columns.join(", "))
            } else {
                "CAST(row_to_json(t) AS TEXT)".to_owned()
            };
            let mut rows: Vec<String> = texts(url, &format!("SELECT {object} FROM {quoted} t"))
                .into_iter()
                .map(|r| r[0].clone().unwrap())
                // MariaDB's JSON_OBJECT writes spaces after `:` and `,`; the others write none.
                .map(
                    |row| {
                        if mysql { serde_json::from_str::<serde_json::Value>(&row).unwrap().to_string() } else { row }
                    },
                )
                .collect();
            rows.sort_unstable();
            (name, rows)
        })
        .collect()
}

/// [`dump`] of the application's tables only (the tool's own, `cascade_*`, left out): what a
/// deletion is compared by with an oracle's.
pub fn user_rows(url: &str) -> BTreeMap<String, Vec<String>> {
    let mut all = dump(url);
    all.retain(|table, _| !table.starts_with("cascade_"));
    all
}

/// The `CREATE INDEX` advice the tool gives, written with double quotes, as it reads for the
/// database at `url`: backquoted for MySQL's own client.
pub fn index_advice(url: &str, statement: &str) -> serde_json::Value {
    serde_json::Value::from(if url.starts_with("mysql:") { statement.replace('"', "`") } else { statement.to_owned() })
}

/// A SQL string literal.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Every line (`{"model", "table", "row"}`) of every archive file in `dir`, per model. A file of a run in
/// `killed` may end in a gzip member cut short by the kill (its chunk never committed, and was
/// archived again by the run that deleted it): it is read up to its last whole line. Every
/// other file must be whole.
pub fn archive_lines(dir: &Path, killed: &[i64]) -> BTreeMap<String, Vec<serde_json::Value>> {
    let mut lines: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("the archive directory") {
        let path = entry.unwrap().path();
        // MODEL.RUN.jsonl.gz
        let run: i64 = path.to_str().unwrap().rsplit('.').nth(2).and_then(|run| run.parse().ok()).expect("a run id");
        let mut bytes = Vec::new();
        let read = flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).unwrap()).read_to_end(&mut bytes);
        if let Err(error) = read {
            assert!(killed.contains(&run), "{} is not whole: {error}", path.display());
            let whole_lines = bytes.iter().rposition(|byte| *byte == b'\n').map_or(0, |end| end + 1);
            bytes.truncate(whole_lines);
        }
        for line in String::from_utf8(bytes).unwrap().lines() {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            let model = line["model"].as_str().expect("a model").to_owned();
            lines.entry(model).or_default().push(line);
        }
    }
    lines
}

/// Without a killed run, each of the `distinct` rows of `table` archived has one line: a
/// transaction rolled back leaves none.
pub fn assert_archived_once_unless_killed(
    lines: &BTreeMap<String, Vec<serde_json::Value>>,
    table: &str,
    distinct: usize,
    killed: &[i64],
) {
    if killed.is_empty() {
        let written = lines.get(table).map_or(0, Vec::len);
        assert_eq!(written, distinct, "each deleted {table} row archived once, none twice");
    }
}

pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime").block_on(future)
}

/// Creates the tool's own tables in the database at `url`, as its first run would.
pub fn create_tool_tables(url: &str) {
    block_on(async {
        let database = cascade::db::Database::connect(url, cascade::db::Access::ReadWrite).await.unwrap();
        cascade::db::migrate(&database).await.unwrap();
        database.close().await;
    });
}

/// Schedules the deletions of `model` `ids`, due now.
pub fn schedule_now<I: ToString>(url: &str, model: &str, ids: impl IntoIterator<Item = I>) {
    block_on(async {
        let database = cascade::db::Database::connect(url, cascade::db::Access::ReadWrite).await.unwrap();
        for id in ids {
            let now = std::time::SystemTime::now();
            cascade::scheduler::schedule(&database, model, &id.to_string(), now, Some("test"), None).await.unwrap();
        }
        database.close().await;
    });
}
