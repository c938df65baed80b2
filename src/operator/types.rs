//! Messages between the operator's tasks. The scheduling loop owns the scheduler core;
//! everything else talks to it through [`LoopMessage`]s and hears back through
//! [`SchedulingReport`]s and the shared [`OperatorState`].

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use tokio::sync::watch;

use crate::framework::{ActionType, EventResource, Framework};
use crate::scheduler::Outcome;

/// A change of cluster state seen by a watch.
#[derive(Debug, Clone)]
pub enum ClusterChange {
    /// A node was added or changed.
    NodeApplied(Node),
    NodeDeleted(Node),
    /// A pod was added or changed.
    PodApplied(Pod),
    PodDeleted(Pod),
    /// berth's or scheduler-plugins' PodGroup `namespace/name` was added, changed or
    /// deleted; `group` is the one Coscheduling now reads under that name (berth's own
    /// first), `None` when there is none. Pods its plugins rejected may now fit.
    PodGroupChanged {
        namespace: String,
        name: String,
        group: Option<Box<crate::api::PodGroup>>,
    },
    /// A Workload API PodGroup (`scheduling.k8s.io/v1beta1`) was added or changed; the
    /// scheduler groups its members by it.
    SchedulingGroupApplied(k8s_openapi::api::scheduling::v1beta1::PodGroup),
    SchedulingGroupDeleted(k8s_openapi::api::scheduling::v1beta1::PodGroup),
    /// An object a plugin reads through a lister was added, updated or deleted: a storage
    /// object (PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver,
    /// CSIStorageCapacity, VolumeAttachment; [`OperatorState::volumes`]) or a device object
    /// (ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate, DeviceTaintRule;
    /// [`OperatorState::device_resources`]). The watch has already applied it to the
    /// lister. Pods the plugins rejected may now fit.
    ListerChanged {
        resource: EventResource,
        action: ActionType,
    },
    /// A namespace was added or changed (its labels feed namespace selectors).
    NamespaceApplied(Namespace),
    NamespaceDeleted(Namespace),
    /// A full list of a resource kind (`"nodes"`, `"pods"`) was delivered, at start-up or
    /// after the watch had to relist (410 Gone): objects of that kind whose key is not in
    /// `keys` are gone. The first one for a kind means its cache is synced. The storage
    /// and PodDisruptionBudget watches forget what a relist no longer has themselves;
    /// they send their first list only, with no keys (see [`super::storage`] and
    /// [`super::watches::spawn_disruption_budgets`]).
    Listed {
        kind: &'static str,
        keys: std::collections::HashSet<String>,
    },
}

/// What the profile controller asks of the scheduling loop.
#[derive(Clone)]
pub enum ProfileCommand {
    /// Start serving `scheduler_name` with `framework`, or hot-swap the framework of the
    /// instance already serving it (its queue survives).
    Upsert {
        scheduler_name: String,
        framework: Arc<Framework>,
    },
    /// Stop serving `scheduler_name`; its pending pods stay pending.
    Remove { scheduler_name: String },
}

impl std::fmt::Debug for ProfileCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProfileCommand::Upsert { scheduler_name, .. } => {
                write!(f, "Upsert({scheduler_name})")
            }
            ProfileCommand::Remove { scheduler_name } => write!(f, "Remove({scheduler_name})"),
        }
    }
}

/// Input of the scheduling loop.
///
/// Cluster changes carry whole objects and dominate the traffic; boxing them would add an
/// allocation per watch event for no gain, so the size difference is accepted.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum LoopMessage {
    Cluster(ClusterChange),
    Profile(ProfileCommand),
}

/// The end of one scheduling attempt, for events and pod conditions.
#[derive(Debug, Clone)]
pub struct SchedulingReport {
    pub pod: Arc<Pod>,
    pub scheduler_name: String,
    pub outcome: Outcome,
    /// The preemptor's nomination PostFilter decided on a failed attempt, written to
    /// `status.nominatedNodeName` with the failure: `Some(node)` nominates, `Some("")`
    /// clears, `None` leaves what the pod has (upstream's Override and Noop modes).
    pub nominating: Option<String>,
}

/// State shared by the operator's tasks.
#[derive(Clone)]
pub struct OperatorState {
    /// Whether this replica holds the lease (always true without `--leader-elect`).
    pub leader: watch::Receiver<bool>,
    /// The kinds whose cache has not completed its first list yet, by plural (`nodes`,
    /// `persistentvolumes`, ...); empty once every cache is synced.
    pub unlisted: watch::Receiver<Vec<&'static str>>,
    /// The scheduler names the scheduling loop currently serves, with the profile
    /// (metadata.name) behind each.
    pub serving: Arc<RwLock<BTreeMap<String, String>>>,
    /// Workload selectors (Services, ReplicaSets, ...) fed by the watches, read by
    /// PodTopologySpread's default constraints.
    pub workloads: Arc<crate::cluster::Workloads>,
    /// PodGroups fed by the watch, read by Coscheduling.
    pub pod_groups: Arc<crate::cluster::PodGroups>,
    /// Storage objects for the volume plugins, fed by the storage watches.
    pub volumes: Arc<crate::cluster::Volumes>,
    /// PodDisruptionBudgets fed by the watch, read by DefaultPreemption.
    pub disruption_budgets: Arc<crate::cluster::DisruptionBudgets>,
    /// The resource.k8s.io objects for DynamicResources, fed by the device watches
    /// ([`super::devices`]) where the cluster serves them.
    pub device_resources: Arc<crate::cluster::DeviceResources>,
}

impl OperatorState {
    pub fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    pub fn caches_synced(&self) -> bool {
        self.unlisted.borrow().is_empty()
    }

    /// The kinds still waiting for their first list (empty when synced).
    pub fn unlisted_kinds(&self) -> Vec<&'static str> {
        self.unlisted.borrow().clone()
    }
}
