use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use cascade::db::{Access, redact_command_line};
use cascade::partitions::RetentionReport;
use cascade::scheduler::worker::{WorkerError, WorkerOptions};
use cascade::service::{ServiceError, ServiceOptions, WorkerService};

use super::Cli;
use super::exit::EXIT_INTERRUPTED;

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
    cascade::config::check_allowed_user(&loaded, loaded.sources(), "worker")?;
    if let Some(addr) = args.metrics_addr {
        super::metrics::serve(addr)?;
    }
    let url = super::database_url(cli, &loaded);
    let defaults = ServiceOptions::from_settings(&loaded.settings);
    let options = ServiceOptions {
        worker: WorkerOptions {
            concurrency: args.concurrency,
            poll: args.poll,
            lease: args.lease.unwrap_or(defaults.worker.lease),
            once: args.once,
            ..defaults.worker
        },
        drain: args.drain,
        command: redact_command_line(std::env::args()),
    };
    super::block_on(async {
        let database = super::connect(&url, &loaded, Access::ReadWrite).await?;
        let Some(engine) = super::prepare(database.clone(), &loaded).await? else {
            return Ok(ExitCode::from(1));
        };
        let stop = super::stop_on_signals();
        let service = WorkerService::new(engine, options)?;
        let ran = service.run(stop.clone()).await;
        database.close().await;
        let report = match ran {
            Err(ServiceError::Worker(WorkerError::Invalid(diagnostics))) => {
                eprintln!(
                    "error: the database's schema changed while the worker ran, and the config no longer fits it"
                );
                super::refuse_diagnostics(loaded.sources(), &diagnostics);
                return Ok(ExitCode::from(1));
            }
            ran => ran?,
        };
        let deleted = &report.deleted;
        println!(
            "worker done: {} succeeded, {} cancelled, {} failed, {} interrupted, {} not found",
            deleted.succeeded, deleted.cancelled, deleted.failed, deleted.interrupted, deleted.not_found
        );
        if let Some(next_due) = deleted.next_due.as_ref().filter(|_| deleted.later > 0) {
            let later = super::table::plural(deleted.later, "deletion", "deletions");
            println!("{later} scheduled for later, the first due at {next_due} UTC");
        }
        if let Some(applied) = &report.applied {
            print!("{}", super::inbox::human_apply(applied));
        }
        if let Some(drained) = &report.drained {
            super::outbox::print_report(drained);
        }
        if let Some(RetentionReport { dropped, failed }) = report.retained {
            println!("retention: {dropped} partition(s) dropped, {failed} prune(s) failed");
        }
        Ok(if stop.load(Ordering::SeqCst) {
            // As for `delete`: stopped by Ctrl-C or SIGTERM, its deletions released for later.
            ExitCode::from(EXIT_INTERRUPTED)
        } else if report.failed() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    })
}
