//! `cascade partitions`: on a PostgreSQL table partitioned by month over a year, with a default
//! partition holding old rows and a child table whose foreign key points into it, the listing
//! is exactly `pg_inherits` with its bounds, a dry run changes nothing, `prune --confirm` drops
//! exactly the partitions wholly older than the cut-off (archived, audited, the child rows that
//! referenced them nullified), a prune killed between detach and drop is finished by the next
//! one, and `create --ahead` adds the next months.

use crate::common;

use std::collections::BTreeSet;

use common::running::Running;
use common::{archive_lines, cascade, count, dump, json_output, postgres_database, project, texts, wait_until};
use serde_json::Value;

/// `page_view` keeps 90 days; `click` references it, nullified when its page view goes.
const CONFIG: &str = r#"
[models.page_view]
table = "page_view"
retention = { keep = "90d", column = "entered_at" }
children = [
  { model = "click", column = "page_view_id", on_delete = "nullify" },
  { model = "share", column = "page_view_id", on_delete = "nullify" },
]

[models.click]
table = "click"
strategy = "bulk"

[models.share]
table = "share"
strategy = "bulk"
"#;

/// A page view every day from 2025-07-01 to 2026-06-30 in twelve monthly partitions (ids are
/// day numbers from 1), three from 2024 in the default partition (ids 9001-9003), and a click on
/// every tenth page view.
const SCHEMA: &str = "
CREATE TABLE page_view (id bigint NOT NULL, entered_at timestamptz NOT NULL, path text,
  PRIMARY KEY (id, entered_at)) PARTITION BY RANGE (entered_at);
DO $$
BEGIN
  FOR month IN 0..11 LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF page_view FOR VALUES FROM (%L) TO (%L)',
      'page_view_' || to_char(timestamptz '2025-07-01 00:00+00' + make_interval(months => month), 'YYYY_MM'),
      timestamptz '2025-07-01 00:00+00' + make_interval(months => month),
      timestamptz '2025-07-01 00:00+00' + make_interval(months => month + 1));
  END LOOP;
END $$;
CREATE TABLE page_view_default PARTITION OF page_view DEFAULT;
INSERT INTO page_view
  SELECT day, timestamptz '2025-07-01 12:00+00' + make_interval(days => day - 1), '/p/' || day
  FROM generate_series(1, 365) day;
INSERT INTO page_view VALUES (9001, '2024-01-05 00:00+00', '/old'), (9002, '2024-02-05 00:00+00', '/old'),
  (9003, '2024-03-05 00:00+00', '/old');
CREATE TABLE click (id bigint PRIMARY KEY, page_view_id bigint, page_view_entered_at timestamptz,
  FOREIGN KEY (page_view_id, page_view_entered_at) REFERENCES page_view (id, entered_at));
INSERT INTO click SELECT id, id, entered_at FROM page_view WHERE id % 10 = 0 AND id < 9000;
CREATE TABLE share (id bigint PRIMARY KEY, page_view_id bigint);
INSERT INTO share SELECT id, id FROM page_view WHERE id % 100 = 0 AND id < 9000;
";

/// The cut-off is 2026-03-17 (90 days before): July 2025 to February 2026 are wholly older,
/// March 2026 straddles it.
const NOW: &str = "2026-06-15T00:00:00Z";

const DROPPED: [&str; 8] = [
    "page_view_2025_07",
    "page_view_2025_08",
    "page_view_2025_09",
    "page_view_2025_10",
    "page_view_2025_11",
    "page_view_2025_12",
    "page_view_2026_01",
    "page_view_2026_02",
];

/// The page views of the dropped months: days 1 to 243 (2025-07-01 to 2026-02-28).
const DROPPED_IDS: std::ops::RangeInclusive<u64> = 1..=243;

fn attached(url: &str) -> BTreeSet<String> {
    texts(url, "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'page_view'::regclass")
        .into_iter()
        .map(|row| row[0].clone().unwrap())
        .collect()
}

fn args<'a>(url: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--database-url", url, "partitions"];
    args.extend_from_slice(rest);
    args.extend(["--now", NOW]);
    args
}

fn no_orphan_clicks(url: &str) -> u64 {
    count(
        url,
        "SELECT COUNT(*) FROM click c WHERE c.page_view_id IS NOT NULL AND NOT EXISTS \
         (SELECT 1 FROM page_view p WHERE p.id = c.page_view_id AND p.entered_at = c.page_view_entered_at)",
    )
}

#[test]
fn lists_exactly_the_partitions_of_pg_inherits_with_their_bounds_and_fate() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let report = json_output(cascade(config.path()).args(args(&url, &["page_view", "--format", "json"])));
    let model = &report["models"][0];
    assert_eq!(model["cutoff"], "2026-03-17T00:00:00Z");
    let listed: Vec<&Value> = model["partitions"].as_array().unwrap().iter().collect();
    let names: BTreeSet<String> = listed.iter().map(|p| p["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(names, attached(&url));
    assert_eq!(names.len(), 13);
    let bounds: BTreeSet<(String, String)> = texts(
        &url,
        "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE i.inhparent = 'page_view'::regclass",
    )
    .into_iter()
    .map(|row| (row[0].clone().unwrap(), row[1].clone().unwrap()))
    .collect();
    let listed_bounds: BTreeSet<(String, String)> = listed
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_owned(), p["bound"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(listed_bounds, bounds);
    let march = listed.iter().find(|p| p["name"] == "page_view_2026_03").unwrap();
    assert_eq!(march["from"], "2026-03-01 00:00:00+00");
    assert_eq!(march["to"], "2026-04-01 00:00:00+00");
    let dropped: Vec<&str> = listed.iter().filter(|p| p["drop"] == true).map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(dropped, DROPPED);
    let default = listed.last().unwrap();
    assert_eq!(
        (default["name"].as_str(), default["default"].as_bool(), default["drop"].as_bool()),
        (Some("page_view_default"), Some(true), Some(false))
    );
    assert_eq!(model["default_older_rows"], 3);

    let human = cascade(config.path()).args(args(&url, &[])).output().unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(
        human.starts_with("page_view (public.page_view, by entered_at): keep 90d, cut-off 2026-03-17T00:00:00Z\n"),
        "{human}"
    );
    assert!(human.contains("public.page_view_default  DEFAULT"), "{human}");
    assert!(human.contains("the default partition holds 3 row(s) older than the cut-off"), "{human}");
}

#[test]
fn a_dry_run_changes_nothing() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let before = dump(&url);
    let output = cascade(config.path()).args(args(&url, &["prune", "page_view"])).output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("dry run: nothing was dropped; add --confirm to drop 8 partition(s)"), "{stdout}");
    assert_eq!(dump(&url), before);
}

#[test]
fn prune_drops_exactly_the_partitions_wholly_older_and_archives_every_row() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let archive = config.path().join("archive");
    let default_before = dump(&url)["page_view_default"].clone();
    let pruned = json_output(
        cascade(config.path())
            .args(args(&url, &["prune", "--confirm", "--archive", archive.to_str().unwrap(), "--format", "json"])),
    );
    let dropped: Vec<&str> =
        pruned["dropped"].as_array().unwrap().iter().map(|d| d["partition"].as_str().unwrap()).collect();
    let expected: Vec<String> = DROPPED.iter().map(|name| format!("public.{name}")).collect();
    assert_eq!(dropped, expected);
    // The default partition forbids CONCURRENTLY.
    assert!(pruned["dropped"].as_array().unwrap().iter().all(|d| d["detach"] == "plain"));

    let left: BTreeSet<String> = attached(&url);
    let kept: BTreeSet<String> = ["2026_03", "2026_04", "2026_05", "2026_06", "default"]
        .iter()
        .map(|suffix| format!("page_view_{suffix}"))
        .collect();
    assert_eq!(left, kept);
    for name in DROPPED {
        assert_eq!(count(&url, &format!("SELECT COUNT(*) FROM pg_class WHERE relname = '{name}'")), 0, "{name}");
    }
    assert_eq!(dump(&url)["page_view_default"], default_before, "the default partition is never touched");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM page_view WHERE id < 9000"), 365 - 243);

    let lines = archive_lines(&archive, &[]);
    let archived: BTreeSet<u64> = lines["page_view"].iter().map(|line| line["row"]["id"].as_u64().unwrap()).collect();
    assert_eq!(archived, DROPPED_IDS.collect::<BTreeSet<u64>>());
    assert_eq!(lines["page_view"].len(), 243, "each row once");

    assert_eq!(no_orphan_clicks(&url), 0);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM click WHERE page_view_id IS NULL"), 24, "clicks 10..240 nullified");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM click WHERE page_view_id IS NOT NULL"), 12);
    // `share` has no foreign key: its declared relation is cleaned all the same.
    let shares = texts(&url, "SELECT CAST(s.id AS TEXT), CAST(s.page_view_id AS TEXT) FROM share s ORDER BY s.id");
    let shares: Vec<(String, Option<String>)> =
        shares.into_iter().map(|row| (row[0].clone().unwrap(), row[1].clone())).collect();
    let expected: Vec<(String, Option<String>)> =
        [(100, None), (200, None), (300, Some("300"))].map(|(id, to)| (id.to_string(), to.map(str::to_owned))).into();
    assert_eq!(shares, expected);

    let runs = texts(&url, "SELECT root_ids, outcome, rows FROM cascade_run ORDER BY id");
    assert_eq!(runs.len(), 8);
    for (run, name) in runs.iter().zip(DROPPED) {
        assert_eq!(run[0].as_deref(), Some(format!("[\"public.{name}\"]").as_str()));
        assert_eq!(run[1].as_deref(), Some("succeeded"));
    }
    // Each run's rows: the partition's, and the references it set to NULL, which add up to every
    // click and share nullified.
    let recorded: Vec<serde_json::Value> =
        runs.iter().map(|run| serde_json::from_str(run[2].as_deref().unwrap()).unwrap()).collect();
    assert_eq!(recorded[0]["deleted"], serde_json::json!({"page_view": 31}));
    let dropped: u64 = recorded.iter().map(|rows| rows["deleted"]["page_view"].as_u64().unwrap()).sum();
    assert_eq!(dropped, 243);
    let nullified =
        |column: &str| -> u64 { recorded.iter().map(|rows| rows["nullified"][column].as_u64().unwrap_or(0)).sum() };
    assert_eq!((nullified("public.click.page_view_id"), nullified("public.share.page_view_id")), (24, 2));

    let again = json_output(cascade(config.path()).args(args(&url, &["prune", "--confirm", "--format", "json"])));
    assert_eq!(again["dropped"], serde_json::json!([]), "a second prune has nothing to drop");
}

#[test]
fn a_prune_killed_between_detach_and_drop_is_finished_by_the_next() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    // A killed prune is told from one still at work after a second.
    let config = project(&[("cascades/cascade.toml", &format!("[settings]\nrun_lease_seconds = 1\n{CONFIG}"))]);
    let never = config.path().join("never-created");
    let mut run = Running::start(
        config.path(),
        &args(&url, &["prune", "page_view", "--confirm", "--pause-after-detach", never.to_str().unwrap()]),
    );
    let detached = run.expect("partition detached");
    assert_eq!(detached.fields["partition"], "public.page_view_2025_07");
    assert!(!attached(&url).contains("page_view_2025_07"));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM page_view_2025_07"), 31, "detached, not dropped");
    run.kill();
    common::wait_until("the killed prune's lease is over", || {
        let runs = json_output(cascade(config.path()).args(["runs", "--format", "json", "--database-url", &url]));
        runs[0]["outcome"] == "interrupted"
    });

    let report = json_output(cascade(config.path()).args(args(&url, &["--format", "json"])));
    assert_eq!(report["models"][0]["detached"], serde_json::json!(["public.page_view_2025_07"]));

    let pruned = json_output(cascade(config.path()).args(args(&url, &["prune", "--confirm", "--format", "json"])));
    let first = &pruned["dropped"][0];
    assert_eq!(
        (first["partition"].as_str(), first["detach"].as_str(), first["rows"].as_u64()),
        (Some("public.page_view_2025_07"), Some("earlier"), Some(31))
    );
    assert_eq!(pruned["dropped"].as_array().unwrap().len(), 8);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM pg_class WHERE relname = 'page_view_2025_07'"), 0);
    assert_eq!(
        count(
            &url,
            "SELECT COUNT(*) FROM cascade_run WHERE root_ids LIKE '%page_view_2025_07%' AND outcome = 'succeeded' \
             AND rows = '{\"deleted\":{\"page_view\":31},\"nullified\":{}}'"
        ),
        1
    );
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_checkpoint"), 0);
    assert_eq!(no_orphan_clicks(&url), 0);
}

#[test]
fn create_adds_the_missing_months_ahead_once() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let created = json_output(cascade(config.path()).args(args(&url, &["create", "--ahead", "3", "--format", "json"])));
    let bounds: Vec<(&str, &str, &str)> = created["created"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["partition"].as_str().unwrap(), c["from"].as_str().unwrap(), c["to"].as_str().unwrap()))
        .collect();
    assert_eq!(
        bounds,
        [
            ("public.page_view_20260701", "2026-07-01 00:00:00+00", "2026-08-01 00:00:00+00"),
            ("public.page_view_20260801", "2026-08-01 00:00:00+00", "2026-09-01 00:00:00+00"),
            ("public.page_view_20260901", "2026-09-01 00:00:00+00", "2026-10-01 00:00:00+00"),
        ]
    );
    assert_eq!(attached(&url).len(), 16);
    let again = json_output(cascade(config.path()).args(args(&url, &["create", "--ahead", "3", "--format", "json"])));
    assert_eq!(again["created"], serde_json::json!([]));
}

#[test]
fn validate_refuses_retention_on_a_referenced_model_and_on_a_table_not_partitioned_by_it() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = r#"
[models.page_view]
table = "page_view"
retention = { keep = "90d", column = "entered_at" }
children = [{ model = "click", column = "page_view_id" }]

[models.click]
table = "click"
retention = { keep = "30d", column = "id" }
strategy = "bulk"
"#;
    let config = project(&[("cascades/cascade.toml", config)]);
    let output =
        cascade(config.path()).args(["--database-url", &url, "validate", "--format", "json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let found: Vec<(String, String, u64)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["file"].as_str().unwrap().to_owned(),
                d["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let file = "cascades/cascade.toml".to_owned();
    assert!(found.contains(&("retention-on-referenced".to_owned(), file.clone(), 5)), "{found:?}");
    assert!(found.contains(&("retention-not-partitioned".to_owned(), file, 9)), "{found:?}");
}

#[test]
fn the_worker_prunes_what_the_policy_drops_today() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    // The worker counts back from the real clock: the listing (without --now) says what goes.
    let report = json_output(cascade(config.path()).args(["--database-url", &url, "partitions", "--format", "json"]));
    let (to_drop, to_keep): (Vec<&Value>, Vec<&Value>) =
        report["models"][0]["partitions"].as_array().unwrap().iter().partition(|p| p["drop"] == true);
    assert!(!to_drop.is_empty(), "{report}");
    let output = cascade(config.path()).args(["--database-url", &url, "worker", "--once"]).output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        stdout.contains(&format!("retention: {} partition(s) dropped, 0 prune(s) failed", to_drop.len())),
        "{stdout}"
    );
    let kept: BTreeSet<String> = to_keep.iter().map(|p| p["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(attached(&url), kept);
    assert_eq!(
        count(&url, "SELECT COUNT(*) FROM cascade_run WHERE command LIKE '%worker%' AND outcome = 'succeeded'"),
        to_drop.len() as u64
    );
    assert_eq!(no_orphan_clicks(&url), 0);
}

#[test]
fn prune_confirm_refuses_a_now_later_than_the_clock_and_drops_nothing() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let before = dump(&url);
    let output = cascade(config.path())
        .args(["--database-url", url.as_str(), "partitions", "prune", "--confirm", "--now", "2999-01-01T00:00:00Z"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("--now 2999-01-01T00:00:00Z is later than the clock"), "{stderr}");
    assert_eq!(attached(&url).len(), 13, "nothing was detached");
    assert_eq!(dump(&url), before);
}

#[test]
fn a_partition_referenced_through_an_undeclared_foreign_key_is_refused_with_the_reason() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = r#"
[models.page_view]
table = "page_view"
retention = { keep = "90d", column = "entered_at" }

[models.click]
table = "click"
strategy = "bulk"
"#;
    let config = project(&[("cascades/cascade.toml", config)]);
    let before = dump(&url);
    let output = cascade(config.path()).args(args(&url, &["prune", "--confirm"])).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(
            "partition `public.page_view_2025_07` is referenced by 3 row(s) of `public.click` through (page_view_id, \
             page_view_entered_at)"
        ),
        "{stderr}"
    );
    assert_eq!(attached(&url).len(), 13, "nothing was detached");
    let mut after = dump(&url);
    let runs = after.remove("cascade_run").unwrap();
    assert!(runs.len() == 1 && runs[0].contains("\"outcome\":\"failed\""), "{runs:?}");
    after.retain(|table, _| !table.starts_with("cascade_"));
    assert_eq!(after, before);
}

#[test]
fn a_cut_off_before_1970_is_refused_without_a_panic_and_drops_nothing() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = project(&[("cascades/cascade.toml", &CONFIG.replace("keep = \"90d\"", "keep = \"30years\""))]);
    // `prune --confirm` creates the tool's tables before it reads the partitions.
    let data = |url: &str| {
        let mut tables = dump(url);
        tables.retain(|table, _| !table.starts_with("cascade_"));
        tables
    };
    let before = data(&url);
    for command in [&["partitions"][..], &["partitions", "prune"], &["partitions", "prune", "--confirm"]] {
        let output = cascade(config.path())
            .args(["--database-url", url.as_str()])
            .args(command)
            .args(["--now", "1990-01-01T00:00:00Z"])
            .output()
            .unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{command:?}: {stderr}");
        assert!(
            stderr.contains("now minus retention.keep (30years) of model `page_view` is before 1970"),
            "{command:?}: {stderr}"
        );
    }
    assert_eq!(attached(&url).len(), 13, "nothing was detached");
    assert_eq!(data(&url), before);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_run"), 0);
}

/// `account` rows, scheduled for deletion, leave tombstones that a recording sink receives.
fn with_accounts(dir: &std::path::Path) -> String {
    let delivered = dir.join("delivered").display().to_string();
    format!(
        r#"{CONFIG}
[models.account]
table = "account"
outbox = "account_update"

[outbox.scopes.accounts]
shard_key = "id"
categories = ["account_update"]
sink = "recorder"

[outbox.sinks.recorder]
command = ["sh", "-c", "cat >> \"$0\" && echo >> \"$0\"", "{delivered}"]
"#
    )
}

const ACCOUNTS: &str = "CREATE TABLE account (id bigint PRIMARY KEY); INSERT INTO account VALUES (1), (2), (3);";

/// The objects the recording sink received.
fn delivered_accounts(dir: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("delivered")).unwrap_or_default();
    text.lines()
        .flat_map(|line| serde_json::from_str::<Vec<Value>>(line).unwrap())
        .map(|message| message["object_identifier"].as_str().unwrap().to_owned())
        .collect()
}

/// The position of the first log line of `stderr` (JSON lines) whose message is `message`.
fn first_line(stderr: &str, message: &str) -> usize {
    let needle = format!("\"message\":\"{message}\"");
    stderr.lines().position(|line| line.contains(&needle)).unwrap_or_else(|| panic!("no `{message}` in {stderr}"))
}

/// `worker --once --drain` deletes what is due, delivers its tombstones, and then still prunes
/// what the retention policy drops: the drain does not end the run before retention.
#[test]
fn worker_once_drain_prunes_after_the_drain() {
    let Some(url) = postgres_database(&format!("{SCHEMA}{ACCOUNTS}")) else { return };
    let dir = project(&[]);
    std::fs::create_dir_all(dir.path().join("cascades")).unwrap();
    std::fs::write(dir.path().join("cascades/cascade.toml"), with_accounts(dir.path())).unwrap();
    let report = json_output(cascade(dir.path()).args(["--database-url", &url, "partitions", "--format", "json"]));
    let (to_drop, to_keep): (Vec<&Value>, Vec<&Value>) =
        report["models"][0]["partitions"].as_array().unwrap().iter().partition(|p| p["drop"] == true);
    assert!(!to_drop.is_empty(), "{report}");
    common::schedule_now(&url, "account", [1]);

    let mut worker = Running::start(dir.path(), &["--database-url", &url, "worker", "--once", "--drain"]);
    let finished = worker.finish();
    assert!(finished.status.success(), "{}{}", finished.stdout, finished.stderr);
    assert!(finished.stdout.contains("worker done: 1 succeeded"), "{}", finished.stdout);
    assert!(finished.stdout.contains("outbox drain done: 1 message delivered"), "{}", finished.stdout);
    let retained = format!("retention: {} partition(s) dropped, 0 prune(s) failed", to_drop.len());
    assert!(finished.stdout.contains(&retained), "{}", finished.stdout);
    assert!(
        first_line(&finished.stderr, "outbox batch delivered") < first_line(&finished.stderr, "partition dropped"),
        "retention runs after the drain: {}",
        finished.stderr
    );
    assert_eq!(delivered_accounts(dir.path()), ["1"]);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM account"), 2);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_outbox"), 0);
    let kept: BTreeSet<String> = to_keep.iter().map(|p| p["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(attached(&url), kept);
    assert_eq!(no_orphan_clicks(&url), 0);
}

/// A clicks table that refuses every update: the prune, which sets the clicks of a dropped
/// partition to NULL first, fails on it.
const FROZEN_CLICKS: &str = "
CREATE FUNCTION refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'clicks are frozen'; END $$;
CREATE TRIGGER click_frozen BEFORE UPDATE ON click FOR EACH ROW EXECUTE FUNCTION refuse_update();
";

/// A prune that fails in the worker is logged and counted; it never stops the worker's
/// deletions or its drain, nor detaches or changes anything. With `--once` the run exits 1
/// (the failed prune counts); a long-running worker keeps deleting and delivering after it.
#[test]
fn a_failing_retention_never_stops_the_worker_deleting_or_draining() {
    let Some(url) = postgres_database(&format!("{SCHEMA}{ACCOUNTS}{FROZEN_CLICKS}")) else { return };
    let dir = project(&[]);
    std::fs::create_dir_all(dir.path().join("cascades")).unwrap();
    std::fs::write(dir.path().join("cascades/cascade.toml"), with_accounts(dir.path())).unwrap();
    let data = |url: &str| {
        let mut tables = dump(url);
        tables.retain(|table, _| table == "page_view" || table == "click" || table == "share");
        tables
    };
    let before = data(&url);
    common::schedule_now(&url, "account", [1]);

    let output = cascade(dir.path()).args(["--database-url", &url, "worker", "--once", "--drain"]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("worker done: 1 succeeded"), "{stdout}");
    assert!(stdout.contains("outbox drain done: 1 message delivered"), "{stdout}");
    assert!(stdout.contains("retention: 0 partition(s) dropped, 1 prune(s) failed"), "{stdout}");
    assert!(stderr.contains("retention failed") && stderr.contains("clicks are frozen"), "{stderr}");
    assert_eq!(delivered_accounts(dir.path()), ["1"]);

    let mut worker = Running::start(dir.path(), &["--database-url", &url, "worker", "--drain", "--poll", "100ms"]);
    let failed = worker.expect("retention failed; trying again at the next round");
    assert!(failed.fields["error"].as_str().unwrap().contains("clicks are frozen"), "{:?}", failed.fields);
    common::schedule_now(&url, "account", [2]);
    wait_until("the worker deletes account 2 and delivers its tombstone", || {
        count(&url, "SELECT COUNT(*) FROM account WHERE id = 2") == 0
            && count(&url, "SELECT COUNT(*) FROM cascade_outbox") == 0
    });
    assert!(!worker.ended(), "the worker keeps running");
    worker.terminate();
    let finished = worker.finish();
    assert_eq!(finished.status.code(), Some(130), "{}", finished.stderr);
    assert_eq!(delivered_accounts(dir.path()), ["1", "2"]);
    assert_eq!(attached(&url).len(), 13, "nothing was detached");
    assert_eq!(data(&url), before, "no click or share changed, no page view gone");
}
