//! Compiling a root model into a plan: a tree of plan nodes (a model reached by a relation),
//! each carrying everything the executor needs, numbered in execution order (children before
//! parents, relations in declared order). What is below a deleted model is the same whatever
//! path reaches it, so a model's children are compiled once and shared by every node of that
//! model: a plan grows with the relations, not with the paths.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Serialize, Serializer};

use super::CheckedConfig;
use crate::config::{Config, Key, Model, OnDelete, Relation, Strategy};

/// Above this many distinct nodes a plan is refused (it has about as many as the relations it
/// reaches).
pub(super) const MAX_PLAN_NODES: usize = 100_000;

/// The outbox category a node writes for each deleted row, and the scope it is registered in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutboxTarget {
    /// The outbox category.
    pub category: String,
    /// The name of the scope the category is registered in.
    pub scope: String,
    /// The model whose rows the tombstones are about: rows of different models that share a
    /// category never coalesce. Left out of the plan's JSON, whose node already names it.
    #[serde(skip)]
    pub model: String,
}

/// One model reached by one relation path: what to do to its rows, and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanNode {
    /// Position in execution order, from 1.
    pub step: usize,
    /// The model's name.
    pub model: String,
    /// The model's table.
    pub table: String,
    /// The key columns a per_row step fetches and deletes by (several for a composite key;
    /// none for a bulk model that declares no key). In JSON, comma-separated or `null`.
    #[serde(serialize_with = "joined")]
    pub key: Vec<String>,
    /// The key columns that identify a deleted row in outbox tombstones: the declared key
    /// (several columns for a composite key), else `id`. Left out of the plan's JSON, whose
    /// shape is fixed.
    #[serde(skip)]
    pub identity: Vec<String>,
    /// Columns of this node's table that reference the parent (several for a composite foreign
    /// key; none at the root). In JSON, `column`: comma-separated, or `null` at the root.
    #[serde(rename = "column", serialize_with = "joined")]
    pub columns: Vec<String>,
    /// The parent's columns that `columns` reference, when they are not the parent's key (a
    /// unique column of the parent); left out of JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "joined_some")]
    pub references: Option<Vec<String>>,
    /// What happens to the rows: deleted, their column set to NULL, or left to the database's
    /// `ON DELETE CASCADE` (always `delete` at the root).
    pub action: OnDelete,
    /// How the rows are deleted: the relation's strategy, else the model's, else `per_row`.
    pub strategy: Strategy,
    /// Rows per transaction: the relation's, else the model's, else the `[settings]` default.
    pub chunk_size: u64,
    /// Name of the `[options]` entry that rate-limits this node, if any.
    pub rate_limit: Option<String>,
    /// Where an outbox entry is written for each deleted row (`None` for nullified rows).
    pub outbox: Option<OutboxTarget>,
    /// The relation leads back to a model the path to it is deleting: its parent's own model (a
    /// self-reference: a reply's parent, a category's parent category) or one further up (a
    /// cycle through several models: a store's manager is a staff member of the store). The rows
    /// it reaches are deleted with their model's own children, this relation included, to the
    /// end of the tree. Its `children` stay empty (a plan is a tree); the executor and the counts
    /// follow [`Plan::children_of`] instead. Left out of the plan's JSON unless set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recursive: bool,
    /// The model's children, shared by every node of the model. Left out of serialisation:
    /// views of a plan serialise their own tree.
    #[serde(skip)]
    pub children: Arc<Vec<PlanNode>>,
}

/// The nodes of `nodes` the executor works on: all but those the database deletes itself.
pub fn worked(nodes: &[PlanNode]) -> impl Iterator<Item = &PlanNode> {
    nodes.iter().filter(|node| node.action != OnDelete::Database)
}

fn joined<S: Serializer>(columns: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    if columns.is_empty() { serializer.serialize_none() } else { serializer.serialize_str(&columns.join(", ")) }
}

fn joined_some<S: Serializer>(columns: &Option<Vec<String>>, serializer: S) -> Result<S::Ok, S::Error> {
    joined(columns.as_deref().unwrap_or_default(), serializer)
}

impl PlanNode {
    /// Whether the step runs set-based statements over its rows (bulk, or nullify) rather than
    /// fetching chunks of keys (per_row delete).
    pub fn is_set_based(&self) -> bool {
        self.action == OnDelete::Nullify || self.strategy == Strategy::Bulk
    }

    /// Whether every child the executor works on (see [`PlanNode::worked_children`]) is
    /// set-based, so a chunk of it can go in one transaction with its children's rows.
    pub fn has_only_set_based_children(&self) -> bool {
        let mut children = worked(&self.children).peekable();
        children.peek().is_some() && children.all(PlanNode::is_set_based)
    }

    /// The children whose rows the executor deletes or nullifies: all but those the database
    /// deletes itself (`on_delete = "database"`), which it only counts.
    pub fn worked_children(&self) -> impl Iterator<Item = &PlanNode> {
        worked(&self.children)
    }

    /// The children the database deletes itself when a chunk of this node goes.
    pub fn database_children(&self) -> impl Iterator<Item = &PlanNode> {
        self.children.iter().filter(|child| child.action == OnDelete::Database)
    }

    /// Whether this node's children are the ones `other` has (the same model's, compiled once).
    pub fn shares_children_with(&self, other: &PlanNode) -> bool {
        !self.children.is_empty() && Arc::ptr_eq(&self.children, &other.children)
    }

    /// Whether the node is the relation of `parent` by `columns` that matches the parent's key
    /// (no `references` of its own).
    pub fn matches_parent_key(&self) -> bool {
        self.references.is_none()
    }
}

/// A compiled deletion: a tree of plan nodes under the root model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The root model's node; every other node is below it.
    pub root: PlanNode,
    /// The children of each deleted model that has some, shared by all its nodes: those a
    /// recursive node's rows have.
    #[serde(skip)]
    subtrees: HashMap<String, Arc<Vec<PlanNode>>>,
}

impl Plan {
    /// The children a row of `node` has: its own, or, for a recursive node, those of its model,
    /// which hold the node again.
    pub fn children_of<'n>(&'n self, node: &'n PlanNode) -> &'n Arc<Vec<PlanNode>> {
        match self.subtrees.get(&node.model) {
            Some(children) if node.recursive => children,
            _ => &node.children,
        }
    }

    /// The plan's models in groups, parents first: each group a strongly connected component of
    /// the delete relations between models (the models of a cycle together, in the order they
    /// are first reached; every other model alone).
    pub fn components(&self) -> Vec<Vec<&str>> {
        let mut graph: petgraph::graph::DiGraph<&str, ()> = petgraph::graph::DiGraph::new();
        let mut index: HashMap<&str, petgraph::graph::NodeIndex> = HashMap::new();
        let steps = self.steps_with_parents();
        let mut by_reach: Vec<&PlanNode> = vec![&self.root];
        by_reach.extend(steps.iter().rev().map(|(node, _)| *node));
        for node in by_reach {
            index.entry(node.model.as_str()).or_insert_with(|| graph.add_node(node.model.as_str()));
        }
        for (node, parent) in &steps {
            if let Some(parent) = parent.filter(|_| node.action == OnDelete::Delete) {
                graph.update_edge(index[parent.model.as_str()], index[node.model.as_str()], ());
            }
        }
        // Kosaraju's components come children first.
        let mut components = petgraph::algo::kosaraju_scc(&graph);
        components.reverse();
        components
            .into_iter()
            .map(|mut component| {
                component.sort_by_key(|node| node.index());
                component.into_iter().map(|node| graph[node]).collect()
            })
            .collect()
    }

    /// The models whose rows a deletion follows recursively: those of a cycle, and those with a
    /// relation to themselves.
    pub fn recursive_models(&self) -> HashSet<&str> {
        let mut models: HashSet<&str> = self.components().into_iter().filter(|c| c.len() > 1).flatten().collect();
        models.extend(self.steps().into_iter().filter(|node| node.recursive).map(|node| node.model.as_str()));
        models
    }

    /// The models a nullify step sets rows of to NULL that another step also reaches (a delete,
    /// or a nullify by another relation): a row nullified there may be deleted, or nullified
    /// again, later in the same run, which the run records to count each row once.
    pub fn models_nullified_and_reached_again(&self) -> HashSet<&str> {
        let steps = self.steps();
        let nullified = steps.iter().filter(|node| node.action == OnDelete::Nullify).map(|node| node.model.as_str());
        nullified.filter(|model| steps.iter().filter(|node| node.model == *model).count() > 1).collect()
    }

    /// Every node in execution order, each once (a shared subtree's nodes once).
    pub fn steps(&self) -> Vec<&PlanNode> {
        self.steps_with_parents().into_iter().map(|(node, _)| node).collect()
    }

    /// Every node in execution order (children first), each once, with its parent (none at the
    /// root; for a node of a shared subtree, the first node of the model whose children it is:
    /// every one of them is of the same model and table).
    pub fn steps_with_parents(&self) -> Vec<(&PlanNode, Option<&PlanNode>)> {
        let mut steps = Vec::new();
        let mut seen: HashSet<*const Vec<PlanNode>> = HashSet::new();
        // Depth first without recursion: a plan may be as deep as the config's longest chain.
        let mut stack: Vec<(&PlanNode, Option<&PlanNode>, bool)> = vec![(&self.root, None, false)];
        while let Some((node, parent, expanded)) = stack.pop() {
            if expanded || node.children.is_empty() || !seen.insert(Arc::as_ptr(&node.children)) {
                steps.push((node, parent));
                continue;
            }
            stack.push((node, parent, true));
            stack.extend(node.children.iter().rev().map(|child| (child, Some(node), false)));
        }
        steps.sort_by_key(|(node, _)| node.step);
        steps
    }
}

/// Why a plan could not be compiled.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CompileError {
    /// The root, or a relation's child, names a model the config does not have.
    #[error("unknown model `{name}`{}", suggestion.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    UnknownModel {
        /// The unknown name.
        name: String,
        /// "did you mean `x`?" when a model's name is close.
        suggestion: Option<String>,
    },
    /// The root is a remote model: its rows are in another database.
    #[error(
        "model `{model}` is remote: its rows are in another database, whose deletions arrive here as `{category}` \
         tombstones and are applied to its children by `cascade worker` (or `cascade inbox apply`)"
    )]
    RemoteRoot {
        /// The remote model.
        model: String,
        /// The category its tombstones have.
        category: String,
    },
    /// The root model has a composite key: root rows are given by one id each.
    #[error(
        "model `{model}` has a composite key ({columns}): it cannot be the root of a deletion; delete its rows \
         through a parent model"
    )]
    CompositeRoot {
        /// The root model.
        model: String,
        /// Its key columns, comma-separated.
        columns: String,
    },
    /// The plan would have more nodes than the limit allows.
    #[error("the plan has more than {MAX_PLAN_NODES} nodes")]
    TooLarge,
}

/// Compiles the deletion of `root` rows of a checked config; an unknown root model is an error.
pub fn compile(config: &CheckedConfig, root: &str) -> Result<Plan, CompileError> {
    let model = declared_model(config, root)?;
    if let Some(Key::Composite(columns)) = model.key.as_ref().map(|key| &key.value) {
        return Err(CompileError::CompositeRoot { model: root.to_owned(), columns: columns.join(", ") });
    }
    let mut compiler = Compiler { config, path: Vec::new(), nodes: 0, next_step: 1, subtrees: HashMap::new() };
    let root = compiler.node(model, None)?;
    let subtrees = compiler.subtrees.into_iter().map(|(model, children)| (model.to_owned(), children)).collect();
    Ok(Plan { root, subtrees })
}

/// The declared model `name`; an unknown one is an error with the nearest name suggested.
pub fn declared_model<'a>(config: &'a Config, name: &str) -> Result<&'a Model, CompileError> {
    if let Some(remote) = config.remote_models.get(name) {
        let category = remote.remote.category.value.clone();
        return Err(CompileError::RemoteRoot { model: name.to_owned(), category });
    }
    config.model(name).ok_or_else(|| CompileError::UnknownModel {
        name: name.to_owned(),
        suggestion: super::suggest_model(config, name),
    })
}

struct Compiler<'a> {
    config: &'a Config,
    /// Models whose children are being compiled, from the root down: a delete relation back to
    /// one of them is recursive.
    path: Vec<&'a str>,
    nodes: usize,
    next_step: usize,
    /// Each deleted model's children, compiled once.
    subtrees: HashMap<&'a str, Arc<Vec<PlanNode>>>,
}

impl<'a> Compiler<'a> {
    /// The node of `model`, reached from `via`'s parent model by its relation (none at the root).
    fn node(&mut self, model: &'a Model, via: Option<(&'a Model, &'a Relation)>) -> Result<PlanNode, CompileError> {
        self.nodes += 1;
        if self.nodes > MAX_PLAN_NODES {
            return Err(CompileError::TooLarge);
        }
        let relation = via.map(|(_, relation)| relation);
        let action = relation.map_or(OnDelete::Delete, Relation::action);
        // A delete relation back to a model being deleted above (itself, or one further up a cycle)
        // is followed by the executor, not unrolled.
        let recursive = action == OnDelete::Delete && self.path.contains(&model.name.value.as_str());
        let children = if action == OnDelete::Delete && !recursive { self.subtree(model)? } else { Arc::default() };
        let strategy = effective_strategy(model, relation);
        let step = self.next_step;
        self.next_step += 1;
        Ok(PlanNode {
            step,
            model: model.name.value.clone(),
            table: model.table.value.clone(),
            key: key_columns(model, strategy),
            identity: model.key.as_ref().map_or_else(|| vec!["id".to_owned()], |key| key.value.columns()),
            columns: relation.map(Relation::column_names).unwrap_or_default(),
            references: via
                .filter(|(parent, relation)| relation.references_other_than_key(parent))
                .map(|(parent, relation)| relation.referenced(parent)),
            action,
            strategy,
            chunk_size: effective_chunk_size(self.config, model, relation, strategy),
            rate_limit: model.rate_limit.as_ref().map(|r| r.value.clone()),
            outbox: (action == OnDelete::Delete).then(|| outbox_target(self.config, model)).flatten(),
            recursive,
            children,
        })
    }

    /// The children of the deleted `model`: compiled the first time, shared afterwards.
    fn subtree(&mut self, model: &'a Model) -> Result<Arc<Vec<PlanNode>>, CompileError> {
        let name = model.name.value.as_str();
        if let Some(children) = self.subtrees.get(name) {
            return Ok(children.clone());
        }
        self.path.push(name);
        let mut children = Vec::new();
        for relation in &model.children {
            let child = declared_model(self.config, &relation.model.value)?;
            children.push(self.node(child, Some((model, relation)))?);
        }
        self.path.pop();
        let children = Arc::new(children);
        self.subtrees.insert(name, children.clone());
        Ok(children)
    }
}

fn effective_strategy(model: &Model, via: Option<&Relation>) -> Strategy {
    via.and_then(|relation| relation.strategy.as_ref())
        .or(model.strategy.as_ref())
        .map_or(Strategy::PerRow, |strategy| strategy.value)
}

/// The key columns; bulk models only have them when they declare a key.
fn key_columns(model: &Model, strategy: Strategy) -> Vec<String> {
    match (&model.key, strategy) {
        (Some(key), _) => key.value.columns(),
        (None, Strategy::PerRow) => vec!["id".to_owned()],
        (None, Strategy::Bulk) => Vec::new(),
    }
}

fn effective_chunk_size(config: &Config, model: &Model, via: Option<&Relation>, strategy: Strategy) -> u64 {
    let declared = via.and_then(|relation| relation.chunk_size.as_ref()).or(model.chunk_size.as_ref());
    declared.map_or_else(|| config.settings.chunk_size(strategy), |size| size.value)
}

fn outbox_target(config: &Config, model: &Model) -> Option<OutboxTarget> {
    let category = &model.outbox.as_ref()?.value;
    let scope = config.scope_of(category)?;
    Some(OutboxTarget { category: category.clone(), scope: scope.name.value.clone(), model: model.name.value.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::fixture::{checked, config};

    const DIAMOND: &str = r#"
[settings]
bulk_chunk_size = 5000

[options]
"org.rows_per_second" = 10

[models.organization]
table = "organization"
rate_limit = "org.rows_per_second"
outbox = "organization_update"
children = [
  { model = "project", column = "organization_id" },
  { model = "member", column = "organization_id" },
  { model = "audit", column = "actor_org_id", on_delete = "nullify" },
]

[models.project]
table = "project"
children = [{ model = "event", column = "project_id", chunk_size = 50 }]

[models.member]
table = "member"
children = [{ model = "event", column = "member_id" }]

[models.event]
table = "event"
strategy = "bulk"

[models.audit]
table = "audit"
children = [{ model = "event", column = "audit_id" }]

[outbox.scopes.organization]
shard_key = "id"
categories = ["organization_update"]
"#;

    #[test]
    fn a_diamond_appears_under_both_paths_in_execution_order() {
        let plan = compile(&checked(DIAMOND), "organization").unwrap();
        let order: Vec<(usize, &str, Option<&str>)> =
            plan.steps().iter().map(|n| (n.step, n.model.as_str(), n.columns.first().map(String::as_str))).collect();
        assert_eq!(
            order,
            vec![
                (1, "event", Some("project_id")),
                (2, "project", Some("organization_id")),
                (3, "event", Some("member_id")),
                (4, "member", Some("organization_id")),
                (5, "audit", Some("actor_org_id")),
                (6, "organization", None),
            ]
        );
    }

    #[test]
    fn nodes_carry_effective_settings() {
        let plan = compile(&checked(DIAMOND), "organization").unwrap();
        let root = &plan.root;
        assert_eq!(root.chunk_size, crate::config::DEFAULT_PER_ROW_CHUNK_SIZE);
        assert_eq!(root.rate_limit.as_deref(), Some("org.rows_per_second"));
        assert_eq!(
            root.outbox,
            Some(OutboxTarget {
                category: "organization_update".into(),
                scope: "organization".into(),
                model: "organization".into()
            })
        );
        let via_project = &root.children[0].children[0];
        assert_eq!(
            (via_project.strategy, via_project.chunk_size, via_project.key.is_empty()),
            (Strategy::Bulk, 50, true)
        );
        let via_member = &root.children[1].children[0];
        assert_eq!(via_member.chunk_size, 5000);
        let audit = &root.children[2];
        assert_eq!((audit.action, audit.children.len()), (OnDelete::Nullify, 0), "a nullified model's children stay");
    }

    #[test]
    fn unknown_root_suggests_a_model() {
        let error = compile(&checked(DIAMOND), "projects").unwrap_err();
        assert_eq!(error.to_string(), "unknown model `projects` (did you mean `project`?)");
        let remote = checked(
            "[models.organization]\nremote = { category = \"organization_deleted\" }\n\n[models.project]\ntable = \"project\"\n",
        );
        let error = compile(&remote, "organization").unwrap_err();
        assert!(error.to_string().starts_with("model `organization` is remote: its rows are in another database"));
    }

    #[test]
    fn a_self_reference_and_a_cycle_of_models_are_recursive_nodes() {
        let tree = config("[models.a]\ntable = \"a\"\nchildren = [{ model = \"a\", column = \"parent_id\" }]\n");
        let plan = compile(&CheckedConfig::assume(tree), "a").unwrap();
        let tree = &plan.root.children[0];
        assert!(tree.recursive && tree.children.is_empty(), "{tree:?}");
        assert!(Arc::ptr_eq(plan.children_of(tree), &plan.root.children), "its rows have the model's children");
        let cycle = config(
            "[models.a]\ntable = \"a\"\nchildren = [{ model = \"b\", column = \"a_id\" }]\n\
             [models.b]\ntable = \"b\"\nchildren = [{ model = \"a\", column = \"b_id\" }]\n",
        );
        let plan = compile(&CheckedConfig::assume(cycle), "a").unwrap();
        let b = &plan.root.children[0];
        let back = &b.children[0];
        assert!(!b.recursive && back.recursive && back.model == "a", "{plan:?}");
        assert!(
            Arc::ptr_eq(plan.children_of(back), &plan.root.children),
            "an `a` row below a `b` row has a's children"
        );
    }
}
