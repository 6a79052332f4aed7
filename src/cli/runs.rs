//! `runs`: the audit trail of deletions, newest first.

use std::process::ExitCode;

use cascade::config;
use cascade::db::{Access, tables};

use super::Cli;
use super::delete::SummaryFormat;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// How many runs to list, newest first.
    #[arg(long, default_value_t = 20, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: u64,
    /// Output format: human, or json (a list of objects).
    #[arg(long, value_enum, default_value_t = SummaryFormat::Human)]
    pub format: SummaryFormat,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let loaded = config::load(&cli.config)?;
    let url = super::database_url(cli, &loaded.config);
    let run_lease = loaded.config.settings.run_lease();
    let runs = super::block_on(async {
        // Read-write although it only reads: right after a killed run (what this listing is
        // for), SQLite must roll the run's hot journal back before anything can be read.
        let database = super::connect(&url, &loaded.config, Access::ReadWrite).await?;
        let runs = tables::list_runs(&database, args.limit, run_lease).await;
        database.close().await;
        runs
    })?;
    if args.format == SummaryFormat::Json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        println!("no deletions have run");
    }
    for run in &runs {
        let rows = run.rows.as_deref().map(rows_done).unwrap_or_default();
        let resumes = run.resumes.map(|id| format!("  resumes run {id}")).unwrap_or_default();
        let error = run.error.as_deref().map(|error| format!("  error: {error}")).unwrap_or_default();
        println!(
            "{:>6}  {:<11} {} {}  started {} UTC by {}{rows}{resumes}{error}",
            run.id, run.outcome, run.root_model, run.root_ids, run.started_at, run.actor
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `  deleted a 3, b 5; nullified c 2` from a run's recorded rows (nothing when it did nothing).
fn rows_done(rows: &str) -> String {
    let Ok(rows) = serde_json::from_str::<serde_json::Value>(rows) else { return String::new() };
    let parts: Vec<String> = ["deleted", "nullified"]
        .into_iter()
        .filter_map(|kind| {
            let models = rows[kind].as_object()?;
            let counts: Vec<String> = models
                .iter()
                .filter(|(_, count)| count.as_u64() != Some(0))
                .map(|(model, count)| format!("{model} {count}"))
                .collect();
            (!counts.is_empty()).then(|| format!("{kind} {}", counts.join(", ")))
        })
        .collect();
    if parts.is_empty() { String::new() } else { format!("  {}", parts.join("; ")) }
}
