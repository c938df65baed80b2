//! Whether a pod may preempt at all (upstream `PodEligibleToPreemptOthers`).

use k8s_openapi::api::core::v1::Pod;

use crate::framework::Code;
use crate::framework::victim_units::terminating_by_preemption;

/// `spec.priority`, 0 when unset (upstream `corev1helpers.PodPriority`).
pub fn pod_priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Why a pod with `preemptionPolicy: Never` does not preempt (the period is upstream's).
pub const ERR_PREEMPTION_POLICY_NEVER: &str = "not eligible due to preemptionPolicy=Never.";

/// Why a pod whose earlier preemption is still evicting does not preempt again.
pub const ERR_TERMINATING_POD_ON_NOMINATED_NODE: &str =
    "not eligible due to a terminating pod on the nominated node.";

const PREEMPT_NEVER: &str = "Never";

/// `Ok` when `pod` may preempt other pods, else the reason it may not:
///
/// - its `spec.preemptionPolicy` is `Never`;
/// - it is nominated to a node (`status.nominatedNodeName`) where a pod of lower priority
///   is still terminating because the scheduler preempted it (deletion requested, and a
///   `DisruptionTarget` condition with status `True` and reason `PreemptionByScheduler`):
///   the room the pod asked for is on its way, preempting elsewhere would evict twice.
///   That does not hold when this cycle's Filter found the nominated node unusable for
///   good (`nominated_node_status` `UnschedulableAndUnresolvable`).
///
/// `pods_on_nominated_node` are the pods the snapshot has on the nominated node (none when
/// the node is gone), weighed by `victim_priority` (a pod of a Workload API PodGroup at
/// its group's); `nominated_node_status` is the code Filter gave that node this cycle
/// (`Success` when it recorded none).
pub fn pod_eligible_to_preempt_others<'a>(
    pod: &Pod,
    nominated_node_status: Code,
    pods_on_nominated_node: impl IntoIterator<Item = &'a Pod>,
    victim_priority: impl Fn(&Pod) -> i32,
) -> Result<(), String> {
    let spec = pod.spec.as_ref();
    if spec.and_then(|s| s.preemption_policy.as_deref()) == Some(PREEMPT_NEVER) {
        return Err(ERR_PREEMPTION_POLICY_NEVER.to_owned());
    }
    let nominated = pod
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if !nominated || nominated_node_status == Code::UnschedulableAndUnresolvable {
        return Ok(());
    }
    let priority = pod_priority(pod);
    let still_evicting = pods_on_nominated_node
        .into_iter()
        .any(|p| victim_priority(p) < priority && terminating_by_preemption(p));
    if still_evicting {
        return Err(ERR_TERMINATING_POD_ON_NOMINATED_NODE.to_owned());
    }
    Ok(())
}
