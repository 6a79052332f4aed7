//! The worker on a large PostgreSQL schema (`common/big_schema.rs`: 371 tables, 762 foreign
//! keys, the config `cascade init` writes): `--deletions` (default 200) small deletions are
//! scheduled, each a `t001` root with 20 rows, and one whole `cascade worker --once` process runs
//! them all, start-up (the schema read once) included. Timed, the median of `--runs` (default
//! 3): scheduled deletions per second, with `--concurrency N` lanes (default 1). `--baseline
//! PATH` runs the same with another build of `cascade`, alternately, each build on a database of
//! its own. Run: `cargo bench --bench worker`. Progress goes to stderr, the markdown table to
//! stdout.

#[path = "common/args.rs"]
mod args;
#[path = "common/big_schema.rs"]
mod big_schema;
#[path = "common/database.rs"]
mod database;
#[path = "common/process.rs"]
mod process;
#[path = "common/server.rs"]
mod server;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use big_schema::{FOREIGN_KEYS, TABLES, assert_gone, small_trees};

fn main() {
    let runs = args::number_argument("--runs").unwrap_or(3) as usize;
    let deletions = args::number_argument("--deletions").unwrap_or(200);
    let concurrency = args::number_argument("--concurrency").unwrap_or(1).to_string();
    let Some(server) = server::Server::postgres() else {
        eprintln!("no PostgreSQL server: nothing to measure");
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (ddl, children) = big_schema::schema();
    let big_schema::Setup { builds, durability, project } = big_schema::set_up(&runtime, &server.url, &ddl, "worker");

    let mut times: Vec<Vec<(Duration, u64)>> = vec![Vec::new(); builds.len()];
    let mut next_root = 1_000;
    for round in 0..runs {
        eprintln!("round {} of {runs}", round + 1);
        for ((build, url), timed) in builds.iter().zip(&mut times) {
            let roots = next_root..=next_root + deletions - 1;
            next_root += deletions;
            runtime.block_on(small_trees(url, roots.clone(), &children));
            for root in roots.clone() {
                let root = root.to_string();
                run(build, project.path(), &["schedule", "t001", &root, "--in", "0s", "--database-url", url]);
            }
            let (wall, peak, stdout) =
                run(build, project.path(), &["worker", "--once", "--concurrency", &concurrency, "--database-url", url]);
            assert!(stdout.contains(&format!("worker done: {deletions} succeeded")), "{build}: {stdout}");
            runtime.block_on(assert_gone(url, roots, &children));
            timed.push((wall, peak));
        }
    }
    println!(
        "Schema: {TABLES} tables, {FOREIGN_KEYS} foreign keys; PostgreSQL ({durability}); {deletions} scheduled \
         deletions of 20 rows each, one `cascade worker --once --concurrency {concurrency}` process; median of {runs}.\n"
    );
    println!("| build | whole process | deletions/s | ms per deletion | peak RSS | all runs |");
    println!("|---|---:|---:|---:|---:|---|");
    for ((index, _), timed) in builds.iter().enumerate().zip(&mut times) {
        let all: Vec<String> = timed.iter().map(|(wall, _)| format!("{:.0}", wall.as_secs_f64() * 1e3)).collect();
        timed.sort();
        let (wall, _) = timed[timed.len() / 2];
        let peak = timed.iter().map(|(_, kib)| *kib).max().unwrap_or(0);
        println!(
            "| {} | {:.0} ms | {:.1} | {:.1} | {:.0} MiB | {} |",
            if index == 0 { "this build" } else { "baseline" },
            wall.as_secs_f64() * 1e3,
            deletions as f64 / wall.as_secs_f64(),
            wall.as_secs_f64() * 1e3 / deletions as f64,
            peak as f64 / 1024.0,
            all.join(", ")
        );
    }
}

/// Runs `build` with `arguments` in `project`; its wall time, peak RSS (KiB) and stdout. A failed
/// run stops the bench.
fn run(build: &str, project: &Path, arguments: &[&str]) -> (Duration, u64, String) {
    let finished = process::run_measured(Command::new(build).current_dir(project).args(arguments));
    assert!(finished.status.success(), "{build} {arguments:?}: {}{}", finished.stdout, finished.stderr);
    (finished.wall, finished.peak_rss_kib, finished.stdout)
}
