//! Dynamic resource allocation in `berth simulate`: the input's resource.k8s.io objects
//! in the [`DeviceResources`] lister, the claims the resourceclaim controller makes from
//! templates for the pending pods, and [`InMemoryClaimWriter`], which applies what
//! DynamicResources writes to the lister as the API server and its watch would.
//!
//! The resourceclaim controller names a template's claim `<pod>-<claim>-<5 characters>`
//! (the API server's `generateName`; the characters here come from the names, so a run
//! repeats), owns it by the pod, marks it with `resource.kubernetes.io/pod-claim-name`
//! and records it in the pod's `status.resourceClaimStatuses`. A preempted pod's
//! reservations are removed and a claim reserved for nobody is deallocated, as the
//! controller does when a pod is deleted. `berth bench` reuses both for the pods it
//! creates and deletes ([`make_pod_template_claims`], [`delete_pod_claims`], which also
//! deletes the claims made for the pod, as the garbage collector does).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Pod, PodExtendedResourceClaimStatus, PodResourceClaimStatus};
use k8s_openapi::api::resource::v1::ResourceClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;

use super::input::{ClusterInput, name_suffix};
use super::report::PodDevice;
use super::storage::StorageEvents;
use crate::cluster::{
    DeviceResources, allocated_devices, is_controlled_by, pod_key, reserved_for, resource_version,
};
use crate::framework::{ActionType, ClaimWriter, EventResource, WriteError};

/// The annotation the resourceclaim controller puts on a template's claim.
pub const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// The lister with every resource.k8s.io object of the input, served.
pub fn device_resources(input: &ClusterInput) -> Arc<DeviceResources> {
    let resources = DeviceResources::new();
    input
        .resource_slices
        .iter()
        .for_each(|s| resources.apply_slice(s.clone()));
    input
        .device_classes
        .iter()
        .for_each(|c| resources.apply_class(c.clone()));
    input
        .device_taint_rules
        .iter()
        .for_each(|r| resources.apply_taint_rule(r.clone()));
    input
        .resource_claim_templates
        .iter()
        .for_each(|t| resources.apply_template(t.clone()));
    input
        .resource_claims
        .iter()
        .for_each(|c| resources.apply_claim(with_version(c.clone())));
    resources.set_served();
    Arc::new(resources)
}

fn with_version(mut claim: ResourceClaim) -> ResourceClaim {
    claim
        .metadata
        .resource_version
        .get_or_insert_with(|| "1".into());
    claim
}

/// The resourceclaim controller's work for the pods not yet bound: a claim from each
/// template a pod names and has no claim for, recorded in the pod's status. A template
/// that does not exist leaves the pod without its claim, as in a cluster (DynamicResources
/// then keeps the pod waiting: `ResourceClaim not created yet`).
pub fn make_template_claims(input: &mut ClusterInput, resources: &DeviceResources) {
    for pod in input.pods.iter_mut() {
        let bound = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if !bound {
            make_pod_template_claims(pod, resources);
        }
    }
}

/// The resourceclaim controller for one pending pod: a claim from each template the pod
/// names and has no claim for, stored in `resources` and recorded in the pod's
/// `status.resourceClaimStatuses` (see [`make_template_claims`]).
pub fn make_pod_template_claims(pod: &mut Pod, resources: &DeviceResources) {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let claims = pod
        .spec
        .as_ref()
        .and_then(|s| s.resource_claims.clone())
        .unwrap_or_default();
    for pod_claim in claims {
        let Some(template_name) = &pod_claim.resource_claim_template_name else {
            continue;
        };
        let statuses = pod
            .status
            .get_or_insert_default()
            .resource_claim_statuses
            .get_or_insert_default();
        if statuses.iter().any(|s| s.name == pod_claim.name) {
            continue;
        }
        let Some(template) = resources.template(&namespace, template_name) else {
            continue;
        };
        let template_spec = template.spec.clone().unwrap_or_default();
        let template_meta = template_spec.metadata.unwrap_or_default();
        let prefix = format!("{pod_name}-{}-", pod_claim.name);
        let name = format!("{prefix}{}", name_suffix(&format!("{namespace}/{prefix}")));
        let mut annotations = template_meta.annotations.unwrap_or_default();
        annotations.insert(POD_CLAIM_NAME_ANNOTATION.into(), pod_claim.name.clone());
        let claim = ResourceClaim {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                uid: Some(super::input::deterministic_uid(&format!(
                    "ResourceClaim/{namespace}/{name}"
                ))),
                resource_version: Some("1".into()),
                generate_name: Some(prefix),
                labels: template_meta.labels,
                annotations: Some(annotations),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    name: pod_name.clone(),
                    uid: uid.clone(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..Default::default()
            },
            spec: template_spec.spec,
            status: None,
        };
        resources.apply_claim(claim);
        statuses.push(PodResourceClaimStatus {
            name: pod_claim.name.clone(),
            resource_claim_name: Some(name),
        });
    }
}

/// The resourceclaim controller and the garbage collector on the deletion of a bound
/// `pod`: its reservations removed from the claims it names, a claim reserved for nobody
/// after that deallocated, and the claims made for it from templates (owned by it)
/// deleted. Unlike [`release_pod_claims`] it looks up only the pod's own claims, by name,
/// since a claim is reserved only for pods that name it. Whether a claim changed.
pub fn delete_pod_claims(resources: &DeviceResources, pod: &Pod) -> bool {
    let Some(uid) = pod.metadata.uid.as_deref() else {
        return false;
    };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_deref())
        .unwrap_or_default();
    let pod_claims = pod
        .spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_deref())
        .unwrap_or_default();
    let mut changed = false;
    for pod_claim in pod_claims {
        let name = match &pod_claim.resource_claim_name {
            Some(name) => Some(name.as_str()),
            None => statuses
                .iter()
                .find(|s| s.name == pod_claim.name)
                .and_then(|s| s.resource_claim_name.as_deref()),
        };
        let Some(claim) = name.and_then(|name| resources.claim(namespace, name)) else {
            continue;
        };
        if is_controlled_by(&claim, uid) {
            resources.delete_claim(&claim);
            changed = true;
            continue;
        }
        if let Some(released) = without_reservation(&claim, uid) {
            resources.apply_claim(released);
            changed = true;
        }
    }
    changed
}

/// The resourceclaim controller on a pod's deletion (a preemption victim): the pod's
/// reservations removed, and a claim reserved for nobody after that deallocated. Whether
/// a claim changed.
pub fn release_pod_claims(resources: &DeviceResources, pod: &Pod) -> bool {
    let mut changed = false;
    let Some(uid) = pod.metadata.uid.as_deref() else {
        return false;
    };
    for claim in resources.claims() {
        if let Some(released) = without_reservation(&claim, uid) {
            resources.apply_claim(released);
            changed = true;
        }
    }
    changed
}

/// `claim` with the reservation for the pod with `uid` removed, and deallocated when no
/// reservation is left; `None` when it holds none for that pod.
fn without_reservation(claim: &ResourceClaim, uid: &str) -> Option<ResourceClaim> {
    if !reserved_for(claim, uid) {
        return None;
    }
    let mut released = claim.clone();
    let status = released.status.get_or_insert_default();
    if let Some(reserved_for) = status.reserved_for.as_mut() {
        reserved_for.retain(|c| c.uid != uid);
        if reserved_for.is_empty() {
            status.reserved_for = None;
            status.allocation = None;
            status.devices = None;
        }
    }
    bump(&mut released);
    Some(released)
}

/// The devices allocated to the claims reserved for `pod`, by claim name.
pub fn pod_devices(resources: &DeviceResources, pod: &Pod) -> Vec<PodDevice> {
    let (Some(uid), namespace) = (
        pod.metadata.uid.as_deref(),
        pod.metadata.namespace.as_deref(),
    ) else {
        return Vec::new();
    };
    let mut claims: Vec<Arc<ResourceClaim>> = resources
        .claims()
        .into_iter()
        .filter(|c| c.metadata.namespace.as_deref() == namespace)
        .filter(|c| reserved_for(c, uid))
        .collect();
    claims.sort_by_key(|c| c.name_any());
    let mut devices = Vec::new();
    for claim in claims {
        for result in allocated_devices(&claim) {
            devices.push(PodDevice {
                claim: claim.name_any(),
                request: result.request.clone(),
                device: format!("{}/{}/{}", result.driver, result.pool, result.device),
            });
        }
    }
    devices
}

fn bump(claim: &mut ResourceClaim) {
    let next = resource_version(claim) + 1;
    claim.metadata.resource_version = Some(next.to_string());
}

/// The [`ClaimWriter`] of `berth simulate`; see the module documentation.
pub struct InMemoryClaimWriter {
    resources: Arc<DeviceResources>,
    /// Where the claim changes go, for the driver to deliver as watch events.
    events: Arc<StorageEvents>,
    /// The extended-resource claim status of each pod, by pod key.
    pod_statuses: Mutex<BTreeMap<String, PodExtendedResourceClaimStatus>>,
}

impl InMemoryClaimWriter {
    pub fn new(resources: Arc<DeviceResources>, events: Arc<StorageEvents>) -> InMemoryClaimWriter {
        InMemoryClaimWriter {
            resources,
            events,
            pod_statuses: Mutex::default(),
        }
    }

    /// The stored claim, or the API server's NotFound.
    fn stored(&self, namespace: &str, name: &str) -> Result<Arc<ResourceClaim>, WriteError> {
        self.resources.api_claim(namespace, name).ok_or_else(|| {
            WriteError::NotFound(format!(
                "resourceclaims.resource.k8s.io \"{name}\" not found"
            ))
        })
    }

    /// A whole-object update: a conflict on a stale resourceVersion, else stored with
    /// the next one; `status_only` keeps the stored metadata and spec, else the status.
    fn update(
        &self,
        claim: &ResourceClaim,
        status_only: bool,
    ) -> Result<ResourceClaim, WriteError> {
        let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
        let name = claim.name_any();
        let stored = self.stored(namespace, &name)?;
        if resource_version(&*stored) != resource_version(claim) {
            return Err(WriteError::Conflict(format!(
                "Operation cannot be fulfilled on resourceclaims.resource.k8s.io \"{name}\": the \
                 object has been modified; please apply your changes to the latest version and \
                 try again"
            )));
        }
        let mut updated = if status_only {
            ResourceClaim {
                status: claim.status.clone(),
                ..(*stored).clone()
            }
        } else {
            ResourceClaim {
                status: stored.status.clone(),
                ..claim.clone()
            }
        };
        bump(&mut updated);
        self.resources.apply_claim(updated.clone());
        self.events
            .push(EventResource::ResourceClaim, ActionType::UPDATE);
        Ok(updated)
    }

    /// The extended-resource claim status written for the pod with `key`, if any.
    pub fn extended_resource_claim_status(
        &self,
        key: &str,
    ) -> Option<PodExtendedResourceClaimStatus> {
        self.pod_statuses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }
}

#[async_trait]
impl ClaimWriter for InMemoryClaimWriter {
    async fn get_claim(&self, namespace: &str, name: &str) -> Result<ResourceClaim, WriteError> {
        self.stored(namespace, name).map(|c| (*c).clone())
    }

    async fn create_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        let namespace = claim.metadata.namespace.clone().unwrap_or_default();
        let prefix = claim.metadata.generate_name.clone().unwrap_or_default();
        let name = match claim.metadata.name.clone().filter(|n| !n.is_empty()) {
            Some(name) => name,
            None => format!("{prefix}{}", name_suffix(&format!("{namespace}/{prefix}"))),
        };
        if self.resources.api_claim(&namespace, &name).is_some() {
            return Err(WriteError::Other(format!(
                "resourceclaims.resource.k8s.io \"{name}\" already exists"
            )));
        }
        let mut created = claim.clone();
        created.metadata.uid = Some(super::input::deterministic_uid(&format!(
            "ResourceClaim/{namespace}/{name}"
        )));
        created.metadata.name = Some(name);
        created.metadata.resource_version = Some("1".into());
        self.resources.apply_claim(created.clone());
        self.events
            .push(EventResource::ResourceClaim, ActionType::ADD);
        Ok(created)
    }

    async fn update_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        self.update(claim, false)
    }

    async fn update_claim_status(
        &self,
        claim: &ResourceClaim,
    ) -> Result<ResourceClaim, WriteError> {
        self.update(claim, true)
    }

    async fn remove_reservation(
        &self,
        claim: &ResourceClaim,
        pod_uid: &str,
    ) -> Result<(), WriteError> {
        let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
        let mut stored = (*self.stored(namespace, &claim.name_any())?).clone();
        if stored.metadata.uid != claim.metadata.uid {
            return Err(WriteError::Conflict("the claim's UID changed".into()));
        }
        if let Some(reserved) = stored.status.as_mut().and_then(|s| s.reserved_for.as_mut()) {
            reserved.retain(|c| c.uid != pod_uid);
        }
        bump(&mut stored);
        self.resources.apply_claim(stored);
        self.events
            .push(EventResource::ResourceClaim, ActionType::UPDATE);
        Ok(())
    }

    async fn delete_claim(&self, namespace: &str, name: &str) -> Result<(), WriteError> {
        let stored = self.stored(namespace, name)?;
        self.resources.delete_claim(&stored);
        self.events
            .push(EventResource::ResourceClaim, ActionType::DELETE);
        Ok(())
    }

    async fn set_extended_resource_claim_status(
        &self,
        pod: &Pod,
        status: &PodExtendedResourceClaimStatus,
    ) -> Result<(), WriteError> {
        self.pod_statuses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pod_key(pod), status.clone());
        Ok(())
    }
}
