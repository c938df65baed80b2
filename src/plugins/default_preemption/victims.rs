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

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::core::{Selector, SelectorExt};

use crate::cluster::PodInfo;

const DEFAULT_NAMESPACE: &str = "default";

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

/// When a pod started, for ordering: a pod without `status.startTime` counts as started
/// after every pod that has one (upstream takes "now" for it, the newest possible time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum StartTime {
    At(Timestamp),
    Unknown,
}

pub(super) fn start_time(pod: &Pod) -> StartTime {
    pod.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(StartTime::Unknown, |t| StartTime::At(t.0))
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
    let budgets: Vec<Option<Selector>> = pdbs.iter().map(budget_selector).collect();
    let mut allowed: Vec<i64> = pdbs
        .iter()
        .map(|pdb| {
            pdb.status
                .as_ref()
                .and_then(|s| s.disruptions_allowed)
                .map_or(0, i64::from)
        })
        .collect();
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    for holder in pods {
        let pod = holder.as_pod();
        let mut violates = false;
        for ((pdb, selector), allowed) in pdbs.iter().zip(&budgets).zip(&mut allowed) {
            if budget_counts(pdb, selector.as_ref(), pod) {
                *allowed -= 1;
                violates |= *allowed < 0;
            }
        }
        if violates {
            violating.push(holder);
        } else {
            non_violating.push(holder);
        }
    }
    (violating, non_violating)
}

/// The budget's selector, `None` when it selects nothing (missing, empty or invalid).
fn budget_selector(pdb: &PodDisruptionBudget) -> Option<Selector> {
    let selector = pdb.spec.as_ref()?.selector.clone()?;
    Selector::try_from(selector)
        .ok()
        .filter(|s| !s.selects_all())
}

/// Whether evicting `pod` uses up one disruption of `pdb`.
fn budget_counts(pdb: &PodDisruptionBudget, selector: Option<&Selector>, pod: &Pod) -> bool {
    let Some(labels) = pod.metadata.labels.as_ref().filter(|l| !l.is_empty()) else {
        return false;
    };
    let Some(selector) = selector else {
        return false;
    };
    if namespace(&pdb.metadata.namespace) != namespace(&pod.metadata.namespace)
        || !selector.matches(labels)
    {
        return false;
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let disrupted = pdb
        .status
        .as_ref()
        .and_then(|s| s.disrupted_pods.as_ref())
        .is_some_and(|pods| pods.contains_key(name));
    !disrupted
}

/// A namespace as the cache reads it: `default` when unset or empty.
fn namespace(namespace: &Option<String>) -> &str {
    namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .unwrap_or(DEFAULT_NAMESPACE)
}
