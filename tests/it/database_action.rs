//! `on_delete = "database"`: a child table whose trigger lets only the database's own `ON DELETE
//! CASCADE` delete its rows. `init` leaves it to the database (naming the trigger), `validate` is
//! clean, the plan counts its rows, `delete` leaves them to the database and reports what the plan
//! counted, ending as a native delete (the oracle) ends. Without the action, the trigger's refusal
//! names the table, the trigger and the fix; `validate` refuses the action over a key that does
//! not cascade and towards a model that writes tombstones.

use crate::common;

use std::path::Path;

use common::databases::Databases;
use common::{cascade, json_output, on_each_database, project, texts, user_rows};

/// A blog's posts, their tags (cascade deletes them) and their comments, which a trigger lets go
/// only when the database cascades from their post. `{action}`: how a post and a tag follow
/// their parent (NO ACTION here, CASCADE in the oracle, which deletes natively).
const SQLITE: &str = "
    CREATE TABLE blog (id integer PRIMARY KEY);
    CREATE TABLE post (id integer PRIMARY KEY, blog_id integer NOT NULL REFERENCES blog (id) ON DELETE {action});
    CREATE INDEX post_blog ON post (blog_id);
    CREATE TABLE tag (id integer PRIMARY KEY, post_id integer NOT NULL REFERENCES post (id) ON DELETE {action});
    CREATE INDEX tag_post ON tag (post_id);
    CREATE TABLE comment (id integer PRIMARY KEY, post_id integer NOT NULL REFERENCES post (id) ON DELETE CASCADE,
        body text);
    CREATE INDEX comment_post ON comment (post_id);
    -- SQLite has no trigger depth: a comment may go once its post is gone, as it is when the
    -- database cascades from the post.
    CREATE TRIGGER comment_only_by_cascade BEFORE DELETE ON comment
    BEGIN
        SELECT RAISE(ABORT, 'comments go only with their post') WHERE EXISTS (SELECT 1 FROM post WHERE id = OLD.post_id);
    END;
    {rows}";

const POSTGRES: &str = "
    CREATE TABLE blog (id bigint PRIMARY KEY);
    CREATE TABLE post (id bigint PRIMARY KEY, blog_id bigint NOT NULL REFERENCES blog (id) ON DELETE {action});
    CREATE INDEX post_blog ON post (blog_id);
    CREATE TABLE tag (id bigint PRIMARY KEY, post_id bigint NOT NULL REFERENCES post (id) ON DELETE {action});
    CREATE INDEX tag_post ON tag (post_id);
    CREATE TABLE comment (id bigint PRIMARY KEY, post_id bigint NOT NULL REFERENCES post (id) ON DELETE CASCADE,
        body text);
    CREATE INDEX comment_post ON comment (post_id);
    CREATE FUNCTION only_by_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF pg_trigger_depth() < 2 THEN
            RAISE EXCEPTION 'comments go only with their post';
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER comment_only_by_cascade BEFORE DELETE ON comment
        FOR EACH STATEMENT EXECUTE FUNCTION only_by_cascade();
    {rows}";

const ROWS: &str = "
    INSERT INTO blog VALUES (1), (2);
    INSERT INTO post VALUES (1, 1), (2, 1), (3, 1), (4, 2);
    INSERT INTO tag VALUES (1, 1), (2, 3), (3, 4);
    INSERT INTO comment VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c'), (4, 3, 'd'), (5, 4, 'stays');";

fn schema(ddl: &str, action: &str) -> String {
    ddl.replace("{action}", action).replace("{rows}", ROWS)
}

fn config(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("cascades/cascade.toml")).unwrap()
}

/// `init`, `validate`, `plan` and `delete --confirm` of blog 1, then the same delete natively in
/// the oracle: the same rows are left, and the run reports (and records) what the plan counted.
fn the_database_deletes_what_only_it_may(databases: &Databases, ddl: &str) {
    let url = databases.create(&schema(ddl, "NO ACTION"));
    let oracle = databases.create(&schema(ddl, "CASCADE"));
    let dir = project(&[]);
    cascade(dir.path()).args(["init", "--database-url", &url, "--out", "cascades"]).assert().success();
    let written = config(dir.path());
    assert!(
        written.contains(
            r#"{ model = "comment", column = "post_id", on_delete = "database" },  # the table's trigger comment_only_by_cascade"#
        ),
        "{written}"
    );
    assert!(written.contains(r#"{ model = "tag", column = "post_id" },"#), "{written}");
    let validate = cascade(dir.path()).args(["validate", "--database-url", &url, "--deny-warnings"]).output().unwrap();
    assert!(validate.status.success(), "{}{written}", String::from_utf8_lossy(&validate.stdout));

    let plan = json_output(cascade(dir.path()).args([
        "--database-url",
        &url,
        "plan",
        "blog",
        "--id",
        "1",
        "--format",
        "json",
    ]));
    assert_eq!(plan["totals"], serde_json::json!({"blog": 1, "post": 3, "tag": 2, "comment": 4}), "{plan}");
    let post_children = plan["tree"]["children"][0]["children"].as_array().unwrap();
    let comment = post_children.iter().find(|child| child["model"] == "comment").unwrap();
    assert_eq!(
        (&comment["model"], &comment["action"], &comment["rows"]),
        (&"comment".into(), &"database".into(), &4.into())
    );
    assert_eq!(comment["children"], serde_json::json!([]), "{plan}");
    let sql = cascade(dir.path()).args(["--database-url", &url, "plan", "blog", "--sql"]).output().unwrap();
    let sql = String::from_utf8_lossy(&sql.stdout).to_string();
    assert!(!sql.contains(r#"DELETE FROM "comment""#), "no statement deletes comments: {sql}");

    let run = json_output(cascade(dir.path()).args([
        "--database-url",
        &url,
        "delete",
        "blog",
        "1",
        "--confirm",
        "--format",
        "json",
    ]));
    assert_eq!(run["deleted"], plan["totals"], "plan: {plan}\nrun: {run}");
    let recorded = texts(&url, r#"SELECT "rows" FROM cascade_run"#);
    let recorded: serde_json::Value = serde_json::from_str(recorded[0][0].as_deref().unwrap()).unwrap();
    assert_eq!(recorded["deleted"], plan["totals"], "{recorded}");
    texts(&oracle, "DELETE FROM blog WHERE id = 1");
    assert_eq!(user_rows(&url), user_rows(&oracle));
    assert_eq!(texts(&url, "SELECT CAST(id AS TEXT) FROM comment"), [[Some("5".to_owned())]]);
}

on_each_database!(
    the_database_deletes_what_only_it_may_on_sqlite(SQLITE),
    the_database_deletes_what_only_it_may_on_postgres(POSTGRES),
    |databases, ddl| the_database_deletes_what_only_it_may(&databases, ddl)
);

const DELETING_COMMENTS: &str = r#"
[models.blog]
table = "blog"
children = [{ model = "post", column = "blog_id" }]

[models.post]
table = "post"
children = [{ model = "tag", column = "post_id" }, { model = "comment", column = "post_id" }]

[models.tag]
table = "tag"
strategy = "bulk"

[models.comment]
table = "comment"
strategy = "bulk"
"#;

/// Without the action cascade deletes the comments itself: the trigger refuses, and the error
/// says which table, which trigger, and what to change. Nothing of the refused chunk is gone.
fn the_trigger_refusal_names_the_table_the_trigger_and_the_fix(databases: &Databases, ddl: &str) {
    let url = databases.create(&schema(ddl, "NO ACTION"));
    let dir = project(&[("cascades/cascade.toml", DELETING_COMMENTS)]);
    let delete =
        cascade(dir.path()).args(["--database-url", &url, "delete", "blog", "1", "--confirm"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&delete.stderr);
    assert_eq!(delete.status.code(), Some(2), "{stderr}");
    for named in [
        "a trigger refused to delete rows of `comment` from the table `comment`",
        "trigger `comment_only_by_cascade`",
        "comments go only with their post",
        r#"set `on_delete = "database"` on the relation"#,
    ] {
        assert!(stderr.contains(named), "{named}: {stderr}");
    }
    if !databases.is_sqlite() {
        assert!(stderr.contains("function `only_by_cascade()`"), "PostgreSQL names the function: {stderr}");
    }
    assert_eq!(common::count(&url, "SELECT COUNT(*) FROM comment"), 5);
}

on_each_database!(
    the_trigger_refusal_names_the_table_the_trigger_and_the_fix_on_sqlite(SQLITE),
    the_trigger_refusal_names_the_table_the_trigger_and_the_fix_on_postgres(POSTGRES),
    |databases, ddl| the_trigger_refusal_names_the_table_the_trigger_and_the_fix(&databases, ddl)
);

/// `validate` refuses the action over a foreign key that does not cascade (naming its action and
/// the fix, at the value's place) and towards a model that writes tombstones.
#[test]
fn validate_refuses_the_action_over_a_key_that_does_not_cascade_and_towards_tombstones() {
    let databases = Databases::sqlite();
    let url = databases.create(&schema(SQLITE, "NO ACTION"));
    let config = DELETING_COMMENTS
        .replace(
            r#"{ model = "tag", column = "post_id" }"#,
            r#"{ model = "tag", column = "post_id", on_delete = "database" }"#,
        )
        .replace(
            r#"{ model = "comment", column = "post_id" }"#,
            r#"{ model = "comment", column = "post_id", on_delete = "database" }"#,
        );
    let dir = project(&[("cascades/cascade.toml", &config)]);
    let validate =
        json_output_failing(cascade(dir.path()).args(["validate", "--database-url", &url, "--format", "json"]));
    let errors: Vec<_> =
        validate["diagnostics"].as_array().unwrap().iter().filter(|d| d["severity"] == "error").collect();
    assert_eq!(errors.len(), 1, "{validate}");
    assert_eq!(errors[0]["code"], "database-without-cascade");
    assert_eq!((&errors[0]["line"], &errors[0]["column"]), (&8.into(), &62.into()), "the value's place: {validate}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains("is ON DELETE NO ACTION, not CASCADE"), "{message}");
    assert!(errors[0]["help"].as_str().unwrap().contains("ON DELETE CASCADE"), "{validate}");

    let tombstones = format!(
        "{}\noutbox = \"comment_update\"\n\n[outbox.scopes.site]\nshard_key = \"id\"\ncategories = [\"comment_update\"]\n",
        DELETING_COMMENTS.replace(
            r#"{ model = "comment", column = "post_id" }"#,
            r#"{ model = "comment", column = "post_id", on_delete = "database" }"#
        )
    );
    let dir = project(&[("cascades/cascade.toml", &tombstones)]);
    let validate = json_output_failing(cascade(dir.path()).args(["validate", "--format", "json"]));
    let codes: Vec<_> = validate["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].clone()).collect();
    assert_eq!(codes, ["database-writes-tombstones"], "{validate}");
}

/// Runs `command`, which must exit 1 (errors found); its standard output read as JSON.
fn json_output_failing(command: &mut assert_cmd::Command) -> serde_json::Value {
    let output = command.output().expect("run cascade");
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// No archive can hold the rows the database deletes itself: `--archive` refuses such a plan
/// before its first write (exit 1, as other refusals before a first write).
#[test]
fn an_archive_refuses_a_plan_with_rows_the_database_deletes() {
    let databases = Databases::sqlite();
    let url = databases.create(&schema(SQLITE, "NO ACTION"));
    let config = DELETING_COMMENTS.replace(
        r#"{ model = "comment", column = "post_id" }"#,
        r#"{ model = "comment", column = "post_id", on_delete = "database" }"#,
    );
    let dir = project(&[("cascades/cascade.toml", &config)]);
    let before = user_rows(&url);
    let delete = cascade(dir.path())
        .args(["--database-url", &url, "delete", "blog", "1", "--confirm", "--archive", "archive"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&delete.stderr);
    assert_eq!(delete.status.code(), Some(1), "refused before any write, as a config problem: {stderr}");
    assert!(stderr.contains("the database deletes the `comment` rows of this plan itself"), "{stderr}");
    assert_eq!(user_rows(&url), before, "nothing was deleted");
}
