//! Snapshot micro-benchmarks: what a scheduling cycle pays to see the cluster.
//!
//! - `update_snapshot/one_change/<nodes>`: `Cache::update_snapshot` after one pod was
//!   assumed on one node, the per-cycle cost of the scheduler (the previous cycle's pod is
//!   the only change).
//! - `update_snapshot/first/<nodes>`: the first snapshot, every node info cloned.
//!
//! The cluster is scheduler_perf's node-default nodes carrying 10 pods each: at 5000
//! nodes, about as many pods as upstream's largest run (SchedulingBasic
//! 5000Nodes_50000Pods) leaves bound.

#[allow(dead_code, reason = "each benchmark target uses part of it")]
mod common;

use std::time::{Duration, Instant};

use berth::bench::workload::{PodTemplate, Workload};
use berth::cluster::{Cache, PodInfo, Snapshot};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};

const PODS_PER_NODE: u64 = 10;
const SIZES: [u64; 2] = [500, 5000];

fn cluster(nodes: u64) -> Cache {
    common::cluster(Workload::SchedulingBasic, nodes, PODS_PER_NODE)
}

/// Assumes a pod on node `index`, times the snapshot update that follows, then forgets the
/// pod and updates again untimed, so every timed update sees exactly one changed node.
fn one_change(cache: &mut Cache, snapshot: &mut Snapshot, pod: &PodInfo, index: usize) -> Duration {
    let node = snapshot.nodes()[index].name().to_string();
    cache
        .assume_pod(pod, &node)
        .expect("the measured pod is not in the cache");
    let start = Instant::now();
    cache.update_snapshot(snapshot);
    let elapsed = start.elapsed();
    assert!(
        snapshot
            .get(&node)
            .is_some_and(|n| n.pods.iter().any(|p| p.key() == pod.key())),
        "the snapshot shows the assumed pod on {node}"
    );
    cache
        .forget_pod(pod.key())
        .expect("the measured pod was assumed");
    cache.update_snapshot(snapshot);
    elapsed
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("update_snapshot");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    let pod = PodInfo::new(common::measured_pod(
        PodTemplate::Default,
        "measured".to_string(),
    ))
    .expect("a template pod is valid");
    for nodes in SIZES {
        let mut cache = cluster(nodes);
        let mut snapshot = Snapshot::default();
        cache.update_snapshot(&mut snapshot);
        let mut next = 0;
        group.bench_function(BenchmarkId::new("one_change", nodes), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        // A different node each time, as pods land all over the cluster.
                        next = (next + 1) % snapshot.len();
                        one_change(&mut cache, &mut snapshot, &pod, next)
                    })
                    .sum()
            })
        });
        group.bench_function(BenchmarkId::new("first", nodes), |b| {
            b.iter_batched_ref(
                Snapshot::default,
                |snapshot| cache.update_snapshot(snapshot),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(snapshot, benches);
criterion_main!(snapshot);
