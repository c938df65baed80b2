//! `make_pod()`, after upstream's `st.MakePod()`.

use k8s_openapi::api::core::v1::{
    Affinity, Container, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolumeClaimVolumeSource, Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity,
    PodSchedulingGate, PodSpec, PodStatus, ResourceRequirements, Toleration,
    TopologySpreadConstraint, Volume, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, OwnerReference, Time,
};
use k8s_openapi::jiff::Timestamp;

use super::{pod_info, quantities};
use crate::cluster::PodInfo;

/// A pod under construction; [`PodWrapper::obj`] returns it.
#[derive(Clone, Debug)]
pub struct PodWrapper(Pod);

/// A pod with an empty spec (upstream `MakePod()`).
pub fn make_pod() -> PodWrapper {
    PodWrapper(Pod {
        spec: Some(PodSpec::default()),
        ..Pod::default()
    })
}

/// A toleration; empty strings leave the field unset, as Go's zero values.
pub fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
    let set = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Toleration {
        key: set(key),
        operator: set(operator),
        value: set(value),
        effect: set(effect),
        ..Toleration::default()
    }
}

/// A topology spread constraint of `max_skew` over `key`, the other fields unset.
pub fn spread_constraint(
    max_skew: i32,
    key: &str,
    when_unsatisfiable: &str,
    selector: Option<LabelSelector>,
) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: when_unsatisfiable.into(),
        label_selector: selector,
        ..TopologySpreadConstraint::default()
    }
}

/// A required term whose selector is one `matchExpressions` requirement.
fn affinity_term(key: &str, operator: &str, values: &[&str], topology: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: operator.into(),
                values: (!values.is_empty())
                    .then(|| values.iter().map(|v| v.to_string()).collect()),
            }]),
            ..LabelSelector::default()
        }),
        topology_key: topology.into(),
        ..PodAffinityTerm::default()
    }
}

impl PodWrapper {
    // Metadata.

    metadata_setters!();

    pub fn namespace(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.into());
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.0
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(key.into(), value.into());
        self
    }

    /// Appends an owner reference.
    pub fn owner_reference(mut self, owner: OwnerReference) -> Self {
        self.0
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(owner);
        self
    }

    /// `metadata.ownerReferences` exactly `owners`, an empty list included.
    pub fn owner_references(mut self, owners: Vec<OwnerReference>) -> Self {
        self.0.metadata.owner_references = Some(owners);
        self
    }

    /// Created `second` seconds after the Unix epoch.
    pub fn creation_second(mut self, second: i64) -> Self {
        let at = Timestamp::from_second(second).expect("test timestamp is in range");
        self.0.metadata.creation_timestamp = Some(Time(at));
        self
    }

    /// Marked for deletion (upstream `Terminating`).
    pub fn terminating(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        self
    }

    // Spec.

    /// Bound (or assumed) to `node` (upstream `Node`).
    pub fn node(mut self, node: &str) -> Self {
        self.spec().node_name = Some(node.into());
        self
    }

    pub fn scheduler_name(mut self, name: &str) -> Self {
        self.spec().scheduler_name = Some(name.into());
        self
    }

    pub fn priority(mut self, priority: i32) -> Self {
        self.spec().priority = Some(priority);
        self
    }

    /// Appends an app container requesting `requests`; an empty list leaves its
    /// resources unset (upstream `Req`).
    pub fn req(mut self, requests: &[(&str, &str)]) -> Self {
        let name = format!("con{}", self.spec().containers.len());
        self.container(requesting(name, requests))
    }

    /// Appends an init container requesting `requests` (upstream `InitReq`).
    pub fn init_req(mut self, requests: &[(&str, &str)]) -> Self {
        let count = self.spec().init_containers.as_ref().map_or(0, Vec::len);
        self.init_container(requesting(format!("init{count}"), requests))
    }

    pub fn container(mut self, container: Container) -> Self {
        self.spec().containers.push(container);
        self
    }

    pub fn init_container(mut self, container: Container) -> Self {
        self.spec()
            .init_containers
            .get_or_insert_with(Vec::new)
            .push(container);
        self
    }

    /// `spec.overhead` (upstream `Overhead`).
    pub fn overhead(mut self, overhead: &[(&str, &str)]) -> Self {
        self.spec().overhead = Some(quantities(overhead));
        self
    }

    pub fn toleration(mut self, toleration: Toleration) -> Self {
        self.spec()
            .tolerations
            .get_or_insert_with(Vec::new)
            .push(toleration);
        self
    }

    /// `spec.tolerations` exactly `tolerations`, an empty list included.
    pub fn tolerations(mut self, tolerations: Vec<Toleration>) -> Self {
        self.spec().tolerations = Some(tolerations);
        self
    }

    /// Adds `key: value` to `spec.nodeSelector` (upstream `NodeSelector`).
    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.spec()
            .node_selector
            .get_or_insert_with(Default::default)
            .insert(key.into(), value.into());
        self
    }

    /// `spec.affinity` exactly `affinity`.
    pub fn affinity(mut self, affinity: Affinity) -> Self {
        self.spec().affinity = Some(affinity);
        self
    }

    /// `spec.affinity.nodeAffinity` exactly `affinity`.
    pub fn node_affinity(mut self, affinity: NodeAffinity) -> Self {
        self.affinity_mut().node_affinity = Some(affinity);
        self
    }

    /// Required node affinity of one term `key In values` (upstream `NodeAffinityIn`).
    pub fn node_affinity_in(mut self, key: &str, values: &[&str]) -> Self {
        let term = NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: key.into(),
                operator: "In".into(),
                values: Some(values.iter().map(|v| v.to_string()).collect()),
            }]),
            ..NodeSelectorTerm::default()
        };
        self.affinity_mut()
            .node_affinity
            .get_or_insert_with(NodeAffinity::default)
            .required_during_scheduling_ignored_during_execution = Some(NodeSelector {
            node_selector_terms: vec![term],
        });
        self
    }

    pub fn required_pod_affinity(mut self, term: PodAffinityTerm) -> Self {
        let affinity = self
            .affinity_mut()
            .pod_affinity
            .get_or_insert_with(PodAffinity::default);
        affinity
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(term);
        self
    }

    pub fn required_pod_anti_affinity(mut self, term: PodAffinityTerm) -> Self {
        let affinity = self
            .affinity_mut()
            .pod_anti_affinity
            .get_or_insert_with(PodAntiAffinity::default);
        affinity
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(term);
        self
    }

    pub fn preferred_pod_affinity(mut self, term: WeightedPodAffinityTerm) -> Self {
        let affinity = self
            .affinity_mut()
            .pod_affinity
            .get_or_insert_with(PodAffinity::default);
        affinity
            .preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(term);
        self
    }

    pub fn preferred_pod_anti_affinity(mut self, term: WeightedPodAffinityTerm) -> Self {
        let affinity = self
            .affinity_mut()
            .pod_anti_affinity
            .get_or_insert_with(PodAntiAffinity::default);
        affinity
            .preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(term);
        self
    }

    /// Required affinity to pods whose `key` is in `values`, in `topology` (upstream
    /// `PodAffinityIn`).
    pub fn pod_affinity_in(self, key: &str, topology: &str, values: &[&str]) -> Self {
        self.required_pod_affinity(affinity_term(key, "In", values, topology))
    }

    pub fn pod_affinity_not_in(self, key: &str, topology: &str, values: &[&str]) -> Self {
        self.required_pod_affinity(affinity_term(key, "NotIn", values, topology))
    }

    pub fn pod_affinity_exists(self, key: &str, topology: &str) -> Self {
        self.required_pod_affinity(affinity_term(key, "Exists", &[], topology))
    }

    /// Required anti-affinity to pods whose `key` is in `values`, in `topology` (upstream
    /// `PodAntiAffinityIn`).
    pub fn pod_anti_affinity_in(self, key: &str, topology: &str, values: &[&str]) -> Self {
        self.required_pod_anti_affinity(affinity_term(key, "In", values, topology))
    }

    pub fn pod_anti_affinity_not_in(self, key: &str, topology: &str, values: &[&str]) -> Self {
        self.required_pod_anti_affinity(affinity_term(key, "NotIn", values, topology))
    }

    pub fn pod_anti_affinity_exists(self, key: &str, topology: &str) -> Self {
        self.required_pod_anti_affinity(affinity_term(key, "Exists", &[], topology))
    }

    /// Appends a constraint of `max_skew` over `key` (upstream `SpreadConstraint` with
    /// its optional arguments nil).
    pub fn spread_constraint(
        self,
        max_skew: i32,
        key: &str,
        when_unsatisfiable: &str,
        selector: Option<LabelSelector>,
    ) -> Self {
        self.topology_spread_constraint(spread_constraint(
            max_skew,
            key,
            when_unsatisfiable,
            selector,
        ))
    }

    /// Appends `constraint` as written, for the fields `spread_constraint` leaves unset.
    pub fn topology_spread_constraint(mut self, constraint: TopologySpreadConstraint) -> Self {
        self.spec()
            .topology_spread_constraints
            .get_or_insert_with(Vec::new)
            .push(constraint);
        self
    }

    /// `spec.schedulingGates` named `gates`; none leaves the field unset (upstream
    /// `SchedulingGates`).
    pub fn scheduling_gates(mut self, gates: &[&str]) -> Self {
        self.spec().scheduling_gates = (!gates.is_empty()).then(|| {
            gates
                .iter()
                .map(|name| PodSchedulingGate {
                    name: name.to_string(),
                })
                .collect()
        });
        self
    }

    /// `spec.resources`, the pod-level requests and limits.
    pub fn pod_resources(mut self, resources: ResourceRequirements) -> Self {
        self.spec().resources = Some(resources);
        self
    }

    /// Adds a volume named after `claim` that mounts that PersistentVolumeClaim (upstream
    /// `PVC`).
    pub fn pvc(mut self, claim: &str) -> Self {
        self.spec()
            .volumes
            .get_or_insert_with(Vec::new)
            .push(Volume {
                name: claim.into(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.into(),
                    read_only: None,
                }),
                ..Volume::default()
            });
        self
    }

    // Status.

    pub fn phase(mut self, phase: &str) -> Self {
        self.0.status.get_or_insert_with(PodStatus::default).phase = Some(phase.into());
        self
    }

    fn spec(&mut self) -> &mut PodSpec {
        self.0.spec.get_or_insert_with(PodSpec::default)
    }

    fn affinity_mut(&mut self) -> &mut Affinity {
        self.spec().affinity.get_or_insert_with(Affinity::default)
    }

    pub fn obj(self) -> Pod {
        self.0
    }

    /// The pod's `PodInfo`, as the scheduling cycle sees it.
    pub fn info(self) -> PodInfo {
        pod_info(self.0)
    }
}

/// A container named `name` requesting `requests`, or with resources unset when there
/// are none.
fn requesting(name: String, requests: &[(&str, &str)]) -> Container {
    Container {
        name,
        resources: (!requests.is_empty()).then(|| ResourceRequirements {
            requests: Some(quantities(requests)),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    }
}
