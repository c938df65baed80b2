//! A pod plus what the scheduler computes once per pod rather than once per node.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::{QuantityError, Resource};

/// A pod and its precomputed requests.
#[derive(Debug, Clone)]
pub struct PodInfo {
    pub pod: Arc<Pod>,
    key: String,
    /// Requests as upstream's `PodRequests`: max(sum of app containers + restartable init
    /// containers, any init container), plus pod overhead.
    pub requests: Resource,
    /// The same with 100m CPU / 200Mi memory assumed for each container that requests
    /// none (upstream `NonMissingContainerRequests`), used for scoring.
    pub non_zero_requests: Resource,
}

impl PodInfo {
    pub fn new(pod: Pod) -> Result<Self, QuantityError> {
        todo!("cluster helper")
    }

    /// The pod's identity in the cache and queue: its UID, or `namespace/name` when it
    /// has none (pods read from YAML).
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn name(&self) -> &str {
        todo!("cluster helper")
    }

    pub fn namespace(&self) -> &str {
        todo!("cluster helper")
    }

    /// `spec.priority`, 0 when unset.
    pub fn priority(&self) -> i32 {
        todo!("cluster helper")
    }

    pub fn node_name(&self) -> Option<&str> {
        todo!("cluster helper")
    }

    pub fn scheduler_name(&self) -> &str {
        todo!("cluster helper")
    }
}

/// The cache/queue key of a pod: its UID, or `namespace/name` when it has none.
pub fn pod_key(pod: &Pod) -> String {
    todo!("cluster helper")
}
