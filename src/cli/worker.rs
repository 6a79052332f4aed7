use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::Cli;
use crate::db::{Access, Database};
use crate::scheduler::{self, worker};
use crate::schema;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run until nothing is due, then exit.
    #[arg(long)]
    pub once: bool,
    /// Deletions run at the same time by this worker.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub concurrency: usize,
    /// How long to wait when nothing is due.
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub poll: Duration,
    /// A claim without a heartbeat for this long is released for another worker (default:
    /// `[settings] lease_seconds`, else 6h).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub lease: Option<Duration>,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let Some(loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    let url = super::database_url(cli, &loaded.config);
    let settings = &loaded.config.settings;
    let seconds = |value: &Option<crate::config::Located<u64>>| value.as_ref().map(|v| Duration::from_secs(v.value));
    let options = worker::WorkerOptions {
        concurrency: args.concurrency,
        poll: args.poll,
        lease: args.lease.or_else(|| seconds(&settings.lease_seconds)).unwrap_or(scheduler::DEFAULT_LEASE),
        max_attempts: settings.max_attempts.as_ref().map_or(scheduler::DEFAULT_MAX_ATTEMPTS, |m| m.value),
        retry_delay: seconds(&settings.retry_delay_seconds).unwrap_or(scheduler::DEFAULT_RETRY_DELAY),
        once: args.once,
    };
    super::block_on(async {
        let database = Database::connect(&url, Access::ReadWrite).await?;
        let schema = schema::introspect(&database).await?;
        if super::refuse_invalid_against(&loaded, &schema) {
            return Ok(ExitCode::from(1));
        }
        crate::db::tables::ensure(&database).await?;
        let stop = super::stop_on_signals();
        let report = worker::run(database.clone(), Arc::new(loaded.config), Arc::new(schema), options, stop).await;
        database.close().await;
        let report = report?;
        println!(
            "worker done: {} succeeded, {} cancelled, {} failed, {} interrupted",
            report.succeeded, report.cancelled, report.failed, report.interrupted
        );
        Ok(ExitCode::SUCCESS)
    })
}
