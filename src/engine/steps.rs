//! The statements each step of a plan runs. The executor binds real values to them; `plan --sql`
//! lists the same statements with described parameters.

use std::collections::HashSet;

use serde::Serialize;

use super::sql::{
    NodeSql, ParentRows, ROW_ALIAS, Returning, count_reached, delete_archived, delete_with_tombstones, key_of,
    outbox_insert,
};
use crate::audit::nullified;
use crate::config::{Config, OnDelete, StatusCheck};
use crate::db::sql::{KeyType, Param, SqlValue, Statement, quote_identifier, quote_literal};
use crate::db::{Backend, Keys, Kind};
use crate::planner::{OutboxTarget, Plan, PlanNode, worked};
use crate::schema::{CatalogNames, Schema, Table};

/// Everything one node's statements are built from.
pub(crate) struct StepSql<'a> {
    pub sql: NodeSql<'a>,
    /// The status check, at the root of a model that has one.
    pub status: Option<&'a StatusCheck>,
    /// What deletes return, when the outbox or the archive needs the deleted rows.
    pub returning: Option<Returning>,
    pub outbox: Option<&'a OutboxTarget>,
    /// The node's children, whose rows must be gone before a chunk of this node is deleted
    /// (those the executor works on: [`crate::planner::worked`]).
    pub children: Vec<NodeSql<'a>>,
    /// The node's children the database deletes itself with a chunk: counted in the chunk's
    /// transaction right before its delete.
    pub database_children: Vec<NodeSql<'a>>,
    /// How the database ties each child's table to this node's, in the order of `children`.
    child_ties: Vec<Tie>,
    /// Whether the node's key is unique (a primary key or unique index), so a statement matching
    /// N keys touches at most N rows.
    pub key_unique: bool,
    /// Whether the node's rows are deleted (not nullified).
    deletes: bool,
}

impl<'a> StepSql<'a> {
    /// The statements of `node` (whose parent in the plan is `parent`, among whose children it
    /// is one of `siblings`), whose rows have the children `children` (see
    /// [`Plan::children_of`]). `archive`: return whole rows for the archive.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        node: &'a PlanNode,
        parent: Option<&PlanNode>,
        siblings: &[PlanNode],
        children: &'a [PlanNode],
        config: &'a Config,
        backend: &'static dyn Backend,
        schema: Option<&'a Schema>,
        archive: bool,
    ) -> Self {
        let model = config.model(&node.model);
        let outbox = node.outbox.as_ref();
        let names = CatalogNames::of(schema, &node.table);
        let table = names.table();
        let returning = Returning {
            identity: if outbox.is_some() {
                node.identity.iter().map(|c| names.column(c)).collect()
            } else {
                Vec::new()
            },
            shard_key: outbox
                .and_then(|target| config.outbox.scopes.get(&target.scope))
                .map(|scope| names.column(&scope.shard_key.value)),
            payload: match (outbox, model) {
                (Some(_), Some(model)) => model.outbox_payload.iter().map(|c| names.column(&c.value)).collect(),
                _ => Vec::new(),
            },
            row: archive.then(|| table.map(|t| t.columns.iter().map(|c| c.name.clone()).collect()).unwrap_or_default()),
        };
        let returning = (outbox.is_some() || archive).then_some(returning);
        let mut sql = node_sql(node, parent, backend, schema);
        sql.spared = parent.and_then(|parent| spared_rows(node, parent, siblings, backend, schema));
        Self {
            sql,
            status: if parent.is_none() { model.and_then(|m| m.status.as_ref()) } else { None },
            returning,
            outbox,
            children: worked(children).map(|child| node_sql(child, Some(node), backend, schema)).collect(),
            database_children: (children.iter().filter(|child| child.action == OnDelete::Database))
                .map(|child| node_sql(child, Some(node), backend, schema))
                .collect(),
            child_ties: worked(children).map(|child| tie(schema, node, child)).collect(),
            key_unique: schema.is_some_and(|schema| schema.unique_columns(&node.table, &node.identity)),
            deletes: node.action == OnDelete::Delete,
        }
    }

    /// Makes a nullify whose model is one of `recorded` ([`models_recording_nullified`]) return
    /// the rows it sets to NULL, for the run to record.
    pub(super) fn record_nullified(mut self, recorded: &HashSet<&str>) -> Self {
        self.sql.returns_nullified =
            self.sql.node.action == OnDelete::Nullify && recorded.contains(self.sql.node.model.as_str());
        self
    }

    /// Whether the rows of child `index` go after a chunk's own, in its transaction (whether or
    /// not the child's earlier rows went in it too): where writers are concurrent, all children
    /// are set-based and no foreign key ties this one to the node, a child inserted before that
    /// delete goes with the others, where a check before the parent delete could not see one
    /// inserted after it. A child found through its parent's rows (it references columns other
    /// than the key) cannot go after them: once they are deleted it is found through nothing.
    pub(super) fn child_goes_after(&self, index: usize) -> bool {
        tied_goes_after(self.sql.backend, self.sql.node, self.children[index].node, self.child_ties[index])
    }

    /// The check a chunk's transaction makes for children inserted under the chunk `keys` before
    /// deleting it; `together`: its set-based children's rows go in the same transaction. None
    /// where none is needed: with one writer at a time, no child can appear inside a transaction
    /// that deletes the children too; with concurrent writers, a child its foreign key refuses to
    /// orphan, or one deleted after the chunk's rows, needs none.
    pub(super) fn new_children_check(&self, together: bool, keys: &Param) -> Option<Statement> {
        let checked: Vec<&NodeSql<'a>> = if self.sql.backend.tuning().concurrent_writers {
            (self.children.iter().enumerate())
                .filter(|(index, _)| !self.child_goes_after(*index) && self.child_ties[*index] != Tie::Refusing)
                .map(|(_, child)| child)
                .collect()
        } else if together {
            Vec::new()
        } else {
            self.children.iter().collect()
        };
        (!checked.is_empty()).then(|| self.sql.children_exist(&checked, keys))
    }

    /// The counts of the rows the database deletes with the chunk `keys` (see
    /// [`StepSql::database_children`]): one per child model, each row once however many of the
    /// model's relations reach it, with the first of its nodes.
    pub(super) fn database_counts(&self, keys: &Param) -> Vec<(&'a PlanNode, Statement)> {
        let mut models: Vec<(&'a PlanNode, Vec<&NodeSql<'a>>)> = Vec::new();
        for child in &self.database_children {
            match models.iter_mut().find(|(node, _)| node.model == child.node.model) {
                Some((_, nodes)) => nodes.push(child),
                None => models.push((child.node, vec![child])),
            }
        }
        models.into_iter().map(|(node, nodes)| (node, count_reached(&nodes, keys))).collect()
    }

    /// What a delete returns for the tombstones and the archive; none for a nullify, whose
    /// updated rows stay.
    pub(super) fn row_data(&self) -> Option<&Returning> {
        self.returning.as_ref().filter(|_| self.deletes)
    }

    /// Where one writer at a time is the rule, a delete of every matching row has its tombstones
    /// and archive rows read from the table right before it, and returns nothing: what is read.
    pub(super) fn row_data_from_table(&self) -> Option<&Returning> {
        self.row_data().filter(|_| !self.sql.backend.tuning().concurrent_writers)
    }

    /// The tombstones of a chunk; `rows` is the JSON array of the deleted rows' key, shard and
    /// payload.
    pub(super) fn tombstones(&self, rows: Param) -> Option<Statement> {
        let target = self.outbox?;
        Some(outbox_insert(self.sql.backend, target, rows))
    }

    /// `delete` writing its own rows' tombstones, where the database can (see
    /// [`delete_with_tombstones`]) and the step writes tombstones; with `archived`, returning
    /// the rows for the archive in one result row (see [`delete_archived`]).
    /// A composite key is left to the tool, which writes its JSON array compactly (`[1,3]`) as
    /// on every database; PostgreSQL's own text of it is `[1, 3]`.
    pub(super) fn deleting_in_with(&self, delete: &Statement, archived: bool) -> Option<Statement> {
        let returning = self.returning.as_ref().filter(|_| self.sql.backend.tuning().deletes_in_with)?;
        if returning.identity.len() > 1 {
            return None;
        }
        match (archived && returning.row.is_some(), self.outbox) {
            (true, outbox) => Some(delete_archived(self.sql.backend, delete.clone(), outbox)),
            (false, Some(target)) => Some(delete_with_tombstones(self.sql.backend, delete.clone(), target)),
            (false, None) => None,
        }
    }
}

/// How the database ties a child's table to its parent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tie {
    /// A foreign key on the relation refuses to delete a parent row that still has children.
    Refusing,
    /// No foreign key of the child's table references the parent's: its rows may go before or
    /// after the parent's.
    None,
    /// Anything else (a cascading foreign key, one on other columns, no schema): the children go
    /// first.
    Other,
}

/// Whether `child`'s rows go after a chunk of `parent`'s own (see [`StepSql::child_goes_after`]).
pub(crate) fn goes_after(
    backend: &'static dyn Backend,
    schema: Option<&Schema>,
    parent: &PlanNode,
    child: &PlanNode,
) -> bool {
    tied_goes_after(backend, parent, child, tie(schema, parent, child))
}

/// [`goes_after`] for a child tied to `parent` by `tie`.
fn tied_goes_after(backend: &'static dyn Backend, parent: &PlanNode, child: &PlanNode, tie: Tie) -> bool {
    parent.has_only_set_based_children()
        && backend.tuning().concurrent_writers
        && tie == Tie::None
        && child.references.is_none()
}

/// The rows a nullify step `node` (a child of `parent`, one of `siblings`) leaves alone, as
/// ` AND NOT (...)` over its row (aliased [`ROW_ALIAS`]): those that a delete
/// step of its model in the subtree of a later sibling reaches from the same parent row the
/// row points at. That step runs under the parent's chunk before the parent's rows go, so the
/// row is deleted rather than nullified and then deleted; which rows those are depends on no
/// chunk, so the plan's counts read the same predicate. A sibling whose rows go after the
/// parent's ([`goes_after`]) would be too late, and a recursive step is not followed (its rows
/// below a tree's top are nullified first). Each step is followed by one path only, so a
/// plan's DAG never makes the predicate grow with its paths.
pub(crate) fn spared_rows(
    node: &PlanNode,
    parent: &PlanNode,
    siblings: &[PlanNode],
    backend: &'static dyn Backend,
    schema: Option<&Schema>,
) -> Option<String> {
    if node.action != OnDelete::Nullify {
        return None;
    }
    let position = siblings.iter().position(|sibling| std::ptr::eq(sibling, node))?;
    let mut seen = std::collections::HashSet::new();
    let mut paths: Vec<Vec<&PlanNode>> = Vec::new();
    for sibling in &siblings[position + 1..] {
        if goes_after(backend, schema, parent, sibling) {
            continue;
        }
        let (mut stack, mut path) = (vec![(sibling, 0)], Vec::new());
        while let Some((step, depth)) = stack.pop() {
            if step.recursive || step.action != OnDelete::Delete || !seen.insert(std::ptr::from_ref(step)) {
                continue;
            }
            path.truncate(depth);
            path.push(step);
            if step.model == node.model {
                paths.push(path.clone());
            }
            stack.extend(step.children.iter().rev().map(|child| (child, depth + 1)));
        }
    }
    if paths.is_empty() {
        return None;
    }
    let reached: Vec<String> = paths.iter().map(|path| reached_from_parent_row(node, parent, path, schema)).collect();
    Some(format!(" AND NOT (({}))", reached.join(") OR (")))
}

/// Whether the row of `node` (aliased [`ROW_ALIAS`]) is among those the last step of `path`
/// (from a child of `parent` down) reaches from the parent row the row points at: `EXISTS` from
/// the row up the path, one lookup by a key (or unique columns) per step, to that parent row.
/// (`IN` sub-selects down from the parent row read every row the parent has below it, for
/// every row: minutes for an author of 20,000 posts.)
fn reached_from_parent_row(node: &PlanNode, parent: &PlanNode, path: &[&PlanNode], schema: Option<&Schema>) -> String {
    let columns = |alias: &str, table: &PlanNode, columns: &[String]| {
        let names = CatalogNames::of(schema, &table.table);
        let column =
            |column: &String| format!("{}.{}", quote_identifier(alias), quote_identifier(&names.column(column)));
        match columns.iter().map(column).collect::<Vec<_>>().as_slice() {
            [one] => one.clone(),
            several => format!("({})", several.join(", ")),
        }
    };
    let referenced = |child: &PlanNode, of: &PlanNode| child.references.clone().unwrap_or_else(|| key_of(of));
    let alias = |level: usize| format!("cascade_spared_{level}");
    // Level 0 is the parent row, level n the row of the path's n-th step.
    let table_at = |level: usize| if level == 0 { parent } else { path[level - 1] };
    let mut condition = format!(
        "{} = {}",
        columns(&alias(0), parent, &referenced(node, parent)),
        columns(ROW_ALIAS, node, &node.columns)
    );
    for (level, step) in path.iter().enumerate().map(|(index, step)| (index + 1, *step)) {
        let above = table_at(level - 1);
        let below = if level == path.len() { ROW_ALIAS.to_owned() } else { alias(level) };
        condition = format!(
            "EXISTS (SELECT 1 FROM {} AS {} WHERE {} = {} AND {condition})",
            CatalogNames::of(schema, &above.table).quoted_table(),
            quote_identifier(&alias(level - 1)),
            columns(&alias(level - 1), above, &referenced(step, above)),
            columns(&below, step, &step.columns),
        );
    }
    condition
}

fn tie(schema: Option<&Schema>, node: &PlanNode, child: &PlanNode) -> Tie {
    let Some(schema) = schema else { return Tie::Other };
    let referenced = child.references.as_ref().unwrap_or(&node.identity);
    let refusing = schema.refuses_orphans(&child.table, &child.columns, &node.table, referenced);
    if refusing {
        Tie::Refusing
    } else if schema.unreferenced_by(&child.table, &node.table) {
        Tie::None
    } else {
        Tie::Other
    }
}

/// The models whose nullified rows a run records (see `audit::nullified`): those a nullify step
/// sets rows of to NULL that another step also reaches ([`Plan::models_nullified_and_reached_again`]),
/// where the model's identity is unique, so that one key is one row.
pub(crate) fn models_recording_nullified<'p>(plan: &'p Plan, schema: Option<&Schema>) -> HashSet<&'p str> {
    let again = plan.models_nullified_and_reached_again();
    let steps = plan.steps();
    let recorded =
        steps.into_iter().filter(|node| node.action == OnDelete::Nullify && again.contains(node.model.as_str()));
    recorded
        .filter(|node| schema.is_some_and(|schema| schema.unique_columns(&node.table, &node.identity)))
        .map(|node| node.model.as_str())
        .collect()
}

/// The key types of `columns` of `table` (an integer where the table or column is unknown).
pub(crate) fn column_types(table: Option<&Table>, columns: &[String]) -> Vec<KeyType> {
    columns
        .iter()
        .map(|column| table.and_then(|t| t.column(column)).map_or(KeyType::Integer, |c| c.key_type.clone()))
        .collect()
}

/// The statement builder of one node, with key types from the schema (integer when unknown).
pub(crate) fn node_sql<'a>(
    node: &'a PlanNode,
    parent: Option<&PlanNode>,
    backend: &'static dyn Backend,
    schema: Option<&'a Schema>,
) -> NodeSql<'a> {
    let table_of = |node: &PlanNode| schema.and_then(|s| s.table(&node.table));
    let names = CatalogNames::of(schema, &node.table);
    let table = names.table();
    let own_key = key_of(node);
    let key_types = column_types(table, &own_key);
    let (match_types, through_parent) = match parent {
        None => (key_types.clone(), None),
        Some(parent) => {
            let parent_names = CatalogNames::of(schema, &parent.table);
            let parent_key = key_of(parent);
            let parent_types = column_types(table_of(parent), &parent_key);
            match &node.references {
                None => {
                    let column_types = column_types(table, &node.columns);
                    let compared =
                        parent_types.iter().zip(&column_types).map(|(key, column)| backend.compared_as(key, column));
                    (compared.collect(), None)
                }
                Some(referenced) => {
                    let through = ParentRows {
                        table: parent_names.quoted_table(),
                        key: parent_key.iter().map(|column| parent_names.column(column)).collect(),
                        key_types: parent_types.clone(),
                        referenced: referenced.iter().map(|column| parent_names.column(column)).collect(),
                    };
                    (parent_types, Some(through))
                }
            }
        }
    };
    NodeSql {
        backend,
        node,
        names,
        key_types,
        match_types,
        through_parent,
        partitioned: table.is_some_and(|t| t.partitioned),
        self_reference: node.recursive && parent.is_some_and(|parent| parent.model == node.model),
        guard: None,
        spared: None,
        returns_nullified: false,
    }
}

/// The statements one plan step runs, for people.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepStatements {
    /// The step's position in execution order, from 1.
    pub step: usize,
    /// The step's model.
    pub model: String,
    /// The parent model whose chunk's transaction this step's rows go in, right after the
    /// chunk's own rows (see `StepSql::child_goes_after`); the step is listed after the parent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The parent's step, where `after` is set.
    #[serde(skip)]
    after_step: Option<usize>,
    /// The statements, in the order they run.
    pub statements: Vec<ListedStatement>,
}

/// A statement for people: its SQL and what each placeholder receives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListedStatement {
    /// The SQL, with placeholders.
    pub sql: String,
    /// What each placeholder receives, in order: a value or a description.
    pub params: Vec<String>,
}

/// Every step's statements in execution order, for a database of `backend` (with `schema`,
/// when known, for key types and partitioned tables).
/// Each step is listed once, however many paths reach it (a shared subtree is one set of steps).
pub fn list(plan: &Plan, config: &Config, kind: Kind, schema: Option<&Schema>) -> Vec<StepStatements> {
    let backend = kind.backend();
    let mut goes_after: std::collections::HashMap<usize, (String, usize)> = std::collections::HashMap::new();
    let context = ListContext { plan, config, backend, schema, recorded: models_recording_nullified(plan, schema) };
    let mut steps: Vec<StepStatements> = plan
        .steps_with_parents()
        .into_iter()
        .map(|(node, parent)| list_node(&context, node, parent, &mut goes_after))
        .collect();
    for listed in &mut steps {
        if let Some((model, step)) = goes_after.remove(&listed.step) {
            (listed.after, listed.after_step) = (Some(model), Some(step));
        }
    }
    steps.sort_by_key(|s| (s.after_step.unwrap_or(s.step), s.after_step.is_some(), s.step));
    steps
}

/// What listing every step's statements shares: the models whose nullified rows a run records
/// are found once for the plan, not once per step.
struct ListContext<'p> {
    plan: &'p Plan,
    config: &'p Config,
    backend: &'static dyn Backend,
    schema: Option<&'p Schema>,
    recorded: HashSet<&'p str>,
}

/// The statements of `node`'s step; the children that go after its rows are added to
/// `goes_after` (by step: the parent's model and step).
fn list_node(
    context: &ListContext<'_>,
    node: &PlanNode,
    parent: Option<&PlanNode>,
    goes_after: &mut std::collections::HashMap<usize, (String, usize)>,
) -> StepStatements {
    let ListContext { plan, config, backend, schema, recorded } = context;
    let (backend, schema) = (*backend, *schema);
    let children = plan.children_of(node);
    let siblings = parent.map_or(&[][..], |parent| plan.children_of(parent));
    let step =
        StepSql::new(node, parent, siblings, children, config, backend, schema, false).record_nullified(recorded);
    for (index, child) in worked(children).enumerate() {
        if step.child_goes_after(index) {
            goes_after.insert(child.step, (node.model.clone(), node.step));
        }
    }
    let described = |what: &str| Param::Described(what.to_owned());
    let matched = described(&match parent {
        Some(parent) => format!("keys of the current `{}` chunk", parent.model),
        None => "the root ids".to_owned(),
    });
    let mut statements = Vec::new();
    if let Some(status) = step.status {
        statements.push(step.sql.mark_in_progress(matched.clone(), status));
    }
    if node.action == OnDelete::Database {
        // The database deletes them with the parent's chunk: they are only counted, right before.
        statements.push(count_reached(&[&step.sql], &matched));
    } else if step.sql.loads_rows() {
        statements.push(step.sql.select_chunk(matched, step.status, node.chunk_size, None));
        let keys = described("the chunk's keys");
        statements.extend(children_checks(&step, node, &keys));
        statements.extend(deleting_all(&step, keys, true));
    } else {
        if parent.is_some_and(PlanNode::has_only_set_based_children) && backend.tuning().limited_delete_is_slow {
            // In the parent chunk's transaction: all its rows when they fit one chunk, else a chunk.
            statements.push(step.sql.count_up_to(matched.clone(), node.chunk_size + 1));
            statements.extend(deleting_all(&step, matched.clone(), false));
        }
        let chunk = step.sql.set_based_chunk(matched, step.returning.as_ref(), node.chunk_size);
        statements.extend(writing(&step, chunk));
    }
    StepStatements {
        step: node.step,
        model: node.model.clone(),
        after: None,
        after_step: None,
        statements: statements.into_iter().map(listed).collect(),
    }
}

/// The checks for new children a chunk of `node` may make: where its children are set-based, the
/// one of the transaction they share with it and, when different, the one of a chunk whose
/// children did not fit that transaction and went first.
fn children_checks(step: &StepSql<'_>, node: &PlanNode, keys: &Param) -> Vec<Statement> {
    let together = node.has_only_set_based_children();
    let shared = step.new_children_check(together, keys);
    let alone = if together { step.new_children_check(false, keys) } else { None };
    let alone = alone.filter(|alone| shared.as_ref() != Some(alone));
    shared.into_iter().chain(alone).collect()
}

/// The statements that delete (or nullify) every row whose key (`by_key`) or relation column is
/// in `keys`, as the executor runs them (see [`StepSql::row_data_from_table`]).
fn deleting_all(step: &StepSql<'_>, keys: Param, by_key: bool) -> Vec<Statement> {
    let Some(returning) = step.row_data_from_table() else {
        return writing(step, step.sql.delete_matching(keys, step.returning.as_ref(), by_key));
    };
    let tombstones = step.outbox.map(|target| step.sql.insert_tombstones(target, returning, keys.clone(), by_key));
    tombstones.into_iter().chain([step.sql.delete_matching(keys, None, by_key)]).collect()
}

/// `statement` with its tombstones, as the executor writes them: in the statement's own `WITH`
/// where the database can, else from the rows it returns (one JSON parameter).
fn writing(step: &StepSql<'_>, statement: Statement) -> Vec<Statement> {
    // Where the statement selects the rows first (MySQL), what then changes them by row key.
    let row_keys = || Param::Described("the selected rows' row keys (JSON)".into());
    let types = || column_types(step.sql.names.table(), &step.sql.row_key());
    if step.sql.returns_nullified {
        let (run, keys) =
            (Param::Described("the run's id".into()), Param::Described("the keys it returned (JSON)".into()));
        let by_row_key = step.sql.selects_nullified_first().then(|| step.sql.nullify_by_row_keys(row_keys(), &types()));
        let record = nullified::record_statement(step.sql.backend, run, &step.sql.node.model, keys);
        return [statement].into_iter().chain(by_row_key).chain([record]).collect();
    }
    if step.row_data().is_none() {
        return vec![statement];
    }
    if let Some(in_with) = step.deleting_in_with(&statement, false) {
        return vec![in_with];
    }
    let by_row_key = step
        .sql
        .selected_before_delete(step.returning.as_ref())
        .map(|_| step.sql.delete_by_row_keys(row_keys(), &types()));
    let tombstones = step.tombstones(Param::Described("the deleted rows' keys, shard keys and payloads (JSON)".into()));
    [statement].into_iter().chain(by_row_key).chain(tombstones).collect()
}

fn listed(statement: Statement) -> ListedStatement {
    let params = statement
        .params
        .iter()
        .map(|param| match param {
            Param::Described(what) => what.clone(),
            Param::Value(SqlValue::Integer(i)) => i.to_string(),
            Param::Value(SqlValue::Text(t)) => quote_literal(t),
            Param::Keys(Keys::Integers(list)) => format!("{list:?}"),
            Param::Keys(Keys::Texts(list)) => format!("{list:?}"),
            Param::Keys(keys @ (Keys::Untyped(_) | Keys::Tuples { .. })) => keys.json(),
        })
        .collect();
    ListedStatement { sql: statement.sql, params }
}
