//! Exact row counts of a plan, counted in the database through each node's relation path:
//! a node's rows are those whose column holds the key of a row its parent would delete, down
//! from the root ids. Nothing is loaded into memory and nothing is changed.

use indexmap::IndexMap;
use serde::Serialize;

use crate::config::Config;
use crate::config::OnDelete;
use crate::db::Keys;
use crate::db::sql::{KeyType, Param, SqlBuilder, quote_identifier};
use crate::db::{Backend, Database, DbError};
use crate::planner::{Plan, PlanNode};

use super::not_found;
use super::sql::ROW_ALIAS;
use super::sql::key_of;
use super::steps::goes_after;
use crate::schema::{CatalogNames, Schema};

/// How many rows a plan would delete or nullify for some root ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Rows per plan node, by step.
    pub rows: IndexMap<usize, u64>,
    /// Rows each model would lose; a row reached by several paths counts once.
    pub totals: IndexMap<String, u64>,
    /// Rows of each model whose relation column would be set to NULL.
    pub nullify: IndexMap<String, u64>,
    /// The depth of each recursive node's tree, by step: how many levels of rows are below the
    /// rows the model's other nodes reach (0: none of them has a child of its own model). A loop
    /// of rows makes it the number of the tree's rows.
    pub depths: IndexMap<usize, u64>,
    /// Requested root rows that exist but whose status does not allow the deletion.
    pub skipped_by_status: u64,
    /// Requested root ids that match no row.
    pub not_found: Vec<String>,
}

/// Why rows could not be counted.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// A root id does not fit the key's type.
    #[error("id `{id}` is not an integer, but the key `{key}` of `{table}` is")]
    NotAnInteger {
        /// The id as given.
        id: String,
        /// The root's key column.
        key: String,
        /// The root's table.
        table: String,
    },
    /// A count query failed.
    #[error(transparent)]
    Database(#[from] DbError),
}

/// Root rows picked by what they point at rather than by id: the rows whose `columns` are not
/// NULL and hold values that no row of `parent_table` has in `parent_key` (orphans).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dangling {
    /// The root table's relation columns, as the config spells them.
    pub columns: Vec<String>,
    /// The parent's table, as the config spells it.
    pub parent_table: String,
    /// The parent's columns they reference, in the same order.
    pub parent_key: Vec<String>,
}

/// Which root rows the counts start from.
enum Roots<'a> {
    /// Rows whose key is among the ids, bound as one list.
    Ids { key_types: Vec<KeyType>, ids: Keys },
    /// Rows that dangle by any of these relations.
    Dangling(&'a [Dangling]),
    /// Rows whose `column` holds one of `keys` (a remote model's keys).
    Naming { column: &'a str, column_type: &'a KeyType, keys: Keys },
}

/// What the count queries need besides the plan.
struct Counter<'a> {
    backend: &'static dyn Backend,
    config: &'a Config,
    schema: &'a Schema,
    roots: Roots<'a>,
}

/// The aliases of a tree's rows and of their parents in a recursive count.
const TREE_ROW: &str = "cascade_tree_row";
const TREE_PARENT: &str = "cascade_tree_parent";

/// The column of a cycle's rows that tells which model a row is of.
const CYCLE_MODEL: &str = "cascade_model";

/// The alias of the parent table in the anti-join of [`Dangling`] roots.
const DANGLING_PARENT: &str = "cascade_parent";

/// The most counts one statement reads (one column each; SQLite allows 2,000 columns).
const COUNTS_PER_STATEMENT: usize = 500;

/// Counts every node of `plan` for the root rows `ids`.
pub async fn count(
    database: &Database,
    config: &Config,
    schema: &Schema,
    plan: &Plan,
    ids: &[String],
) -> Result<Counts, CountError> {
    let root = super::steps::node_sql(&plan.root, None, database.backend(), Some(schema));
    let ids = Keys::parse_for(&root.key_types, ids.to_vec()).map_err(|id| CountError::NotAnInteger {
        id,
        key: root.key().to_owned(),
        table: plan.root.table.clone(),
    })?;
    let found = database.fetch_texts(&root.select_roots(Param::Keys(ids.clone()), None)).await?;
    let not_found = not_found(&ids, &found, &root.key_types);
    let roots = Roots::Ids { key_types: root.key_types.clone(), ids };
    let counter = Counter { backend: database.backend(), config, schema, roots };
    count_from(database, plan, &counter, Counts { not_found, ..Counts::default() }).await
}

/// Counts every node of `plan` for the root rows that dangle by any of `dangling` (whose
/// relation columns point at no parent row): what deleting those orphans, each with its own
/// cascade, would remove. Nothing is loaded: the roots are picked by an anti-join in each count.
/// `not_found` is always empty.
pub(crate) async fn count_dangling(
    database: &Database,
    config: &Config,
    schema: &Schema,
    plan: &Plan,
    dangling: &[Dangling],
) -> Result<Counts, CountError> {
    let counter = Counter { backend: database.backend(), config, schema, roots: Roots::Dangling(dangling) };
    count_from(database, plan, &counter, Counts::default()).await
}

/// Counts every node of `plan` for the root rows whose `column` (as the catalog spells it, read
/// as `column_type`) holds one of `keys`: what applying a remote model's tombstones would remove
/// through one delete relation. Nothing is loaded; `not_found` is always empty.
pub(crate) async fn count_naming(
    database: &Database,
    (config, schema): (&Config, &Schema),
    plan: &Plan,
    (column, column_type): (&str, &KeyType),
    keys: Vec<String>,
) -> Result<Counts, CountError> {
    let roots = Roots::Naming { column, column_type, keys: Keys::read(column_type, keys) };
    let counter = Counter { backend: database.backend(), config, schema, roots };
    count_from(database, plan, &counter, Counts::default()).await
}

/// What one count is of.
enum Counted<'a> {
    /// The rows of this node.
    Node(&'a PlanNode),
    /// The rows of this model that are deleted.
    Deleted(&'a str),
    /// The rows of this model that are nullified and not deleted.
    Nullified(&'a str),
    /// The root rows found, whatever their status.
    AllRoots(&'a PlanNode),
    /// The levels of the tree below the rows a recursive node's other nodes reach.
    Depth(&'a PlanNode),
}

/// Every count is read through one `WITH`: each deleted model with children gets the rows it
/// loses (the columns its children reference) once, as a materialized table that its children's
/// counts read, so a model reached by many paths is counted from its parents' rows, never once
/// per path.
async fn count_from(
    database: &Database,
    plan: &Plan,
    counter: &Counter<'_>,
    mut counts: Counts,
) -> Result<Counts, CountError> {
    let graph = PlanGraph::of(plan);
    let steps = plan.steps_with_parents();
    let mut wanted: Vec<Counted<'_>> = steps.iter().map(|(node, _)| Counted::Node(node)).collect();
    // A tree's depth; a cycle through several models has none of its own (its rows are one query).
    let tree =
        |node: &PlanNode| node.recursive && graph.aliases.get(node.model.as_str()).is_some_and(|a| a.cycle.is_none());
    wanted.extend(steps.iter().filter(|(node, _)| tree(node)).map(|(node, _)| Counted::Depth(node)));
    for model in graph.models() {
        if graph.deletes(model) {
            wanted.push(Counted::Deleted(model));
        }
        if graph.nullifies(model) {
            wanted.push(Counted::Nullified(model));
        }
    }
    if counter.config.model(&plan.root.model).is_some_and(|m| m.status.is_some()) {
        wanted.push(Counted::AllRoots(&plan.root));
    }
    let mut all_roots = 0;
    for batch in wanted.chunks(COUNTS_PER_STATEMENT) {
        let mut sql = SqlBuilder::new(counter.backend);
        counter.with_deleted_rows(&mut sql, &graph);
        sql.push("SELECT ");
        for (index, counted) in batch.iter().enumerate() {
            sql.push(if index == 0 { "CAST((" } else { ", CAST((" });
            counter.count(&mut sql, &graph, counted);
            sql.push(")").as_text();
        }
        let rows = database.fetch_texts(&sql.finish()).await?;
        let values = rows.into_iter().next().unwrap_or_default();
        for (counted, value) in batch.iter().zip(values) {
            let value = value.and_then(|value| value.parse::<u64>().ok()).unwrap_or(0);
            match counted {
                Counted::Node(node) => {
                    counts.rows.insert(node.step, value);
                }
                Counted::Deleted(model) => {
                    counts.totals.insert((*model).to_owned(), value);
                }
                Counted::Nullified(model) => {
                    counts.nullify.insert((*model).to_owned(), value);
                }
                Counted::AllRoots(_) => all_roots = value,
                Counted::Depth(node) => {
                    counts.depths.insert(node.step, value);
                }
            }
        }
    }
    counts.rows.sort_keys();
    counts.depths.sort_keys();
    if counter.config.model(&plan.root.model).is_some_and(|m| m.status.is_some()) {
        counts.skipped_by_status = all_roots.saturating_sub(counts.totals.get(&plan.root.model).copied().unwrap_or(0));
    }
    Ok(counts)
}

/// A plan's nodes by model: each model's nodes, and where the rows of each deleted model with
/// children are read from (which its children's counts read), in an order that puts parents
/// first.
struct PlanGraph<'a> {
    /// Every node of each model, by model, parents' models first.
    nodes: IndexMap<&'a str, Vec<(&'a PlanNode, Option<&'a PlanNode>)>>,
    /// The rows of each deleted model with children in the `WITH`.
    aliases: IndexMap<&'a str, Alias>,
}

/// Where the `WITH` holds the rows a deleted model with children loses.
struct Alias {
    /// The `WITH` query's name.
    name: String,
    /// The model's place in a cycle of models, whose rows share one query: each row is tagged
    /// with its model's place and holds the model's columns in its own slots.
    cycle: Option<CycleSlot>,
}

/// A model's part of the rows of a cycle of models.
struct CycleSlot {
    /// The model's tag in the query's [`CYCLE_MODEL`] column.
    tag: usize,
    /// The models of the cycle, in tag order (the first one's alias writes the query).
    members: Vec<String>,
}

impl<'a> PlanGraph<'a> {
    fn of(plan: &'a Plan) -> Self {
        // Every node with each of its parents (a shared subtree's node has several).
        let mut edges: Vec<(&'a PlanNode, Option<&'a PlanNode>)> = vec![(&plan.root, None)];
        let mut expanded = std::collections::HashSet::new();
        let mut stack = vec![&plan.root];
        while let Some(node) = stack.pop() {
            for child in node.children.iter() {
                edges.push((child, Some(node)));
            }
            if expanded.insert(std::sync::Arc::as_ptr(&node.children)) {
                stack.extend(node.children.iter());
            }
        }
        // The same node under several parents of one model is one lookup: keep one of them.
        let mut seen = std::collections::HashSet::new();
        edges.retain(|(node, parent)| seen.insert((*node as *const PlanNode, parent.map(|p| p.model.as_str()))));
        // Parents first: the models a model's deleted rows are found through come before it, and
        // the models of a cycle (recursive nodes close it) together.
        let components = plan.components();
        let mut nodes: IndexMap<&'a str, Vec<(&'a PlanNode, Option<&'a PlanNode>)>> =
            components.iter().flatten().map(|model| (*model, Vec::new())).collect();
        for edge in edges {
            nodes.entry(edge.0.model.as_str()).or_default().push(edge);
        }
        let with_rows = |model: &str| {
            nodes[model].iter().any(|(node, _)| node.action == OnDelete::Delete && !node.children.is_empty())
        };
        let mut aliases = IndexMap::new();
        for members in &components {
            let name = format!("cascade_deleted_{}", aliases.len());
            if let [model] = members[..] {
                if with_rows(model) {
                    aliases.insert(model, Alias { name, cycle: None });
                }
                continue;
            }
            let owned: Vec<String> = members.iter().map(|model| (*model).to_owned()).collect();
            for (tag, model) in members.iter().enumerate() {
                let cycle = Some(CycleSlot { tag, members: owned.clone() });
                aliases.insert(*model, Alias { name: name.clone(), cycle });
            }
        }
        Self { nodes, aliases }
    }

    fn models(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.nodes.keys().copied()
    }

    fn deletes(&self, model: &str) -> bool {
        self.nodes[model].iter().any(|(node, _)| node.action.deletes())
    }

    fn nullifies(&self, model: &str) -> bool {
        self.nodes[model].iter().any(|(node, _)| node.action == OnDelete::Nullify)
    }

    /// The recursive nodes of `model`: its rows are a tree.
    fn recursive_nodes(&self, model: &str) -> impl Iterator<Item = &'a PlanNode> + '_ {
        self.nodes[model].iter().filter(|(node, _)| node.recursive).map(|(node, _)| *node)
    }

    /// The nodes of `model` that do `action`, each with the parent it is reached from; rows the
    /// database deletes (`on_delete = "database"`) are counted as deleted.
    fn nodes_of(&self, model: &str, action: OnDelete) -> impl Iterator<Item = &(&'a PlanNode, Option<&'a PlanNode>)> {
        self.nodes[model].iter().filter(move |(node, _)| node.action.deletes() == action.deletes())
    }

    /// The columns of `model`'s rows that its children's relations reference.
    fn referenced_columns(&self, model: &str) -> Vec<String> {
        let mut columns: Vec<String> = Vec::new();
        for (node, parent) in self.nodes.values().flatten() {
            let Some(parent) = parent.filter(|parent| parent.model == model) else { continue };
            for column in node.references.clone().unwrap_or_else(|| key_of(parent)) {
                if !columns.contains(&column) {
                    columns.push(column);
                }
            }
        }
        columns
    }
}

impl Counter<'_> {
    /// `WITH name AS MATERIALIZED (SELECT referenced columns FROM table WHERE deleted), ...` for
    /// every deleted model with children, parents first. A model whose rows are a tree (it has a
    /// recursive node) gets a recursive query instead: the rows its other nodes reach, then every
    /// row whose parent is among them, to the end of the tree (`UNION` ends a loop of rows too),
    /// and a second one that numbers the levels below those top rows, for the tree's depth. The
    /// models of a cycle share one recursive query ([`Self::cycle_rows`]).
    fn with_deleted_rows(&self, sql: &mut SqlBuilder, graph: &PlanGraph<'_>) {
        let recursive = graph
            .aliases
            .iter()
            .any(|(model, alias)| alias.cycle.is_some() || graph.recursive_nodes(model).next().is_some());
        let mut written = 0;
        for (model, alias) in &graph.aliases {
            if alias.cycle.as_ref().is_some_and(|cycle| cycle.tag > 0) {
                continue;
            }
            sql.push(match (written, recursive) {
                (0, true) => "WITH RECURSIVE ",
                (0, false) => "WITH ",
                _ => ", ",
            });
            written += 1;
            match &alias.cycle {
                Some(cycle) => self.cycle_rows(sql, graph, &alias.name, &cycle.members),
                None => self.model_rows(sql, graph, model, &alias.name),
            }
        }
        if written > 0 {
            sql.push(" ");
        }
    }

    /// The `WITH` queries of the rows `model` (not in a cycle of models) loses, and for a tree the
    /// levels below its top rows.
    fn model_rows(&self, sql: &mut SqlBuilder, graph: &PlanGraph<'_>, model: &str, alias: &str) {
        let (node, _) = graph.nodes_of(model, OnDelete::Delete).next().expect("a deleted model has a delete node");
        let names = self.names(node);
        let referenced = graph.referenced_columns(model);
        let columns: Vec<String> = referenced.iter().map(|column| quote_identifier(&names.column(column))).collect();
        let tree: Vec<&PlanNode> = graph.recursive_nodes(model).collect();
        let materialized = tree.is_empty() && self.backend.tuning().materialized_with;
        sql.identifier(alias).push(if materialized { " AS MATERIALIZED (SELECT " } else { " AS (SELECT " });
        sql.push(&columns.join(", ")).push(" FROM ").push(&names.quoted_table()).push(" WHERE ");
        self.membership_where(sql, graph, model, OnDelete::Delete, |node, _| !node.recursive);
        if !tree.is_empty() {
            sql.push(" UNION ");
            below(sql, &names, &referenced, &tree, alias, None);
        }
        sql.push(")");
        if !tree.is_empty() {
            // Each row once per level it is on (`UNION`), no deeper than the tree has rows:
            // without a loop of rows no level is deeper, and a loop stops there.
            let depth = depth_alias(alias);
            sql.push(", ").identifier(&depth).push(" AS (SELECT ").push(&columns.join(", "));
            sql.push(", 0 AS ").identifier(LEVEL).push(" FROM ").push(&names.quoted_table()).push(" WHERE ");
            self.membership_where(sql, graph, model, OnDelete::Delete, |node, _| !node.recursive);
            sql.push(" UNION ");
            below(sql, &names, &referenced, &tree, &depth, Some(alias));
            sql.push(")");
        }
    }

    /// The one recursive `WITH` query of the rows the models of a cycle (`members`) lose. Neither
    /// database lets two queries of a `WITH` refer to each other, so each row is tagged with its
    /// model ([`CYCLE_MODEL`]) and holds that model's referenced columns in slots of its own (the
    /// other models' slots NULL, of their columns' types): first the rows reached from outside
    /// the cycle (or the root ids), then, to the end, every row of a member whose relation column
    /// holds a slot of a row already found, by any delete relation inside the cycle.
    fn cycle_rows(&self, sql: &mut SqlBuilder, graph: &PlanGraph<'_>, alias: &str, members: &[String]) {
        let inside = |model: &str| members.iter().any(|member| member == model);
        // Every (member's table names, its referenced columns).
        let slots: Vec<(CatalogNames<'_>, Vec<String>)> = members
            .iter()
            .map(|model| {
                let (node, _) = graph.nodes[model.as_str()][0];
                (self.names(node), graph.referenced_columns(model))
            })
            .collect();
        // The delete relations inside the cycle: (child's tag, the node, parent's tag).
        let mut relations: Vec<(usize, &PlanNode, usize)> = Vec::new();
        for (tag, model) in members.iter().enumerate() {
            for (node, parent) in graph.nodes_of(model, OnDelete::Delete) {
                if let Some(parent) = parent.filter(|parent| inside(&parent.model)) {
                    let parent_tag = members.iter().position(|member| *member == parent.model).expect("inside");
                    relations.push((tag, *node, parent_tag));
                }
            }
        }
        let slot_name = |tag: usize, index: usize| format!("cascade_s{tag}_{index}");
        let link_name = |relation: usize, part: usize| format!("cascade_l{relation}_{part}");
        // A column of `tag`'s row, or a NULL of that column's type in another member's row.
        let value = |of: usize, tag: usize, column: &str| {
            let column = quote_identifier(&slots[of].0.column(column));
            if of == tag {
                column
            } else {
                format!("(SELECT {column} FROM {} WHERE 1 = 0)", slots[of].0.quoted_table())
            }
        };
        let slot_values = |tag: usize| -> Vec<String> {
            slots
                .iter()
                .enumerate()
                .flat_map(|(of, (_, columns))| columns.iter().map(move |c| value(of, tag, c)))
                .collect()
        };
        let slot_names: Vec<String> = slots
            .iter()
            .enumerate()
            .flat_map(|(of, (_, columns))| (0..columns.len()).map(move |index| slot_name(of, index)))
            .collect();
        sql.identifier(alias).push(" (").identifier(CYCLE_MODEL);
        for name in &slot_names {
            sql.push(", ").identifier(name);
        }
        sql.push(") AS (");
        let mut first = true;
        for (tag, model) in members.iter().enumerate() {
            let from_outside = |node: &PlanNode, parent: Option<&PlanNode>| {
                !node.recursive && parent.is_none_or(|parent| !inside(&parent.model))
            };
            if !graph.nodes_of(model, OnDelete::Delete).any(|(node, parent)| from_outside(node, *parent)) {
                continue;
            }
            sql.push(if first { "SELECT " } else { " UNION SELECT " });
            first = false;
            sql.push(&format!("{tag}, ")).push(&slot_values(tag).join(", "));
            sql.push(" FROM ").push(&slots[tag].0.quoted_table()).push(" WHERE ");
            self.membership_where(sql, graph, model, OnDelete::Delete, from_outside);
        }
        // The recursive reference is one join over every member's rows, each with the slots and
        // the relation columns (`cascade_l…`) of the relations into it.
        sql.push(" UNION SELECT ").identifier(TREE_ROW).push(".").identifier(CYCLE_MODEL);
        for name in &slot_names {
            sql.push(", ").identifier(TREE_ROW).push(".").identifier(name);
        }
        sql.push(" FROM (");
        for (tag, (names, _)) in slots.iter().enumerate() {
            sql.push(if tag == 0 { "SELECT " } else { " UNION ALL SELECT " });
            let mut values = vec![format!("{tag} AS {}", quote_identifier(CYCLE_MODEL))];
            values.extend(
                slot_values(tag).into_iter().zip(&slot_names).map(|(v, n)| format!("{v} AS {}", quote_identifier(n))),
            );
            for (index, (child, node, _)) in relations.iter().enumerate() {
                for (part, column) in node.columns.iter().enumerate() {
                    values.push(format!(
                        "{} AS {}",
                        value(*child, tag, column),
                        quote_identifier(&link_name(index, part))
                    ));
                }
            }
            sql.push(&values.join(", ")).push(" FROM ").push(&names.quoted_table());
        }
        sql.push(") AS ").identifier(TREE_ROW).push(" JOIN ").identifier(alias).push(" AS ").identifier(TREE_PARENT);
        sql.push(" ON ");
        for (index, (child, node, parent)) in relations.iter().enumerate() {
            sql.push(if index == 0 { "(" } else { " OR (" });
            sql.identifier(TREE_ROW).push(".").identifier(CYCLE_MODEL).push(&format!(" = {child} AND "));
            sql.identifier(TREE_PARENT).push(".").identifier(CYCLE_MODEL).push(&format!(" = {parent}"));
            let parent_node = graph.nodes[members[*parent].as_str()][0].0;
            let referenced = node.references.clone().unwrap_or_else(|| key_of(parent_node));
            for (part, column) in referenced.iter().enumerate() {
                let slot = slots[*parent].1.iter().position(|c| c == column).expect("a referenced column has a slot");
                sql.push(" AND ").identifier(TREE_ROW).push(".").identifier(&link_name(index, part)).push(" = ");
                sql.identifier(TREE_PARENT).push(".").identifier(&slot_name(*parent, slot));
            }
            sql.push(")");
        }
        sql.push(")");
    }

    /// The rows of `model` that any of its nodes doing `action` reaches.
    fn membership(&self, sql: &mut SqlBuilder, graph: &PlanGraph<'_>, model: &str, action: OnDelete) {
        self.membership_where(sql, graph, model, action, |_, _| true);
    }

    /// [`Self::membership`] through the nodes (with their parents) for which `counted` holds.
    fn membership_where(
        &self,
        sql: &mut SqlBuilder,
        graph: &PlanGraph<'_>,
        model: &str,
        action: OnDelete,
        counted: impl Fn(&PlanNode, Option<&PlanNode>) -> bool,
    ) {
        sql.push("(");
        let nodes = graph.nodes_of(model, action).filter(|(node, parent)| counted(node, *parent));
        for (index, (node, parent)) in nodes.enumerate() {
            sql.push(if index == 0 { "(" } else { " OR (" });
            self.reached(sql, graph, node, *parent);
            sql.push(")");
        }
        sql.push(")");
    }

    /// The rows of `node` (reached from `parent`) among the rows its parent's model loses.
    fn reached(&self, sql: &mut SqlBuilder, graph: &PlanGraph<'_>, node: &PlanNode, parent: Option<&PlanNode>) {
        let Some(parent) = parent else {
            self.root_predicate(sql, node, true);
            return;
        };
        let names = self.names(node);
        let columns: Vec<String> = node.columns.iter().map(|column| quote_identifier(&names.column(column))).collect();
        let parent_names = self.names(parent);
        let alias = graph.aliases.get(parent.model.as_str()).expect("a parent with children has its rows");
        let parent_columns = node.references.clone().unwrap_or_else(|| key_of(parent));
        let referenced: Vec<String> = match &alias.cycle {
            None => parent_columns.iter().map(|column| quote_identifier(&parent_names.column(column))).collect(),
            Some(cycle) => {
                let slots = graph.referenced_columns(&parent.model);
                let slot =
                    |column: &String| slots.iter().position(|c| c == column).expect("a referenced column has a slot");
                parent_columns
                    .iter()
                    .map(|column| quote_identifier(&format!("cascade_s{}_{}", cycle.tag, slot(column))))
                    .collect()
            }
        };
        match columns.as_slice() {
            [one] => sql.push(one),
            several => sql.push("(").push(&several.join(", ")).push(")"),
        };
        sql.push(" IN (SELECT ").push(&referenced.join(", ")).push(" FROM ").identifier(&alias.name);
        if let Some(cycle) = &alias.cycle {
            sql.push(" WHERE ").identifier(CYCLE_MODEL).push(&format!(" = {}", cycle.tag));
        }
        sql.push(")");
    }

    /// `SELECT COUNT(*)` of what `counted` is of.
    fn count(&self, sql: &mut SqlBuilder, graph: &PlanGraph<'_>, counted: &Counted<'_>) {
        match counted {
            Counted::Node(node) => {
                let parent = graph.nodes[node.model.as_str()]
                    .iter()
                    .find(|(candidate, _)| std::ptr::eq(*candidate, *node))
                    .and_then(|(_, parent)| *parent);
                let before = |other: &PlanNode, parent: Option<&PlanNode>| {
                    other.step < node.step
                        && !parent.is_some_and(|parent| goes_after(self.backend, Some(self.schema), parent, other))
                };
                let spared = parent.and_then(|parent| {
                    super::steps::spared_rows(node, parent, &parent.children, self.backend, Some(self.schema))
                });
                sql.push("SELECT COUNT(*) FROM ").push(&self.names(node).quoted_table());
                if spared.is_some() {
                    sql.push(" AS ").identifier(ROW_ALIAS);
                }
                sql.push(" WHERE ");
                self.reached(sql, graph, node, parent);
                if let Some(spared) = &spared {
                    // Rows a later step deletes through the same parent row are deleted only.
                    sql.push(spared);
                }
                if node.recursive {
                    // The rows below a tree's top rows: those its other nodes reach are theirs.
                    sql.push(" AND NOT COALESCE(");
                    self.membership_where(sql, graph, &node.model, OnDelete::Delete, |other, _| !other.recursive);
                    sql.push(", FALSE)");
                } else if node.action == OnDelete::Nullify
                    && graph.nodes_of(&node.model, OnDelete::Delete).any(|(other, parent)| before(other, *parent))
                {
                    // A row a step before this one deletes is gone when this one runs: it is
                    // counted deleted only, as in the totals. A step whose rows go after its
                    // parent chunk's runs after this one, whatever its number.
                    sql.push(" AND NOT COALESCE(");
                    self.membership_where(sql, graph, &node.model, OnDelete::Delete, before);
                    sql.push(", FALSE)");
                }
            }
            Counted::Deleted(model) => self.model_count(sql, graph, model, OnDelete::Delete),
            Counted::Nullified(model) => self.model_count(sql, graph, model, OnDelete::Nullify),
            Counted::Depth(node) => {
                let alias = graph.aliases.get(node.model.as_str()).expect("a tree's model has its rows");
                sql.push("SELECT COALESCE(MAX(").identifier(LEVEL).push("), 0) FROM ");
                sql.identifier(&depth_alias(&alias.name));
            }
            Counted::AllRoots(root) => {
                sql.push("SELECT COUNT(*) FROM ").push(&self.names(root).quoted_table()).push(" WHERE ");
                self.root_predicate(sql, root, false);
            }
        }
    }

    /// `SELECT COUNT(*)` of the rows of `model` deleted, or nullified and not deleted.
    fn model_count(&self, sql: &mut SqlBuilder, graph: &PlanGraph<'_>, model: &str, action: OnDelete) {
        let (node, _) = graph.nodes_of(model, action).next().expect("a model counted has a node doing it");
        sql.push("SELECT COUNT(*) FROM ").push(&self.names(node).quoted_table()).push(" WHERE ");
        self.membership(sql, graph, model, action);
        if action == OnDelete::Nullify && graph.deletes(model) {
            // A row that is deleted is not also nullified. COALESCE: a NULL relation column
            // reaches nothing, so it must not hide the row.
            sql.push(" AND NOT COALESCE(");
            self.membership(sql, graph, model, OnDelete::Delete);
            sql.push(", FALSE)");
        }
    }

    fn root_predicate(&self, sql: &mut SqlBuilder, root: &PlanNode, with_status: bool) {
        let names = self.names(root);
        match &self.roots {
            Roots::Ids { key_types, ids } => {
                let key: Vec<String> = key_of(root).iter().map(|column| names.column(column)).collect();
                sql.keys_in(&key, key_types, Param::Keys(ids.clone()));
            }
            Roots::Dangling(dangling) => {
                sql.push("(");
                for (index, relation) in dangling.iter().enumerate() {
                    if index > 0 {
                        sql.push(" OR ");
                    }
                    // The root table is the innermost unaliased one here, so its name qualifies
                    // the columns inside the sub-select, whose table is aliased.
                    let parent = CatalogNames::of(Some(self.schema), &relation.parent_table);
                    sql.push("(");
                    for column in &relation.columns {
                        sql.identifier(&names.column(column)).push(" IS NOT NULL AND ");
                    }
                    sql.push("NOT EXISTS (SELECT 1 FROM ").push(&parent.quoted_table()).push(" AS ");
                    sql.identifier(DANGLING_PARENT).push(" WHERE ");
                    for (part, (column, key)) in relation.columns.iter().zip(&relation.parent_key).enumerate() {
                        sql.push(if part == 0 { "" } else { " AND " });
                        sql.identifier(DANGLING_PARENT).push(".").identifier(&parent.column(key)).push(" = ");
                        sql.push(&names.quoted_table()).push(".").identifier(&names.column(column));
                    }
                    sql.push("))");
                }
                sql.push(")");
            }
            Roots::Naming { column, column_type, keys } => {
                sql.key_list(&names.column(column), column_type, Param::Keys(keys.clone()));
            }
        }
        let status = self.config.model(&root.model).and_then(|m| m.status.as_ref()).filter(|_| with_status);
        if let Some(status) = status {
            sql.push(" AND ");
            // Roots already in progress are resumed by a deletion, so they count as proceeding.
            super::sql::status_in(sql, &names.column(&status.column.value), &status.proceed_or_in_progress());
        }
    }

    fn names<'n>(&'n self, node: &'n PlanNode) -> CatalogNames<'n> {
        CatalogNames::of(Some(self.schema), &node.table)
    }
}

/// The column that numbers a tree's levels in its depth query.
const LEVEL: &str = "cascade_level";

/// The alias of the query that numbers the levels of the tree whose rows are `alias`.
fn depth_alias(alias: &str) -> String {
    format!("{alias}_depth")
}

/// The recursive part of a tree's query over `rows` (the query itself): `SELECT` the
/// `referenced` columns of every row below one of `rows` by any of the model's relations to
/// itself (`tree`), one join, since neither database takes the recursive reference in a
/// sub-select (PostgreSQL not twice). A row that points at itself is not below itself. With
/// `levels` (the query of the tree's rows), also the level below its parent's, up to as many
/// levels as the tree has rows.
fn below(
    sql: &mut SqlBuilder,
    names: &CatalogNames<'_>,
    referenced: &[String],
    tree: &[&PlanNode],
    rows: &str,
    levels: Option<&str>,
) {
    let qualified = |column: &String| format!("{TREE_ROW}.{}", quote_identifier(&names.column(column)));
    sql.push("SELECT ").push(&referenced.iter().map(qualified).collect::<Vec<_>>().join(", "));
    if levels.is_some() {
        sql.push(", ").identifier(TREE_PARENT).push(".").identifier(LEVEL).push(" + 1");
    }
    sql.push(" FROM ").push(&names.quoted_table()).push(" AS ").identifier(TREE_ROW);
    sql.push(" JOIN ").identifier(rows).push(" AS ").identifier(TREE_PARENT).push(" ON (");
    for (index, node) in tree.iter().enumerate() {
        sql.push(if index == 0 { "(" } else { " OR (" });
        let parent_columns = node.references.clone().unwrap_or_else(|| key_of(node));
        let pairs = node.columns.iter().zip(&parent_columns);
        for (part, (column, parent_column)) in pairs.clone().enumerate() {
            sql.push(if part == 0 { "" } else { " AND " });
            sql.identifier(TREE_ROW).push(".").identifier(&names.column(column)).push(" = ");
            sql.identifier(TREE_PARENT).push(".").identifier(&names.column(parent_column));
        }
        sql.push(" AND NOT (");
        for (part, (column, parent_column)) in pairs.enumerate() {
            sql.push(if part == 0 { "" } else { " AND " });
            sql.identifier(TREE_ROW).push(".").identifier(&names.column(column)).push(" = ");
            sql.identifier(TREE_ROW).push(".").identifier(&names.column(parent_column));
        }
        sql.push("))");
    }
    sql.push(")");
    if let Some(levels) = levels {
        sql.push(" WHERE ").identifier(TREE_PARENT).push(".").identifier(LEVEL).push(" < (SELECT COUNT(*) FROM ");
        sql.identifier(levels).push(")");
    }
}
