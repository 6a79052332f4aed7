//! `plan-too-deep`: a chain of delete relations longer than [`MAX_DEPTH`] models. A plan is as
//! deep as its longest chain, and a deletion keeps one open chunk per level; no real schema
//! nests that deep, while a generated or mistaken config can, so the depth is bounded here, at
//! the relation that starts the chain, before any plan is built.

use petgraph::algo::toposort;
use petgraph::visit::EdgeFiltered;

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

/// The deepest chain of models a plan may have (the root counted).
pub(crate) const MAX_DEPTH: usize = 1_000;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let graph = &context.graph.graph;
    let deletes = EdgeFiltered::from_fn(graph, |edge| edge.weight().action == OnDelete::Delete);
    // A delete cycle has no depth; `delete-cycle` reports it.
    let Ok(order) = toposort(&deletes, None) else { return };
    // The longest chain of delete relations below each model (itself counted), children first;
    // a nullify child adds one level of its own.
    let mut depth = vec![1usize; graph.node_count()];
    for node in order.iter().rev() {
        let model = &context.config.models[node.index()];
        depth[node.index()] = 1 + model
            .children
            .iter()
            .filter_map(|relation| {
                let child = context.config.models.get_index_of(&relation.model.value)?;
                Some(if relation.action() == OnDelete::Delete { depth[child] } else { 1 })
            })
            .max()
            .unwrap_or(0);
    }
    for node in order {
        let model = &context.config.models[node.index()];
        let too_deep = depth[node.index()] > MAX_DEPTH;
        // Reported once, at the top of each chain: at a model no deep parent reaches.
        let reached_deep = graph
            .neighbors_directed(node, petgraph::Direction::Incoming)
            .any(|parent| depth[parent.index()] > MAX_DEPTH);
        if too_deep && !reached_deep {
            diagnostics.push(
                Diagnostic::new(
                    Code::PlanTooDeep,
                    model.name.location.clone(),
                    format!(
                        "`{}` starts a chain of {} models, deeper than the {MAX_DEPTH} a plan may have",
                        model.name.value,
                        depth[node.index()]
                    ),
                )
                .label("the chain starts here")
                .help("split the chain: a relation from one of its models can be `on_delete = \"nullify\"`, or a separate deletion"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    fn chain(models: usize) -> String {
        (0..models)
            .map(|i| {
                let children = if i + 1 < models {
                    format!("children = [{{ model = \"m{}\", column = \"p\" }}]\n", i + 1)
                } else {
                    "strategy = \"bulk\"\n".to_owned()
                };
                format!("[models.m{i}]\ntable = \"m{i}\"\n{children}\n")
            })
            .collect()
    }

    #[test]
    fn a_chain_deeper_than_the_limit_is_reported_once_at_its_top() {
        assert_eq!(fixture::codes(&chain(super::MAX_DEPTH)), vec![]);
        assert_eq!(fixture::codes(&chain(super::MAX_DEPTH + 1)), vec![(Code::PlanTooDeep, 1)]);
    }
}
