//! The way into the engine for every caller (the command line, the worker, the clean-up
//! commands, a program embedding the library): the live schema is read and the config checked
//! against it once, before anything is written; then deletions run chunk by chunk to their end.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::deletion::{DeleteError, DeleteOptions, Deletion, Summary};
use crate::audit::RunOutcome;
use crate::db::{Database, DbError, Failure};
use crate::diagnostic::{Diagnostic, Sources};
use crate::planner::{self, CheckedConfig, CompileError, Plan};
use crate::schema::Schema;

/// A database whose live schema the config was checked against: what deletions run on.
/// Cloning it is cheap (the pool, config and schema are shared).
#[derive(Debug, Clone)]
pub struct Engine {
    database: Database,
    /// The config, checked against `schema`.
    config: CheckedConfig,
    schema: Arc<Schema>,
    /// The schema's version, read before the schema ([`crate::schema::version`]): a change
    /// while it was being read shows as a version that differs next time.
    schema_version: Arc<str>,
    /// The references check of each set of deleted models (by name, sorted) this engine has
    /// made: it depends only on the config, the schema and that set, and on a schema of hundreds
    /// of tables it costs more than a small deletion, which a worker runs thousands of.
    references_checked: Arc<Mutex<HashMap<Vec<String>, Vec<Diagnostic>>>>,
    /// The plans [`Engine::plan`] compiled, by root model.
    plans: Arc<Mutex<HashMap<String, Arc<Plan>>>>,
}

/// Why an engine could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The schema could not be read.
    #[error(transparent)]
    Database(#[from] DbError),
    /// The config has errors against the live schema (every diagnostic, warnings included, in
    /// source order): nothing may be deleted until they are fixed.
    #[error("the config has {} errors against the database; fix them first", .0.iter().filter(|d| d.is_error()).count())]
    Invalid(Vec<Diagnostic>),
}

/// How a deletion run to its end finished.
#[derive(Debug, Clone)]
pub struct Finished {
    /// What it did.
    pub summary: Summary,
    /// How it ended: never `Failed` (a failure is the error `run_to_end` returns).
    pub outcome: RunOutcome,
}

impl Engine {
    /// Reads the live schema of `database` and runs every rule against it, so a foreign key the
    /// config does not declare, a missing table or a missing column stops the deletion before
    /// its first write.
    pub async fn prepare(database: Database, config: &CheckedConfig) -> Result<Self, PrepareError> {
        let schema_version = crate::schema::version(&database).await?;
        Self::prepare_at(database, config, schema_version).await
    }

    async fn prepare_at(
        database: Database,
        config: &CheckedConfig,
        schema_version: String,
    ) -> Result<Self, PrepareError> {
        let schema = crate::schema::introspect(&database).await?;
        let config = config.against(&schema).map_err(PrepareError::Invalid)?;
        Ok(Self {
            database,
            config,
            schema: Arc::new(schema),
            schema_version: schema_version.into(),
            references_checked: Arc::default(),
            plans: Arc::default(),
        })
    }

    /// The engine prepared anew ([`Engine::prepare`]) when the database's schema changed since
    /// this one read it (a table, column, key, index or trigger added, changed or dropped), or
    /// `None` while it has not: one small read. A long-running caller (the worker) asks before
    /// each deletion, so a foreign key added meanwhile is checked as at a command's start, and a
    /// config the schema no longer fits refuses to run ([`PrepareError::Invalid`]).
    pub async fn refreshed(&self) -> Result<Option<Self>, PrepareError> {
        let version = crate::schema::version(&self.database).await?;
        if *version == *self.schema_version {
            return Ok(None);
        }
        Self::prepare_at(self.database.clone(), &self.config, version).await.map(Some)
    }

    /// The database deletions run on.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The config the engine was prepared with, checked against the live schema.
    pub fn config(&self) -> &CheckedConfig {
        &self.config
    }

    /// The config's files, which the diagnostics' locations point into.
    pub fn sources(&self) -> &Sources {
        self.config.sources()
    }

    /// The live schema, as read when the engine was prepared.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The plan of the deletion of `root` rows ([`planner::compile`]), compiled once per engine:
    /// a worker runs many deletions of the same few models.
    pub fn plan(&self, root: &str) -> Result<Arc<Plan>, CompileError> {
        let mut plans = self.plans.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(plan) = plans.get(root) {
            return Ok(plan.clone());
        }
        let plan = Arc::new(planner::compile(&self.config, root)?);
        plans.insert(root.to_owned(), plan.clone());
        Ok(plan)
    }

    /// Starts the deletion of the root rows `ids` of `plan`; call [`Deletion::chunk`] until it
    /// reports no more work, then [`Deletion::finish`]. A foreign key into a table of the plan
    /// that the config does not declare refuses the deletion here, before anything is written
    /// ([`DeleteError::UnregisteredReferences`]). A deletion refused here counts as failed in
    /// `cascade_deletions_total`, as does one whose run [`Deletion::finish`] records as failed.
    pub async fn start<'a>(
        &'a self,
        plan: &'a Plan,
        ids: &[String],
        options: DeleteOptions,
    ) -> Result<Deletion<'a>, DeleteError> {
        let unregistered = self.unregistered_references(plan);
        let counted_here = options.within.is_none();
        let started = if unregistered.is_empty() {
            Deletion::start(&self.database, &self.config, &self.schema, plan, ids, options).await
        } else {
            Err(DeleteError::UnregisteredReferences(unregistered))
        };
        // A deletion refused before its run was recorded is a failed one all the same.
        started.inspect_err(|_| {
            if counted_here {
                RunOutcome::Failed.count();
            }
        })
    }

    /// What [`Engine::start`] refuses before a deletion's first write (a foreign key the config
    /// does not declare, a lookup by key that would miss rows or fail on the database's types),
    /// for a caller that writes something of its own before its deletions: a duplicates merge
    /// re-points children first, which must not happen for a deletion that is then refused.
    /// Whether every lookup was checked: one that met a transient error (a lock) was not.
    pub async fn refuse_undeletable(&self, plan: &Plan) -> Result<bool, DeleteError> {
        let unregistered = self.unregistered_references(plan);
        if !unregistered.is_empty() {
            return Err(DeleteError::UnregisteredReferences(unregistered));
        }
        super::deletion::refuse_unmatched_lookups(&self.database, plan, &self.schema).await
    }

    /// The foreign keys that refuse `plan` ([`planner::check_references`]), checked once per set
    /// of deleted models.
    fn unregistered_references(&self, plan: &Plan) -> Vec<Diagnostic> {
        let deleted = planner::deleted_models(&self.config, plan);
        let mut names: Vec<String> = deleted.iter().map(|model| model.name.value.clone()).collect();
        names.sort_unstable();
        let mut checked = self.references_checked.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (checked.entry(names))
            .or_insert_with(|| planner::check_references(&self.config, self.config.sources(), &self.schema, deleted))
            .clone()
    }

    /// Whether running a deletion again can get past `error` by itself (a lost connection, a
    /// deadlock, a lock timeout, children still being written) or only once its cause is fixed
    /// (a constraint, a missing table or column, a key that does not parse, the archive).
    pub fn failure(&self, error: &DeleteError) -> Failure {
        match error {
            DeleteError::Database(error) => match self.database.classify(error) {
                Failure::ForeignKeyViolation => Failure::Permanent,
                failure => failure,
            },
            DeleteError::ChildrenKeepAppearing { .. } | DeleteError::StillReferenced { .. } => Failure::Transient,
            DeleteError::Archive(_)
            | DeleteError::ArchiveCutShort { .. }
            | DeleteError::Refused { .. }
            | DeleteError::RefusedByTrigger { .. }
            | DeleteError::ArchiveMissesDatabaseRows { .. }
            | DeleteError::NotAnInteger { .. }
            | DeleteError::RootNotAnInteger { .. }
            | DeleteError::AmbiguousKey { .. }
            | DeleteError::RowLoop { .. }
            | DeleteError::UnmatchedReference { .. }
            | DeleteError::UncomparableRelation { .. }
            | DeleteError::UnregisteredReferences(_) => Failure::Permanent,
        }
    }

    /// Runs the deletion of `ids` to its end, or until `options.stop` is set (checked between
    /// chunks). `on_chunk` sees the summary after every committed chunk. A failure is recorded in
    /// `cascade_run` and returned.
    pub async fn run_to_end(
        &self,
        plan: &Plan,
        ids: &[String],
        options: DeleteOptions,
        mut on_chunk: impl FnMut(&Summary),
    ) -> Result<Finished, DeleteError> {
        let stop = options.stop.clone();
        let mut deletion = self.start(plan, ids, options).await?;
        if deletion.all_skipped() {
            return finished(deletion, RunOutcome::Skipped).await;
        }
        if deletion.none_found() {
            // A rerun of a run killed after its last commit finds the roots that run deleted
            // gone: it finishes that run.
            let outcome =
                if deletion.summary().resumes.is_some() { RunOutcome::Succeeded } else { RunOutcome::NotFound };
            return finished(deletion, outcome).await;
        }
        loop {
            if stop.as_ref().is_some_and(|stop| stop.load(Ordering::SeqCst)) {
                return finished(deletion, RunOutcome::Interrupted).await;
            }
            match deletion.chunk().await {
                Ok(true) => on_chunk(deletion.summary()),
                Ok(false) => return finished(deletion, RunOutcome::Succeeded).await,
                Err(error) => {
                    // Recording the failure may fail too when the database is gone; the error
                    // that stopped the deletion is the one to report.
                    if let Err(record) = deletion.finish(RunOutcome::Failed, Some(&error.to_string())).await {
                        tracing::warn!(%record, "could not record the failed run");
                    }
                    return Err(error);
                }
            }
        }
    }
}

async fn finished(deletion: Deletion<'_>, outcome: RunOutcome) -> Result<Finished, DeleteError> {
    Ok(Finished { summary: deletion.finish(outcome, None).await?, outcome })
}
