//! Seeded mutations of the demo's config files and DDL script, given to the real `cascade
//! validate` binary (without and with `--schema`): it never panics (exit 101), never dies of a
//! signal, never hangs (each run has a deadline), exits 0, 1 or 2 only, and every diagnostic of
//! `--format json` has a file, line and column inside that file, as the file on disk has them.
//! `tests/it/mutations.rs` runs many more cases in process; this pass checks what only the process
//! shows (the exit code, a crash, a hang, the printed places). Hostile head configs, given to
//! `cascade diff` against the demo's, must in addition print every name inert and keep their
//! output in proportion to what they report.

use crate::common;

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::time::Duration;

use common::inert::{live_markdown, raw_controls, workflow_commands};
use common::mutation::{hostile_head, mutated_config, mutated_ddl, originals};
use common::{cascade, project};
use serde_json::Value;

/// Cases of each kind (a mutated config, checked without and with `--schema`; a mutated DDL
/// script, checked with `--schema`).
const CASES: u64 = 120;

/// Hostile head configs given to `diff` (each run in three forms).
const DIFF_CASES: u64 = 100;

/// How long one `validate` may take before it counts as a hang (it takes well under a second).
const CASE_DEADLINE: Duration = Duration::from_secs(30);

/// The most one diagnostic's snippet may print: its lines, each cut around its labels.
const MAX_DIAGNOSTIC_BYTES: usize = 8 * 1024;

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

/// Runs `cascade ARGS` in `dir`, which must exit 0, 1 or 2 within the deadline, without a
/// panic or a signal; its exit code, standard output and standard error.
fn run(dir: &Path, args: &[&str], what: &str) -> (i32, std::process::Output) {
    let output =
        cascade(dir).args(args).timeout(CASE_DEADLINE).output().unwrap_or_else(|error| panic!("{what}: {error}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    if let Some(signal) = output.status.signal() {
        let reason = if signal == libc::SIGKILL { "ran past its deadline (a hang)" } else { "died of a signal" };
        panic!("{what}: {} {reason}: signal {signal}\n{stderr}", args[0]);
    }
    let code = output.status.code().unwrap();
    assert!(matches!(code, 0..=2), "{what}: exit code {code}\n{stderr}");
    (code, output)
}

/// Runs `cascade validate --format json ARGS` in `dir` and checks what it did; `what` names the
/// case in failures.
fn validate(dir: &Path, args: &[&str], what: &str) {
    let (code, output) = run(dir, &[&["validate", "--format", "json"], args].concat(), what);
    let stderr = String::from_utf8_lossy(&output.stderr);
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

/// Runs `cascade diff --base base --format FORMAT` in `dir` and checks what it printed: no raw
/// control character, no workflow command but the GitHub form's own, no live markdown, and
/// diagnostics of a bounded size each.
fn diff(dir: &Path, format: &str, what: &str) {
    let (_, output) = run(dir, &["diff", "--base", "base", "--format", format], what);
    let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let what = format!("{what}, --format {format}");
    for (name, text) in [("standard output", &out), ("standard error", &err)] {
        assert_eq!(raw_controls(text), Vec::<char>::new(), "{what}: a raw control character on {name}:\n{text}");
    }
    assert_eq!(workflow_commands(&err), Vec::<&str>::new(), "{what}:\n{err}");
    match format {
        "github" => {
            for line in out.lines() {
                let command = line.split(' ').next().unwrap_or_default();
                assert!(["::error", "::warning", "::notice"].contains(&command), "{what}: {line}");
            }
        }
        "markdown" => {
            assert_eq!(live_markdown(&out), Vec::<String>::new(), "{what}:\n{out}");
            assert_eq!(workflow_commands(&out), Vec::<&str>::new(), "{what}:\n{out}");
        }
        _ => assert_eq!(workflow_commands(&out), Vec::<&str>::new(), "{what}:\n{out}"),
    }
    let diagnostics =
        err.lines().filter(|line| ["error[", "warning[", "note["].iter().any(|kind| line.starts_with(kind))).count();
    assert!(
        err.len() <= MAX_DIAGNOSTIC_BYTES * (diagnostics + 1),
        "{what}: {} bytes for {diagnostics} diagnostics",
        err.len()
    );
}

#[test]
fn diff_survives_hostile_head_configs_and_prints_every_name_inert() {
    let (configs, _) = originals();
    let base: Vec<(String, &str)> =
        configs.iter().map(|(name, text)| (name.replacen("cascades/", "base/", 1), text.as_str())).collect();
    for seed in 0..DIFF_CASES {
        let head = hostile_head(&configs, seed);
        let files: Vec<(&str, &str)> = base
            .iter()
            .map(|(name, text)| (name.as_str(), *text))
            .chain(head.iter().map(|(name, text)| (name.as_str(), text.as_str())))
            .collect();
        let dir = project(&files);
        for format in ["human", "github", "markdown"] {
            diff(dir.path(), format, &format!("seed {seed}"));
        }
    }
}
