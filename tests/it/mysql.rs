//! MySQL (MariaDB) beside the other databases: roots by condition (`delete --where`) on every
//! database, a deletion on MariaDB killed with kill -9 and run again against the database's own
//! cascade, and the commands that do not run on MySQL yet refusing clearly. The seeded random
//! schemas run on MariaDB too (`random_schemas`).

use crate::common;

use std::fmt::Write as _;

use common::databases::Databases;
use common::running::{CHUNK_COMMITTED, Running};
use common::{cascade, count, json_output, on_each_database, project, texts, user_rows};

/// Organizations, created in 2019 (odd ids) or 2024 (even ids), each with two members and a
/// note per member; a note may answer another of its organization (a tree, nullified). `oracle`:
/// every key cascades, for the database's own delete to compare with.
fn schema(orgs: i64, oracle: bool) -> String {
    let (restrict, set_null) = if oracle { ("ON DELETE CASCADE", "ON DELETE SET NULL") } else { ("", "") };
    let mut sql = format!(
        "CREATE TABLE org (id bigint PRIMARY KEY, created varchar(10) NOT NULL);
         CREATE TABLE member (id bigint PRIMARY KEY, org_id bigint NOT NULL, \
             CONSTRAINT member_org FOREIGN KEY (org_id) REFERENCES org (id) {restrict});
         CREATE INDEX member_org_idx ON member (org_id);
         CREATE TABLE note (id bigint PRIMARY KEY, member_id bigint NOT NULL, answers_id bigint, \
             CONSTRAINT note_member FOREIGN KEY (member_id) REFERENCES member (id) {restrict}, \
             CONSTRAINT note_answers FOREIGN KEY (answers_id) REFERENCES note (id) {set_null});
         CREATE INDEX note_member_idx ON note (member_id);
         CREATE INDEX note_answers_idx ON note (answers_id);\n"
    );
    let values = |rows: Vec<String>| rows.join(", ");
    let orgs_rows = (1..=orgs).map(|id| format!("({id}, '{}')", if id % 2 == 1 { "2019-01-01" } else { "2024-01-01" }));
    let _ = writeln!(sql, "INSERT INTO org (id, created) VALUES {};", values(orgs_rows.collect()));
    let members = (1..=orgs).flat_map(|org| [format!("({}, {org})", org * 2 - 1), format!("({}, {org})", org * 2)]);
    let _ = writeln!(sql, "INSERT INTO member (id, org_id) VALUES {};", values(members.collect()));
    // Member 2k answers member 2k-1's note, of the same organization.
    let notes = (1..=orgs * 2).map(|member| {
        let answers = if member % 2 == 0 { (member - 1).to_string() } else { "NULL".to_owned() };
        format!("({member}, {member}, {answers})")
    });
    let _ = writeln!(sql, "INSERT INTO note (id, member_id, answers_id) VALUES {};", values(notes.collect()));
    sql
}

/// The config `init` would write, with small chunks: many transactions.
const CONFIG: &str = r#"
[settings]
per_row_chunk_size = 7
adaptive = false

[models.org]
table = "org"
children = [{ model = "member", column = "org_id" }]

[models.member]
table = "member"
children = [{ model = "note", column = "member_id" }]

[models.note]
table = "note"
children = [{ model = "note", column = "answers_id", on_delete = "nullify" }]
"#;

/// More organizations than one run of a purge takes (`ROOTS_PER_RUN`, 1,000).
const ORGS: i64 = 2_300;

const CONDITION: &str = "created < '2020-01-01'";

/// `plan --where` counts the matching roots and says the condition; `delete --where` refuses a
/// condition that is not one, then deletes exactly the matching roots and their subtrees, a run
/// per 1,000 roots, each recording the condition in its command line; run again, it has nothing
/// left to do.
fn purge_by_condition(databases: &Databases) {
    let url = databases.create(&schema(ORGS, false));
    let dir = project(&[("cascades/app.toml", CONFIG)]);
    let plan = json_output(
        cascade(dir.path())
            .args(["plan", "org", "--where", CONDITION, "--format", "json"])
            .args(["--database-url", &url]),
    );
    assert_eq!(plan["where"], CONDITION);
    assert_eq!(plan["totals"]["org"], ORGS / 2);
    assert_eq!(plan["totals"]["member"], ORGS);
    let text =
        cascade(dir.path()).args(["plan", "org", "--where", CONDITION, "--database-url", &url]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with(&format!("plan: delete org where {CONDITION} (1150 rows)\n")), "{text}");

    let refused = cascade(dir.path())
        .args(["delete", "org", "--where", "id > 0; DELETE FROM org", "--confirm", "--database-url", &url])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("is not one SQL condition") && stderr.contains("`;` follows the condition"), "{stderr}");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM org"), ORGS as u64, "a refused condition deletes nothing");

    let deleted = json_output(
        cascade(dir.path())
            .args(["delete", "org", "--where", CONDITION, "--confirm", "--format", "json"])
            .args(["--database-url", &url]),
    );
    assert_eq!(deleted["deleted"]["org"], ORGS / 2);
    assert_eq!(deleted["deleted"]["note"], ORGS);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM org WHERE created < '2020-01-01'"), 0);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM org"), (ORGS / 2) as u64);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM member"), ORGS as u64, "the other organizations keep their members");
    assert_eq!(count(&url, "SELECT COUNT(*) FROM note WHERE answers_id IS NOT NULL"), (ORGS / 2) as u64);
    let runs = texts(&url, "SELECT command FROM cascade_run WHERE outcome = 'succeeded' ORDER BY id");
    assert_eq!(runs.len(), 2, "1,150 roots are two runs of up to 1,000");
    for run in &runs {
        assert!(run[0].as_deref().unwrap().contains(&format!("--where {CONDITION}")), "{run:?}");
    }

    let again = cascade(dir.path())
        .args(["delete", "org", "--where", CONDITION, "--confirm", "--database-url", &url])
        .output()
        .unwrap();
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("no row of `org` matches the condition"));
}

on_each_database!(
    delete_where_purges_exactly_the_matching_roots_on_sqlite,
    delete_where_purges_exactly_the_matching_roots_on_postgres,
    |databases| purge_by_condition(&databases)
);

#[test]
fn delete_where_purges_exactly_the_matching_roots_on_mariadb() {
    let Some(databases) = Databases::mysql() else { return };
    purge_by_condition(&databases);
}

/// MySQL's own double-quoted strings in a condition read as strings, as a pt-archiver user
/// writes them, though the tool's connections quote names with double quotes.
#[test]
fn a_mysql_condition_may_quote_strings_with_double_quotes() {
    let Some(databases) = Databases::mysql() else { return };
    let url = databases.create(&schema(10, false));
    let dir = project(&[("cascades/app.toml", CONFIG)]);
    let plan = json_output(
        cascade(dir.path())
            .args(["plan", "org", "--where", r#"`created` < "2020-01-01""#, "--format", "json"])
            .args(["--database-url", &url]),
    );
    assert_eq!(plan["ids"], serde_json::json!(["1", "3", "5", "7", "9"]));
}

/// kill -9 during a deletion on MariaDB, three times, each after a few committed chunks; the
/// same command then finishes, and the database holds what its own cascade leaves.
#[test]
fn a_deletion_killed_on_mariadb_finishes_as_the_database_s_own_cascade() {
    let Some(databases) = Databases::mysql() else { return };
    let url = databases.create(&schema(60, false));
    let oracle = databases.create(&schema(60, true));
    let dir = project(&[("cascades/app.toml", CONFIG)]);
    let ids: Vec<String> = (1..=40).map(|id| id.to_string()).collect();
    let ids = ids.join(",");
    let args = ["delete", "org", &ids, "--confirm", "--format", "json", "--database-url", &url];
    for commits in [1, 3, 2] {
        let mut run = Running::start(dir.path(), &args);
        for _ in 0..commits {
            run.expect(CHUNK_COMMITTED);
        }
        run.kill();
    }
    cascade(dir.path()).args(args).assert().success();
    texts(&oracle, &format!("DELETE FROM org WHERE id IN ({ids})"));
    assert_eq!(user_rows(&url), user_rows(&oracle));
    let interrupted = count(&url, "SELECT COUNT(*) FROM cascade_run WHERE outcome IN ('running', 'interrupted')");
    assert_eq!(interrupted, 3, "each killed run is left as it was, and the last one finished");
}

/// A store and its manager, who works at the store, reference each other with NOT NULL keys
/// that InnoDB checks row by row (Sakila's `store` and `staff`): no order deletes them, yet the
/// deletion of a store takes both, and what the database's own cascade would leave is left.
#[test]
fn a_store_and_its_manager_go_together_on_mariadb() {
    let Some(databases) = Databases::mysql() else { return };
    let schema = |action: &str| {
        format!(
            "SET FOREIGN_KEY_CHECKS = 0;
             CREATE TABLE staff (staff_id tinyint unsigned PRIMARY KEY, store_id tinyint unsigned NOT NULL,
               KEY staff_store (store_id),
               CONSTRAINT fk_staff_store FOREIGN KEY (store_id) REFERENCES store (store_id) {action});
             CREATE TABLE store (store_id tinyint unsigned PRIMARY KEY, manager_staff_id tinyint unsigned NOT NULL,
               UNIQUE KEY store_manager (manager_staff_id),
               CONSTRAINT fk_store_staff FOREIGN KEY (manager_staff_id) REFERENCES staff (staff_id) {action});
             CREATE TABLE rental (rental_id int PRIMARY KEY, staff_id tinyint unsigned NOT NULL,
               KEY rental_staff (staff_id),
               CONSTRAINT fk_rental_staff FOREIGN KEY (staff_id) REFERENCES staff (staff_id) {action});
             INSERT INTO staff VALUES (1, 1), (2, 1), (3, 2);
             INSERT INTO store VALUES (1, 1), (2, 3);
             INSERT INTO rental VALUES (1, 1), (2, 2), (3, 3);
             SET FOREIGN_KEY_CHECKS = 1;"
        )
    };
    let url = databases.create(&schema("ON DELETE RESTRICT"));
    let oracle = databases.create(&schema("ON DELETE CASCADE"));
    let dir = tempfile::tempdir().unwrap();
    cascade(dir.path()).args(["init", "--database-url", &url]).assert().success();
    let deleted = json_output(cascade(dir.path()).args([
        "delete",
        "store",
        "1",
        "--confirm",
        "--format",
        "json",
        "--database-url",
        &url,
    ]));
    assert_eq!(deleted["deleted"], serde_json::json!({"rental": 2, "staff": 2, "store": 1}));
    texts(&oracle, "DELETE FROM store WHERE store_id = 1");
    assert_eq!(user_rows(&url), user_rows(&oracle));
}

/// A store and its manager again, each with notes only the database deletes (a trigger refuses
/// any other delete), so InnoDB's checks must stay on for both; the store's manager key may be
/// NULL, and is set to NULL first in the deletion's transaction. The database's own cascade is
/// the oracle.
#[test]
fn a_loop_of_tables_the_database_cascades_from_goes_on_mariadb() {
    let Some(databases) = Databases::mysql() else { return };
    let schema = |action: &str| {
        let guard = |table: &str| {
            format!(
                "CREATE TRIGGER {table}_guard BEFORE DELETE ON {table} FOR EACH ROW \
                 SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'only the database deletes notes';"
            )
        };
        format!(
            "SET FOREIGN_KEY_CHECKS = 0;
             CREATE TABLE staff (staff_id int PRIMARY KEY, store_id int NOT NULL, KEY staff_store (store_id),
               CONSTRAINT fk_staff_store FOREIGN KEY (store_id) REFERENCES store (store_id) {action});
             CREATE TABLE store (store_id int PRIMARY KEY, manager_staff_id int, KEY store_manager (manager_staff_id),
               CONSTRAINT fk_store_staff FOREIGN KEY (manager_staff_id) REFERENCES staff (staff_id) {action});
             CREATE TABLE store_note (id int PRIMARY KEY, store_id int NOT NULL, KEY store_note_store (store_id),
               CONSTRAINT fk_store_note FOREIGN KEY (store_id) REFERENCES store (store_id) ON DELETE CASCADE);
             CREATE TABLE staff_note (id int PRIMARY KEY, staff_id int NOT NULL, KEY staff_note_staff (staff_id),
               CONSTRAINT fk_staff_note FOREIGN KEY (staff_id) REFERENCES staff (staff_id) ON DELETE CASCADE);
             {}
             {}
             INSERT INTO staff VALUES (1, 1), (2, 1), (3, 2);
             INSERT INTO store VALUES (1, 1), (2, 3);
             INSERT INTO store_note VALUES (1, 1), (2, 2);
             INSERT INTO staff_note VALUES (1, 1), (2, 2), (3, 3);
             SET FOREIGN_KEY_CHECKS = 1;",
            guard("store_note"),
            guard("staff_note")
        )
    };
    let url = databases.create(&schema("ON DELETE RESTRICT"));
    let oracle = databases.create(&schema("ON DELETE CASCADE"));
    let dir = tempfile::tempdir().unwrap();
    cascade(dir.path()).args(["init", "--database-url", &url]).assert().success();
    let deleted = json_output(cascade(dir.path()).args([
        "delete",
        "store",
        "1",
        "--confirm",
        "--format",
        "json",
        "--database-url",
        &url,
    ]));
    assert_eq!(
        deleted["deleted"],
        serde_json::json!({"staff_note": 2, "staff": 2, "store_note": 1, "store": 1}),
        "{deleted:#}"
    );
    // The oracle's own cascade, without the guards: it deletes its notes itself.
    texts(&oracle, "DROP TRIGGER store_note_guard");
    texts(&oracle, "DROP TRIGGER staff_note_guard");
    texts(&oracle, "DELETE FROM store WHERE store_id = 1");
    assert_eq!(user_rows(&url), user_rows(&oracle));
}
