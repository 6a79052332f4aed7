//! Validation time for generated configs of 1,000, 5,000 and 20,000 models with about four
//! relations each, spread over files of 500 models. Run: `cargo bench --bench validate`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [1_000, 5_000, 20_000];
const MODELS_PER_FILE: usize = 500;
const RUNS: usize = 7;

fn main() {
    println!("| models | relations | files | load + validate (median of {RUNS}) | per model |");
    println!("|---:|---:|---:|---:|---:|");
    for models in SIZES {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let relations = write_config(dir.path(), models);
        let mut times: Vec<Duration> = (0..RUNS).map(|_| validate(dir.path())).collect();
        times.sort();
        let median = times[RUNS / 2];
        println!(
            "| {models} | {relations} | {} | {:.1} ms | {:.1} µs |",
            models.div_ceil(MODELS_PER_FILE),
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

/// Model `m{i}` has up to four children among the next models, so the graph is a DAG with
/// diamonds; models without children are bulk leaves. Every tenth model writes an outbox
/// category and every hundredth is rate limited. Returns the number of relations.
fn write_config(dir: &Path, models: usize) -> usize {
    let mut relations = 0;
    for (file, first) in (0..models).step_by(MODELS_PER_FILE).enumerate() {
        let mut text = String::from("#:schema ../schemas/cascade.schema.json\n");
        if file == 0 {
            text.push_str("[options]\n\"rows_per_second\" = 1000\n\n");
            text.push_str("[outbox.scopes.tenant]\nshard_key = \"tenant_id\"\ncategories = [\"update\"]\n\n");
        }
        for i in first..(first + MODELS_PER_FILE).min(models) {
            let children: Vec<usize> = [1, 2, 7, 31].iter().map(|step| i + step).filter(|c| *c < models).collect();
            relations += children.len();
            writeln!(text, "[models.m{i}]\ntable = \"t{i}\"").unwrap();
            if children.is_empty() {
                text.push_str("strategy = \"bulk\"\n");
            }
            if i % 10 == 0 {
                text.push_str("outbox = \"update\"\n");
            }
            if i % 100 == 0 {
                text.push_str("rate_limit = \"rows_per_second\"\n");
            }
            let children: Vec<String> =
                children.iter().map(|c| format!("{{ model = \"m{c}\", column = \"m{i}_id\" }}")).collect();
            writeln!(text, "children = [{}]\n", children.join(", ")).unwrap();
        }
        std::fs::write(dir.join(format!("models_{file:03}.toml")), text).expect("write a generated config");
    }
    relations
}
