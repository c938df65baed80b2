//! The backoff of every list and watch, as client-go's reflector has it
//! (`wait.NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)`): after a failure the
//! next attempt waits 800 ms, doubling per consecutive failure up to 30 s, each wait
//! jittered by up to +100 %; a success, or two minutes without a failure, starts over.
//!
//! Why not kube-runtime's `default_backoff`: it resets on every `Ok` event, and the
//! watcher yields `Ok(Event::Init)` before each (re)list, so a list that always fails (a
//! kind the server does not serve, a missing permission, a server that is down) was
//! retried every 0.8–1.6 s forever, with a warning each time. Here only an event that
//! shows the server answered (an object, or the end of a list) counts as a success.

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::watcher::{self, Event};
use rand::Rng;
use tokio::time::Instant;

/// The first wait after a failure.
pub const INITIAL: Duration = Duration::from_millis(800);
/// The longest wait before jitter.
pub const MAX: Duration = Duration::from_secs(30);
/// A failure this long after the previous one starts over at [`INITIAL`].
pub const RESET_AFTER: Duration = Duration::from_secs(120);

/// The reflector's backoff state.
#[derive(Debug, Clone)]
pub struct ReflectorBackoff {
    next: Duration,
    last_failure: Option<Instant>,
}

impl Default for ReflectorBackoff {
    fn default() -> Self {
        ReflectorBackoff {
            next: INITIAL,
            last_failure: None,
        }
    }
}

impl ReflectorBackoff {
    /// The wait before the attempt after a failure at `now`, before jitter; advances
    /// the state.
    pub fn base_wait(&mut self, now: Instant) -> Duration {
        if self
            .last_failure
            .is_some_and(|last| now.duration_since(last) >= RESET_AFTER)
        {
            self.next = INITIAL;
        }
        self.last_failure = Some(now);
        let wait = self.next;
        self.next = (self.next * 2).min(MAX);
        wait
    }

    /// [`ReflectorBackoff::base_wait`] jittered by a factor in `[1, 2)`.
    pub fn wait(&mut self, now: Instant) -> Duration {
        let base = self.base_wait(now);
        base.mul_f64(1.0 + rand::rng().random::<f64>())
    }

    /// The server answered: the next failure waits [`INITIAL`] again.
    pub fn reset(&mut self) {
        *self = ReflectorBackoff::default();
    }
}

type Events<K> = Pin<Box<dyn Stream<Item = Result<Event<K>, watcher::Error>> + Send>>;

/// `stream` (a kube-runtime watcher) with the reflector's backoff: an error is passed
/// on at once, and the stream is polled again only after the wait.
pub fn reflector_backoff<K: Send + 'static>(
    stream: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send {
    let state: (Events<K>, ReflectorBackoff, Option<Duration>) =
        (Box::pin(stream), ReflectorBackoff::default(), None);
    futures::stream::unfold(state, |(mut stream, mut backoff, pending)| async move {
        if let Some(wait) = pending {
            tokio::time::sleep(wait).await;
        }
        let item = stream.next().await?;
        let pending = match &item {
            Err(_) => Some(backoff.wait(Instant::now())),
            // Emitted before the list request is even sent: not a sign of success.
            Ok(Event::Init) => None,
            Ok(_) => {
                backoff.reset();
                None
            }
        };
        Some((item, (stream, backoff, pending)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// client-go's reflector: 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, then 30 s for good.
    #[test]
    fn waits_double_from_800ms_to_30s() {
        let mut backoff = ReflectorBackoff::default();
        let start = Instant::now();
        let waits: Vec<Duration> = (0..9)
            .map(|i| backoff.base_wait(start + secs(f64::from(i))))
            .collect();
        let want = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0].map(secs);
        assert_eq!(waits, want);
    }

    #[test]
    fn a_success_or_two_quiet_minutes_start_over() {
        let mut backoff = ReflectorBackoff::default();
        let start = Instant::now();
        backoff.base_wait(start);
        backoff.base_wait(start);
        assert_eq!(backoff.base_wait(start), secs(3.2));
        backoff.reset();
        assert_eq!(backoff.base_wait(start), secs(0.8));
        assert_eq!(backoff.base_wait(start + secs(119.0)), secs(1.6));
        assert_eq!(backoff.base_wait(start + secs(119.0 + 120.0)), secs(0.8));
    }

    #[test]
    fn jitter_adds_up_to_the_wait_again() {
        let mut backoff = ReflectorBackoff::default();
        for _ in 0..200 {
            backoff.reset();
            let wait = backoff.wait(Instant::now());
            assert!(wait >= secs(0.8) && wait < secs(1.6), "{wait:?}");
        }
    }

    /// A watcher whose every list fails, as against a kind the server does not serve:
    /// `Init`, then an error, again and again. The attempts must spread out as the
    /// backoff grows; `Init` must not reset it.
    #[tokio::test(start_paused = true)]
    async fn a_list_that_keeps_failing_is_retried_ever_more_slowly() {
        let attempts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = attempts.clone();
        let failing = futures::stream::iter(0..).flat_map(move |_| {
            seen.lock().expect("lock").push(Instant::now());
            futures::stream::iter(vec![
                Ok(Event::<()>::Init),
                Err(watcher::Error::NoResourceVersion),
            ])
        });
        let started = Instant::now();
        let stream = reflector_backoff(failing);
        let errors: Vec<_> = stream
            .filter(|e| futures::future::ready(e.is_err()))
            .take(8)
            .collect()
            .await;
        assert_eq!(errors.len(), 8);
        let times: Vec<f64> = attempts
            .lock()
            .expect("lock")
            .iter()
            .map(|t| t.duration_since(started).as_secs_f64())
            .collect();
        // Gaps between attempts: at least 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30 s.
        for (i, pair) in times.windows(2).take(7).enumerate() {
            let min = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0][i];
            let gap = pair[1] - pair[0];
            assert!(
                gap >= min && gap < 2.0 * min,
                "gap {i} is {gap} s (times {times:?})"
            );
        }
    }

    /// Objects in between reset it: a watch that breaks now and then after working
    /// retries after about a second each time.
    #[tokio::test(start_paused = true)]
    async fn events_from_the_server_reset_the_backoff() {
        let working = futures::stream::iter(0..6).flat_map(|_| {
            futures::stream::iter(vec![
                Ok(Event::<()>::Init),
                Ok(Event::InitDone),
                Err(watcher::Error::NoResourceVersion),
            ])
        });
        let started = Instant::now();
        let lists: Vec<f64> = reflector_backoff(working)
            .filter_map(|item| async move { matches!(item, Ok(Event::Init)).then(Instant::now) })
            .map(|t| t.duration_since(started).as_secs_f64())
            .collect()
            .await;
        assert_eq!(lists.len(), 6);
        for gap in lists.windows(2).map(|p| p[1] - p[0]) {
            assert!((0.8..1.6).contains(&gap), "lists at {lists:?}");
        }
    }
}
