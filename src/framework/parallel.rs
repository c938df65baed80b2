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
        // A driver loop may run on a worker (see `run_in_pool`): the main thread's size.
        .stack_size(8 << 20)
        .build()
        .map(Arc::new)
        .map_err(|e| format!("cannot start a pool of {threads} worker threads: {e}"))?;
    pools.push((threads, pool.clone()));
    Ok(pool)
}

/// Runs `work` for its per-node calls of [`map_range`]: on `pool`'s threads, or in place
/// on the caller's thread when the pool has a single thread, where handing the work to
/// that one worker and waiting for it would only add two context switches.
pub fn run_on<R: Send>(pool: &rayon::ThreadPool, work: impl FnOnce() -> R + Send) -> R {
    if pool.current_num_threads() <= 1 {
        work()
    } else {
        pool.install(work)
    }
}

/// Runs `work`, a whole scheduling loop, on a worker of the shared pool of
/// `parallelism` threads: its Filter and Score passes then split their nodes with the
/// other workers in place, instead of handing each pass to the pool and sleeping until
/// it is done. For the command-line drivers (`simulate`, `bench`), whose loop owns its
/// thread; the operator's loop runs on tokio and hands passes over. Runs on the
/// caller's thread when the pool cannot start.
pub fn run_in_pool<R: Send>(parallelism: usize, work: impl FnOnce() -> R + Send) -> R {
    match pool(parallelism) {
        Ok(pool) => run_on(&pool, work),
        Err(_) => work(),
    }
}

/// `f(0), …, f(n - 1)` in order, split over `pool`'s threads (in place on the caller's
/// thread for a single-thread pool, or when called inside [`run_on`] of the same pool,
/// without a second handoff).
pub fn map_range<T: Send>(
    pool: &rayon::ThreadPool,
    n: usize,
    f: impl Fn(usize) -> T + Sync + Send,
) -> Vec<T> {
    use rayon::prelude::*;
    if pool.current_num_threads() <= 1 {
        (0..n).map(f).collect()
    } else {
        pool.install(|| (0..n).into_par_iter().map(f).collect())
    }
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

    #[test]
    fn map_range_keeps_order_on_any_pool() {
        let want: Vec<usize> = (0..1000).map(|i| i * i).collect();
        for threads in [1, 2, 4] {
            let pool = pool(threads).expect("a pool");
            assert_eq!(map_range(&pool, 1000, |i| i * i), want, "{threads} threads");
            let nested = run_on(&pool, || map_range(&pool, 1000, |i| i * i));
            assert_eq!(nested, want, "{threads} threads, inside run_on");
        }
    }
}
