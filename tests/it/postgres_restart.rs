//! PostgreSQL crashing (`pg_ctl -m immediate stop`) and starting again while `cascade worker`
//! runs a deletion and while `cascade outbox drain` delivers: the running process recovers by
//! itself, nothing is lost (every tombstone of a deleted row is delivered at least once) and
//! nothing is deleted half (no orphan; every scheduled deletion finishes). Each test runs its own
//! cluster, which it stops and starts.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::cluster::Cluster;
use common::running::{CHUNK_COMMITTED, Running};
use common::{count, create_tool_tables, project, schedule_now, texts, wait_until};
use serde_json::Value;

const SCHEMA: &str = "
CREATE TABLE item (id bigint PRIMARY KEY, org_id bigint NOT NULL);
CREATE TABLE part (id bigint PRIMARY KEY, item_id bigint NOT NULL REFERENCES item (id), org_id bigint NOT NULL);
CREATE INDEX part_item_id_idx ON part (item_id);
INSERT INTO item VALUES (1, 1), (2, 2);
INSERT INTO part SELECT n, 1 + n % 2, 1 + n % 2 FROM generate_series(1, 1200) n;
";

/// Items and their parts write tombstones, sharded by organization, that a recording sink
/// appends to `delivered` (one JSON array per line); parts go 20 to a transaction at 100 rows a
/// second, so a deletion takes a few seconds. A failed attempt is retried after a second. A
/// shard's claim lasts two minutes (twice the sink's timeout): a drainer that left its claims
/// behind after the crash would not deliver them again before the test's deadline.
fn config(dir: &Path) -> String {
    let delivered = dir.join("delivered").display().to_string();
    format!(
        r#"
[settings]
adaptive = false
retry_delay_seconds = 1

[options]
"rows_per_second" = 100

[models.item]
table = "item"
outbox = "item_update"
children = [{{ model = "part", column = "item_id" }}]

[models.part]
table = "part"
chunk_size = 20
rate_limit = "rows_per_second"
outbox = "part_update"

[outbox.scopes.org]
shard_key = "org_id"
categories = ["item_update", "part_update"]
sink = "recorder"

[outbox.sinks.recorder]
command = ["sh", "-c", "cat >> \"$0\" && echo >> \"$0\"", "{delivered}"]
batch_size = 50
timeout = "60s"
"#
    )
}

/// Every `(model, object)` the recording sink received, with how many times.
fn delivered(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("delivered")).unwrap_or_default();
    text.lines()
        .flat_map(|line| serde_json::from_str::<Vec<Value>>(line).unwrap())
        .map(|m| (m["model"].as_str().unwrap().to_owned(), m["object_identifier"].as_str().unwrap().to_owned()))
        .collect()
}

/// Every item and part of the schema, as the sink names them.
fn every_row() -> BTreeSet<(String, String)> {
    let items = (1..=2).map(|id: u32| ("item".to_owned(), id.to_string()));
    items.chain((1..=1200).map(|id: u32| ("part".to_owned(), id.to_string()))).collect()
}

#[test]
fn a_worker_deleting_and_draining_recovers_from_a_postgres_crash() {
    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.database(SCHEMA);
    let dir = project(&[]);
    std::fs::create_dir_all(dir.path().join("cascades")).unwrap();
    std::fs::write(dir.path().join("cascades/cascade.toml"), config(dir.path())).unwrap();
    schedule_now(&url, "item", [1, 2]);

    let mut worker = Running::start(dir.path(), &["worker", "--drain", "--poll", "100ms", "--database-url", &url]);
    for _ in 0..3 {
        worker.expect(CHUNK_COMMITTED);
    }
    cluster.crash();
    // The database stays down until the worker has failed to record the attempt it cut short.
    worker.expect("could not record the attempt on its claim; trying again after the poll interval");
    cluster.start_server();
    wait_until("every scheduled deletion is done and its tombstones delivered", || {
        count(&url, "SELECT COUNT(*) FROM cascade_scheduled_deletion") == 0
            && count(&url, "SELECT COUNT(*) FROM cascade_outbox") == 0
    });
    assert!(!worker.ended(), "the worker keeps running");
    worker.terminate();
    let finished = worker.finish();
    assert_eq!(finished.status.code(), Some(130), "{}", finished.stderr);

    assert_eq!(count(&url, "SELECT COUNT(*) FROM item") + count(&url, "SELECT COUNT(*) FROM part"), 0);
    let delivered: BTreeSet<(String, String)> = delivered(dir.path()).into_iter().collect();
    assert_eq!(delivered, every_row(), "every tombstone delivered at least once");
    // The attempt the crash cut short is recorded interrupted, and the retry resumed it.
    let runs =
        texts(&url, "SELECT CAST(id AS TEXT), root_ids, outcome, CAST(resumes AS TEXT) FROM cascade_run ORDER BY id");
    let cut = runs.iter().find(|run| run[2].as_deref() == Some("interrupted")).unwrap_or_else(|| panic!("{runs:?}"));
    let retry = runs.iter().find(|run| run[3] == cut[0]).unwrap_or_else(|| panic!("{runs:?}"));
    assert_eq!((&retry[1], retry[2].as_deref()), (&cut[1], Some("succeeded")), "{runs:?}");
    assert!(runs.iter().all(|run| run[2].as_deref() != Some("running")), "{runs:?}");
}

/// Tombstones of 2,000 objects in 20 shards, delivered by a sink that takes a moment each time.
fn write_backlog(url: &str) -> BTreeSet<String> {
    create_tool_tables(url);
    texts(
        url,
        "INSERT INTO cascade_outbox (scope, shard_identifier, category, model, object_identifier) \
         SELECT 'org', CAST(n % 20 AS text), 'part_update', 'part', CAST(n AS text) FROM generate_series(1, 2000) n",
    );
    (1..=2000).map(|n: u32| n.to_string()).collect()
}

#[test]
fn a_drainer_recovers_from_a_postgres_crash_and_loses_no_tombstone() {
    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.database(SCHEMA);
    let dir = project(&[]);
    std::fs::create_dir_all(dir.path().join("cascades")).unwrap();
    let config =
        config(dir.path()).replace("cat >> ", "sleep 0.02; cat >> ").replace("batch_size = 50", "batch_size = 10");
    std::fs::write(dir.path().join("cascades/cascade.toml"), config).unwrap();
    let all = write_backlog(&url);

    let mut drainer = Running::start(dir.path(), &["outbox", "drain", "--poll", "100ms", "--database-url", &url]);
    wait_until("some tombstones are delivered", || delivered(dir.path()).len() >= 100);
    cluster.crash();
    // The database stays down until the drainer has met it gone, in or between shards.
    drainer.expect_one_of(&[
        "could not give the claim on the shard back; trying again after the poll interval",
        "draining failed; trying again",
    ]);
    cluster.start_server();
    wait_until("every tombstone is delivered", || count(&url, "SELECT COUNT(*) FROM cascade_outbox") == 0);
    assert!(!drainer.ended(), "the drainer keeps running");
    drainer.terminate();
    let finished = drainer.finish();
    assert_eq!(finished.status.code(), Some(130), "{}", finished.stderr);
    let delivered: BTreeSet<String> = delivered(dir.path()).into_iter().map(|(_, object)| object).collect();
    assert_eq!(delivered, all, "every tombstone delivered at least once");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox_shard"), 0, "no claim or backoff is left");
}
