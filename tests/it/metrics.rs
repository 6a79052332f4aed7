//! `cascade worker --metrics-addr`: the metrics of real scheduled deletions, scraped over HTTP in
//! Prometheus's text format and compared with what happened to the database.

use crate::common;

use std::collections::BTreeMap;
use std::net::TcpListener;

use common::prometheus::{SERVING, parse, scrape, value};
use common::running::Running;
use common::{cascade, count, project, schedule_now, sqlite_database, texts, wait_until};

const SCHEMA: &str = "
CREATE TABLE item (id INTEGER PRIMARY KEY, status INTEGER NOT NULL);
CREATE TABLE part (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES item (id));
CREATE TABLE note (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES item (id));
CREATE INDEX part_item_id_idx ON part (item_id);
CREATE INDEX note_item_id_idx ON note (item_id);
";

/// Parts are deleted, notes only detached; 40 rows per second on every row of an item's deletion,
/// with chunks of at most 20 the bucket holds 40 rows: a deletion of more waits for the limit.
const CONFIG: &str = r#"
[options]
"items.rows_per_second" = 40

[models.item]
table = "item"
status = { column = "status", proceed = [0], in_progress = 1 }
rate_limit = "items.rows_per_second"
chunk_size = 10
children = [
  { model = "part", column = "item_id" },
  { model = "note", column = "item_id", on_delete = "nullify" },
]

[models.part]
table = "part"
strategy = "bulk"
chunk_size = 20

[models.note]
table = "note"
strategy = "bulk"
chunk_size = 20
"#;

/// Three items with 60 parts and 5 notes each.
fn rows() -> String {
    let mut sql = String::new();
    for item in 1..=3 {
        sql.push_str(&format!("INSERT INTO item VALUES ({item}, 0);\n"));
        for part in 0..60 {
            sql.push_str(&format!("INSERT INTO part VALUES ({}, {item});\n", item * 1000 + part));
        }
        for note in 0..5 {
            sql.push_str(&format!("INSERT INTO note VALUES ({}, {item});\n", item * 1000 + note));
        }
    }
    sql
}

/// Rows deleted or nullified per model, as `cascade_run` recorded them, summed over the runs.
fn recorded_rows(url: &str, kind: &str) -> BTreeMap<String, u64> {
    let mut total = BTreeMap::new();
    for row in texts(url, r#"SELECT "rows" FROM cascade_run"#) {
        let rows: serde_json::Value = serde_json::from_str(row[0].as_deref().unwrap()).unwrap();
        for (model, n) in rows[kind].as_object().unwrap() {
            *total.entry(model.clone()).or_default() += n.as_u64().unwrap();
        }
    }
    total
}

#[test]
fn the_worker_serves_the_metrics_of_its_deletions_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{SCHEMA}{}", rows()));
    let config = project(&[("cascades/items.toml", CONFIG)]);
    let rows_in = |table| count(&url, &format!("SELECT COUNT(*) FROM {table}"));
    let (items, parts) = (rows_in("item"), rows_in("part"));
    let detached = || count(&url, "SELECT COUNT(*) FROM note WHERE item_id IS NULL");
    schedule_now(&url, "item", [1, 2]);

    // Port 0: the worker takes a free port and logs the URL it serves.
    let mut worker = Running::start(
        config.path(),
        &["worker", "--database-url", &url, "--poll", "100ms", "--metrics-addr", "127.0.0.1:0"],
    );
    let serving = worker.expect(SERVING);
    let metrics_url = serving.fields["url"].as_str().expect("the URL is logged").to_owned();
    wait_until("both deletions are done", || count(&url, "SELECT COUNT(*) FROM cascade_scheduled_deletion") == 0);

    let (head, body) = scrape(&metrics_url);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.to_lowercase().contains("content-type: text/plain"), "{head}");
    let samples = parse(&body);

    // Rows: what left the database, what `cascade_run` recorded, and what the metrics say agree.
    let (deleted_items, deleted_parts) = (items - rows_in("item"), parts - rows_in("part"));
    assert_eq!((deleted_items, deleted_parts, detached()), (2, 120, 10), "the two items' rows are gone");
    let deleted = recorded_rows(&url, "deleted");
    assert_eq!(deleted, BTreeMap::from([("item".to_owned(), 2), ("part".to_owned(), 120)]));
    for (model, rows) in &deleted {
        let metric = value(&samples, "cascade_rows_deleted_total", &[("model", model)]);
        assert_eq!(metric, Some(*rows as f64), "rows deleted of {model}:\n{body}");
    }
    assert_eq!(recorded_rows(&url, "nullified"), BTreeMap::from([("note".to_owned(), 10)]));
    assert_eq!(value(&samples, "cascade_rows_nullified_total", &[("model", "note")]), Some(10.0), "{body}");
    assert!(
        !samples
            .iter()
            .any(|s| s.name == "cascade_rows_deleted_total" && s.labels.get("model").is_some_and(|m| m == "note"))
    );

    // One deletion per scheduled one, both succeeded.
    assert_eq!(value(&samples, "cascade_deletions_total", &[("outcome", "succeeded")]), Some(2.0), "{body}");
    assert_eq!(samples.iter().filter(|s| s.name == "cascade_deletions_total").count(), 1, "{body}");

    // 66 rows per deletion at 40 rows per second with room for 40: each deletion waited.
    let option = [("option", "items.rows_per_second")];
    let waits =
        value(&samples, "cascade_rate_limit_waits_total", &option).unwrap_or_else(|| panic!("no waits in:\n{body}"));
    let waited = value(&samples, "cascade_rate_limit_wait_seconds_total", &option).expect("wait time is counted");
    assert!(waits >= 2.0, "{body}");
    assert!(waited > 0.0 && waited < 60.0, "{body}");

    // The help texts and types, and the chunk histogram with its buckets from 1 ms to 10 s.
    for line in [
        "# HELP cascade_rows_deleted_total Rows deleted, per model",
        "# TYPE cascade_rows_deleted_total counter",
        "# TYPE cascade_chunk_duration_seconds histogram",
        "# TYPE cascade_rate_limit_wait_seconds_total gauge",
        "cascade_chunk_duration_seconds_bucket{le=\"0.001\"}",
        "cascade_chunk_duration_seconds_bucket{le=\"10\"}",
    ] {
        assert!(body.contains(line), "no `{line}` in:\n{body}");
    }
    let chunks = value(&samples, "cascade_chunk_duration_seconds_count", &[]).expect("chunks are counted");
    assert_eq!(value(&samples, "cascade_chunk_duration_seconds_bucket", &[("le", "+Inf")]), Some(chunks));
    let seconds = value(&samples, "cascade_chunk_duration_seconds_sum", &[]).expect("chunk time is summed");
    assert!(seconds > 0.0, "{body}");

    worker.terminate();
    let finished = worker.finish();
    assert_eq!(finished.status.code(), Some(130), "a worker stopped by SIGTERM exits 130: {}", finished.stderr);
    // Every committed chunk was observed once: as many as the engine logged.
    let committed = finished.stderr.lines().filter(|line| line.contains("\"chunk committed\"")).count();
    assert_eq!(chunks, committed as f64, "{body}");
}

#[test]
fn a_metrics_port_in_use_is_refused_before_any_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{SCHEMA}{}", rows()));
    let config = project(&[("cascades/items.toml", CONFIG)]);
    schedule_now(&url, "item", [1]);
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    cascade(config.path())
        .args(["worker", "--once", "--database-url", &url, "--metrics-addr", &address])
        .assert()
        .code(2)
        .stderr(format!(
            "error: cannot serve metrics on {address}: the address is already in use (another process listens on \
             it); choose another port with --metrics-addr\n"
        ));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_scheduled_deletion WHERE NOT in_progress"), 1);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM item"), 3, "nothing was deleted");

    // Not HOST:PORT at all: a usage error from the argument parser.
    cascade(config.path())
        .args(["worker", "--once", "--database-url", &url, "--metrics-addr", "nowhere"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("invalid value 'nowhere' for '--metrics-addr <HOST:PORT>'"));
    drop(taken);
}
