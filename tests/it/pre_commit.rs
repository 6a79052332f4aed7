//! The hooks of `.pre-commit-hooks.yaml`, run by the real `pre-commit` (from PyPI; `.ci/run`
//! installs it) in scratch git repositories holding a good and a bad config. The system hook
//! runs the `cascade` built for these tests; the rust hook builds cascade with cargo first (a
//! cold release build), so it runs only when asked: `cargo test --test pre_commit -- --ignored`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{project, repository, tools};
use tempfile::TempDir;

const MANIFEST: &str = ".pre-commit-hooks.yaml";

const GOOD: &str =
    "[models.a]\ntable = \"a\"\nchildren = [{ model = \"b\", column = \"a_id\" }]\n\n[models.b]\ntable = \"b\"\n";

/// `ghost` at line 3, column 23.
const BAD: &str = "[models.a]\ntable = \"a\"\nchildren = [{ model = \"ghost\", column = \"a_id\" }]\n";

fn pre_commit() -> Option<PathBuf> {
    tools::required("pre-commit", "pip install pre-commit")
}

/// Runs git in `dir`, which must succeed.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A git repository holding `files`, all staged (pre-commit checks staged files).
fn git_repository(files: &[(&str, &str)]) -> TempDir {
    let dir = project(files);
    git(dir.path(), &["init", "--quiet"]);
    git(dir.path(), &["add", "--all"]);
    dir
}

/// A hooks repository: the project's manifest, as it is in the working tree, committed alone.
fn hooks_repository() -> (TempDir, String) {
    let manifest = std::fs::read_to_string(repository().join(MANIFEST)).expect("the manifest");
    let dir = git_repository(&[(MANIFEST, &manifest)]);
    git(dir.path(), &["commit", "--quiet", "-m", "hooks"]);
    let head = git(dir.path(), &["rev-parse", "HEAD"]);
    (dir, head)
}

/// `pre-commit ARGS` in `dir`, with its own cache, the tests' `cascade` first on `PATH` and no
/// database in the environment.
fn run_pre_commit(pre_commit: &Path, dir: &Path, home: &Path, args: &[&str]) -> (Output, String) {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_cascade"));
    let path = std::env::join_paths(
        std::iter::once(binary.parent().unwrap().to_owned())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let output = Command::new(pre_commit)
        .args(args)
        .args(["--color", "never"])
        .current_dir(dir)
        .env("PRE_COMMIT_HOME", home)
        .env("PATH", path)
        .env_remove("CASCADE_DATABASE_URL")
        .output()
        .expect("run pre-commit");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output, text)
}

#[test]
fn pre_commit_accepts_the_manifest() {
    let Some(pre_commit) = pre_commit() else { return };
    let home = tempfile::tempdir().unwrap();
    let (output, text) = run_pre_commit(&pre_commit, repository(), home.path(), &["validate-manifest", MANIFEST]);
    assert!(output.status.success(), "{text}");
}

#[test]
fn the_system_hook_passes_a_good_config_and_fails_a_bad_one_at_its_place() {
    let Some(pre_commit) = pre_commit() else { return };
    let (hooks, _) = hooks_repository();
    let hooks = hooks.path().to_str().unwrap();
    let home = tempfile::tempdir().unwrap();

    let good = git_repository(&[("cascades/cascade.toml", GOOD)]);
    let args = ["try-repo", hooks, "cascade-validate-system", "--all-files"];
    let (output, text) = run_pre_commit(&pre_commit, good.path(), home.path(), &args);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("cascade validate") && text.contains("Passed"), "{text}");

    let bad = git_repository(&[("cascades/cascade.toml", BAD)]);
    let (output, text) = run_pre_commit(&pre_commit, bad.path(), home.path(), &args);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("Failed"), "{text}");
    assert!(text.contains("error[unknown-model]"), "{text}");
    assert!(text.contains("cascades/cascade.toml:3:23"), "the output names file:line:column: {text}");
}

#[test]
fn the_hook_runs_when_a_config_or_schema_file_is_committed_and_not_otherwise() {
    let Some(pre_commit) = pre_commit() else { return };
    let (hooks, _) = hooks_repository();
    let hooks = hooks.path().to_str().unwrap();
    let home = tempfile::tempdir().unwrap();
    let bad = git_repository(&[("cascades/cascade.toml", BAD), ("README.md", "# app\n"), ("schema.sql", "")]);

    // Only a README in the commit: the bad config is not checked.
    let (output, text) = run_pre_commit(
        &pre_commit,
        bad.path(),
        home.path(),
        &["try-repo", hooks, "cascade-validate-system", "--files", "README.md"],
    );
    assert!(output.status.success(), "{text}");
    assert!(text.contains("(no files to check)Skipped"), "{text}");

    // A schema file in the commit: the whole config is checked, not only the files committed.
    for committed in ["schema.sql", "cascades/cascade.toml"] {
        let args = ["try-repo", hooks, "cascade-validate-system", "--files", committed];
        let (output, text) = run_pre_commit(&pre_commit, bad.path(), home.path(), &args);
        assert_eq!(output.status.code(), Some(1), "{committed}: {text}");
        assert!(text.contains("cascades/cascade.toml:3:23"), "{committed}: {text}");
    }
}

#[test]
fn arguments_in_the_users_config_reach_cascade() {
    let Some(pre_commit) = pre_commit() else { return };
    let (hooks, head) = hooks_repository();
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        "repos:\n  - repo: {}\n    rev: {head}\n    hooks:\n      - id: cascade-validate-system\n        args: [--config, db/cascades, --schema, db/schema.sql]\n",
        hooks.path().display()
    );
    // Clean alone, but the schema has no table `b`: only a run with both arguments finds it.
    let user = git_repository(&[
        (".pre-commit-config.yaml", &config),
        ("db/cascades/app.toml", GOOD),
        ("db/schema.sql", "CREATE TABLE a (id INTEGER PRIMARY KEY);\n"),
    ]);
    let (output, text) = run_pre_commit(&pre_commit, user.path(), home.path(), &["run", "--all-files"]);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("error[missing-table]"), "{text}");
    assert!(text.contains("db/cascades/app.toml:6:9"), "{text}");
}

/// The two hooks differ only in how `cascade` is found: each one's lines other than its id,
/// description and language are the same, so the system hook's runs above cover the rust
/// hook's command.
#[test]
fn both_hooks_run_the_same_command() {
    let manifest = std::fs::read_to_string(repository().join(MANIFEST)).unwrap();
    let hooks: Vec<Vec<&str>> = manifest
        .split("\n- ")
        .skip(1)
        .map(|hook| {
            hook.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .filter(|line| !["id:", "description:", "language:"].iter().any(|key| line.starts_with(key)))
                .collect()
        })
        .collect();
    assert_eq!(hooks.len(), 2, "{manifest}");
    assert_eq!(hooks[0], hooks[1]);
    assert!(hooks[0].contains(&"entry: cascade validate"), "{:?}", hooks[0]);
    assert!(manifest.contains("- id: cascade-validate\n") && manifest.contains("language: rust"));
    assert!(manifest.contains("- id: cascade-validate-system\n") && manifest.contains("language: system"));
}

/// The rust hook as a user gets it: pre-commit clones this repository (its committed and staged
/// files) and builds cascade with `cargo install`. A cold release build: minutes.
#[test]
#[ignore = "builds cascade in release mode with cargo install (minutes); run with --ignored"]
fn the_rust_hook_builds_cascade_and_fails_a_bad_config() {
    let Some(pre_commit) = pre_commit() else { return };
    let home = tempfile::tempdir().unwrap();
    let bad = git_repository(&[("cascades/cascade.toml", BAD)]);
    let repository = repository().to_str().unwrap();
    let args = ["try-repo", repository, "cascade-validate", "--all-files"];
    let (output, text) = run_pre_commit(&pre_commit, bad.path(), home.path(), &args);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("cascades/cascade.toml:3:23"), "{text}");
}
