//! PreScore, Score and NormalizeScore (upstream `interpodaffinity/scoring.go`).
//!
//! PreScore sums, per topology pair, over the existing pods of the cluster:
//!
//! - `+weight` / `-weight` for each preferred affinity / anti-affinity term of the incoming
//!   pod that selects the existing pod;
//! - `+hardPodAffinityWeight` for each required affinity term of the existing pod that
//!   selects the incoming pod;
//! - `+weight` / `-weight` for each preferred affinity / anti-affinity term of the existing
//!   pod that selects the incoming pod.
//!
//! Score adds up the sums of the node's topology pairs; NormalizeScore maps them min-max
//! onto 0..=100.
//!
//! Upstream PreScore walks the whole snapshot, which berth's PreScore does not receive:
//! PreFilter (which sees the snapshot) leaves a [`ScoringInput`] in the cycle state with
//! the nodes to walk. Without it (a profile that disables this plugin's PreFilter),
//! PreScore falls back to the nodes it is given, the feasible ones, and cannot resolve
//! namespace selectors.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{CycleState, MAX_NODE_SCORE, Status};

use super::InterPodAffinityArgs;
use super::filtering::node_labels;
use super::terms::{PodAffinityTerms, WeightedAffinityTerm};

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// What PreFilter leaves for PreScore: the incoming pod's parsed terms and the cluster
/// nodes whose pods PreScore must visit.
#[derive(Debug, Clone)]
pub(super) struct ScoringInput {
    pub terms: Arc<PodAffinityTerms>,
    pub namespace_labels: Arc<BTreeMap<String, String>>,
    /// Every node when the incoming pod has preferred terms, otherwise only the nodes
    /// with pods with (anti-)affinity (upstream's choice of `List` vs
    /// `HavePodsWithAffinityList`).
    pub nodes: Arc<Vec<Arc<NodeInfo>>>,
}

impl ScoringInput {
    pub fn new(
        terms: Arc<PodAffinityTerms>,
        namespace_labels: Arc<BTreeMap<String, String>>,
        snapshot: &Snapshot,
    ) -> Self {
        let nodes = if terms.has_preferred() {
            snapshot.shared_nodes()
        } else {
            Arc::new(snapshot.nodes_with_pods_with_affinity().cloned().collect())
        };
        ScoringInput {
            terms,
            namespace_labels,
            nodes,
        }
    }
}

/// Summed weights by topology key, then value.
type ScoreMap = HashMap<String, HashMap<String, i64>>;

/// What PreScore hands to Score and NormalizeScore.
#[derive(Debug, Clone, Default)]
pub(super) struct PreScoreState {
    topology_score: Arc<ScoreMap>,
}

fn add(scores: &mut ScoreMap, node: &Node, key: &str, weight: i64) {
    if let Some(value) = node_labels(node).get(key) {
        *scores
            .entry(key.to_owned())
            .or_default()
            .entry(value.clone())
            .or_default() += weight;
    }
}

/// Upstream `processTerms`: `sign * weight` for each term selecting `pod`.
fn process_terms(
    scores: &mut ScoreMap,
    terms: &[WeightedAffinityTerm],
    pod: &Pod,
    namespace_labels: &BTreeMap<String, String>,
    node: &Node,
    sign: i64,
) {
    for weighted in terms {
        if weighted.term.matches(pod, namespace_labels) {
            add(
                scores,
                node,
                &weighted.term.topology_key,
                sign * weighted.weight,
            );
        }
    }
}

/// Upstream `processExistingPod`.
fn process_existing_pod(
    args: &InterPodAffinityArgs,
    input: &ScoringInput,
    existing: &PodInfo,
    node: &Node,
    incoming: &Pod,
    scores: &mut ScoreMap,
) {
    if node_labels(node).is_empty() {
        return;
    }
    // The incoming pod's namespace selectors are resolved, so no namespace labels needed.
    let terms = &input.terms;
    process_terms(
        scores,
        &terms.preferred_affinity,
        &existing.pod,
        &NO_LABELS,
        node,
        1,
    );
    process_terms(
        scores,
        &terms.preferred_anti_affinity,
        &existing.pod,
        &NO_LABELS,
        node,
        -1,
    );

    let existing_terms = PodAffinityTerms::of_existing(existing);
    let ns_labels = &input.namespace_labels;
    if args.hard_pod_affinity_weight > 0 {
        let weight = i64::from(args.hard_pod_affinity_weight);
        for term in &existing_terms.required_affinity {
            if term.matches(incoming, ns_labels) {
                add(scores, node, &term.topology_key, weight);
            }
        }
    }
    process_terms(
        scores,
        &existing_terms.preferred_affinity,
        incoming,
        ns_labels,
        node,
        1,
    );
    process_terms(
        scores,
        &existing_terms.preferred_anti_affinity,
        incoming,
        ns_labels,
        node,
        -1,
    );
}

/// PreScore. Skip when the incoming pod has no preferred terms and existing pods'
/// preferences are ignored, or when no existing pod contributes to any topology pair.
pub(super) fn pre_score(
    args: &InterPodAffinityArgs,
    state: &mut CycleState,
    pod: &PodInfo,
    feasible: &[Arc<NodeInfo>],
) -> Status {
    let input = match state.read::<ScoringInput>() {
        Some(input) => input.clone(),
        None => match fallback_input(&pod.pod, feasible) {
            Ok(input) => input,
            Err(status) => return status,
        },
    };
    let has_preferred = input.terms.has_preferred();
    if args.ignore_preferred_terms_of_existing_pods && !has_preferred {
        return Status::skip();
    }
    let mut scores = ScoreMap::new();
    for node_info in input.nodes.iter() {
        let Some(node) = node_info.node() else {
            continue;
        };
        // Without preferred terms of its own, the incoming pod is only scored by the
        // existing pods' terms.
        let pods = if has_preferred {
            &node_info.pods
        } else {
            &node_info.pods_with_affinity
        };
        for existing in pods {
            process_existing_pod(args, &input, existing, node, &pod.pod, &mut scores);
        }
    }
    if scores.is_empty() {
        return Status::skip();
    }
    state.write(PreScoreState {
        topology_score: Arc::new(scores),
    });
    Status::success()
}

/// The input PreFilter would have left, from the nodes PreScore is given.
fn fallback_input(pod: &Pod, feasible: &[Arc<NodeInfo>]) -> Result<ScoringInput, Status> {
    let (terms, error) = PodAffinityTerms::parse(pod);
    if let Some(error) = error {
        return Err(Status::error(format!("failed to parse pod: {error}")));
    }
    let nodes = feasible
        .iter()
        .filter(|n| terms.has_preferred() || !n.pods_with_affinity.is_empty())
        .cloned()
        .collect();
    Ok(ScoringInput {
        terms: Arc::new(terms),
        namespace_labels: Arc::new(BTreeMap::new()),
        nodes: Arc::new(nodes),
    })
}

/// Score: the sum of the node's topology pairs; positive for affinity, negative for
/// anti-affinity.
pub(super) fn score(state: &CycleState, node_info: &NodeInfo) -> Result<i64, Status> {
    let Some(node) = node_info.node() else {
        return Err(Status::error("node not found"));
    };
    let Some(pre_score) = state.read::<PreScoreState>() else {
        return Err(Status::error(
            "failed to read \"PreScoreInterPodAffinity\" from cycleState: not found",
        ));
    };
    let labels = node_labels(node);
    Ok(pre_score
        .topology_score
        .iter()
        .filter_map(|(key, values)| labels.get(key).and_then(|v| values.get(v)))
        .sum())
}

/// NormalizeScore: `MAX_NODE_SCORE * (s - min) / (max - min)` in floating point,
/// truncated, and 0 for every node when all scores are equal (upstream's min-max).
pub(super) fn normalize_score(state: &CycleState, scores: &mut [i64]) -> Status {
    let Some(pre_score) = state.read::<PreScoreState>() else {
        return Status::error(
            "failed to read \"PreScoreInterPodAffinity\" from cycleState: not found",
        );
    };
    if pre_score.topology_score.is_empty() {
        return Status::success();
    }
    let min = scores.iter().copied().min().unwrap_or(0);
    let max = scores.iter().copied().max().unwrap_or(0);
    let spread = max - min;
    for score in scores.iter_mut() {
        *score = if spread > 0 {
            (MAX_NODE_SCORE as f64 * ((*score - min) as f64 / spread as f64)) as i64
        } else {
            0
        };
    }
    Status::success()
}
