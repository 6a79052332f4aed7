//! Levels of a tree in one transaction. A chain deletes one row per level, and a commit per row
//! was most of its time: a chunk of a tree's rows whose transaction is still young leaves it open
//! for the chunk of the level above, up to a quarter of the target time (`target_chunk_ms`), so a deep
//! chain commits about as often as any other deletion of as many rows.
//!
//! Until it commits, the deletion reads through it: it sees its own deletes, and on SQLite it
//! holds the one write lock. A rollback undoes every level that shared it; their rows are found
//! again by the levels above, as a child inserted meanwhile would be, and no transaction is shared
//! again until one has committed.

use std::time::{Duration, Instant};

use super::{DeleteError, Deletion};
use crate::config::Config;
use crate::db::TextRows;
use crate::db::Transaction;
use crate::db::sql::Statement;
use crate::planner::PlanNode;

/// How long a transaction is shared at most before the next chunk: a quarter of the target, so
/// that with the chunk after it, and the reads between, it stays well within the target.
fn share_for(config: &Config) -> Duration {
    config.settings.target_chunk() / 4
}

/// A transaction left open for the next level's chunk, with the rows its chunks wrote.
pub(super) struct Shared<'a> {
    transaction: Transaction,
    started: Instant,
    steps: Vec<(&'a PlanNode, u64)>,
}

/// What the open transaction carries while a chunk works in it: when it began, and the rows of
/// the chunks before.
pub(super) type Carried<'a> = (Instant, Vec<(&'a PlanNode, u64)>);

impl<'a> Deletion<'a> {
    /// Whether a chunk begun at `started` leaves its transaction open: a chunk of a tree's rows
    /// or of their children (`in_tree`), while the transaction is younger than a quarter of the target
    /// time.
    pub(super) fn may_share(&self, in_tree: bool, started: Instant) -> bool {
        let began = self.carried.as_ref().map_or(started, |(began, _)| *began);
        in_tree && !self.sharing_paused && began.elapsed() < share_for(self.config)
    }

    /// Leaves `transaction` open, with the rows of `steps`, for the next chunk.
    pub(super) fn share(&mut self, transaction: Transaction, steps: Vec<(&'a PlanNode, u64)>, started: Instant) {
        let (started, mut all) = self.carried.take().unwrap_or((started, Vec::new()));
        all.extend(steps);
        self.shared = Some(Shared { transaction, started, steps: all });
    }

    /// The open transaction, if a chunk left one, with what it carries.
    pub(super) fn take_shared(&mut self) -> Option<Transaction> {
        let shared = self.shared.take()?;
        self.carried = Some((shared.started, shared.steps));
        Some(shared.transaction)
    }

    /// Commits the open transaction; the rows it committed, if there was one.
    pub(super) async fn commit_shared(&mut self) -> Result<Option<Vec<(&'a PlanNode, u64)>>, DeleteError> {
        let Some(transaction) = self.take_shared() else { return Ok(None) };
        let (started, steps) = self.commit(transaction, &[], Instant::now()).await?;
        self.record_transaction(started, &steps);
        Ok(Some(steps))
    }

    /// Rolls back an open transaction after an error: nothing it holds was counted.
    pub(super) async fn abandon_shared(&mut self) {
        if let Some(transaction) = self.take_shared() {
            self.roll_back(transaction).await.ok();
        }
    }

    /// Rolls back `transaction`, and with it the chunks that shared it.
    pub(super) async fn roll_back(&mut self, transaction: Transaction) -> Result<(), DeleteError> {
        self.lost_shared();
        Ok(transaction.rollback().await?)
    }

    /// The chunks carried by a transaction that will not commit are undone: share none until
    /// one commits.
    pub(super) fn lost_shared(&mut self) {
        if self.carried.take().is_some() {
            self.sharing_paused = true;
        }
    }

    /// Before a read: commits the open transaction unless the read is a tree level's own
    /// (`level`: its rows, its parents, the levels below it, all by key) and the transaction is
    /// younger than a quarter of the target time. Another read (a lookup by a relation's column, which a
    /// table's dead index entries can slow down) runs outside: no transaction waits on it.
    pub(super) async fn settle_shared(&mut self, level: bool) -> Result<(), DeleteError> {
        let Some(shared) = &self.shared else { return Ok(()) };
        if level && shared.started.elapsed() < share_for(self.config) {
            return Ok(());
        }
        if let Some(steps) = self.commit_shared().await? {
            self.charge_rate_limits(&steps).await;
        }
        Ok(())
    }

    /// A read of the deletion's: through the open transaction, if a chunk left one.
    pub(super) async fn read_array(&mut self, statement: &Statement) -> Result<Vec<String>, DeleteError> {
        Ok(match &mut self.shared {
            Some(shared) => shared.transaction.fetch_array(statement).await?,
            None => self.database.fetch_array(statement).await?,
        })
    }

    /// [`Self::read_array`] for rows of texts.
    pub(super) async fn read_texts(&mut self, statement: &Statement) -> Result<TextRows, DeleteError> {
        Ok(match &mut self.shared {
            Some(shared) => shared.transaction.fetch_texts(statement).await?,
            None => self.database.fetch_texts(statement).await?,
        })
    }
}
