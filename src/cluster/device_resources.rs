//! The dynamic resource allocation objects DynamicResources reads (resource.k8s.io/v1):
//! ResourceSlices, DeviceClasses, ResourceClaims, ResourceClaimTemplates and
//! DeviceTaintRules.
//!
//! Like [`super::Volumes`], this is the lister upstream's plugin reads through informers,
//! shared between the adapter that feeds it and the plugin. Claims have the assume cache
//! ([`super::assume`]) on top: PreBind assumes the claim it wrote so that the next cycle
//! sees the allocation before the watch delivers it.
//!
//! The allocator sees slices with DeviceTaintRules applied
//! ([`DeviceResources::slices_with_taint_rules`]): every rule's taint is added to the
//! devices its selector picks, after their own taints, as upstream's slice tracker does.
//!
//! Between Reserve and PreBind a claim's allocation exists only in the scheduler: the
//! plugin *signals a pending allocation* (upstream's in-flight allocations), which every
//! later cycle counts as allocated ([`DeviceResources::allocated_claims`]), so two pods
//! never get the same device. Unreserve and PreBind remove it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::resource::v1::{
    DeviceClass, DeviceRequestAllocationResult, DeviceTaintRule, ResourceClaim,
    ResourceClaimTemplate, ResourceSlice,
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
    /// The slices with taint rules applied, and the generation they were made at.
    patched: Option<(u64, Arc<Vec<Arc<ResourceSlice>>>)>,
}

/// The prefix of the extended resource every DeviceClass serves by its name.
pub const IMPLICIT_EXTENDED_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// The resource.k8s.io objects of the cluster, by key.
#[derive(Debug, Default)]
pub struct DeviceResources {
    inner: RwLock<Inner>,
    /// Set by an adapter that feeds the cluster's resource.k8s.io objects; until then
    /// pods with claims are refused (see `scheduler::unsupported`).
    served: AtomicBool,
}

impl DeviceResources {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the adapter feeds the cluster's resource.k8s.io objects here, so
    /// that pods with ResourceClaims are scheduled instead of refused.
    pub fn set_served(&self) {
        self.served.store(true, Ordering::Release);
    }

    /// Whether an adapter feeds the resource.k8s.io objects.
    pub fn is_served(&self) -> bool {
        self.served.load(Ordering::Acquire)
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        super::lock::read(&self.inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        super::lock::write(&self.inner)
    }

    /// Changes slices, classes or taint rules: what is derived from them is stale.
    fn change_inventory(&self, change: impl FnOnce(&mut Inner)) {
        let mut inner = self.write();
        change(&mut inner);
        inner.inventory_generation += 1;
    }

    pub fn apply_slice(&self, slice: ResourceSlice) {
        self.change_inventory(|inner| {
            inner.slices.insert(slice.name_any(), Arc::new(slice));
        });
    }

    pub fn delete_slice(&self, slice: &ResourceSlice) {
        self.change_inventory(|inner| {
            inner.slices.remove(&slice.name_any());
        });
    }

    pub fn apply_class(&self, class: DeviceClass) {
        self.change_inventory(|inner| {
            inner.classes.insert(class.name_any(), Arc::new(class));
        });
    }

    pub fn delete_class(&self, class: &DeviceClass) {
        self.change_inventory(|inner| {
            inner.classes.remove(&class.name_any());
        });
    }

    pub fn apply_taint_rule(&self, rule: DeviceTaintRule) {
        self.change_inventory(|inner| {
            inner.taint_rules.insert(rule.name_any(), Arc::new(rule));
        });
    }

    pub fn delete_taint_rule(&self, rule: &DeviceTaintRule) {
        self.change_inventory(|inner| {
            inner.taint_rules.remove(&rule.name_any());
        });
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

    /// The DeviceClass that serves extended resource `name` (upstream's extended
    /// resource cache): `deviceclass.resource.kubernetes.io/<class>` names that class;
    /// any other name the classes whose `spec.extendedResourceName` it is, the newest
    /// (by creationTimestamp) winning and the lower name on a tie.
    pub fn extended_resource_class(&self, name: &str) -> Option<Arc<DeviceClass>> {
        let inner = self.read();
        if let Some(class) = name.strip_prefix(IMPLICIT_EXTENDED_RESOURCE_PREFIX) {
            return inner.classes.get(class).cloned();
        }
        let mut best: Option<&Arc<DeviceClass>> = None;
        for class in inner.classes.values() {
            let declared = class
                .spec
                .as_ref()
                .and_then(|s| s.extended_resource_name.as_deref());
            if declared != Some(name) {
                continue;
            }
            let newer = best.is_none_or(|b| {
                let created = |c: &DeviceClass| c.metadata.creation_timestamp.clone().map(|t| t.0);
                // By name ascending, so only a strictly newer class replaces the best.
                created(class) > created(b)
            });
            if newer {
                best = Some(class);
            }
        }
        best.cloned()
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

    /// Every ResourceSlice, by name, with the taints of the DeviceTaintRules that select
    /// its devices added; computed again only after slices or rules changed.
    pub fn slices_with_taint_rules(&self) -> Arc<Vec<Arc<ResourceSlice>>> {
        {
            let inner = self.read();
            if let Some((generation, patched)) = &inner.patched
                && *generation == inner.inventory_generation
            {
                return patched.clone();
            }
        }
        let mut inner = self.write();
        let rules: Vec<Arc<DeviceTaintRule>> = inner.taint_rules.values().cloned().collect();
        let patched: Vec<Arc<ResourceSlice>> = inner
            .slices
            .values()
            .map(|slice| match with_taint_rules(slice, &rules) {
                Some(patched) => Arc::new(patched),
                None => slice.clone(),
            })
            .collect();
        let patched = Arc::new(patched);
        inner.patched = Some((inner.inventory_generation, patched.clone()));
        patched
    }

    /// Changes with every change of slices, classes and taint rules.
    pub fn inventory_generation(&self) -> u64 {
        self.read().inventory_generation
    }
}

/// `slice` with the taint of every rule whose selector picks a device added to that
/// device's taints (upstream's slice tracker): a rule without a selector picks nothing,
/// an empty selector every device, and its driver, pool and device name narrow it.
/// `None` when no rule picks any device.
pub fn with_taint_rules(
    slice: &ResourceSlice,
    rules: &[Arc<DeviceTaintRule>],
) -> Option<ResourceSlice> {
    let mut patched: Option<ResourceSlice> = None;
    for rule in rules {
        let Some(selector) = &rule.spec.device_selector else {
            continue;
        };
        if selector
            .driver
            .as_ref()
            .is_some_and(|d| *d != slice.spec.driver)
            || selector
                .pool
                .as_ref()
                .is_some_and(|p| *p != slice.spec.pool.name)
        {
            continue;
        }
        let devices = slice.spec.devices.as_deref().unwrap_or_default();
        for (index, device) in devices.iter().enumerate() {
            if selector.device.as_ref().is_some_and(|d| *d != device.name) {
                continue;
            }
            let copy = patched.get_or_insert_with(|| slice.clone());
            if let Some(target) = copy.spec.devices.as_mut().and_then(|d| d.get_mut(index)) {
                target
                    .taints
                    .get_or_insert_with(Vec::new)
                    .push(rule.spec.taint.clone());
            }
        }
    }
    patched
}

/// Whether `claim` has `status.allocation`.
pub fn is_allocated(claim: &ResourceClaim) -> bool {
    claim
        .status
        .as_ref()
        .is_some_and(|s| s.allocation.is_some())
}

/// The device results of `claim`'s allocation (none when it is not allocated).
pub fn allocated_devices(claim: &ResourceClaim) -> &[DeviceRequestAllocationResult] {
    claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.results.as_deref())
        .unwrap_or_default()
}

/// Whether `claim` is reserved for the pod with `uid`.
pub fn reserved_for(claim: &ResourceClaim, uid: &str) -> bool {
    claim
        .status
        .as_ref()
        .and_then(|s| s.reserved_for.as_ref())
        .is_some_and(|r| r.iter().any(|c| c.uid == uid))
}

/// Whether the pod with `uid` controls `claim` (an owner reference with `controller:
/// true`): the claim was made for it from a template.
pub fn is_controlled_by(claim: &ResourceClaim, uid: &str) -> bool {
    claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == uid)
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
    }

    /// The final states of upstream's `TestListPatchedResourceSlices` (resourceslice
    /// tracker): which devices of slices s1 (driver-1, pool-1) and s2 (driver-2,
    /// pool-2) carry the rule's taint.
    #[test]
    fn taint_rules_patch_the_devices_they_select_as_upstreams_tracker() {
        use k8s_openapi::api::resource::v1::{
            Device, DeviceTaint, DeviceTaintRuleSpec, DeviceTaintSelector, ResourcePool,
            ResourceSliceSpec,
        };

        let taint = |key: &str, value: &str| DeviceTaint {
            key: key.into(),
            value: Some(value.into()),
            effect: "NoExecute".into(),
            time_added: None,
        };
        let rule_taint = taint("example.com/taint", "tainted");
        let device = |name: &str, taints: Vec<DeviceTaint>| Device {
            name: name.into(),
            taints: (!taints.is_empty()).then_some(taints),
            ..Device::default()
        };
        let slice = |name: &str, driver: &str, pool: &str, devices: Vec<Device>| ResourceSlice {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: ResourceSliceSpec {
                driver: driver.into(),
                pool: ResourcePool {
                    name: pool.into(),
                    ..ResourcePool::default()
                },
                devices: Some(devices),
                ..ResourceSliceSpec::default()
            },
        };
        let s1 = |devices| slice("s1", "driver-1", "pool-1", devices);
        let s2 = |devices| slice("s2", "driver-2", "pool-2", devices);
        let rule = |selector: Option<DeviceTaintSelector>| DeviceTaintRule {
            metadata: ObjectMeta {
                name: Some("rule".into()),
                ..ObjectMeta::default()
            },
            spec: DeviceTaintRuleSpec {
                device_selector: selector,
                taint: rule_taint.clone(),
            },
            status: None,
        };
        let all = || rule(Some(DeviceTaintSelector::default()));
        let select = |driver: Option<&str>, pool: Option<&str>, device: Option<&str>| {
            rule(Some(DeviceTaintSelector {
                driver: driver.map(str::to_string),
                pool: pool.map(str::to_string),
                device: device.map(str::to_string),
            }))
        };
        let tainted = || vec![rule_taint.clone()];
        let three = |tainted_one: bool| {
            vec![
                device("device-0", vec![]),
                device("device-1", if tainted_one { tainted() } else { vec![] }),
                device("device-2", vec![]),
            ]
        };
        let existing = taint("example.com/taint2", "tainted2");
        // Each case: its name, the slices, the rules and the slices as patched.
        type Case = (
            &'static str,
            Vec<ResourceSlice>,
            Vec<DeviceTaintRule>,
            Vec<ResourceSlice>,
        );
        let cases: Vec<Case> = vec![
            (
                "patch-all-slices",
                vec![s1(vec![device("device-1", vec![])])],
                vec![all()],
                vec![s1(vec![device("device-1", tainted())])],
            ),
            (
                "update-patch",
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", vec![])]),
                ],
                vec![select(None, Some("pool-2"), None)],
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", tainted())]),
                ],
            ),
            (
                "remove-patch-known-deleted-rule",
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", vec![])]),
                ],
                vec![],
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", vec![])]),
                ],
            ),
            (
                "merge-taints",
                vec![s1(vec![device("device-1", vec![existing.clone()])])],
                vec![all()],
                vec![s1(vec![device(
                    "device-1",
                    vec![existing.clone(), rule_taint.clone()],
                )])],
            ),
            (
                "add-taint-for-driver",
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", vec![])]),
                ],
                vec![select(Some("driver-1"), None, None)],
                vec![
                    s1(vec![device("device-1", tainted())]),
                    s2(vec![device("device-2", vec![])]),
                ],
            ),
            (
                "add-taint-for-pool",
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", vec![])]),
                ],
                vec![select(None, Some("pool-1"), None)],
                vec![
                    s1(vec![device("device-1", tainted())]),
                    s2(vec![device("device-2", vec![])]),
                ],
            ),
            (
                "add-taint-for-device",
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", vec![])]),
                ],
                vec![select(None, None, Some("device-1"))],
                vec![
                    s1(vec![device("device-1", tainted())]),
                    s2(vec![device("device-2", vec![])]),
                ],
            ),
            (
                "filter-all-criteria",
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", vec![])]),
                ],
                vec![select(Some("driver-1"), Some("pool-1"), Some("device-1"))],
                vec![
                    s1(vec![device("device-1", tainted())]),
                    s2(vec![device("device-2", vec![])]),
                ],
            ),
            (
                "update-patched-slice",
                vec![s1(three(false)), s2(vec![device("device-1", vec![])])],
                vec![select(None, None, Some("device-1"))],
                vec![s1(three(true)), s2(vec![device("device-1", tainted())])],
            ),
            (
                "nil-selector-matches-none",
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", vec![])]),
                ],
                vec![rule(None)],
                vec![
                    s1(vec![device("device-1", vec![])]),
                    s2(vec![device("device-2", vec![])]),
                ],
            ),
        ];
        for (name, slices, rules, want) in cases {
            let resources = DeviceResources::new();
            for slice in slices {
                resources.apply_slice(slice);
            }
            for rule in rules {
                resources.apply_taint_rule(rule);
            }
            let got: Vec<ResourceSlice> = resources
                .slices_with_taint_rules()
                .iter()
                .map(|s| s.as_ref().clone())
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn patched_slices_are_made_again_only_after_a_change() {
        let resources = DeviceResources::new();
        let first = resources.slices_with_taint_rules();
        assert!(Arc::ptr_eq(&first, &resources.slices_with_taint_rules()));
        resources.apply_taint_rule(DeviceTaintRule::default());
        assert!(!Arc::ptr_eq(&first, &resources.slices_with_taint_rules()));
    }
}
