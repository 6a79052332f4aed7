//! `cascade orphans` over relations of several columns, on SQLite and PostgreSQL: a declared
//! relation over the parent's composite key (deleted, with the orphans' own children), one
//! nullified (both columns set to NULL), one to a unique pair of columns that is not the key
//! (`references`), one to a unique non-key column, and an undeclared composite foreign key. A row
//! with a NULL in any of the columns references nothing (MATCH SIMPLE) and is no orphan. The
//! report counts exactly the planted orphans, the dry run counts what `--confirm` then removes,
//! and afterwards only the undeclared key's orphans are left, as left alone.

use crate::common;

use common::{cascade, json_output, on_each_database, project, texts};
use serde_json::{Value, json};

/// node (composite key) → edge (delete) → edge_tag, node → pin (nullify), label → translation by
/// its unique `(slug, lang)`, account → session by its unique `login`. `revision` and
/// `revision_note` are no models: their composite foreign key is the schema's only.
const CONFIG: &str = r#"
[models.node]
table = "node"
key = ["node_id", "version"]
children = [
  { model = "edge", columns = ["node_id", "version"] },
  { model = "pin", columns = ["node_id", "version"], on_delete = "nullify" },
]

[models.edge]
table = "edge"
children = [{ model = "edge_tag", column = "edge_id" }]

[models.edge_tag]
table = "edge_tag"
strategy = "bulk"

[models.pin]
table = "pin"
strategy = "bulk"

[models.label]
table = "label"
children = [{ model = "translation", columns = ["slug", "lang"], references = ["slug", "lang"] }]

[models.translation]
table = "translation"
strategy = "bulk"

[models.account]
table = "account"
children = [{ model = "session", column = "login", references = "login" }]

[models.session]
table = "session"
strategy = "bulk"
"#;

/// `{int}` is the integer type; `{note_fk}` the foreign key of `revision_note` (inline on SQLite,
/// where it is not enforced while the rows go in; added `NOT VALID` afterwards on PostgreSQL).
const TABLES: &str = "
CREATE TABLE node (node_id {int}, version {int}, name text, PRIMARY KEY (node_id, version));
CREATE TABLE edge (id {int} PRIMARY KEY, node_id {int}, version {int});
CREATE TABLE edge_tag (id {int} PRIMARY KEY, edge_id {int});
CREATE INDEX edge_tag_edge_id ON edge_tag (edge_id);
CREATE TABLE pin (id {int} PRIMARY KEY, node_id {int}, version {int});
CREATE INDEX pin_node ON pin (version, node_id);
CREATE TABLE label (id {int} PRIMARY KEY, slug text, lang text, UNIQUE (slug, lang));
CREATE TABLE translation (id {int} PRIMARY KEY, slug text, lang text);
CREATE INDEX translation_slug_lang ON translation (slug, lang);
CREATE TABLE account (id {int} PRIMARY KEY, login text UNIQUE);
CREATE TABLE session (id {int} PRIMARY KEY, login text);
CREATE INDEX session_login ON session (login);
CREATE TABLE revision (doc_id {int}, rev {int}, PRIMARY KEY (doc_id, rev));
CREATE TABLE revision_note (id {int} PRIMARY KEY, doc_id {int}, rev {int}{note_fk});
";

/// Orphans: edges 2, 3 and 7 (edge_tags 10 and 11 below 2 and 7), pins 2 and 4, translations 2
/// and 3, session 2, revision notes 2 and 4. Edges 4 and 5, pin 3, translation 4 and revision
/// note 3 have a NULL in one column: no orphans. Edges 2 and 3 match a node on each column
/// alone, never on both.
const ROWS: &str = "
INSERT INTO node VALUES (1, 1, 'a'), (1, 2, 'b'), (2, 1, 'c'), (3, 3, 'd');
INSERT INTO edge VALUES (1, 1, 1), (2, 1, 3), (3, 3, 1), (4, NULL, 1), (5, 2, NULL), (6, 2, 1), (7, 9, 9);
INSERT INTO edge_tag VALUES (10, 2), (11, 7), (12, 1), (13, 6);
INSERT INTO pin VALUES (1, 1, 2), (2, 5, 5), (3, 1, NULL), (4, 2, 2);
INSERT INTO label VALUES (1, 'a', 'en'), (2, 'a', 'fr');
INSERT INTO translation VALUES (1, 'a', 'en'), (2, 'a', 'de'), (3, 'b', 'en'), (4, NULL, 'en');
INSERT INTO account VALUES (1, 'ann');
INSERT INTO session VALUES (1, 'ann'), (2, 'bob');
INSERT INTO revision VALUES (1, 1);
INSERT INTO revision_note VALUES (1, 1, 1), (2, 1, 2), (3, NULL, 2), (4, 7, 7);
";

fn sqlite_schema() -> String {
    let tables = TABLES
        .replace("{int}", "INTEGER")
        .replace("{note_fk}", ", FOREIGN KEY (doc_id, rev) REFERENCES revision (doc_id, rev)");
    format!("PRAGMA foreign_keys = OFF;\n{tables}{ROWS}")
}

fn postgres_schema() -> String {
    let tables = TABLES.replace("{int}", "bigint").replace("{note_fk}", "");
    format!(
        "{tables}{ROWS}ALTER TABLE revision_note ADD CONSTRAINT revision_note_fkey \
         FOREIGN KEY (doc_id, rev) REFERENCES revision (doc_id, rev) NOT VALID;\n"
    )
}

/// MariaDB: `varchar` for the text keys (InnoDB indexes no `text` without a length), and the
/// foreign key added with the checks off, which leaves its rows unchecked.
fn mariadb_schema() -> String {
    let tables = TABLES.replace("{int}", "bigint").replace("{note_fk}", "").replace(" text", " varchar(100)");
    format!(
        "{tables}{ROWS}SET foreign_key_checks = 0;\n\
         ALTER TABLE revision_note ADD CONSTRAINT revision_note_fkey \
         FOREIGN KEY (doc_id, rev) REFERENCES revision (doc_id, rev);\n\
         SET foreign_key_checks = 1;\n"
    )
}

fn orphans_json(dir: &std::path::Path, url: &str, args: &[&str]) -> Value {
    json_output(cascade(dir).args(["orphans", "--format", "json", "--database-url", url]).args(args))
}

/// Per relation, in report order: (child table, column, parent_key, declared, orphans, sample).
fn relations(report: &Value) -> Vec<(String, String, String, bool, u64, Value)> {
    report["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|relation| {
            (
                relation["child_table"].as_str().unwrap().to_owned(),
                relation["column"].as_str().unwrap().to_owned(),
                relation["parent_key"].as_str().unwrap().to_owned(),
                relation["declared"].as_bool().unwrap(),
                relation["orphans"].as_u64().unwrap(),
                relation["sample"].clone(),
            )
        })
        .collect()
}

fn relation(
    child: &str,
    column: &str,
    key: &str,
    declared: bool,
    sample: &[&str],
) -> (String, String, String, bool, u64, Value) {
    (child.to_owned(), column.to_owned(), key.to_owned(), declared, sample.len() as u64, json!(sample))
}

fn check_composite_orphans(url: &str) {
    let dir = project(&[("cascades/cascade.toml", CONFIG)]);
    let report = orphans_json(dir.path(), url, &["--sample", "10"]);
    assert_eq!(
        relations(&report),
        [
            relation("edge", "node_id, version", "node_id, version", true, &["2", "3", "7"]),
            relation("pin", "node_id, version", "node_id, version", true, &["2", "4"]),
            relation("edge_tag", "edge_id", "id", true, &[]),
            relation("translation", "slug, lang", "slug, lang", true, &["2", "3"]),
            relation("session", "login", "login", true, &["2"]),
            relation("revision_note", "doc_id, rev", "doc_id, rev", false, &["2", "4"]),
        ],
        "{report:#}"
    );
    assert_eq!(report["total"], json!(10));
    assert_eq!(report["skipped"], json!([]), "{report:#}");
    // An index over both columns, in any order, serves the anti-join; the advice names both.
    let advice: Vec<&Value> = report["relations"].as_array().unwrap().iter().map(|r| &r["index"]).collect();
    assert_eq!(
        advice,
        [
            &common::index_advice(url, r#"CREATE INDEX "edge_node_id_version_idx" ON "edge" ("node_id", "version");"#),
            &Value::Null,
            &Value::Null,
            &Value::Null,
            &Value::Null,
            // InnoDB indexes every foreign key of its own.
            &if url.starts_with("mysql:") {
                Value::Null
            } else {
                json!(r#"CREATE INDEX "revision_note_doc_id_rev_idx" ON "revision_note" ("doc_id", "rev");"#)
            },
        ]
    );
    // `--relation` names a composite relation as the report writes it, or in parentheses.
    for written in ["edge.node_id, version", "edge.(node_id, version)"] {
        let only = orphans_json(dir.path(), url, &["--relation", written]);
        assert_eq!(relations(&only).len(), 1, "{written}: {only:#}");
        assert_eq!(only["total"], json!(3), "{written}");
    }

    let dry = orphans_json(dir.path(), url, &["--delete"]);
    let preview = &dry["delete"];
    assert_eq!(preview["totals"], json!({"edge": 3, "edge_tag": 2, "translation": 2, "session": 1}), "{preview:#}");
    assert_eq!(preview["nullify"], json!({"pin": 2}), "{preview:#}");
    let left = json!([{"parent": "revision", "child": "revision_note", "column": "doc_id, rev", "orphans": 2,
                       "reason": preview["left_alone"][0]["reason"]}]);
    assert_eq!(preview["left_alone"], left, "{preview:#}");

    let run = orphans_json(dir.path(), url, &["--delete", "--confirm", "--sleep-ms", "0"]);
    assert_eq!(run["deleted"], preview["totals"], "the dry run counted what the run deleted: {run:#}");
    assert_eq!(run["nullified"], preview["nullify"], "{run:#}");
    assert_eq!(run["left_alone"], left, "{run:#}");

    let after = orphans_json(dir.path(), url, &[]);
    let left: Vec<(String, u64)> =
        relations(&after).into_iter().filter(|r| r.4 > 0).map(|(child, .., orphans, _)| (child, orphans)).collect();
    assert_eq!(left, [("revision_note".to_owned(), 2)], "only the undeclared key's orphans are left: {after:#}");
    let ids = |table: &str| -> Vec<String> {
        texts(url, &format!("SELECT CAST(id AS TEXT) FROM {table} ORDER BY id"))
            .into_iter()
            .flatten()
            .flatten()
            .collect()
    };
    assert_eq!(ids("edge"), ["1", "4", "5", "6"]);
    assert_eq!(ids("edge_tag"), ["12", "13"]);
    assert_eq!(ids("translation"), ["1", "4"]);
    assert_eq!(ids("session"), ["1"]);
    let pins = texts(url, "SELECT CAST(id AS TEXT), CAST(node_id AS TEXT), CAST(version AS TEXT) FROM pin ORDER BY id");
    let some = |value: &str| Some(value.to_owned());
    assert_eq!(
        pins,
        [
            vec![some("1"), some("1"), some("2")],
            vec![some("2"), None, None],
            vec![some("3"), some("1"), None],
            vec![some("4"), None, None],
        ],
        "a nullified orphan has both columns set to NULL"
    );
}

on_each_database!(
    sqlite_orphans_of_relations_over_several_columns_are_counted_and_cleaned(sqlite_schema),
    postgres_orphans_of_relations_over_several_columns_are_counted_and_cleaned(postgres_schema),
    mariadb_orphans_of_relations_over_several_columns_are_counted_and_cleaned(mariadb_schema),
    |databases, schema| {
        check_composite_orphans(&databases.create(&schema()));
    }
);
