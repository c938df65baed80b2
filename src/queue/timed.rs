//! Pods indexed by key and ordered by an instant: backoffQ (ordered by backoff expiry) and
//! the parked sets (unschedulable and gated pods, ordered by when they were parked).
//!
//! Pods with equal instants keep their insertion order, so a simulator that adds many pods
//! at the same virtual instant moves them in a reproducible order.
//!
//! The pods live in the ordered map and the key index points into it, so that walking
//! them in order (which every cluster event does over the parked sets) costs no lookup
//! per pod. The set also counts its pods per gating plugin ([`TimedPods::gates`]): an
//! event no gating plugin registered skips the gated set without walking it.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use crate::framework::QueuedPodInfo;

#[derive(Default)]
pub(super) struct TimedPods {
    order: BTreeMap<(Instant, u64), QueuedPodInfo>,
    index: HashMap<String, (Instant, u64)>,
    /// Pods per `gated_by`, the PreEnqueue plugin holding them (`None`: not gated).
    gates: HashMap<Option<String>, usize>,
    next_seq: u64,
}

impl TimedPods {
    /// Inserts `pod` at `at`, replacing an entry with the same key.
    pub(super) fn insert(&mut self, at: Instant, pod: QueuedPodInfo) {
        let key = pod.pod_info.key().to_string();
        self.remove(&key);
        let seq = self.next_seq;
        self.next_seq += 1;
        *self.gates.entry(pod.gated_by.clone()).or_default() += 1;
        self.order.insert((at, seq), pod);
        self.index.insert(key, (at, seq));
    }

    pub(super) fn remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        let at = self.index.remove(key)?;
        let pod = self.order.remove(&at)?;
        if let Some(count) = self.gates.get_mut(&pod.gated_by) {
            *count -= 1;
            if *count == 0 {
                self.gates.remove(&pod.gated_by);
            }
        }
        Some(pod)
    }

    pub(super) fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.order.get(self.index.get(key)?)
    }

    /// Mutable access that keeps the pod's instant; the caller must change neither its
    /// key nor its `gated_by`.
    pub(super) fn get_mut(&mut self, key: &str) -> Option<&mut QueuedPodInfo> {
        self.order.get_mut(self.index.get(key)?)
    }

    pub(super) fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// The earliest instant held.
    pub(super) fn earliest(&self) -> Option<Instant> {
        self.order.keys().next().map(|(at, _)| *at)
    }

    /// Removes and returns the earliest pod if its instant is at or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<QueuedPodInfo> {
        let (&(at, _), pod) = self.order.iter().next()?;
        if at > now {
            return None;
        }
        let key = pod.pod_info.key().to_string();
        self.remove(&key)
    }

    /// Pods with their instants, earliest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = (Instant, &QueuedPodInfo)> {
        self.order.iter().map(|((at, _), pod)| (*at, pod))
    }

    /// The plugins holding pods of the set (`None` for pods no plugin gates), each once.
    pub(super) fn gates(&self) -> impl Iterator<Item = Option<&str>> {
        self.gates.keys().map(Option::as_deref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::make_pod;

    fn queued(name: &str, gated_by: Option<&str>) -> QueuedPodInfo {
        let pod = make_pod().name(name).namespace("default").info();
        let mut queued = QueuedPodInfo::new(std::sync::Arc::new(pod), Instant::now());
        queued.gated_by = gated_by.map(str::to_string);
        queued
    }

    #[test]
    fn pods_keep_their_order_and_the_gates_are_counted() {
        let mut set = TimedPods::default();
        let now = Instant::now();
        set.insert(now, queued("b", Some("SchedulingGates")));
        set.insert(now, queued("a", Some("SchedulingGates")));
        set.insert(now, queued("c", None));
        let keys: Vec<&str> = set.iter().map(|(_, q)| q.pod_info.key()).collect();
        assert_eq!(keys, ["default/b", "default/a", "default/c"]);
        let mut gates: Vec<Option<&str>> = set.gates().collect();
        gates.sort();
        assert_eq!(gates, [None, Some("SchedulingGates")]);

        // Replacing keeps one entry per key, at the end.
        set.insert(now, queued("b", Some("SchedulingGates")));
        let keys: Vec<&str> = set.iter().map(|(_, q)| q.pod_info.key()).collect();
        assert_eq!(keys, ["default/a", "default/c", "default/b"]);

        assert!(set.remove("default/a").is_some());
        assert!(set.remove("default/b").is_some());
        assert!(set.remove("default/b").is_none());
        assert_eq!(set.gates().collect::<Vec<_>>(), [None]);
        assert_eq!(
            set.pop_due(now).map(|q| q.pod_info.key().to_string()),
            Some("default/c".to_string())
        );
        assert_eq!(set.gates().count(), 0);
        assert!(set.earliest().is_none());
    }
}
