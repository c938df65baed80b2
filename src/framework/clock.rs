//! The one source of time of the scheduling core: queue timestamps and backoff, assumed
//! pods' expiry, Permit deadlines and plugins' own timers (Coscheduling's backoff, the
//! Prometheus query cache) all read the [`Clock`] the scheduler was given (plugins through
//! their [`Handle`](super::Handle)), never a timer of their own.
//!
//! The core reads time through this trait so that the adapter decides what time is: the
//! operator runs on the async runtime's timer ([`RuntimeClock`], real time); `berth
//! simulate` and `berth bench` run on the simulator's virtual clock, which stands still
//! until their driver moves it, so that backoff and Permit timeouts elapse at once and
//! every run is reproducible. A deadline is a plain [`Instant`], so values cross between
//! the core and its adapters unchanged.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use std::time::Instant;

/// Time as the scheduling core sees it.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Instant;

    /// Completes once [`now`](Clock::now) has reached `deadline` (at once when it has).
    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// The async runtime's timer: the machine's monotonic clock (the operator), or a test's
/// paused time when the test started its runtime paused.
#[derive(Debug, Clone, Copy, Default)]
pub struct RuntimeClock;

impl RuntimeClock {
    /// The clock, shared as the core takes it.
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(RuntimeClock)
    }
}

impl Clock for RuntimeClock {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep_until(tokio::time::Instant::from_std(
            deadline,
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn runtime_clock_follows_the_paused_runtime() {
        let clock = RuntimeClock;
        let start = clock.now();
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(clock.now().duration_since(start), Duration::from_secs(30));
        let deadline = clock.now() + Duration::from_secs(10);
        clock.sleep_until(deadline).await;
        assert!(clock.now() >= deadline, "the sleep ends at its deadline");
    }
}
