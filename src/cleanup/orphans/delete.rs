//! The confirmed clean-up of the orphans: per child model, its orphans deleted as the roots of
//! their own cascades, or their relation column set to NULL, batch after batch in one run.

use indexmap::IndexMap;
use serde::Serialize;

use super::group::Group;
use super::relations::selected;
use super::relations::{Candidate, table_label};
use super::remote::SWEPT;
use super::sql::Among;
use super::{LeftAlone, OrphanError, OrphanOptions, UNDECLARED, cannot_clean, deletes_first};
use crate::audit::Alone;
use crate::cleanup::batches::{BatchOptions, BatchRun, CleanupSummary, Next, Read, Scan};
use crate::config::OnDelete;
use crate::db::Database;
use crate::engine::Engine;
use crate::planner::{self, Plan};

/// What deleting the orphans did, and the relations it left alone.
#[derive(Debug, Clone, Serialize)]
pub struct OrphanCleanup {
    /// What was deleted and nullified.
    #[serde(flatten)]
    pub summary: CleanupSummary,
    /// Relations whose orphans were not touched, and why.
    pub left_alone: Vec<LeftAlone>,
}

/// Deletes the orphans of `report`'s declared relations in batches (see
/// `batches`): per child model, the orphans of its delete relations as
/// the roots of their own cascades, in key order; the orphans of its nullify relations get the
/// relation column set to NULL. Each batch is picked by the anti-join again right before it
/// runs, so a row whose parent came back meanwhile is no orphan and stays. One `cascade_run` row
/// (command `orphans`) records it all.
pub async fn delete(
    engine: &Engine,
    options: &OrphanOptions,
    batches: BatchOptions,
) -> Result<OrphanCleanup, OrphanError> {
    let selected = selected(engine.config(), engine.schema(), options)?;
    // Not counted first: each scan finds its orphans, or that there are none, as a count would.
    let mut groups: IndexMap<(&str, OnDelete), Vec<&Candidate<'_>>> = IndexMap::new();
    // Relations not cleaned, with why, counted once the run is over: its cascades may have
    // deleted some of their orphans.
    let mut uncleaned: Vec<(Vec<&Candidate<'_>>, String)> = Vec::new();
    for candidate in &selected.local {
        match (candidate.child, candidate.on_delete) {
            (Some(child), Some(action)) if candidate.declared => {
                groups.entry((child, action)).or_default().push(candidate)
            }
            _ => uncleaned.push((vec![candidate], UNDECLARED.to_owned())),
        }
    }
    deletes_first(&mut groups);
    let targets: Vec<String> = groups
        .iter()
        .flat_map(|((model, _), relations)| relations.iter().map(move |r| format!("{model}.{}", r.column())))
        .collect();
    let models: Vec<&str> =
        groups.keys().map(|(model, _)| *model).collect::<indexmap::IndexSet<_>>().into_iter().collect();
    let mut run = BatchRun::start(engine, (&models.join(", "), &targets), Alone::SameRoots, batches).await?;
    let (mut cleaned, mut stopped) = (Ok(()), false);
    for ((model, action), relations) in &groups {
        let plan = match action {
            // An orphan has no parent row whose delete the database could cascade from: it goes
            // by its own cascade, whatever the relation leaves to the database.
            OnDelete::Delete | OnDelete::Database => {
                planner::compile(engine.config(), model).map(Some).map_err(|error| error.to_string())
            }
            OnDelete::Nullify => Ok(None),
        };
        let (group, plan) = match Group::resolve(engine, model, relations).and_then(|group| Ok((group, plan?))) {
            Ok(resolved) => resolved,
            Err(reason) => {
                uncleaned.push((relations.clone(), cannot_clean(reason)));
                continue;
            }
        };
        let next = match &plan {
            Some(plan) => run.scan(&mut OrphanScan::new(&group, &group.relations, Clean::Delete(plan))).await,
            // One relation at a time: a row may dangle by one column and not by another.
            None => {
                let mut next = Ok(Next::Continue);
                for relation in &group.relations {
                    next = run.scan(&mut OrphanScan::new(&group, &[relation], Clean::Nullify(relation))).await;
                    if !matches!(next, Ok(Next::Continue)) {
                        break;
                    }
                }
                next
            }
        };
        match next {
            Ok(Next::Continue) => {}
            Ok(Next::Stop) => {
                stopped = true;
                break;
            }
            Err(error) => {
                cleaned = Err(error);
                break;
            }
        }
    }
    let mut left_alone = Vec::new();
    // Not after a stop: a full count of each such relation would keep a Ctrl-C waiting.
    if cleaned.is_ok() && !stopped {
        for (relations, reason) in &uncleaned {
            match leave_alone(engine.database(), relations, reason).await {
                Ok(counted) => left_alone.extend(counted),
                Err(error) => {
                    cleaned = Err(error);
                    break;
                }
            }
        }
        // The late children of remote models are the sweep's: counted, never touched.
        if cleaned.is_ok() {
            for remote in &selected.remote {
                match remote.report(engine.database(), 0).await {
                    Ok(relation) if relation.orphans > 0 => left_alone.push(LeftAlone::of(&relation, SWEPT)),
                    Ok(_) => {}
                    Err(error) => {
                        cleaned = Err(error);
                        break;
                    }
                }
            }
        }
    }
    let error = cleaned.as_ref().err().map(ToString::to_string);
    let finished = run.finish(error.as_deref()).await;
    cleaned?;
    Ok(OrphanCleanup { summary: finished?, left_alone })
}

/// The relations among `relations` that have orphans, counted, as left alone for `reason`.
async fn leave_alone(
    database: &Database,
    relations: &[&Candidate<'_>],
    reason: &str,
) -> Result<Vec<LeftAlone>, OrphanError> {
    let mut left = Vec::new();
    for relation in relations {
        let failed = |source| OrphanError::Database { relation: relation.label(), source };
        let orphans = database.fetch_count(&relation.count(database.backend())).await.map_err(failed)?;
        if orphans > 0 {
            left.push(LeftAlone {
                parent: relation.parent.map_or_else(|| table_label(relation.parent_table), str::to_owned),
                child: relation.child.map_or_else(|| table_label(relation.child_table), str::to_owned),
                column: relation.column(),
                orphans,
                reason: reason.to_owned(),
            });
        }
    }
    Ok(left)
}

/// Keys of orphans to clean up, in key order.
struct Batch {
    keys: Vec<String>,
    /// Read ahead and not read again: each row must be tested as it is cleaned.
    unchecked: bool,
}

/// One scan of the run: the orphans of some of a group's relations in key order, and what they
/// get. Read a batch at a time, or many batches ahead where the database reads many keys much
/// faster per key ([`crate::db::Tuning::scan_read_ahead`]), each batch then read again among
/// its own keys so that rows which found their parent since are left alone, unless cleaning
/// them tests that itself.
struct OrphanScan<'g> {
    group: &'g Group<'g>,
    relations: &'g [&'g Candidate<'g>],
    clean: Clean<'g>,
    checkpoint: String,
    /// Cleaning a row tests that it still dangles: a batch read ahead is handed out unchecked.
    checked_when_cleaned: bool,
    /// The last key read: the next read starts after it (not the checkpoint, which a batch whose
    /// roots were all skipped by their status leaves where it was).
    after: Option<String>,
    /// Keys read ahead, not yet handed out.
    ahead: std::collections::VecDeque<String>,
    /// The last read found fewer keys than it asked for: none are left after `after`.
    exhausted: bool,
}

impl<'g> OrphanScan<'g> {
    fn new(group: &'g Group<'g>, relations: &'g [&'g Candidate<'g>], clean: Clean<'g>) -> Self {
        // Where cleaning a row tests that it still dangles, a batch read ahead is not read again
        // first: an update re-checks the anti-join itself, and a root without children is
        // deleted only while it still dangles. Below a root with children, its children's rows
        // would go first either way, and a root with a status is marked in progress before its
        // delete, which would mark a row that found its parent again.
        let checked_when_cleaned = match clean {
            Clean::Delete(plan) => plan.root.children.is_empty() && !group.has_status(),
            Clean::Nullify(_) => true,
        };
        Self {
            group,
            relations,
            clean,
            checkpoint: group.checkpoint(relations),
            checked_when_cleaned,
            after: None,
            ahead: Default::default(),
            exhausted: false,
        }
    }

    /// Whether the read involves a partitioned table, which a generic plan would not prune.
    fn touches_partitions(&self) -> bool {
        self.group.table.partitioned || self.relations.iter().any(|relation| relation.parent_table.partitioned)
    }

    /// The orphans among `keys`; a `wide` read is one of many rows.
    async fn orphans(&self, keys: Among<'_>, wide: bool) -> Result<Vec<String>, OrphanError> {
        let (group, database) = (self.group, self.group.engine.database());
        let by_keys = matches!(keys, Among::These(_));
        let statement = group.orphan_keys(self.relations, keys);
        let read = if wide {
            database.fetch_wide_array(&statement).await
        } else if by_keys {
            // A custom plan of thousands of keys hashes the whole parent table (50 ms for
            // 180,000 parents) where probing its index for each key takes 13.
            database.fetch_key_array(&statement, !self.touches_partitions()).await
        } else {
            database.fetch_array(&statement).await
        };
        read.map_err(|source| OrphanError::Database { relation: format!("`{}`", group.model), source })
    }
}

impl Scan for OrphanScan<'_> {
    type Batch = Batch;
    type Error = OrphanError;

    fn checkpoint(&self) -> &str {
        &self.checkpoint
    }

    fn start_after(&mut self, after: Option<String>) {
        self.after = after;
    }

    async fn read(&mut self, size: u64) -> Result<Read<Batch>, OrphanError> {
        let read_ahead = self.group.engine.database().backend().tuning().scan_read_ahead;
        if read_ahead <= size {
            let keys = self.orphans(Among::Next { after: self.after.as_deref(), limit: size }, false).await?;
            self.exhausted = (keys.len() as u64) < size;
            self.after = keys.last().cloned().or(self.after.take());
            return Ok(if keys.is_empty() { Read::Through } else { Read::Batch(Batch { keys, unchecked: false }) });
        }
        if self.ahead.len() < size as usize && !self.exhausted {
            let keys = self.orphans(Among::Next { after: self.after.as_deref(), limit: read_ahead }, true).await?;
            self.exhausted = (keys.len() as u64) < read_ahead;
            self.after = keys.last().cloned().or(self.after.take());
            self.ahead.extend(keys);
        }
        if self.ahead.is_empty() {
            return Ok(Read::Through);
        }
        let keys: Vec<String> = self.ahead.drain(..self.ahead.len().min(size as usize)).collect();
        if self.checked_when_cleaned {
            return Ok(Read::Batch(Batch { keys, unchecked: true }));
        }
        // Every key of a batch read ahead may have found its parent again since.
        let keys = self.orphans(Among::These(&keys), false).await?;
        Ok(if keys.is_empty() { Read::Nothing } else { Read::Batch(Batch { keys, unchecked: false }) })
    }

    /// Every key of the scan has been handed out: its last read found fewer than it asked for,
    /// and none read ahead are left.
    fn through(&self) -> bool {
        self.exhausted && self.ahead.is_empty()
    }

    async fn clean(&self, run: &mut BatchRun<'_>, batch: Batch) -> Result<Next, OrphanError> {
        let keys = batch.keys;
        Ok(match self.clean {
            Clean::Delete(plan) => {
                let guard = batch.unchecked.then(|| self.group.still_dangling(self.relations));
                run.delete_batch(plan, &keys, &self.checkpoint, guard).await?
            }
            Clean::Nullify(relation) => {
                let update = self.group.nullify(relation, &keys);
                run.nullify_batch(&update, &keys, self.group.model, &self.checkpoint).await?
            }
        })
    }
}

/// What a batch of orphans gets.
#[derive(Clone, Copy)]
enum Clean<'p> {
    /// Deleted as the roots of the plan, each with everything below it.
    Delete(&'p Plan),
    /// The columns of the relation set to NULL.
    Nullify(&'p Candidate<'p>),
}
