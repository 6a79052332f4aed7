//! Names as the database spells them: what `validate` resolves is what the executor uses,
//! a name that matches only by case is a warning with the exact spelling, a table in a schema
//! off the search_path is found by `schema.table`, and `init` never writes a config that does
//! not validate, whatever the tables are called.

use crate::common;

use common::{cascade, count, postgres_database, project};

const SCHEMA: &str = r#"
CREATE TABLE parent (id integer PRIMARY KEY);
CREATE TABLE child_t (id integer PRIMARY KEY, parent_id integer NOT NULL REFERENCES parent (id));
CREATE INDEX child_t_parent_id ON child_t (parent_id);
CREATE SCHEMA archive;
CREATE TABLE archive.old_child (id integer PRIMARY KEY, parent_id integer NOT NULL REFERENCES parent (id));
CREATE INDEX old_child_parent_id ON archive.old_child (parent_id);
INSERT INTO parent VALUES (1), (2);
INSERT INTO child_t VALUES (10, 1), (11, 1), (20, 2);
INSERT INTO archive.old_child VALUES (100, 1), (200, 2);
"#;

#[test]
fn names_resolved_by_validate_are_the_names_the_executor_uses_on_postgres() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = r#"
[models.parent]
table = "parent"
children = [
  { model = "child", column = "Parent_ID" },
  { model = "old_child", column = "parent_id" },
]

[models.child]
table = "CHILD_T"
key = "ID"

[models.old_child]
table = "archive.old_child"
strategy = "bulk"
"#;
    let dir = project(&[("cascades/cascade.toml", config)]);
    let output =
        cascade(dir.path()).args(["validate", "--database-url", &url]).assert().success().get_output().stdout.clone();
    let report = String::from_utf8_lossy(&output);
    assert!(report.contains("warning[identifier-case]: table `CHILD_T` matches `child_t`"), "{report}");
    assert!(report.contains("0 errors and 3 warnings"), "{report}");
    cascade(dir.path()).args(["delete", "parent", "1", "--confirm", "--database-url", &url]).assert().success();
    assert_eq!(count(&url, "SELECT COUNT(*) FROM child_t"), 1);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM archive.old_child"), 1);
    assert_eq!(count(&url, "SELECT COUNT(*) FROM parent"), 1);
}

/// A foreign key from a table off the search_path is seen too: undeclared, it refuses the
/// deletion before any write instead of leaving it half done.
#[test]
fn a_reference_from_another_schema_is_checked_before_a_deletion_on_postgres() {
    let Some(url) = postgres_database(SCHEMA) else { return };
    let config = "[models.parent]\ntable = \"parent\"\nchildren = [{ model = \"child\", column = \"parent_id\" }]\n\n\
                  [models.child]\ntable = \"child_t\"\nstrategy = \"bulk\"\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    cascade(dir.path())
        .args(["delete", "parent", "1", "--confirm", "--database-url", &url])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("table `old_child` references `parent` by `parent_id`"));
    assert_eq!(count(&url, "SELECT COUNT(*) FROM child_t"), 3, "nothing deleted");
}

/// Tables named alike up to case, with a `.` or a quote in their names, and off the
/// search_path: `init` writes unique model names, exact table names, leaves out what a config
/// cannot name, and the result validates against the same database.
#[test]
fn init_writes_a_config_that_validates_whatever_the_names_on_postgres() {
    let schema = r#"
CREATE TABLE "InvoiceLine" (id integer PRIMARY KEY);
CREATE TABLE invoice_line (id integer PRIMARY KEY, line_id integer REFERENCES "InvoiceLine" (id));
CREATE INDEX invoice_line_line_id ON invoice_line (line_id);
CREATE TABLE "Dot.Table" (id integer PRIMARY KEY);
CREATE TABLE "quo""te" (id integer PRIMARY KEY);
CREATE SCHEMA archive;
CREATE TABLE archive.invoice_line (id integer PRIMARY KEY);
"#;
    let Some(url) = postgres_database(schema) else { return };
    let dir = project(&[]);
    cascade(dir.path()).args(["init", "--database-url", &url]).assert().success();
    let written = std::fs::read_to_string(dir.path().join("cascades/cascade.toml")).unwrap();
    for expected in [
        "table = \"InvoiceLine\"",
        "table = \"public.invoice_line\"",
        "table = \"archive.invoice_line\"",
        "left out: its name cannot be written",
    ] {
        assert!(written.contains(expected), "{expected}\n{written}");
    }
    let output = cascade(dir.path()).args(["validate", "--database-url", &url]).output().unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}\n{written}");
    assert!(report.contains("ok: no problems found"), "{report}");
}
