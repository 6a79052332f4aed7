//! Rate limits: a leaky bucket (governor's GCRA) per option, in rows per second, with a burst
//! of at least one chunk. The rows of each chunk are taken from the bucket after the chunk;
//! while the bucket is empty the next chunk waits. The clock is governor's, so tests use a
//! fake one instead of wall time.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

type Bucket<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

pub struct Throttle<C: Clock + Clone = DefaultClock> {
    clock: C,
    /// Per option: the rate and burst its bucket was built for, and the bucket.
    buckets: HashMap<String, (f64, u32, Bucket<C>)>,
}

impl Default for Throttle<DefaultClock> {
    fn default() -> Self {
        Self::new(DefaultClock::default())
    }
}

impl<C: Clock + Clone> Throttle<C> {
    pub fn new(clock: C) -> Self {
        Self { clock, buckets: HashMap::new() }
    }

    /// Takes `rows` (at most one chunk) from `option`'s bucket at `rate` rows per second, or
    /// says how long to wait before trying again. A rate of 0 (or less) is unthrottled. A new
    /// rate replaces the option's bucket, so an operator's change applies from the next chunk.
    pub fn try_take(&mut self, option: &str, rate: f64, rows: u64, chunk_size: u64) -> Result<(), Duration> {
        if rate <= 0.0 || !rate.is_finite() || rows == 0 {
            return Ok(());
        }
        let burst = to_u32(chunk_size.max(rows).max(rate.ceil() as u64));
        let current = self.buckets.get(option).is_some_and(|(r, b, _)| *r == rate && *b == burst);
        if !current {
            let period = Duration::from_secs_f64(1.0 / rate).max(Duration::from_nanos(1));
            let quota = Quota::with_period(period).expect("a positive period").allow_burst(nonzero(burst));
            let bucket = RateLimiter::direct_with_clock(quota, self.clock.clone());
            self.buckets.insert(option.to_owned(), (rate, burst, bucket));
        }
        let (_, _, bucket) = &self.buckets[option];
        match bucket.check_n(nonzero(to_u32(rows))) {
            Ok(Ok(())) | Err(_) => Ok(()),
            Ok(Err(not_until)) => Err(not_until.wait_time_from(self.clock.now())),
        }
    }
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

    /// Takes `chunks` chunks of `rows`, advancing the fake clock by every wait; the total time.
    fn run(
        throttle: &mut Throttle<FakeRelativeClock>,
        clock: &FakeRelativeClock,
        rate: f64,
        chunks: u64,
        rows: u64,
    ) -> Duration {
        let start = clock.now();
        for _ in 0..chunks {
            while let Err(wait) = throttle.try_take("rows_per_second", rate, rows, rows) {
                clock.advance(wait);
            }
        }
        Duration::from_nanos(clock.now().saturating_sub(start).as_u64())
    }

    #[test]
    fn paces_rows_to_the_rate_after_a_burst_of_one_chunk() {
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone());
        // 10 chunks of 100 rows at 200 rows/s: the first two chunks fit the burst (200 rows),
        // the other 800 rows take 4 s.
        assert_eq!(run(&mut throttle, &clock, 200.0, 10, 100), Duration::from_secs(4));
    }

    #[test]
    fn a_changed_rate_applies_to_the_next_chunk() {
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone());
        let slow = run(&mut throttle, &clock, 100.0, 5, 100);
        let fast = run(&mut throttle, &clock, 1000.0, 5, 100);
        assert_eq!(slow, Duration::from_secs(4));
        assert!(fast < Duration::from_millis(500), "{fast:?}");
    }

    #[test]
    fn zero_is_unthrottled_and_fractions_work() {
        let clock = FakeRelativeClock::default();
        let mut throttle = Throttle::new(clock.clone());
        assert_eq!(run(&mut throttle, &clock, 0.0, 100, 1000), Duration::ZERO);
        // Half a row per second: after the first row, each row waits 2 s.
        assert_eq!(run(&mut throttle, &clock, 0.5, 3, 1), Duration::from_secs(4));
    }
}
