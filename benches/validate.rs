//! Validation time for generated configs of 1,000, 5,000 and 20,000 models with about four
//! relations each, spread over files of 500 models (`large_config`). Run: `cargo bench --bench
//! validate`.

#[path = "common/large_config.rs"]
mod large_config;

use std::path::Path;
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [1_000, 5_000, 20_000];
const RUNS: usize = 7;

fn main() {
    println!("| models | relations | files | load + validate (median of {RUNS}) | per model |");
    println!("|---:|---:|---:|---:|---:|");
    for models in SIZES {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (relations, files) = large_config::write(dir.path(), models, false);
        let mut times: Vec<Duration> = (0..RUNS).map(|_| validate(dir.path())).collect();
        times.sort();
        let median = times[RUNS / 2];
        println!(
            "| {models} | {relations} | {} | {:.1} ms | {:.1} µs |",
            files,
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e6 / models as f64
        );
    }
}

fn validate(dir: &Path) -> Duration {
    let start = Instant::now();
    let mut loaded = cascade::config::load(dir).expect("the generated config loads");
    cascade::planner::check(&mut loaded, None);
    let elapsed = start.elapsed();
    let errors: Vec<_> = loaded.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "the generated config has errors: {errors:?}");
    elapsed
}
