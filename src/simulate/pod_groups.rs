//! The pod groups in the simulation: the condition each Workload API PodGroup
//! (`scheduling.k8s.io/v1beta1`) ends with, and each group's row in the report (berth's and
//! scheduler-plugins' PodGroups too, with their last pod-group cycle's message).
//!
//! After every pod-group cycle the live scheduler writes the cycle's
//! `PodGroupInitiallyScheduled` condition into the PodGroup's status
//! ([`merge_condition`]: a True condition is never turned back, the transition time
//! moves only with the status). The simulation merges each cycle's condition the same
//! way, in order, into the conditions the input's PodGroup already carries. Times are
//! those of a simulated cluster whose scheduler starts one second after its newest
//! object was created and whose clock is the driver's virtual one, so that the same
//! input always gives the same report.
//!
//! The status write is not replayed to the scheduler as a PodGroup update: upstream's
//! GangScheduling skips such an update (its queueing hint requeues only for a lower
//! `minCount`), and berth, without hints, would retry the members for nothing.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1beta1::PodGroup;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;

use crate::cluster::{
    GroupDialect, GroupKey, LegacyGroup, LegacyGroupKey, LegacyWorkloads, PodGroupStates,
    gang_min_count, short_of,
};
use crate::framework::clock::Instant;
use crate::scheduler::{INITIALLY_SCHEDULED, PodGroupReport, merge_condition};

use super::input::{CREATION_EPOCH_SECONDS, ClusterInput};
use super::report::{GroupPolicy, PodGroupResult, PodResult, Report};

/// The condition each pod-group cycle wanted for its group, in cycle order, with the
/// virtual instant the cycle ended.
pub type WantedConditions = BTreeMap<GroupKey, Vec<(Instant, Condition)>>;

/// The simulated cluster's time at one virtual instant.
#[derive(Debug, Clone, Copy)]
pub struct SimulatedTime {
    /// The driver's clock when the scheduler started.
    pub started: Instant,
    /// The wall time that instant stands for.
    pub at: Timestamp,
}

impl SimulatedTime {
    /// The scheduler starts one second after the newest object of `input` the scheduler
    /// reads was created (the loader gives every object a creation time).
    pub fn after_input(input: &ClusterInput, started: Instant) -> Self {
        let created = input
            .nodes
            .iter()
            .map(|n| &n.metadata)
            .chain(input.pods.iter().map(|p| &p.metadata))
            .chain(input.scheduling_pod_groups.iter().map(|g| &g.metadata))
            .filter_map(|meta| meta.creation_timestamp.as_ref())
            .map(|time| time.0.as_second())
            .max()
            .unwrap_or(CREATION_EPOCH_SECONDS);
        let at = Timestamp::from_second(created.saturating_add(1)).unwrap_or(Timestamp::UNIX_EPOCH);
        SimulatedTime { started, at }
    }

    /// The wall time of virtual instant `instant`, in whole seconds as the API stores
    /// condition times.
    fn wall(&self, instant: Instant) -> Timestamp {
        let elapsed = instant.saturating_duration_since(self.started).as_secs();
        let elapsed = i64::try_from(elapsed).unwrap_or(i64::MAX);
        Timestamp::from_second(self.at.as_second().saturating_add(elapsed)).unwrap_or(self.at)
    }
}

/// The `PodGroupInitiallyScheduled` condition `group` ends with: its own conditions with
/// each wanted one merged in, in order.
fn final_condition(
    group: &PodGroup,
    wanted: &[(Instant, Condition)],
    time: &SimulatedTime,
) -> Option<Condition> {
    let mut conditions = group
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    for (instant, condition) in wanted {
        if let Some(merged) = merge_condition(&conditions, condition, time.wall(*instant)) {
            conditions = merged;
        }
    }
    conditions
        .into_iter()
        .find(|c| c.type_ == INITIALLY_SCHEDULED)
}

/// One row per PodGroup of `input`: the Workload API's in input order, then berth's and
/// scheduler-plugins' (one per name, berth's first, as Coscheduling reads them) by
/// namespace and name, with the message of their last pod-group cycle from `cycles`.
/// Members are the pods of the input in the group (finished ones excepted); bound are the
/// running ones no preemption evicted and the pending ones `report` says were scheduled
/// (its rows are the input's pending pods, in order).
pub fn group_results(
    input: &ClusterInput,
    report: &Report,
    wanted: &WantedConditions,
    cycles: &BTreeMap<GroupKey, PodGroupReport>,
    time: &SimulatedTime,
) -> Vec<PodGroupResult> {
    let evicted: Vec<&str> = report.evicted.iter().map(|e| e.pod.as_str()).collect();
    let mut members: BTreeMap<GroupKey, (usize, usize)> = BTreeMap::new();
    for pod in input.running_pods() {
        if let Some(key) = GroupKey::member_of(pod) {
            let entry = members.entry(key).or_default();
            entry.0 += 1;
            if !evicted.contains(&qualified(pod).as_str()) {
                entry.1 += 1;
            }
        }
    }
    for (row, pod) in report.pods.iter().zip(input.pending_pods()) {
        if let Some(key) = GroupKey::member_of(pod) {
            let entry = members.entry(key).or_default();
            entry.0 += 1;
            if row.result == PodResult::Scheduled {
                entry.1 += 1;
            }
        }
    }
    let mut coscheduling: BTreeMap<GroupKey, (i32, &'static str)> = BTreeMap::new();
    for group in &input.scheduler_plugins_pod_groups {
        let key = coscheduling_key(&group.metadata);
        coscheduling.insert(key, (group.spec.min_member.max(1), SCHEDULER_PLUGINS));
    }
    for group in &input.pod_groups {
        let key = coscheduling_key(&group.metadata);
        coscheduling.insert(key, (group.spec.min_member.max(1), BERTH));
    }
    let coscheduling_rows = coscheduling.into_iter().map(|(key, (min, api))| {
        let (total, bound) = members.get(&key).copied().unwrap_or_default();
        let message = cycles.get(&key).map(|c| c.message.clone());
        PodGroupResult {
            namespace: key.namespace,
            name: key.name,
            policy: GroupPolicy::Gang,
            min_count: Some(min),
            members: total,
            bound,
            condition: None,
            api_version: Some(api.to_string()),
            message: message.unwrap_or_default(),
        }
    });
    input
        .scheduling_pod_groups
        .iter()
        .map(|group| {
            let key = GroupKey::of_group(group);
            let (total, bound) = members.get(&key).copied().unwrap_or_default();
            let min_count = gang_min_count(group);
            let wanted = wanted.get(&key).map(Vec::as_slice).unwrap_or_default();
            PodGroupResult {
                condition: final_condition(group, wanted, time),
                namespace: key.namespace,
                name: key.name,
                policy: if min_count.is_some() {
                    GroupPolicy::Gang
                } else {
                    GroupPolicy::Basic
                },
                min_count,
                members: total,
                bound,
                api_version: None,
                message: String::new(),
            }
        })
        .chain(coscheduling_rows)
        .collect()
}

const BERTH: &str = "berth.dev/v1alpha1";
const SCHEDULER_PLUGINS: &str = "scheduling.x-k8s.io/v1alpha1";

/// The Coscheduling key of a berth or scheduler-plugins PodGroup.
fn coscheduling_key(
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> GroupKey {
    GroupKey::coscheduling(
        metadata.namespace.as_deref().unwrap_or("default"),
        metadata.name.as_deref().unwrap_or_default(),
    )
}

fn qualified(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Says why a member of a pod group never reached a scheduling cycle, from the group
/// state GangScheduling's PreEnqueue reads when the simulation ends: its PodGroup (or,
/// for a 1.35 `spec.workloadRef`, its Workload or the Workload's pod group) does not
/// exist, or its gang has fewer members than `minCount`. Other rows, and members held by
/// scheduling gates (SchedulingGates runs first), keep their message.
pub fn explain_held_members(
    report: &mut Report,
    pending: &[&Pod],
    states: &PodGroupStates,
    legacy: &LegacyWorkloads,
) {
    for (row, pod) in report.pods.iter_mut().zip(pending) {
        let held = row.attempts == 0 && row.result == PodResult::Unschedulable;
        let gated = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_gates.as_ref())
            .is_some_and(|g| !g.is_empty());
        if !held || gated {
            continue;
        }
        if let Some(key) = LegacyGroupKey::of_pod(pod) {
            if let Some(message) = held_legacy_member(&key, legacy) {
                row.message = message;
            }
            continue;
        }
        let Some(key) = GroupKey::member_of(pod) else {
            continue;
        };
        if key.dialect == GroupDialect::Coscheduling {
            if let Some(message) = held_coscheduling_member(&key, states) {
                row.message = message;
            }
            continue;
        }
        match states.gang_members(&key) {
            None => {
                row.message = format!(
                    "waiting for PodGroup {key} (spec.schedulingGroup), which does not exist: \
                     the scheduler does not try the members of a group it does not know"
                );
            }
            Some((Some(min), count)) if short_of(count, min) => {
                row.message = format!(
                    "waiting for the gang of PodGroup {key} to have minCount members: \
                     {count} of {min} exist"
                );
            }
            Some(_) => {}
        }
    }
}

/// Why Coscheduling's PreEnqueue holds a member of berth's or scheduler-plugins' group
/// `key`, if it does: the group has fewer than `minMember` members. A member whose
/// PodGroup does not exist is not held (it is tried alone and says why).
fn held_coscheduling_member(key: &GroupKey, states: &PodGroupStates) -> Option<String> {
    let (Some(min), count) = states.gang_members(key)? else {
        return None;
    };
    short_of(count, min).then(|| {
        format!(
            "waiting for the gang of PodGroup {key} (pod-group label) to have minMember \
             members: {count} of {min} exist"
        )
    })
}

/// Why GangScheduling's 1.35 PreEnqueue holds a pod of gang `key`, if it does.
fn held_legacy_member(key: &LegacyGroupKey, legacy: &LegacyWorkloads) -> Option<String> {
    let (namespace, reference) = (&key.namespace, &key.reference);
    let Some(workload) = legacy.workload(namespace, &reference.name) else {
        return Some(format!(
            "waiting for Workload {namespace}/{} (spec.workloadRef), which does not exist: \
             the scheduler does not try the pods of a Workload it does not know",
            reference.name
        ));
    };
    let Some(policy) = workload.pod_group_policy(&reference.pod_group) else {
        return Some(format!(
            "waiting for Workload {namespace}/{} to have pod group {:?} (spec.workloadRef)",
            reference.name, reference.pod_group
        ));
    };
    let min = policy.gang.as_ref()?.min_count;
    let count = legacy.with_group(key, LegacyGroup::all_pods_count)?;
    short_of(count, min).then(|| {
        format!(
            "waiting for the gang of Workload {namespace}/{} pod group {:?} to have minCount pods: \
                 {count} of {min} exist",
            reference.name, reference.pod_group
        )
    })
}
