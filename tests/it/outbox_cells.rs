//! Fan-out to cells on SQLite and PostgreSQL: every message of a scope with cells reaches each
//! cell's sink, a failing cell backs off alone while the others flow, and a row goes only when
//! every cell has it. Seeded random runs (rows written, cells failing and recovering) are checked
//! against an independent model of per-cell coalescing; `outbox stats` shows each cell's backlog
//! and state; four drainers at once leave nothing behind.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use cascade::outbox::Clock;
use common::outbox::{ManualClock, Row, drainer, pass, write_rows};
use common::random::Random;
use common::running::Running;
use common::{cascade, count, json_output, on_each_database, postgres_database, project, sqlite_database};
use serde_json::Value;

const SCHEMA: &str = "CREATE TABLE account (id INTEGER PRIMARY KEY);";

/// A sink for tests, run as `sink.sh CELL`: appends each delivery (a JSON array) to
/// `deliveries/CELL.jsonl`; fails while `deliveries/fail-CELL` exists.
const SINK: &str = r#"#!/bin/sh
dir="$(dirname "$0")/deliveries"
mkdir -p "$dir"
body=$(cat)
if [ -e "$dir/fail-$1" ]; then
    echo "cell $1 is down" >&2
    exit 3
fi
printf '%s\n' "$body" >> "$dir/$1.jsonl"
"#;

const CELLS: [&str; 3] = ["us", "de", "jp"];

/// A config with scope `control` fanned out to `CELLS`, each cell's sink the test sink.
fn config(dir: &Path, batch_size: u64) -> String {
    let sink = dir.join("sink.sh").display().to_string();
    let mut text = String::from(
        r#"
[models.account]
table = "account"
outbox = "user_update"

[outbox.scopes.control]
shard_key = "id"
categories = ["user_update", "org_update"]
cells = ["us", "de", "jp"]
cell_sinks = { us = "us_sink", de = "de_sink", jp = "jp_sink" }
"#,
    );
    for cell in CELLS {
        text += &format!(
            "\n[outbox.sinks.{cell}_sink]\ncommand = [\"sh\", \"{sink}\", \"{cell}\"]\nbatch_size = {batch_size}\n"
        );
    }
    text
}

fn setup(batch_size: u64) -> tempfile::TempDir {
    let dir = project(&[("sink.sh", SINK)]);
    std::fs::create_dir_all(dir.path().join("cascades")).unwrap();
    std::fs::write(dir.path().join("cascades/cascade.toml"), config(dir.path(), batch_size)).unwrap();
    dir
}

fn set_failing(dir: &Path, cell: &str, failing: bool) {
    let flag = dir.join("deliveries").join(format!("fail-{cell}"));
    std::fs::create_dir_all(flag.parent().unwrap()).unwrap();
    if failing {
        std::fs::write(flag, "").unwrap();
    } else {
        let _ = std::fs::remove_file(flag);
    }
}

/// Every message each cell received, per shard, in the order received.
fn messages(dir: &Path) -> BTreeMap<(String, String), Vec<Value>> {
    let mut found: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
    for cell in CELLS {
        let Ok(text) = std::fs::read_to_string(dir.join("deliveries").join(format!("{cell}.jsonl"))) else { continue };
        for message in text.lines().flat_map(|line| serde_json::from_str::<Vec<Value>>(line).unwrap()) {
            let shard = message["shard_identifier"].as_str().unwrap_or("").to_owned();
            found.entry((cell.to_owned(), shard)).or_default().push(message);
        }
    }
    found
}

/// The ids each cell received, per shard, in the order received.
fn received(dir: &Path) -> BTreeMap<(String, String), Vec<i64>> {
    messages(dir)
        .into_iter()
        .map(|(key, messages)| (key, messages.iter().map(|m| m["id"].as_i64().unwrap()).collect()))
        .collect()
}

/// The model: rows (id, shard, category, object) and, per cell, the ids it has received. A pass
/// delivers to each cell that is up, per shard, the newest row of each object among the rows it
/// has not received, in id order; each such row stands for the older rows of its object. A row
/// goes once every cell has it.
#[derive(Default)]
struct Model {
    rows: Vec<(i64, String, &'static str, String)>,
    received: BTreeMap<&'static str, BTreeSet<i64>>,
    delivered: BTreeMap<(String, String), Vec<i64>>,
}

impl Model {
    fn write(&mut self, first_id: i64, rows: &[Row<'static>]) {
        for (offset, row) in rows.iter().enumerate() {
            let shard = row.shard.unwrap_or("").to_owned();
            self.rows.push((first_id + offset as i64, shard, row.category, row.object.clone()));
        }
    }

    fn pass(&mut self, up: &[&'static str]) {
        for cell in up {
            let received = self.received.entry(cell).or_default();
            let pending: Vec<_> = self.rows.iter().filter(|(id, ..)| !received.contains(id)).collect();
            let mut newest: BTreeMap<(&str, &str, &str), i64> = BTreeMap::new();
            for (id, shard, category, object) in &pending {
                newest.insert((shard, category, object), *id);
            }
            let mut messages: Vec<(&str, i64)> = newest.iter().map(|((shard, ..), id)| (*shard, *id)).collect();
            messages.sort_by_key(|(_, id)| *id);
            for (shard, id) in messages {
                self.delivered.entry(((*cell).to_owned(), shard.to_owned())).or_default().push(id);
            }
            for (id, shard, category, object) in pending {
                if newest[&(shard.as_str(), *category, object.as_str())] >= *id {
                    received.insert(*id);
                }
            }
        }
        let everyone = |id: &i64| CELLS.iter().all(|cell| self.received.get(cell).is_some_and(|r| r.contains(id)));
        self.rows.retain(|(id, ..)| !everyone(id));
    }

    fn left(&self) -> Vec<i64> {
        self.rows.iter().map(|(id, ..)| *id).collect()
    }
}

fn random_rows(random: &mut Random) -> Vec<Row<'static>> {
    (0..1 + random.below(25))
        .map(|_| Row {
            scope: "control",
            shard: Some(["1", "2", "3"][random.below(3) as usize]),
            category: if random.chance(25) { "org_update" } else { "user_update" },
            object: random.below(8).to_string(),
        })
        .collect()
}

async fn random_runs_match_the_model(url: impl Fn() -> String) {
    for seed in 0..4 {
        let url = tokio::task::block_in_place(&url);
        let mut random = Random::seeded(seed);
        let dir = setup(1 + random.below(4));
        let text = std::fs::read_to_string(dir.path().join("cascades/cascade.toml")).unwrap();
        let clock = ManualClock::after_writes();
        let (database, drainer) = drainer(&url, &text, &clock).await;
        let mut model = Model::default();
        let mut next_id = 1;
        for step in 0..8 {
            let rows = random_rows(&mut random);
            tokio::task::block_in_place(|| write_rows(&url, &rows));
            model.write(next_id, &rows);
            next_id += rows.len() as i64;
            let up: Vec<&'static str> = CELLS.iter().copied().filter(|_| !random.chance(30)).collect();
            for cell in CELLS {
                set_failing(dir.path(), cell, !up.contains(&cell));
            }
            // Past every backoff: each cell that is up delivers all it has not received.
            clock.catch_up();
            clock.advance(Duration::from_secs(3600));
            let report = pass(&drainer).await;
            model.pass(&up);
            let context = format!("seed {seed}, step {step}, up {up:?}: {report:?}");
            assert_eq!(received(dir.path()), model.delivered, "{context}");
            let mut left: Vec<i64> = tokio::task::block_in_place(|| {
                common::texts(&url, &format!("SELECT {} FROM cascade_outbox", common::as_text(&url, "id")))
                    .into_iter()
                    .map(|row| row[0].as_deref().unwrap().parse().unwrap())
                    .collect()
            });
            left.sort_unstable();
            assert_eq!(left, model.left(), "{context}");
        }
        // Every cell up: everything goes, and the records of partial deliveries with it.
        for cell in CELLS {
            set_failing(dir.path(), cell, false);
        }
        clock.advance(Duration::from_secs(3600));
        pass(&drainer).await;
        model.pass(&CELLS);
        assert_eq!(received(dir.path()), model.delivered, "seed {seed}, last pass");
        tokio::task::block_in_place(|| {
            assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0, "seed {seed}");
            assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox_delivered"), 0, "seed {seed}");
            assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox_shard"), 0, "seed {seed}");
        });
        database.close().await;
    }
}

on_each_database!(
    random_fan_outs_with_failing_cells_match_the_model_sqlite,
    random_fan_outs_with_failing_cells_match_the_model_postgres,
    random_fan_outs_with_failing_cells_match_the_model_mariadb,
    |databases| {
        // Multi-threaded: the test reads and writes the database in `block_in_place`.
        tokio::runtime::Runtime::new().unwrap().block_on(random_runs_match_the_model(|| databases.create(SCHEMA)));
    }
);

fn rows_in(shards: &[&'static str], objects: usize) -> Vec<Row<'static>> {
    shards
        .iter()
        .flat_map(|shard| {
            (0..objects).map(|n| Row {
                scope: "control",
                shard: Some(shard),
                category: "user_update",
                object: n.to_string(),
            })
        })
        .collect()
}

async fn failing_cell_backs_off_alone(url: String) {
    let dir = setup(10);
    let text = std::fs::read_to_string(dir.path().join("cascades/cascade.toml")).unwrap();
    let mut rows = rows_in(&["1", "2"], 3);
    rows.push(Row { scope: "control", shard: Some("1"), category: "user_update", object: "0".to_owned() });
    tokio::task::block_in_place(|| write_rows(&url, &rows));
    set_failing(dir.path(), "de", true);
    let clock = ManualClock::after_writes();
    let (database, drainer) = drainer(&url, &text, &clock).await;

    let first = pass(&drainer).await;
    assert_eq!((first.delivered, first.failed_deliveries, first.rows_deleted), (12, 2, 0), "us and jp, 2 × 3 each");
    let got = received(dir.path());
    assert_eq!(got[&("us".to_owned(), "1".to_owned())], [2, 3, 7], "object 0's rows 1 and 7 coalesce");
    assert_eq!(got[&("jp".to_owned(), "2".to_owned())], [4, 5, 6]);
    let config = cascade::config::load_sources(sources(&text)).config;
    let stats = cascade::outbox::stats(&database, &config, clock.now()).await.unwrap();
    let backlog: Vec<(&str, u64, u64)> =
        stats.cells.iter().map(|cell| (cell.cell.as_str(), cell.pending, cell.failing_shards)).collect();
    assert_eq!(backlog, [("us", 0, 0), ("de", 7, 2), ("jp", 0, 0)]);
    assert_eq!(stats.pending, 7, "no row went: de has none");
    let failing: Vec<(&str, Option<&str>, &str, u64)> =
        stats.shards.iter().map(|s| (s.shard_identifier.as_str(), s.cell.as_deref(), s.state, s.attempts)).collect();
    assert_eq!(failing, [("1", Some("de"), "backing_off", 1), ("2", Some("de"), "backing_off", 1)]);
    assert!(stats.shards.iter().all(|s| s.failing_since.is_some()), "{:?}", stats.shards);
    assert!(stats.shards[0].last_error.as_deref().unwrap().contains("cell de is down"));

    // Nothing new for the cells that are up, and de waits out its backoff.
    assert_eq!(pass(&drainer).await, cascade::outbox::DrainReport::default());

    set_failing(dir.path(), "de", false);
    clock.advance(Duration::from_secs(2));
    let second = pass(&drainer).await;
    assert_eq!((second.delivered, second.failed_deliveries, second.rows_deleted), (6, 0, 7), "{second:?}");
    let got = received(dir.path());
    assert_eq!(got[&("de".to_owned(), "1".to_owned())], [2, 3, 7]);
    assert_eq!(got[&("de".to_owned(), "2".to_owned())], [4, 5, 6]);
    assert_eq!(got[&("us".to_owned(), "1".to_owned())], [2, 3, 7], "no redelivery to us");
    tokio::task::block_in_place(|| {
        assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox_delivered"), 0);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox_shard"), 0);
    });
    database.close().await;
}

fn sources(text: &str) -> cascade::diagnostic::Sources {
    let mut sources = cascade::diagnostic::Sources::default();
    sources.add("cascade.toml", text.to_owned());
    sources
}

on_each_database!(
    a_failing_cell_backs_off_alone_while_the_others_deliver_sqlite,
    a_failing_cell_backs_off_alone_while_the_others_deliver_postgres,
    a_failing_cell_backs_off_alone_while_the_others_deliver_mariadb,
    |databases| {
        tokio::runtime::Runtime::new().unwrap().block_on(failing_cell_backs_off_alone(databases.create(SCHEMA)));
    }
);

#[test]
fn stats_show_each_cells_backlog_and_state_and_once_fails_while_a_cell_does() {
    let dir = setup(10);
    let url = sqlite_database(dir.path(), SCHEMA);
    write_rows(&url, &rows_in(&["1", "2"], 2));
    set_failing(dir.path(), "jp", true);
    let drained = cascade(dir.path()).args(["outbox", "drain", "--once", "--database-url", &url]).output().unwrap();
    assert_eq!(drained.status.code(), Some(1), "{}", String::from_utf8_lossy(&drained.stderr));
    let stderr = String::from_utf8_lossy(&drained.stderr);
    assert!(stderr.contains("outbox delivery failed") && stderr.contains("jp"), "{stderr}");

    let stats = json_output(cascade(dir.path()).args(["outbox", "stats", "--format", "json", "--database-url", &url]));
    assert_eq!(stats["pending"], 4);
    let cells: Vec<(String, u64, u64, String)> = stats["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| {
            let number = |field: &str| cell[field].as_u64().unwrap();
            (
                cell["cell"].as_str().unwrap().to_owned(),
                number("pending"),
                number("failing_shards"),
                cell["sink"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        cells,
        [
            ("us".to_owned(), 0, 0, "\"us_sink\"".to_owned()),
            ("de".to_owned(), 0, 0, "\"de_sink\"".to_owned()),
            ("jp".to_owned(), 4, 2, "\"jp_sink\"".to_owned())
        ]
    );
    assert_eq!(stats["shards"][0]["cell"], "jp");

    let human = cascade(dir.path()).args(["outbox", "stats", "--database-url", &url]).output().unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains("control/1 to jp  backing_off, 1 failed attempts since "), "{human}");
    // The categories go to every cell, not to no sink.
    assert_eq!(stats["categories"][0]["cells"], serde_json::json!(["us", "de", "jp"]));
    let category = human.lines().find(|line| line.starts_with("control") && line.contains("user_update")).unwrap();
    assert_eq!(category.split_whitespace().nth(2), Some("(per"), "{human}");
    assert!(!human.contains("(no sink)"), "{human}");
    let jp = human.lines().find(|line| line.starts_with("control") && line.contains("jp_sink")).unwrap();
    let columns: Vec<&str> = jp.split_whitespace().collect();
    assert_eq!(&columns[..6], ["control", "jp", "jp_sink", "4", "2", "2"], "{human}");
}

#[test]
fn four_drainers_with_cells_leave_no_row_and_no_record_behind_postgres() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    four_drainers_with_cells(&url);
}

#[test]
fn four_drainers_with_cells_leave_no_row_and_no_record_behind_mariadb() {
    let Some(databases) = common::databases::Databases::mysql() else { return };
    four_drainers_with_cells(&databases.create(SCHEMA));
}

fn four_drainers_with_cells(url: &str) {
    let dir = setup(7);
    let rows: Vec<Row<'static>> = (0..3000)
        .map(|n| Row {
            scope: "control",
            shard: Some(["1", "2", "3", "4", "5", "6", "7", "8"][n % 8]),
            category: "user_update",
            object: ((n * 7) % 50).to_string(),
        })
        .collect();
    write_rows(url, &rows);
    let mut drainers: Vec<Running> = (0..4)
        .map(|_| {
            Running::start(dir.path(), &["outbox", "drain", "--once", "--concurrency", "3", "--database-url", url])
        })
        .collect();
    for drainer in &mut drainers {
        let finished = drainer.finish();
        assert!(finished.status.success(), "{}", finished.stderr);
    }
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_outbox"), 0, "every cell had every row, and they went");
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_outbox_delivered"), 0);
    let mut expected: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for row in &rows {
        expected.entry(row.shard.unwrap()).or_default().insert(row.object.clone());
    }
    let got = messages(dir.path());
    for cell in CELLS {
        for (shard, objects) in &expected {
            let received: BTreeSet<String> = got[&(cell.to_owned(), (*shard).to_owned())]
                .iter()
                .map(|m| m["object_identifier"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(&received, objects, "{cell} heard of every object of shard {shard}");
        }
    }
}

#[test]
fn validate_wants_a_sink_for_every_cell() {
    let dir = setup(10);
    let text = config(dir.path(), 10).replace(", jp = \"jp_sink\"", "");
    std::fs::write(dir.path().join("cascades/cascade.toml"), text).unwrap();
    let output = cascade(dir.path()).args(["validate", "--format", "json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let found: Vec<(&str, u64, &str)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap(), d["line"].as_u64().unwrap(), d["message"].as_str().unwrap()))
        .collect();
    assert!(
        found.contains(&("cell-sinks", 9, "cell `jp` of scope `control` has no sink in `cell_sinks`")),
        "{found:?}"
    );

    let url = sqlite_database(dir.path(), SCHEMA);
    let drained = cascade(dir.path()).args(["outbox", "drain", "--once", "--database-url", &url]).output().unwrap();
    assert_eq!(drained.status.code(), Some(1), "an invalid config is refused before anything is delivered");
}

/// What belongs to a cell taken out of the config goes at the next drain: its failing shards
/// leave `outbox stats`, and its records of delivered rows are deleted; a scope switched from
/// cells to one sink keeps no record of any cell.
#[test]
fn a_removed_cell_and_a_scope_that_lost_its_cells_leave_nothing_behind() {
    let dir = setup(10);
    let url = sqlite_database(dir.path(), SCHEMA);
    let config_path = dir.path().join("cascades/cascade.toml");
    let drain = || cascade(dir.path()).args(["outbox", "drain", "--once", "--database-url", &url]).output().unwrap();
    let states =
        |cells: &str| count(&url, &format!("SELECT COUNT(*) FROM cascade_outbox_shard WHERE cell IN ({cells})"));
    let records = || count(&url, "SELECT COUNT(*) FROM cascade_outbox_delivered");

    write_rows(&url, &rows_in(&["1", "2"], 2));
    set_failing(dir.path(), "jp", true);
    assert_eq!(drain().status.code(), Some(1));
    assert_eq!(states("'jp'"), 2, "jp's shards are failing");
    assert!(records() > 0, "us and de have rows jp is missing");

    let without_jp = config(dir.path(), 10)
        .replace("cells = [\"us\", \"de\", \"jp\"]", "cells = [\"us\", \"de\"]")
        .replace(", jp = \"jp_sink\"", "");
    std::fs::write(&config_path, without_jp).unwrap();
    let drained = drain();
    assert!(drained.status.success(), "{}", String::from_utf8_lossy(&drained.stderr));
    assert_eq!(states("'jp'"), 0, "a removed cell's delivery state is gone");
    assert_eq!(records(), 0, "the rows every remaining cell had went, with their records");
    let stats = json_output(cascade(dir.path()).args(["outbox", "stats", "--format", "json", "--database-url", &url]));
    assert_eq!(stats["shards"], serde_json::json!([]), "{stats}");
    assert_eq!(stats["pending"], 0, "{stats}");

    write_rows(&url, &rows_in(&["3"], 2));
    set_failing(dir.path(), "de", true);
    assert_eq!(drain().status.code(), Some(1));
    assert!(records() > 0 && states("'de'") > 0, "us has rows de is missing");
    let one_sink = std::fs::read_to_string(&config_path)
        .unwrap()
        .replace("cells = [\"us\", \"de\"]\ncell_sinks = { us = \"us_sink\", de = \"de_sink\" }", "sink = \"us_sink\"");
    std::fs::write(&config_path, one_sink).unwrap();
    let drained = drain();
    assert!(drained.status.success(), "{}", String::from_utf8_lossy(&drained.stderr));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0, "the one sink got every row");
    assert_eq!(records(), 0, "no record of a cell is left");
    assert_eq!(states("'us', 'de', 'jp'"), 0, "no cell's delivery state is left");
}
