//! The next chunk of a frame, fetched or read ahead.
//!
//! Levels of a self-reference read ahead: going down a chain one fetch per level was most of a
//! deep tree's time. Once a frame of a self-reference fetched its last chunk, of a few rows, the
//! levels below it come in one recursive query, each the rows the fetch of the frame below would find (when
//! they are fewer than its chunk), so those frames fetch nothing.
//!
//! A level read ahead is used only by the frame of the same step found by the same keys, and the
//! levels go when one is not: whatever they miss (a row written since) is what a fetch that
//! found fewer rows than it asked for misses too, and the parent's check or foreign key catches
//! it.

use std::collections::VecDeque;

use super::{DeleteError, Deletion, NodeWork};
use crate::db::Keys;
use crate::db::sql::Param;
use crate::engine::table_keys;

/// Levels read ahead at most at once.
const LEVELS: u64 = 1_000;
/// Rows read ahead at most at once.
const ROWS: u64 = 1_000;
/// Rows a chunk has at most for the levels below it to be read ahead: a chain's levels are a row
/// each, while the wide levels of a bushy tree are each a chunk's fetch anyway (reading them
/// ahead made a forest of threads a third slower).
const NARROW: usize = 16;

/// The levels read ahead below a chunk of one self-reference: the step, and each level's rows
/// with the keys the frame that finds them is found by.
#[derive(Default)]
pub(super) struct LevelsAhead {
    step: usize,
    levels: VecDeque<(Keys, Keys)>,
}

impl Deletion<'_> {
    /// The top frame's next chunk: read ahead, or fetched (and the levels below it read ahead
    /// where it is the last). `None` once nothing is left.
    pub(super) async fn next_keys(&mut self) -> Result<Option<Keys>, DeleteError> {
        let limit = self.sizes.of(self.top().work.node);
        self.top_mut().limit = limit;
        if let Some(keys) = self.level_ahead() {
            self.top_mut().last_chunk = true;
            return Ok((!keys.is_empty()).then_some(keys));
        }
        let (work, matched) = (self.top().work.clone(), self.top().matched.clone());
        self.settle_shared(work.step.sql.self_reference).await?;
        let (table, key_types) = (&work.node.table, &work.step.sql.key_types);
        let excluded = match self.in_loops.get(table) {
            Some(keys) => Some(Param::Keys(table_keys(table, key_types, keys.clone())?)),
            None => None,
        };
        let statement = work.step.sql.select_chunk(Param::Keys(matched), work.step.status, limit, excluded);
        let keys = self.read_array(&statement).await?;
        if keys.is_empty() {
            return Ok(None);
        }
        let last_chunk = (keys.len() as u64) < limit;
        self.top_mut().last_chunk = last_chunk;
        let keys = table_keys(table, key_types, keys)?;
        if last_chunk && keys.len() <= NARROW {
            self.read_levels_ahead(&work, &keys).await?;
        }
        Ok(Some(keys))
    }

    /// The rows the top frame's fetch would find, where they were read ahead: its whole chunk.
    fn level_ahead(&mut self) -> Option<Keys> {
        let frame = self.stack.last()?;
        if frame.work.node.step != self.ahead.step {
            return None;
        }
        match self.ahead.levels.pop_front() {
            Some((matched, rows)) if matched == frame.matched && (rows.len() as u64) < frame.limit => Some(rows),
            _ => {
                self.ahead.levels.clear();
                None
            }
        }
    }

    /// The top frame (`work`) fetched `keys`, fewer than it asked for: reads the levels below
    /// them ahead, where its node reads them in one query and no loop of rows is being left out
    /// of fetches.
    async fn read_levels_ahead(&mut self, work: &NodeWork<'_>, keys: &Keys) -> Result<(), DeleteError> {
        if !work.step.sql.reads_levels_below() || !self.in_loops.is_empty() {
            return Ok(());
        }
        let (step, table, key_types) = (work.node.step, &work.node.table, &work.step.sql.key_types);
        let statement = work.step.sql.levels_below(Param::Keys(keys.clone()), LEVELS, ROWS);
        self.settle_shared(true).await?;
        let rows = self.read_texts(&statement).await?;
        let mut levels = VecDeque::new();
        let (mut parents, mut read, mut whole) = (keys.clone(), 0, true);
        for (depth, row) in (1..).zip(rows) {
            let [Some(level), Some(array)] = row.as_slice() else { break };
            if level.parse::<u64>().ok() != Some(depth) {
                whole = false;
                break;
            }
            let texts: Vec<String> = serde_json::from_str(array).unwrap_or_default();
            read += texts.len() as u64;
            let level = table_keys(table, key_types, texts)?;
            levels.push_back((parents, level.clone()));
            parents = level;
        }
        if read >= ROWS {
            // The deepest level read may be cut short.
            levels.pop_back();
        } else if whole && (levels.len() as u64) < LEVELS {
            // Nothing below the deepest level.
            levels.push_back((parents, table_keys(table, key_types, Vec::new())?));
        }
        self.ahead = LevelsAhead { step, levels };
        Ok(())
    }
}
