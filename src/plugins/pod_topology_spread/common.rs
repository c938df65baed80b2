//! What filtering and scoring share (upstream `podtopologyspread/common.go`): the parsed
//! form of a pod's spread constraints, the node inclusion policies, and counting the pods
//! a constraint's selector matches.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::{Expression, Selector, SelectorExt};

use crate::cluster::PodInfo;
use crate::helpers::node_affinity::RequiredNodeAffinity;
use crate::helpers::taints::{
    find_untolerated_taint, is_do_not_schedule_taint, node_taints, pod_tolerations,
};

/// `whenUnsatisfiable` of hard constraints: Filter enforces them.
pub const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
/// `whenUnsatisfiable` of soft constraints: Score prefers nodes that satisfy them.
pub const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
/// The well-known hostname label; scoring counts its domains per node.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// The well-known zone label.
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";

/// A label selector as the scheduler evaluates it. An absent (`null`) selector matches
/// no pod, unlike an empty one, which matches every pod (upstream
/// `metav1.LabelSelectorAsSelector`); kube's [`Selector`] cannot express the former.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodSelector {
    Nothing,
    Matching(Selector),
}

impl PodSelector {
    /// Parses `selector`; fails on an operator the API does not define or `In`/`NotIn`
    /// without values.
    pub fn parse(selector: Option<&LabelSelector>) -> Result<Self, String> {
        let Some(selector) = selector else {
            return Ok(PodSelector::Nothing);
        };
        let empty_set = selector.match_expressions.iter().flatten().find(|r| {
            matches!(r.operator.as_str(), "In" | "NotIn")
                && r.values.as_ref().is_none_or(Vec::is_empty)
        });
        if let Some(requirement) = empty_set {
            return Err(format!(
                "label selector requirement on {:?}: values must be non-empty for operator {}",
                requirement.key, requirement.operator
            ));
        }
        Selector::try_from(selector.clone())
            .map(PodSelector::Matching)
            .map_err(|e| e.to_string())
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            PodSelector::Nothing => false,
            PodSelector::Matching(selector) => selector.matches(labels),
        }
    }

    /// Upstream `mergeLabelSetWithSelector`: `key=value` for each of `labels`, ANDed with
    /// this selector's requirements. A `Nothing` selector has no requirements to add, so
    /// the result is the label set alone, as upstream.
    fn merged_with(self, labels: BTreeMap<String, String>) -> Self {
        let mut merged: Selector = labels
            .into_iter()
            .map(|(k, v)| Expression::Equal(k, v))
            .collect();
        if let PodSelector::Matching(selector) = self {
            merged.extend(selector);
        }
        PodSelector::Matching(merged)
    }
}

/// `nodeAffinityPolicy` / `nodeTaintsPolicy`: whether a node that the pod's node affinity
/// (or taints) would exclude still counts as a domain when computing skew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeInclusionPolicy {
    Honor,
    Ignore,
}

impl NodeInclusionPolicy {
    fn parse(value: Option<&str>, default: Self) -> Self {
        match value {
            Some("Honor") => NodeInclusionPolicy::Honor,
            Some("Ignore") => NodeInclusionPolicy::Ignore,
            _ => default,
        }
    }
}

/// A spread constraint with its selector parsed and absent fields defaulted (upstream
/// `topologySpreadConstraint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpreadConstraint {
    pub max_skew: i64,
    pub topology_key: String,
    pub selector: PodSelector,
    /// At least 1: absent means 1.
    pub min_domains: i64,
    pub node_affinity_policy: NodeInclusionPolicy,
    pub node_taints_policy: NodeInclusionPolicy,
}

impl SpreadConstraint {
    /// Upstream `matchNodeInclusionPolicies`: whether `node` counts as a domain of this
    /// constraint for `pod`.
    pub fn includes_node(&self, pod: &Pod, node: &Node, required: &RequiredNodeAffinity) -> bool {
        if self.node_affinity_policy == NodeInclusionPolicy::Honor && !required.matches(node) {
            return false;
        }
        self.node_taints_policy == NodeInclusionPolicy::Ignore
            || find_untolerated_taint(
                node_taints(node),
                pod_tolerations(pod),
                is_do_not_schedule_taint,
            )
            .is_none()
    }
}

/// Upstream `filterTopologySpreadConstraints`: the constraints with `whenUnsatisfiable ==
/// action`, parsed. `matchLabelKeys` adds `key=<the pod's value>` for each listed key the
/// pod has. (API servers from 1.34 merge `matchLabelKeys` into the selector at admission;
/// merging again adds the same requirements, so the result is unchanged.)
pub fn parse_constraints(
    constraints: &[TopologySpreadConstraint],
    pod_labels: &BTreeMap<String, String>,
    action: &str,
) -> Result<Vec<SpreadConstraint>, String> {
    constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == action)
        .map(|c| {
            let mut selector = PodSelector::parse(c.label_selector.as_ref())?;
            let match_labels: BTreeMap<String, String> = c
                .match_label_keys
                .iter()
                .flatten()
                .filter_map(|key| pod_labels.get(key).map(|v| (key.clone(), v.clone())))
                .collect();
            if !match_labels.is_empty() {
                selector = selector.merged_with(match_labels);
            }
            Ok(SpreadConstraint {
                max_skew: i64::from(c.max_skew),
                topology_key: c.topology_key.clone(),
                selector,
                min_domains: c.min_domains.map_or(1, i64::from),
                node_affinity_policy: NodeInclusionPolicy::parse(
                    c.node_affinity_policy.as_deref(),
                    NodeInclusionPolicy::Honor,
                ),
                node_taints_policy: NodeInclusionPolicy::parse(
                    c.node_taints_policy.as_deref(),
                    NodeInclusionPolicy::Ignore,
                ),
            })
        })
        .collect()
}

/// Upstream `nodeLabelsMatchSpreadConstraints`: whether the node has every constraint's
/// topology key.
pub fn node_has_all_topology_keys(
    node_labels: &BTreeMap<String, String>,
    constraints: &[SpreadConstraint],
) -> bool {
    constraints
        .iter()
        .all(|c| node_labels.contains_key(&c.topology_key))
}

/// Upstream `countPodsMatchSelector`: pods in `namespace` that `selector` matches,
/// terminating pods excluded (kubernetes#87621).
pub fn count_matching_pods<'a>(
    pods: impl IntoIterator<Item = &'a Arc<PodInfo>>,
    selector: &PodSelector,
    namespace: &str,
) -> i64 {
    let count = pods
        .into_iter()
        .filter(|p| p.pod.metadata.deletion_timestamp.is_none() && p.namespace() == namespace)
        .filter(|p| selector.matches(pod_labels(&p.pod)))
        .count();
    i64::try_from(count).unwrap_or(i64::MAX)
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// `metadata.labels` of a pod; empty when absent.
pub fn pod_labels(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// `metadata.labels` of a node; empty when absent.
pub fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    node.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// `spec.topologySpreadConstraints` of a pod; empty when absent.
pub fn pod_constraints(pod: &Pod) -> &[TopologySpreadConstraint] {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.topology_spread_constraints.as_deref())
        .unwrap_or_default()
}
