//! Taints and tolerations, as upstream's `Toleration.ToleratesTaint` and component-helpers
//! `scheduling/corev1` (`FindMatchingUntoleratedTaint`): TaintToleration and
//! NodeUnschedulable filter with them, PodTopologySpread's `nodeTaintsPolicy: Honor` counts
//! nodes with them, and the simulator's DaemonSet controller places pods with them, so all
//! agree on which taint a pod tolerates.

use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};

/// The taint effect that keeps new pods off a node.
pub const TAINT_EFFECT_NO_SCHEDULE: &str = "NoSchedule";
/// The taint effect that keeps new pods off a node and evicts running ones.
pub const TAINT_EFFECT_NO_EXECUTE: &str = "NoExecute";
/// The soft taint effect: the scheduler tries to avoid the node.
pub const TAINT_EFFECT_PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";

/// Whether `toleration` tolerates `taint`, as upstream `Toleration.ToleratesTaint`:
///
/// - an empty (absent) effect matches every effect, otherwise the effects must be equal;
/// - an empty key matches every key (validation allows it only with `Exists`);
/// - operator `Exists` matches any value; `Equal` (or no operator) requires equal values,
///   an absent value counting as empty;
/// - any other operator matches nothing (the numeric `Lt`/`Gt` operators are behind an
///   alpha feature gate upstream and are not supported).
pub fn tolerates_taint(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}

/// Whether any of `tolerations` tolerates `taint` (upstream `TolerationsTolerateTaint`).
pub fn tolerations_tolerate_taint(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates_taint(t, taint))
}

/// The first taint among those `include` selects that no toleration tolerates, or `None`
/// when all of them are tolerated (upstream `FindMatchingUntoleratedTaint`).
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    include: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|taint| include(taint))
        .find(|taint| !tolerations_tolerate_taint(tolerations, taint))
}

/// Selects the taints that keep a pod off a node: `NoSchedule` and `NoExecute` (upstream
/// `helper.DoNotScheduleTaintsFilterFunc`).
pub fn is_do_not_schedule_taint(taint: &Taint) -> bool {
    taint.effect == TAINT_EFFECT_NO_SCHEDULE || taint.effect == TAINT_EFFECT_NO_EXECUTE
}

/// `spec.tolerations` of a pod; empty when absent.
pub fn pod_tolerations(pod: &Pod) -> &[Toleration] {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.tolerations.as_deref())
        .unwrap_or_default()
}

/// `spec.taints` of a node; empty when absent.
pub fn node_taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|spec| spec.taints.as_deref())
        .unwrap_or_default()
}
