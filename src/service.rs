//! The worker service: what `cascade worker` runs, for any program to embed. It runs the
//! scheduler's worker, the outbox drainer (when asked), the inbox's applier (when the config has
//! remote models) and the partition retention schedule (when the database partitions by range
//! and some model has `retention`) on one stop flag, and says whether the run counts as failed.
//!
//! ```no_run
//! # async fn example(engine: cascade::engine::Engine) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::sync::atomic::AtomicBool;
//!
//! use cascade::service::{ServiceOptions, WorkerService};
//!
//! let mut options = ServiceOptions::from_settings(&engine.config().settings);
//! options.worker.once = true; // until nothing is due
//! let report = WorkerService::new(engine, options)?.run(Arc::new(AtomicBool::new(false))).await?;
//! println!("{} succeeded, failed: {}", report.deleted.succeeded, report.failed());
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::Settings;
use crate::engine::{Engine, default_actor};
use crate::inbox::{ApplyOptions, ApplyReport, InboxError, run_applier};
use crate::outbox::{DrainOptions, DrainReport, Drainer, OutboxError, SystemClock};
use crate::partitions::{PruneOptions, RetentionReport, run_retention};
use crate::scheduler::worker::{self, WorkerError, WorkerOptions, WorkerReport};

/// How the worker service runs.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    /// The scheduler's worker; its `once` and `poll` pace the drainer and the retention
    /// schedule too.
    pub worker: WorkerOptions,
    /// Also drain the outbox through its sinks (one shard at a time).
    pub drain: bool,
    /// The command line the retention schedule's `cascade_run` rows record (already redacted).
    pub command: String,
}

impl ServiceOptions {
    /// The worker options `[settings]` gives ([`WorkerOptions::from_settings`]), no draining, no
    /// command line.
    pub fn from_settings(settings: &Settings) -> Self {
        Self { worker: WorkerOptions::from_settings(settings), drain: false, command: String::new() }
    }
}

/// What a run of the worker service did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceReport {
    /// Whether it ran until nothing was due (`once`) rather than until stopped.
    pub once: bool,
    /// The scheduled deletions.
    pub deleted: WorkerReport,
    /// The outbox drain, when it drained.
    pub drained: Option<DrainReport>,
    /// The partition retention schedule, when it ran.
    pub retained: Option<RetentionReport>,
    /// The inbox's tombstones, when the config has remote models.
    pub applied: Option<ApplyReport>,
}

impl ServiceReport {
    /// Whether the run counts as failed, so that cron and systemd notice: any failed attempt of
    /// a deletion, and with `once` any failed delivery, prune or tombstone (a long-running
    /// service retries those).
    pub fn failed(&self) -> bool {
        let drain_failed = self.drained.is_some_and(|drained| self.once && drained.failed_deliveries > 0);
        let retention_failed = self.retained.is_some_and(|retained| self.once && retained.failed > 0);
        let inbox_failed = self.applied.as_ref().is_some_and(|applied| self.once && applied.failed > 0);
        self.deleted.failed > 0 || drain_failed || retention_failed || inbox_failed
    }
}

/// Why the worker service stopped before its work was done.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The scheduler's worker failed.
    #[error(transparent)]
    Worker(#[from] WorkerError),
    /// The drainer failed.
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    /// The inbox's applier failed.
    #[error(transparent)]
    Inbox(#[from] InboxError),
}

/// The worker, the drainer and the retention schedule of one engine.
pub struct WorkerService {
    engine: Engine,
    options: ServiceOptions,
    drainer: Option<Drainer>,
}

impl WorkerService {
    /// The service of `engine` (its database and config). With `drain`, the drainer is made now,
    /// so a config without a deliverable sink is refused before anything runs.
    pub fn new(engine: Engine, options: ServiceOptions) -> Result<Self, OutboxError> {
        let drainer = if options.drain {
            let drain_options =
                DrainOptions { once: options.worker.once, poll: options.worker.poll, ..DrainOptions::default() };
            Some(Drainer::new(engine.database().clone(), engine.config(), drain_options, Arc::new(SystemClock))?)
        } else {
            None
        };
        Ok(Self { engine, options, drainer })
    }

    /// Whether the retention schedule runs: the database partitions by range and some model has
    /// `retention`.
    pub fn runs_retention(&self) -> bool {
        self.engine.database().backend().tuning().range_partitions
            && self.engine.config().models.values().any(|model| model.retention.is_some())
    }

    /// Runs until `stop` is set, or with `once` until nothing is due. With `once` the inbox's
    /// tombstones are applied first, the drainer runs after the deletions (so it delivers their
    /// tombstones) and the retention round after it; otherwise all run side by side, and the
    /// worker, the drainer or the applier ending (stopped, or failed for good) stops the others.
    pub async fn run(&self, stop: Arc<AtomicBool>) -> Result<ServiceReport, ServiceError> {
        let once = self.options.worker.once;
        let drained = async {
            let Some(drainer) = &self.drainer else { return Ok(None) };
            let drained = drainer.run(stop.clone()).await;
            // With `once` the retention round runs after the drain, and must not see a stop.
            if !once {
                stop.store(true, Ordering::SeqCst);
            }
            drained.map(Some)
        };
        let deleted = async {
            let report = worker::run(self.engine.clone(), self.options.worker.clone(), stop.clone()).await;
            if !once {
                stop.store(true, Ordering::SeqCst);
            }
            report
        };
        let retained = async {
            if !self.runs_retention() {
                return None;
            }
            let (config, settings) = (self.engine.config(), &self.engine.config().settings);
            let options = PruneOptions {
                actor: default_actor(),
                command: self.options.command.clone(),
                run_lease: settings.run_lease(),
                ..PruneOptions::default()
            };
            let interval = settings.retention_interval();
            Some(run_retention(self.engine.database(), config, &options, interval, once, stop.clone()).await)
        };
        let applied = async {
            if self.engine.config().remote_models.is_empty() {
                return Ok(None);
            }
            let mut options = ApplyOptions::default();
            options.batches.command = self.options.command.clone();
            let poll = self.options.worker.poll;
            let applied = run_applier(&self.engine, &options, once, poll, stop.clone()).await;
            if !once {
                stop.store(true, Ordering::SeqCst);
            }
            applied.map(Some)
        };
        let (applied, deleted, drained, retained) = if once {
            let applied = applied.await;
            let deleted = deleted.await;
            let drained = drained.await;
            (applied, deleted, drained, retained.await)
        } else {
            tokio::join!(applied, deleted, drained, retained)
        };
        Ok(ServiceReport { once, deleted: deleted?, drained: drained?, retained, applied: applied? })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, SystemTime};

    use super::{ServiceOptions, ServiceReport, WorkerService};
    use crate::db::sql::Statement;
    use crate::db::{Access, Database};
    use crate::diagnostic::Sources;
    use crate::engine::Engine;
    use crate::inbox::ApplyReport;
    use crate::outbox::DrainReport;
    use crate::partitions::RetentionReport;
    use crate::scheduler::worker::WorkerReport;

    fn statement(sql: &str) -> Statement {
        Statement { sql: sql.to_owned(), params: Vec::new() }
    }

    /// A program runs the worker service without the command line: a scheduled deletion runs,
    /// and the report says it succeeded.
    #[tokio::test]
    async fn a_program_runs_a_scheduled_deletion_through_the_service() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.db");
        std::fs::File::create(&path).unwrap();
        let database = Database::connect(&format!("sqlite://{}", path.display()), Access::ReadWrite).await.unwrap();
        database.execute(&statement("CREATE TABLE item (id INTEGER PRIMARY KEY)")).await.unwrap();
        database.execute(&statement("INSERT INTO item VALUES (1), (2)")).await.unwrap();
        let mut sources = Sources::default();
        sources.add("cascade.toml", "[models.item]\ntable = \"item\"\n");
        let mut loaded = crate::config::load_sources(sources);
        let checked = crate::planner::check(&mut loaded, None).unwrap();
        let engine = Engine::prepare(database.clone(), &checked).await.unwrap();
        let due = SystemTime::now() - Duration::from_secs(1);
        crate::scheduler::schedule(&database, "item", "1", due, None, None).await.unwrap();

        let mut options = ServiceOptions::from_settings(&loaded.config.settings);
        options.worker.once = true;
        let service = WorkerService::new(engine, options).unwrap();
        assert!(!service.runs_retention(), "SQLite has no range partitions");
        let report = service.run(Arc::new(AtomicBool::new(false))).await.unwrap();

        assert_eq!(report.deleted, WorkerReport { succeeded: 1, ..WorkerReport::default() });
        assert_eq!((report.drained, report.retained), (None, None));
        assert!(!report.failed());
        let left = database.fetch_texts(&statement("SELECT CAST(id AS TEXT) FROM item")).await.unwrap();
        assert_eq!(left, [[Some("2".to_owned())]], "item 1 is deleted, item 2 kept");
        database.close().await;
    }

    #[test]
    fn failed_deliveries_prunes_and_tombstones_fail_only_a_run_with_once() {
        let failing = ServiceReport {
            once: false,
            deleted: WorkerReport { succeeded: 3, ..WorkerReport::default() },
            drained: Some(DrainReport { failed_deliveries: 1, ..DrainReport::default() }),
            retained: Some(RetentionReport { dropped: 0, failed: 1 }),
            applied: None,
        };
        assert!(!failing.failed());
        assert!(ServiceReport { once: true, ..failing.clone() }.failed());
        let tombstone = ApplyReport { failed: 1, ..ApplyReport::default() };
        let applying = ServiceReport { applied: Some(tombstone), ..ServiceReport::default() };
        assert!(!applying.failed());
        assert!(ServiceReport { once: true, ..applying }.failed());
        let failed_attempt = WorkerReport { failed: 1, ..WorkerReport::default() };
        assert!(ServiceReport { deleted: failed_attempt, ..ServiceReport::default() }.failed());
    }
}
