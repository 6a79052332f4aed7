//! Rate limits: a leaky bucket (governor's GCRA) per option, in rows per second, holding one
//! second of rows or the largest chunk of the steps it paces, whichever is more, the same for
//! every caller of the option. A chunk's rows are charged after the chunk to the limit of its model and of every
//! model above it on the path from the root, so a limit on the root paces the whole deletion;
//! while a bucket is empty the next chunk waits. A chunk larger than a bucket is charged a
//! bucketful at a time. The clock is governor's, so tests use a fake one instead of wall time.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

use crate::planner::{Dag, Plan, PlanNode};
use crate::telemetry;

type Bucket<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// The slowest pace a limit keeps, one row an hour: a smaller rate (an option set to `1e-30`)
/// paces at it, because a longer period overflows the bucket's arithmetic.
const SLOWEST_RATE: f64 = 1.0 / 3600.0;

pub(super) struct Throttle<C: Clock + Clone = DefaultClock> {
    clock: C,
    /// Per option: the rate its bucket was built for, and the bucket.
    buckets: HashMap<String, (f64, Bucket<C>)>,
    /// The fewest rows each option's bucket holds: one chunk of the steps it paces.
    least_bursts: HashMap<String, u64>,
}

impl Throttle<DefaultClock> {
    /// A throttle on the wall clock for the rate limits of `plan`.
    pub(super) fn for_plan(plan: &Plan) -> Self {
        Self::new(DefaultClock::default(), least_bursts(&Dag::of(plan)))
    }
}

impl<C: Clock + Clone> Throttle<C> {
    pub(super) fn new(clock: C, least_bursts: HashMap<String, u64>) -> Self {
        Self { clock, buckets: HashMap::new(), least_bursts }
    }

    /// Takes up to `rows` from `option`'s bucket at `rate` rows per second: how many it took (at
    /// least one), or how long to wait before any fits. A rate of 0 (or less) is unthrottled. A
    /// new rate replaces the option's bucket, so an operator's change applies from the next chunk.
    pub(super) fn try_take(&mut self, option: &str, rate: f64, rows: u64) -> Result<u64, Duration> {
        if rate <= 0.0 || !rate.is_finite() || rows == 0 {
            return Ok(rows);
        }
        if self.buckets.get(option).is_none_or(|(built_for, _)| *built_for != rate) {
            let period = Duration::from_secs_f64(1.0 / rate.max(SLOWEST_RATE)).max(Duration::from_nanos(1));
            let quota = Quota::with_period(period).expect("a positive period").allow_burst(self.burst(option, rate));
            self.buckets.insert(option.to_owned(), (rate, RateLimiter::direct_with_clock(quota, self.clock.clone())));
        }
        let (_, bucket) = &self.buckets[option];
        let piece = rows.min(u64::from(self.burst(option, rate).get()));
        match bucket.check_n(nonzero(to_u32(piece))) {
            Ok(Ok(())) | Err(_) => Ok(piece),
            Ok(Err(not_until)) => Err(not_until.wait_time_from(self.clock.now())),
        }
    }

    /// One second of rows or the option's least burst, whichever is more: the same for every
    /// caller of an option, so models sharing a limit share one bucket.
    fn burst(&self, option: &str, rate: f64) -> NonZeroU32 {
        let least = self.least_bursts.get(option).copied().unwrap_or(1);
        nonzero(to_u32(bucket_rows(rate, least)))
    }
}

/// The rate-limit buckets of one plan, shared by every deletion that is handed a clone: the
/// batches of a clean-up command keep to the limits together, not each afresh.
#[derive(Clone)]
pub(crate) struct Pacing(Arc<Mutex<Throttle>>);

impl Pacing {
    /// Empty buckets for the rate limits of `plan`.
    pub(crate) fn for_plan(plan: &Plan) -> Self {
        Self(Arc::new(Mutex::new(Throttle::for_plan(plan))))
    }

    /// An empty bucket for `option` alone, holding at least `least_burst` rows (the most one
    /// step charges at once).
    pub(crate) fn for_option(option: &str, least_burst: u64) -> Self {
        let throttle = Throttle::new(DefaultClock::default(), HashMap::from([(option.to_owned(), least_burst)]));
        Self(Arc::new(Mutex::new(throttle)))
    }

    /// [`Throttle::try_take`] on the shared buckets.
    fn try_take(&self, option: &str, rate: f64, rows: u64) -> Result<u64, Duration> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).try_take(option, rate, rows)
    }

    /// Charges `rows` to `option`'s bucket at `rate` rows per second, waiting while it is empty
    /// (a wait is counted in the metrics); `false` when `stop` was set meanwhile.
    pub(crate) async fn take(&self, option: &str, rate: f64, rows: u64, stop: Option<&AtomicBool>) -> bool {
        let mut left = rows;
        let mut waited = Duration::ZERO;
        let mut go_on = true;
        while left > 0 && go_on {
            match self.try_take(option, rate, left) {
                Ok(taken) => left -= taken,
                Err(wait) => {
                    let started = Instant::now();
                    go_on = sleep_unless_stopped(wait, stop).await;
                    waited += started.elapsed();
                }
            }
        }
        if !waited.is_zero() {
            metrics::counter!(telemetry::RATE_LIMIT_WAITS, telemetry::OPTION => option.to_owned()).increment(1);
            metrics::gauge!(telemetry::RATE_LIMIT_WAIT_SECONDS, telemetry::OPTION => option.to_owned())
                .increment(waited.as_secs_f64());
        }
        go_on
    }
}

/// Sleeps for `wait`, looking at the stop flag often; `false` when stopped.
async fn sleep_unless_stopped(wait: Duration, stop: Option<&AtomicBool>) -> bool {
    // A wait past what the clock can hold: an hour, then the bucket is asked again.
    let until = Instant::now().checked_add(wait).unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
    while Instant::now() < until {
        if stop.is_some_and(|stop| stop.load(Ordering::SeqCst)) {
            return false;
        }
        tokio::time::sleep(crate::stop::CHECK_EVERY.min(until - Instant::now())).await;
    }
    true
}

impl std::fmt::Debug for Pacing {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Pacing")
    }
}

/// Per option, the largest configured chunk of the steps it paces: the steps of the models that
/// name it and every step below them.
pub(crate) fn least_bursts(dag: &Dag<'_>) -> HashMap<String, u64> {
    let mut bursts: HashMap<String, u64> = HashMap::new();
    for (node, limits) in limits_above(dag) {
        for limit in limits {
            let burst = bursts.entry(limit.to_owned()).or_default();
            *burst = (*burst).max(node.chunk_size);
        }
    }
    bursts
}

/// Each node of `dag` with the rate limits its chunks may be charged to: its own and those of
/// every node above it on any path from the root, each once.
pub(crate) fn limits_above<'a>(dag: &Dag<'a>) -> Vec<(&'a PlanNode, Vec<&'a str>)> {
    let mut by_step: HashMap<usize, Vec<&'a str>> = HashMap::with_capacity(dag.nodes().len());
    // Parents come before their children, so each parent's limits are known when a child is met.
    for &node in dag.nodes() {
        let mut limits: Vec<&'a str> = node.rate_limit.as_deref().into_iter().collect();
        for parent in dag.parents(node) {
            for limit in &by_step[&parent.step] {
                if !limits.contains(limit) {
                    limits.push(limit);
                }
            }
        }
        by_step.insert(node.step, limits);
    }
    dag.nodes().iter().map(|&node| (node, by_step.remove(&node.step).unwrap_or_default())).collect()
}

/// The rows a bucket at `rate` rows per second holds: one second of rows or `least_burst` (the
/// largest chunk it paces), whichever is more.
pub(crate) fn bucket_rows(rate: f64, least_burst: u64) -> u64 {
    u64::from(nonzero(to_u32((rate.ceil() as u64).max(least_burst))).get())
}

/// The least time charging `rows` to a bucket at `rate` takes: the first bucketful goes at once,
/// the rest at the rate. The estimate of `plan` uses it, so it promises what the throttle does.
pub(crate) fn paced_seconds(rows: u64, rate: f64, least_burst: u64) -> f64 {
    match rate > 0.0 && rate.is_finite() {
        true => rows.saturating_sub(bucket_rows(rate, least_burst)) as f64 / rate.max(SLOWEST_RATE),
        false => 0.0,
    }
}

/// The rate limits a chunk of `path`'s last node is charged to: its own and its ancestors', each
/// once, nearest first.
pub(super) fn limits_on_path<'a>(path: impl DoubleEndedIterator<Item = &'a PlanNode>) -> Vec<&'a str> {
    let mut limits: Vec<&str> = Vec::new();
    for node in path.rev() {
        if let Some(limit) = node.rate_limit.as_deref().filter(|limit| !limits.contains(limit)) {
            limits.push(limit);
        }
    }
    limits
}

fn to_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn nonzero(value: u32) -> NonZeroU32 {
    NonZeroU32::new(value.max(1)).expect("at least 1")
}

#[cfg(test)]
mod tests {
    use governor::clock::FakeRelativeClock;

    use super::*;

    fn bursts(rows: u64) -> HashMap<String, u64> {
        HashMap::from([("rows_per_second".to_owned(), rows)])
    }

    /// Charges `chunks` chunks of `rows` to every limit in `limits`, advancing the fake clock by
    /// every wait; the total time.
    fn run(
        throttle: &mut Throttle<FakeRelativeClock>,
        clock: &FakeRelativeClock,
        limits: &[(&str, f64)],
        chunks: u64,
        rows: u64,
    ) -> Duration {
        let start = clock.now();
        for _ in 0..chunks {
            for (option, rate) in limits {
                let mut left = rows;
                while left > 0 {
                    match throttle.try_take(option, *rate, left) {
                        Ok(taken) => left -= taken,
                        Err(wait) => clock.advance(wait),
                    }
                }
            }
        }
        Duration::from_nanos(clock.now().saturating_sub(start).as_u64())
    }

    /// The estimate's model against the throttle itself: random rates, bucket sizes and chunks
    /// (none larger than the bucket's least burst, as a plan's are), charged on the fake clock.
    #[test]
    fn paced_seconds_is_what_the_throttle_takes() {
        let mut random = crate::random::Random::seeded(29);
        let mut waited = 0;
        for case in 0..500 {
            let rate = [0.5, 3.0, 100.0, 300.0, 2_500.0][random.below(5) as usize];
            let least_burst = 1 + random.below(6_000);
            let clock = FakeRelativeClock::default();
            let mut throttle = Throttle::new(clock.clone(), bursts(least_burst));
            let chunks: Vec<u64> = (0..1 + random.below(40)).map(|_| 1 + random.below(least_burst)).collect();
            let mut taken = Duration::ZERO;
            for rows in &chunks {
                taken += run(&mut throttle, &clock, &[("rows_per_second", rate)], 1, *rows);
            }
            let expected = paced_seconds(chunks.iter().sum(), rate, least_burst);
            // The throttle's period is whole nanoseconds, so it drifts by a nanosecond a row.
            let tolerance = 1e-9 * chunks.iter().sum::<u64>() as f64 + 1e-6;
            assert!(
                (taken.as_secs_f64() - expected).abs() <= tolerance,
                "case {case}: {chunks:?} at {rate} rows/s, bucket {least_burst}: took {taken:?}, estimated {expected}"
            );
            waited += usize::from(!taken.is_zero());
        }
        assert!(waited > 100, "only {waited} cases waited at all");
    }

    #[test]
    fn a_vanishing_rate_waits_instead_of_panicking() {
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone(), bursts(1));
        assert_eq!(throttle.try_take("rows_per_second", 1e-30, 1), Ok(1));
        let wait = throttle.try_take("rows_per_second", 1e-30, 1).unwrap_err();
        assert_eq!(wait, Duration::from_secs(3600));
        assert_eq!(paced_seconds(2, 1e-30, 1), 3600.0);
    }

    #[test]
    fn paces_rows_to_the_rate_after_one_second_of_rows() {
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone(), bursts(100));
        // 10 chunks of 100 rows at 200 rows/s: the first 200 rows fit the bucket, the other 800
        // rows take 4 s.
        assert_eq!(run(&mut throttle, &clock, &[("rows_per_second", 200.0)], 10, 100), Duration::from_secs(4));
    }

    #[test]
    fn a_chunk_larger_than_the_bucket_waits_for_all_its_rows() {
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone(), bursts(200));
        // Two chunks of 1,000 rows at 100 rows/s with a bucket of 200: 200 at once, the other
        // 1,800 over 18 s.
        assert_eq!(run(&mut throttle, &clock, &[("rows_per_second", 100.0)], 2, 1000), Duration::from_secs(18));
    }

    #[test]
    fn the_bucket_holds_at_least_one_chunk() {
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone(), bursts(1000));
        // Three chunks of 1,000 rows at 100 rows/s: the first chunk at once, then 10 s each.
        assert_eq!(run(&mut throttle, &clock, &[("rows_per_second", 100.0)], 3, 1000), Duration::from_secs(20));
    }

    #[test]
    fn a_changed_rate_applies_to_the_next_chunk() {
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone(), bursts(100));
        let slow = run(&mut throttle, &clock, &[("rows_per_second", 100.0)], 5, 100);
        let fast = run(&mut throttle, &clock, &[("rows_per_second", 1000.0)], 5, 100);
        assert_eq!(slow, Duration::from_secs(4));
        assert!(fast < Duration::from_millis(500), "{fast:?}");
    }

    #[test]
    fn zero_is_unthrottled_and_fractions_work() {
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone(), bursts(1));
        assert_eq!(run(&mut throttle, &clock, &[("rows_per_second", 0.0)], 100, 1000), Duration::ZERO);
        // Half a row per second: after the first row, each row waits 2 s.
        assert_eq!(run(&mut throttle, &clock, &[("rows_per_second", 0.5)], 3, 1), Duration::from_secs(4));
    }

    const CONFIG: &str = r#"
[options]
"organization.rows_per_second" = 100
"project.rows_per_second" = 1000

[models.organization]
table = "organization"
rate_limit = "organization.rows_per_second"
children = [{ model = "project", column = "organization_id" }]

[models.project]
table = "project"
rate_limit = "project.rows_per_second"
children = [{ model = "task", column = "project_id" }]

[models.task]
table = "task"
strategy = "bulk"
chunk_size = 500
"#;

    #[test]
    fn rows_below_a_limited_model_count_against_its_limit() {
        let config = crate::planner::fixture::checked(CONFIG);
        let plan = crate::planner::compile(&config, "organization").unwrap();
        let project = &plan.root.children[0];
        let task = &project.children[0];
        let limits = limits_on_path([&plan.root, project, task].into_iter());
        assert_eq!(limits, ["project.rows_per_second", "organization.rows_per_second"]);

        // 5,000 task rows in chunks of 500 under an organization limited to 100 rows per second:
        // the organization's limit paces them (45 s after its first chunk), not only the one
        // organization row.
        assert_eq!(
            least_bursts(&Dag::of(&plan)),
            HashMap::from([
                ("organization.rows_per_second".to_owned(), 500),
                ("project.rows_per_second".to_owned(), 500)
            ])
        );
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone(), least_bursts(&Dag::of(&plan)));
        let rates: Vec<(&str, f64)> = limits.iter().map(|limit| (*limit, config.option_values()[*limit])).collect();
        assert_eq!(run(&mut throttle, &clock, &rates, 10, 500), Duration::from_secs(45));
    }
}
