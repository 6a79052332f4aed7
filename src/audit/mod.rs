//! The audit trail and the state a resumable run keeps: `cascade_run` (one row per run, with
//! who, when, the command, the roots, the rows it did and how it ended), `cascade_checkpoint`
//! (positions a run resumes from), `cascade_root_status` (root statuses from before a
//! deletion marked them) and `cascade_nullified_row` (the rows a running deletion set to NULL). Deletions, clean-ups and partition prunes record themselves through a
//! `Run` handle, which keeps the run's heartbeat while it exists.

pub(crate) mod checkpoint;
pub(crate) mod nullified;
mod outcome;
mod process;
mod records;
mod run;
pub(crate) mod statuses;

pub use outcome::{RunOutcome, RunRows, RunState};
pub(crate) use records::run_alive;
pub use records::{RunRecord, list_runs};
pub use run::LiveRun;
pub(crate) use run::{Alone, Run, RunStart, record_rows};
