//! Removing one month of a monthly-partitioned table: `cascade partitions prune --confirm` (detach
//! and drop) against `cascade delete` of the same rows (chunked, children-first engine) and
//! against one `DELETE ... WHERE entered_at < $1`. Run: `cargo bench --bench partitions`
//! (`-- --rows N` for another month size; the default is 1,000,000 rows). Progress goes to
//! stderr, the markdown table to stdout.
//!
//! Each method runs on a freshly loaded table: January 2026 holds the rows to remove, June 2026
//! 10 % as many that stay; the prune runs twice, without and with an (empty) default partition,
//! since a default partition makes PostgreSQL refuse `DETACH ... CONCURRENTLY`. Timed: the whole `cascade` process, or the one statement. Meanwhile a
//! second connection samples `pg_locks` on the parent table every few milliseconds; a lock is
//! "held" from the first sample that sees it to the last consecutive one (so spans shorter than
//! the sampling interval may be missed or read as 0). Every run is checked: January is empty,
//! June whole.

#[path = "common/args.rs"]
mod args;
#[path = "common/server.rs"]
mod server;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cascade::db::Statement;
use cascade::db::{Access, Database};
use server::{Server, with_database};

const DEFAULT_ROWS: u64 = 1_000_000;
const SAMPLE_EVERY: Duration = Duration::from_millis(2);
/// Lock modes that block inserts and updates of the table (SHARE and stronger).
const BLOCKING: [&str; 4] = ["ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"];

struct Run {
    method: &'static str,
    wall: Duration,
    longest_any: Span,
    longest_blocking: Option<Span>,
    samples: u64,
    /// The slowest single-row insert into the parent table while the method ran.
    slowest_insert: Duration,
    inserts: u64,
}

#[derive(Clone, Debug)]
struct Span {
    mode: String,
    held: Duration,
}

fn main() {
    let rows = args::number_argument("--rows").unwrap_or(DEFAULT_ROWS);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let Some(server) = Server::postgres() else {
        eprintln!("no PostgreSQL: set CASCADE_TEST_POSTGRES_URL or install the server binaries");
        std::process::exit(1);
    };
    let url = runtime.block_on(fresh_database(&server.url, "cascade_partitions_bench"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("cascade.toml");
    std::fs::write(
        &config,
        "[models.page_view]\ntable = \"page_view\"\nretention = { keep = \"90d\", column = \"entered_at\" }\n",
    )
    .expect("write the config");
    let ids = dir.path().join("ids.txt");
    std::fs::write(&ids, (1..=rows).map(|id| id.to_string()).collect::<Vec<_>>().join("\n")).expect("write the ids");
    let durability = runtime.block_on(durability(&url));

    let mut runs = Vec::new();
    let methods = [
        ("partitions prune --confirm", false),
        ("partitions prune --confirm, with a default partition (plain DETACH)", true),
        ("cascade delete (chunked)", false),
        ("one DELETE ... WHERE entered_at < cut-off", false),
    ];
    for (method, default_partition) in methods {
        runtime.block_on(load(&url, rows, default_partition));
        eprintln!("{method}: {rows} rows loaded");
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = runtime.spawn(sample_locks(url.clone(), stop.clone()));
        let writer = runtime.spawn(write_meanwhile(url.clone(), stop.clone()));
        let started = Instant::now();
        match method {
            _ if method.starts_with("partitions prune") => cascade(
                &config,
                &url,
                &["partitions", "prune", "page_view", "--confirm", "--now", "2026-06-15T00:00:00Z"],
            ),
            "cascade delete (chunked)" => {
                cascade(&config, &url, &["delete", "page_view", "--ids-from", &ids.display().to_string(), "--confirm"])
            }
            _ => runtime.block_on(async {
                let database = Database::connect(&url, Access::ReadWrite).await.expect("connect");
                let deleted = database
                    .execute(&statement("DELETE FROM page_view WHERE entered_at < '2026-03-17 00:00:00+00'"))
                    .await
                    .expect("delete");
                assert_eq!(deleted, rows);
                database.close().await;
            }),
        }
        let wall = started.elapsed();
        stop.store(true, Ordering::SeqCst);
        let (spans, samples) = runtime.block_on(sampler).expect("the sampler");
        let (slowest_insert, inserts) = runtime.block_on(writer).expect("the writer");
        runtime.block_on(check(&url, rows));
        let longest_any = spans
            .iter()
            .max_by_key(|s| s.held)
            .cloned()
            .unwrap_or(Span { mode: "none seen".into(), held: Duration::ZERO });
        let longest_blocking =
            spans.iter().filter(|s| BLOCKING.contains(&s.mode.as_str())).max_by_key(|s| s.held).cloned();
        eprintln!("{method}: {wall:?}, longest lock {longest_any:?}, longest blocking {longest_blocking:?}");
        runs.push(Run { method, wall, longest_any, longest_blocking, samples, slowest_insert, inserts });
    }
    report(&runs, rows, &durability);
}

/// Runs `cascade ARGS` on the bench database; it must succeed.
fn cascade(config: &Path, url: &str, args: &[&str]) {
    let status = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["--config", &config.display().to_string(), "-q", "--database-url", url])
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("start cascade");
    assert!(status.success(), "cascade {args:?} failed: {status}");
}

/// A fresh `page_view`: `rows` rows in January 2026 (to remove), a tenth as many in June (kept),
/// with an empty default partition when asked (PostgreSQL then refuses `DETACH ... CONCURRENTLY`),
/// analyzed.
async fn load(url: &str, rows: u64, default_partition: bool) {
    let database = Database::connect(url, Access::ReadWrite).await.expect("connect");
    let seconds_apart = 31.0 * 86_400.0 / rows as f64;
    for sql in [
        "DROP TABLE IF EXISTS page_view".to_owned(),
        "CREATE TABLE page_view (id bigint NOT NULL, entered_at timestamptz NOT NULL, path text, \
         PRIMARY KEY (id, entered_at)) PARTITION BY RANGE (entered_at)"
            .to_owned(),
        "CREATE TABLE page_view_2026_01 PARTITION OF page_view FOR VALUES FROM ('2026-01-01 00:00+00') TO ('2026-02-01 00:00+00')".to_owned(),
        "CREATE TABLE page_view_2026_06 PARTITION OF page_view FOR VALUES FROM ('2026-06-01 00:00+00') TO ('2026-07-01 00:00+00')".to_owned(),
        if default_partition {
            "CREATE TABLE page_view_default PARTITION OF page_view DEFAULT".to_owned()
        } else {
            "SELECT 1".to_owned()
        },
        "CREATE INDEX page_view_id ON page_view (id)".to_owned(),
        format!(
            "INSERT INTO page_view SELECT n, timestamptz '2026-01-01 00:00+00' + make_interval(secs => (n - 1) * {seconds_apart}), \
             '/page/' || n FROM generate_series(1, {rows}) n"
        ),
        format!(
            "INSERT INTO page_view SELECT {rows} + n, timestamptz '2026-06-01 00:00+00' + make_interval(secs => n), \
             '/page/' || n FROM generate_series(1, {}) n",
            rows / 10
        ),
        "ANALYZE page_view".to_owned(),
    ] {
        database.execute(&statement(&sql)).await.expect("load the table");
    }
    database.close().await;
}

async fn check(url: &str, rows: u64) {
    let database = Database::connect(url, Access::ReadWrite).await.expect("connect");
    let count = |sql: &'static str| {
        let database = database.clone();
        async move { database.fetch_count(&statement(sql)).await.expect("count") }
    };
    assert_eq!(count("SELECT COUNT(*) FROM page_view WHERE entered_at < '2026-02-01 00:00+00'").await, 0);
    assert_eq!(count("SELECT COUNT(*) FROM page_view WHERE id < 100000000").await, rows / 10);
    database.close().await;
}

/// Inserts one row at a time into the parent table (June, ids from 100,000,000) until `stop`, as
/// an application keeps writing while old rows go: the slowest insert shows how long the method
/// blocked writers, whatever the sampling saw. Its longest insert and the number of inserts.
async fn write_meanwhile(url: String, stop: Arc<AtomicBool>) -> (Duration, u64) {
    let database = Database::connect(&url, Access::ReadWrite).await.expect("connect the writer");
    let (mut slowest, mut inserts) = (Duration::ZERO, 0);
    while !stop.load(Ordering::SeqCst) {
        let sql =
            format!("INSERT INTO page_view VALUES ({}, '2026-06-15 00:00+00', '/meanwhile')", 100_000_000 + inserts);
        let started = Instant::now();
        database.execute(&statement(&sql)).await.expect("insert meanwhile");
        slowest = slowest.max(started.elapsed());
        inserts += 1;
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    database.close().await;
    (slowest, inserts)
}

/// Samples the locks other sessions (but the writer's) hold on `page_view` until `stop`; every span a (pid, mode)
/// was seen held, and the number of samples.
async fn sample_locks(url: String, stop: Arc<AtomicBool>) -> (Vec<Span>, u64) {
    let database = Database::connect(&url, Access::ReadOnly).await.expect("connect the sampler");
    let query = statement(
        "SELECT CAST(l.pid AS TEXT), l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
         WHERE c.relname = 'page_view' AND l.granted AND l.pid <> pg_backend_pid() \
         AND l.pid NOT IN (SELECT pid FROM pg_stat_activity WHERE query LIKE '%/meanwhile%')",
    );
    let mut open: HashMap<(String, String), (Instant, Instant)> = HashMap::new();
    let mut spans = Vec::new();
    let mut samples = 0;
    while !stop.load(Ordering::SeqCst) {
        let rows = database.fetch_texts(&query).await.expect("sample pg_locks");
        let now = Instant::now();
        samples += 1;
        let seen: Vec<(String, String)> = rows
            .into_iter()
            .map(|row| (row[0].clone().unwrap_or_default(), row[1].clone().unwrap_or_default()))
            .collect();
        for key in &seen {
            open.entry(key.clone()).and_modify(|span| span.1 = now).or_insert((now, now));
        }
        let ended: Vec<(String, String)> = open.keys().filter(|key| !seen.contains(key)).cloned().collect();
        for key in ended {
            let (first, last) = open.remove(&key).expect("an open span");
            spans.push(Span { mode: key.1, held: last - first });
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    spans.extend(open.into_iter().map(|((_, mode), (first, last))| Span { mode, held: last - first }));
    database.close().await;
    (spans, samples)
}

/// An empty database `name` on the server; its URL.
async fn fresh_database(server: &str, name: &str) -> String {
    let admin = Database::connect(server, Access::ReadWrite).await.expect("connect to the server");
    for sql in [format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), format!("CREATE DATABASE {name}")] {
        admin.execute(&statement(&sql)).await.expect("create the bench database");
    }
    admin.close().await;
    with_database(server, name)
}

fn statement(sql: &str) -> Statement {
    Statement { sql: sql.to_owned(), params: Vec::new() }
}

async fn durability(url: &str) -> String {
    let database = Database::connect(url, Access::ReadOnly).await.expect("connect");
    let mut values = Vec::new();
    for setting in ["server_version", "fsync", "synchronous_commit", "shared_buffers"] {
        let rows =
            database.fetch_texts(&statement(&format!("SELECT current_setting('{setting}')"))).await.expect("a setting");
        values.push(format!("{setting}={}", cascade::db::first_text(&rows).unwrap_or("?")));
    }
    database.close().await;
    values.join(", ")
}

fn report(runs: &[Run], rows: u64, durability: &str) {
    println!("PostgreSQL ({durability}); {rows} rows in the month removed, a tenth as many kept.");
    println!();
    println!(
        "| method | wall time | longest lock on the parent (mode) | longest lock blocking writes | lock samples | slowest insert meanwhile (inserts) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for run in runs {
        let blocking = run
            .longest_blocking
            .as_ref()
            .map_or_else(|| "none seen".to_owned(), |span| format!("{:.0} ms ({})", ms(span.held), span.mode));
        println!(
            "| {} | {:.0} ms | {:.0} ms ({}) | {blocking} | {} | {:.1} ms ({}) |",
            run.method,
            ms(run.wall),
            ms(run.longest_any.held),
            run.longest_any.mode,
            run.samples,
            ms(run.slowest_insert),
            run.inserts
        );
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
