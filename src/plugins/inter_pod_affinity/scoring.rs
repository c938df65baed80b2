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
//! PreFilter (which sees the snapshot) sums the scores over every node and leaves them in
//! a [`ScoringInput`] in the cycle state, updating sums kept from earlier cycles rather
//! than walking every node again ([`KeptScores`]). Without it (a profile that disables this plugin's PreFilter),
//! PreScore falls back to the nodes it is given, the feasible ones, and cannot resolve
//! namespace selectors.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::kept::Kept;
use crate::framework::{CycleState, MAX_NODE_SCORE, Status};

use super::InterPodAffinityArgs;
use super::filtering::node_labels;
use super::terms::{PodAffinityTerms, WeightedAffinityTerm};

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// What PreFilter leaves for PreScore: the incoming pod's parsed terms and the topology
/// scores it summed over every node.
#[derive(Debug, Clone)]
pub(super) struct ScoringInput {
    pub terms: Arc<PodAffinityTerms>,
    pub namespace_labels: Arc<BTreeMap<String, String>>,
    /// The nodes whose pods PreScore walks when it has no `topology_score` (a cycle
    /// without this plugin's PreFilter: the feasible nodes).
    pub nodes: Arc<Vec<Arc<NodeInfo>>>,
    /// The topology scores over every node, when PreFilter summed them (see
    /// [`KeptScores`]); PreScore then has nothing left to walk.
    pub topology_score: Option<Arc<ScoreMap>>,
}

impl ScoringInput {
    /// The input for PreFilter to complete with the topology scores.
    pub fn new(
        terms: Arc<PodAffinityTerms>,
        namespace_labels: Arc<BTreeMap<String, String>>,
    ) -> Self {
        ScoringInput {
            terms,
            namespace_labels,
            nodes: Arc::default(),
            topology_score: None,
        }
    }
}

/// Summed weights by topology key, then value.
pub(super) type ScoreMap = HashMap<String, HashMap<String, i64>>;

/// Where [`process_existing_pod`] adds its weights: the summed map, or one node's list.
trait PairSink {
    fn add_pair(&mut self, key: &str, value: &str, weight: i64);
}

impl PairSink for ScoreMap {
    fn add_pair(&mut self, key: &str, value: &str, weight: i64) {
        // Looked up before inserting: most pairs exist already, and `entry` would copy
        // both strings for every call.
        if let Some(score) = self.get_mut(key).and_then(|values| values.get_mut(value)) {
            *score += weight;
            return;
        }
        *self
            .entry(key.to_owned())
            .or_default()
            .entry(value.to_owned())
            .or_default() += weight;
    }
}

/// One node's contributions: `(key, value, summed weight, additions)`.
type NodePairs = Vec<(String, String, i64, i64)>;

impl PairSink for NodePairs {
    fn add_pair(&mut self, key: &str, value: &str, weight: i64) {
        match self.iter_mut().find(|(k, v, _, _)| k == key && v == value) {
            Some((_, _, sum, additions)) => {
                *sum += weight;
                *additions += 1;
            }
            None => self.push((key.to_owned(), value.to_owned(), weight, 1)),
        }
    }
}

/// What PreScore hands to Score and NormalizeScore.
#[derive(Debug, Clone, Default)]
pub(super) struct PreScoreState {
    topology_score: Arc<ScoreMap>,
}

fn add(scores: &mut impl PairSink, node: &Node, key: &str, weight: i64) {
    if let Some(value) = node_labels(node).get(key) {
        scores.add_pair(key, value, weight);
    }
}

/// Upstream `processTerms`: `sign * weight` for each term selecting `pod`.
fn process_terms(
    scores: &mut impl PairSink,
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
    scores: &mut impl PairSink,
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
    if let Some(scores) = &input.topology_score {
        if scores.is_empty() {
            return Status::skip();
        }
        state.write(PreScoreState {
            topology_score: scores.clone(),
        });
        return Status::success();
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
        topology_score: None,
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

/// Topology scores kept from one cycle to the next ([`Kept`]): each node's contributions
/// are kept per incoming-pod signature (the pod's namespace, labels and parsed terms, its
/// namespace's labels, the plugin's arguments), and the next pod with the same signature
/// re-walks only the nodes the snapshot replaced since. A pair is kept while at least one
/// addition made it, so the map holds exactly the pairs a walk from scratch would.
#[derive(Debug, Clone)]
pub(super) struct KeptScores(Kept<ScoreTable>);

impl Default for KeptScores {
    fn default() -> Self {
        KeptScores(Kept::new(MAX_KEPT))
    }
}

/// The most signatures kept.
const MAX_KEPT: usize = 8;

/// Every node's contributions for one signature, and their sums.
struct ScoreTable {
    per_node: Vec<NodePairs>,
    totals: Arc<ScoreMap>,
    additions: HashMap<String, HashMap<String, i64>>,
}

impl ScoreTable {
    fn apply(&mut self, pairs: &NodePairs, sign: i64) {
        let totals = Arc::make_mut(&mut self.totals);
        for (key, value, weight, additions) in pairs {
            let count = self
                .additions
                .entry(key.clone())
                .or_default()
                .entry(value.clone())
                .or_default();
            *count += sign * additions;
            let gone = *count <= 0;
            let values = totals.entry(key.clone()).or_default();
            *values.entry(value.clone()).or_default() += sign * weight;
            if gone {
                values.remove(value);
                if values.is_empty() {
                    totals.remove(key);
                }
                if let Some(counts) = self.additions.get_mut(key) {
                    counts.remove(value);
                    if counts.is_empty() {
                        self.additions.remove(key);
                    }
                }
            }
        }
    }

    /// Replaces node `i`'s contributions with `pairs`.
    fn replace(&mut self, i: usize, pairs: NodePairs) {
        let old = std::mem::take(&mut self.per_node[i]);
        self.apply(&old, -1);
        self.apply(&pairs, 1);
        self.per_node[i] = pairs;
    }
}

impl KeptScores {
    /// The topology scores of `pod` over every node of `snapshot`, for PreScore.
    pub(super) fn topology_score(
        &self,
        args: &InterPodAffinityArgs,
        input: &ScoringInput,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Arc<ScoreMap> {
        let has_preferred = input.terms.has_preferred();
        // Without preferred terms of its own, the incoming pod is only scored by existing
        // pods' terms: with no pod with affinity anywhere, there is no score, and nothing
        // is kept for its signature.
        if !has_preferred && snapshot.nodes_with_pods_with_affinity().next().is_none() {
            return Arc::default();
        }
        let signature = format!(
            "{}|{:?}|{:?}|{:?}|{}|{}|{has_preferred}",
            pod.namespace(),
            pod.pod.metadata.labels,
            input.terms,
            input.namespace_labels,
            args.hard_pod_affinity_weight,
            args.ignore_preferred_terms_of_existing_pods,
        );
        let node_pairs = |info: &NodeInfo| -> NodePairs {
            let mut pairs = NodePairs::new();
            let Some(node) = info.node() else {
                return pairs;
            };
            // Without preferred terms of its own, the incoming pod is only scored by the
            // existing pods' terms.
            let pods = if has_preferred {
                &info.pods
            } else {
                &info.pods_with_affinity
            };
            for existing in pods {
                process_existing_pod(args, input, existing, node, &pod.pod, &mut pairs);
            }
            pairs
        };
        let nodes = snapshot.nodes();
        let build = || {
            let mut table = ScoreTable {
                per_node: vec![NodePairs::new(); nodes.len()],
                totals: Arc::default(),
                additions: HashMap::new(),
            };
            for (i, node) in nodes.iter().enumerate() {
                table.replace(i, node_pairs(node));
            }
            table
        };
        let update = |table: &mut ScoreTable, i: usize| table.replace(i, node_pairs(&nodes[i]));
        self.0.with(signature, snapshot, build, update, |table| {
            table.totals.clone()
        })
    }
}
