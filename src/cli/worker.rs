use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use cascade::db::{Access, Kind, redact_command_line};
use cascade::engine::default_actor;
use cascade::outbox::{DrainOptions, Drainer, SystemClock};
use cascade::partitions::{PruneOptions, RetentionReport, run_retention};
use cascade::scheduler::worker::{self, WorkerOptions};

use super::Cli;

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
    /// Also drain the outbox through its sinks (one shard at a time), in the same process.
    #[arg(long)]
    pub drain: bool,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics while the worker runs (port 0: any
    /// free port, logged).
    #[arg(long, value_name = "HOST:PORT", value_parser = super::metrics::parse_addr)]
    pub metrics_addr: Option<SocketAddr>,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let Some(loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    cascade::config::check_allowed_user(&loaded, "worker")?;
    if let Some(addr) = args.metrics_addr {
        super::metrics::serve(addr)?;
    }
    let url = super::database_url(cli, &loaded.config);
    let defaults = WorkerOptions::from_settings(&loaded.config.settings);
    let options = WorkerOptions {
        concurrency: args.concurrency,
        poll: args.poll,
        lease: args.lease.unwrap_or(defaults.lease),
        once: args.once,
        ..defaults
    };
    super::block_on(async {
        let database = super::connect(&url, &loaded.config, Access::ReadWrite).await?;
        let Some(engine) = super::prepare(database.clone(), &loaded).await? else {
            return Ok(ExitCode::from(1));
        };
        let stop = super::stop_on_signals();
        let drain_options = DrainOptions { once: args.once, poll: args.poll, ..DrainOptions::default() };
        let drainer = match args.drain {
            true => Some(Drainer::new(database.clone(), &loaded.config, drain_options, Arc::new(SystemClock))?),
            false => None,
        };
        // Whichever of the two ends first (stopped, or failed for good) stops the other.
        let drained = async {
            let Some(drainer) = &drainer else { return Ok(None) };
            let drained = drainer.run(stop.clone()).await;
            stop.store(true, Ordering::SeqCst);
            drained.map(Some)
        };
        let deleted = async {
            let report = worker::run(engine, options, stop.clone()).await;
            if !args.once {
                stop.store(true, Ordering::SeqCst);
            }
            report
        };
        // Partition retention, on PostgreSQL when some model has it, every retention_interval.
        let retained = async {
            let has_retention = loaded.config.models.values().any(|model| model.retention.is_some());
            if !has_retention || database.backend().kind() != Kind::Postgres {
                return None;
            }
            let options = PruneOptions {
                actor: default_actor(),
                command: redact_command_line(std::env::args()),
                run_lease: loaded.config.settings.run_lease(),
                ..PruneOptions::default()
            };
            let interval = loaded.config.settings.retention_interval();
            Some(run_retention(&database, &loaded.config, &options, interval, args.once, stop.clone()).await)
        };
        // With --once the tombstones of this run's deletions are drained after them; otherwise
        // all run side by side until stopped.
        let (report, drained, retained) = if args.once {
            let report = deleted.await;
            let drained = drained.await;
            (report, drained, retained.await)
        } else {
            tokio::join!(deleted, drained, retained)
        };
        database.close().await;
        let (report, drained) = (report?, drained?);
        println!(
            "worker done: {} succeeded, {} cancelled, {} failed, {} interrupted, {} not found",
            report.succeeded, report.cancelled, report.failed, report.interrupted, report.not_found
        );
        if let Some(drained) = &drained {
            super::outbox::print_report(drained);
        }
        if let Some(RetentionReport { dropped, failed }) = retained {
            println!("retention: {dropped} partition(s) dropped, {failed} prune(s) failed");
        }
        // So that cron and systemd notice: a run in which any attempt failed is not a success.
        let drain_failed = drained.is_some_and(|d| args.once && d.failed_deliveries > 0);
        let retention_failed = retained.is_some_and(|r| args.once && r.failed > 0);
        Ok(if report.failed > 0 || drain_failed || retention_failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
    })
}
