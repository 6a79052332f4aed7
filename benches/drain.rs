//! Draining the outbox: `cascade outbox drain --once` over a backlog of tombstones in many shards,
//! through a batching command sink, a local webhook and a Kafka topic on librdkafka's mock cluster
//! (a Kafka-protocol broker run inside this process), against the floor of one `DELETE` of the
//! same rows. Run: `cargo bench --bench drain` (`-- --rows N` for another backlog; the default is
//! 450,000 rows in 1,000 shards, the tombstones of the delete bench's 1M-row tree). Progress goes
//! to stderr, the markdown table to stdout. `--sinks command,webhook,kafka` and `--concurrency 1,4`
//! (the defaults) choose the cases; `--baseline PATH` runs every case a second time, right after
//! the first, with another build of `cascade` (an earlier commit's), for a comparison in one run.
//!
//! `--database sqlite` drains a SQLite file instead (the embedded default), `--shards N` spreads
//! the backlog over N shards instead of 1,000.
//!
//! Each shard holds `rows / shards` rows over 80 % as many objects (one row in five is coalesced
//! into a later row of its object). The backlog is spread over 1,000 shards, and for the command
//! sink also written into a single shard (one large deletion's tombstones). Timed: the whole `cascade` process (start-up, config, claims,
//! deliveries, deletes), each run on a freshly written backlog; memory is the process's peak RSS.
//! Every run is checked: the table is empty afterwards, and the webhook and the Kafka topic (its
//! partitions' offsets, on a fresh mock cluster per run) received every coalesced message.

#[path = "common/args.rs"]
mod args;
#[path = "common/database.rs"]
mod database;
#[path = "common/process.rs"]
mod process;
#[path = "common/server.rs"]
mod server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::DefaultProducerContext;

use args::{list_argument, number_argument, text_argument};
use cascade::db::{Access, Database, Kind};
use database::{durability, fresh_database, statement};
use server::Server;

const DEFAULT_ROWS: u64 = 450_000;
const SHARDS: u64 = 1_000;
const BATCH_SIZE: u64 = 500;
const CONCURRENCY: usize = 4;

struct Run {
    label: String,
    rows: u64,
    messages: u64,
    drain: Duration,
    peak_rss_kib: u64,
}

fn main() {
    let rows = number_argument("--rows").unwrap_or(DEFAULT_ROWS);
    let shards = number_argument("--shards").unwrap_or(SHARDS);
    let sqlite = text_argument("--database").is_some_and(|database| database == "sqlite");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = if sqlite {
        None
    } else {
        let Some(server) = Server::postgres() else {
            eprintln!("no PostgreSQL: set CASCADE_TEST_POSTGRES_URL or install the server binaries");
            std::process::exit(1);
        };
        Some(server)
    };
    // A database of each build's own; on SQLite a file in the temporary directory.
    let database_url = |name: &str| match &server {
        Some(server) => runtime.block_on(fresh_database(&server.url, name)),
        None => {
            // An empty file is an empty SQLite database; cascade opens only files that exist.
            let file = dir.path().join(format!("{name}.db"));
            std::fs::File::create(&file).expect("a database file");
            format!("sqlite://{}", file.display())
        }
    };
    let url = database_url("cascade_drain_bench");
    let received = Arc::new(AtomicU64::new(0));
    let webhook = runtime.block_on(start_webhook(received.clone()));

    let mut runs = Vec::new();
    let (durability, floor) = runtime.block_on(async {
        let database = Database::connect(&url, Access::ReadWrite).await.expect("connect");
        cascade::db::migrate(&database).await.expect("the tool's tables");
        let durability = format!("{:?} ({})", database.kind(), durability(&database).await);
        let messages = write_backlog(&database, rows, shards, false).await;
        let started = Instant::now();
        let deleted = database.execute_alone(&statement("DELETE FROM cascade_outbox_entry")).await.expect("delete");
        assert_eq!(deleted, rows);
        let floor = started.elapsed();
        database.close().await;
        eprintln!("floor: one DELETE of {rows} rows ({messages} messages) in {floor:?}");
        (durability, floor)
    });

    let chosen = list_argument("--sinks").unwrap_or_else(|| ["command", "webhook", "kafka"].map(String::from).into());
    let concurrencies: Vec<usize> = list_argument("--concurrency").map_or(vec![1, CONCURRENCY], |list| {
        list.iter().map(|n| n.parse().expect("--concurrency takes numbers")).collect()
    });
    let sinks: Vec<_> = [
        ("command", "command sink (`cat`)", "command = [\"cat\"]".to_owned()),
        ("webhook", "webhook (local HTTP server)", format!("url = \"{webhook}/tombstones\"")),
        ("kafka", KAFKA, format!("kafka = {{ brokers = \"{BOOTSTRAP_PLACEHOLDER}\" }}")),
    ]
    .into_iter()
    .filter(|(name, ..)| chosen.iter().any(|chosen| chosen == name))
    .map(|(_, label, target)| (label, target))
    .collect();
    // The shape of one large deletion: every tombstone in the shard of its organization.
    let one_shard = sinks
        .iter()
        .filter(|(label, _)| label.starts_with("command"))
        .map(|(label, target)| (*label, target.as_str(), 1, rows, 1));
    let cases = sinks.iter().flat_map(|(label, target)| {
        concurrencies.iter().flat_map(move |&concurrency| {
            [rows / 10, rows].into_iter().map(move |backlog| (*label, target.as_str(), concurrency, backlog, shards))
        })
    });
    let built = Build { label: String::new(), binary: PathBuf::from(env!("CARGO_BIN_EXE_cascade")), url: url.clone() };
    // The baseline drains a database of its own, whose tables its own migrations made: an earlier
    // build refuses tables newer than it knows.
    let baseline = text_argument("--baseline").map(|path| {
        let url = database_url("cascade_drain_bench_baseline");
        let binary = PathBuf::from(path);
        run_drain(&binary, &config(dir.path(), "command = [\"cat\"]"), &url, 1);
        Build { label: BASELINE.to_owned(), binary, url }
    });
    let builds: Vec<_> = std::iter::once(built).chain(baseline).collect();
    for (label, target, concurrency, backlog, shards) in cases.chain(one_shard) {
        for build in &builds {
            let case = Case { label, build, target, concurrency, backlog, shards };
            runs.push(runtime.block_on(measure(&case, dir.path(), &received)));
        }
    }
    report(&runs, rows, floor, &durability);
}

/// A build of `cascade` and the database it drains.
struct Build {
    /// What a run's label says of the binary: nothing for the one built with the bench.
    label: String,
    binary: PathBuf,
    url: String,
}

impl Build {
    fn is_baseline(&self) -> bool {
        !self.label.is_empty()
    }
}

/// One drain to measure: a sink, a backlog and how many shards it is spread over.
struct Case<'a> {
    label: &'a str,
    build: &'a Build,
    target: &'a str,
    concurrency: usize,
    backlog: u64,
    shards: u64,
}

/// The end of the label of a run of the `--baseline` build.
const BASELINE: &str = " (baseline build)";

/// The Kafka sink's label; its config names the mock cluster's brokers through a placeholder.
const KAFKA: &str = "Kafka (mock cluster, 3 brokers)";
const BOOTSTRAP_PLACEHOLDER: &str = "{bootstrap}";
/// The topic the sink's default template names for the bench's scope and category.
const TOPIC: &str = "cascade.organization.project_update";
const PARTITIONS: i32 = 12;

/// Writes the case's backlog, drains it with `cascade outbox drain --once` and checks the result.
async fn measure(case: &Case<'_>, dir: &Path, received: &AtomicU64) -> Run {
    let url = case.build.url.as_str();
    // A fresh cluster per run: its topic counts this run's records only.
    let kafka = (case.label == KAFKA).then(|| {
        let cluster = MockCluster::new(3).expect("a mock Kafka cluster");
        cluster.create_topic(TOPIC, PARTITIONS, 3).expect("the topic");
        cluster
    });
    let target = match &kafka {
        Some(cluster) => case.target.replace(BOOTSTRAP_PLACEHOLDER, &cluster.bootstrap_servers()),
        None => case.target.to_owned(),
    };
    let config = config(dir, &target);
    let database = Database::connect(url, Access::ReadWrite).await.expect("connect");
    let messages = write_backlog(&database, case.backlog, case.shards, case.build.is_baseline()).await;
    received.store(0, Ordering::SeqCst);
    let (drain, peak_rss_kib) =
        tokio::task::block_in_place(|| run_drain(&case.build.binary, &config, url, case.concurrency));
    let left = database.fetch_count(&statement("SELECT COUNT(*) FROM cascade_outbox")).await.expect("count");
    database.close().await;
    assert_eq!(left, 0, "{}: the backlog is drained", case.label);
    if case.label.starts_with("webhook") {
        assert_eq!(received.load(Ordering::SeqCst), messages, "{}: every message reached the webhook", case.label);
    }
    if let Some(cluster) = &kafka {
        let records = tokio::task::block_in_place(|| records_in_topic(cluster));
        assert_eq!(records, messages, "{}: every message is in the topic, once", case.label);
    }
    let label = format!("{}, {} shards, concurrency {}{}", case.label, case.shards, case.concurrency, case.build.label);
    eprintln!("{label}: {} rows, {messages} messages in {drain:?}, peak RSS {peak_rss_kib} KiB", case.backlog);
    Run { label, rows: case.backlog, messages, drain, peak_rss_kib }
}

/// The project directory of one sink: its config, batching `BATCH_SIZE` messages per delivery.
fn config(dir: &Path, target: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
[models.project]
table = "project"
outbox = "project_update"

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["project_update"]
sink = "bench"

[outbox.sinks.bench]
{target}
batch_size = {BATCH_SIZE}
timeout = "30s"
"#
    );
    let path = dir.join("cascade.toml");
    std::fs::write(&path, text).expect("write the config");
    path
}

/// Writes `rows` tombstones over `shards` shards, one in five coalesced; the messages they make.
/// `legacy`: into the table of the tool's tables before migration 9 (for the baseline build).
async fn write_backlog(database: &Database, rows: u64, shards: u64, legacy: bool) -> u64 {
    // At least one row per shard and one object per shard, for small `--rows`.
    let per_shard = (rows / shards).max(1);
    let objects = (per_shard * 4 / 5).max(1);
    // As cascade writes them: text on PostgreSQL; on SQLite an identifier whose text is an
    // integer's is stored as the integer.
    let as_written = |expression: String| match database.kind() {
        Kind::Sqlite => expression,
        Kind::Postgres => format!("CAST({expression} AS TEXT)"),
        Kind::Mysql => unreachable!("the outbox does not run on MySQL"),
    };
    let (shard, object) =
        (as_written(format!("n / {per_shard}")), as_written(format!("(n / {per_shard}) * 100000 + n % {objects}")));
    let (table, sql) = if legacy {
        let columns = "scope, shard_identifier, category, object_identifier, payload";
        (
            "cascade_outbox",
            format!(
                "INSERT INTO cascade_outbox ({columns}) SELECT 'organization', {shard}, 'project_update', {object}"
            ),
        )
    } else {
        let names = "INSERT INTO cascade_outbox_name (name) VALUES ('organization'), ('project_update'), ('') \
                     ON CONFLICT (name) DO NOTHING";
        database.execute_alone(&statement(names)).await.expect("register the names");
        let code = |name: &str| format!("(SELECT code FROM cascade_outbox_name WHERE name = '{name}')");
        let columns = "scope_code, shard_identifier, category_code, model_code, object_identifier, payload";
        let (scope, category, model) = (code("organization"), code("project_update"), code(""));
        (
            "cascade_outbox_entry",
            format!(
                "INSERT INTO cascade_outbox_entry ({columns}) SELECT {scope}, {shard}, {category}, {model}, {object}"
            ),
        )
    };
    // The numbers 0..rows: PostgreSQL's `generate_series`, SQLite's recursive `WITH`.
    let series = match database.kind() {
        Kind::Postgres => format!("generate_series(0, {}) AS n", rows - 1),
        Kind::Sqlite => format!(
            "(WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < {}) SELECT n FROM s)",
            rows - 1
        ),
        Kind::Mysql => unreachable!("the outbox does not run on MySQL"),
    };
    let sql = format!("{sql}, '{{\"slug\": \"project\"}}' FROM {series}");
    database.execute_alone(&statement(&sql)).await.expect("write the backlog");
    database.execute_alone(&statement(&format!("ANALYZE {table}"))).await.expect("analyze");
    rows.div_ceil(per_shard) * objects
}

/// Runs `binary outbox drain --once`; its wall time and peak RSS.
fn run_drain(binary: &Path, config: &Path, url: &str, concurrency: usize) -> (Duration, u64) {
    let finished = process::run_measured(
        Command::new(binary)
            .args(["--config", &config.display().to_string(), "-q", "outbox", "drain", "--once", "--database-url", url])
            .args(["--concurrency", &concurrency.to_string()]),
    );
    let (status, stdout, stderr) = (finished.status, &finished.stdout, &finished.stderr);
    assert!(status.success(), "cascade outbox drain failed: {status}\n{stdout}{stderr}");
    (finished.wall, finished.peak_rss_kib)
}

/// How many records the topic's partitions were given: the sum of their high watermarks (each
/// partition of a fresh topic starts at offset 0; the mock drops its oldest records past a few
/// MiB, so the low watermarks move, but the high ones count every record appended).
fn records_in_topic(cluster: &MockCluster<'static, DefaultProducerContext>) -> u64 {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", cluster.bootstrap_servers())
        .create()
        .expect("a consumer of the mock cluster");
    let timeout = Duration::from_secs(30);
    (0..PARTITIONS)
        .map(|partition| {
            let (_, high) = consumer.fetch_watermarks(TOPIC, partition, timeout).expect("a partition's offsets");
            u64::try_from(high).expect("an offset")
        })
        .sum()
}

/// A local webhook that answers 204 and counts the messages it received.
async fn start_webhook(received: Arc<AtomicU64>) -> String {
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    let server = MockServer::builder().disable_request_recording().start().await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(move |request: &Request| {
            let messages: Vec<serde_json::Value> = serde_json::from_slice(&request.body).unwrap_or_default();
            received.fetch_add(messages.len() as u64, Ordering::SeqCst);
            ResponseTemplate::new(204)
        })
        .mount(&server)
        .await;
    let uri = server.uri();
    // Kept for the whole bench.
    std::mem::forget(server);
    uri
}

fn report(runs: &[Run], rows: u64, floor: Duration, durability: &str) {
    println!("{durability}; batches of {BATCH_SIZE}, one row in five coalesced.");
    println!(
        "Floor: one `DELETE FROM cascade_outbox_entry` of {rows} rows took {:.0} ms ({:.2} µs per row).",
        ms(floor),
        per(floor, rows)
    );
    println!();
    println!(
        "| sink | backlog rows | messages | drain (whole process) | messages/s | µs per message | × floor per row | peak RSS |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for run in runs {
        let per_message = per(run.drain, run.messages);
        println!(
            "| {} | {} | {} | {:.0} ms | {:.0} | {:.1} | {:.0}× | {:.1} MiB |",
            run.label,
            run.rows,
            run.messages,
            ms(run.drain),
            run.messages as f64 / run.drain.as_secs_f64(),
            per_message,
            per_message / per(floor, rows),
            run.peak_rss_kib as f64 / 1024.0
        );
    }
    let best = runs
        .iter()
        .filter(|r| r.rows == rows && !r.label.ends_with(BASELINE))
        .map(|r| r.messages as f64 / r.drain.as_secs_f64())
        .fold(0.0, f64::max);
    println!();
    println!(
        "Target: at least 20,000 messages/s through a batching sink: {} (best {best:.0}/s at {rows} rows).",
        if best >= 20_000.0 { "met" } else { "missed" }
    );
    let kafka = runs
        .iter()
        .filter(|r| r.rows == rows && r.label.starts_with(KAFKA) && !r.label.ends_with(BASELINE))
        .map(|r| r.messages as f64 / r.drain.as_secs_f64())
        .fold(0.0, f64::max);
    println!(
        "Target: at least 100,000 messages/s to Kafka: {} (best {kafka:.0}/s at {rows} rows).",
        if kafka >= 100_000.0 { "met" } else { "MISSED" }
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn per(duration: Duration, count: u64) -> f64 {
    duration.as_secs_f64() * 1e6 / count.max(1) as f64
}
