//! PreScore, Score and NormalizeScore for `ScheduleAnyway` constraints and the default
//! constraints (upstream `podtopologyspread/scoring.go`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;

use super::PodTopologySpread;
use super::common::{
    LABEL_HOSTNAME, SCHEDULE_ANYWAY, SpreadConstraint, count_matching_pods,
    node_has_all_topology_keys, node_labels, pod_constraints,
};
use super::filtering::SoftCounts;
use crate::cluster::{NodeInfo, PodInfo};
use crate::framework::{
    CycleState, MAX_NODE_SCORE, PreScorePlugin, ScoreExtensions, ScorePlugin, Status,
};
use crate::helpers::node_affinity::RequiredNodeAffinity;

/// What PreScore hands to Score and NormalizeScore, per soft constraint (same index).
#[derive(Debug, Clone)]
pub(super) struct PreScoreState {
    pub(super) constraints: Vec<SpreadConstraint>,
    /// Feasible nodes missing a topology key: scored 0.
    pub(super) ignored_nodes: HashSet<String>,
    /// Matching pods per domain of the feasible nodes; hostname constraints are counted
    /// per node in Score instead.
    pub(super) topology_value_to_pod_counts: Vec<HashMap<String, i64>>,
    /// `log(domains + 2)`: the counts of a topology with few domains weigh less, so
    /// that they are not watered down by a topology with many.
    pub(super) topology_normalizing_weight: Vec<f64>,
}

impl PodTopologySpread {
    /// Upstream `initPreScoreState`: the soft constraints, the ignored feasible nodes, the
    /// domains of the feasible nodes and the weight of each constraint.
    fn init_pre_score_state(
        &self,
        pod: &PodInfo,
        feasible: &[Arc<NodeInfo>],
        require_all_topologies: bool,
    ) -> Result<PreScoreState, String> {
        let constraints = self.constraints(&pod.pod, SCHEDULE_ANYWAY)?;
        let mut ignored_nodes = HashSet::new();
        let mut counts = vec![HashMap::new(); constraints.len()];
        for info in feasible {
            let labels = info.node().map(node_labels);
            if require_all_topologies
                && !labels.is_some_and(|l| node_has_all_topology_keys(l, &constraints))
            {
                ignored_nodes.insert(info.name().to_string());
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == LABEL_HOSTNAME {
                    continue;
                }
                let value = labels
                    .and_then(|l| l.get(&c.topology_key))
                    .cloned()
                    .unwrap_or_default();
                counts[i].entry(value).or_insert(0);
            }
        }
        let topology_normalizing_weight = constraints
            .iter()
            .zip(&counts)
            .map(|(c, domains)| {
                let size = if c.topology_key == LABEL_HOSTNAME {
                    feasible.len() - ignored_nodes.len()
                } else {
                    domains.len()
                };
                topology_normalizing_weight(size)
            })
            .collect();
        Ok(PreScoreState {
            constraints,
            ignored_nodes,
            topology_value_to_pod_counts: counts,
            topology_normalizing_weight,
        })
    }
}

impl PodTopologySpread {
    /// Only the system defaults let nodes without a zone label keep hostname spreading.
    pub(super) fn requires_all_topologies(&self, pod: &k8s_openapi::api::core::v1::Pod) -> bool {
        !pod_constraints(pod).is_empty() || !self.system_defaulted
    }

    /// Adds the matching pods of `nodes` to the domains PreScore counts, for a cycle
    /// whose PreFilter did not count them over every node.
    fn count_feasible(
        &self,
        pre_score: &mut PreScoreState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        require_all_topologies: bool,
    ) {
        let required = RequiredNodeAffinity::new(&pod.pod);
        let namespace = pod.namespace();
        let mut counts: Vec<(usize, String, i64)> = Vec::new();
        for info in nodes {
            let Some(node) = info.node().filter(|n| {
                !require_all_topologies
                    || node_has_all_topology_keys(node_labels(n), &pre_score.constraints)
            }) else {
                continue;
            };
            let labels = node_labels(node);
            for (i, c) in pre_score.constraints.iter().enumerate() {
                if !c.includes_node(&pod.pod, node, &required) {
                    continue;
                }
                let value = labels.get(&c.topology_key).cloned().unwrap_or_default();
                if pre_score.topology_value_to_pod_counts[i].contains_key(&value) {
                    let n = count_matching_pods(&info.pods, &c.selector, namespace);
                    counts.push((i, value, n));
                }
            }
        }
        for (i, value, count) in counts {
            *pre_score.topology_value_to_pod_counts[i]
                .entry(value)
                .or_default() += count;
        }
    }
}

/// Upstream `topologyNormalizingWeight`.
fn topology_normalizing_weight(size: usize) -> f64 {
    (size as f64 + 2.0).ln()
}

/// Upstream `scoreForCount`: `maxSkew - 1` is added so that a larger tolerated skew
/// dampens the differences between domains.
fn score_for_count(count: i64, max_skew: i64, weight: f64) -> f64 {
    count as f64 * weight + (max_skew - 1) as f64
}

#[async_trait]
impl PreScorePlugin for PodTopologySpread {
    /// Skip when the pod has no soft constraints and no default applies.
    async fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Status {
        let soft = state.read::<SoftCounts>().map(|s| s.0.clone());
        if soft.is_none() && nodes.is_empty() {
            return Status::skip();
        }
        let require_all_topologies = self.requires_all_topologies(&pod.pod);
        let mut pre_score = match self.init_pre_score_state(pod, nodes, require_all_topologies) {
            Ok(s) => s,
            Err(e) => {
                return Status::error(format!(
                    "calculating preScoreState: obtaining pod's soft topology spread constraints: {e}"
                ));
            }
        };
        if pre_score.constraints.is_empty() {
            return Status::skip();
        }
        match soft {
            // The domains of the feasible nodes, counted over every node by PreFilter.
            Some(soft) => {
                for (domains, counted) in
                    pre_score.topology_value_to_pod_counts.iter_mut().zip(&soft)
                {
                    for (domain, count) in domains.iter_mut() {
                        *count += counted.get(domain).copied().unwrap_or(0);
                    }
                }
            }
            // Without PreFilter in this cycle (the plugin disabled there), only the
            // feasible nodes are known.
            None => self.count_feasible(&mut pre_score, pod, nodes, require_all_topologies),
        }
        state.write(pre_score);
        Status::success()
    }
}

const NO_PRE_SCORE_STATE: &str =
    "reading \"PreScorePodTopologySpread\" from cycleState: not found; PreScore must run first";

impl ScorePlugin for PodTopologySpread {
    /// The raw score: the weighted matching pods of the node's domains; fewer is better.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>() else {
            return Err(Status::error(NO_PRE_SCORE_STATE));
        };
        let Some(info) = node.node() else {
            return Err(Status::error("node not found"));
        };
        if s.ignored_nodes.contains(node.name()) {
            return Ok(0);
        }
        let labels = node_labels(info);
        let score: f64 = s
            .constraints
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let value = labels.get(&c.topology_key)?;
                let count = if c.topology_key == LABEL_HOSTNAME {
                    count_matching_pods(&node.pods, &c.selector, pod.namespace())
                } else {
                    s.topology_value_to_pod_counts[i]
                        .get(value)
                        .copied()
                        .unwrap_or(0)
                };
                Some(score_for_count(
                    count,
                    c.max_skew,
                    s.topology_normalizing_weight[i],
                ))
            })
            .sum();
        Ok(score.round() as i64)
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for PodTopologySpread {
    /// Upstream's reverse min-max: `100 * (max + min - score) / max`, so the fewest
    /// matching pods get 100; ignored nodes get 0; all-zero scores all get 100.
    fn normalize_score(
        &self,
        state: &CycleState,
        _: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        scores: &mut [i64],
    ) -> Status {
        let Some(s) = state.read::<PreScoreState>() else {
            return Status::error(NO_PRE_SCORE_STATE);
        };
        let ignored = |i: usize| {
            nodes
                .get(i)
                .is_some_and(|n| s.ignored_nodes.contains(n.name()))
        };
        let counted = || {
            scores
                .iter()
                .enumerate()
                .filter(|&(i, _)| !ignored(i))
                .map(|(_, &score)| score)
        };
        let min = counted().min().unwrap_or(i64::MAX);
        let max = counted().max().unwrap_or(0).max(0);
        for (i, score) in scores.iter_mut().enumerate() {
            *score = if ignored(i) {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *score) / max
            };
        }
        Status::success()
    }
}
