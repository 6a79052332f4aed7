use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use cascade::db::{Access, Database, redact_command_line};
use cascade::engine::default_actor;
use cascade::partitions::{self, Created, Detach, Dropped, Policy, PruneOptions, Report};

use super::Cli;
use super::output::SummaryFormat;
use super::table::Table;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub list: ListArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Drop the partitions wholly older than `retention.keep` (a dry run without --confirm).
    Prune(PruneArgs),
    /// Create the next range partitions on the step of the existing bounds.
    Create(CreateArgs),
}

/// What every partitions command shares.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// The model; every model with `retention` when left out.
    pub model: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SummaryFormat::Human)]
    pub format: SummaryFormat,
    /// The time retention counts back from (RFC 3339), instead of now: for tests.
    #[arg(long, hide = true, value_parser = humantime::parse_rfc3339_weak)]
    pub now: Option<SystemTime>,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub common: Common,
    /// Really drop the partitions (archived first with --archive).
    #[arg(long)]
    pub confirm: bool,
    /// Write every row of a dropped partition to DIR/MODEL.RUN.jsonl.gz first.
    #[arg(long, value_name = "DIR")]
    pub archive: Option<PathBuf>,
    /// A test hook: after each detach, wait until FILE exists.
    #[arg(long, hide = true, value_name = "FILE")]
    pub pause_after_detach: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub common: Common,
    /// How many partitions should start after now; the missing ones are created.
    #[arg(long, value_name = "N")]
    pub ahead: u32,
}

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let Some(loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    let common = match &args.command {
        None => &args.list.common,
        Some(Command::Prune(prune)) => &prune.common,
        Some(Command::Create(create)) => &create.common,
    };
    let confirm = matches!(&args.command, Some(Command::Prune(prune)) if prune.confirm);
    if confirm {
        cascade::config::check_allowed_user(&loaded, loaded.sources(), "partitions prune --confirm")?;
    }
    if matches!(args.command, Some(Command::Create(_))) {
        cascade::config::check_allowed_user(&loaded, loaded.sources(), "partitions create")?;
    }
    let url = super::database_url(cli, &loaded);
    let now = common.now.unwrap_or_else(SystemTime::now);
    let access =
        if confirm || matches!(args.command, Some(Command::Create(_))) { Access::ReadWrite } else { Access::ReadOnly };
    super::block_on(async {
        let database = super::connect(&url, &loaded, access).await?;
        let result = async {
            let schema = cascade::schema::introspect(&database).await?;
            let policies = partitions::policies(&loaded, &schema, &database, common.model.as_deref())?;
            match &args.command {
                None => list(&database, &policies, now, common.format, false).await,
                Some(Command::Prune(prune)) if prune.confirm => {
                    let options = PruneOptions {
                        archive: prune.archive.clone(),
                        actor: default_actor(),
                        command: redact_command_line(std::env::args()),
                        run_lease: loaded.settings.run_lease(),
                        pause_after_detach: prune.pause_after_detach.clone(),
                    };
                    let mut dropped = Vec::new();
                    for policy in &policies {
                        dropped.extend(partitions::prune(&database, &loaded, &schema, policy, now, &options).await?);
                    }
                    print_dropped(&dropped, common.format)
                }
                Some(Command::Prune(_)) => list(&database, &policies, now, common.format, true).await,
                Some(Command::Create(create)) => {
                    let mut created = Vec::new();
                    for policy in &policies {
                        created.extend(partitions::create_ahead(&database, policy, now, create.ahead).await?);
                    }
                    print_created(&created, common.format)
                }
            }
        }
        .await;
        database.close().await;
        result
    })
}

/// The partitions of every policy; for `prune` without --confirm (`dry_run`), also the ones it
/// would drop.
async fn list(
    database: &Database,
    policies: &[Policy<'_>],
    now: SystemTime,
    format: SummaryFormat,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let mut reports = Vec::new();
    for policy in policies {
        reports.push(partitions::report(database, policy, now).await?);
    }
    let would: Vec<String> = reports
        .iter()
        .flat_map(|report| report.partitions.iter().filter(|state| state.drop))
        .map(|state| state.partition.qualified_name())
        .collect();
    match format {
        SummaryFormat::Json if dry_run => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "would_drop": would, "models": reports }))?
        ),
        SummaryFormat::Json => println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "models": reports }))?),
        SummaryFormat::Human => {
            print!("{}", human(&reports));
            if dry_run {
                println!("\ndry run: nothing was dropped; add --confirm to drop {} partition(s)", would.len());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One table per model: each partition's bounds, estimated rows, size and fate; then the
/// default partition's old rows and any partition an interrupted prune left detached.
fn human(reports: &[Report]) -> String {
    let mut out = String::new();
    for report in reports {
        out += &format!(
            "{} ({}, by {}): keep {}, cut-off {}\n",
            report.model, report.table, report.column, report.keep, report.cutoff
        );
        let headers = ["partition", "from", "to", "rows (est.)", "size", "retention"];
        let rows: Vec<[String; 6]> = report
            .partitions
            .iter()
            .map(|state| {
                let partition = &state.partition;
                let bound = |value: &Option<String>, unbounded: &str| {
                    if partition.default { "DEFAULT".to_owned() } else { value.clone().unwrap_or(unbounded.to_owned()) }
                };
                [
                    partition.qualified_name(),
                    bound(&partition.from, "MINVALUE"),
                    bound(&partition.to, "MAXVALUE"),
                    partition.rows_estimate.map_or_else(|| "?".to_owned(), |rows| rows.to_string()),
                    size(partition.bytes),
                    if partition.default {
                        "never dropped".to_owned()
                    } else if state.drop {
                        "drop".to_owned()
                    } else {
                        "keep".to_owned()
                    },
                ]
            })
            .collect();
        out += &Table::render(headers, &rows, &[3, 4]);
        if let Some(older) = report.default_older_rows.filter(|rows| *rows > 0) {
            out += &format!(
                "the default partition holds {older} row(s) older than the cut-off: retention never drops it; delete \
                 them with `cascade delete`\n"
            );
        }
        for detached in &report.detached {
            out += &format!("{detached} was detached by an interrupted prune: the next prune drops it\n");
        }
    }
    out
}

fn size(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{} kB", bytes / 1024),
        _ => format!("{} MB", bytes / 1_048_576),
    }
}

fn print_dropped(dropped: &[Dropped], format: SummaryFormat) -> anyhow::Result<ExitCode> {
    match format {
        SummaryFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "dropped": dropped }))?)
        }
        SummaryFormat::Human => {
            for partition in dropped {
                let detach = match partition.detach {
                    Detach::Plain => {
                        " (plain DETACH: the server is older than PostgreSQL 14 or the table has a default partition, \
                         where CONCURRENTLY is not allowed)"
                    }
                    Detach::Earlier => " (detached by an interrupted prune)",
                    Detach::Concurrently => " (detached concurrently)",
                    Detach::Finalized => " (detached finalized)",
                    Detach::Exchanged => " (its rows exchanged into a table of their own, the partition dropped)",
                };
                println!("dropped {}: {} row(s), run {}{detach}", partition.partition, partition.rows, partition.run);
                for (column, rows) in &partition.nullified {
                    println!("  set {column} to NULL in {rows} row(s) first");
                }
                if let Some(archive) = &partition.archive {
                    println!("  archived to {}", archive.display());
                }
            }
            if dropped.is_empty() {
                println!("no partition is wholly older than the retention: nothing was dropped");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_created(created: &[Created], format: SummaryFormat) -> anyhow::Result<ExitCode> {
    match format {
        SummaryFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "created": created }))?)
        }
        SummaryFormat::Human => {
            for partition in created {
                println!("created {} for [{}, {})", partition.partition, partition.from, partition.to);
            }
            if created.is_empty() {
                println!("enough partitions exist ahead: nothing was created");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
