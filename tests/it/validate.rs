//! `cascade validate` from the command line: formats, exit codes, multi-file configs.

use crate::common;

use common::inert::{raw_controls, workflow_commands};
use common::{cascade, project, repository};
use serde_json::{Value, json};

/// A config with one of each kind of config problem, to be reported in one run.
const EVERYTHING_WRONG: &str = r#"[models.organization]
table = "organization"
children = [{ model = "project", column = "organization_id" }]

[models.project]
table = "project"
strategy = "bulk"
chunk_sise = 10
children = [{ model = "organization", column = "owner_project_id" }]

[outbox.scopes.organization]
shard_key = "organization_id"
categories = ["project_update"]

[outbox.scopes.project]
shard_key = "project_id"
categories = ["project_update"]

[models.broken
table = "x"
"#;

#[test]
fn the_bundled_demo_config_is_clean() {
    cascade(repository())
        .arg("validate")
        .assert()
        .success()
        .stdout("ok: no problems found\n")
        .stderr(predicates::str::contains("note: only the rules that need no database ran"));
}

#[test]
fn every_problem_is_reported_in_one_run_with_its_line() {
    let dir = project(&[("cascades/cascade.toml", EVERYTHING_WRONG)]);
    let output = cascade(dir.path()).args(["validate", "--format", "json"]).assert().code(1).get_output().clone();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let found: Vec<(String, u64)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap().to_owned(), d["line"].as_u64().unwrap()))
        .collect();
    let expected =
        [("bulk-with-children", 7), ("unknown-key", 8), ("category-in-many-scopes", 17), ("toml-syntax", 19)];
    for (code, line) in expected {
        assert!(found.contains(&(code.to_owned(), line)), "{code} at line {line} missing from {found:?}");
    }
    let human = cascade(dir.path()).arg("validate").assert().code(1).get_output().stdout.clone();
    insta::assert_snapshot!(String::from_utf8(human).unwrap());
}

#[test]
fn json_output_has_the_documented_shape() {
    let config = "[models.a]\ntable = \"a\"\nchildren = [{ model = \"b\", column = \"a_id\" }]\n\n[outbox.scopes.s]\nshard_key = \"id\"\n";
    let dir = project(&[("cascades/a.toml", config)]);
    let output = cascade(dir.path()).args(["validate", "--format", "json"]).assert().code(1).get_output().clone();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report,
        json!({
            "errors": 1,
            "warnings": 1,
            "diagnostics": [
                {
                    "severity": "error",
                    "code": "unknown-model",
                    "message": "model `a` has a relation to unknown model `b`",
                    "file": "cascades/a.toml",
                    "line": 3,
                    "column": 23,
                    "help": "declare it as [models.b] or fix the name"
                },
                {
                    "severity": "warning",
                    "code": "empty-scope",
                    "message": "outbox scope `s` registers no categories",
                    "file": "cascades/a.toml",
                    "line": 5,
                    "column": 16,
                    "help": "add its categories, or remove the scope"
                }
            ]
        })
    );
}

#[test]
fn github_output_is_one_workflow_command_per_diagnostic() {
    let config = "[models.a]\ntable = \"a\"\nchildren = [{ model = \"b\", column = \"a_id\" }]\n\n[outbox.scopes.s]\nshard_key = \"id\"\n";
    let dir = project(&[("cascades/a.toml", config)]);
    cascade(dir.path()).args(["validate", "--format", "github"]).assert().code(1).stdout(
        "::error file=cascades/a.toml,line=3,col=23,title=unknown-model::model `a` has a relation to unknown model `b`%0Ahelp: declare it as [models.b] or fix the name\n\
         ::warning file=cascades/a.toml,line=5,col=16,title=empty-scope::outbox scope `s` registers no categories%0Ahelp: add its categories, or remove the scope\n",
    );
}

/// What a command says after a config path that does not exist or holds no config.
const CONFIG_HINT: &str = "hint: give the config with `--config DIR` (every *.toml file below it) or `--config FILE`, \
                           or write a starting config from a database with `cascade init --database-url URL`\n";

#[test]
fn exit_codes_separate_clean_problems_and_usage() {
    let clean = project(&[("cascades/a.toml", "[models.a]\ntable = \"a\"\n")]);
    cascade(clean.path()).arg("validate").assert().code(0);

    let warning = project(&[("cascades/a.toml", "[outbox.scopes.s]\nshard_key = \"id\"\n")]);
    cascade(warning.path()).arg("validate").assert().code(0);
    cascade(warning.path()).args(["validate", "--deny-warnings"]).assert().code(1);

    let error = project(&[("cascades/a.toml", "[models.a]\n")]);
    cascade(error.path()).arg("validate").assert().code(1);

    cascade(clean.path())
        .args(["validate", "--config", "missing"])
        .assert()
        .code(2)
        .stderr(format!("error: config path `missing` does not exist\n{CONFIG_HINT}"));
    let empty = project(&[("cascades/README.md", "no configs here")]);
    cascade(empty.path())
        .arg("validate")
        .assert()
        .code(2)
        .stderr(format!("error: no *.toml files under `cascades`\n{CONFIG_HINT}"));
    cascade(clean.path()).args(["validate", "--format", "xml"]).assert().code(2);
}

/// Run where there is no `cascades/` (outside a project), every command that reads the config
/// says how to give one.
#[test]
fn outside_a_project_a_missing_config_says_how_to_give_one() {
    let nowhere = project(&[]);
    for command in [&["validate"][..], &["plan", "organization"], &["runs"], &["delete", "organization", "1"]] {
        cascade(nowhere.path())
            .args(command)
            .assert()
            .code(2)
            .stderr(format!("error: config path `cascades` does not exist\n{CONFIG_HINT}"));
    }
}

#[test]
fn a_config_directory_merges_every_toml_file_below_it() {
    let dir = project(&[
        (
            "cascades/organization.toml",
            "[models.organization]\ntable = \"organization\"\nchildren = [{ model = \"project\", column = \"organization_id\" }]\n",
        ),
        ("cascades/nested/project.toml", "[models.project]\ntable = \"project\"\noutbox = \"project_update\"\n"),
        (
            "cascades/outbox.toml",
            "[outbox.scopes.organization]\nshard_key = \"organization_id\"\ncategories = [\"project_update\"]\n",
        ),
        ("cascades/notes.txt", "not a config"),
    ]);
    cascade(dir.path()).arg("validate").assert().success().stdout("ok: no problems found\n");
    cascade(dir.path()).args(["validate", "--config", "cascades/organization.toml"]).assert().code(1);
}

#[test]
fn a_model_declared_in_two_files_names_both() {
    let dir = project(&[
        ("cascades/a.toml", "[models.project]\ntable = \"project\"\n"),
        ("cascades/b.toml", "[models.project]\ntable = \"project\"\n"),
    ]);
    cascade(dir.path()).args(["validate", "--format", "github"]).assert().code(1).stdout(
        "::error file=cascades/b.toml,line=1,col=9,title=duplicate-declaration::model `project` is declared twice (first at cascades/a.toml:1:9)%0Ahelp: keep one declaration of the model\n",
    );
}

/// A misspelt key on line 4 of a file with old Mac line endings (a carriage return alone).
const CARRIAGE_RETURNS_ONLY: &str = "[models.a]\rtable = \"a\"\r\rchunk_sise = 10\r";

#[test]
fn a_lone_carriage_return_ends_a_line() {
    let dir = project(&[("cascades/a.toml", CARRIAGE_RETURNS_ONLY)]);
    cascade(dir.path()).args(["validate", "--format", "github"]).assert().code(1).stdout(
        "::error file=cascades/a.toml,line=1,col=11,title=toml-syntax::a line ends with a carriage return alone: TOML lines end with LF or CRLF%0Ahelp: 4 lines end this way (old Mac line endings): save the file with LF line endings\n\
         ::error file=cascades/a.toml,line=4,col=1,title=unknown-key::unknown key `chunk_sise` in model `a`%0Ahelp: did you mean `chunk_size`?\n",
    );
    let human = cascade(dir.path()).arg("validate").assert().code(1).get_output().stdout.clone();
    let human = String::from_utf8(human).unwrap();
    assert!(human.len() < 2_000, "{} bytes of output:\n{human}", human.len());
    insta::assert_snapshot!(human);
}

#[test]
fn a_large_file_with_lone_carriage_returns_prints_each_problem_with_its_own_line() {
    let models: String = (0..5_200).map(|i| format!("[models.m{i}]\rtable = \"t{i}\"\rchunk_size = 100\r\r")).collect();
    let config = format!("{models}[models.last]\rtable = \"last\"\rchunk_sise = 10\r");
    assert!(config.len() > 250_000);
    let dir = project(&[("cascades/a.toml", &config)]);

    let output = cascade(dir.path()).args(["validate", "--format", "json"]).assert().code(1).get_output().clone();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let found: Vec<(&str, u64, u64)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap(), d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap()))
        .collect();
    assert_eq!(found, [("toml-syntax", 1, 12), ("unknown-key", 5_200 * 4 + 3, 1)]);

    let human = cascade(dir.path()).arg("validate").assert().code(1).get_output().stdout.clone();
    assert!(human.len() < 2_000, "{} bytes of output", human.len());
}

#[test]
fn a_file_that_is_not_utf8_is_a_diagnostic_in_every_format() {
    let dir = project(&[]);
    std::fs::create_dir(dir.path().join("cascades")).unwrap();
    std::fs::write(dir.path().join("cascades/a.toml"), b"[models.a]\ntable = \"caf\xe9\"\nchunk_sise = 10\n").unwrap();

    let output = cascade(dir.path()).args(["validate", "--format", "json"]).assert().code(1).get_output().clone();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["diagnostics"][0],
        json!({
            "severity": "error",
            "code": "invalid-utf8",
            "message": "byte 0xE9 is not valid UTF-8",
            "file": "cascades/a.toml",
            "line": 2,
            "column": 13,
            "help": "a TOML file is UTF-8: save it as UTF-8 (it may be in Latin-1 or UTF-16)"
        })
    );
    // The rest of the file is still checked.
    assert_eq!(report["diagnostics"][1]["code"], "unknown-key");
    assert_eq!(report["errors"], 2);

    cascade(dir.path()).args(["validate", "--format", "github"]).assert().code(1).stdout(
        "::error file=cascades/a.toml,line=2,col=13,title=invalid-utf8::byte 0xE9 is not valid UTF-8%0Ahelp: a TOML file is UTF-8: save it as UTF-8 (it may be in Latin-1 or UTF-16)\n\
         ::error file=cascades/a.toml,line=3,col=1,title=unknown-key::unknown key `chunk_sise` in model `a`%0Ahelp: did you mean `chunk_size`?\n",
    );
    cascade(dir.path())
        .arg("validate")
        .assert()
        .code(1)
        .stdout(predicates::str::contains("error[invalid-utf8]: byte 0xE9 is not valid UTF-8"))
        .stdout(predicates::str::contains("cascades/a.toml:2:13"));
}

#[test]
fn a_retention_of_more_than_50_years_is_refused_at_its_value_by_every_command() {
    let config =
        "[models.page_view]\ntable = \"page_view\"\nretention = { keep = \"57years\", column = \"entered_at\" }\n";
    let dir = project(&[("cascades/cascade.toml", config)]);
    let url = format!("sqlite://{}", dir.path().join("app.db").display());
    let database = ["--database-url", url.as_str()];
    for args in [
        &["validate"][..],
        &[&database[..], &["partitions"]].concat(),
        &[&database[..], &["partitions", "prune"]].concat(),
        &[&database[..], &["worker", "--once"]].concat(),
    ] {
        let output = cascade(dir.path()).args(args).output().unwrap();
        let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert_eq!(output.status.code(), Some(1), "{args:?}: {printed}");
        assert!(printed.contains("invalid-value"), "{args:?}: {printed}");
        assert!(printed.contains("cascade.toml:3:22"), "{args:?}: {printed}");
        assert!(printed.contains("`keep` must be at most 50 years"), "{args:?}: {printed}");
    }
    let fifty =
        "[models.page_view]\ntable = \"page_view\"\nretention = { keep = \"50years\", column = \"entered_at\" }\n";
    let dir = project(&[("cascades/cascade.toml", fifty)]);
    cascade(dir.path()).arg("validate").assert().success();
}

/// Every name a config declares or refers to is an identifier: a control character (written
/// with a TOML escape) or a bidirectional control in one is `invalid-name`, at the name, and
/// every format prints the name escaped.
#[test]
fn a_name_with_a_control_character_is_refused_and_printed_escaped() {
    let config = r#"[options]
"rate\u0007" = 5

[models."org\n::error::pwned"]
table = "org"
rate_limit = "rate\u0007"
outbox = "org_update\u001b[2J"
children = [{ model = "pro\u202eject", column = "org_id" }]

[outbox.scopes."scope\t1"]
shard_key = "id"
categories = ["org_update\u001b[2J"]
cells = ["us\r"]
cell_sinks = { "us\r" = "hook\u0000" }

[outbox.sinks."hook\u0000"]
url = "https://example.com/hook"
"#;
    let dir = project(&[("cascades/cascade.toml", config)]);
    let output = cascade(dir.path()).args(["validate", "--format", "json"]).assert().code(1).get_output().clone();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let refused: Vec<(u64, u64, &str)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "invalid-name")
        .map(|d| (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap(), d["message"].as_str().unwrap()))
        .collect();
    let expected = [
        (2, 1, "the option name `rate\\u{7}` holds the character `\\u{7}`"),
        (4, 9, "the model name `org\\n::error::pwned` holds the character `\\n`"),
        (6, 14, "the option name `rate\\u{7}` holds the character `\\u{7}`"),
        (7, 10, "the category name `org_update\\u{1b}[2J` holds the character `\\u{1b}`"),
        (8, 23, "the model name `pro\\u{202e}ject` holds the character `\\u{202e}`"),
        (10, 16, "the scope name `scope\\t1` holds the character `\\t`"),
        (12, 15, "the category name `org_update\\u{1b}[2J` holds the character `\\u{1b}`"),
        (13, 10, "the cell name `us\\r` holds the character `\\r`"),
        (14, 16, "the cell name `us\\r` holds the character `\\r`"),
        (14, 25, "the sink name `hook\\u{0}` holds the character `\\u{0}`"),
        (16, 15, "the sink name `hook\\u{0}` holds the character `\\u{0}`"),
    ];
    assert_eq!(refused, expected, "{report}");

    for format in ["human", "github", "sarif"] {
        let output = cascade(dir.path()).args(["validate", "--format", format]).output().unwrap();
        let printed = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{format}: {printed}");
        assert_eq!(raw_controls(&printed), Vec::<char>::new(), "{format} prints no raw control character:\n{printed}");
        if format != "github" {
            assert_eq!(workflow_commands(&printed), Vec::<&str>::new(), "{format}: a name starts no workflow command");
        }
    }
}

/// A config written on one line of 100 kB: each diagnostic shows its line only around its
/// label, with `…` where text is left out, the caret under the label and the file's own column in
/// its place, so the output grows with the diagnostics, not with the diagnostics times the line.
#[test]
fn a_long_line_is_shown_only_around_each_label() {
    let models: Vec<String> = (0..1000)
        .map(|n| {
            format!(
                "m{n} = {{ table = \"t{n}\", children = [{{ model = \"nope{n}\", column = \"organization_id\" }}] }}"
            )
        })
        .collect();
    let config = format!("models = {{ {} }}\n", models.join(", "));
    assert!(config.len() > 90_000);
    let dir = project(&[("cascades/cascade.toml", &config)]);

    let output = cascade(dir.path()).args(["validate", "--format", "json"]).assert().code(1).get_output().clone();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["errors"], 1000);
    let output = cascade(dir.path()).arg("validate").assert().code(1).get_output().clone();
    let human = String::from_utf8_lossy(&output.stdout);
    assert!(human.len() < 1000 * 1000, "{} bytes for 1000 diagnostics", human.len());

    for n in [0, 500, 999] {
        let name = format!("\"nope{n}\"");
        let column = config[..config.find(&name).unwrap()].chars().count() + 1;
        let placed = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["message"].as_str().unwrap().ends_with(&format!("`nope{n}`")));
        assert_eq!(placed.unwrap()["column"], column, "the JSON column is the file's");

        let block: Vec<&str> = human
            .split("\n\n")
            .find(|block| block.contains(&format!("unknown model `nope{n}`")))
            .unwrap()
            .lines()
            .collect();
        assert_eq!(block[1].trim(), format!("┌─ cascades/cascade.toml:1:{column}"), "{block:#?}");
        let (source, carets) = (block[3], block[4]);
        assert!(source.chars().count() < 400, "the line is cut: {source}");
        assert!(source.contains('…'), "{source}");
        let under = |line: &str, what: &str| line[..line.find(what).unwrap()].chars().count();
        assert_eq!(under(carets, "^"), under(source, &name), "the caret is under the name:\n{source}\n{carets}");
        assert!(carets.contains(&format!("{} no model of this name", "^".repeat(name.len()))), "{carets}");
    }
}

/// A config whose one scope delivers to a Kafka sink.
const KAFKA_SINK: &str = r#"[models.project]
table = "project"
outbox = "project_update"

[outbox.scopes.organization]
shard_key = "org_id"
categories = ["project_update"]
sink = "events"

[outbox.sinks.events]
kafka = { brokers = "127.0.0.1:9" }
"#;

/// A Kafka sink is fine for a build with Kafka support (the default). A build without it (`cargo
/// build --no-default-features`) reports `kafka-unsupported` at the sink's `kafka`, with how to get
/// a build that has it, and every command that loads the config (`outbox drain` here, which
/// would deliver to it) refuses it the same way: exit 1, never a panic.
#[test]
fn a_kafka_sink_needs_a_build_with_kafka_support() {
    let dir = project(&[("cascades/cascade.toml", KAFKA_SINK)]);
    let validate = cascade(dir.path()).args(["validate", "--format", "json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&validate.stdout).unwrap();
    if cfg!(feature = "kafka") {
        assert!(validate.status.success(), "{report}");
        assert_eq!(report["diagnostics"], json!([]));
        return;
    }
    assert_eq!(validate.status.code(), Some(1), "{report}");
    let diagnostics = report["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{report}");
    let diagnostic = &diagnostics[0];
    assert_eq!(
        (&diagnostic["code"], &diagnostic["severity"], &diagnostic["line"], &diagnostic["column"]),
        (&json!("kafka-unsupported"), &json!("error"), &json!(11), &json!(9))
    );
    assert_eq!(
        diagnostic["message"],
        "sink `events` writes to Kafka, but this build of cascade has no Kafka support (it was built without the \
         `kafka` feature)"
    );
    assert!(diagnostic["help"].as_str().unwrap().contains("cargo install --locked --path ."), "{diagnostic}");

    let drain = cascade(dir.path()).args(["outbox", "drain", "--once", "--database-url", "sqlite://none.db"]).output();
    let drain = drain.unwrap();
    let stderr = String::from_utf8_lossy(&drain.stderr);
    assert_eq!(drain.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[kafka-unsupported]: sink `events` writes to Kafka"), "{stderr}");
    assert!(stderr.contains("cascades/cascade.toml:11:9"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!dir.path().join("none.db").exists(), "refused before it connects");
}
