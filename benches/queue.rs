//! Scheduling-queue micro-benchmarks, with the default profile's queue configuration
//! (PrioritySort, SchedulingGates, the plugins' registered events), as the scheduler
//! builds it:
//!
//! - `queue/add_pop/<pods>`: `<pods>` pending pods added, then each popped and marked
//!   done, as a burst of new pods goes through the queue.
//! - `queue/move_all_to_active_or_backoff/1000`: a node add moves 1000 pods that
//!   NodeResourcesFit rejected out of the unschedulable set (into backoffQ, as they
//!   failed just now).

#[allow(dead_code, reason = "each benchmark target uses part of it")]
mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use berth::bench::workload::PodTemplate;
use berth::cluster::PodInfo;
use berth::framework::{ActionType, ClusterEvent, EventResource, ExtensionPoint, Framework};
use berth::queue::{
    DEFAULT_UNSCHEDULABLE_MAX_STAY, Placement, Popped, QueueConfig, SchedulingQueue,
};
use criterion::{
    BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use std::time::Instant;

const ADD_POP_SIZES: [usize; 2] = [1000, 10_000];
const UNSCHEDULABLE: usize = 1000;
/// The plugin that rejected the unschedulable pods: the usual rejection of a full cluster.
const REJECTOR: &str = "NodeResourcesFit";

fn queue_config(framework: &Framework) -> QueueConfig {
    let queue_sort = framework
        .queue_sort()
        .expect("the default profile has a QueueSort plugin");
    let (initial_backoff, max_backoff) = framework.resolved().backoff;
    QueueConfig {
        queue_sort,
        pre_enqueue: framework.plugins(ExtensionPoint::PreEnqueue).to_vec(),
        plugin_events: framework.plugin_events(),
        initial_backoff,
        max_backoff,
        unschedulable_max_stay: DEFAULT_UNSCHEDULABLE_MAX_STAY,
        pod_groups: true,
        coscheduling_groups: false,
    }
}

fn pods(count: usize) -> Vec<Arc<PodInfo>> {
    (0..count)
        .map(|i| {
            let pod = common::measured_pod(PodTemplate::Default, format!("pod-{i:05}"));
            Arc::new(PodInfo::new(pod).expect("a template pod is valid"))
        })
        .collect()
}

/// Adds every pod, then pops each and marks it done; returns how many were popped.
fn add_pop(queue: &mut SchedulingQueue, pods: &[Arc<PodInfo>], now: Instant) -> usize {
    for pod in pods {
        queue.add(pod.clone(), now);
    }
    let mut popped = 0;
    while let Some(queued) = queue.pop(now).and_then(Popped::pod) {
        queue.done(queued.pod_info.key());
        popped += 1;
    }
    popped
}

/// A queue whose `pods` were each tried once and rejected by [`REJECTOR`].
fn unschedulable(config: &QueueConfig, pods: &[Arc<PodInfo>], now: Instant) -> SchedulingQueue {
    let mut queue = SchedulingQueue::new(config.clone());
    for pod in pods {
        queue.add(pod.clone(), now);
    }
    while let Some(mut queued) = queue.pop(now).and_then(Popped::pod) {
        queued.unschedulable_plugins = HashSet::from([REJECTOR.to_string()]);
        let cycle = queue.scheduling_cycle();
        let placement = queue.add_unschedulable_if_not_present(queued, cycle, now);
        assert_eq!(placement, Some(Placement::Unschedulable));
    }
    queue
}

fn benches(c: &mut Criterion) {
    let framework = common::default_framework(1);
    let config = queue_config(&framework);
    let now = Instant::now();
    let mut group = c.benchmark_group("queue");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        // An iteration of 10,000 pods takes tens of milliseconds: too long for criterion's
        // default linear sampling to fit 20 samples in 2 s.
        .sampling_mode(SamplingMode::Flat);

    for size in ADD_POP_SIZES {
        let pods = pods(size);
        let mut check = SchedulingQueue::new(config.clone());
        assert_eq!(add_pop(&mut check, &pods, now), size, "every pod is popped");
        group.throughput(Throughput::Elements(size as u64));
        group.bench_function(BenchmarkId::new("add_pop", size), |b| {
            b.iter_batched_ref(
                || SchedulingQueue::new(config.clone()),
                |queue| add_pop(queue, &pods, now),
                BatchSize::SmallInput,
            )
        });
    }

    group.sampling_mode(SamplingMode::Auto);
    let pods = pods(UNSCHEDULABLE);
    let node_add = ClusterEvent::new(EventResource::Node, ActionType::ADD);
    let mut check = unschedulable(&config, &pods, now);
    assert_eq!(
        check.move_all_to_active_or_backoff(&node_add, now),
        UNSCHEDULABLE,
        "{REJECTOR} registered node adds, so every pod moves"
    );
    group.throughput(Throughput::Elements(UNSCHEDULABLE as u64));
    group.bench_function(
        BenchmarkId::new("move_all_to_active_or_backoff", UNSCHEDULABLE),
        |b| {
            b.iter_batched_ref(
                || unschedulable(&config, &pods, now),
                |queue| queue.move_all_to_active_or_backoff(&node_add, now),
                BatchSize::LargeInput,
            )
        },
    );
    group.finish();
}

criterion_group!(queue, benches);
criterion_main!(queue);
