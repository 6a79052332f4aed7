//! `delete-cycle`: delete relations through several models that lead back to where they started,
//! so no order of models deletes children before parents. Nullify relations do not count: they
//! are how a cycle is broken. A model's relation to itself (a tree of rows) is no such cycle: the
//! executor follows it row by row, children first.

use std::collections::{HashMap, VecDeque};

use petgraph::algo::kosaraju_scc;
use petgraph::visit::EdgeFiltered;

use crate::config::OnDelete;
use crate::diagnostic::{Code, Diagnostic, Location};
use crate::planner::Context;

pub(super) fn check(context: &Context<'_>, diagnostics: &mut Vec<Diagnostic>) {
    use petgraph::visit::EdgeRef as _;
    let deletes = EdgeFiltered::from_fn(&context.graph.graph, |edge| {
        edge.weight().action == OnDelete::Delete && edge.source() != edge.target()
    });
    // Kosaraju's algorithm walks with an explicit stack: Tarjan's (petgraph's) recurses once per
    // model of a chain and overflowed the stack on chains of about 20,000.
    for component in kosaraju_scc(&deletes) {
        let mut members: Vec<usize> = component.iter().map(|node| node.index()).collect();
        members.sort_unstable();
        if let Some(cycle) = shortest_cycle(context, &members) {
            diagnostics.push(report(context, &cycle));
        }
    }
}

/// One relation of a cycle: `config.models[parent].children[relation]`.
struct Step {
    parent: usize,
    relation: usize,
}

/// The shortest cycle through the first member of a strongly connected component, found by a
/// breadth-first search over delete relations in declared order. `None` for a single model
/// that does not reference itself.
fn shortest_cycle(context: &Context<'_>, members: &[usize]) -> Option<Vec<Step>> {
    let config = context.config;
    let start = *members.first()?;
    let mut reached_by: HashMap<usize, Step> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(parent) = queue.pop_front() {
        for (relation, child) in config.models[parent].children.iter().enumerate() {
            if child.action() != OnDelete::Delete {
                continue;
            }
            let Some(child) = config.models.get_index_of(&child.model.value) else {
                continue;
            };
            if child == parent || members.binary_search(&child).is_err() || reached_by.contains_key(&child) {
                continue;
            }
            reached_by.insert(child, Step { parent, relation });
            if child == start {
                return Some(walk_back(start, reached_by));
            }
            queue.push_back(child);
        }
    }
    None
}

fn walk_back(start: usize, mut reached_by: HashMap<usize, Step>) -> Vec<Step> {
    let mut cycle = Vec::new();
    let mut node = start;
    while let Some(step) = reached_by.remove(&node) {
        node = step.parent;
        cycle.push(step);
        if node == start {
            break;
        }
    }
    cycle.reverse();
    cycle
}

fn report(context: &Context<'_>, cycle: &[Step]) -> Diagnostic {
    let config = context.config;
    let relation_location =
        |step: &Step| -> Location { config.models[step.parent].children[step.relation].location.clone() };
    let mut path: Vec<&str> = cycle.iter().map(|step| config.models[step.parent].name.value.as_str()).collect();
    path.push(path[0]);
    let path = path.join(" → ");
    let mut diagnostic =
        Diagnostic::new(Code::DeleteCycle, relation_location(&cycle[0]), format!("delete cycle: {path}"))
            .label("this relation starts the cycle")
            .help(r#"set `on_delete = "nullify"` on one relation of the cycle (on a nullable column) to break it"#);
    for step in &cycle[1..] {
        let parent = &config.models[step.parent];
        let child = &parent.children[step.relation].model.value;
        diagnostic = diagnostic.related(relation_location(step), format!("then `{}` → `{child}`", parent.name.value));
    }
    diagnostic
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;
    use crate::planner::fixture;

    const THREE_MODELS: &str = r#"
[models.organization]
table = "organization"
children = [{ model = "project", column = "organization_id" }]

[models.project]
table = "project"
children = [{ model = "release", column = "project_id" }]

[models.release]
table = "release"
children = [{ model = "organization", column = "last_release_id" }]
"#;

    const SELF_REFERENCE: &str = r#"
[models.employee]
table = "employee"
children = [{ model = "employee", column = "reports_to" }]
"#;

    #[test]
    fn reports_the_whole_cycle_once() {
        assert_eq!(fixture::codes(THREE_MODELS), vec![(Code::DeleteCycle, 4)]);
        insta::assert_snapshot!(fixture::human(THREE_MODELS));
    }

    #[test]
    fn a_self_reference_is_a_tree_not_a_cycle() {
        assert_eq!(fixture::codes(SELF_REFERENCE), vec![]);
    }

    #[test]
    fn a_nullify_relation_breaks_the_cycle() {
        let broken =
            SELF_REFERENCE.replace(r#"column = "reports_to""#, r#"column = "reports_to", on_delete = "nullify""#);
        assert_eq!(fixture::codes(&broken), vec![]);
        let broken = THREE_MODELS
            .replace(r#"column = "last_release_id""#, r#"column = "last_release_id", on_delete = "nullify""#);
        assert_eq!(fixture::codes(&broken), vec![]);
    }

    #[test]
    fn a_self_reference_inside_a_cycle_leaves_the_cycle_reported_once() {
        let both = THREE_MODELS.replace(
            r#"column = "last_release_id" }"#,
            r#"column = "last_release_id" }, { model = "release", column = "previous_id" }"#,
        );
        assert_ne!(both, THREE_MODELS);
        assert_eq!(fixture::codes(&both), vec![(Code::DeleteCycle, 4)]);
    }
}
