//! The ops files: the alert rules checked and unit-tested by the real `promtool`, every query of
//! the Grafana dashboard parsed by it, every metric the dashboard and the alerts name served by a
//! real worker that deleted rows, delivered tombstones and failed to deliver some, and a real
//! Prometheus scraping that worker with the rules loaded: every panel's query has data and every
//! rule evaluates.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use common::prometheus::{SERVING, Sample, Server, parse, scrape, value};
use common::running::Running;
use common::{DEADLINE, count, on_each_database, poll, project, repository, schedule_now, texts, tools};
use serde_json::Value;

const ALERTS: &str = "ops/prometheus/alerts.yml";
const ALERT_TESTS: &str = "ops/prometheus/alerts_test.yml";
const DASHBOARD: &str = "ops/grafana/cascade.json";

/// The alerts `alerts.yml` defines.
const ALERT_NAMES: [&str; 6] = [
    "CascadeOutboxBacklogOld",
    "CascadeOutboxShardFailing",
    "CascadeInboxPendingOld",
    "CascadeInboxParked",
    "CascadeDeletionsStalled",
    "CascadeWorkerCrashLooping",
];

fn promtool() -> Option<PathBuf> {
    tools::required("promtool", "apt-get install prometheus")
}

/// Runs `promtool ARGS` in the repository, which must succeed; its standard output.
fn run_promtool(promtool: &Path, args: &[&str]) -> String {
    let output = Command::new(promtool).current_dir(repository()).args(args).output().expect("run promtool");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "promtool {args:?} failed:\n{stdout}{stderr}");
    stdout.into_owned()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repository().join(path)).unwrap_or_else(|error| panic!("read {path}: {error}"))
}

fn yaml(path: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&read(path)).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn dashboard() -> Value {
    serde_json::from_str(&read(DASHBOARD)).unwrap_or_else(|error| panic!("{DASHBOARD}: {error}"))
}

/// The panels that show data (rows only group them).
fn data_panels(dashboard: &Value) -> Vec<&Value> {
    let panels = dashboard["panels"].as_array().expect("the dashboard has panels");
    panels.iter().filter(|panel| panel["type"] != "row").collect()
}

/// Every PromQL expression of the dashboard's panels, with its panel's title.
fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    data_panels(dashboard)
        .into_iter()
        .flat_map(|panel| {
            let title = panel["title"].as_str().unwrap_or_default().to_owned();
            let targets = panel["targets"].as_array().into_iter().flatten();
            targets.map(move |target| (title.clone(), target["expr"].as_str().unwrap_or_default().to_owned()))
        })
        .collect()
}

/// The names `cascade_...` in `text` (a query, or a whole file).
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("cascade_") {
        let name: String =
            rest[start..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
        let preceded_by_name = rest[..start].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if name.len() > "cascade_".len() && !preceded_by_name {
            names.insert(name.clone());
        }
        rest = &rest[start + name.len().max(1)..];
    }
    names
}

#[test]
fn promtool_accepts_the_alert_rules_and_their_unit_tests_pass() {
    let Some(promtool) = promtool() else { return };
    let checked = run_promtool(&promtool, &["check", "rules", ALERTS]);
    assert!(checked.contains(&format!("SUCCESS: {} rules found", ALERT_NAMES.len())), "{checked}");

    let rules = yaml(ALERTS);
    let rules = rules["groups"][0]["rules"].as_sequence().expect("one group of rules");
    let names: Vec<&str> = rules.iter().map(|rule| rule["alert"].as_str().expect("an alert")).collect();
    assert_eq!(names, ALERT_NAMES);
    for rule in rules {
        assert!(rule["labels"]["severity"].is_string(), "{rule:?} has a severity");
        assert!(rule["annotations"]["summary"].is_string(), "{rule:?} has a summary");
    }

    // Each alert is unit-tested both firing and quiet, and the tests pass.
    let tests = yaml(ALERT_TESTS);
    for name in ALERT_NAMES {
        let cases: Vec<&serde_yaml_ng::Value> = tests["tests"]
            .as_sequence()
            .expect("unit tests")
            .iter()
            .flat_map(|test| test["alert_rule_test"].as_sequence().into_iter().flatten())
            .filter(|case| case["alertname"].as_str() == Some(name))
            .collect();
        let firing = |case: &&serde_yaml_ng::Value| case["exp_alerts"].as_sequence().is_some_and(|a| !a.is_empty());
        assert!(cases.iter().any(firing), "no unit test where {name} fires");
        assert!(cases.iter().any(|case| !firing(case)), "no unit test where {name} stays quiet");
    }
    let tested = run_promtool(&promtool, &["test", "rules", ALERT_TESTS]);
    assert!(tested.contains("SUCCESS"), "{tested}");
}

#[test]
fn the_dashboard_is_importable_and_promtool_parses_every_query() {
    let dashboard = dashboard();
    assert_eq!(dashboard["title"], "cascade");
    assert!(dashboard["uid"].as_str().is_some_and(|uid| !uid.is_empty()), "a stable uid");
    assert!(dashboard["schemaVersion"].as_u64().is_some(), "a schema version");
    let variables = dashboard["templating"]["list"].as_array().expect("template variables");
    let datasource = variables.iter().find(|variable| variable["name"] == "datasource").expect("a datasource variable");
    assert_eq!((&datasource["type"], &datasource["query"]), (&Value::from("datasource"), &Value::from("prometheus")));
    let uses_variable = |value: &Value| value["type"] == "prometheus" && value["uid"] == "${datasource}";

    let panels = data_panels(&dashboard);
    assert!(panels.len() >= 10, "{} panels", panels.len());
    let mut ids = BTreeSet::new();
    let mut cells = BTreeSet::new();
    for panel in &panels {
        let title = panel["title"].as_str().expect("a title");
        assert!(ids.insert(panel["id"].as_u64().expect("an id")), "{title}: a duplicate id");
        assert!(uses_variable(&panel["datasource"]), "{title}: its datasource is the variable");
        let targets = panel["targets"].as_array().filter(|targets| !targets.is_empty());
        for target in targets.unwrap_or_else(|| panic!("{title}: no target")) {
            assert!(target["expr"].as_str().is_some_and(|expr| expr.contains("cascade_")), "{title}: {target}");
            assert!(uses_variable(&target["datasource"]), "{title}: {target}");
        }
        // Inside the 24 columns, and no two panels on the same cell of the grid.
        let grid = &panel["gridPos"];
        let [x, y, w, h] = ["x", "y", "w", "h"].map(|key| grid[key].as_u64().expect("a grid position"));
        assert!(w > 0 && h > 0 && x + w <= 24, "{title}: {grid}");
        for cell in (x..x + w).flat_map(|column| (y..y + h).map(move |row| (column, row))) {
            assert!(cells.insert(cell), "{title} overlaps another panel at {cell:?}");
        }
    }

    // Every query as a recording rule, Grafana's variables replaced as it does: promtool parses
    // them all.
    let Some(promtool) = promtool() else { return };
    let queries = dashboard_queries(&dashboard);
    let rules: Vec<serde_yaml_ng::Value> = queries
        .iter()
        .enumerate()
        .map(|(index, (title, expr))| {
            let expr = expr.replace("$__rate_interval", "5m").replace("$job", ".*");
            assert!(!expr.contains('$'), "{title}: a variable Grafana does not define: {expr}");
            serde_yaml_ng::to_value(serde_json::json!({ "record": format!("dashboard:query_{index}"), "expr": expr }))
                .unwrap()
        })
        .collect();
    let file = serde_json::json!({ "groups": [{ "name": "dashboard", "rules": rules }] });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dashboard-queries.yml");
    std::fs::write(&path, serde_yaml_ng::to_string(&file).unwrap()).unwrap();
    let checked = run_promtool(&promtool, &["check", "rules", path.to_str().unwrap()]);
    assert!(checked.contains(&format!("SUCCESS: {} rules found", queries.len())), "{checked}");
}

const SCHEMA: &str = "
CREATE TABLE item (id INTEGER PRIMARY KEY);
CREATE TABLE part (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES item (id));
CREATE TABLE note (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES item (id));
CREATE INDEX part_item_id_idx ON part (item_id);
CREATE INDEX note_item_id_idx ON note (item_id);
CREATE TABLE membership (id INTEGER PRIMARY KEY, account_id INTEGER NOT NULL);
CREATE INDEX membership_account_id_idx ON membership (account_id);
INSERT INTO item VALUES (1), (2), (3), (4);
INSERT INTO membership VALUES (1, 1), (2, 1), (3, 2);
";

/// Accounts of another database, deleted there: account 1's tombstone is applied by the worker
/// (its memberships deleted), account 2's was parked after failing every attempt.
///
/// An item's deletion waits for its rate limit (20 rows a second, a bucket of 20 rows since no
/// chunk is larger: 30 parts in chunks of 10),
/// nullifies notes and writes tombstones: the item's to scope `items`, delivered; its parts' to
/// scope `parts`, fanned out to cell `de`, delivered, and cell `us`, whose sink refuses them.
const CONFIG: &str = r#"
[options]
"items.rows_per_second" = 20

[models.item]
table = "item"
rate_limit = "items.rows_per_second"
chunk_size = 10
outbox = "item_deleted"
children = [
  { model = "part", column = "item_id" },
  { model = "note", column = "item_id", on_delete = "nullify" },
]

[models.part]
table = "part"
chunk_size = 10
outbox = "part_deleted"

[models.note]
table = "note"
strategy = "bulk"
chunk_size = 10

[outbox.scopes.items]
shard_key = "id"
categories = ["item_deleted"]
sink = "accepting"

[outbox.scopes.parts]
shard_key = "item_id"
categories = ["part_deleted"]
cells = ["us", "de"]
cell_sinks = { us = "refusing", de = "accepting" }

[models.account]
remote = { category = "account_deleted" }
children = [{ model = "membership", column = "account_id" }]

[models.membership]
table = "membership"

[outbox.sinks.accepting]
command = ["sh", "-c", "cat > /dev/null"]

[outbox.sinks.refusing]
command = ["sh", "-c", "cat > /dev/null; echo 'cell us is down' >&2; exit 3"]
"#;

/// Scrapes `url` until `done` holds for its samples (every scrape a fresh reading); the last
/// body and its samples. Fails the test when it does not hold by the deadline.
fn scrape_until(url: &str, what: &str, done: impl Fn(&[Sample]) -> bool) -> (String, Vec<Sample>) {
    let mut last = String::new();
    let found = poll(DEADLINE, || {
        last = scrape(url).1;
        let samples = parse(&last);
        done(&samples).then(|| (last.clone(), samples))
    });
    found.unwrap_or_else(|| panic!("timed out waiting until {what}; the last scrape:\n{last}"))
}

fn unix_seconds(time: SystemTime) -> f64 {
    time.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Item 1 with 30 parts and 2 notes, and items 2 to 4 alone.
fn rows() -> String {
    let mut rows = String::from(SCHEMA);
    rows += &(0..30).map(|part| format!("INSERT INTO part VALUES ({part}, 1);\n")).collect::<String>();
    rows + "INSERT INTO note VALUES (1, 1), (2, 1);\n"
}

/// A `cascade worker --drain --metrics-addr` running on a database made with [`rows`].
struct Worker {
    _config: tempfile::TempDir,
    running: Running,
    /// Its metrics URL.
    metrics: String,
    /// A moment before it started.
    before: SystemTime,
}

/// Schedules the deletions and starts the worker; returns once item 1 is deleted. Item 1 is
/// due; item 2 is due but claimed by another (live) worker; item 3 is due tomorrow; item 4 has
/// used up its attempts: only 1 and 2 count as due.
fn start_worker(url: &str) -> Worker {
    let config = project(&[("cascades/items.toml", CONFIG)]);
    schedule_now(url, "item", [1, 2, 4]);
    texts(
        url,
        "UPDATE cascade_scheduled_deletion SET in_progress = TRUE, claim_token = 'another worker', \
         heartbeat = '9999-12-31 00:00:00.000', claim_expires_at = '9999-12-31 00:00:00.000' WHERE object_id = '2'",
    );
    texts(url, "UPDATE cascade_scheduled_deletion SET attempts = 1000 WHERE object_id = '4'");
    texts(
        url,
        "INSERT INTO cascade_inbox (source, idempotency_key, category, model, object_key) VALUES \
         ('control', 'account/1', 'account_deleted', 'account', '1'), ('control', 'account/2', 'account_deleted', 'account', '2')",
    );
    texts(url, "UPDATE cascade_inbox SET parked_at = CURRENT_TIMESTAMP, attempts = 5 WHERE object_key = '2'");
    common::block_on(async {
        let database = cascade::db::Database::connect(url, cascade::db::Access::ReadWrite).await.unwrap();
        let tomorrow = SystemTime::now() + std::time::Duration::from_secs(24 * 3600);
        cascade::scheduler::schedule(&database, "item", "3", tomorrow, None, None).await.unwrap();
        database.close().await;
    });

    let before = SystemTime::now();
    let args = ["worker", "--drain", "--poll", "100ms", "--metrics-addr", "127.0.0.1:0", "--database-url", url];
    let mut running = Running::start(config.path(), &args);
    let metrics = running.expect(SERVING).fields["url"].as_str().expect("the URL is logged").to_owned();
    common::wait_until("item 1 is deleted", || count(url, "SELECT COUNT(*) FROM item WHERE id = 1") == 0);
    Worker { _config: config, running, metrics, before }
}

const US: [(&str, &str); 2] = [("scope", "parts"), ("cell", "us")];
const ACCOUNTS: [(&str, &str); 1] = [("category", "account_deleted")];
const DE: [(&str, &str); 2] = [("scope", "parts"), ("cell", "de")];

/// Scrapes the worker until its counters and gauges show what the deletion and the deliveries
/// left (waited for together, since the drainer measures its gauges between passes).
fn settled(worker: &Worker) -> (String, Vec<Sample>) {
    let settled = "the deliveries are counted, the drainer measured what they left and the worker polled";
    scrape_until(&worker.metrics, settled, |s| {
        value(s, "cascade_outbox_delivered_total", &[("sink", "accepting")]) == Some(31.0)
            && value(s, "cascade_outbox_backlog", &[("scope", "items")]) == Some(0.0)
            && value(s, "cascade_outbox_backlog", &DE) == Some(0.0)
            && value(s, "cascade_outbox_backlog", &US) == Some(30.0)
            && value(s, "cascade_outbox_failing_shards", &US) == Some(1.0)
            && value(s, "cascade_outbox_longest_failing_seconds", &US).is_some_and(|seconds| seconds > 0.0)
            && value(s, "cascade_scheduled_deletions_due", &[]) == Some(1.0)
            && value(s, "cascade_inbox_applied_total", &[("model", "account")]) == Some(1.0)
            && value(s, "cascade_inbox_pending", &ACCOUNTS) == Some(0.0)
    })
}

on_each_database!(
    a_worker_serves_every_metric_the_dashboard_and_the_alerts_name_sqlite,
    a_worker_serves_every_metric_the_dashboard_and_the_alerts_name_postgres,
    |databases| {
        serves_every_metric(&databases.create(&rows()));
    }
);

/// A worker with `--drain` deletes item 1 and delivers its tombstones but to cell `us`; then
/// every metric named by the dashboard and the alerts is served, with the values that happened.
fn serves_every_metric(url: &str) {
    let mut worker = start_worker(url);
    let (body, samples) = settled(&worker);
    let before = worker.before;
    let elapsed = SystemTime::now().duration_since(before).unwrap().as_secs_f64();

    // What the dashboard and the alerts name is served, and the dashboard shows every metric.
    let exported: BTreeSet<&str> = samples.iter().map(|sample| sample.name.as_str()).collect();
    let dashboard = dashboard();
    let queries = dashboard_queries(&dashboard);
    let on_dashboard: BTreeSet<String> = queries.iter().flat_map(|(_, expr)| metric_names(expr)).collect();
    let rules = yaml(ALERTS);
    let in_alerts: BTreeSet<String> = rules["groups"][0]["rules"]
        .as_sequence()
        .expect("rules")
        .iter()
        .flat_map(|rule| metric_names(rule["expr"].as_str().expect("an expression")))
        .collect();
    assert_eq!(metric_names(&read(ALERTS)), in_alerts, "the alerts name metrics outside their expressions");
    assert_eq!(metric_names(&read(DASHBOARD)), on_dashboard, "the dashboard names metrics outside its queries");
    assert!(in_alerts.len() >= 5 && on_dashboard.len() >= 15, "{in_alerts:?} {on_dashboard:?}");
    for name in on_dashboard.iter().chain(&in_alerts) {
        assert!(exported.contains(name.as_str()), "`{name}` is not served:\n{body}");
    }
    let families: BTreeSet<&str> =
        body.lines().filter_map(|line| line.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).collect();
    for family in families {
        let shown = on_dashboard.iter().any(|name| {
            name.strip_prefix(family).is_some_and(|rest| ["", "_bucket", "_sum", "_count"].contains(&rest))
        });
        assert!(shown, "`{family}` is served but not on the dashboard");
    }

    // The new metrics' values: one claim, the deletions due, the start time, the failing cell.
    assert_eq!(value(&samples, "cascade_scheduled_deletions_claimed_total", &[("model", "item")]), Some(1.0));
    // Item 1's, and the batch of memberships the inbox's tombstone deleted.
    assert_eq!(value(&samples, "cascade_deletions_total", &[("outcome", "succeeded")]), Some(2.0));
    assert_eq!(value(&samples, "cascade_rows_deleted_total", &[("model", "part")]), Some(30.0));
    let started = value(&samples, "cascade_worker_start_time_seconds", &[]).expect("a start time");
    assert!(unix_seconds(before) <= started && started <= unix_seconds(before) + elapsed, "{started}");
    let failing_for = value(&samples, "cascade_outbox_longest_failing_seconds", &US).unwrap();
    assert!(failing_for <= elapsed, "failing for {failing_for} s of {elapsed} s");
    assert_eq!(value(&samples, "cascade_outbox_failing_shards", &DE), Some(0.0));
    assert_eq!(value(&samples, "cascade_outbox_longest_failing_seconds", &DE), Some(0.0));
    assert_eq!(value(&samples, "cascade_outbox_failing_shards", &[("scope", "items")]), Some(0.0));
    assert!(value(&samples, "cascade_outbox_failed_total", &[("sink", "refusing")]).is_some_and(|n| n >= 1.0));
    assert!(body.contains("# HELP cascade_outbox_failing_shards "), "{body}");
    assert_eq!(value(&samples, "cascade_inbox_parked", &ACCOUNTS), Some(1.0));
    assert_eq!(value(&samples, "cascade_inbox_oldest_pending_age_seconds", &ACCOUNTS), Some(0.0));
    assert_eq!(count(url, "SELECT COUNT(*) FROM membership"), 1, "account 1's memberships are deleted, 2's kept");
    assert!(body.contains("# TYPE cascade_scheduled_deletions_claimed_total counter"), "{body}");

    worker.running.terminate();
    assert_eq!(worker.running.finish().status.code(), Some(130));
}

/// A real Prometheus scraping the worker: every query of the dashboard has data, and every alert
/// rule evaluates without an error.
#[test]
fn prometheus_scraping_a_worker_has_data_for_every_panel_and_evaluates_every_alert() {
    let Some(prometheus) = tools::required("prometheus", "apt-get install prometheus") else { return };
    let dir = tempfile::tempdir().unwrap();
    let worker = start_worker(&common::sqlite_database(dir.path(), &rows()));
    settled(&worker);
    let target = worker.metrics.trim_start_matches("http://").trim_end_matches("/metrics");
    let server = Server::start(&prometheus, &[target], &[&repository().join(ALERTS)]);

    // Grafana's `$__rate_interval` is at least four scrape intervals: 4 s here.
    for (title, expr) in dashboard_queries(&dashboard()) {
        let expr = expr.replace("$__rate_interval", "4s").replace("$job", ".*");
        let what = format!("the panel {title:?} has data: {expr}");
        common::wait_until(&what, || !server.query(&expr).is_empty());
    }
    let rules = || server.api("rules", "type=alert")["data"]["groups"][0]["rules"].as_array().cloned();
    common::wait_until("every alert rule has been evaluated", || {
        rules().is_some_and(|rules| rules.len() == ALERT_NAMES.len() && rules.iter().all(|r| r["health"] != "unknown"))
    });
    for rule in rules().unwrap() {
        let error = rule["lastError"].as_str().unwrap_or_default();
        assert!(rule["health"] == "ok" && error.is_empty(), "{rule}");
    }
}
