//! PreFilter, Filter and the PreFilter extensions for `DoNotSchedule` constraints
//! (upstream `podtopologyspread/filtering.go`).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::PodTopologySpread;
use super::common::{
    DO_NOT_SCHEDULE, LABEL_HOSTNAME, SCHEDULE_ANYWAY, SpreadConstraint, count_matching_pods,
    node_has_all_topology_keys, node_labels, pod_labels,
};
use super::counts::per_node;
use super::{ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH};
use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{
    CycleState, FilterPlugin, PreFilterExtensions, PreFilterPlugin, PreFilterResult, Status,
};
use crate::helpers::node_affinity::RequiredNodeAffinity;
use crate::helpers::taints::pod_tolerations;

/// Matching pods per domain of each soft constraint over every node of the cycle's
/// snapshot, counted by PreFilter (which sees the snapshot) for PreScore (which is only
/// handed the feasible nodes): upstream scores domains by the matching pods on all nodes.
/// Hostname constraints have no entry; Score counts them per node.
#[derive(Clone)]
pub(super) struct SoftCounts(pub(super) Vec<HashMap<String, i64>>);

/// A domain and its number of matching pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CriticalPath {
    pub(super) topology_value: String,
    pub(super) match_num: i64,
}

/// Upstream `criticalPaths`: two domains, `[0]` always holding the minimum matching count
/// and `[1]` one that is not smaller (not necessarily the second minimum). Two suffice
/// because preemption removes pods from one node at a time, on its own copy of the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CriticalPaths(pub(super) [CriticalPath; 2]);

impl CriticalPaths {
    fn new() -> Self {
        let unset = CriticalPath {
            topology_value: String::new(),
            match_num: i64::from(i32::MAX),
        };
        CriticalPaths([unset.clone(), unset])
    }

    /// Upstream `criticalPaths.update`.
    fn update(&mut self, value: &str, num: i64) {
        let paths = &mut self.0;
        if let Some(i) = paths.iter().position(|p| p.topology_value == value) {
            paths[i].match_num = num;
            if paths[0].match_num > paths[1].match_num {
                paths.swap(0, 1);
            }
        } else if num < paths[0].match_num {
            paths[1] = paths[0].clone();
            paths[0] = CriticalPath {
                topology_value: value.to_string(),
                match_num: num,
            };
        } else if num < paths[1].match_num {
            paths[1] = CriticalPath {
                topology_value: value.to_string(),
                match_num: num,
            };
        }
    }
}

/// What PreFilter hands to Filter, per hard constraint (same index): the matching pods
/// per domain and the least loaded domains.
#[derive(Debug, Clone)]
pub(super) struct PreFilterState {
    /// Shared between copies: constraints do not change within a cycle.
    pub(super) constraints: Arc<Vec<SpreadConstraint>>,
    pub(super) critical_paths: Vec<CriticalPaths>,
    pub(super) tp_value_to_match_num: Vec<HashMap<String, i64>>,
}

impl PreFilterState {
    /// Upstream `minMatchNum`: the global minimum, 0 while fewer than `minDomains`
    /// domains are eligible.
    fn min_match_num(&self, i: usize, min_domains: i64) -> i64 {
        let domains = self.tp_value_to_match_num[i].len();
        if i64::try_from(domains).unwrap_or(i64::MAX) < min_domains {
            0
        } else {
            self.critical_paths[i].0[0].match_num
        }
    }

    /// Upstream `updateWithPod`: `pod` (added or removed, per `delta`) on `node` changes
    /// the counts of the constraints it matches.
    fn update_with_pod(&mut self, pod: &PodInfo, preemptor: &PodInfo, node: &NodeInfo, delta: i64) {
        let Some(node) = node.node() else {
            return;
        };
        let labels = node_labels(node);
        if pod.namespace() != preemptor.namespace()
            || !node_has_all_topology_keys(labels, &self.constraints)
        {
            return;
        }
        let required = RequiredNodeAffinity::new(&preemptor.pod);
        let pod_labels = pod_labels(&pod.pod);
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(pod_labels) || !c.includes_node(&preemptor.pod, node, &required)
            {
                continue;
            }
            let value = labels.get(&c.topology_key).cloned().unwrap_or_default();
            let count = self.tp_value_to_match_num[i]
                .entry(value.clone())
                .or_default();
            *count += delta;
            let count = *count;
            self.critical_paths[i].update(&value, count);
        }
    }
}

impl PodTopologySpread {
    /// The counts PreScore needs from every node, when it will score `pod` (see
    /// [`SoftCounts`]); `None` leaves PreScore to report an error or skip.
    fn soft_counts(&self, pod: &PodInfo, snapshot: &Snapshot) -> Option<SoftCounts> {
        let constraints = self.constraints(&pod.pod, SCHEDULE_ANYWAY).ok()?;
        if constraints.is_empty() {
            return None;
        }
        let require_all_topologies = self.requires_all_topologies(&pod.pod);
        let required = RequiredNodeAffinity::new(&pod.pod);
        let namespace = pod.namespace();
        let key = format!(
            "soft|{require_all_topologies}|{namespace}|{constraints:?}|{required:?}|{:?}",
            pod_tolerations(&pod.pod)
        );
        let eval = per_node(|info| {
            let mut out = vec![None; constraints.len()];
            let Some(node) = info.node().filter(|n| {
                !require_all_topologies || node_has_all_topology_keys(node_labels(n), &constraints)
            }) else {
                return out;
            };
            let labels = node_labels(node);
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key != LABEL_HOSTNAME && c.includes_node(&pod.pod, node, &required) {
                    let value = labels.get(&c.topology_key).map_or("", String::as_str);
                    out[i] = Some((
                        value,
                        count_matching_pods(&info.pods, &c.selector, namespace),
                    ));
                }
            }
            out
        });
        Some(SoftCounts(self.counts.count(
            key,
            constraints.len(),
            snapshot,
            eval,
            self.pool.as_deref(),
        )))
    }

    /// Upstream `calPreFilterState`: matching pods per domain over every node that has all
    /// the topology keys and that each constraint's inclusion policies admit.
    fn pre_filter_state(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Result<PreFilterState, String> {
        let constraints = self.constraints(&pod.pod, DO_NOT_SCHEDULE)?;
        if constraints.is_empty() {
            return Ok(PreFilterState {
                constraints: Arc::new(constraints),
                critical_paths: Vec::new(),
                tp_value_to_match_num: Vec::new(),
            });
        }
        let required = RequiredNodeAffinity::new(&pod.pod);
        let namespace = pod.namespace();
        let key = format!(
            "hard|{namespace}|{constraints:?}|{required:?}|{:?}",
            pod_tolerations(&pod.pod)
        );
        let eval = per_node(|info| {
            let mut out = vec![None; constraints.len()];
            let Some(node) = info
                .node()
                .filter(|n| node_has_all_topology_keys(node_labels(n), &constraints))
            else {
                return out;
            };
            let labels = node_labels(node);
            for (i, c) in constraints.iter().enumerate() {
                if c.includes_node(&pod.pod, node, &required) {
                    let value = labels.get(&c.topology_key).map_or("", String::as_str);
                    out[i] = Some((
                        value,
                        count_matching_pods(&info.pods, &c.selector, namespace),
                    ));
                }
            }
            out
        });
        let tp_value_to_match_num =
            self.counts
                .count(key, constraints.len(), snapshot, eval, self.pool.as_deref());
        let critical_paths = tp_value_to_match_num
            .iter()
            .map(|domains: &HashMap<String, i64>| {
                let mut paths = CriticalPaths::new();
                for (value, &num) in domains {
                    paths.update(value, num);
                }
                paths
            })
            .collect();
        Ok(PreFilterState {
            constraints: Arc::new(constraints),
            critical_paths,
            tp_value_to_match_num,
        })
    }
}

#[async_trait]
impl PreFilterPlugin for PodTopologySpread {
    /// Skip when the pod has no hard constraints (then Filter is not called).
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        if let Some(soft) = self.soft_counts(pod, snapshot) {
            state.write(soft);
        }
        let pre_filter = match self.pre_filter_state(pod, snapshot) {
            Ok(s) => s,
            Err(e) => {
                return (
                    None,
                    Status::error(format!(
                        "obtaining pod's hard topology spread constraints: {e}"
                    )),
                );
            }
        };
        let skip = pre_filter.constraints.is_empty();
        // Written even when skipping, so that AddPod/RemovePod find an (empty) state.
        state.write(pre_filter);
        if skip {
            (None, Status::skip())
        } else {
            (None, Status::success())
        }
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

const NO_PRE_FILTER_STATE: &str =
    "reading \"PreFilterPodTopologySpread\" from cycleState: not found; PreFilter must run first";

impl PreFilterExtensions for PodTopologySpread {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod_to_add, pod_to_schedule, node, 1);
                Status::success()
            }
            None => Status::error(NO_PRE_FILTER_STATE),
        }
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod_to_remove, pod_to_schedule, node, -1);
                Status::success()
            }
            None => Status::error(NO_PRE_FILTER_STATE),
        }
    }
}

impl FilterPlugin for PodTopologySpread {
    /// For each hard constraint: `matching in the node's domain + (1 if the pod matches
    /// its own selector) - global minimum <= maxSkew`.
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(node) = node.node() else {
            return Status::error("node not found");
        };
        let Some(s) = state.read::<PreFilterState>() else {
            return Status::error(NO_PRE_FILTER_STATE);
        };
        let labels = node_labels(node);
        let pod_labels = pod_labels(&pod.pod);
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
            };
            let self_match = i64::from(c.selector.matches(pod_labels));
            let match_num = s.tp_value_to_match_num[i].get(value).copied().unwrap_or(0);
            if match_num + self_match - s.min_match_num(i, c.min_domains) > c.max_skew {
                return Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }
}
