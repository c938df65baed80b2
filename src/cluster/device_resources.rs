//! The dynamic resource allocation objects DynamicResources reads (resource.k8s.io/v1):
//! ResourceSlices, DeviceClasses, ResourceClaims, ResourceClaimTemplates and
//! DeviceTaintRules.
//!
//! Like [`super::Volumes`], this is the lister upstream's plugin reads through informers,
//! shared between the adapter that feeds it and the plugin. Claims have the assume cache
//! ([`super::assume`]) on top: PreBind assumes the claim it wrote so that the next cycle
//! sees the allocation before the watch delivers it.
//!
//! Between Reserve and PreBind a claim's allocation exists only in the scheduler: the
//! plugin *signals a pending allocation* (upstream's in-flight allocations), which every
//! later cycle counts as allocated ([`DeviceResources::allocated_claims`]), so two pods
//! never get the same device. Unreserve and PreBind remove it.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use kube::ResourceExt;

use super::assume::{Entry, apply_entry, assume_entry, namespaced_key};

#[derive(Debug, Default)]
struct Inner {
    slices: BTreeMap<String, Arc<ResourceSlice>>,
    classes: BTreeMap<String, Arc<DeviceClass>>,
    /// By `namespace/name`.
    claims: BTreeMap<String, Entry<ResourceClaim>>,
    /// By `namespace/name`.
    templates: BTreeMap<String, Arc<ResourceClaimTemplate>>,
    taint_rules: BTreeMap<String, Arc<DeviceTaintRule>>,
    /// Allocations decided in Reserve and not yet written, by claim UID.
    pending: BTreeMap<String, Arc<ResourceClaim>>,
    /// Bumped on every change of slices, classes or taint rules, so that what is derived
    /// from them (the pools a node sees) is recomputed only when they change.
    inventory_generation: u64,
}

/// The resource.k8s.io objects of the cluster, by key.
#[derive(Debug, Default)]
pub struct DeviceResources {
    inner: RwLock<Inner>,
}

impl DeviceResources {
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

    pub fn apply_slice(&self, slice: ResourceSlice) {
        let mut inner = self.write();
        inner.slices.insert(slice.name_any(), Arc::new(slice));
        inner.inventory_generation += 1;
    }

    pub fn delete_slice(&self, slice: &ResourceSlice) {
        let mut inner = self.write();
        inner.slices.remove(&slice.name_any());
        inner.inventory_generation += 1;
    }

    pub fn apply_class(&self, class: DeviceClass) {
        let mut inner = self.write();
        inner.classes.insert(class.name_any(), Arc::new(class));
        inner.inventory_generation += 1;
    }

    pub fn delete_class(&self, class: &DeviceClass) {
        let mut inner = self.write();
        inner.classes.remove(&class.name_any());
        inner.inventory_generation += 1;
    }

    pub fn apply_taint_rule(&self, rule: DeviceTaintRule) {
        let mut inner = self.write();
        inner.taint_rules.insert(rule.name_any(), Arc::new(rule));
        inner.inventory_generation += 1;
    }

    pub fn delete_taint_rule(&self, rule: &DeviceTaintRule) {
        let mut inner = self.write();
        inner.taint_rules.remove(&rule.name_any());
        inner.inventory_generation += 1;
    }

    pub fn apply_template(&self, template: ResourceClaimTemplate) {
        let key = namespaced_key(&template);
        self.write().templates.insert(key, Arc::new(template));
    }

    pub fn delete_template(&self, template: &ResourceClaimTemplate) {
        self.write().templates.remove(&namespaced_key(template));
    }

    pub fn apply_claim(&self, claim: ResourceClaim) {
        let key = namespaced_key(&claim);
        apply_entry(&mut self.write().claims, key, claim);
    }

    pub fn delete_claim(&self, claim: &ResourceClaim) {
        let mut inner = self.write();
        inner.claims.remove(&namespaced_key(claim));
        if let Some(uid) = claim.uid() {
            inner.pending.remove(&uid);
        }
    }

    /// Assumes `claim` (the claim as PreBind wrote it) until the API server's version
    /// catches up or it is restored.
    pub fn assume_claim(&self, claim: ResourceClaim) -> Result<(), String> {
        let key = namespaced_key(&claim);
        assume_entry(&mut self.write().claims, "resourceclaim", key, claim)
    }

    /// Drops the assumed copy of claim `namespace/name`, if any.
    pub fn restore_claim(&self, namespace: &str, name: &str) {
        if let Some(entry) = self.write().claims.get_mut(&format!("{namespace}/{name}")) {
            entry.assumed = None;
        }
    }

    /// Records `claim`, carrying the allocation Reserve decided, as allocated until
    /// [`DeviceResources::remove_pending_allocation`]. Keyed by the claim's UID.
    pub fn signal_pending_allocation(&self, claim: ResourceClaim) {
        let uid = claim.uid().unwrap_or_default();
        self.write().pending.insert(uid, Arc::new(claim));
    }

    /// The pending allocation of the claim with `uid`, if any.
    pub fn pending_allocation(&self, uid: &str) -> Option<Arc<ResourceClaim>> {
        self.read().pending.get(uid).cloned()
    }

    /// Drops the pending allocation of the claim with `uid`; whether there was one.
    pub fn remove_pending_allocation(&self, uid: &str) -> bool {
        self.write().pending.remove(uid).is_some()
    }

    /// Claim `namespace/name`: its assumed copy if there is one.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<Arc<ResourceClaim>> {
        self.read()
            .claims
            .get(&format!("{namespace}/{name}"))
            .map(|e| e.latest().clone())
    }

    /// Claim `namespace/name` as the API server last sent it.
    pub fn api_claim(&self, namespace: &str, name: &str) -> Option<Arc<ResourceClaim>> {
        self.read()
            .claims
            .get(&format!("{namespace}/{name}"))
            .map(|e| e.api.clone())
    }

    /// Every claim (assumed copies where there are), by namespace and name.
    pub fn claims(&self) -> Vec<Arc<ResourceClaim>> {
        self.read()
            .claims
            .values()
            .map(|e| e.latest().clone())
            .collect()
    }

    /// Every claim whose devices are taken: the claims with `status.allocation` (assumed
    /// copies where there are) and the pending allocations, a pending one in place of the
    /// stored claim with its UID.
    pub fn allocated_claims(&self) -> Vec<Arc<ResourceClaim>> {
        let inner = self.read();
        let stored = inner.claims.values().map(Entry::latest).filter(|claim| {
            let pending = claim
                .metadata
                .uid
                .as_ref()
                .is_some_and(|uid| inner.pending.contains_key(uid));
            !pending && is_allocated(claim)
        });
        stored.chain(inner.pending.values()).cloned().collect()
    }

    pub fn template(&self, namespace: &str, name: &str) -> Option<Arc<ResourceClaimTemplate>> {
        self.read()
            .templates
            .get(&format!("{namespace}/{name}"))
            .cloned()
    }

    pub fn class(&self, name: &str) -> Option<Arc<DeviceClass>> {
        self.read().classes.get(name).cloned()
    }

    /// Every DeviceClass, by name.
    pub fn classes(&self) -> Vec<Arc<DeviceClass>> {
        self.read().classes.values().cloned().collect()
    }

    /// Every ResourceSlice, by name.
    pub fn slices(&self) -> Vec<Arc<ResourceSlice>> {
        self.read().slices.values().cloned().collect()
    }

    /// Every DeviceTaintRule, by name.
    pub fn taint_rules(&self) -> Vec<Arc<DeviceTaintRule>> {
        self.read().taint_rules.values().cloned().collect()
    }

    /// Changes with every change of slices, classes and taint rules.
    pub fn inventory_generation(&self) -> u64 {
        self.read().inventory_generation
    }

    /// Whether there is any ResourceSlice or DeviceClass: without either no device can be
    /// allocated, and a pod's claims fail before the allocator runs.
    pub fn is_empty(&self) -> bool {
        let inner = self.read();
        inner.slices.is_empty() && inner.classes.is_empty()
    }
}

/// Whether `claim` has `status.allocation`.
pub fn is_allocated(claim: &ResourceClaim) -> bool {
    claim
        .status
        .as_ref()
        .is_some_and(|s| s.allocation.is_some())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaimStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn claim(name: &str, uid: &str, version: &str, allocated: bool) -> ResourceClaim {
        ResourceClaim {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ml".into()),
                uid: Some(uid.into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            status: allocated.then(|| ResourceClaimStatus {
                allocation: Some(AllocationResult::default()),
                ..ResourceClaimStatus::default()
            }),
            ..ResourceClaim::default()
        }
    }

    fn names(claims: Vec<Arc<ResourceClaim>>) -> Vec<String> {
        claims.iter().map(|c| c.name_any()).collect()
    }

    #[test]
    fn allocated_claims_are_the_allocated_stored_ones_and_the_pending_ones() {
        let resources = DeviceResources::new();
        resources.apply_claim(claim("a", "uid-a", "1", true));
        resources.apply_claim(claim("b", "uid-b", "1", false));
        resources.apply_claim(claim("c", "uid-c", "1", false));
        assert_eq!(names(resources.allocated_claims()), ["a"]);

        // Reserve decided b; it counts until it is removed.
        resources.signal_pending_allocation(claim("b", "uid-b", "1", true));
        assert_eq!(names(resources.allocated_claims()), ["a", "b"]);
        assert!(resources.pending_allocation("uid-b").is_some());

        // PreBind wrote it: the assumed copy counts, once.
        resources
            .assume_claim(claim("b", "uid-b", "2", true))
            .expect("b is known");
        assert!(resources.remove_pending_allocation("uid-b"));
        assert!(!resources.remove_pending_allocation("uid-b"));
        assert_eq!(names(resources.allocated_claims()), ["a", "b"]);

        // An older watch event keeps the assumed copy; the write's own event replaces it.
        resources.apply_claim(claim("b", "uid-b", "1", false));
        assert_eq!(names(resources.allocated_claims()), ["a", "b"]);
        resources.apply_claim(claim("b", "uid-b", "3", false));
        assert_eq!(names(resources.allocated_claims()), ["a"]);

        // Deleting a claim drops its pending allocation.
        resources.signal_pending_allocation(claim("c", "uid-c", "1", true));
        resources.delete_claim(&claim("c", "uid-c", "1", false));
        assert_eq!(names(resources.allocated_claims()), ["a"]);
    }

    #[test]
    fn inventory_generation_moves_with_slices_classes_and_rules_only() {
        let resources = DeviceResources::new();
        let start = resources.inventory_generation();
        resources.apply_claim(claim("a", "uid-a", "1", true));
        assert_eq!(resources.inventory_generation(), start);
        resources.apply_class(DeviceClass {
            metadata: ObjectMeta {
                name: Some("gpu".into()),
                ..ObjectMeta::default()
            },
            ..DeviceClass::default()
        });
        assert!(resources.inventory_generation() > start);
        assert!(resources.class("gpu").is_some());
        assert!(!resources.is_empty());
    }
}
