//! Long-running work (a worker, a drainer) stops between units when a flag is set, by Ctrl-C,
//! SIGTERM or the caller; waiting looks at the flag often so stopping is prompt.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the stop flag is looked at while waiting.
pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(100);

/// Waits `duration`, or less when `stop` is set meanwhile.
pub(crate) async fn pause(duration: Duration, stop: &AtomicBool) {
    let started = Instant::now();
    while started.elapsed() < duration && !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(CHECK_EVERY.min(duration.saturating_sub(started.elapsed()))).await;
    }
}

/// Completes once `stop` is set.
pub(crate) async fn stopped(stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(CHECK_EVERY).await;
    }
}
