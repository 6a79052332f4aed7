//! The ways of deleting root 1 that the bench compares, and what each one measured.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::store::Conn;
use crate::tree::{DELETED_ROOT, Dialect, Keys, Tree};

/// Keys the hand-written loop takes per transaction.
pub const LOOP_BATCH: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One `DELETE` of the root row, the database cascading along every foreign key.
    Native,
    /// ... after inserting by hand, in the same transaction, the tombstones cascade writes with
    /// the outbox: the physical limit of "+ outbox".
    NativeWithTombstones,
    /// ... with the same number of tombstones written into a table of two columns (a key and the
    /// object) with no other index: the limit of any outbox that writes a row per deleted row.
    NativeWithBareTombstones,
    /// ... with an `AFTER DELETE` trigger per outbox table writing, for every row the cascade
    /// deletes, the tombstone cascade writes into `cascade_outbox_entry`: what a user of native cascades
    /// would build for an outbox.
    NativeWithTrigger,
    /// Batches of the per_row table above the leaves, written by hand with sqlx.
    Loop,
    /// `cascade delete` with the default settings.
    Cascade,
    /// ... with a status check on the root and outbox tombstones.
    Outbox,
    /// ... and `--archive DIR`.
    Archive,
    /// `cascade delete` on tables without foreign keys.
    CascadeWithoutKeys,
    /// The hand-written loop on tables without foreign keys.
    LoopWithoutKeys,
    /// Percona Toolkit's `pt-archiver` purging each table, children first (MariaDB only).
    PtArchiver,
}

impl Method {
    pub fn keys(self) -> Keys {
        match self {
            Method::Native
            | Method::NativeWithTombstones
            | Method::NativeWithBareTombstones
            | Method::NativeWithTrigger => Keys::Cascading,
            Method::Loop | Method::Cascade | Method::Outbox | Method::Archive | Method::PtArchiver => Keys::Enforced,
            Method::CascadeWithoutKeys | Method::LoopWithoutKeys => Keys::Absent,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::Native => "native DELETE",
            Method::NativeWithTombstones => "native DELETE + tombstones",
            Method::NativeWithBareTombstones => "native DELETE + bare tombstones",
            Method::NativeWithTrigger => "native DELETE + trigger tombstones",
            Method::Loop | Method::LoopWithoutKeys => "hand-written loop",
            Method::Cascade | Method::CascadeWithoutKeys => "cascade",
            Method::Outbox => "cascade + outbox + status",
            Method::Archive => "cascade + outbox + status + archive",
            Method::PtArchiver => "pt-archiver",
        }
    }

    /// The method's word for `--methods`.
    pub fn slug(self) -> &'static str {
        match self {
            Method::Native => "native",
            Method::NativeWithTombstones => "native-tombstones",
            Method::NativeWithBareTombstones => "native-bare-tombstones",
            Method::NativeWithTrigger => "native-trigger",
            Method::Loop => "loop",
            Method::Cascade => "cascade",
            Method::Outbox => "outbox",
            Method::Archive => "archive",
            Method::CascadeWithoutKeys => "cascade-no-fks",
            Method::LoopWithoutKeys => "loop-no-fks",
            Method::PtArchiver => "pt-archiver",
        }
    }

    /// Whether the method deletes `tree` on `dialect`. On MariaDB: the native DELETE with
    /// tombstones writes SQL of SQLite and PostgreSQL only (and InnoDB's cascades fire no
    /// trigger); the hand-written loop's `DELETE ... IN (list)` is a scan of the whole table
    /// there (MariaDB plans no semi-join for a single-table `DELETE`), and pt-archiver is the
    /// baseline its users know; InnoDB cascades 15 levels at most (error 193), so its native
    /// DELETE fails on the forest's threads 50 deep. pt-archiver purges MySQL and MariaDB only.
    pub fn runs_on(self, dialect: Dialect, tree: &Tree) -> bool {
        let mysql = dialect == Dialect::Mysql;
        match self {
            Method::NativeWithTombstones
            | Method::NativeWithBareTombstones
            | Method::NativeWithTrigger
            | Method::Loop
            | Method::LoopWithoutKeys => !mysql,
            Method::Native => !(mysql && tree.tables.iter().any(|table| table.threads)),
            Method::PtArchiver => mysql,
            _ => true,
        }
    }

    pub fn is_cascade(self) -> bool {
        matches!(self, Method::Cascade | Method::Outbox | Method::Archive | Method::CascadeWithoutKeys)
    }

    /// The same method on the same foreign keys by the other side: cascade for a loop.
    pub fn loop_counterpart(self) -> Option<Method> {
        match self {
            Method::Loop => Some(Method::Cascade),
            Method::LoopWithoutKeys => Some(Method::CascadeWithoutKeys),
            _ => None,
        }
    }
}

/// What one method measured.
pub struct Outcome {
    pub method: Method,
    /// Rows it deleted (checked against the tree).
    pub rows: u64,
    /// From start to end: for cascade the whole process, for the loop connecting included, for
    /// the native DELETE the statement alone.
    pub wall: Duration,
    /// Every run's wall, in the order they ran (one unless [`Outcome::median_of`] made it).
    pub walls: Vec<Duration>,
    pub transactions: u64,
    pub max_ms: f64,
    pub p99_ms: Option<f64>,
    /// cascade's own `elapsed_ms` (the deletion, without start-up and checks).
    pub engine_ms: Option<f64>,
    pub rss_kib: Option<u64>,
}

impl Outcome {
    /// A native method's outcome: the tree's deleted rows in one transaction of `wall`.
    fn one_transaction(method: Method, tree: &Tree, wall: Duration) -> Outcome {
        let ms = wall.as_secs_f64() * 1e3;
        Outcome {
            method,
            rows: tree.deleted.iter().sum(),
            wall,
            walls: vec![wall],
            transactions: 1,
            max_ms: ms,
            p99_ms: Some(ms),
            engine_ms: None,
            rss_kib: None,
        }
    }

    pub fn rows_per_second(&self) -> f64 {
        self.rows as f64 / self.wall.as_secs_f64()
    }

    /// The run with the median wall time (the upper one of an even count), with every run's wall
    /// and the worst longest transaction, p99 and peak RSS of them all: a target on those holds
    /// for every run, not for the median one only.
    pub fn median_of(mut runs: Vec<Outcome>) -> Outcome {
        let walls = runs.iter().map(|o| o.wall).collect();
        // NaN (not timed) stays NaN: `f64::max` takes the number of a number and a NaN.
        let max_ms = runs.iter().map(|o| o.max_ms).fold(f64::NAN, f64::max);
        let p99_ms = runs.iter().filter_map(|o| o.p99_ms).reduce(f64::max);
        let rss_kib =
            if runs.iter().all(|o| o.rss_kib.is_some()) { runs.iter().filter_map(|o| o.rss_kib).max() } else { None };
        runs.sort_by_key(|o| o.wall);
        let median = runs.swap_remove(runs.len() / 2);
        Outcome { walls, max_ms, p99_ms, rss_kib, ..median }
    }
}

/// What the runs of `cascade` need: the binary, the config files and a scratch directory.
pub struct Cascade {
    pub binary: PathBuf,
    pub dir: PathBuf,
}

/// Runs `method` on the database at `url` (a fresh copy with `method.keys()`).
pub async fn run(method: Method, cascade: &Cascade, tree: &Tree, dialect: Dialect, url: &str) -> Outcome {
    match method {
        Method::Native => native(tree, url).await,
        Method::NativeWithTombstones | Method::NativeWithBareTombstones => {
            native_with_tombstones(method, tree, dialect, url).await
        }
        Method::NativeWithTrigger => native_with_trigger(tree, dialect, url).await,
        Method::Loop | Method::LoopWithoutKeys => hand_written_loop(method, tree, dialect, url).await,
        Method::PtArchiver => pt_archiver(tree, url).await,
        Method::Cascade | Method::CascadeWithoutKeys => cascade.run(method, tree, url, false, None),
        Method::Outbox => cascade.run(method, tree, url, true, None),
        Method::Archive => {
            let archive = cascade.dir.join("archive");
            std::fs::create_dir_all(&archive).expect("the archive directory");
            let outcome = cascade.run(method, tree, url, true, Some(&archive));
            check_archive(tree, &archive);
            std::fs::remove_dir_all(&archive).expect("remove the archive");
            outcome
        }
    }
}

/// One `DELETE FROM root WHERE id = 1`, in its own transaction.
async fn native(tree: &Tree, url: &str) -> Outcome {
    let mut connection = Conn::connect(url).await;
    if url.starts_with("sqlite:") {
        connection.execute("PRAGMA foreign_keys = ON").await;
    }
    let start = Instant::now();
    connection.execute(&format!("DELETE FROM {} WHERE id = {DELETED_ROOT}", tree.root())).await;
    let wall = start.elapsed();
    connection.close().await;
    Outcome::one_transaction(Method::Native, tree, wall)
}

/// The native `DELETE` preceded, in its transaction, by one `INSERT ... SELECT` per outbox table
/// of the tombstones cascade writes (`outbox_tables`): into the tool's own `cascade_outbox_entry` (the
/// template has the tool's tables, with their indexes), or for the bare tombstones into a table
/// of a key and the object only, made before the clock starts. The statements alone are timed.
async fn native_with_tombstones(method: Method, tree: &Tree, dialect: Dialect, url: &str) -> Outcome {
    let mut connection = Conn::connect(url).await;
    if dialect == Dialect::Sqlite {
        connection.execute("PRAGMA foreign_keys = ON").await;
    }
    let bare = method == Method::NativeWithBareTombstones;
    if bare {
        let key = if dialect == Dialect::Sqlite {
            "INTEGER PRIMARY KEY"
        } else {
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        };
        connection.execute(&format!("CREATE TABLE bare_tombstone (id {key}, object_identifier TEXT NOT NULL)")).await;
    }
    let codes = tombstone_codes(&mut connection, tree, dialect).await;
    let start = Instant::now();
    connection.execute("BEGIN").await;
    let mut tombstones = 0;
    for table in outbox_tables(tree) {
        let under = tree.under(tree.table(table), DELETED_ROOT);
        let insert = if bare {
            format!("INSERT INTO bare_tombstone (object_identifier) SELECT CAST(id AS TEXT) FROM {table} WHERE {under}")
        } else {
            let values = codes[table].replace("{id}", "id");
            format!(
                "INSERT INTO cascade_outbox_entry (scope_code, shard_identifier, category_code, model_code, \
                 object_identifier, payload) SELECT {values}, NULL FROM {table} WHERE {under}"
            )
        };
        tombstones += connection.execute(&insert).await;
    }
    connection.execute(&format!("DELETE FROM {} WHERE id = {DELETED_ROOT}", tree.root())).await;
    connection.execute("COMMIT").await;
    let wall = start.elapsed();
    connection.close().await;
    assert_eq!(tombstones, tree.deleted_in(&outbox_tables(tree)), "a tombstone per deleted outbox row");
    Outcome::one_transaction(method, tree, wall)
}

/// The native `DELETE` with a row-level `AFTER DELETE` trigger on each outbox table (`grp`,
/// `event`), made before the clock starts, inserting the tombstone cascade writes for the deleted
/// row into `cascade_outbox_entry` (same scope, shard, category, model and object codes). The
/// `DELETE` alone is timed, in its own transaction; the tombstones are counted afterwards.
async fn native_with_trigger(tree: &Tree, dialect: Dialect, url: &str) -> Outcome {
    let mut connection = Conn::connect(url).await;
    if dialect == Dialect::Sqlite {
        connection.execute("PRAGMA foreign_keys = ON").await;
    }
    let codes = tombstone_codes(&mut connection, tree, dialect).await;
    for table in outbox_tables(tree) {
        let values = codes[table].replace("{id}", "OLD.id");
        let insert = format!(
            "INSERT INTO cascade_outbox_entry (scope_code, shard_identifier, category_code, model_code, \
             object_identifier, payload) VALUES ({values}, NULL);"
        );
        let trigger = match dialect {
            Dialect::Sqlite => {
                format!("CREATE TRIGGER {table}_tombstone AFTER DELETE ON {table} FOR EACH ROW BEGIN {insert} END")
            }
            Dialect::Postgres => format!(
                "CREATE FUNCTION {table}_tombstone() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {insert} \
                 RETURN NULL; END $$; CREATE TRIGGER {table}_tombstone AFTER DELETE ON {table} FOR EACH ROW \
                 EXECUTE FUNCTION {table}_tombstone()"
            ),
            Dialect::Mysql => unreachable!("InnoDB's cascades fire no trigger: the method does not run on MariaDB"),
        };
        connection.execute(&trigger).await;
    }
    let start = Instant::now();
    connection.execute(&format!("DELETE FROM {} WHERE id = {DELETED_ROOT}", tree.root())).await;
    let wall = start.elapsed();
    let tombstones = connection.counts(&["SELECT COUNT(*) FROM cascade_outbox".to_owned()]).await[0];
    connection.close().await;
    assert_eq!(tombstones, tree.deleted_in(&outbox_tables(tree)), "a tombstone per deleted outbox row");
    Outcome::one_transaction(Method::NativeWithTrigger, tree, wall)
}

/// What an application would write by hand: repeat { in one transaction: select up to 500 keys
/// of the table above the leaves under root 1, in key order; delete the leaves' rows of those
/// keys; delete those rows; commit } until none are left; then the tables above, deepest first,
/// in one transaction. Timed from connecting to closing.
async fn hand_written_loop(method: Method, tree: &Tree, dialect: Dialect, url: &str) -> Outcome {
    let start = Instant::now();
    let mut connection = Conn::connect(url).await;
    let batch = tree.batch_table();
    let select = format!(
        "SELECT id FROM {} WHERE {} ORDER BY id LIMIT {LOOP_BATCH}",
        batch.name,
        tree.under(batch, DELETED_ROOT)
    );
    let mut deletes: Vec<String> = tree
        .children(batch.name)
        .map(|leaf| format!("DELETE FROM {} WHERE {}", leaf.name, dialect.in_keys(&format!("{}_id", batch.name))))
        .collect();
    deletes.push(format!("DELETE FROM {} WHERE {}", batch.name, dialect.in_keys("id")));
    let (mut rows, mut times) = (0, Vec::new());
    loop {
        let started = Instant::now();
        connection.execute("BEGIN").await;
        let keys = connection.integers(&select).await;
        if keys.is_empty() {
            connection.execute("COMMIT").await;
            break;
        }
        for delete in &deletes {
            rows += connection.execute_keys(delete, &keys).await;
        }
        connection.execute("COMMIT").await;
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let started = Instant::now();
    connection.execute("BEGIN").await;
    for table in tree.ancestors(batch) {
        rows +=
            connection.execute(&format!("DELETE FROM {} WHERE {}", table.name, tree.under(table, DELETED_ROOT))).await;
    }
    connection.execute("COMMIT").await;
    times.push(started.elapsed().as_secs_f64() * 1e3);
    connection.close().await;
    let wall = start.elapsed();
    Outcome {
        method,
        rows,
        wall,
        walls: vec![wall],
        transactions: times.len() as u64,
        max_ms: times.iter().copied().fold(0.0, f64::max),
        p99_ms: Some(nearest_rank(&times, 0.99)),
        engine_ms: None,
        rss_kib: None,
    }
}

/// Rows `pt-archiver` fetches and deletes per chunk: cascade's chunk size for a bulk model.
pub const PT_ARCHIVER_LIMIT: u64 = 10_000;

/// `pt-archiver --purge` of root 1's rows, table by table, leaves first (as its users order a
/// purge by hand), each run `--where` the table's condition, `--limit` [`PT_ARCHIVER_LIMIT`],
/// `--commit-each` and `--bulk-delete` (one `DELETE` per chunk, its fastest way). Every process
/// timed whole; the transactions are the commits it counts.
async fn pt_archiver(tree: &Tree, url: &str) -> Outcome {
    let (user_host, rest) = url.trim_start_matches("mysql://").split_once('/').expect("a mysql:// URL");
    let (user, host) = user_host.split_once('@').expect("user@host");
    let (database, socket) = rest.split_once("?socket=").expect("a socket in the URL");
    let (mut rows, mut commits) = (0, 0);
    let start = Instant::now();
    for table in tree.tables.iter().rev() {
        let output = Command::new("pt-archiver")
            .arg("--source")
            .arg(format!("h={host},u={user},S={socket},D={database},t={}", table.name))
            .args(["--purge", "--where", &tree.under(table, DELETED_ROOT), "--limit", &PT_ARCHIVER_LIMIT.to_string()])
            .args(["--commit-each", "--bulk-delete", "--primary-key-only", "--no-check-charset"])
            .args(["--no-safe-auto-increment", "--statistics"])
            .output()
            .expect("run pt-archiver (Debian: percona-toolkit)");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "pt-archiver failed: {stdout}{}", String::from_utf8_lossy(&output.stderr));
        // Its statistics: "DELETE N", and "commit N SECONDS PERCENT".
        let counted = |word: &str| -> u64 {
            let count =
                stdout.lines().find_map(|line| line.strip_prefix(word)?.split_whitespace().next()?.parse().ok());
            count.unwrap_or_else(|| panic!("`{word}` in pt-archiver's statistics: {stdout}"))
        };
        rows += counted("DELETE ");
        commits += counted("commit ");
    }
    let wall = start.elapsed();
    Outcome {
        method: Method::PtArchiver,
        rows,
        wall,
        walls: vec![wall],
        transactions: commits,
        // It does not time its transactions.
        max_ms: f64::NAN,
        p99_ms: None,
        engine_ms: None,
        rss_kib: None,
    }
}

/// The `quantile` (0 to 1) of `values` by nearest rank, as cascade's summary computes it.
fn nearest_rank(values: &[f64], quantile: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied().unwrap_or(0.0)
}

impl Cascade {
    /// The config file of `tree`: with `extras`, a status check on the root and outbox
    /// categories on the per_row table above the leaves and on the last leaf.
    fn config(&self, tree: &Tree, extras: bool) -> PathBuf {
        let path = self.dir.join(format!("{}{}.toml", tree.name, if extras { "-outbox-status" } else { "" }));
        if !path.exists() {
            let text = if extras { tree.config(true, &outbox_tables(tree)) } else { tree.config(false, &[]) };
            std::fs::write(&path, text).expect("write the config");
        }
        path
    }

    /// Runs `cascade delete ROOT 1 --confirm --format json`, under `/usr/bin/time -f %M` when
    /// available for the peak RSS, and checks its summary against the tree.
    fn run(&self, method: Method, tree: &Tree, url: &str, extras: bool, archive: Option<&Path>) -> Outcome {
        let time = Path::new("/usr/bin/time");
        let mut command = if time.exists() {
            let mut command = Command::new(time);
            command.args(["-f", "%M"]).arg(&self.binary);
            command
        } else {
            eprintln!("warning: /usr/bin/time not found: no peak RSS");
            Command::new(&self.binary)
        };
        command.arg("--config").arg(self.config(tree, extras)).args(["--database-url", url]);
        command.args(["delete", tree.root(), &DELETED_ROOT.to_string(), "--confirm", "--format", "json"]);
        if let Some(archive) = archive {
            command.arg("--archive").arg(archive);
        }
        let start = Instant::now();
        let output = command.output().expect("run cascade");
        let wall = start.elapsed();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "cascade delete failed ({}):\n{stderr}", output.status);
        let rss_kib = time.exists().then(|| stderr.lines().last().and_then(|l| l.trim().parse().ok())).flatten();
        let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON summary");
        let number = |key: &str| summary[key].as_f64().unwrap_or_else(|| panic!("`{key}` in the summary: {summary}"));
        let deleted: BTreeMap<&str, u64> = summary["deleted"]
            .as_object()
            .expect("`deleted` in the summary")
            .iter()
            .map(|(model, rows)| (model.as_str(), rows.as_u64().expect("a row count")))
            .collect();
        for (table, expected) in tree.tables.iter().zip(&tree.deleted) {
            let by_cascade = deleted.get(table.name).copied().unwrap_or(0);
            assert_eq!(by_cascade, *expected, "{}: cascade deleted {by_cascade} `{}` rows", method.name(), table.name);
        }
        let tombstones = if extras { tree.deleted_in(&outbox_tables(tree)) } else { 0 };
        assert_eq!(number("outbox_rows") as u64, tombstones, "{}: outbox tombstones", method.name());
        Outcome {
            method,
            rows: deleted.values().sum(),
            wall,
            walls: vec![wall],
            transactions: number("chunks") as u64,
            max_ms: number("max_chunk_ms"),
            p99_ms: summary["p99_chunk_ms"].as_f64(),
            engine_ms: Some(number("elapsed_ms")),
            rss_kib,
        }
    }
}

/// The tables that write outbox tombstones with `extras`: the per_row table above the leaves and
/// its last leaf (`grp` and `event` in the realistic tree).
/// Registers the names of each outbox table's tombstones (scope, category, model) as cascade
/// does before a deletion, and returns per table the SQL of a tombstone's first five values
/// (scope, shard, category and model codes, object) for the row whose key is `{id}`: the codes
/// are literals, as a hand-written insert would have them, and the integer key is stored as
/// cascade stores it (an integer on SQLite, text on PostgreSQL).
async fn tombstone_codes(connection: &mut Conn, tree: &Tree, dialect: Dialect) -> BTreeMap<&'static str, String> {
    let mut codes = BTreeMap::new();
    for table in outbox_tables(tree) {
        let names = ["bench".to_owned(), format!("{table}_deleted"), table.to_owned()];
        let values: Vec<String> = names.iter().map(|name| format!("('{name}')")).collect();
        connection
            .execute(&format!(
                "INSERT INTO cascade_outbox_name (name) VALUES {} ON CONFLICT (name) DO NOTHING",
                values.join(", ")
            ))
            .await;
        let mut code = Vec::new();
        for name in &names {
            code.push(
                connection
                    .integers(&format!("SELECT CAST(code AS BIGINT) FROM cascade_outbox_name WHERE name = '{name}'"))
                    .await[0],
            );
        }
        let key = if dialect == Dialect::Sqlite { "{id}" } else { "CAST({id} AS TEXT)" };
        codes.insert(table, format!("{}, {key}, {}, {}, {key}", code[0], code[1], code[2]));
    }
    codes
}

fn outbox_tables(tree: &Tree) -> Vec<&'static str> {
    let batch = tree.batch_table();
    let leaf = tree.children(batch.name).last().expect("a leaf");
    vec![batch.name, leaf.name]
}

/// The archive holds every deleted row once: one JSON line per row in `MODEL.RUN.jsonl.gz`.
fn check_archive(tree: &Tree, archive: &Path) {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for entry in std::fs::read_dir(archive).expect("read the archive") {
        let path = entry.expect("an archive file").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let model = name.split('.').next().unwrap().to_owned();
        let file = std::fs::File::open(&path).expect("open an archive file");
        let count = BufReader::new(flate2::read::MultiGzDecoder::new(file)).lines().count() as u64;
        *lines.entry(model).or_default() += count;
    }
    for (table, expected) in tree.tables.iter().zip(&tree.deleted) {
        let archived = lines.get(table.name).copied().unwrap_or(0);
        assert_eq!(archived, *expected, "archive: {archived} `{}` rows", table.name);
    }
}
