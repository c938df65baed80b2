//! The one [`Parallelizer`] per-node work runs on: Filter and Score in the runner, and
//! plugins that spread their own per-node work (PodTopologySpread's domain counting),
//! which reach it through [`Handle::parallelizer`](super::Handle::parallelizer).
//!
//! The adapter creates one for the process and hands it to the
//! [`Scheduler`](crate::scheduler::Scheduler), whose profiles all share it: profiles do
//! not start threads of their own, and nothing runs on rayon's global pool (which would
//! ignore `--parallelism`). The degree is bounded by [`MAX_PARALLELISM`]; the command-line
//! flags reject larger values, and [`Parallelizer::new`] clamps whatever reaches it.
//!
//! Where the loop that calls the passes runs is the adapter's choice, because a pass
//! blocks its caller until every node is done: `berth simulate` and `berth bench` run
//! their whole loop on a worker ([`Parallelizer::run`]), so that a pass splits its nodes
//! with the other workers in place rather than handing them over and sleeping; the
//! operator's loop runs on tokio and wraps each pass in
//! [`tokio::task::block_in_place`] (see `operator::scheduling_loop`).

/// The most worker threads one parallelizer runs. Filter and Score are CPU-bound, so
/// threads beyond the machine's cores only add switching; this bound keeps a mistyped
/// flag (`--parallelism 100000`) from starting a thread per value.
pub const MAX_PARALLELISM: usize = 256;

/// The default degree: the CPUs this process may use, within [`MAX_PARALLELISM`].
pub fn default_parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_PARALLELISM))
}

/// Worker threads for per-node work; with a degree of 1 (or [`Default`]), no thread at
/// all: the work runs on the caller's thread, where handing it to one worker and waiting
/// would only add two context switches.
#[derive(Default)]
pub struct Parallelizer {
    pool: Option<rayon::ThreadPool>,
}

impl std::fmt::Debug for Parallelizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parallelizer")
            .field("parallelism", &self.parallelism())
            .finish()
    }
}

impl Parallelizer {
    /// Starts `parallelism` worker threads (clamped to `1..=MAX_PARALLELISM`).
    pub fn new(parallelism: usize) -> Result<Parallelizer, String> {
        let threads = parallelism.clamp(1, MAX_PARALLELISM);
        if threads == 1 {
            return Ok(Parallelizer::default());
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("berth-worker-{i}"))
            // A driver loop may run on a worker (see `run`): the main thread's size.
            .stack_size(8 << 20)
            .build()
            .map_err(|e| format!("cannot start a pool of {threads} worker threads: {e}"))?;
        Ok(Parallelizer { pool: Some(pool) })
    }

    /// The number of threads per-node work is split over.
    pub fn parallelism(&self) -> usize {
        self.pool
            .as_ref()
            .map_or(1, rayon::ThreadPool::current_num_threads)
    }

    /// Runs `work` on one of the workers, waiting for it (in place when there are none).
    /// For a driver loop that owns its thread: [`map_range`](Self::map_range) called
    /// inside splits the nodes with the other workers without a second handoff.
    pub fn run<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }

    /// `f(0), …, f(n - 1)` in order, split over the workers.
    pub fn map_range<T: Send>(&self, n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
        use rayon::prelude::*;
        match &self.pool {
            Some(pool) => pool.install(|| (0..n).into_par_iter().map(f).collect()),
            None => (0..n).map(f).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallelism_is_bounded() {
        for (asked, got) in [(0, 1), (1, 1), (3, 3), (100_000, MAX_PARALLELISM)] {
            let parallelizer = Parallelizer::new(asked).expect("workers start");
            assert_eq!(parallelizer.parallelism(), got, "asked for {asked}");
        }
    }

    #[test]
    fn map_range_keeps_order_on_any_degree() {
        let want: Vec<usize> = (0..1000).map(|i| i * i).collect();
        for threads in [1, 2, 4] {
            let parallelizer = Parallelizer::new(threads).expect("workers start");
            assert_eq!(
                parallelizer.map_range(1000, |i| i * i),
                want,
                "{threads} threads"
            );
            let nested = parallelizer.run(|| parallelizer.map_range(1000, |i| i * i));
            assert_eq!(nested, want, "{threads} threads, inside run");
        }
    }
}
