//! The immutable view of the cluster that one scheduling cycle reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::{Node, Pod};

use super::{NodeInfo, PodInfo, QuantityError};

/// Node infos in a stable order, shared (`Arc`) with the cache so taking a snapshot
/// re-clones only the nodes that changed since the previous one.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    node_infos: Vec<Arc<NodeInfo>>,
    index: HashMap<String, usize>,
    /// The cache generation this snapshot reflects: every node change with a later
    /// generation is still to be applied.
    pub generation: u64,
    /// The cache and the node layout (set and order of nodes) this snapshot was built
    /// from; `None` for a snapshot not taken from a cache. While both match, the cache
    /// updates the snapshot by replacing only the changed nodes in place.
    pub(super) layout: Option<(u64, u64)>,
    /// Changes since the node list was last set: the index of every info replaced since,
    /// in order. `epoch` names the node list it refers to (new on every full rebuild, and
    /// when the log is trimmed), so a [`ChangeCursor`] of an older list is recognized.
    replaced: Vec<usize>,
    epoch: u64,
    /// Indices of the nodes with pods with (anti-)affinity, and with required
    /// anti-affinity, in node order; kept up to date on every replacement so that
    /// InterPodAffinity does not scan every node for them each cycle.
    with_affinity: Vec<usize>,
    with_required_anti_affinity: Vec<usize>,
    /// Namespace name -> its labels, for namespace selectors (InterPodAffinity).
    namespaces: Arc<NamespaceLabels>,
}

/// A position in a snapshot's log of changed nodes: plugins that keep per-node results
/// across cycles (PodTopologySpread's domain counts) recompute only the nodes changed
/// since their cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeCursor {
    epoch: u64,
    position: usize,
}

/// Hands every node list its own epoch (0 is never handed out).
static NEXT_EPOCH: AtomicU64 = AtomicU64::new(1);

fn next_epoch() -> u64 {
    NEXT_EPOCH.fetch_add(1, Ordering::Relaxed)
}

/// Labels of every namespace, by namespace name.
pub type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

impl Snapshot {
    /// The labels of namespace `name`, if it is known.
    pub fn namespace_labels(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        self.namespaces.get(name)
    }

    /// Every known namespace with its labels.
    pub fn namespaces(&self) -> &NamespaceLabels {
        &self.namespaces
    }

    /// Replaces the namespaces this snapshot knows (shared, not copied).
    pub fn set_namespaces(&mut self, namespaces: Arc<NamespaceLabels>) {
        self.namespaces = namespaces;
    }

    /// A snapshot of `node_infos`, in that order. As upstream `NewSnapshot`, each image's
    /// `num_nodes` is recounted over the given nodes.
    pub fn new(mut node_infos: Vec<NodeInfo>) -> Self {
        let mut image_nodes: HashMap<String, usize> = HashMap::new();
        for info in &node_infos {
            for name in info.image_states.keys() {
                *image_nodes.entry(name.clone()).or_default() += 1;
            }
        }
        for info in &mut node_infos {
            for (name, state) in &mut info.image_states {
                state.num_nodes = image_nodes.get(name).copied().unwrap_or(0);
            }
        }
        let generation = node_infos.iter().map(|n| n.generation).max().unwrap_or(0);
        let mut snapshot = Snapshot {
            generation,
            ..Default::default()
        };
        snapshot.set_nodes(node_infos.into_iter().map(Arc::new).collect());
        snapshot
    }

    /// A snapshot of `nodes` with the `pods` whose `spec.nodeName` names one of them;
    /// other pods are ignored. Fails on an invalid quantity in a node or a pod.
    pub fn from_objects(nodes: Vec<Node>, pods: Vec<Pod>) -> Result<Self, QuantityError> {
        let mut infos = nodes
            .into_iter()
            .map(NodeInfo::new)
            .collect::<Result<Vec<_>, _>>()?;
        let index: HashMap<String, usize> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| (info.name().to_owned(), i))
            .collect();
        for pod in pods {
            let info = PodInfo::new(pod)?;
            let slot = info.node_name().and_then(|name| index.get(name)).copied();
            if let Some(i) = slot {
                infos[i].add_pod(Arc::new(info));
            }
        }
        Ok(Snapshot::new(infos))
    }

    /// All nodes, in a stable order (the order they were given or added to the cache).
    pub fn nodes(&self) -> &[Arc<NodeInfo>] {
        &self.node_infos
    }

    pub fn get(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index.get(name).map(|&i| &self.node_infos[i])
    }

    /// The index of node `name` in [`Snapshot::nodes`].
    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    pub fn len(&self) -> usize {
        self.node_infos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.node_infos.is_empty()
    }

    /// Nodes with at least one pod with (anti-)affinity (upstream
    /// `HavePodsWithAffinityList`).
    pub fn nodes_with_pods_with_affinity(&self) -> impl Iterator<Item = &Arc<NodeInfo>> {
        self.with_affinity.iter().map(|&i| &self.node_infos[i])
    }

    /// Nodes with at least one pod with required anti-affinity (upstream
    /// `HavePodsWithRequiredAntiAffinityList`).
    pub fn nodes_with_pods_with_required_anti_affinity(
        &self,
    ) -> impl Iterator<Item = &Arc<NodeInfo>> {
        self.with_required_anti_affinity
            .iter()
            .map(|&i| &self.node_infos[i])
    }

    /// Replaces the node list, rebuilding the name index. The first of two infos with the
    /// same name wins the lookup.
    pub(super) fn set_nodes(&mut self, node_infos: Vec<Arc<NodeInfo>>) {
        self.index.clear();
        for (i, info) in node_infos.iter().enumerate() {
            self.index.entry(info.name().to_owned()).or_insert(i);
        }
        self.with_affinity = (0..node_infos.len())
            .filter(|&i| !node_infos[i].pods_with_affinity.is_empty())
            .collect();
        self.with_required_anti_affinity = (0..node_infos.len())
            .filter(|&i| !node_infos[i].pods_with_required_anti_affinity.is_empty())
            .collect();
        self.node_infos = node_infos;
        self.replaced.clear();
        self.epoch = next_epoch();
    }

    /// Where the log of changed nodes stands now.
    pub fn cursor(&self) -> ChangeCursor {
        ChangeCursor {
            epoch: self.epoch,
            position: self.replaced.len(),
        }
    }

    /// The indices (into [`Snapshot::nodes`]) of the nodes replaced since `cursor`, a
    /// node possibly more than once; `None` when the node list was rebuilt since (or the
    /// log trimmed), and everything must be recomputed.
    pub fn changed_since(&self, cursor: ChangeCursor) -> Option<&[usize]> {
        (cursor.epoch == self.epoch && self.epoch != 0)
            .then(|| self.replaced.get(cursor.position..))
            .flatten()
    }

    /// Replaces the info of the node with `info`'s name, keeping its place; a name the
    /// snapshot does not list is ignored.
    pub(super) fn replace(&mut self, info: Arc<NodeInfo>) {
        if let Some(&i) = self.index.get(info.name()) {
            keep_listed(
                &mut self.with_affinity,
                i,
                !info.pods_with_affinity.is_empty(),
            );
            keep_listed(
                &mut self.with_required_anti_affinity,
                i,
                !info.pods_with_required_anti_affinity.is_empty(),
            );
            self.node_infos[i] = info;
            // Bounded: past as many entries as nodes, recomputing everything is as cheap.
            if self.replaced.len() >= self.node_infos.len().max(1024) {
                self.replaced.clear();
                self.epoch = next_epoch();
            }
            self.replaced.push(i);
        }
    }
}

/// Adds `i` to or removes it from the sorted `list`, so that it is listed iff `listed`.
fn keep_listed(list: &mut Vec<usize>, i: usize, listed: bool) {
    match (list.binary_search(&i), listed) {
        (Err(at), true) => list.insert(at, i),
        (Ok(at), false) => {
            list.remove(at);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{make_node, make_pod};

    /// A node holding `images` of 10 bytes each.
    fn node(name: &str, images: &[&str]) -> Node {
        images
            .iter()
            .fold(make_node().name(name).no_images(), |node, image| {
                node.image(&[image], 10)
            })
            .obj()
    }

    /// A pod with one container requesting `cpu`, bound to `node` when one is given.
    fn pod(name: &str, node: Option<&str>, cpu: &str) -> Pod {
        let pod = make_pod().name(name).req(&[("cpu", cpu)]);
        match node {
            Some(node) => pod.node(node).obj(),
            None => pod.obj(),
        }
    }

    #[test]
    fn from_objects_places_pods_on_their_nodes_in_order() {
        let snapshot = Snapshot::from_objects(
            vec![
                node("b", &["app:v1"]),
                node("a", &["app:v1", "db"]),
                node("c", &[]),
            ],
            vec![
                pod("p1", Some("a"), "1"),
                pod("p2", Some("a"), "500m"),
                pod("p3", Some("b"), "2"),
                pod("pending", None, "8"),
                pod("elsewhere", Some("gone"), "8"),
            ],
        )
        .expect("valid objects");

        let names: Vec<&str> = snapshot.nodes().iter().map(|n| n.name()).collect();
        assert_eq!(names, ["b", "a", "c"], "order as given");
        assert_eq!(snapshot.len(), 3);
        assert!(!snapshot.is_empty());

        let cases = [("a", 2, 1500), ("b", 1, 2000), ("c", 0, 0)];
        for (name, pods, milli_cpu) in cases {
            let info = snapshot.get(name).expect(name);
            assert_eq!(info.pods.len(), pods, "{name}: pods");
            assert_eq!(info.requested.milli_cpu, milli_cpu, "{name}: requested cpu");
        }
        assert!(snapshot.get("gone").is_none());

        let a = snapshot.get("a").expect("a");
        assert_eq!(a.image_states["app:v1"].num_nodes, 2);
        assert_eq!(a.image_states["db:latest"].num_nodes, 1);
    }

    #[test]
    fn from_objects_rejects_invalid_quantities() {
        let err = Snapshot::from_objects(vec![node("a", &[])], vec![pod("p", Some("a"), "x")])
            .expect_err("invalid cpu");
        assert_eq!(err.resource, "cpu");
        assert_eq!(err.value, "x");
    }

    #[test]
    fn empty_snapshot() {
        let snapshot = Snapshot::default();
        assert!(snapshot.is_empty());
        assert!(snapshot.nodes().is_empty());
        assert!(snapshot.get("a").is_none());
    }
}
