//! Per-node results a plugin keeps from one scheduling cycle to the next.
//!
//! Some upstream plugins walk every node of the cluster for every pod (PodTopologySpread
//! counting matching pods per domain, InterPodAffinity counting and scoring topology
//! pairs): per-pod work that grows with the cluster. Pods of one workload look alike, so
//! such a plugin keeps, per pod *signature* (a string of everything its per-node result
//! depends on besides the node), each node's result and their sum, and for the next pod
//! with that signature redoes only the nodes the snapshot replaced since
//! ([`Snapshot::changed_since`]). The sum is then the same as a walk from scratch; a
//! rebuilt node list (a node added or removed) starts the signature over.

use std::sync::{Mutex, PoisonError};

use crate::cluster::{ChangeCursor, Snapshot};

/// The results kept for the last few signatures (the least recently used goes first).
pub struct Kept<E> {
    entries: Mutex<Vec<Entry<E>>>,
    capacity: usize,
}

struct Entry<E> {
    signature: String,
    cursor: ChangeCursor,
    nodes: usize,
    value: E,
}

impl<E> Kept<E> {
    /// Keeps at most `capacity` signatures (at least one).
    pub fn new(capacity: usize) -> Self {
        Kept {
            entries: Mutex::new(Vec::new()),
            capacity: capacity.max(1),
        }
    }

    /// The kept value of `signature`, brought up to date with `snapshot` and handed to
    /// `read`. A signature seen before on the same node list gets `update(value, i)` for
    /// every node index `i` replaced since (a node possibly more than once); otherwise
    /// the value is built anew by `build`.
    pub fn with<R>(
        &self,
        signature: String,
        snapshot: &Snapshot,
        build: impl FnOnce() -> E,
        mut update: impl FnMut(&mut E, usize),
        read: impl FnOnce(&E) -> R,
    ) -> R {
        let nodes = snapshot.len();
        let taken = {
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            let at = entries.iter().position(|e| e.signature == signature);
            at.map(|at| entries.remove(at))
        };
        let mut entry = match taken {
            Some(mut entry) if entry.nodes == nodes => match snapshot.changed_since(entry.cursor) {
                Some(changed) => {
                    for &i in changed {
                        update(&mut entry.value, i);
                    }
                    entry
                }
                None => Entry {
                    value: build(),
                    ..entry
                },
            },
            _ => Entry {
                signature,
                cursor: snapshot.cursor(),
                nodes,
                value: build(),
            },
        };
        entry.cursor = snapshot.cursor();
        entry.nodes = nodes;
        let result = read(&entry.value);
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= self.capacity {
            entries.remove(0);
        }
        entries.push(entry);
        result
    }

    /// How many signatures are kept.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<E> Clone for Kept<E> {
    /// A copy starts with nothing kept: kept results are a cache, not configuration.
    fn clone(&self) -> Self {
        Kept::new(self.capacity)
    }
}

impl<E> std::fmt::Debug for Kept<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("signatures", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Cache;
    use crate::testing::{make_node, make_pod};

    /// Pods per node, kept under `signature`; returns the total and the nodes walked.
    fn pods(kept: &Kept<Vec<usize>>, signature: &str, snapshot: &Snapshot) -> (usize, usize) {
        let nodes = snapshot.nodes();
        let walked = std::cell::Cell::new(0);
        let total = kept.with(
            signature.to_string(),
            snapshot,
            || {
                walked.set(walked.get() + nodes.len());
                nodes.iter().map(|n| n.pods.len()).collect()
            },
            |counts, i| {
                walked.set(walked.get() + 1);
                counts[i] = nodes[i].pods.len();
            },
            |counts| counts.iter().sum(),
        );
        (total, walked.get())
    }

    #[test]
    fn updates_changed_nodes_rebuilds_new_lists_and_forgets_the_oldest() {
        let mut cache = Cache::new(None);
        for name in ["a", "b", "c"] {
            cache.add_node(make_node().name(name).obj()).expect("node");
        }
        let mut snapshot = Snapshot::default();
        cache.update_snapshot(&mut snapshot);
        let kept = Kept::new(2);
        assert_eq!(pods(&kept, "x", &snapshot), (0, 3), "built: every node");
        assert_eq!(pods(&kept, "x", &snapshot), (0, 0), "nothing changed");

        cache
            .assume_pod(&make_pod().name("p1").info(), "b")
            .expect("assume");
        cache.update_snapshot(&mut snapshot);
        assert_eq!(pods(&kept, "x", &snapshot), (1, 1), "one node changed");

        cache.add_node(make_node().name("d").obj()).expect("node");
        cache.update_snapshot(&mut snapshot);
        assert_eq!(
            pods(&kept, "x", &snapshot),
            (1, 4),
            "a new node list: rebuilt"
        );

        // Two more signatures: "x", the least recently used, is forgotten.
        assert_eq!(pods(&kept, "y", &snapshot), (1, 4));
        assert_eq!(pods(&kept, "z", &snapshot), (1, 4));
        assert_eq!(kept.len(), 2);
        assert_eq!(pods(&kept, "x", &snapshot), (1, 4), "forgotten: rebuilt");
        assert_eq!(pods(&kept, "z", &snapshot), (1, 0), "still kept");
    }
}
