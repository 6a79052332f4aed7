//! What a deletion did: the JSON shape of `delete --format json`.

use indexmap::IndexMap;
use serde::Serialize;

use crate::audit::RunRows;

/// What a deletion did; the JSON shape of `delete --format json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Rows deleted per model.
    pub deleted: IndexMap<String, u64>,
    /// Rows whose relation column was set to NULL, per model.
    pub nullified: IndexMap<String, u64>,
    /// Transactions committed.
    pub chunks: u64,
    /// The longest of them, in milliseconds.
    #[serde(serialize_with = "whole_microseconds")]
    pub max_chunk_ms: f64,
    /// The 99th percentile of their times (nearest rank), in milliseconds; set by
    /// [`super::Deletion::finish`].
    #[serde(serialize_with = "whole_microseconds")]
    pub p99_chunk_ms: f64,
    /// How long each transaction took, in milliseconds, in commit order.
    #[serde(skip)]
    pub chunk_ms: Vec<f64>,
    /// Time since the deletion started, in milliseconds.
    #[serde(serialize_with = "whole_microseconds")]
    pub elapsed_ms: f64,
    /// Outbox tombstones written.
    pub outbox_rows: u64,
    /// Root ids whose status did not allow the deletion.
    pub skipped: Vec<String>,
    /// Root ids that do not exist (already deleted, or never were).
    pub missing: Vec<String>,
    /// The interrupted run (stopped, or its process died) of the same roots that this run
    /// resumes.
    pub resumes: Option<i64>,
}

impl Summary {
    /// Rows deleted and nullified so far.
    pub fn rows(&self) -> u64 {
        self.deleted.values().chain(self.nullified.values()).sum()
    }

    /// Adds what a later run of the same command did (a purge's next batch of roots).
    pub fn absorb(&mut self, later: Summary) {
        for (model, rows) in later.deleted {
            *self.deleted.entry(model).or_default() += rows;
        }
        for (model, rows) in later.nullified {
            *self.nullified.entry(model).or_default() += rows;
        }
        self.chunks += later.chunks;
        self.max_chunk_ms = self.max_chunk_ms.max(later.max_chunk_ms);
        self.chunk_ms.extend(later.chunk_ms);
        self.p99_chunk_ms = self.p99_chunk_ms.max(later.p99_chunk_ms);
        self.elapsed_ms += later.elapsed_ms;
        self.outbox_rows += later.outbox_rows;
        self.skipped.extend(later.skipped);
        self.missing.extend(later.missing);
        self.resumes = self.resumes.or(later.resumes);
    }

    /// Rows deleted and nullified so far, per model.
    pub fn run_rows(&self) -> RunRows {
        RunRows::default().plus(&self.deleted, &self.nullified)
    }
}

/// Milliseconds as JSON, rounded to whole microseconds: a clock's nanoseconds (`7.1236310000000005`)
/// say nothing a reader needs.
pub(crate) fn whole_microseconds<S: serde::Serializer>(ms: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64((ms * 1e3).round() / 1e3)
}

/// The `quantile` (0 to 1) of `values` by the nearest-rank method; 0 when there are none.
pub(super) fn nearest_rank(values: &[f64], quantile: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::{Summary, nearest_rank};

    #[test]
    fn the_99th_percentile_is_a_measured_value_by_nearest_rank() {
        let hundred: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(nearest_rank(&hundred, 0.99), 99.0);
        assert_eq!(nearest_rank(&[3.0, 1.0, 2.0], 0.99), 3.0);
        assert_eq!(nearest_rank(&[7.5], 0.99), 7.5);
        assert_eq!(nearest_rank(&[], 0.99), 0.0);
    }

    #[test]
    fn milliseconds_are_written_to_the_microsecond() {
        let summary =
            Summary { max_chunk_ms: 7.1236310000000005, p99_chunk_ms: 0.0004, elapsed_ms: 12.5, ..Summary::default() };
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(
            (&json["max_chunk_ms"], &json["p99_chunk_ms"], &json["elapsed_ms"]),
            (&serde_json::json!(7.124), &serde_json::json!(0.0), &serde_json::json!(12.5))
        );
    }
}
