//! The simulated cluster's storage controllers: the API server, the PersistentVolume
//! controller and the external provisioners that VolumeBinding's PreBind talks to.
//!
//! In a cluster, PreBind only *asks* for a binding: it PUTs a PersistentVolume whose
//! `claimRef` names the claim (a static binding), or a PersistentVolumeClaim annotated
//! with `volume.kubernetes.io/selected-node` (WaitForFirstConsumer provisioning), and
//! then polls until kube-controller-manager's PV controller, and for provisioning the
//! external provisioner, have finished the job. [`InMemoryVolumeWriter`] plays all three
//! against the simulator's [`Volumes`], synchronously, so the binding is complete by
//! PreBind's first poll:
//!
//! - as the API server, it rejects an update whose resourceVersion is not the stored one
//!   (a 409 Conflict) and stores each write with a higher resourceVersion, so the write
//!   replaces the copy the scheduler assumed in Reserve;
//! - as the PV controller, it completes a binding: the volume `Bound`, the claim naming
//!   the volume with `pv.kubernetes.io/bind-completed` and
//!   `pv.kubernetes.io/bound-by-controller`, `Bound`, with the volume's capacity;
//! - as the provisioner of a claim's StorageClass, it creates the claim's volume
//!   `pvc-<claim uid>` in the topology of the selected node (see [`provisioned_topology`]).
//!   A class without a provisioner (`kubernetes.io/no-provisioner`) provisions nothing, as
//!   in a cluster: the claim stays unbound and PreBind times out.
//!
//! Every write is recorded as a storage event that the driver delivers to the scheduler
//! ([`StorageEvents::drain`]), so that pods rejected for want of a volume are retried as
//! a watch event would have them retried.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus,
    PersistentVolumeSpec, PersistentVolumeStatus, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

use crate::cluster::{Volumes, resource_version};
use crate::framework::{ActionType, EventResource, VolumeWriter};
use crate::helpers::volumes::{
    BIND_COMPLETED_ANNOTATION, BOUND_BY_CONTROLLER_ANNOTATION, PROVISIONED_BY_ANNOTATION,
    claim_class, claim_volume_name, selected_node,
};

use super::input::deterministic_uid;

/// The provisioner of classes whose volumes are created by hand (local volumes).
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// The labels of every node, by node name: the topology a provisioner reads.
pub type NodeLabels = BTreeMap<String, BTreeMap<String, String>>;

/// Storage changes not yet delivered to the scheduler, in the order they happened.
#[derive(Debug, Default)]
pub struct StorageEvents {
    pending: Mutex<Vec<(EventResource, ActionType)>>,
}

impl StorageEvents {
    fn lock(&self) -> MutexGuard<'_, Vec<(EventResource, ActionType)>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn push(&self, resource: EventResource, action: ActionType) {
        self.lock().push((resource, action));
    }

    /// The changes since the last drain, oldest first.
    pub fn drain(&self) -> Vec<(EventResource, ActionType)> {
        std::mem::take(&mut *self.lock())
    }
}

/// The [`VolumeWriter`] of `berth simulate`; see the module documentation.
pub struct InMemoryVolumeWriter {
    volumes: Arc<Volumes>,
    node_labels: NodeLabels,
    events: Arc<StorageEvents>,
    /// The last resourceVersion handed out (the API server's revision counter).
    revision: Mutex<u64>,
}

impl InMemoryVolumeWriter {
    pub fn new(volumes: Arc<Volumes>, node_labels: NodeLabels) -> Self {
        InMemoryVolumeWriter {
            volumes,
            node_labels,
            events: Arc::default(),
            revision: Mutex::new(0),
        }
    }

    /// Where the writer records its changes, for the driver to deliver.
    pub fn events(&self) -> Arc<StorageEvents> {
        self.events.clone()
    }

    /// A resourceVersion newer than `stored` and than every one handed out before.
    fn next_version(&self, stored: u64) -> String {
        let mut revision = self.revision.lock().unwrap_or_else(PoisonError::into_inner);
        *revision = (*revision).max(stored) + 1;
        revision.to_string()
    }

    fn store_volume(&self, mut volume: PersistentVolume, action: ActionType) -> PersistentVolume {
        let stored = self
            .volumes
            .api_volume(&volume.name_any())
            .map_or(0, |v| resource_version(v.as_ref()));
        volume.metadata.resource_version = Some(self.next_version(stored));
        self.volumes.apply_volume(volume.clone());
        self.events.push(EventResource::PersistentVolume, action);
        volume
    }

    fn store_claim(&self, mut claim: PersistentVolumeClaim) -> PersistentVolumeClaim {
        let (namespace, name) = namespace_and_name(&claim);
        let stored = self
            .volumes
            .api_claim(&namespace, &name)
            .map_or(0, |c| resource_version(c.as_ref()));
        claim.metadata.resource_version = Some(self.next_version(stored));
        self.volumes.apply_claim(claim.clone());
        self.events
            .push(EventResource::PersistentVolumeClaim, ActionType::UPDATE);
        claim
    }

    /// The PV controller's `bind`: the volume `Bound`, then the claim bound to it. A
    /// claim that is gone, was re-created (another uid) or is bound to another volume is
    /// left alone, as the controller leaves it.
    fn complete_binding(&self, volume: PersistentVolume) {
        let Some(reference) = volume.spec.as_ref().and_then(|s| s.claim_ref.clone()) else {
            return;
        };
        let namespace = reference.namespace.as_deref().unwrap_or("default");
        let Some(claim) = self
            .volumes
            .api_claim(namespace, reference.name.as_deref().unwrap_or_default())
        else {
            return;
        };
        let uid = reference.uid.as_deref().unwrap_or_default();
        let volume_name = volume.name_any();
        let bound_elsewhere = ![volume_name.as_str(), ""].contains(&claim_volume_name(&claim));
        if (!uid.is_empty() && claim.metadata.uid.as_deref() != Some(uid)) || bound_elsewhere {
            return;
        }
        let mut volume = volume;
        volume.status.get_or_insert_with(Default::default).phase = Some("Bound".into());
        let volume = self.store_volume(volume, ActionType::UPDATE);
        self.store_claim(bound_claim(claim.as_ref().clone(), &volume));
    }

    /// The external provisioner of the claim's class, if it has one: the claim's volume
    /// in the selected node's topology, created and then bound.
    fn provision(&self, claim: &PersistentVolumeClaim, node: &str) {
        if !claim_volume_name(claim).is_empty() {
            return;
        }
        let Some(class) = self.volumes.class(&claim_class(claim)) else {
            return;
        };
        if !has_provisioner(&class) {
            return;
        }
        let Some(labels) = self.node_labels.get(node) else {
            return;
        };
        let topology_keys = self
            .volumes
            .csi_node(node)
            .and_then(|csi_node| {
                let driver = csi_node
                    .spec
                    .drivers
                    .iter()
                    .find(|d| d.name == class.provisioner)?;
                driver.topology_keys.clone()
            })
            .unwrap_or_default();
        let topology = provisioned_topology(&class, &topology_keys, labels);
        let volume = provisioned_volume(claim, &class, topology);
        let volume = match self.volumes.api_volume(&volume.name_any()) {
            // Provisioned before (an earlier attempt): the provisioner does not create it
            // twice.
            Some(existing) => existing.as_ref().clone(),
            None => self.store_volume(volume, ActionType::ADD),
        };
        self.complete_binding(volume);
    }
}

#[async_trait]
impl VolumeWriter for InMemoryVolumeWriter {
    async fn update_volume(&self, volume: &PersistentVolume) -> Result<PersistentVolume, String> {
        let name = volume.name_any();
        let Some(stored) = self.volumes.api_volume(&name) else {
            return Err(format!("persistentvolumes \"{name}\" not found"));
        };
        check_version(volume, stored.as_ref(), "persistentvolumes", &name)?;
        let written = self.store_volume(volume.clone(), ActionType::UPDATE);
        self.complete_binding(written.clone());
        Ok(written)
    }

    async fn update_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, String> {
        let (namespace, name) = namespace_and_name(claim);
        let Some(stored) = self.volumes.api_claim(&namespace, &name) else {
            return Err(format!("persistentvolumeclaims \"{name}\" not found"));
        };
        check_version(claim, stored.as_ref(), "persistentvolumeclaims", &name)?;
        let written = self.store_claim(claim.clone());
        if let Some(node) = selected_node(&written) {
            self.provision(&written, node);
        }
        Ok(written)
    }
}

fn namespace_and_name(claim: &PersistentVolumeClaim) -> (String, String) {
    (
        claim
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        claim.name_any(),
    )
}

/// The API server's optimistic concurrency: an update that names a resourceVersion must
/// name the stored one (one that names none is unconditional).
fn check_version<K: ResourceExt>(
    update: &K,
    stored: &K,
    resource: &str,
    name: &str,
) -> Result<(), String> {
    let names_a_version = update.resource_version().is_some_and(|v| !v.is_empty());
    if names_a_version && resource_version(update) != resource_version(stored) {
        return Err(format!(
            "Operation cannot be fulfilled on {resource} \"{name}\": the object has been \
             modified; please apply your changes to the latest version and try again"
        ));
    }
    Ok(())
}

/// Whether volumes of `class` are provisioned on demand.
fn has_provisioner(class: &StorageClass) -> bool {
    !class.provisioner.is_empty() && class.provisioner != NO_PROVISIONER
}

/// The topology a provisioned volume is accessible from, as `(key, value)` pairs of the
/// selected node's labels. A CSI driver reports its topology keys in the node's CSINode
/// (`spec.drivers[].topologyKeys`) and creates the volume in the node's segment of them;
/// a provisioner without a CSINode entry that honours the class's `allowedTopologies`
/// creates it in the node's segment of the keys the class restricts. With neither, the
/// volume is accessible from everywhere. Keys the node has no label for are left out.
pub fn provisioned_topology(
    class: &StorageClass,
    topology_keys: &[String],
    labels: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut keys: Vec<String> = topology_keys.to_vec();
    if keys.is_empty() {
        keys = class
            .allowed_topologies
            .iter()
            .flatten()
            .flat_map(|term| term.match_label_expressions.iter().flatten())
            .map(|requirement| requirement.key.clone())
            .collect();
    }
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| labels.get(&key).map(|value| (key.clone(), value.clone())))
        .collect()
}

/// The volume an external provisioner creates for `claim`: named `pvc-<claim uid>`, of
/// the claim's class, size, access modes and volume mode, already naming the claim.
fn provisioned_volume(
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    topology: Vec<(String, String)>,
) -> PersistentVolume {
    let (namespace, name) = namespace_and_name(claim);
    let uid = claim
        .metadata
        .uid
        .clone()
        .filter(|uid| !uid.is_empty())
        .unwrap_or_else(|| deterministic_uid(&format!("PersistentVolumeClaim/{namespace}/{name}")));
    let volume_name = format!("pvc-{uid}");
    let spec = claim.spec.clone().unwrap_or_default();
    let capacity = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .map(|storage| BTreeMap::from([("storage".to_string(), storage.clone())]));
    let node_affinity = (!topology.is_empty()).then(|| VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(
                    topology
                        .into_iter()
                        .map(|(key, value)| NodeSelectorRequirement {
                            key,
                            operator: "In".into(),
                            values: Some(vec![value]),
                        })
                        .collect(),
                ),
                match_fields: None,
            }],
        }),
    });
    // CSI drivers are named like domains; in-tree provisioners are `kubernetes.io/...`.
    let csi =
        (!class.provisioner.starts_with("kubernetes.io/")).then(|| CSIPersistentVolumeSource {
            driver: class.provisioner.clone(),
            volume_handle: volume_name.clone(),
            ..CSIPersistentVolumeSource::default()
        });
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(volume_name),
            uid: Some(deterministic_uid(&format!("PersistentVolume/pvc-{uid}"))),
            annotations: Some(BTreeMap::from([(
                PROVISIONED_BY_ANNOTATION.to_string(),
                class.provisioner.clone(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            storage_class_name: Some(class.name_any()),
            capacity,
            access_modes: spec.access_modes,
            volume_mode: spec.volume_mode,
            claim_ref: Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("PersistentVolumeClaim".into()),
                namespace: Some(namespace),
                name: Some(name),
                uid: claim.metadata.uid.clone(),
                resource_version: claim.metadata.resource_version.clone(),
                field_path: None,
            }),
            persistent_volume_reclaim_policy: Some(
                class
                    .reclaim_policy
                    .clone()
                    .unwrap_or_else(|| "Delete".into()),
            ),
            mount_options: class.mount_options.clone(),
            node_affinity,
            csi,
            ..PersistentVolumeSpec::default()
        }),
        status: Some(PersistentVolumeStatus {
            phase: Some("Pending".into()),
            ..PersistentVolumeStatus::default()
        }),
    }
}

/// `claim` as the PV controller leaves it bound to `volume` (`bindClaimToVolume` and
/// `updateClaimStatus`).
fn bound_claim(
    mut claim: PersistentVolumeClaim,
    volume: &PersistentVolume,
) -> PersistentVolumeClaim {
    let annotations = claim.metadata.annotations.get_or_insert_with(BTreeMap::new);
    for annotation in [BIND_COMPLETED_ANNOTATION, BOUND_BY_CONTROLLER_ANNOTATION] {
        annotations.insert(annotation.to_string(), "yes".to_string());
    }
    claim.spec.get_or_insert_with(Default::default).volume_name = Some(volume.name_any());
    let volume_spec = volume.spec.clone().unwrap_or_default();
    let status = claim
        .status
        .get_or_insert_with(PersistentVolumeClaimStatus::default);
    status.phase = Some("Bound".into());
    status.access_modes = volume_spec.access_modes;
    status.capacity = volume_spec.capacity;
    claim
}

#[cfg(test)]
mod tests;
