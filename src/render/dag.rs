//! Measures and the estimate of a plan, over its [`Dag`]: each node once, never once per path.

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;

use super::{Estimate, Measure};
use crate::config::OnDelete;
use crate::engine::Counts;
use crate::engine::{least_bursts, limits_above, paced_seconds};
use crate::planner::{ChildrenId, Dag, PlanNode, children_id};

/// Each node's measure, by step; `counts` when rows were counted, `rates` the current value of
/// each option.
pub(super) fn measures(
    dag: &Dag<'_>,
    counts: Option<&Counts>,
    rates: &IndexMap<String, f64>,
) -> HashMap<usize, Measure> {
    let bursts = least_bursts(dag);
    let rows_of = |node: &PlanNode| counts.map(|c| c.rows.get(&node.step).copied().unwrap_or(0));
    let mut measures: HashMap<usize, Measure> = HashMap::with_capacity(dag.nodes().len());
    let mut rows_below: HashMap<ChildrenId, u64> = HashMap::new();
    for &node in dag.nodes() {
        let rows = rows_of(node);
        // The database deletes its rows inside the parent's chunks: none of their own.
        let chunks =
            rows.map(|rows| if node.action == OnDelete::Database { 0 } else { rows.div_ceil(node.chunk_size) });
        // The rows of one parent chunk are chunked on their own: every chunk of every parent but
        // one may leave a partial chunk behind.
        let parent_chunks: u64 =
            dag.parents(node).iter().map(|parent| measures[&parent.step].max_chunks.unwrap_or(0)).sum();
        let max_chunks = rows.zip(chunks).map(|(rows, chunks)| rows.min(chunks + parent_chunks.saturating_sub(1)));
        let option = node.rate_limit.as_deref();
        let rate = option.and_then(|name| rates.get(name)).copied().filter(|r| *r > 0.0);
        // A rate limit paces the rows of its model and of every node below it, each node once,
        // after a first bucketful.
        let seconds = rows.zip(rate).map(|(rows, rate)| {
            let below = *rows_below
                .entry(children_id(node))
                .or_insert_with(|| Dag::below(node).into_iter().filter_map(rows_of).sum());
            paced_seconds(rows + below, rate, option.and_then(|name| bursts.get(name)).copied().unwrap_or(1))
        });
        let tree_depth = counts.and_then(|counts| counts.depths.get(&node.step).copied());
        measures.insert(node.step, Measure { rate, rows, chunks, max_chunks, seconds, tree_depth });
    }
    measures
}

/// The range of chunks, the seconds of the slowest rate limit, and the rows of models with no
/// rate limit on any path to them, each row once.
pub(super) fn estimate(
    dag: &Dag<'_>,
    measures: &HashMap<usize, Measure>,
    counts: &Counts,
    rates: &IndexMap<String, f64>,
) -> Estimate {
    let mut largest_chunk_sizes: IndexMap<(&str, OnDelete), u64> = IndexMap::new();
    let mut max_chunks: u64 = 0;
    // Per limit with a rate, the rows charged to it: each node's under it, each node once.
    let mut charged: IndexMap<&str, (f64, u64)> = IndexMap::new();
    let mut throttled: HashSet<&str> = HashSet::new();
    let mut sometimes_with_parent: HashSet<(&str, OnDelete)> = HashSet::new();
    for (node, limits) in limits_above(dag) {
        let measure = &measures[&node.step];
        if node.action != OnDelete::Database {
            let largest = largest_chunk_sizes.entry((&node.model, node.action)).or_default();
            *largest = (*largest).max(node.chunk_size);
        }
        max_chunks += measure.max_chunks.unwrap_or(0);
        for limit in limits {
            if let Some(rate) = rates.get(limit).copied().filter(|rate| *rate > 0.0) {
                charged.entry(limit).or_insert((rate, 0)).1 += measure.rows.unwrap_or(0);
                throttled.insert(&node.model);
            }
        }
        // The set-based children of a per_row step whose children are all set-based can go in
        // its transaction.
        if node.has_only_set_based_children() {
            sometimes_with_parent.extend(node.children.iter().map(|child| (child.model.as_str(), child.action)));
        }
    }
    // Limits pace side by side, so the slowest one sets the time.
    let bursts = least_bursts(dag);
    let seconds = charged
        .iter()
        .map(|(limit, (rate, rows))| paced_seconds(*rows, *rate, bursts.get(*limit).copied().unwrap_or(1)))
        .reduce(f64::max);
    // A row reached by several paths goes in the first step that reaches it (and a deleted row is
    // not also nullified), so the steps of one model need at least its rows, counted once, over
    // their largest chunk size; none at all when a step of the model is a set-based child that
    // can go in its parent's transaction, which may take all its rows.
    let chunks = largest_chunk_sizes
        .iter()
        .filter(|(key, _)| !sometimes_with_parent.contains(*key))
        .map(|(&(model, action), largest_chunk_size)| {
            let rows = if action == OnDelete::Delete { &counts.totals } else { &counts.nullify };
            rows.get(model).copied().unwrap_or(0).div_ceil(*largest_chunk_size)
        })
        .sum();
    let unthrottled_rows = counts
        .totals
        .iter()
        .chain(&counts.nullify)
        .filter(|(model, _)| !throttled.contains(model.as_str()))
        .map(|(_, rows)| rows)
        .sum();
    Estimate { chunks: Some(chunks), max_chunks: Some(max_chunks), seconds, unthrottled_rows: Some(unthrottled_rows) }
}
