//! `[settings] allowed_users`: destructive commands refuse any other operating-system user
//! before they touch the database; an allowed user deletes and is the run's actor.

use crate::common;

use common::{cascade, on_each_database, project, sqlite_database};

const SCHEMA: &str = "
CREATE TABLE org (id INTEGER PRIMARY KEY);
CREATE TABLE project (id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL REFERENCES org (id));
CREATE INDEX project_org_id ON project (org_id);
INSERT INTO org VALUES (1), (2);
INSERT INTO project VALUES (1, 1), (2, 1), (3, 2);
";

const MODELS: &str = r#"
[models.org]
table = "org"
children = [{ model = "project", column = "org_id" }]

[models.project]
table = "project"
strategy = "bulk"
"#;

/// The config with `allowed_users` on line 2.
fn config(users: &[&str]) -> String {
    let users: Vec<String> = users.iter().map(|user| format!("\"{user}\"")).collect();
    format!("[settings]\nallowed_users = [{}]\n{MODELS}", users.join(", "))
}

/// Who runs the tests, as `id` says (not from `$USER`).
fn current_user() -> String {
    let id = |flag: &str| {
        let output = std::process::Command::new("id").arg(flag).output().expect("id runs");
        output.status.success().then(|| String::from_utf8(output.stdout).unwrap().trim().to_owned())
    };
    id("-un").unwrap_or_else(|| format!("uid {}", id("-u").unwrap()))
}

#[test]
fn any_other_user_is_refused_before_anything_is_touched() {
    let dir = project(&[("cascades/cascade.toml", &config(&["deploy", "cascade-test-nobody"]))]);
    let url = sqlite_database(dir.path(), SCHEMA);
    let before = common::dump(&url);
    let user = current_user();
    let refused = |args: &[&str], command: &str| {
        let output =
            cascade(dir.path()).args(["--database-url", &url]).args(args).env("USER", "deploy").output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "user `{user}` may not run `{command}`: `[settings] allowed_users` (cascades/cascade.toml:2:17) \
                 allows only `deploy`, `cascade-test-nobody`"
            )),
            "{args:?}: {stderr}"
        );
    };
    // `$USER` says deploy, but the process runs as someone else.
    refused(&["delete", "org", "1", "--confirm"], "delete --confirm");
    refused(&["worker", "--once"], "worker");
    refused(&["outbox", "drain", "--once"], "outbox drain");
    refused(&["orphans", "--delete", "--confirm"], "orphans --delete --confirm");
    refused(&["duplicates", "project", "--by", "org_id", "--confirm"], "duplicates --confirm");
    refused(&["partitions", "prune", "--confirm"], "partitions prune --confirm");
    refused(&["partitions", "create", "--ahead", "3"], "partitions create");
    assert_eq!(common::dump(&url), before, "nothing deleted, no tool table created, no run recorded");

    // Reading is for everyone: a dry run and a report.
    cascade(dir.path()).args(["--database-url", &url, "delete", "org", "1"]).assert().success();
    cascade(dir.path()).args(["--database-url", &url, "duplicates", "project", "--by", "org_id"]).assert().success();
    cascade(dir.path()).args(["--database-url", &url, "orphans", "--delete"]).assert().success();
    assert_eq!(common::dump(&url), before);
}

fn an_allowed_user_deletes_and_is_the_actor(url: &str, dir: &std::path::Path) {
    let user = current_user();
    cascade(dir)
        .args(["--database-url", url, "delete", "org", "1", "--confirm"])
        .env("USER", "mallory")
        .assert()
        .success();
    assert_eq!(common::count(url, "SELECT COUNT(*) FROM project"), 1);
    assert_eq!(common::texts(url, "SELECT actor FROM cascade_run"), [[Some(user)]], "the OS user, not $USER");
    cascade(dir).args(["--database-url", url, "worker", "--once"]).assert().success();
}

on_each_database!(
    an_allowed_user_deletes_and_is_the_actor_on_sqlite(config(&["deploy", &current_user()])),
    an_allowed_user_deletes_and_is_the_actor_on_postgres(config(&[&current_user()])),
    |databases, settings| {
        let dir = project(&[("cascades/cascade.toml", &settings)]);
        an_allowed_user_deletes_and_is_the_actor(&databases.create(SCHEMA), dir.path());
    }
);

#[test]
fn an_empty_list_is_a_config_error() {
    let dir = project(&[("cascades/cascade.toml", &config(&[]))]);
    cascade(dir.path())
        .args(["validate"])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("`allowed_users` must name at least one user"));
}
