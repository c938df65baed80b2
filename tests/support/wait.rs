//! Bounded waits: a test that waits for something fails with what it waited for instead
//! of hanging.

use std::time::Duration;

/// Awaits `future` for at most `timeout`; fails the test naming `what` after that.
pub async fn within<F: std::future::Future>(what: &str, timeout: Duration, future: F) -> F::Output {
    tokio::time::timeout(timeout, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {timeout:?} {what}"))
}
