//! Per-plugin micro-benchmarks: the Filter and the Score of every plugin of the default
//! profile on one node (`filter/<Plugin>`, `score/<Plugin>`), and the framework's Filter
//! and Score over every node of the cluster (`cycle/filter/500`, `cycle/score/500`).
//!
//! Each runs on the state a scheduling cycle has when it calls the plugin: the cluster is
//! scheduler_perf's (500 node-default nodes carrying 30 pods each), the pod is one of its
//! templates, and the profile's PreFilter and PreScore ran once on the cycle state, with
//! every node feasible. A plugin is measured with pod-default and with the templates whose
//! constraints it evaluates (`filter/PodTopologySpread/spread`), and two template pods
//! are changed to reach what no template does: a host port for NodePorts' Filter, a
//! preferred node affinity for NodeAffinity's Score, and a bound claim plus an inline
//! disk for the volume plugins' Filters and VolumeBinding's Score. Where a plugin's PreFilter (PreScore)
//! returns Skip for a pod, the framework never calls its Filter (Score), so neither does
//! the benchmark. The plugin list comes from the default profile: a new default plugin is
//! measured without a change here, and one that no pod reaches stops the run.

#[allow(dead_code, reason = "each benchmark target uses part of it")]
mod common;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use berth::bench::workload::PodTemplate;
use berth::cluster::{NodeInfo, PodInfo, Snapshot};
use berth::framework::{CycleState, ExtensionPoint, Framework};
use criterion::{Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use k8s_openapi::api::core::v1::{
    GCEPersistentDiskVolumeSource, PersistentVolumeClaimVolumeSource, PreferredSchedulingTerm,
    Volume,
};

/// Nodes in the cluster (scheduler_perf's 500Nodes size).
const NODES: u64 = 500;
/// Pods bound to each node before the measured pod arrives.
const PODS_PER_NODE: u64 = 30;

/// The pod a benchmark schedules: one of upstream's templates, or a template changed to
/// reach a plugin that no template reaches (their PreFilter or PreScore would skip).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measured {
    Template(PodTemplate),
    /// pod-default with a host port, for NodePorts' Filter.
    HostPort,
    /// pod-with-node-affinity with its required term made preferred, for NodeAffinity's
    /// Score.
    PreferredNodeAffinity,
    /// pod-default with a bound claim of a zonal CSI volume and an inline GCE disk, for
    /// the volume plugins' Filters.
    Volumes,
}

/// The host port of [`Measured::HostPort`].
const HOST_PORT: i32 = 8080;

impl Measured {
    /// Short names of upstream's `templates/pod-*.yaml`.
    fn label(self) -> &'static str {
        match self {
            Measured::HostPort => "host-port",
            Measured::PreferredNodeAffinity => "preferred-node-affinity",
            Measured::Volumes => "volumes",
            Measured::Template(template) => match template {
                PodTemplate::Default => "default",
                PodTemplate::PodAffinity => "affinity",
                PodTemplate::PodAntiAffinity => "anti-affinity",
                PodTemplate::PreferredPodAffinity => "preferred-affinity",
                PodTemplate::PreferredPodAntiAffinity => "preferred-anti-affinity",
                PodTemplate::NodeAffinity => "node-affinity",
                PodTemplate::TopologySpreading => "spread",
                PodTemplate::PreferredTopologySpreading => "preferred-spread",
                PodTemplate::LowPriority => "low-priority",
                PodTemplate::HighPriority => "high-priority",
                PodTemplate::ClaimTemplate => "claim-template",
                PodTemplate::ExtendedResource => "extended-resource",
                PodTemplate::GroupMember { .. } => "group-member",
                PodTemplate::Case(_) => "test-case",
            },
        }
    }

    /// `point/plugin` for pod-default, `point/plugin/<label>` for the others.
    fn name(self, point: &str, plugin: &str) -> String {
        match self {
            Measured::Template(PodTemplate::Default) => format!("{point}/{plugin}"),
            other => format!("{point}/{plugin}/{}", other.label()),
        }
    }

    fn template(self) -> PodTemplate {
        match self {
            Measured::Template(template) => template,
            Measured::HostPort | Measured::Volumes => PodTemplate::Default,
            Measured::PreferredNodeAffinity => PodTemplate::NodeAffinity,
        }
    }

    fn pod(self) -> PodInfo {
        let mut pod = common::measured_pod(self.template(), "measured".to_string());
        let spec = pod.spec.as_mut().expect("template pods have a spec");
        match self {
            Measured::Template(_) => {}
            Measured::HostPort => {
                let ports = spec
                    .containers
                    .iter_mut()
                    .flat_map(|container| container.ports.iter_mut().flatten());
                for port in ports {
                    port.host_port = Some(HOST_PORT);
                }
            }
            Measured::Volumes => {
                spec.volumes.get_or_insert_default().extend([
                    Volume {
                        name: "data".into(),
                        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                            claim_name: common::CLAIM.into(),
                            read_only: None,
                        }),
                        ..Volume::default()
                    },
                    Volume {
                        name: "disk".into(),
                        gce_persistent_disk: Some(GCEPersistentDiskVolumeSource {
                            pd_name: "measured-disk".into(),
                            ..GCEPersistentDiskVolumeSource::default()
                        }),
                        ..Volume::default()
                    },
                ]);
            }
            Measured::PreferredNodeAffinity => {
                let affinity = spec
                    .affinity
                    .as_mut()
                    .and_then(|a| a.node_affinity.as_mut())
                    .expect("pod-with-node-affinity has a node affinity");
                let required = affinity
                    .required_during_scheduling_ignored_during_execution
                    .take()
                    .expect("pod-with-node-affinity has a required term");
                let preferred = required
                    .node_selector_terms
                    .into_iter()
                    .map(|preference| PreferredSchedulingTerm {
                        preference,
                        weight: 1,
                    })
                    .collect();
                affinity.preferred_during_scheduling_ignored_during_execution = Some(preferred);
            }
        }
        PodInfo::new(pod).expect("a template pod is valid")
    }
}

/// The pods a plugin is measured with besides pod-default: those whose constraints it
/// evaluates.
fn measured_with(plugin: &str) -> &'static [Measured] {
    match plugin {
        "InterPodAffinity" => &[
            Measured::Template(PodTemplate::PodAffinity),
            Measured::Template(PodTemplate::PodAntiAffinity),
            Measured::Template(PodTemplate::PreferredPodAffinity),
            Measured::Template(PodTemplate::PreferredPodAntiAffinity),
        ],
        "PodTopologySpread" => &[
            Measured::Template(PodTemplate::TopologySpreading),
            Measured::Template(PodTemplate::PreferredTopologySpreading),
        ],
        "NodeAffinity" => &[
            Measured::Template(PodTemplate::NodeAffinity),
            Measured::PreferredNodeAffinity,
        ],
        "NodePorts" => &[Measured::HostPort],
        "VolumeRestrictions" | "NodeVolumeLimits" | "VolumeBinding" | "VolumeZone" => {
            &[Measured::Volumes]
        }
        _ => &[],
    }
}

/// Every pod some plugin of `framework` is measured with, pod-default first.
fn measured_pods(framework: &Framework) -> Vec<Measured> {
    let mut all = vec![Measured::Template(PodTemplate::Default)];
    for point in [ExtensionPoint::Filter, ExtensionPoint::Score] {
        for plugin in framework.plugins(point) {
            for measured in measured_with(plugin.name()) {
                if !all.contains(measured) {
                    all.push(*measured);
                }
            }
        }
    }
    all
}

/// A pod at the point its plugins' Filter and Score are called.
struct Cycle {
    measured: Measured,
    snapshot: Snapshot,
    pod: PodInfo,
    state: CycleState,
}

impl Cycle {
    /// The cluster of the pod's workload and the pod, after the profile's PreFilter and
    /// PreScore.
    fn new(framework: &Framework, measured: Measured) -> Cycle {
        let workload = common::workload_of(measured.template());
        let cache = common::cluster(workload, NODES, PODS_PER_NODE);
        let mut snapshot = Snapshot::default();
        cache.update_snapshot(&mut snapshot);
        let pod = measured.pod();
        let mut state = CycleState::new();
        state.set_node_count(snapshot.len());
        let pre_filter = block_on(framework.run_pre_filter(&mut state, &pod, &snapshot));
        assert!(
            pre_filter.status.is_success() && pre_filter.result.is_none(),
            "{}: PreFilter should pass on every node, got {:?} narrowing to {:?}",
            measured.label(),
            pre_filter.status,
            pre_filter.result,
        );
        let status = block_on(framework.run_pre_score(&mut state, &pod, snapshot.nodes()));
        assert!(
            status.is_success(),
            "{}: PreScore: {status:?}",
            measured.label()
        );
        Cycle {
            measured,
            snapshot,
            pod,
            state,
        }
    }

    /// The first node of the snapshot: a node-default node carrying pod-default pods.
    fn node(&self) -> &NodeInfo {
        &self.snapshot.nodes()[0]
    }
}

/// Filter of every Filter plugin `cycle`'s pod is measured with, on one node; counts the
/// benchmarks per plugin in `measured`.
fn bench_filters(
    c: &mut Criterion,
    framework: &Framework,
    cycle: &Cycle,
    measured: &mut BTreeMap<String, usize>,
) {
    for plugin in framework.plugins(ExtensionPoint::Filter) {
        if !is_measured_with(plugin.name(), cycle.measured) {
            continue;
        }
        let filter = plugin
            .as_filter()
            .expect("the framework checked its Filter plugins implement Filter");
        let name = cycle.measured.name("filter", plugin.name());
        if cycle.state.skips_filter(plugin.name()) {
            eprintln!("{name}: not measured, PreFilter returned Skip");
            continue;
        }
        let status = filter.filter(&cycle.state, &cycle.pod, cycle.node());
        assert!(
            status.is_success(),
            "{name}: the measured pod should fit the node, as on most nodes of upstream's \
             runs: {status:?}",
        );
        c.bench_function(&name, |b| {
            b.iter(|| filter.filter(&cycle.state, black_box(&cycle.pod), cycle.node()))
        });
        *measured
            .entry(name_of("filter", plugin.name()))
            .or_default() += 1;
    }
}

/// Score of every Score plugin `cycle`'s pod is measured with, on one node.
fn bench_scores(
    c: &mut Criterion,
    framework: &Framework,
    cycle: &Cycle,
    measured: &mut BTreeMap<String, usize>,
) {
    for plugin in framework.plugins(ExtensionPoint::Score) {
        if !is_measured_with(plugin.name(), cycle.measured) {
            continue;
        }
        let scorer = plugin
            .as_score()
            .expect("the framework checked its Score plugins implement Score");
        let name = cycle.measured.name("score", plugin.name());
        if cycle.state.skips_score(plugin.name()) {
            eprintln!("{name}: not measured, PreScore returned Skip");
            continue;
        }
        if let Err(status) = scorer.score(&cycle.state, &cycle.pod, cycle.node()) {
            panic!("{name}: the benchmark would measure an error path: {status:?}");
        }
        c.bench_function(&name, |b| {
            b.iter(|| scorer.score(&cycle.state, black_box(&cycle.pod), cycle.node()))
        });
        *measured.entry(name_of("score", plugin.name())).or_default() += 1;
    }
}

fn is_measured_with(plugin: &str, measured: Measured) -> bool {
    measured == Measured::Template(PodTemplate::Default)
        || measured_with(plugin).contains(&measured)
}

fn name_of(point: &str, plugin: &str) -> String {
    format!("{point}/{plugin}")
}

/// The framework's Filter and Score over every node (the totals a cycle picks the host
/// from), on one worker thread: the per-node cost of the whole profile times the node
/// count, without thread-pool noise. Run for
/// upstream's templates only.
fn bench_cycle(c: &mut Criterion, framework: &Framework, cycle: &Cycle) {
    let nodes: &[Arc<NodeInfo>] = cycle.snapshot.nodes();
    let filter = cycle.measured.name("cycle/filter", &NODES.to_string());
    c.bench_function(&filter, |b| {
        b.iter(|| {
            let pod = black_box(&cycle.pod);
            framework.run_filter_in_rotation(&cycle.state, pod, nodes, 0, nodes.len())
        })
    });
    let scored = framework.run_score_totals(&cycle.state, &cycle.pod, nodes);
    assert!(
        scored.is_ok(),
        "{}: Score: {scored:?}",
        cycle.measured.label()
    );
    let score = cycle.measured.name("cycle/score", &NODES.to_string());
    c.bench_function(&score, |b| {
        b.iter(|| framework.run_score_totals(&cycle.state, black_box(&cycle.pod), nodes))
    });
}

/// One measured pod at a time, so only one cluster is in memory.
fn benches(c: &mut Criterion) {
    let framework = common::default_framework(1);
    let mut measured = BTreeMap::new();
    for pod in measured_pods(&framework) {
        let cycle = Cycle::new(&framework, pod);
        bench_filters(c, &framework, &cycle, &mut measured);
        bench_scores(c, &framework, &cycle, &mut measured);
        if let Measured::Template(_) = pod {
            bench_cycle(c, &framework, &cycle);
        }
    }
    let points = [
        ("filter", ExtensionPoint::Filter),
        ("score", ExtensionPoint::Score),
    ];
    for (point, extension_point) in points {
        for plugin in framework.plugins(extension_point) {
            // DynamicResources needs a cluster with devices and claims; its measurements
            // are the DRA workloads of `berth bench` (issue "DynamicResources").
            if plugin.name() == "DynamicResources" {
                continue;
            }
            let name = name_of(point, plugin.name());
            assert!(
                measured.contains_key(&name),
                "{name}: skipped for every pod it is measured with; add one that reaches it \
                 to `measured_with`",
            );
        }
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = plugins;
    config = config();
    targets = benches
}
criterion_main!(plugins);
