//! The inbox: taking tombstones in and applying them. Run: `cargo bench --bench inbox`
//! (`-- --tombstones N`, default 100,000; `-- --databases sqlite,postgres`; `-- --parts
//! command,kafka,apply`; `-- --delivery-sizes 100,1000,10000`). Progress goes to stderr, the
//! markdown tables to stdout.
//!
//! - **command**: `cascade inbox receive` once per delivery, as an outbox command sink runs it,
//!   deliveries of each size one after the other; timed from the first process's start to the
//!   last one's exit, every process whole (start-up, config, connection, the insert's commit).
//! - **kafka**: the tombstones as the Kafka sink writes them (one record per message, keyed by
//!   object, on 12 partitions of librdkafka's mock cluster, 3 brokers, in this process), then one
//!   whole `cascade inbox consume --once` process reads them all into the inbox.
//! - **apply**: the control database's shape: `member` (3 per organization) → `member_note` (2
//!   per member), `invite` (1 per organization, nullified), about 10 rows per organization, and
//!   a tenth as many organizations again whose rows must survive. `cascade inbox apply` (a whole
//!   process, the default settings) applies the tombstones of the first N organizations, beside
//!   the native `DELETE FROM organization WHERE id <= N` on a copy whose children reference a
//!   local `organization` table `ON DELETE CASCADE` / `SET NULL`, in the same run.
//!
//! Every run is checked: the inbox holds each tombstone once; after applying, exactly the first
//! N organizations' rows are gone or nullified, the rest untouched, on both copies.

#[path = "common/args.rs"]
mod args;
#[path = "common/database.rs"]
mod database;
#[path = "common/process.rs"]
mod process;
#[path = "common/server.rs"]
mod server;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

use args::{list_argument, number_argument};
use cascade::db::{Access, Database};
use database::{durability, fresh_database, statement};
use process::run_measured;
use server::Server;

const DEFAULT_TOMBSTONES: u64 = 100_000;
const CATEGORY: &str = "organization_deleted";
const TOPIC: &str = "cascade.control.organization_deleted";
const PARTITIONS: i32 = 12;
const SOURCE: &str = "control";

const CONFIG: &str = r#"
[models.organization]
remote = { category = "organization_deleted" }
children = [
  { model = "member", column = "organization_id" },
  { model = "invite", column = "organization_id", on_delete = "nullify" },
]

[models.member]
table = "member"
children = [{ model = "member_note", column = "member_id" }]

[models.member_note]
table = "member_note"
strategy = "bulk"

[models.invite]
table = "invite"
"#;

/// One measured row of a table.
struct Row {
    database: &'static str,
    case: String,
    tombstones: u64,
    wall: Duration,
    peak_rss_kib: u64,
}

fn main() {
    let tombstones = number_argument("--tombstones").unwrap_or(DEFAULT_TOMBSTONES);
    let databases = list_argument("--databases").unwrap_or_else(|| vec!["sqlite".into(), "postgres".into()]);
    let parts = list_argument("--parts").unwrap_or_else(|| vec!["command".into(), "kafka".into(), "apply".into()]);
    let sizes: Vec<u64> = list_argument("--delivery-sizes").map_or(vec![100, 1_000, 10_000], |list| {
        list.iter().map(|size| size.parse().expect("--delivery-sizes takes numbers")).collect()
    });
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("cascade.toml");
    std::fs::write(&config, CONFIG).expect("the config");
    let server = databases.iter().any(|d| d == "postgres").then(|| {
        Server::postgres().unwrap_or_else(|| {
            eprintln!("no PostgreSQL: set CASCADE_TEST_POSTGRES_URL or install the server binaries");
            std::process::exit(1)
        })
    });
    let mut counter = 0;
    let mut fresh = |database: &str| {
        counter += 1;
        let name = format!("cascade_inbox_bench_{counter}");
        match (database, &server) {
            ("postgres", Some(server)) => runtime.block_on(fresh_database(&server.url, &name)),
            _ => {
                // An empty file is an empty SQLite database; cascade opens only files that exist.
                let file = dir.path().join(format!("{name}.db"));
                std::fs::File::create(&file).expect("a database file");
                format!("sqlite://{}", file.display())
            }
        }
    };
    let messages: Vec<String> = (1..=tombstones).map(message).collect();
    let mut received = Vec::new();
    let mut applied = Vec::new();
    let mut settings = Vec::new();
    for database in databases.iter().map(|d| if d == "postgres" { "postgres" } else { "sqlite" }) {
        let label = if database == "postgres" { "PostgreSQL" } else { "SQLite" };
        if parts.iter().any(|p| p == "command") {
            for &size in &sizes {
                let url = fresh(database);
                let (wall, peak_rss_kib) = receive_by_command(&config, &url, &messages, size as usize);
                runtime.block_on(assert_inbox_holds(&url, tombstones));
                eprintln!("{label}: command, deliveries of {size}: {wall:?}");
                let case = format!("command sink: `inbox receive` per delivery of {size}");
                received.push(Row { database: label, case, tombstones, wall, peak_rss_kib });
            }
        }
        if parts.iter().any(|p| p == "kafka") {
            let url = fresh(database);
            let (wall, peak_rss_kib) = receive_by_kafka(&config, &url, &messages);
            runtime.block_on(assert_inbox_holds(&url, tombstones));
            eprintln!("{label}: kafka: {wall:?}");
            let case = "Kafka: one `inbox consume --once` (batches of 500)".to_owned();
            received.push(Row { database: label, case, tombstones, wall, peak_rss_kib });
        }
        if parts.iter().any(|p| p == "apply") {
            let native_url = fresh(database);
            let url = fresh(database);
            runtime.block_on(async {
                build_children(&native_url, tombstones, true).await;
                build_children(&url, tombstones, false).await;
                let connection = Database::connect(&url, Access::ReadWrite).await.expect("connect");
                settings.push(format!("{label}: {}", durability(&connection).await));
                let body = format!("[{}]", messages.join(","));
                cascade::inbox::receive(&connection, SOURCE, &body).await.expect("the tombstones");
                connection.close().await;
            });
            let native = runtime.block_on(native_delete(&native_url, tombstones));
            runtime.block_on(assert_applied(&native_url, tombstones, "native"));
            eprintln!("{label}: native DELETE: {native:?}");
            let finished = run_measured(Command::new(env!("CARGO_BIN_EXE_cascade")).args([
                "--config",
                config.to_str().unwrap(),
                "--database-url",
                &url,
                "inbox",
                "apply",
            ]));
            assert!(finished.status.success(), "inbox apply: {}{}", finished.stdout, finished.stderr);
            runtime.block_on(assert_applied(&url, tombstones, "cascade"));
            eprintln!("{label}: inbox apply: {:?}", finished.wall);
            let rows = tombstones * 10;
            applied.push((label, rows, native, finished.wall, finished.peak_rss_kib));
        }
    }
    println!("### Receiving {tombstones} tombstones\n");
    println!("| database | way in | whole time | tombstones/s | peak RSS (one process) |");
    println!("|---|---|---:|---:|---:|");
    for row in &received {
        println!(
            "| {} | {} | {:.2} s | {:.0} | {} MiB |",
            row.database,
            row.case,
            row.wall.as_secs_f64(),
            row.tombstones as f64 / row.wall.as_secs_f64(),
            row.peak_rss_kib / 1024
        );
    }
    println!("\n### Applying {tombstones} tombstones (about 10 child rows each)\n");
    println!(
        "| database | rows deleted or nullified | native `ON DELETE CASCADE` | `cascade inbox apply` | native / cascade | peak RSS |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (label, rows, native, cascade, rss) in &applied {
        println!(
            "| {label} | {rows} | {:.2} s | {:.2} s | {:.2}× | {} MiB |",
            native.as_secs_f64(),
            cascade.as_secs_f64(),
            native.as_secs_f64() / cascade.as_secs_f64(),
            rss / 1024
        );
    }
    println!("\nDurability: {}", settings.join("; "));
}

/// The outbox message of organization `id`'s deletion, as the sinks send it.
fn message(id: u64) -> String {
    serde_json::json!({
        "idempotency_key": format!("organization/{id}/{id}"), "id": id, "scope": "organization",
        "shard_identifier": id.to_string(), "category": CATEGORY, "model": "organization",
        "object_identifier": id.to_string(), "payload": null, "date_added": "2026-12-07 09:00:00.000",
    })
    .to_string()
}

fn cascade(config: &Path, url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cascade"));
    command.args(["--config", config.to_str().unwrap(), "--database-url", url]);
    command
}

/// Runs `cascade inbox receive` once per delivery of `size` messages, one after the other; the
/// whole time and the largest peak RSS of one process.
fn receive_by_command(config: &Path, url: &str, messages: &[String], size: usize) -> (Duration, u64) {
    let bodies: Vec<String> = messages.chunks(size).map(|part| format!("[{}]", part.join(","))).collect();
    let mut peak = 0;
    let started = Instant::now();
    for body in bodies {
        let mut child = cascade(config, url)
            .args(["inbox", "receive", "--source", SOURCE])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cascade inbox receive");
        let status_file = format!("/proc/{}/status", child.id());
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), body.as_bytes()).expect("the delivery");
        // The peak RSS as the process ends (VmHWM is a high-water mark).
        let status = std::fs::read_to_string(&status_file).unwrap_or_default();
        let output = child.wait_with_output().expect("wait");
        assert!(output.status.success(), "inbox receive: {}", String::from_utf8_lossy(&output.stderr));
        let high_water = status.lines().find_map(|line| line.strip_prefix("VmHWM:"));
        if let Some(kib) = high_water.and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()) {
            peak = peak.max(kib);
        }
    }
    (started.elapsed(), peak)
}

/// Writes the messages to the mock cluster as the Kafka sink does, then times one `cascade inbox
/// consume --once` reading them all.
fn receive_by_kafka(config: &Path, url: &str, messages: &[String]) -> (Duration, u64) {
    let owner: BaseProducer =
        ClientConfig::new().set("test.mock.num.brokers", "3").create().expect("a client with a mock Kafka cluster");
    let cluster = owner.client().mock_cluster().expect("the mock cluster");
    cluster.create_topic(TOPIC, PARTITIONS, 3).expect("the topic");
    // SAFETY: the cluster the owner client holds, alive as long as it. The consumer group forms at
    // once, without the broker's 3 s wait for more members.
    unsafe {
        let mock = rdkafka::bindings::rd_kafka_handle_mock_cluster(owner.client().native_ptr());
        rdkafka::bindings::rd_kafka_mock_group_initial_rebalance_delay_ms(mock, 0);
    }
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", cluster.bootstrap_servers())
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .expect("a producer");
    for (index, message) in messages.iter().enumerate() {
        let key = (index + 1).to_string();
        let idempotency = format!("organization/{key}/{key}");
        let headers = OwnedHeaders::new()
            .insert(Header { key: "idempotency_key", value: Some(idempotency.as_str()) })
            .insert(Header { key: "category", value: Some(CATEGORY) });
        producer
            .send(BaseRecord::to(TOPIC).key(&key).payload(message).headers(headers))
            .map_err(|(error, _)| error)
            .expect("a record");
    }
    producer.flush(Duration::from_secs(60)).expect("every record written");
    let finished = run_measured(cascade(config, url).args([
        "inbox",
        "consume",
        "--brokers",
        &cluster.bootstrap_servers(),
        "--topic",
        TOPIC,
        "--source",
        SOURCE,
        "--once",
    ]));
    assert!(finished.status.success(), "inbox consume: {}{}", finished.stdout, finished.stderr);
    (finished.wall, finished.peak_rss_kib)
}

/// Every tombstone is in the inbox once.
async fn assert_inbox_holds(url: &str, tombstones: u64) {
    let database = Database::connect(url, Access::ReadOnly).await.expect("connect");
    let count = database.fetch_count(&statement("SELECT COUNT(*) FROM cascade_inbox")).await.expect("count");
    let keys = "SELECT COUNT(DISTINCT object_key) FROM cascade_inbox";
    let distinct = database.fetch_count(&statement(keys)).await.expect("count");
    database.close().await;
    assert_eq!((count, distinct), (tombstones, tombstones), "every tombstone taken once");
}

/// Organizations 1 to `tombstones` and a tenth as many again, about 10 rows each: 3 members with
/// 2 notes each and an invite. With `native`, an `organization` table the children reference.
async fn build_children(url: &str, tombstones: u64, native: bool) {
    let database = Database::connect(url, Access::ReadWrite).await.expect("connect");
    let organizations = tombstones + tombstones / 10;
    let postgres = url.starts_with("postgres");
    let references = |action: &str| {
        if native { format!(" REFERENCES organization (id) ON DELETE {action}") } else { String::new() }
    };
    // `n` runs from 1 to `count` in a SELECT.
    let series = |count: u64| {
        if postgres {
            format!("SELECT n FROM generate_series(1, {count}) AS s(n)")
        } else {
            format!("WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {count}) SELECT n FROM s")
        }
    };
    let mut statements = Vec::new();
    if native {
        statements.push("CREATE TABLE organization (id BIGINT PRIMARY KEY)".to_owned());
        statements.push(format!("INSERT INTO organization (id) {}", series(organizations)));
    }
    statements.extend([
        format!("CREATE TABLE member (id BIGINT PRIMARY KEY, organization_id BIGINT NOT NULL{})", references("CASCADE")),
        "CREATE TABLE member_note (id BIGINT PRIMARY KEY, member_id BIGINT NOT NULL REFERENCES member (id) ON DELETE CASCADE)".to_owned(),
        format!("CREATE TABLE invite (id BIGINT PRIMARY KEY, organization_id BIGINT{})", references("SET NULL")),
        // Member n belongs to organization (n + 2) / 3; note n to member (n + 1) / 2.
        format!("INSERT INTO member (id, organization_id) SELECT n, (n + 2) / 3 FROM ({}) AS s", series(organizations * 3)),
        format!("INSERT INTO member_note (id, member_id) SELECT n, (n + 1) / 2 FROM ({}) AS s", series(organizations * 6)),
        format!("INSERT INTO invite (id, organization_id) SELECT n, n FROM ({}) AS s", series(organizations)),
        "CREATE INDEX member_organization ON member (organization_id)".to_owned(),
        "CREATE INDEX member_note_member ON member_note (member_id)".to_owned(),
        "CREATE INDEX invite_organization ON invite (organization_id)".to_owned(),
    ]);
    if postgres {
        statements.push("ANALYZE".to_owned());
    }
    for sql in statements {
        database.execute(&statement(&sql)).await.unwrap_or_else(|error| panic!("{sql}: {error}"));
    }
    database.close().await;
}

/// The native deletion: one `DELETE` of the organizations, the database's foreign keys doing the
/// rest.
async fn native_delete(url: &str, tombstones: u64) -> Duration {
    let database = Database::connect(url, Access::ReadWrite).await.expect("connect");
    let started = Instant::now();
    let sql = format!("DELETE FROM organization WHERE id <= {tombstones}");
    database.execute_alone(&statement(&sql)).await.expect("the native delete");
    let took = started.elapsed();
    database.close().await;
    took
}

/// Exactly the first `tombstones` organizations' rows are gone (their invites nullified), and
/// the others' all there.
async fn assert_applied(url: &str, tombstones: u64, how: &str) {
    let database = Database::connect(url, Access::ReadOnly).await.expect("connect");
    let survivors = tombstones / 10;
    let count = |sql: String| {
        let database = &database;
        async move { database.fetch_count(&statement(&sql)).await.expect("count") }
    };
    let members = count("SELECT COUNT(*) FROM member".into()).await;
    let notes = count("SELECT COUNT(*) FROM member_note".into()).await;
    let gone = count(format!("SELECT COUNT(*) FROM member WHERE organization_id <= {tombstones}")).await;
    let invites = count("SELECT COUNT(*) FROM invite".into()).await;
    let nulls = count("SELECT COUNT(*) FROM invite WHERE organization_id IS NULL".into()).await;
    database.close().await;
    let total = tombstones + survivors;
    assert_eq!(
        (members, notes, gone, invites, nulls),
        (survivors * 3, survivors * 6, 0, total, tombstones),
        "{how}: exactly the tombstoned organizations' rows"
    );
}
