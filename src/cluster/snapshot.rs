//! The immutable view of the cluster that one scheduling cycle reads.

use std::collections::HashMap;
use std::sync::Arc;

use super::NodeInfo;

/// Node infos in a stable order, shared (`Arc`) with the cache so taking a snapshot
/// re-clones only the nodes that changed since the previous one.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    node_infos: Vec<Arc<NodeInfo>>,
    index: HashMap<String, usize>,
    /// The cache generation this snapshot reflects.
    pub generation: u64,
}
