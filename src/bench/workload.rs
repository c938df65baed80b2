//! The workloads of upstream's scheduler_perf (kubernetes/kubernetes
//! `test/integration/scheduler_perf`: `misc/`, `affinity/`, `topology_spreading/` and
//! `dra/` `performance-config.yaml`, node and pod templates under `templates/`), built as
//! objects in memory.
//!
//! Each workload is upstream's op list reduced to what the core sees: `createNodes`
//! (node-default: 4 CPUs, 32Gi, 110 pods, optionally a zone label), `createPods` of
//! the init pods, then `createPods` of the measured pods (`collectMetrics: true`).
//! Every node carries `kubernetes.io/hostname`, as upstream's node preparer sets it
//! (`node_util.go`). One deliberate difference: zone labels are given round-robin where
//! upstream's `labelNodePrepareStrategy` picks one at random, so that a seed is not
//! needed to reproduce the cluster.
//!
//! The DRA workloads (`dra/`, upstream v1.37.2) replace the init pods with init
//! *claims*: `createAny` of one ResourceSlice of ten devices per node, the DeviceClass
//! and standalone ResourceClaims, which `allocResourceClaims` allocates without a pod (see
//! [`super::dra`]); the measured pods each get a claim from a ResourceClaimTemplate.
//! Upstream v1.37.2 runs its steady-state scenarios as workloads `empty_500nodes`,
//! `half_500nodes` and `full_500nodes` of SchedulingWithResourceClaimTemplate, while
//! their thresholds still link perf-dash under the test case they had before,
//! SteadyStateClusterResourceClaimTemplate; berth names them that way
//! ([`Workload::SteadyStateClusterResourceClaimTemplate`]), so that a figure and its
//! perf-dash series share one name. SchedulingWithExtendedResource (`misc/`) has no
//! DRA object at all: node *i* advertises the extended resource `foo.com/bar-<i>` and
//! pod *i* requests it, so each pod fits one node; with no DeviceClass serving the
//! resource, DynamicResources skips it and NodeResourcesFit decides.
//!
//! GangScheduling and BasicScheduling (`podgroup/`, upstream v1.37.2, GenericWorkload on)
//! have no init pods either: `createPodGroups` of Workload API PodGroups
//! (`scheduling.k8s.io/v1beta1`), one per `podsPerGroup` measured pods, then the pods,
//! pod *i* naming group *i* / `podsPerGroup` in `spec.schedulingGroup`. Their sizes are
//! upstream's workload names ([`GroupScale`]): a run reports the name as its size, and
//! `--workload GangScheduling/10Nodes_3Gangs` runs one at its own size.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Node, NodeAffinity, NodeCondition, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, NodeSpec, NodeStatus, Pod, PodAffinity,
    PodAffinityTerm, PodAntiAffinity, PodResourceClaim, PodSchedulingGroup, PodSpec, ResourceClaim,
    ResourceRequirements, TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::api::scheduling::v1beta1::{
    BasicSchedulingPolicy, GangSchedulingPolicy, PodGroup, PodGroupSchedulingPolicy, PodGroupSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::cases::{CASES, CaseTemplate, CaseWorkload};

/// The zone label of nodes and of the templates' terms.
pub const ZONE_KEY: &str = "topology.kubernetes.io/zone";
/// The hostname label of nodes.
pub const HOSTNAME_KEY: &str = "kubernetes.io/hostname";
/// Bounds of `--nodes` and `--pods`: upstream's largest workloads (20,000 nodes for the
/// `batching/` test cases, 50,000 measured pods for SchedulingBasic 5000Nodes_50000Pods).
pub const MAX_NODES: u64 = 20_000;
pub const MAX_PODS: u64 = 50_000;

/// Devices in each DRA node's ResourceSlice (the `numDevices: 10` of upstream's
/// workload template), hence claims of one device each that a node can hold.
pub const DEVICES_PER_NODE: u64 = 10;
/// How long a steady-state workload keeps its pods coming (upstream's `duration: 10s`).
pub const STEADY_STATE_DURATION: Duration = Duration::from_secs(10);

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
    /// `dra/`'s burst: half the devices allocated to init claims, then as many pods with
    /// a claim from the template as fill the other half.
    SchedulingWithResourceClaimTemplate,
    /// `dra/`'s steady state: a few pods pending at all times, each bound pod deleted with
    /// its claim and replaced, over a fixed window, with the cluster's devices in use to
    /// the given degree.
    SteadyStateClusterResourceClaimTemplate(Utilization),
    /// `misc/`'s: pod *i* requests the extended resource only node *i* has.
    SchedulingWithExtendedResource,
    /// `podgroup/gangscheduling/`'s: gangs whose `minCount` is their size, so each is
    /// bound whole or not at all.
    GangScheduling(GroupScale),
    /// `podgroup/basicscheduling/`'s: the same groups under the basic policy, no quorum.
    BasicScheduling(GroupScale),
    /// A workload of a test case that changes the cluster while its pods are scheduled,
    /// or that labels them in batches ([`super::cases`]).
    Case(&'static CaseWorkload),
}

/// The scheduling policy of a `podgroup/` test case's PodGroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupPolicy {
    /// `schedulingPolicy.gang.minCount` = the group's size.
    Gang,
    /// `schedulingPolicy.basic: {}`.
    Basic,
}

impl GroupPolicy {
    /// The one namespace of the test case (`createNamespaces` with prefix `gang-ns` or
    /// `basic-ns`, count 1).
    pub fn namespace(self) -> &'static str {
        match self {
            GroupPolicy::Gang => "gang-ns-0",
            GroupPolicy::Basic => "basic-ns-0",
        }
    }

    /// The name of PodGroup `index` (`templates/podgroup.yaml`).
    pub fn group_name(self, index: u64) -> String {
        match self {
            GroupPolicy::Gang => format!("gang-{index}"),
            GroupPolicy::Basic => format!("basic-group-{index}"),
        }
    }

    /// PodGroup `index` of groups of `per_group` pods, as `createPodGroups` creates it.
    pub fn pod_group(self, index: u64, per_group: u64) -> PodGroup {
        let scheduling_policy = match self {
            GroupPolicy::Gang => PodGroupSchedulingPolicy {
                gang: Some(GangSchedulingPolicy {
                    min_count: i32::try_from(per_group).unwrap_or(i32::MAX),
                }),
                ..Default::default()
            },
            GroupPolicy::Basic => PodGroupSchedulingPolicy {
                basic: Some(BasicSchedulingPolicy(serde_json::json!({}))),
                ..Default::default()
            },
        };
        PodGroup {
            metadata: ObjectMeta {
                name: Some(self.group_name(index)),
                namespace: Some(self.namespace().to_string()),
                ..Default::default()
            },
            spec: PodGroupSpec {
                scheduling_policy,
                ..Default::default()
            },
            status: None,
        }
    }
}

/// One of the workloads (sizes) the `podgroup/` test cases define: nodes, pod groups and
/// pods per group. Upstream names them after the counts, `Gangs` or `Groups` after the
/// policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupScale {
    /// 10 nodes, 3 groups of 3 (`integration-test`, `short`).
    Nodes10,
    /// 100 nodes, 10 groups of 3 (`integration-test`).
    Nodes100,
    /// 5000 nodes, 1000 groups of 3 (`performance`, as are the rest).
    Groups1000Of3,
    /// 5000 nodes, 2000 groups of 3.
    Groups2000Of3,
    /// 5000 nodes, 3000 groups of 3.
    Groups3000Of3,
    /// 5000 nodes, 3 groups of 1000.
    Groups3Of1000,
    /// 5000 nodes, 6 groups of 1000.
    Groups6Of1000,
    /// 5000 nodes, 9 groups of 1000.
    Groups9Of1000,
}

impl GroupScale {
    pub const ALL: [GroupScale; 8] = [
        GroupScale::Nodes10,
        GroupScale::Nodes100,
        GroupScale::Groups1000Of3,
        GroupScale::Groups2000Of3,
        GroupScale::Groups3000Of3,
        GroupScale::Groups3Of1000,
        GroupScale::Groups6Of1000,
        GroupScale::Groups9Of1000,
    ];

    /// `initNodes`, `initPodGroups` and `podsPerGroup`.
    pub fn params(self) -> (u64, u64, u64) {
        match self {
            GroupScale::Nodes10 => (10, 3, 3),
            GroupScale::Nodes100 => (100, 10, 3),
            GroupScale::Groups1000Of3 => (5000, 1000, 3),
            GroupScale::Groups2000Of3 => (5000, 2000, 3),
            GroupScale::Groups3000Of3 => (5000, 3000, 3),
            GroupScale::Groups3Of1000 => (5000, 3, 1000),
            GroupScale::Groups6Of1000 => (5000, 6, 1000),
            GroupScale::Groups9Of1000 => (5000, 9, 1000),
        }
    }

    pub fn per_group(self) -> u64 {
        self.params().2
    }

    /// The `--size` whose `all` runs it: 5000Nodes for upstream's `performance`
    /// workloads; the two `integration-test` ones run only when named.
    pub fn size(self) -> Option<Size> {
        match self {
            GroupScale::Nodes10 | GroupScale::Nodes100 => None,
            _ => Some(Size::Nodes5000),
        }
    }

    /// Upstream's workload name in the test case of `policy`.
    pub fn name(self, policy: GroupPolicy) -> &'static str {
        use GroupPolicy::{Basic, Gang};
        match (self, policy) {
            (GroupScale::Nodes10, Gang) => "10Nodes_3Gangs",
            (GroupScale::Nodes10, Basic) => "10Nodes_3Groups",
            (GroupScale::Nodes100, Gang) => "100Nodes_10Gangs",
            (GroupScale::Nodes100, Basic) => "100Nodes_10Groups",
            (GroupScale::Groups1000Of3, Gang) => "5000Nodes_1000Gangs_3000Pods",
            (GroupScale::Groups1000Of3, Basic) => "5000Nodes_1000Groups_3000Pods",
            (GroupScale::Groups2000Of3, Gang) => "5000Nodes_2000Gangs_6000Pods",
            (GroupScale::Groups2000Of3, Basic) => "5000Nodes_2000Groups_6000Pods",
            (GroupScale::Groups3000Of3, Gang) => "5000Nodes_3000Gangs_9000Pods",
            (GroupScale::Groups3000Of3, Basic) => "5000Nodes_3000Groups_9000Pods",
            (GroupScale::Groups3Of1000, Gang) => "5000Nodes_3Gangs_3000Pods_1000PerGroup",
            (GroupScale::Groups3Of1000, Basic) => "5000Nodes_3Groups_3000Pods_1000PerGroup",
            (GroupScale::Groups6Of1000, Gang) => "5000Nodes_6Gangs_6000Pods_1000PerGroup",
            (GroupScale::Groups6Of1000, Basic) => "5000Nodes_6Groups_6000Pods_1000PerGroup",
            (GroupScale::Groups9Of1000, Gang) => "5000Nodes_9Gangs_9000Pods_1000PerGroup",
            (GroupScale::Groups9Of1000, Basic) => "5000Nodes_9Groups_9000Pods_1000PerGroup",
        }
    }

    fn counts(self) -> Counts {
        let (nodes, groups, per_group) = self.params();
        Counts {
            nodes,
            measure_pods: groups * per_group,
            ..Counts::default()
        }
    }
}

/// How many of the devices init claims hold in a steady-state workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Utilization {
    /// None.
    Empty,
    /// Half.
    Half,
    /// All but one per pending pod ("the cluster can accommodate exactly 10 additional
    /// pods").
    Full,
}

impl Utilization {
    /// Upstream's name of the workload at 500 nodes.
    pub fn workload_name(self) -> &'static str {
        match self {
            Utilization::Empty => "empty_500nodes",
            Utilization::Half => "half_500nodes",
            Utilization::Full => "full_500nodes",
        }
    }
}

impl Workload {
    /// Every workload, in the order `--workload all` runs them.
    pub fn all() -> impl Iterator<Item = Workload> {
        Workload::FIXED
            .into_iter()
            .chain(CASES.iter().map(Workload::Case))
    }

    /// The workloads of the test cases this module describes itself.
    const FIXED: [Workload; 30] = [
        Workload::SchedulingBasic,
        Workload::TopologySpreading,
        Workload::PreferredTopologySpreading,
        Workload::SchedulingPodAntiAffinity,
        Workload::SchedulingPodAffinity,
        Workload::SchedulingPreferredPodAffinity,
        Workload::SchedulingPreferredPodAntiAffinity,
        Workload::SchedulingNodeAffinity,
        Workload::PreemptionBasic,
        Workload::SchedulingWithResourceClaimTemplate,
        Workload::SteadyStateClusterResourceClaimTemplate(Utilization::Empty),
        Workload::SteadyStateClusterResourceClaimTemplate(Utilization::Half),
        Workload::SteadyStateClusterResourceClaimTemplate(Utilization::Full),
        Workload::SchedulingWithExtendedResource,
        Workload::GangScheduling(GroupScale::Nodes10),
        Workload::GangScheduling(GroupScale::Nodes100),
        Workload::GangScheduling(GroupScale::Groups1000Of3),
        Workload::GangScheduling(GroupScale::Groups2000Of3),
        Workload::GangScheduling(GroupScale::Groups3000Of3),
        Workload::GangScheduling(GroupScale::Groups3Of1000),
        Workload::GangScheduling(GroupScale::Groups6Of1000),
        Workload::GangScheduling(GroupScale::Groups9Of1000),
        Workload::BasicScheduling(GroupScale::Nodes10),
        Workload::BasicScheduling(GroupScale::Nodes100),
        Workload::BasicScheduling(GroupScale::Groups1000Of3),
        Workload::BasicScheduling(GroupScale::Groups2000Of3),
        Workload::BasicScheduling(GroupScale::Groups3000Of3),
        Workload::BasicScheduling(GroupScale::Groups3Of1000),
        Workload::BasicScheduling(GroupScale::Groups6Of1000),
        Workload::BasicScheduling(GroupScale::Groups9Of1000),
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
            Workload::SchedulingWithResourceClaimTemplate => "SchedulingWithResourceClaimTemplate",
            Workload::SteadyStateClusterResourceClaimTemplate(_) => {
                "SteadyStateClusterResourceClaimTemplate"
            }
            Workload::SchedulingWithExtendedResource => "SchedulingWithExtendedResource",
            Workload::GangScheduling(_) => "GangScheduling",
            Workload::BasicScheduling(_) => "BasicScheduling",
            Workload::Case(w) => w.case.name(),
        }
    }

    /// The workloads `name` selects (upstream's spelling, case-insensitive): the workload
    /// of that name, every variant of SteadyStateClusterResourceClaimTemplate,
    /// GangScheduling or BasicScheduling, or one variant named as perf-dash names it,
    /// `SteadyStateClusterResourceClaimTemplate/half_500nodes` or
    /// `GangScheduling/10Nodes_3Gangs` ([`Workload::is_variant_name`]). Empty for a name no
    /// workload has.
    pub fn parse(name: &str) -> Vec<Workload> {
        Workload::all()
            .filter(|w| {
                w.name().eq_ignore_ascii_case(name)
                    || w.variant().is_some_and(|variant| {
                        name.eq_ignore_ascii_case(&format!("{}/{variant}", w.name()))
                    })
            })
            .collect()
    }

    /// Whether `name` names one variant (`TestCase/workload`), which runs at its own
    /// size ([`Workload::own_counts`]) whatever `--size` says.
    pub fn is_variant_name(name: &str) -> bool {
        name.contains('/')
    }

    /// The name that tells apart workloads sharing [`Workload::name`]: upstream's
    /// workload name.
    pub fn variant(self) -> Option<&'static str> {
        match self {
            Workload::SteadyStateClusterResourceClaimTemplate(u) => Some(u.workload_name()),
            Workload::GangScheduling(scale) => Some(scale.name(GroupPolicy::Gang)),
            Workload::BasicScheduling(scale) => Some(scale.name(GroupPolicy::Basic)),
            Workload::Case(w) => Some(w.name),
            _ => None,
        }
    }

    /// The policy and the pods per group of the PodGroups the workload creates, if it
    /// creates any.
    /// Whether upstream runs this workload with opportunistic batching on
    /// ([`CaseWorkload::batching`]); `None` for workloads run with the default profile.
    pub fn batching(self) -> Option<bool> {
        match self {
            Workload::Case(case) => case.batching(),
            _ => None,
        }
    }

    pub fn pod_groups(self) -> Option<(GroupPolicy, u64)> {
        match self {
            Workload::GangScheduling(scale) => Some((GroupPolicy::Gang, scale.per_group())),
            Workload::BasicScheduling(scale) => Some((GroupPolicy::Basic, scale.per_group())),
            _ => None,
        }
    }

    /// The name a run at `size` reports: upstream's workload name where the test case
    /// names its sizes by their counts (`5000pods_500nodes`), else the size's name. A
    /// variant reports its own name at any size (see [`Workload::own_counts`]).
    pub fn size_name(self, size: Size) -> &'static str {
        if let Some(variant) = self.variant() {
            return variant;
        }
        match (self, size) {
            (Workload::SchedulingWithResourceClaimTemplate, Size::Nodes500) => "5000pods_500nodes",
            (Workload::SchedulingWithExtendedResource, Size::Nodes500) => {
                "500pods_500nodes_DRAExtendedResourceEnabled"
            }
            (Workload::SchedulingWithExtendedResource, Size::Nodes5000) => {
                "5000pods_5000nodes_DRAExtendedResourceEnabled"
            }
            _ => size.name(),
        }
    }

    /// Whether the run needs the DRA objects: slices, the class, init claims and the
    /// claim template.
    pub fn uses_claims(self) -> bool {
        matches!(
            self,
            Workload::SchedulingWithResourceClaimTemplate
                | Workload::SteadyStateClusterResourceClaimTemplate(_)
        )
    }

    /// The node of index `index` of the workload's cluster.
    pub fn node(self, index: u64) -> Node {
        match self {
            Workload::SchedulingWithResourceClaimTemplate
            | Workload::SteadyStateClusterResourceClaimTemplate(_) => dra_node(index),
            Workload::SchedulingWithExtendedResource => extended_resource_node(index),
            Workload::Case(w) => w.node(index),
            _ => node(index, self.zones()),
        }
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
        // No init pods; the PodGroups and their pods in the test case's one namespace.
        let grouped = |policy: GroupPolicy, scale: GroupScale| {
            let template = PodTemplate::GroupMember {
                policy,
                per_group: scale.per_group(),
            };
            (
                Phase::new(template, policy.namespace()),
                Phase::new(template, policy.namespace()),
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
            // No init pods: the init claims live in `init`, the measured pods in `test`.
            Workload::SchedulingWithResourceClaimTemplate
            | Workload::SteadyStateClusterResourceClaimTemplate(_) => (
                Phase::new(PodTemplate::ClaimTemplate, INIT_NAMESPACE),
                Phase::new(PodTemplate::ClaimTemplate, TEST_NAMESPACE),
            ),
            // No init pods and a single namespace.
            Workload::SchedulingWithExtendedResource => (
                Phase::new(PodTemplate::ExtendedResource, TEST_NAMESPACE),
                Phase::new(PodTemplate::ExtendedResource, TEST_NAMESPACE),
            ),
            Workload::GangScheduling(scale) => grouped(GroupPolicy::Gang, scale),
            Workload::BasicScheduling(scale) => grouped(GroupPolicy::Basic, scale),
            Workload::Case(w) => {
                let ((init, init_ns), (measure, measure_ns)) = w.phases();
                (Phase::new(init, init_ns), Phase::new(measure, measure_ns))
            }
        }
    }

    /// Upstream's counts for `size`, or `None` where upstream defines no such size.
    pub fn counts(self, size: Size) -> Option<Counts> {
        let counts = |nodes, init_pods, measure_pods| Counts {
            nodes,
            init_pods,
            measure_pods,
            ..Counts::default()
        };
        let claims = |init_claims, measure_pods, steady_state| Counts {
            nodes: 500,
            measure_pods,
            init_claims,
            steady_state,
            ..Counts::default()
        };
        match (self, size) {
            (Workload::SchedulingWithResourceClaimTemplate, Size::Nodes500) => {
                Some(claims(2500, 2500, None))
            }
            (Workload::SteadyStateClusterResourceClaimTemplate(u), Size::Nodes500) => {
                let init_claims = match u {
                    Utilization::Empty => 0,
                    Utilization::Half => 2500,
                    Utilization::Full => 4990,
                };
                Some(claims(init_claims, 10, Some(STEADY_STATE_DURATION)))
            }
            (
                Workload::SchedulingWithResourceClaimTemplate
                | Workload::SteadyStateClusterResourceClaimTemplate(_),
                _,
            ) => None,
            (Workload::SchedulingWithExtendedResource, Size::Nodes500) => Some(counts(500, 0, 500)),
            (Workload::SchedulingWithExtendedResource, Size::Nodes5000) => {
                Some(counts(5000, 0, 5000))
            }
            (Workload::SchedulingWithExtendedResource, Size::Nodes5000Pods10000) => None,
            (Workload::GangScheduling(scale) | Workload::BasicScheduling(scale), size) => {
                (scale.size() == Some(size)).then(|| scale.counts())
            }
            (Workload::Case(w), size) => (w.size == Some(size)).then(|| case_counts(w)),
            (Workload::SchedulingBasic, Size::Nodes5000Pods50000) => {
                Some(counts(5000, 5000, 50_000))
            }
            (_, Size::Nodes5000Pods50000) => None,
            (Workload::SchedulingBasic, Size::Nodes500) => Some(counts(500, 500, 1000)),
            (Workload::SchedulingBasic, Size::Nodes5000) => Some(counts(5000, 1000, 1000)),
            (Workload::SchedulingBasic, Size::Nodes5000Pods10000) => {
                Some(counts(5000, 1000, 10_000))
            }
            (Workload::TopologySpreading | Workload::PreferredTopologySpreading, size) => {
                match size {
                    Size::Nodes500 => Some(counts(500, 1000, 1000)),
                    Size::Nodes5000 => Some(counts(5000, 5000, 2000)),
                    Size::Nodes5000Pods10000 | Size::Nodes5000Pods50000 => None,
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

    /// The counts of the upstream workload a variant is (see [`Workload::variant`]), at
    /// whatever `--size`; `None` for a workload without variants.
    pub fn own_counts(self) -> Option<Counts> {
        match self {
            Workload::SteadyStateClusterResourceClaimTemplate(_) => self.counts(Size::Nodes500),
            Workload::GangScheduling(scale) | Workload::BasicScheduling(scale) => {
                Some(scale.counts())
            }
            Workload::Case(w) => Some(case_counts(w)),
            _ => None,
        }
    }

    /// Upstream's CI threshold (SchedulingThroughput Average, pods/s) and the size it is
    /// set for; upstream sets thresholds only on its `performance` sizes, and none on
    /// PreemptionBasic nor on the `podgroup/` test cases (v1.37.2).
    pub fn upstream_threshold(self) -> Option<(&'static str, f64)> {
        Some(match self {
            Workload::Case(w) => (w.name, f64::from(w.threshold?)),
            Workload::SchedulingBasic => ("5000Nodes_10000Pods", 680.0),
            Workload::TopologySpreading => ("5000Nodes_5000Pods", 460.0),
            Workload::PreferredTopologySpreading => ("5000Nodes_5000Pods", 340.0),
            Workload::SchedulingPodAntiAffinity => ("5000Nodes_2000Pods", 60.0),
            Workload::SchedulingPodAffinity => ("5000Nodes_5000Pods", 35.0),
            Workload::SchedulingPreferredPodAffinity => ("5000Nodes_5000Pods", 90.0),
            Workload::SchedulingPreferredPodAntiAffinity => ("5000Nodes_5000Pods", 90.0),
            Workload::SchedulingNodeAffinity => ("5000Nodes_10000Pods", 220.0),
            Workload::PreemptionBasic
            | Workload::GangScheduling(_)
            | Workload::BasicScheduling(_) => return None,
            // `dra/`'s thresholds are per topic; these are BenchmarkPerfScheduling's
            // (`dra:`), the topic whose allocator 1.37's scheduler runs by default.
            Workload::SchedulingWithResourceClaimTemplate => ("5000pods_500nodes", 56.0),
            Workload::SteadyStateClusterResourceClaimTemplate(u) => (
                u.workload_name(),
                match u {
                    Utilization::Empty => 64.0,
                    Utilization::Half | Utilization::Full => 60.0,
                },
            ),
            Workload::SchedulingWithExtendedResource => {
                ("5000pods_5000nodes_DRAExtendedResourceEnabled", 180.0)
            }
        })
    }

    /// Upstream's threshold for a run at the size named `size` (a report's size): the
    /// size's own where it has one (SchedulingBasic 5000Nodes_50000Pods), else
    /// [`Workload::upstream_threshold`].
    pub fn upstream_threshold_at(self, size: &str) -> Option<(&'static str, f64)> {
        let fifty = Size::Nodes5000Pods50000.name();
        if self == Workload::SchedulingBasic && size.starts_with(fifty) {
            return Some((fifty, 790.0));
        }
        self.upstream_threshold()
    }

    /// `counts` (the workload's at some size) with `--nodes` and `--pods` applied. Most
    /// workloads keep their measured pods and scale their init pods with the nodes
    /// ([`Counts::with_overrides`]). The others follow the rule upstream's own smaller
    /// sizes of them follow (`2000pods_200nodes`, `half_100nodes`, `full_200nodes`, …),
    /// from the devices, [`DEVICES_PER_NODE`] a node: SchedulingWithResourceClaimTemplate
    /// gives half of them to init claims and measures as many pods as fill the other
    /// half; the steady-state workloads give none, half, or all but one per pending pod;
    /// SchedulingWithExtendedResource measures one pod per node. The `podgroup/`
    /// workloads keep their pods per group, so `--pods` is a whole number of groups
    /// (which the CLI checks).
    pub fn overridden(self, counts: Counts, nodes: Option<u64>, pods: Option<u64>) -> Counts {
        let n = nodes.unwrap_or(counts.nodes);
        let devices = n.saturating_mul(DEVICES_PER_NODE);
        match self {
            Workload::SchedulingWithResourceClaimTemplate => Counts {
                nodes: n,
                init_claims: devices / 2,
                measure_pods: pods.unwrap_or(devices - devices / 2),
                ..counts
            },
            Workload::SteadyStateClusterResourceClaimTemplate(u) => {
                let measure_pods = pods.unwrap_or(counts.measure_pods);
                Counts {
                    nodes: n,
                    init_claims: match u {
                        Utilization::Empty => 0,
                        Utilization::Half => devices / 2,
                        Utilization::Full => devices.saturating_sub(measure_pods),
                    },
                    measure_pods,
                    ..counts
                }
            }
            Workload::SchedulingWithExtendedResource => Counts {
                nodes: n,
                measure_pods: pods.unwrap_or(n),
                ..counts
            },
            _ => counts.with_overrides(nodes, pods),
        }
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
    /// Defined for SchedulingBasic only: its workload of 50,000 measured pods.
    Nodes5000Pods50000,
}

impl Size {
    pub const ALL: [Size; 4] = [
        Size::Nodes500,
        Size::Nodes5000,
        Size::Nodes5000Pods10000,
        Size::Nodes5000Pods50000,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Size::Nodes500 => "500Nodes",
            Size::Nodes5000 => "5000Nodes",
            Size::Nodes5000Pods10000 => "5000Nodes_10000Pods",
            Size::Nodes5000Pods50000 => "5000Nodes_50000Pods",
        }
    }
}

/// The counts of a test case's workload.
fn case_counts(w: &CaseWorkload) -> Counts {
    Counts {
        nodes: w.nodes,
        init_pods: w.init_pods,
        side_pods: w.side_pods,
        measure_pods: w.measure_pods,
        ..Counts::default()
    }
}

/// How many objects a run creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub nodes: u64,
    pub init_pods: u64,
    /// Measured pods; in a steady-state run, the pods kept pending.
    pub measure_pods: u64,
    /// Standalone claims allocated before the measurement, without a pod
    /// (`allocResourceClaims`).
    pub init_claims: u64,
    /// A steady-state run: how long pods keep coming (upstream's `steadyState: true`
    /// with its `duration`).
    pub steady_state: Option<Duration>,
    /// Pods created besides the init and measured ones: gated pods, or pods with a
    /// finalizer (see [`super::cases::Side`]).
    pub side_pods: u64,
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
            ..self
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
/// The DRA and extended-resource templates request no CPU or memory at all; the
/// `podgroup/` members 100m CPU and 100Mi, with no limits.
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
    /// `dra/`'s pod-with-claim-template: one claim from [`CLAIM_TEMPLATE`], used by its
    /// container.
    ClaimTemplate,
    /// `misc/`'s pod-with-extended-resource: pod *i* requests `foo.com/bar-<i>: 1`.
    ExtendedResource,
    /// `podgroup/`'s gang-pod and basic-pod: requests of 100m CPU and 100Mi (no limits),
    /// pod *i* a member of PodGroup *i* / `per_group`.
    GroupMember {
        policy: GroupPolicy,
        per_group: u64,
    },
    /// A template of the test cases of [`super::cases`].
    Case(CaseTemplate),
}

/// The namespace of a DRA workload's init claims.
pub const INIT_NAMESPACE: &str = "init";
/// The namespace of the measured pods of the DRA and extended-resource workloads.
pub const TEST_NAMESPACE: &str = "test";
/// The ResourceClaimTemplate pod-with-claim-template names, in [`TEST_NAMESPACE`].
pub const CLAIM_TEMPLATE: &str = "test-claim-template";
/// The name of the pod's claim (`spec.resourceClaims[0].name`).
pub const POD_CLAIM: &str = "resource";

/// The extended resource that only node `index` of SchedulingWithExtendedResource has
/// and only its pod `index` requests.
pub fn extended_resource(index: u64) -> String {
    format!("foo.com/bar-{index}")
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
            | PodTemplate::HighPriority
            | PodTemplate::ClaimTemplate
            | PodTemplate::ExtendedResource
            | PodTemplate::GroupMember { .. }
            | PodTemplate::Case(_) => None,
            PodTemplate::PodAntiAffinity => Some("green"),
            PodTemplate::PodAffinity
            | PodTemplate::TopologySpreading
            | PodTemplate::PreferredTopologySpreading => Some("blue"),
            PodTemplate::PreferredPodAffinity => Some("red"),
            PodTemplate::PreferredPodAntiAffinity => Some("yellow"),
        }
    }

    /// The name of the pod of index `index` in its `createPods` op: upstream's `name` or
    /// `generateName` prefix, with the index where upstream adds random characters.
    pub fn pod_name(self, index: u64) -> String {
        match self {
            PodTemplate::ClaimTemplate => format!("test-dra-{index:05}"),
            PodTemplate::ExtendedResource => format!("test-extended-resource-{index}"),
            PodTemplate::GroupMember {
                policy: GroupPolicy::Gang,
                ..
            } => format!("test-gang-scheduling-{index}"),
            PodTemplate::GroupMember {
                policy: GroupPolicy::Basic,
                ..
            } => format!("test-basic-scheduling-{index}"),
            PodTemplate::Case(t) => t.pod_name(index),
            _ => format!("pod-{index:05}"),
        }
    }

    /// A pod of this template named `name` in `namespace`, for `scheduler_name`; `index`
    /// is its index in its `createPods` op (upstream's `.Index`), which
    /// pod-with-extended-resource and the group members read.
    pub fn pod(self, namespace: &str, name: String, index: u64, scheduler_name: &str) -> Pod {
        if let PodTemplate::Case(t) = self {
            return t.pod(namespace, name, index, scheduler_name);
        }
        let labels = self
            .color()
            .map(|color| BTreeMap::from([("color".to_string(), color.to_string())]));
        let container = match self {
            PodTemplate::ClaimTemplate => claim_container(),
            PodTemplate::ExtendedResource => extended_resource_container(index),
            PodTemplate::GroupMember { .. } => group_member_container(),
            _ => pause_container(self.cpu()),
        };
        Pod {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace.to_string()),
                labels,
                ..Default::default()
            },
            spec: Some(PodSpec {
                scheduler_name: Some(scheduler_name.to_string()),
                containers: vec![container],
                resource_claims: (self == PodTemplate::ClaimTemplate).then(|| {
                    vec![PodResourceClaim {
                        name: POD_CLAIM.to_string(),
                        resource_claim_template_name: Some(CLAIM_TEMPLATE.to_string()),
                        ..Default::default()
                    }]
                }),
                affinity: self.affinity(),
                topology_spread_constraints: self.spread().map(|c| vec![c]),
                priority: (self == PodTemplate::HighPriority).then_some(HIGH_PRIORITY),
                priority_class_name: (self == PodTemplate::HighPriority)
                    .then(|| HIGH_PRIORITY_CLASS.to_string()),
                termination_grace_period_seconds: (self == PodTemplate::LowPriority).then_some(0),
                scheduling_group: self.group_of(index).map(|group| PodSchedulingGroup {
                    pod_group_name: Some(group),
                }),
                ..Default::default()
            }),
            status: None,
        }
    }

    /// The PodGroup pod `index` of the template is a member of (gang-pod's `gang-{{
    /// DivideInt .Index .podsPerGroup }}`), if the template's pods have one.
    pub fn group_of(self, index: u64) -> Option<String> {
        match self {
            PodTemplate::GroupMember { policy, per_group } => {
                Some(policy.group_name(index / per_group.max(1)))
            }
            _ => None,
        }
    }

    /// The CPU request (and limit) of the pause container of the templates that have
    /// one.
    fn cpu(self) -> &'static str {
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

pub(super) fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
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

/// gang-pod's and basic-pod's container: requests only, no ports.
fn group_member_container() -> Container {
    Container {
        name: "pause".to_string(),
        image: Some("registry.k8s.io/pause:3.10.1".to_string()),
        resources: Some(ResourceRequirements {
            requests: Some(quantities(&[("cpu", "100m"), ("memory", "100Mi")])),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// pod-with-claim-template's container: no requests and no ports, only the pod's claim.
fn claim_container() -> Container {
    Container {
        name: "pause".to_string(),
        image: Some("registry.k8s.io/pause:3.10.1".to_string()),
        resources: Some(ResourceRequirements {
            claims: Some(vec![ResourceClaim {
                name: POD_CLAIM.to_string(),
                request: None,
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// pod-with-extended-resource's container: requests equal to limits, one unit of the
/// extended resource of `index`, nothing else.
fn extended_resource_container(index: u64) -> Container {
    let resources = BTreeMap::from([(extended_resource(index), Quantity("1".to_string()))]);
    Container {
        name: "pause".to_string(),
        image: Some("registry.k8s.io/pause:3.9".to_string()),
        resources: Some(ResourceRequirements {
            limits: Some(resources.clone()),
            requests: Some(resources),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The capacity of every template's node: 4 CPUs, 32Gi, 110 pods.
fn node_capacity() -> BTreeMap<String, Quantity> {
    quantities(&[("pods", "110"), ("cpu", "4"), ("memory", "32Gi")])
}

/// Node `index` of upstream's node-default template: 4 CPUs, 32Gi, 110 pods, Ready; its
/// zone is `zones[index % zones.len()]` when the workload labels zones.
pub fn node(index: u64, zones: &[&str]) -> Node {
    let name = format!("scheduler-perf-{index:05}");
    let mut labels = BTreeMap::new();
    if !zones.is_empty() {
        let zone = zones[(index % zones.len() as u64) as usize];
        labels.insert(ZONE_KEY.to_string(), zone.to_string());
    }
    ready_node(name, labels, node_capacity())
}

/// The name of node `index` of a DRA workload: upstream's, which its ResourceSlice
/// `resourceslice-<index>` names as its node.
pub fn dra_node_name(index: u64) -> String {
    format!("scheduler-perf-dra-{index}")
}

/// Node `index` of `dra/`'s node-with-dra-test-driver: node-default's capacity, labelled
/// `node-with-dra: "true"`.
pub fn dra_node(index: u64) -> Node {
    let labels = BTreeMap::from([("node-with-dra".to_string(), "true".to_string())]);
    ready_node(dra_node_name(index), labels, node_capacity())
}

/// The name of node `index` of SchedulingWithExtendedResource. Upstream's template has
/// `generateName: scheduler-perf-extended-resource-`, to which its node preparer adds
/// five random characters; here they are the index, so that the name says which
/// resource the node has.
pub fn extended_resource_node_name(index: u64) -> String {
    format!("scheduler-perf-extended-resource-{index:05}")
}

/// Node `index` of `misc/`'s node-with-extended-resource: node-default's capacity plus
/// one unit of [`extended_resource`]`(index)`, labelled `node-with-extended-resource:
/// "true"`.
pub fn extended_resource_node(index: u64) -> Node {
    let labels = BTreeMap::from([(
        "node-with-extended-resource".to_string(),
        "true".to_string(),
    )]);
    let mut capacity = node_capacity();
    capacity.insert(extended_resource(index), Quantity("1".to_string()));
    ready_node(extended_resource_node_name(index), labels, capacity)
}

/// A Ready, Running node named `name` with `labels` and `kubernetes.io/hostname`, whose
/// allocatable is its capacity.
pub(super) fn ready_node(
    name: String,
    mut labels: BTreeMap<String, String>,
    capacity: BTreeMap<String, Quantity>,
) -> Node {
    labels.insert(HOSTNAME_KEY.to_string(), name.clone());
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
                    measure_pods,
                    ..Counts::default()
                }),
                "{workload} {}",
                size.name()
            );
        }
    }

    #[test]
    fn the_10000_pod_size_exists_for_scheduling_basic_only() {
        for workload in Workload::all() {
            let defined = workload.counts(Size::Nodes5000Pods10000).is_some();
            assert_eq!(defined, workload == Workload::SchedulingBasic, "{workload}");
        }
    }

    #[test]
    fn scheduling_basic_has_a_threshold_per_size_upstream_sets_one_for() {
        // misc/performance-config.yaml, v1.37.2: 680 at 5000Nodes_10000Pods, 790 at
        // 5000Nodes_50000Pods.
        let basic = Workload::SchedulingBasic;
        assert_eq!(
            basic.upstream_threshold_at("5000Nodes_50000Pods"),
            Some(("5000Nodes_50000Pods", 790.0))
        );
        assert_eq!(
            basic.upstream_threshold_at("5000Nodes_50000Pods (custom)"),
            Some(("5000Nodes_50000Pods", 790.0))
        );
        for size in ["500Nodes", "5000Nodes", "5000Nodes_10000Pods"] {
            assert_eq!(
                basic.upstream_threshold_at(size),
                Some(("5000Nodes_10000Pods", 680.0))
            );
        }
        assert_eq!(
            basic.counts(Size::Nodes5000Pods50000),
            Some(Counts {
                nodes: 5000,
                init_pods: 5000,
                measure_pods: 50_000,
                ..Counts::default()
            })
        );
    }

    #[test]
    fn overrides_scale_the_init_pods_with_the_nodes() {
        let upstream = Counts {
            nodes: 500,
            init_pods: 100,
            measure_pods: 400,
            ..Counts::default()
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
    fn dra_counts_are_upstreams() {
        use Utilization::*;
        // (workload, name, nodes, init claims, measured pods, steady state) from
        // dra/performance-config.yaml and misc/performance-config.yaml, v1.37.2.
        let ten = Some(Duration::from_secs(10));
        let cases = [
            (
                Workload::SchedulingWithResourceClaimTemplate,
                Size::Nodes500,
                "5000pods_500nodes",
                500,
                2500,
                2500,
                None,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Empty),
                Size::Nodes500,
                "empty_500nodes",
                500,
                0,
                10,
                ten,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Half),
                Size::Nodes500,
                "half_500nodes",
                500,
                2500,
                10,
                ten,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Full),
                Size::Nodes500,
                "full_500nodes",
                500,
                4990,
                10,
                ten,
            ),
            (
                Workload::SchedulingWithExtendedResource,
                Size::Nodes500,
                "500pods_500nodes_DRAExtendedResourceEnabled",
                500,
                0,
                500,
                None,
            ),
            (
                Workload::SchedulingWithExtendedResource,
                Size::Nodes5000,
                "5000pods_5000nodes_DRAExtendedResourceEnabled",
                5000,
                0,
                5000,
                None,
            ),
        ];
        for (workload, size, name, nodes, init_claims, measure_pods, steady_state) in cases {
            let want = Counts {
                nodes,
                measure_pods,
                init_claims,
                steady_state,
                ..Counts::default()
            };
            assert_eq!(workload.counts(size), Some(want), "{workload} {name}");
            assert_eq!(workload.size_name(size), name, "{workload}");
            // With no override the rule gives the counts back.
            assert_eq!(
                workload.overridden(want, None, None),
                want,
                "{workload} {name}"
            );
        }
        for workload in [
            Workload::SchedulingWithResourceClaimTemplate,
            Workload::SteadyStateClusterResourceClaimTemplate(Empty),
        ] {
            assert_eq!(workload.counts(Size::Nodes5000), None, "{workload}");
        }
    }

    #[test]
    fn dra_overrides_follow_upstreams_smaller_sizes() {
        use Utilization::*;
        // Upstream's smaller sizes of the same test cases: (workload, --nodes, init
        // claims, measured pods), e.g. 2000pods_200nodes (1000 + 1000), half_100nodes
        // (500), full_100nodes (990), full_200nodes (1990), and SchedulingWithExtended-
        // Resource's fast size (10 nodes with the resource, 10 pods).
        let cases = [
            (
                Workload::SchedulingWithResourceClaimTemplate,
                200,
                1000,
                1000,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Empty),
                100,
                0,
                10,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Half),
                100,
                500,
                10,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Half),
                200,
                1000,
                10,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Full),
                100,
                990,
                10,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Full),
                200,
                1990,
                10,
            ),
            (Workload::SchedulingWithExtendedResource, 10, 0, 10),
        ];
        for (workload, nodes, init_claims, measure_pods) in cases {
            let Some(counts) = workload.counts(Size::Nodes500) else {
                panic!("{workload} has 500 nodes");
            };
            let got = workload.overridden(counts, Some(nodes), None);
            assert_eq!(
                (got.nodes, got.init_claims, got.measure_pods, got.init_pods),
                (nodes, init_claims, measure_pods, 0),
                "{workload} at {nodes} nodes"
            );
        }
        // --pods: a full cluster keeps one free device per pending pod.
        let full = Workload::SteadyStateClusterResourceClaimTemplate(Full);
        let got = full.overridden(
            full.counts(Size::Nodes500).unwrap_or_default(),
            Some(2),
            Some(5),
        );
        assert_eq!((got.init_claims, got.measure_pods), (15, 5));
    }

    #[test]
    fn dra_thresholds_are_v1_37_2s() {
        use Utilization::*;
        let cases = [
            (
                Workload::SchedulingWithResourceClaimTemplate,
                "5000pods_500nodes",
                56.0,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Empty),
                "empty_500nodes",
                64.0,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Half),
                "half_500nodes",
                60.0,
            ),
            (
                Workload::SteadyStateClusterResourceClaimTemplate(Full),
                "full_500nodes",
                60.0,
            ),
            (
                Workload::SchedulingWithExtendedResource,
                "5000pods_5000nodes_DRAExtendedResourceEnabled",
                180.0,
            ),
        ];
        for (workload, size, threshold) in cases {
            assert_eq!(
                workload.upstream_threshold(),
                Some((size, threshold)),
                "{workload}"
            );
        }
    }

    #[test]
    fn workload_names_parse_case_insensitively() {
        for workload in Workload::all() {
            assert!(Workload::parse(workload.name()).contains(&workload));
            assert!(Workload::parse(&workload.name().to_lowercase()).contains(&workload));
        }
        assert_eq!(Workload::parse("SchedulingSecrets"), Vec::new());
        assert_eq!(
            Workload::parse("SchedulingBasic"),
            vec![Workload::SchedulingBasic]
        );
        use Utilization::*;
        assert_eq!(
            Workload::parse("SteadyStateClusterResourceClaimTemplate"),
            vec![
                Workload::SteadyStateClusterResourceClaimTemplate(Empty),
                Workload::SteadyStateClusterResourceClaimTemplate(Half),
                Workload::SteadyStateClusterResourceClaimTemplate(Full),
            ]
        );
        assert_eq!(
            Workload::parse("steadystateclusterresourceclaimtemplate/HALF_500nodes"),
            vec![Workload::SteadyStateClusterResourceClaimTemplate(Half)]
        );
        assert_eq!(Workload::parse("SchedulingBasic/half_500nodes"), Vec::new());
    }

    #[test]
    fn dra_and_extended_resource_templates_are_upstreams() {
        // dra/templates/pod-with-claim-template.yaml: one claim from the template, used
        // by the one container, which requests nothing and exposes no port.
        let pod = PodTemplate::ClaimTemplate.pod("test", "test-dra-00000".into(), 0, "s");
        let spec = pod.spec.unwrap_or_default();
        let claims = spec.resource_claims.unwrap_or_default();
        assert_eq!(claims.len(), 1);
        assert_eq!(claims[0].name, "resource");
        assert_eq!(
            claims[0].resource_claim_template_name.as_deref(),
            Some("test-claim-template")
        );
        let container = &spec.containers[0];
        assert_eq!(
            container.image.as_deref(),
            Some("registry.k8s.io/pause:3.10.1")
        );
        assert_eq!(container.ports, None);
        let resources = container.resources.clone().unwrap_or_default();
        assert_eq!((resources.requests, resources.limits), (None, None));
        let used: Vec<String> = resources
            .claims
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(used, ["resource"]);

        // misc/templates/pod-with-extended-resource.yaml: requests = limits =
        // foo.com/bar-<index>: 1, and nothing else.
        let name = PodTemplate::ExtendedResource.pod_name(7);
        assert_eq!(name, "test-extended-resource-7");
        let pod = PodTemplate::ExtendedResource.pod("test", name, 7, "s");
        let container = &pod.spec.unwrap_or_default().containers[0];
        assert_eq!(
            container.image.as_deref(),
            Some("registry.k8s.io/pause:3.9")
        );
        let resources = container.resources.clone().unwrap_or_default();
        let want = BTreeMap::from([("foo.com/bar-7".to_string(), Quantity("1".into()))]);
        assert_eq!(resources.requests, Some(want.clone()));
        assert_eq!(resources.limits, Some(want));
    }

    #[test]
    fn dra_and_extended_resource_nodes_are_upstreams() {
        // node-with-dra-test-driver.yaml: scheduler-perf-dra-{{.Index}}, not padded.
        let node = dra_node(12);
        assert_eq!(node.metadata.name.as_deref(), Some("scheduler-perf-dra-12"));
        let labels = node.metadata.labels.unwrap_or_default();
        assert_eq!(labels["node-with-dra"], "true");
        assert_eq!(labels[HOSTNAME_KEY], "scheduler-perf-dra-12");
        let capacity = node.status.unwrap_or_default().capacity.unwrap_or_default();
        let want = [("cpu", "4"), ("memory", "32Gi"), ("pods", "110")];
        let got: Vec<(&str, &str)> = capacity
            .iter()
            .map(|(k, v)| (k.as_str(), v.0.as_str()))
            .collect();
        assert_eq!(got, want);

        // node-with-extended-resource.yaml: the same plus foo.com/bar-{{.Index}}: 1.
        let node = extended_resource_node(3);
        let labels = node.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels["node-with-extended-resource"], "true");
        let status = node.status.unwrap_or_default();
        let allocatable = status.allocatable.unwrap_or_default();
        assert_eq!(allocatable["foo.com/bar-3"], Quantity("1".into()));
        assert_eq!(allocatable.len(), 4);
        assert_eq!(
            Workload::SchedulingWithExtendedResource
                .node(3)
                .metadata
                .name,
            Some(extended_resource_node_name(3))
        );
    }

    #[test]
    fn group_workloads_are_upstreams() {
        use GroupScale::*;
        // (scale, gang name, basic name, nodes, groups, pods per group, performance)
        // from podgroup/{gang,basic}scheduling/performance-config.yaml, v1.37.2.
        let cases = [
            (
                Nodes10,
                "10Nodes_3Gangs",
                "10Nodes_3Groups",
                10,
                3,
                3,
                false,
            ),
            (
                Nodes100,
                "100Nodes_10Gangs",
                "100Nodes_10Groups",
                100,
                10,
                3,
                false,
            ),
            (
                Groups1000Of3,
                "5000Nodes_1000Gangs_3000Pods",
                "5000Nodes_1000Groups_3000Pods",
                5000,
                1000,
                3,
                true,
            ),
            (
                Groups2000Of3,
                "5000Nodes_2000Gangs_6000Pods",
                "5000Nodes_2000Groups_6000Pods",
                5000,
                2000,
                3,
                true,
            ),
            (
                Groups3000Of3,
                "5000Nodes_3000Gangs_9000Pods",
                "5000Nodes_3000Groups_9000Pods",
                5000,
                3000,
                3,
                true,
            ),
            (
                Groups3Of1000,
                "5000Nodes_3Gangs_3000Pods_1000PerGroup",
                "5000Nodes_3Groups_3000Pods_1000PerGroup",
                5000,
                3,
                1000,
                true,
            ),
            (
                Groups6Of1000,
                "5000Nodes_6Gangs_6000Pods_1000PerGroup",
                "5000Nodes_6Groups_6000Pods_1000PerGroup",
                5000,
                6,
                1000,
                true,
            ),
            (
                Groups9Of1000,
                "5000Nodes_9Gangs_9000Pods_1000PerGroup",
                "5000Nodes_9Groups_9000Pods_1000PerGroup",
                5000,
                9,
                1000,
                true,
            ),
        ];
        assert_eq!(cases.len(), GroupScale::ALL.len());
        for (scale, gang, basic, nodes, groups, per_group, performance) in cases {
            let want = Counts {
                nodes,
                measure_pods: groups * per_group,
                ..Counts::default()
            };
            for (workload, name) in [
                (Workload::GangScheduling(scale), gang),
                (Workload::BasicScheduling(scale), basic),
            ] {
                assert_eq!(workload.size_name(Size::Nodes500), name);
                assert_eq!(workload.own_counts(), Some(want), "{name}");
                // `all` at 5000Nodes runs the performance workloads only.
                let at_5000 = workload.counts(Size::Nodes5000);
                assert_eq!(at_5000, performance.then_some(want), "{name}");
                assert_eq!(workload.counts(Size::Nodes500), None, "{name}");
                assert_eq!(workload.upstream_threshold(), None, "{name}");
                assert_eq!(
                    workload.pod_groups().map(|(_, n)| n),
                    Some(per_group),
                    "{name}"
                );
                assert_eq!(
                    Workload::parse(&format!("{}/{name}", workload.name())),
                    vec![workload]
                );
            }
        }
        assert_eq!(Workload::parse("GangScheduling").len(), 8);
        assert_eq!(
            Workload::parse("GangScheduling/10Nodes_3Groups"),
            Vec::new()
        );
    }

    #[test]
    fn group_templates_are_upstreams() {
        // gangscheduling/templates/gang-pod.yaml: pod i names gang-(i / podsPerGroup).
        let template = PodTemplate::GroupMember {
            policy: GroupPolicy::Gang,
            per_group: 3,
        };
        let name = template.pod_name(5);
        assert_eq!(name, "test-gang-scheduling-5");
        let pod = template.pod("gang-ns-0", name, 5, "s");
        let spec = pod.spec.unwrap_or_default();
        let group = spec.scheduling_group.and_then(|g| g.pod_group_name);
        assert_eq!(group.as_deref(), Some("gang-1"));
        let container = &spec.containers[0];
        assert_eq!(
            container.image.as_deref(),
            Some("registry.k8s.io/pause:3.10.1")
        );
        assert_eq!(container.ports, None);
        let resources = container.resources.clone().unwrap_or_default();
        let want = quantities(&[("cpu", "100m"), ("memory", "100Mi")]);
        assert_eq!((resources.requests, resources.limits), (Some(want), None));

        // templates/podgroup.yaml: gang-<i>, minCount = podsPerGroup.
        let group = GroupPolicy::Gang.pod_group(7, 1000);
        assert_eq!(group.metadata.name.as_deref(), Some("gang-7"));
        assert_eq!(group.metadata.namespace.as_deref(), Some("gang-ns-0"));
        let policy = group.spec.scheduling_policy;
        assert_eq!(policy.gang.map(|g| g.min_count), Some(1000));
        assert!(policy.basic.is_none());

        // basicscheduling/: basic-group-<i> with `basic: {}`, pods test-basic-scheduling-<i>.
        let template = PodTemplate::GroupMember {
            policy: GroupPolicy::Basic,
            per_group: 1000,
        };
        assert_eq!(template.pod_name(999), "test-basic-scheduling-999");
        assert_eq!(template.group_of(999).as_deref(), Some("basic-group-0"));
        assert_eq!(template.group_of(1000).as_deref(), Some("basic-group-1"));
        let group = GroupPolicy::Basic.pod_group(0, 1000);
        assert_eq!(group.metadata.name.as_deref(), Some("basic-group-0"));
        assert_eq!(group.metadata.namespace.as_deref(), Some("basic-ns-0"));
        let policy = group.spec.scheduling_policy;
        assert!(policy.gang.is_none());
        assert_eq!(policy.basic.map(|b| b.0), Some(serde_json::json!({})));
        // Other templates' pods name no group.
        assert_eq!(PodTemplate::Default.group_of(0), None);
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
