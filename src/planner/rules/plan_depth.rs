//! `plan-too-deep`: a chain of delete relations longer than [`MAX_DEPTH`] models. A plan is as
//! deep as its longest chain, and a deletion keeps one open chunk per level; no real schema
//! nests that deep, while a generated or mistaken config can, so the depth is bounded here, at
//! the relation that starts the chain, before any plan is built.

use petgraph::algo::kosaraju_scc;
use petgraph::visit::EdgeFiltered;

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic};
use crate::planner::Context;

/// The deepest chain of models a plan may have (the root counted).
pub(crate) const MAX_DEPTH: usize = 1_000;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    let graph = &context.graph.graph;
    let deletes = EdgeFiltered::from_fn(graph, |edge| edge.weight().action == OnDelete::Delete);
    // The models of a cycle are at most one level each on a plan's path (a relation back to one
    // of them is followed, not unrolled), so each cycle counts as deep as it has models. Kosaraju's
    // components come children first, and it walks with an explicit stack (no overflow on long
    // chains).
    let components = kosaraju_scc(&deletes);
    let mut component_of = vec![0usize; graph.node_count()];
    for (index, component) in components.iter().enumerate() {
        for node in component {
            component_of[node.index()] = index;
        }
    }
    // The longest chain of delete relations below each component (itself counted); a nullify
    // child adds one level of its own.
    let mut depth = vec![0usize; components.len()];
    for (index, component) in components.iter().enumerate() {
        let below = component
            .iter()
            .flat_map(|node| &context.config.models[node.index()].children)
            .filter_map(|relation| {
                let child = context.config.models.get_index_of(&relation.model.value)?;
                match relation.action() {
                    OnDelete::Delete => (component_of[child] != index).then(|| depth[component_of[child]]),
                    _ => Some(1),
                }
            })
            .max()
            .unwrap_or(0);
        depth[index] = component.len() + below;
    }
    for node in graph.node_indices() {
        let component = component_of[node.index()];
        let model = &context.config.models[node.index()];
        let too_deep = depth[component] > MAX_DEPTH;
        // Reported once, at the top of each chain: at a model no deep parent of another component
        // reaches, the first of its cycle.
        let reached_deep = graph.neighbors_directed(node, petgraph::Direction::Incoming).any(|parent| {
            component_of[parent.index()] != component && depth[component_of[parent.index()]] > MAX_DEPTH
        });
        let first = components[component].iter().all(|member| member.index() >= node.index());
        if too_deep && !reached_deep && first {
            diagnostics.push(
                Diagnostic::new(
                    Code::PlanTooDeep,
                    model.name.location.clone(),
                    format!(
                        "`{}` starts a chain of {} models, deeper than the {MAX_DEPTH} a plan may have",
                        model.name.value, depth[component]
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
