use petgraph::graph::{DiGraph, NodeIndex};

use crate::config::{Config, OnDelete};

/// One declared relation whose child model exists: `config.models[parent].children[relation]`.
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub parent: usize,
    pub relation: usize,
    pub action: OnDelete,
}

/// Models as nodes (node index = index in `config.models`), relations as edges from parent to
/// child, in declared order. Relations to unknown models are left out (a rule reports them).
pub struct ModelGraph {
    pub graph: DiGraph<usize, Edge>,
}

impl ModelGraph {
    pub fn build(config: &Config) -> Self {
        let mut graph = DiGraph::with_capacity(config.models.len(), config.models.len() * 4);
        for index in 0..config.models.len() {
            graph.add_node(index);
        }
        for (parent, model) in config.models.values().enumerate() {
            for (relation, child) in model.children.iter().enumerate() {
                if let Some(child_index) = config.models.get_index_of(&child.model.value) {
                    let edge = Edge { parent, relation, action: child.action() };
                    graph.add_edge(NodeIndex::new(parent), NodeIndex::new(child_index), edge);
                }
            }
        }
        Self { graph }
    }
}
