//! What preemption evicts, as kube-scheduler 1.37 weighs it with GenericWorkload on
//! (upstream `Victim`, `getCrossNodesVictims`, `MoreImportantVictim`,
//! `FilterVictimsWithPDBViolation`). A lone pod's preemption (DefaultPreemption's
//! PostFilter) and a pod group's (its PodGroupPostFilter) share it.
//!
//! - A pod counts at its PodGroup's priority when it names a Workload API PodGroup that
//!   exists, else at its own ([`victim_priority`]).
//! - All scheduled pods of a PodGroup whose `disruptionMode` is `All` are one unit: evicting
//!   one evicts all, wherever they run. Any other pod is a unit of its own.
//! - Units are kept most important first ([`importance`]): the higher priority; then a
//!   pod group's unit (or a pod that names a group) before a lone pod; then the larger
//!   unit; then the one that started first (a pod not started yet counts as starting now).
//! - A unit violates the PodDisruptionBudgets when evicting any of its pods would
//!   ([`split_by_budgets`]).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::cluster::{
    BudgetTracker, GroupKey, NodeInfo, PodGroupStates, PodInfo, Snapshot, StartTime, pod_key,
    start_time,
};

/// The condition the scheduler sets on a pod it preempts, and its reason.
const DISRUPTION_TARGET: &str = "DisruptionTarget";
const PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";

/// One unit of eviction.
#[derive(Debug, Clone)]
pub struct VictimUnit {
    pub pods: Vec<Arc<PodInfo>>,
    pub priority: i32,
    /// Ranks as a pod group's: the unit is a group's, or a pod that names a PodGroup
    /// (upstream's key type, whether or not the PodGroup exists).
    pub group: bool,
    earliest: StartTime,
}

impl VictimUnit {
    pub fn new(pods: Vec<Arc<PodInfo>>, priority: i32, group: bool) -> VictimUnit {
        let earliest = pods
            .iter()
            .map(|p| start_time(&p.pod))
            .min()
            .unwrap_or(StartTime::Unknown);
        VictimUnit {
            pods,
            priority,
            group,
            earliest,
        }
    }
}

/// Upstream `MoreImportantVictim` as an order: `Less` when `a` is the more important.
pub fn importance(a: &VictimUnit, b: &VictimUnit) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| b.group.cmp(&a.group))
        .then_with(|| b.pods.len().cmp(&a.pods.len()))
        .then_with(|| a.earliest.cmp(&b.earliest))
}

/// The priority preemption gives `pod` (upstream `GetPodPriority`): its PodGroup's when it
/// names one that exists, else its own.
pub fn victim_priority(states: &PodGroupStates, pod: &Pod) -> i32 {
    GroupKey::of_pod(pod)
        .and_then(|key| states.pod_group(&key))
        .map(|g| g.spec.priority.unwrap_or(0))
        .unwrap_or_else(|| own_priority(pod))
}

fn own_priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// The units the pods on `nodes` make, in order. A PodGroup evicted whole brings all its
/// scheduled pods, found in `snapshot` wherever they run (a member missing from it is
/// left out; a group with none found is the pod alone).
pub fn units_on<'a>(
    nodes: impl IntoIterator<Item = &'a NodeInfo>,
    states: &PodGroupStates,
    snapshot: &Snapshot,
) -> Vec<VictimUnit> {
    let mut seen: HashSet<GroupKey> = HashSet::new();
    let mut units = Vec::new();
    for node in nodes {
        for info in &node.pods {
            let key = GroupKey::of_pod(&info.pod);
            let pod_group = key.as_ref().and_then(|k| states.pod_group(k));
            let priority = match &pod_group {
                Some(group) => group.spec.priority.unwrap_or(0),
                None => own_priority(&info.pod),
            };
            let all = pod_group.as_ref().is_some_and(|g| {
                g.spec
                    .disruption_mode
                    .as_ref()
                    .is_some_and(|m| m.all.is_some())
            });
            let grouped = key.is_some();
            let Some(key) = key.filter(|_| all) else {
                units.push(VictimUnit::new(vec![info.clone()], priority, grouped));
                continue;
            };
            if !seen.insert(key.clone()) {
                continue;
            }
            let members: Vec<Arc<PodInfo>> = states
                .with_state(&key, |s| {
                    s.scheduled_pods()
                        .filter_map(|p| find(snapshot, p))
                        .collect()
                })
                .unwrap_or_default();
            let pods = if members.is_empty() {
                vec![info.clone()]
            } else {
                members
            };
            units.push(VictimUnit::new(pods, priority, true));
        }
    }
    units
}

/// The snapshot's info of scheduled pod `pod`, on the node it names.
fn find(snapshot: &Snapshot, pod: &Pod) -> Option<Arc<PodInfo>> {
    let node = pod.spec.as_ref()?.node_name.as_deref()?;
    let key = pod_key(pod);
    snapshot
        .get(node)?
        .pods
        .iter()
        .find(|p| p.key() == key)
        .cloned()
}

/// Splits `units` (in importance order) into those whose eviction a budget forbids, each
/// with how many of its pods violate one, and the others; both keep the order. Every pod
/// of a unit counts against the budgets.
pub fn split_by_budgets(
    units: Vec<VictimUnit>,
    pdbs: &[PodDisruptionBudget],
) -> (Vec<(VictimUnit, usize)>, Vec<VictimUnit>) {
    let mut tracker = BudgetTracker::new(pdbs);
    let mut violating = Vec::new();
    let mut others = Vec::new();
    for unit in units {
        let count = unit.pods.iter().filter(|p| tracker.evict(&p.pod)).count();
        if count > 0 {
            violating.push((unit, count));
        } else {
            others.push(unit);
        }
    }
    (violating, others)
}

/// Whether `pod` is terminating because the scheduler preempted it (upstream
/// `PodTerminatingByPreemption`): deletion requested, and its `DisruptionTarget`
/// condition `True` with reason `PreemptionByScheduler`. A pod a user deleted does not
/// count.
pub fn terminating_by_preemption(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == DISRUPTION_TARGET))
            .is_some_and(|c| {
                c.status == "True" && c.reason.as_deref() == Some(PREEMPTION_BY_SCHEDULER)
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, start: Option<&str>) -> Arc<PodInfo> {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "n", "containers": []},
        }))
        .expect("a pod");
        if let Some(start) = start {
            pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
                start_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    start.parse().expect("a time"),
                )),
                ..Default::default()
            });
        }
        Arc::new(PodInfo::new(pod).expect("a pod info"))
    }

    fn unit(names: &[&str], priority: i32, group: bool, start: Option<&str>) -> VictimUnit {
        VictimUnit::new(
            names.iter().map(|n| pod(n, start)).collect(),
            priority,
            group,
        )
    }

    /// Upstream's TestMoreImportantVictim rules (its rows without composite groups):
    /// priority, then a group before a pod, then the larger group, then the earlier start.
    #[test]
    fn victims_are_ordered_as_upstream_orders_them() {
        let early = Some("2026-01-01T00:00:00Z");
        let late = Some("2026-01-02T00:00:00Z");
        // (case, a, b, a more important than b)
        let cases = [
            (
                "higher priority wins",
                unit(&["a"], 2, false, late),
                unit(&["b", "c"], 1, true, early),
                true,
            ),
            (
                "a group before a pod at equal priority",
                unit(&["a"], 1, true, late),
                unit(&["b"], 1, false, early),
                true,
            ),
            (
                "the larger group",
                unit(&["a", "b"], 1, true, late),
                unit(&["c"], 1, true, early),
                true,
            ),
            (
                "the earlier start at equal size",
                unit(&["a"], 1, false, early),
                unit(&["b"], 1, false, late),
                true,
            ),
            (
                "a pod without start time counts as started now",
                unit(&["a"], 1, false, None),
                unit(&["b"], 1, false, late),
                false,
            ),
            (
                "equal units: neither",
                unit(&["a"], 1, false, early),
                unit(&["b"], 1, false, early),
                false,
            ),
        ];
        for (case, a, b, want) in cases {
            assert_eq!(importance(&a, &b) == Ordering::Less, want, "{case}");
        }
    }

    #[test]
    fn terminating_by_preemption_needs_deletion_and_the_scheduler_condition() {
        let base = serde_json::json!({"metadata": {"name": "p"}});
        let with = |deleting: bool, reason: &str, status: &str| -> Pod {
            let mut v = base.clone();
            if deleting {
                v["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
            }
            v["status"] = serde_json::json!({"conditions": [
                {"type": "DisruptionTarget", "status": status, "reason": reason}
            ]});
            serde_json::from_value(v).expect("a pod")
        };
        assert!(terminating_by_preemption(&with(
            true,
            "PreemptionByScheduler",
            "True"
        )));
        assert!(!terminating_by_preemption(&with(
            false,
            "PreemptionByScheduler",
            "True"
        )));
        assert!(!terminating_by_preemption(&with(
            true,
            "EvictionByEvictionAPI",
            "True"
        )));
        assert!(!terminating_by_preemption(&with(
            true,
            "PreemptionByScheduler",
            "False"
        )));
    }
}
