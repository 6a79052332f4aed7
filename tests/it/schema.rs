//! The JSON Schema that editors use: generated from the config types, committed in `schemas/`.

use crate::common;

use cascade::diagnostic::Code;
use common::{cascade, repository};

#[test]
fn the_committed_schema_is_current() {
    let committed = std::fs::read_to_string(repository().join("schemas/cascade.schema.json")).unwrap();
    assert!(
        committed == cascade::config::json_schema(),
        "schemas/cascade.schema.json is stale: run `cargo run -- schema > schemas/cascade.schema.json`"
    );
}

#[test]
fn the_schema_command_prints_draft_07() {
    let output = cascade(repository()).arg("schema").assert().success().get_output().stdout.clone();
    let schema: serde_json::Value = serde_json::from_slice(&output).unwrap();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    assert_eq!(schema["additionalProperties"], false);
    let model = &schema["definitions"]["Model"];
    assert_eq!(model["required"], serde_json::json!(["table"]));
    for (name, property) in model["properties"].as_object().unwrap() {
        assert!(property["description"].is_string(), "`{name}` has no hover text");
    }
}

#[test]
fn every_demo_config_file_points_editors_at_the_schema() {
    for entry in std::fs::read_dir(repository().join("cascades")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("#:schema ../schemas/cascade.schema.json\n"),
            "{} lacks the #:schema line",
            path.display()
        );
    }
}

/// The README's table of codes, one row per code in the registry's order. With `CASCADE_BLESS=1`
/// the test writes the table into the README first (after the registry gained a code).
#[test]
fn the_readme_describes_every_diagnostic_code() {
    let path = repository().join("README.md");
    let mut readme = std::fs::read_to_string(&path).unwrap();
    if std::env::var_os("CASCADE_BLESS").is_some() {
        let head = "| code | severity | meaning |\n|---|---|---|\n";
        let start = readme.find(head).expect("the README has a table of codes") + head.len();
        let end = readme[start..].find("\n\n").map_or(readme.len(), |end| start + end + 1);
        let rows: String = Code::ALL
            .iter()
            .map(|code| format!("| `{}` | {} | {} |\n", code.as_str(), code.severity().as_str(), code.description()))
            .collect();
        readme.replace_range(start..end, &rows);
        std::fs::write(&path, &readme).unwrap();
    }
    for code in Code::ALL {
        let row = format!("| `{}` | {} | {} |", code.as_str(), code.severity().as_str(), code.description());
        assert!(readme.contains(&row), "README lacks the row: {row}");
    }
}
