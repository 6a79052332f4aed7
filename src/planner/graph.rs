use petgraph::graph::{DiGraph, NodeIndex};

use crate::config::{Config, OnDelete};

/// One declared relation whose child model exists.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edge {
    pub action: OnDelete,
}

/// Models as nodes (node index = index in `config.models`), relations as edges from parent to
/// child, in declared order. Relations to unknown models are left out (a rule reports them).
pub(crate) struct ModelGraph {
    pub graph: DiGraph<usize, Edge>,
}

impl ModelGraph {
    pub(crate) fn build(config: &Config) -> Self {
        let mut graph = DiGraph::with_capacity(config.models.len(), config.models.len() * 4);
        for index in 0..config.models.len() {
            graph.add_node(index);
        }
        for (parent, model) in config.models.values().enumerate() {
            for child in &model.children {
                if let Some(child_index) = config.models.get_index_of(&child.model.value) {
                    let edge = Edge { action: child.action() };
                    graph.add_edge(NodeIndex::new(parent), NodeIndex::new(child_index), edge);
                }
            }
        }
        Self { graph }
    }
}
