//! The executor: deletes a plan's rows children first, one chunk of one table per transaction.
//!
//! Its state is a stack of frames, one per plan node being worked on; `chunk()` advances it
//! until one transaction has committed (or the work is done), so a caller can interleave, pause
//! or stop between chunks. Nothing needs saving between runs: every step finds the rows that
//! are still there, so running the same deletion again after an interruption finishes it.

mod ahead;
mod chunks;
mod deep;
mod error;
mod limits;
mod loops;
mod nullified;
mod options;
mod preflight;
mod roots;
mod shared;
mod summary;
mod tree;
mod unchecked;
mod writes;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use indexmap::IndexMap;
use tracing::{debug, info};

pub use error::DeleteError;
pub(crate) use options::RunBatch;
pub use options::{DeleteOptions, default_actor};
pub(crate) use preflight::{refuse_unmatched_lookups, uncomparable_relations};
pub use summary::Summary;
pub(crate) use summary::whole_microseconds;

use super::archive::Archive;
use super::chunk_size::ChunkSizes;
use super::steps::{StepSql, models_recording_nullified};
use super::throttle::Pacing;
use super::{root_keys, table_keys};
use crate::audit::{self, Run, RunOutcome, RunStart};
use crate::config::{Config, OnDelete};
use crate::db::Database;
use crate::db::Keys;
use crate::db::outbox::registration;
use crate::db::sql::Statement;
use crate::planner::{Plan, PlanNode, worked};
use crate::schema::Schema;
use roots::{PendingRoots, sort_roots};
use summary::nearest_rank;
use tree::TreePath;

/// One plan node being worked on, for one set of parent rows.
struct Frame<'a> {
    /// The node and its statements: fixed while the frame is on the stack, and shared with the
    /// transaction of its chunk, so the frame stays on the stack while it runs.
    work: Arc<NodeWork<'a>>,
    /// The parent chunk's keys (or the root ids) this node's rows are found by.
    matched: Keys,
    /// The rows the last fetch asked for.
    limit: u64,
    /// Rows of a loop that go with this frame's chunk ([`loops`]): their children are deleted
    /// after the chunk's, and the chunk's delete takes them too.
    loop_rows: Vec<loops::LoopRows<'a>>,
    /// The last fetch found fewer rows than it asked for: once its chunk is done, nothing is left
    /// (a child inserted meanwhile is caught by the parent's check or foreign key).
    last_chunk: bool,
    /// The children (by index in `children`) that had no rows under the chunk being drained
    /// when its drain began ([`Deletion::absent_children`]): their frames are skipped.
    absent_children: Vec<bool>,
    /// Levels of the node dropped right above this one to keep memory flat ([`deep`]): rebuilt
    /// one by one as this frame and then each rebuilt level finishes.
    dropped_above: u64,
    state: State,
}

/// What a frame's transactions read: its plan node and statements.
struct NodeWork<'a> {
    node: &'a PlanNode,
    /// The node's children ([`Plan::children_of`]: a recursive node's are its model's).
    children: &'a [PlanNode],
    /// The node's rows are a tree or part of a cycle (its model is recursive, see
    /// [`Plan::recursive_models`]), so its chunks' keys are on [`Deletion::tree_path`] while their
    /// children are deleted.
    in_tree: bool,
    /// The node's statements; a recursive node's frames, one per level of a tree, share one.
    step: Arc<StepSql<'a>>,
    /// The statements of the node's children when every one is set-based (bulk or nullify): a
    /// chunk then goes with its children's rows in one transaction when they fit.
    set_based_children: Option<Vec<(&'a PlanNode, StepSql<'a>)>>,
}

impl<'a> NodeWork<'a> {
    /// The set-based children whose rows go after the chunk's own in its transaction (`after`,
    /// see [`StepSql::child_goes_after`]), or those whose rows go before them.
    fn set_based_children_going(&self, after: bool) -> impl Iterator<Item = &(&'a PlanNode, StepSql<'a>)> {
        let children = self.set_based_children.iter().flatten().enumerate();
        children.filter(move |(index, _)| self.step.child_goes_after(*index) == after).map(|(_, child)| child)
    }
}

enum State {
    /// per_row: the next chunk of keys is to be read.
    Fetch,
    /// per_row: the chunk `keys` and its set-based children's rows, in one transaction.
    Together { keys: Keys },
    /// per_row: the children of the chunk `keys` are being deleted, `next` is the next one.
    Children { keys: Keys, next: usize, attempts: u32 },
    /// per_row: the chunk `keys` is deleted once its children are gone.
    Delete { keys: Keys, attempts: u32 },
    /// bulk or nullify: one set-based statement per chunk until none is left.
    SetBased,
    /// per_row: a dropped level of a deep tree comes back with its chunk `keys` ([`deep`]).
    Rebuild { keys: Keys },
}

/// What the transaction of a chunk together with its children did.
enum Together<'a> {
    /// Committed: the rows of each step.
    Done(Vec<(&'a PlanNode, u64)>),
    /// The children had more rows than one chunk of theirs: those deleted are committed (their
    /// rows; none where children that go after the chunk overflowed, which rolls it all back),
    /// the rest go chunk by chunk.
    ChildrenLeft(Vec<(&'a PlanNode, u64)>),
    /// Rows appeared under the chunk after its children were deleted: nothing was committed.
    ChildrenAppeared,
}

/// What one transaction did.
enum Outcome<'a> {
    /// Committed: the rows of the chunk's node and of each child deleted after them (and of
    /// the chunks that shared the transaction, first).
    Done(Vec<(&'a PlanNode, u64)>),
    /// Written in a transaction left open for the next level of the tree ([`shared`]).
    Shared,
    /// Children appeared under the chunk meanwhile (or, with `refused`, a foreign key refused
    /// the delete): nothing was deleted.
    ChildrenAppeared { refused: Option<String> },
}

/// One deletion in progress: call [`Deletion::chunk`] until it returns `false`, then
/// [`Deletion::finish`]. Made by [`Engine::start`](super::Engine::start), which checks the
/// schema first.
pub struct Deletion<'a> {
    database: &'a Database,
    config: &'a Config,
    schema: &'a Schema,
    stack: Vec<Frame<'a>>,
    /// The root ids not yet handed to a root frame.
    pending_roots: PendingRoots,
    options: DeleteOptions,
    archive: Option<Archive>,
    pacing: Pacing,
    sizes: ChunkSizes,
    rates: IndexMap<String, f64>,
    rates_read: Option<Instant>,
    summary: Summary,
    /// Tombstones written in the open transaction: counted in `summary` once it commits.
    uncommitted_outbox_rows: u64,
    /// Registers the outbox names the plan's tombstones hold: run first in every chunk's
    /// transaction until one commits.
    unregistered_outbox_names: Option<Statement>,
    started: Instant,
    /// The `cascade_run` row the deletion records into: its own, or its caller's.
    run_id: i64,
    /// The deletion's own run, unless it is a batch of the caller's.
    run: Option<Run>,
    plan: &'a Plan,
    root: &'a PlanNode,
    /// No table of the plan is partitioned: its chunks' statements may skip planning for each
    /// key array ([`Database::begin_key_array_write`]), which would also skip pruning partitions.
    unpartitioned: bool,
    /// The root rows' keys.
    root_keys: Vec<String>,
    /// The statuses root rows had before this deletion (or an interrupted earlier run of it)
    /// marked them, as JSON: what the archive holds.
    statuses_before: IndexMap<String, String>,
    /// The chunks of trees whose children are being deleted: a loop of rows, which children
    /// first never finishes, shows there.
    tree_path: TreePath<'a>,
    /// The statements of each recursive node, by step: made once for all its levels, so a tree
    /// 100,000 levels deep holds one copy.
    recursive_steps: HashMap<usize, Arc<StepSql<'a>>>,
    /// The models whose rows are trees or cycles ([`Plan::recursive_models`]).
    recursive_models: std::collections::HashSet<&'a str>,
    /// The models whose nullified rows the run records ([`models_recording_nullified`]).
    nullified_recorded: std::collections::HashSet<&'a str>,
    /// The delete relations between recursive models, (child, parent): how rows of a loop can
    /// reference each other.
    loop_relations: Vec<(&'a PlanNode, &'a PlanNode)>,
    /// Keys of rows found in loops, by table: every fetch leaves them out, since they go with
    /// the chunk of the first of them on the path.
    in_loops: HashMap<String, Vec<String>>,
    /// Levels of a self-reference read ahead of their frames ([`ahead`]).
    ahead: ahead::LevelsAhead,
    /// A transaction a tree's chunk left open for the next level's ([`shared`]).
    shared: Option<shared::Shared<'a>>,
    /// What the open transaction carries while a chunk works in it.
    carried: Option<shared::Carried<'a>>,
    /// A transaction that chunks shared was undone: none is shared until one commits.
    sharing_paused: bool,
}

impl<'a> Deletion<'a> {
    /// Prepares the deletion of the root rows `ids`: creates the tool's tables if needed, skips
    /// roots whose status does not allow it, marks the others in progress, and records the run.
    pub(super) async fn start(
        database: &'a Database,
        config: &'a Config,
        schema: &'a Schema,
        plan: &'a Plan,
        ids: &[String],
        options: DeleteOptions,
    ) -> Result<Self, DeleteError> {
        let started = Instant::now();
        let archive = options.archive.is_some();
        let root =
            StepSql::new(&plan.root, None, &[], &plan.root.children, config, database.backend(), Some(schema), archive);
        let ids = root_keys(plan, &root.sql.key_types, ids)?;
        // An archive that cannot be written, or cannot hold every deleted row, stops the deletion
        // before anything is recorded.
        if let Some(dir) = &options.archive {
            if let Some(node) = plan.steps().into_iter().find(|node| node.action == OnDelete::Database) {
                return Err(DeleteError::ArchiveMissesDatabaseRows { model: node.model.clone() });
            }
            Archive::check(dir)?;
        }
        if !options.within.as_ref().is_some_and(|batch| batch.lookups_checked) {
            refuse_unmatched_lookups(database, plan, schema).await?;
        }
        crate::db::migrate(database).await?;

        let mut summary = Summary::default();
        let (proceeding, skipped, missing) = sort_roots(database, &root, &ids, options.within.is_some()).await?;
        (summary.skipped, summary.missing) = (skipped, missing);
        let proceeding = table_keys(&plan.root.table, &root.sql.key_types, proceeding)?;
        let statuses_before = roots::mark_in_progress(database, &root, &proceeding).await?;
        let (run_id, run) = match &options.within {
            Some(batch) => (batch.run, None),
            None => {
                let start = RunStart {
                    actor: &options.actor,
                    command: &options.command,
                    root_model: &plan.root.model,
                    root_ids: &ids.texts(),
                };
                let run = Run::start(database, start, config.settings.run_lease()).await?;
                summary.resumes = run.resumes();
                // A batch of the caller's run is the caller's to report.
                info!(run = run.id(), resumes = summary.resumes, model = %plan.root.model, roots = proceeding.len() as u64, skipped = summary.skipped.len(), "deletion started");
                (run.id(), Some(run))
            }
        };
        let root_keys = proceeding.texts();
        let steps = plan.steps();
        let targets = steps.iter().filter_map(|node| node.outbox.as_ref());
        let names = targets.flat_map(|target| [&target.scope, &target.category, &target.model]);
        let unregistered_outbox_names = registration(database, &names.map(String::as_str).collect());
        let pacing = options.within.as_ref().map_or_else(|| Pacing::for_plan(plan), |batch| batch.pacing.clone());
        let recursive_models = plan.recursive_models();
        let nullified_recorded = models_recording_nullified(plan, Some(schema));
        if !nullified_recorded.is_empty() {
            audit::nullified::forget(database, run_id).await?;
        }
        Ok(Self {
            database,
            config,
            schema,
            stack: Vec::new(),
            pending_roots: PendingRoots::new(proceeding),
            archive: options.archive.as_deref().map(|dir| Archive::open(dir, run_id)).transpose()?,
            options,
            pacing,
            sizes: ChunkSizes::new(&config.settings),
            rates: config.option_values(),
            rates_read: None,
            summary,
            uncommitted_outbox_rows: 0,
            unregistered_outbox_names,
            started,
            run_id,
            run,
            plan,
            root: &plan.root,
            unpartitioned: plan.steps().iter().all(|node| schema.table(&node.table).is_some_and(|t| !t.partitioned)),
            root_keys,
            statuses_before,
            tree_path: TreePath::default(),
            loop_relations: plan
                .steps_with_parents()
                .into_iter()
                .filter_map(|(node, parent)| Some((node, parent?)))
                .filter(|(node, parent)| {
                    node.action == OnDelete::Delete
                        && recursive_models.contains(node.model.as_str())
                        && recursive_models.contains(parent.model.as_str())
                })
                .collect(),
            recursive_models,
            nullified_recorded,
            in_loops: HashMap::new(),
            ahead: ahead::LevelsAhead::default(),
            shared: None,
            carried: None,
            sharing_paused: false,
            recursive_steps: plan
                .steps_with_parents()
                .into_iter()
                .filter_map(|(node, parent)| Some((node, parent?)))
                .filter(|(node, _)| node.recursive)
                .map(|(node, parent)| {
                    let step = StepSql::new(
                        node,
                        Some(parent),
                        plan.children_of(parent),
                        plan.children_of(node),
                        config,
                        database.backend(),
                        Some(schema),
                        archive,
                    );
                    (node.step, Arc::new(step))
                })
                .collect(),
        })
    }

    /// What was done so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Runs until one chunk's transaction has committed. `Ok(false)` when nothing is left.
    pub async fn chunk(&mut self) -> Result<bool, DeleteError> {
        let done = self.next_chunk().await;
        if done.is_err() {
            self.abandon_shared().await;
        }
        done
    }

    async fn next_chunk(&mut self) -> Result<bool, DeleteError> {
        loop {
            if self.stack.is_empty() {
                // Each root chunk binds only its own ids: binding all of them to every fetch made
                // 100,000 ids quadratic. The ids were read when the deletion started, so a per_row
                // root chunk needs no fetch: its keys are the ids.
                let Some(matched) = self.pending_roots.take(self.size_of(self.root)) else {
                    if let Some(steps) = self.commit_shared().await? {
                        self.charge_rate_limits(&steps).await;
                        return Ok(true);
                    }
                    return Ok(false);
                };
                let mut frame = self.frame_of(self.root, None, matched.clone());
                if !self.root.is_set_based() {
                    frame.limit = matched.len() as u64;
                    frame.last_chunk = true;
                    enter_tree(&mut self.tree_path, &frame.work, &matched)?;
                    frame.state = chunk_state(&frame, matched);
                }
                self.stack.push(frame);
            }
            let frame = self.top();
            match &frame.state {
                State::Fetch => {
                    let Some(keys) = self.next_keys().await? else {
                        self.pop_frame();
                        continue;
                    };
                    let work = self.top().work.clone();
                    if let Err(loop_error) = enter_tree(&mut self.tree_path, &work, &keys) {
                        if !self.resolve_loop(&keys).await? {
                            return Err(loop_error);
                        }
                        continue;
                    }
                    let frame = self.top_mut();
                    frame.state = chunk_state(frame, keys);
                }
                State::Together { keys } => {
                    let (keys, work, limit) = (keys.clone(), frame.work.clone(), frame.limit);
                    match self.delete_together(&work, limit, &keys).await? {
                        Together::Done(steps) => {
                            self.charge_rate_limits(&steps).await;
                            self.chunk_done();
                            return Ok(true);
                        }
                        Together::ChildrenLeft(steps) => {
                            self.top_mut().state = State::Children { keys, next: 0, attempts: 0 };
                            if steps.is_empty() {
                                continue;
                            }
                            self.charge_rate_limits(&steps).await;
                            return Ok(true);
                        }
                        Together::ChildrenAppeared => {
                            debug!(model = %work.node.model, "children appeared under a chunk; draining them again");
                            self.top_mut().state = State::Children { keys, next: 0, attempts: 1 };
                        }
                    }
                }
                State::Children { keys, next, attempts } => {
                    let (keys, at, attempts) = (keys.clone(), *next, *attempts);
                    if at == 0 {
                        let absent = self.absent_children(&keys).await?;
                        self.top_mut().absent_children = absent;
                    }
                    let plan = self.plan;
                    let frame = self.top_mut();
                    let Some((child, parent, matched)) = child_at(frame, at, &keys, plan) else {
                        frame.state = State::Delete { keys, attempts };
                        continue;
                    };
                    frame.state = State::Children { keys, next: at + 1, attempts };
                    // The database deletes its children with the chunk, which counts them first.
                    if child.action == OnDelete::Database || frame.absent_children.get(at) == Some(&true) {
                        continue;
                    }
                    let child_frame = self.frame_of(child, Some(parent), matched);
                    self.stack.push(child_frame);
                    self.drop_deep_levels().await?;
                }
                State::Rebuild { keys } => {
                    let keys = keys.clone();
                    self.rebuild_level(keys).await?;
                }
                State::Delete { keys, attempts } => {
                    let (keys, attempts, work, limit) = (keys.clone(), *attempts, frame.work.clone(), frame.limit);
                    let outcome = if frame.loop_rows.is_empty() {
                        self.delete_chunk(&work, limit, &keys).await?
                    } else {
                        let loop_rows = frame.loop_rows.clone();
                        self.delete_loop(&work, &loop_rows, &keys).await?
                    };
                    match outcome {
                        Outcome::Done(steps) => {
                            self.charge_rate_limits(&steps).await;
                            self.chunk_done();
                            return Ok(true);
                        }
                        Outcome::Shared => self.chunk_done(),
                        Outcome::ChildrenAppeared { .. } if self.postpone_to_loop(&keys) => {
                            self.chunk_done();
                        }
                        Outcome::ChildrenAppeared { .. } if attempts < self.options.orphan_retries => {
                            debug!(model = %work.node.model, attempts, "children appeared under a chunk; draining them again");
                            self.top_mut().state = State::Children { keys, next: 0, attempts: attempts + 1 };
                        }
                        Outcome::ChildrenAppeared { refused } => {
                            let model = work.node.model.clone();
                            return Err(match refused {
                                Some(reason) => DeleteError::Refused { model, reason },
                                None => DeleteError::ChildrenKeepAppearing { model, attempts: attempts + 1 },
                            });
                        }
                    }
                }
                State::SetBased => {
                    let (work, matched) = (frame.work.clone(), frame.matched.clone());
                    let limit = self.size_of(work.node);
                    let under_tree = self.stack.iter().rev().nth(1).is_some_and(|parent| parent.work.in_tree);
                    let (rows, committed) = self.set_based_chunk(&work, &matched, limit, under_tree).await?;
                    if self.is_last_set_based(&work, &matched, limit, rows) {
                        self.stack.pop();
                    }
                    if let Some(steps) = committed.filter(|steps| steps.iter().any(|(_, rows)| *rows > 0)) {
                        self.charge_rate_limits(&steps).await;
                        return Ok(true);
                    }
                }
            }
        }
    }

    /// The frame being worked on: the stack's top, which [`Deletion::next_chunk`] has made sure
    /// exists before any step works on it.
    fn top(&self) -> &Frame<'a> {
        self.stack.last().expect("a frame is being worked on")
    }

    fn top_mut(&mut self) -> &mut Frame<'a> {
        self.stack.last_mut().expect("a frame is being worked on")
    }

    /// Rows per transaction of `node` now.
    fn size_of(&self, node: &PlanNode) -> u64 {
        match &self.options.within {
            Some(batch) if std::ptr::eq(node, self.root) => batch.root_chunk_size,
            _ => self.sizes.of(node),
        }
    }

    /// The top frame's chunk is deleted: fetch the next, or, after its last, go back to its parent.
    fn chunk_done(&mut self) {
        let frame = self.stack.last_mut().expect("a frame is being worked on");
        if frame.work.in_tree
            && let Some(keys) = chunk_keys(frame)
        {
            self.tree_path.leave(&frame.work.node.table, keys.texts());
        }
        if frame.last_chunk {
            self.pop_frame();
        } else {
            frame.state = State::Fetch;
        }
    }

    /// Whether no requested root row exists.
    pub fn none_found(&self) -> bool {
        self.pending_roots.is_empty()
            && self.stack.is_empty()
            && self.summary.skipped.is_empty()
            && !self.summary.missing.is_empty()
    }

    /// Whether every requested root exists and was skipped by its status, so nothing is
    /// deleted (a scheduled deletion cancelled through its status).
    pub fn all_skipped(&self) -> bool {
        self.pending_roots.is_empty()
            && self.stack.is_empty()
            && self.summary.missing.is_empty()
            && !self.summary.skipped.is_empty()
    }

    /// Records how the run ended in `cascade_run` and closes the archive.
    pub async fn finish(mut self, outcome: RunOutcome, error: Option<&str>) -> Result<Summary, DeleteError> {
        // A run stopped between chunks has none open; one that failed may (it holds the lock).
        self.abandon_shared().await;
        // Counted even when recording the run fails below: the deletion ended all the same. A
        // batch of a caller's run is counted as part of that run, by the caller.
        if self.run.is_some() {
            outcome.count();
        }
        self.summary.elapsed_ms = self.started.elapsed().as_secs_f64() * 1e3;
        self.summary.p99_chunk_ms = nearest_rank(&self.summary.chunk_ms, 0.99);
        if outcome == RunOutcome::Succeeded && !self.statuses_before.is_empty() {
            audit::statuses::forget(self.database, &self.root.table, &self.root_keys).await?;
        }
        self.count_nullified_rows().await;
        if let Some(run) = self.run.take() {
            run.finish(outcome, &self.summary.run_rows(), error).await?;
            info!(run = self.run_id, outcome = outcome.as_str(), rows = self.summary.rows(), "deletion finished");
        }
        Ok(self.summary)
    }

    /// The frame of `node` under `parent`.
    fn frame_of(&self, node: &'a PlanNode, parent: Option<&'a PlanNode>, matched: Keys) -> Frame<'a> {
        let children: &'a [PlanNode] = self.plan.children_of(node);
        // The list `node` is in: a nullify step leaves out the rows a later one of it deletes.
        let siblings: &'a [PlanNode] = parent.map_or(&[][..], |parent| self.plan.children_of(parent));
        let step_of = |node: &'a PlanNode, parent, siblings, children| {
            let (backend, archive) = (self.database.backend(), self.archive.is_some());
            StepSql::new(node, parent, siblings, children, self.config, backend, Some(self.schema), archive)
                .record_nullified(&self.nullified_recorded)
        };
        let step = match self.recursive_steps.get(&node.step) {
            Some(shared) => shared.clone(),
            None => {
                let mut step = step_of(node, parent, siblings, children);
                if std::ptr::eq(node, self.root) && children.is_empty() {
                    step.sql.guard = self.options.within.as_ref().and_then(|batch| batch.root_guard.clone());
                }
                Arc::new(step)
            }
        };
        let set_based_children = node.has_only_set_based_children().then(|| {
            node.worked_children().map(|child| (child, step_of(child, Some(node), children, &child.children))).collect()
        });
        Frame {
            work: Arc::new(NodeWork {
                node,
                children,
                in_tree: self.recursive_models.contains(node.model.as_str()),
                step,
                set_based_children,
            }),
            matched,
            loop_rows: Vec::new(),
            limit: node.chunk_size,
            last_chunk: false,
            absent_children: Vec::new(),
            dropped_above: 0,
            state: initial_state(node),
        }
    }
}

/// A chunk of a tree's rows starts: its keys go on the tree's path while their children are
/// deleted; a loop of rows is an error.
fn enter_tree<'a>(path: &mut TreePath<'a>, work: &NodeWork<'a>, keys: &Keys) -> Result<(), DeleteError> {
    if !work.in_tree {
        return Ok(());
    }
    path.enter(&work.node.table, keys.texts())
        .map_err(|key| DeleteError::RowLoop { model: work.node.model.clone(), key })
}

/// The `next`th child frame to push under the chunk `keys` of `frame`: (child node, parent node,
/// the keys it is found by). The node's children first, then those of each group of loop rows
/// attached to the frame.
fn child_at<'a>(
    frame: &Frame<'a>,
    next: usize,
    keys: &Keys,
    plan: &'a Plan,
) -> Option<(&'a PlanNode, &'a PlanNode, Keys)> {
    if let Some(child) = frame.work.children.get(next) {
        return Some((child, frame.work.node, keys.clone()));
    }
    let mut index = next - frame.work.children.len();
    for rows in &frame.loop_rows {
        let children = plan.children_of(rows.node);
        if let Some(child) = children.get(index) {
            return Some((child, rows.node, rows.keys.clone()));
        }
        index -= children.len();
    }
    None
}

/// The keys of the chunk a frame is working on, if any.
fn chunk_keys<'f>(frame: &'f Frame<'_>) -> Option<&'f Keys> {
    match &frame.state {
        State::Together { keys } | State::Children { keys, .. } | State::Delete { keys, .. } => Some(keys),
        State::Fetch | State::SetBased | State::Rebuild { .. } => None,
    }
}

fn initial_state(node: &PlanNode) -> State {
    if node.is_set_based() { State::SetBased } else { State::Fetch }
}

/// What a per_row frame does with a chunk of `keys` it has read.
fn chunk_state(frame: &Frame<'_>, keys: Keys) -> State {
    if worked(frame.work.children).next().is_none() {
        State::Delete { keys, attempts: 0 }
    } else if frame.work.set_based_children.is_some() {
        State::Together { keys }
    } else {
        State::Children { keys, next: 0, attempts: 0 }
    }
}
