//! The scheduler_perf test cases that change the cluster while the measured pods are
//! scheduled, or that create pods the scheduler must leave alone (kubernetes/kubernetes
//! v1.37.2 `test/integration/scheduler_perf`: `misc/`, `default_preemption/`,
//! `batching/` `performance-config.yaml` and the templates they name).
//!
//! Each [`CaseWorkload`] is one of upstream's workloads of a test case, with its
//! parameters, its threshold where it has one, and the `--size` whose `all` runs it
//! (its `performance` workloads run at 5000Nodes, a smaller one at 500Nodes). Their ops
//! come in four kinds besides the init and measured `createPods`:
//!
//! - *side pods* ([`Side`]): SchedulingWhileGated's gated pods, created before anything
//!   else and kept in the queue to the end (upstream's `barrier` with
//!   `stageRequirement: Attempted` waits until the scheduler saw them), and
//!   SchedulingDeletedPodsWithFinalizers' pods with a finalizer, created just before the
//!   measured pods and not waited for (`skipWaitToCompletion`), so that they are scheduled
//!   in the measured window as upstream's are.
//! - *background* ops ([`Background`]), started before the measured pods and played on
//!   the wall clock while they are scheduled, as upstream's goroutines play them: `churn`
//!   (create an object of each template every interval, or in `recreate` mode create and
//!   delete them in turn) and `deletePods` (so many a second, of the pods of a namespace
//!   as the op listed them).
//! - Named nodes: SchedulingDaemonset's `scheduler-perf-node`, the only node its pods'
//!   `matchFields` admit, beside 15,000 others NodeAffinity's PreFilter rules out;
//!   SchedulingWhileGated runs on that node alone.
//! - The `batching/` test cases label pods with `signature: signature-label-<index /
//!   signatureBatchSize>`, so that runs of identical pods are of the given length.
//!
//! What berth does not model: upstream's churn also creates a Service, which no
//! scheduler plugin of 1.37 reads but the default spreading's selector (and no pod here
//! matches it); berth has no Service informer, so the Service is counted and changes
//! nothing. Deleting a pod that has a finalizer sets its `deletionTimestamp`: a bound pod
//! stays on its node, a pending one is not scheduled any more (upstream's scheduler skips
//! it when it is popped; berth's driver, like its operator, takes it out of the queue).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, Pod, PodSchedulingGate, PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::workload::{PodTemplate, Size, node, quantities, ready_node};

/// The name of SchedulingDaemonset's and SchedulingWhileGated's named node
/// (`templates/node-with-name.yaml`).
pub const NAMED_NODE: &str = "scheduler-perf-node";
/// The scheduling gate of `templates/gated-pod.yaml`.
pub const GATE: &str = "test.k8s.io/hold";
/// The finalizer of `templates/pod-with-finalizer.yaml`.
pub const FINALIZER: &str = "test.k8s.io/finalizer";
/// The label key the `batching/` test cases give their pods.
pub const SIGNATURE_LABEL: &str = "signature";
/// The priority of `default_preemption/templates/pod-high-priority.yaml`.
pub const PREEMPTOR_PRIORITY: i32 = 9_999_999;
/// The priority of `templates/pod-high-priority-large-cpu.yaml`.
pub const LARGE_CPU_PRIORITY: i32 = 10;

/// A test case of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// `misc/`: pods whose required node affinity names one node by `metadata.name`.
    SchedulingDaemonset,
    /// `default_preemption/`: default pods measured while a preemptor (3970m CPU) is
    /// created every 200 ms on nodes full of low-priority pods.
    PreemptionAsync,
    /// `default_preemption/`: default pods measured while a pod no node can hold (9 CPUs)
    /// is created every 200 ms.
    Unschedulable,
    /// `misc/`: default pods measured while a node without room, an unschedulable pod and
    /// a Service are created and deleted in turn every second.
    SchedulingWithMixedChurn,
    /// `misc/`: light pods measured on one node beside gated pods, while the pods bound
    /// before them are deleted, 50 a second.
    SchedulingWhileGated,
    /// `misc/`: light pods measured while pods with a finalizer, created just before,
    /// are deleted 100 a second, some of them before they are scheduled.
    SchedulingDeletedPodsWithFinalizers,
    /// `batching/`: pods with host port 80, so one per node, in runs of identical pods.
    HostPortConflict,
    /// `batching/`: pods of 3 CPUs on nodes of 4, so one per node, in runs of identical
    /// pods.
    ResourceSaturation,
}

impl Case {
    pub fn name(self) -> &'static str {
        match self {
            Case::SchedulingDaemonset => "SchedulingDaemonset",
            Case::PreemptionAsync => "PreemptionAsync",
            Case::Unschedulable => "Unschedulable",
            Case::SchedulingWithMixedChurn => "SchedulingWithMixedChurn",
            Case::SchedulingWhileGated => "SchedulingWhileGated",
            Case::SchedulingDeletedPodsWithFinalizers => "SchedulingDeletedPodsWithFinalizers",
            Case::HostPortConflict => "HostPortConflict",
            Case::ResourceSaturation => "ResourceSaturation",
        }
    }
}

/// One workload of a [`Case`]: upstream's name and parameters.
#[derive(Debug, PartialEq, Eq)]
pub struct CaseWorkload {
    pub case: Case,
    /// Upstream's workload name.
    pub name: &'static str,
    /// Every node the run creates (SchedulingDaemonset: its named node and `initNodes`).
    pub nodes: u64,
    pub init_pods: u64,
    /// Gated pods, or pods with a finalizer ([`Side`]).
    pub side_pods: u64,
    pub measure_pods: u64,
    /// `signatureBatchSize` of the `batching/` test cases (1 elsewhere; upstream's
    /// `_OpportunisticBatchingDisabled` workloads are its only batching ones of size 1).
    pub batch: u64,
    /// The `--size` whose `all` runs it, if any.
    pub size: Option<Size>,
    /// SchedulingThroughput threshold, pods/s.
    pub threshold: Option<u32>,
}

impl CaseWorkload {
    /// For upstream's `batching/` test cases, whether the workload schedules with
    /// opportunistic batching (its `_OpportunisticBatchingDisabled` workloads do not);
    /// `None` for the other test cases, which run the default profile.
    pub fn batching(&self) -> Option<bool> {
        matches!(self.case, Case::HostPortConflict | Case::ResourceSaturation)
            .then(|| !self.name.ends_with("_OpportunisticBatchingDisabled"))
    }
}

const fn workload(
    case: Case,
    name: &'static str,
    (nodes, init_pods, side_pods, measure_pods): (u64, u64, u64, u64),
    size: Option<Size>,
    threshold: Option<u32>,
) -> CaseWorkload {
    CaseWorkload {
        case,
        name,
        nodes,
        init_pods,
        side_pods,
        measure_pods,
        batch: 1,
        size,
        threshold,
    }
}

const fn batched(
    case: Case,
    name: &'static str,
    nodes: u64,
    pods: u64,
    batch: u64,
) -> CaseWorkload {
    CaseWorkload {
        case,
        name,
        nodes,
        init_pods: 0,
        side_pods: 0,
        measure_pods: pods,
        batch,
        size: if nodes >= 5000 {
            Some(Size::Nodes5000)
        } else {
            Some(Size::Nodes500)
        },
        threshold: None,
    }
}

const P500: Option<Size> = Some(Size::Nodes500);
const P5000: Option<Size> = Some(Size::Nodes5000);

/// Every workload of the test cases, in upstream's order. The integration-test ones
/// (`5Nodes`, `10Nodes`, …) run only when named, except where a test case has nothing
/// smaller than its `performance` workload, whose smallest then runs at 500Nodes.
pub static CASES: [CaseWorkload; 33] = [
    workload(
        Case::SchedulingDaemonset,
        "5Nodes",
        (6, 0, 0, 10),
        P500,
        None,
    ),
    workload(
        Case::SchedulingDaemonset,
        "15000Nodes",
        (15_001, 0, 0, 30_000),
        P5000,
        Some(1100),
    ),
    workload(Case::PreemptionAsync, "5Nodes", (5, 20, 0, 5), None, None),
    workload(
        Case::PreemptionAsync,
        "500Nodes",
        (500, 2000, 0, 500),
        P500,
        None,
    ),
    workload(
        Case::PreemptionAsync,
        "5000Nodes",
        (5000, 20_000, 0, 5000),
        P5000,
        Some(570),
    ),
    workload(
        Case::Unschedulable,
        "5Nodes/1Init/10Pods",
        (5, 1, 0, 10),
        None,
        None,
    ),
    workload(
        Case::Unschedulable,
        "500Nodes/10Init/1kPods",
        (500, 10, 0, 1000),
        P500,
        None,
    ),
    workload(
        Case::Unschedulable,
        "5kNodes/100Init/1kPods",
        (5000, 100, 0, 1000),
        P5000,
        None,
    ),
    workload(
        Case::Unschedulable,
        "5kNodes/100Init/10kPods",
        (5000, 100, 0, 10_000),
        P5000,
        Some(590),
    ),
    workload(
        Case::Unschedulable,
        "5kNodes/20kInit/10kPods",
        (5000, 20_000, 0, 10_000),
        P5000,
        Some(600),
    ),
    workload(
        Case::SchedulingWithMixedChurn,
        "10Nodes",
        (10, 0, 0, 100),
        None,
        None,
    ),
    workload(
        Case::SchedulingWithMixedChurn,
        "1000Nodes",
        (1000, 0, 0, 1000),
        P500,
        None,
    ),
    workload(
        Case::SchedulingWithMixedChurn,
        "5000Nodes",
        (5000, 0, 0, 2000),
        None,
        None,
    ),
    workload(
        Case::SchedulingWithMixedChurn,
        "5000Nodes_10000Pods",
        (5000, 0, 0, 10_000),
        P5000,
        Some(710),
    ),
    workload(
        Case::SchedulingWhileGated,
        "1Node_10GatedPods",
        (1, 10, 10, 10),
        P500,
        None,
    ),
    workload(
        Case::SchedulingWhileGated,
        "1Node_10000GatedPods",
        (1, 20_000, 10_000, 20_000),
        P5000,
        Some(910),
    ),
    workload(
        Case::SchedulingDeletedPodsWithFinalizers,
        "10Node_100DeletingPods",
        (10, 0, 10, 10),
        None,
        None,
    ),
    workload(
        Case::SchedulingDeletedPodsWithFinalizers,
        "1000Node_1000DeletingPods",
        (1000, 0, 1000, 1000),
        P500,
        None,
    ),
    workload(
        Case::SchedulingDeletedPodsWithFinalizers,
        "5000Node_5000DeletingPods",
        (5000, 0, 5000, 5000),
        P5000,
        Some(830),
    ),
    batched(
        Case::HostPortConflict,
        "10Nodes_10Pods_10BatchSize",
        10,
        10,
        10,
    ),
    batched(
        Case::HostPortConflict,
        "20000Nodes_20000Pods_10BatchSize",
        20_000,
        20_000,
        10,
    ),
    batched(
        Case::HostPortConflict,
        "20000Nodes_20000Pods_100BatchSize",
        20_000,
        20_000,
        100,
    ),
    batched(
        Case::HostPortConflict,
        "20000Nodes_20000Pods_1000BatchSize",
        20_000,
        20_000,
        1000,
    ),
    batched(
        Case::HostPortConflict,
        "20000Nodes_20000Pods_5000BatchSize",
        20_000,
        20_000,
        5000,
    ),
    batched(
        Case::HostPortConflict,
        "20000Nodes_20000Pods_20000BatchSize",
        20_000,
        20_000,
        20_000,
    ),
    batched(
        Case::HostPortConflict,
        "20000Nodes_20000Pods_OpportunisticBatchingDisabled",
        20_000,
        20_000,
        1,
    ),
    batched(
        Case::ResourceSaturation,
        "10Nodes_10Pods_10BatchSize",
        10,
        10,
        10,
    ),
    batched(
        Case::ResourceSaturation,
        "20000Nodes_20000Pods_10BatchSize",
        20_000,
        20_000,
        10,
    ),
    batched(
        Case::ResourceSaturation,
        "20000Nodes_20000Pods_100BatchSize",
        20_000,
        20_000,
        100,
    ),
    batched(
        Case::ResourceSaturation,
        "20000Nodes_20000Pods_1000BatchSize",
        20_000,
        20_000,
        1000,
    ),
    batched(
        Case::ResourceSaturation,
        "20000Nodes_20000Pods_5000BatchSize",
        20_000,
        20_000,
        5000,
    ),
    batched(
        Case::ResourceSaturation,
        "20000Nodes_20000Pods_20000BatchSize",
        20_000,
        20_000,
        20_000,
    ),
    batched(
        Case::ResourceSaturation,
        "20000Nodes_20000Pods_OpportunisticBatchingDisabled",
        20_000,
        20_000,
        1,
    ),
];

/// A test case's templates besides upstream's shared ones that [`PodTemplate`] has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseTemplate {
    /// `templates/daemonset-pod.yaml`: no requests, required node affinity on
    /// `metadata.name` In [`NAMED_NODE`].
    Daemonset,
    /// `templates/light-pod.yaml`: no requests, grace period 0.
    Light,
    /// `templates/gated-pod.yaml`: no requests, gate [`GATE`].
    Gated,
    /// `templates/pod-with-finalizer.yaml`: no requests, finalizer [`FINALIZER`].
    WithFinalizer,
    /// `default_preemption/templates/pod-high-priority.yaml`: 3970m CPU and 500Mi
    /// (limits too), priority [`PREEMPTOR_PRIORITY`], grace period 0.
    Preemptor,
    /// `templates/pod-high-priority-large-cpu.yaml`: 9 CPUs and 500Mi requested, port
    /// 80, priority [`LARGE_CPU_PRIORITY`]; no node of 4 CPUs holds it.
    HighPriorityLargeCpu,
    /// `templates/pod-hostport-80.yaml`: host port 80, 100m CPU and 100Mi; pods labelled
    /// in runs of `batch`.
    HostPort80 { batch: u64 },
    /// `templates/pod-saturation.yaml`: 3 CPUs and 1Gi; pods labelled in runs of
    /// `batch`.
    Saturation { batch: u64 },
}

const PAUSE: &str = "registry.k8s.io/pause:3.10.1";

impl CaseTemplate {
    /// The pod's name: upstream's `generateName` prefix with the index.
    pub fn pod_name(self, index: u64) -> String {
        let prefix = match self {
            CaseTemplate::Daemonset => "daemonset-",
            CaseTemplate::Light => "light-pod-",
            CaseTemplate::Gated => "gated-pod-",
            CaseTemplate::WithFinalizer => "pod-",
            CaseTemplate::Preemptor => "pod-high-priority-",
            CaseTemplate::HighPriorityLargeCpu => "pod-h-",
            CaseTemplate::HostPort80 { .. } => "pod-hostport-80-",
            CaseTemplate::Saturation { .. } => "pod-saturation-",
        };
        format!("{prefix}{index:05}")
    }

    /// Pod `index` of the template named `name` in `namespace`.
    pub fn pod(self, namespace: &str, name: String, index: u64, scheduler_name: &str) -> Pod {
        let mut container = Container {
            name: "pause".to_string(),
            image: Some(PAUSE.to_string()),
            ..Default::default()
        };
        let mut spec = PodSpec {
            scheduler_name: Some(scheduler_name.to_string()),
            ..Default::default()
        };
        let mut metadata = ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        };
        let port = |host_port| {
            Some(vec![ContainerPort {
                container_port: 80,
                host_port,
                ..Default::default()
            }])
        };
        let requests = |pairs: &[(&str, &str)]| ResourceRequirements {
            requests: Some(quantities(pairs)),
            ..Default::default()
        };
        match self {
            CaseTemplate::Daemonset => {
                spec.affinity = Some(Affinity {
                    node_affinity: Some(NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                            node_selector_terms: vec![NodeSelectorTerm {
                                match_expressions: None,
                                match_fields: Some(vec![NodeSelectorRequirement {
                                    key: "metadata.name".to_string(),
                                    operator: "In".to_string(),
                                    values: Some(vec![NAMED_NODE.to_string()]),
                                }]),
                            }],
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
            }
            CaseTemplate::Light => spec.termination_grace_period_seconds = Some(0),
            CaseTemplate::Gated => {
                spec.scheduling_gates = Some(vec![PodSchedulingGate {
                    name: GATE.to_string(),
                }]);
            }
            CaseTemplate::WithFinalizer => metadata.finalizers = Some(vec![FINALIZER.to_string()]),
            CaseTemplate::Preemptor => {
                let resources = quantities(&[("cpu", "3970m"), ("memory", "500Mi")]);
                container.resources = Some(ResourceRequirements {
                    limits: Some(resources.clone()),
                    requests: Some(resources),
                    ..Default::default()
                });
                spec.priority = Some(PREEMPTOR_PRIORITY);
                spec.termination_grace_period_seconds = Some(0);
            }
            CaseTemplate::HighPriorityLargeCpu => {
                container.ports = port(None);
                container.resources = Some(requests(&[("cpu", "9"), ("memory", "500Mi")]));
                spec.priority = Some(LARGE_CPU_PRIORITY);
            }
            CaseTemplate::HostPort80 { batch } => {
                container.ports = port(Some(80));
                container.resources = Some(requests(&[("cpu", "100m"), ("memory", "100Mi")]));
                metadata.labels = Some(signature(index, batch));
            }
            CaseTemplate::Saturation { batch } => {
                container.resources = Some(requests(&[("cpu", "3"), ("memory", "1Gi")]));
                metadata.labels = Some(signature(index, batch));
            }
        }
        spec.containers = vec![container];
        Pod {
            metadata,
            spec: Some(spec),
            status: None,
        }
    }
}

/// `createPods`' signature label: the same for each run of `batch` pods.
fn signature(index: u64, batch: u64) -> BTreeMap<String, String> {
    BTreeMap::from([(
        SIGNATURE_LABEL.to_string(),
        format!("signature-label-{}", index / batch.max(1)),
    )])
}

/// Pods created besides the init and measured ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    pub template: PodTemplate,
    pub namespace: &'static str,
    /// Created first and scheduled (attempted) before the init pods, or created just
    /// before the measured pods and scheduled among them.
    pub first: bool,
}

/// An op running while the measured pods are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    /// `churn`: every `interval`, one object of each of `objects`; with `recreate`
    /// (upstream's `number`), the objects of every `recreate`-th tick are deleted instead
    /// of created anew, as upstream's `recreate` mode does.
    Churn {
        namespace: &'static str,
        interval: Duration,
        recreate: Option<u64>,
        objects: &'static [ChurnObject],
    },
    /// `deletePods`: `per_second` of the pods of `namespace` a second, in the order the op
    /// listed them.
    DeletePods {
        namespace: &'static str,
        per_second: u64,
    },
}

/// What a churn template creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChurnObject {
    /// `templates/churn/node-default.yaml`: a Ready node of capacity `pods: 0`.
    Node,
    Pod(CaseTemplate),
    /// `templates/churn/service-default.yaml` (see the module documentation).
    Service,
}

/// The name of churn node `index` (`generateName: node-churn-`).
pub fn churn_node(index: u64) -> Node {
    let name = format!("node-churn-{index:05}");
    ready_node(name, BTreeMap::new(), quantities(&[("pods", "0")]))
}

/// `templates/node-with-name.yaml`: [`NAMED_NODE`], 4 CPUs, 32Gi and 90,000 pods.
pub fn named_node() -> Node {
    ready_node(
        NAMED_NODE.to_string(),
        BTreeMap::new(),
        quantities(&[("pods", "90000"), ("cpu", "4"), ("memory", "32Gi")]),
    )
}

impl CaseWorkload {
    /// The `--workload` name of this workload alone.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.case.name(), self.name)
    }

    /// Node `index` of the run.
    pub fn node(&self, index: u64) -> Node {
        match self.case {
            Case::SchedulingDaemonset if index == 0 => named_node(),
            Case::SchedulingDaemonset => node(index - 1, &[]),
            Case::SchedulingWhileGated => named_node(),
            _ => node(index, &[]),
        }
    }

    /// The init and the measured `createPods`: templates and namespaces (upstream's
    /// `namespace-<op index>`).
    pub fn phases(&self) -> ((PodTemplate, &'static str), (PodTemplate, &'static str)) {
        let case = |t| PodTemplate::Case(t);
        match self.case {
            Case::SchedulingDaemonset => (
                (case(CaseTemplate::Daemonset), "namespace-2"),
                (case(CaseTemplate::Daemonset), "namespace-2"),
            ),
            Case::PreemptionAsync => (
                (PodTemplate::LowPriority, "namespace-1"),
                (PodTemplate::Default, "namespace-3"),
            ),
            Case::Unschedulable => (
                (PodTemplate::Default, "namespace-1"),
                (PodTemplate::Default, "namespace-3"),
            ),
            Case::SchedulingWithMixedChurn => (
                (PodTemplate::Default, "namespace-2"),
                (PodTemplate::Default, "namespace-2"),
            ),
            Case::SchedulingWhileGated => (
                (case(CaseTemplate::Light), "namespace-3"),
                (case(CaseTemplate::Light), "namespace-5"),
            ),
            Case::SchedulingDeletedPodsWithFinalizers => (
                (case(CaseTemplate::Light), "namespace-3"),
                (case(CaseTemplate::Light), "namespace-3"),
            ),
            Case::HostPortConflict => {
                let t = case(CaseTemplate::HostPort80 { batch: self.batch });
                ((t, "namespace-1"), (t, "namespace-1"))
            }
            Case::ResourceSaturation => {
                let t = case(CaseTemplate::Saturation { batch: self.batch });
                ((t, "namespace-1"), (t, "namespace-1"))
            }
        }
    }

    /// The side pods, if the test case has any.
    pub fn side(&self) -> Option<Side> {
        match self.case {
            Case::SchedulingWhileGated => Some(Side {
                template: PodTemplate::Case(CaseTemplate::Gated),
                namespace: "namespace-1",
                first: true,
            }),
            Case::SchedulingDeletedPodsWithFinalizers => Some(Side {
                template: PodTemplate::Case(CaseTemplate::WithFinalizer),
                namespace: "namespace-1",
                first: false,
            }),
            _ => None,
        }
    }

    /// The op running through the measured phase, if any.
    pub fn background(&self) -> Option<Background> {
        const PREEMPTOR: &[ChurnObject] = &[ChurnObject::Pod(CaseTemplate::Preemptor)];
        const LARGE: &[ChurnObject] = &[ChurnObject::Pod(CaseTemplate::HighPriorityLargeCpu)];
        const MIXED: &[ChurnObject] = &[
            ChurnObject::Node,
            ChurnObject::Pod(CaseTemplate::HighPriorityLargeCpu),
            ChurnObject::Service,
        ];
        let every = Duration::from_millis;
        match self.case {
            Case::PreemptionAsync => Some(Background::Churn {
                namespace: "namespace-2",
                interval: every(200),
                recreate: None,
                objects: PREEMPTOR,
            }),
            Case::Unschedulable => Some(Background::Churn {
                namespace: "namespace-2",
                interval: every(200),
                recreate: None,
                objects: LARGE,
            }),
            Case::SchedulingWithMixedChurn => Some(Background::Churn {
                namespace: "namespace-1",
                interval: every(1000),
                recreate: Some(1),
                objects: MIXED,
            }),
            Case::SchedulingWhileGated => Some(Background::DeletePods {
                namespace: "namespace-3",
                per_second: 50,
            }),
            Case::SchedulingDeletedPodsWithFinalizers => Some(Background::DeletePods {
                namespace: "namespace-1",
                per_second: 100,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_thresholds_are_upstreams() {
        let mut names: Vec<String> = CASES.iter().map(CaseWorkload::full_name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), CASES.len());
        // The thresholds of performance-config.yaml, v1.37.2.
        let thresholds: Vec<(String, u32)> = CASES
            .iter()
            .filter_map(|w| Some((w.full_name(), w.threshold?)))
            .collect();
        let expected = [
            ("SchedulingDaemonset/15000Nodes", 1100),
            ("PreemptionAsync/5000Nodes", 570),
            ("Unschedulable/5kNodes/100Init/10kPods", 590),
            ("Unschedulable/5kNodes/20kInit/10kPods", 600),
            ("SchedulingWithMixedChurn/5000Nodes_10000Pods", 710),
            ("SchedulingWhileGated/1Node_10000GatedPods", 910),
            (
                "SchedulingDeletedPodsWithFinalizers/5000Node_5000DeletingPods",
                830,
            ),
        ];
        assert_eq!(
            thresholds,
            expected.map(|(n, t)| (n.to_string(), t)).to_vec()
        );
    }

    #[test]
    fn the_daemonset_pods_name_the_first_node_only() {
        let daemonset = CASES
            .iter()
            .find(|w| w.case == Case::SchedulingDaemonset && w.name == "15000Nodes")
            .unwrap_or_else(|| panic!("missing"));
        assert_eq!(daemonset.node(0).metadata.name.as_deref(), Some(NAMED_NODE));
        assert_eq!(
            daemonset.node(1).metadata.name.as_deref(),
            Some("scheduler-perf-00000")
        );
        let pod = CaseTemplate::Daemonset.pod("ns", "p".to_string(), 0, "s");
        let fields = pod
            .spec
            .and_then(|s| s.affinity)
            .and_then(|a| a.node_affinity)
            .and_then(|a| a.required_during_scheduling_ignored_during_execution)
            .map(|s| s.node_selector_terms[0].match_fields.clone());
        assert_eq!(
            fields.flatten().map(|f| f[0].values.clone()),
            Some(Some(vec![NAMED_NODE.to_string()]))
        );
    }

    #[test]
    fn batched_pods_share_a_label_per_run() {
        let label = |index| {
            CaseTemplate::HostPort80 { batch: 100 }
                .pod("ns", "p".to_string(), index, "s")
                .metadata
                .labels
                .and_then(|l| l.get(SIGNATURE_LABEL).cloned())
        };
        assert_eq!(label(0), Some("signature-label-0".to_string()));
        assert_eq!(label(99), Some("signature-label-0".to_string()));
        assert_eq!(label(100), Some("signature-label-1".to_string()));
    }
}
