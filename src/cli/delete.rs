use std::path::PathBuf;
use std::process::ExitCode;

use cascade::audit::RunOutcome;
use cascade::db::{Access, Failure, redact_command_line};
use cascade::engine::{self, CountError, DeleteError, DeleteOptions, Engine, Finished, Summary};
use cascade::planner;
use cascade::render::{Folding, PlanFormat, PlanView};
use indexmap::IndexMap;
use indicatif::{ProgressBar, ProgressStyle};

use super::Cli;
use super::exit::EXIT_INTERRUPTED;
use super::output::SummaryFormat;
use super::table::plural;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The root model.
    pub model: String,
    /// Ids of the root rows to delete.
    #[arg(required_unless_present_any = ["ids_from", "condition"], value_name = "ID", value_delimiter = ',')]
    pub ids: Vec<String>,
    /// Also delete the ids listed in FILE (`-`: standard input), separated by whitespace,
    /// newlines or commas: for more ids than a command line holds.
    #[arg(long, value_name = "FILE")]
    pub ids_from: Option<PathBuf>,
    /// Delete the root rows that match this SQL condition instead of ids (`--where
    /// "created_at < '2020-01-01'"`): taken in key order, 1,000 roots a run, so running the same
    /// command again resumes a purge that stopped.
    #[arg(long = "where", value_name = "CONDITION", conflicts_with_all = ["ids", "ids_from"])]
    pub condition: Option<String>,
    /// Delete for real. Without it, only the plan with its row counts is printed.
    #[arg(long)]
    pub confirm: bool,
    /// Write every deleted row to DIR/MODEL.RUN.jsonl.gz before it is deleted.
    #[arg(long, value_name = "DIR")]
    pub archive: Option<PathBuf>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value_t = SummaryFormat::Human)]
    pub format: SummaryFormat,
    /// With --confirm, count the rows first even without a terminal (the count sizes the
    /// progress bar and the progress lines' totals; it is skipped otherwise, to save time).
    #[arg(long)]
    pub count: bool,
}

/// How often a progress line is logged when there is no progress bar.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

pub fn run(cli: &Cli, args: &Args) -> anyhow::Result<ExitCode> {
    let Some(loaded) = super::load_valid(cli)? else { return Ok(ExitCode::from(1)) };
    if args.confirm {
        cascade::config::check_allowed_user(&loaded, loaded.sources(), "delete --confirm")?;
    }
    let plan = planner::compile(&loaded, &args.model)?;
    let ids = super::root_ids(&args.ids, args.ids_from.as_deref())?;
    let url = super::database_url(cli, &loaded);
    let access = if args.confirm { Access::ReadWrite } else { Access::ReadOnly };
    super::block_on(async {
        let database = super::connect(&url, &loaded, access).await?;
        let Some(engine) = super::prepare(database.clone(), &loaded).await? else {
            return Ok(ExitCode::from(1));
        };
        let condition = match &args.condition {
            Some(text) => Some(engine::RootCondition::parse(database.kind(), text)?),
            None => None,
        };
        if let (Some(condition), true) = (&condition, args.confirm) {
            let (done, ended) = purge(&engine, &plan, condition, &args.archive).await;
            database.close().await;
            // What the batches before a refusal or a failure did is said either way.
            let code = report(done, args.format)?;
            return match ended {
                Ok(true) => Ok(ExitCode::from(1)),
                Ok(false) => Ok(code),
                Err(error) => Err(error),
            };
        }
        let ids = match &condition {
            Some(condition) => condition.all_roots(&database, engine.schema(), &plan).await?,
            None => ids,
        };
        if !args.confirm {
            let counts = match engine::count(&database, engine.config(), engine.schema(), &plan, &ids).await {
                Ok(counts) => counts,
                // A root id --confirm would refuse before its first write: a finding, not a
                // failure of the dry run.
                Err(refused @ CountError::NotAnInteger { .. }) => {
                    eprintln!("error: with --confirm this deletion would be refused: {refused}");
                    return Ok(ExitCode::from(1));
                }
                Err(error) => return Err(error.into()),
            };
            let rates = engine::current_options(&loaded, &database).await?;
            let view = PlanView::new(&plan, &ids, Some(&counts), &rates, &Folding::default(), None)
                .with_condition(args.condition.clone());
            print!(
                "{}",
                view.render(if args.format == SummaryFormat::Json { PlanFormat::Json } else { PlanFormat::Text })?
            );
            // What --confirm would refuse before its first write, the dry run says too.
            if let Err(refused) = engine.refuse_undeletable(&plan).await {
                if let DeleteError::UnregisteredReferences(diagnostics) = &refused {
                    super::refuse_diagnostics(engine.sources(), diagnostics);
                }
                eprintln!("error: with --confirm this deletion would be refused: {refused}");
                return Ok(ExitCode::from(1));
            }
            if args.format == SummaryFormat::Human {
                println!("\ndry run: nothing was deleted; add --confirm to delete these rows");
            }
            return Ok(ExitCode::SUCCESS);
        }
        let mut options = DeleteOptions::for_command(redact_command_line(std::env::args()));
        options.archive = args.archive.clone();
        // A full count before deleting only pays off where a progress bar shows it.
        let total = if args.count || stderr_is_terminal() {
            let counts = engine::count(&database, engine.config(), engine.schema(), &plan, &ids).await?;
            Some(counts.totals.values().sum())
        } else {
            None
        };
        let finished = delete(&engine, &plan, &ids, options, total).await;
        database.close().await;
        report(finished?, args.format)
    })
}

/// Prints what a deletion did; the exit code.
fn report(finished: Option<Finished>, format: SummaryFormat) -> anyhow::Result<ExitCode> {
    let Some(finished) = finished else { return Ok(ExitCode::from(1)) };
    print!("{}", render_summary(&finished.summary, format));
    if finished.outcome == RunOutcome::Interrupted {
        eprintln!("interrupted after a complete chunk: run the same command again to finish");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// `delete --where --confirm`: the root rows that match `condition`, [`engine::ROOTS_PER_RUN`]
/// at a time in key order, each batch a run of its own, to the end or the first interruption
/// (one Ctrl-C or SIGTERM for all of them); what the batches did, as one summary, and how the
/// purge ended: `Ok(true)` when a batch was refused before it wrote anything.
async fn purge(
    engine: &Engine,
    plan: &planner::Plan,
    condition: &engine::RootCondition,
    archive: &Option<PathBuf>,
) -> (Option<Finished>, anyhow::Result<bool>) {
    let stop = super::stop_on_signals();
    let mut done: Option<Finished> = None;
    let mut after: Option<String> = None;
    loop {
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            if let Some(done) = &mut done {
                done.outcome = RunOutcome::Interrupted;
            }
            break;
        }
        let read = condition.roots(engine.database(), engine.schema(), plan, after.as_deref(), engine::ROOTS_PER_RUN);
        let roots = match read.await {
            Ok(roots) => roots,
            Err(error) => return (done, Err(error.into())),
        };
        let Some(last) = roots.last().cloned() else { break };
        let mut options = DeleteOptions::for_command(redact_command_line(std::env::args()));
        options.archive = archive.clone();
        options.stop = Some(stop.clone());
        let finished = match delete(engine, plan, &roots, options, None).await {
            Ok(Some(finished)) => finished,
            Ok(None) => return (done, Ok(true)),
            Err(error) => return (done, Err(error)),
        };
        let interrupted = finished.outcome == RunOutcome::Interrupted;
        done = Some(match done {
            Some(mut so_far) => {
                so_far.summary.absorb(finished.summary);
                so_far.outcome = finished.outcome;
                so_far
            }
            None => finished,
        });
        if interrupted || (roots.len() as u64) < engine::ROOTS_PER_RUN {
            break;
        }
        after = Some(last);
    }
    if done.is_none() {
        eprintln!("no row of `{}` matches the condition: nothing to delete", plan.root.model);
    }
    (Some(done.unwrap_or(Finished { summary: Summary::default(), outcome: RunOutcome::Succeeded })), Ok(false))
}

/// Runs the deletion to its end or to the first Ctrl-C / SIGTERM, which stop it between chunks,
/// with a progress bar on a terminal and a log line every few seconds otherwise. `None` (the
/// reason printed) when it was refused before any write: undeclared foreign keys, values or
/// relations no lookup by key can match.
pub(super) async fn delete(
    engine: &Engine,
    plan: &planner::Plan,
    ids: &[String],
    mut options: DeleteOptions,
    total_rows: Option<u64>,
) -> anyhow::Result<Option<Finished>> {
    if options.stop.is_none() {
        options.stop = Some(super::stop_on_signals());
    }
    let bar = progress_bar(total_rows);
    let mut last_line = std::time::Instant::now();
    let finished = engine
        .run_to_end(plan, ids, options, |summary| {
            let deleted: u64 = summary.deleted.values().sum();
            bar.set_position(deleted);
            if bar.is_hidden() && last_line.elapsed() >= PROGRESS_EVERY {
                tracing::info!(deleted, of = total_rows, chunks = summary.chunks, "deleting");
                last_line = std::time::Instant::now();
            }
        })
        .await;
    match &finished {
        Ok(done) if done.outcome != RunOutcome::Interrupted => bar.finish_and_clear(),
        _ => bar.abandon(),
    }
    match &finished {
        Err(DeleteError::UnregisteredReferences(diagnostics)) => {
            super::refuse_diagnostics(engine.sources(), diagnostics);
            return Ok(None);
        }
        Err(refused) if refused.refused_before_any_write() => {
            eprintln!("error: the deletion was refused before it wrote anything: {refused}");
            return Ok(None);
        }
        _ => {}
    }
    finished.map(Some).map_err(|error| {
        let advice = match engine.failure(&error) {
            Failure::Transient => "the deletion stopped; run the same command again to resume",
            _ => "the deletion stopped on an error that does not go away by itself: fix its cause (rows deleted so far stay deleted)",
        };
        anyhow::Error::new(error).context(advice)
    })
}

fn stderr_is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
}

/// A progress bar on a terminal (of deleted rows out of `total`, when counted); hidden
/// otherwise, where log lines report progress instead.
fn progress_bar(total: Option<u64>) -> ProgressBar {
    if !stderr_is_terminal() {
        return ProgressBar::hidden();
    }
    let Some(total) = total else {
        return ProgressBar::new_spinner();
    };
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {bar:40} {pos}/{len} rows · {rate} · eta {eta}")
            .expect("a valid template")
            // Whole rows per second: indicatif's own {per_sec} prints four decimals.
            .with_key("rate", |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.0} rows/s", state.per_sec());
            }),
    );
    bar
}

pub(super) fn render_summary(summary: &Summary, format: SummaryFormat) -> String {
    if format == SummaryFormat::Json {
        return serde_json::to_string_pretty(summary).expect("a summary serialises") + "\n";
    }
    let mut text = rows_by_model(&summary.deleted, &summary.nullified);
    text.push_str(&format!(
        "{} in {} (longest {:.1} ms), {}, {:.1} s\n",
        plural(summary.rows(), "row", "rows"),
        plural(summary.chunks, "chunk", "chunks"),
        summary.max_chunk_ms,
        plural(summary.outbox_rows, "outbox row", "outbox rows"),
        summary.elapsed_ms / 1e3
    ));
    if !summary.skipped.is_empty() {
        text.push_str(&format!("skipped, status does not allow the deletion: {}\n", summary.skipped.join(", ")));
    }
    if let Some(run) = summary.resumes {
        text.push_str(&format!("resumed run {run}, which was interrupted\n"));
    }
    if !summary.missing.is_empty() {
        text.push_str(&format!("not found: {}\n", summary.missing.join(", ")));
    }
    text
}

/// The rows deleted and nullified, one line per model.
pub(super) fn rows_by_model(deleted: &IndexMap<String, u64>, nullified: &IndexMap<String, u64>) -> String {
    let mut text = String::new();
    for (title, rows) in [("deleted", deleted), ("nullified", nullified)] {
        // A step that ran and found nothing says nothing here.
        let done: Vec<(&String, &u64)> = rows.iter().filter(|(_, count)| **count > 0).collect();
        if !done.is_empty() {
            text.push_str(&format!("{title}:\n"));
            for (model, count) in done {
                text.push_str(&format!("  {model:<30} {count:>10}\n"));
            }
        }
    }
    text
}
