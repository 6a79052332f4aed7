//! The transactions of a deletion: a chunk of a per_row node (alone, or together with its
//! set-based children's rows), a set-based statement, and the children's rows under a chunk,
//! each with the checks that keep a child inserted meanwhile from being orphaned.

use std::time::Instant;

use super::{DeleteError, Deletion, NodeWork, Outcome, Together};
use crate::audit;
use crate::db::Keys;
use crate::db::sql::Param;
use crate::db::{DbError, Failure, Transaction, first_text};
use crate::engine::sql::children_present;
use crate::engine::steps::{StepSql, node_sql};
use crate::planner::PlanNode;

/// The fewest children a chunk has for [`Deletion::absent_children`] to ask which have rows.
const PROBED_CHILDREN: usize = 4;

impl<'a> Deletion<'a> {
    /// Which children of the top frame's chunk `keys` have no rows under it (by index in its
    /// `children`), asked in one statement where the frame has at least [`PROBED_CHILDREN`]
    /// children and is no tree's level: an empty child then costs no statement of its own, and a
    /// set-based one no transaction. A row written under the chunk after this read is found by
    /// the check for new children before the chunk goes, as one written after its own child's
    /// drain would be. None where it does not ask.
    pub(super) async fn absent_children(&mut self, keys: &Keys) -> Result<Vec<bool>, DeleteError> {
        let work = &self.top().work;
        let (node, children) = (work.node, work.children);
        if work.in_tree || children.len() < PROBED_CHILDREN {
            return Ok(Vec::new());
        }
        let backend = self.database.backend();
        let probed: Vec<_> =
            children.iter().map(|child| node_sql(child, Some(node), backend, Some(self.schema))).collect();
        self.settle_shared(false).await?;
        let probe = children_present(&probed, &Param::Keys(keys.clone()));
        let rows = self.database.fetch_key_texts(&probe, self.unpartitioned).await?;
        let present = rows.into_iter().next().unwrap_or_default();
        Ok(present.into_iter().map(|present| present.as_deref() == Some("0")).collect())
    }

    /// Deletes the chunk `keys` (of a fetch that asked for `limit` rows) of `frame` and its
    /// set-based children's rows in one transaction, when the children's rows fit one chunk of
    /// theirs.
    pub(super) async fn delete_together(
        &mut self,
        frame: &NodeWork<'a>,
        limit: u64,
        keys: &Keys,
    ) -> Result<Together<'a>, DeleteError> {
        let started = Instant::now();
        let mut transaction = self.begin().await?;
        let mut steps = Vec::new();
        for (child, step) in frame.set_based_children_going(false) {
            let child_rows = self.delete_children(&mut transaction, child, step, keys).await?;
            steps.push((*child, child_rows.rows));
            if child_rows.some_left {
                let (began, steps) = self.commit(transaction, &steps, started).await?;
                self.record_transaction(began, &steps);
                self.sizes.overflowed(frame.node, limit, child_rows.counted, self.sizes.in_parent(child));
                return Ok(Together::ChildrenLeft(steps));
            }
        }
        if self.children_exist(&mut transaction, frame, true, keys).await? {
            self.roll_back(transaction).await?;
            return Ok(Together::ChildrenAppeared);
        }
        steps.extend(self.count_database_children(&mut transaction, &frame.step, keys).await?);
        let deleted = match self.delete_all(&mut transaction, frame.node, &frame.step, keys, true).await {
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                self.roll_back(transaction).await?;
                if !self.database.backend().tuning().concurrent_writers {
                    return Err(DeleteError::Refused { model: frame.node.model.clone(), reason: error.to_string() });
                }
                return Ok(Together::ChildrenAppeared);
            }
            Err(DeleteError::StillReferenced { .. }) => {
                self.roll_back(transaction).await?;
                return Ok(Together::ChildrenAppeared);
            }
            result => result?,
        };
        if let Some((child, child_rows)) = self.delete_children_after(&mut transaction, frame, keys, &mut steps).await?
        {
            // Too many to go with the chunk: they go first, chunk by chunk, as elsewhere.
            self.roll_back(transaction).await?;
            self.sizes.overflowed(frame.node, limit, child_rows.counted, self.sizes.in_parent(child));
            return Ok(Together::ChildrenLeft(Vec::new()));
        }
        self.advance_checkpoint(&mut transaction, frame.node, keys).await?;
        for (child, rows) in &steps {
            let fitting = self.sizes.in_parent(child);
            self.sizes.children_fit(frame.node, keys.len() as u64, *rows, fitting);
        }
        steps.push((frame.node, deleted));
        let (began, steps) = self.commit(transaction, &steps, started).await?;
        self.sizes.record(frame.node, limit, keys.len() as u64, started.elapsed());
        self.record_transaction(began, &steps);
        Ok(Together::Done(steps))
    }

    /// Deletes the rows of `child` under the chunk `keys`: all of them where a count found they
    /// fit one chunk of the child's (see [`crate::db::Tuning::limited_delete_is_slow`]), else up
    /// to one chunk.
    pub(super) async fn delete_children(
        &mut self,
        transaction: &mut Transaction,
        child: &PlanNode,
        step: &StepSql<'_>,
        keys: &Keys,
    ) -> Result<ChildRows, DeleteError> {
        let limit = self.sizes.in_parent(child);
        let matched = || Param::Keys(keys.clone());
        let counted = if self.database.backend().tuning().limited_delete_is_slow {
            let counted = transaction.fetch_texts(&step.sql.count_up_to(matched(), limit + 1)).await?;
            first_text(&counted).and_then(|n| n.parse::<u64>().ok())
        } else {
            None
        };
        let deleted = match counted {
            Some(rows) if rows <= limit => self.delete_all(transaction, child, step, keys, false).await,
            _ => {
                let statement = step.sql.set_based_chunk(matched(), step.returning.as_ref(), limit);
                self.run_write(transaction, &statement, child, step).await
            }
        };
        let rows = match deleted {
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                return Err(DeleteError::Refused { model: child.model.clone(), reason: error.to_string() });
            }
            result => result?,
        };
        Ok(ChildRows { rows, counted, some_left: counted.map_or(rows >= limit, |counted| counted > limit) })
    }

    /// Deletes, in `transaction` right after the chunk `keys` of `frame`, the rows of each child
    /// that goes after it (see [`StepSql::child_goes_after`]), adding them to `steps`; the child
    /// whose rows were more than one chunk of its own, after which the transaction is to be
    /// rolled back.
    pub(super) async fn delete_children_after(
        &mut self,
        transaction: &mut Transaction,
        frame: &NodeWork<'a>,
        keys: &Keys,
        steps: &mut Vec<(&'a PlanNode, u64)>,
    ) -> Result<Option<(&'a PlanNode, ChildRows)>, DeleteError> {
        for (child, step) in frame.set_based_children_going(true) {
            let child_rows = self.delete_children(transaction, child, step, keys).await?;
            if child_rows.some_left {
                return Ok(Some((child, child_rows)));
            }
            steps.push((*child, child_rows.rows));
        }
        Ok(None)
    }

    /// Whether rows of `frame`'s children that its transaction checks (see
    /// [`StepSql::new_children_check`]) reference the chunk `keys`.
    pub(super) async fn children_exist(
        &self,
        transaction: &mut Transaction,
        frame: &NodeWork<'a>,
        together: bool,
        keys: &Keys,
    ) -> Result<bool, DeleteError> {
        let Some(check) = frame.step.new_children_check(together, &Param::Keys(keys.clone())) else {
            return Ok(false);
        };
        let exists = transaction.fetch_texts(&check).await?;
        Ok(first_text(&exists) == Some("1"))
    }

    /// The rows of each child the database deletes itself (`on_delete = "database"`) of `step`
    /// that reference the chunk `keys`, counted in the chunk's transaction right before its delete:
    /// what the delete takes with it, so a run reports what its plan counted.
    pub(super) async fn count_database_children(
        &self,
        transaction: &mut Transaction,
        step: &StepSql<'a>,
        keys: &Keys,
    ) -> Result<Vec<(&'a PlanNode, u64)>, DeleteError> {
        let mut counted = Vec::new();
        for (node, count) in step.database_counts(&Param::Keys(keys.clone())) {
            let rows = transaction.fetch_texts(&count).await?;
            counted.push((node, first_text(&rows).and_then(|n| n.parse().ok()).unwrap_or(0)));
        }
        Ok(counted)
    }

    /// Deletes the chunk `keys` (of a fetch that asked for `limit` rows) of `frame`, then the rows
    /// of its children that go after it, unless children appeared under it.
    pub(super) async fn delete_chunk(
        &mut self,
        frame: &NodeWork<'a>,
        limit: u64,
        keys: &Keys,
    ) -> Result<Outcome<'a>, DeleteError> {
        let started = Instant::now();
        let step = &frame.step;
        let mut transaction = self.begin().await?;
        // Where writers are concurrent, a child that a foreign key ties to the chunk makes the
        // delete itself fail, and one that goes after the chunk's rows goes with them: the check
        // looks only at the others.
        if self.children_exist(&mut transaction, frame, false, keys).await? {
            self.roll_back(transaction).await?;
            return Ok(Outcome::ChildrenAppeared { refused: None });
        }
        let mut steps = self.count_database_children(&mut transaction, &frame.step, keys).await?;
        let deleted = match self.delete_all(&mut transaction, frame.node, step, keys, true).await {
            Ok(rows) => rows,
            // A child inserted after the check: the database's foreign key caught it.
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                self.roll_back(transaction).await?;
                // Without concurrent writers, no child was inserted meanwhile: the reference is
                // undeclared.
                if !self.database.backend().tuning().concurrent_writers {
                    return Err(DeleteError::Refused { model: frame.node.model.clone(), reason: error.to_string() });
                }
                return Ok(Outcome::ChildrenAppeared { refused: Some(error.to_string()) });
            }
            Err(DeleteError::StillReferenced { reason, .. }) => {
                self.roll_back(transaction).await?;
                return Ok(Outcome::ChildrenAppeared { refused: Some(reason) });
            }
            Err(error) => return Err(error),
        };
        // More rows than a chunk of theirs, written since they went first.
        if self.delete_children_after(&mut transaction, frame, keys, &mut steps).await?.is_some() {
            self.roll_back(transaction).await?;
            return Ok(Outcome::ChildrenAppeared { refused: None });
        }
        self.advance_checkpoint(&mut transaction, frame.node, keys).await?;
        steps.push((frame.node, deleted));
        if self.may_share(frame.in_tree, started) {
            self.sizes.record(frame.node, limit, keys.len() as u64, started.elapsed());
            self.share(transaction, steps, started);
            return Ok(Outcome::Shared);
        }
        let (began, steps) = self.commit(transaction, &steps, started).await?;
        self.record_transaction(began, &steps);
        self.sizes.record(frame.node, limit, keys.len() as u64, started.elapsed());
        Ok(Outcome::Done(steps))
    }

    /// Whether a set-based statement of `frame` under the keys `matched` that touched `rows` of at
    /// most `limit` was its last: it came back short, or at the root, matched by a unique key, it
    /// deleted a row for every root id (without this, a chunk of exactly `limit` roots took a
    /// second, empty transaction).
    pub(super) fn is_last_set_based(&self, frame: &NodeWork<'a>, matched: &Keys, limit: u64, rows: u64) -> bool {
        rows < limit || (std::ptr::eq(frame.node, self.root) && frame.step.key_unique && rows >= matched.len() as u64)
    }

    /// One set-based statement of up to `limit` rows of `frame` under the keys `matched`: the rows
    /// it touched, and those of every chunk its transaction committed, unless it was left open for
    /// the next chunk (where the rows are children of a tree's, `under_tree`).
    pub(super) async fn set_based_chunk(
        &mut self,
        frame: &NodeWork<'a>,
        matched: &Keys,
        limit: u64,
        under_tree: bool,
    ) -> Result<(u64, Option<Vec<(&'a PlanNode, u64)>>), DeleteError> {
        let started = Instant::now();
        let statement =
            frame.step.sql.set_based_chunk(Param::Keys(matched.clone()), frame.step.returning.as_ref(), limit);
        let mut transaction = self.begin().await?;
        let rows = match self.run_write(&mut transaction, &statement, frame.node, &frame.step).await {
            Ok(rows) => rows,
            Err(DeleteError::Database(error)) if self.is_foreign_key_violation(&error) => {
                self.roll_back(transaction).await?;
                return Err(DeleteError::Refused { model: frame.node.model.clone(), reason: error.to_string() });
            }
            Err(error) => return Err(error),
        };
        // The frame's last statement: every root it matched is gone.
        if self.is_last_set_based(frame, matched, limit, rows) {
            self.advance_checkpoint(&mut transaction, frame.node, matched).await?;
        }
        if self.may_share(under_tree, started) {
            if rows > 0 {
                self.sizes.record(frame.node, limit, rows, started.elapsed());
            }
            self.share(transaction, vec![(frame.node, rows)], started);
            return Ok((rows, None));
        }
        let (began, steps) = self.commit(transaction, &[(frame.node, rows)], started).await?;
        if steps.iter().any(|(_, rows)| *rows > 0) {
            self.record_transaction(began, &steps);
        }
        if rows > 0 {
            self.sizes.record(frame.node, limit, rows, started.elapsed());
        }
        Ok((rows, Some(steps)))
    }

    pub(super) fn is_foreign_key_violation(&self, error: &DbError) -> bool {
        self.database.classify(error) == Failure::ForeignKeyViolation
    }

    /// Advances the caller's checkpoint to the last of `keys` when they are root rows just
    /// deleted in `transaction`.
    pub(super) async fn advance_checkpoint(
        &self,
        transaction: &mut Transaction,
        node: &PlanNode,
        keys: &Keys,
    ) -> Result<(), DeleteError> {
        let (Some(batch), true) = (&self.options.within, std::ptr::eq(node, self.root)) else { return Ok(()) };
        match keys.texts().last() {
            Some(last) => Ok(audit::checkpoint::save(transaction, &batch.checkpoint, last).await?),
            None => Ok(()),
        }
    }
}

/// What deleting one child's rows under a chunk did.
pub(super) struct ChildRows {
    rows: u64,
    /// The rows counted before, where they were.
    counted: Option<u64>,
    /// Whether rows of the child may be left under the chunk.
    some_left: bool,
}
