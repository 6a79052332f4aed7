//! `cascade diff` of two generated configs of 1,000, 5,000 and 20,000 models (about four
//! relations each, files of 500 models), timed as a whole process (load and check both configs,
//! compare, print JSON), beside `cascade validate` of the head config in the same run.
//! The head differs from the base in the ways a large pull request would: a default chunk size
//! that every model takes, 1 % of the relations flipped to nullify, a category moved to another
//! scope, 2 % of the models with a chunk size of their own, and 10 models added.
//! Run: `cargo bench --bench diff`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [1_000, 5_000, 20_000];
const MODELS_PER_FILE: usize = 500;
const RUNS: usize = 7;

fn main() {
    let binary = env!("CARGO_BIN_EXE_cascade");
    println!(
        "| models | relations | changes found | `diff` (median of {RUNS}) | `validate` of one side | diff / validate |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for models in SIZES {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (base, head) = (dir.path().join("base"), dir.path().join("head"));
        let relations = write_config(&base, models, false);
        write_config(&head, models, true);
        let diff_command = || {
            let mut command = Command::new(binary);
            command.args(["diff", "--format", "json", "--base"]).arg(&base).arg("--config").arg(&head);
            command
        };
        let output = diff_command().output().expect("cascade diff runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let review: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
        let changes = review["changes"].as_array().map_or(0, Vec::len);
        let diff = median((0..RUNS).map(|_| time(&mut diff_command())).collect());
        let validate =
            median((0..RUNS).map(|_| time(Command::new(binary).args(["validate", "--config"]).arg(&head))).collect());
        println!(
            "| {models} | {relations} | {changes} | {:.0} ms | {:.0} ms | {:.2} |",
            diff.as_secs_f64() * 1e3,
            validate.as_secs_f64() * 1e3,
            diff.as_secs_f64() / validate.as_secs_f64()
        );
    }
}

fn time(command: &mut Command) -> Duration {
    let start = Instant::now();
    let status = command.stdout(std::process::Stdio::null()).status().expect("the command runs");
    let elapsed = start.elapsed();
    assert!(status.success(), "{command:?} failed");
    elapsed
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Model `m{i}` has up to four children among the later models (a DAG with diamonds, at most
/// about 700 deep at 20,000); models without children are bulk leaves. Every tenth model writes an outbox
/// category of one of two scopes. Returns the number of relations.
fn write_config(dir: &Path, models: usize, edited: bool) -> usize {
    std::fs::create_dir_all(dir).expect("a config directory");
    let mut relations = 0;
    let total = if edited { models + 10 } else { models };
    for (file, first) in (0..total).step_by(MODELS_PER_FILE).enumerate() {
        let mut text = String::new();
        if file == 0 {
            let chunk = if edited { 250 } else { 100 };
            writeln!(text, "[settings]\nper_row_chunk_size = {chunk}\n").unwrap();
            text.push_str("[options]\n\"rows_per_second\" = 1000\n\n");
            let (tenant, region) = if edited { ("\"a\"", "\"b\", \"c\"") } else { ("\"a\", \"b\"", "\"c\"") };
            writeln!(text, "[outbox.scopes.tenant]\nshard_key = \"tenant_id\"\ncategories = [{tenant}]\n").unwrap();
            writeln!(text, "[outbox.scopes.region]\nshard_key = \"region_id\"\ncategories = [{region}]\n").unwrap();
        }
        for i in first..(first + MODELS_PER_FILE).min(total) {
            let children: Vec<usize> = [29, 31, 97, 211].iter().map(|step| i + step).filter(|c| *c < models).collect();
            relations += children.len();
            writeln!(text, "[models.m{i}]\ntable = \"t{i}\"").unwrap();
            if children.is_empty() {
                text.push_str("strategy = \"bulk\"\n");
            }
            if edited && i % 50 == 3 {
                text.push_str("chunk_size = 20\n");
            }
            if i % 10 == 0 {
                writeln!(text, "outbox = \"{}\"", ["a", "b", "c"][i / 10 % 3]).unwrap();
            }
            if i % 100 == 0 {
                text.push_str("rate_limit = \"rows_per_second\"\n");
            }
            let children: Vec<String> = children
                .iter()
                .map(|c| {
                    let nullify = if edited && (i + c) % 100 == 0 { ", on_delete = \"nullify\"" } else { "" };
                    format!("{{ model = \"m{c}\", column = \"m{i}_id\"{nullify} }}")
                })
                .collect();
            writeln!(text, "children = [{}]\n", children.join(", ")).unwrap();
        }
        std::fs::write(dir.join(format!("models_{file:03}.toml")), text).expect("write a generated config");
    }
    relations
}
