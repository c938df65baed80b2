//! The workloads of upstream's scheduler_perf (kubernetes/kubernetes
//! `test/integration/scheduler_perf`: `misc/`, `affinity/` and `topology_spreading/`
//! `performance-config.yaml`, node and pod templates under `templates/`), built as
//! objects in memory.
//!
//! Each workload is upstream's op list reduced to what the core sees: `createNodes`
//! (node-default: 4 CPUs, 32Gi, 110 pods, optionally a zone label), `createPods` of
//! the init pods, then `createPods` of the measured pods (`collectMetrics: true`).
//! Two deliberate differences: every node carries `kubernetes.io/hostname` (a kubelet
//! sets it; upstream's test nodes lack it, which would make the hostname terms of the
//! affinity templates match no topology at all), and zone labels are given round-robin
//! where upstream's `labelNodePrepareStrategy` picks one at random, so that a seed is not
//! needed to reproduce the cluster.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Node, NodeAffinity, NodeCondition, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, NodeSpec, NodeStatus, Pod, PodAffinity,
    PodAffinityTerm, PodAntiAffinity, PodSpec, ResourceRequirements, TopologySpreadConstraint,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

/// The zone label of nodes and of the templates' terms.
pub const ZONE_KEY: &str = "topology.kubernetes.io/zone";
/// The hostname label of nodes.
pub const HOSTNAME_KEY: &str = "kubernetes.io/hostname";
/// Bounds of `--nodes` and `--pods`: upstream's largest workloads (15,000 nodes for
/// SchedulingDaemonset, 50,000 measured pods for SchedulingBasic 5000Nodes_50000Pods).
pub const MAX_NODES: u64 = 15_000;
pub const MAX_PODS: u64 = 50_000;

/// A scheduler_perf test case berth mirrors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    SchedulingBasic,
    TopologySpreading,
    PreferredTopologySpreading,
    SchedulingPodAntiAffinity,
    SchedulingPodAffinity,
    SchedulingPreferredPodAffinity,
    SchedulingPreferredPodAntiAffinity,
    SchedulingNodeAffinity,
    PreemptionBasic,
}

impl Workload {
    /// Every workload, in the order `--workload all` runs them.
    pub const ALL: [Workload; 9] = [
        Workload::SchedulingBasic,
        Workload::TopologySpreading,
        Workload::PreferredTopologySpreading,
        Workload::SchedulingPodAntiAffinity,
        Workload::SchedulingPodAffinity,
        Workload::SchedulingPreferredPodAffinity,
        Workload::SchedulingPreferredPodAntiAffinity,
        Workload::SchedulingNodeAffinity,
        Workload::PreemptionBasic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::SchedulingBasic => "SchedulingBasic",
            Workload::TopologySpreading => "TopologySpreading",
            Workload::PreferredTopologySpreading => "PreferredTopologySpreading",
            Workload::SchedulingPodAntiAffinity => "SchedulingPodAntiAffinity",
            Workload::SchedulingPodAffinity => "SchedulingPodAffinity",
            Workload::SchedulingPreferredPodAffinity => "SchedulingPreferredPodAffinity",
            Workload::SchedulingPreferredPodAntiAffinity => "SchedulingPreferredPodAntiAffinity",
            Workload::SchedulingNodeAffinity => "SchedulingNodeAffinity",
            Workload::PreemptionBasic => "PreemptionBasic",
        }
    }

    /// The workload named `name` (upstream's spelling, case-insensitive).
    pub fn parse(name: &str) -> Option<Workload> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(name))
    }

    /// The zone labels nodes get, in turn (upstream's `labelNodePrepareStrategy`).
    pub fn zones(self) -> &'static [&'static str] {
        match self {
            Workload::TopologySpreading | Workload::PreferredTopologySpreading => {
                &["moon-1", "moon-2", "moon-3"]
            }
            Workload::SchedulingPodAffinity | Workload::SchedulingNodeAffinity => &["zone1"],
            _ => &[],
        }
    }

    /// Templates and namespaces of the init pods and of the measured pods. Workloads
    /// without a `namespace` get upstream's per-op namespaces (`namespace-<op index>`).
    pub fn phases(self) -> (Phase, Phase) {
        let same = |template| {
            (
                Phase::new(template, "sched-0"),
                Phase::new(template, "sched-1"),
            )
        };
        let per_op = |init, measure| {
            (
                Phase::new(init, "namespace-1"),
                Phase::new(measure, "namespace-2"),
            )
        };
        match self {
            Workload::SchedulingBasic => per_op(PodTemplate::Default, PodTemplate::Default),
            Workload::TopologySpreading => {
                per_op(PodTemplate::Default, PodTemplate::TopologySpreading)
            }
            Workload::PreferredTopologySpreading => per_op(
                PodTemplate::Default,
                PodTemplate::PreferredTopologySpreading,
            ),
            Workload::SchedulingNodeAffinity => {
                per_op(PodTemplate::NodeAffinity, PodTemplate::NodeAffinity)
            }
            Workload::SchedulingPodAntiAffinity => same(PodTemplate::PodAntiAffinity),
            Workload::SchedulingPodAffinity => same(PodTemplate::PodAffinity),
            Workload::SchedulingPreferredPodAffinity => same(PodTemplate::PreferredPodAffinity),
            Workload::SchedulingPreferredPodAntiAffinity => {
                same(PodTemplate::PreferredPodAntiAffinity)
            }
            Workload::PreemptionBasic => {
                per_op(PodTemplate::LowPriority, PodTemplate::HighPriority)
            }
        }
    }

    /// Upstream's counts for `size`, or `None` where upstream defines no such size.
    pub fn counts(self, size: Size) -> Option<Counts> {
        let counts = |nodes, init_pods, measure_pods| Counts {
            nodes,
            init_pods,
            measure_pods,
        };
        match (self, size) {
            (Workload::SchedulingBasic, Size::Nodes500) => Some(counts(500, 500, 1000)),
            (Workload::SchedulingBasic, Size::Nodes5000) => Some(counts(5000, 1000, 1000)),
            (Workload::SchedulingBasic, Size::Nodes5000Pods10000) => {
                Some(counts(5000, 1000, 10_000))
            }
            (Workload::TopologySpreading | Workload::PreferredTopologySpreading, size) => {
                match size {
                    Size::Nodes500 => Some(counts(500, 1000, 1000)),
                    Size::Nodes5000 => Some(counts(5000, 5000, 2000)),
                    Size::Nodes5000Pods10000 => None,
                }
            }
            (Workload::SchedulingPodAntiAffinity, Size::Nodes500) => Some(counts(500, 100, 400)),
            // Upstream runs 1000Nodes (4000 + 1000) and keeps 5000Nodes (20000 + 5000)
            // commented out; both sizes here keep that ratio: four low-priority pods per
            // node, one high-priority pod per node.
            (Workload::PreemptionBasic, Size::Nodes500) => Some(counts(500, 2000, 500)),
            (Workload::PreemptionBasic, Size::Nodes5000) => Some(counts(5000, 20_000, 5000)),
            (Workload::PreemptionBasic, Size::Nodes5000Pods10000) => None,
            (Workload::SchedulingPodAntiAffinity, Size::Nodes5000) => {
                Some(counts(5000, 1000, 1000))
            }
            (_, Size::Nodes500) => Some(counts(500, 500, 1000)),
            (_, Size::Nodes5000) => Some(counts(5000, 5000, 1000)),
            (_, Size::Nodes5000Pods10000) => None,
        }
    }

    /// Upstream's CI threshold (SchedulingThroughput Average, pods/s) and the size it is
    /// set for; upstream sets thresholds only on its `performance` sizes, and none on
    /// PreemptionBasic.
    pub fn upstream_threshold(self) -> Option<(&'static str, f64)> {
        Some(match self {
            Workload::SchedulingBasic => ("5000Nodes_10000Pods", 680.0),
            Workload::TopologySpreading => ("5000Nodes_5000Pods", 460.0),
            Workload::PreferredTopologySpreading => ("5000Nodes_5000Pods", 340.0),
            Workload::SchedulingPodAntiAffinity => ("5000Nodes_2000Pods", 60.0),
            Workload::SchedulingPodAffinity => ("5000Nodes_5000Pods", 35.0),
            Workload::SchedulingPreferredPodAffinity => ("5000Nodes_5000Pods", 90.0),
            Workload::SchedulingPreferredPodAntiAffinity => ("5000Nodes_5000Pods", 90.0),
            Workload::SchedulingNodeAffinity => ("5000Nodes_10000Pods", 220.0),
            Workload::PreemptionBasic => return None,
        })
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A size of upstream's workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    Nodes500,
    Nodes5000,
    /// Defined for SchedulingBasic only: the size upstream's 680 pods/s threshold is for.
    Nodes5000Pods10000,
}

impl Size {
    pub fn name(self) -> &'static str {
        match self {
            Size::Nodes500 => "500Nodes",
            Size::Nodes5000 => "5000Nodes",
            Size::Nodes5000Pods10000 => "5000Nodes_10000Pods",
        }
    }
}

/// How many objects a run creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub nodes: u64,
    pub init_pods: u64,
    pub measure_pods: u64,
}

impl Counts {
    /// `--nodes` and `--pods` applied: the init pods keep upstream's ratio to the node
    /// count (a smaller cluster gets proportionally fewer running pods).
    pub fn with_overrides(self, nodes: Option<u64>, pods: Option<u64>) -> Counts {
        let init_pods = match nodes {
            Some(n) if self.nodes > 0 => self.init_pods.saturating_mul(n) / self.nodes,
            _ => self.init_pods,
        };
        Counts {
            nodes: nodes.unwrap_or(self.nodes),
            init_pods,
            measure_pods: pods.unwrap_or(self.measure_pods),
        }
    }
}

/// The pods one `createPods` op creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    pub template: PodTemplate,
    pub namespace: &'static str,
}

impl Phase {
    fn new(template: PodTemplate, namespace: &'static str) -> Phase {
        Phase {
            template,
            namespace,
        }
    }
}

/// upstream's pod templates (`templates/pod-*.yaml`): a pause container requesting
/// 100m CPU and 500Mi, plus the template's label and scheduling constraints; the two
/// priority templates request more CPU (pod-low-priority 900m, pod-high-priority 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodTemplate {
    Default,
    PodAntiAffinity,
    PodAffinity,
    PreferredPodAffinity,
    PreferredPodAntiAffinity,
    NodeAffinity,
    TopologySpreading,
    PreferredTopologySpreading,
    /// Priority 0, deleted at once when preempted (`terminationGracePeriodSeconds: 0`).
    LowPriority,
    /// Priority [`HIGH_PRIORITY`]: four low-priority pods fill 3.6 of a node's 4 CPUs, so
    /// each of these preempts three of them.
    HighPriority,
}

/// The priority of pod-high-priority.
pub const HIGH_PRIORITY: i32 = 10;
/// The PriorityClass of [`HIGH_PRIORITY`] that high-priority pods name. Upstream's template
/// sets only `priority`, which its test API server accepts; a real API server's Priority
/// admission refuses a priority no class gives, so the live benchmark creates this class
/// and the pods name it (the scheduler reads the same `priority`).
pub const HIGH_PRIORITY_CLASS: &str = "scheduler-perf-high-priority";

/// The namespaces the affinity templates' terms name.
const TERM_NAMESPACES: [&str; 2] = ["sched-1", "sched-0"];
/// maxSkew of both spreading templates.
pub const SPREAD_MAX_SKEW: i32 = 5;
/// The zones the node-affinity template requires.
pub const NODE_AFFINITY_ZONES: [&str; 2] = ["zone1", "zone2"];

impl PodTemplate {
    /// The `color` label of the template, which its own terms select.
    pub fn color(self) -> Option<&'static str> {
        match self {
            PodTemplate::Default
            | PodTemplate::NodeAffinity
            | PodTemplate::LowPriority
            | PodTemplate::HighPriority => None,
            PodTemplate::PodAntiAffinity => Some("green"),
            PodTemplate::PodAffinity
            | PodTemplate::TopologySpreading
            | PodTemplate::PreferredTopologySpreading => Some("blue"),
            PodTemplate::PreferredPodAffinity => Some("red"),
            PodTemplate::PreferredPodAntiAffinity => Some("yellow"),
        }
    }

    /// A pod of this template named `name` in `namespace`, for `scheduler_name`.
    pub fn pod(self, namespace: &str, name: String, scheduler_name: &str) -> Pod {
        let labels = self
            .color()
            .map(|color| BTreeMap::from([("color".to_string(), color.to_string())]));
        Pod {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace.to_string()),
                labels,
                ..Default::default()
            },
            spec: Some(PodSpec {
                scheduler_name: Some(scheduler_name.to_string()),
                containers: vec![pause_container(self.cpu())],
                affinity: self.affinity(),
                topology_spread_constraints: self.spread().map(|c| vec![c]),
                priority: (self == PodTemplate::HighPriority).then_some(HIGH_PRIORITY),
                priority_class_name: (self == PodTemplate::HighPriority)
                    .then(|| HIGH_PRIORITY_CLASS.to_string()),
                termination_grace_period_seconds: (self == PodTemplate::LowPriority).then_some(0),
                ..Default::default()
            }),
            status: None,
        }
    }

    /// The CPU request (and limit) of the template's container.
    pub fn cpu(self) -> &'static str {
        match self {
            PodTemplate::LowPriority => "900m",
            PodTemplate::HighPriority => "3",
            _ => "100m",
        }
    }

    fn affinity(self) -> Option<Affinity> {
        let term = |topology_key: &str| PodAffinityTerm {
            label_selector: self.color().map(color_selector),
            topology_key: topology_key.to_string(),
            namespaces: Some(TERM_NAMESPACES.iter().map(|n| n.to_string()).collect()),
            ..Default::default()
        };
        let weighted = |term| {
            vec![WeightedPodAffinityTerm {
                pod_affinity_term: term,
                weight: 1,
            }]
        };
        match self {
            PodTemplate::PodAntiAffinity => Some(Affinity {
                pod_anti_affinity: Some(PodAntiAffinity {
                    required_during_scheduling_ignored_during_execution: Some(vec![term(
                        HOSTNAME_KEY,
                    )]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            PodTemplate::PodAffinity => Some(Affinity {
                pod_affinity: Some(PodAffinity {
                    required_during_scheduling_ignored_during_execution: Some(vec![term(ZONE_KEY)]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            PodTemplate::PreferredPodAffinity => Some(Affinity {
                pod_affinity: Some(PodAffinity {
                    preferred_during_scheduling_ignored_during_execution: Some(weighted(term(
                        HOSTNAME_KEY,
                    ))),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            PodTemplate::PreferredPodAntiAffinity => Some(Affinity {
                pod_anti_affinity: Some(PodAntiAffinity {
                    preferred_during_scheduling_ignored_during_execution: Some(weighted(term(
                        HOSTNAME_KEY,
                    ))),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            PodTemplate::NodeAffinity => Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: Some(vec![NodeSelectorRequirement {
                                key: ZONE_KEY.to_string(),
                                operator: "In".to_string(),
                                values: Some(
                                    NODE_AFFINITY_ZONES.iter().map(|z| z.to_string()).collect(),
                                ),
                            }]),
                            match_fields: None,
                        }],
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            _ => None,
        }
    }

    fn spread(self) -> Option<TopologySpreadConstraint> {
        let when_unsatisfiable = match self {
            PodTemplate::TopologySpreading => "DoNotSchedule",
            PodTemplate::PreferredTopologySpreading => "ScheduleAnyway",
            _ => return None,
        };
        Some(TopologySpreadConstraint {
            max_skew: SPREAD_MAX_SKEW,
            topology_key: ZONE_KEY.to_string(),
            when_unsatisfiable: when_unsatisfiable.to_string(),
            label_selector: self.color().map(color_selector),
            ..Default::default()
        })
    }
}

fn color_selector(color: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([("color".to_string(), color.to_string())])),
        match_expressions: None,
    }
}

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(name, value)| (name.to_string(), Quantity(value.to_string())))
        .collect()
}

/// The pause container of every template: requests equal to limits.
fn pause_container(cpu: &str) -> Container {
    let resources = quantities(&[("cpu", cpu), ("memory", "500Mi")]);
    Container {
        name: "pause".to_string(),
        image: Some("registry.k8s.io/pause:3.10.1".to_string()),
        ports: Some(vec![ContainerPort {
            container_port: 80,
            ..Default::default()
        }]),
        resources: Some(ResourceRequirements {
            limits: Some(resources.clone()),
            requests: Some(resources),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Node `index` of upstream's node-default template: 4 CPUs, 32Gi, 110 pods, Ready; its
/// zone is `zones[index % zones.len()]` when the workload labels zones.
pub fn node(index: u64, zones: &[&str]) -> Node {
    let name = format!("scheduler-perf-{index:05}");
    let mut labels = BTreeMap::from([(HOSTNAME_KEY.to_string(), name.clone())]);
    if !zones.is_empty() {
        let zone = zones[(index % zones.len() as u64) as usize];
        labels.insert(ZONE_KEY.to_string(), zone.to_string());
    }
    let capacity = quantities(&[("pods", "110"), ("cpu", "4"), ("memory", "32Gi")]);
    Node {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            // The kubelet reports allocatable; with no reservations it equals capacity.
            allocatable: Some(capacity.clone()),
            capacity: Some(capacity),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".to_string(),
                status: "True".to_string(),
                ..Default::default()
            }]),
            phase: Some("Running".to_string()),
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_upstreams() {
        // (workload, size, nodes, init pods, measured pods) from performance-config.yaml.
        let cases = [
            (Workload::SchedulingBasic, Size::Nodes500, 500, 500, 1000),
            (Workload::SchedulingBasic, Size::Nodes5000, 5000, 1000, 1000),
            (
                Workload::SchedulingBasic,
                Size::Nodes5000Pods10000,
                5000,
                1000,
                10_000,
            ),
            (Workload::TopologySpreading, Size::Nodes500, 500, 1000, 1000),
            (
                Workload::TopologySpreading,
                Size::Nodes5000,
                5000,
                5000,
                2000,
            ),
            (
                Workload::PreferredTopologySpreading,
                Size::Nodes5000,
                5000,
                5000,
                2000,
            ),
            (
                Workload::SchedulingPodAntiAffinity,
                Size::Nodes500,
                500,
                100,
                400,
            ),
            (
                Workload::SchedulingPodAntiAffinity,
                Size::Nodes5000,
                5000,
                1000,
                1000,
            ),
            (
                Workload::SchedulingPodAffinity,
                Size::Nodes5000,
                5000,
                5000,
                1000,
            ),
            (
                Workload::SchedulingNodeAffinity,
                Size::Nodes500,
                500,
                500,
                1000,
            ),
            // 1000Nodes' 4000 + 1000, scaled.
            (Workload::PreemptionBasic, Size::Nodes500, 500, 2000, 500),
            // The commented-out 5000Nodes.
            (
                Workload::PreemptionBasic,
                Size::Nodes5000,
                5000,
                20_000,
                5000,
            ),
        ];
        for (workload, size, nodes, init_pods, measure_pods) in cases {
            assert_eq!(
                workload.counts(size),
                Some(Counts {
                    nodes,
                    init_pods,
                    measure_pods
                }),
                "{workload} {}",
                size.name()
            );
        }
    }

    #[test]
    fn the_10000_pod_size_exists_for_scheduling_basic_only() {
        for workload in Workload::ALL {
            let defined = workload.counts(Size::Nodes5000Pods10000).is_some();
            assert_eq!(defined, workload == Workload::SchedulingBasic, "{workload}");
        }
    }

    #[test]
    fn overrides_scale_the_init_pods_with_the_nodes() {
        let upstream = Counts {
            nodes: 500,
            init_pods: 100,
            measure_pods: 400,
        };
        let cases = [
            ("none", None, None, (500, 100, 400)),
            ("nodes", Some(50), None, (50, 10, 400)),
            ("pods", None, Some(40), (500, 100, 40)),
            ("both", Some(1000), Some(7), (1000, 200, 7)),
        ];
        for (name, nodes, pods, (n, i, m)) in cases {
            let got = upstream.with_overrides(nodes, pods);
            assert_eq!(
                (got.nodes, got.init_pods, got.measure_pods),
                (n, i, m),
                "{name}"
            );
        }
    }

    #[test]
    fn workload_names_parse_case_insensitively() {
        for workload in Workload::ALL {
            assert_eq!(Workload::parse(workload.name()), Some(workload));
            assert_eq!(
                Workload::parse(&workload.name().to_lowercase()),
                Some(workload)
            );
        }
        assert_eq!(Workload::parse("SchedulingSecrets"), None);
    }

    #[test]
    fn nodes_get_zones_in_turn_and_their_hostname() {
        let zones = ["moon-1", "moon-2", "moon-3"];
        let got: Vec<(String, String)> = (0..4)
            .map(|i| {
                let node = node(i, &zones);
                let labels = node.metadata.labels.unwrap_or_default();
                (labels[HOSTNAME_KEY].clone(), labels[ZONE_KEY].clone())
            })
            .collect();
        let want = [
            ("scheduler-perf-00000", "moon-1"),
            ("scheduler-perf-00001", "moon-2"),
            ("scheduler-perf-00002", "moon-3"),
            ("scheduler-perf-00003", "moon-1"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(h, z)| (h.to_string(), z.to_string()))
            .collect();
        assert_eq!(got, want);
    }
}
