//! `cascade orphans`: on SQLite and PostgreSQL databases with orphans planted at known keys, the
//! report counts exactly the planted rows (and agrees with a hand-written anti-join), leaves NULL
//! relation columns alone, reports an undeclared foreign key as such, samples the planted keys in
//! order, advises the missing index, changes nothing, and `--delete` counts what a clean-up would
//! remove without removing it.

use crate::common;

use common::{cascade, count, on_each_database, postgres_database, project, sqlite_database, texts};
use serde_json::{Value, json};

/// Declared: organization → project, project → event, event → comment, and event → event
/// (`duplicate_of`, nullified). `grp` is no model: `event.grp_id` is a foreign key of the
/// schema only. `event.project_id` and `event.duplicate_of` have no index.
const CONFIG: &str = r#"
[models.organization]
table = "organization"
children = [{ model = "project", column = "organization_id" }]

[models.project]
table = "project"
children = [{ model = "event", column = "project_id" }]

[models.event]
table = "event"
children = [
  { model = "comment", column = "event_id" },
  { model = "event", column = "duplicate_of", on_delete = "nullify" },
]

[models.comment]
table = "comment"
strategy = "bulk"
"#;

/// The tables, with `{int}` for the integer type and `{grp_fk}` for the foreign key of
/// `event.grp_id` (inline on SQLite, where it is not enforced while the rows go in; added
/// `NOT VALID` afterwards on PostgreSQL).
const TABLES: &str = "
CREATE TABLE organization (id {int} PRIMARY KEY, name text);
CREATE TABLE project (id {int} PRIMARY KEY, organization_id {int}, name text);
CREATE INDEX project_organization_id ON project (organization_id);
CREATE TABLE grp (id {int} PRIMARY KEY);
CREATE TABLE event (id {int} PRIMARY KEY, project_id {int}, grp_id {int}{grp_fk}, duplicate_of {int});
CREATE INDEX event_grp_id ON event (grp_id);
CREATE TABLE comment (id {int} PRIMARY KEY, event_id {int});
CREATE INDEX comment_event_id ON comment (event_id);
CREATE TABLE tag (project_id {int}, name text, PRIMARY KEY (project_id, name));
CREATE TABLE tag_use (id {int} PRIMARY KEY, project_id {int}, name text,
  FOREIGN KEY (project_id, name) REFERENCES tag (project_id, name));
";

/// Orphans planted: projects 12 and 14 (organizations 99 and 98), events 102, 104 and 105
/// (projects 500-502), comment 1003 (event 9999), event 106 (`duplicate_of` 777) and event 101
/// (`grp_id` 7, undeclared). Projects 13, events 103 and comment 1005 have NULL columns.
/// Event 101 belongs to orphan project 12 and has comment 1002; event 100 is a duplicate of
/// orphan event 102.
const ROWS: &str = "
INSERT INTO organization VALUES (1, 'a'), (2, 'b'), (3, 'c');
INSERT INTO project VALUES (10, 1, 'p'), (11, 2, 'p'), (12, 99, 'p'), (13, NULL, 'p'), (14, 98, 'p'), (15, 3, 'p');
INSERT INTO grp VALUES (1);
INSERT INTO event VALUES (100, 10, 1, 102), (101, 12, 7, NULL), (102, 500, NULL, NULL), (103, NULL, NULL, NULL),
  (104, 501, NULL, NULL), (105, 502, NULL, NULL), (106, 11, NULL, 777);
INSERT INTO comment VALUES (1000, 102), (1001, 102), (1002, 101), (1003, 9999), (1004, 100), (1005, NULL);
INSERT INTO tag VALUES (10, 'x');
INSERT INTO tag_use VALUES (1, 10, 'x');
";

fn sqlite_schema(rows: &str) -> String {
    let tables = TABLES.replace("{int}", "INTEGER").replace("{grp_fk}", " REFERENCES grp (id)");
    format!("PRAGMA foreign_keys = OFF;\n{tables}{rows}")
}

/// MariaDB: text keys are `varchar` (InnoDB indexes no `text` without a length), and the
/// undeclared foreign key is added with the checks off, which leaves its rows unchecked.
fn mariadb_schema(rows: &str) -> String {
    let tables = TABLES.replace("{int}", "bigint").replace("{grp_fk}", "").replace(" text", " varchar(100)");
    format!(
        "{tables}{rows}SET foreign_key_checks = 0;\n\
         ALTER TABLE event ADD CONSTRAINT event_grp_id_fkey FOREIGN KEY (grp_id) REFERENCES grp (id);\n\
         SET foreign_key_checks = 1;\n"
    )
}

fn postgres_schema(rows: &str) -> String {
    let tables = TABLES.replace("{int}", "bigint").replace("{grp_fk}", "");
    format!(
        "{tables}{rows}ALTER TABLE event ADD CONSTRAINT event_grp_id_fkey FOREIGN KEY (grp_id) REFERENCES grp (id) NOT VALID;\n"
    )
}

/// (parent, child, column, declared, the planted orphans' keys in key order), in report order:
/// declared relations in config order, then the schema's undeclared foreign keys (the composite
/// one of `tag_use` has no orphan).
fn planted() -> Vec<(Value, &'static str, &'static str, bool, Vec<&'static str>)> {
    vec![
        (json!("organization"), "project", "organization_id", true, vec!["12", "14"]),
        (json!("project"), "event", "project_id", true, vec!["102", "104", "105"]),
        (json!("event"), "comment", "event_id", true, vec!["1003"]),
        (json!("event"), "event", "duplicate_of", true, vec!["106"]),
        (Value::Null, "event", "grp_id", false, vec!["101"]),
        (Value::Null, "tag_use", "project_id, name", false, vec![]),
    ]
}

/// The orphans of a relation by a hand-written anti-join (a LEFT JOIN, not the tool's NOT EXISTS),
/// over the relation's columns and the parent's, each a report's comma-separated list.
fn hand_count(url: &str, parent_table: &str, child_table: &str, column: &str, parent_key: &str) -> u64 {
    let pairs: Vec<(&str, &str)> = column.split(", ").zip(parent_key.split(", ")).collect();
    let on: Vec<String> = pairs.iter().map(|(column, key)| format!("p.{key} = c.{column}")).collect();
    let not_null: Vec<String> = pairs.iter().map(|(column, _)| format!("c.{column} IS NOT NULL")).collect();
    count(
        url,
        &format!(
            "SELECT COUNT(*) FROM {child_table} c LEFT JOIN {parent_table} p ON {} WHERE {} AND p.{} IS NULL",
            on.join(" AND "),
            not_null.join(" AND "),
            pairs[0].1
        ),
    )
}

fn orphans_json(dir: &std::path::Path, url: &str, args: &[&str]) -> Value {
    common::json_output(cascade(dir).args(["orphans", "--format", "json", "--database-url", url]).args(args))
}

fn check_report(url: &str) {
    let dir = project(&[("cascades/cascade.toml", CONFIG)]);
    let report = orphans_json(dir.path(), url, &["--sample", "100"]);
    let relations = report["relations"].as_array().unwrap();
    let expected = planted();
    assert_eq!(relations.len(), expected.len(), "{report:#}");
    let mut total = 0;
    for (relation, (parent, child, column, declared, keys)) in relations.iter().zip(&expected) {
        assert_eq!(
            (
                &relation["parent"],
                // The child model, or the table for one no model has (`tag_use`).
                relation["child"].as_str().or(relation["child_table"].as_str()),
                relation["column"].as_str(),
                relation["declared"].as_bool()
            ),
            (parent, Some(*child), Some(*column), Some(*declared)),
            "{relation:#}"
        );
        assert_eq!(relation["orphans"], json!(keys.len()), "{relation:#}");
        let parent_table = relation["parent_table"].as_str().unwrap();
        assert_eq!(
            hand_count(
                url,
                parent_table,
                relation["child_table"].as_str().unwrap(),
                column,
                relation["parent_key"].as_str().unwrap()
            ),
            keys.len() as u64,
            "the anti-join by hand agrees: {relation:#}"
        );
        // Every orphan is in a sample larger than their number, and nothing else: no row whose
        // column is NULL (project 13, event 103, comment 1005), none with a parent.
        assert_eq!(relation["sample"], json!(keys), "{relation:#}");
        assert_eq!(relation["key"], json!(["id"]));
        total += keys.len();
    }
    assert_eq!(report["total"], json!(total));
    let undeclared = &relations[4];
    assert_eq!((&undeclared["parent_table"], &undeclared["on_delete"]), (&json!("grp"), &Value::Null));
    assert_eq!(relations[3]["on_delete"], json!("nullify"));

    // Only the unindexed relations get the advice, the statement `validate` gives (InnoDB
    // indexes every foreign key of its own).
    let advice: Vec<&Value> = relations.iter().map(|relation| &relation["index"]).collect();
    let tag_use = r#"CREATE INDEX "tag_use_project_id_name_idx" ON "tag_use" ("project_id", "name");"#;
    assert_eq!(
        advice,
        [
            &Value::Null,
            &common::index_advice(url, r#"CREATE INDEX "event_project_id_idx" ON "event" ("project_id");"#),
            &Value::Null,
            &common::index_advice(url, r#"CREATE INDEX "event_duplicate_of_idx" ON "event" ("duplicate_of");"#),
            &Value::Null,
            &if url.starts_with("mysql:") { Value::Null } else { json!(tag_use) },
        ]
    );
    let validate = cascade(dir.path()).args(["validate", "--database-url", url]).output().unwrap();
    let validate = String::from_utf8_lossy(&validate.stdout);
    let event = common::index_advice(url, r#"CREATE INDEX "event_project_id_idx" ON "event" ("project_id");"#);
    assert!(validate.contains(event.as_str().unwrap()), "{validate}");

    // The composite foreign key is counted, over both columns.
    assert_eq!(report["skipped"], json!([]));
    assert_eq!(relations[5]["parent_key"], json!("project_id, name"));

    // `--sample N` lists the first N planted keys, by key; without it, none.
    let sampled = orphans_json(dir.path(), url, &["--sample", "2"]);
    for (relation, (.., keys)) in sampled["relations"].as_array().unwrap().iter().zip(&expected) {
        assert_eq!(relation["sample"], json!(keys.iter().take(2).collect::<Vec<_>>()), "{relation:#}");
    }
    let plain = orphans_json(dir.path(), url, &[]);
    assert!(plain["relations"].as_array().unwrap().iter().all(|r| r["sample"] == json!([])));
    assert_eq!(plain["total"], report["total"]);
}

fn check_filters(url: &str) {
    let dir = project(&[("cascades/cascade.toml", CONFIG)]);
    let relations = |args: &[&str]| -> Vec<String> {
        let report = orphans_json(dir.path(), url, args);
        report["relations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{}.{}", r["child"].as_str().unwrap(), r["column"].as_str().unwrap()))
            .collect()
    };
    assert_eq!(
        relations(&["--model", "event"]),
        ["event.project_id", "comment.event_id", "event.duplicate_of", "event.grp_id"],
        "the relations whose parent or child is event"
    );
    assert_eq!(relations(&["--model", "grp"]), ["event.grp_id"], "a table that is no model");
    assert_eq!(relations(&["--relation", "event.project_id"]), ["event.project_id"]);
    assert_eq!(
        relations(&["--relation", "comment.event_id", "--relation", "project.organization_id"]),
        ["project.organization_id", "comment.event_id"]
    );
    assert_eq!(relations(&["--model", "organization", "--relation", "event.project_id"]), Vec::<String>::new());
    let total = orphans_json(dir.path(), url, &["--model", "comment"])["total"].clone();
    assert_eq!(total, json!(1));

    let refused = |args: &[&str], message: &str| {
        cascade(dir.path())
            .args(["orphans", "--database-url", url])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message.to_owned()));
    };
    refused(&["--model", "evnt"], "unknown model `evnt` (did you mean `event`?)");
    // The batches' options belong to a confirmed run: a dry run would ignore them silently.
    for option in [&["--archive", "dir"][..], &["--restart"], &["--batch-size", "100"], &["--max-batches", "2"]] {
        refused(&[&["--delete"][..], option].concat(), "the following required arguments were not provided");
    }
    refused(&["--delete", "--confirm", "--max-batches", "0"], "0 is not in 1..=1000000000");
    refused(&["--relation", "event"], "`event` is not a relation: write CHILD.COLUMN");
    refused(
        &["--relation", "event.project"],
        "no relation `event.project` in the config or the database (did you mean `event.project_id`?)",
    );
}

/// `--delete` without `--confirm`: per child model, the orphans of its delete relations with
/// everything below them (counted through its plan) and the orphans of its nullify relation.
fn check_delete_preview(url: &str) {
    let dir = project(&[("cascades/cascade.toml", CONFIG)]);
    let report = orphans_json(dir.path(), url, &["--delete"]);
    let delete = &report["delete"];
    assert_eq!(
        delete["roots"],
        json!([
            // Projects 12 and 14; event 101 of project 12 and its comment 1002.
            {"model": "project", "action": "delete", "columns": ["organization_id"], "orphans": 2, "skipped_by_status": 0,
             "totals": {"comment": 1, "event": 1, "project": 2}, "nullify": {"event": 0}},
            // Events 102, 104 and 105; comments 1000 and 1001; event 100 is a duplicate of 102.
            {"model": "event", "action": "delete", "columns": ["project_id"], "orphans": 3, "skipped_by_status": 0,
             "totals": {"comment": 2, "event": 3}, "nullify": {"event": 1}},
            {"model": "comment", "action": "delete", "columns": ["event_id"], "orphans": 1, "skipped_by_status": 0,
             "totals": {"comment": 1}, "nullify": {}},
            {"model": "event", "action": "nullify", "columns": ["duplicate_of"], "orphans": 1, "skipped_by_status": 0,
             "totals": {}, "nullify": {"event": 1}},
        ]),
        "{delete:#}"
    );
    let totals: Vec<(&String, &Value)> = delete["totals"].as_object().unwrap().iter().collect();
    let mut totals: Vec<(String, u64)> = totals.into_iter().map(|(m, n)| (m.clone(), n.as_u64().unwrap())).collect();
    totals.sort();
    assert_eq!(totals, [("comment".to_owned(), 4), ("event".to_owned(), 4), ("project".to_owned(), 2)]);
    assert_eq!(delete["nullify"], json!({"event": 2}));
    assert_eq!(delete["left_alone"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&delete["left_alone"][0]["child"], &delete["left_alone"][0]["column"]),
        (&json!("event"), &json!("grp_id"))
    );
}

/// Every user table's rows, checksummed by the database itself (PostgreSQL).
fn postgres_checksums(url: &str) -> Vec<Vec<Option<String>>> {
    ["organization", "project", "grp", "event", "comment", "tag", "tag_use"]
        .iter()
        .map(|table| {
            texts(url, &format!("SELECT '{table}', md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {table} t"))
                .remove(0)
        })
        .collect()
}

/// The report in every form, and the dry run of deleting.
fn run_everything(url: &str) {
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    for args in [&["--sample", "3"][..], &["--delete", "--sample", "1"], &["--format", "json", "--delete"]] {
        cascade(config.path()).args(["orphans", "--database-url", url]).args(args).assert().success();
    }
}

on_each_database!(
    sqlite_report_counts_exactly_the_planted_orphans(sqlite_schema),
    postgres_report_counts_exactly_the_planted_orphans(postgres_schema),
    mariadb_report_counts_exactly_the_planted_orphans(mariadb_schema),
    |databases, schema| {
        let url = databases.create(&schema(ROWS));
        check_report(&url);
        check_filters(&url);
    }
);

on_each_database!(
    sqlite_delete_dry_run_counts_each_orphan_with_its_cascade(sqlite_schema),
    postgres_delete_dry_run_counts_each_orphan_with_its_cascade(postgres_schema),
    mariadb_delete_dry_run_counts_each_orphan_with_its_cascade(mariadb_schema),
    |databases, schema| {
        check_delete_preview(&databases.create(&schema(ROWS)));
    }
);

/// The SQLite file is opened read only: its bytes, and the files beside it, stay as they were.
#[test]
fn sqlite_database_is_unchanged_by_the_report_and_the_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &sqlite_schema(ROWS));
    let path = url.strip_prefix("sqlite://").unwrap();
    let files = || {
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    };
    let (bytes, listing) = (std::fs::read(path).unwrap(), files());
    run_everything(&url);
    assert!(std::fs::read(path).unwrap() == bytes, "the database file changed");
    assert_eq!(files(), listing, "no journal or other file was left beside it");
}

#[test]
fn postgres_database_is_unchanged_by_the_report_and_the_dry_run() {
    let Some(url) = postgres_database(&postgres_schema(ROWS)) else { return };
    let before = postgres_checksums(&url);
    let tool_tables = count(&url, "SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE 'cascade%'");
    run_everything(&url);
    assert_eq!(postgres_checksums(&url), before);
    assert_eq!(
        count(&url, "SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE 'cascade%'"),
        tool_tables,
        "no tool table was created"
    );
}

/// Every row of every table, the tool's own too, is as it was (MariaDB).
#[test]
fn mariadb_database_is_unchanged_by_the_report_and_the_dry_run() {
    let Some(databases) = common::databases::Databases::mysql() else { return };
    let url = databases.create(&mariadb_schema(ROWS));
    let before = common::dump(&url);
    run_everything(&url);
    assert_eq!(common::dump(&url), before);
}

/// `Access::ReadOnly` is enforced by PostgreSQL and MariaDB themselves, as SQLite enforces it on
/// the file: the report could not write even by mistake.
fn check_read_only_connections_refuse_writes(url: &str, refusal: &str) {
    let refused = common::block_on(async {
        let database = cascade::db::Database::connect(url, cascade::db::Access::ReadOnly).await.unwrap();
        let insert = cascade::db::Statement { sql: "INSERT INTO grp VALUES (2)".to_owned(), params: Vec::new() };
        let result = database.execute(&insert).await;
        database.close().await;
        result.unwrap_err().to_string()
    });
    assert!(refused.contains(refusal), "{refused}");
    assert_eq!(count(url, "SELECT COUNT(*) FROM grp"), 1);
}

#[test]
fn postgres_read_only_connections_refuse_writes() {
    let Some(url) = postgres_database(&postgres_schema(ROWS)) else { return };
    check_read_only_connections_refuse_writes(&url, "read-only transaction");
}

#[test]
fn mariadb_read_only_connections_refuse_writes() {
    let Some(databases) = common::databases::Databases::mysql() else { return };
    check_read_only_connections_refuse_writes(&databases.create(&mariadb_schema(ROWS)), "READ ONLY transaction");
}

/// A report is not a failure: exit 0 with orphans and without.
#[test]
fn the_exit_code_is_zero_with_and_without_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    for (rows, total) in [(ROWS, 8), ("", 0)] {
        let url = sqlite_database(dir.path(), &sqlite_schema(rows));
        assert_eq!(orphans_json(config.path(), &url, &[])["total"], json!(total));
        cascade(config.path()).args(["orphans", "--database-url", &url]).assert().code(0);
    }
    let clean = sqlite_database(dir.path(), &sqlite_schema(""));
    let output = cascade(config.path()).args(["orphans", "--delete", "--database-url", &clean]).assert().code(0);
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).into_owned();
    assert!(stdout.contains("change nothing: there are no orphans"), "{stdout}");
}

/// A relation the database cannot support is listed as not counted; the rest are counted.
#[test]
fn a_relation_whose_column_is_missing_is_skipped_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &sqlite_schema(ROWS).replace("duplicate_of INTEGER", "x INTEGER"));
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let report = orphans_json(config.path(), &url, &[]);
    assert_eq!(report["relations"].as_array().unwrap().len(), 5, "{report:#}");
    assert_eq!(
        report["skipped"][0],
        json!({"parent": "event", "child": "event", "column": "duplicate_of", "declared": true,
               "reason": "`event` has no column `duplicate_of`"})
    );
    // --delete checks the config against the database first, as `delete` does.
    cascade(config.path())
        .args(["orphans", "--delete", "--database-url", &url])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("missing-column"));
}

/// The orphans of a foreign key the config does not declare are left alone, and counted after
/// the run: those that went with a declared orphan (payments of an orphan rental, orphans of
/// `payment.customer_id` as well) are not reported as left.
#[test]
fn orphans_left_alone_are_counted_after_the_run_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let ddl = "PRAGMA foreign_keys = OFF;
               CREATE TABLE customer (id INTEGER PRIMARY KEY);
               CREATE TABLE rental (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer (id));
               CREATE INDEX rental_customer ON rental (customer_id);
               CREATE TABLE payment (id INTEGER PRIMARY KEY, rental_id INTEGER REFERENCES rental (id),
                                     customer_id INTEGER REFERENCES customer (id));
               CREATE INDEX payment_rental ON payment (rental_id);
               CREATE INDEX payment_customer ON payment (customer_id);
               INSERT INTO customer VALUES (1);
               INSERT INTO rental VALUES (1, 1), (2, 2), (3, 2);
               INSERT INTO payment VALUES (1, 1, 1), (2, 2, 2), (3, 3, 2), (4, 1, 3);";
    let url = sqlite_database(dir.path(), ddl);
    let config = "[models.customer]\ntable = \"customer\"\nchildren = [{ model = \"rental\", column = \"customer_id\" }]\n\n\
                  [models.rental]\ntable = \"rental\"\nchildren = [{ model = \"payment\", column = \"rental_id\" }]\n\n\
                  [models.payment]\ntable = \"payment\"\nstrategy = \"bulk\"\n";
    let config = project(&[("cascades/cascade.toml", config)]);
    let before = orphans_json(config.path(), &url, &[]);
    let undeclared = |report: &Value| -> Vec<(Value, Value)> {
        (report["relations"].as_array().unwrap().iter())
            .filter(|relation| relation["column"] == "customer_id" && relation["child"] == "payment")
            .map(|relation| (relation["declared"].clone(), relation["orphans"].clone()))
            .collect()
    };
    assert_eq!(undeclared(&before), [(json!(false), json!(3))], "{before:#}");
    let args = ["--delete", "--confirm", "--sleep-ms", "0"];
    let cleaned = orphans_json(config.path(), &url, &args);
    assert_eq!(cleaned["deleted"], json!({"rental": 2, "payment": 2}), "{cleaned:#}");
    assert_eq!(
        cleaned["left_alone"],
        json!([{"parent": "customer", "child": "payment", "column": "customer_id", "orphans": 1,
                "reason": cleaned["left_alone"][0]["reason"]}]),
        "payment 4 is the one left: {cleaned:#}"
    );
    assert_eq!(undeclared(&orphans_json(config.path(), &url, &[])), [(json!(false), json!(1))]);
}

/// On PostgreSQL a relation whose column has a type with no `=` to its parent's key (text
/// against integer) is listed as not counted and the others are counted; a deletion through it
/// is refused before anything is written, naming the relation.
#[test]
fn a_relation_postgres_cannot_compare_is_skipped_and_refused_on_postgres() {
    let ddl = "CREATE TABLE artist (id integer PRIMARY KEY);
               CREATE TABLE album (id integer PRIMARY KEY, artist_id integer);
               CREATE INDEX album_artist ON album (artist_id);
               CREATE TABLE fan (id integer PRIMARY KEY, artist_ref text);
               CREATE INDEX fan_artist ON fan (artist_ref);
               INSERT INTO artist VALUES (1);
               INSERT INTO album VALUES (1, 1), (2, 99);
               INSERT INTO fan VALUES (1, '1'), (2, '99');";
    let Some(url) = postgres_database(ddl) else { return };
    let config = "[models.artist]\ntable = \"artist\"\nchildren = [{ model = \"album\", column = \"artist_id\" }, \
                  { model = \"fan\", column = \"artist_ref\" }]\n\n\
                  [models.album]\ntable = \"album\"\nstrategy = \"bulk\"\n\n\
                  [models.fan]\ntable = \"fan\"\nstrategy = \"bulk\"\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    let report = orphans_json(dir.path(), &url, &[]);
    let relations = report["relations"].as_array().unwrap();
    assert_eq!(relations.len(), 1, "{report:#}");
    assert_eq!((&relations[0]["child"], &relations[0]["orphans"]), (&json!("album"), &json!(1)), "{report:#}");
    assert_eq!(
        (&report["skipped"][0]["child"], &report["skipped"][0]["column"]),
        (&json!("fan"), &json!("artist_ref"))
    );
    let reason = report["skipped"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("PostgreSQL cannot compare them"), "{reason}");
    cascade(dir.path())
        .args(["delete", "artist", "1", "--confirm", "--database-url", &url])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("relation-type-mismatch"));
    assert_eq!(
        count(&url, "SELECT COUNT(*) FROM album") + count(&url, "SELECT COUNT(*) FROM artist"),
        3,
        "nothing deleted"
    );
}

/// A parent key that is NULL in some parent row does not hide orphans (as `NOT IN` would: no
/// value is `NOT IN` a list holding NULL), whether the key is unique (the anti-join is then a
/// `LEFT JOIN`) or not (`NOT EXISTS`; a child whose value two parent rows hold is no orphan).
fn check_a_null_parent_key_hides_nothing(url: &str) {
    let config = r#"
[models.account]
table = "account"
key = "code"
children = [{ model = "login", column = "account_code" }]

[models.login]
table = "login"
strategy = "bulk"
"#;
    let dir = project(&[("cascades/cascade.toml", config)]);
    let report = orphans_json(dir.path(), url, &["--sample", "5"]);
    assert_eq!(
        (&report["relations"][0]["orphans"], &report["relations"][0]["sample"]),
        (&json!(2), &json!(["2", "4"])),
        "{report:#}"
    );
}

const NULL_KEYS: &str = "
CREATE TABLE account (id integer PRIMARY KEY, code text);
CREATE INDEX account_code ON account (code);
CREATE TABLE login (id integer PRIMARY KEY, account_code text);
CREATE INDEX login_account_code ON login (account_code);
INSERT INTO account VALUES (1, 'a'), (2, NULL), (3, 'c'), (4, 'c');
INSERT INTO login VALUES (1, 'a'), (2, 'zz'), (3, NULL), (4, 'b'), (5, 'c');
";

/// [`NULL_KEYS`] with the parent key unique (NULLs are not equal, so two NULL keys are allowed).
fn unique_null_keys() -> String {
    NULL_KEYS
        .replace("CREATE INDEX account_code", "CREATE UNIQUE INDEX account_code")
        .replace(", (4, 'c');", ", (4, NULL);")
}

on_each_database!(
    sqlite_a_null_parent_key_hides_no_orphan,
    postgres_a_null_parent_key_hides_no_orphan,
    mariadb_a_null_parent_key_hides_no_orphan,
    |databases| {
        for schema in [NULL_KEYS.to_owned(), unique_null_keys()] {
            check_a_null_parent_key_hides_nothing(&databases.create_keyable(&schema));
        }
    }
);

#[test]
fn human_output() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &sqlite_schema(ROWS));
    let config = project(&[("cascades/cascade.toml", CONFIG)]);
    let run = |args: &[&str]| {
        let output = cascade(config.path()).args(["orphans", "--database-url", &url]).args(args).assert().success();
        String::from_utf8(output.get_output().stdout.clone()).unwrap()
    };
    insta::assert_snapshot!("human", run(&["--sample", "2"]));
    insta::assert_snapshot!("human_delete", run(&["--delete", "--model", "project"]));
}

/// A row dangling by two nullify relations has two columns set to NULL: the dry run counts them
/// as `--confirm` does (two), the run sets exactly those.
fn check_two_nullified_columns_count_twice(url: &str) {
    let config = r#"
[models.a]
table = "a"
children = [{ model = "item", column = "a_id", on_delete = "nullify" }]

[models.b]
table = "b"
children = [{ model = "item", column = "b_id", on_delete = "nullify" }]

[models.item]
table = "item"
"#;
    let dir = project(&[("cascades/cascade.toml", config)]);
    let dry = orphans_json(dir.path(), url, &["--delete"]);
    assert_eq!(dry["delete"]["nullify"], json!({"item": 3}), "{dry:#}");
    let run = orphans_json(dir.path(), url, &["--delete", "--confirm", "--sleep-ms", "0"]);
    assert_eq!(run["nullified"], json!({"item": 3}), "{run:#}");
    let items = texts(url, "SELECT CAST(id AS TEXT), CAST(a_id AS TEXT), CAST(b_id AS TEXT) FROM item ORDER BY id");
    let some = |value: &str| Some(value.to_owned());
    assert_eq!(
        items,
        [vec![some("1"), None, None], vec![some("2"), some("1"), None], vec![some("3"), some("1"), some("1")]]
    );
}

const TWO_NULLIFIED: &str = "
CREATE TABLE a (id integer PRIMARY KEY);
CREATE TABLE b (id integer PRIMARY KEY);
CREATE TABLE item (id integer PRIMARY KEY, a_id integer, b_id integer);
INSERT INTO a VALUES (1);
INSERT INTO b VALUES (1);
INSERT INTO item VALUES (1, 9, 9), (2, 1, 9), (3, 1, 1);
";

on_each_database!(
    sqlite_two_nullified_columns_count_twice,
    postgres_two_nullified_columns_count_twice,
    mariadb_two_nullified_columns_count_twice,
    |databases| {
        check_two_nullified_columns_count_twice(&databases.create(TWO_NULLIFIED));
    }
);

/// The dry run says, exit code 1, when `--confirm` would refuse the clean-up before deleting
/// anything (a table the config does not declare references the orphans), as `delete`'s dry run
/// does; with no orphans to delete there is nothing to refuse.
#[test]
fn the_dry_run_says_when_confirm_would_be_refused() {
    let config = r#"
[models.parent]
table = "parent"
children = [{ model = "child", column = "parent_id" }]

[models.child]
table = "child"
strategy = "bulk"
"#;
    let schema = "
CREATE TABLE parent (id integer PRIMARY KEY);
CREATE TABLE child (id integer PRIMARY KEY, parent_id integer);
CREATE TABLE label (id integer PRIMARY KEY, child_id integer REFERENCES child (id));
INSERT INTO parent VALUES (1);
INSERT INTO child VALUES (1, 9), (2, 1);
INSERT INTO label VALUES (1, 1);
";
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), schema);
    let project = project(&[("cascades/cascade.toml", config)]);
    let dry = cascade(project.path()).args(["orphans", "--delete", "--database-url", &url]).output().unwrap();
    let stderr = String::from_utf8_lossy(&dry.stderr);
    assert_eq!(dry.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unregistered-reference") && stderr.contains("would be refused"), "{stderr}");
    assert!(String::from_utf8_lossy(&dry.stdout).contains("child"), "the dry run is printed first");
    let confirmed =
        cascade(project.path()).args(["orphans", "--delete", "--confirm", "--database-url", &url]).output().unwrap();
    assert_eq!(confirmed.status.code(), Some(1));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM child"), 2, "nothing deleted");
    texts(&url, "UPDATE child SET parent_id = 1");
    let clean = cascade(project.path()).args(["orphans", "--delete", "--database-url", &url]).output().unwrap();
    assert_eq!(clean.status.code(), Some(0), "{}", String::from_utf8_lossy(&clean.stderr));
}
