//! `cascade plan`: every format of the demo config, exact counts on seeded SQLite and
//! PostgreSQL databases (a diamond included), and a database left untouched.

use crate::common;

use common::diamond::{DIAMOND_CONFIG, DIAMOND_SCHEMA, EXPECTED, diamond_rows};
use common::{
    block_on, cascade, json_output, on_each_database, postgres_database, project, repository, sqlite_database, texts,
};
use serde_json::Value;

fn plan_output(args: &[&str]) -> String {
    let output = cascade(repository()).arg("plan").args(args).assert().success().get_output().stdout.clone();
    String::from_utf8(output).unwrap()
}

#[test]
fn every_format_renders_the_demo_config() {
    insta::assert_snapshot!("text", plan_output(&["organization"]));
    insta::assert_snapshot!("text_folded", plan_output(&["organization", "--depth", "1", "--collapse", "project"]));
    insta::assert_snapshot!("mermaid", plan_output(&["organization", "--format", "mermaid"]));
    insta::assert_snapshot!("dot", plan_output(&["organization", "--format", "dot"]));
    insta::assert_snapshot!("json", plan_output(&["organization", "--format", "json"]));
    insta::assert_snapshot!("sql", plan_output(&["project", "--sql"]));
}

#[test]
fn json_has_the_documented_shape_without_counts() {
    let plan: Value = serde_json::from_str(&plan_output(&["release", "--format", "json"])).unwrap();
    assert_eq!(plan["root"], "release");
    assert_eq!(plan["ids"], serde_json::json!([]));
    let tree = &plan["tree"];
    for key in ["model", "table", "column", "action", "strategy", "chunk_size", "rows", "children"] {
        assert!(tree.get(key).is_some(), "tree lacks `{key}`: {tree}");
    }
    assert_eq!((tree["model"].as_str(), tree["rows"].is_null()), (Some("release"), true));
    let children: Vec<(&str, &str)> = tree["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["model"].as_str().unwrap(), c["action"].as_str().unwrap()))
        .collect();
    assert_eq!(children, [("release_file", "delete"), ("group", "nullify")]);
}

/// Every line of a Mermaid flowchart is a header, a node or a link, with safe ids and labels.
#[test]
fn mermaid_output_is_well_formed() {
    let chart = plan_output(&["organization", "--format", "mermaid"]);
    let mut lines = chart.lines();
    assert_eq!(lines.next(), Some("flowchart TD"));
    let mut nodes = std::collections::HashSet::new();
    let mut links = 0;
    for line in lines {
        let line = line.trim();
        let id_end = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(line.len());
        let id = &line[..id_end];
        assert!(id.starts_with("m_"), "node ids are sanitised: {line}");
        let rest = &line[id_end..];
        if let Some(label) = rest.strip_prefix("[\"").and_then(|r| r.strip_suffix("\"]")) {
            assert!(!label.contains('"'), "quotes in a label are escaped: {line}");
            assert!(nodes.insert(id.to_owned()), "node ids are unique: {id}");
        } else {
            let (arrow, target) = rest.trim().rsplit_once(' ').unwrap_or_else(|| panic!("not a link: {line}"));
            assert!(arrow.starts_with("-->|\"") || arrow.starts_with("-.->|\""), "arrow: {line}");
            assert!(arrow.ends_with("\"|"), "labelled link: {line}");
            assert!(nodes.contains(id) && nodes.contains(target), "links join declared nodes: {line}");
            links += 1;
        }
    }
    assert_eq!(links, nodes.len() - 1, "a tree has one link less than nodes");
}

/// Graphviz must accept the DOT output. `dot` is installed by .ci/run; locally the check is
/// skipped when it is missing, in CI it fails.
#[test]
fn dot_output_renders_with_graphviz() {
    let dot = plan_output(&["organization", "--format", "dot"]);
    let rendered = std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().expect("stdin is piped").write_all(dot.as_bytes())?;
            child.wait_with_output()
        });
    match rendered {
        Ok(output) => {
            assert!(output.status.success(), "dot failed: {}", String::from_utf8_lossy(&output.stderr));
            assert!(String::from_utf8_lossy(&output.stdout).contains("<svg"));
        }
        Err(error) if std::env::var_os("CI").is_none() => eprintln!("skipped: graphviz `dot` not runnable: {error}"),
        Err(error) => panic!("CI must have graphviz `dot`: {error}"),
    }
}

#[test]
fn a_user_template_gets_the_documented_context() {
    let dir = project(&[(
        "steps.j2",
        "{{ root }}:{% for n in nodes %} {{ n.step }}={{ n.model }}/{{ n.action }}{% endfor %}\n",
    )]);
    let template = dir.path().join("steps.j2");
    assert_eq!(
        plan_output(&["release", "--template", template.to_str().unwrap()]),
        "release: 3=release/delete 1=release_file/delete 2=group/nullify\n"
    );
}

#[test]
fn a_template_error_names_the_template_file_and_line() {
    let dir = project(&[("steps.j2", "{{ root }}\n{{ nodes | no_such_filter }}\n")]);
    let template = dir.path().join("steps.j2");
    let template = template.to_str().unwrap();
    cascade(repository())
        .args(["plan", "release", "--template", template])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!("(in {template}:2)")));
}

#[test]
fn unknown_models_and_invalid_configs_are_refused() {
    cascade(repository())
        .args(["plan", "organisation"])
        .assert()
        .code(2)
        .stderr("error: unknown model `organisation` (did you mean `organization`?)\n");
    let dir = project(&[(
        "cascades/a.toml",
        "[models.a]\ntable = \"a\"\nchildren = [{ model = \"b\", column = \"a_id\" }]\n\
         [models.b]\ntable = \"b\"\nchildren = [{ model = \"a\", column = \"b_id\" }]\n",
    )]);
    // A delete cycle through several models is followed, not refused: `a` again below each `b`.
    cascade(dir.path())
        .args(["plan", "a"])
        .assert()
        .success()
        .stdout(predicates::str::contains("a by b_id · step 1 · delete · recursive"));
}

fn check_diamond_counts(url: &str, hand_count: impl Fn(&str) -> i64, fingerprint: impl Fn() -> String) {
    let dir = project(&[("cascades/diamond.toml", DIAMOND_CONFIG)]);
    let before = fingerprint();
    let output = cascade(dir.path())
        .args(["plan", "org", "--id", "1,2", "--id", "4", "--format", "json", "--database-url", url])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(fingerprint(), before, "plan must not change the database");
    let plan: Value = serde_json::from_slice(&output).unwrap();
    for (model, sql) in EXPECTED {
        let expected = hand_count(sql);
        let reported = if model == "audit" { &plan["nullify"][model] } else { &plan["totals"][model] };
        assert_eq!(reported.as_i64(), Some(expected), "{model}: {sql}");
    }
    assert_eq!(plan["skipped_by_status"], 1);
    // The two task nodes count their own paths; together they exceed the distinct total.
    let task_nodes: Vec<i64> = plan["tree"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|path| path["children"][0]["rows"].as_i64().unwrap())
        .collect();
    let by_project =
        hand_count("SELECT COUNT(*) FROM task WHERE project_id IN (SELECT id FROM project WHERE org_id IN (1, 2))");
    let by_member =
        hand_count("SELECT COUNT(*) FROM task WHERE assignee_id IN (SELECT id FROM member WHERE org_id IN (1, 2))");
    assert_eq!(task_nodes, [by_project, by_member]);
    assert!(by_project + by_member > plan["totals"]["task"].as_i64().unwrap(), "some tasks are reached twice");
}

#[test]
fn counts_are_exact_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(dir.path(), &format!("{DIAMOND_SCHEMA}{}", diamond_rows(1)));
    let path = url.trim_start_matches("sqlite://").to_owned();
    let hand_count = |sql: &str| {
        block_on(async {
            let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
            let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned())).fetch_one(&pool).await.unwrap();
            pool.close().await;
            count
        })
    };
    check_diamond_counts(&url, hand_count, || format!("{:?}", std::fs::read(&path).unwrap()));
}

#[test]
fn counts_are_exact_on_postgres() {
    let Some(url) = postgres_database(&format!("{DIAMOND_SCHEMA}{}", diamond_rows(1))) else { return };
    let query = |sql: &str| {
        block_on(async {
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned())).fetch_one(&pool).await.unwrap();
            pool.close().await;
            count
        })
    };
    let fingerprint = || {
        let tables = ["org", "project", "member", "task", "note", "audit"];
        tables
            .map(|t| query(&format!("SELECT COALESCE(SUM(hashtext(x::text)), 0) FROM {t} x")))
            .map(|h| h.to_string())
            .join(",")
            + &query("SELECT COUNT(*) FROM pg_class WHERE relname LIKE 'cascade_%'").to_string()
    };
    check_diamond_counts(&url, query, fingerprint);
}

/// What `plan` counts is what the run does: a row that is deleted is not also counted as
/// nullified, and a root already marked in progress (an interrupted run) is resumed, not
/// skipped.
#[test]
fn plan_counts_agree_with_the_run_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_database(
        dir.path(),
        "CREATE TABLE p (id INTEGER PRIMARY KEY, status INTEGER NOT NULL);
         CREATE TABLE a (id INTEGER PRIMARY KEY, x INTEGER REFERENCES p (id), y INTEGER REFERENCES p (id));
         CREATE INDEX a_x ON a (x);
         CREATE INDEX a_y ON a (y);
         INSERT INTO p VALUES (1, 1), (2, 0);
         INSERT INTO a VALUES (1, 1, 1), (2, 2, 1), (3, NULL, 1), (4, 1, NULL);",
    );
    let config = project(&[(
        "cascades/p.toml",
        "[models.p]\ntable = \"p\"\nstatus = { column = \"status\", proceed = [0], in_progress = 1 }\n\
         children = [\n  { model = \"a\", column = \"x\" },\n  { model = \"a\", column = \"y\", on_delete = \"nullify\" },\n]\n\n\
         [models.a]\ntable = \"a\"\nstrategy = \"bulk\"\n",
    )]);
    let json = |args: &[&str]| -> Value {
        let output =
            cascade(config.path()).args(args).args(["--format", "json", "--database-url", &url]).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let plan = json(&["plan", "p", "--id", "1,7"]);
    assert_eq!(plan["skipped_by_status"], 0, "p 1 is in progress: it is resumed");
    assert_eq!(plan["not_found"], serde_json::json!(["7"]));
    assert_eq!((&plan["totals"]["p"], &plan["totals"]["a"]), (&Value::from(1), &Value::from(2)));
    assert_eq!(plan["nullify"]["a"], 2, "rows 2 and 3: row 1 is deleted, not nullified");
    let run = json(&["delete", "p", "1", "--confirm"]);
    assert_eq!(run["deleted"]["a"], plan["totals"]["a"]);
    assert_eq!(run["nullified"]["a"], plan["nullify"]["a"]);
}

/// On PostgreSQL a bulk child that no foreign key ties to its per_row parent is deleted after the
/// parent chunk's rows, in its transaction: `--sql` lists it after the parent, and says so.
#[test]
fn sql_lists_children_without_foreign_keys_after_their_parent_on_postgres() {
    let ddl = "CREATE TABLE project (id bigint PRIMARY KEY);
               CREATE TABLE task (id bigint PRIMARY KEY, project_id bigint NOT NULL);
               CREATE INDEX task_project_id ON task (project_id);
               CREATE TABLE note (id bigint PRIMARY KEY, task_id bigint NOT NULL);
               CREATE INDEX note_task_id ON note (task_id);";
    let Some(url) = postgres_database(ddl) else { return };
    let config = "[models.project]\ntable = \"project\"\nchildren = [{ model = \"task\", column = \"project_id\" }]\n\n\
                  [models.task]\ntable = \"task\"\nchildren = [{ model = \"note\", column = \"task_id\" }]\n\n\
                  [models.note]\ntable = \"note\"\nstrategy = \"bulk\"\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    let args = ["plan", "project", "--id", "1", "--sql", "--database-url", &url];
    let plan = json_output(cascade(dir.path()).args(args).args(["--format", "json"]));
    let listed: Vec<(&str, Option<&str>)> = (plan["sql"].as_array().unwrap().iter())
        .map(|step| (step["model"].as_str().unwrap(), step["after"].as_str()))
        .collect();
    assert_eq!(listed, [("task", None), ("note", Some("task")), ("project", None)]);
    let text = cascade(dir.path()).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("-- step 1: note (in each `task` chunk's transaction, after its rows)\nDELETE"), "{text}");
}

/// A chain of relations deeper than a plan may be is refused by `validate` and `plan` with its
/// place, not a crash (no check recurses once per model: 100,000 overflowed the stack), and the
/// deepest allowed chain renders in every form.
#[test]
fn a_chain_too_deep_for_a_plan_is_refused_at_its_top() {
    let chain = |models: usize| -> String {
        (0..models)
            .map(|i| {
                let children = if i + 1 < models {
                    format!("children = [{{ model = \"m{}\", column = \"p\" }}]\n", i + 1)
                } else {
                    "strategy = \"bulk\"\n".to_owned()
                };
                format!("[models.m{i}]\ntable = \"m{i}\"\n{children}\n")
            })
            .collect()
    };
    let deep = project(&[("cascades/chain.toml", &chain(100_000))]);
    for command in [vec!["validate"], vec!["plan", "m0"], vec!["plan", "m0", "--format", "html"]] {
        let output = cascade(deep.path()).args(&command).output().unwrap();
        let printed = String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{command:?}: {printed}");
        assert!(printed.contains("error[plan-too-deep]: `m0` starts a chain of 100000 models"), "{printed}");
        assert!(printed.contains("cascades/chain.toml:1:9"), "{printed}");
    }
    let deepest = project(&[("cascades/chain.toml", &chain(1_000))]);
    for format in ["text", "json", "mermaid", "dot", "html"] {
        let output = cascade(deepest.path()).args(["plan", "m0", "--format", format]).output().unwrap();
        assert!(output.status.success(), "{format}: {}", String::from_utf8_lossy(&output.stderr));
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(printed.contains("m999"), "{format}");
        if format == "html" {
            // The drawing grows with the steps: a box per step, under a kilobyte each.
            assert_eq!(printed.matches("<g class=\"node\"").count(), 1_000);
            assert!(printed.len() < 1_000 * 1_000, "{} bytes", printed.len());
        }
    }
}

/// The estimate paces as the throttle does: the bucket (here the 5,000-row chunk of the tasks)
/// goes at once, the other 250 rows at 300 rows per second.
fn rate_limit_estimate(url: &str) {
    let config = project(&[(
        "cascades/org.toml",
        r#"[options]
"org.rows_per_second" = 300

[models.org]
table = "org"
rate_limit = "org.rows_per_second"
children = [{ model = "task", column = "org_id" }]

[models.task]
table = "task"
strategy = "bulk"
chunk_size = 5000
"#,
    )]);
    let plan = json_output(cascade(config.path()).args([
        "plan",
        "org",
        "--id",
        "1",
        "--format",
        "json",
        "--database-url",
        url,
    ]));
    assert_eq!(plan["totals"], serde_json::json!({ "org": 1, "task": 5249 }));
    let seconds = plan["estimate"]["seconds"].as_f64().unwrap();
    assert!((seconds - 250.0 / 300.0).abs() < 1e-9, "{seconds} s, not 250 rows at 300 rows/s");
    assert_eq!(plan["tree"]["seconds"], plan["estimate"]["seconds"]);
}

on_each_database!(
    the_rate_limit_estimate_counts_the_first_bucketful_on_sqlite,
    the_rate_limit_estimate_counts_the_first_bucketful_on_postgres,
    the_rate_limit_estimate_counts_the_first_bucketful_on_mariadb,
    |databases| rate_limit_estimate(&databases.create(
        "CREATE TABLE org (id INTEGER PRIMARY KEY);
         CREATE TABLE task (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL REFERENCES org (id));
         CREATE INDEX task_org ON task (org_id);
         INSERT INTO org VALUES (1);
         INSERT INTO task WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5249)
         SELECT i, 1 FROM n;"
    ))
);

/// A user's comments on the user's own posts: nullified by `author_id` (an earlier step) and
/// deleted by `post_id` under the posts (a later one). `nulled` logs every update of
/// `author_id`.
const AUTHORS: &str = "
    CREATE TABLE users (id bigint PRIMARY KEY);
    CREATE TABLE post (id bigint PRIMARY KEY, user_id bigint NOT NULL REFERENCES users (id));
    CREATE TABLE comment (id bigint PRIMARY KEY, post_id bigint NOT NULL REFERENCES post (id),
        author_id bigint REFERENCES users (id));
    CREATE INDEX post_user ON post (user_id);
    CREATE INDEX comment_post ON comment (post_id);
    CREATE INDEX comment_author ON comment (author_id);
    CREATE TABLE nulled (id bigint);
    INSERT INTO users VALUES (1), (2);
    INSERT INTO post VALUES (10, 1), (20, 2);
    INSERT INTO comment VALUES (100, 10, 1), (101, 20, 1), (102, 10, 2), (103, 20, 2);";

const AUTHORS_CONFIG: &str = "[models.user]\ntable = \"users\"\nchildren = [\n\
    { model = \"comment\", column = \"author_id\", on_delete = \"nullify\" },\n\
    { model = \"post\", column = \"user_id\" },\n]\n\n\
    [models.post]\ntable = \"post\"\nchildren = [{ model = \"comment\", column = \"post_id\" }]\n\n\
    [models.comment]\ntable = \"comment\"\n";

fn a_row_that_goes_is_deleted_only(url: &str) {
    let dir = project(&[("cascades/cascade.toml", AUTHORS_CONFIG)]);
    let json =
        |args: &[&str]| json_output(cascade(dir.path()).args(args).args(["--format", "json", "--database-url", url]));
    let plan = json(&["plan", "user", "--id", "1"]);
    let run = json(&["delete", "user", "1", "--confirm"]);
    // Comment 100 (on the user's own post) is deleted only; 101 (on another's post) is
    // nullified; 102 (another's comment on the user's post) is deleted.
    assert_eq!(run["deleted"], serde_json::json!({ "comment": 2, "post": 1, "user": 1 }), "{run}");
    assert_eq!(run["nullified"], serde_json::json!({ "comment": 1 }), "{run}");
    assert_eq!(plan["totals"], run["deleted"], "{plan}");
    assert_eq!(plan["nullify"], run["nullified"], "{plan}");
    let tree = &plan["tree"]["children"];
    let rows = |action: &str| {
        let node = tree.as_array().unwrap().iter().chain(tree[1]["children"].as_array().unwrap());
        node.filter(|node| node["model"] == "comment" && node["action"] == action)
            .map(|node| &node["rows"])
            .collect::<Vec<_>>()
    };
    assert_eq!((rows("nullify"), rows("delete")), (vec![&Value::from(1)], vec![&Value::from(2)]), "{plan}");
    let nulled = texts(url, "SELECT CAST(id AS TEXT) FROM nulled");
    assert_eq!(nulled, vec![vec![Some("101".to_owned())]], "only comment 101 was ever set to NULL");
}

on_each_database!(
    a_row_nullified_then_deleted_is_deleted_only_on_sqlite(
        "CREATE TRIGGER comment_nulled AFTER UPDATE OF author_id ON comment
         BEGIN INSERT INTO nulled VALUES (old.id); END;"
    ),
    a_row_nullified_then_deleted_is_deleted_only_on_postgres(
        "CREATE FUNCTION log_nulled() RETURNS trigger LANGUAGE plpgsql AS
         $$ BEGIN INSERT INTO nulled VALUES (OLD.id); RETURN NEW; END $$;
         CREATE TRIGGER comment_nulled AFTER UPDATE OF author_id ON comment
         FOR EACH ROW EXECUTE FUNCTION log_nulled();"
    ),
    |databases, trigger| a_row_that_goes_is_deleted_only(&databases.create(&format!("{AUTHORS}{trigger}")))
);
