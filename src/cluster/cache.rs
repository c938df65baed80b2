//! The scheduler cache: NodeInfo per node, fed by pod and node events and by assumed pods.
//!
//! Follows upstream `internal/cache`: a pod is *assumed* on a node as soon as the
//! scheduling cycle picks it, so the next cycle already sees its requests; the binding
//! cycle then either confirms it (the pod's add event arrives), forgets it (binding
//! failed), or — once binding finished — lets it expire after a TTL if the add event never
//! comes. Pods may arrive before their node; they are kept on a node-less [`NodeInfo`]
//! that the snapshot skips.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};

use super::snapshot::NamespaceLabels;
use super::{NodeInfo, PodInfo, QuantityError, Snapshot, pod_key};

/// Why a cache operation was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CacheError {
    #[error("pod {0} is not in the cache")]
    PodNotFound(String),
    #[error("pod {0} is already in the cache")]
    PodExists(String),
    #[error("pod {0} has no node assigned")]
    NoNode(String),
    #[error("pod {0} is not assumed, so it cannot be forgotten")]
    NotAssumed(String),
    #[error("node has no metadata.name")]
    NodeWithoutName,
    #[error(transparent)]
    Quantity(#[from] QuantityError),
}

/// Where a pod is and whether its binding is confirmed.
#[derive(Debug)]
struct PodState {
    pod: Arc<PodInfo>,
    node: String,
    assumed: bool,
    /// Set by [`Cache::finish_binding`] when a TTL is configured: the moment after which
    /// an unconfirmed assumed pod is dropped.
    deadline: Option<Instant>,
}

/// A pod [`Cache::set_aside`] took out, to be [`Cache::put_back`].
#[derive(Debug)]
pub struct SetAside(PodState);

/// The nodes that have an image, and its size as first reported.
#[derive(Debug)]
struct ImageState {
    size: i64,
    nodes: BTreeSet<String>,
}

/// Node and pod state of the cluster, including pods assumed on a node before their
/// binding is confirmed.
#[derive(Debug)]
pub struct Cache {
    /// How long an assumed pod whose binding finished may wait for its add event.
    /// `None`: forever.
    assumed_pod_ttl: Option<Duration>,
    /// By node name; includes node-less infos holding pods of unknown nodes.
    nodes: HashMap<String, NodeInfo>,
    /// Names of the nodes with a `Node` object, sorted. Snapshots list nodes in this
    /// order, so the rotation of filtering and the tie-break among equal scores do not
    /// depend on the order nodes were seen: a watch's list (by name) and a simulator
    /// input (document order) give the same placements for the same seed.
    node_order: Vec<String>,
    pods: HashMap<String, PodState>,
    /// By normalized image name (upstream `imageStates`).
    images: HashMap<String, ImageState>,
    /// The images each node is counted for in `images`.
    node_images: HashMap<String, BTreeSet<String>>,
    /// Namespace labels; replaced (copy-on-write) when a namespace changes, so snapshots
    /// share it until then.
    namespaces: Arc<NamespaceLabels>,
    /// Node infos by the generation of their last change (upstream keeps its node infos
    /// in a list ordered by generation for the same purpose): a snapshot at generation
    /// `g` needs exactly the entries after `g`, so updating it costs the changed nodes,
    /// not the cluster.
    changed: BTreeMap<u64, String>,
    /// Each node info's key in `changed`.
    changed_at: HashMap<String, u64>,
    /// This cache among the process's caches, and the version of its node layout (the
    /// set and order of nodes), bumped when `node_order` changes. A snapshot of another
    /// cache or layout is rebuilt in full.
    id: u64,
    layout: u64,
}

/// Hands every cache its own id, so a snapshot never mistakes another cache's layout
/// for the one it was built from.
static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(1);

impl Cache {
    /// A cache whose assumed pods expire `assumed_pod_ttl` after their binding finished
    /// (`None`: never).
    pub fn new(assumed_pod_ttl: Option<Duration>) -> Self {
        Cache {
            assumed_pod_ttl,
            nodes: HashMap::new(),
            node_order: Vec::new(),
            pods: HashMap::new(),
            images: HashMap::new(),
            node_images: HashMap::new(),
            namespaces: Arc::default(),
            changed: BTreeMap::new(),
            changed_at: HashMap::new(),
            id: NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed),
            layout: 0,
        }
    }

    /// Adds a node, or updates it when it is already known (upstream `AddNode`).
    pub fn add_node(&mut self, node: Node) -> Result<(), CacheError> {
        self.upsert_node(node)
    }

    /// Replaces a node's object; an unknown node is added (upstream `UpdateNode`).
    pub fn update_node(&mut self, node: Node) -> Result<(), CacheError> {
        self.upsert_node(node)
    }

    /// Removes a node. Pods still on it are kept on a node-less info until their own
    /// delete events arrive; the snapshot no longer lists the node.
    pub fn remove_node(&mut self, name: &str) {
        let Some(info) = self.nodes.get_mut(name) else {
            tracing::warn!(node = name, "removing a node that is not in the cache");
            return;
        };
        info.remove_node();
        if info.pods.is_empty() {
            self.nodes.remove(name);
        }
        self.node_order.retain(|n| n != name);
        self.layout += 1;
        self.sync_images(name);
        self.note_change(name);
    }

    /// Adds an assigned pod (its add event). A pod assumed by this scheduler is confirmed,
    /// moving it if it was bound to another node than assumed.
    pub fn add_pod(&mut self, pod: Pod) -> Result<(), CacheError> {
        self.add_pod_info(Arc::new(PodInfo::new(pod)?))
    }

    /// [`Cache::add_pod`] for a pod whose info the caller already built.
    pub fn add_pod_info(&mut self, info: Arc<PodInfo>) -> Result<(), CacheError> {
        let key = info.key().to_owned();
        let node = info
            .node_name()
            .ok_or_else(|| CacheError::NoNode(key.clone()))?
            .to_owned();
        match self.pods.get(&key) {
            Some(state) if state.assumed => {
                if state.node != node {
                    tracing::info!(pod = %key, assumed = %state.node, bound = %node,
                        "pod was added to a different node than it was assumed on");
                }
                self.detach(&key);
            }
            Some(_) => return Err(CacheError::PodExists(key)),
            None => {}
        }
        self.attach(info, node, false);
        Ok(())
    }

    /// Applies an update of an assigned pod. Updates of unknown or assumed pods and
    /// invalid new pods are ignored with a warning, as upstream reports them.
    pub fn update_pod(&mut self, old: &Pod, new: Pod) {
        match PodInfo::new(new) {
            Ok(info) => self.update_pod_info(old, Arc::new(info)),
            Err(err) => {
                tracing::warn!(pod = %pod_key(old), error = %err, "ignoring invalid pod update");
            }
        }
    }

    /// [`Cache::update_pod`] for a pod whose info the caller already built.
    pub fn update_pod_info(&mut self, old: &Pod, info: Arc<PodInfo>) {
        let key = pod_key(old);
        match self.pods.get(&key) {
            None => {
                tracing::warn!(pod = %key, "updating a pod that is not in the cache");
                return;
            }
            Some(state) if state.assumed => {
                tracing::warn!(pod = %key, "an assumed pod should not be updated");
                return;
            }
            Some(_) => {}
        }
        let Some(node) = info.node_name().map(str::to_owned) else {
            tracing::warn!(pod = %key, "ignoring pod update without a node");
            return;
        };
        if let Some(old_state) = self.detach(&key)
            && old_state.node != node
        {
            tracing::warn!(pod = %key, from = %old_state.node, to = %node,
                "pod updated on a different node than it was added to");
        }
        self.attach(info, node, false);
    }

    /// Removes a pod (its delete event), whether assumed or confirmed.
    pub fn remove_pod(&mut self, pod: &Pod) {
        let key = pod_key(pod);
        if self.detach(&key).is_none() {
            tracing::warn!(pod = %key, "removing a pod that is not in the cache");
        }
    }

    /// Assumes `pod` runs on `node_name` from now on: it counts on that node at once, so
    /// the next scheduling cycle sees it.
    pub fn assume_pod(&mut self, pod: &PodInfo, node_name: &str) -> Result<(), CacheError> {
        if self.pods.contains_key(pod.key()) {
            return Err(CacheError::PodExists(pod.key().to_owned()));
        }
        let assumed = Arc::new(pod.with_node_name(node_name));
        self.attach(assumed, node_name.to_owned(), true);
        Ok(())
    }

    /// The binding of an assumed pod finished: from `now`, it expires after the TTL unless
    /// its add event confirms it first.
    pub fn finish_binding(&mut self, key: &str, now: Instant) {
        let ttl = self.assumed_pod_ttl;
        if let Some(state) = self.pods.get_mut(key).filter(|s| s.assumed) {
            state.deadline = ttl.map(|ttl| now + ttl);
        }
    }

    /// Undoes [`Cache::assume_pod`] (binding failed or the pod was rejected after assume).
    pub fn forget_pod(&mut self, key: &str) -> Result<(), CacheError> {
        match self.pods.get(key) {
            None => Err(CacheError::PodNotFound(key.to_owned())),
            Some(state) if !state.assumed => Err(CacheError::NotAssumed(key.to_owned())),
            Some(_) => {
                self.detach(key);
                Ok(())
            }
        }
    }

    /// Takes pod `key` out for a moment (a group preemption trying the cluster without
    /// its potential victims); [`Cache::put_back`] restores it as it was, assumed or not.
    pub fn set_aside(&mut self, key: &str) -> Option<SetAside> {
        self.detach(key).map(SetAside)
    }

    /// Restores a pod [`Cache::set_aside`] took out.
    pub fn put_back(&mut self, aside: SetAside) {
        let PodState {
            pod,
            node,
            assumed,
            deadline,
        } = aside.0;
        let key = pod.key().to_owned();
        self.attach(pod, node, assumed);
        if let Some(state) = self.pods.get_mut(&key) {
            state.deadline = deadline;
        }
    }

    pub fn is_assumed(&self, key: &str) -> bool {
        self.pods.get(key).is_some_and(|s| s.assumed)
    }

    /// The pod as the cache holds it (for an assumed pod, with its assumed node).
    pub fn get_pod(&self, key: &str) -> Option<Arc<PodInfo>> {
        self.pods.get(key).map(|s| s.pod.clone())
    }

    /// The cache's info of node `name` (also a node-less one holding early pods).
    pub fn node_info(&self, name: &str) -> Option<&NodeInfo> {
        self.nodes.get(name)
    }

    /// Drops assumed pods whose binding finished more than the TTL before `now` without
    /// their add event arriving. Returns their keys.
    pub fn cleanup_assumed_pods(&mut self, now: Instant) -> Vec<String> {
        let expired: Vec<String> = self
            .pods
            .iter()
            .filter(|(_, s)| s.assumed && s.deadline.is_some_and(|d| now > d))
            .map(|(key, _)| key.clone())
            .collect();
        for key in &expired {
            tracing::info!(pod = %key, "assumed pod expired");
            self.detach(key);
        }
        expired
    }

    /// The number of nodes (with a `Node` object) in the cache.
    pub fn node_count(&self) -> usize {
        self.node_order.len()
    }

    /// The number of pods in the cache, assumed ones included.
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Brings `snapshot` up to date: node infos whose generation differs from the one in
    /// the snapshot are cloned anew, unchanged ones keep their `Arc`; removed nodes leave
    /// and added nodes join at the end, so the order stays the order of addition.
    /// Adds or updates a namespace (its labels feed namespace selectors).
    pub fn add_namespace(&mut self, namespace: &Namespace) {
        let Some(name) = namespace.metadata.name.clone() else {
            return;
        };
        let labels = namespace.metadata.labels.clone().unwrap_or_default();
        if self.namespaces.get(&name) != Some(&labels) {
            Arc::make_mut(&mut self.namespaces).insert(name, labels);
        }
    }

    pub fn remove_namespace(&mut self, name: &str) {
        if self.namespaces.contains_key(name) {
            Arc::make_mut(&mut self.namespaces).remove(name);
        }
    }

    /// Brings `snapshot` up to date. A snapshot of this cache's current node layout gets
    /// the infos changed since its generation, cloned anew in place; any other snapshot
    /// is rebuilt in node order, keeping the `Arc` of every info whose generation did not
    /// change.
    pub fn update_snapshot(&self, snapshot: &mut Snapshot) {
        snapshot.set_namespaces(self.namespaces.clone());
        let layout = Some((self.id, self.layout));
        if snapshot.layout == layout {
            for (_, name) in self.changed.range(snapshot.generation.saturating_add(1)..) {
                if let Some(info) = self.nodes.get(name).filter(|i| i.node().is_some()) {
                    snapshot.replace(Arc::new(info.clone()));
                }
            }
        } else {
            let mut infos = Vec::with_capacity(self.node_order.len());
            for name in &self.node_order {
                let Some(info) = self.nodes.get(name) else {
                    continue;
                };
                let unchanged = snapshot
                    .get(name)
                    .filter(|shared| shared.generation == info.generation)
                    .cloned();
                infos.push(unchanged.unwrap_or_else(|| Arc::new(info.clone())));
            }
            snapshot.set_nodes(infos);
            snapshot.layout = layout;
        }
        snapshot.generation = self.generation();
    }

    /// The generation of the latest change to any node info.
    fn generation(&self) -> u64 {
        self.changed.last_key_value().map_or(0, |(g, _)| *g)
    }

    /// Records that node info `name` changed (or was dropped), under its generation.
    fn note_change(&mut self, name: &str) {
        let generation = self.nodes.get(name).map(|info| info.generation);
        let previous = match generation {
            Some(g) => self.changed_at.insert(name.to_owned(), g),
            None => self.changed_at.remove(name),
        };
        if let Some(previous) = previous {
            self.changed.remove(&previous);
        }
        if let Some(g) = generation {
            self.changed.insert(g, name.to_owned());
        }
    }

    fn upsert_node(&mut self, node: Node) -> Result<(), CacheError> {
        let name = node
            .metadata
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or(CacheError::NodeWithoutName)?;
        match self.nodes.get_mut(&name) {
            Some(info) => info.set_node(node)?,
            None => {
                self.nodes.insert(name.clone(), NodeInfo::new(node)?);
            }
        }
        if let Err(position) = self.node_order.binary_search(&name) {
            self.node_order.insert(position, name.clone());
            self.layout += 1;
        }
        self.sync_images(&name);
        self.note_change(&name);
        Ok(())
    }

    /// Adds `pod` to `node`'s info, creating a node-less one for an unknown node.
    fn attach(&mut self, pod: Arc<PodInfo>, node: String, assumed: bool) {
        self.nodes
            .entry(node.clone())
            .or_default()
            .add_pod(pod.clone());
        self.note_change(&node);
        let key = pod.key().to_owned();
        let state = PodState {
            pod,
            node,
            assumed,
            deadline: None,
        };
        self.pods.insert(key, state);
    }

    /// Removes a pod from its node's info and from the pod table; a node-less info left
    /// without pods is dropped.
    fn detach(&mut self, key: &str) -> Option<PodState> {
        let state = self.pods.remove(key)?;
        if let Some(info) = self.nodes.get_mut(&state.node) {
            info.remove_pod(key);
            if info.node().is_none() && info.pods.is_empty() {
                self.nodes.remove(&state.node);
            }
            self.note_change(&state.node);
        }
        Some(state)
    }

    /// Re-registers `name`'s images (upstream `removeNodeImageStates` +
    /// `addNodeImageStates`) and refreshes `num_nodes` wherever an image's node count
    /// changed, bumping those nodes' generations so snapshots pick the change up.
    fn sync_images(&mut self, name: &str) {
        let current: BTreeSet<String> = self
            .nodes
            .get(name)
            .filter(|info| info.node().is_some())
            .map(|info| info.image_states.keys().cloned().collect())
            .unwrap_or_default();
        let previous = self.node_images.remove(name).unwrap_or_default();

        let mut changed = Vec::new();
        for image in previous.difference(&current) {
            if let Some(state) = self.images.get_mut(image) {
                state.nodes.remove(name);
                if state.nodes.is_empty() {
                    self.images.remove(image);
                }
            }
            changed.push(image.clone());
        }
        for image in current.difference(&previous) {
            let size = self
                .nodes
                .get(name)
                .and_then(|info| info.image_states.get(image))
                .map_or(0, |s| s.size);
            self.images
                .entry(image.clone())
                .or_insert_with(|| ImageState {
                    size,
                    nodes: BTreeSet::new(),
                })
                .nodes
                .insert(name.to_owned());
            changed.push(image.clone());
        }

        // Other nodes sharing a changed image see a new count.
        let mut touched = Vec::new();
        for image in &changed {
            let Some(state) = self.images.get(image) else {
                continue;
            };
            for other in state.nodes.iter().filter(|n| *n != name) {
                if let Some(info) = self.nodes.get_mut(other) {
                    if let Some(summary) = info.image_states.get_mut(image) {
                        summary.num_nodes = state.nodes.len();
                    }
                    info.touch();
                    touched.push(other.clone());
                }
            }
        }
        for other in &touched {
            self.note_change(other);
        }
        // This node's summaries share the cache-wide size and count.
        if let Some(info) = self.nodes.get_mut(name) {
            for (image, summary) in info.image_states.iter_mut() {
                if let Some(state) = self.images.get(image) {
                    summary.size = state.size;
                    summary.num_nodes = state.nodes.len();
                }
            }
        }
        if !current.is_empty() {
            self.node_images.insert(name.to_owned(), current);
        }
    }
}

#[cfg(test)]
mod tests;
