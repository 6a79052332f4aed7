//! How a deletion runs beyond what it deletes, and what a clean-up batch adds to it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::audit::RunRows;
use crate::engine::{Pacing, RootGuard};

/// How a deletion runs, beyond what it deletes.
#[derive(Debug, Clone)]
pub struct DeleteOptions {
    /// Directory for the gzip JSON-lines archive of every deleted row.
    pub archive: Option<PathBuf>,
    /// Who runs the deletion, for `cascade_run`.
    pub actor: String,
    /// The command line, for `cascade_run`.
    pub command: String,
    /// How often a parent chunk is retried when children keep appearing under it.
    pub orphan_retries: u32,
    /// Set by the caller to stop: a rate-limit wait then ends at once, so the caller sees the
    /// flag right after the current chunk.
    pub stop: Option<Arc<AtomicBool>>,
    /// The deletion is one batch of a run the caller recorded (a clean-up deleting batch after
    /// batch); `None` for a deletion that is a run of its own.
    pub(crate) within: Option<RunBatch>,
}

impl Default for DeleteOptions {
    fn default() -> Self {
        Self {
            archive: None,
            actor: default_actor(),
            command: String::new(),
            orphan_retries: 5,
            stop: None,
            within: None,
        }
    }
}

impl DeleteOptions {
    /// The options of a deletion run by `command` (the command line as `cascade_run` records it,
    /// passwords redacted), the others at their defaults.
    pub fn for_command(command: impl Into<String>) -> Self {
        Self { command: command.into(), ..Self::default() }
    }
}

/// A deletion that is one batch of a caller's run: the caller read its roots from the root
/// table right before (they are not looked up again, only their status is), in ascending key
/// order, and the deletion records its rows and progress in the caller's run.
#[derive(Debug, Clone)]
pub(crate) struct RunBatch {
    /// The caller's `cascade_run` row, which it keeps alive: the deletion records no run of its
    /// own, and its archive files carry that run's id.
    pub run: i64,
    /// A `cascade_checkpoint` name that every transaction deleting root rows advances, in that
    /// transaction, to the highest root key it deleted, so that every root up to the checkpoint
    /// is done.
    pub checkpoint: String,
    /// Rate-limit buckets shared with the caller's other batches of the same plan, so that
    /// together they keep to the limits.
    pub pacing: Pacing,
    /// Root rows per transaction, instead of the root model's (adaptive) chunk size: a batch is
    /// one chunk of roots.
    pub root_chunk_size: u64,
    /// The caller has had [`crate::engine::Engine::refuse_undeletable`] check this plan's
    /// lookups (once for all its batches): they are not checked again.
    pub lookups_checked: bool,
    /// A condition each root row must still meet to be deleted, where the root has no children
    /// (whose rows would otherwise go first, whether the root then goes or not). A root with a
    /// status is marked in progress before the guard is tested: leave its rows out beforehand.
    pub root_guard: Option<RootGuard>,
    /// What the caller's run deleted and nullified before this batch: each transaction records
    /// those rows and its own, so far, in `cascade_run.rows`.
    pub rows_before: RunRows,
}

/// The user running the tool, for the audit trail: the operating-system user's name (see
/// `crate::user`), else `uid N`; never "unknown" and never taken from `$USER`.
pub fn default_actor() -> String {
    crate::user::current().display_name()
}
