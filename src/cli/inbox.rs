//! `cascade inbox`: tombstones from another database's outbox taken in, applied, and counted.

use std::io::Read;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use cascade::db::{Access, redact_command_line};
use cascade::inbox::{self, ApplyOptions, ApplyReport, CategoryInbox, ServeOptions};

use super::Cli;
use super::exit::EXIT_INTERRUPTED;
use super::output::SummaryFormat;

#[derive(Debug, clap::Args)]
pub struct ConsumeArgs {
    /// The bootstrap brokers, HOST:PORT separated by commas.
    #[arg(long, value_name = "HOSTS")]
    brokers: String,
    /// A topic the sender's Kafka sink writes (repeatable).
    #[arg(long = "topic", value_name = "TOPIC", required = true)]
    topics: Vec<String>,
    /// The consumer group: run several consumers of one group to share the partitions.
    #[arg(long, value_name = "ID", default_value = "cascade-inbox")]
    group: String,
    /// The sending database, as this one names it: an idempotency key is unique per source.
    #[arg(long, value_name = "NAME")]
    source: String,
    /// A librdkafka setting, NAME=VALUE (repeatable); write a secret as NAME=env:VARIABLE.
    #[arg(long = "property", value_name = "NAME=VALUE")]
    properties: Vec<String>,
    /// Records taken into the inbox per transaction, at most.
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u16).range(1..))]
    batch_size: u16,
    /// Stop once every partition is read to its end.
    #[arg(long)]
    once: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Take in one delivery of an outbox command sink (its JSON array on stdin): exits 0 once
    /// the tombstones are committed, so the sender counts them delivered; a message received
    /// before from the same source is not taken again.
    Receive {
        /// The sending database, as this one names it: an idempotency key is unique per source.
        #[arg(long, value_name = "NAME")]
        source: String,
    },
    /// Take in deliveries of an outbox webhook sink: POST /inbox/SOURCE (or /inbox with
    /// --source), each with `Authorization: Bearer` and the token in CASCADE_INBOX_TOKEN, answered
    /// 200 once its tombstones are committed; GET /health. Runs until Ctrl-C or SIGTERM.
    Serve {
        /// Where to listen, HOST:PORT (port 0 takes any free port; the log line says which).
        #[arg(long, value_name = "HOST:PORT", value_parser = super::metrics::parse_addr)]
        addr: SocketAddr,
        /// The source of deliveries POSTed to /inbox, without a source in the path.
        #[arg(long, value_name = "NAME")]
        source: Option<String>,
    },
    /// Take in what an outbox Kafka sink writes: a consumer group reads the topics, and commits
    /// a batch's offsets only once its tombstones are committed in the inbox. Runs until Ctrl-C
    /// or SIGTERM (with --once, until every partition is read to its end).
    Consume(ConsumeArgs),
    /// Apply every pending tombstone of the config's remote models (as `cascade worker` does),
    /// sweep the applied ones kept for late children and remove those past `[settings]
    /// inbox_retention`, then exit: 0 when all went, 1 when any failed (kept for another
    /// attempt, or parked).
    Apply {
        /// Output format: human, or json.
        #[arg(long, value_enum, default_value_t = SummaryFormat::Human)]
        format: SummaryFormat,
    },
    /// Tombstones per category: pending, applied and parked, and the oldest pending one's age.
    Stats {
        /// Output format: human, or json.
        #[arg(long, value_enum, default_value_t = SummaryFormat::Human)]
        format: SummaryFormat,
    },
}

pub fn run(cli: &Cli, command: &Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Receive { source } => receive(cli, source),
        Command::Serve { addr, source } => serve(cli, *addr, source.clone()),
        Command::Consume(args) => consume(cli, args),
        Command::Apply { format } => apply(cli, *format),
        Command::Stats { format } => stats(cli, *format),
    }
}

fn receive(cli: &Cli, source: &str) -> anyhow::Result<ExitCode> {
    let loaded = cascade::config::load(&cli.config)?;
    let url = super::database_url(cli, &loaded.config);
    let mut body = String::new();
    std::io::stdin().read_to_string(&mut body)?;
    let received = super::block_on(async {
        let database = super::connect(&url, &loaded.config, Access::ReadWrite).await?;
        let received = inbox::receive(&database, source, &body).await;
        database.close().await;
        anyhow::Ok(received?)
    })?;
    println!(
        "received {} from `{source}`: {} new, {} received before",
        super::table::plural(received.messages, "tombstone", "tombstones"),
        received.new,
        received.messages - received.new
    );
    Ok(ExitCode::SUCCESS)
}

/// The variable that holds the token deliveries must carry.
const TOKEN_VARIABLE: &str = "CASCADE_INBOX_TOKEN";

fn serve(cli: &Cli, addr: SocketAddr, source: Option<String>) -> anyhow::Result<ExitCode> {
    // A trailing newline of a variable read from a file is not part of the token.
    let token = std::env::var(TOKEN_VARIABLE).unwrap_or_default().trim().to_owned();
    if token.is_empty() {
        anyhow::bail!(
            "set {TOKEN_VARIABLE} to the token senders send as `Authorization: Bearer TOKEN` \
             (a webhook sink's header `Authorization = \"env:NAME\"`); the inbox takes no delivery without one"
        );
    }
    cascade::secret::register(&token);
    let loaded = cascade::config::load(&cli.config)?;
    let url = super::database_url(cli, &loaded.config);
    let report = super::block_on(async {
        let stop = super::stop_on_signals();
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|error| match error.kind() {
            std::io::ErrorKind::AddrInUse => {
                anyhow::anyhow!("cannot listen on {addr}: the address is already in use; choose another with --addr")
            }
            _ => anyhow::Error::new(error).context(format!("cannot listen on {addr}")),
        })?;
        let database = super::connect(&url, &loaded.config, Access::ReadWrite).await?;
        if let Ok(bound) = listener.local_addr() {
            println!("taking deliveries at http://{bound}/inbox/SOURCE until Ctrl-C or SIGTERM");
        }
        let report = inbox::serve(&database, listener, ServeOptions { token, source }, stop).await;
        database.close().await;
        anyhow::Ok(report?)
    })?;
    print_taken(&super::table::plural(report.deliveries, "delivery", "deliveries"), report.new, report.messages);
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "kafka"))]
fn consume(_: &Cli, _: &ConsumeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("this build has no Kafka support: build cascade with its default `kafka` feature to consume a topic")
}

#[cfg(feature = "kafka")]
fn consume(cli: &Cli, args: &ConsumeArgs) -> anyhow::Result<ExitCode> {
    let mut properties = Vec::new();
    for (number, property) in (1..).zip(&args.properties) {
        // The argument is not shown: it may be a secret written without its name.
        let Some((name, value)) = property.split_once('=') else {
            anyhow::bail!("--property number {number}: expected NAME=VALUE");
        };
        let value = match value.strip_prefix("env:") {
            Some(variable) => {
                let value = std::env::var(variable)
                    .map_err(|_| anyhow::anyhow!("--property {name}: the variable `{variable}` is not set"))?;
                cascade::secret::register(&value);
                value
            }
            None => value.to_owned(),
        };
        if cascade::config::kafka_property_looks_secret(name) {
            cascade::secret::register(&value);
        }
        properties.push((name.to_owned(), value));
    }
    let loaded = cascade::config::load(&cli.config)?;
    let url = super::database_url(cli, &loaded.config);
    let options = inbox::ConsumeOptions {
        brokers: args.brokers.clone(),
        topics: args.topics.clone(),
        group: args.group.clone(),
        source: args.source.clone(),
        properties,
        batch: usize::from(args.batch_size),
        once: args.once,
    };
    let report = super::block_on(async {
        let stop = super::stop_on_signals();
        let database = super::connect(&url, &loaded.config, Access::ReadWrite).await?;
        let report = inbox::consume(&database, &options, stop).await;
        database.close().await;
        anyhow::Ok(report?)
    })?;
    print_taken(&super::table::plural(report.batches, "batch", "batches"), report.new, report.messages);
    Ok(ExitCode::SUCCESS)
}

/// The last line of `serve` and `consume`: what they took, in `units` (deliveries, batches).
fn print_taken(units: &str, new: u64, messages: u64) {
    println!("took {units} ({new} new of {})", super::table::plural(messages, "tombstone", "tombstones"));
}

fn apply(cli: &Cli, format: SummaryFormat) -> anyhow::Result<ExitCode> {
    let Some(loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    let url = super::database_url(cli, &loaded);
    let mut options = ApplyOptions::default();
    options.batches.command = redact_command_line(std::env::args());
    let report = super::block_on(async {
        let stop = super::stop_on_signals();
        let database = super::connect(&url, &loaded, Access::ReadWrite).await?;
        let Some(engine) = super::prepare(database.clone(), &loaded).await? else { return anyhow::Ok(None) };
        let report = inbox::run_applier(&engine, &options, true, Duration::from_secs(1), stop).await;
        database.close().await;
        Ok(Some(report?))
    })?;
    let Some(report) = report else { return Ok(ExitCode::from(1)) };
    match format {
        SummaryFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        SummaryFormat::Human => print!("{}", human_apply(&report)),
    }
    Ok(if report.stopped {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if report.failed > 0 || !report.errors.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn human_apply(report: &ApplyReport) -> String {
    let rows = |counts| super::table::per_model(counts, "none");
    let mut out = format!(
        "inbox applied: {} applied, {} failed; deleted: {}; nullified: {}\n",
        report.applied,
        report.failed,
        rows(&report.deleted),
        rows(&report.nullified)
    );
    if report.deferred > 0 {
        out += &format!(
            "  {} deferred: the run's budget was spent before their children were all gone; the next run continues\n",
            super::table::plural(report.deferred, "tombstone", "tombstones")
        );
    }
    if report.late_rows > 0 {
        out += &format!(
            "  {} written after their tombstone was applied\n",
            super::table::plural(report.late_rows, "row", "rows")
        );
    }
    if report.purged > 0 {
        out += &format!(
            "  {} past the retention window removed\n",
            super::table::plural(report.purged, "applied tombstone", "applied tombstones")
        );
    }
    for error in &report.errors {
        out += &format!("  failed: {error}\n");
    }
    out
}

fn stats(cli: &Cli, format: SummaryFormat) -> anyhow::Result<ExitCode> {
    let loaded = cascade::config::load(&cli.config)?;
    let url = super::database_url(cli, &loaded.config);
    let stats = super::block_on(async {
        let database = super::connect(&url, &loaded.config, Access::ReadOnly).await?;
        let stats = inbox::stats(&database, &loaded.config, SystemTime::now()).await;
        database.close().await;
        anyhow::Ok(stats?)
    })?;
    match format {
        SummaryFormat::Json => println!("{}", serde_json::to_string_pretty(&stats)?),
        SummaryFormat::Human => print!("{}", human_stats(&stats)),
    }
    Ok(ExitCode::SUCCESS)
}

fn human_stats(stats: &[CategoryInbox]) -> String {
    let pending: u64 = stats.iter().map(|category| category.pending).sum();
    let mut out = format!("{} pending in the inbox\n", super::table::plural(pending, "tombstone", "tombstones"));
    let age = |seconds: f64| humantime::format_duration(Duration::from_secs(seconds as u64)).to_string();
    let rows: Vec<[String; 6]> = stats
        .iter()
        .map(|c| {
            let model = c.remote_model.clone().unwrap_or_else(|| "(no remote model)".to_owned());
            let [pending, applied, parked] = [c.pending, c.applied, c.parked].map(|n| n.to_string());
            [c.category.clone(), model, pending, applied, parked, age(c.oldest_pending_age_seconds)]
        })
        .collect();
    if !rows.is_empty() {
        out += "\n";
        out += &super::table::Table::render(
            ["category", "remote model", "pending", "applied", "parked", "oldest pending"],
            &rows,
            &[2, 3, 4],
        );
    }
    out
}
