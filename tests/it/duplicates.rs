//! `cascade duplicates`: groups of equal rows on SQLite and PostgreSQL, planted at known keys and
//! generated at random (checked against a model computed here), which row each group keeps, the
//! unique index that stops them (its statement fails on the duplicates and succeeds once they are
//! gone), existing unique indexes recognised, and a database the report leaves untouched.

use crate::common;

use std::collections::BTreeMap;

use common::random::Random;
use common::{block_on, cascade, json_output, on_each_database, postgres_database, project, sqlite_database};
use serde_json::{Value, json};

const CONFIG: &str = "[models.person]\ntable = \"person\"\n";

const SCHEMA: &str = "CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT, org_id INTEGER, created_at INTEGER);\n";

/// ann@ three times (ids 1, 3, 4; one of them in org 2), bob@ twice (2, 5), cy@ once with
/// another row whose email is NULL like two more: NULL equals nothing.
const ROWS: &str = "INSERT INTO person VALUES
    (1, 'ann@example.com', 1, 30),
    (2, 'bob@example.com', 1, 10),
    (3, 'ann@example.com', 1, 20),
    (4, 'ann@example.com', 2, 10),
    (5, 'bob@example.com', 1, 40),
    (6, NULL, 1, 50),
    (7, NULL, 1, 50),
    (8, 'cy@example.com', NULL, 60),
    (9, 'cy@example.com', NULL, 60);\n";

fn planted() -> String {
    format!("{SCHEMA}{ROWS}")
}

/// `duplicates ARGS --format json` against `url`.
fn report(url: &str, args: &[&str]) -> Value {
    let dir = project(&[("cascades/people.toml", CONFIG)]);
    json_output(cascade(dir.path()).args(["--database-url", url, "duplicates"]).args(args).args(["--format", "json"]))
}

/// Each sample group as (values, rows, kept, removed).
fn groups(report: &Value) -> Vec<(Vec<String>, u64, String, Vec<String>)> {
    let texts = |value: &Value| -> Vec<String> {
        match value {
            Value::Array(items) => items.iter().map(|item| item.as_str().unwrap().to_owned()).collect(),
            Value::Object(fields) => fields.values().map(|item| item.as_str().unwrap().to_owned()).collect(),
            other => panic!("not a list: {other}"),
        }
    };
    report["sample"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| {
            (
                texts(&group["values"]),
                group["rows"].as_u64().unwrap(),
                group["kept"].as_str().unwrap().to_owned(),
                texts(&group["removed"]),
            )
        })
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| item.to_string()).collect()
}

fn planted_duplicates_are_counted_and_kept_as_asked(url: String) {
    let found = report(&url, &["person", "--by", "email"]);
    assert_eq!(
        (found["groups"].as_u64(), found["rows"].as_u64(), found["removable"].as_u64()),
        (Some(3), Some(7), Some(4))
    );
    assert_eq!(found["null_rows"], 2, "ids 6 and 7 have no email, and are no group although both are NULL");
    assert_eq!(found["keep"], "oldest");
    assert_eq!(found["order_by"], json!(["id"]));
    assert_eq!(
        groups(&found),
        [
            (strings(&["ann@example.com"]), 3, "1".to_owned(), strings(&["3", "4"])),
            (strings(&["bob@example.com"]), 2, "2".to_owned(), strings(&["5"])),
            (strings(&["cy@example.com"]), 2, "8".to_owned(), strings(&["9"])),
        ],
        "the largest group first, then by value; the lowest key kept"
    );

    let kept = |args: &[&str]| -> Vec<(String, Vec<String>)> {
        let mut all = vec!["person", "--by", "email"];
        all.extend_from_slice(args);
        groups(&report(&url, &all)).into_iter().map(|(_, _, kept, removed)| (kept, removed)).collect()
    };
    let pairs = |expected: &[(&str, &[&str])]| -> Vec<(String, Vec<String>)> {
        expected.iter().map(|(kept, removed)| (kept.to_string(), strings(removed))).collect()
    };
    assert_eq!(kept(&["--keep", "newest"]), pairs(&[("4", &["3", "1"]), ("5", &["2"]), ("9", &["8"])]));
    // By created_at: ann@ 30 (1), 20 (3), 10 (4); bob@ 10 (2), 40 (5); cy@ 60 and 60, a tie.
    assert_eq!(kept(&["--order-by", "created_at"]), pairs(&[("4", &["3", "1"]), ("2", &["5"]), ("8", &["9"])]));
    assert_eq!(
        kept(&["--order-by", "created_at", "--keep", "newest"]),
        pairs(&[("1", &["3", "4"]), ("5", &["2"]), ("9", &["8"])]),
        "a tie goes to the highest key when keeping the newest"
    );

    // On two columns: ann@ in org 1 twice (1, 3), bob@ in org 1 twice; cy@'s org is NULL.
    let found = report(&url, &["person", "--by", "email,org_id"]);
    assert_eq!(
        (found["groups"].as_u64(), found["removable"].as_u64(), found["null_rows"].as_u64()),
        (Some(2), Some(2), Some(4))
    );
    assert_eq!(
        groups(&found),
        [
            (strings(&["ann@example.com", "1"]), 2, "1".to_owned(), strings(&["3"])),
            (strings(&["bob@example.com", "1"]), 2, "2".to_owned(), strings(&["5"])),
        ]
    );
    assert_eq!(found["sample"][0]["values"], json!({"email": "ann@example.com", "org_id": "1"}));
    // Spaces around the names, as a shell list is often written, are dropped.
    assert_eq!(report(&url, &["person", "--by", "email, org_id"])["groups"], found["groups"]);

    let few = report(&url, &["person", "--by", "email", "--sample", "1"]);
    assert_eq!((few["groups"].as_u64(), groups(&few).len()), (Some(3), 1), "the counts cover every group");
    assert_eq!(report(&url, &["person", "--by", "email", "--sample", "0"])["sample"], json!([]));
}

on_each_database!(
    planted_duplicates_are_counted_and_kept_as_asked_on_sqlite,
    planted_duplicates_are_counted_and_kept_as_asked_on_postgres,
    planted_duplicates_are_counted_and_kept_as_asked_on_mariadb,
    |databases| {
        planted_duplicates_are_counted_and_kept_as_asked(databases.create_keyable(&planted()));
    }
);

/// Runs one statement through the library; the database's complaint when it fails.
fn execute(url: &str, sql: &str) -> Result<(), String> {
    block_on(async {
        let database = cascade::db::Database::connect(url, cascade::db::Access::ReadWrite).await.unwrap();
        let statement = cascade::db::Statement { sql: sql.to_owned(), params: Vec::new() };
        let result = database.execute(&statement).await.map(drop).map_err(|error| error.to_string());
        database.close().await;
        result
    })
}

fn the_printed_index_fails_on_duplicates_and_holds_once_they_are_removed(
    url: String,
    statement: &str,
    leaves_invalid: bool,
) {
    let found = report(&url, &["person", "--by", "email"]);
    let index = &found["unique_index"];
    assert_eq!(index["exists"], false);
    assert_eq!(index["name"], "person_email_key");
    assert_eq!(index["statement"], statement);
    let statement = index["statement"].as_str().unwrap();
    let refused = execute(&url, statement).unwrap_err();
    assert!(["unique", "UNIQUE", "Duplicate entry"].iter().any(|says| refused.contains(says)), "{refused}");

    // A failed concurrent build (PostgreSQL) leaves an INVALID index behind: it is named, and
    // the statement keeps its name, to be run once it is dropped.
    let again = report(&url, &["person", "--by", "email"]);
    let invalid = again["unique_index"]["invalid"].as_array().unwrap().clone();
    let expected: &[&str] = if leaves_invalid { &["person_email_key"] } else { &[] };
    assert_eq!(invalid, expected);
    assert_eq!(again["unique_index"]["statement"], statement);
    if leaves_invalid {
        let dir = project(&[("cascades/people.toml", CONFIG)]);
        cascade(dir.path())
            .args(["--database-url", &url, "duplicates", "person", "--by", "email"])
            .assert()
            .success()
            .stdout(predicates::str::contains("note: unique index `person_email_key` on email is INVALID"));
    }
    for name in &invalid {
        execute(&url, &format!("DROP INDEX \"{}\"", name.as_str().unwrap())).unwrap();
    }

    let removed: Vec<String> = groups(&again).into_iter().flat_map(|(_, _, _, removed)| removed).collect();
    assert_eq!(removed, ["3", "4", "5", "9"]);
    execute(&url, &format!("DELETE FROM person WHERE id IN ({})", removed.join(", "))).unwrap();
    execute(&url, statement).unwrap();

    let after = report(&url, &["person", "--by", "email"]);
    assert_eq!((after["groups"].as_u64(), after["removable"].as_u64()), (Some(0), Some(0)));
    assert_eq!(
        after["unique_index"],
        json!({"exists": true, "kind": "unique_index", "name": "person_email_key", "columns": ["email"],
               "statement": null, "invalid": []})
    );
    assert!(
        execute(&url, "INSERT INTO person VALUES (10, 'ann@example.com', 1, 70)").is_err(),
        "they cannot come back"
    );
    assert!(execute(&url, "INSERT INTO person VALUES (11, NULL, 1, 70)").is_ok(), "NULL equals nothing");
}

on_each_database!(
    the_printed_index_fails_on_duplicates_and_holds_once_they_are_removed_on_sqlite(
        r#"CREATE UNIQUE INDEX "person_email_key" ON "person" ("email");"#,
        false
    ),
    the_printed_index_fails_on_duplicates_and_holds_once_they_are_removed_on_postgres(
        r#"CREATE UNIQUE INDEX CONCURRENTLY "person_email_key" ON "public"."person" ("email");"#,
        true
    ),
    the_printed_index_fails_on_duplicates_and_holds_once_they_are_removed_on_mariadb(
        "CREATE UNIQUE INDEX `person_email_key` ON `person` (`email`);",
        false
    ),
    |databases, statement, leaves_invalid| {
        the_printed_index_fails_on_duplicates_and_holds_once_they_are_removed(
            databases.create_keyable(&planted()),
            statement,
            leaves_invalid,
        );
    }
);

/// Unique indexes, constraints and the primary key count when they cover exactly the columns
/// or some of them; partial and expression indexes do not (on MariaDB, which has neither,
/// indexes of a column's first characters). A name in use gets a number.
fn existing_uniqueness_is_recognised(url: String) {
    let index = |by: &str| report(&url, &["person", "--by", by])["unique_index"].clone();
    let primary = index("id");
    assert_eq!((primary["exists"].as_bool(), primary["kind"].as_str()), (Some(true), Some("primary_key")));
    assert_eq!(primary["statement"], Value::Null);

    let on_both = index("email,org_id");
    assert_eq!((on_both["exists"].as_bool(), on_both["name"].as_str()), (Some(true), Some("person_pair")));
    let reversed = index("org_id,email");
    assert_eq!(reversed["name"], "person_pair", "the order of the columns does not matter to uniqueness");

    let stronger = report(&url, &["person", "--by", "org_id,nickname,email"]);
    assert_eq!(stronger["unique_index"]["name"], "person_pair", "unique on some of the columns is unique on all");
    assert_eq!(stronger["unique_index"]["columns"], json!(["email", "org_id"]));

    let partial = index("nickname");
    assert_eq!(partial["exists"], false, "a partial unique index leaves other rows free: {partial}");
    assert_eq!(partial["name"], "person_nickname_key1", "person_nickname_key is taken");
    let expression = index("email");
    assert_eq!(expression["exists"], false, "lower(email) is not email: {expression}");
}

const UNIQUE_SCHEMA: &str = "
CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT, org_id INTEGER, nickname TEXT);
CREATE UNIQUE INDEX person_pair ON person (email, org_id);
CREATE UNIQUE INDEX person_nickname_key ON person (nickname) WHERE org_id = 1;
CREATE UNIQUE INDEX person_email_lower ON person (lower(email));
";

/// [`UNIQUE_SCHEMA`] on MariaDB: unique on the first characters of a column instead of the
/// partial and the expression index.
const UNIQUE_PREFIX_SCHEMA: &str = "
CREATE TABLE person (id INTEGER PRIMARY KEY, email varchar(255), org_id INTEGER, nickname varchar(255));
CREATE UNIQUE INDEX person_pair ON person (email, org_id);
CREATE UNIQUE INDEX person_nickname_key ON person (nickname(3));
CREATE UNIQUE INDEX person_email_lower ON person (email(4));
";

on_each_database!(
    existing_uniqueness_is_recognised_on_sqlite,
    existing_uniqueness_is_recognised_on_postgres,
    existing_uniqueness_is_recognised_on_mariadb,
    |databases| {
        let schema = if databases.is_mysql() { UNIQUE_PREFIX_SCHEMA } else { UNIQUE_SCHEMA };
        existing_uniqueness_is_recognised(databases.create(schema));
    }
);

#[test]
fn a_unique_constraint_is_recognised_on_postgres() {
    let schema =
        "CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT, CONSTRAINT person_email_unique UNIQUE (email));";
    let Some(url) = postgres_database(schema) else { return };
    let index = report(&url, &["person", "--by", "email"])["unique_index"].clone();
    assert_eq!((index["exists"].as_bool(), index["name"].as_str()), (Some(true), Some("person_email_unique")));
}

fn the_report_changes_nothing(url: String) {
    let before = common::dump(&url);
    for args in [
        &["person", "--by", "email"][..],
        &["person", "--by", "email,org_id", "--keep", "newest", "--order-by", "created_at"],
    ] {
        report(&url, args);
        let dir = project(&[("cascades/people.toml", CONFIG)]);
        cascade(dir.path()).args(["--database-url", &url, "duplicates"]).args(args).assert().success();
    }
    assert_eq!(common::dump(&url), before, "no row changed and no table (the tool's own included) was created");
}

#[test]
fn the_report_changes_nothing_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &planted());
    let file = std::fs::read(url.trim_start_matches("sqlite://")).unwrap();
    the_report_changes_nothing(url.clone());
    assert!(std::fs::read(url.trim_start_matches("sqlite://")).unwrap() == file, "the file is byte for byte the same");
}

#[test]
fn the_report_changes_nothing_on_postgres() {
    let Some(url) = postgres_database(&planted()) else { return };
    the_report_changes_nothing(url);
}

/// A generated row: a key, two grouping columns and an age, each of them sometimes NULL.
struct Row {
    id: i64,
    a: Option<i64>,
    b: Option<i64>,
    age: Option<i64>,
}

fn random_rows(seed: u64) -> Vec<Row> {
    let mut random = Random::seeded(seed);
    let maybe = |random: &mut Random, below: u64| (!random.chance(10)).then(|| random.below(below) as i64);
    // Keys out of order, with gaps, so that "lowest key" is not "inserted first".
    let mut ids: Vec<i64> = (1..=300).map(|n| n * 7 % 1009).collect();
    for index in (1..ids.len()).rev() {
        ids.swap(index, random.below(index as u64 + 1) as usize);
    }
    ids.into_iter()
        .map(|id| Row { id, a: maybe(&mut random, 8), b: maybe(&mut random, 3), age: maybe(&mut random, 12) })
        .collect()
}

fn random_schema(rows: &[Row]) -> String {
    let value = |value: Option<i64>| value.map_or_else(|| "NULL".to_owned(), |v| v.to_string());
    let values: Vec<String> =
        rows.iter().map(|r| format!("({}, {}, {}, {})", r.id, value(r.a), value(r.b), value(r.age))).collect();
    format!(
        "CREATE TABLE person (id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, age INTEGER);\nINSERT INTO person VALUES {};\n",
        values.join(", ")
    )
}

/// The groups this test expects, computed without SQL: per (a, b), the keys in the order that
/// keeps the first, the largest group first, then by value.
fn model(rows: &[Row], newest: bool, by_age: bool) -> Vec<((i64, i64), Vec<i64>)> {
    let mut groups: BTreeMap<(i64, i64), Vec<&Row>> = BTreeMap::new();
    for row in rows {
        if let (Some(a), Some(b)) = (row.a, row.b) {
            groups.entry((a, b)).or_default().push(row);
        }
    }
    let mut groups: Vec<((i64, i64), Vec<i64>)> = groups
        .into_iter()
        .filter(|(_, rows)| rows.len() > 1)
        .map(|(values, mut rows)| {
            rows.sort_by(|x, y| {
                let order = if by_age {
                    // NULL ages last, whichever the direction.
                    match (x.age, y.age) {
                        (Some(p), Some(q)) => {
                            if newest {
                                q.cmp(&p)
                            } else {
                                p.cmp(&q)
                            }
                        }
                        (p, q) => p.is_none().cmp(&q.is_none()),
                    }
                } else {
                    std::cmp::Ordering::Equal
                };
                order.then(if newest { y.id.cmp(&x.id) } else { x.id.cmp(&y.id) })
            });
            (values, rows.iter().map(|row| row.id).collect())
        })
        .collect();
    groups.sort_by(|(x, xs), (y, ys)| ys.len().cmp(&xs.len()).then(x.cmp(y)));
    groups
}

/// A group as the model and the report both give it: values (a, b), rows, kept key, removed keys.
type ModelGroup = ((i64, i64), u64, i64, Vec<i64>);

fn a_random_table_matches_the_model(url: &str, rows: &[Row]) {
    for (keep, by_age) in [("oldest", false), ("newest", false), ("oldest", true), ("newest", true)] {
        let mut args = vec!["person", "--by", "a,b", "--keep", keep, "--sample", "1000"];
        if by_age {
            args.extend(["--order-by", "age"]);
        }
        let found = report(url, &args);
        let expected = model(rows, keep == "newest", by_age);
        let in_groups: usize = expected.iter().map(|(_, keys)| keys.len()).sum();
        let with_null = rows.iter().filter(|r| r.a.is_none() || r.b.is_none()).count();
        assert_eq!(found["groups"].as_u64(), Some(expected.len() as u64), "{args:?}");
        assert_eq!(found["rows"].as_u64(), Some(in_groups as u64), "{args:?}");
        assert_eq!(found["removable"].as_u64(), Some((in_groups - expected.len()) as u64), "{args:?}");
        assert_eq!(found["null_rows"].as_u64(), Some(with_null as u64), "{args:?}");
        let sample: Vec<ModelGroup> = groups(&found)
            .into_iter()
            .map(|(values, rows, kept, removed)| {
                let values = (values[0].parse().unwrap(), values[1].parse().unwrap());
                (values, rows, kept.parse().unwrap(), removed.iter().map(|key| key.parse().unwrap()).collect())
            })
            .collect();
        let expected: Vec<ModelGroup> = expected
            .into_iter()
            .map(|(values, keys)| (values, keys.len() as u64, keys[0], keys[1..].iter().take(10).copied().collect()))
            .collect();
        assert_eq!(sample, expected, "{args:?}");
    }
}

const SEEDS: [u64; 3] = [1, 2, 3];

on_each_database!(
    a_random_table_matches_the_model_on_sqlite,
    a_random_table_matches_the_model_on_postgres,
    a_random_table_matches_the_model_on_mariadb,
    |databases| {
        for seed in SEEDS {
            let rows = random_rows(seed);
            a_random_table_matches_the_model(&databases.create(&random_schema(&rows)), &rows);
        }
    }
);

#[test]
fn a_composite_key_names_rows_as_json_arrays() {
    let schema = "CREATE TABLE membership (team INTEGER NOT NULL, member INTEGER NOT NULL, role TEXT,
                  PRIMARY KEY (team, member));
                  INSERT INTO membership VALUES (1, 1, 'owner'), (1, 2, 'owner'), (2, 1, 'owner'), (2, 2, 'guest');";
    let config = "[models.membership]\ntable = \"membership\"\nstrategy = \"bulk\"\nkey = [\"team\", \"member\"]\n";
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), schema);
    let project = project(&[("cascades/c.toml", config)]);
    let found = json_output(cascade(project.path()).args([
        "--database-url",
        &url,
        "duplicates",
        "membership",
        "--by",
        "role",
        "--format",
        "json",
    ]));
    assert_eq!(groups(&found), [(strings(&["owner"]), 3, "[1,1]".to_owned(), strings(&["[1,2]", "[2,1]"]))]);
}

#[test]
fn unknown_names_are_usage_errors_with_the_nearest_name() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &planted());
    let project = project(&[("cascades/people.toml", CONFIG)]);
    let refused = |args: &[&str], message: &str| {
        cascade(project.path())
            .args(["--database-url", &url, "duplicates"])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
    };
    refused(&["persn", "--by", "email"], "unknown model `persn` (did you mean `person`?)");
    refused(&["person", "--by", "emial"], "--by: table `person` has no column `emial` (did you mean `email`?)");
    refused(
        &["person", "--by", "email", "--order-by", "created"],
        "--order-by: table `person` has no column `created` (did you mean `created_at`?)",
    );
    refused(&["person", "--by", "email,EMAIL"], "--by names column `email` twice");
    refused(&["person", "--by", "email", "--keep", "first"], "invalid value 'first' for '--keep");
    cascade(project.path()).args(["--database-url", &url, "duplicates", "person"]).assert().code(2);

    let missing_table = project_with("[models.ghost]\ntable = \"ghost\"\n");
    cascade(missing_table.path())
        .args(["--database-url", &url, "duplicates", "ghost", "--by", "email"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("table `ghost` of model `ghost` is not in the database"));
    let wrong_key = project_with("[models.person]\ntable = \"person\"\nkey = \"uuid\"\n");
    cascade(wrong_key.path())
        .args(["--database-url", &url, "duplicates", "person", "--by", "email"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "the key `uuid` of model `person` is not a column of table `person`: set `key` in the model's config \
             (the table's primary key is `id`)",
        ));
}

fn project_with(config: &str) -> tempfile::TempDir {
    project(&[("cascades/c.toml", config)])
}

#[test]
fn the_human_report_of_a_small_case() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &planted());
    let project = project(&[("cascades/people.toml", CONFIG)]);
    let output = cascade(project.path())
        .args(["--database-url", &url, "duplicates", "person", "--by", "email", "--order-by", "created_at"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    insta::assert_snapshot!(String::from_utf8(output).unwrap());
}

/// Text keys that spaces would blur are quoted in the human report; plain ones are not.
#[test]
fn keys_with_spaces_are_quoted_in_the_human_report() {
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE tag (code TEXT PRIMARY KEY, email TEXT);
                  INSERT INTO tag VALUES (' a', 'x'), ('b ', 'x'), ('c', 'y'), ('d', 'y');";
    let url = sqlite_database(dir.path(), schema);
    let project = project_with("[models.tag]\ntable = \"tag\"\nkey = \"code\"\nstrategy = \"bulk\"\n");
    let output = cascade(project.path())
        .args(["--database-url", &url, "duplicates", "tag", "--by", "email"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(output).unwrap();
    assert!(text.contains("email = 'x': 2 rows, keep ' a', remove 'b '"), "{text}");
    assert!(text.contains("email = 'y': 2 rows, keep c, remove d"), "{text}");
}

/// A partitioned table refuses `CONCURRENTLY`: its statement builds the index the plain way, and
/// works once the duplicates are gone.
#[test]
fn a_partitioned_table_gets_a_plain_unique_index_on_postgres() {
    let schema = "CREATE TABLE visit (id INTEGER NOT NULL, email TEXT, day DATE NOT NULL) PARTITION BY RANGE (day);
                  CREATE TABLE visit_2025 PARTITION OF visit FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
                  CREATE TABLE visit_2026 PARTITION OF visit FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
                  INSERT INTO visit VALUES (1, 'a', '2025-03-01'), (2, 'a', '2025-03-01'), (3, 'a', '2026-03-01');";
    let Some(url) = postgres_database(schema) else { return };
    let dir = project(&[("cascades/c.toml", "[models.visit]\ntable = \"visit\"\nstrategy = \"bulk\"\n")]);
    let found = json_output(cascade(dir.path()).args([
        "--database-url",
        &url,
        "duplicates",
        "visit",
        "--by",
        "email,day",
        "--format",
        "json",
    ]));
    assert_eq!(groups(&found), [(strings(&["a", "2025-03-01"]), 2, "1".to_owned(), strings(&["2"]))]);
    let statement = found["unique_index"]["statement"].as_str().unwrap();
    assert_eq!(statement, r#"CREATE UNIQUE INDEX "visit_email_day_key" ON "public"."visit" ("email", "day");"#);
    execute(&url, "DELETE FROM visit WHERE id = 2").unwrap();
    execute(&url, statement).unwrap();
}
