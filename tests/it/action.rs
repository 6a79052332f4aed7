//! The composite GitHub Action (`action.yml`), run as the runner would run it: each `run` step's
//! script under bash with its `env` (the `${{ ... }}` expressions evaluated from the inputs), in a
//! clone of a repository whose pull request changes the config, against a stand-in of GitHub's
//! API. `uses` steps (the cache) are the runner's, not the action's, and are skipped.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::github::{GithubApi, Identity, PULL_REQUEST_EVENT, REPOSITORY, TOKEN};
use serde_yaml_ng::Value;

/// The action's steps as the runner sees them.
fn action() -> Value {
    let text = std::fs::read_to_string(common::repository().join("action.yml")).expect("action.yml is readable");
    serde_yaml_ng::from_str(&text).expect("action.yml is YAML")
}

/// `text` with every `${{ expression }}` replaced; the expressions the action may use are the
/// inputs and a few `github` and `runner` values.
fn evaluate(text: &str, inputs: &BTreeMap<String, String>, context: &BTreeMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("an expression ends") + start;
        let expression = rest[start + 3..end].trim();
        let value = match expression.strip_prefix("inputs.") {
            Some(name) => {
                let value = inputs.get(name).unwrap_or_else(|| panic!("action.yml uses an undeclared input `{name}`"));
                evaluate(value, inputs, context)
            }
            None => context
                .get(expression)
                .unwrap_or_else(|| panic!("an expression the test cannot evaluate: {expression}"))
                .clone(),
        };
        out.push_str(&value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// What one run of the action did: each step's name, exit code and output.
struct Run {
    steps: Vec<(String, i32, String)>,
}

impl Run {
    fn step(&self, name: &str) -> &(String, i32, String) {
        self.steps.iter().find(|(step, _, _)| step == name).unwrap_or_else(|| panic!("no step `{name}` ran"))
    }
}

/// Runs the action's steps in `workspace` as a pull request onto `main`, stopping at the first
/// that fails, as the runner does.
fn run_action(workspace: &Path, given: &[(&str, &str)], environment: &[(&str, String)]) -> Run {
    let action = action();
    let mut inputs = BTreeMap::new();
    for (name, input) in action["inputs"].as_mapping().expect("inputs") {
        let default = input["default"].as_str().unwrap_or_default();
        inputs.insert(name.as_str().unwrap().to_owned(), default.to_owned());
    }
    for (name, value) in given {
        assert!(inputs.contains_key(*name), "the action has no input `{name}`");
        inputs.insert((*name).to_owned(), (*value).to_owned());
    }
    let context = BTreeMap::from([
        ("github.token", TOKEN.to_owned()),
        ("github.action_path", common::repository().display().to_string()),
        ("github.action_ref", String::new()),
        ("runner.os", "Linux".to_owned()),
    ]);
    let home = tempfile::tempdir().unwrap();
    let binary = Path::new(env!("CARGO_BIN_EXE_cascade"));
    let path = format!("{}:{}", binary.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let github_path = home.path().join("github_path");
    let mut steps = Vec::new();
    for step in action["runs"]["steps"].as_sequence().expect("steps") {
        let name = step["name"].as_str().expect("every step is named").to_owned();
        if let Some(uses) = step["uses"].as_str() {
            assert!(uses.starts_with("actions/cache@"), "a `uses` step the test does not know: {uses}");
            continue;
        }
        assert_eq!(step["shell"].as_str(), Some("bash"), "{name}: a composite step names its shell");
        let script = step["run"].as_str().expect("a run step");
        assert!(!script.contains("${{"), "{name}: expressions go through `env`, never into the script");
        let mut command = std::process::Command::new("bash");
        command.args(["-e", "-c", script]).current_dir(workspace).env_clear();
        command.env("PATH", &path).env("HOME", home.path()).env("GITHUB_PATH", &github_path);
        command.env("GITHUB_REPOSITORY", REPOSITORY);
        for (variable, value) in environment {
            command.env(variable, value);
        }
        if let Some(env) = step["env"].as_mapping() {
            for (variable, value) in env {
                let value = evaluate(value.as_str().unwrap_or_default(), &inputs, &context);
                command.env(variable.as_str().unwrap(), value);
            }
        }
        let output = command.output().expect("bash runs");
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        let code = output.status.code().expect("an exit code");
        steps.push((name, code, text));
        if code != 0 {
            break;
        }
    }
    Run { steps }
}

fn git(dir: &Path, args: &[&str]) {
    let output = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

const CONFIG: &str = r#"
[models.org]
table = "org"
children = [{ model = "member", column = "org_id", on_delete = "nullify" }]

[models.member]
table = "member"
strategy = "bulk"
"#;

/// A clone of `origin` checked out on a branch whose config deletes what `main`'s nullifies, with
/// no remote-tracking `main` (a shallow checkout's state): the action must fetch it.
fn pull_request() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("origin");
    std::fs::create_dir_all(origin.join("cascades")).unwrap();
    std::fs::write(origin.join("cascades/cascade.toml"), CONFIG).unwrap();
    git(&origin, &["init", "-q"]);
    git(&origin, &["add", "."]);
    git(&origin, &["commit", "-qm", "main"]);
    git(dir.path(), &["clone", "-q", "origin", "workspace"]);
    let workspace = dir.path().join("workspace");
    git(&workspace, &["checkout", "-qb", "feature"]);
    std::fs::write(workspace.join("cascades/cascade.toml"), CONFIG.replace(", on_delete = \"nullify\"", "")).unwrap();
    git(&workspace, &["commit", "-qam", "delete the members"]);
    git(&workspace, &["update-ref", "-d", "refs/remotes/origin/main"]);
    std::fs::write(dir.path().join("event.json"), PULL_REQUEST_EVENT).unwrap();
    (dir, workspace)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_action_validates_comments_once_and_gates_by_severity() {
    let (api, server) = GithubApi::start(Identity::Actions, Vec::new()).await;
    let (dir, workspace) = pull_request();
    let environment = vec![
        ("GITHUB_BASE_REF", "main".to_owned()),
        ("GITHUB_EVENT_PATH", dir.path().join("event.json").display().to_string()),
        ("GITHUB_API_URL", server.uri()),
        ("GITHUB_STEP_SUMMARY", dir.path().join("summary.md").display().to_string()),
    ];
    let run = {
        let (workspace, environment) = (workspace.clone(), environment.clone());
        tokio::task::spawn_blocking(move || run_action(&workspace, &[], &environment)).await.unwrap()
    };
    let (_, code, output) = run.step("Install cascade");
    assert_eq!(*code, 0, "{output}");
    assert!(
        output.contains(&format!("using {}", env!("CARGO_BIN_EXE_cascade"))),
        "the built binary is reused: {output}"
    );
    assert_eq!(run.step("Validate the config").1, 0, "{}", run.step("Validate the config").2);
    let (_, code, output) = run.step("Review the change");
    assert_eq!(*code, 1, "a destructive change fails the default gate: {output}");
    assert!(
        output.contains("::error file=cascades/cascade.toml,line=4,col=13,title=destructive (on_delete_changed)::"),
        "{output}"
    );
    assert!(output.contains("posted the review as comment 5000"), "{output}");
    let reviews = api.reviews();
    assert_eq!(reviews.len(), 1);
    assert!(reviews[0].body.contains("`org → member (org_id)` | `nullify` → `delete`"), "{}", reviews[0].body);

    // Run again with the gate off: the same comment is updated, and the check passes.
    let run = {
        let (workspace, environment) = (workspace.clone(), environment.clone());
        tokio::task::spawn_blocking(move || run_action(&workspace, &[("fail-on", "none")], &environment)).await.unwrap()
    };
    let (_, code, output) = run.step("Review the change");
    assert_eq!(*code, 0, "{output}");
    assert!(output.contains("updated the review in comment 5000"), "{output}");
    assert_eq!(api.reviews().len(), 1);
    assert!(!output.contains(TOKEN), "the token is never shown");

    // A config with errors stops the action at validation, with annotations.
    std::fs::write(workspace.join("cascades/cascade.toml"), CONFIG.replace("model = \"member\"", "model = \"membr\""))
        .unwrap();
    let run = tokio::task::spawn_blocking(move || run_action(&workspace, &[], &environment)).await.unwrap();
    let (_, code, output) = run.step("Validate the config");
    assert_eq!(*code, 1, "{output}");
    assert!(output.contains("::error file=cascades/cascade.toml,line=4,col="), "{output}");
    assert!(
        run.steps.iter().all(|(name, _, _)| name != "Review the change"),
        "the review does not run after a failed step"
    );
}

#[test]
fn outside_a_pull_request_the_review_step_does_nothing() {
    let (_dir, workspace) = pull_request();
    let run = run_action(&workspace, &[], &[]);
    let (_, code, output) = run.step("Review the change");
    assert_eq!((*code, output.as_str()), (0, "not a pull request: nothing to review\n"));
}
