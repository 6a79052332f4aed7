//! Seeded mutations of the demo's config files and DDL script, given to the real `cascade
//! validate` binary (without and with `--schema`): it never panics (exit 101), never dies of a
//! signal, never hangs (each run has a deadline), exits 0, 1 or 2 only, and every diagnostic of
//! `--format json` has a file, line and column inside that file, as the file on disk has them.
//! `tests/mutations.rs` runs many more cases in process; this pass checks what only the process
//! shows (the exit code, a crash, a hang, the printed places).

mod common;

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::time::Duration;

use common::mutation::{mutated_config, mutated_ddl, originals};
use common::{cascade, project};
use serde_json::Value;

/// Cases of each kind (a mutated config, checked without and with `--schema`; a mutated DDL
/// script, checked with `--schema`).
const CASES: u64 = 120;

/// How long one `validate` may take before it counts as a hang (it takes well under a second).
const CASE_DEADLINE: Duration = Duration::from_secs(30);

/// The lines of `text` as the diagnostics count them: ended by LF, CRLF or a lone CR.
fn lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find(['\n', '\r']) {
        lines.push(&rest[..end]);
        let next = if rest[end..].starts_with("\r\n") { end + 2 } else { end + 1 };
        rest = &rest[next..];
    }
    lines.push(rest);
    lines
}

/// Runs `cascade validate --format json ARGS` in `dir` and checks what it did; `what` names the
/// case in failures.
fn validate(dir: &Path, args: &[&str], what: &str) {
    let output = cascade(dir)
        .args(["validate", "--format", "json"])
        .args(args)
        .timeout(CASE_DEADLINE)
        .output()
        .unwrap_or_else(|error| panic!("{what}: {error}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    if let Some(signal) = output.status.signal() {
        let reason = if signal == libc::SIGKILL { "ran past its deadline (a hang)" } else { "died of a signal" };
        panic!("{what}: validate {reason}: signal {signal}\n{stderr}");
    }
    let code = output.status.code().unwrap();
    assert!(matches!(code, 0..=2), "{what}: exit code {code}\n{stderr}");
    if code == 2 {
        assert!(!stderr.trim().is_empty(), "{what}: exit 2 without a reason");
        return;
    }
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{what}: not JSON ({error}): {}", String::from_utf8_lossy(&output.stdout)));
    let errors = report["errors"].as_u64().unwrap();
    assert_eq!(code == 1, errors > 0, "{what}: exit {code} with {errors} errors");
    for diagnostic in report["diagnostics"].as_array().unwrap() {
        let file = diagnostic["file"].as_str().unwrap_or_else(|| panic!("{what}: no file in {diagnostic}"));
        let bytes = std::fs::read(dir.join(file)).unwrap_or_else(|error| panic!("{what}: {file}: {error}"));
        let text = String::from_utf8_lossy(&bytes);
        let lines = lines(&text);
        let (line, column) = (diagnostic["line"].as_u64().unwrap(), diagnostic["column"].as_u64().unwrap());
        assert!(line >= 1 && line as usize <= lines.len(), "{what}: line {line} of {} in {diagnostic}", lines.len());
        let width = lines[line as usize - 1].chars().count() as u64;
        assert!(column >= 1 && column <= width + 1, "{what}: column {column} of {width} in {diagnostic}");
    }
}

/// A project with the demo's files, one of them replaced.
fn write_project(configs: &[(String, String)], ddl: &str) -> tempfile::TempDir {
    let mut files: Vec<(&str, &str)> = configs.iter().map(|(name, text)| (name.as_str(), text.as_str())).collect();
    files.push(("schemas/demo.sql", ddl));
    project(&files)
}

#[test]
fn validate_survives_mutated_configs_and_ddl_with_every_place_inside_its_file() {
    let (configs, ddl) = originals();
    for seed in 0..CASES {
        let (mutated, file) = mutated_config(&configs, seed);
        let dir = write_project(&mutated, &ddl);
        let what = format!("seed {seed}, {} mutated", mutated[file].0);
        validate(dir.path(), &[], &what);
        validate(dir.path(), &["--schema", "schemas/demo.sql"], &what);

        let dir = write_project(&configs, &mutated_ddl(&ddl, seed));
        validate(dir.path(), &["--schema", "schemas/demo.sql"], &format!("seed {seed}, schemas/demo.sql mutated"));
    }
}
