//! What the framework hands to plugin factories: access to the world outside the plugin
//! without Kubernetes I/O in the core. Adapters (`simulate`, the operator) provide the
//! implementations.

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;

use super::{PluginHealth, WaitingPods};
use crate::cluster::{PodGroups, Workloads};

/// Why a bind failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BindError {
    /// The pod no longer exists.
    #[error("pod {0} not found")]
    NotFound(String),
    /// The pod is already bound to another node.
    #[error("pod {pod} is already bound to node {node}")]
    AlreadyBound { pod: String, node: String },
    /// Any other failure (API error, timeout); the pod is retried with backoff.
    #[error("binding failed: {0}")]
    Other(String),
}

/// Writes a pod-to-node binding to wherever pods live (the API server, or the simulated
/// cluster).
#[async_trait]
pub trait Binder: Send + Sync {
    async fn bind(&self, pod: &Pod, node_name: &str) -> Result<(), BindError>;
}

/// Services available to plugins of one profile instance.
#[derive(Clone)]
pub struct Handle {
    /// Writes bindings; used by DefaultBinder.
    pub binder: Arc<dyn Binder>,
    /// Pods held at Permit; Permit plugins allow or reject them through it.
    pub waiting_pods: Arc<WaitingPods>,
    /// Worker threads for per-node Filter and Score.
    pub parallelism: usize,
    /// Selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets, for
    /// default spreading (PodTopologySpread).
    pub workloads: Arc<Workloads>,
    /// PodGroups, for gang scheduling (Coscheduling).
    pub pod_groups: Arc<PodGroups>,
    /// Where plugins report running in a fallback (a metrics source down); see
    /// [`PluginHealth`].
    pub health: Arc<PluginHealth>,
}

impl Handle {
    /// The shared worker pool of this instance's `parallelism`, for plugins that spread
    /// per-node work over threads (see [`parallel`](super::parallel)).
    pub fn pool(&self) -> Result<Arc<rayon::ThreadPool>, String> {
        super::parallel::pool(self.parallelism)
    }
}
