//! Cleaning up orphans: `cascade orphans` (the report) and `cascade orphans --delete --confirm`
//! against the hand-written anti-join, on a SQLite file and on PostgreSQL, side by side. Run:
//! `cargo bench --bench orphans` (`-- --rows N` for another size, default 1,000,000; `-- --repeat
//! N` runs of each measurement, default 3, the tables showing the median; `-- --databases
//! postgres` for one database). Progress goes to stderr, the markdown tables to stdout.
//!
//! The data set: `parent(id)` and `child(id, parent_id, payload)` with an index on
//! `child(parent_id)` and no foreign key. Child `n` (1 to `rows`) belongs to parent `(n - 1) / 5 +
//! 1`, except that every 10,000th child has a NULL `parent_id` (not an orphan); every tenth parent
//! has been deleted, so 10 % of the child rows, spread over the whole table, are orphans.
//!
//! Measured, each run on a freshly built data set (built the same way every time):
//!
//! - the report: the whole `cascade orphans --format json` process against the bench's own
//!   `SELECT COUNT(*) ... NOT EXISTS (...)` (the statement alone, on an open connection);
//! - the delete: the whole `cascade orphans --delete --confirm --sleep-ms 0` process (batches
//!   of its own size: from 500, adapting to the transaction time), with the child model `bulk` (as `cascade init` writes a leaf) and `per_row` (the
//!   config's default), against one `DELETE ... WHERE ... NOT EXISTS (...)` statement;
//! - the delete again on a second data set where the child has a small child of its own:
//!   `grandchild(id, child_id, payload)`, one per ten child rows (child `10 g` has grandchild
//!   `g`), indexed by `child_id`; the child per_row, the grandchild bulk, against two `DELETE`s
//!   (the orphans' grandchildren, then the orphans) in one transaction;
//! - on the first data set, a hand-written loop in the bench with batches of 500 (cascade's first
//!   batch size) and of 5,000 (its largest): one transaction per batch, each a single `DELETE ...
//!   WHERE id IN (SELECT id ... WHERE id > last AND NOT EXISTS (...) ORDER BY id LIMIT N)
//!   RETURNING id` and a commit: what any tool that commits every N orphans can reach at best (it
//!   keeps no checkpoint or record).
//!
//! Each data set also holds cascade's own tables (`cascade::db::migrate`), as a database that
//! cascade has run on before: creating them is a first run's cost only (the progress says how
//! long it takes).
//!
//! Every run is checked: the report finds every orphan; after a delete no orphan is left and the
//! other rows are all still there (their count and the sum of their ids), parents and the
//! grandchildren of the other rows included.
//! Peak RSS is the cascade process's own `VmHWM`, read while it runs.

#[path = "common/args.rs"]
mod args;
#[path = "common/database.rs"]
mod database;
#[path = "common/disk.rs"]
mod disk;
#[path = "common/process.rs"]
mod process;
#[path = "common/server.rs"]
mod server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use args::{list_argument, number_argument};
use cascade::db::{Access, Database, Kind};
use database::{durability, fresh_database, statement};
use process::Finished;
use server::Server;

const DEFAULT_ROWS: u64 = 1_000_000;
const DEFAULT_REPEAT: u64 = 3;
const CHILDREN_PER_PARENT: u64 = 5;
/// Every tenth parent is gone.
const DELETED_PARENT_EVERY: u64 = 10;
/// Every 10,000th child has no parent (a NULL `parent_id`, not an orphan).
const NULL_PARENT_EVERY: u64 = 10_000;
/// The hand-written loop's batch sizes: cascade's first and largest.
const HAND_LOOP_BATCHES: [u64; 2] = [500, 5_000];
/// In the second data set, child `10 g` has grandchild `g`.
const GRANDCHILD_EVERY: u64 = 10;

/// The targets each result is judged against ("met" or "MISSED").
const REPORT_RATIO: f64 = 1.2;
const DELETE_RATIO: f64 = 0.7;
const LONGEST_TRANSACTION_MS: f64 = 100.0;
const PEAK_RSS_MIB: f64 = 100.0;

const COUNT_ORPHANS: &str = "SELECT COUNT(*) FROM child c WHERE c.parent_id IS NOT NULL \
                             AND NOT EXISTS (SELECT 1 FROM parent p WHERE p.id = c.parent_id)";
const DELETE_ORPHANS: &str = "DELETE FROM child WHERE parent_id IS NOT NULL \
                              AND NOT EXISTS (SELECT 1 FROM parent p WHERE p.id = child.parent_id)";
/// With grandchildren, run before `DELETE_ORPHANS` in the same transaction.
const DELETE_ORPHANS_GRANDCHILDREN: &str = "DELETE FROM grandchild WHERE child_id IN (SELECT c.id FROM child c \
     WHERE c.parent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM parent p WHERE p.id = c.parent_id))";

/// The deletes measured: the config's name, its label and whether the data set has grandchildren.
const STRATEGIES: [(&str, &str, bool); 3] = [
    ("bulk", "bulk child (as `cascade init` writes a leaf)", false),
    ("per_row", "per_row child (the config default)", false),
    ("grandchild", "per_row child with a bulk grandchild", true),
];

fn main() {
    let rows = number_argument("--rows").unwrap_or(DEFAULT_ROWS);
    let repeat = number_argument("--repeat").unwrap_or(DEFAULT_REPEAT).max(1);
    let data = DataSet::new(rows, false);
    let deep = DataSet::new(rows, true);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    eprintln!("cascade binary: {}", env!("CARGO_BIN_EXE_cascade"));
    eprintln!(
        "{rows} child rows, {} parents left, {} orphans, {} NULL parent_id; {repeat} run(s) of each",
        data.parents, data.orphans, data.nulls
    );

    let databases = list_argument("--databases").unwrap_or_else(|| vec!["sqlite".into(), "postgres".into()]);
    let server = databases.iter().any(|name| name == "postgres").then(Server::postgres).flatten();
    if server.is_none() {
        eprintln!("warning: no PostgreSQL: SQLite only");
    }
    let mut stores = Vec::new();
    if databases.iter().any(|name| name == "sqlite") {
        stores.push(Store::Sqlite(dir.path().join("orphans.db")));
    }
    stores.extend(server.as_ref().map(|server| Store::Postgres(server.url.clone())));
    let configs: Vec<PathBuf> = STRATEGIES.iter().map(|(strategy, ..)| config(dir.path(), strategy)).collect();
    let can_delete = deletes_orphans();
    if !can_delete {
        eprintln!("warning: this cascade has no `orphans --delete --confirm`: the delete half is not run");
    }

    let started = Instant::now();
    let mut results = Vec::new();
    for store in &stores {
        let mut result = StoreResult::default();
        for run in 1..=repeat {
            let label = format!("{} run {run}/{repeat}", store.name());
            let url = runtime.block_on(store.build(&data));
            result.durability = runtime.block_on(async {
                let database = connect(&url).await;
                let settings = durability(&database).await;
                database.close().await;
                settings
            });
            let (wall, orphans) = runtime.block_on(hand_count(&url));
            assert_eq!(orphans, data.orphans, "{label}: the hand-written count");
            eprintln!("{label}: hand-written COUNT: {orphans} orphans in {:.1} ms", ms(wall));
            result.hand_count.push(wall);

            let url = runtime.block_on(store.build(&data));
            let report = tool_report(&configs[0], &url, &data);
            eprintln!("{label}: cascade orphans: {:.1} ms, peak RSS {} KiB", ms(report.wall), report.peak_rss_kib);
            result.reports.push(report);

            if !can_delete {
                continue;
            }
            for data in [&data, &deep] {
                let url = runtime.block_on(store.build(data));
                let (wall, deleted) = runtime.block_on(hand_delete(&url, data));
                assert_eq!(deleted, data.deleted(), "{label}: the single DELETE");
                runtime.block_on(check_after_delete(&url, data, &format!("{label}, single DELETE")));
                eprintln!("{label}: single DELETE{}: {deleted} rows in {:.1} ms", data.name(), ms(wall));
                result.hand_delete.push((data.grandchildren > 0, wall));
            }
            for batch in HAND_LOOP_BATCHES {
                let url = runtime.block_on(store.build(&data));
                let (wall, deleted, batches) = runtime.block_on(hand_loop(&url, batch));
                assert_eq!(deleted, data.deleted(), "{label}: the hand-written loop");
                runtime.block_on(check_after_delete(&url, &data, &format!("{label}, hand-written loop")));
                eprintln!(
                    "{label}: hand-written loop of {batch}: {deleted} rows in {batches} transactions, {:.1} ms",
                    ms(wall)
                );
                result.hand_loop.push((batch, wall));
            }

            for ((strategy, _, grandchildren), config) in STRATEGIES.iter().zip(&configs) {
                let data = if *grandchildren { &deep } else { &data };
                let url = runtime.block_on(store.build(data));
                let delete = tool_delete(config, &url, data);
                runtime.block_on(check_after_delete(&url, data, &format!("{label}, cascade ({strategy})")));
                eprintln!(
                    "{label}: cascade orphans --delete ({strategy}): {:.1} ms, {} batches, longest {:.1} ms, \
                     peak RSS {} KiB",
                    ms(delete.wall),
                    delete.batches,
                    delete.longest_ms,
                    delete.peak_rss_kib
                );
                result.deletes.push((strategy, delete));
            }
        }
        results.push((store.name(), result));
    }
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    drop(server);
    report(&data, &deep, repeat, &results);
}

/// The rows the bench builds, and what they hold.
struct DataSet {
    rows: u64,
    /// Parent ids run from 1 to this, every tenth deleted.
    parent_ids: u64,
    parents: u64,
    orphans: u64,
    nulls: u64,
    /// Child rows that are not orphans, and the sum of their ids.
    kept: u64,
    kept_id_sum: u64,
    /// Grandchildren (none in the first data set), those of orphans, and the sum of the others'
    /// ids.
    grandchildren: u64,
    orphaned_grandchildren: u64,
    kept_grandchild_id_sum: u64,
}

impl DataSet {
    fn new(rows: u64, grandchildren: bool) -> Self {
        let parent_ids = rows.div_ceil(CHILDREN_PER_PARENT);
        let parents = parent_ids - parent_ids / DELETED_PARENT_EVERY;
        let is_orphan = |n: u64| {
            n % NULL_PARENT_EVERY != 1 && ((n - 1) / CHILDREN_PER_PARENT + 1).is_multiple_of(DELETED_PARENT_EVERY)
        };
        let (mut orphans, mut nulls, mut kept, mut kept_id_sum) = (0, 0, 0, 0);
        for n in 1..=rows {
            if is_orphan(n) {
                orphans += 1;
                continue;
            }
            nulls += u64::from(n % NULL_PARENT_EVERY == 1);
            kept += 1;
            kept_id_sum += n;
        }
        let grandchildren = if grandchildren { rows / GRANDCHILD_EVERY } else { 0 };
        let (mut orphaned_grandchildren, mut kept_grandchild_id_sum) = (0, 0);
        for g in 1..=grandchildren {
            if is_orphan(g * GRANDCHILD_EVERY) {
                orphaned_grandchildren += 1;
            } else {
                kept_grandchild_id_sum += g;
            }
        }
        DataSet {
            rows,
            parent_ids,
            parents,
            orphans,
            nulls,
            kept,
            kept_id_sum,
            grandchildren,
            orphaned_grandchildren,
            kept_grandchild_id_sum,
        }
    }

    fn name(&self) -> &'static str {
        if self.grandchildren > 0 { " (with grandchildren)" } else { "" }
    }

    /// Rows that deleting the orphans deletes: theirs and their grandchildren.
    fn deleted(&self) -> u64 {
        self.orphans + self.orphaned_grandchildren
    }

    /// The statements that create and fill the tables, in one transaction.
    fn statements(&self, kind: Kind) -> Vec<String> {
        let series = |to: u64| match kind {
            Kind::Sqlite => {
                (format!("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {to}) "), "s".into())
            }
            Kind::Postgres => (String::new(), format!("generate_series(1, {to}) AS s(i)")),
            Kind::Mysql => unreachable!("`orphans` does not run on MySQL"),
        };
        let (with_parents, parents) = series(self.parent_ids);
        let (with_children, children) = series(self.rows);
        let mut statements = vec![
            "CREATE TABLE parent (id integer PRIMARY KEY)".into(),
            "CREATE TABLE child (id integer PRIMARY KEY, parent_id integer, payload text)".into(),
            format!(
                "INSERT INTO parent (id) {with_parents}SELECT i FROM {parents} WHERE i % {DELETED_PARENT_EVERY} <> 0"
            ),
            format!(
                "INSERT INTO child (id, parent_id, payload) {with_children}SELECT i, CASE WHEN i % {NULL_PARENT_EVERY} = 1 \
                 THEN NULL ELSE (i - 1) / {CHILDREN_PER_PARENT} + 1 END, 'payload of child ' || i FROM {children}"
            ),
            "CREATE INDEX child_parent_id_idx ON child (parent_id)".into(),
        ];
        if self.grandchildren > 0 {
            let (with_grandchildren, grandchildren) = series(self.grandchildren);
            statements.extend([
                "CREATE TABLE grandchild (id integer PRIMARY KEY, child_id integer, payload text)".into(),
                format!(
                    "INSERT INTO grandchild (id, child_id, payload) {with_grandchildren}SELECT i, i * {GRANDCHILD_EVERY}, \
                     'payload of grandchild ' || i FROM {grandchildren}"
                ),
                "CREATE INDEX grandchild_child_id_idx ON grandchild (child_id)".into(),
            ]);
        }
        statements
    }
}

/// Where a data set is built: a SQLite file, or a database of a PostgreSQL server.
enum Store {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Store {
    fn name(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "SQLite",
            Store::Postgres(_) => "PostgreSQL",
        }
    }

    /// A freshly built data set (a new file or a new database); its URL. Loaded in one
    /// transaction, then analyzed; PostgreSQL's is vacuumed (hint bits and the visibility map set
    /// once, so that no run pays for the first pass over new rows) and checkpointed; then the
    /// page cache is written out.
    async fn build(&self, data: &DataSet) -> String {
        let started = Instant::now();
        let (url, kind) = match self {
            Store::Sqlite(path) => {
                for suffix in ["", "-journal", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
                // An empty file is an empty database; cascade's connections never create one.
                std::fs::File::create(path).expect("create the SQLite file");
                (format!("sqlite://{}", path.display()), Kind::Sqlite)
            }
            Store::Postgres(server) => (fresh_database(server, "cascade_orphans_bench").await, Kind::Postgres),
        };
        let database = connect(&url).await;
        let mut transaction = database.begin_write().await.expect("begin");
        for sql in data.statements(kind) {
            transaction.execute(&statement(&sql)).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        transaction.commit().await.expect("commit the data set");
        // The tool's own tables, as in a database cascade has run on before: creating them is
        // the first run's cost only.
        let migrating = Instant::now();
        cascade::db::migrate(&database).await.expect("the tool's tables");
        let migrated = migrating.elapsed();
        let after: &[&str] = match kind {
            Kind::Sqlite => &["ANALYZE"],
            Kind::Postgres => &["VACUUM ANALYZE", "CHECKPOINT"],
            Kind::Mysql => unreachable!("`orphans` does not run on MySQL"),
        };
        for sql in after {
            if let Err(error) = database.execute(&statement(sql)).await {
                eprintln!("warning: {sql} failed: {error}");
            }
        }
        let count = database.fetch_count(&statement("SELECT COUNT(*) FROM child")).await.expect("count");
        assert_eq!(count, data.rows, "child rows built");
        database.close().await;
        disk::sync_page_cache();
        eprintln!(
            "{}: data set built in {:.1} s (cascade's tables created in {:.0} ms)",
            self.name(),
            started.elapsed().as_secs_f64(),
            ms(migrated)
        );
        url
    }
}

async fn connect(url: &str) -> Database {
    Database::connect(url, Access::ReadWrite).await.expect("connect")
}

/// The config: `parent` with `child` as its child by `parent_id`, the child `strategy`; for
/// `grandchild`, a per_row child with `grandchild` as its bulk child by `child_id`.
fn config(dir: &Path, strategy: &str) -> PathBuf {
    let child = match strategy {
        "grandchild" => "children = [{ model = \"grandchild\", column = \"child_id\" }]\n\n\
                         [models.grandchild]\ntable = \"grandchild\"\nstrategy = \"bulk\""
            .to_owned(),
        strategy => format!("strategy = \"{strategy}\""),
    };
    let text = format!(
        r#"[models.parent]
table = "parent"
children = [{{ model = "child", column = "parent_id" }}]

[models.child]
table = "child"
{child}
"#
    );
    let path = dir.join(format!("orphans-{strategy}.toml"));
    std::fs::write(&path, text).expect("write the config");
    path
}

/// Whether the built cascade deletes orphans for real (`orphans --confirm`).
fn deletes_orphans() -> bool {
    let help =
        Command::new(env!("CARGO_BIN_EXE_cascade")).args(["orphans", "--help"]).output().expect("cascade --help");
    String::from_utf8_lossy(&help.stdout).contains("--confirm")
}

/// The hand-written anti-join on an open connection: the statement's time and its count.
async fn hand_count(url: &str) -> (Duration, u64) {
    let database = connect(url).await;
    let started = Instant::now();
    let orphans = database.fetch_count(&statement(COUNT_ORPHANS)).await.expect("count the orphans");
    let wall = started.elapsed();
    database.close().await;
    (wall, orphans)
}

/// One `DELETE` of every orphan (with grandchildren, one of theirs first) in a transaction of its
/// own: its time and the rows it deleted.
async fn hand_delete(url: &str, data: &DataSet) -> (Duration, u64) {
    let database = connect(url).await;
    let started = Instant::now();
    let mut transaction = database.begin_write().await.expect("begin");
    let mut deleted = 0;
    if data.grandchildren > 0 {
        deleted += transaction.execute(&statement(DELETE_ORPHANS_GRANDCHILDREN)).await.expect("delete grandchildren");
    }
    deleted += transaction.execute(&statement(DELETE_ORPHANS)).await.expect("delete the orphans");
    transaction.commit().await.expect("commit");
    let wall = started.elapsed();
    database.close().await;
    (wall, deleted)
}

/// The orphans deleted `batch` at a time, one statement and one commit per batch, in key order
/// after the last key deleted: the time from connecting to closing, the rows and the
/// transactions.
async fn hand_loop(url: &str, batch: u64) -> (Duration, u64, u64) {
    let started = Instant::now();
    let database = connect(url).await;
    let (mut last, mut deleted, mut batches) = (0_i64, 0, 0);
    loop {
        let sql = format!(
            "DELETE FROM child WHERE id IN (SELECT c.id FROM child c WHERE c.id > {last} AND c.parent_id IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM parent p WHERE p.id = c.parent_id) ORDER BY c.id LIMIT {batch}) \
             RETURNING CAST(id AS TEXT)"
        );
        let mut transaction = database.begin_write().await.expect("begin");
        let keys = transaction.fetch_texts(&statement(&sql)).await.expect("delete a batch");
        transaction.commit().await.expect("commit");
        batches += 1;
        let keys: Vec<i64> = keys.iter().filter_map(|row| row[0].as_deref()?.parse().ok()).collect();
        match keys.iter().max() {
            Some(max) => last = *max,
            None => break,
        }
        deleted += keys.len() as u64;
    }
    database.close().await;
    (started.elapsed(), deleted, batches)
}

/// Runs the built `cascade` with `config` and `url` and `arguments`; checks that it succeeded
/// and parses its JSON output.
fn cascade(config: &Path, url: &str, arguments: &[&str]) -> (Finished, serde_json::Value) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cascade"));
    command.arg("--config").arg(config).args(["--database-url", url, "-q"]).args(arguments);
    let finished = process::run_measured(&mut command);
    assert!(
        finished.status.success(),
        "cascade {} failed ({}):\n{}",
        arguments.join(" "),
        finished.status,
        finished.stderr
    );
    let json = serde_json::from_str(&finished.stdout)
        .unwrap_or_else(|e| panic!("cascade {}: not JSON ({e}):\n{}", arguments.join(" "), finished.stdout));
    (finished, json)
}

/// `cascade orphans --format json`: it must find every orphan.
fn tool_report(config: &Path, url: &str, data: &DataSet) -> Finished {
    let (finished, json) = cascade(config, url, &["orphans", "--format", "json"]);
    assert_eq!(json["total"].as_u64(), Some(data.orphans), "cascade orphans: the total in {json}");
    let relations = json["relations"].as_array().expect("relations");
    assert_eq!(relations.len(), 1, "cascade orphans: one relation in {json}");
    assert_eq!(relations[0]["orphans"].as_u64(), Some(data.orphans), "cascade orphans: the relation's orphans");
    finished
}

/// What one `cascade orphans --delete --confirm` run measured.
struct Delete {
    wall: Duration,
    peak_rss_kib: u64,
    batches: u64,
    /// The longest transaction when the output has it, else the longest batch (see `longest_of`).
    longest_ms: f64,
    longest_of: &'static str,
}

/// `cascade orphans --delete --confirm --sleep-ms 0 --format json`: it must delete every orphan
/// and nothing else.
fn tool_delete(config: &Path, url: &str, data: &DataSet) -> Delete {
    let arguments = ["orphans", "--delete", "--confirm", "--sleep-ms", "0", "--format", "json"];
    let (finished, json) = cascade(config, url, &arguments);
    let mut deleted = deleted_counts(&json);
    deleted.sort();
    let mut expected = vec![("child".to_owned(), data.orphans)];
    if data.orphaned_grandchildren > 0 {
        expected.push(("grandchild".to_owned(), data.orphaned_grandchildren));
    }
    assert_eq!(deleted, expected, "cascade orphans --delete: rows deleted in {json}");
    let number = |key: &str| find_number(&json, key);
    let (longest_ms, longest_of) = match number("longest_transaction_ms").or_else(|| number("max_transaction_ms")) {
        Some(ms) => (ms, "transaction"),
        None => (number("slowest_batch_ms").unwrap_or_else(|| panic!("no longest batch in {json}")), "batch"),
    };
    Delete {
        wall: finished.wall,
        peak_rss_kib: finished.peak_rss_kib,
        batches: number("batches").unwrap_or_else(|| panic!("no batches in {json}")) as u64,
        longest_ms,
        longest_of,
    }
}

/// The per-model counts of rows deleted (`"deleted": {MODEL: N}`, at the top or in `delete`),
/// models with none left out.
fn deleted_counts(json: &serde_json::Value) -> Vec<(String, u64)> {
    let deleted = [&json["deleted"], &json["delete"]["deleted"]]
        .into_iter()
        .find_map(serde_json::Value::as_object)
        .unwrap_or_else(|| panic!("no per-model deleted counts in {json}"));
    deleted
        .iter()
        .map(|(model, rows)| (model.clone(), rows.as_u64().expect("a row count")))
        .filter(|(_, rows)| *rows > 0)
        .collect()
}

/// The number under `key` at the top of `json` or in its `delete` object.
fn find_number(json: &serde_json::Value, key: &str) -> Option<f64> {
    json[key].as_f64().or_else(|| json["delete"][key].as_f64())
}

/// After a delete: no orphan left, and every other row still there (count and sum of ids of the
/// children, NULL parents included; the parents untouched).
async fn check_after_delete(url: &str, data: &DataSet, label: &str) {
    let database = connect(url).await;
    let count = async |sql: &str| database.fetch_count(&statement(sql)).await.expect(sql);
    assert_eq!(count(COUNT_ORPHANS).await, 0, "{label}: orphans left");
    assert_eq!(count("SELECT COUNT(*) FROM child").await, data.kept, "{label}: child rows left");
    assert_eq!(count("SELECT COALESCE(SUM(id), 0) FROM child").await, data.kept_id_sum, "{label}: ids left");
    assert_eq!(count("SELECT COUNT(*) FROM child WHERE parent_id IS NULL").await, data.nulls, "{label}: NULL rows");
    assert_eq!(count("SELECT COUNT(*) FROM parent").await, data.parents, "{label}: parent rows");
    if data.grandchildren > 0 {
        let kept = data.grandchildren - data.orphaned_grandchildren;
        assert_eq!(count("SELECT COUNT(*) FROM grandchild").await, kept, "{label}: grandchild rows left");
        let sum = count("SELECT COALESCE(SUM(id), 0) FROM grandchild").await;
        assert_eq!(sum, data.kept_grandchild_id_sum, "{label}: grandchild ids left");
    }
    database.close().await;
}

/// What one database measured over the runs.
#[derive(Default)]
struct StoreResult {
    durability: String,
    hand_count: Vec<Duration>,
    reports: Vec<Finished>,
    /// Whether the data set had grandchildren, and the single DELETE's time.
    hand_delete: Vec<(bool, Duration)>,
    /// The hand-written loop's batch size and time.
    hand_loop: Vec<(u64, Duration)>,
    deletes: Vec<(&'static str, Delete)>,
}

impl StoreResult {
    fn deletes(&self, strategy: &str) -> Vec<&Delete> {
        self.deletes.iter().filter(|(s, _)| *s == strategy).map(|(_, d)| d).collect()
    }
}

fn report(data: &DataSet, deep: &DataSet, repeat: u64, results: &[(&str, StoreResult)]) {
    println!(
        "{} child rows ({} orphans, {} with a NULL parent_id), {} parents; index on child(parent_id), no \
         foreign key. Median of {repeat} run(s), each on a freshly built data set; all runs in the last column. \
         The second data set adds {} grandchild rows (child 10 g has grandchild g, indexed by child_id), {} of them \
         below orphans.",
        data.rows, data.orphans, data.nulls, data.parents, deep.grandchildren, deep.orphaned_grandchildren
    );
    println!();
    for (name, result) in results {
        println!("- {name}: {}", result.durability);
    }
    println!();
    println!("Report: `cascade orphans --format json` (whole process) against the hand-written anti-join `COUNT(*)`.");
    println!();
    println!("| database | hand `COUNT(*)` | `cascade orphans` | × hand | peak RSS | runs: hand / cascade (ms) |");
    println!("|---|---:|---:|---:|---:|---|");
    let mut verdicts = Vec::new();
    for (name, result) in results {
        let hand = median(&result.hand_count);
        let walls: Vec<Duration> = result.reports.iter().map(|r| r.wall).collect();
        let tool = median(&walls);
        let ratio = ms(tool) / ms(hand);
        let rss = result.reports.iter().map(|r| r.peak_rss_kib).max().unwrap_or(0);
        println!(
            "| {name} | {:.1} ms | {:.1} ms | {ratio:.2}× | {} | {} / {} |",
            ms(hand),
            ms(tool),
            mib(rss),
            runs(&result.hand_count),
            runs(&walls)
        );
        verdicts.push(format!(
            "- {name}, report at most {REPORT_RATIO}× the hand count: {ratio:.2}×: {}",
            at_most(ratio, REPORT_RATIO)
        ));
    }
    println!();
    println!(
        "Delete: `cascade orphans --delete --confirm --sleep-ms 0 --format json` (whole \
         process) against one `DELETE ... WHERE parent_id IS NOT NULL AND NOT EXISTS (...)` (the statement alone)."
    );
    println!();
    println!(
        "| database | method | rows deleted | wall | rows/s | × single DELETE | batches | longest transaction | peak RSS \
         | runs (ms) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut largest_rss = 0;
    for (name, result) in results {
        if result.hand_delete.is_empty() {
            println!("| {name} | not run: this cascade has no `orphans --delete --confirm` | | | | | | | | |");
            verdicts.push(format!("- {name}: the delete targets: not measured (no `orphans --delete --confirm`)"));
            continue;
        }
        for (set, grandchildren) in [(data, false), (deep, true)] {
            let singles: Vec<Duration> =
                result.hand_delete.iter().filter(|(g, _)| *g == grandchildren).map(|(_, wall)| *wall).collect();
            let single = median(&singles);
            let single_rate = set.deleted() as f64 / single.as_secs_f64();
            println!(
                "| {name} | single DELETE{} | {} | {:.0} ms | {single_rate:.0} | 1.00× | 1 | {:.0} ms (one transaction) | | \
                 {} |",
                if grandchildren { "s (grandchildren, then children)" } else { "" },
                set.deleted(),
                ms(single),
                ms(single),
                runs(&singles)
            );
            for batch in HAND_LOOP_BATCHES.iter().filter(|_| !grandchildren) {
                let walls: Vec<Duration> =
                    result.hand_loop.iter().filter(|(b, _)| b == batch).map(|(_, wall)| *wall).collect();
                let wall = median(&walls);
                let rate = set.deleted() as f64 / wall.as_secs_f64();
                println!(
                    "| {name} | hand-written loop, {batch} per transaction | {} | {:.0} ms | {rate:.0} | {:.2}× | {} \
                     | | | {} |",
                    set.deleted(),
                    ms(wall),
                    rate / single_rate,
                    set.deleted().div_ceil(*batch) + 1,
                    runs(&walls)
                );
            }
            for (strategy, label, _) in STRATEGIES.iter().filter(|(.., g)| *g == grandchildren) {
                let deletes = result.deletes(strategy);
                let walls: Vec<Duration> = deletes.iter().map(|d| d.wall).collect();
                let wall = median(&walls);
                let rate = set.deleted() as f64 / wall.as_secs_f64();
                let ratio = rate / single_rate;
                let longest = deletes.iter().map(|d| d.longest_ms).fold(0.0, f64::max);
                let longest_of = deletes.first().map_or("?", |d| d.longest_of);
                let rss = deletes.iter().map(|d| d.peak_rss_kib).max().unwrap_or(0);
                largest_rss = largest_rss.max(rss);
                let mut batches: Vec<String> = deletes.iter().map(|d| d.batches.to_string()).collect();
                batches.dedup();
                println!(
                    "| {name} | cascade, {label} | {} | {:.0} ms | {rate:.0} | {ratio:.2}× | {} | {longest:.1} ms{} | {} \
                     | {} |",
                    set.deleted(),
                    ms(wall),
                    batches.join(", "),
                    if longest_of == "transaction" { "" } else { " (longest batch)" },
                    mib(rss),
                    runs(&walls)
                );
                verdicts.push(format!(
                    "- {name}, {strategy}: delete at least {DELETE_RATIO}× the single DELETE's rows/s: {ratio:.2}× \
                     ({rate:.0} against {single_rate:.0} rows/s): {}",
                    at_least(ratio, DELETE_RATIO)
                ));
                verdicts.push(format!(
                    "- {name}, {strategy}: no transaction over {LONGEST_TRANSACTION_MS:.0} ms: longest {longest:.1} ms \
                     (the longest {longest_of} cascade reports, over all runs): {}",
                    at_most(longest, LONGEST_TRANSACTION_MS)
                ));
            }
        }
    }
    let report_rss = results.iter().flat_map(|(_, r)| &r.reports).map(|r| r.peak_rss_kib).max().unwrap_or(0);
    let largest = largest_rss.max(report_rss) as f64 / 1024.0;
    verdicts.push(format!(
        "- Peak RSS of every cascade run under {PEAK_RSS_MIB:.0} MiB: largest {largest:.1} MiB: {}",
        if largest < PEAK_RSS_MIB { "met".to_owned() } else { missed(largest / PEAK_RSS_MIB - 1.0) }
    ));
    println!();
    println!("Targets:");
    println!();
    for verdict in verdicts {
        println!("{verdict}");
    }
}

fn at_most(value: f64, limit: f64) -> String {
    if value <= limit { "met".to_owned() } else { missed(value / limit - 1.0) }
}

fn at_least(value: f64, limit: f64) -> String {
    if value >= limit { "met".to_owned() } else { missed(1.0 - value / limit) }
}

fn missed(by: f64) -> String {
    format!("**missed** by {:.1} %", by * 100.0)
}

/// The median of `durations` (the upper one of an even count).
fn median(durations: &[Duration]) -> Duration {
    let mut sorted = durations.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn runs(durations: &[Duration]) -> String {
    durations.iter().map(|d| format!("{:.0}", ms(*d))).collect::<Vec<_>>().join(", ")
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}
