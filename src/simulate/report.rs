//! The result of a simulation: the public JSON interface of `berth simulate -o json`.
//!
//! Field names and meanings are stable (documented in `docs/simulate.md`); new fields
//! may be added, none removed or renamed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::Serialize;

/// The whole simulation result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub pods: Vec<PodReport>,
    /// Plugins running in their fallback when the simulation ended (a metrics plugin whose
    /// Prometheus did not answer), by profile; omitted when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<DegradedPlugin>,
    /// Pods evicted by preemptions, in eviction order; omitted when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evicted: Vec<EvictedPod>,
    /// With `--profile` (what-if): the pods whose outcome differs from the simulation
    /// without it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<MovedPod>,
    /// The pod groups of the input: the Workload API's (`scheduling.k8s.io/v1beta1`
    /// PodGroups) in input order, then berth's and scheduler-plugins' (one per name,
    /// berth's first) by namespace and name; omitted when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pod_groups: Vec<PodGroupResult>,
}

/// How a Workload API pod group fared: its policy, its members bound, and the
/// `PodGroupInitiallyScheduled` condition its PodGroup carries when the simulation ends
/// (the scheduler writes it after each pod-group cycle).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupResult {
    pub namespace: String,
    pub name: String,
    pub policy: GroupPolicy,
    /// The gang's `minCount`; absent for a basic group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_count: Option<i32>,
    /// The pods naming the group in `spec.schedulingGroup`, pending or running (finished
    /// pods are not members).
    pub members: usize,
    /// Members bound to a node when the simulation ended (running ones included).
    pub bound: usize,
    /// The PodGroup's `PodGroupInitiallyScheduled` condition as the API would show it;
    /// absent when no pod-group cycle ran and the input set none, and for berth's and
    /// scheduler-plugins' PodGroups, which have no such condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<Condition>,
    /// The API of a berth or scheduler-plugins PodGroup (`berth.dev/v1alpha1`,
    /// `scheduling.x-k8s.io/v1alpha1`); absent for a Workload API PodGroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// For a berth or scheduler-plugins PodGroup: why its last pod-group cycle did not
    /// place it (empty when it did, or when none ran).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A PodGroup's `spec.schedulingPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GroupPolicy {
    /// Placed all-or-nothing, at least `minCount` members at once.
    Gang,
    /// Members placed as they fit, each on its own.
    Basic,
}

impl PodGroupResult {
    /// `gang (min 3)`, `basic`, or for a berth or scheduler-plugins PodGroup `gang (minMember 3)`.
    pub fn policy_text(&self) -> String {
        if self.api_version.is_some() {
            let min = self.min_count.unwrap_or(1);
            return format!("gang (minMember {min})");
        }
        match (self.policy, self.min_count) {
            (GroupPolicy::Gang, Some(min)) => format!("gang (min {min})"),
            (GroupPolicy::Gang, None) => "gang".to_string(),
            (GroupPolicy::Basic, _) => "basic".to_string(),
        }
    }
}

/// A pod the what-if profile places differently: `from` and `to` are a node name or,
/// for a pod without one, its result (`Unschedulable`, `Waiting`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MovedPod {
    pub pod: String,
    pub from: String,
    pub to: String,
}

impl Report {
    /// The pods whose outcome in `self` differs from `baseline`'s, in `self`'s order.
    pub fn moves_from(&self, baseline: &Report) -> Vec<MovedPod> {
        let outcome = |pod: &PodReport| match &pod.node {
            Some(node) if !node.is_empty() => node.clone(),
            _ => pod.result.to_string(),
        };
        let before: std::collections::HashMap<(&str, &str), String> = baseline
            .pods
            .iter()
            .map(|pod| ((pod.namespace.as_str(), pod.name.as_str()), outcome(pod)))
            .collect();
        self.pods
            .iter()
            .filter_map(|pod| {
                let from = before.get(&(pod.namespace.as_str(), pod.name.as_str()))?;
                let to = outcome(pod);
                (*from != to).then(|| MovedPod {
                    pod: format!("{}/{}", pod.namespace, pod.name),
                    from: from.clone(),
                    to,
                })
            })
            .collect()
    }
}

/// A pod a preemption evicted from its node (deleted, in a cluster).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvictedPod {
    /// `namespace/name`.
    pub pod: String,
    /// The node it ran on.
    pub node: String,
    /// `namespace/name` of the pod it made room for.
    pub preemptor: String,
}

/// A plugin of a profile running in its documented fallback: what `berth run` reports as
/// the profile's `Degraded` condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DegradedPlugin {
    /// The profile (its scheduler name).
    pub scheduler_name: String,
    pub plugin: String,
    /// The condition reason, e.g. `MetricsUnavailable`.
    pub reason: String,
    /// What failed, with the source's error.
    pub message: String,
}

/// The outcome for one pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PodResult {
    Scheduled,
    Unschedulable,
    Waiting,
    Error,
    /// No profile serves the pod's `spec.schedulerName`: no scheduler of the simulation
    /// looked at it (in a cluster, another scheduler would, or the pod stays pending).
    NotServed,
    /// The pod was scheduled, then evicted by the preemption of a higher-priority pod
    /// (a cluster deletes it; its controller, if any, would create a replacement).
    Preempted,
}

impl std::fmt::Display for PodResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PodResult::Scheduled => "Scheduled",
            PodResult::Unschedulable => "Unschedulable",
            PodResult::Waiting => "Waiting",
            PodResult::Error => "Error",
            PodResult::NotServed => "NotServed",
            PodResult::Preempted => "Preempted",
        })
    }
}

impl Report {
    /// What `berth simulate` prints as `warning:` lines on stderr, besides the report:
    /// pods no profile serves (by namespace/name) and degraded plugins.
    pub fn warnings(&self) -> Vec<String> {
        let not_served = self
            .pods
            .iter()
            .filter(|pod| pod.result == PodResult::NotServed)
            .map(|pod| {
                format!(
                    "pod {}/{}: {}; the pod is not scheduled",
                    pod.namespace, pod.name, pod.message
                )
            });
        let degraded = self.degraded.iter().map(|d| {
            format!(
                "profile {}: plugin {} is degraded ({}): {}",
                d.scheduler_name, d.plugin, d.reason, d.message
            )
        });
        not_served.chain(degraded).collect()
    }
}

/// One pod's placement (or why it has none).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodReport {
    pub namespace: String,
    pub name: String,
    pub scheduler_name: String,
    /// The pod group the pod belongs to, in the pod's namespace: the Workload API PodGroup
    /// it names (`spec.schedulingGroup.podGroupName`), else the berth or scheduler-plugins
    /// PodGroup its label names; see [`Report::pod_groups`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_group: Option<String>,
    pub result: PodResult,
    /// The node the pod was bound to (Scheduled) or is waiting on (Waiting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Empty when scheduled; the upstream-format failure message otherwise.
    pub message: String,
    /// Scheduling attempts made.
    pub attempts: u32,
    /// The node of the pod's last nomination (its `status.nominatedNodeName`, decided by
    /// its preemption), kept after it binds; absent when never nominated, or when the
    /// nomination was cleared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nominated_node: Option<String>,
    /// `namespace/name` of every pod the pod's preemptions evicted, in eviction order;
    /// omitted when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub victims: Vec<String>,
    /// The devices allocated to the pod's ResourceClaims (DynamicResources), by claim and
    /// request; omitted when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<PodDevice>,
    /// Per-node verdicts of the last attempt; present with `--explain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<NodeReport>>,
}

/// A device allocated to one of a pod's claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodDevice {
    /// The claim's name (in the pod's namespace).
    pub claim: String,
    /// The request it serves (`request` or `request/subrequest`).
    pub request: String,
    /// `driver/pool/device`.
    pub device: String,
}

/// One node's filter verdict and scores for a pod (with `--explain`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    pub name: String,
    pub feasible: bool,
    /// Why filtering rejected the node (empty when feasible or not evaluated).
    pub filter_reasons: Vec<String>,
    /// Normalized per-plugin scores (feasible nodes only).
    pub scores: Vec<PluginScore>,
    /// Sum of the weighted scores.
    pub total_score: i64,
}

/// One Score plugin's contribution on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginScore {
    pub plugin: String,
    /// The score after NormalizeScore, 0..=100.
    pub score: i64,
    pub weight: i64,
    /// `score * weight`.
    pub weighted: i64,
}
