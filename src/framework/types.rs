//! Values passed between the framework, the queue and plugins.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1beta1::PodGroup;

use crate::cluster::{NodeInfo, PodInfo};

use super::Status;
use super::clock::Instant;

/// A pod as the queue holds it: the pod plus queueing bookkeeping.
#[derive(Debug, Clone)]
pub struct QueuedPodInfo {
    pub pod_info: Arc<PodInfo>,
    /// When the pod was (re)added to the queue; QueueSort plugins order by it.
    pub timestamp: Instant,
    /// Scheduling attempts so far.
    pub attempts: u32,
    /// When the pod was first added to the queue.
    pub initial_attempt_timestamp: Option<Instant>,
    /// Plugins that rejected the pod in its last attempt (Unschedulable or Unresolvable);
    /// only cluster events these plugins registered move the pod back to activeQ.
    pub unschedulable_plugins: HashSet<String>,
    /// Plugins that returned Pending in the last attempt.
    pub pending_plugins: HashSet<String>,
    /// The PreEnqueue plugin that is keeping the pod out of activeQ, if any.
    pub gated_by: Option<String>,
}

impl QueuedPodInfo {
    pub fn new(pod_info: Arc<PodInfo>, now: Instant) -> Self {
        QueuedPodInfo {
            pod_info,
            timestamp: now,
            attempts: 0,
            initial_attempt_timestamp: None,
            unschedulable_plugins: HashSet::new(),
            pending_plugins: HashSet::new(),
            gated_by: None,
        }
    }
}

/// What PreFilter can tell the framework about the nodes worth filtering.
/// `node_names: None` means all nodes; results of several plugins are intersected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    pub node_names: Option<BTreeSet<String>>,
}

impl PreFilterResult {
    pub fn all_nodes() -> Self {
        PreFilterResult { node_names: None }
    }

    pub fn merge(&self, other: &PreFilterResult) -> PreFilterResult {
        match (&self.node_names, &other.node_names) {
            (None, None) => PreFilterResult::all_nodes(),
            (Some(a), None) | (None, Some(a)) => PreFilterResult {
                node_names: Some(a.clone()),
            },
            (Some(a), Some(b)) => PreFilterResult {
                node_names: Some(a.intersection(b).cloned().collect()),
            },
        }
    }
}

/// Why each node was rejected in a cycle, plus the status for nodes not evaluated
/// individually (e.g. all nodes when PreFilter rejected the pod).
#[derive(Debug, Clone, Default)]
pub struct NodeToStatus {
    pub statuses: HashMap<String, Status>,
    /// Applies to every node that is absent from `statuses`.
    pub absent: Option<Status>,
}

impl NodeToStatus {
    pub fn get(&self, node: &str) -> Option<&Status> {
        self.statuses.get(node).or(self.absent.as_ref())
    }

    /// upstream's FitError histogram over `num_all_nodes`: `"<count> <reason>"` per
    /// reason, the absent status counted once per node without an entry, sorted.
    pub fn reason_histogram(&self, num_all_nodes: usize) -> Vec<String> {
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for status in self.statuses.values() {
            for reason in status.reasons() {
                *counts.entry(reason).or_default() += 1;
            }
        }
        let absent = num_all_nodes.saturating_sub(self.statuses.len());
        if let Some(status) = self.absent.as_ref().filter(|_| absent > 0) {
            for reason in status.reasons() {
                *counts.entry(reason).or_default() += absent;
            }
        }
        let mut lines: Vec<String> = counts
            .into_iter()
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        lines.sort();
        lines
    }
}

/// What PostFilter can return: a node the pod was nominated to after preemption, and the
/// evictions that make room for it there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostFilterResult {
    pub nominated_node_name: Option<String>,
    /// What to evict, when the plugin decided a preemption with victims to evict.
    pub preemption: Option<Preemption>,
}

/// A pod a preemption evicts.
#[derive(Debug, Clone, PartialEq)]
pub struct Victim {
    /// The pod as the scheduler last saw it.
    pub pod: Arc<Pod>,
    /// The pod was held at Permit, not bound: DefaultPreemption rejected it in memory, and
    /// only the `Preempted` event is left to write (upstream deletes no waiting pod).
    pub waiting: bool,
}

/// Evictions a PostFilter decided so that `preemptor` fits `node` (upstream's chosen
/// candidate, handed to its executor), or, for a pod group, so that its members fit the
/// nodes they are nominated to ([`Preemption::group`]).
///
/// The scheduler returns it with the attempt's report; the adapter carries it out off the
/// scheduling loop (upstream's asynchronous preemption) and reports the end through
/// `Scheduler::complete_preemption`. Until then, the preemptor is kept out of activeQ.
#[derive(Debug, Clone, PartialEq)]
pub struct Preemption {
    pub preemptor: Arc<Pod>,
    /// The node the preemptor is nominated to.
    pub node: String,
    /// In importance order (the most important first); the adapter evicts the last one
    /// only after all the others are gone.
    pub victims: Vec<Victim>,
    /// Pods of lower priority nominated to `node`: the scheduler has dropped their
    /// nominations (they must look for room elsewhere), and the adapter clears their
    /// `status.nominatedNodeName`.
    pub cleared_nominations: Vec<Arc<Pod>>,
    /// Set when a Workload API PodGroup preempts (DefaultPreemption's
    /// PodGroupPostFilter): the group is the preemptor upstream names, `preemptor` is its
    /// first member (the one the scheduler holds back until the evictions end, which
    /// holds the group), and `node` is upstream's name for the whole cluster,
    /// [`GROUP_PREEMPTION_DOMAIN`].
    pub group: Option<Arc<PodGroup>>,
}

/// The candidate name upstream gives a pod group's preemption, whose domain is the whole
/// cluster (the `node` of its `Preempted` events).
pub const GROUP_PREEMPTION_DOMAIN: &str = "cluster";

impl Preemption {
    /// The key of the preemptor, as the scheduler keys pods.
    pub fn preemptor_key(&self) -> String {
        crate::cluster::pod_key(&self.preemptor)
    }
}

/// CycleState entry: pods a plugin wants moved to activeQ when this scheduling cycle ends
/// (upstream's `PodsToActivate`), by pod key. Coscheduling names a waiting member's
/// siblings, so they are tried at once rather than after their backoff or the next
/// cluster event.
#[derive(Debug, Clone, Default)]
pub struct PodsToActivate(pub std::collections::BTreeSet<String>);

/// CycleState entry: the plugin that rejected the pod did so for a reason that ends with
/// time, not with a cluster event (Coscheduling's group backoff). The pod is requeued to
/// backoffQ, to be retried after its backoff, instead of waiting in the unschedulable
/// set for an event that may never come.
#[derive(Debug, Clone, Copy, Default)]
pub struct RetryAfterBackoff;

/// CycleState entry: this attempt is one member's try inside a pod-group cycle (upstream
/// `IsPodGroupSchedulingCycle`). PostFilter does not run for it: the group as a whole is
/// what preemption would be for.
#[derive(Debug, Clone, Copy, Default)]
pub struct PodGroupCycle;

/// One Score plugin's normalized and weighted score on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeScoreDetail {
    pub plugin: String,
    /// After NormalizeScore, 0..=100.
    pub score: i64,
    pub weight: i64,
}

/// A feasible node with its per-plugin scores and weighted total.
#[derive(Debug, Clone)]
pub struct ScoredNode {
    pub node: Arc<NodeInfo>,
    pub scores: Vec<NodeScoreDetail>,
    pub total: i64,
}

/// What PreFilter decided for one pod.
#[derive(Debug, Clone)]
pub struct PreFilterOutcome {
    /// The merged PreFilterResult of the plugins that narrowed the candidates; `None`
    /// when every node stays a candidate.
    pub result: Option<PreFilterResult>,
    /// Success, or the first rejection or error.
    pub status: Status,
    /// The plugins whose PreFilterResult narrowed the candidates (upstream's
    /// `pluginsWithNodes`), sorted.
    pub narrowing: BTreeSet<String>,
}

impl PreFilterOutcome {
    /// The narrowing plugins as upstream prints a sorted string set: `[A B]`.
    pub fn narrowing_list(&self) -> String {
        let names: Vec<&str> = self.narrowing.iter().map(String::as_str).collect();
        format!("[{}]", names.join(" "))
    }
}
