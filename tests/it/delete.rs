//! `cascade delete` against real SQLite and PostgreSQL databases: exact counts through a
//! diamond, nothing orphaned, one tombstone per deleted row, the archive, the audit trail, and
//! resuming after kill -9, SIGTERM, concurrent inserts and a database that goes away.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::diamond::{DIAMOND_CONFIG, DIAMOND_SCHEMA, EXPECTED, diamond_rows};
use common::running::{CHUNK_COMMITTED, DELETION_STARTED, RATE_LIMIT_CHANGED, Running};
use common::{
    block_on, cascade, count, json_output, on_each_database, postgres_database, project, sqlite_database, texts,
    wait_until,
};
use serde_json::{Value, json};

/// Runs hand-written SQL against the test database (any dialect) through the library.
struct Probe {
    url: String,
}

impl Probe {
    fn texts(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        common::texts(&self.url, sql)
    }

    fn count(&self, sql: &str) -> u64 {
        common::count(&self.url, sql)
    }

    /// Rows per table of the diamond schema.
    fn table_rows(&self) -> BTreeMap<&'static str, u64> {
        ["org", "project", "member", "task", "note", "audit"]
            .into_iter()
            .map(|table| (table, self.count(&format!("SELECT COUNT(*) FROM {table}"))))
            .collect()
    }

    /// Child rows whose parent is gone, over every foreign key of the diamond schema.
    fn orphans(&self) -> u64 {
        [
            ("project", "org_id", "org"),
            ("member", "org_id", "org"),
            ("task", "project_id", "project"),
            ("task", "assignee_id", "member"),
            ("note", "task_id", "task"),
            ("audit", "member_id", "member"),
        ]
        .iter()
        .map(|(child, column, parent)| {
            self.count(&format!(
                "SELECT COUNT(*) FROM {child} c WHERE c.{column} IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE p.id = c.{column})"
            ))
        })
        .sum()
    }
}

/// What deleting orgs 1, 2 and 4 must do, measured by hand before it runs.
struct Expectation {
    counts: BTreeMap<&'static str, u64>,
    before: BTreeMap<&'static str, u64>,
    /// Task id → (project_id, assignee_id) of every task that must go.
    tasks: BTreeMap<String, (String, Option<String>)>,
}

fn expect(probe: &Probe) -> Expectation {
    let tasks = probe
        .texts(
            "SELECT CAST(id AS TEXT), CAST(project_id AS TEXT), CAST(assignee_id AS TEXT) FROM task \
             WHERE project_id IN (SELECT id FROM project WHERE org_id IN (1, 2)) \
             OR assignee_id IN (SELECT id FROM member WHERE org_id IN (1, 2))",
        )
        .into_iter()
        .map(|row| (row[0].clone().unwrap(), (row[1].clone().unwrap(), row[2].clone())))
        .collect();
    Expectation {
        counts: EXPECTED.iter().map(|(model, sql)| (*model, probe.count(sql))).collect(),
        before: probe.table_rows(),
        tasks,
    }
}

/// The database after the deletion: exactly the expected rows gone, nothing orphaned, one
/// tombstone per deleted task with its shard and payload, one successful run recorded last.
fn check_outcome(probe: &Probe, expected: &Expectation, summary: Option<&Value>) {
    let after = probe.table_rows();
    for (table, before) in &expected.before {
        let gone = if *table == "audit" { 0 } else { expected.counts[table] };
        assert_eq!(after[table], before - gone, "rows left in {table}");
    }
    assert_eq!(probe.count("SELECT COUNT(*) FROM audit WHERE member_id IS NULL"), expected.counts["audit"] + 1);
    assert_eq!(probe.orphans(), 0, "orphaned rows");
    assert_eq!(probe.count("SELECT COUNT(*) FROM org WHERE id = 4 AND status = 9"), 1, "org 4 is skipped");

    let tombstones = probe.texts(
        "SELECT object_identifier, shard_identifier, payload, scope FROM cascade_outbox WHERE category = 'task_update'",
    );
    assert_eq!(tombstones.len(), expected.tasks.len(), "one tombstone per deleted task");
    let mut seen = BTreeSet::new();
    for row in &tombstones {
        let key = row[0].clone().unwrap();
        let (project, assignee) = &expected.tasks[&key];
        assert!(seen.insert(key.clone()), "a second tombstone for task {key}");
        assert_eq!(row[1].as_ref(), Some(project), "shard of task {key}");
        assert_eq!(row[3].as_deref(), Some("project"));
        let payload: Value = serde_json::from_str(row[2].as_deref().unwrap()).unwrap();
        let assignee = assignee.as_ref().map(|a| a.parse::<i64>().unwrap());
        assert_eq!(payload, serde_json::json!({ "assignee_id": assignee }), "payload of task {key}");
    }
    let last_run = probe.texts("SELECT outcome, root_model, root_ids FROM cascade_run ORDER BY id DESC LIMIT 1");
    assert_eq!(last_run[0][0].as_deref(), Some("succeeded"));
    assert_eq!(last_run[0][1].as_deref(), Some("org"));
    if let Some(summary) = summary {
        for model in ["org", "project", "member", "task", "note"] {
            assert_eq!(summary["deleted"][model].as_u64(), Some(expected.counts[model]), "deleted {model}");
        }
        assert_eq!(summary["nullified"]["audit"].as_u64(), Some(expected.counts["audit"]));
        assert_eq!(summary["outbox_rows"].as_u64(), Some(expected.tasks.len() as u64));
        assert_eq!(summary["skipped"], serde_json::json!(["4"]));
        assert!(summary["chunks"].as_u64().unwrap() > 0 && summary["max_chunk_ms"].as_f64().unwrap() > 0.0);
    }
}

/// Every `…_ms` number of a JSON summary, as printed, has at most three decimals (whole
/// microseconds, never a clock's `7.1236310000000005`).
fn assert_milliseconds_to_the_microsecond(json: &str) {
    let mut seen = 0;
    for (at, _) in json.match_indices("_ms\":") {
        let number = json[at + 5..].trim_start();
        let number = &number[..number.find([',', '}', '\n']).unwrap_or(number.len())];
        let decimals = number.split_once('.').map_or(0, |(_, decimals)| decimals.len());
        assert!(decimals <= 3, "{number} in {json}");
        seen += 1;
    }
    assert_eq!(seen, 3, "max_chunk_ms, p99_chunk_ms and elapsed_ms in {json}");
}

/// Every row the deletion removed is in the archive at least once, whole and as it was before
/// the deletion touched it (a root with its status before the marking), and no other row is.
/// `before` is the database before the first run; the runs in `killed` died of kill -9. Without
/// them, each row is there exactly once.
fn check_archive(url: &str, before: &BTreeMap<String, Vec<String>>, archive: &Path, killed: &[i64]) {
    let after = common::dump(url);
    let lines = common::archive_lines(archive, killed);
    let by_id = |rows: &[String]| -> BTreeMap<String, Value> {
        rows.iter()
            .map(|row| {
                let row: Value = serde_json::from_str(row).unwrap();
                (row["id"].to_string(), row)
            })
            .collect()
    };
    for (table, rows) in before {
        let (was, is) = (by_id(rows), by_id(&after[table]));
        let deleted: BTreeSet<String> = was.keys().filter(|id| !is.contains_key(*id)).cloned().collect();
        let mut archived = BTreeSet::new();
        for line in lines.get(table).into_iter().flatten() {
            assert_eq!(line["table"], table.as_str(), "{line}");
            let id = line["row"]["id"].to_string();
            assert_eq!(Some(&line["row"]), was.get(&id), "archived {table} {id} as it was");
            archived.insert(id);
        }
        assert_eq!(archived, deleted, "the archived rows of {table} are the deleted ones");
        common::assert_archived_once_unless_killed(&lines, table, archived.len(), killed);
    }
    assert!(lines.keys().all(|model| before.contains_key(model)), "archived: {:?}", lines.keys());
}

fn delete_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["delete", "org", "1", "2", "4", "--confirm", "--format", "json", "--database-url", url];
    args.extend_from_slice(extra);
    args
}

fn delete_and_check(url: &str) {
    delete_with_config_and_check(url, DIAMOND_CONFIG);
}

fn delete_with_config_and_check(url: &str, config: &str) {
    let probe = Probe { url: url.to_owned() };
    let expected = expect(&probe);
    let before = common::dump(url);
    let dir = project(&[("cascades/diamond.toml", config)]);
    let archive = dir.path().join("archive");
    let output = cascade(dir.path())
        .args(delete_args(url, &["--archive", archive.to_str().unwrap()]))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let summary: Value = serde_json::from_slice(&output).unwrap();
    check_outcome(&probe, &expected, Some(&summary));
    assert_milliseconds_to_the_microsecond(&String::from_utf8_lossy(&output));

    check_archive(url, &before, &archive, &[]);

    // Running it again finds nothing left to do.
    let again = cascade(dir.path()).args(delete_args(url, &[])).assert().success().get_output().stdout.clone();
    let again: Value = serde_json::from_slice(&again).unwrap();
    assert_eq!(again["deleted"], serde_json::json!({}));
    assert_eq!(again["missing"], serde_json::json!(["1", "2"]));
}

on_each_database!(
    deletes_exactly_the_planned_rows_on_sqlite,
    deletes_exactly_the_planned_rows_on_postgres,
    deletes_exactly_the_planned_rows_on_mariadb,
    |databases| {
        let url = databases.create(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(1)));
        delete_and_check(&url);
        if databases.is_sqlite() {
            let probe = Probe { url };
            assert_eq!(probe.texts("PRAGMA foreign_key_check"), Vec::<Vec<Option<String>>>::new());
        }
    }
);

#[test]
fn deletes_exactly_the_planned_rows_on_postgres_without_foreign_keys() {
    let schema = diamond_without_foreign_keys();
    let Some(url) = postgres_database(&format!("{schema}{}", diamond_rows(1))) else { return };
    delete_and_check(&url);
}

/// Notes deleted after their tasks (no foreign key), at most two per transaction: a chunk of
/// tasks with more notes than that is rolled back and goes again with its notes first, chunk by
/// chunk.
#[test]
fn children_too_many_to_follow_their_parents_go_first_on_postgres_without_foreign_keys() {
    let schema = diamond_without_foreign_keys();
    let Some(url) = postgres_database(&format!("{schema}{}", diamond_rows(1))) else { return };
    let config = "[settings]\nadaptive = false\n".to_owned()
        + &DIAMOND_CONFIG
            .replace("strategy = \"bulk\"\n\n[models.audit]", "strategy = \"bulk\"\nchunk_size = 2\n\n[models.audit]");
    assert_ne!(config, DIAMOND_CONFIG);
    delete_with_config_and_check(&url, &config);
}

/// Where no foreign key ties a bulk child to its parent, PostgreSQL deletes the child's rows
/// after the parent chunk's, in its transaction: a note written under a task as the task is
/// deleted (a trigger stands for another writer at that moment, after any check could look)
/// goes with the task instead of being left orphaned.
#[test]
fn a_child_written_as_its_parent_is_deleted_goes_with_it_on_postgres_without_foreign_keys() {
    let late_note = "CREATE SEQUENCE late_note START 1000000; CREATE FUNCTION add_note() RETURNS trigger \
                     LANGUAGE plpgsql AS $$ BEGIN INSERT INTO note (id, task_id, body) \
                     VALUES (nextval('late_note'), OLD.id, 'late'); RETURN OLD; END $$; CREATE TRIGGER add_note \
                     BEFORE DELETE ON task FOR EACH ROW EXECUTE FUNCTION add_note();";
    let schema = diamond_without_foreign_keys();
    let Some(url) = postgres_database(&format!("{schema}{}{late_note}", diamond_rows(1))) else { return };
    let probe = Probe { url: url.clone() };
    let expected = expect(&probe);
    let dir = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    cascade(dir.path()).args(delete_args(&url, &[])).assert().success();
    assert_eq!(probe.orphans(), 0, "a note written as its task went was left behind");
    assert_eq!(probe.count("SELECT COUNT(*) FROM note WHERE body = 'late'"), 0);
    let after = probe.table_rows();
    for table in ["org", "project", "member", "task", "note"] {
        assert_eq!(after[table], expected.before[table] - expected.counts[table], "rows left in {table}");
    }
}

/// On SQLite a TEXT column under an INTEGER key holds `'1'`, which the integer keys its rows are
/// looked up by never equal as bound: they are compared as text, so a per_row child, its bulk
/// child (a `VARCHAR`) and a nullified column all go exactly as planned, the counts of the dry
/// run included, instead of being left behind.
#[test]
fn text_columns_under_integer_keys_are_matched_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let ddl = "CREATE TABLE p (id INTEGER PRIMARY KEY);
               CREATE TABLE c (id INTEGER PRIMARY KEY, p_id TEXT);
               CREATE TABLE g (id INTEGER PRIMARY KEY, c_id VARCHAR(10));
               CREATE TABLE n (id INTEGER PRIMARY KEY, p_ref TEXT);
               CREATE INDEX c_p ON c (p_id);
               CREATE INDEX g_c ON g (c_id);
               CREATE INDEX n_p ON n (p_ref);
               INSERT INTO p VALUES (1), (2);
               INSERT INTO c VALUES (1, '1'), (2, '1'), (3, '2');
               INSERT INTO g VALUES (1, '1'), (2, '2'), (3, '3'), (4, '2');
               INSERT INTO n VALUES (1, '1'), (2, '2');";
    let url = sqlite_database(dir.path(), ddl);
    let config = "[models.p]\ntable = \"p\"\n\
                  children = [{ model = \"c\", column = \"p_id\" }, { model = \"n\", column = \"p_ref\", on_delete = \"nullify\" }]\n\n\
                  [models.c]\ntable = \"c\"\nchildren = [{ model = \"g\", column = \"c_id\" }]\n\n\
                  [models.g]\ntable = \"g\"\nstrategy = \"bulk\"\n\n\
                  [models.n]\ntable = \"n\"\n";
    let config = project(&[("cascades/cascade.toml", config)]);
    cascade(config.path()).args(["validate", "--database-url", &url]).assert().success();
    let plan = ["plan", "p", "--id", "1", "--format", "json", "--database-url", &url];
    let planned = json_output(cascade(config.path()).args(plan));
    let summary = json_output(cascade(config.path()).args([
        "delete",
        "p",
        "1",
        "--confirm",
        "--format",
        "json",
        "--database-url",
        &url,
    ]));
    assert_eq!(summary["deleted"], json!({"g": 3, "c": 2, "p": 1}), "{summary:#}");
    assert_eq!(summary["nullified"], json!({"n": 1}), "{summary:#}");
    let ids = |sql: &str| -> Vec<String> { texts(&url, sql).into_iter().map(|row| row[0].clone().unwrap()).collect() };
    assert_eq!(ids("SELECT CAST(id AS TEXT) FROM p"), ["2"]);
    assert_eq!(ids("SELECT CAST(id AS TEXT) FROM c"), ["3"]);
    assert_eq!(ids("SELECT CAST(id AS TEXT) FROM g"), ["3"]);
    assert_eq!(ids("SELECT COALESCE(p_ref, 'NULL') FROM n ORDER BY id"), ["NULL", "2"]);
    fn rows_per_step(node: &Value, found: &mut Vec<(String, String, u64)>) {
        let text = |key: &str| node[key].as_str().unwrap().to_owned();
        found.push((text("model"), text("action"), node["rows"].as_u64().unwrap()));
        node["children"].as_array().unwrap().iter().for_each(|child| rows_per_step(child, found));
    }
    let mut steps = Vec::new();
    rows_per_step(&planned["tree"], &mut steps);
    let expected = [("p", "delete", 1), ("c", "delete", 2), ("g", "delete", 3), ("n", "nullify", 1)];
    assert_eq!(steps, expected.map(|(model, action, rows)| (model.to_owned(), action.to_owned(), rows)));
}

/// A reference that SQLite's `=` matches with a parent's integer key only by converting it
/// (`'01'`, `' 1'` or `'.1e1'` in a TEXT column, `'1'` in a column without a type or a BLOB one)
/// would be missed by the lookups by key and left behind: the deletion is refused before it
/// writes anything, naming the column and the value.
#[test]
fn references_sqlite_matches_only_by_converting_them_are_refused() {
    let cases = [
        ("p_id TEXT", "' 1'", "INTEGER"),
        ("p_id VARCHAR(8)", "'01'", "INTEGER"),
        ("p_id", "'1'", "INTEGER"),
        ("p_id BLOB", "'1.0'", "INTEGER"),
        ("p_id LONGBLOB", "'1'", "INTEGER"),
        ("p_id TEXT", "'.1e1'", "INTEGER"),
    ];
    for (column, value, key) in cases {
        let dir = tempfile::tempdir().unwrap();
        let ddl = format!(
            "CREATE TABLE p (id {key} PRIMARY KEY);
             CREATE TABLE c (id INTEGER PRIMARY KEY, {column});
             CREATE INDEX c_p ON c (p_id);
             INSERT INTO p VALUES (1);
             INSERT INTO c VALUES (1, {value});"
        );
        let url = sqlite_database(dir.path(), &ddl);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM c WHERE p_id IN (SELECT id FROM p)"), 1, "SQLite's own `=`");
        let config = "[models.p]\ntable = \"p\"\nchildren = [{ model = \"c\", column = \"p_id\" }]\n\n\
                      [models.c]\ntable = \"c\"\nstrategy = \"bulk\"\n";
        let config = project(&[("cascades/cascade.toml", config)]);
        let output = cascade(config.path()).args(["delete", "p", "1", "--confirm", "--database-url", &url]).output();
        let output = output.unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{column} holding {value}: {stderr}");
        let shown = value.trim_matches('\'');
        assert!(stderr.contains(&format!("`c.p_id` holds '{shown}', which SQLite takes for")), "{stderr}");
        assert!(stderr.contains("the deletion was refused before it wrote anything"), "{stderr}");
        assert!(!stderr.contains("rows deleted so far"), "{stderr}");
        let dry_run = cascade(config.path()).args(["delete", "p", "1", "--database-url", &url]).output().unwrap();
        let dry_stderr = String::from_utf8_lossy(&dry_run.stderr);
        assert_eq!(dry_run.status.code(), Some(1), "the dry run says so too: {dry_stderr}");
        assert!(dry_stderr.contains("with --confirm this deletion would be refused: `c.p_id` holds"), "{dry_stderr}");
        let left = (count(&url, "SELECT COUNT(*) FROM p"), count(&url, "SELECT COUNT(*) FROM c"));
        assert_eq!(left, (1, 1), "{column} holding {value}: nothing deleted");
    }
}

/// On PostgreSQL a relation whose column the server cannot compare with its parent's key, of a
/// pair `relation-type-mismatch` does not name (a `numeric` column under a `text` key), is refused
/// before anything is written. Found only when its step came, it would stop the deletion after the
/// steps before it (`c` and its `g` rows) had committed.
#[test]
fn a_relation_postgres_cannot_compare_is_refused_before_any_write() {
    let ddl = "CREATE TABLE p (id text PRIMARY KEY);
               CREATE TABLE c (id bigint PRIMARY KEY, p_id text);
               CREATE TABLE g (id bigint PRIMARY KEY, c_id bigint);
               CREATE TABLE n (id bigint PRIMARY KEY, p_ref numeric);
               CREATE INDEX c_p ON c (p_id);
               CREATE INDEX g_c ON g (c_id);
               CREATE INDEX n_p ON n (p_ref);
               INSERT INTO p VALUES ('7');
               INSERT INTO c VALUES (1, '7'), (2, '7');
               INSERT INTO g VALUES (1, 1), (2, 2);
               INSERT INTO n VALUES (1, 7);";
    let Some(url) = postgres_database(ddl) else { return };
    let config = "[models.p]\ntable = \"p\"\n\
                  children = [{ model = \"c\", column = \"p_id\" }, { model = \"n\", column = \"p_ref\" }]\n\n\
                  [models.c]\ntable = \"c\"\nchildren = [{ model = \"g\", column = \"c_id\" }]\n\n\
                  [models.g]\ntable = \"g\"\nstrategy = \"bulk\"\n\n\
                  [models.n]\ntable = \"n\"\nstrategy = \"bulk\"\n";
    let config = project(&[("cascades/cascade.toml", config)]);
    // `validate` against the database gives the deletion's verdict, at the relation.
    let validate = cascade(config.path()).args(["validate", "--format", "json", "--database-url", &url]).output();
    let validate = validate.unwrap();
    assert_eq!(validate.status.code(), Some(1), "{}", String::from_utf8_lossy(&validate.stdout));
    let report: serde_json::Value = serde_json::from_slice(&validate.stdout).unwrap();
    let found: Vec<(&str, &str, u64)> = (report["diagnostics"].as_array().unwrap().iter())
        .filter(|d| d["severity"] == "error")
        .map(|d| (d["code"].as_str().unwrap(), d["help"].as_str().unwrap(), d["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(found, [("relation-type-mismatch", "give the column the key's type", 3)], "{report:#}");
    let message = report["diagnostics"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("`n.p_ref` cannot be looked up by the keys of `p.id`: "), "{message}");

    let output = cascade(config.path()).args(["delete", "p", "7", "--confirm", "--database-url", &url]).output();
    let output = output.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(message) && stderr.contains("give the column the key's type"), "{stderr}");
    assert!(stderr.contains("operator does not exist") && stderr.contains("Nothing was deleted"), "{stderr}");
    let rows = ["p", "c", "g", "n"].map(|table| count(&url, &format!("SELECT COUNT(*) FROM {table}")));
    assert_eq!(rows, [1, 2, 2, 1], "nothing deleted");
}

/// What SQLite's `=` does not match is no child either: an orphan's `'099'` (no parent 99) does
/// not stop the deletion of parent 1, and under a key column without a type a TEXT column's `'1'`
/// is no child of the key 1, in the dry run's counts and in the deletion alike.
#[test]
fn references_sqlite_does_not_match_are_left_alone() {
    for (key, column, rows) in [
        ("INTEGER", "TEXT", "INSERT INTO c VALUES (1, '1'), (2, '099');"),
        ("", "TEXT", "INSERT INTO c VALUES (1, '1'), (2, '1');"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ddl = format!(
            "CREATE TABLE p (id {key} PRIMARY KEY);
             CREATE TABLE c (id INTEGER PRIMARY KEY, p_id {column});
             INSERT INTO p VALUES (1), (2);
             {rows}"
        );
        let url = sqlite_database(dir.path(), &ddl);
        let children = count(&url, "SELECT COUNT(*) FROM c WHERE p_id IN (SELECT id FROM p WHERE id = 1)");
        let config = "[models.p]\ntable = \"p\"\nchildren = [{ model = \"c\", column = \"p_id\" }]\n\n\
                      [models.c]\ntable = \"c\"\nstrategy = \"bulk\"\n";
        let config = project(&[("cascades/cascade.toml", config)]);
        let plan = ["plan", "p", "--id", "1", "--format", "json", "--database-url", &url];
        let planned = json_output(cascade(config.path()).args(plan));
        assert_eq!(planned["tree"]["children"][0]["rows"], json!(children), "key {key:?}: {planned:#}");
        let args = ["delete", "p", "1", "--confirm", "--format", "json", "--database-url", &url];
        let summary = json_output(cascade(config.path()).args(args));
        assert_eq!(summary["deleted"]["c"].as_u64().unwrap_or(0), children, "key {key:?}: {summary:#}");
        assert_eq!(count(&url, "SELECT COUNT(*) FROM c"), 2 - children);
    }
}

/// A bulk child's own key is never looked up, so a text reading as an integer there (`'8'` in a
/// column without a type) does not stop the deletion: its rows go by their relation column.
#[test]
fn a_bulk_childs_own_key_is_not_checked_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let ddl = "CREATE TABLE p (id INTEGER PRIMARY KEY);
               CREATE TABLE c (id, p_id INTEGER);
               INSERT INTO p VALUES (1), (2);
               INSERT INTO c VALUES ('8', 1), (9, 2);";
    let url = sqlite_database(dir.path(), ddl);
    let config = "[models.p]\ntable = \"p\"\nchildren = [{ model = \"c\", column = \"p_id\" }]\n\n\
                  [models.c]\ntable = \"c\"\nstrategy = \"bulk\"\n";
    let config = project(&[("cascades/cascade.toml", config)]);
    let args = ["delete", "p", "1", "--confirm", "--format", "json", "--database-url", &url];
    let summary = json_output(cascade(config.path()).args(args));
    assert_eq!(summary["deleted"], json!({"c": 1, "p": 1}), "{summary:#}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM c WHERE p_id = 2"), 1);
}

/// `cascade delete project 1 --confirm --format json` with `extra`: its summary.
fn delete_project_1(dir: &Path, url: &str, extra: &[&str]) -> Value {
    let args = ["delete", "project", "1", "--confirm", "--format", "json", "--database-url", url];
    json_output(cascade(dir).args(args).args(extra))
}

/// The same when a chunk's notes are too many to go in its transaction: they go first, chunk
/// by chunk, and the chunk of tasks then goes alone, the notes written meanwhile right after it
/// in its transaction; the archive holds every deleted row once (the transactions rolled back
/// when the notes overflowed left no lines).
#[test]
fn a_child_written_as_its_parent_goes_alone_goes_with_it_on_postgres_without_foreign_keys() {
    let ddl = "CREATE TABLE project (id bigint PRIMARY KEY);
               CREATE TABLE task (id bigint PRIMARY KEY, project_id bigint NOT NULL REFERENCES project (id));
               CREATE INDEX task_project_id ON task (project_id);
               CREATE TABLE note (id bigint PRIMARY KEY, task_id bigint NOT NULL, body text);
               CREATE INDEX note_task_id ON note (task_id);
               INSERT INTO project VALUES (1), (2);
               INSERT INTO task SELECT i, (i - 1) / 100 + 1 FROM generate_series(1, 200) AS i;
               INSERT INTO note SELECT i, (i - 1) / 3 + 1, 'early' FROM generate_series(1, 600) AS i;
               CREATE SEQUENCE late_note START 1000000;
               CREATE FUNCTION add_note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                 INSERT INTO note VALUES (nextval('late_note'), OLD.id, 'late'); RETURN OLD; END $$;
               CREATE TRIGGER add_note BEFORE DELETE ON task FOR EACH ROW EXECUTE FUNCTION add_note();";
    let Some(url) = postgres_database(ddl) else { return };
    // 50 tasks have 150 notes, more than the 100 that go with a chunk; their 50 late notes fit.
    let config = "[settings]\nadaptive = false\n\n\
                  [models.project]\ntable = \"project\"\nchildren = [{ model = \"task\", column = \"project_id\" }]\n\n\
                  [models.task]\ntable = \"task\"\nchunk_size = 50\nchildren = [{ model = \"note\", column = \"task_id\" }]\n\n\
                  [models.note]\ntable = \"note\"\nstrategy = \"bulk\"\nchunk_size = 100\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    let archive = dir.path().join("archive");
    let summary = delete_project_1(dir.path(), &url, &["--archive", archive.to_str().unwrap()]);
    let orphans = "SELECT COUNT(*) FROM note WHERE NOT EXISTS (SELECT 1 FROM task WHERE task.id = note.task_id)";
    assert_eq!(count(&url, orphans), 0, "a note written as its task went was left behind: {summary}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM task"), 100, "project 2's tasks stay");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM note WHERE body = 'early'"), 300, "project 2's notes stay");
    // 300 early notes, and one late note per task in each of the two chunks that committed.
    assert_eq!(summary["deleted"], serde_json::json!({"note": 400, "task": 100, "project": 1}), "{summary}");
    let lines = common::archive_lines(&archive, &[]);
    let ids: BTreeSet<String> = lines["note"].iter().map(|line| line["row"]["id"].to_string()).collect();
    assert_eq!((lines["note"].len(), ids.len()), (400, 400), "each deleted note archived once");
    assert_eq!(lines["task"].len(), 100, "each deleted task archived once");
}

/// A chunk whose bulk children are one tied to it by a cascading foreign key (checked before the
/// chunk's delete) and one without any foreign key (deleted after it) is one transaction: the
/// check looks only at the children already deleted, not at those still to go after it (which
/// made every chunk roll back and go children first, one transaction per child).
#[test]
fn a_chunk_with_children_before_and_after_it_is_one_transaction_on_postgres() {
    let ddl = "CREATE TABLE project (id bigint PRIMARY KEY);
               CREATE TABLE task (id bigint PRIMARY KEY, project_id bigint NOT NULL);
               CREATE INDEX task_project_id ON task (project_id);
               CREATE TABLE comment (id bigint PRIMARY KEY,
                                     task_id bigint NOT NULL REFERENCES task (id) ON DELETE CASCADE);
               CREATE INDEX comment_task_id ON comment (task_id);
               CREATE TABLE note (id bigint PRIMARY KEY, task_id bigint NOT NULL);
               CREATE INDEX note_task_id ON note (task_id);
               INSERT INTO project VALUES (1), (2);
               INSERT INTO task SELECT i, (i - 1) / 200 + 1 FROM generate_series(1, 400) AS i;
               INSERT INTO comment SELECT i, i FROM generate_series(1, 400) AS i;
               INSERT INTO note SELECT i, i FROM generate_series(1, 400) AS i;";
    let Some(url) = postgres_database(ddl) else { return };
    let config = "[settings]\nadaptive = false\n\n\
                  [models.project]\ntable = \"project\"\nchildren = [{ model = \"task\", column = \"project_id\" }]\n\n\
                  [models.task]\ntable = \"task\"\nchunk_size = 50\nchildren = [\
                  { model = \"comment\", column = \"task_id\" }, { model = \"note\", column = \"task_id\" }]\n\n\
                  [models.comment]\ntable = \"comment\"\nstrategy = \"bulk\"\n\n\
                  [models.note]\ntable = \"note\"\nstrategy = \"bulk\"\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    let summary = delete_project_1(dir.path(), &url, &[]);
    let deleted = serde_json::json!({"comment": 200, "note": 200, "task": 200, "project": 1});
    for (model, rows) in deleted.as_object().unwrap() {
        assert_eq!(&summary["deleted"][model], rows, "{model}: {summary}");
    }
    assert_eq!(summary["chunks"], 5, "four chunks of 50 tasks with their children, then the project: {summary}");
    for table in ["task", "comment", "note"] {
        assert_eq!(count(&url, &format!("SELECT COUNT(*) FROM {table}")), 200, "{table}: project 2's rows stay");
    }
}

/// Without `--confirm`, every row of every table stays as it was, and not even the tool's own
/// tables appear.
fn a_dry_run_changes_nothing(url: &str) {
    let before = common::dump(url);
    let config = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    cascade(config.path())
        .args(["delete", "org", "1", "2", "--database-url", url])
        .assert()
        .success()
        .stdout(predicates::str::contains("dry run: nothing was deleted"));
    assert_eq!(common::dump(url), before, "the dry run changed the database");
}

#[test]
fn a_dry_run_changes_nothing_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{DIAMOND_SCHEMA}{}", diamond_rows(1)));
    // And the file, byte for byte: not even a page of it is written.
    let file = url.trim_start_matches("sqlite://").to_owned();
    let before = std::fs::read(&file).unwrap();
    a_dry_run_changes_nothing(&url);
    assert!(std::fs::read(&file).unwrap() == before, "the dry run changed the database file");
}

#[test]
fn a_dry_run_changes_nothing_on_postgres() {
    let Some(url) = postgres_database(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(1))) else { return };
    a_dry_run_changes_nothing(&url);
}

/// The diamond config with tiny fixed chunks (many transactions) and, when `rate` is given, a rate
/// limit on every step so that a run takes a while.
fn slow_config(rate: Option<u32>) -> String {
    let mut config = DIAMOND_CONFIG.replace(
        "[models.org]",
        "[settings]\nper_row_chunk_size = 3\nbulk_chunk_size = 4\nadaptive = false\n\n[models.org]",
    );
    if let Some(rate) = rate {
        config = config.replace("[settings]", &format!("[options]\n\"rows_per_second\" = {rate}\n\n[settings]"));
        for model in ["org", "project", "member", "task", "note", "audit"] {
            let header = format!("[models.{model}]\ntable = \"{model}\"\n");
            config = config.replace(&header, &format!("{header}rate_limit = \"rows_per_second\"\n"));
        }
    }
    config
}

/// Runs the deletion `args` again after earlier runs were stopped: it finishes, and it had
/// something left to delete, so they were stopped before the end.
fn rerun(dir: &Path, args: &[&str]) {
    let output = cascade(dir).args(args).assert().success().get_output().stdout.clone();
    let summary: Value = serde_json::from_slice(&output).unwrap();
    assert_ne!(summary["deleted"], serde_json::json!({}), "the runs before were stopped before the end");
}

/// Runs killed with kill -9 (ids of `cascade_run` never finished).
fn killed_runs(probe: &Probe) -> Vec<i64> {
    let rows = probe.texts("SELECT CAST(id AS TEXT) FROM cascade_run WHERE outcome IN ('running', 'interrupted')");
    rows.into_iter().map(|row| row[0].as_deref().unwrap().parse().unwrap()).collect()
}

/// Runs killed with kill -9 before the last one finishes the job.
const KILLS: usize = 6;

/// kill -9 several runs, each after a pseudo-random number (1 to 10) of committed chunks, from a
/// fixed sequence so that a failure can be replayed; then one run to the end. Nothing is lost,
/// duplicated or orphaned, and every deleted row is in the archive, whole, at least once.
fn kill_9_mid_run_then_rerun(url: &str) {
    let probe = Probe { url: url.to_owned() };
    let expected = expect(&probe);
    let before = common::dump(url);
    let rows_before = probe.table_rows();
    let unlinked_audits = "SELECT COUNT(*) FROM audit WHERE member_id IS NULL";
    let unlinked_before = probe.count(unlinked_audits);
    let config = project(&[("cascades/diamond.toml", &slow_config(None))]);
    let archive = config.path().join("archive");
    let args = delete_args(url, &["--archive", archive.to_str().unwrap()]);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..KILLS {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut run = Running::start(config.path(), &args);
        for _ in 0..=seed % 10 {
            run.expect(CHUNK_COMMITTED);
        }
        run.kill();
    }
    rerun(config.path(), &args);
    let killed = killed_runs(&probe);
    assert_eq!(killed.len(), KILLS, "every kill interrupted a recorded run");
    check_outcome(&probe, &expected, None);
    check_archive(url, &before, &archive, &killed);
    // Every run, the killed ones included, recorded exactly what its committed transactions did.
    let deleted: BTreeMap<&str, u64> =
        probe.table_rows().into_iter().map(|(table, rows)| (table, rows_before[table] - rows)).collect();
    assert_eq!(recorded_rows(&probe, "deleted"), deleted.into_iter().filter(|(_, rows)| *rows > 0).collect());
    let nullified = probe.count(unlinked_audits) - unlinked_before;
    assert_eq!(recorded_rows(&probe, "nullified"), BTreeMap::from([("audit", nullified)]));
}

/// The rows every run recorded in `cascade_run.rows` under `kind` (`deleted` or `nullified`),
/// added up per model.
fn recorded_rows(probe: &Probe, kind: &str) -> BTreeMap<&'static str, u64> {
    let mut sum = BTreeMap::new();
    for row in probe.texts(r#"SELECT "rows" FROM cascade_run"#) {
        let rows: Value = serde_json::from_str(row[0].as_deref().expect("every run recorded its rows")).unwrap();
        for model in ["org", "project", "member", "task", "note", "audit"] {
            if let Some(count) = rows[kind][model].as_u64() {
                *sum.entry(model).or_default() += count;
            }
        }
    }
    sum
}

on_each_database!(
    kill_9_mid_run_then_rerun_finishes_without_loss_or_duplicates_on_sqlite,
    kill_9_mid_run_then_rerun_finishes_without_loss_or_duplicates_on_postgres,
    kill_9_mid_run_then_rerun_finishes_without_loss_or_duplicates_on_mariadb,
    |databases| {
        let url = databases.create(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(10)));
        kill_9_mid_run_then_rerun(&url);
        if databases.is_sqlite() {
            assert_eq!(Probe { url }.texts("PRAGMA foreign_key_check"), Vec::<Vec<Option<String>>>::new());
        }
    }
);

/// Sends SIGTERM to a running deletion once a chunk has committed: it stops after the current
/// chunk with exit code 130 and an `interrupted` run; the same command then finishes.
fn stop_with_sigterm_then_resume(url: &str) {
    let probe = Probe { url: url.to_owned() };
    let expected = expect(&probe);
    let config = project(&[("cascades/diamond.toml", &slow_config(Some(20)))]);
    let mut run = Running::start(config.path(), &delete_args(url, &[]));
    run.expect(CHUNK_COMMITTED);
    run.terminate();
    let stopped = run.finish();
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stderr);
    assert!(stopped.stderr.contains("run the same command again to finish"), "{}", stopped.stderr);
    assert_eq!(probe.count("SELECT COUNT(*) FROM cascade_run WHERE outcome = 'interrupted'"), 1);
    assert!(probe.table_rows() != expected.before, "it had deleted something before stopping");
    rerun(config.path(), &delete_args(url, &[]));
    check_outcome(&probe, &expected, None);
    // The run that finished records the one it resumed, stopped as it was by a signal.
    let runs = probe.texts("SELECT CAST(id AS TEXT), CAST(resumes AS TEXT) FROM cascade_run ORDER BY id");
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[1][1], runs[0][0], "{runs:?}");
}

on_each_database!(
    sigterm_stops_between_chunks_and_the_rerun_finishes_on_sqlite,
    sigterm_stops_between_chunks_and_the_rerun_finishes_on_postgres,
    sigterm_stops_between_chunks_and_the_rerun_finishes_on_mariadb,
    |databases| {
        stop_with_sigterm_then_resume(&databases.create(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(1))));
    }
);

/// A run killed after its last commit but before it recorded its outcome (here: a finished
/// run made to look so, `running` with a heartbeat long stopped) had done all the work: the
/// rerun finds its roots gone and finishes it, recorded `succeeded` (not `not_found`).
fn a_rerun_after_a_killed_run_that_had_done_everything_succeeds(url: &str) {
    let probe = Probe { url: url.to_owned() };
    let config = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    cascade(config.path()).args(delete_args(url, &[])).assert().success();
    let stopped = if url.starts_with("mysql:") { "2000-01-01 00:00:00" } else { "2000-01-01 00:00:00+00" };
    probe.texts(&format!("UPDATE cascade_run SET outcome = 'running', finished_at = NULL, heartbeat = '{stopped}'"));
    let rerun = json_output(cascade(config.path()).args(delete_args(url, &[])));
    assert_eq!(rerun["deleted"], json!({}), "{rerun}");
    let runs = probe.texts("SELECT CAST(id AS TEXT), outcome, CAST(resumes AS TEXT) FROM cascade_run ORDER BY id");
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0][1].as_deref(), Some("interrupted"), "{runs:?}");
    assert_eq!((runs[1][1].as_deref(), &runs[1][2]), (Some("succeeded"), &runs[0][0]), "{runs:?}");
}

on_each_database!(
    a_rerun_after_a_killed_run_that_had_done_everything_succeeds_on_sqlite,
    a_rerun_after_a_killed_run_that_had_done_everything_succeeds_on_postgres,
    a_rerun_after_a_killed_run_that_had_done_everything_succeeds_on_mariadb,
    |databases| {
        a_rerun_after_a_killed_run_that_had_done_everything_succeeds(
            &databases.create(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(1))),
        );
    }
);

/// How long, by the run's own clock, a rate set while the deletion runs is watched.
const THROTTLED_WINDOW: Duration = Duration::from_secs(2);

/// A deletion runs at 400 rows per second (2,500 rows: over 6 s, so it outlasts the second the
/// run takes to read a changed option); `cascade option set` limits it to 50 rows per second
/// while it runs, and `option unset` lifts the limit. The run reads each change (it logs the
/// new value), keeps to the limit meanwhile, and finishes with exact counts.
fn option_set_throttles_a_running_deletion(url: &str) {
    let probe = Probe { url: url.to_owned() };
    let expected = expect(&probe);
    let config = project(&[("cascades/diamond.toml", &slow_config(Some(400)))]);
    let option = |args: &[&str]| {
        cascade(config.path()).arg("option").args(args).args(["--database-url", url]).assert().success();
    };
    let mut run = Running::start(config.path(), &delete_args(url, &[]));
    run.expect(CHUNK_COMMITTED);
    option(&["set", "rows_per_second", "50"]);
    // It reads its options once a second: it runs on at 400 rows per second for a second or
    // two, which the tree outlasts.
    let throttled = run.expect(RATE_LIMIT_CHANGED);
    assert_eq!(throttled.fields["rows_per_second"], 50.0);
    // From here on every chunk's rows come out of a bucket holding 50 rows (the burst) that
    // refills at 50 rows per second: over a window, at most 50 + 50 per second of it, plus the
    // chunk committed last (4 rows at most). The bound allows twice that.
    let mut rows = 0;
    let window = loop {
        let chunk = run.expect(CHUNK_COMMITTED);
        rows += chunk.rows();
        let window = chunk.at.duration_since(throttled.at).unwrap();
        if window >= THROTTLED_WINDOW {
            break window;
        }
    };
    let allowed = 2.0 * (50.0 + 50.0 * window.as_secs_f64()) + 4.0;
    assert!(rows as f64 <= allowed, "{rows} rows in {window:?} at 50 rows per second");
    option(&["unset", "rows_per_second"]);
    assert_eq!(run.expect(RATE_LIMIT_CHANGED).fields["rows_per_second"], 400.0, "back to the config's value");
    let finished = run.finish();
    assert!(finished.status.success(), "{}", finished.stderr);
    let summary: Value = serde_json::from_str(&finished.stdout).unwrap();
    check_outcome(&probe, &expected, Some(&summary));
}

on_each_database!(
    option_set_throttles_a_running_deletion_on_sqlite,
    option_set_throttles_a_running_deletion_on_postgres,
    option_set_throttles_a_running_deletion_on_mariadb,
    |databases| {
        // 2,500 rows to delete: over 6 s at 400 rows per second.
        option_set_throttles_a_running_deletion(&databases.create(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(10))));
    }
);

/// While a slow deletion runs (from its first committed chunk on), another connection keeps
/// adding tasks to the projects being deleted, each only if its project still exists. No task
/// may be left without its parent.
fn concurrent_inserts_leave_no_orphans(url: &str, insert_sql: fn(u64) -> String) {
    let probe = Probe { url: url.to_owned() };
    let config = project(&[("cascades/diamond.toml", &slow_config(Some(60)))]);
    let mut run = Running::start(config.path(), &delete_args(url, &[]));
    run.expect(CHUNK_COMMITTED);
    let mut inserted = 0;
    block_on(async {
        let writer = Writer::connect(url).await;
        // A bounded burst of writes, one every 10 ms: the deletion must win in the end.
        for id in 1_000_001..1_000_200 {
            if run.ended() {
                break;
            }
            inserted += writer.execute(&insert_sql(id)).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let finished = run.finish();
    assert!(inserted > 0, "no task was inserted while the deletion ran");
    assert_eq!(probe.orphans(), 0, "a concurrent insert was orphaned");
    if !finished.status.success() {
        // Children kept appearing faster than the retries: the run says so; once the writer
        // has stopped, the same command finishes.
        cascade(config.path()).args(delete_args(url, &[])).assert().success();
    }
    assert_eq!(probe.count("SELECT COUNT(*) FROM project WHERE org_id IN (1, 2)"), 0);
    assert_eq!(probe.orphans(), 0);
}

/// Another application writing to the database. On SQLite it enforces no foreign keys, so only
/// the tool's own checks keep its inserts from being orphaned.
enum Writer {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Writer {
    async fn connect(url: &str) -> Self {
        if url.starts_with("sqlite") {
            let options: sqlx::sqlite::SqliteConnectOptions = url.parse().unwrap();
            Writer::Sqlite(sqlx::SqlitePool::connect_with(options.foreign_keys(false)).await.unwrap())
        } else {
            Writer::Postgres(sqlx::PgPool::connect(url).await.unwrap())
        }
    }

    /// Rows inserted (0 when the database refused).
    async fn execute(&self, sql: &str) -> u64 {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        let result = match self {
            Writer::Sqlite(pool) => sqlx::query(sql).execute(pool).await.map(|r| r.rows_affected()),
            Writer::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(|r| r.rows_affected()),
        };
        result.unwrap_or(0)
    }
}

/// Inserts a task under a project of org 1 or 2, only while that project exists.
fn insert_task(id: u64) -> String {
    let project = [4, 8, 12, 1, 5, 9][(id % 6) as usize];
    format!("INSERT INTO task (id, project_id, assignee_id) SELECT {id}, id, NULL FROM project WHERE id = {project}")
}

on_each_database!(
    // On SQLite no foreign keys at all: only the tool's check before each parent chunk protects.
    a_child_inserted_during_the_deletion_is_not_orphaned_on_sqlite(diamond_without_foreign_keys()),
    a_child_inserted_during_the_deletion_is_not_orphaned_on_postgres(DIAMOND_SCHEMA.to_owned()),
    |databases, schema| {
        let url = databases.create(&format!("{schema}{}", diamond_rows(1)));
        concurrent_inserts_leave_no_orphans(&url, insert_task);
    }
);

/// The diamond schema with every `REFERENCES` clause taken out.
fn diamond_without_foreign_keys() -> String {
    let schema: String = DIAMOND_SCHEMA
        .split(" REFERENCES ")
        .enumerate()
        .map(|(index, part)| if index == 0 { part } else { part.split_once(')').map_or(part, |(_, rest)| rest) })
        .collect();
    assert!(!schema.contains("REFERENCES"));
    schema
}

#[test]
fn a_database_that_goes_away_mid_run_is_a_clear_error_and_the_rerun_resumes() {
    let Some(url) = postgres_database(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(1))) else { return };
    let probe = Probe { url: url.clone() };
    let expected = expect(&probe);
    let database_name = url.split('?').next().unwrap().rsplit('/').next().unwrap().to_owned();
    let server = std::env::var("CASCADE_TEST_POSTGRES_URL").unwrap();
    let admin = Probe { url: server };
    let config = project(&[("cascades/diamond.toml", &slow_config(Some(20)))]);
    let mut run = Running::start(config.path(), &delete_args(&url, &[]));
    run.expect(CHUNK_COMMITTED);
    admin.texts(&format!("ALTER DATABASE {database_name} ALLOW_CONNECTIONS false"));
    admin.texts(&format!(
        "SELECT CAST(pg_terminate_backend(pid) AS TEXT) FROM pg_stat_activity WHERE datname = '{database_name}'"
    ));
    let stopped = run.finish();
    assert_eq!(stopped.status.code(), Some(2), "{}", stopped.stderr);
    assert!(
        stopped.stderr.contains("the deletion stopped; run the same command again to resume"),
        "{}",
        stopped.stderr
    );
    admin.texts(&format!("ALTER DATABASE {database_name} ALLOW_CONNECTIONS true"));
    rerun(config.path(), &delete_args(&url, &[]));
    check_outcome(&probe, &expected, None);
}

#[test]
fn a_bulk_step_on_a_partitioned_table_deletes_across_partitions() {
    let ddl = "
        CREATE TABLE customer (customer_id integer PRIMARY KEY);
        CREATE TABLE payment (payment_id integer NOT NULL, customer_id integer NOT NULL REFERENCES customer,
                              payment_date date NOT NULL) PARTITION BY RANGE (payment_date);
        CREATE TABLE payment_p1 PARTITION OF payment FOR VALUES FROM ('2022-01-01') TO ('2022-02-01');
        CREATE TABLE payment_p2 PARTITION OF payment FOR VALUES FROM ('2022-02-01') TO ('2022-03-01');
        CREATE INDEX payment_customer_idx ON payment (customer_id);
        INSERT INTO customer SELECT generate_series(1, 3);
        INSERT INTO payment SELECT n, n % 3 + 1, DATE '2022-01-01' + (n % 50) FROM generate_series(1, 600) AS n;";
    let Some(url) = postgres_database(ddl) else { return };
    let probe = Probe { url: url.clone() };
    let config = "[models.customer]\ntable = \"customer\"\nkey = \"customer_id\"\n\
                  children = [{ model = \"payment\", column = \"customer_id\" }]\n\n\
                  [models.payment]\ntable = \"payment\"\nstrategy = \"bulk\"\nchunk_size = 70\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    let before = |customer: u32| probe.count(&format!("SELECT COUNT(*) FROM payment WHERE customer_id = {customer}"));
    let (of_2, of_3) = (before(2), before(3));
    assert!(
        probe.count("SELECT COUNT(DISTINCT tableoid) FROM payment WHERE customer_id = 2") == 2,
        "rows in both partitions"
    );
    let output = cascade(dir.path())
        .args(["delete", "customer", "2", "--confirm", "--format", "json", "--database-url", &url])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let summary: Value = serde_json::from_slice(&output).unwrap();
    assert_eq!(summary["deleted"]["payment"].as_u64(), Some(of_2));
    assert_eq!((before(2), before(3)), (0, of_3));
    assert_eq!(probe.count("SELECT COUNT(*) FROM customer"), 2);
}

#[test]
fn bad_targets_fail_before_anything_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{DIAMOND_SCHEMA}{}", diamond_rows(1)));
    let probe = Probe { url: url.clone() };
    let config = project(&[("cascades/diamond.toml", DIAMOND_CONFIG), ("not-a-dir", "a file")]);
    // A mistyped database path is never created.
    cascade(config.path())
        .args(["delete", "org", "1", "--confirm", "--database-url", "sqlite://missing.db"])
        .assert()
        .code(2)
        .stderr("error: no SQLite database at `missing.db` (it is never created: check the path)\n");
    assert!(!config.path().join("missing.db").exists());
    // An archive that cannot be written stops the run before it starts.
    let archive = config.path().join("not-a-dir/archive");
    cascade(config.path())
        .args(["delete", "org", "1", "--confirm", "--archive", archive.to_str().unwrap(), "--database-url", &url])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot write the archive"));
    assert_eq!(probe.count("SELECT COUNT(*) FROM org"), 4, "nothing deleted");
    assert_eq!(probe.count("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'cascade_run'"), 0, "nothing recorded");
}

/// `task` is not declared under `project`, but a foreign key points from it at `project`: the
/// deletion is refused before its first write, with the relation to add, and nothing changes
/// (refused at the projects' step, the tasks' own children would already be gone: a half-done run).
fn an_undeclared_reference_refuses_the_deletion_before_any_write(url: String) {
    let probe = Probe { url: url.clone() };
    let before = probe.table_rows();
    let config = "[settings]\nadaptive = false\n".to_owned()
        + &DIAMOND_CONFIG.replace("children = [{ model = \"task\", column = \"project_id\" }]\n", "");
    let config = project(&[("cascades/diamond.toml", &config)]);
    let output = cascade(config.path()).args(delete_args(&url, &[])).assert().code(1).get_output().stderr.clone();
    let stderr = String::from_utf8_lossy(&output);
    assert!(stderr.contains("error[unregistered-reference]"), "{stderr}");
    assert!(stderr.contains("table `task` references `project` by `project_id`"), "{stderr}");
    assert!(
        stderr.contains("add { model = \"task\", column = \"project_id\" } to the children of [models.project]"),
        "{stderr}"
    );
    assert_eq!(probe.table_rows(), before, "nothing was deleted");
    assert_eq!(probe.count("SELECT COUNT(*) FROM org WHERE status = 1"), 0, "no root was marked in progress");
}

on_each_database!(
    an_undeclared_reference_refuses_the_deletion_on_sqlite,
    an_undeclared_reference_refuses_the_deletion_on_postgres,
    an_undeclared_reference_refuses_the_deletion_on_mariadb,
    |databases| {
        an_undeclared_reference_refuses_the_deletion_before_any_write(
            databases.create(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(1))),
        );
    }
);

/// A password in the database URL (even with an unencoded `@`, even as a `password=` query
/// parameter) never reaches the audit table.
#[test]
fn the_audit_trail_stores_the_command_line_without_passwords() {
    let Some(url) = postgres_database(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(1))) else { return };
    // The test cluster trusts local connections, so any password is accepted.
    let with_password = url.replacen("postgres://postgres@", "postgres://postgres:s3cr@t@", 1);
    let with_parameter = format!("{url}&password=pw-in-query");
    let config = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    for (url, org) in [(&with_password, "1"), (&with_parameter, "2")] {
        cascade(config.path()).args(["delete", "org", org, "--confirm", "--database-url", url]).assert().success();
    }
    let probe = Probe { url };
    let commands: Vec<String> = probe
        .texts("SELECT command FROM cascade_run ORDER BY id")
        .into_iter()
        .map(|row| row[0].clone().unwrap())
        .collect();
    assert_eq!(commands.len(), 2);
    assert!(commands[0].contains("postgres://postgres:***@localhost/"), "{commands:?}");
    assert!(commands[1].contains("&password=***"), "{commands:?}");
    for secret in ["s3cr", "pw-in-query"] {
        assert!(commands.iter().all(|command| !command.contains(secret)), "{commands:?}");
    }
}

/// An error that a rerun cannot get past (a trigger refusing the delete) says so, instead of
/// telling the user to run the same command again.
fn a_permanent_error_does_not_ask_for_a_rerun(url: String) {
    let config = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    let output = cascade(config.path()).args(delete_args(&url, &[])).assert().code(2).get_output().stderr.clone();
    let stderr = String::from_utf8_lossy(&output);
    assert!(stderr.contains("refused by trigger"), "{stderr}");
    assert!(stderr.contains("does not go away by itself: fix its cause"), "{stderr}");
    assert!(!stderr.contains("run the same command again"), "{stderr}");
    assert_eq!(Probe { url }.orphans(), 0);
}

on_each_database!(
    a_permanent_error_does_not_ask_for_a_rerun_on_sqlite(
        "CREATE TRIGGER refuse BEFORE DELETE ON note BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END;"
    ),
    a_permanent_error_does_not_ask_for_a_rerun_on_postgres(
        "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused by trigger'; END $$ \
         LANGUAGE plpgsql; CREATE TRIGGER refuse BEFORE DELETE ON note FOR EACH ROW EXECUTE FUNCTION refuse();"
    ),
    |databases, trigger| {
        a_permanent_error_does_not_ask_for_a_rerun(
            databases.create(&format!("{DIAMOND_SCHEMA}{}{trigger}", diamond_rows(1))),
        );
    }
);

/// A run whose process was killed shows as `interrupted` in `cascade runs` once its heartbeat
/// is older than the run lease, and the next run of the same roots records that it resumes it.
fn a_killed_run_is_interrupted_and_resumed(url: String) {
    let probe = Probe { url: url.clone() };
    let config = slow_config(Some(200)).replace("[settings]", "[settings]\nrun_lease_seconds = 1");
    let config = project(&[("cascades/diamond.toml", &config)]);
    let mut run = Running::start(config.path(), &delete_args(&url, &[]));
    run.expect(CHUNK_COMMITTED);
    run.kill();
    let runs = |config: &Path| -> Value {
        let output = cascade(config).args(["runs", "--format", "json", "--database-url", &url]).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "cascade runs failed: {stderr}");
        serde_json::from_slice(&output.stdout).unwrap()
    };
    wait_until("the killed run is shown as interrupted", || {
        let outcome = runs(config.path())[0]["outcome"].clone();
        assert!(outcome == "interrupted" || outcome == "running", "{outcome}");
        outcome == "interrupted"
    });
    let killed = runs(config.path())[0]["id"].as_i64().unwrap();
    let output = cascade(config.path()).args(delete_args(&url, &[])).assert().success().get_output().stdout.clone();
    let summary: Value = serde_json::from_slice(&output).unwrap();
    assert_eq!(summary["resumes"], killed);
    let listed = runs(config.path());
    assert_eq!((&listed[0]["outcome"], &listed[0]["resumes"]), (&Value::from("succeeded"), &Value::from(killed)));
    assert_eq!((&listed[1]["id"], &listed[1]["outcome"]), (&Value::from(killed), &Value::from("interrupted")));
    assert_eq!(
        probe.count("SELECT COUNT(*) FROM cascade_run WHERE outcome = 'running'"),
        0,
        "recorded, not only shown"
    );
    assert_eq!(probe.orphans(), 0);
}

on_each_database!(
    a_killed_run_is_interrupted_and_resumed_on_sqlite,
    a_killed_run_is_interrupted_and_resumed_on_postgres,
    a_killed_run_is_interrupted_and_resumed_on_mariadb,
    |databases| {
        a_killed_run_is_interrupted_and_resumed(databases.create(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(3))));
    }
);

/// Key types come from the catalog, domains resolved: a domain over `uuid` whose name contains
/// "int" binds its keys as uuids (and so does a domain over that domain), and a mixed-case
/// domain over text as text.
#[test]
fn keys_of_domain_types_are_bound_by_what_the_catalog_says_on_postgres() {
    let schema = r#"
        CREATE DOMAIN print_id AS uuid;
        CREATE DOMAIN sheet_ref AS print_id;
        CREATE DOMAIN "OddKey" AS text;
        CREATE TABLE sheet (id print_id PRIMARY KEY);
        CREATE TABLE line (id "OddKey" PRIMARY KEY, sheet_id sheet_ref NOT NULL REFERENCES sheet (id));
        CREATE INDEX line_sheet_id_idx ON line (sheet_id);
        CREATE TABLE mark (id serial PRIMARY KEY, line_id "OddKey" NOT NULL REFERENCES line (id));
        CREATE INDEX mark_line_id_idx ON mark (line_id);
        INSERT INTO sheet VALUES ('00000000-0000-0000-0000-000000000001'), ('00000000-0000-0000-0000-000000000002'),
            ('abcdef00-0000-0000-0000-000000000003');
        INSERT INTO line VALUES ('a', '00000000-0000-0000-0000-000000000001'), ('b', '00000000-0000-0000-0000-000000000002');
        INSERT INTO mark (line_id) VALUES ('a'), ('a'), ('b');
    "#;
    let Some(url) = postgres_database(schema) else { return };
    let read = block_on(cascade::schema::introspect_url(&url)).unwrap();
    let key_type = |table: &str, column: &str| read.table(table).and_then(|t| t.column(column)).map(|c| &c.key_type);
    let uuid = cascade::db::KeyType::Other("uuid".to_owned());
    assert_eq!((key_type("sheet", "id"), key_type("line", "sheet_id")), (Some(&uuid), Some(&uuid)));
    assert_eq!(key_type("line", "id"), Some(&cascade::db::KeyType::Text));
    let config = project(&[(
        "cascades/sheet.toml",
        "[models.sheet]\ntable = \"sheet\"\nchildren = [{ model = \"line\", column = \"sheet_id\" }]\n\n\
         [models.line]\ntable = \"line\"\nchildren = [{ model = \"mark\", column = \"line_id\" }]\n\n\
         [models.mark]\ntable = \"mark\"\nstrategy = \"bulk\"\n",
    )]);
    cascade(config.path())
        .args(["delete", "sheet", "00000000-0000-0000-0000-000000000001", "--confirm", "--database-url", &url])
        .assert()
        .success();
    let probe = Probe { url: url.clone() };
    assert_eq!(probe.count("SELECT COUNT(*) FROM sheet"), 2);
    assert_eq!(probe.count("SELECT COUNT(*) FROM line WHERE id = 'b'"), 1);
    assert_eq!(probe.count("SELECT COUNT(*) FROM mark"), 1, "only the marks of line b are left");

    // A uuid written in upper case is the same uuid: found, not reported missing.
    let upper = "ABCDEF00-0000-0000-0000-000000000003";
    let plan = cascade(config.path())
        .args(["plan", "sheet", "--id", upper, "--format", "json", "--database-url", &url])
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!((&plan["not_found"], &plan["totals"]["sheet"]), (&serde_json::json!([]), &serde_json::json!(1)));
    let deleted = cascade(config.path())
        .args(["delete", "sheet", upper, "--confirm", "--format", "json", "--database-url", &url])
        .output()
        .unwrap();
    let summary: Value = serde_json::from_slice(&deleted.stdout).unwrap();
    assert_eq!((&summary["missing"], &summary["deleted"]["sheet"]), (&serde_json::json!([]), &serde_json::json!(1)));
    assert_eq!(probe.count("SELECT COUNT(*) FROM sheet"), 1);
}

/// SQLite stores any value in an `INT` column: a key that is not an integer is a clear error
/// (not a panic), the run is recorded as failed, and nothing is half-deleted.
#[test]
fn a_key_that_does_not_fit_its_type_is_a_clear_error_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(
        dir.path(),
        "CREATE TABLE box (id INTEGER PRIMARY KEY);
         CREATE TABLE item (id INT PRIMARY KEY, box_id INTEGER NOT NULL REFERENCES box (id));
         CREATE INDEX item_box_id_idx ON item (box_id);
         INSERT INTO box VALUES (1);
         INSERT INTO item VALUES ('x-1', 1), (2, 1);",
    );
    let config = project(&[(
        "cascades/box.toml",
        "[models.box]\ntable = \"box\"\nchildren = [{ model = \"item\", column = \"box_id\" }]\n\n\
         [models.item]\ntable = \"item\"\n",
    )]);
    let output = cascade(config.path())
        .args(["delete", "box", "1", "--confirm", "--database-url", &url])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let stderr = String::from_utf8_lossy(&output);
    assert!(stderr.contains("`x-1` is not an integer"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let probe = Probe { url };
    assert_eq!(probe.count("SELECT COUNT(*) FROM cascade_run WHERE outcome = 'failed'"), 1);
    assert_eq!(probe.count("SELECT COUNT(*) FROM box"), 1, "the parent stays while its children do");
}

/// The archive holds a root row as it was before the deletion marked it in progress, even when
/// the run that marked it was killed and another finished it.
fn archived_roots_keep_their_status(url: String) {
    let probe = Probe { url: url.clone() };
    let before = common::dump(&url);
    let config = project(&[("cascades/diamond.toml", &slow_config(Some(100)))]);
    let archive = config.path().join("archive");
    let args = delete_args(&url, &["--archive", archive.to_str().unwrap()]);
    let mut first = Running::start(config.path(), &args);
    first.expect(DELETION_STARTED);
    first.kill();
    assert_eq!(probe.count("SELECT COUNT(*) FROM org WHERE status = 1"), 2, "the killed run had marked the roots");
    cascade(config.path()).args(&args).assert().success();

    let killed = killed_runs(&probe);
    assert_eq!(killed.len(), 1);
    // Rows as they were before the deletion: the roots with their status 0, not the marking's 1.
    check_archive(&url, &before, &archive, &killed);
    assert_eq!(probe.count("SELECT COUNT(*) FROM cascade_checkpoint"), 0, "the kept statuses are forgotten");
}

on_each_database!(
    archived_roots_keep_their_status_on_sqlite,
    archived_roots_keep_their_status_on_postgres,
    archived_roots_keep_their_status_on_mariadb,
    |databases| {
        archived_roots_keep_their_status(databases.create(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(3))));
    }
);

/// The chunk fetch of a per_row step stops at its `LIMIT` without sorting the table: a sort over
/// the key as text would read and sort every remaining row on each fetch (quadratic over a
/// deletion). Only the chunk's own keys are aggregated (into one JSON array) above the limit.
#[test]
fn the_chunk_fetch_never_sorts_keys_as_text_on_postgres() {
    let Some(url) = postgres_database(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(1))) else { return };
    let config = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    let output = cascade(config.path())
        .args(["plan", "project", "--id", "1", "--sql", "--database-url", &url])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&output.stdout);
    let fetch = listing
        .lines()
        .find(|line| line.starts_with("SELECT CAST(json_agg(") && line.contains("FROM \"public\".\"task\""))
        .unwrap_or_else(|| panic!("no chunk fetch of task in:\n{listing}"))
        .trim_end_matches(';')
        .replace("$1", "ARRAY[1, 2]");
    let plan: Vec<String> =
        common::texts(&url, &format!("EXPLAIN {fetch}")).into_iter().map(|row| row[0].clone().unwrap()).collect();
    let plan = plan.join("\n");
    let nodes: Vec<&str> = plan.lines().map(|line| line.trim_start_matches([' ', '-', '>'])).collect();
    assert!(nodes[0].starts_with("Aggregate") && nodes[1].starts_with("Limit"), "{plan}");
    assert!(!plan.contains("Sort"), "the fetch sorts the table: {plan}");
}

/// The database's own `ON DELETE CASCADE` deletes from tables the config does not name; an
/// enforced reference into one of those would refuse the cascade, and with it the parents after
/// their declared children were gone. Refused before any write.
fn a_reference_below_a_database_cascade_refuses_the_deletion(url: String) {
    let config = "[models.org]\ntable = \"org\"\nchildren = [{ model = \"project\", column = \"org_id\" }]\n\n\
                  [models.project]\ntable = \"project\"\n";
    let config = project(&[("cascades/cascade.toml", config)]);
    cascade(config.path())
        .args(["delete", "org", "1", "--confirm", "--database-url", &url])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "table `comment` references `task` by `task_id`, which the database deletes from (ON DELETE CASCADE from `project`)",
        ));
    assert_eq!(common::count(&url, "SELECT COUNT(*) FROM project"), 2, "nothing deleted");
}

const CASCADE_SCHEMA: &str = "
CREATE TABLE org (id INTEGER PRIMARY KEY);
CREATE TABLE project (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL REFERENCES org (id));
CREATE INDEX project_org_id ON project (org_id);
CREATE TABLE task (id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES project (id) ON DELETE CASCADE);
CREATE TABLE comment (id INTEGER PRIMARY KEY, task_id INTEGER NOT NULL REFERENCES task (id));
INSERT INTO org VALUES (1);
INSERT INTO project VALUES (1, 1), (2, 1);
INSERT INTO task VALUES (1, 1);
INSERT INTO comment VALUES (1, 1);
";

on_each_database!(
    a_reference_below_a_database_cascade_refuses_the_deletion_on_sqlite,
    a_reference_below_a_database_cascade_refuses_the_deletion_on_postgres,
    a_reference_below_a_database_cascade_refuses_the_deletion_on_mariadb,
    |databases| {
        a_reference_below_a_database_cascade_refuses_the_deletion(databases.create(CASCADE_SCHEMA));
    }
);

/// Without `$USER` (a container, cron), the audit trail still names the operating-system user
/// (as `id -un` does, or `uid N` for an id without a name), never "unknown".
#[test]
fn the_actor_is_the_os_user_without_user_variable() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{DIAMOND_SCHEMA}{}", diamond_rows(1)));
    let config = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    cascade(config.path()).args(delete_args(&url, &[])).env_remove("USER").env_remove("USERNAME").assert().success();
    let actor = common::texts(&url, "SELECT actor FROM cascade_run")[0][0].clone().unwrap();
    let id = |flag: &str| {
        let output = std::process::Command::new("id").arg(flag).output().unwrap();
        output.status.success().then(|| String::from_utf8(output.stdout).unwrap().trim().to_owned())
    };
    let expected = id("-un").unwrap_or_else(|| format!("uid {}", id("-u").unwrap()));
    assert_eq!(actor, expected);
}

/// Rows whose delete the database refuses (here a trigger) are not archived, nor are the rows
/// deleted before them in the transaction it rolls back: the archive holds exactly what was
/// deleted.
fn a_refused_delete_leaves_no_archive_lines(url: &str) {
    let tasks = common::count(url, "SELECT COUNT(*) FROM task");
    let before = common::dump(url);
    let config = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    let archive = config.path().join("archive");
    cascade(config.path())
        .args(delete_args(url, &["--archive", archive.to_str().unwrap()]))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("tasks are kept"));
    assert_eq!(common::count(url, "SELECT COUNT(*) FROM task"), tasks, "no task deleted");
    check_archive(url, &before, &archive, &[]);
    assert_eq!(common::archive_lines(&archive, &[]).get("task"), None, "no line for a task that is still there");
}

on_each_database!(
    a_refused_delete_leaves_no_archive_lines_on_sqlite(
        "CREATE TRIGGER tasks_are_kept BEFORE DELETE ON task BEGIN SELECT RAISE(ABORT, 'tasks are kept'); END;"
    ),
    a_refused_delete_leaves_no_archive_lines_on_postgres(
        "CREATE FUNCTION keep_tasks() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION \
         'tasks are kept'; END $$; CREATE TRIGGER tasks_are_kept BEFORE DELETE ON task FOR EACH ROW \
         EXECUTE FUNCTION keep_tasks();"
    ),
    |databases, refusing| {
        a_refused_delete_leaves_no_archive_lines(
            &databases.create(&format!("{DIAMOND_SCHEMA}{}{refusing}", diamond_rows(1))),
        );
    }
);
