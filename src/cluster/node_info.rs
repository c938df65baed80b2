//! Per-node aggregates, maintained incrementally as pods are added and removed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;

use super::{PodInfo, QuantityError, Resource};

/// Host ports in use on a node: IP -> set of (protocol, port). `0.0.0.0` conflicts with
/// every IP, as upstream's `HostPortInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPortInfo {
    ports: HashMap<String, HashSet<(String, i32)>>,
}

/// The size of an image and on how many nodes it is present (for ImageLocality).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageStateSummary {
    pub size: i64,
    pub num_nodes: usize,
}

/// A node and the pods on it, with aggregates the plugins need.
#[derive(Debug, Clone, Default)]
pub struct NodeInfo {
    node: Option<Arc<Node>>,
    pub pods: Vec<Arc<PodInfo>>,
    /// Pods with any (anti-)affinity, for InterPodAffinity.
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    /// Pods with required anti-affinity, for InterPodAffinity.
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    pub used_ports: HostPortInfo,
    /// Sum of the pods' requests.
    pub requested: Resource,
    /// Sum of the pods' requests with the non-zero CPU/memory defaults.
    pub non_zero_requested: Resource,
    /// `status.allocatable` of the node.
    pub allocatable: Resource,
    /// Images on the node, by every name they are known by (normalized).
    pub image_states: BTreeMap<String, ImageStateSummary>,
    /// Bumped on every change; the cache uses it to re-clone only changed nodes into a
    /// snapshot.
    pub generation: u64,
}
