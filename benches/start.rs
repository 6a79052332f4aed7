//! Start-up on a large PostgreSQL schema: the whole `cascade` process, where reading the schema
//! and checking the config against it is most of the work. The schema is generated like a large
//! application's: 371 tables of 6 to 14 columns (text, varchar, timestamps, integers, booleans,
//! jsonb, numeric, uuid, a domain over text), 762 foreign keys, most tables referencing two
//! earlier ones (half of them one of the three hubs, like an organization, a user and a
//! project), an index on each foreign key; the config is `cascade init`'s. Timed, the median of
//! `--runs` (default 9) each: `validate --database-url`, a deletion of a missing root (`delete
//! t001 ID --confirm` for an id no row has) and a small deletion (a `t001` root with one row in
//! each of the 19 tables that reference it by their first key: 20 rows), beside the floor of the
//! last: the same rows deleted by one `DELETE` per table in one transaction on a new connection.
//! `--baseline PATH` runs each case with another build of `cascade` too, alternately, in the
//! same run. Run: `cargo bench --bench start`. Progress goes to stderr, the markdown table to
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
    let runs = args::number_argument("--runs").unwrap_or(9) as usize;
    let Some(server) = server::Server::postgres() else {
        eprintln!("no PostgreSQL server: nothing to measure");
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (ddl, children) = big_schema::schema();
    let big_schema::Setup { builds, durability, project } = big_schema::set_up(&runtime, &server.url, &ddl, "start");

    let cases: [(&str, &[&str]); 3] = [
        ("validate --database-url", &["validate", "--database-url"]),
        ("delete of a missing root", &["delete", "t001", "999999999", "--confirm", "--database-url"]),
        ("delete of a root with 20 rows", &["delete", "t001", "{root}", "--confirm", "--database-url"]),
    ];
    let mut times: Vec<Vec<Vec<(Duration, u64)>>> = vec![vec![Vec::new(); builds.len()]; cases.len()];
    let mut next_root = 1_000;
    let mut floor = Vec::new();
    for round in 0..runs {
        eprintln!("round {} of {runs}", round + 1);
        for (case, (_, arguments)) in cases.iter().enumerate() {
            for ((build, url), timed) in builds.iter().zip(&mut times[case]) {
                next_root += 1;
                if arguments.contains(&"{root}") {
                    runtime.block_on(small_trees(url, next_root..=next_root, &children));
                }
                let root = next_root.to_string();
                let mut arguments: Vec<&str> = arguments
                    .iter()
                    .map(|argument| if *argument == "{root}" { root.as_str() } else { argument })
                    .collect();
                arguments.push(url);
                timed.push(run(build, project.path(), &arguments));
                if arguments.contains(&root.as_str()) {
                    runtime.block_on(assert_gone(url, next_root..=next_root, &children));
                }
            }
        }
        next_root += 1;
        runtime.block_on(small_trees(&builds[0].1, next_root..=next_root, &children));
        floor.push(runtime.block_on(native_deletes(&builds[0].1, next_root, &children)));
        runtime.block_on(assert_gone(&builds[0].1, next_root..=next_root, &children));
    }
    println!("Schema: {TABLES} tables, {FOREIGN_KEYS} foreign keys; PostgreSQL ({durability}), median of {runs}.\n");
    let header: Vec<String> =
        builds.iter().enumerate().map(|(i, _)| if i == 0 { "this build".into() } else { "baseline".into() }).collect();
    println!("| whole process: median (peak RSS) | {} |", header.join(" | "));
    println!("|---|{}", "---:|".repeat(builds.len()));
    for ((name, _), per_build) in cases.iter().zip(&mut times) {
        let medians: Vec<String> = per_build
            .iter_mut()
            .map(|timed| {
                timed.sort();
                let peak = timed.iter().map(|(_, kib)| kib).max().copied().unwrap_or(0);
                format!("{:.0} ms ({:.0} MiB)", timed[timed.len() / 2].0.as_secs_f64() * 1e3, peak as f64 / 1024.0)
            })
            .collect();
        println!("| {name} | {} |", medians.join(" | "));
    }
    floor.sort();
    println!(
        "\nFloor: the same 20 rows deleted by 20 `DELETE`s in one transaction on a new connection, \
         children first (no process, no schema read): median {:.0} ms.",
        floor[floor.len() / 2].as_secs_f64() * 1e3
    );
}

/// Deletes the small tree of `root` with one `DELETE` per table in one transaction, on a new
/// connection: what the database itself takes (its foreign keys' checks of every table that
/// references the root's, on a backend whose catalog caches start cold); the time.
async fn native_deletes(url: &str, root: u64, children: &[String]) -> Duration {
    use sqlx::Connection;
    let started = std::time::Instant::now();
    let mut connection = sqlx::PgConnection::connect(url).await.expect("connect");
    let mut transaction = connection.begin().await.expect("begin");
    for child in children {
        let delete = format!("DELETE FROM {child} WHERE ref0_id = {root}");
        sqlx::raw_sql(sqlx::AssertSqlSafe(delete)).execute(&mut *transaction).await.expect("delete a child row");
    }
    let delete = format!("DELETE FROM t001 WHERE id = {root}");
    sqlx::raw_sql(sqlx::AssertSqlSafe(delete)).execute(&mut *transaction).await.expect("delete the root");
    transaction.commit().await.expect("commit");
    connection.close().await.expect("close");
    started.elapsed()
}

/// Runs `build` with `arguments` in `project`; its wall time and peak RSS (KiB). A failed run
/// stops the bench.
fn run(build: &str, project: &Path, arguments: &[&str]) -> (Duration, u64) {
    let finished = process::run_measured(Command::new(build).current_dir(project).args(arguments));
    assert!(finished.status.success(), "{build} {arguments:?}: {}{}", finished.stdout, finished.stderr);
    (finished.wall, finished.peak_rss_kib)
}
