//! The options of a confirmed clean-up's batches, shared by `orphans` and `duplicates`.

use std::path::PathBuf;
use std::time::Duration;

use std::process::ExitCode;

use cascade::audit::RunOutcome;
use cascade::cleanup::{BatchError, BatchOptions, CleanupSummary};
use cascade::db::redact_command_line;

use super::table::plural;

/// How a confirmed clean-up goes, batch by batch (shared by `orphans` and `duplicates`); each
/// option needs `--confirm`, since a dry run has no batches.
#[derive(Debug, clap::Args)]
pub struct BatchArgs {
    /// Rows per batch, 50 to 5000 (each the root of its own cascade) [default: from 500,
    /// adapting to the config's target_chunk_ms]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(50..=5000), requires = "confirm")]
    pub batch_size: Option<u64>,
    /// Pause between two batches, in milliseconds (the config's rate limits apply on top).
    #[arg(long, value_name = "MS", default_value_t = 100, requires = "confirm")]
    pub sleep_ms: u64,
    /// Stop after N batches; running the command again continues after them.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000_000), requires = "confirm")]
    pub max_batches: Option<u64>,
    /// Ignore where an interrupted run stopped and scan from the lowest key.
    #[arg(long, requires = "confirm")]
    pub restart: bool,
    /// Write every deleted row to DIR/MODEL.RUN.jsonl.gz before it is deleted.
    #[arg(long, value_name = "DIR", requires = "confirm")]
    pub archive: Option<PathBuf>,
}

impl BatchArgs {
    /// The options of a confirmed run of the current command line, stopped by Ctrl-C / SIGTERM.
    pub(super) fn options(&self) -> BatchOptions {
        BatchOptions {
            batch_size: self.batch_size,
            sleep: Duration::from_millis(self.sleep_ms),
            max_batches: self.max_batches,
            restart: self.restart,
            archive: self.archive.clone(),
            command: redact_command_line(std::env::args()),
            stop: Some(super::stop_on_signals()),
            ..BatchOptions::default()
        }
    }
}

/// A clean-up refused before its first batch because the same clean-up is running: exit code 1,
/// as for any run refused before it wrote anything.
pub(super) fn already_running(error: &BatchError) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(1)
}

/// A clean-up that stopped on an error, with what became of the batches before it.
pub(super) fn cleanup_failed(error: impl Into<anyhow::Error>) -> anyhow::Error {
    error.into().context(
        "the clean-up stopped: the batches before this one stay done (`cascade runs` shows the run's rows); \
         once the cause below is gone, the same command continues after them",
    )
}

/// 130 when a signal stopped the run (as a shell reports SIGINT), success otherwise (a run that
/// reached `--max-batches` stopped where it was asked to).
pub(super) fn cleanup_exit(summary: &CleanupSummary) -> ExitCode {
    if summary.outcome == RunOutcome::Interrupted && summary.stopped_early.is_none() {
        eprintln!("interrupted after a complete batch: run the same command again to continue");
        return ExitCode::from(super::exit::EXIT_INTERRUPTED);
    }
    ExitCode::SUCCESS
}

/// Rows per model, batches, the slowest batch and transaction, the run, and how it stopped.
pub(super) fn human_summary(summary: &CleanupSummary) -> String {
    let mut out = super::delete::rows_by_model(&summary.deleted, &summary.nullified);
    if !summary.re_pointed.is_empty() {
        out += "re-pointed to the kept rows:\n";
        for (model, count) in &summary.re_pointed {
            out += &format!("  {model:<30} {count:>10}\n");
        }
    }
    out += &format!(
        "{} in {} (slowest {:.1} ms, longest transaction {:.1} ms), {}, {:.1} s; run {}\n",
        plural(summary.rows(), "row", "rows"),
        plural(summary.batches, "batch", "batches"),
        summary.slowest_batch_ms,
        summary.max_transaction_ms,
        plural(summary.outbox_rows, "outbox row", "outbox rows"),
        summary.elapsed_ms / 1e3,
        summary.run
    );
    if let Some(run) = summary.resumes {
        out += &format!("continued run {run}, which was interrupted\n");
    }
    if !summary.skipped.is_empty() {
        out += &format!("skipped, status does not allow the deletion: {}\n", summary.skipped.join(", "));
    }
    for (scan, position) in &summary.continued_after {
        out += &format!(
            "continued {scan} after {position}, where an earlier run stopped: rows below it that need cleaning \
             since were not looked at (the next run looks at the whole table; --restart now)\n"
        );
    }
    if let Some(why) = &summary.stopped_early {
        out += &format!("stopped: {why}; run the same command again to continue\n");
    }
    out
}
