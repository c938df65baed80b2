//! The simulator's virtual time: a [`Clock`] that stands still until the driver moves it.
//!
//! A simulated cluster never changes on its own, so waiting in real time would only make
//! `berth simulate` slow: when nothing can run but a wait (a pod backing off, a pod held
//! at Permit), the driver jumps the clock to the earliest deadline
//! ([`VirtualClock::advance_to`]) and the wait ends at once. Deadlines are reached in
//! order and every run is reproducible. The async runtime keeps its real timer, so I/O
//! that plugins do during a cycle (metrics queries) times out in real time.
//!
//! The driver must know that everything waits on this clock before it moves it; it
//! counts the waits ([`VirtualClock::sleepers`]) and how often the binding cycles it
//! spawned were polled (see `run::run_to_completion`).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use crate::framework::Clock;
use crate::framework::clock::Instant;

/// Virtual time; cheap to clone (clones share the time and the waits).
#[derive(Clone)]
pub struct VirtualClock {
    state: Arc<Mutex<State>>,
}

struct State {
    now: Instant,
    /// Pending waits by deadline, then by creation (so equal deadlines wake in order).
    sleepers: BTreeMap<(Instant, u64), Waker>,
    next_sleeper: u64,
}

impl Default for VirtualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl VirtualClock {
    /// Virtual time starting at the real present.
    pub fn new() -> Self {
        VirtualClock {
            state: Arc::new(Mutex::new(State {
                now: Instant::now(),
                sleepers: BTreeMap::new(),
                next_sleeper: 0,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Moves the time to `at` (never back) and wakes every wait due by then.
    pub fn advance_to(&self, at: Instant) {
        let due: Vec<Waker> = {
            let mut state = self.lock();
            if at > state.now {
                state.now = at;
            }
            let now = state.now;
            let later = state.sleepers.split_off(&(now, u64::MAX));
            std::mem::replace(&mut state.sleepers, later)
                .into_values()
                .collect()
        };
        due.into_iter().for_each(Waker::wake);
    }

    /// The earliest deadline anything waits for.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.lock().sleepers.keys().next().map(|(at, _)| *at)
    }

    /// How many waits are pending.
    pub fn sleepers(&self) -> usize {
        self.lock().sleepers.len()
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // The map stays consistent across a panic elsewhere: every update is one call.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Clock for VirtualClock {
    fn now(&self) -> Instant {
        self.lock().now
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let id = {
            let mut state = self.lock();
            state.next_sleeper += 1;
            state.next_sleeper
        };
        Box::pin(Sleep {
            state: self.state.clone(),
            key: (deadline, id),
        })
    }
}

/// One wait; registered while it is pending, unregistered when it ends or is dropped.
struct Sleep {
    state: Arc<Mutex<State>>,
    key: (Instant, u64),
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.state);
        if state.now >= self.key.0 {
            state.sleepers.remove(&self.key);
            return Poll::Ready(());
        }
        state.sleepers.insert(self.key, cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        lock(&self.state).sleepers.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn time_moves_only_when_advanced_and_wakes_what_is_due() {
        let clock = VirtualClock::new();
        let start = clock.now();
        let (first, second) = (
            start + Duration::from_secs(10),
            start + Duration::from_secs(20),
        );
        let early = tokio::spawn(clock.sleep_until(first));
        let late = tokio::spawn(clock.sleep_until(second));
        tokio::task::yield_now().await;
        assert_eq!(clock.now(), start, "time stands still");
        assert_eq!(clock.sleepers(), 2);
        assert_eq!(clock.next_deadline(), Some(first));

        clock.advance_to(first);
        early.await.expect("the first wait ends at its deadline");
        assert_eq!(clock.sleepers(), 1, "the later wait still pends");
        assert!(!late.is_finished());

        clock.advance_to(start);
        assert_eq!(clock.now(), first, "time never goes back");
        clock.advance_to(second + Duration::from_secs(1));
        late.await.expect("a wait past its deadline ends");
        assert_eq!(clock.sleepers(), 0);
    }

    #[tokio::test]
    async fn a_wait_already_due_ends_at_once_and_a_dropped_one_is_forgotten() {
        let clock = VirtualClock::new();
        clock.sleep_until(clock.now()).await;
        let mut dropped = clock.sleep_until(clock.now() + Duration::from_secs(5));
        assert!(futures::poll!(&mut dropped).is_pending());
        assert_eq!(clock.sleepers(), 1);
        drop(dropped);
        assert_eq!(clock.sleepers(), 0);
    }
}
