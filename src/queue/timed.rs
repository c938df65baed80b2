//! Pods indexed by key and ordered by an instant: backoffQ (ordered by backoff expiry) and
//! the parked sets (unschedulable and gated pods, ordered by when they were parked).
//!
//! Pods with equal instants keep their insertion order, so a simulator that adds many pods
//! at the same virtual instant moves them in a reproducible order.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use crate::framework::QueuedPodInfo;

struct Timed {
    at: Instant,
    seq: u64,
    pod: QueuedPodInfo,
}

#[derive(Default)]
pub(super) struct TimedPods {
    pods: HashMap<String, Timed>,
    order: BTreeMap<(Instant, u64), String>,
    next_seq: u64,
}

impl TimedPods {
    /// Inserts `pod` at `at`, replacing an entry with the same key.
    pub(super) fn insert(&mut self, at: Instant, pod: QueuedPodInfo) {
        let key = pod.pod_info.key().to_string();
        self.remove(&key);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert((at, seq), key.clone());
        self.pods.insert(key, Timed { at, seq, pod });
    }

    pub(super) fn remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        let timed = self.pods.remove(key)?;
        self.order.remove(&(timed.at, timed.seq));
        Some(timed.pod)
    }

    pub(super) fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.pods.get(key).map(|timed| &timed.pod)
    }

    /// Mutable access that keeps the pod's instant; the caller must not change its key.
    pub(super) fn get_mut(&mut self, key: &str) -> Option<&mut QueuedPodInfo> {
        self.pods.get_mut(key).map(|timed| &mut timed.pod)
    }

    pub(super) fn contains(&self, key: &str) -> bool {
        self.pods.contains_key(key)
    }

    /// The earliest instant held.
    pub(super) fn earliest(&self) -> Option<Instant> {
        self.order.keys().next().map(|(at, _)| *at)
    }

    /// Removes and returns the earliest pod if its instant is at or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<QueuedPodInfo> {
        let (&(at, _), key) = self.order.iter().next()?;
        if at > now {
            return None;
        }
        let key = key.clone();
        self.remove(&key)
    }

    /// Pods with their instants, earliest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = (Instant, &QueuedPodInfo)> {
        self.order
            .iter()
            .filter_map(|((at, _), key)| self.pods.get(key).map(|timed| (*at, &timed.pod)))
    }
}
