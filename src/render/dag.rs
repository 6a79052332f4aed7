//! A plan as the graph it is: every node once, however many paths reach it. A model's children
//! are one list shared by every node of the model, so the measures, the estimate and the folded
//! counts visit each node once, never once per path.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use indexmap::IndexMap;

use super::{Estimate, Measure};
use crate::config::OnDelete;
use crate::engine::Counts;
use crate::planner::{Plan, PlanNode};

/// Identifies a children list: the nodes of one model share theirs.
pub(super) type ChildrenId = *const Vec<PlanNode>;

/// The children list of `node`.
pub(super) fn children_id(node: &PlanNode) -> ChildrenId {
    Arc::as_ptr(&node.children)
}

/// The plan's nodes, each once, and the nodes each one is a child of.
pub(super) struct Dag<'a> {
    /// Every node once, parents before children (steps number children first).
    nodes: Vec<&'a PlanNode>,
    /// The nodes whose children each list is (several when it is shared).
    owners: HashMap<ChildrenId, Vec<&'a PlanNode>>,
    /// The children list each node is in, by step (none for the root).
    list_of: HashMap<usize, ChildrenId>,
}

impl<'a> Dag<'a> {
    pub(super) fn of(plan: &'a Plan) -> Self {
        let (mut nodes, mut owners, mut list_of) = (Vec::new(), HashMap::new(), HashMap::new());
        // Without recursion: a plan may be as deep as the config's longest chain.
        let mut stack = vec![&plan.root];
        while let Some(node) = stack.pop() {
            nodes.push(node);
            if node.children.is_empty() {
                continue;
            }
            let id = children_id(node);
            let owners_of: &mut Vec<&PlanNode> = owners.entry(id).or_default();
            owners_of.push(node);
            if owners_of.len() == 1 {
                for child in node.children.iter() {
                    list_of.insert(child.step, id);
                    stack.push(child);
                }
            }
        }
        nodes.sort_by_key(|node| std::cmp::Reverse(node.step));
        Self { nodes, owners, list_of }
    }

    /// Every node once, parents before children.
    pub(super) fn nodes(&self) -> &[&'a PlanNode] {
        &self.nodes
    }

    /// The nodes `node` is a child of (none at the root).
    pub(super) fn parents(&self, node: &PlanNode) -> &[&'a PlanNode] {
        self.list_of.get(&node.step).map_or(&[], |id| &self.owners[id])
    }

    /// Every node below `node`, each once.
    pub(super) fn below(node: &'a PlanNode) -> Vec<&'a PlanNode> {
        let mut seen = HashSet::new();
        let mut below = Vec::new();
        let mut stack: Vec<&PlanNode> = node.children.iter().collect();
        while let Some(node) = stack.pop() {
            if seen.insert(node.step) {
                below.push(node);
                stack.extend(node.children.iter());
            }
        }
        below
    }
}

/// Each node's measure, by step; `counts` when rows were counted, `rates` the current value of
/// each option.
pub(super) fn measures(
    dag: &Dag<'_>,
    counts: Option<&Counts>,
    rates: &IndexMap<String, f64>,
) -> HashMap<usize, Measure> {
    let rows_of = |node: &PlanNode| counts.map(|c| c.rows.get(&node.step).copied().unwrap_or(0));
    let mut measures: HashMap<usize, Measure> = HashMap::with_capacity(dag.nodes().len());
    let mut rows_below: HashMap<ChildrenId, u64> = HashMap::new();
    for &node in dag.nodes() {
        let rows = rows_of(node);
        let chunks = rows.map(|rows| rows.div_ceil(node.chunk_size));
        // The rows of one parent chunk are chunked on their own: every chunk of every parent but
        // one may leave a partial chunk behind.
        let parent_chunks: u64 =
            dag.parents(node).iter().map(|parent| measures[&parent.step].max_chunks.unwrap_or(0)).sum();
        let max_chunks = rows.zip(chunks).map(|(rows, chunks)| rows.min(chunks + parent_chunks.saturating_sub(1)));
        let rate = node.rate_limit.as_ref().and_then(|name| rates.get(name)).copied().filter(|r| *r > 0.0);
        // A rate limit paces the rows of its model and of every node below it, each node once.
        let seconds = rows.zip(rate).map(|(rows, rate)| {
            let below = *rows_below
                .entry(children_id(node))
                .or_insert_with(|| Dag::below(node).into_iter().filter_map(rows_of).sum());
            (rows + below) as f64 / rate
        });
        measures.insert(node.step, Measure { rate, rows, chunks, max_chunks, seconds });
    }
    measures
}

/// The range of chunks, the seconds of the slowest rate limit, and the rows of models with no
/// rate limit on any path to them, each row once.
pub(super) fn estimate(dag: &Dag<'_>, measures: &HashMap<usize, Measure>, counts: &Counts) -> Estimate {
    let mut largest_chunk_sizes: IndexMap<(&str, OnDelete), u64> = IndexMap::new();
    let (mut max_chunks, mut seconds): (u64, Option<f64>) = (0, None);
    let mut limited: HashMap<usize, bool> = HashMap::with_capacity(dag.nodes().len());
    let mut throttled: HashSet<&str> = HashSet::new();
    let mut sometimes_with_parent: HashSet<(&str, OnDelete)> = HashSet::new();
    for &node in dag.nodes() {
        let measure = &measures[&node.step];
        let largest = largest_chunk_sizes.entry((&node.model, node.action)).or_default();
        *largest = (*largest).max(node.chunk_size);
        max_chunks += measure.max_chunks.unwrap_or(0);
        if let Some(step_seconds) = measure.seconds {
            seconds = Some(seconds.unwrap_or(0.0).max(step_seconds));
        }
        let is_limited = measure.seconds.is_some() || dag.parents(node).iter().any(|parent| limited[&parent.step]);
        limited.insert(node.step, is_limited);
        if is_limited {
            throttled.insert(&node.model);
        }
        // The set-based children of a per_row step whose children are all set-based can go in
        // its transaction.
        if node.has_only_set_based_children() {
            sometimes_with_parent.extend(node.children.iter().map(|child| (child.model.as_str(), child.action)));
        }
    }
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
