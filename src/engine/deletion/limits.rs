//! Rate limits while deleting: each committed step's rows are charged to the limits on its path,
//! with the options' values read again from `cascade_option` while the deletion runs.

use std::time::{Duration, Instant};

use tracing::{debug, info};

use super::Deletion;
use crate::engine::throttle::limits_on_path;
use crate::planner::PlanNode;

/// How often an option's value is read again from `cascade_option` while deleting.
const OPTION_REFRESH: Duration = Duration::from_secs(1);

impl<'a> Deletion<'a> {
    /// Charges the rows of each step (the top frame's node, or one of its children) to the rate
    /// limits on its path, waiting as long as they ask.
    pub(super) async fn charge_rate_limits(&mut self, steps: &[(&'a PlanNode, u64)]) {
        for (node, rows) in steps {
            let path = self.stack.iter().map(|frame| frame.work.node).filter(|above| !std::ptr::eq(*above, *node));
            let limits = limits_on_path(path.chain(std::iter::once(*node)));
            self.wait_for_limits(limits, *rows).await;
        }
    }

    /// Takes `rows` from the bucket of each of `limits`, waiting while one is empty.
    pub(super) async fn wait_for_limits(&mut self, limits: Vec<&str>, rows: u64) {
        for option in limits {
            let rate = self.rate(option).await;
            if !self.pacing.take(option, rate, rows, self.options.stop.as_deref()).await {
                return;
            }
        }
    }

    /// The option's current value: `cascade_option` over `[options]`, read at most once a second.
    pub(super) async fn rate(&mut self, option: &str) -> f64 {
        if self.rates_read.is_none_or(|read| read.elapsed() >= OPTION_REFRESH) {
            match crate::engine::current_options(self.config, self.database).await {
                Ok(rates) => {
                    for (name, rate) in &rates {
                        if self.rates.get(name) != Some(rate) {
                            info!(option = %name, rows_per_second = rate, "rate limit changed");
                        }
                    }
                    self.rates = rates;
                }
                Err(error) => debug!(%error, "cannot read cascade_option; keeping the previous values"),
            }
            self.rates_read = Some(Instant::now());
        }
        self.rates.get(option).copied().unwrap_or(0.0)
    }
}
