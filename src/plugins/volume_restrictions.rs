//! VolumeRestrictions: volumes that cannot be shared (upstream `volumerestrictions`).
//!
//! Two rules. An in-tree disk (GCE PD, AWS EBS, RBD, iSCSI) that a pod on the node already
//! mounts conflicts with the pod's, unless both mount it read-only (EBS: always), so the
//! node is Unschedulable there. A PersistentVolumeClaim with the `ReadWriteOncePod`
//! access mode that some pod already placed anywhere in the cluster uses makes every node
//! Unschedulable (preemption of that pod is what can help, hence not Unresolvable).
//! PreFilter also rejects a pod whose claim does not exist, before any other volume
//! plugin does: its message is the one a user sees for a missing claim.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Pod, Volume};

use crate::cluster::{NodeInfo, PodInfo, Snapshot, Volumes};
use crate::framework::{
    ActionType, ClusterEvent, Coupling, CycleState, EventResource, FilterPlugin, Handle, NoArgs,
    PluginError, PluginFactory, PreFilterPlugin, PreFilterResult, Status,
};

/// The Filter reason of a shared in-tree disk (upstream `ErrReasonDiskConflict`).
pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
/// The Filter reason of a ReadWriteOncePod claim in use (upstream
/// `ErrReasonReadWriteOncePodConflict`).
pub const ERR_REASON_RWOP_CONFLICT: &str =
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";

const READ_WRITE_ONCE_POD: &str = "ReadWriteOncePod";

#[derive(Debug, Clone)]
struct PreFilterState {
    /// ReadWriteOncePod claims of the pod already used by a placed pod.
    conflicting_claims: usize,
}

#[derive(Debug, Clone)]
pub struct VolumeRestrictions {
    volumes: Arc<Volumes>,
}

crate::plugin! {
    VolumeRestrictions {
        name: "VolumeRestrictions",
        points: [PreFilter, Filter],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration with queueing hints enabled: a pod deleted (its disks
        /// and claims are free again), a node added, a claim added.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(EventResource::Pod, ActionType::DELETE),
                ClusterEvent::new(EventResource::Node, ActionType::ADD),
                ClusterEvent::new(EventResource::PersistentVolumeClaim, ActionType::ADD),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Rejects nodes where an in-tree disk the pod mounts is already mounted writable, and every node while a ReadWriteOncePod claim of the pod is in use.";
        // Filter reads the conflicting claims PreFilter counted (an error without them).
        const COUPLINGS: &'static [Coupling] = &[Coupling::FilterNeedsPreFilter];
        type Args = NoArgs;

        fn build(_: NoArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(VolumeRestrictions {
                volumes: handle.volumes.clone(),
            })
        }
    }
}

fn pod_volumes(pod: &Pod) -> impl Iterator<Item = &Volume> {
    pod.spec
        .iter()
        .flat_map(|spec| spec.volumes.iter().flatten())
}

/// A GCE PD, AWS EBS, RBD or iSCSI volume: the kinds a node cannot share freely.
fn needs_restrictions_check(volume: &Volume) -> bool {
    volume.gce_persistent_disk.is_some()
        || volume.aws_elastic_block_store.is_some()
        || volume.rbd.is_some()
        || volume.iscsi.is_some()
}

/// Whether `volume` conflicts with a volume of `existing` (upstream `isVolumeConflict`).
fn conflicts_with(volume: &Volume, existing: &Pod) -> bool {
    let read_only = |flag: Option<bool>| flag.unwrap_or(false);
    pod_volumes(existing).any(|other| {
        if let (Some(a), Some(b)) = (&volume.gce_persistent_disk, &other.gce_persistent_disk)
            && a.pd_name == b.pd_name
            && !(read_only(a.read_only) && read_only(b.read_only))
        {
            return true;
        }
        if let (Some(a), Some(b)) = (
            &volume.aws_elastic_block_store,
            &other.aws_elastic_block_store,
        ) && a.volume_id == b.volume_id
        {
            return true;
        }
        if let (Some(a), Some(b)) = (&volume.iscsi, &other.iscsi)
            && a.iqn == b.iqn
            && !(read_only(a.read_only) && read_only(b.read_only))
        {
            return true;
        }
        if let (Some(a), Some(b)) = (&volume.rbd, &other.rbd)
            && a.monitors.iter().any(|m| b.monitors.contains(m))
            && a.pool == b.pool
            && a.image == b.image
            && !(read_only(a.read_only) && read_only(b.read_only))
        {
            return true;
        }
        false
    })
}

/// Whether a pod placed on some node of `snapshot` mounts claim `namespace/name`.
fn claim_in_use(snapshot: &Snapshot, namespace: &str, name: &str) -> bool {
    snapshot.nodes().iter().any(|node| {
        node.pods.iter().any(|placed| {
            placed
                .pod
                .metadata
                .namespace
                .as_deref()
                .unwrap_or("default")
                == namespace
                && pod_volumes(&placed.pod).any(|v| {
                    v.persistent_volume_claim
                        .as_ref()
                        .is_some_and(|c| c.claim_name == name)
                })
        })
    })
}

#[async_trait]
impl PreFilterPlugin for VolumeRestrictions {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let needs_check = pod_volumes(&pod.pod).any(needs_restrictions_check);
        let namespace = pod.pod.metadata.namespace.as_deref().unwrap_or("default");
        let mut read_write_once_pod = BTreeSet::new();
        for source in pod_volumes(&pod.pod).filter_map(|v| v.persistent_volume_claim.as_ref()) {
            let Some(claim) = self.volumes.claim(namespace, &source.claim_name) else {
                return (
                    None,
                    Status::unresolvable(format!(
                        "persistentvolumeclaim \"{}\" not found",
                        source.claim_name
                    )),
                );
            };
            let modes = claim.spec.as_ref().and_then(|s| s.access_modes.as_ref());
            if modes.is_some_and(|m| m.iter().any(|mode| mode == READ_WRITE_ONCE_POD)) {
                read_write_once_pod.insert(source.claim_name.clone());
            }
        }
        let conflicting_claims = read_write_once_pod
            .iter()
            .filter(|name| claim_in_use(snapshot, namespace, name))
            .count();
        if !needs_check && conflicting_claims == 0 {
            return (None, Status::skip());
        }
        state.write(PreFilterState { conflicting_claims });
        (None, Status::success())
    }
}

impl FilterPlugin for VolumeRestrictions {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let disk_conflict = pod_volumes(&pod.pod)
            .filter(|v| needs_restrictions_check(v))
            .any(|volume| {
                node.pods
                    .iter()
                    .any(|placed| conflicts_with(volume, &placed.pod))
            });
        if disk_conflict {
            return Status::unschedulable(ERR_REASON_DISK_CONFLICT);
        }
        let Some(pre) = state.read::<PreFilterState>() else {
            return Status::error(format!(
                "{}: no PreFilter state in this cycle; PreFilter must run before Filter",
                Self::NAME
            ));
        };
        if pre.conflicting_claims > 0 {
            return Status::unschedulable(ERR_REASON_RWOP_CONFLICT);
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests;

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for VolumeRestrictions {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::volumes(&pod.pod)]
    }
}
