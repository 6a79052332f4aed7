//! The outbox drainer against real databases: coalescing and order (checked against a model over
//! seeded random outboxes), backoff under an injected clock, webhooks against a local HTTP server,
//! four drainer processes at once, kill -9 mid-delivery, and a deletion drained while it runs.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use cascade::db::Database;
use cascade::outbox::{Clock, DrainReport, Drainer, Variables};
use common::outbox::{ManualClock, Row, drainer, drainer_with_variables, pass, project_config, write_rows};
use common::prometheus::{SERVING, parse, scrape, value};
use common::random::Random;
use common::running::Running;
use common::{
    cascade, count, create_tool_tables, json_output, on_each_database, postgres_database, project, schedule_now,
    sqlite_database, texts, wait_until,
};
use serde_json::Value;

const SCHEMA: &str = "
CREATE TABLE org (id INTEGER PRIMARY KEY);
CREATE TABLE project (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL REFERENCES org (id), name TEXT);
CREATE INDEX project_org_id_idx ON project (org_id);
";

/// A sink for tests: appends each delivery (one JSON array per line) to
/// `deliveries/SCOPE.SHARD.jsonl`, and writes the shard to `deliveries/overlaps` when a delivery
/// starts while another of the same shard runs. `fail SHARD N`: the first N deliveries of SHARD
/// fail. `block`: the first delivery writes its body to `deliveries/started` and its pid to
/// `deliveries/pid`, then waits for `deliveries/release`.
const SINK: &str = r#"#!/bin/sh
dir="$(dirname "$0")/deliveries"
mkdir -p "$dir"
shard="$CASCADE_OUTBOX_SCOPE.$CASCADE_OUTBOX_SHARD"
if [ "$1" = fail ] && [ "$CASCADE_OUTBOX_SHARD" = "$2" ]; then
    failed=$(cat "$dir/failed" 2>/dev/null || echo 0)
    if [ "$failed" -lt "$3" ]; then
        echo $((failed + 1)) > "$dir/failed"
        echo "search index unavailable" >&2
        exit 3
    fi
fi
body=$(cat)
if [ "$1" = block ] && mkdir "$dir/blocked" 2>/dev/null; then
    echo $$ > "$dir/pid.tmp" && mv "$dir/pid.tmp" "$dir/pid"
    printf '%s\n' "$body" > "$dir/started.tmp" && mv "$dir/started.tmp" "$dir/started"
    while [ ! -e "$dir/release" ]; do sleep 0.05; done
fi
if ! mkdir "$dir/$shard.lock" 2>/dev/null; then echo "$shard" >> "$dir/overlaps"; fi
printf '%s\n' "$body" >> "$dir/$shard.jsonl"
rmdir "$dir/$shard.lock"
"#;

/// A config whose `project` rows write `project_update` tombstones sharded by organization,
/// delivered by the test sink run with `sink_args`.
fn config(dir: &Path, sink_args: &str, batch_size: u64, timeout: &str) -> String {
    format!(
        r#"
[models.org]
table = "org"
children = [{{ model = "project", column = "org_id" }}]

[models.project]
table = "project"
outbox = "project_update"
outbox_payload = ["name"]

[outbox.scopes.organization]
shard_key = "org_id"
categories = ["project_update", "team_update"]
sink = "recorder"

[outbox.sinks.recorder]
command = ["sh", "{sink}"{sink_args}]
batch_size = {batch_size}
timeout = "{timeout}"
"#,
        sink = dir.join("sink.sh").display()
    )
}

fn setup(sink_args: &str, batch_size: u64, timeout: &str) -> tempfile::TempDir {
    let dir = project(&[("sink.sh", SINK)]);
    let text = config(dir.path(), sink_args, batch_size, timeout);
    std::fs::create_dir_all(dir.path().join("cascades")).unwrap();
    std::fs::write(dir.path().join("cascades/cascade.toml"), text).unwrap();
    dir
}

/// Outbox rows `(shard, category, object)` from literals.
fn outbox_rows(rows: &[(&str, &'static str, &str)]) -> Vec<(String, &'static str, String)> {
    rows.iter().map(|(shard, category, object)| (shard.to_string(), *category, object.to_string())).collect()
}

/// `project_update` rows `(shard, object)` from literals.
fn project_updates(rows: &[(&str, &str)]) -> Vec<(String, &'static str, String)> {
    rows.iter().map(|(shard, object)| (shard.to_string(), "project_update", object.to_string())).collect()
}

/// Creates the tool's tables and writes outbox rows `(shard, category, object)` in order.
fn write_outbox(url: &str, rows: &[(String, &str, String)]) {
    let rows: Vec<Row<'_>> = rows
        .iter()
        .map(|(shard, category, object)| Row {
            scope: "organization",
            shard: Some(shard),
            category,
            object: object.clone(),
        })
        .collect();
    write_rows(url, &rows);
}

/// Every delivery the test sink recorded, per shard, in the order it received them.
fn deliveries(dir: &Path) -> BTreeMap<String, Vec<Vec<Value>>> {
    let mut found = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir.join("deliveries")) else { return found };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(shard) = name.strip_suffix(".jsonl").and_then(|n| n.strip_prefix("organization.")) {
            let text = std::fs::read_to_string(&path).unwrap();
            let batches = text.lines().map(|line| serde_json::from_str::<Vec<Value>>(line).unwrap()).collect();
            found.insert(shard.to_owned(), batches);
        }
    }
    found
}

/// The ids delivered per shard, in delivery order.
fn delivered_ids(dir: &Path) -> BTreeMap<String, Vec<i64>> {
    deliveries(dir)
        .into_iter()
        .map(|(shard, batches)| (shard, batches.iter().flatten().map(|m| m["id"].as_i64().unwrap()).collect()))
        .collect()
}

fn overlaps(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("deliveries/overlaps")).unwrap_or_default()
}

fn drain_once(dir: &Path, url: &str, extra: &[&str]) -> std::process::Output {
    cascade(dir).args(["outbox", "drain", "--once", "--database-url", url]).args(extra).output().unwrap()
}

/// The model of coalescing: per shard, the highest id of each (category, object), in id order.
fn expected_deliveries(rows: &[(String, &str, String)]) -> BTreeMap<String, Vec<i64>> {
    let mut newest: BTreeMap<(String, &str, String), i64> = BTreeMap::new();
    for (index, (shard, category, object)) in rows.iter().enumerate() {
        newest.insert((shard.clone(), *category, object.clone()), index as i64 + 1);
    }
    let mut expected: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for ((shard, _, _), id) in newest {
        expected.entry(shard).or_default().push(id);
    }
    expected.values_mut().for_each(|ids| ids.sort());
    expected
}

fn coalescing_and_order(url: impl Fn() -> String) {
    // A hand-written case first: three updates of one object and one of another in one shard.
    let example = [("7", "a"), ("7", "a"), ("7", "b"), ("7", "a")];
    let mut cases: Vec<Vec<(String, &str, String)>> = vec![project_updates(&example)];
    for seed in 0..6 {
        let mut random = Random::seeded(seed);
        let rows = 1 + random.below(80);
        cases.push(
            (0..rows)
                .map(|_| {
                    let category = if random.chance(30) { "team_update" } else { "project_update" };
                    // Identifiers that are integers' text and others that are not (`07` is not
                    // `7`), which SQLite stores as integers and as text.
                    let mut identifier = |below: u64| {
                        let number = random.below(below);
                        if random.chance(20) { format!("0{number}") } else { number.to_string() }
                    };
                    (identifier(4), category, identifier(12))
                })
                .collect(),
        );
    }
    for (case, rows) in cases.iter().enumerate() {
        let url = url();
        let dir = setup("", 1 + case as u64 % 4, "30s");
        write_outbox(&url, rows);
        let output = drain_once(dir.path(), &url, &[]);
        assert!(output.status.success(), "case {case}: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(delivered_ids(dir.path()), expected_deliveries(rows), "case {case}: {rows:?}");
        assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0, "case {case}");
        assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox_shard"), 0, "case {case}");
        if case == 0 {
            let batches = deliveries(dir.path());
            let messages: Vec<&Value> = batches["7"].iter().flatten().collect();
            assert_eq!(messages.len(), 2);
            assert_eq!(messages[0]["object_identifier"], "b");
            assert_eq!(messages[0]["idempotency_key"], "project_update/b/3");
            assert_eq!(messages[1]["id"], 4);
            assert_eq!(messages[1]["payload"], serde_json::json!({"n": "a"}));
            assert_eq!(messages[1]["shard_identifier"], "7");
        }
    }
}

on_each_database!(
    coalesced_messages_are_delivered_once_each_in_id_order_sqlite,
    coalesced_messages_are_delivered_once_each_in_id_order_postgres,
    coalesced_messages_are_delivered_once_each_in_id_order_mariadb,
    |databases| {
        coalescing_and_order(|| databases.create(SCHEMA));
    }
);

async fn shard_state(database: &Database, clock: &ManualClock) -> Vec<Value> {
    let stats = cascade::outbox::stats(database, &cascade::config::Config::default(), clock.now()).await;
    stats.unwrap().shards.iter().map(|s| serde_json::to_value(s).unwrap()).collect()
}

fn db_time(clock: &ManualClock, after: Duration) -> String {
    cascade::db::db_time(clock.now() + after)
}

async fn failures_back_off(url: String) {
    let dir = setup(r#", "fail", "1", "2""#, 10, "30s");
    let rows = project_updates(&[("1", "a"), ("1", "b"), ("2", "c")]);
    tokio::task::block_in_place(|| write_outbox(&url, &rows));
    let clock = ManualClock::after_writes();
    let config = std::fs::read_to_string(dir.path().join("cascades/cascade.toml")).unwrap();
    let (database, drainer) = drainer(&url, &config, &clock).await;

    // Shard 1 fails; shard 2 is delivered all the same.
    let first = pass(&drainer).await;
    assert_eq!((first.delivered, first.failed_deliveries), (1, 1));
    assert_eq!(delivered_ids(dir.path()).keys().collect::<Vec<_>>(), ["2"]);
    let state = shard_state(&database, &clock).await;
    assert_eq!(state.len(), 1, "{state:?}");
    assert_eq!(state[0]["shard_identifier"], "1");
    assert_eq!(state[0]["state"], "backing_off");
    assert_eq!(state[0]["attempts"], 1);
    assert_eq!(state[0]["next_attempt_at"], db_time(&clock, Duration::from_secs(2)));
    assert!(state[0]["last_error"].as_str().unwrap().contains("search index unavailable"), "{state:?}");

    // Not before its backoff: 2 s after the first failure, then 4 s after the second.
    clock.advance(Duration::from_millis(1900));
    assert_eq!(pass(&drainer).await, DrainReport::default());
    clock.advance(Duration::from_millis(100));
    assert_eq!(pass(&drainer).await.failed_deliveries, 1);
    assert_eq!(shard_state(&database, &clock).await[0]["attempts"], 2);
    assert_eq!(shard_state(&database, &clock).await[0]["next_attempt_at"], db_time(&clock, Duration::from_secs(4)));
    clock.advance(Duration::from_millis(3900));
    assert_eq!(pass(&drainer).await, DrainReport::default());
    clock.advance(Duration::from_millis(100));
    let last = pass(&drainer).await;
    assert_eq!((last.delivered, last.failed_deliveries, last.rows_deleted), (2, 0, 2));

    assert_eq!(delivered_ids(dir.path()), expected_deliveries(&rows));
    assert_eq!(tokio::task::block_in_place(|| count(&url, "SELECT COUNT(*) FROM cascade_outbox")), 0);
    assert!(shard_state(&database, &clock).await.is_empty());
    database.close().await;
}

on_each_database!(
    a_failing_shard_backs_off_doubling_while_others_are_delivered_sqlite,
    a_failing_shard_backs_off_doubling_while_others_are_delivered_postgres,
    a_failing_shard_backs_off_doubling_while_others_are_delivered_mariadb,
    |databases| {
        // Multi-threaded: `failures_back_off` reads and writes the database in `block_in_place`.
        tokio::runtime::Runtime::new().unwrap().block_on(failures_back_off(databases.create(SCHEMA)));
    }
);

/// A sink that exits without reading its body fails the delivery; it does not kill the drainer.
/// The body (2,000 messages) is larger than a pipe holds, so writing it always meets the closed
/// pipe: with SIGPIPE's default action the drainer died of the signal, mid-run.
#[test]
fn a_sink_that_exits_without_reading_fails_the_delivery_not_the_drainer() {
    let dir = setup(r#", "fail", "1", "9""#, 5000, "30s");
    let url = sqlite_database(dir.path(), SCHEMA);
    let objects: Vec<String> = (0..2000).map(|n| format!("object {n} with a name long enough to fill pipes")).collect();
    let rows: Vec<(String, &'static str, String)> =
        objects.iter().map(|object| ("1".to_owned(), "project_update", object.clone())).collect();
    write_outbox(&url, &rows);
    let output = drain_once(dir.path(), &url, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 2000, "the failed shard's rows stay");
}

#[test]
fn stats_show_the_backlog_and_the_failing_shard_with_its_error() {
    let dir = setup(r#", "fail", "1", "9""#, 10, "30s");
    let url = sqlite_database(dir.path(), SCHEMA);
    let rows = project_updates(&[("1", "a"), ("1", "a"), ("1", "b"), ("2", "c")]);
    write_outbox(&url, &rows);
    let before = json_output(cascade(dir.path()).args(["outbox", "stats", "--format", "json", "--database-url", &url]));
    assert_eq!(before["pending"], 4);
    assert_eq!(before["categories"][0]["objects"], 3);
    assert_eq!(before["categories"][0]["shards"], 2);
    assert_eq!(before["categories"][0]["sink"], "recorder");

    let output = drain_once(dir.path(), &url, &[]);
    assert_eq!(output.status.code(), Some(1), "a failed shard fails --once");
    let after = json_output(cascade(dir.path()).args(["outbox", "stats", "--format", "json", "--database-url", &url]));
    assert_eq!(after["pending"], 3, "the failed shard's rows stay");
    assert_eq!(after["shards"][0]["shard_identifier"], "1");
    assert_eq!(after["shards"][0]["attempts"], 1);
    assert!(after["shards"][0]["last_error"].as_str().unwrap().contains("exited with status 3"));

    let human = cascade(dir.path()).args(["outbox", "stats", "--database-url", &url]).output().unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains("3 outbox rows pending"), "{human}");
    assert!(human.contains("organization/1  backing_off, 1 failed attempts"), "{human}");
}

#[test]
fn drain_refuses_unknown_filters_and_unset_secrets_before_delivering() {
    let dir = setup("", 10, "30s");
    let url = sqlite_database(dir.path(), SCHEMA);
    write_outbox(&url, &[("1".into(), "project_update", "a".into())]);
    let output = drain_once(dir.path(), &url, &["--scope", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown scope `nope` (scopes: organization)"));

    let webhook = format!(
        "{}\n[outbox.sinks.hook]\nurl = \"http://127.0.0.1:9/\"\nheaders = {{ Authorization = \"env:CASCADE_TEST_UNSET_TOKEN\" }}\n",
        config(dir.path(), "", 10, "30s").replace("sink = \"recorder\"", "sink = \"hook\"")
    );
    std::fs::write(dir.path().join("cascades/cascade.toml"), webhook).unwrap();
    let output = drain_once(dir.path(), &url, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sink `hook`: header `Authorization` reads the environment variable `CASCADE_TEST_UNSET_TOKEN`, which is not set"), "{stderr}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 1, "nothing was delivered or deleted");
}

/// A drainer of a `webhook_config`, its token in `CASCADE_TEST_BILLING_TOKEN` (given, the
/// process's environment left alone).
async fn webhook_drainer(url: &str, text: &str, clock: &Arc<ManualClock>) -> (Database, Drainer) {
    let token = [("CASCADE_TEST_BILLING_TOKEN".to_owned(), "Bearer s3cret".to_owned())];
    drainer_with_variables(url, text, clock, Variables::Given(token.into())).await
}

fn webhook_config(url: &str, timeout: &str) -> String {
    let sink = format!(
        r#"[outbox.sinks.billing]
url = "{url}/hooks/tombstones"
headers = {{ Authorization = "env:CASCADE_TEST_BILLING_TOKEN", X-Source = "cascade" }}
timeout = "{timeout}"
"#
    );
    project_config(&["project_update"], "billing", &sink)
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_get_the_body_headers_and_idempotency_key_and_5xx_is_retried() {
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    let hook =
        || Mock::given(method("POST")).and(path("/hooks/tombstones")).and(header("Authorization", "Bearer s3cret"));
    hook().respond_with(ResponseTemplate::new(503).set_body_string("try later")).up_to_n_times(1).mount(&server).await;
    hook().respond_with(ResponseTemplate::new(204)).mount(&server).await;

    let dir = tempfile::tempdir().unwrap();
    let url = tokio::task::block_in_place(|| sqlite_database(dir.path(), SCHEMA));
    let rows = project_updates(&[("5", "x"), ("5", "y"), ("5", "x")]);
    tokio::task::block_in_place(|| write_outbox(&url, &rows));
    let clock = ManualClock::after_writes();
    let (database, drainer) = webhook_drainer(&url, &webhook_config(&server.uri(), "5s"), &clock).await;
    let stop = Arc::new(AtomicBool::new(false));

    let first = drainer.drain_due(&stop).await.unwrap();
    assert_eq!((first.delivered, first.failed_deliveries), (0, 1));
    clock.advance(Duration::from_secs(2));
    let second = drainer.drain_due(&stop).await.unwrap();
    assert_eq!((second.delivered, second.failed_deliveries, second.rows_deleted), (2, 0, 3));

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2, "one failed and one successful POST");
    for request in &requests {
        assert_eq!(request.headers["content-type"], "application/json");
        assert_eq!(request.headers["x-source"], "cascade");
        assert_eq!(request.headers["idempotency-key"], "cascade-outbox-2-3-2", "the retry carries the same key");
        let body: Vec<Value> = serde_json::from_slice(&request.body).unwrap();
        let keys: Vec<&str> = body.iter().map(|m| m["idempotency_key"].as_str().unwrap()).collect();
        assert_eq!(keys, ["project_update/y/2", "project_update/x/3"]);
    }
    let stats =
        cascade::outbox::stats(&database, &cascade::config::Config::default(), SystemTime::now()).await.unwrap();
    assert_eq!((stats.pending, stats.shards.len()), (0, 0));
    database.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_slower_than_its_timeout_fails_and_keeps_the_rows() {
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let url = tokio::task::block_in_place(|| sqlite_database(dir.path(), SCHEMA));
    tokio::task::block_in_place(|| write_outbox(&url, &[("1".into(), "project_update", "a".into())]));
    let clock = ManualClock::after_writes();
    let (database, drainer) = webhook_drainer(&url, &webhook_config(&server.uri(), "1s"), &clock).await;

    let report = drainer.drain_due(&Arc::new(AtomicBool::new(false))).await.unwrap();
    assert_eq!((report.delivered, report.failed_deliveries), (0, 1));
    let stats =
        cascade::outbox::stats(&database, &cascade::config::Config::default(), SystemTime::now()).await.unwrap();
    assert_eq!(stats.pending, 1);
    assert_eq!(stats.shards[0].last_error.as_deref(), Some("timed out waiting for the webhook"));
    database.close().await;
}

/// 10,000 rows in 200 shards, 40 objects each (20 % coalesced).
fn many_shards() -> Vec<(String, &'static str, String)> {
    let mut rows = Vec::new();
    for round in 0..50 {
        for shard in 0..200 {
            rows.push((shard.to_string(), "project_update", ((round * 7 + shard) % 40).to_string()));
        }
    }
    rows
}

#[test]
fn four_drainer_processes_never_deliver_one_shard_at_once_postgres() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    four_drainers(&url);
}

#[test]
fn four_drainer_processes_never_deliver_one_shard_at_once_mariadb() {
    let Some(databases) = common::databases::Databases::mysql() else { return };
    four_drainers(&databases.create(SCHEMA));
}

/// Four drainer processes, two shards at a time each, over 200 shards.
fn four_drainers(url: &str) {
    let dir = setup("", 7, "30s");
    let rows = many_shards();
    write_outbox(url, &rows);
    let mut drainers: Vec<Running> = (0..4)
        .map(|_| {
            Running::start(dir.path(), &["outbox", "drain", "--once", "--concurrency", "2", "--database-url", url])
        })
        .collect();
    for drainer in &mut drainers {
        let finished = drainer.finish();
        assert!(finished.status.success(), "{}", finished.stderr);
    }
    assert_eq!(overlaps(dir.path()), "", "no shard was delivered by two drainers at once");
    assert_eq!(delivered_ids(dir.path()), expected_deliveries(&rows));
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_outbox"), 0);
}

fn killed_mid_delivery(url: String) {
    let dir = setup(r#", "block""#, 10, "3s");
    let rows = project_updates(&[("1", "a"), ("1", "b")]);
    write_outbox(&url, &rows);
    let first = Running::start(dir.path(), &["outbox", "drain", "--poll", "100ms", "--database-url", &url]);
    let started = dir.path().join("deliveries/started");
    wait_until("the first delivery started", || started.exists());
    first.kill();
    // The machine went with it: the sink never finishes.
    let pid = std::fs::read_to_string(dir.path().join("deliveries/pid")).unwrap();
    // SAFETY: signals the test sink's own process, which this test's drainer started.
    unsafe { libc::kill(pid.trim().parse().unwrap(), libc::SIGKILL) };
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 2, "nothing was deleted");
    let output = drain_once(dir.path(), &url, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains(" 0 messages delivered"), "the claim is still live");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 2);

    let mut second = Running::start(dir.path(), &["outbox", "drain", "--poll", "100ms", "--database-url", &url]);
    wait_until("the shard is delivered again after the lease", || {
        count(&url, "SELECT COUNT(*) FROM cascade_outbox") == 0
    });
    second.terminate();
    assert_eq!(second.finish().status.code(), Some(130));
    let lost: Vec<Value> = serde_json::from_str(std::fs::read_to_string(&started).unwrap().trim()).unwrap();
    let redelivered = &deliveries(dir.path())["1"];
    assert_eq!(redelivered, &vec![lost], "the interrupted batch is delivered again, whole");
}

on_each_database!(
    a_drainer_killed_mid_delivery_loses_nothing_sqlite,
    a_drainer_killed_mid_delivery_loses_nothing_postgres,
    a_drainer_killed_mid_delivery_loses_nothing_mariadb,
    |databases| {
        killed_mid_delivery(databases.create(SCHEMA));
    }
);

fn delete_while_draining(url: String) {
    let dir = setup("", 50, "30s");
    let mut data = String::new();
    for org in 1..=20 {
        data += &format!("INSERT INTO org VALUES ({org});\n");
        let projects: Vec<String> = (0..50).map(|p| format!("({}, {org}, 'p{p}')", org * 1000 + p)).collect();
        data += &format!("INSERT INTO project VALUES {};\n", projects.join(", "));
    }
    for statement in data.lines() {
        texts(&url, statement);
    }
    let mut drainer = Running::start(dir.path(), &["outbox", "drain", "--poll", "50ms", "--database-url", &url]);
    let ids: Vec<String> = (1..=20).map(|id| id.to_string()).collect();
    let output =
        cascade(dir.path()).args(["delete", "org", "--confirm", "--database-url", &url]).args(&ids).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    wait_until("every tombstone is delivered", || count(&url, "SELECT COUNT(*) FROM cascade_outbox") == 0);
    drainer.terminate();
    assert_eq!(drainer.finish().status.code(), Some(130));

    let delivered: BTreeSet<String> = deliveries(dir.path())
        .values()
        .flatten()
        .flatten()
        .map(|m| m["object_identifier"].as_str().unwrap().to_owned())
        .collect();
    let deleted: BTreeSet<String> =
        (1..=20).flat_map(|org| (0..50).map(move |p| (org * 1000 + p).to_string())).collect();
    assert_eq!(delivered, deleted);
    assert_eq!(overlaps(dir.path()), "");
}

/// A row written through the `cascade_outbox` view and a deletion's tombstone of the same object
/// coalesce (on SQLite both store the integer key as an integer), while an object spelled
/// otherwise (`010`) stays its own message with its spelling.
fn view_rows_and_tombstones_coalesce(url: String) {
    let dir = setup("", 10, "30s");
    texts(&url, "INSERT INTO org VALUES (1)");
    texts(&url, "INSERT INTO project VALUES (10, 1, 'a'), (11, 1, 'b')");
    create_tool_tables(&url);
    texts(
        &url,
        "INSERT INTO cascade_outbox (scope, shard_identifier, category, model, object_identifier) \
         VALUES ('organization', '1', 'project_update', 'project', '10'), \
         ('organization', '1', 'project_update', 'project', '010')",
    );
    let output =
        cascade(dir.path()).args(["delete", "org", "1", "--confirm", "--database-url", &url]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox WHERE shard_identifier = '1'"), 4);

    let output = drain_once(dir.path(), &url, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let delivered: Vec<(i64, String, String)> = deliveries(dir.path())["1"]
        .iter()
        .flatten()
        .map(|m| {
            let text = |field: &str| m[field].as_str().unwrap().to_owned();
            (m["id"].as_i64().unwrap(), text("object_identifier"), text("shard_identifier"))
        })
        .collect();
    let message = |id: i64, object: &str| (id, object.to_owned(), "1".to_owned());
    assert_eq!(delivered, [message(2, "010"), message(3, "10"), message(4, "11")], "row 1 coalesced into row 3");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0);
}

on_each_database!(
    rows_written_through_the_view_and_tombstones_coalesce_sqlite,
    rows_written_through_the_view_and_tombstones_coalesce_postgres,
    |databases| {
        view_rows_and_tombstones_coalesce(databases.create(SCHEMA));
    }
);

on_each_database!(
    every_tombstone_of_a_deletion_running_while_draining_is_delivered_sqlite,
    every_tombstone_of_a_deletion_running_while_draining_is_delivered_postgres,
    every_tombstone_of_a_deletion_running_while_draining_is_delivered_mariadb,
    |databases| {
        delete_while_draining(databases.create(SCHEMA));
    }
);

#[test]
fn the_drainer_serves_its_deliveries_failures_and_backlog_as_metrics() {
    let dir = setup(r#", "fail", "1", "1""#, 10, "30s");
    let url = sqlite_database(dir.path(), SCHEMA);
    let rows = project_updates(&[("1", "a"), ("1", "a"), ("1", "b"), ("2", "c")]);
    write_outbox(&url, &rows);
    let args = ["outbox", "drain", "--poll", "100ms", "--metrics-addr", "127.0.0.1:0", "--database-url", &url];
    let mut drainer = Running::start(dir.path(), &args);
    let metrics = drainer.expect(SERVING).fields["url"].as_str().unwrap().to_owned();
    wait_until("shard 1 is delivered after its backoff", || count(&url, "SELECT COUNT(*) FROM cascade_outbox") == 0);
    let backlog = [("scope", "organization")];
    wait_until("the backlog gauge reads empty", || {
        value(&parse(&scrape(&metrics).1), "cascade_outbox_backlog", &backlog) == Some(0.0)
    });
    let samples = parse(&scrape(&metrics).1);
    let sink = [("sink", "recorder")];
    assert_eq!(value(&samples, "cascade_outbox_delivered_total", &sink), Some(3.0));
    assert_eq!(value(&samples, "cascade_outbox_failed_total", &sink), Some(1.0));
    assert_eq!(value(&samples, "cascade_outbox_oldest_age_seconds", &backlog), Some(0.0));
    drainer.terminate();
    assert_eq!(drainer.finish().status.code(), Some(130));
}

#[test]
fn worker_drain_delivers_the_tombstones_of_the_deletions_it_ran() {
    let dir = setup("", 10, "30s");
    let url = sqlite_database(dir.path(), SCHEMA);
    for statement in
        ["INSERT INTO org VALUES (1), (2)", "INSERT INTO project VALUES (10, 1, 'a'), (11, 1, 'b'), (20, 2, 'c')"]
    {
        texts(&url, statement);
    }
    schedule_now(&url, "org", [1]);
    let output = cascade(dir.path()).args(["worker", "--once", "--drain", "--database-url", &url]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("worker done: 1 succeeded"), "{stdout}");
    assert!(stdout.contains("outbox drain done: 2 messages delivered"), "{stdout}");
    let delivered: Vec<Value> = deliveries(dir.path())["1"].iter().flatten().cloned().collect();
    let objects: Vec<&str> = delivered.iter().map(|m| m["object_identifier"].as_str().unwrap()).collect();
    assert_eq!(objects, ["10", "11"]);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM project"), 1);
}

#[test]
fn max_messages_and_category_narrow_what_one_drain_delivers() {
    let dir = setup("", 10, "30s");
    let url = sqlite_database(dir.path(), SCHEMA);
    let rows = outbox_rows(&[
        ("1", "project_update", "a"),
        ("1", "team_update", "t"),
        ("2", "project_update", "b"),
        ("3", "project_update", "c"),
    ]);
    write_outbox(&url, &rows);

    let output = drain_once(dir.path(), &url, &["--category", "team_update"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let delivered: Vec<String> =
        deliveries(dir.path()).values().flatten().flatten().map(|m| m["category"].to_string()).collect();
    assert_eq!(delivered, ["\"team_update\""]);

    let output = drain_once(dir.path(), &url, &["--max-messages", "2"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("2 messages delivered"));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 1, "one message is left for the next run");
    assert_eq!(
        count(&url, "SELECT COUNT(*) FROM cascade_outbox_shard WHERE claim_token IS NOT NULL"),
        0,
        "no claim is left behind"
    );
}

/// One object written 2,500 times stands for more rows than a statement binds: its one message is
/// delivered and every row of it goes, a part at a time.
fn a_hot_object(url: &str) {
    let dir = setup("", 10, "30s");
    let rows: Vec<(String, &str, String)> =
        (0..2500).map(|_| ("1".to_owned(), "project_update", "7".to_owned())).collect();
    write_outbox(url, &rows);
    let output = drain_once(dir.path(), url, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(delivered_ids(dir.path()), expected_deliveries(&rows));
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_outbox"), 0);
}

on_each_database!(
    an_object_written_thousands_of_times_is_delivered_once_and_goes_whole_sqlite,
    an_object_written_thousands_of_times_is_delivered_once_and_goes_whole_postgres,
    an_object_written_thousands_of_times_is_delivered_once_and_goes_whole_mariadb,
    |databases| a_hot_object(&databases.create(SCHEMA))
);

/// A drainer that stops in the middle of a shard (here at `--max-messages`) after a delivery went
/// through gives the shard back without a row: neither a claim nor the failure before that
/// delivery is left, in the table or in `outbox stats`, and the rest is delivered next time.
fn given_back_after_a_delivery(url: &str) {
    let dir = setup(r#", "fail", "1", "1""#, 2, "30s");
    write_outbox(url, &project_updates(&[("1", "a"), ("1", "b"), ("1", "c")]));
    let stats =
        || json_output(cascade(dir.path()).args(["outbox", "stats", "--format", "json", "--database-url", url]));

    let output = drain_once(dir.path(), url, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stats()["shards"][0]["attempts"], 1);

    texts(url, "UPDATE cascade_outbox_shard SET next_attempt_at = NULL");
    let output = drain_once(dir.path(), url, &["--max-messages", "2"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_outbox"), 1, "one message is left for the next run");
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_outbox_shard"), 0, "no claim nor old failure is left");
    assert_eq!(stats()["shards"], Value::Array(Vec::new()));

    let output = drain_once(dir.path(), url, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let batches = &deliveries(dir.path())["1"];
    let objects: Vec<&str> = batches.iter().flatten().map(|m| m["object_identifier"].as_str().unwrap()).collect();
    assert_eq!(objects, ["a", "b", "c"]);
    assert_eq!(
        count(url, "SELECT COUNT(*) FROM cascade_outbox") + count(url, "SELECT COUNT(*) FROM cascade_outbox_shard"),
        0
    );
}

on_each_database!(
    a_shard_given_back_after_a_delivery_keeps_no_row_sqlite,
    a_shard_given_back_after_a_delivery_keeps_no_row_postgres,
    a_shard_given_back_after_a_delivery_keeps_no_row_mariadb,
    |databases| given_back_after_a_delivery(&databases.create(SCHEMA))
);

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_is_not_a_delivery() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    let moved = ResponseTemplate::new(302).insert_header("Location", format!("{}/ok", server.uri()));
    Mock::given(method("POST")).and(path("/hooks/tombstones")).respond_with(moved).mount(&server).await;
    Mock::given(method("GET")).and(path("/ok")).respond_with(ResponseTemplate::new(200)).mount(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let url = tokio::task::block_in_place(|| sqlite_database(dir.path(), SCHEMA));
    tokio::task::block_in_place(|| write_outbox(&url, &[("1".into(), "project_update", "a".into())]));
    let clock = ManualClock::after_writes();
    let (database, drainer) = webhook_drainer(&url, &webhook_config(&server.uri(), "5s"), &clock).await;

    let report = drainer.drain_due(&Arc::new(AtomicBool::new(false))).await.unwrap();
    assert_eq!((report.delivered, report.failed_deliveries), (0, 1));
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1, "the redirect was not followed");
    let stats = cascade::outbox::stats(&database, &cascade::config::Config::default(), clock.now()).await.unwrap();
    assert_eq!(stats.pending, 1);
    assert!(stats.shards[0].last_error.as_deref().unwrap().starts_with("HTTP 302"), "{:?}", stats.shards);
    database.close().await;
}

#[test]
fn a_command_past_its_timeout_is_killed_with_its_children_and_the_rows_stay() {
    let dir = setup(r#", "block""#, 10, "1s");
    let url = sqlite_database(dir.path(), SCHEMA);
    write_outbox(&url, &[("1".into(), "project_update", "a".into())]);
    let output = drain_once(dir.path(), &url, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let pid: i32 = std::fs::read_to_string(dir.path().join("deliveries/pid")).unwrap().trim().parse().unwrap();
    // SAFETY: signal 0 only asks whether the test sink's process still exists.
    wait_until("the sink's process group is gone", || unsafe { libc::kill(pid, 0) } != 0);
    let stats = json_output(cascade(dir.path()).args(["outbox", "stats", "--format", "json", "--database-url", &url]));
    assert_eq!(stats["pending"], 1);
    assert_eq!(stats["shards"][0]["last_error"], "`sh` timed out after 1s");
}

#[test]
fn category_sinks_split_a_shard_in_id_order_and_a_null_shard_is_delivered() {
    let dir = setup("", 10, "30s");
    let sink = dir.path().join("sink.sh").display().to_string();
    let config = std::fs::read_to_string(dir.path().join("cascades/cascade.toml")).unwrap().replace(
        "sink = \"recorder\"",
        &format!("sink = \"recorder\"\ncategory_sinks = {{ team_update = \"other\" }}\n\n[outbox.sinks.other]\ncommand = [\"sh\", \"{sink}\"]"),
    );
    std::fs::write(dir.path().join("cascades/cascade.toml"), config).unwrap();
    let url = sqlite_database(dir.path(), SCHEMA);
    let rows = outbox_rows(&[
        ("7", "project_update", "a"),
        ("7", "team_update", "x"),
        ("7", "project_update", "b"),
        ("7", "team_update", "y"),
    ]);
    write_outbox(&url, &rows);
    texts(
        &url,
        "INSERT INTO cascade_outbox (scope, shard_identifier, category, object_identifier) VALUES ('organization', NULL, 'project_update', 'c'), ('organization', NULL, 'project_update', 'c')",
    );

    let output = drain_once(dir.path(), &url, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let batches = deliveries(dir.path());
    let shard: Vec<Vec<(i64, &str)>> = batches["7"]
        .iter()
        .map(|batch| batch.iter().map(|m| (m["id"].as_i64().unwrap(), m["category"].as_str().unwrap())).collect())
        .collect();
    assert_eq!(
        shard,
        [vec![(1, "project_update")], vec![(2, "team_update")], vec![(3, "project_update")], vec![(4, "team_update")]],
        "one batch per run of messages for one sink, in id order"
    );
    let null_shard = &batches[""];
    assert_eq!(null_shard.len(), 1);
    assert_eq!(null_shard[0][0]["id"], 6);
    assert_eq!(null_shard[0][0]["shard_identifier"], Value::Null);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0);
}

const SHARED_CATEGORY_SCHEMA: &str = "
CREATE TABLE org (id INTEGER PRIMARY KEY);
CREATE TABLE proj (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL REFERENCES org (id));
CREATE TABLE task (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL, proj_id INTEGER NOT NULL REFERENCES proj (id));
CREATE INDEX task_proj_id_idx ON task (proj_id);
";

/// Two models writing one category: their rows of the same object never coalesce, so the sink
/// learns of both, and no row goes before its own message was delivered.
fn two_models_share_a_category(url: String) {
    let dir = setup(r#", "block""#, 10, "30s");
    let models = r#"
[models.proj]
table = "proj"
outbox = "thing_update"
children = [{ model = "task", column = "proj_id" }]

[models.task]
table = "task"
outbox = "thing_update"

[outbox.scopes.organization]
shard_key = "org_id"
categories = ["thing_update"]
sink = "recorder"
"#;
    let config = config(dir.path(), r#", "block""#, 10, "30s");
    let sink = &config[config.find("[outbox.sinks.recorder]").unwrap()..];
    std::fs::write(dir.path().join("cascades/cascade.toml"), format!("{models}\n{sink}")).unwrap();
    let validate = cascade(dir.path()).args(["validate", "--database-url", &url]).output().unwrap();
    let report = String::from_utf8_lossy(&validate.stdout);
    assert!(validate.status.success(), "a shared category is valid: {report}");
    assert!(!report.contains("warning"), "{report}");
    for statement in
        ["INSERT INTO org VALUES (1)", "INSERT INTO proj VALUES (1, 1)", "INSERT INTO task VALUES (1, 1, 1)"]
    {
        texts(&url, statement);
    }
    let output =
        cascade(dir.path()).args(["delete", "proj", "1", "--confirm", "--database-url", &url]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 2);

    let mut drainer = Running::start(dir.path(), &["outbox", "drain", "--poll", "50ms", "--database-url", &url]);
    let started = dir.path().join("deliveries/started");
    wait_until("the sink receives the delivery", || started.exists());
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 2, "no row goes before its delivery");
    let body: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&started).unwrap()).unwrap();
    let messages: Vec<(&str, &str, &str)> = body
        .iter()
        .map(|m| {
            let text = |field: &str| m[field].as_str().unwrap();
            (text("category"), text("model"), text("object_identifier"))
        })
        .collect();
    assert_eq!(messages, [("thing_update", "task", "1"), ("thing_update", "proj", "1")]);
    std::fs::write(dir.path().join("deliveries/release"), "").unwrap();
    wait_until("both rows go after their delivery", || count(&url, "SELECT COUNT(*) FROM cascade_outbox") == 0);
    drainer.terminate();
    assert_eq!(drainer.finish().status.code(), Some(130));
}

on_each_database!(
    two_models_sharing_a_category_deliver_a_message_each_sqlite,
    two_models_sharing_a_category_deliver_a_message_each_postgres,
    two_models_sharing_a_category_deliver_a_message_each_mariadb,
    |databases| {
        two_models_share_a_category(databases.create(SHARED_CATEGORY_SCHEMA));
    }
);

/// A webhook that answers 500 with the request's `Authorization` header in a long body.
struct EchoesAuthorization;

impl wiremock::Respond for EchoesAuthorization {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let authorization = request.headers["authorization"].to_str().unwrap();
        let body = format!("denied for authorization {authorization:?}: {authorization}\n{}", "x".repeat(5000));
        wiremock::ResponseTemplate::new(500).set_body_string(body)
    }
}

/// A webhook's error echoing the `Authorization` token is logged, stored in
/// `cascade_outbox_shard.last_error` and shown by `outbox stats` without it, its body capped.
async fn webhook_error_without_the_token(url: String) {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any()).respond_with(EchoesAuthorization).mount(&server).await;
    let dir = project(&[]);
    std::fs::create_dir_all(dir.path().join("cascades")).unwrap();
    std::fs::write(dir.path().join("cascades/cascade.toml"), webhook_config(&server.uri(), "5s")).unwrap();
    tokio::task::block_in_place(|| write_outbox(&url, &[("1".into(), "project_update", "a".into())]));
    let drained = tokio::task::block_in_place(|| {
        cascade(dir.path())
            .args(["outbox", "drain", "--once", "--database-url", &url])
            .env("CASCADE_TEST_BILLING_TOKEN", "Bearer echoed-t0ken")
            .output()
            .unwrap()
    });
    assert_eq!(drained.status.code(), Some(1));
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "the token was sent");
    let log = String::from_utf8_lossy(&drained.stderr).into_owned() + &String::from_utf8_lossy(&drained.stdout);
    assert!(log.contains("HTTP 500"), "{log}");
    assert!(!log.contains("echoed-t0ken"), "{log}");

    let stored = tokio::task::block_in_place(|| texts(&url, "SELECT last_error FROM cascade_outbox_shard"));
    let stored = stored[0][0].clone().unwrap();
    assert!(stored.starts_with("HTTP 500 Internal Server Error: denied for authorization"), "{stored}");
    assert!(!stored.contains("echoed-t0ken"), "{stored}");
    assert!(stored.len() <= 600, "the body kept is capped: {} bytes", stored.len());
    let stats = tokio::task::block_in_place(|| {
        cascade(dir.path()).args(["outbox", "stats", "--database-url", &url]).output().unwrap()
    });
    let stats = String::from_utf8_lossy(&stats.stdout);
    assert!(stats.contains("denied for authorization"), "{stats}");
    assert!(!stats.contains("echoed-t0ken"), "{stats}");
}

on_each_database!(
    a_webhook_error_echoing_the_token_is_logged_stored_and_shown_without_it_sqlite,
    a_webhook_error_echoing_the_token_is_logged_stored_and_shown_without_it_postgres,
    a_webhook_error_echoing_the_token_is_logged_stored_and_shown_without_it_mariadb,
    |databases| {
        // Multi-threaded: the test reads and writes the database in `block_in_place`.
        tokio::runtime::Runtime::new().unwrap().block_on(webhook_error_without_the_token(databases.create(SCHEMA)));
    }
);

/// A command sink that writes its environment to `environment` next to it.
const ENVIRONMENT_SINK: &str = r#"#!/bin/sh
cat > /dev/null
env > "$(dirname "$0")/environment"
"#;

/// A command sink gets `PATH`, `HOME`, `LANG`, the `CASCADE_OUTBOX_*` variables and its `env`
/// list, nothing else of the drainer's environment: not the database URL it was given in
/// `CASCADE_DATABASE_URL`, `PGPASSWORD` or a webhook's `env:` header variable.
fn minimal_environment(url: &str) {
    let dir = project(&[("sink.sh", ENVIRONMENT_SINK)]);
    let sink = dir.path().join("sink.sh");
    let text = config(dir.path(), "", 10, "30s").replace(
        &format!("command = [\"sh\", \"{}\"]", sink.display()),
        &format!("command = [\"sh\", \"{}\"]\nenv = [\"CASCADE_TEST_PASSED\"]", sink.display()),
    );
    assert!(text.contains("env = ["), "{text}");
    let hook = "[outbox.sinks.billing]\nurl = \"http://127.0.0.1:9/\"\nheaders = { Authorization = \"env:CASCADE_TEST_HOOK_TOKEN\" }\n";
    let text = format!("{text}{hook}")
        .replace("sink = \"recorder\"", "sink = \"recorder\"\ncategory_sinks = { team_update = \"billing\" }");
    std::fs::create_dir_all(dir.path().join("cascades")).unwrap();
    std::fs::write(dir.path().join("cascades/cascade.toml"), text).unwrap();
    write_outbox(url, &[("1".into(), "project_update", "a".into())]);
    let output = cascade(dir.path())
        .args(["outbox", "drain", "--once"])
        .env("CASCADE_DATABASE_URL", url)
        .env("PGPASSWORD", "pg-s3cret")
        .env("CASCADE_TEST_HOOK_TOKEN", "hook-s3cret")
        .env("CASCADE_TEST_SECRET", "not-for-the-sink")
        .env("CASCADE_TEST_PASSED", "for-the-sink")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let environment = std::fs::read_to_string(dir.path().join("environment")).unwrap();
    let names: BTreeSet<&str> = environment.lines().filter_map(|line| line.split_once('=')).map(|(n, _)| n).collect();
    for expected in ["PATH", "CASCADE_OUTBOX_SINK", "CASCADE_OUTBOX_SCOPE", "CASCADE_OUTBOX_SHARD"] {
        assert!(names.contains(expected), "{expected} in {environment}");
    }
    assert!(environment.contains("CASCADE_TEST_PASSED=for-the-sink\n"), "{environment}");
    for secret in ["PGPASSWORD", "CASCADE_TEST_SECRET", "CASCADE_TEST_HOOK_TOKEN", "CASCADE_DATABASE_URL"] {
        assert!(!names.contains(secret), "{secret} in {environment}");
    }
    for value in ["s3cret", url] {
        assert!(!environment.contains(value), "{value} in {environment}");
    }
}

on_each_database!(
    a_command_sink_sees_a_minimal_environment_and_its_env_list_sqlite,
    a_command_sink_sees_a_minimal_environment_and_its_env_list_postgres,
    |databases| minimal_environment(&databases.create(SCHEMA))
);

fn error_without_a_colon(url: &str) {
    let dir = setup("", 10, "30s");
    let sink = dir.path().join("sink.sh");
    let text = config(dir.path(), "", 10, "30s")
        .replace(&format!("command = [\"sh\", \"{}\"]", sink.display()), "command = [\"/bin/false\"]");
    std::fs::write(dir.path().join("cascades/cascade.toml"), text).unwrap();
    write_outbox(url, &[("1".into(), "project_update", "a".into())]);
    assert_eq!(drain_once(dir.path(), url, &[]).status.code(), Some(1));
    let stored = texts(url, "SELECT last_error FROM cascade_outbox_shard");
    assert_eq!(stored[0][0].as_deref(), Some("`/bin/false` exited with status 1"));
}

on_each_database!(
    a_failed_command_with_nothing_on_stderr_ends_its_error_without_a_colon_sqlite,
    a_failed_command_with_nothing_on_stderr_ends_its_error_without_a_colon_postgres,
    |databases| error_without_a_colon(&databases.create(SCHEMA))
);
