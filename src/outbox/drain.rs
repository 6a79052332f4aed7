//! Draining: lanes take due shards one at a time, claim each, and deliver its coalesced messages
//! batch by batch until the shard is empty, a delivery fails (the shard backs off) or the drainer
//! stops (the claim is released). No transaction is open while a sink runs.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::Mutex;
use tracing::{info, warn};

use super::options::DrainOptions;
use super::routes::Routes;
use super::sink::{Message, ReadySink};
use super::store::{self, Row, Shard, ShardClaim};
use super::{Clock, OutboxError, backoff, cells, gauges};
use crate::config::Config;
use crate::db::{Database, DbError, Failure, migrate};
use crate::stop::pause;
use crate::telemetry;

/// What a drain did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainReport {
    /// Coalesced messages delivered.
    pub delivered: u64,
    /// Outbox rows deleted after their delivery (the delivered ones and the older rows they
    /// coalesced).
    pub rows_deleted: u64,
    /// Calls to sinks that succeeded.
    pub deliveries: u64,
    /// Calls to sinks that failed; each backed its shard off.
    pub failed_deliveries: u64,
}

impl DrainReport {
    fn add(&mut self, other: DrainReport) {
        self.delivered += other.delivered;
        self.rows_deleted += other.rows_deleted;
        self.deliveries += other.deliveries;
        self.failed_deliveries += other.failed_deliveries;
    }
}

/// Delivers the outbox through the config's sinks.
#[derive(Clone)]
pub struct Drainer {
    inner: Arc<Inner>,
}

struct Inner {
    database: Database,
    routes: Routes,
    /// The most messages read from a shard at once: the largest batch of any sink.
    most_per_read: u64,
    /// The claim taken on a shard before its first batch: the shortest lease of any sink.
    first_lease: Duration,
    clock: Arc<dyn Clock>,
    options: DrainOptions,
    budget: Budget,
    /// Messages delivered since the drainer was made, for progress reports.
    delivered: AtomicU64,
}

/// The shortest wait between passes.
const MIN_POLL: Duration = Duration::from_millis(10);

/// Shards fetched per look for due work. A look groups the whole table by shard, so a pass over
/// a large backlog in many shards looks as few times as it can.
const SHARDS_PER_LOOK: u64 = 4096;

/// The shards a pass has found due and not yet taken, shared by its lanes.
#[derive(Default)]
struct DueShards {
    shards: VecDeque<Shard>,
    /// A look found fewer shards than it asked for: every shard due at the pass's start and
    /// free then is in `shards` or taken, so the pass looks no more (a shard another drainer
    /// releases meanwhile is the next pass's).
    all_found: bool,
}

impl Drainer {
    /// A drainer of `config`'s deliverable categories (those with a sink), narrowed by the
    /// options' scopes and categories. Reads the sinks' `env:` headers now.
    pub fn new(
        database: Database,
        config: &Config,
        options: DrainOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, OutboxError> {
        let routes = Routes::new(config, &options)?;
        let most_per_read = routes.ready.iter().map(|sink| sink.batch_size).max().unwrap_or(1);
        // The shortest lease: a shard whose drainer died is free again after its own sink's lease
        // at most; a delivery to a slower sink renews the claim first.
        let first_lease = routes.ready.iter().map(|sink| lease(sink)).min().unwrap_or_default();
        let budget = Budget::new(options.max_messages);
        Ok(Self {
            inner: Arc::new(Inner {
                database,
                routes,
                most_per_read,
                first_lease,
                clock,
                options,
                budget,
                delivered: AtomicU64::new(0),
            }),
        })
    }

    /// Messages delivered so far, by every pass.
    pub fn delivered(&self) -> u64 {
        self.inner.delivered.load(Ordering::Relaxed)
    }

    /// Delivers until `stop` is set or `--max-messages` is reached; with `once`, delivers what is
    /// due now and returns. Database errors are waited out unless `once`.
    pub async fn run(&self, stop: Arc<AtomicBool>) -> Result<DrainReport, OutboxError> {
        migrate(&self.inner.database).await?;
        self.inner.routes.deliverable.codes.read(&self.inner.database).await?;
        let swept = cells::sweep(&self.inner.database, &self.inner.routes.deliverable).await?;
        if swept > 0 {
            info!(rows = swept, "deleted outbox rows every cell of their scope already had");
        }
        if self.inner.options.once {
            return Ok(self.drain_due(&stop).await?);
        }
        let mut report = DrainReport::default();
        let (mut gauges_set, mut delivered): (Option<Instant>, bool) = (None, false);
        while !stop.load(Ordering::SeqCst) && !self.inner.budget.spent() {
            if delivered || gauges_set.is_none_or(|at| at.elapsed() >= BACKLOG_GAUGES_EVERY) {
                gauges_set = Some(Instant::now());
                let inner = &self.inner;
                if let Err(error) = gauges::set(&inner.database, &inner.routes.deliverable, inner.clock.now()).await {
                    warn!(%error, "could not measure the outbox backlog");
                }
            }
            match self.drain_due(&stop).await {
                Ok(pass) => {
                    delivered = pass.delivered > 0;
                    report.add(pass);
                }
                Err(error) => warn!(%error, "draining failed; trying again"),
            }
            // At least a little, so `--poll 0` polls instead of spinning.
            pause(self.inner.options.poll.max(MIN_POLL), &stop).await;
        }
        Ok(report)
    }

    /// One pass over the shards due now, `concurrency` at a time, until none is left (shards
    /// that fail back off and are not retried in this pass).
    pub async fn drain_due(&self, stop: &Arc<AtomicBool>) -> Result<DrainReport, DbError> {
        let due = self.inner.clock.now();
        let queue = Arc::new(Mutex::new(DueShards::default()));
        let mut lanes = tokio::task::JoinSet::new();
        for _ in 0..self.inner.options.concurrency.max(1) {
            let (inner, queue, stop) = (self.inner.clone(), queue.clone(), stop.clone());
            lanes.spawn(async move { inner.lane(&queue, &stop, due).await });
        }
        let mut report = DrainReport::default();
        let mut failure = None;
        while let Some(lane) = lanes.join_next().await {
            match lane {
                Ok(Ok(lane)) => report.add(lane),
                Ok(Err(error)) => failure = Some(error),
                Err(panic) => std::panic::resume_unwind(panic.into_panic()),
            }
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(report),
        }
    }
}

/// How often an idle drainer measures the backlog and the failing shards for its gauges (a
/// `GROUP BY` of each table); a busy one measures them after every pass that delivered.
const BACKLOG_GAUGES_EVERY: Duration = Duration::from_secs(10);

impl Inner {
    async fn lane(&self, queue: &Mutex<DueShards>, stop: &AtomicBool, due: SystemTime) -> Result<DrainReport, DbError> {
        let mut report = DrainReport::default();
        while !stop.load(Ordering::SeqCst) && !self.budget.spent() {
            let shard = {
                let mut queue = queue.lock().await;
                if queue.shards.is_empty() && !queue.all_found {
                    // Names registered since the last look (a new category's first tombstones).
                    self.routes.deliverable.codes.read(&self.database).await?;
                    let now = self.clock.now();
                    let found =
                        store::due_shards(&self.database, &self.routes.deliverable, due, now, SHARDS_PER_LOOK).await?;
                    queue.all_found = (found.len() as u64) < SHARDS_PER_LOOK;
                    queue.shards.extend(found);
                }
                queue.shards.pop_front()
            };
            let Some(shard) = shard else { break };
            report.add(self.drain_shard(&shard, stop, due).await?);
        }
        Ok(report)
    }

    /// Claims `shard` and delivers it batch by batch while this drainer holds it.
    async fn drain_shard(&self, shard: &Shard, stop: &AtomicBool, due: SystemTime) -> Result<DrainReport, DbError> {
        let now = self.clock.now();
        let mut held_until = now + self.first_lease;
        let Some(mut claim) = store::claim(&self.database, shard, now, due, held_until).await? else {
            return Ok(DrainReport::default());
        };
        let result = self.deliver_claimed(&mut claim, &mut held_until, stop, due).await;
        if result.is_err() {
            self.release_after_failure(&claim, held_until, stop).await;
        }
        result
    }

    /// Gives `claim` back after a database error in the middle of its shard, so the shard is free
    /// again now rather than when its lease runs out. A database that is restarting (the likely
    /// error) is waited out a poll interval at a time, for as long as the claim would hold the
    /// shard anyway, or until the drainer stops.
    async fn release_after_failure(&self, claim: &ShardClaim, held_until: SystemTime, stop: &AtomicBool) {
        let lease_left = held_until.duration_since(self.clock.now()).unwrap_or_default();
        let started = Instant::now();
        loop {
            match store::release(&self.database, claim).await {
                Err(error)
                    if self.database.classify(&error) == Failure::Transient
                        && started.elapsed() < lease_left
                        && !stop.load(Ordering::SeqCst) =>
                {
                    let shard = claim.shard.identifier.as_deref().unwrap_or("");
                    warn!(scope = %claim.shard.scope, shard, %error, "could not give the claim on the shard back; trying again after the poll interval");
                    pause(self.options.poll.max(MIN_POLL), stop).await;
                }
                _ => return,
            }
        }
    }

    async fn deliver_claimed(
        &self,
        claim: &mut ShardClaim,
        held_until: &mut SystemTime,
        stop: &AtomicBool,
        due: SystemTime,
    ) -> Result<DrainReport, DbError> {
        let shard = &claim.shard.clone();
        let mut report = DrainReport::default();
        let mut delivered_up_to = 0;
        loop {
            let allowed = self.budget.reserve(self.most_per_read);
            if stop.load(Ordering::SeqCst) || allowed == 0 {
                self.budget.give_back(allowed);
                store::release(&self.database, claim).await?;
                return Ok(report);
            }
            let rows =
                store::next_messages(&self.database, shard, &self.routes.deliverable, due, delivered_up_to, allowed)
                    .await?;
            let read = rows.len();
            let Some((sink, rows)) = self.next_batch(shard, rows) else {
                self.budget.give_back(allowed);
                store::finish(&self.database, claim).await?;
                return Ok(report);
            };
            // Fewer rows than asked for, all in this batch: the shard is empty after it.
            let last_batch = (read as u64) < allowed && rows.len() == read;
            self.budget.give_back(allowed - rows.len() as u64);
            let now = self.clock.now();
            // The claim must outlast the delivery (at most the sink's timeout) with room to spare.
            if *held_until < now + sink.timeout * 3 / 2 {
                *held_until = now + lease(&sink);
                if !store::renew(&self.database, claim, *held_until).await? {
                    self.budget.give_back(rows.len() as u64);
                    warn!(scope = %shard.scope, shard = shard.identifier.as_deref().unwrap_or(""), "lost the claim on the shard; another drainer delivers it");
                    return Ok(report);
                }
            }
            match sink.deliver(&messages(shard, &rows)).await {
                Ok(()) => {
                    // The last batch of a shard without cells gives the claim back in its own
                    // transaction.
                    let finished = last_batch && shard.cell.is_empty();
                    let deleted = retried(&self.database, || async {
                        if finished {
                            store::delete_last_delivered(&self.database, claim, &rows).await
                        } else if shard.cell.is_empty() {
                            store::delete_delivered(&self.database, shard, &rows).await
                        } else {
                            cells::record_delivered(&self.database, shard, &rows, self.routes.cells(&shard.scope)).await
                        }
                    })
                    .await?;
                    self.delivered.fetch_add(rows.len() as u64, Ordering::Relaxed);
                    metrics::counter!(telemetry::OUTBOX_DELIVERED, telemetry::SINK => sink.name.clone())
                        .increment(rows.len() as u64);
                    info!(sink = %sink.name, scope = %shard.scope, shard = shard.identifier.as_deref().unwrap_or(""), cell = %shard.cell, messages = rows.len(), rows = deleted, "outbox batch delivered");
                    report.add(DrainReport {
                        delivered: rows.len() as u64,
                        rows_deleted: deleted,
                        deliveries: 1,
                        failed_deliveries: 0,
                    });
                    delivered_up_to = rows.last().map_or(delivered_up_to, |row| row.id);
                    // Failures count in a row: a delivery that went through starts them over.
                    claim.attempts = 0;
                    if last_batch {
                        if !finished {
                            store::finish(&self.database, claim).await?;
                        }
                        return Ok(report);
                    }
                }
                Err(error) => {
                    self.budget.give_back(rows.len() as u64);
                    let retry_in = backoff(claim.attempts + 1);
                    let failed_at = self.clock.now();
                    store::fail(&self.database, claim, failed_at, failed_at + retry_in, &error.to_string()).await?;
                    warn!(sink = %sink.name, scope = %shard.scope, shard = shard.identifier.as_deref().unwrap_or(""), cell = %shard.cell, attempts = claim.attempts + 1, retry_in = %humantime::format_duration(retry_in), %error, "outbox delivery failed");
                    report.failed_deliveries += 1;
                    metrics::counter!(telemetry::OUTBOX_FAILED, telemetry::SINK => sink.name.clone()).increment(1);
                    return Ok(report);
                }
            }
        }
    }

    /// The leading messages of `rows` that go to the same sink, at most its batch size.
    fn next_batch(&self, shard: &Shard, mut rows: Vec<Row>) -> Option<(Arc<ReadySink>, Vec<Row>)> {
        let sinks = self.routes.sinks(shard)?;
        let sink = sinks.get(&rows.first()?.category)?.clone();
        let same = rows
            .iter()
            .take(sink.batch_size as usize)
            .take_while(|row| sinks.get(&row.category).is_some_and(|s| Arc::ptr_eq(s, &sink)))
            .count();
        rows.truncate(same);
        Some((sink, rows))
    }
}

/// How many times a delivered batch's write is tried before the drainer gives up on it.
const WRITE_ATTEMPTS: u32 = 10;

/// `write` (what a delivered batch deletes and records), tried again when it failed on a
/// transient error such as a deadlock with another drainer, which rolled its transaction back.
/// Trying again is safe: the rows are read again, and what already went is not there to go. Each
/// try waits a random while longer than the last (up to about a second): drainers that
/// deadlocked, tried again at once, meet again (MariaDB, many drainers of one shard's cells).
async fn retried<T, F, Fut>(database: &Database, mut write: F) -> Result<T, DbError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, DbError>>,
{
    let mut attempt = 1;
    loop {
        match write().await {
            Err(error) if attempt < WRITE_ATTEMPTS && database.classify(&error) == Failure::Transient => {
                warn!(%error, attempt, "writing a delivered batch failed; trying again");
                let ceiling = 10u64 << attempt.min(7);
                tokio::time::sleep(Duration::from_millis(fastrand::u64(ceiling / 2..=ceiling))).await;
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// How long a claim lasts around one delivery: twice the sink's timeout, so a delivery that
/// times out ends well before another drainer may take the shard.
fn lease(sink: &ReadySink) -> Duration {
    (sink.timeout * 2).max(Duration::from_secs(1))
}

fn messages(shard: &Shard, rows: &[Row]) -> Vec<Message> {
    rows.iter()
        .map(|row| Message {
            idempotency_key: format!("{}/{}/{}", row.category, row.object_identifier, row.id),
            id: row.id,
            scope: shard.scope.clone(),
            shard_identifier: shard.identifier.clone(),
            category: row.category.clone(),
            model: row.model.clone(),
            object_identifier: row.object_identifier.clone(),
            payload: row.payload.as_deref().map_or(serde_json::Value::Null, |text| {
                serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned()))
            }),
            date_added: row.date_added.clone(),
        })
        .collect()
}

/// What is left of `--max-messages`, shared by the lanes: a batch reserves its messages before
/// it is read, so lanes together never deliver more.
struct Budget {
    left: AtomicU64,
}

impl Budget {
    fn new(limit: Option<u64>) -> Self {
        Self { left: AtomicU64::new(limit.unwrap_or(u64::MAX)) }
    }

    fn reserve(&self, wanted: u64) -> u64 {
        let mut taken = 0;
        let _ = self.left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            taken = left.min(wanted);
            Some(left - taken)
        });
        taken
    }

    fn give_back(&self, unused: u64) {
        self.left.fetch_add(unused, Ordering::SeqCst);
    }

    fn spent(&self) -> bool {
        self.left.load(Ordering::SeqCst) == 0
    }
}
