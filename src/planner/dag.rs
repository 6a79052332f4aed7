//! A plan as the graph it is: every node once, however many paths reach it. A model's children
//! are one list shared by every node of the model, so a walk over the [`Dag`] visits each node
//! once, never once per path.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::Plan;
use super::PlanNode;

/// Identifies a children list: the nodes of one model share theirs.
pub(crate) type ChildrenId = *const Vec<PlanNode>;

/// The children list of `node`.
pub(crate) fn children_id(node: &PlanNode) -> ChildrenId {
    Arc::as_ptr(&node.children)
}

/// The plan's nodes, each once, and the nodes each one is a child of.
pub(crate) struct Dag<'a> {
    /// Every node once, parents before children (steps number children first).
    nodes: Vec<&'a PlanNode>,
    /// The nodes whose children each list is (several when it is shared).
    owners: HashMap<ChildrenId, Vec<&'a PlanNode>>,
    /// The children list each node is in, by step (none for the root).
    list_of: HashMap<usize, ChildrenId>,
}

impl<'a> Dag<'a> {
    pub(crate) fn of(plan: &'a Plan) -> Self {
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
    pub(crate) fn nodes(&self) -> &[&'a PlanNode] {
        &self.nodes
    }

    /// The nodes `node` is a child of (none at the root).
    pub(crate) fn parents(&self, node: &PlanNode) -> &[&'a PlanNode] {
        self.list_of.get(&node.step).map_or(&[], |id| &self.owners[id])
    }

    /// Every node below `node`, each once.
    pub(crate) fn below(node: &'a PlanNode) -> Vec<&'a PlanNode> {
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
