//! `runs`: the audit trail of deletions, newest first.

use std::process::ExitCode;

use cascade::audit::{self, RunRows};
use cascade::config;
use cascade::db::Access;

use super::Cli;
use super::output::SummaryFormat;

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
        let runs = audit::list_runs(&database, args.limit, run_lease).await;
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
        let rows = run.rows.as_ref().and_then(RunRows::from_json).map(|rows| rows.to_string()).unwrap_or_default();
        let rows = if rows.is_empty() { rows } else { format!("  {rows}") };
        let resumes = run.resumes.map(|id| format!("  resumes run {id}")).unwrap_or_default();
        let error = run.error.as_deref().map(|error| format!("  error: {error}")).unwrap_or_default();
        println!(
            "{:>6}  {:<11} {} {}  started {} UTC by {}{rows}{resumes}{error}",
            run.id, run.outcome, run.root_model, run.root_ids, run.started_at, run.actor
        );
    }
    Ok(ExitCode::SUCCESS)
}
