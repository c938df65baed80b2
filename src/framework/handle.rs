//! What the framework hands to plugin factories: access to the world outside the plugin
//! without Kubernetes I/O in the core. Adapters (`simulate`, the operator) provide the
//! implementations.

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};

use super::claim_writer::{AcceptClaims, ClaimWriter};
use super::clock::{Clock, RuntimeClock};
use super::parallel::Parallelizer;
use super::{Nominator, PluginHealth, WaitingPods};
use crate::cluster::{
    DeviceResources, DisruptionBudgets, LegacyWorkloads, PodGroupStates, PodGroups, Volumes,
    Workloads,
};

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

/// Writes the PersistentVolume and PersistentVolumeClaim updates of a volume binding
/// (VolumeBinding's PreBind) to wherever they live: the API server, where the PV
/// controller and the external provisioners finish the binding, or the simulated cluster,
/// which plays those controllers itself. Each call is a whole-object update (PUT) that
/// fails on a resourceVersion conflict, and returns the object as stored.
#[async_trait]
pub trait VolumeWriter: Send + Sync {
    /// Updates a PersistentVolume (a static binding sets its `claimRef`).
    async fn update_volume(&self, volume: &PersistentVolume) -> Result<PersistentVolume, String>;
    /// Updates a PersistentVolumeClaim (a dynamic provisioning sets its selected node).
    async fn update_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, String>;
}

/// Services available to plugins of one profile instance.
#[derive(Clone)]
pub struct Handle {
    /// Writes bindings; used by DefaultBinder.
    pub binder: Arc<dyn Binder>,
    /// Writes volume bindings; used by VolumeBinding.
    pub volume_writer: Arc<dyn VolumeWriter>,
    /// Pods held at Permit; Permit plugins allow or reject them through it.
    pub waiting_pods: Arc<WaitingPods>,
    /// Pods nominated to nodes (by preemption), which Filter accounts for; one per
    /// scheduler, shared by its profiles.
    pub nominator: Arc<Nominator>,
    /// The scheduler's worker threads, for per-node Filter and Score and for plugins that
    /// spread their own per-node work (see [`parallel`](super::parallel)).
    pub parallelizer: Arc<Parallelizer>,
    /// The scheduler's time (see [`clock`](super::clock)).
    pub clock: Arc<dyn Clock>,
    /// Selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets, for
    /// default spreading (PodTopologySpread).
    pub workloads: Arc<Workloads>,
    /// PodGroups, for gang scheduling (Coscheduling).
    pub pod_groups: Arc<PodGroups>,
    /// The Workload API's pod groups and their members, for GangScheduling; one per
    /// scheduler, kept current by its core.
    pub pod_group_states: Arc<PodGroupStates>,
    /// Kubernetes 1.35's Workloads and gangs (`spec.workloadRef`), which GangScheduling
    /// reads on a 1.35 API server.
    pub legacy_workloads: Arc<LegacyWorkloads>,
    /// PodDisruptionBudgets, for preemption (DefaultPreemption).
    pub disruption_budgets: Arc<DisruptionBudgets>,
    /// PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes and
    /// CSIDrivers, for the volume plugins.
    pub volumes: Arc<Volumes>,
    /// ResourceSlices, DeviceClasses, ResourceClaims and their templates, for
    /// DynamicResources and NodeResourcesFit (extended resources backed by devices).
    pub device_resources: Arc<DeviceResources>,
    /// Writes ResourceClaims; used by DynamicResources.
    pub claim_writer: Arc<dyn ClaimWriter>,
    /// Where plugins report running in a fallback (a metrics source down); see
    /// [`PluginHealth`].
    pub health: Arc<PluginHealth>,
}

impl Handle {
    /// A handle with every service at its default, to be replaced where the caller has
    /// its own: a binder that accepts every binding, no worker threads, the runtime's
    /// clock, no workloads, PodGroups, storage or device objects or nominations, volume and
    /// claim writers that store nothing and answer with what they were given, a health record nobody listens to.
    pub fn builder() -> HandleBuilder {
        HandleBuilder::default()
    }
}

/// Builds a [`Handle`]; see [`Handle::builder`].
#[derive(Default)]
pub struct HandleBuilder {
    binder: Option<Arc<dyn Binder>>,
    volume_writer: Option<Arc<dyn VolumeWriter>>,
    nominator: Option<Arc<Nominator>>,
    parallelizer: Option<Arc<Parallelizer>>,
    clock: Option<Arc<dyn Clock>>,
    workloads: Option<Arc<Workloads>>,
    pod_groups: Option<Arc<PodGroups>>,
    pod_group_states: Option<Arc<PodGroupStates>>,
    legacy_workloads: Option<Arc<LegacyWorkloads>>,
    disruption_budgets: Option<Arc<DisruptionBudgets>>,
    volumes: Option<Arc<Volumes>>,
    device_resources: Option<Arc<DeviceResources>>,
    claim_writer: Option<Arc<dyn ClaimWriter>>,
    health: Option<Arc<PluginHealth>>,
}

impl HandleBuilder {
    pub fn binder(mut self, binder: Arc<dyn Binder>) -> Self {
        self.binder = Some(binder);
        self
    }

    pub fn volume_writer(mut self, writer: Arc<dyn VolumeWriter>) -> Self {
        self.volume_writer = Some(writer);
        self
    }

    pub fn nominator(mut self, nominator: Arc<Nominator>) -> Self {
        self.nominator = Some(nominator);
        self
    }

    pub fn parallelizer(mut self, parallelizer: Arc<Parallelizer>) -> Self {
        self.parallelizer = Some(parallelizer);
        self
    }

    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    pub fn workloads(mut self, workloads: Arc<Workloads>) -> Self {
        self.workloads = Some(workloads);
        self
    }

    pub fn pod_groups(mut self, pod_groups: Arc<PodGroups>) -> Self {
        self.pod_groups = Some(pod_groups);
        self
    }

    pub fn pod_group_states(mut self, states: Arc<PodGroupStates>) -> Self {
        self.pod_group_states = Some(states);
        self
    }

    pub fn legacy_workloads(mut self, workloads: Arc<LegacyWorkloads>) -> Self {
        self.legacy_workloads = Some(workloads);
        self
    }

    pub fn disruption_budgets(mut self, budgets: Arc<DisruptionBudgets>) -> Self {
        self.disruption_budgets = Some(budgets);
        self
    }

    pub fn volumes(mut self, volumes: Arc<Volumes>) -> Self {
        self.volumes = Some(volumes);
        self
    }

    pub fn device_resources(mut self, resources: Arc<DeviceResources>) -> Self {
        self.device_resources = Some(resources);
        self
    }

    pub fn claim_writer(mut self, writer: Arc<dyn ClaimWriter>) -> Self {
        self.claim_writer = Some(writer);
        self
    }

    pub fn health(mut self, health: Arc<PluginHealth>) -> Self {
        self.health = Some(health);
        self
    }

    /// The handle; its Permit waits read the same clock as its plugins.
    pub fn build(self) -> Handle {
        let clock = self.clock.unwrap_or_else(RuntimeClock::shared);
        Handle {
            binder: self.binder.unwrap_or_else(|| Arc::new(AcceptAll)),
            volume_writer: self.volume_writer.unwrap_or_else(|| Arc::new(AcceptAll)),
            waiting_pods: Arc::new(WaitingPods::with_clock(clock.clone())),
            nominator: self.nominator.unwrap_or_default(),
            parallelizer: self.parallelizer.unwrap_or_default(),
            clock,
            workloads: self.workloads.unwrap_or_default(),
            pod_groups: self.pod_groups.unwrap_or_default(),
            pod_group_states: self.pod_group_states.unwrap_or_default(),
            legacy_workloads: self.legacy_workloads.unwrap_or_default(),
            disruption_budgets: self.disruption_budgets.unwrap_or_default(),
            volumes: self.volumes.unwrap_or_default(),
            device_resources: self.device_resources.unwrap_or_default(),
            claim_writer: self
                .claim_writer
                .unwrap_or_else(|| Arc::new(AcceptClaims::default())),
            health: self.health.unwrap_or_default(),
        }
    }
}

/// The default binder of [`Handle::builder`]: every binding succeeds and nothing is
/// written (a framework run without a cluster behind it).
struct AcceptAll;

#[async_trait]
impl Binder for AcceptAll {
    async fn bind(&self, _pod: &Pod, _node_name: &str) -> Result<(), BindError> {
        Ok(())
    }
}

#[async_trait]
impl VolumeWriter for AcceptAll {
    async fn update_volume(&self, volume: &PersistentVolume) -> Result<PersistentVolume, String> {
        Ok(volume.clone())
    }

    async fn update_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, String> {
        Ok(claim.clone())
    }
}

/// The volume writer of a scheduler with no storage behind it (the benchmark's generated
/// cluster): every write fails, naming why.
pub struct NoVolumeWriter;

const NO_VOLUME_WRITER: &str = "this scheduler has no storage API to write volume bindings to";

#[async_trait]
impl VolumeWriter for NoVolumeWriter {
    async fn update_volume(&self, _: &PersistentVolume) -> Result<PersistentVolume, String> {
        Err(NO_VOLUME_WRITER.into())
    }

    async fn update_claim(
        &self,
        _: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, String> {
        Err(NO_VOLUME_WRITER.into())
    }
}
