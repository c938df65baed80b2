//! The worker pools per-node work runs on: Filter and Score in the runner, and plugins
//! that spread their own per-node work (PodTopologySpread's domain counting) through
//! [`Handle::pool`](super::Handle::pool).
//!
//! One pool per degree of parallelism, shared by every profile of the process: profiles
//! with the same `--parallelism` reuse the same threads instead of starting a pool each,
//! and no part of a cycle runs on rayon's global pool (which would ignore the flag).
//! The degree is bounded by [`MAX_PARALLELISM`]; the command-line flags reject larger
//! values, and [`pool`] clamps whatever reaches it.

use std::sync::{Arc, Mutex, PoisonError};

/// The most worker threads one pool runs. Filter and Score are CPU-bound, so threads
/// beyond the machine's cores only add switching; this bound keeps a mistyped flag
/// (`--parallelism 100000`) from starting a thread per value.
pub const MAX_PARALLELISM: usize = 256;

/// The default degree: the CPUs this process may use, within [`MAX_PARALLELISM`].
pub fn default_parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_PARALLELISM))
}

static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());

/// The shared pool of `parallelism` threads (clamped to `1..=MAX_PARALLELISM`), started
/// on first use.
pub fn pool(parallelism: usize) -> Result<Arc<rayon::ThreadPool>, String> {
    let threads = parallelism.clamp(1, MAX_PARALLELISM);
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, pool)) = pools.iter().find(|(n, _)| *n == threads) {
        return Ok(pool.clone());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("berth-worker-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| format!("cannot start a pool of {threads} worker threads: {e}"))?;
    pools.push((threads, pool.clone()));
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_are_shared_per_degree_and_bounded() {
        let a = pool(3).expect("a pool");
        let b = pool(3).expect("a pool");
        assert!(Arc::ptr_eq(&a, &b), "one pool per degree of parallelism");
        assert_eq!(a.current_num_threads(), 3);
        assert_eq!(pool(0).expect("a pool").current_num_threads(), 1);
        assert_eq!(
            pool(100_000).expect("a pool").current_num_threads(),
            MAX_PARALLELISM
        );
    }
}
