//! The storage objects the volume plugins read: PersistentVolumeClaims,
//! PersistentVolumes, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities and
//! VolumeAttachments.
//!
//! Upstream's volume plugins read these through informer listers, not through the
//! scheduling snapshot. [`Volumes`] is that lister: shared (`Arc`) between the adapter
//! that feeds it (the operator's watches, the simulator's input) and the plugins that read
//! it through the framework `Handle`. Each object is kept whole, by its key, as the API
//! server last sent it.
//!
//! Claims and volumes also have upstream's *assume cache* on top: VolumeBinding decides
//! in Reserve that a claim will be bound to a volume (or provisioned on a node) and
//! *assumes* the changed objects, so that the next pod's cycle sees the volume as taken
//! before the API server has the write. An assumed object is what [`Volumes::claim`] and
//! [`Volumes::volume`] return; [`Volumes::api_claim`] and [`Volumes::api_volume`] return
//! what the API server last sent. An assumed copy is dropped when the feed delivers a
//! newer resourceVersion of the object (the write arrived) or when it is restored
//! (Unreserve); see [`super::assume`].

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use kube::ResourceExt;

use super::assume::{Entry, apply_entry, assume_entry, namespaced_key};

#[derive(Debug, Default)]
struct Inner {
    /// By `namespace/name`.
    claims: BTreeMap<String, Entry<PersistentVolumeClaim>>,
    volumes: BTreeMap<String, Entry<PersistentVolume>>,
    classes: BTreeMap<String, Arc<StorageClass>>,
    /// By node name (a CSINode is named after its node).
    csi_nodes: BTreeMap<String, Arc<CSINode>>,
    csi_drivers: BTreeMap<String, Arc<CSIDriver>>,
    /// By `namespace/name`.
    capacities: BTreeMap<String, Arc<CSIStorageCapacity>>,
    attachments: BTreeMap<String, Arc<VolumeAttachment>>,
}

/// The storage objects of the cluster, by key.
#[derive(Debug, Default)]
pub struct Volumes {
    inner: RwLock<Inner>,
}

/// `namespace/name` of a claim; a claim without a namespace is in `default`, as the API
/// server would have put it.
pub fn claim_key(claim: &PersistentVolumeClaim) -> String {
    namespaced_key(claim)
}

impl Volumes {
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        super::lock::read(&self.inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        super::lock::write(&self.inner)
    }

    pub fn apply_claim(&self, claim: PersistentVolumeClaim) {
        let key = claim_key(&claim);
        apply_entry(&mut self.write().claims, key, claim);
    }

    pub fn delete_claim(&self, claim: &PersistentVolumeClaim) {
        self.write().claims.remove(&claim_key(claim));
    }

    pub fn apply_volume(&self, volume: PersistentVolume) {
        let name = volume.name_any();
        apply_entry(&mut self.write().volumes, name, volume);
    }

    pub fn delete_volume(&self, volume: &PersistentVolume) {
        self.write().volumes.remove(&volume.name_any());
    }

    /// Assumes `claim` (a copy of a known claim with the changes a binding decided) until
    /// the API server's version catches up or it is restored.
    pub fn assume_claim(&self, claim: PersistentVolumeClaim) -> Result<(), String> {
        let key = claim_key(&claim);
        assume_entry(
            &mut self.write().claims,
            "persistentvolumeclaim",
            key,
            claim,
        )
    }

    /// Drops the assumed copy of claim `namespace/name`, if any.
    pub fn restore_claim(&self, namespace: &str, name: &str) {
        if let Some(entry) = self.write().claims.get_mut(&format!("{namespace}/{name}")) {
            entry.assumed = None;
        }
    }

    /// Assumes `volume`; see [`Volumes::assume_claim`].
    pub fn assume_volume(&self, volume: PersistentVolume) -> Result<(), String> {
        let name = volume.name_any();
        assume_entry(&mut self.write().volumes, "persistentvolume", name, volume)
    }

    /// Drops the assumed copy of volume `name`, if any.
    pub fn restore_volume(&self, name: &str) {
        if let Some(entry) = self.write().volumes.get_mut(name) {
            entry.assumed = None;
        }
    }

    pub fn apply_class(&self, class: StorageClass) {
        let name = class.name_any();
        self.write().classes.insert(name, Arc::new(class));
    }

    pub fn delete_class(&self, class: &StorageClass) {
        self.write().classes.remove(&class.name_any());
    }

    pub fn apply_csi_node(&self, csi_node: CSINode) {
        let name = csi_node.name_any();
        self.write().csi_nodes.insert(name, Arc::new(csi_node));
    }

    pub fn delete_csi_node(&self, csi_node: &CSINode) {
        self.write().csi_nodes.remove(&csi_node.name_any());
    }

    pub fn apply_csi_driver(&self, driver: CSIDriver) {
        let name = driver.name_any();
        self.write().csi_drivers.insert(name, Arc::new(driver));
    }

    pub fn delete_csi_driver(&self, driver: &CSIDriver) {
        self.write().csi_drivers.remove(&driver.name_any());
    }

    pub fn apply_capacity(&self, capacity: CSIStorageCapacity) {
        let key = namespaced_key(&capacity);
        self.write().capacities.insert(key, Arc::new(capacity));
    }

    pub fn delete_capacity(&self, capacity: &CSIStorageCapacity) {
        self.write().capacities.remove(&namespaced_key(capacity));
    }

    pub fn apply_attachment(&self, attachment: VolumeAttachment) {
        let name = attachment.name_any();
        self.write().attachments.insert(name, Arc::new(attachment));
    }

    pub fn delete_attachment(&self, attachment: &VolumeAttachment) {
        self.write().attachments.remove(&attachment.name_any());
    }

    /// The claim `name` in `namespace`: its assumed copy if there is one.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.read()
            .claims
            .get(&format!("{namespace}/{name}"))
            .map(|e| e.latest().clone())
    }

    /// The claim `name` in `namespace` as the API server last sent it.
    pub fn api_claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.read()
            .claims
            .get(&format!("{namespace}/{name}"))
            .map(|e| e.api.clone())
    }

    /// The volume `name`: its assumed copy if there is one.
    pub fn volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.read().volumes.get(name).map(|e| e.latest().clone())
    }

    /// The volume `name` as the API server last sent it.
    pub fn api_volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.read().volumes.get(name).map(|e| e.api.clone())
    }

    /// Every PersistentVolume (assumed copies where there are), by name.
    pub fn volumes(&self) -> Vec<Arc<PersistentVolume>> {
        self.read()
            .volumes
            .values()
            .map(|e| e.latest().clone())
            .collect()
    }

    /// Every PersistentVolumeClaim (assumed copies where there are), by namespace and name.
    pub fn claims(&self) -> Vec<Arc<PersistentVolumeClaim>> {
        self.read()
            .claims
            .values()
            .map(|e| e.latest().clone())
            .collect()
    }

    pub fn class(&self, name: &str) -> Option<Arc<StorageClass>> {
        self.read().classes.get(name).cloned()
    }

    /// The CSINode of node `node`.
    pub fn csi_node(&self, node: &str) -> Option<Arc<CSINode>> {
        self.read().csi_nodes.get(node).cloned()
    }

    pub fn csi_driver(&self, name: &str) -> Option<Arc<CSIDriver>> {
        self.read().csi_drivers.get(name).cloned()
    }

    /// Every CSIStorageCapacity, by namespace and name.
    pub fn capacities(&self) -> Vec<Arc<CSIStorageCapacity>> {
        self.read().capacities.values().cloned().collect()
    }

    /// Every VolumeAttachment, by name.
    pub fn attachments(&self) -> Vec<Arc<VolumeAttachment>> {
        self.read().attachments.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PersistentVolumeClaimSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn claim(namespace: Option<&str>, name: &str, volume: &str) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: namespace.map(str::to_string),
                ..ObjectMeta::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                volume_name: Some(volume.into()),
                ..PersistentVolumeClaimSpec::default()
            }),
            ..PersistentVolumeClaim::default()
        }
    }

    fn volume_name(claim: Option<Arc<PersistentVolumeClaim>>) -> Option<String> {
        claim.and_then(|c| c.spec.as_ref().and_then(|s| s.volume_name.clone()))
    }

    #[test]
    fn claims_are_kept_by_namespace_and_name_and_replaced_on_update() {
        let volumes = Volumes::new();
        volumes.apply_claim(claim(Some("shop"), "data", "pv-1"));
        volumes.apply_claim(claim(None, "data", "pv-2"));
        assert_eq!(
            volume_name(volumes.claim("shop", "data")).as_deref(),
            Some("pv-1")
        );
        assert_eq!(
            volume_name(volumes.claim("default", "data")).as_deref(),
            Some("pv-2")
        );
        volumes.apply_claim(claim(Some("shop"), "data", "pv-3"));
        assert_eq!(
            volume_name(volumes.claim("shop", "data")).as_deref(),
            Some("pv-3")
        );
        volumes.delete_claim(&claim(Some("shop"), "data", "pv-3"));
        assert!(volumes.claim("shop", "data").is_none());
        assert!(volumes.claim("default", "data").is_some());
    }

    #[test]
    fn cluster_scoped_objects_are_kept_by_name() {
        let volumes = Volumes::new();
        let named = |name: &str| ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        };
        volumes.apply_volume(PersistentVolume {
            metadata: named("pv-1"),
            ..PersistentVolume::default()
        });
        volumes.apply_class(StorageClass {
            metadata: named("fast"),
            provisioner: "csi.example.com".into(),
            ..StorageClass::default()
        });
        volumes.apply_csi_node(CSINode {
            metadata: named("node-a"),
            ..CSINode::default()
        });
        assert!(volumes.volume("pv-1").is_some());
        assert_eq!(volumes.volumes().len(), 1);
        assert_eq!(
            volumes
                .class("fast")
                .map(|c| c.provisioner.clone())
                .as_deref(),
            Some("csi.example.com")
        );
        assert!(volumes.csi_node("node-a").is_some());
        assert!(volumes.csi_node("node-b").is_none());
        volumes.delete_volume(&PersistentVolume {
            metadata: named("pv-1"),
            ..PersistentVolume::default()
        });
        assert!(volumes.volumes().is_empty());
    }
}

#[cfg(test)]
mod assume_tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn volume(version: &str, claim: Option<&str>) -> PersistentVolume {
        PersistentVolume {
            metadata: ObjectMeta {
                name: Some("pv-1".into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            spec: Some(k8s_openapi::api::core::v1::PersistentVolumeSpec {
                claim_ref: claim.map(|c| k8s_openapi::api::core::v1::ObjectReference {
                    name: Some(c.into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..PersistentVolume::default()
        }
    }

    fn claim_of(v: Option<Arc<PersistentVolume>>) -> Option<String> {
        v.and_then(|v| v.spec.as_ref()?.claim_ref.as_ref()?.name.clone())
    }

    #[test]
    fn an_assumed_volume_is_seen_until_restored() {
        let volumes = Volumes::new();
        volumes.apply_volume(volume("5", None));
        assert_eq!(volumes.assume_volume(volume("5", Some("data"))), Ok(()));
        assert_eq!(claim_of(volumes.volume("pv-1")).as_deref(), Some("data"));
        assert_eq!(claim_of(volumes.api_volume("pv-1")), None);
        assert_eq!(claim_of(volumes.volumes().pop()).as_deref(), Some("data"));
        volumes.restore_volume("pv-1");
        assert_eq!(claim_of(volumes.volume("pv-1")), None);
    }

    #[test]
    fn an_assumed_volume_survives_a_resync_and_yields_to_a_newer_version() {
        let volumes = Volumes::new();
        volumes.apply_volume(volume("5", None));
        volumes.assume_volume(volume("5", Some("data"))).unwrap();
        volumes.apply_volume(volume("5", None));
        assert_eq!(claim_of(volumes.volume("pv-1")).as_deref(), Some("data"));
        volumes.apply_volume(volume("6", Some("other")));
        assert_eq!(claim_of(volumes.volume("pv-1")).as_deref(), Some("other"));
        assert_eq!(
            claim_of(volumes.api_volume("pv-1")).as_deref(),
            Some("other")
        );
    }

    #[test]
    fn assuming_an_unknown_or_older_object_fails() {
        let volumes = Volumes::new();
        assert_eq!(
            volumes.assume_volume(volume("1", Some("data"))),
            Err("persistentvolume \"pv-1\" not found".to_string())
        );
        volumes.apply_volume(volume("7", None));
        assert_eq!(
            volumes.assume_volume(volume("6", Some("data"))),
            Err("persistentvolume \"pv-1\" is out of sync (stored: 7, assume: 6)".to_string())
        );
        assert_eq!(claim_of(volumes.volume("pv-1")), None);
    }
}
