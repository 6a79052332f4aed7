use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use cascade::db::Access;
use cascade::outbox::{self, DrainOptions, DrainReport, Drainer, OutboxStats, SystemClock};

use super::Cli;
use super::exit::EXIT_INTERRUPTED;
use super::output::SummaryFormat;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Deliver outbox messages through the configured sinks, coalesced, in order per shard.
    Drain(DrainArgs),
    /// The backlog per scope and category, and the shards that are failing.
    Stats {
        /// Output format: human, or json.
        #[arg(long, value_enum, default_value_t = SummaryFormat::Human)]
        format: SummaryFormat,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct DrainArgs {
    /// Deliver what is due now, then exit: 0 when all of it was delivered, 1 when a shard failed.
    #[arg(long)]
    pub once: bool,
    /// Shards delivered at the same time.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Only this scope (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// Only this category (repeatable).
    #[arg(long = "category", value_name = "CATEGORY")]
    pub categories: Vec<String>,
    /// Stop after delivering this many messages.
    #[arg(long, value_name = "N")]
    pub max_messages: Option<u64>,
    /// How long to wait when nothing is due.
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub poll: Duration,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics while draining (port 0: any free
    /// port, logged).
    #[arg(long, value_name = "HOST:PORT", value_parser = super::metrics::parse_addr)]
    pub metrics_addr: Option<SocketAddr>,
}

impl DrainArgs {
    pub fn options(&self) -> DrainOptions {
        DrainOptions {
            once: self.once,
            concurrency: usize::from(self.concurrency),
            scopes: self.scopes.clone(),
            categories: self.categories.clone(),
            max_messages: self.max_messages,
            poll: self.poll,
            ..DrainOptions::default()
        }
    }
}

pub fn run(cli: &Cli, command: &Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Drain(args) => drain(cli, args),
        Command::Stats { format } => stats(cli, *format),
    }
}

fn drain(cli: &Cli, args: &DrainArgs) -> anyhow::Result<ExitCode> {
    let Some(loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    cascade::config::check_allowed_user(&loaded, loaded.sources(), "outbox drain")?;
    if let Some(addr) = args.metrics_addr {
        super::metrics::serve(addr)?;
    }
    let url = super::database_url(cli, &loaded);
    super::block_on(async {
        let database = super::connect(&url, &loaded, Access::ReadWrite).await?;
        let drainer = Drainer::new(database.clone(), &loaded, args.options(), Arc::new(SystemClock))?;
        let stop = super::stop_on_signals();
        let progress = show_progress(drainer.clone());
        let report = drainer.run(stop.clone()).await;
        progress.abort();
        database.close().await;
        let report = report?;
        print_report(&report);
        Ok(drain_exit_code(&report, args.once, &stop))
    })
}

/// 130 when stopped by a signal; with `--once`, 1 when any delivery failed.
pub fn drain_exit_code(report: &DrainReport, once: bool, stop: &AtomicBool) -> ExitCode {
    if stop.load(Ordering::SeqCst) {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if once && report.failed_deliveries > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

pub fn print_report(report: &DrainReport) {
    use super::table::plural;
    println!(
        "outbox drain done: {} delivered in {} ({} deleted), {} failed",
        plural(report.delivered, "message", "messages"),
        plural(report.deliveries, "delivery", "deliveries"),
        plural(report.rows_deleted, "row", "rows"),
        plural(report.failed_deliveries, "delivery", "deliveries"),
    );
}

/// A spinner with the messages delivered on a terminal; a log line every ten seconds otherwise.
pub fn show_progress(drainer: Drainer) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if std::io::stderr().is_terminal() {
            let spinner = indicatif::ProgressBar::new_spinner();
            loop {
                spinner.set_message(format!("{} outbox messages delivered", drainer.delivered()));
                spinner.tick();
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        let mut reported = 0;
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let delivered = drainer.delivered();
            if delivered != reported {
                tracing::info!(delivered, "outbox drain progress");
                reported = delivered;
            }
        }
    })
}

fn stats(cli: &Cli, format: SummaryFormat) -> anyhow::Result<ExitCode> {
    let loaded = cascade::config::load(&cli.config)?;
    let url = super::database_url(cli, &loaded.config);
    let stats = super::block_on(async {
        let database = super::connect(&url, &loaded.config, Access::ReadOnly).await?;
        let stats = outbox::stats(&database, &loaded.config, SystemTime::now()).await;
        database.close().await;
        stats
    })?;
    match format {
        SummaryFormat::Json => println!("{}", serde_json::to_string_pretty(&stats)?),
        SummaryFormat::Human => print!("{}", human(&stats)),
    }
    Ok(ExitCode::SUCCESS)
}

fn human(stats: &OutboxStats) -> String {
    let mut out = format!("{} outbox rows pending\n", stats.pending);
    let age = |seconds: f64| humantime::format_duration(Duration::from_secs(seconds as u64)).to_string();
    let sink = |sink: &Option<String>| sink.clone().unwrap_or_else(|| "(no sink)".to_owned());
    let categories: Vec<[String; 7]> = stats
        .categories
        .iter()
        .map(|c| {
            let [pending, objects, shards] = [c.pending, c.objects, c.shards].map(|n| n.to_string());
            let sink = if c.cells.is_empty() { sink(&c.sink) } else { "(per cell)".to_owned() };
            [c.scope.clone(), c.category.clone(), sink, pending, objects, shards, age(c.oldest_age_seconds)]
        })
        .collect();
    out += &table(["scope", "category", "sink", "rows", "objects", "shards", "oldest"], &categories);
    let cells: Vec<[String; 7]> = stats
        .cells
        .iter()
        .map(|c| {
            let [pending, shards, failing] = [c.pending, c.shards, c.failing_shards].map(|n| n.to_string());
            [c.scope.clone(), c.cell.clone(), sink(&c.sink), pending, shards, failing, age(c.oldest_age_seconds)]
        })
        .collect();
    out += &table(["scope", "cell", "sink", "rows", "shards", "failing", "oldest"], &cells);
    if !stats.shards.is_empty() {
        out += "\nshards delivering or failing:\n";
    }
    for shard in &stats.shards {
        out += &format!("  {}/{}", shard.scope, shard.shard_identifier);
        if let Some(cell) = &shard.cell {
            out += &format!(" to {cell}");
        }
        out += &format!("  {}", shard.state);
        if shard.attempts > 0 {
            out += &format!(", {} failed attempts", shard.attempts);
        }
        if let Some(since) = &shard.failing_since {
            out += &format!(" since {since} UTC");
        }
        if let Some(next) = &shard.next_attempt_at {
            out += &format!(", next attempt {next} UTC");
        }
        if let Some(error) = &shard.last_error {
            out += &format!("\n    last error: {error}");
        }
        out += "\n";
    }
    out
}

/// A table of `rows` after a blank line (nothing without rows), its columns of counts (the
/// fourth to sixth) aligned right.
fn table(headers: [&str; 7], rows: &[[String; 7]]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    String::from("\n") + &super::table::Table::render(headers, rows, &[3, 4, 5])
}
