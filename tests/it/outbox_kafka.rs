//! The Kafka sink against librdkafka's mock cluster (a real Kafka-protocol broker on 127.0.0.1
//! inside the test process), on SQLite and PostgreSQL: every message read back with its key,
//! headers and value; no row deleted before the brokers acknowledged; a broker that refuses
//! requests or goes away mid-batch backs the shard off and loses nothing; a drainer killed with
//! -9 mid-batch redelivers on the next run.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use cascade::outbox::Clock;
use common::kafka::{Cluster, Record, records, wait_for_records};
use common::outbox::{ManualClock, Row, drainer, pass, project_config, write_rows};
use common::running::Running;
use common::{cascade, count, on_each_database, project, wait_until};
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
use serde_json::{Value, json};

const SCHEMA: &str = "CREATE TABLE project (id INTEGER PRIMARY KEY, org_id INTEGER);";

const PROJECTS: &str = "cascade.organization.project_update";
const TEAMS: &str = "cascade.organization.team_update";

/// A config delivering scope `organization` to a Kafka sink at `bootstrap`, with `properties`
/// (TOML key/value lines) added to the sink's.
fn config(bootstrap: &str, timeout: &str, properties: &str) -> String {
    let sink = format!(
        r#"[outbox.sinks.events]
batch_size = 50
timeout = "{timeout}"

[outbox.sinks.events.kafka]
brokers = "{bootstrap}"

[outbox.sinks.events.kafka.properties]
"linger.ms" = 2
{properties}
"#
    );
    project_config(&["project_update", "team_update"], "events", &sink)
}

fn setup(config: &str) -> tempfile::TempDir {
    project(&[("cascades/cascade.toml", config)])
}

/// `count` rows over shards 1, 2 and NULL, 12 objects per shard, a third of them `team_update`.
fn rows(count: usize) -> Vec<Row<'static>> {
    (0..count)
        .map(|n| Row {
            scope: "organization",
            shard: [Some("1"), Some("2"), None][n % 3],
            category: if n % 3 == 1 { "team_update" } else { "project_update" },
            object: format!("p{}", (n * 7) % 12),
        })
        .collect()
}

/// The messages coalescing leaves: the highest id of each (shard, category, object), as the
/// record the topic must hold.
fn expected(rows: &[Row<'_>]) -> BTreeMap<String, Value> {
    let mut newest = BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        newest.insert((row.shard, row.category, row.object.clone()), index as i64 + 1);
    }
    newest
        .into_iter()
        .map(|((shard, category, object), id)| {
            let key = format!("{category}/{object}/{id}");
            let record = json!({
                "key": object,
                "headers": { "category": category, "idempotency_key": key, "scope": "organization", "shard_identifier": shard },
                "value": {
                    "idempotency_key": key, "id": id, "scope": "organization", "shard_identifier": shard,
                    "category": category, "model": "project", "object_identifier": object, "payload": { "n": object },
                },
            });
            (key, record)
        })
        .collect()
}

/// Every record of both topics, by idempotency key: each as the JSON `expected` writes (the
/// value without `date_added`), with how often it was delivered.
fn delivered(cluster: &Cluster) -> BTreeMap<String, (Value, usize)> {
    let mut found: BTreeMap<String, (Value, usize)> = BTreeMap::new();
    for record in [PROJECTS, TEAMS].iter().flat_map(|topic| records(&cluster.bootstrap, topic)) {
        let mut value = record.value.clone();
        assert!(value["date_added"].is_string(), "{value}");
        value.as_object_mut().unwrap().remove("date_added");
        let json = json!({ "key": record.key, "headers": record.headers, "value": value });
        found.entry(value["idempotency_key"].as_str().unwrap().to_owned()).or_insert((json, 0)).1 += 1;
    }
    found
}

fn topics(partitions: i32) -> Cluster {
    let cluster = Cluster::start(1);
    cluster.topic(PROJECTS, partitions);
    cluster.topic(TEAMS, partitions);
    cluster
}

/// One object's records stay on one partition, in the order of their ids.
fn assert_in_order_per_object(records: &[Record]) {
    let mut seen: BTreeMap<&str, (i32, i64)> = BTreeMap::new();
    for record in records {
        let id = record.value["id"].as_i64().unwrap();
        if let Some((partition, last)) = seen.insert(&record.key, (record.partition, id)) {
            assert_eq!(partition, record.partition, "{} moved partition", record.key);
            assert!(last <= id, "{} went back from id {last} to {id}", record.key);
        }
    }
}

fn every_message_with_its_key_and_headers(url: String) {
    let cluster = topics(3);
    let dir = setup(&config(&cluster.bootstrap, "10s", ""));
    let rows = rows(300);
    write_rows(&url, &rows);
    let output = cascade(dir.path()).args(["outbox", "drain", "--once", "--database-url", &url]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let expected = expected(&rows);
    assert!(stdout.contains(&format!("{} messages delivered", expected.len())), "{stdout}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0);

    let delivered = delivered(&cluster);
    assert_eq!(delivered.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
    for (key, (record, times)) in &delivered {
        assert_eq!(record, &expected[key]);
        assert_eq!(*times, 1, "{key}: the idempotent producer wrote it once");
    }
    let null_shard = delivered.values().find(|(record, _)| record["value"]["shard_identifier"].is_null()).unwrap();
    assert_eq!(null_shard.0["headers"]["shard_identifier"], Value::Null, "a NULL shard is a null header");
    assert_in_order_per_object(&records(&cluster.bootstrap, PROJECTS));
}

on_each_database!(
    every_message_reaches_its_topic_with_its_key_headers_and_value_sqlite,
    every_message_reaches_its_topic_with_its_key_headers_and_value_postgres,
    |databases| {
        every_message_with_its_key_and_headers(databases.create(SCHEMA));
    }
);

async fn deleted_only_after_acknowledgment(url: String) {
    let cluster = topics(1);
    let rows = rows(30);
    tokio::task::block_in_place(|| write_rows(&url, &rows));
    let expected = expected(&rows);
    let clock = ManualClock::after_writes();
    let (database, drainer) = drainer(&url, &config(&cluster.bootstrap, "20s", ""), &clock).await;
    // Shard 1 goes first: its records are in the log seconds before the broker says so.
    cluster.delay_acknowledgments(Duration::from_secs(4), 2);

    let draining = tokio::spawn(async move { pass(&drainer).await });
    let written = tokio::task::block_in_place(|| wait_for_records(&cluster.bootstrap, PROJECTS, 1));
    let left = tokio::task::block_in_place(|| count(&url, "SELECT COUNT(*) FROM cascade_outbox"));
    assert_eq!(left, 30, "{} records are in the topic, unacknowledged: no row went", written.len());
    let report = draining.await.unwrap();
    assert_eq!((report.delivered, report.rows_deleted, report.failed_deliveries), (expected.len() as u64, 30, 0));
    assert_eq!(tokio::task::block_in_place(|| count(&url, "SELECT COUNT(*) FROM cascade_outbox")), 0);
    database.close().await;
}

on_each_database!(
    no_row_goes_before_the_brokers_acknowledge_sqlite,
    no_row_goes_before_the_brokers_acknowledge_postgres,
    |databases| {
        tokio::runtime::Runtime::new().unwrap().block_on(deleted_only_after_acknowledgment(databases.create(SCHEMA)));
    }
);

async fn refused_requests_back_off(url: String) {
    let cluster = topics(1);
    let rows = rows(30);
    tokio::task::block_in_place(|| write_rows(&url, &rows));
    let clock = ManualClock::after_writes();
    let (database, drainer) = drainer(&url, &config(&cluster.bootstrap, "10s", ""), &clock).await;

    // Errors a broker may answer with and librdkafka retries: delivered all the same, once.
    let retried = [RDKafkaRespErr::RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS; 2];
    cluster.mock().request_errors(RDKafkaApiKey::Produce, &retried);
    let first = pass(&drainer).await;
    assert_eq!(first.failed_deliveries, 0, "{first:?}");
    assert!(delivered(&cluster).values().all(|(_, times)| *times == 1));
    let delivered_first = delivered(&cluster).len();

    // A refusal: every shard fails, backs off, and keeps its rows.
    tokio::task::block_in_place(|| write_rows(&url, &rows));
    // More refusals than requests: every request of the pass is refused, however librdkafka
    // splits the batches into requests.
    let refused = [RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED; 100];
    cluster.mock().request_errors(RDKafkaApiKey::Produce, &refused);
    clock.catch_up();
    let second = pass(&drainer).await;
    assert_eq!((second.delivered, second.failed_deliveries), (0, 3), "{second:?}");
    let stats = cascade::outbox::stats(&database, &cascade::config::Config::default(), clock.now()).await.unwrap();
    assert_eq!(stats.pending, 30, "nothing was deleted");
    for shard in &stats.shards {
        assert_eq!(shard.state, "backing_off");
        let error = shard.last_error.as_deref().unwrap();
        assert!(error.contains("TopicAuthorizationFailed"), "{error}");
    }
    assert_eq!(pass(&drainer).await.delivered, 0, "not before the backoff");
    cluster.mock().clear_request_errors(RDKafkaApiKey::Produce);
    clock.advance(Duration::from_secs(2));
    let third = pass(&drainer).await;
    assert_eq!((third.failed_deliveries, third.rows_deleted), (0, 30), "{third:?}");
    let after = delivered(&cluster);
    assert_eq!(after.len(), delivered_first * 2, "the second rows' messages (new ids) are all there");
    database.close().await;
}

on_each_database!(
    a_broker_refusing_requests_backs_the_shards_off_and_keeps_the_rows_sqlite,
    a_broker_refusing_requests_backs_the_shards_off_and_keeps_the_rows_postgres,
    |databases| {
        tokio::runtime::Runtime::new().unwrap().block_on(refused_requests_back_off(databases.create(SCHEMA)));
    }
);

/// One shard of 100 objects, written to Kafka 5 records per request, one request at a time.
fn one_long_shard() -> Vec<Row<'static>> {
    (0..100)
        .map(|n| Row { scope: "organization", shard: Some("1"), category: "project_update", object: format!("o{n}") })
        .collect()
}

/// One record per request, one request at a time, reconnecting soon after a broker is back.
const SLOW_PRODUCER: &str = r#""batch.num.messages" = 5
"max.in.flight.requests.per.connection" = 1
"reconnect.backoff.max.ms" = 200"#;

async fn broker_gone_mid_batch(url: String) {
    let cluster = topics(1);
    let rows = one_long_shard();
    tokio::task::block_in_place(|| write_rows(&url, &rows));
    let clock = ManualClock::after_writes();
    let text = config(&cluster.bootstrap, "6s", SLOW_PRODUCER).replace("batch_size = 50", "batch_size = 100");
    let (database, drainer) = drainer(&url, &text, &clock).await;
    // 20 requests acknowledged 200 ms late each: the batch takes 4 s, the broker goes in the middle.
    cluster.delay_acknowledgments(Duration::from_millis(200), 20);

    let draining = tokio::spawn({
        let drainer = drainer.clone();
        async move { pass(&drainer).await }
    });
    let before = tokio::task::block_in_place(|| wait_for_records(&cluster.bootstrap, PROJECTS, 5).len());
    cluster.set_up(false);
    let report = draining.await.unwrap();
    assert!(before < 100, "the broker went away mid-batch ({before} records written)");
    assert_eq!((report.delivered, report.failed_deliveries), (0, 1), "{report:?}");
    assert_eq!(tokio::task::block_in_place(|| count(&url, "SELECT COUNT(*) FROM cascade_outbox")), 100);

    cluster.set_up(true);
    // The shard is tried again after each backoff until the producer is through to the broker.
    let mut attempts = 0;
    loop {
        clock.advance(Duration::from_secs(3600));
        let retried = pass(&drainer).await;
        attempts += 1;
        if retried.delivered == 100 {
            break;
        }
        assert_eq!((retried.delivered, retried.failed_deliveries), (0, 1), "{retried:?}");
        assert!(attempts < 5, "the broker is back, yet the shard is still failing");
    }
    let objects: BTreeSet<String> =
        tokio::task::block_in_place(|| records(&cluster.bootstrap, PROJECTS)).into_iter().map(|r| r.key).collect();
    assert_eq!(objects.len(), 100, "every object reached the topic at least once");
    assert_eq!(tokio::task::block_in_place(|| count(&url, "SELECT COUNT(*) FROM cascade_outbox")), 0);
    database.close().await;
}

on_each_database!(
    a_broker_gone_mid_batch_fails_the_delivery_and_loses_nothing_sqlite,
    a_broker_gone_mid_batch_fails_the_delivery_and_loses_nothing_postgres,
    |databases| {
        tokio::runtime::Runtime::new().unwrap().block_on(broker_gone_mid_batch(databases.create(SCHEMA)));
    }
);

fn killed_mid_batch(url: String) {
    let cluster = topics(1);
    let rows = one_long_shard();
    write_rows(&url, &rows);
    let text = config(&cluster.bootstrap, "2s", SLOW_PRODUCER).replace("batch_size = 50", "batch_size = 100");
    let dir = setup(&text);
    cluster.delay_acknowledgments(Duration::from_millis(200), 20);
    let drainer = Running::start(dir.path(), &["outbox", "drain", "--poll", "100ms", "--database-url", &url]);
    let written = wait_for_records(&cluster.bootstrap, PROJECTS, 5).len();
    drainer.kill();
    assert!(written < 100, "killed mid-batch ({written} records written)");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 100, "no row went");

    let mut rerun = Running::start(dir.path(), &["outbox", "drain", "--poll", "100ms", "--database-url", &url]);
    wait_until("the rerun delivers the shard after the dead drainer's claim ran out", || {
        count(&url, "SELECT COUNT(*) FROM cascade_outbox") == 0
    });
    rerun.terminate();
    assert_eq!(rerun.finish().status.code(), Some(130));
    let records = records(&cluster.bootstrap, PROJECTS);
    let objects: BTreeSet<&str> = records.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(objects.len(), 100, "at least once: every object is in the topic");
}

on_each_database!(
    a_drainer_killed_mid_batch_redelivers_on_the_rerun_sqlite,
    a_drainer_killed_mid_batch_redelivers_on_the_rerun_postgres,
    |databases| {
        killed_mid_batch(databases.create(SCHEMA));
    }
);

#[test]
fn secrets_of_the_properties_are_read_from_the_environment_and_never_shown() {
    let cluster = topics(1);
    let properties = r#""compression.type" = "env:CASCADE_TEST_KAFKA_CODEC"
"sasl.password" = "env:CASCADE_TEST_KAFKA_PASSWORD""#;
    let dir = setup(&config(&cluster.bootstrap, "10s", properties));
    let url = common::sqlite_database(dir.path(), SCHEMA);
    write_rows(&url, &rows(3));
    let drain = |codec: Option<&str>| {
        let mut command = cascade(dir.path());
        command.args(["outbox", "drain", "--once", "--database-url", &url]);
        command.env("CASCADE_TEST_KAFKA_PASSWORD", "pa55-w0rd").env_remove("CASCADE_TEST_KAFKA_CODEC");
        if let Some(codec) = codec {
            command.env("CASCADE_TEST_KAFKA_CODEC", codec);
        }
        command.output().unwrap()
    };

    let unset = drain(None);
    let stderr = String::from_utf8_lossy(&unset.stderr);
    assert_eq!(unset.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "sink `events`: property `compression.type` reads the environment variable `CASCADE_TEST_KAFKA_CODEC`, \
             which is not set"
        ),
        "{stderr}"
    );

    // librdkafka refuses the value and says it: the drainer shows the refusal, not the value.
    let refused = drain(Some("s3cret-codec"));
    let output = format!("{}{}", String::from_utf8_lossy(&refused.stdout), String::from_utf8_lossy(&refused.stderr));
    assert_eq!(refused.status.code(), Some(2), "{output}");
    assert!(output.contains("compression.type") && output.contains("***"), "{output}");
    assert!(!output.contains("s3cret-codec"), "{output}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 3, "nothing was delivered or deleted");

    let delivered = drain(Some("gzip"));
    assert!(delivered.status.success(), "{}", String::from_utf8_lossy(&delivered.stderr));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0);
    assert!(!String::from_utf8_lossy(&delivered.stderr).contains("pa55-w0rd"));
}

#[test]
fn validate_checks_the_topic_and_the_properties_with_librdkafka() {
    let text = config("127.0.0.1:9", "10s", "\"compression.codec\" = \"zip\"\n\"acks\" = 1")
        .replace("brokers =", "topic = \"deletions.{scope}.{model}\"\nbrokers =");
    let dir = setup(&text);
    let output = cascade(dir.path()).args(["validate", "--format", "json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let codes: Vec<(&str, u64)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap(), d["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(codes, [("kafka-topic", 16), ("kafka-property", 21), ("kafka-property", 22)]);
    assert!(!Path::new(&dir.path().join("cascade.db")).exists(), "validate touches no database");
}
