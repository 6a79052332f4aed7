//! Exact row counts of a plan, counted in the database through each node's relation path:
//! a node's rows are those whose column holds the key of a row its parent would delete, down
//! from the root ids. Nothing is loaded into memory and nothing is changed.

use indexmap::IndexMap;
use serde::Serialize;

use crate::config::Config;
use crate::config::OnDelete;
use crate::db::Keys;
use crate::db::sql::{KeyType, Param, SqlBuilder, Statement};
use crate::db::{Backend, Database, DbError};
use crate::planner::{Plan, PlanNode};

use super::not_found;
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

/// Root rows picked by what they point at rather than by id: the rows whose `column` is not
/// NULL and holds a value that no row of `parent_table` has in `parent_key` (orphans).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dangling {
    /// The root table's relation column, as the config spells it.
    pub column: String,
    /// The parent's table, as the config spells it.
    pub parent_table: String,
    /// The parent's single-column key.
    pub parent_key: String,
}

/// Which root rows the counts start from.
enum Roots<'a> {
    /// Rows whose key is among the ids, bound as one list.
    Ids { key_type: KeyType, ids: Keys },
    /// Rows that dangle by any of these relations.
    Dangling(&'a [Dangling]),
}

/// What the count queries need besides the plan.
struct Counter<'a> {
    backend: &'static dyn Backend,
    config: &'a Config,
    schema: &'a Schema,
    roots: Roots<'a>,
}

/// The alias of the parent table in the anti-join of [`Dangling`] roots.
const DANGLING_PARENT: &str = "cascade_parent";

/// Counts every node of `plan` for the root rows `ids`.
pub async fn count(
    database: &Database,
    config: &Config,
    schema: &Schema,
    plan: &Plan,
    ids: &[String],
) -> Result<Counts, CountError> {
    let root = super::steps::node_sql(&plan.root, None, database.backend(), Some(schema));
    let ids = Keys::parse(&root.key_type, ids.to_vec()).map_err(|id| CountError::NotAnInteger {
        id,
        key: root.key().to_owned(),
        table: plan.root.table.clone(),
    })?;
    let found = database.fetch_texts(&root.select_roots(Param::Keys(ids.clone()), None)).await?;
    let not_found = not_found(&ids, &found, &root.key_type);
    let roots = Roots::Ids { key_type: root.key_type.clone(), ids };
    let counter = Counter { backend: database.backend(), config, schema, roots };
    count_from(database, config, plan, &counter, Counts { not_found, ..Counts::default() }).await
}

/// Counts every node of `plan` for the root rows that dangle by any of `dangling` (whose
/// relation column points at no parent row): what deleting those orphans, each with its own
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
    count_from(database, config, plan, &counter, Counts::default()).await
}

async fn count_from(
    database: &Database,
    config: &Config,
    plan: &Plan,
    counter: &Counter<'_>,
    mut counts: Counts,
) -> Result<Counts, CountError> {
    let mut paths: IndexMap<(String, OnDelete), Vec<Vec<&PlanNode>>> = IndexMap::new();
    for path in paths_of(&plan.root) {
        let node = *path.last().expect("a path ends at its node");
        let rows = database.fetch_count(&counter.count(std::slice::from_ref(&path), true)).await?;
        counts.rows.insert(node.step, rows);
        paths.entry((node.model.clone(), node.action)).or_default().push(path);
    }
    counts.rows.sort_keys();
    for ((model, action), model_paths) in &paths {
        // A row that is deleted is not also nullified.
        let deleted_paths = match action {
            OnDelete::Nullify => paths.get(&(model.clone(), OnDelete::Delete)).map_or(&[][..], Vec::as_slice),
            OnDelete::Delete => &[],
        };
        let rows = database.fetch_count(&counter.count_except(model_paths, deleted_paths)).await?;
        match action {
            OnDelete::Delete => counts.totals.insert(model.clone(), rows),
            OnDelete::Nullify => counts.nullify.insert(model.clone(), rows),
        };
    }
    if config.model(&plan.root.model).is_some_and(|m| m.status.is_some()) {
        let all = database.fetch_count(&counter.count(&[vec![&plan.root]], false)).await?;
        counts.skipped_by_status = all.saturating_sub(counts.totals.get(&plan.root.model).copied().unwrap_or(0));
    }
    Ok(counts)
}

/// Every root-to-node path of the tree, in execution order of the nodes.
fn paths_of(root: &PlanNode) -> Vec<Vec<&PlanNode>> {
    fn visit<'a>(node: &'a PlanNode, path: &mut Vec<&'a PlanNode>, out: &mut Vec<Vec<&'a PlanNode>>) {
        path.push(node);
        for child in &node.children {
            visit(child, path, out);
        }
        out.push(path.clone());
        path.pop();
    }
    let mut out = Vec::new();
    visit(root, &mut Vec::new(), &mut out);
    out
}

impl Counter<'_> {
    /// `SELECT COUNT(*)` of the rows of the last node of the paths (all of one model) reached by
    /// any of them, so a row reached twice counts once.
    fn count(&self, paths: &[Vec<&PlanNode>], with_status: bool) -> Statement {
        let node = paths[0].last().expect("a path ends at its node");
        let mut sql = SqlBuilder::new(self.backend);
        sql.push("SELECT COUNT(*) FROM ").push(&self.names(node).quoted_table()).push(" WHERE ");
        self.any_path(&mut sql, paths, with_status);
        sql.finish()
    }

    /// Like `count`, leaving out the rows that any of `except` reaches.
    fn count_except(&self, paths: &[Vec<&PlanNode>], except: &[Vec<&PlanNode>]) -> Statement {
        if except.is_empty() {
            return self.count(paths, true);
        }
        let node = paths[0].last().expect("a path ends at its node");
        let mut sql = SqlBuilder::new(self.backend);
        sql.push("SELECT COUNT(*) FROM ").push(&self.names(node).quoted_table()).push(" WHERE (");
        self.any_path(&mut sql, paths, true);
        // COALESCE: a NULL relation column reaches nothing, so it must not hide the row.
        sql.push(") AND NOT COALESCE((");
        self.any_path(&mut sql, except, true);
        sql.push("), FALSE)");
        sql.finish()
    }

    fn any_path(&self, sql: &mut SqlBuilder, paths: &[Vec<&PlanNode>], with_status: bool) {
        for (index, path) in paths.iter().enumerate() {
            if index > 0 {
                sql.push(" OR ");
            }
            sql.push("(");
            self.predicate(sql, path, with_status);
            sql.push(")");
        }
    }

    /// The condition on the last node's rows: its column among the keys of the parent's rows,
    /// recursively, down to the root's key among the ids.
    fn predicate(&self, sql: &mut SqlBuilder, path: &[&PlanNode], with_status: bool) {
        let (node, parents) = path.split_last().expect("a path ends at its node");
        let Some(parent) = parents.last() else {
            self.root_predicate(sql, node, with_status);
            return;
        };
        let column = self.names(node).column(node.column.as_deref().expect("a child node has a relation column"));
        let parent_names = self.names(parent);
        sql.identifier(&column)
            .push(" IN (SELECT ")
            .identifier(&parent_names.column(parent.key.as_deref().unwrap_or("id")));
        sql.push(" FROM ").push(&parent_names.quoted_table()).push(" WHERE ");
        self.predicate(sql, parents, with_status);
        sql.push(")");
    }

    fn root_predicate(&self, sql: &mut SqlBuilder, root: &PlanNode, with_status: bool) {
        let names = self.names(root);
        match &self.roots {
            Roots::Ids { key_type, ids } => {
                sql.key_list(&names.column(root.key.as_deref().unwrap_or("id")), key_type, Param::Keys(ids.clone()));
            }
            Roots::Dangling(dangling) => {
                sql.push("(");
                for (index, relation) in dangling.iter().enumerate() {
                    if index > 0 {
                        sql.push(" OR ");
                    }
                    // The root table is the innermost unaliased one here, so its name qualifies
                    // the column inside the sub-select, whose table is aliased.
                    let column = names.column(&relation.column);
                    let parent = CatalogNames::of(Some(self.schema), &relation.parent_table);
                    sql.push("(").identifier(&column).push(" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ");
                    sql.push(&parent.quoted_table()).push(" AS ").identifier(DANGLING_PARENT).push(" WHERE ");
                    sql.identifier(DANGLING_PARENT).push(".").identifier(&parent.column(&relation.parent_key));
                    sql.push(" = ").push(&names.quoted_table()).push(".").identifier(&column).push("))");
                }
                sql.push(")");
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
