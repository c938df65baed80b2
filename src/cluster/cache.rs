//! The scheduler cache: NodeInfo per node, fed by pod and node events and by assumed pods.

/// Why a cache operation was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CacheError {
    #[error("pod {0} is not in the cache")]
    PodNotFound(String),
    #[error("pod {0} is already in the cache")]
    PodExists(String),
    #[error("pod {0} has no node assigned")]
    NoNode(String),
}

/// Node and pod state of the cluster, including pods assumed on a node before their
/// binding is confirmed.
#[derive(Debug, Default)]
pub struct Cache {}
