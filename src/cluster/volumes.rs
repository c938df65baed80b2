//! The storage objects the volume plugins read: PersistentVolumeClaims,
//! PersistentVolumes, StorageClasses, CSINodes and CSIDrivers.
//!
//! Upstream's volume plugins read these through informer listers, not through the
//! scheduling snapshot, and VolumeBinding keeps an "assume cache" on top of the PV and
//! PVC listers so that a binding decided in Reserve is visible to the next cycle before
//! the API server has it. [`Volumes`] is the lister half: shared (`Arc`) between the
//! adapter that feeds it (the operator's watches, the simulator's input) and the plugins
//! that read it through the framework `Handle`. Each object is kept whole, by its key, as
//! the API server last sent it.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, StorageClass};
use kube::ResourceExt;

#[derive(Debug, Default)]
struct Inner {
    /// By `namespace/name`.
    claims: BTreeMap<String, Arc<PersistentVolumeClaim>>,
    volumes: BTreeMap<String, Arc<PersistentVolume>>,
    classes: BTreeMap<String, Arc<StorageClass>>,
    /// By node name (a CSINode is named after its node).
    csi_nodes: BTreeMap<String, Arc<CSINode>>,
    csi_drivers: BTreeMap<String, Arc<CSIDriver>>,
}

/// The storage objects of the cluster, by key.
#[derive(Debug, Default)]
pub struct Volumes {
    inner: RwLock<Inner>,
}

/// `namespace/name` of a claim; a claim without a namespace is in `default`, as the API
/// server would have put it.
pub fn claim_key(claim: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        claim.namespace().as_deref().unwrap_or("default"),
        claim.name_any()
    )
}

impl Volumes {
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        // A poisoned lock only means a writer panicked mid-insert into a map; the maps
        // are still valid.
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    pub fn apply_claim(&self, claim: PersistentVolumeClaim) {
        let key = claim_key(&claim);
        self.write().claims.insert(key, Arc::new(claim));
    }

    pub fn delete_claim(&self, claim: &PersistentVolumeClaim) {
        self.write().claims.remove(&claim_key(claim));
    }

    pub fn apply_volume(&self, volume: PersistentVolume) {
        let name = volume.name_any();
        self.write().volumes.insert(name, Arc::new(volume));
    }

    pub fn delete_volume(&self, volume: &PersistentVolume) {
        self.write().volumes.remove(&volume.name_any());
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

    /// The claim `name` in `namespace`.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.read()
            .claims
            .get(&format!("{namespace}/{name}"))
            .cloned()
    }

    pub fn volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.read().volumes.get(name).cloned()
    }

    /// Every PersistentVolume, by name.
    pub fn volumes(&self) -> Vec<Arc<PersistentVolume>> {
        self.read().volumes.values().cloned().collect()
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
