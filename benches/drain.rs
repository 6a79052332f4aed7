//! Draining the outbox: `cascade outbox drain --once` over a backlog of tombstones in many shards,
//! through a batching command sink and through a local webhook, against the floor of one `DELETE`
//! of the same rows. Run: `cargo bench --bench drain` (`-- --rows N` for another backlog; the
//! default is 100,000 rows in 1,000 shards). Progress goes to stderr, the markdown table to stdout.
//!
//! Each shard holds `rows / shards` rows over 80 % as many objects (one row in five is coalesced
//! into a later row of its object). The backlog is spread over 1,000 shards, and for the command
//! sink also written into a single shard (one large deletion's tombstones). Timed: the whole `cascade` process (start-up, config, claims,
//! deliveries, deletes), each run on a freshly written backlog; memory is the process's peak RSS.
//! Every run is checked: the table is empty afterwards and the sink received every coalesced
//! message.

#[path = "common/args.rs"]
mod args;
#[path = "common/database.rs"]
mod database;
#[path = "common/pg_server.rs"]
mod pg_server;
#[path = "common/process.rs"]
mod process;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use args::number_argument;
use cascade::db::{Access, Database};
use database::{durability, fresh_database, statement};
use pg_server::PgServer;

const DEFAULT_ROWS: u64 = 100_000;
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
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let Some(server) = PgServer::start() else {
        eprintln!("no PostgreSQL: set CASCADE_TEST_POSTGRES_URL or install the server binaries");
        std::process::exit(1);
    };
    let url = runtime.block_on(fresh_database(&server.url, "cascade_drain_bench"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let received = Arc::new(AtomicU64::new(0));
    let webhook = runtime.block_on(start_webhook(received.clone()));

    let mut runs = Vec::new();
    let (durability, floor) = runtime.block_on(async {
        let database = Database::connect(&url, Access::ReadWrite).await.expect("connect");
        cascade::db::migrate(&database).await.expect("the tool's tables");
        let durability = durability(&database).await;
        let messages = write_backlog(&database, rows, SHARDS).await;
        let started = Instant::now();
        let deleted = database.execute_alone(&statement("DELETE FROM cascade_outbox")).await.expect("delete");
        assert_eq!(deleted, rows);
        let floor = started.elapsed();
        database.close().await;
        eprintln!("floor: one DELETE of {rows} rows ({messages} messages) in {floor:?}");
        (durability, floor)
    });

    let sinks = [
        ("command sink (`cat`)", "command = [\"cat\"]".to_owned()),
        ("webhook (local HTTP server)", format!("url = \"{webhook}/tombstones\"")),
    ];
    // The shape of one large deletion: every tombstone in the shard of its organization.
    let one_shard = [(sinks[0].0, sinks[0].1.as_str(), 1, rows, 1)];
    let cases = sinks.iter().flat_map(|(label, target)| {
        [1, CONCURRENCY].into_iter().flat_map(move |concurrency| {
            [rows / 10, rows].into_iter().map(move |backlog| (*label, target.as_str(), concurrency, backlog, SHARDS))
        })
    });
    for (label, target, concurrency, backlog, shards) in cases.chain(one_shard) {
        let case = Case { label, target, concurrency, backlog, shards };
        runs.push(runtime.block_on(measure(&case, dir.path(), &url, &received)));
    }
    report(&runs, rows, floor, &durability);
}

/// One drain to measure: a sink, a backlog and how many shards it is spread over.
struct Case<'a> {
    label: &'a str,
    target: &'a str,
    concurrency: usize,
    backlog: u64,
    shards: u64,
}

/// Writes the case's backlog, drains it with `cascade outbox drain --once` and checks the result.
async fn measure(case: &Case<'_>, dir: &Path, url: &str, received: &AtomicU64) -> Run {
    let config = config(dir, case.target);
    let database = Database::connect(url, Access::ReadWrite).await.expect("connect");
    let messages = write_backlog(&database, case.backlog, case.shards).await;
    received.store(0, Ordering::SeqCst);
    let (drain, peak_rss_kib) = tokio::task::block_in_place(|| run_drain(&config, url, case.concurrency));
    let left = database.fetch_count(&statement("SELECT COUNT(*) FROM cascade_outbox")).await.expect("count");
    database.close().await;
    assert_eq!(left, 0, "{}: the backlog is drained", case.label);
    if case.label.starts_with("webhook") {
        assert_eq!(received.load(Ordering::SeqCst), messages, "{}: every message reached the webhook", case.label);
    }
    let label = format!("{}, {} shards, concurrency {}", case.label, case.shards, case.concurrency);
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
async fn write_backlog(database: &Database, rows: u64, shards: u64) -> u64 {
    // At least one row per shard and one object per shard, for small `--rows`.
    let per_shard = (rows / shards).max(1);
    let objects = (per_shard * 4 / 5).max(1);
    let sql = format!(
        "INSERT INTO cascade_outbox (scope, shard_identifier, category, object_identifier, payload) \
         SELECT 'organization', CAST(n / {per_shard} AS TEXT), 'project_update', \
         CAST((n / {per_shard}) * 100000 + n % {objects} AS TEXT), '{{\"slug\": \"project\"}}' \
         FROM generate_series(0, {}) AS n",
        rows - 1
    );
    database.execute_alone(&statement(&sql)).await.expect("write the backlog");
    database.execute_alone(&statement("ANALYZE cascade_outbox")).await.expect("analyze");
    rows.div_ceil(per_shard) * objects
}

/// Runs `cascade outbox drain --once`; its wall time and peak RSS.
fn run_drain(config: &Path, url: &str, concurrency: usize) -> (Duration, u64) {
    let finished = process::run_measured(
        Command::new(env!("CARGO_BIN_EXE_cascade"))
            .args(["--config", &config.display().to_string(), "-q", "outbox", "drain", "--once", "--database-url", url])
            .args(["--concurrency", &concurrency.to_string()]),
    );
    let (status, stdout, stderr) = (finished.status, &finished.stdout, &finished.stderr);
    assert!(status.success(), "cascade outbox drain failed: {status}\n{stdout}{stderr}");
    (finished.wall, finished.peak_rss_kib)
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
    println!("PostgreSQL ({durability}); batches of {BATCH_SIZE}, one row in five coalesced.");
    println!(
        "Floor: one `DELETE FROM cascade_outbox` of {rows} rows took {:.0} ms ({:.2} µs per row).",
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
    let best =
        runs.iter().filter(|r| r.rows == rows).map(|r| r.messages as f64 / r.drain.as_secs_f64()).fold(0.0, f64::max);
    println!();
    println!(
        "Target: at least 20,000 messages/s through a batching sink: {} (best {best:.0}/s at {rows} rows).",
        if best >= 20_000.0 { "met" } else { "missed" }
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn per(duration: Duration, count: u64) -> f64 {
    duration.as_secs_f64() * 1e6 / count.max(1) as f64
}
