//! Rows that reference each other in a loop (a store's manager works at the store; a row's
//! parent's parent is the row): no order of children first deletes them, so they go together,
//! in one transaction with the chunk of the first of them on the path, once everything else
//! below them is gone.
//!
//! The tree path's count ([`super::tree`]) tells that a loop is there; the rows that form it are
//! then read from the database: which row of the open chunks references which, by the plan's
//! relations between recursive models, whose strongly connected rows are the loop. The stack is
//! unwound to the first chunk holding one of them; every fetch leaves the loop's rows out from
//! then on, their other children are deleted as any chunk's are, and the chunk's delete takes
//! them all: in one statement where the database checks its keys at the end of each statement
//! (PostgreSQL), with the checks deferred to the commit where it can defer them (SQLite).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use petgraph::graphmap::DiGraphMap;

use super::{DeleteError, Deletion, NodeWork, Outcome, State, chunk_keys};
use crate::db::Keys;
use crate::db::sql::Param;
use crate::engine::sql::{NodeSql, delete_together};
use crate::engine::steps::{StepSql, node_sql};
use crate::engine::table_keys;
use crate::planner::PlanNode;

/// Rows of a loop, of one plan node, that go with the chunk of the frame that holds them.
#[derive(Clone)]
pub(super) struct LoopRows<'a> {
    pub node: &'a PlanNode,
    pub step: Arc<StepSql<'a>>,
    pub keys: Keys,
}

/// A chunk on the path: the node, its statements, its keys, and where on the stack it is (the
/// top frame's fetched chunk is one above the stack).
struct OpenChunk<'a> {
    level: usize,
    node: &'a PlanNode,
    step: Arc<StepSql<'a>>,
    keys: Vec<String>,
}

impl<'a> Deletion<'a> {
    /// The tree path counted a loop when the top frame fetched `fetched`: finds its rows and
    /// attaches them to the first chunk on the path that holds one of them. `false` when no loop
    /// of rows is among the open chunks (then the caller reports one).
    pub(super) async fn resolve_loop(&mut self, fetched: &Keys) -> Result<bool, DeleteError> {
        // Its reads see what the levels sharing an open transaction deleted: it commits first.
        if let Some(steps) = self.commit_shared().await? {
            self.charge_rate_limits(&steps).await;
        }
        let top = self.stack.len() - 1;
        let mut chunks: Vec<OpenChunk<'a>> = Vec::new();
        for (level, frame) in self.stack.iter().enumerate() {
            let keys = if level == top { Some(fetched) } else { chunk_keys(frame) };
            if let (true, Some(keys)) = (frame.work.in_tree, keys) {
                chunks.push(OpenChunk {
                    level,
                    node: frame.work.node,
                    step: frame.work.step.clone(),
                    keys: keys.texts(),
                });
            }
        }
        let members = self.loop_members(&chunks).await?;
        let is_member = |table: &str, key: &str| members.contains(&(table.to_owned(), key.to_owned()));
        let Some(first) = chunks.iter().find(|chunk| chunk.keys.iter().any(|key| is_member(&chunk.node.table, key)))
        else {
            return Ok(false);
        };
        if first.level == top {
            return Ok(false);
        }
        let level = first.level;
        // The members outside that chunk, by the node of the chunk each is first found in.
        let mut groups: Vec<(&'a PlanNode, Arc<StepSql<'a>>, Vec<String>)> = Vec::new();
        let mut placed: Vec<(&str, &str)> =
            first.keys.iter().map(|key| (first.node.table.as_str(), key.as_str())).collect();
        for chunk in &chunks {
            for key in &chunk.keys {
                let row = (chunk.node.table.as_str(), key.as_str());
                if !is_member(&chunk.node.table, key) || placed.contains(&row) {
                    continue;
                }
                placed.push(row);
                match groups.iter_mut().find(|(node, ..)| std::ptr::eq(*node, chunk.node)) {
                    Some((.., keys)) => keys.push(key.clone()),
                    None => groups.push((chunk.node, chunk.step.clone(), vec![key.clone()])),
                }
            }
        }
        for (table, key) in &members {
            self.in_loops.entry(table.to_string()).or_default().push(key.to_string());
        }
        // Unwind to that chunk: whatever the frames above it found is found again.
        self.tree_path.leave(&self.stack[top].work.node.table, fetched.texts());
        while self.stack.len() > level + 1 {
            let frame = self.stack.pop().expect("a frame above the loop's first chunk");
            if let (true, Some(keys)) = (frame.work.in_tree, chunk_keys(&frame)) {
                self.tree_path.leave(&frame.work.node.table, keys.texts());
            }
        }
        let frame = self.stack.last_mut().expect("the loop's first chunk");
        for (node, step, keys) in groups {
            let keys = table_keys(&node.table, &step.sql.key_types, keys)?;
            frame.loop_rows.push(LoopRows { node, step, keys });
        }
        let keys = chunk_keys(frame).expect("the loop's first chunk is open").clone();
        frame.state = State::Children { keys, next: 0, attempts: 0 };
        Ok(true)
    }

    /// The top frame's chunk `keys` could not go because rows still reference it: where a frame
    /// below holds loop rows, those are what is left (every fetch leaves them out), so the chunk
    /// waits for them, attached to that frame as they are, and goes with them. Whether it did.
    pub(super) fn postpone_to_loop(&mut self, keys: &Keys) -> bool {
        let top = self.stack.len() - 1;
        if !self.stack[top].loop_rows.is_empty() {
            return false;
        }
        let Some(owner) = self.stack[..top].iter().rposition(|frame| !frame.loop_rows.is_empty()) else {
            return false;
        };
        let (node, step) = (self.stack[top].work.node, self.stack[top].work.step.clone());
        self.in_loops.entry(node.table.clone()).or_default().extend(keys.texts());
        self.stack[owner].loop_rows.push(LoopRows { node, step, keys: keys.clone() });
        true
    }

    /// The rows of `chunks` that reference each other in a loop, as (table, key).
    async fn loop_members(&self, chunks: &[OpenChunk<'a>]) -> Result<HashSet<(String, String)>, DeleteError> {
        // Each row once, numbered, and the keys of each table.
        let mut rows: HashMap<(String, String), usize> = HashMap::new();
        let mut by_table: HashMap<&str, Vec<String>> = HashMap::new();
        for chunk in chunks {
            for key in &chunk.keys {
                let next = rows.len();
                if let Entry::Vacant(vacant) = rows.entry((chunk.node.table.clone(), key.clone())) {
                    vacant.insert(next);
                    by_table.entry(chunk.node.table.as_str()).or_default().push(key.clone());
                }
            }
        }
        let mut graph: DiGraphMap<usize, ()> = DiGraphMap::new();
        let backend = self.database.backend();
        for (child, parent) in &self.loop_relations {
            let (Some(child_keys), Some(parent_keys)) =
                (by_table.get(child.table.as_str()), by_table.get(parent.table.as_str()))
            else {
                continue;
            };
            let child_sql = node_sql(child, Some(parent), backend, Some(self.schema));
            let parent_sql = node_sql(parent, None, backend, Some(self.schema));
            let child_keys = table_keys(&child.table, &child_sql.key_types, child_keys.clone())?;
            let parent_keys = table_keys(&parent.table, &parent_sql.key_types, parent_keys.clone())?;
            let statement = child_sql.references_among(&parent_sql, Param::Keys(child_keys), Param::Keys(parent_keys));
            for pair in self.database.fetch_texts(&statement).await? {
                let [Some(key), Some(referenced)] = pair.as_slice() else { continue };
                // The database's own text of a key, read the way the chunks' keys were.
                let key = table_keys(&child.table, &child_sql.key_types, vec![key.clone()])?.texts().remove(0);
                let referenced =
                    table_keys(&parent.table, &parent_sql.key_types, vec![referenced.clone()])?.texts().remove(0);
                let (Some(from), Some(to)) =
                    (rows.get(&(child.table.clone(), key)), rows.get(&(parent.table.clone(), referenced)))
                else {
                    continue;
                };
                if from != to {
                    graph.add_edge(*from, *to, ());
                }
            }
        }
        let by_index: HashMap<usize, (String, String)> = rows.into_iter().map(|(row, index)| (index, row)).collect();
        Ok(petgraph::algo::kosaraju_scc(&graph)
            .into_iter()
            .filter(|component| component.len() > 1)
            .flatten()
            .map(|index| by_index[&index].clone())
            .collect())
    }

    /// Deletes the chunk `keys` of `frame` with the loop rows attached to it, in one transaction
    /// whose keys are checked once every row is gone.
    pub(super) async fn delete_loop(
        &mut self,
        frame: &NodeWork<'a>,
        loop_rows: &[LoopRows<'a>],
        keys: &Keys,
    ) -> Result<Outcome<'a>, DeleteError> {
        let started = Instant::now();
        // Each row once: a chunk that waited for the loop may hold a row of it too. The rows of
        // one model in one group, whichever of its nodes found them: a row the database deletes
        // with two of them is counted once.
        let mut seen: HashSet<(&str, String)> = HashSet::new();
        let mut by_model: Vec<(&'a PlanNode, &StepSql<'a>, Vec<String>)> = Vec::new();
        let attached = loop_rows.iter().map(|rows| (rows.node, rows.step.as_ref(), &rows.keys));
        for (node, step, keys) in std::iter::once((frame.node, frame.step.as_ref(), keys)).chain(attached) {
            let new = keys.texts().into_iter().filter(|key| seen.insert((node.table.as_str(), key.clone())));
            let same = |(other, other_step, _): &&mut (&PlanNode, &StepSql<'_>, Vec<String>)| {
                other.model == node.model && other.table == node.table && same_rows(other_step, step)
            };
            match by_model.iter_mut().find(same) {
                Some((.., all)) => all.extend(new),
                None => by_model.push((node, step, new.collect())),
            }
        }
        let mut groups: Vec<(&'a PlanNode, &StepSql<'a>, Keys)> = Vec::new();
        for (node, step, keys) in by_model.into_iter().filter(|(.., keys)| !keys.is_empty()) {
            groups.push((node, step, table_keys(&node.table, &step.sql.key_types, keys)?));
        }
        let tuning = self.database.backend().tuning();
        let mut transaction = self.begin().await?;
        let deleted = async {
            // Every row's tombstone and archive line first: a row the database's own cascade
            // removes while the others go (a loop's `ON DELETE CASCADE` key) is written too.
            let mut archived = Vec::new();
            for (node, step, keys) in &groups {
                let Some(returning) = step.row_data() else { continue };
                if let Some(lines) = self.read_row_data(&mut transaction, step, returning, keys, true).await? {
                    archived.push((*node, *step, lines));
                }
            }
            // What the database deletes with them (`on_delete = "database"`), counted first.
            let mut steps = Vec::new();
            for (_, step, keys) in &groups {
                steps.extend(self.count_database_children(&mut transaction, step, keys).await?);
            }
            // Without a data-modifying `WITH` (SQLite, MySQL), one delete after the other: SQLite
            // checks the keys at the commit; InnoDB row by row, so its checks are off for the
            // deletes and done by hand after them (`unchecked.rs`).
            if !tuning.deletes_in_with {
                if let Some(defer) = tuning.defer_foreign_keys {
                    transaction.execute_script(defer).await?;
                }
                // Counted before the deletes: a row that one table's delete cascades to is gone by
                // the time its own table's delete runs, and still counted.
                for (node, step, keys) in &groups {
                    steps.push((
                        *node,
                        transaction.fetch_count(&step.sql.count_roots(Param::Keys(keys.clone()))).await?,
                    ));
                }
                let (_, refused) = self.delete_groups(&mut transaction, &groups).await?;
                return Ok((steps, archived, refused));
            }
            let deletes: Vec<(&NodeSql<'_>, Param)> =
                groups.iter().map(|(_, step, keys)| (&step.sql, Param::Keys(keys.clone()))).collect();
            let statement = delete_together(self.database.backend(), deletes);
            let counts = transaction.fetch_texts(&statement).await?;
            let counts = counts.into_iter().next().unwrap_or_default();
            for ((node, ..), count) in groups.iter().zip(counts) {
                steps.push((*node, count.and_then(|count| count.parse().ok()).unwrap_or(0)));
            }
            Ok::<_, DeleteError>((steps, archived, None))
        }
        .await;
        let steps = match deleted {
            Ok((_, _, Some(refused))) => {
                self.roll_back(transaction).await?;
                return Ok(Outcome::ChildrenAppeared { refused: Some(refused) });
            }
            Ok((steps, archived, None)) => {
                // Archived once the deletes went through: a refused one leaves no lines behind.
                for (node, step, lines) in archived {
                    self.archive_lines(node, step, lines)?;
                }
                steps
            }
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                self.roll_back(transaction).await?;
                return Ok(Outcome::ChildrenAppeared { refused: Some(error.to_string()) });
            }
            Err(error) => return Err(error),
        };
        let (began, steps) = match self.commit(transaction, &steps, started).await {
            Ok(committed) => committed,
            // Deferred checks fail at the commit.
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                return Ok(Outcome::ChildrenAppeared { refused: Some(error.to_string()) });
            }
            Err(error) => return Err(error),
        };
        self.record_transaction(began, &steps);
        Ok(Outcome::Done(steps))
    }
}

/// Whether two steps delete rows alike: the same key, and the same children the database deletes
/// with them (so the rows of both may go in one group, by one of the steps).
fn same_rows(a: &StepSql<'_>, b: &StepSql<'_>) -> bool {
    let database_children = |step: &StepSql<'_>| -> Vec<String> {
        step.database_children.iter().map(|child| child.node.model.clone()).collect()
    };
    a.sql.key_columns() == b.sql.key_columns()
        && a.sql.key_types == b.sql.key_types
        && database_children(a) == database_children(b)
}
