//! activeQ: a binary heap ordered by the profile's QueueSort plugin, indexed by pod key so
//! that update and delete cost O(log n), as upstream's `internal/heap`.
//!
//! Pods the plugin considers equal (neither `less(a, b)` nor `less(b, a)`) leave in the
//! order they entered, so equal-priority pods added at the same instant are scheduled in
//! arrival order on every run.

use std::collections::HashMap;
use std::sync::Arc;

use crate::framework::{Plugin, QueuedPodInfo};

struct Entry {
    /// Arrival order, the tie-breaker for pods QueueSort considers equal.
    seq: u64,
    pod: QueuedPodInfo,
}

pub(super) struct ActiveQueue {
    /// The QueueSort plugin; a plugin without QueueSort degrades the order to FIFO.
    sort: Arc<dyn Plugin>,
    entries: Vec<Entry>,
    /// Pod key -> position in `entries`.
    index: HashMap<String, usize>,
    next_seq: u64,
}

impl ActiveQueue {
    pub(super) fn new(sort: Arc<dyn Plugin>) -> Self {
        ActiveQueue {
            sort,
            entries: Vec::new(),
            index: HashMap::new(),
            next_seq: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    pub(super) fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.index.get(key).map(|&i| &self.entries[i].pod)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &QueuedPodInfo> {
        self.entries.iter().map(|entry| &entry.pod)
    }

    /// Adds `pod`; a pod with the same key is replaced and keeps its arrival order.
    pub(super) fn push(&mut self, pod: QueuedPodInfo) {
        if let Some(&position) = self.index.get(pod.pod_info.key()) {
            self.entries[position].pod = pod;
            self.fix(position);
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let position = self.entries.len();
        self.index.insert(pod.pod_info.key().to_string(), position);
        self.entries.push(Entry { seq, pod });
        self.sift_up(position);
    }

    /// Applies `change` to the pod with `key` and restores the heap order. False when the
    /// pod is not here. `change` must not alter the pod's key.
    pub(super) fn update(&mut self, key: &str, change: impl FnOnce(&mut QueuedPodInfo)) -> bool {
        let Some(&position) = self.index.get(key) else {
            return false;
        };
        change(&mut self.entries[position].pod);
        self.fix(position);
        true
    }

    /// Removes and returns the pod QueueSort puts first.
    pub(super) fn pop(&mut self) -> Option<QueuedPodInfo> {
        self.remove_at(0)
    }

    pub(super) fn remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        let position = *self.index.get(key)?;
        self.remove_at(position)
    }

    fn remove_at(&mut self, position: usize) -> Option<QueuedPodInfo> {
        let last = self.entries.len().checked_sub(1)?;
        self.swap(position, last);
        let removed = self.entries.pop()?.pod;
        self.index.remove(removed.pod_info.key());
        if position < self.entries.len() {
            self.fix(position);
        }
        Some(removed)
    }

    /// Whether the entry at `a` should leave before the entry at `b`.
    fn before(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.entries[a], &self.entries[b]);
        match self.sort.as_queue_sort() {
            Some(sort) if sort.less(&a.pod, &b.pod) => true,
            Some(sort) if sort.less(&b.pod, &a.pod) => false,
            _ => a.seq < b.seq,
        }
    }

    fn fix(&mut self, position: usize) {
        if !self.sift_up(position) {
            self.sift_down(position);
        }
    }

    /// Moves the entry up while it belongs before its parent; true if it moved.
    fn sift_up(&mut self, mut position: usize) -> bool {
        let start = position;
        while position > 0 {
            let parent = (position - 1) / 2;
            if !self.before(position, parent) {
                break;
            }
            self.swap(position, parent);
            position = parent;
        }
        position != start
    }

    fn sift_down(&mut self, mut position: usize) {
        loop {
            let left = 2 * position + 1;
            if left >= self.entries.len() {
                return;
            }
            let right = left + 1;
            let child = if right < self.entries.len() && self.before(right, left) {
                right
            } else {
                left
            };
            if !self.before(child, position) {
                return;
            }
            self.swap(position, child);
            position = child;
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        self.entries.swap(a, b);
        for position in [a, b] {
            if let Some(slot) = self
                .index
                .get_mut(self.entries[position].pod.pod_info.key())
            {
                *slot = position;
            }
        }
    }
}
