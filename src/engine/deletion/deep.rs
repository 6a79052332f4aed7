//! Deep trees in flat memory: a chain 100,000 levels deep would hold a frame per level. Only the
//! deepest [`KEPT_LEVELS`] to twice as many levels of a self-reference stay on the stack; the
//! levels above them are dropped, and rebuilt one by one from the database when the levels below
//! are done.
//!
//! A level's chunk is the `matched` keys of the level below it, so rebuilding needs only the keys
//! its own rows are found by: the parents of those rows, read back. They may be fewer than the
//! dropped level's (parents without children in this chunk): every level fetches again until
//! nothing under its keys is left, and the deepest level kept was found by exact keys, so a row
//! the rebuilt levels miss is found by a level above them, children first as ever.
//!
//! A loop of rows longer than the levels kept never shows on the tree path, so each time the
//! dropped levels of a run double, the rows of the deepest level dropped are walked up to see
//! whether one of them is its own ancestor.

use super::{DeleteError, Deletion, Frame, State, enter_tree};
use crate::db::Keys;
use crate::db::sql::Param;
use crate::engine::table_keys;

/// Levels of one self-reference kept on the stack below the dropped ones, at least: loops of rows
/// up to about this long are found on the tree path and deleted together.
pub(super) const KEPT_LEVELS: usize = 1_000;

impl<'a> Deletion<'a> {
    /// A child frame was just pushed: where a self-reference's levels run [`KEPT_LEVELS`] deeper
    /// than the kept ones, drops that many above the kept ones at once (one move of the stack per
    /// so many levels), noting them on the level below.
    pub(super) async fn drop_deep_levels(&mut self) -> Result<(), DeleteError> {
        let Some(first) = self.stack.len().checked_sub(2 * KEPT_LEVELS + 1) else { return Ok(()) };
        let end = first + KEPT_LEVELS;
        let step = self.stack[end].work.node.step;
        let droppable = |frame: &Frame<'_>| {
            frame.work.node.recursive
                && frame.work.node.step == step
                && frame.loop_rows.is_empty()
                && matches!(frame.state, State::Children { .. })
        };
        if !self.stack[first..end].iter().all(droppable) {
            return Ok(());
        }
        let mut dropped = 0;
        let mut deepest = None;
        for frame in self.stack.drain(first..end) {
            let State::Children { keys, .. } = frame.state else { unreachable!("checked above") };
            self.tree_path.leave(&frame.work.node.table, keys.texts());
            dropped += frame.dropped_above + 1;
            deepest = Some((frame.work.step.clone(), frame.work.node, keys));
        }
        let below = &mut self.stack[first];
        let before = below.dropped_above;
        below.dropped_above += dropped;
        // Each time the dropped levels' count doubles, a loop of rows longer than the kept levels
        // is looked for above the deepest level dropped.
        let (Some((step, node, keys)), true) = (deepest, before.leading_zeros() != below.dropped_above.leading_zeros())
        else {
            return Ok(());
        };
        // A loop through them is at most as long as the levels above them.
        let levels = self.stack.len() as u64 + self.stack[first].dropped_above;
        self.settle_shared(true).await?;
        let found = self.read_texts(&step.sql.loop_above(Param::Keys(keys.clone()), levels)).await?;
        if crate::db::first_text(&found) == Some("1") {
            let key = keys.texts().into_iter().next().unwrap_or_default();
            return Err(DeleteError::RowLoop { model: node.model.clone(), key });
        }
        Ok(())
    }

    /// Pops the top frame, whose rows are done; where levels were dropped above it, the nearest
    /// comes back, to be rebuilt ([`State::Rebuild`]) around the keys the popped one was found by.
    pub(super) fn pop_frame(&mut self) {
        let Some(done) = self.stack.pop() else { return };
        if done.dropped_above == 0 {
            return;
        }
        let mut level = self.frame_of(done.work.node, None, done.matched.clone());
        level.dropped_above = done.dropped_above - 1;
        level.state = State::Rebuild { keys: done.matched };
        self.stack.push(level);
    }

    /// The top frame is a dropped level coming back with its chunk `keys`: reads the keys its
    /// rows are found by (their parents) and goes on with its children after the recursive one.
    pub(super) async fn rebuild_level(&mut self, keys: Keys) -> Result<(), DeleteError> {
        let work = self.top().work.clone();
        let statement = work.step.sql.parents_of(Param::Keys(keys.clone()));
        self.settle_shared(true).await?;
        let read = self.read_texts(&statement).await?;
        let parents = crate::db::json_array_texts(&read)?;
        let others = read.first().and_then(|row| row.get(1)).is_none_or(|others| others.as_deref() != Some("0"));
        let matched = table_keys(&work.node.table, &work.step.sql.key_types, parents)?;
        enter_tree(&mut self.tree_path, &work, &keys)?;
        // Without other children of those parents, nothing is left to fetch once the chunk goes
        // (a row left out of fetches, of a loop, is not counted there: then it fetches).
        let last_chunk = !others && !self.in_loops.contains_key(&work.node.table);
        let recursive = work.children.iter().position(|child| child.step == work.node.step);
        let frame = self.top_mut();
        (frame.matched, frame.last_chunk) = (matched, last_chunk);
        frame.state = State::Children { keys, next: recursive.map_or(0, |index| index + 1), attempts: 0 };
        Ok(())
    }
}
