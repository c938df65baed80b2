//! Pods nominated to nodes (upstream's `nominator`): a pod that preempted others on a node
//! waits for its victims to leave, and while it waits, the room it made is its own for
//! pods of lower priority. Filter accounts for the nominated pods of equal or higher
//! priority on a node (see `Framework::run_filter_with_nominated_pods`).
//!
//! One nominator serves every profile of a scheduler (a pod of one profile must see the
//! nominations another made), shared through the [`Handle`](super::Handle). A nomination
//! comes from the pod's `status.nominatedNodeName` when the pod is added or updated (so it
//! survives a restart of the scheduler), or from preemption's PostFilter result, which
//! overrides what the pod object says until the status update arrives. Pods are keyed as
//! the cache keys them (uid, else `namespace/name`).
//!
//! It also tracks the preemptions whose evictions are under way (upstream's executor
//! keeps them): while a preemptor's victims are being evicted, DefaultPreemption's
//! PreEnqueue keeps the preemptor out of activeQ, so it is not retried against a node
//! that still holds them. A preemption runs until the adapter reports its end, or until
//! its last victim is seen deleted or terminating, whichever comes first: the last
//! victim's deletion is the event that brings the preemptor back.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::PodInfo;

#[derive(Debug, Default)]
struct Inner {
    /// Nominated pods by node, in the order they were nominated.
    by_node: BTreeMap<String, Vec<Arc<PodInfo>>>,
    /// The node of each nominated pod, by pod key.
    node_of: HashMap<String, String>,
}

/// A preemption whose evictions are under way.
#[derive(Debug, Clone)]
struct Running {
    /// The victim evicted last (none when every victim was held at Permit).
    last_victim: Option<String>,
    /// The last victim was seen deleted or terminating.
    last_victim_left: bool,
}

/// The nominations of one scheduler, and its preemptions under way.
#[derive(Debug, Default)]
pub struct Nominator {
    inner: RwLock<Inner>,
    /// How many pods are nominated: read without the lock by Filter, once per node.
    nominated: AtomicUsize,
    /// By preemptor key.
    running: Mutex<HashMap<String, Running>>,
}

/// The node a pod's status nominates it to, if any.
pub fn status_nominated_node(pod: &Pod) -> Option<&str> {
    pod.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn is_assigned(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

impl Nominator {
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes the count after a change made under the write lock.
    fn counted(&self, inner: &Inner) {
        self.nominated.store(inner.node_of.len(), Ordering::Release);
    }

    /// Nominates `pod` to `node` (upstream `AddNominatedPod` in Override mode), replacing
    /// any earlier nomination of it; an empty `node` only clears it. A pod already assigned
    /// to a node is not nominated.
    pub fn nominate(&self, pod: Arc<PodInfo>, node: &str) {
        let mut inner = self.write();
        remove(&mut inner, pod.key());
        if !node.is_empty() && !is_assigned(&pod.pod) {
            inner
                .node_of
                .insert(pod.key().to_string(), node.to_string());
            inner.by_node.entry(node.to_string()).or_default().push(pod);
        }
        self.counted(&inner);
    }

    /// Records the nomination the pod's status carries (upstream `AddNominatedPod` in
    /// Noop mode): when a pending pod is added.
    pub fn add(&self, pod: Arc<PodInfo>) {
        let node = status_nominated_node(&pod.pod)
            .unwrap_or_default()
            .to_string();
        self.nominate(pod, &node);
    }

    /// A pending pod changed (upstream `UpdateNominatedPod`): when neither version's status
    /// names a node but the pod is nominated here (the status update of a fresh nomination
    /// has not arrived yet), the nomination stays; otherwise the new status decides.
    pub fn update(&self, old: &Pod, new: Arc<PodInfo>) {
        let kept = match (status_nominated_node(old), status_nominated_node(&new.pod)) {
            (None, None) => self.nominated_node(new.key()),
            _ => None,
        };
        match kept {
            Some(node) => self.nominate(new, &node),
            None => self.add(new),
        }
    }

    /// Forgets the nomination of the pod `key`, if any.
    pub fn delete(&self, key: &str) {
        let mut inner = self.write();
        remove(&mut inner, key);
        self.counted(&inner);
    }

    /// The node the pod `key` is nominated to.
    pub fn nominated_node(&self, key: &str) -> Option<String> {
        self.read().node_of.get(key).cloned()
    }

    /// The pods nominated to `node`, in the order they were nominated.
    pub fn pods_for_node(&self, node: &str) -> Vec<Arc<PodInfo>> {
        self.read().by_node.get(node).cloned().unwrap_or_default()
    }

    /// The evictions of `preemptor`'s preemption have started; `last_victim` is the key of
    /// the victim evicted last.
    pub fn start_preemption(&self, preemptor: &str, last_victim: Option<String>) {
        self.running_preemptions().insert(
            preemptor.to_string(),
            Running {
                last_victim,
                last_victim_left: false,
            },
        );
    }

    /// The adapter finished `preemptor`'s evictions (successfully or not).
    pub fn finish_preemption(&self, preemptor: &str) {
        self.running_preemptions().remove(preemptor);
    }

    /// A bound pod was deleted or started terminating: if it is the last victim of a
    /// preemption, that preemption no longer holds its preemptor back.
    pub fn victim_left(&self, victim: &str) {
        for running in self.running_preemptions().values_mut() {
            if running.last_victim.as_deref() == Some(victim) {
                running.last_victim_left = true;
            }
        }
    }

    /// Whether `preemptor`'s evictions are still under way (upstream
    /// `IsPodRunningPreemption`): started, not finished, and its last victim not yet seen
    /// leaving.
    pub fn is_running_preemption(&self, preemptor: &str) -> bool {
        self.running_preemptions()
            .get(preemptor)
            .is_some_and(|r| !r.last_victim_left)
    }

    fn running_preemptions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether any pod is nominated anywhere (the common case is none, and Filter then
    /// needs no second pass).
    pub fn is_empty(&self) -> bool {
        self.nominated.load(Ordering::Acquire) == 0
    }
}

fn remove(inner: &mut Inner, key: &str) {
    let Some(node) = inner.node_of.remove(key) else {
        return;
    };
    if let Some(pods) = inner.by_node.get_mut(&node) {
        pods.retain(|p| p.key() != key);
        if pods.is_empty() {
            inner.by_node.remove(&node);
        }
    }
}

#[cfg(test)]
mod tests;
