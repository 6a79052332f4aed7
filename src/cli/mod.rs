//! The command line: parses arguments and calls the library. One file per command.

mod batch;
mod delete;
mod demo;
mod diff;
mod duplicates;
mod exit;
mod inbox;
mod init;
mod lsp;
mod metrics;
mod option;
mod orphans;
mod outbox;
mod output;
mod partitions;
mod plan;
mod runs;
mod schedule;
mod schema;
mod shell;
mod table;
mod validate;
mod worker;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use cascade::db::Database;
use cascade::diagnostic::{Diagnostic, Format, Report, Sources};
use cascade::engine::{Engine, PrepareError};
use cascade::planner::CheckedConfig;
use clap::{Parser, Subcommand};
use exit::{EXIT_CODES, EXIT_USAGE};
use output::LogFormat;

/// Where the config is without `--config` (and where `init` writes one without `--out`).
pub const DEFAULT_CONFIG: &str = "cascades";

/// Declarative, resumable, throttled deletion of large, deeply linked relational data.
#[derive(Debug, Parser)]
#[command(name = "cascade", version, about, max_term_width = 100, after_help = EXIT_CODES)]
pub struct Cli {
    /// Config directory (every *.toml below it) or a single config file.
    #[arg(long, global = true, value_name = "DIR|FILE", default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Database URL: sqlite://PATH or postgres://USER@HOST/DB.
    // The variable's value holds a password: `--help` names the variable, never its value.
    #[arg(long, global = true, env = "CASCADE_DATABASE_URL", hide_env_values = true, value_name = "URL")]
    pub database_url: Option<String>,
    /// More log output (-v, -vv).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors in the log output.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Format of log lines on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the config: every problem, with file:line:column.
    Validate(validate::Args),
    /// Print the JSON Schema of the config files (for editor completion).
    Schema,
    /// Dry-run: the cascade tree of a model; with ids and a database, the rows of every step.
    Plan(plan::Args),
    /// What a config change does to deletions: every change, destructive, attention or safe.
    Diff(diff::Args),
    /// Delete rows and everything below them, children first, in small transactions.
    Delete(delete::Args),
    /// Build a demo SQLite database and walk validate → plan → delete on it.
    Demo(demo::Args),
    /// Runtime values of [options], such as rate limits, read by running deletions.
    #[command(subcommand)]
    Option(option::Command),
    /// Schedule a deletion for later (default 30 days); scheduling again moves the date.
    Schedule(schedule::ScheduleArgs),
    /// Cancel a scheduled deletion that has not started.
    Cancel(schedule::CancelArgs),
    /// List scheduled deletions: pending, in progress and failed.
    Scheduled(schedule::ListArgs),
    /// List recent deletions from the audit trail: outcome, roots, who and when.
    Runs(runs::Args),
    /// Claim and run due scheduled deletions.
    Worker(worker::Args),
    /// Deliver the outbox through its sinks, and see its backlog.
    #[command(subcommand)]
    Outbox(outbox::Command),
    /// Tombstones from another database's outbox: take them in, apply them, see the backlog.
    #[command(subcommand)]
    Inbox(inbox::Command),
    /// Report groups of rows that are equal on some columns, and the unique index that stops them
    /// (read only).
    Duplicates(duplicates::Args),
    /// Report orphans: child rows whose relation column points at no parent row (read only).
    Orphans(orphans::Args),
    /// Partition retention: list a model's partitions, prune the ones older than its
    /// `retention`, create the next ones (PostgreSQL range partitions).
    Partitions(partitions::Args),
    /// Write a starting config from a database's foreign keys.
    Init(init::Args),
    /// Language server over stdio: diagnostics while the config is typed, completion,
    /// definition, references, hover, rename, code actions.
    Lsp(lsp::Args),
    /// Print the shell completion script for bash, zsh, fish, elvish or PowerShell.
    Completions(shell::CompletionsArgs),
    /// Print the man page (roff), or write every page into a directory.
    Man(shell::ManArgs),
}

pub fn main() -> ExitCode {
    let mut cli = Cli::parse();
    // An empty URL is no URL: CI systems pass an unset secret as an empty variable.
    cli.database_url = cli.database_url.filter(|url| !url.trim().is_empty());
    if let Some(url) = &cli.database_url {
        cascade::db::register_url_secrets(url);
    }
    if cli.command.only_reads_and_prints() {
        restore_broken_pipe_exit();
    }
    init_logging(&cli);
    let result = match &cli.command {
        Command::Validate(args) => validate::run(&cli, args),
        Command::Schema => schema::run(),
        Command::Init(args) => init::run(&cli, args),
        Command::Lsp(args) => lsp::run(&cli, args),
        Command::Plan(args) => plan::run(&cli, args),
        Command::Diff(args) => diff::run(&cli, args),
        Command::Delete(args) => delete::run(&cli, args),
        Command::Demo(args) => demo::run(&cli, args),
        Command::Schedule(args) => schedule::schedule(&cli, args),
        Command::Cancel(args) => schedule::cancel(&cli, args),
        Command::Scheduled(args) => schedule::list(&cli, args),
        Command::Runs(args) => runs::run(&cli, args),
        Command::Worker(args) => worker::run(&cli, args),
        Command::Option(command) => option::run(&cli, command),
        Command::Outbox(command) => outbox::run(&cli, command),
        Command::Inbox(command) => inbox::run(&cli, command),
        Command::Duplicates(args) => duplicates::run(&cli, args),
        Command::Orphans(args) => orphans::run(&cli, args),
        Command::Partitions(args) => partitions::run(&cli, args),
        Command::Completions(args) => shell::completions(args),
        Command::Man(args) => shell::man(args),
    };
    result.unwrap_or_else(|error| {
        eprintln!("error: {}", cascade::secret::redact(&format!("{error:#}")));
        if let Some(hint) = hint(&error) {
            eprintln!("hint: {hint}");
        }
        ExitCode::from(EXIT_USAGE)
    })
}

/// What to do next, for an error that does not say it itself: run outside a project (no
/// `cascades/` there), a command only says that the path does not exist.
fn hint(error: &anyhow::Error) -> Option<&'static str> {
    match error.downcast_ref::<cascade::config::LoadError>()? {
        cascade::config::LoadError::NotFound(_) | cascade::config::LoadError::NoFiles(_) => Some(
            "give the config with `--config DIR` (every *.toml file below it) or `--config FILE`, or write a \
             starting config from a database with `cascade init --database-url URL`",
        ),
        cascade::config::LoadError::Io { .. } => None,
    }
}

impl Command {
    /// Whether the command only reads and prints: one that writes to a database or to a sink's
    /// stdin keeps SIGPIPE ignored, so that a pipe closed early (a sink that exits without
    /// reading its body, a reader of the output that went away) is an error it handles rather
    /// than a signal that kills it mid-run.
    fn only_reads_and_prints(&self) -> bool {
        matches!(
            self,
            Command::Validate(_)
                | Command::Schema
                | Command::Plan(_)
                | Command::Runs(_)
                | Command::Scheduled(_)
                | Command::Completions(_)
                | Command::Man(_)
        )
    }
}

/// `cascade plan ... | head` should end quietly when `head` stops reading, as other command-line
/// tools do, instead of panicking on a failed print.
fn restore_broken_pipe_exit() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread is started (the
    // command line is parsed on the main thread alone).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn init_logging(cli: &Cli) {
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => "error",
        // The progress of a deletion is worth a line now and then even when nobody asked.
        // sqlx warns of slow statements with their whole SQL: noise unless asked for (-v).
        (false, 0) => {
            "warn,sqlx=error,cascade::engine=info,cascade::cleanup=info,cascade::cli::delete=info,cascade::cli::outbox=info,cascade::cli::metrics=info"
        }
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("CASCADE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // Every line is redacted: a driver's warning may quote a URL's parameters, a server's error
    // may echo a token.
    let stderr = || cascade::secret::RedactingWriter(std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(stderr);
    match cli.log_format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// The config, checked by the config-only rules; `None` (errors printed) when it has errors.
fn load_valid(cli: &Cli) -> anyhow::Result<Option<CheckedConfig>> {
    Ok(load_valid_with_diagnostics(cli)?.map(|(checked, _)| checked))
}

/// `load_valid`, with the config's diagnostics (warnings and notes) for a report that shows them.
fn load_valid_with_diagnostics(cli: &Cli) -> anyhow::Result<Option<(CheckedConfig, Vec<Diagnostic>)>> {
    let mut loaded = cascade::config::load(&cli.config)?;
    let checked = cascade::planner::check(&mut loaded, None);
    refuse_diagnostics(&loaded.sources, &loaded.diagnostics);
    Ok(checked.map(|checked| (checked, loaded.diagnostics)))
}

/// The engine for `database`, with the config checked against its live schema; `None` (errors
/// printed) when the config does not match the database.
async fn prepare(database: Database, config: &CheckedConfig) -> anyhow::Result<Option<Engine>> {
    match Engine::prepare(database, config).await {
        Ok(engine) => Ok(Some(engine)),
        Err(PrepareError::Invalid(diagnostics)) => {
            refuse_diagnostics(config.sources(), &diagnostics);
            Ok(None)
        }
        Err(error) => Err(error.into()),
    }
}

/// A config with errors is never planned nor executed: its errors go to stderr instead.
fn refuse_diagnostics(sources: &Sources, diagnostics: &[Diagnostic]) -> bool {
    let report = Report { sources, diagnostics };
    if report.errors() == 0 {
        return false;
    }
    eprint!("{}", report.render(Format::Human, false));
    eprintln!("error: the config has errors; fix them first");
    true
}

/// The database: `--database-url` (or `CASCADE_DATABASE_URL`), else `[settings] database_url`,
/// else the embedded default.
fn database_url(cli: &Cli, config: &cascade::config::Config) -> String {
    cli.database_url
        .clone()
        .or_else(|| config.settings.database_url.as_ref().map(|url| url.value.clone()))
        .unwrap_or_else(|| cascade::db::DEFAULT_DATABASE_URL.to_owned())
}

/// The ids given on the command line followed by those of `--ids-from FILE` (`-`: standard
/// input), separated by whitespace or commas.
fn root_ids(ids: &[String], ids_from: Option<&std::path::Path>) -> anyhow::Result<Vec<String>> {
    use anyhow::Context as _;
    let Some(path) = ids_from else { return Ok(ids.to_vec()) };
    let text = if path == std::path::Path::new("-") {
        std::io::read_to_string(std::io::stdin()).context("cannot read ids from standard input")?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read ids from `{}`", path.display()))?
    };
    let from_file: Vec<String> =
        text.split(|c: char| c.is_whitespace() || c == ',').filter(|id| !id.is_empty()).map(str::to_owned).collect();
    if from_file.is_empty() {
        anyhow::bail!("no ids in `{}`", path.display());
    }
    Ok(ids.iter().cloned().chain(from_file).collect())
}

/// Connects to `url` with the config's connection settings.
async fn connect(
    url: &str,
    config: &cascade::config::Config,
    access: cascade::db::Access,
) -> Result<cascade::db::Database, cascade::db::DbError> {
    let options = cascade::db::ConnectOptions { access, busy_timeout: config.settings.busy_timeout() };
    cascade::db::Database::connect(url, options).await
}

/// A flag set by the first Ctrl-C or SIGTERM.
fn stop_on_signals() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    tokio::spawn(async move {
        let terminate = async {
            #[cfg(unix)]
            if let Ok(mut signal) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                signal.recv().await;
                return;
            }
            std::future::pending::<()>().await
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate => {}
        }
        tracing::warn!("stopping after the current chunk or delivery");
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    stop
}

/// Runs async library work (database access) from the synchronous command layer.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime starts").block_on(future)
}

/// Colour only for people: a terminal, and no `NO_COLOR`.
fn color_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}
