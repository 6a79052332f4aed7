//! `cascade diff` from the command line: configs compared from directories and from git
//! revisions, every output format, the `--fail-on` gate, counts on both databases, and the sticky
//! pull-request comment against a stand-in of GitHub's API.

use crate::common;

use common::github::{ACTIONS_BOT, Comment, GithubApi, Identity, Listing, PULL_REQUEST_EVENT, REPOSITORY, TOKEN};
use common::inert::{live_markdown, raw_controls, workflow_commands};
use common::{cascade, json_output, on_each_database, project};
use serde_json::{Value, json};
use std::path::Path;

const BASE: &str = r#"
[models.org]
table = "org"
children = [
  { model = "project", column = "org_id" },
  { model = "member", column = "org_id", on_delete = "nullify" },
]

[models.project]
table = "project"
children = [{ model = "task", column = "project_id" }]

[models.task]
table = "task"
strategy = "bulk"

[models.member]
table = "member"
strategy = "bulk"
"#;

/// A project holding the base config in `base/` and `head` in `cascades/`.
fn pair(head: &str) -> tempfile::TempDir {
    project(&[("base/cascade.toml", BASE), ("cascades/cascade.toml", head)])
}

fn nullify_to_delete() -> String {
    BASE.replace(
        "{ model = \"member\", column = \"org_id\", on_delete = \"nullify\" }",
        "{ model = \"member\", column = \"org_id\" }",
    )
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = cascade(dir).arg("diff").args(args).output().expect("run cascade diff");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_same_config_is_no_change_and_passes_every_gate() {
    let dir = pair(BASE);
    let (code, out, _) = run(dir.path(), &["--base", "base", "--fail-on", "attention"]);
    assert_eq!((code, out.as_str()), (0, "no change to deletions\n"));
    let json = json_output(cascade(dir.path()).args(["diff", "--base", "base", "--format", "json"]));
    assert_eq!(json["changes"], json!([]));
    assert!(json.get("counts").is_none(), "counts only with a database: {json}");
}

#[test]
fn json_lists_each_change_with_its_severity_kind_and_reason() {
    let dir = pair(&nullify_to_delete());
    let json = json_output(cascade(dir.path()).args(["diff", "--base", "base", "--format", "json"]));
    let change = &json["changes"][0];
    assert_eq!(json["changes"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(change["severity"], "destructive");
    assert_eq!(change["kind"], "on_delete_changed");
    assert_eq!(change["model"], "org");
    assert_eq!(change["relation"], "org → member (org_id)");
    assert_eq!((&change["before"], &change["after"]), (&json!("nullify"), &json!("delete")));
    assert!(change["reason"].as_str().unwrap().contains("now they are deleted"), "{change}");
    assert_eq!(change["roots"], json!(["org"]));
    assert_eq!(change["location"], json!({"side": "head", "file": "cascades/cascade.toml", "line": 6, "column": 3}));
    assert_eq!(json["summary"], json!({"destructive": 1, "attention": 0, "safe": 0}));
}

#[test]
fn fail_on_gates_by_severity() {
    let destructive = pair(&nullify_to_delete());
    let attention =
        pair(&BASE.replace("  { model = \"member\", column = \"org_id\", on_delete = \"nullify\" },\n", ""));
    let safe =
        pair(&BASE.replace(
            "strategy = \"bulk\"\n\n[models.member]",
            "strategy = \"bulk\"\nchunk_size = 50\n\n[models.member]",
        ));
    let cases = [
        (&destructive, "destructive", 1),
        (&destructive, "attention", 1),
        (&attention, "destructive", 0),
        (&attention, "attention", 1),
        (&safe, "destructive", 0),
        (&safe, "attention", 0),
    ];
    for (dir, fail_on, expected) in cases {
        let (code, out, err) = run(dir.path(), &["--base", "base", "--fail-on", fail_on]);
        assert_eq!(code, expected, "--fail-on {fail_on}:\n{out}{err}");
        assert!(out.starts_with("1 change to deletions"), "{out}");
    }
    // Without --fail-on a review never fails.
    assert_eq!(run(destructive.path(), &["--base", "base"]).0, 0);
}

#[test]
fn human_markdown_and_github_forms() {
    let dir = pair(&nullify_to_delete());
    let (_, human, _) = run(dir.path(), &["--base", "base"]);
    assert!(human.starts_with("1 change to deletions: 1 destructive, 0 attention, 0 safe\n"), "{human}");
    assert!(human.contains("destructive on delete changed: org → member (org_id): nullify → delete"), "{human}");
    assert!(human.contains("cascades/cascade.toml:6:3 · reaches org"), "{human}");

    let (_, markdown, _) = run(dir.path(), &["--base", "base", "--format", "markdown"]);
    assert!(markdown.starts_with("<!-- cascade-diff -->\n### cascade diff: 1 change to deletions"), "{markdown}");
    assert!(markdown.contains("| `org` | 1 | 0 | 0 |"), "{markdown}");
    assert!(
        markdown.contains("| 🔴 **destructive** | on delete changed: `org → member (org_id)` | `nullify` → `delete` |"),
        "{markdown}"
    );

    let (_, github, _) = run(dir.path(), &["--base", "base", "--format", "github"]);
    assert!(
        github.starts_with("::error file=cascades/cascade.toml,line=6,col=3,title=destructive (on_delete_changed)::"),
        "{github}"
    );
    assert_eq!(github.lines().count(), 1, "one workflow command per change: {github}");
}

#[test]
fn a_config_with_errors_is_not_reviewed() {
    let dir = pair(&BASE.replace("model = \"task\"", "model = \"tsak\""));
    let (code, out, err) = run(dir.path(), &["--base", "base"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("unknown model `tsak`"), "{err}");
    assert!(err.contains("error: the head config has errors"), "{err}");
    assert!(out.is_empty());
    let (code, _, err) = run(dir.path(), &["--base", "missing"]);
    assert_eq!(code, 2);
    assert!(err.contains("error: --base: config path `missing` does not exist"), "{err}");
    assert!(!err.contains("--config DIR"), "the hint is about the head's config, not the base's: {err}");
}

/// Names that a valid config may have, each made to act once printed: a markdown link, an
/// image, HTML, a mention, a bare address, a backtick and a pipe that would close a code span or
/// a table cell, and workflow commands for a CI log.
const HOSTILE_NAMES: &[&str] = &[
    "[click](https://evil.example)",
    "x` ![img](https://evil.example/i.png) `y",
    "<img src=x onerror=alert(1)>",
    "@octocat",
    "www.evil.example",
    "a|b`|`c",
    "::error::pwned",
    "  ::warning file=x::pwned",
    "see ##[error]pwned",
];

/// A hostile name of a root model, which the human form prints at the start of a line.
const HOSTILE_ROOT: &str = "::notice::a root";

/// A head config that adds each hostile name as a model and as a relation of `org`, and a root
/// model of a hostile name.
fn hostile_head() -> String {
    let mut head = BASE.replace(
        "  { model = \"project\", column = \"org_id\" },\n",
        &HOSTILE_NAMES
            .iter()
            .map(|name| format!("  {{ model = {name:?}, column = \"org_id\" }},\n"))
            .collect::<String>(),
    );
    for name in HOSTILE_NAMES.iter().chain([&HOSTILE_ROOT]) {
        head += &format!("\n[models.{name:?}]\ntable = \"t\"\nstrategy = \"bulk\"\n");
    }
    head
}

/// Names reach a terminal, a CI log and a pull-request comment as text only: the human and the
/// GitHub forms start no workflow command, and the markdown comment has no live link, image,
/// HTML or mention, each name shown as code.
#[test]
fn hostile_names_print_as_text_in_every_form() {
    let dir = pair(&hostile_head());
    let (code, json, err) = run(dir.path(), &["--base", "base", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let changes = serde_json::from_str::<Value>(&json).unwrap()["changes"].as_array().unwrap().len();
    assert!(changes > HOSTILE_NAMES.len(), "{json}");
    assert!(!json.contains("##["), "the JSON says `##[` as `##\\u005b`, which starts no command:\n{json}");

    let (_, human, _) = run(dir.path(), &["--base", "base"]);
    assert_eq!(workflow_commands(&human), Vec::<&str>::new(), "{human}");
    assert!(human.contains("\n  \\u{3a}:notice::a root  0 destructive, 0 attention, 1 safe\n"), "{human}");

    let (_, github, _) = run(dir.path(), &["--base", "base", "--format", "github"]);
    let commands: Vec<&str> = github.lines().collect();
    assert_eq!(commands.len(), changes, "one workflow command per change:\n{github}");
    for command in commands {
        let kind = command.split(' ').next().unwrap();
        assert!(["::error", "::warning", "::notice"].contains(&kind), "{command}");
    }

    let (_, markdown, _) = run(dir.path(), &["--base", "base", "--format", "markdown"]);
    assert_eq!(live_markdown(&markdown), Vec::<String>::new(), "{markdown}");
    assert_eq!(workflow_commands(&markdown), Vec::<&str>::new(), "{markdown}");
    assert!(markdown.contains("| 🟢 safe | model added: `[click](https://evil.example)` |"), "{markdown}");
    assert!(markdown.contains("relation added: `org → @octocat (org_id)`"), "{markdown}");
}

/// A name with a control character is refused (`invalid-name`): the review does not run, and
/// neither its diagnostics nor anything else prints the character raw or lets it start a
/// workflow command on a line of its own.
#[test]
fn a_name_with_a_control_character_is_refused_and_printed_escaped() {
    let head = format!("{BASE}\n[models.\"a\\n::error::pwned\\u001b[2J\"]\ntable = \"a\"\n");
    let dir = pair(&head);
    for format in ["human", "markdown", "github"] {
        let (code, out, err) = run(dir.path(), &["--base", "base", "--format", format]);
        assert_eq!((code, out.as_str()), (2, ""), "{err}");
        assert!(err.contains("error[invalid-name]: the model name `a\\n::error::pwned\\u{1b}[2J` holds"), "{err}");
        assert_eq!(raw_controls(&err), Vec::<char>::new(), "{err}");
        assert_eq!(workflow_commands(&err), Vec::<&str>::new(), "{err}");
    }
}

/// `--base-rev ''` (an unset variable in a workflow) is an empty revision, and says so.
#[test]
fn an_empty_base_revision_is_refused_as_empty() {
    let dir = pair(BASE);
    let (code, _, err) = run(dir.path(), &["--base-rev", ""]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("error: the revision is empty: give one such as `--base-rev origin/main`"), "{err}");
}

fn git(dir: &Path, args: &[&str]) {
    let output = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn base_rev_reads_the_config_from_git_without_a_checkout() {
    let dir = project(&[("cascades/cascade.toml", BASE), ("cascades/notes.txt", "not a config")]);
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "base"]);
    std::fs::write(dir.path().join("cascades/cascade.toml"), nullify_to_delete()).unwrap();
    std::fs::write(dir.path().join("cascades/extra.toml"), "[models.audit]\ntable = \"audit\"\n").unwrap();

    let json = json_output(cascade(dir.path()).args(["diff", "--base-rev", "main", "--format", "json"]));
    let kinds: Vec<(&str, &str)> = json["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["severity"].as_str().unwrap(), c["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("destructive", "on_delete_changed"), ("safe", "model_added")]);
    // The working tree is as it was.
    assert!(
        std::fs::read_to_string(dir.path().join("cascades/cascade.toml")).unwrap().contains("column = \"org_id\" }")
    );

    // From a subdirectory, and with the config given as one file.
    let nested = dir.path().join("cascades");
    let (code, out, err) = run(&nested, &["--config", "cascade.toml", "--base-rev", "main", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["changes"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(json["changes"][0]["kind"], "on_delete_changed");

    let (code, _, err) = run(dir.path(), &["--base-rev", "no-such-branch"]);
    assert_eq!(code, 2);
    assert!(err.contains("`no-such-branch` is not a revision of this repository"), "{err}");
    let (code, _, err) = run(dir.path(), &["--base-rev", "--output=/tmp/x"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_config_new_in_the_head_is_all_added() {
    let dir = project(&[("README", "x")]);
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "no config yet"]);
    std::fs::create_dir(dir.path().join("cascades")).unwrap();
    std::fs::write(dir.path().join("cascades/cascade.toml"), BASE).unwrap();
    let (code, out, err) = run(dir.path(), &["--base-rev", "main", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("note: `main` has no config at `cascades`: every model is new"), "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let kinds: Vec<&str> = json["changes"].as_array().unwrap().iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["model_added"; 4]);
}

const SCHEMA: &str = "
CREATE TABLE org (id BIGINT PRIMARY KEY);
CREATE TABLE project (id BIGINT PRIMARY KEY, org_id BIGINT);
CREATE TABLE task (id BIGINT PRIMARY KEY, project_id BIGINT);
CREATE TABLE member (id BIGINT PRIMARY KEY, org_id BIGINT);
CREATE INDEX project_org ON project (org_id);
CREATE INDEX task_project ON task (project_id);
CREATE INDEX member_org ON member (org_id);
INSERT INTO org VALUES (1), (2);
INSERT INTO project VALUES (10, 1), (11, 1), (12, 2);
INSERT INTO task VALUES (100, 10), (101, 10), (102, 11), (103, 12);
INSERT INTO member VALUES (1000, 1), (1001, 1), (1002, 1), (1003, 2);
";

on_each_database!(
    counts_side_by_side_on_sqlite,
    counts_side_by_side_on_postgres,
    counts_side_by_side_on_mariadb,
    |databases| {
        let url = databases.create(SCHEMA);
        let dir = pair(&nullify_to_delete());
        let json = json_output(cascade(dir.path()).args([
            "diff",
            "--base",
            "base",
            "--format",
            "json",
            "--database-url",
            &url,
            "--model",
            "org",
            "--id",
            "1",
        ]));
        let count = |sql: &str| json!(common::count(&url, sql));
        assert_eq!(
            json["counts"]["base"]["deleted"]["task"],
            count("SELECT COUNT(*) FROM task JOIN project p ON p.id = project_id WHERE p.org_id = 1")
        );
        assert_eq!(
            json["counts"]["base"]["nullified"]["member"],
            count("SELECT COUNT(*) FROM member WHERE org_id = 1")
        );
        assert_eq!(json["counts"]["head"]["deleted"]["member"], json!(3));
        assert!(json["counts"]["head"]["nullified"].get("member").is_none_or(|n| n == 0), "{json}");
        assert_eq!(json["counts"]["base"]["deleted"]["org"], json!(1));
        // Read only: nothing was deleted.
        assert_eq!(common::count(&url, "SELECT COUNT(*) FROM member WHERE org_id IS NOT NULL"), 4);
        let (_, human, _) = run(dir.path(), &["--base", "base", "--database-url", &url, "--model", "org", "--id", "1"]);
        assert!(human.contains("rows for org 1:"), "{human}");
        assert!(
            human
                .lines()
                .any(|line| line.split_whitespace().collect::<Vec<_>>() == ["member", "0", "→", "3", "3", "→", "0"]),
            "{human}"
        );
        assert!(!human.contains("not found"), "{human}");
        assert_eq!(json["counts"]["head"]["not_found"], json!([]));

        // A root with no row is said to be none, not counted as zeros alone.
        let args = ["--base", "base", "--database-url", &url, "--model", "org", "--id", "1", "--id", "99"];
        let (code, human, _) = run(dir.path(), &args);
        assert_eq!(code, 0);
        assert!(human.contains("not found (nothing to delete): 99"), "{human}");
        let markdown = run(dir.path(), &[&args[..], &["--format", "markdown"]].concat()).1;
        assert!(markdown.contains("Not found (nothing to delete): 99"), "{markdown}");
        let json = json_output(cascade(dir.path()).arg("diff").args(args).args(["--format", "json"]));
        assert_eq!(
            (&json["counts"]["base"]["not_found"], &json["counts"]["head"]["not_found"]),
            (&json!(["99"]), &json!(["99"]))
        );
    }
);

#[tokio::test(flavor = "multi_thread")]
async fn the_pull_request_gets_one_comment_updated_on_every_run() {
    // 150 other comments: the review's lands on the second page of the listing.
    let others = (0..150).map(|n| Comment::new(n, "reviewer", format!("a reviewer's comment {n}"))).collect();
    let (api, server) = GithubApi::start(Identity::Actions, others).await;

    let dir = pair(&nullify_to_delete());
    std::fs::write(dir.path().join("event.json"), PULL_REQUEST_EVENT).unwrap();
    let summary = dir.path().join("summary.md");
    let comment = |token: &str| {
        let mut command = github_comment(dir.path(), &server.uri(), REPOSITORY, token);
        command.args(["--fail-on", "destructive"]).env("GITHUB_STEP_SUMMARY", &summary);
        output_of(command)
    };

    let first = comment(TOKEN).await;
    let (out, err) = (String::from_utf8_lossy(&first.stdout), String::from_utf8_lossy(&first.stderr));
    assert_eq!(first.status.code(), Some(1), "the gate still applies: {out}{err}");
    assert!(err.contains("posted the review as comment 5150"), "{err}");
    // A second run with another change updates the same comment.
    std::fs::write(dir.path().join("cascades/cascade.toml"), BASE.replace("table = \"member\"", "table = \"members\""))
        .unwrap();
    let second = comment(TOKEN).await;
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("updated the review in comment 5150"), "{err}");

    let comments = api.comments.lock().unwrap().clone();
    let reviews = api.reviews();
    assert_eq!(reviews.len(), 1, "one review comment");
    assert!(reviews[0].body.contains("table changed: `member`"), "{}", reviews[0].body);
    assert!(!reviews[0].body.contains("on delete changed"), "the first review was replaced: {}", reviews[0].body);
    assert_eq!(comments.len(), 151, "the other comments are untouched");
    assert!(comments[..150].iter().enumerate().all(|(n, comment)| comment.body == format!("a reviewer's comment {n}")));
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(summary.matches("<!-- cascade-diff -->").count(), 2, "both runs in the job summary");

    // A refused token is an error (exit 2) that never shows the token.
    let refused = comment("wr0ng-t0ken").await;
    let (out, err) = (String::from_utf8_lossy(&refused.stdout), String::from_utf8_lossy(&refused.stderr));
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the GitHub API answered 401 to listing the comments: {\"message\":\"Bad credentials\"}"),
        "{err}"
    );
    for output in [&out, &err, &std::borrow::Cow::Owned(summary)] {
        assert!(!output.contains("t0ken"), "the token is never shown: {output}");
    }
    assert_eq!(*api.bad_tokens.lock().unwrap(), 1);
}

/// `cascade diff --github-comment` in `dir` (which holds `event.json`) against the API at
/// `api_url`, as `repository` with `token`.
fn github_comment(dir: &Path, api_url: &str, repository: &str, token: &str) -> assert_cmd::Command {
    let mut command = cascade(dir);
    command
        .args(["diff", "--base", "base", "--github-comment"])
        .env("GITHUB_TOKEN", token)
        .env("GITHUB_REPOSITORY", repository)
        .env("GITHUB_EVENT_PATH", dir.join("event.json"))
        .env("GITHUB_API_URL", api_url)
        .env_remove("GITHUB_STEP_SUMMARY")
        .timeout(common::DEADLINE);
    command
}

/// Runs `command` off the runtime, which serves the stand-in of the API meanwhile.
async fn output_of(mut command: assert_cmd::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
}

/// A pull request whose config change makes a review, with the event file in place.
fn reviewed_pull_request() -> tempfile::TempDir {
    let dir = pair(&nullify_to_delete());
    std::fs::write(dir.path().join("event.json"), PULL_REQUEST_EVENT).unwrap();
    dir
}

/// Only a comment that the token's own identity wrote is ever updated: GitHub Actions' bot's
/// for a workflow's token (which `GET /user` refuses), the user's for a personal token. Someone
/// else's comment that holds the marker (quoting a review, or planted) stays as it is, though
/// the token could edit it.
#[tokio::test(flavor = "multi_thread")]
async fn only_a_comment_of_the_tokens_own_identity_is_updated() {
    let planted = |id, author: &str| Comment::new(id, author, format!("<!-- cascade-diff --> planted by {author}"));
    for (identity, own, others) in [
        (Identity::Actions, ACTIONS_BOT, ["mallory", "cascade-ci"]),
        (Identity::User("cascade-ci"), "cascade-ci", ["mallory", ACTIONS_BOT]),
    ] {
        let (api, server) = GithubApi::start(identity, vec![planted(1, others[0]), planted(2, others[1])]).await;
        let dir = reviewed_pull_request();
        for expected in ["posted the review as comment 5002", "updated the review in comment 5002"] {
            let output = output_of(github_comment(dir.path(), &server.uri(), REPOSITORY, TOKEN)).await;
            let err = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(0), "{own}: {err}");
            assert!(err.contains(expected), "{own}: {err}");
        }
        let comments = api.comments.lock().unwrap().clone();
        assert_eq!(comments[..2], [planted(1, others[0]), planted(2, others[1])], "{own}: nobody else's changes");
        assert_eq!((comments.len(), comments[2].author.as_str()), (3, own));
    }
}

/// An API whose listing of comments never ends (every page full) is read 50 pages deep, then
/// the run fails clearly, posting nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_listing_of_comments_without_end_is_read_a_bounded_number_of_pages() {
    let (api, server) = GithubApi::start_listing(Identity::Actions, Vec::new(), Listing::Endless).await;
    let dir = reviewed_pull_request();
    let output = output_of(github_comment(dir.path(), &server.uri(), REPOSITORY, TOKEN)).await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("the pull request's comments did not end within 50 pages of 100: no comment posted"), "{err}");
    assert_eq!(server.received_requests().await.unwrap().len(), 50);
    assert!(api.comments.lock().unwrap().is_empty());
}

/// The token is sent to the repository's own API paths only: a `GITHUB_REPOSITORY` that is not
/// one `owner/name` (a `..` that would climb out of `/repos/`, a query, a fragment, an encoded
/// slash) is refused before any request, an API URL with credentials too (without showing
/// them), and a redirect is not followed.
#[tokio::test(flavor = "multi_thread")]
async fn the_token_goes_to_the_repositorys_api_only() {
    let (_, server) = GithubApi::start(Identity::Actions, Vec::new()).await;
    let dir = reviewed_pull_request();
    let repositories =
        ["acme/../../evil", "../../evil/app", "acme/app/../../x", "acme", "acme/app/x", "acme/.", "acme/..", "/app"];
    let more = ["acme/app?x=1", "acme/app#x", "acme/a%2F..", "acme/app\n", "acme/ app", "acme/app/"];
    for repository in repositories.into_iter().chain(more) {
        let output = output_of(github_comment(dir.path(), &server.uri(), repository, TOKEN)).await;
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{repository}: {err}");
        assert!(err.contains("`GITHUB_REPOSITORY` must be `owner/name`"), "{repository}: {err}");
    }
    let with_credentials = server.uri().replace("http://", "http://user:hunter2@");
    let output = output_of(github_comment(dir.path(), &with_credentials, REPOSITORY, TOKEN)).await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("`GITHUB_API_URL` must be an http:// or https:// URL with no user, password"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert_eq!(server.received_requests().await.unwrap().len(), 0, "no request was sent");

    let (_, server) = GithubApi::start_listing(Identity::Actions, Vec::new(), Listing::Redirect).await;
    let output = output_of(github_comment(dir.path(), &server.uri(), REPOSITORY, TOKEN)).await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("answered 302 to listing the comments: a redirect, not followed"), "{err}");
    let paths: Vec<String> =
        server.received_requests().await.unwrap().iter().map(|request| request.url.path().to_owned()).collect();
    assert_eq!(paths, [format!("/repos/{REPOSITORY}/issues/7/comments")], "the redirect was not followed");
}

#[test]
fn a_comment_outside_a_pull_request_is_skipped_and_outside_actions_refused() {
    let dir = pair(&nullify_to_delete());
    std::fs::write(dir.path().join("event.json"), json!({"ref": "refs/heads/main"}).to_string()).unwrap();
    let output = cascade(dir.path())
        .args(["diff", "--base", "base", "--github-comment"])
        .env("GITHUB_TOKEN", "t")
        .env("GITHUB_REPOSITORY", "acme/app")
        .env("GITHUB_EVENT_PATH", dir.path().join("event.json"))
        .env("GITHUB_API_URL", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).contains("the event is about no pull request: no comment posted"));
    let output = cascade(dir.path())
        .args(["diff", "--base", "base", "--github-comment"])
        .env_remove("GITHUB_TOKEN")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`GITHUB_TOKEN` is not set"));
}

/// `--format html`, loaded by a real browser: both plans of each root drawn side by side, the
/// changed relation marked on the head's drawing and the removed one on the base's, every text
/// escaped, and a screenshot that is not blank.
#[test]
fn the_html_page_draws_both_plans_with_the_changes_marked() {
    use common::browser::{chromium, dump_dom, painted_pixels, screenshot};
    use scraper::{Html, Selector};

    let Some(chromium) = chromium() else { return };
    let hostile = "<script>alert(1)</script>";
    let head = nullify_to_delete()
        .replace("  { model = \"project\", column = \"org_id\" },\n", "")
        .replace("[models.task]", &format!("[models.\"{hostile}\"]\ntable = \"x\"\n\n[models.task]"));
    let dir = pair(&head);
    let (code, page, err) = run(dir.path(), &["--base", "base", "--format", "html"]);
    assert_eq!(code, 0, "{err}");
    assert!(!page.contains("<script>alert"), "every text is escaped");
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"), "nothing loaded from elsewhere");
    let file = dir.path().join("diff.html");
    std::fs::write(&file, &page).unwrap();

    let dom = Html::parse_document(&dump_dom(&chromium, &file));
    let select = |css: &str| Selector::parse(css).unwrap();
    assert_eq!(dom.select(&select("script")).count(), 0);
    let changes: Vec<String> = dom
        .select(&select("table.changes tbody tr"))
        .map(|row| row.value().attr("data-severity").unwrap().to_owned())
        .collect();
    assert_eq!(changes, ["destructive", "attention", "safe"]);
    // `org` is drawn on both sides; the hostile model, a new root, only on the head's.
    let roots: Vec<&str> = dom.select(&select("section.root")).map(|s| s.value().attr("data-root").unwrap()).collect();
    assert_eq!(roots, ["org", hostile]);
    let side = |root: &str, side: &str| {
        let css = format!("section.root[data-root=\"{}\"] div.side[data-side=\"{side}\"]", root.replace('"', "\\\""));
        dom.select(&select(&css)).next().unwrap_or_else(|| panic!("{root} {side}"))
    };
    let models = |element: scraper::ElementRef| -> Vec<String> {
        let mut models: Vec<String> =
            element.select(&select("svg g.node")).map(|n| n.value().attr("data-model").unwrap().to_owned()).collect();
        models.sort();
        models
    };
    assert_eq!(models(side("org", "base")), ["member", "org", "project", "task"].map(String::from));
    assert_eq!(models(side("org", "head")), ["member", "org"].map(String::from));
    let marked = |element: scraper::ElementRef| -> Vec<(String, String)> {
        element
            .select(&select("svg g.node[data-mark]"))
            .map(|n| {
                (n.value().attr("data-model").unwrap().to_owned(), n.value().attr("data-mark").unwrap().to_owned())
            })
            .collect()
    };
    // The nullify → delete relation is marked on both sides; the removed one on the base's.
    assert_eq!(marked(side("org", "head")), [("member".to_owned(), "destructive".to_owned())]);
    let mut base_marks = marked(side("org", "base"));
    base_marks.sort();
    assert_eq!(
        base_marks,
        [("member".to_owned(), "destructive".to_owned()), ("project".to_owned(), "attention".to_owned())]
    );
    let head_edge = side("org", "head").select(&select("svg g.edge[data-mark]")).next().expect("a marked edge");
    assert_eq!(head_edge.value().attr("data-action"), Some("delete"));
    assert!(side(hostile, "base").text().collect::<String>().contains("does not declare"));
    assert_eq!(models(side(hostile, "head")), [hostile]);

    let (painted, total) = painted_pixels(&screenshot(&chromium, &file, 1400, 1000));
    assert!(painted * 100 > total, "{painted} of {total} pixels are not the white background");
}

/// A change below a remote model reaches it as a root; the page says why it has no plan of its
/// own rather than that the config does not declare it.
#[test]
fn a_remote_root_is_named_and_explained() {
    let receiver = "[models.organization]\nremote = { category = \"organization_deleted\" }\n\
                    children = [{ model = \"member\", column = \"organization_id\" }]\n\n\
                    [models.member]\ntable = \"member\"\n";
    let head = receiver.replace("table = \"member\"", "table = \"member\"\nchunk_size = 10");
    let dir = project(&[("base/cascade.toml", receiver), ("cascades/cascade.toml", &head)]);
    let (code, text, err) = run(dir.path(), &["--base", "base"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("reaches organization"), "{text}");
    let (code, page, err) = run(dir.path(), &["--base", "base", "--format", "html"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains("<code>organization</code> is a remote model"), "{page}");
    assert!(!page.contains("does not declare <code>organization</code>"), "{page}");
}
