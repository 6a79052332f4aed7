//! `cascade demo`, the README's main job, on a fresh directory.

use crate::common;

use cascade::db::Statement;
use cascade::db::{Access, Database};
use common::{block_on, cascade, repository};

#[test]
fn the_demo_builds_validates_plans_and_deletes_one_organization() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let output = cascade(repository())
        .args(["demo", "--rows", "30000", "--db", db.to_str().unwrap()])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let output = String::from_utf8(output).unwrap();
    for section in [
        "== cascade validate",
        "ok: no problems found",
        "== cascade plan organization --id 1",
        "totals (each row once):",
        "== cascade delete organization 1 --confirm",
        "deleted:",
    ] {
        assert!(output.contains(section), "missing `{section}` in:\n{output}");
    }
    let texts = |sql: &str| {
        block_on(async {
            let database = Database::connect(&format!("sqlite://{}", db.display()), Access::ReadOnly).await.unwrap();
            let rows = database.fetch_texts(&Statement { sql: sql.to_owned(), params: Vec::new() }).await.unwrap();
            database.close().await;
            rows
        })
    };
    assert!(texts("PRAGMA foreign_key_check").is_empty(), "nothing orphaned");
    let left = texts("SELECT CAST(id AS TEXT) FROM organization ORDER BY id");
    assert!(left.len() >= 2, "other organizations stay: {left:?}");
    assert_ne!(left[0][0].as_deref(), Some("1"), "organization 1 is gone");
    let projects_of_1 = texts("SELECT CAST(COUNT(*) AS TEXT) FROM project WHERE organization_id = 1");
    assert_eq!(projects_of_1[0][0].as_deref(), Some("0"));
    let runs = texts("SELECT outcome FROM cascade_run");
    assert_eq!(runs, vec![vec![Some("succeeded".to_owned())]]);
}

/// After `cargo install`, outside any checkout: the demo uses its built-in config and leaves it
/// beside the database for the next commands.
#[test]
fn the_demo_runs_anywhere_with_its_built_in_config() {
    let dir = tempfile::tempdir().unwrap();
    let output = cascade(dir.path())
        .args(["demo", "--rows", "3000", "--db", "demo.db"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let output = String::from_utf8(output).unwrap();
    assert!(output.contains("the demo config (built in) is in cascades-demo"), "{output}");
    for name in ["issues.toml", "organization.toml", "outbox.toml", "project.toml"] {
        assert!(dir.path().join("cascades-demo").join(name).is_file(), "{name}");
    }
    cascade(dir.path())
        .args(["--config", "cascades-demo", "validate", "--database-url", "sqlite://demo.db"])
        .assert()
        .success();
    // A directory that does not exist is an error, not created.
    cascade(dir.path()).args(["demo", "--rows", "3000", "--db", "missing/demo.db"]).assert().code(2);
    assert!(!dir.path().join("missing").exists());
}

/// The README's quick start: `cascade demo` where the config is, then `cascade plan` with no
/// flags finds the database the demo built (and the demo's hint needs no flags either).
#[test]
fn after_the_demo_plan_needs_no_flags() {
    let files: Vec<(String, &str)> =
        cascade::demo::CONFIG_FILES.iter().map(|(name, text)| (format!("cascades/{name}"), *text)).collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(name, text)| (name.as_str(), *text)).collect();
    let dir = common::project(&files);
    let demo = cascade(dir.path()).args(["demo", "--rows", "30000"]).assert().success().get_output().stdout.clone();
    let demo = String::from_utf8(demo).unwrap();
    assert!(dir.path().join("cascade-demo.db").is_file(), "{demo}");
    assert!(demo.contains("try `cascade plan organization --id 2`"), "{demo}");
    for id in ["1", "2"] {
        let plan = cascade(dir.path()).args(["plan", "organization", "--id", id]).assert().success();
        let plan = String::from_utf8(plan.get_output().stdout.clone()).unwrap();
        let counted = if id == "1" { "not found: 1" } else { "totals (each row once):" };
        assert!(plan.contains(counted), "plan --id {id}:\n{plan}");
    }
}
