//! `cascade diff` of two generated configs of 1,000, 5,000 and 20,000 models (`large_config`: the
//! base, and the base as a large pull request edits it), timed as a whole process (load and check
//! both configs, compare, print JSON), beside `cascade validate` of the head config in the same
//! run. Run: `cargo bench --bench diff`.

#[path = "common/large_config.rs"]
mod large_config;

use std::process::Command;
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [1_000, 5_000, 20_000];
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
        let (relations, _) = large_config::write(&base, models, false);
        large_config::write(&head, models, true);
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
