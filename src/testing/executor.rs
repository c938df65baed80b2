//! Runs one async extension point to its end inside a synchronous unit test.
//!
//! Plugins' async points (PreFilter, PreScore, Reserve, ...) do no I/O in unit tests, so
//! a test needs no runtime to call one: [`complete`] polls the future on the test's own
//! thread. Tests that need timers or I/O use `#[tokio::test]` instead.

use std::future::Future;

/// The output of `future`, polled to its end on the calling thread.
pub fn complete<F: Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_a_future_that_waits_on_another() {
        let (sender, receiver) = futures::channel::oneshot::channel();
        let waiting = async move { receiver.await.map(|n: u32| n * 2) };
        std::thread::spawn(move || sender.send(21));
        assert_eq!(complete(waiting), Ok(42));
    }
}
