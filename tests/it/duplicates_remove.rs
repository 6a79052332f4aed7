//! `cascade duplicates --confirm` on SQLite and PostgreSQL: keep oldest and newest leave exactly
//! the expected survivors (planted at known keys, and generated at random against a model
//! computed here); without --merge a removed duplicate's children go with it, with --merge they
//! point at the kept row; a merge that would break a unique constraint is refused naming the
//! constraint and the rows, and changes nothing of that group; the printed index then holds.

use crate::common;

use std::collections::BTreeMap;

use common::random::Random;
use common::{cascade, count, json_output, on_each_database, postgres_database, project, sqlite_database, texts};
use serde_json::{Value, json};

/// person → membership (bulk); membership is unique on (person_id, value), its org: a column named
/// like the one SQLite's `json_each` gives the records a merge joins.
const CONFIG: &str = r#"
[models.person]
table = "person"
children = [{ model = "membership", column = "person_id" }]

[models.membership]
table = "membership"
strategy = "bulk"
"#;

const SCHEMA: &str = "
CREATE TABLE person (id {int} PRIMARY KEY, email TEXT, created_at {int});
CREATE TABLE membership (id {int} PRIMARY KEY, person_id {int}, value TEXT);
CREATE INDEX membership_person_id ON membership (person_id);
CREATE UNIQUE INDEX membership_person_value ON membership (person_id, value);
";

/// ann@ three times (1, 3, 4), bob@ twice (2, 5), cy@ twice with equal ages (8, 9), and two rows
/// without an email (6, 7: NULL equals nothing). Memberships: 3 and 4 (duplicates of ann) and 5
/// (of bob) have one each, in different orgs.
const ROWS: &str = "
INSERT INTO person VALUES (1, 'ann@example.com', 30), (2, 'bob@example.com', 10), (3, 'ann@example.com', 20),
  (4, 'ann@example.com', 10), (5, 'bob@example.com', 40), (6, NULL, 50), (7, NULL, 50),
  (8, 'cy@example.com', 60), (9, 'cy@example.com', 60);
INSERT INTO membership VALUES (100, 3, 'x'), (101, 4, 'y'), (102, 5, 'x'), (103, 2, 'y');
";

fn schema(int: &str, rows: &str) -> String {
    format!("{}{rows}", SCHEMA.replace("{int}", int))
}

fn remove(url: &str, args: &[&str]) -> Value {
    let dir = project(&[("cascades/people.toml", CONFIG)]);
    let mut command = cascade(dir.path());
    command.args(["--database-url", url, "duplicates", "person", "--by", "email", "--confirm", "--sleep-ms", "0"]);
    json_output(command.args(["--batch-size", "50", "--format", "json"]).args(args))
}

fn people(url: &str) -> Vec<String> {
    texts(url, "SELECT CAST(p.id AS TEXT) FROM person p ORDER BY p.id")
        .into_iter()
        .map(|r| r[0].clone().unwrap())
        .collect()
}

/// (membership id, person id).
fn memberships(url: &str) -> Vec<(String, String)> {
    texts(url, "SELECT CAST(m.id AS TEXT), CAST(m.person_id AS TEXT) FROM membership m ORDER BY m.id")
        .into_iter()
        .map(|row| (row[0].clone().unwrap(), row[1].clone().unwrap()))
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

/// Runs `statement` through the library; the database's complaint when it fails.
fn execute(url: &str, statement: &str) -> Result<(), String> {
    common::block_on(async {
        let database = cascade::db::Database::connect(url, cascade::db::Access::ReadWrite).await.unwrap();
        let statement = cascade::db::Statement { sql: statement.to_owned(), params: Vec::new() };
        let result = database.execute(&statement).await.map(drop).map_err(|error| error.to_string());
        database.close().await;
        result
    })
}

fn keep_oldest_deletes_the_duplicates_with_their_children(url: &str) {
    // One batch holds them all, and is shorter than asked for: the run is done, not stopped by
    // `--max-batches`.
    let removed = remove(url, &["--order-by", "created_at", "--max-batches", "1"]);
    assert_eq!(removed["deleted"], json!({"membership": 2, "person": 4}), "{removed:#}");
    assert_eq!((&removed["outcome"], &removed["stopped_early"]), (&json!("succeeded"), &Value::Null));
    assert_eq!(texts(url, "SELECT name FROM cascade_checkpoint"), Vec::<Vec<Option<String>>>::new());
    // ann keeps 4 (created 10), bob keeps 2 (10), cy keeps 8 (a tie: the lowest key).
    assert_eq!(people(url), strings(&["2", "4", "6", "7", "8"]));
    assert_eq!(memberships(url), pairs(&[("101", "4"), ("103", "2")]));
    assert_eq!(removed["after"]["groups"], 0);
    let statement = removed["after"]["unique_index"]["statement"].as_str().unwrap();
    execute(url, statement).unwrap();
    assert!(execute(url, "INSERT INTO person VALUES (10, 'ann@example.com', 70)").is_err(), "they cannot come back");
    let runs = texts(url, "SELECT command, outcome FROM cascade_run");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0][0].as_deref().unwrap().contains("duplicates person"), "{runs:?}");
}

on_each_database!(
    keep_oldest_deletes_the_duplicates_with_their_children_on_sqlite("INTEGER"),
    keep_oldest_deletes_the_duplicates_with_their_children_on_postgres("bigint"),
    keep_oldest_deletes_the_duplicates_with_their_children_on_mariadb("bigint"),
    |databases, int| {
        keep_oldest_deletes_the_duplicates_with_their_children(&databases.create_keyable(&schema(int, ROWS)));
    }
);

/// While a duplicates clean-up of the same model is recorded as running on another host
/// (heartbeat fresh), by other columns and keeping the newest, another is refused before it
/// writes anything (exit code 1), naming that run and its process: each could remove the row the
/// other keeps, and whole groups went. Nothing is removed and no run is recorded.
fn a_duplicates_run_of_the_same_model_elsewhere_is_refused(url: &str) {
    common::create_tool_tables(url);
    texts(
        url,
        "INSERT INTO cascade_run (actor, command, root_model, root_ids, outcome, heartbeat, host, pid) \
         VALUES ('ops', 'cascade duplicates person --by email,created_at --keep newest --confirm', 'person', \
         '[\"person by email,created_at\"]', 'running', CURRENT_TIMESTAMP, 'db-cleaner-2', 4242)",
    );
    let (people_before, runs_before) = (people(url), count(url, "SELECT COUNT(*) FROM cascade_run"));
    let dir = project(&[("cascades/people.toml", CONFIG)]);
    let output = cascade(dir.path())
        .args(["--database-url", url, "duplicates", "person", "--by", "email", "--confirm", "--sleep-ms", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("a run on the same rows is already running (run 1, by ops since "), "{stderr}");
    assert!(stderr.contains("process 4242 on db-cleaner-2)"), "{stderr}");
    assert_eq!(people_before.len(), 9, "the duplicates are all there");
    assert_eq!((people(url), count(url, "SELECT COUNT(*) FROM cascade_run")), (people_before.clone(), runs_before));
    // An orphans clean-up of several models records them together: it counts for each.
    texts(
        url,
        "UPDATE cascade_run SET root_model = 'membership, person', command = 'cascade orphans --delete --confirm'",
    );
    let output = cascade(dir.path())
        .args(["--database-url", url, "duplicates", "person", "--by", "email", "--confirm", "--sleep-ms", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(people(url), people_before);
}

on_each_database!(
    a_duplicates_run_of_the_same_model_elsewhere_is_refused_on_sqlite("INTEGER"),
    a_duplicates_run_of_the_same_model_elsewhere_is_refused_on_postgres("bigint"),
    a_duplicates_run_of_the_same_model_elsewhere_is_refused_on_mariadb("bigint"),
    |databases, int| {
        a_duplicates_run_of_the_same_model_elsewhere_is_refused(&databases.create_keyable(&schema(int, ROWS)));
    }
);

fn keep_newest_merges_the_children_into_the_kept_row(url: &str) {
    let removed = remove(url, &["--keep", "newest", "--order-by", "created_at", "--merge"]);
    assert_eq!(removed["deleted"]["person"], 4, "{removed:#}");
    assert_eq!(removed["deleted"]["membership"].as_u64().unwrap_or(0), 0, "merged, not deleted: {removed:#}");
    assert_eq!(removed["re_pointed"], json!({"membership": 3}), "100, 101 and 103 moved: {removed:#}");
    // ann keeps 1 (created 30), bob keeps 5 (40), cy keeps 9 (a tie: the highest key).
    assert_eq!(people(url), strings(&["1", "5", "6", "7", "9"]));
    assert_eq!(memberships(url), pairs(&[("100", "1"), ("101", "1"), ("102", "5"), ("103", "5")]));
}

on_each_database!(
    keep_newest_merges_the_children_into_the_kept_row_on_sqlite("INTEGER"),
    keep_newest_merges_the_children_into_the_kept_row_on_postgres("bigint"),
    keep_newest_merges_the_children_into_the_kept_row_on_mariadb("bigint"),
    |databases, int| {
        keep_newest_merges_the_children_into_the_kept_row(&databases.create_keyable(&schema(int, ROWS)));
    }
);

/// The children's column is TEXT under the INTEGER key (it holds `'3'`): they are re-pointed all
/// the same, not deleted with the duplicates they still point at.
#[test]
fn keep_newest_merges_children_held_as_text_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let schema = schema("INTEGER", ROWS).replace("person_id INTEGER", "person_id TEXT");
    let url = sqlite_database(dir.path(), &schema);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM membership WHERE typeof(person_id) = 'text'"), 4);
    keep_newest_merges_the_children_into_the_kept_row(&url);
}

/// A merge whose deletion would then be refused (a child column without a type holding `'3'`,
/// which SQLite's `=` takes for person 3 but no lookup by key finds) changes nothing: it does not
/// re-point the children and commit before the deletion is refused, half-merged.
#[test]
fn a_merge_refused_before_its_deletion_re_points_nothing_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let schema = schema("INTEGER", ROWS).replace("person_id INTEGER", "person_id").replace("(100, 3,", "(100, '3',");
    let url = sqlite_database(dir.path(), &schema);
    let before = (people(&url), memberships(&url));
    let config = project(&[("cascades/people.toml", CONFIG)]);
    let output = cascade(config.path())
        .args(["--database-url", &url, "duplicates", "person", "--by", "email", "--confirm", "--merge"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`membership.person_id` holds '3', which SQLite takes for"), "{stderr}");
    assert_eq!((people(&url), memberships(&url)), before, "nothing re-pointed, nothing removed");
}

/// A uuid key: the merge's (duplicate, kept) pairs are cast to the key's own type on PostgreSQL,
/// and on SQLite a text key that reads as a number (`007`) stays the text it is.
fn a_merge_re_points_keys_of_their_own_type(url: &str, [ann, bob]: [&str; 2]) {
    let removed = remove(url, &["--keep", "oldest", "--order-by", "created_at", "--merge"]);
    assert_eq!(removed["deleted"]["person"], 1, "{removed:#}");
    assert_eq!(people(url), strings(&[ann, bob]));
    assert_eq!(memberships(url), pairs(&[("100", ann), ("101", bob)]));
}

#[test]
fn a_merge_re_points_uuid_keys_on_postgres() {
    let schema = "
CREATE TABLE person (id uuid PRIMARY KEY, email TEXT, created_at bigint);
CREATE TABLE membership (id bigint PRIMARY KEY, person_id uuid, value TEXT);
INSERT INTO person VALUES ('00000000-0000-0000-0000-00000000000a', 'ann@example.com', 1),
  ('00000000-0000-0000-0000-00000000000b', 'ann@example.com', 2), ('00000000-0000-0000-0000-00000000000c', 'bob@example.com', 3);
INSERT INTO membership VALUES (100, '00000000-0000-0000-0000-00000000000b', 'x'), (101, '00000000-0000-0000-0000-00000000000c', 'y');
";
    let Some(url) = postgres_database(schema) else { return };
    let keys = ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000c"];
    a_merge_re_points_keys_of_their_own_type(&url, keys);
}

#[test]
fn a_merge_re_points_numeric_looking_text_keys_on_sqlite() {
    // Untyped key columns: the values are stored as inserted, the text '007' beside the integer 7.
    let schema = "
CREATE TABLE person (id PRIMARY KEY, email TEXT, created_at INTEGER);
CREATE TABLE membership (id INTEGER PRIMARY KEY, person_id, value TEXT);
INSERT INTO person VALUES ('007', 'ann@example.com', 1), (7, 'ann@example.com', 2), ('bob', 'bob@example.com', 3);
INSERT INTO membership VALUES (100, 7, 'x'), (101, 'bob', 'y');
";
    let dir = tempfile::tempdir().unwrap();
    a_merge_re_points_keys_of_their_own_type(&sqlite_database(dir.path(), schema), ["007", "bob"]);
}

/// Person 3 and its kept row 1 are both members of org `x`: merging would make two memberships
/// (1, x). The error names the constraint and the rows, and nothing of the group changed.
fn a_merge_that_breaks_a_unique_constraint_is_refused(url: &str) {
    execute(url, "INSERT INTO membership VALUES (104, 1, 'x')").unwrap();
    let before = common::dump(url);
    let dir = project(&[("cascades/people.toml", CONFIG)]);
    let output = cascade(dir.path())
        .args(["--database-url", url, "duplicates", "person", "--by", "email", "--confirm", "--merge"])
        .args(["--keep", "newest", "--order-by", "created_at", "--sleep-ms", "0"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    assert!(stderr.contains("merging the duplicates 3, 4 of `person` into 1"), "{stderr}");
    assert!(stderr.contains("membership"), "{stderr}");
    assert!(stderr.contains("the clean-up stopped: the batches before this one stay done"), "{stderr}");
    let constraint = if url.starts_with("sqlite:") {
        "unique constraint on membership.person_id, membership.value"
    } else {
        "unique constraint `membership_person_value`"
    };
    assert!(stderr.contains(constraint), "{stderr}");
    let after = common::dump(url);
    for table in ["person", "membership"] {
        assert_eq!(before[table], after[table], "{table} is unchanged");
    }
    let outcome = texts(url, "SELECT outcome, error FROM cascade_run");
    assert_eq!(outcome[0][0].as_deref(), Some("failed"), "{outcome:?}");
}

on_each_database!(
    a_merge_that_breaks_a_unique_constraint_is_refused_on_sqlite("INTEGER"),
    a_merge_that_breaks_a_unique_constraint_is_refused_on_postgres("bigint"),
    a_merge_that_breaks_a_unique_constraint_is_refused_on_mariadb("bigint"),
    |databases, int| {
        a_merge_that_breaks_a_unique_constraint_is_refused(&databases.create_keyable(&schema(int, ROWS)));
    }
);

/// Random people (a few emails, some NULL, ages with ties) and memberships; the survivors of
/// keep oldest and keep newest, and where the memberships of merged rows went, against a model
/// computed here: per email, the kept row is the first by (age, NULL last; then key) ascending
/// or descending.
fn random_tables_match_the_model(url_for: impl Fn(&str) -> String) {
    for seed in 1..=4 {
        let mut random = Random::seeded(seed);
        let mut generated: BTreeMap<u64, (Option<u64>, Option<u64>)> = BTreeMap::new();
        let mut rows = Vec::new();
        for id in 1..=300 {
            let email = random.chance(90).then(|| random.below(40));
            let age = random.chance(95).then(|| random.below(20));
            generated.insert(id, (email, age));
            let show = |value: Option<u64>, text: bool| match (value, text) {
                (None, _) => "NULL".to_owned(),
                (Some(v), true) => format!("'p{v}@example.com'"),
                (Some(v), false) => v.to_string(),
            };
            rows.push(format!("({id}, {}, {})", show(email, true), show(age, false)));
        }
        let members: Vec<String> =
            (1..=300).filter(|id| id % 3 == 0).map(|id| format!("({id}, {id}, 'o{id}')")).collect();
        let sql = format!(
            "INSERT INTO person VALUES {};\nINSERT INTO membership VALUES {};\n",
            rows.join(", "),
            members.join(", ")
        );
        for (keep, merge) in [("oldest", false), ("newest", true)] {
            let url = url_for(&sql);
            let newest = keep == "newest";
            let mut kept: BTreeMap<u64, u64> = BTreeMap::new();
            for (id, (email, age)) in &generated {
                let Some(email) = email else { continue };
                let rank = |id: u64, age: Option<u64>| {
                    (
                        age.is_none(),
                        if newest { u64::MAX - age.unwrap_or(0) } else { age.unwrap_or(0) },
                        if newest { u64::MAX - id } else { id },
                    )
                };
                let best = kept.entry(*email).or_insert(*id);
                if rank(*id, *age) < rank(*best, generated[best].1) {
                    *best = *id;
                }
            }
            let survivors: Vec<String> = generated
                .iter()
                .filter(|(id, (email, _))| email.is_none_or(|email| kept[&email] == **id))
                .map(|(id, _)| id.to_string())
                .collect();
            let mut args = vec!["--keep", keep, "--order-by", "created_at"];
            if merge {
                args.push("--merge");
            }
            let removed = remove(&url, &args);
            assert_eq!(people(&url), survivors, "seed {seed}, keep {keep}: {removed:#}");
            let expected_members: Vec<(String, String)> = (1..=300u64)
                .filter(|id| id % 3 == 0)
                .filter_map(|id| {
                    let owner = match generated[&id].0 {
                        Some(email) if merge => kept[&email],
                        Some(email) if kept[&email] != id => return None,
                        _ => id,
                    };
                    Some((id.to_string(), owner.to_string()))
                })
                .collect();
            assert_eq!(memberships(&url), expected_members, "seed {seed}, keep {keep}");
            assert_eq!(count(&url, "SELECT COUNT(*) FROM cascade_checkpoint"), 0);
        }
    }
}

on_each_database!(
    random_tables_match_the_model_on_sqlite("INTEGER"),
    random_tables_match_the_model_on_postgres("bigint"),
    random_tables_match_the_model_on_mariadb("bigint"),
    |databases, int| {
        random_tables_match_the_model(|rows| databases.create_keyable(&schema(int, rows)));
    }
);

/// A duplicate whose status does not allow a deletion is left with its children: --merge does
/// not move them off a row that stays.
fn a_duplicate_kept_by_its_status_keeps_its_children(url: &str) {
    let config = CONFIG.replace(
        "table = \"person\"\n",
        "table = \"person\"\nstatus = { column = \"state\", proceed = [0], in_progress = 1 }\n",
    );
    let dir = project(&[("cascades/people.toml", &config)]);
    let mut command = cascade(dir.path());
    command.args(["--database-url", url, "duplicates", "person", "--by", "email", "--confirm", "--merge"]);
    let removed = json_output(command.args(["--sleep-ms", "0", "--format", "json"]));
    assert_eq!(removed["deleted"]["person"], 1, "{removed:#}");
    assert_eq!(people(url), strings(&["1", "2"]));
    assert_eq!(memberships(url), pairs(&[("10", "2"), ("11", "1")]));
}

const STATUS_ROWS: &str = "
ALTER TABLE person ADD COLUMN state {int} NOT NULL DEFAULT 0;
INSERT INTO person VALUES (1, 'a@x', 10, 0), (2, 'a@x', 20, 5), (3, 'a@x', 30, 0);
INSERT INTO membership VALUES (10, 2, 'o'), (11, 3, 'o');
";

on_each_database!(
    a_duplicate_kept_by_its_status_keeps_its_children_on_sqlite("INTEGER"),
    a_duplicate_kept_by_its_status_keeps_its_children_on_postgres("bigint"),
    a_duplicate_kept_by_its_status_keeps_its_children_on_mariadb("bigint"),
    |databases, int| {
        let url = databases.create_keyable(&schema(int, &STATUS_ROWS.replace("{int}", int)));
        a_duplicate_kept_by_its_status_keeps_its_children(&url);
    }
);

/// The transaction that re-points a batch's children (`--merge`) is one of the run's: a trigger
/// makes it take at least 300 ms, and the longest transaction reported is at least that.
#[test]
fn a_merge_counts_as_a_transaction_of_its_batch_on_postgres() {
    let slow_merge = "CREATE FUNCTION slow_merge() RETURNS trigger LANGUAGE plpgsql AS \
                      $$ BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END $$;
                      CREATE TRIGGER slow_merge AFTER UPDATE ON membership FOR EACH STATEMENT \
                      EXECUTE FUNCTION slow_merge();";
    let Some(url) = postgres_database(&(schema("bigint", ROWS) + slow_merge)) else { return };
    let removed = remove(&url, &["--keep", "newest", "--order-by", "created_at", "--merge"]);
    assert_eq!(memberships(&url), pairs(&[("100", "1"), ("101", "1"), ("102", "5"), ("103", "5")]));
    let longest = removed["max_transaction_ms"].as_f64().unwrap();
    assert!(longest >= 300.0, "the merge's transaction is counted: {removed:#}");
}
