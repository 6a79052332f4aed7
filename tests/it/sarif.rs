//! `cascade validate --format sarif`: real runs checked against the official SARIF 2.1.0 JSON
//! schema (vendored in tests/fixtures/sarif with its licence), and their content against the
//! same run's `--format json`.

use crate::common;

use std::path::Path;

use common::{cascade, project, repository};
use serde_json::Value;

/// Two files: an error in each (one pointing back into the other), warnings and a note (with the
/// schema below).
const FIRST: &str = r#"[models.organization]
table = "organization"
children = [
  { model = "project", column = "organization_id" },
  { model = "ghost", column = "organization_id" },
]
"#;

const SECOND: &str = r#"[models.project]
table = "project"
children = [{ model = "task", column = "project_id" }]

[models.task]
table = "task"

[models.organization]
table = "org"

[outbox.scopes.empty]
shard_key = "id"
categories = []
"#;

/// `project.organization_id` has no index (a warning); the database cascades `task` (a note).
const SCHEMA: &str = "CREATE TABLE organization (id INTEGER PRIMARY KEY);
CREATE TABLE project (id INTEGER PRIMARY KEY, organization_id INTEGER REFERENCES organization (id));
CREATE TABLE task (id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES project (id) ON DELETE CASCADE);
CREATE INDEX task_project ON task (project_id);
";

/// Runs `validate` with `args` in `dir`, expecting `code`; its standard output as JSON.
fn validate(dir: &Path, args: &[&str], code: i32) -> Value {
    let output = cascade(dir).arg("validate").args(args).assert().code(code).get_output().stdout.clone();
    serde_json::from_slice(&output).expect("the output is JSON")
}

/// Fails with every violation when `log` is not valid against the SARIF 2.1.0 schema (formats
/// such as `uri` checked too).
fn assert_valid_sarif(log: &Value) {
    let schema_text = std::fs::read_to_string(repository().join("tests/fixtures/sarif/sarif-schema-2.1.0.json"))
        .expect("the vendored SARIF schema");
    let schema: Value = serde_json::from_str(&schema_text).expect("the schema is JSON");
    let validator =
        jsonschema::draft4::options().should_validate_formats(true).build(&schema).expect("the schema compiles");
    let errors: Vec<String> =
        validator.iter_errors(log).map(|error| format!("{} at {}", error, error.instance_path())).collect();
    assert!(errors.is_empty(), "not valid SARIF 2.1.0:\n{}\n{log:#}", errors.join("\n"));
}

fn run(log: &Value) -> &Value {
    let runs = log["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "one run");
    &runs[0]
}

/// The schema rejects what it should, so a passing check means something.
#[test]
fn the_schema_check_rejects_a_broken_log() {
    let dir = project(&[("cascades/a.toml", FIRST), ("cascades/b.toml", SECOND), ("schema.sql", SCHEMA)]);
    let mut log = validate(dir.path(), &["--schema", "schema.sql", "--format", "sarif"], 1);
    log["runs"][0]["results"][0]["level"] = "fatal".into();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repository().join("tests/fixtures/sarif/sarif-schema-2.1.0.json")).unwrap(),
    )
    .unwrap();
    assert!(!jsonschema::draft4::new(&schema).unwrap().is_valid(&log));
}

#[test]
fn errors_warnings_and_notes_of_several_files_are_valid_sarif_with_their_places() {
    // Run from a directory inside a repository: URIs are relative to the repository's root.
    let dir = project(&[
        ("deploy/cascades/a.toml", FIRST),
        ("deploy/cascades/b.toml", SECOND),
        ("deploy/schema.sql", SCHEMA),
    ]);
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let deploy = dir.path().join("deploy");
    let log = validate(&deploy, &["--schema", "schema.sql", "--format", "sarif"], 1);
    assert_valid_sarif(&log);
    let run = run(&log);

    let root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"].as_str().unwrap();
    let canonical = dir.path().canonicalize().unwrap();
    assert!(
        [dir.path(), canonical.as_path()].iter().any(|path| root == format!("file://{}/", path.display())),
        "{root} is the repository"
    );
    assert_eq!(run["columnKind"], "unicodeCodePoints");

    // The rules: every code of the registry, with its description and severity.
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), cascade::Code::ALL.len());
    for (rule, code) in rules.iter().zip(cascade::Code::ALL) {
        assert_eq!(rule["id"], code.as_str());
        assert_eq!(rule["shortDescription"]["text"], code.description());
        assert_eq!(rule["defaultConfiguration"]["level"], code.severity().as_str());
    }

    // Each result names its rule and place: (rule, level, file, line, column, end column).
    let results = run["results"].as_array().unwrap();
    let found: Vec<(String, String, String, u64, u64, u64)> = results
        .iter()
        .map(|result| {
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[index]["id"], result["ruleId"], "ruleIndex points at the result's rule");
            let location = &result["locations"][0]["physicalLocation"];
            assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
            let region = &location["region"];
            assert_eq!(region["startLine"], region["endLine"], "{result}");
            (
                result["ruleId"].as_str().unwrap().to_owned(),
                result["level"].as_str().unwrap().to_owned(),
                location["artifactLocation"]["uri"].as_str().unwrap().to_owned(),
                region["startLine"].as_u64().unwrap(),
                region["startColumn"].as_u64().unwrap(),
                region["endColumn"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        // `"organization_id"`
        ("unindexed-relation", "warning", "deploy/cascades/a.toml", 4, 33, 50),
        // `"ghost"`
        ("unknown-model", "error", "deploy/cascades/a.toml", 5, 13, 20),
        // the whole relation to `task`
        ("database-cascade", "note", "deploy/cascades/b.toml", 3, 13, 54),
        // `organization`, declared again
        ("duplicate-declaration", "error", "deploy/cascades/b.toml", 8, 9, 21),
        // `empty`
        ("empty-scope", "warning", "deploy/cascades/b.toml", 11, 16, 21),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|(rule, level, uri, line, column, end)| {
            (rule.to_string(), level.to_string(), uri.to_string(), *line, *column, *end)
        })
        .collect();
    assert_eq!(found, expected);

    // The same diagnostics as the JSON form, one for one, with the help after the message.
    let json = validate(&deploy, &["--schema", "schema.sql", "--format", "json"], 1);
    let diagnostics = json["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), results.len());
    for (diagnostic, result) in diagnostics.iter().zip(results) {
        assert_eq!(result["ruleId"], diagnostic["code"]);
        assert_eq!(result["level"], diagnostic["severity"]);
        let region = &result["locations"][0]["physicalLocation"]["region"];
        assert_eq!((&region["startLine"], &region["startColumn"]), (&diagnostic["line"], &diagnostic["column"]));
        let text =
            format!("{}\nhelp: {}", diagnostic["message"].as_str().unwrap(), diagnostic["help"].as_str().unwrap());
        assert_eq!(result["message"]["text"], text.as_str());
    }

    // The model declared twice points back at its first declaration, in the other file.
    let duplicate = results.iter().find(|r| r["ruleId"] == "duplicate-declaration").unwrap();
    let first = &duplicate["relatedLocations"][0];
    assert_eq!(first["physicalLocation"]["artifactLocation"]["uri"], "deploy/cascades/a.toml");
    assert_eq!(first["physicalLocation"]["region"]["startLine"], 1);
    assert_eq!(first["physicalLocation"]["region"]["startColumn"], 9);
    assert!(first["message"]["text"].is_string());
}

#[test]
fn a_clean_config_is_a_run_without_results() {
    let log = validate(repository(), &["--schema", "schemas/demo.sql", "--format", "sarif"], 0);
    assert_valid_sarif(&log);
    assert_eq!(run(&log)["results"], Value::Array(Vec::new()));
}

#[test]
fn files_outside_the_root_are_absolute_uris_and_names_are_percent_encoded() {
    let elsewhere = project(&[(
        "cascades dir/ünïcode #1.toml",
        "[models.a]\ntable = \"a\"\nchildren = [{ model = \"b\", column = \"a_id\" }]\n",
    )]);
    let working = project(&[]);
    let config = elsewhere.path().join("cascades dir");
    let log = validate(working.path(), &["--config", config.to_str().unwrap(), "--format", "sarif"], 1);
    assert_valid_sarif(&log);
    let location = &run(&log)["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    let expected = format!("file://{}/cascades%20dir/%C3%BCn%C3%AFcode%20%231.toml", elsewhere.path().display());
    assert_eq!(location["uri"], expected.as_str());
    assert!(location.get("uriBaseId").is_none(), "{location}");
}
