//! PreFilter, Filter and the AddPod/RemovePod extensions (upstream
//! `interpodaffinity/filtering.go`).
//!
//! PreFilter counts, per topology pair (node label key and value):
//!
//! - existing pods whose required anti-affinity terms select the incoming pod;
//! - existing pods matching *all* of the incoming pod's required affinity terms (counted
//!   once per term topology key);
//! - existing pods selected by each of the incoming pod's required anti-affinity terms.
//!
//! Filter then only looks the node's labels up in those counts.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::kept::Kept;
use crate::framework::{CycleState, Status};

use super::terms::{AffinityTerm, PodAffinityTerms, pod_matches_all_terms, pod_namespace};

/// Reason when the incoming pod's required affinity is not satisfied.
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
/// Reason when the incoming pod's required anti-affinity is violated.
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't match pod anti-affinity rules";
/// Reason when an existing pod's required anti-affinity selects the incoming pod.
pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

pub(super) fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    node.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// Matched-term counts by topology key, then value (upstream
/// `topologyToMatchedTermCount`). Zero entries are dropped, so `is_empty` means "no
/// pair counted".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct TopologyCounts(HashMap<String, HashMap<String, i64>>);

impl TopologyCounts {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, key: &str, value: &str) -> i64 {
        self.0
            .get(key)
            .and_then(|values| values.get(value))
            .copied()
            .unwrap_or(0)
    }

    /// Adds `delta` to the pair (`key`, the node's value for `key`), if the node has it.
    fn update(&mut self, node: &Node, key: &str, delta: i64) {
        if let Some(value) = node_labels(node).get(key) {
            self.add(key, value, delta);
        }
    }

    /// Adds `delta` to the pair (`key`, `value`), dropping it when it reaches zero.
    fn add(&mut self, key: &str, value: &str, delta: i64) {
        let values = self.0.entry(key.to_owned()).or_default();
        let count = values.entry(value.to_owned()).or_default();
        *count += delta;
        if *count == 0 {
            values.remove(value);
            if values.is_empty() {
                self.0.remove(key);
            }
        }
    }

    /// Adds (`sign` 1) or subtracts (-1) every pair of `other`.
    fn add_all(&mut self, other: &TopologyCounts, sign: i64) {
        for (key, values) in &other.0 {
            for (value, count) in values {
                self.add(key, value, sign * count);
            }
        }
    }

    /// Upstream `updateWithAffinityTerms`: when `pod` matches all `terms`, counts it for
    /// each term's topology key.
    fn update_with_affinity_terms(
        &mut self,
        terms: &[AffinityTerm],
        pod: &Pod,
        node: &Node,
        delta: i64,
    ) {
        if pod_matches_all_terms(terms, pod) {
            for term in terms {
                self.update(node, &term.topology_key, delta);
            }
        }
    }

    /// Upstream `updateWithAntiAffinityTerms`: counts `pod` for each term selecting it.
    fn update_with_anti_affinity_terms(
        &mut self,
        terms: &[AffinityTerm],
        pod: &Pod,
        namespace_labels: &BTreeMap<String, String>,
        node: &Node,
        delta: i64,
    ) {
        for term in terms.iter().filter(|t| t.matches(pod, namespace_labels)) {
            self.update(node, &term.topology_key, delta);
        }
    }

    #[cfg(test)]
    pub fn pairs(&self) -> BTreeMap<(String, String), i64> {
        self.0
            .iter()
            .flat_map(|(k, values)| {
                values
                    .iter()
                    .map(move |(v, c)| ((k.clone(), v.clone()), *c))
            })
            .collect()
    }
}

/// What PreFilter hands to Filter and AddPod/RemovePod.
#[derive(Debug, Clone)]
pub(super) struct PreFilterState {
    /// The incoming pod's terms, namespace selectors resolved.
    pub terms: Arc<PodAffinityTerms>,
    /// The labels of the incoming pod's namespace (empty when it is unknown).
    pub namespace_labels: Arc<BTreeMap<String, String>>,
    /// Existing pods whose required anti-affinity selects the incoming pod.
    pub existing_anti_affinity_counts: TopologyCounts,
    /// Existing pods matching all the incoming pod's required affinity terms.
    pub affinity_counts: TopologyCounts,
    /// Existing pods selected by the incoming pod's required anti-affinity terms.
    pub anti_affinity_counts: TopologyCounts,
}

impl PreFilterState {
    /// The state for `terms` before anything is counted.
    fn uncounted(
        terms: Arc<PodAffinityTerms>,
        namespace_labels: Arc<BTreeMap<String, String>>,
    ) -> Self {
        PreFilterState {
            terms,
            namespace_labels,
            existing_anti_affinity_counts: TopologyCounts::default(),
            affinity_counts: TopologyCounts::default(),
            anti_affinity_counts: TopologyCounts::default(),
        }
    }

    /// Counts over `snapshot` for the incoming `pod` with parsed `terms`, walking every
    /// node: the reference the counts PreFilter keeps ([`KeptCounts`]) are tested against.
    #[cfg(test)]
    pub fn compute(
        pod: &Pod,
        terms: Arc<PodAffinityTerms>,
        namespace_labels: Arc<BTreeMap<String, String>>,
        snapshot: &Snapshot,
    ) -> Self {
        let mut state = PreFilterState::uncounted(terms, namespace_labels);
        for node_info in snapshot.nodes_with_pods_with_required_anti_affinity() {
            let Some(node) = node_info.node() else {
                continue;
            };
            for existing in &node_info.pods_with_required_anti_affinity {
                let existing_terms = PodAffinityTerms::of_existing(existing);
                state
                    .existing_anti_affinity_counts
                    .update_with_anti_affinity_terms(
                        &existing_terms.required_anti_affinity,
                        pod,
                        &state.namespace_labels,
                        node,
                        1,
                    );
            }
        }
        if state.terms.required_affinity.is_empty() && state.terms.required_anti_affinity.is_empty()
        {
            return state;
        }
        for node_info in snapshot.nodes() {
            let Some(node) = node_info.node() else {
                continue;
            };
            for existing in &node_info.pods {
                state.count_incoming_terms(&existing.pod, node, 1);
            }
        }
        state
    }

    /// What node `info` adds to the three counts for the incoming `pod`: the same walk as
    /// [`PreFilterState::compute`], over one node.
    fn node_counts(&self, pod: &Pod, info: &NodeInfo) -> NodeCounts {
        let mut counts = NodeCounts::default();
        let Some(node) = info.node() else {
            return counts;
        };
        for existing in &info.pods_with_required_anti_affinity {
            let existing_terms = PodAffinityTerms::of_existing(existing);
            counts
                .existing_anti_affinity
                .update_with_anti_affinity_terms(
                    &existing_terms.required_anti_affinity,
                    pod,
                    &self.namespace_labels,
                    node,
                    1,
                );
        }
        if self.terms.required_affinity.is_empty() && self.terms.required_anti_affinity.is_empty() {
            return counts;
        }
        for existing in &info.pods {
            counts.affinity.update_with_affinity_terms(
                &self.terms.required_affinity,
                &existing.pod,
                node,
                1,
            );
            counts.anti_affinity.update_with_anti_affinity_terms(
                &self.terms.required_anti_affinity,
                &existing.pod,
                &NO_LABELS,
                node,
                1,
            );
        }
        counts
    }

    /// Whether Filter has anything to check (upstream's PreFilter Skip condition).
    pub fn is_trivial(&self) -> bool {
        self.existing_anti_affinity_counts.is_empty()
            && self.terms.required_affinity.is_empty()
            && self.terms.required_anti_affinity.is_empty()
    }

    fn count_incoming_terms(&mut self, existing: &Pod, node: &Node, delta: i64) {
        self.affinity_counts.update_with_affinity_terms(
            &self.terms.required_affinity,
            existing,
            node,
            delta,
        );
        // The incoming pod's namespace selectors are resolved into namespaces, so the
        // existing pod's namespace labels are not needed.
        self.anti_affinity_counts.update_with_anti_affinity_terms(
            &self.terms.required_anti_affinity,
            existing,
            &NO_LABELS,
            node,
            delta,
        );
    }

    /// Upstream `updateWithPod`: `pod` is added (`delta` 1) to or removed (-1) from `node`.
    pub fn update_with_pod(&mut self, incoming: &Pod, pod: &Pod, node: &Node, delta: i64) {
        let (terms, _) = PodAffinityTerms::parse(pod);
        self.existing_anti_affinity_counts
            .update_with_anti_affinity_terms(
                &terms.required_anti_affinity,
                incoming,
                &self.namespace_labels,
                node,
                delta,
            );
        self.count_incoming_terms(pod, node, delta);
    }

    /// Upstream `satisfyPodAffinity`.
    fn satisfies_pod_affinity(&self, incoming: &Pod, node: &Node) -> bool {
        let labels = node_labels(node);
        let mut pods_exist = true;
        for term in &self.terms.required_affinity {
            // Every topology key must exist on the node.
            let Some(value) = labels.get(&term.topology_key) else {
                return false;
            };
            if self.affinity_counts.get(&term.topology_key, value) <= 0 {
                pods_exist = false;
            }
        }
        // The first pod of a group with affinity to itself: no pod matches anywhere, the
        // pod matches its own terms, and the node has all the topology keys.
        pods_exist
            || (self.affinity_counts.is_empty()
                && pod_matches_all_terms(&self.terms.required_affinity, incoming))
    }

    /// Upstream `satisfyPodAntiAffinity`.
    fn satisfies_pod_anti_affinity(&self, node: &Node) -> bool {
        if self.anti_affinity_counts.is_empty() {
            return true;
        }
        let labels = node_labels(node);
        !self.terms.required_anti_affinity.iter().any(|term| {
            labels
                .get(&term.topology_key)
                .is_some_and(|value| self.anti_affinity_counts.get(&term.topology_key, value) > 0)
        })
    }

    /// Upstream `satisfyExistingPodsAntiAffinity`.
    fn satisfies_existing_pods_anti_affinity(&self, node: &Node) -> bool {
        self.existing_anti_affinity_counts.is_empty()
            || !node_labels(node)
                .iter()
                .any(|(key, value)| self.existing_anti_affinity_counts.get(key, value) > 0)
    }
}

/// Filter: the three checks in upstream's order and with its codes. Affinity failures
/// are UnschedulableAndUnresolvable (evicting pods cannot create a matching pod);
/// anti-affinity failures are Unschedulable (preemption may remove the offending pods).
pub(super) fn filter(state: &CycleState, pod: &PodInfo, node_info: &NodeInfo) -> Status {
    let Some(node) = node_info.node() else {
        return Status::error("node not found");
    };
    let Some(state) = state.read::<PreFilterState>() else {
        return Status::error(
            "error reading \"PreFilterInterPodAffinity\" from cycleState: not found",
        );
    };
    if !state.satisfies_pod_affinity(&pod.pod, node) {
        return Status::unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH);
    }
    if !state.satisfies_pod_anti_affinity(node) {
        return Status::unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
    }
    if !state.satisfies_existing_pods_anti_affinity(node) {
        return Status::unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
    }
    Status::success()
}

/// AddPod (`delta` 1) / RemovePod (-1) on the PreFilter state.
pub(super) fn update_state(
    state: &mut CycleState,
    pod_to_schedule: &PodInfo,
    pod: &PodInfo,
    node_info: &NodeInfo,
    delta: i64,
) -> Status {
    let Some(pre_filter) = state.read_mut::<PreFilterState>() else {
        return Status::error(
            "error reading \"PreFilterInterPodAffinity\" from cycleState: not found",
        );
    };
    if let Some(node) = node_info.node() {
        pre_filter.update_with_pod(&pod_to_schedule.pod, &pod.pod, node, delta);
    }
    Status::success()
}

/// One node's share of the three counts of a [`PreFilterState`].
#[derive(Debug, Clone, Default)]
struct NodeCounts {
    existing_anti_affinity: TopologyCounts,
    affinity: TopologyCounts,
    anti_affinity: TopologyCounts,
}

impl NodeCounts {
    fn add_all(&mut self, other: &NodeCounts, sign: i64) {
        self.existing_anti_affinity
            .add_all(&other.existing_anti_affinity, sign);
        self.affinity.add_all(&other.affinity, sign);
        self.anti_affinity.add_all(&other.anti_affinity, sign);
    }
}

/// PreFilter's counts kept from one cycle to the next ([`Kept`]), as the scoring side
/// keeps its topology scores: each node's share is kept per incoming-pod signature (its
/// namespace, labels and parsed terms, its namespace's labels), and the next pod with the
/// same signature recounts only the nodes the snapshot replaced since. The totals are the
/// sums a walk from scratch makes.
#[derive(Debug, Clone)]
pub(super) struct KeptCounts(Kept<CountTable>);

impl Default for KeptCounts {
    fn default() -> Self {
        KeptCounts(Kept::new(MAX_KEPT_COUNTS))
    }
}

/// The most signatures kept.
const MAX_KEPT_COUNTS: usize = 8;

/// Every node's share of the counts for one signature, and their sums.
struct CountTable {
    per_node: Vec<NodeCounts>,
    totals: NodeCounts,
}

impl CountTable {
    /// Replaces node `i`'s share with `counts`.
    fn replace(&mut self, i: usize, counts: NodeCounts) {
        self.totals.add_all(&self.per_node[i], -1);
        self.totals.add_all(&counts, 1);
        self.per_node[i] = counts;
    }
}

impl KeptCounts {
    /// [`PreFilterState::compute`], from the counts kept for `pod`'s signature.
    pub fn pre_filter_state(
        &self,
        pod: &Pod,
        terms: Arc<PodAffinityTerms>,
        namespace_labels: Arc<BTreeMap<String, String>>,
        snapshot: &Snapshot,
    ) -> PreFilterState {
        let mut state = PreFilterState::uncounted(terms, namespace_labels);
        // A pod without required terms is only counted by existing pods' required
        // anti-affinity: with no such pod anywhere, every count is zero, and nothing is
        // kept for its signature (upstream walks only the nodes that have such pods).
        let no_terms = state.terms.required_affinity.is_empty()
            && state.terms.required_anti_affinity.is_empty();
        if no_terms
            && snapshot
                .nodes_with_pods_with_required_anti_affinity()
                .next()
                .is_none()
        {
            return state;
        }
        let signature = format!(
            "{}|{:?}|{:?}|{:?}",
            pod_namespace(pod),
            pod.metadata.labels,
            state.terms,
            state.namespace_labels
        );
        let nodes = snapshot.nodes();
        let build = || {
            let mut table = CountTable {
                per_node: vec![NodeCounts::default(); nodes.len()],
                totals: NodeCounts::default(),
            };
            for (i, node) in nodes.iter().enumerate() {
                table.replace(i, state.node_counts(pod, node));
            }
            table
        };
        let update =
            |table: &mut CountTable, i: usize| table.replace(i, state.node_counts(pod, &nodes[i]));
        let totals = self.0.with(signature, snapshot, build, update, |table| {
            table.totals.clone()
        });
        state.existing_anti_affinity_counts = totals.existing_anti_affinity;
        state.affinity_counts = totals.affinity;
        state.anti_affinity_counts = totals.anti_affinity;
        state
    }
}

/// The labels of the incoming pod's namespace, empty when the namespace is unknown
/// (upstream `GetNamespaceLabelsSnapshot`).
pub(super) fn namespace_labels_of(pod: &Pod, snapshot: &Snapshot) -> BTreeMap<String, String> {
    snapshot
        .namespace_labels(pod_namespace(pod))
        .cloned()
        .unwrap_or_default()
}
