//! `cascade orphans --delete --confirm`: on SQLite and PostgreSQL databases whose orphans are
//! generated at known keys (so the expected survivors are known without the tool), it deletes
//! exactly the orphans with their own children, in batches, archived, audited in one
//! `cascade_run` row; killed with kill -9 after a batch it committed, a rerun continues after
//! the checkpoint (not before it) and ends with the exact result.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::random::Random;
use common::running::Running;
use common::{
    cascade, count, json_output, on_each_database, postgres_database, project, sqlite_database, texts, wait_until,
};
use serde_json::{Value, json};

/// parent → child (per_row, chunks of 20) → leaf (bulk); child → child (`copy_of`, nullified).
const CONFIG: &str = r#"
[models.parent]
table = "parent"
children = [{ model = "child", column = "parent_id" }]

[models.child]
table = "child"
chunk_size = 20
children = [
  { model = "leaf", column = "child_id" },
  { model = "child", column = "copy_of", on_delete = "nullify" },
]

[models.leaf]
table = "leaf"
strategy = "bulk"
"#;

const TABLES: &str = "
CREATE TABLE parent (id {int} PRIMARY KEY);
CREATE TABLE child (id {int} PRIMARY KEY, parent_id {int}, copy_of {int});
CREATE INDEX child_parent_id ON child (parent_id);
CREATE INDEX child_copy_of ON child (copy_of);
CREATE TABLE leaf (id {int} PRIMARY KEY, child_id {int});
CREATE INDEX leaf_child_id ON leaf (child_id);
";

/// Parents 1 to 40; each child points at one of them, at a parent that does not exist (an
/// orphan, one in four), or at none; a few children are copies of a child that never existed
/// (`copy_of` orphans, nullified); every child has two leaves, and a few leaves belong to no
/// child at all (orphans of their own).
struct Data {
    sql: String,
    /// child id → parent_id, copy_of.
    children: BTreeMap<u64, (Option<u64>, Option<u64>)>,
    /// leaf id → child_id.
    leaves: BTreeMap<u64, u64>,
    /// Parents that do not exist yet but appear while the clean-up runs, before the batches of
    /// their children: those children are not orphans by then.
    appearing: BTreeSet<u64>,
}

const PARENTS: u64 = 40;

fn generate(children: u64, seed: u64) -> Data {
    let mut random = Random::seeded(seed);
    let mut data =
        Data { sql: String::new(), children: BTreeMap::new(), leaves: BTreeMap::new(), appearing: BTreeSet::new() };
    let parents: Vec<String> = (1..=PARENTS).map(|id| format!("({id})")).collect();
    data.sql += &format!("INSERT INTO parent VALUES {};\n", parents.join(", "));
    let mut rows = Vec::new();
    for id in 1..=children {
        let parent_id = match random.below(100) {
            0..25 => Some(1_000 + random.below(50)),
            25..30 => None,
            _ => Some(1 + random.below(PARENTS)),
        };
        let copy_of = random.chance(3).then(|| 1_000_000 + id);
        data.children.insert(id, (parent_id, copy_of));
        let show = |value: Option<u64>| value.map_or("NULL".to_owned(), |v| v.to_string());
        rows.push(format!("({id}, {}, {})", show(parent_id), show(copy_of)));
    }
    data.sql += &format!("INSERT INTO child VALUES {};\n", rows.join(", "));
    let mut leaves = Vec::new();
    for child in 1..=children + children / 20 {
        for n in 0..2 {
            let id = child * 10 + n;
            data.leaves.insert(id, child);
            leaves.push(format!("({id}, {child})"));
        }
    }
    data.sql += &format!("INSERT INTO leaf VALUES {};\n", leaves.join(", "));
    data
}

impl Data {
    fn is_orphan(&self, child: u64) -> bool {
        self.children[&child].0.is_some_and(|parent| parent > PARENTS && !self.appearing.contains(&parent))
    }

    /// The children that survive, with their columns after the clean-up: `copy_of` pointed at
    /// no child, so it is NULL now.
    fn surviving_children(&self) -> Vec<Vec<Option<String>>> {
        let text = |value: Option<u64>| value.map(|v| v.to_string());
        self.children
            .iter()
            .filter(|(id, _)| !self.is_orphan(**id))
            .map(|(id, (parent, _))| vec![text(Some(*id)), text(*parent), None])
            .collect()
    }

    /// The leaves that survive: those of surviving children.
    fn surviving_leaves(&self) -> Vec<Vec<Option<String>>> {
        let alive = |child: &u64| self.children.contains_key(child) && !self.is_orphan(*child);
        self.leaves.iter().filter(|(_, child)| alive(child)).map(|(id, _)| vec![Some(id.to_string())]).collect()
    }

    fn orphans(&self) -> Vec<u64> {
        self.children.keys().copied().filter(|id| self.is_orphan(*id)).collect()
    }
}

fn schema(int: &str, data: &Data) -> String {
    format!("{}{}", TABLES.replace("{int}", int), data.sql)
}

fn children_after(url: &str) -> Vec<Vec<Option<String>>> {
    // `c.id`: a bare `id` would sort by the text output column on PostgreSQL.
    texts(
        url,
        "SELECT CAST(c.id AS TEXT), CAST(c.parent_id AS TEXT), CAST(c.copy_of AS TEXT) FROM child c ORDER BY c.id",
    )
}

fn leaves_after(url: &str) -> Vec<Vec<Option<String>>> {
    texts(url, "SELECT CAST(l.id AS TEXT) FROM leaf l ORDER BY l.id")
}

/// Orphans left by every relation, by hand-written anti-joins.
fn orphans_left(url: &str) -> u64 {
    count(
        url,
        "SELECT COUNT(*) FROM child c WHERE c.parent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM parent p WHERE p.id = c.parent_id)",
    ) + count(
        url,
        "SELECT COUNT(*) FROM child c WHERE c.copy_of IS NOT NULL AND NOT EXISTS (SELECT 1 FROM child p WHERE p.id = c.copy_of)",
    ) + count(
        url,
        "SELECT COUNT(*) FROM leaf l WHERE l.child_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM child c WHERE c.id = l.child_id)",
    )
}

/// `orphans --delete --confirm` in batches of 50, without a pause between them unless `extra`
/// sets `--sleep-ms`.
fn confirm_args<'a>(url: &'a str, archive: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["orphans", "--delete", "--confirm", "--format", "json", "--database-url", url];
    args.extend_from_slice(&["--archive", archive, "--batch-size", "50"]);
    if !extra.contains(&"--sleep-ms") {
        args.extend_from_slice(&["--sleep-ms", "0"]);
    }
    args.extend_from_slice(extra);
    args
}

/// Every deleted row is in the archive at least once, as it was (exactly once unless a run was
/// killed); no other row is.
fn check_archive(
    before: &BTreeMap<String, Vec<String>>,
    after: &BTreeMap<String, Vec<String>>,
    archive: &std::path::Path,
    killed: &[i64],
) {
    let lines = common::archive_lines(archive, killed);
    for table in ["parent", "child", "leaf"] {
        let ids = |rows: &[String]| -> BTreeMap<String, Value> {
            rows.iter()
                .map(|row| serde_json::from_str::<Value>(row).unwrap())
                .map(|row| (row["id"].to_string(), row))
                .collect()
        };
        let (was, is) = (ids(&before[table]), ids(&after[table]));
        let deleted: BTreeSet<&String> = was.keys().filter(|id| !is.contains_key(*id)).collect();
        let mut archived = BTreeSet::new();
        for line in lines.get(table).into_iter().flatten() {
            let id = line["row"]["id"].to_string();
            let before = was.get(&id).unwrap_or_else(|| panic!("archived {table} {id} never existed"));
            // A child's `copy_of` may have been nullified before it was deleted.
            assert_eq!(line["row"]["id"], before["id"]);
            archived.insert(id);
        }
        let archived: BTreeSet<&String> = archived.iter().collect();
        assert_eq!(archived, deleted, "the archived rows of {table} are the deleted ones");
        common::assert_archived_once_unless_killed(&lines, table, archived.len(), killed);
    }
}

/// One confirmed run: exactly the orphans (and their leaves) deleted, `copy_of` orphans
/// nullified, the stray leaves deleted, nothing else changed, one `cascade_run` row, no
/// checkpoint left.
fn check_confirmed(url: &str, data: &Data) {
    let before = common::dump(url);
    let dir = project(&[("cascades/cascade.toml", CONFIG)]);
    let archive = dir.path().join("archive");
    let summary = json_output(cascade(dir.path()).args(confirm_args(url, archive.to_str().unwrap(), &[])));
    let orphans = data.orphans().len() as u64;
    let stray_leaves = data.leaves.values().filter(|child| !data.children.contains_key(child)).count() as u64;
    let leaves_of_orphans =
        data.leaves.values().filter(|child| data.children.contains_key(child) && data.is_orphan(**child)).count()
            as u64;
    assert_eq!(summary["deleted"], json!({"child": orphans, "leaf": leaves_of_orphans + stray_leaves}), "{summary:#}");
    let copies = data.children.values().filter(|(_, copy_of)| copy_of.is_some()).count() as u64;
    let copies_of_orphans =
        data.children.iter().filter(|(id, (_, copy_of))| copy_of.is_some() && data.is_orphan(**id)).count() as u64;
    assert_eq!(summary["nullified"], json!({"child": copies - copies_of_orphans}), "{summary:#}");
    assert_eq!(summary["outcome"], "succeeded");
    assert!(summary["batches"].as_u64().unwrap() >= orphans / 50, "{summary:#}");
    assert_eq!(children_after(url), data.surviving_children());
    assert_eq!(leaves_after(url), data.surviving_leaves());
    assert_eq!(orphans_left(url), 0);
    let after = common::dump(url);
    let appeared: Vec<String> = data.appearing.iter().map(|id| json!({ "id": id }).to_string()).collect();
    let parents: Vec<&String> = after["parent"].iter().filter(|row| !appeared.contains(row)).collect();
    assert_eq!(parents, before["parent"].iter().collect::<Vec<_>>(), "no parent was touched");
    check_archive(&before, &after, &archive, &[]);
    let runs = texts(url, "SELECT command, outcome, \"rows\" FROM cascade_run");
    assert_eq!(runs.len(), 1, "one run for the whole clean-up: {runs:?}");
    assert!(runs[0][0].as_deref().unwrap().contains("orphans --delete --confirm"), "{runs:?}");
    assert_eq!(runs[0][1].as_deref(), Some("succeeded"));
    let rows: Value = serde_json::from_str(runs[0][2].as_deref().unwrap()).unwrap();
    assert_eq!(rows["deleted"], summary["deleted"]);
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_checkpoint"), 0, "a finished scan keeps no checkpoint");
}

on_each_database!(
    sqlite_confirm_deletes_exactly_the_orphans_with_their_children("INTEGER"),
    postgres_confirm_deletes_exactly_the_orphans_with_their_children("bigint"),
    mariadb_confirm_deletes_exactly_the_orphans_with_their_children("bigint"),
    |databases, int| {
        let data = generate(400, 7);
        let url = databases.create(&schema(int, &data));
        check_confirmed(&url, &data);
        if databases.is_sqlite() {
            assert_eq!(texts(&url, "PRAGMA foreign_key_check"), Vec::<Vec<Option<String>>>::new());
        }
    }
);

/// A parent that appears while the clean-up runs (a trigger inserts it when the first batch
/// deletes the first orphan) keeps its children of later batches: every batch's orphans are
/// looked at again right before the batch runs, also where they were read many batches ahead
/// (PostgreSQL). Only the orphans still dangling go; everything else is as in
/// `check_confirmed`.
fn check_a_parent_appearing_mid_run(data: &mut Data, url_with: impl FnOnce(&str) -> String, trigger: &str) {
    let orphans = data.orphans();
    let parent_of = |child: &u64| data.children[child].0.unwrap();
    let (first_batch, later) = orphans.split_at(50);
    let in_first: BTreeSet<u64> = first_batch.iter().map(parent_of).collect();
    let appearing = later.iter().map(parent_of).find(|parent| !in_first.contains(parent));
    let appearing = appearing.expect("a missing parent of orphans of later batches only");
    let saved = later.iter().filter(|child| parent_of(child) == appearing).count();
    let trigger = trigger.replace("{first}", &orphans[0].to_string()).replace("{parent}", &appearing.to_string());
    let url = url_with(&trigger);
    data.appearing.insert(appearing);
    assert_eq!(data.orphans().len(), orphans.len() - saved);
    check_confirmed(&url, data);
    assert_eq!(count(&url, &format!("SELECT COUNT(*) FROM parent WHERE id = {appearing}")), 1, "the trigger ran");
}

on_each_database!(
    sqlite_a_parent_appearing_mid_run_keeps_its_children(
        "INTEGER",
        "CREATE TRIGGER parent_appears AFTER DELETE ON child WHEN OLD.id = {first} \
         BEGIN INSERT INTO parent VALUES ({parent}); END;"
    ),
    postgres_a_parent_appearing_mid_run_keeps_its_children(
        "bigint",
        "CREATE FUNCTION parent_appears() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN INSERT INTO parent VALUES ({parent}); RETURN NULL; END $$;
         CREATE TRIGGER parent_appears AFTER DELETE ON child FOR EACH ROW WHEN (OLD.id = {first}) \
         EXECUTE FUNCTION parent_appears();"
    ),
    mariadb_a_parent_appearing_mid_run_keeps_its_children(
        "bigint",
        "CREATE TRIGGER parent_appears AFTER DELETE ON child FOR EACH ROW \
         IF OLD.id = {first} THEN INSERT INTO parent VALUES ({parent}); END IF;"
    ),
    |databases, int, trigger| {
        let mut data = generate(800, 11);
        let ddl = schema(int, &data);
        check_a_parent_appearing_mid_run(&mut data, |trigger| databases.create(&(ddl + trigger)), trigger);
    }
);

/// Where the orphans have no children of their own, PostgreSQL's batches read ahead are not read
/// again: each orphan is deleted only while it still dangles. Parents 10, 20, ..., 1000 are
/// missing (500 orphans, five each, batches of 50); parent 1000 appears when the first orphan
/// goes (a trigger), and its children, in the last batch, stay. For a bulk and a per_row child,
/// and a per_row child with a status (its batches are read again: see `checked_when_cleaned`).
#[test]
fn postgres_a_parent_appearing_mid_run_keeps_its_orphans_without_children() {
    let ddl = "CREATE TABLE parent (id bigint PRIMARY KEY);
               CREATE TABLE child (id bigint PRIMARY KEY, parent_id bigint, status integer NOT NULL DEFAULT 1);
               CREATE INDEX child_parent_id ON child (parent_id);
               INSERT INTO parent SELECT i FROM generate_series(1, 1000) AS i WHERE i % 10 <> 0;
               INSERT INTO child SELECT i, (i - 1) / 5 + 1 FROM generate_series(1, 5000) AS i;
               CREATE FUNCTION parent_appears() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN INSERT INTO parent VALUES (1000); RETURN NULL; END $$;
               CREATE TRIGGER parent_appears AFTER DELETE ON child FOR EACH ROW WHEN (OLD.id = 46)
               EXECUTE FUNCTION parent_appears();";
    // A status is set on every root of a batch before its delete: the kept rows must keep theirs.
    let with_status = "status = { column = \"status\", proceed = [1], in_progress = 2 }\n";
    for (strategy, status) in [("bulk", ""), ("per_row", ""), ("per_row", with_status)] {
        let case = format!("{strategy}{}", if status.is_empty() { "" } else { " with a status" });
        let Some(url) = postgres_database(ddl) else { return };
        let config = format!(
            "[models.parent]\ntable = \"parent\"\nchildren = [{{ model = \"child\", column = \"parent_id\" }}]\n\n\
             [models.child]\ntable = \"child\"\nstrategy = \"{strategy}\"\n{status}"
        );
        let dir = project(&[("cascades/cascade.toml", &config)]);
        let archive = dir.path().join("archive");
        let summary = json_output(cascade(dir.path()).args(confirm_args(&url, archive.to_str().unwrap(), &[])));
        assert_eq!(summary["deleted"]["child"], json!(495), "{case}: {summary}");
        assert!(summary["batches"].as_u64().unwrap() > 1, "{case}: {summary}");
        assert_eq!(count(&url, "SELECT COUNT(*) FROM parent WHERE id = 1000"), 1, "{case}: the trigger ran");
        let kept = "SELECT COUNT(*) FROM child WHERE parent_id = 1000 AND status = 1";
        assert_eq!(count(&url, kept), 5, "{case}: kept, their status as it was");
        let dangling =
            "SELECT COUNT(*) FROM child AS c WHERE NOT EXISTS (SELECT 1 FROM parent AS p WHERE p.id = c.parent_id)";
        assert_eq!(count(&url, dangling), 0, "{case}");
        assert_eq!(count(&url, "SELECT COUNT(*) FROM child"), 4505, "{case}");
        assert_eq!(count(&url, "SELECT COUNT(*) FROM child WHERE status <> 1"), 0, "{case}: no row left marked");
    }
}

/// kill -9 once the second batch has committed (its checkpoint row is the signal); the
/// checkpoint then sits at a key past which orphans remain. An orphan planted below the
/// checkpoint afterwards is not seen by the rerun, which continues after it (the done range is
/// not scanned again) and finishes everything else; the run after that, with no checkpoint
/// left, removes the planted one too.
fn check_kill_and_rerun(url: &str, data: &Data) {
    let before = common::dump(url);
    // A killed run is told from a running one after a second.
    let config = format!("[settings]\nrun_lease_seconds = 1\n{CONFIG}");
    let dir = project(&[("cascades/cascade.toml", &config)]);
    let archive = dir.path().join("archive");
    let archive_dir = archive.to_str().unwrap();
    let checkpoint = "SELECT position FROM cascade_checkpoint WHERE name = 'orphans:child:parent_id'";
    let mut args = confirm_args(url, archive_dir, &["--sleep-ms", "300"]);
    args.retain(|arg| *arg != "--format" && *arg != "json");
    let mut run = Running::start(dir.path(), &args);
    // The tool's tables exist from here on.
    run.expect("clean-up started");
    wait_until("the first batch committed its checkpoint", || !texts(url, checkpoint).is_empty());
    // A second batch, so that the killed run's rows add up more than one batch's.
    let first = texts(url, checkpoint);
    wait_until("the second batch committed its checkpoint", || texts(url, checkpoint) != first);
    run.kill();
    let position: u64 = texts(url, checkpoint)[0][0].as_deref().unwrap().parse().unwrap();
    let orphans = data.orphans();
    assert!(orphans.iter().any(|id| *id > position), "the kill came before the end");
    for id in &orphans {
        let left = count(url, &format!("SELECT COUNT(*) FROM child WHERE id = {id}"));
        assert_eq!(left, u64::from(*id > position), "orphan {id} with the checkpoint at {position}");
    }
    check_killed_run_rows(url, data, dir.path());
    // Below the checkpoint, where the rerun does not look again.
    texts(url, "INSERT INTO child VALUES (0, 999999, NULL)");
    let killed: Vec<i64> = texts(url, "SELECT CAST(id AS TEXT) FROM cascade_run")
        .iter()
        .map(|row| row[0].as_deref().unwrap().parse().unwrap())
        .collect();
    wait_until("the killed run's lease is over", || {
        let runs = json_output(cascade(dir.path()).args(["runs", "--format", "json", "--database-url", url]));
        runs[0]["outcome"] == "interrupted"
    });
    let summary = json_output(cascade(dir.path()).args(confirm_args(url, archive_dir, &[])));
    assert_eq!(summary["resumes"], json!(killed[0]), "{summary:#}");
    assert_eq!(summary["continued_after"], json!({"orphans:child:parent_id": position.to_string()}), "it says so");
    let rerun_orphans = orphans.iter().filter(|id| **id > position).count() as u64;
    assert_eq!(summary["deleted"]["child"], json!(rerun_orphans), "the done range was not scanned again");
    assert_eq!(count(url, "SELECT COUNT(*) FROM child WHERE id = 0"), 1);
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_checkpoint"), 0);
    let last = json_output(cascade(dir.path()).args(confirm_args(url, archive_dir, &[])));
    assert_eq!((&last["deleted"]["child"], last["deleted"]["leaf"].as_u64().unwrap_or(0)), (&json!(1), 0), "{last:#}");
    assert_eq!(children_after(url), data.surviving_children());
    assert_eq!(leaves_after(url), data.surviving_leaves());
    assert_eq!(orphans_left(url), 0);
    let mut before = before;
    before.get_mut("child").unwrap().push(json!({"id": 0, "parent_id": 999999, "copy_of": null}).to_string());
    check_archive(&before, &common::dump(url), &archive, &killed);
}

/// The killed run's `cascade_run.rows` hold what its committed transactions did: each records
/// the run's rows so far with its own. Rows deleted are exact; a surviving child whose
/// `copy_of` went NULL was nullified by it (one nullified, then deleted as an orphan, counts too,
/// so the record holds at least those).
fn check_killed_run_rows(url: &str, data: &Data, project: &std::path::Path) {
    let recorded: Value =
        serde_json::from_str(texts(url, r#"SELECT "rows" FROM cascade_run"#)[0][0].as_deref().unwrap())
            .expect("the killed run recorded its rows");
    let children = children_after(url);
    let leaves = leaves_after(url).len() as u64;
    let deleted = |model: &str| recorded["deleted"][model].as_u64().unwrap_or(0);
    assert_eq!(deleted("child"), data.children.len() as u64 - children.len() as u64, "{recorded}");
    assert_eq!(deleted("leaf"), data.leaves.len() as u64 - leaves, "{recorded}");
    assert!(deleted("child") > 0, "the first batch deleted orphans: {recorded}");
    let nullified_survivors = children
        .iter()
        .filter(|row| {
            let id: u64 = row[0].as_deref().unwrap().parse().unwrap();
            row[2].is_none() && data.children[&id].1.is_some()
        })
        .count() as u64;
    assert!(recorded["nullified"]["child"].as_u64().unwrap_or(0) >= nullified_survivors, "{recorded}");
    let listed = cascade(project).args(["runs", "--database-url", url]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    let killed = listed.lines().next().unwrap_or_default();
    let expected = format!("child {}", deleted("child"));
    assert!(killed.contains("interrupted") && killed.contains("deleted ") && killed.contains(&expected), "{listed}");
}

on_each_database!(
    sqlite_kill_9_after_a_batch_then_rerun_continues_after_the_checkpoint("INTEGER"),
    postgres_kill_9_after_a_batch_then_rerun_continues_after_the_checkpoint("bigint"),
    mariadb_kill_9_after_a_batch_then_rerun_continues_after_the_checkpoint("bigint"),
    |databases, int| {
        let data = generate(1_200, 11);
        check_kill_and_rerun(&databases.create(&schema(int, &data)), &data);
    }
);

/// While a clean-up runs, the same clean-up started again is refused: it would take batches from
/// the first one's checkpoints. The refused run records nothing. Once the first is killed, the
/// same command runs at once (with the default 60-second run lease: the killed process is gone
/// from this host, so its heartbeat need not go stale first) and records that it resumes it.
fn check_one_run_at_a_time(url: &str, data: &Data) {
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let archive = config.path().join("archive");
    let archive = archive.to_str().unwrap();
    let checkpoint = "SELECT position FROM cascade_checkpoint WHERE name = 'orphans:child:parent_id'";
    // Long pauses between batches: the run is still at work when it is killed, however slow
    // the machine.
    let mut args = confirm_args(url, archive, &["--sleep-ms", "10000"]);
    args.retain(|arg| *arg != "--format" && *arg != "json");
    let mut first = Running::start(config.path(), &args);
    first.expect("clean-up started");
    wait_until("the first batch committed its checkpoint", || !texts(url, checkpoint).is_empty());
    let running = texts(url, "SELECT CAST(id AS TEXT) FROM cascade_run WHERE outcome = 'running'");
    let first_run: i64 = running[0][0].as_deref().unwrap().parse().unwrap();

    let second = cascade(config.path()).args(confirm_args(url, archive, &[])).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("a run on the same rows is already running (run {first_run}, by "))
            && stderr.contains("on this host)")
            && stderr.contains("run_lease_seconds (60 s)"),
        "{stderr}"
    );
    assert!(!stderr.contains("batches before this one"), "nothing of it was done: {stderr}");
    assert_eq!(count(url, "SELECT COUNT(*) FROM cascade_run"), 1, "the refused run records nothing");

    first.kill();
    let runs = json_output(cascade(config.path()).args(["runs", "--format", "json", "--database-url", url]));
    assert_eq!((&runs[0]["id"], &runs[0]["outcome"]), (&json!(first_run), &json!("interrupted")), "shown at once");
    let summary = json_output(cascade(config.path()).args(confirm_args(url, archive, &[])));
    assert_eq!(summary["resumes"], json!(first_run), "{summary:#}");
    assert_eq!(children_after(url), data.surviving_children());
    let outcomes = texts(url, "SELECT outcome FROM cascade_run ORDER BY id");
    let outcomes: Vec<&str> = outcomes.iter().map(|row| row[0].as_deref().unwrap()).collect();
    assert_eq!(outcomes, ["interrupted", "succeeded"]);
}

on_each_database!(
    sqlite_the_same_clean_up_runs_once_at_a_time("INTEGER"),
    postgres_the_same_clean_up_runs_once_at_a_time("bigint"),
    mariadb_the_same_clean_up_runs_once_at_a_time("bigint"),
    |databases, int| {
        let data = generate(1_200, 13);
        check_one_run_at_a_time(&databases.create(&schema(int, &data)), &data);
    }
);

/// Nothing changes without --confirm, and --confirm needs --delete.
#[test]
fn dry_runs_change_nothing_and_confirm_needs_delete() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &schema("INTEGER", &generate(100, 3)));
    let path = url.strip_prefix("sqlite://").unwrap();
    let bytes = std::fs::read(path).unwrap();
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    for args in [&["--delete"][..], &[]] {
        cascade(config.path()).args(["orphans", "--database-url", &url]).args(args).assert().success();
    }
    assert!(std::fs::read(path).unwrap() == bytes, "the database file changed");
    cascade(config.path())
        .args(["orphans", "--confirm", "--database-url", &url])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--delete"));
    cascade(config.path())
        .args(["orphans", "--delete", "--confirm", "--batch-size", "10", "--database-url", &url])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("50..=5000"));
    assert!(std::fs::read(path).unwrap() == bytes, "the database file changed");
}

/// `--max-batches` stops after that many batches (exit 0, said so); the next run continues.
#[test]
fn max_batches_stops_and_the_next_run_continues() {
    let dir = tempfile::tempdir().unwrap();
    let data = generate(600, 5);
    let url = sqlite_database(dir.path(), &schema("INTEGER", &data));
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let archive = config.path().join("archive");
    let archive = archive.to_str().unwrap();
    let first = json_output(cascade(config.path()).args(confirm_args(&url, archive, &["--max-batches", "2"])));
    assert_eq!(first["batches"], json!(2), "{first:#}");
    assert_eq!(first["deleted"]["child"], json!(100));
    assert_eq!(first["outcome"], "interrupted");
    assert_eq!(first["stopped_early"], "--max-batches 2 reached");
    let rest = json_output(cascade(config.path()).args(confirm_args(&url, archive, &[])));
    assert_eq!(rest["deleted"]["child"], json!(data.orphans().len() as u64 - 100), "{rest:#}");
    assert_eq!(rest["resumes"], first["run"], "it continues the run --max-batches stopped");
    assert_eq!(children_after(&url), data.surviving_children());
    // A batch shorter than asked for is the scan's last: a run it ends is done, not stopped
    // (one relation: a run of several would still have to look at the others).
    texts(&url, "INSERT INTO child VALUES (100000, 999999, NULL)");
    let one_batch = ["--max-batches", "1", "--relation", "child.parent_id"];
    let last = json_output(cascade(config.path()).args(confirm_args(&url, archive, &one_batch)));
    assert_eq!((&last["deleted"]["child"], &last["outcome"]), (&json!(1), &json!("succeeded")), "{last:#}");
    assert_eq!(last["stopped_early"], Value::Null);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_checkpoint"), 0);
}

/// Parents 1 to 10; children 1 to 6,000, child `c` of parent `c % 20 + 1`: the 3,000 of parents
/// 11 to 20 are orphans.
fn half_orphans(int: &str) -> String {
    let parents: Vec<String> = (1..=10).map(|n| format!("({n})")).collect();
    let children: Vec<String> = (1..=6000).map(|n| format!("({n}, {})", n % 20 + 1)).collect();
    format!(
        "CREATE TABLE parent (id {int} PRIMARY KEY);
         CREATE TABLE child (id {int} PRIMARY KEY, parent_id {int});
         CREATE INDEX child_parent_id ON child (parent_id);
         INSERT INTO parent VALUES {};
         INSERT INTO child VALUES {};",
        parents.join(", "),
        children.join(", ")
    )
}

/// The batches `orphans --delete --confirm` takes for 3,000 orphans: without `--batch-size`
/// they start at 500 and grow fourfold (up to 5,000) while transactions are well under
/// `target_chunk_ms` (a minute here, so they always are): 500 + 2,000 + the last 500. Given
/// `--batch-size`, or with `adaptive = false`, every batch is the same size.
fn check_batch_sizes(url: impl Fn() -> String) {
    let cases: [(&str, &[&str], u64); 3] = [
        ("target_chunk_ms = 60000", &[], 3),
        ("target_chunk_ms = 60000", &["--batch-size", "500"], 6),
        ("target_chunk_ms = 60000\nadaptive = false", &[], 6),
    ];
    for (settings, extra, batches) in cases {
        let url = url();
        let config = format!(
            "[settings]\n{settings}\n\n[models.parent]\ntable = \"parent\"\n\
             children = [{{ model = \"child\", column = \"parent_id\" }}]\n\n\
             [models.child]\ntable = \"child\"\nstrategy = \"bulk\"\n"
        );
        let dir = project(&[("cascades/cascade.toml", &config)]);
        let mut args = vec!["orphans", "--delete", "--confirm", "--sleep-ms", "0", "--format", "json"];
        args.extend_from_slice(&["--database-url", &url]);
        args.extend_from_slice(extra);
        let summary = json_output(cascade(dir.path()).args(&args));
        assert_eq!(summary["deleted"], json!({"child": 3000}), "{settings} {extra:?}: {summary:#}");
        assert_eq!(summary["batches"], json!(batches), "{settings} {extra:?}: {summary:#}");
        assert_eq!(count(&url, "SELECT COUNT(*) FROM child"), 3000);
        assert_eq!(count(&url, "SELECT COUNT(*) FROM child WHERE parent_id > 10"), 0);
    }
}

on_each_database!(
    sqlite_batches_grow_unless_their_size_is_given("INTEGER"),
    postgres_batches_grow_unless_their_size_is_given("bigint"),
    mariadb_batches_grow_unless_their_size_is_given("bigint"),
    |databases, int| {
        check_batch_sizes(|| databases.create(&half_orphans(int)));
    }
);

/// A batch that fails halfway (a trigger refuses one orphan's delete, after the chunks of leaves
/// below earlier orphans committed) leaves what those chunks did in the run's rows: the run's
/// end records the failure without taking them back.
#[test]
fn a_batch_failing_halfway_keeps_its_committed_rows_in_the_run_on_sqlite() {
    let config = r#"
[settings]
adaptive = false

[models.parent]
table = "parent"
children = [{ model = "child", column = "parent_id" }]

[models.child]
table = "child"
chunk_size = 3
children = [{ model = "leaf", column = "child_id" }]

[models.leaf]
table = "leaf"
strategy = "bulk"
chunk_size = 2
"#;
    let mut schema = "CREATE TABLE parent (id INTEGER PRIMARY KEY);
        CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER);
        CREATE INDEX child_parent_id ON child (parent_id);
        CREATE TABLE leaf (id INTEGER PRIMARY KEY, child_id INTEGER);
        CREATE INDEX leaf_child_id ON leaf (child_id);
        CREATE TRIGGER refuse_child_7 BEFORE DELETE ON child WHEN OLD.id = 7 BEGIN SELECT RAISE(ABORT, 'child 7 stays'); END;
        INSERT INTO parent VALUES (1);\n"
        .to_owned();
    for child in 1..=10 {
        schema += &format!("INSERT INTO child VALUES ({child}, 99);\n");
        for leaf in 0..5 {
            schema += &format!("INSERT INTO leaf VALUES ({}, {child});\n", child * 10 + leaf);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &schema);
    let project = project(&[("cascades/cascade.toml", config)]);
    let output = cascade(project.path())
        .args(["orphans", "--delete", "--confirm", "--sleep-ms", "0", "--batch-size", "50", "--database-url", &url])
        .output()
        .unwrap();
    assert!(!output.status.success(), "the trigger stops the run");
    let run = texts(&url, "SELECT outcome, rows FROM cascade_run");
    assert_eq!(run[0][0].as_deref(), Some("failed"));
    let recorded: Value = serde_json::from_str(run[0][1].as_deref().unwrap()).unwrap();
    let deleted = |model: &str| recorded["deleted"][model].as_u64().unwrap_or(0);
    let leaves_gone = 50 - count(&url, "SELECT COUNT(*) FROM leaf");
    assert!(leaves_gone > 0, "leaves went before the refusal");
    assert_eq!(deleted("leaf"), leaves_gone, "{recorded}");
    assert_eq!(deleted("child"), 10 - count(&url, "SELECT COUNT(*) FROM child"), "{recorded}");
}

/// A row dangling by a delete relation and by a nullify relation is deleted and archived as it
/// was, whatever order the config declares them in: every delete relation is cleaned before any
/// nullify relation, so the clean-up never sets a column to NULL on a row it then deletes.
fn check_deletes_come_before_nullifies(url: &str) {
    // The nullify relation first.
    let config = r#"
[models.parent]
table = "parent"
children = [
  { model = "child", column = "owner_id", on_delete = "nullify" },
  { model = "child", column = "parent_id" },
]

[models.child]
table = "child"
strategy = "bulk"
"#;
    let dir = project(&[("cascades/cascade.toml", config)]);
    let archive = dir.path().join("archive");
    let summary = json_output(cascade(dir.path()).args(confirm_args(url, archive.to_str().unwrap(), &[])));
    // Child 1 dangles by both, child 2 by its owner only, child 3 by its parent only.
    assert_eq!(
        (&summary["deleted"], &summary["nullified"]),
        (&json!({"child": 2}), &json!({"child": 1})),
        "{summary:#}"
    );
    let rows =
        texts(url, "SELECT CAST(id AS TEXT), CAST(parent_id AS TEXT), CAST(owner_id AS TEXT) FROM child ORDER BY id");
    let some = |value: &str| Some(value.to_owned());
    assert_eq!(rows, [vec![some("2"), some("1"), None], vec![some("4"), some("1"), some("1")]]);
    let archived: Vec<(u64, Option<u64>)> = common::archive_lines(&archive, &[])["child"]
        .iter()
        .map(|line| (line["row"]["id"].as_u64().unwrap(), line["row"]["owner_id"].as_u64()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(archived, [(1, Some(9)), (3, Some(1))], "archived as they were");
}

const DANGLING_TWICE: &str = "
CREATE TABLE parent (id integer PRIMARY KEY);
CREATE TABLE child (id integer PRIMARY KEY, parent_id integer, owner_id integer);
INSERT INTO parent VALUES (1);
INSERT INTO child VALUES (1, 9, 9), (2, 1, 9), (3, 9, 1), (4, 1, 1);
";

on_each_database!(
    sqlite_deletes_come_before_nullifies,
    postgres_deletes_come_before_nullifies,
    mariadb_deletes_come_before_nullifies,
    |databases| {
        check_deletes_come_before_nullifies(&databases.create(DANGLING_TWICE));
    }
);
