//! GangScheduling: all-or-nothing placement of the pods of a Workload API pod group
//! (upstream `plugins/gangscheduling`, kube-scheduler 1.37 with the CompositePodGroup gate
//! off).
//!
//! A pod is a member of the group its `spec.schedulingGroup.podGroupName` names in its
//! namespace ([`GroupKey::of_pod`]). The group's `scheduling.k8s.io/v1beta1` PodGroup is a
//! gang when it sets `spec.schedulingPolicy.gang.minCount`, and basic otherwise. Pods
//! without a scheduling group pass PreEnqueue and Permit untouched; members of a basic
//! group too, once their PodGroup exists. The members are counted in the scheduler's
//! [`PodGroupStates`], which its core keeps current (see that module for which pods count).
//!
//! - **PreEnqueue**: a member stays out of activeQ until its PodGroup object is known and,
//!   for a gang, until the scheduler knows at least `minCount` members (pending, assumed
//!   or bound). Where no PodGroups are fed to the scheduler at all, members pass, to be
//!   refused with the reason (`scheduler::unsupported`).
//! - **Permit**: a gang member waits, for at most 5 minutes, until at least `minCount`
//!   members are assumed or bound. The pod itself counts: it is assumed before Permit
//!   runs. While it waits, the group's pending members are activated so they are tried
//!   next; once the count is reached, every member waiting at Permit is allowed.
//! - **PlacementFeasible** (the pod-group cycle, not a configurable point): whether the
//!   pods still to try can bring the group to `minCount` (1 for a basic group).
//!
//! **Kubernetes 1.35** (`spec.workloadRef`, [`LegacyGroupKey`]): kube-scheduler 1.35's
//! plugin, which has no pod-group cycle. A gang is the pods sharing a reference (Workload,
//! pod group, replica key) whose `scheduling.k8s.io/v1alpha1` Workload gives that pod
//! group a gang policy; they are counted in [`LegacyWorkloads`].
//!
//! - **PreEnqueue**: a pod stays out of activeQ until its Workload is known, names the pod
//!   group, and (for a gang) the scheduler knows at least `minCount` pods of the gang.
//! - **Permit**: a pod waits until at least `minCount` pods of the gang are assumed or
//!   bound, then allows every one waiting; until then it activates the gang's unscheduled
//!   pods. The wait ends at the gang's deadline, set 5 minutes ahead by the first pod to
//!   wait and shared by the rest ([`LegacyWorkloads::scheduling_timeout`]).
//! - Upstream's Reserve and Unreserve (assume and forget in the gang's state) are done by
//!   the scheduler core, which assumes and forgets every pod there.
//!
//! Upstream enables the plugin only with the GenericWorkload feature gate (beta in 1.37,
//! off by default), appending it to the default plugins after DefaultBinder. berth's
//! default set follows 1.37 with that gate on, so GangScheduling is in it, last.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::scheduling::v1beta1::PodGroup;

use crate::cluster::{
    GroupDialect, GroupKey, LegacyGroup, LegacyGroupKey, LegacyWorkloads, PodGroupStates, PodInfo,
    gang_min_count, short_of,
};
use crate::framework::clock::Clock;
use crate::framework::{
    ActionType, ClusterEvent, Code, CycleState, EventResource, GangProgress, Handle, NoArgs,
    PermitPlugin, PlacementFeasiblePlugin, PlacementProgress, PluginError, PluginFactory,
    PodsToActivate, PreEnqueuePlugin, Status, WaitingPods,
};

/// How long a gang member waits at Permit for the rest of its gang (upstream's
/// `permitTimeoutDuration`).
pub const PERMIT_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The GangScheduling plugin.
pub struct GangScheduling {
    states: Arc<PodGroupStates>,
    legacy: Arc<LegacyWorkloads>,
    waiting_pods: Arc<WaitingPods>,
    clock: Arc<dyn Clock>,
}

crate::plugin! {
    GangScheduling {
        name: "GangScheduling",
        points: [PreEnqueue, Permit],
    }

    impl Plugin {
        fn as_placement_feasible(&self) -> Option<&dyn PlacementFeasiblePlugin> {
            Some(self)
        }

        /// As upstream: a member added (pending or bound) may complete its gang's count,
        /// and a PodGroup added or updated (its minCount lowered) may admit its members;
        /// on 1.35, a Workload added (berth also takes updates: a pod group may have been
        /// added to it).
        /// Upstream filters each event with a queueing hint (same group only; for an
        /// update, only a lower minCount); berth has no hints, so any such event retries
        /// every pod this plugin rejected.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(EventResource::UnscheduledPod, ActionType::ADD),
                ClusterEvent::new(EventResource::AssignedPod, ActionType::ADD),
                ClusterEvent::new(EventResource::PodGroup, ActionType::ADD),
                ClusterEvent::new(EventResource::PodGroup, ActionType::UPDATE),
                ClusterEvent::new(EventResource::Workload, ActionType::ADD),
                ClusterEvent::new(EventResource::Workload, ActionType::UPDATE),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Gang scheduling for the Workload API: holds the pods of a PodGroup with a gang policy out of the queue until minCount of them exist, and at Permit until minCount are placed. Upstream runs it by default only with the GenericWorkload gate on (beta, off by default in 1.37); berth's defaults assume the gate on.";
        type Args = NoArgs;

        fn build(_: NoArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(GangScheduling {
                states: handle.pod_group_states.clone(),
                legacy: handle.legacy_workloads.clone(),
                waiting_pods: handle.waiting_pods.clone(),
                clock: handle.clock.clone(),
            })
        }
    }
}

/// What Permit found in the group's state, read under its lock and acted on after.
enum Quorum {
    /// No PodGroup object (or no state at all): the tail of upstream's lister error.
    Missing(&'static str),
    /// A basic group: nothing to wait for.
    NotAGang,
    /// Too few members placed; the keys of the pending ones.
    NotMet(BTreeSet<String>),
    /// Enough members placed; the keys of the assumed ones.
    Met(Vec<String>),
}

impl PreEnqueuePlugin for GangScheduling {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        if let Some(key) = LegacyGroupKey::of_pod(&pod.pod) {
            return self.legacy_pre_enqueue(&key);
        }
        let Some(key) = GroupKey::of_pod(&pod.pod) else {
            return Status::success();
        };
        if !self.states.is_served() {
            // No PodGroups are fed: the pod is refused with why (`scheduler::unsupported`)
            // instead of waiting here for a PodGroup that cannot come.
            return Status::success();
        }
        // berth keeps the PodGroup object inside the group's state, so upstream's separate
        // "state missing" error cannot happen once the object is found.
        match self.states.gang_members(&key) {
            None => Status::unresolvable(format!(
                "waiting for pods's pod group \"{}\" to appear in scheduling queue",
                key.name
            )),
            Some((Some(min_count), members)) if short_of(members, min_count) => {
                Status::unresolvable(
                    "waiting for minCount pods from a gang to appear in scheduling queue",
                )
            }
            Some(_) => Status::success(),
        }
    }
}

#[async_trait]
impl PermitPlugin for GangScheduling {
    async fn permit(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _node_name: &str,
    ) -> (Status, Duration) {
        if let Some(key) = LegacyGroupKey::of_pod(&pod.pod) {
            return self.legacy_permit(state, &key);
        }
        let Some(key) = GroupKey::of_pod(&pod.pod) else {
            return (Status::success(), Duration::ZERO);
        };
        let quorum = self
            .states
            .with_state(&key, |group_state| {
                let Some(group) = group_state.pod_group() else {
                    return Quorum::Missing("pod group object not found");
                };
                let Some(min_count) = gang_min_count(group) else {
                    return Quorum::NotAGang;
                };
                if short_of(group_state.scheduled_pods_count(), min_count) {
                    Quorum::NotMet(group_state.unscheduled_pods().map(String::from).collect())
                } else {
                    Quorum::Met(group_state.assumed_pods().map(String::from).collect())
                }
            })
            .unwrap_or(Quorum::Missing("pod group state not found"));
        match quorum {
            Quorum::Missing(what) => (
                Status::error(format!(
                    "failed to get podGroup {key}: {what} for pod group podgroup/{key}"
                )),
                Duration::ZERO,
            ),
            Quorum::NotAGang => (Status::success(), Duration::ZERO),
            Quorum::NotMet(pending) => {
                // The pending members may have been waiting for this one; try them next.
                activate(state, pending);
                (
                    Status::new(
                        Code::Wait,
                        "waiting for minCount pods from a gang to be scheduled",
                    ),
                    PERMIT_TIMEOUT,
                )
            }
            Quorum::Met(assumed) => {
                self.allow(assumed);
                (Status::success(), Duration::ZERO)
            }
        }
    }
}

/// The gang policy's `minCount` of a 1.35 gang, read from its Workload: `Ok(None)` for a
/// basic pod group, `Err` with upstream's wording when the Workload or the pod group is
/// missing (`Err(None)`: the Workload).
fn legacy_min_count(
    legacy: &LegacyWorkloads,
    key: &LegacyGroupKey,
) -> Result<Option<i32>, Option<String>> {
    let reference = &key.reference;
    let workload = legacy
        .workload(&key.namespace, &reference.name)
        .ok_or(None)?;
    let policy = workload
        .pod_group_policy(&reference.pod_group)
        .ok_or_else(|| {
            Some(format!(
                "pod group \"{}\" doesn't exist for a workload \"{}\"",
                reference.pod_group, reference.name
            ))
        })?;
    Ok(policy.gang.as_ref().map(|gang| gang.min_count))
}

/// Upstream 1.35's error for a gang without pods in the scheduler's state.
const NO_LEGACY_GROUP: &str = "internal pod group state doesn't exist for a pod's workload";

impl GangScheduling {
    /// Kubernetes 1.35's PreEnqueue; see the module docs.
    fn legacy_pre_enqueue(&self, key: &LegacyGroupKey) -> Status {
        if !self.legacy.is_served() {
            // Refused with why (`scheduler::unsupported`).
            return Status::success();
        }
        let min_count = match legacy_min_count(&self.legacy, key) {
            Ok(Some(min_count)) => min_count,
            Ok(None) => return Status::success(),
            Err(None) => {
                return Status::unresolvable(format!(
                    "waiting for pods's workload \"{}\" to appear in scheduling queue",
                    key.reference.name
                ));
            }
            Err(Some(message)) => return Status::unresolvable(message),
        };
        match self.legacy.with_group(key, LegacyGroup::all_pods_count) {
            None => Status::error(NO_LEGACY_GROUP),
            Some(pods) if short_of(pods, min_count) => Status::unresolvable(
                "waiting for minCount pods from a gang to appear in scheduling queue",
            ),
            Some(_) => Status::success(),
        }
    }

    /// Kubernetes 1.35's Permit; see the module docs.
    fn legacy_permit(&self, state: &mut CycleState, key: &LegacyGroupKey) -> (Status, Duration) {
        let min_count = match legacy_min_count(&self.legacy, key) {
            Ok(Some(min_count)) => min_count,
            Ok(None) => return (Status::success(), Duration::ZERO),
            Err(None) => {
                let (namespace, name) = (&key.namespace, &key.reference.name);
                return (
                    Status::error(format!(
                        "failed to get workload {namespace}/{name}: workload.scheduling.k8s.io \"{name}\" not found"
                    )),
                    Duration::ZERO,
                );
            }
            Err(Some(message)) => return (Status::error(message), Duration::ZERO),
        };
        // Ok: the assumed pods to allow; Err: the unscheduled ones to activate.
        let quorum = self.legacy.with_group(key, |group| {
            if short_of(group.scheduled_pods_count(), min_count) {
                Err(group.unscheduled_pods().map(String::from).collect())
            } else {
                Ok(group.assumed_pods().map(String::from).collect())
            }
        });
        match quorum {
            None => (Status::error(NO_LEGACY_GROUP), Duration::ZERO),
            Some(Err(pending)) => {
                activate(state, pending);
                let timeout = self.legacy.scheduling_timeout(key, self.clock.now());
                (
                    Status::new(
                        Code::Wait,
                        "waiting for minCount pods from a gang to be waiting on permit",
                    ),
                    timeout,
                )
            }
            Some(Ok(assumed)) => {
                self.allow(assumed);
                (Status::success(), Duration::ZERO)
            }
        }
    }

    /// Allows the pods among `keys` that wait at Permit.
    fn allow(&self, keys: Vec<String>) {
        for member in keys {
            if let Some(waiting) = self.waiting_pods.get(&member) {
                waiting.allow(Self::NAME);
            }
        }
    }
}

/// Adds `pods` to the cycle's [`PodsToActivate`], keeping what other plugins asked for.
fn activate(state: &mut CycleState, pods: BTreeSet<String>) {
    if pods.is_empty() {
        return;
    }
    match state.read_mut::<PodsToActivate>() {
        Some(PodsToActivate(keys)) => keys.extend(pods),
        None => state.write(PodsToActivate(pods)),
    }
}

impl PlacementFeasiblePlugin for GangScheduling {
    fn placement_feasible(
        &self,
        key: &GroupKey,
        group: &PodGroup,
        progress: PlacementProgress,
    ) -> Status {
        if key.dialect != GroupDialect::Workload {
            return Status::success();
        }
        let min_count = gang_min_count(group).unwrap_or(1);
        let PlacementProgress {
            remaining,
            scheduled,
        } = progress;
        match progress.toward(min_count) {
            GangProgress::Unreachable => Status::unschedulable(format!(
                "minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
            )),
            GangProgress::Pending => Status::new(
                Code::Wait,
                format!(
                    "minCount ({min_count}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"
                ),
            ),
            GangProgress::Met => Status::success(),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod legacy_tests;
