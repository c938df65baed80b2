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
//! Upstream enables the plugin only with the GenericWorkload feature gate (beta in 1.37,
//! off by default), appending it to the default plugins after DefaultBinder. berth's
//! default set follows 1.37 with that gate on, so GangScheduling is in it, last.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::scheduling::v1beta1::PodGroup;

use crate::cluster::{GroupKey, PodGroupStates, PodInfo, gang_min_count};
use crate::framework::{
    ActionType, ClusterEvent, Code, CycleState, EventResource, Handle, NoArgs, PermitPlugin,
    PlacementFeasiblePlugin, PlacementProgress, PluginError, PluginFactory, PodsToActivate,
    PreEnqueuePlugin, Status, WaitingPods,
};

/// How long a gang member waits at Permit for the rest of its gang (upstream's
/// `permitTimeoutDuration`).
pub const PERMIT_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The GangScheduling plugin.
pub struct GangScheduling {
    states: Arc<PodGroupStates>,
    waiting_pods: Arc<WaitingPods>,
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
        /// and a PodGroup added or updated (its minCount lowered) may admit its members.
        /// Upstream filters each event with a queueing hint (same group only; for an
        /// update, only a lower minCount); berth has no hints, so any such event retries
        /// every pod this plugin rejected.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(EventResource::UnscheduledPod, ActionType::ADD),
                ClusterEvent::new(EventResource::AssignedPod, ActionType::ADD),
                ClusterEvent::new(EventResource::PodGroup, ActionType::ADD),
                ClusterEvent::new(EventResource::PodGroup, ActionType::UPDATE),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Gang scheduling for the Workload API: holds the pods of a PodGroup with a gang policy out of the queue until minCount of them exist, and at Permit until minCount are placed. Upstream runs it by default only with the GenericWorkload gate on (beta, off by default in 1.37); berth's defaults assume the gate on.";
        type Args = NoArgs;

        fn build(_: NoArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(GangScheduling {
                states: handle.pod_group_states.clone(),
                waiting_pods: handle.waiting_pods.clone(),
            })
        }
    }
}

/// Whether `count` pods fall short of `min_count` (a count below 1 is met by any number).
fn short_of(count: usize, min_count: i32) -> bool {
    usize::try_from(min_count).is_ok_and(|min| count < min)
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
        let found = self.states.with_state(&key, |state| {
            state
                .pod_group()
                .map(|group| (gang_min_count(group), state.all_pods_count()))
        });
        match found.flatten() {
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
                for member in assumed {
                    if let Some(waiting) = self.waiting_pods.get(&member) {
                        waiting.allow(Self::NAME);
                    }
                }
                (Status::success(), Duration::ZERO)
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
    fn placement_feasible(&self, group: &PodGroup, progress: PlacementProgress) -> Status {
        let min_count = gang_min_count(group).unwrap_or(1);
        let PlacementProgress {
            remaining,
            scheduled,
        } = progress;
        if short_of(remaining.saturating_add(scheduled), min_count) {
            return Status::unschedulable(format!(
                "minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
            ));
        }
        if short_of(scheduled, min_count) {
            return Status::new(
                Code::Wait,
                format!(
                    "minCount ({min_count}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"
                ),
            );
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests;
