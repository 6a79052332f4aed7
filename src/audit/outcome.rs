//! How a run ended and what it did, as `cascade_run` records them.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::config::OnDelete;
use crate::telemetry;

/// Rows a run deleted and nullified, per model: what `cascade_run.rows` records, as
/// `{"deleted": {MODEL: ROWS}, "nullified": {MODEL: ROWS}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRows {
    /// Rows deleted per model.
    #[serde(default)]
    pub deleted: IndexMap<String, u64>,
    /// Rows whose relation column was set to NULL, per model.
    #[serde(default)]
    pub nullified: IndexMap<String, u64>,
}

impl RunRows {
    /// `deleted` and `nullified` added to these.
    pub fn plus(&self, deleted: &IndexMap<String, u64>, nullified: &IndexMap<String, u64>) -> Self {
        let mut sum = self.clone();
        for (into, from) in [(&mut sum.deleted, deleted), (&mut sum.nullified, nullified)] {
            for (model, rows) in from {
                *into.entry(model.clone()).or_default() += rows;
            }
        }
        sum
    }

    /// The counts of `model`'s rows of the step `action`: deleted (by cascade or the database), or
    /// nullified.
    pub fn of(&mut self, action: OnDelete, model: &str) -> &mut u64 {
        let counts = if action.deletes() { &mut self.deleted } else { &mut self.nullified };
        counts.entry(model.to_owned()).or_default()
    }

    /// As `cascade_run.rows` holds them.
    pub(crate) fn json(&self) -> String {
        serde_json::to_string(self).expect("counts serialize")
    }

    /// `cascade_run.rows` read back; `None` for another shape (a `partitions prune` run of an
    /// earlier version recorded `{MODEL: ROWS}`).
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        Self::deserialize(value).ok()
    }
}

/// `deleted a 3, b 5; nullified c 2`, leaving out zeros; empty when nothing was done.
impl std::fmt::Display for RunRows {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut separator = "";
        for (kind, counts) in [("deleted", &self.deleted), ("nullified", &self.nullified)] {
            let done: Vec<String> =
                counts.iter().filter(|(_, rows)| **rows > 0).map(|(model, rows)| format!("{model} {rows}")).collect();
            if !done.is_empty() {
                write!(formatter, "{separator}{kind} {}", done.join(", "))?;
                separator = "; ";
            }
        }
        Ok(())
    }
}

/// How a run ended, as `cascade_run.outcome` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// Everything below the roots is gone.
    Succeeded,
    /// Every root found was skipped: its status does not allow the deletion.
    Skipped,
    /// No requested root row exists (already deleted, or never was): nothing to do.
    NotFound,
    /// Stopped between chunks (Ctrl-C, SIGTERM, a lost claim); running it again finishes it.
    Interrupted,
    /// Stopped by an error.
    Failed,
}

impl RunOutcome {
    /// The word stored in `cascade_run.outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Succeeded => "succeeded",
            RunOutcome::Skipped => "skipped",
            RunOutcome::NotFound => "not_found",
            RunOutcome::Interrupted => "interrupted",
            RunOutcome::Failed => "failed",
        }
    }

    /// Counts a deletion that ended this way (`cascade_deletions_total{outcome}`).
    pub(crate) fn count(self) {
        metrics::counter!(telemetry::DELETIONS, telemetry::OUTCOME => self.as_str()).increment(1);
    }
}

/// Where a run stands, as `cascade runs` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Its process is at work.
    Running,
    /// It ended so (a `running` run whose process is gone counts as interrupted).
    Ended(RunOutcome),
}

impl RunState {
    /// The word stored in `cascade_run.outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => RUNNING,
            RunState::Ended(outcome) => outcome.as_str(),
        }
    }

    /// The state a stored word names; `None` for a word no version of the tool writes.
    pub fn parse(word: &str) -> Option<Self> {
        let ended = [
            RunOutcome::Succeeded,
            RunOutcome::Skipped,
            RunOutcome::NotFound,
            RunOutcome::Interrupted,
            RunOutcome::Failed,
        ];
        if word == RUNNING {
            return Some(RunState::Running);
        }
        ended.into_iter().find(|outcome| outcome.as_str() == word).map(RunState::Ended)
    }
}

/// The word `cascade_run.outcome` holds while a run runs.
pub(crate) const RUNNING: &str = "running";

impl std::fmt::Display for RunState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.pad(self.as_str())
    }
}

impl Serialize for RunState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
