//! Which potential victims preemption keeps first: the importance order of pods (upstream
//! `MoreImportantPod`) and the split by PodDisruptionBudget (upstream
//! `filterPodsWithPDBViolation`).
//!
//! The dry run tries to keep ("reprieve") pods in importance order, PDB-violating ones
//! first, so the pods it evicts are the least important and, where it can, those whose
//! eviction the budgets allow. The functions take any pod holder ([`AsPod`]): the dry run
//! works on the `PodInfo`s of a `NodeInfo`, a candidate keeps bare pods.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::cluster::{BudgetTracker, PodInfo, start_time};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

/// Something that holds a pod: a `Pod`, a `PodInfo`, or an `Arc` of either.
pub trait AsPod {
    fn as_pod(&self) -> &Pod;
}

impl AsPod for Pod {
    fn as_pod(&self) -> &Pod {
        self
    }
}

impl AsPod for PodInfo {
    fn as_pod(&self) -> &Pod {
        &self.pod
    }
}

impl<T: AsPod + ?Sized> AsPod for Arc<T> {
    fn as_pod(&self) -> &Pod {
        T::as_pod(self)
    }
}

impl<T: AsPod + ?Sized> AsPod for &T {
    fn as_pod(&self) -> &Pod {
        T::as_pod(self)
    }
}

/// `spec.priority`, 0 when unset (upstream `corev1helpers.PodPriority`).
pub fn pod_priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// The importance order: `Less` when `a` is more important than `b`, i.e. has the higher
/// priority or, at equal priority, started earlier. Pods that tie compare `Equal`.
pub fn importance(a: &Pod, b: &Pod) -> Ordering {
    pod_priority(b)
        .cmp(&pod_priority(a))
        .then_with(|| start_time(a).cmp(&start_time(b)))
}

/// Whether `a` is more important than `b` (upstream `MoreImportantPod`): higher priority,
/// or equal priority and an earlier start time. A pod is never more important than itself.
pub fn more_important_pod(a: &Pod, b: &Pod) -> bool {
    importance(a, b) == Ordering::Less
}

/// Sorts pods most important first; pods that tie keep their order.
pub fn sort_by_importance<T: AsPod>(pods: &mut [T]) {
    pods.sort_by(|a, b| importance(a.as_pod(), b.as_pod()));
}

/// Splits `pods` (in importance order) into `(violating, non_violating)`: a pod violates
/// when evicting it, after the more important pods before it, would take a matching
/// budget below zero disruptions allowed. Both lists keep the input order.
///
/// A budget matches a pod in its namespace whose labels its selector selects; a missing,
/// empty or invalid selector matches nothing, and a pod without labels matches no budget.
/// A pod already listed in the budget's `status.disruptedPods` neither uses the budget up
/// nor violates it: the API server has counted its eviction.
pub fn filter_pods_with_pdb_violation<T: AsPod>(
    pods: Vec<T>,
    pdbs: &[PodDisruptionBudget],
) -> (Vec<T>, Vec<T>) {
    let mut budgets = BudgetTracker::new(pdbs);
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    for holder in pods {
        if budgets.evict(holder.as_pod()) {
            violating.push(holder);
        } else {
            non_violating.push(holder);
        }
    }
    (violating, non_violating)
}
