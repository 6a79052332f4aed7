//! Adaptive chunk sizes: each step's chunk grows or shrinks after every transaction so that the
//! next one takes about `target_chunk_ms`, as Percona's `pt-online-schema-change --chunk-time`
//! does. A step starts at its `chunk_size`; sizes grow at most fourfold per chunk, aiming a little
//! under the target (a transaction's time grows faster than its rows once its pages leave the
//! cache), shrink by at most three quarters, grow only after a full chunk, and stay between 1 and
//! `max_chunk_size` (or the step's own `chunk_size`, when larger).

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::time::Duration;

use crate::config::Settings;
use crate::planner::PlanNode;

/// The most a chunk grows after one transaction.
const MAX_GROWTH: f64 = 4.0;
/// Growth aims at this share of the target.
const GROWTH_AIM: f64 = 0.8;
/// The most a chunk shrinks after one transaction (a factor).
const MAX_SHRINK: f64 = 0.25;
/// The share of a child statement's bound that the next chunk's children are expected to fill
/// at most: room for keys with more children than the last chunk's.
const CHILDREN_AIM: f64 = 0.9;

pub(crate) struct ChunkSizes {
    adaptive: bool,
    target: Duration,
    max: u64,
    /// The current size per step, once it differs from the step's `chunk_size`.
    sizes: HashMap<usize, u64>,
    /// Per step, the size below which its chunk stays: a chunk of that size brought more child
    /// rows than one transaction takes.
    caps: HashMap<usize, u64>,
}

impl ChunkSizes {
    pub(super) fn new(settings: &Settings) -> Self {
        Self {
            adaptive: settings.adaptive(),
            target: settings.target_chunk(),
            max: settings.max_chunk_size(),
            sizes: HashMap::new(),
            caps: HashMap::new(),
        }
    }

    /// The rows the next chunk of `node` asks for.
    pub(super) fn of(&self, node: &PlanNode) -> u64 {
        self.sizes.get(&node.step).copied().unwrap_or(node.chunk_size)
    }

    /// After a transaction of `node` that asked for `limit` rows, found `rows` and took `elapsed`.
    pub(super) fn record(&mut self, node: &PlanNode, limit: u64, rows: u64, elapsed: Duration) {
        if !self.adaptive {
            return;
        }
        let largest = self.max.max(node.chunk_size).min(self.caps.get(&node.step).copied().unwrap_or(u64::MAX));
        if let Some(next) = next_size(limit, rows, elapsed, self.target, 1..=largest.max(1)) {
            self.sizes.insert(node.step, next);
        }
    }

    /// The most rows one statement of `node` takes when it runs in its parent chunk's
    /// transaction, whose time the parent's adaptive size bounds: with adaptive sizing the
    /// largest chunk allowed, else its `chunk_size`.
    pub(super) fn in_parent(&self, node: &PlanNode) -> u64 {
        if self.adaptive { self.max.max(node.chunk_size) } else { node.chunk_size }
    }

    /// After a chunk of `keys` rows of `node` whose child rows, deleted in its transaction by
    /// one statement of at most `fitting` rows, came to `rows`: the next chunk grows no further
    /// than the keys whose children are expected to fit, since a chunk whose children overflow
    /// costs its transaction and two more.
    pub(super) fn children_fit(&mut self, node: &PlanNode, keys: u64, rows: u64, fitting: u64) {
        if !self.adaptive || rows == 0 {
            return;
        }
        let expected = ((keys as f64 * fitting as f64 * CHILDREN_AIM / rows as f64) as u64).max(1);
        if expected < self.of(node) {
            self.sizes.insert(node.step, expected);
        }
    }

    /// A chunk of `limit` rows of `node` had more child rows than one transaction takes: `rows`
    /// (when counted) against the `fitting` rows one takes. Its chunks shrink to the share that
    /// fits (half, when not counted), and never grow past that again.
    pub(super) fn overflowed(&mut self, node: &PlanNode, limit: u64, rows: Option<u64>, fitting: u64) {
        if !self.adaptive {
            return;
        }
        let share = rows.filter(|rows| *rows > 0).map_or(0.5, |rows| (fitting as f64 / rows as f64).min(0.5));
        let cap = ((limit as f64 * share) as u64).max(1);
        self.caps.insert(node.step, cap);
        self.sizes.insert(node.step, cap);
    }
}

/// The size after a transaction that asked for `limit` rows, found `rows` and took `elapsed`,
/// aiming at `target` within `sizes`; `None` when it stays (a short chunk that was fast says
/// nothing about a larger one).
pub(crate) fn next_size(
    limit: u64,
    rows: u64,
    elapsed: Duration,
    target: Duration,
    sizes: RangeInclusive<u64>,
) -> Option<u64> {
    let ratio = target.as_secs_f64() / elapsed.as_secs_f64().max(1e-6);
    let factor = if ratio >= 1.0 {
        if rows < limit {
            return None;
        }
        (ratio * GROWTH_AIM).clamp(1.0, MAX_GROWTH)
    } else {
        ratio.max(MAX_SHRINK)
    };
    Some(((limit as f64 * factor) as u64).clamp(*sizes.start(), *sizes.end()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::fixture;

    fn settings(toml: &str) -> Settings {
        fixture::config(&format!("[settings]\n{toml}\n{MODEL}")).settings
    }

    const MODEL: &str = "[models.a]\ntable = \"a\"\nchunk_size = 100\n";

    fn node() -> PlanNode {
        crate::planner::compile(&fixture::checked(MODEL), "a").unwrap().root
    }

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn fast_full_chunks_grow_at_most_fourfold_up_to_the_largest() {
        let (node, mut sizes) = (node(), ChunkSizes::new(&settings("max_chunk_size = 5000")));
        let mut seen = Vec::new();
        for _ in 0..4 {
            let limit = sizes.of(&node);
            sizes.record(&node, limit, limit, MS(5));
            seen.push(sizes.of(&node));
        }
        assert_eq!(seen, [400, 1600, 5000, 5000]);
        sizes.record(&node, 5000, 5000, MS(25));
        assert_eq!(sizes.of(&node), 5000, "never past the largest");
    }

    #[test]
    fn a_chunk_in_its_parents_transaction_takes_up_to_the_largest() {
        let node = node();
        assert_eq!(ChunkSizes::new(&settings("max_chunk_size = 5000")).in_parent(&node), 5000);
        assert_eq!(ChunkSizes::new(&settings("max_chunk_size = 50")).in_parent(&node), 100, "or its own size");
        assert_eq!(ChunkSizes::new(&settings("adaptive = false")).in_parent(&node), 100);
    }

    #[test]
    fn growth_aims_under_the_target() {
        let (node, mut sizes) = (node(), ChunkSizes::new(&settings("target_chunk_ms = 50")));
        sizes.record(&node, 100, 100, MS(40));
        assert_eq!(sizes.of(&node), 100, "at 80 % of the target it stays");
        sizes.record(&node, 100, 100, MS(32));
        assert_eq!(sizes.of(&node), 125);
    }

    #[test]
    fn slow_chunks_shrink_toward_the_target_and_never_below_one() {
        let (node, mut sizes) = (node(), ChunkSizes::new(&settings("target_chunk_ms = 50")));
        sizes.record(&node, 100, 100, MS(100));
        assert_eq!(sizes.of(&node), 50);
        sizes.record(&node, 50, 50, MS(5000));
        assert_eq!(sizes.of(&node), 12, "a chunk far over the target shrinks by a quarter at most");
        for _ in 0..10 {
            let limit = sizes.of(&node);
            sizes.record(&node, limit, limit, MS(5000));
        }
        assert_eq!(sizes.of(&node), 1);
    }

    #[test]
    fn a_partial_chunk_does_not_grow_the_size() {
        let (node, mut sizes) = (node(), ChunkSizes::new(&settings("")));
        sizes.record(&node, 100, 7, MS(1));
        assert_eq!(sizes.of(&node), 100);
    }

    #[test]
    fn a_chunk_whose_children_overflowed_shrinks_to_what_fits_and_stays_below() {
        let (node, mut sizes) = (node(), ChunkSizes::new(&settings("")));
        sizes.overflowed(&node, 1600, Some(40_000), 10_000);
        assert_eq!(sizes.of(&node), 400, "a quarter of the rows fit");
        for _ in 0..5 {
            let limit = sizes.of(&node);
            sizes.record(&node, limit, limit, MS(1));
        }
        assert_eq!(sizes.of(&node), 400);
        sizes.overflowed(&node, 400, Some(10_001), 10_000);
        assert_eq!(sizes.of(&node), 200, "at least halved");
        sizes.overflowed(&node, 200, None, 10_000);
        assert_eq!(sizes.of(&node), 100, "halved when not counted");
    }

    #[test]
    fn growth_stops_where_the_children_are_expected_to_overflow() {
        let (node, mut sizes) = (node(), ChunkSizes::new(&settings("max_chunk_size = 25000")));
        sizes.record(&node, 100, 100, MS(5));
        assert_eq!(sizes.of(&node), 400);
        sizes.children_fit(&node, 100, 9_000, 25_000);
        assert_eq!(sizes.of(&node), 250, "90 rows a key: 250 keys fill 90 % of 25,000");
        sizes.children_fit(&node, 250, 2_500, 25_000);
        assert_eq!(sizes.of(&node), 250, "few children never raise the size");
        let (node, mut fixed) = (self::node(), ChunkSizes::new(&settings("adaptive = false")));
        fixed.children_fit(&node, 100, 1_000_000, 25_000);
        assert_eq!(fixed.of(&node), 100);
    }

    #[test]
    fn without_adaptive_the_chunk_size_stays() {
        let (node, mut sizes) = (node(), ChunkSizes::new(&settings("adaptive = false")));
        sizes.record(&node, 100, 100, MS(1));
        sizes.record(&node, 100, 100, MS(10_000));
        assert_eq!(sizes.of(&node), 100);
    }
}
