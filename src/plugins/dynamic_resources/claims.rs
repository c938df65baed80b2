//! A pod's ResourceClaims: resolving `spec.resourceClaims` (upstream
//! `foreachPodResourceClaim`), reservations, binding conditions, and the claim the
//! scheduler makes for a pod's extended resources backed by DeviceClasses (upstream
//! `createRequestsAndMappings`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, ContainerExtendedResourceRequest, Pod};
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceRequest, ExactDeviceRequest, ResourceClaim,
};
use kube::ResourceExt;

pub use crate::cluster::reserved_for;
use crate::cluster::{DeviceResources, allocated_devices, parse_nanos_exact};

/// The finalizer the scheduler puts on a claim it allocates.
pub const FINALIZER: &str = "resource.kubernetes.io/delete-protection";
/// The annotation of the claim made for a pod's extended resources.
pub const EXTENDED_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/extended-resource-claim";
/// The name of that claim until it is created (deliberately not a valid name).
pub const EXTENDED_CLAIM_NAME: &str = "<extended-resources>";

/// `namespace/name` of an object (klog's `KObj`).
pub fn kobj(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    }
}

fn pod_kobj(pod: &Pod) -> String {
    kobj(
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// The pod's claims, in `spec.resourceClaims` order (a template whose claim is not
/// needed skipped), or upstream's message for the first that cannot be used.
pub fn pod_claims(
    resources: &DeviceResources,
    pod: &Pod,
) -> Result<Vec<Arc<ResourceClaim>>, String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let pod_claims = pod.spec.as_ref().and_then(|s| s.resource_claims.as_ref());
    let mut claims = Vec::new();
    for pod_claim in pod_claims.into_iter().flatten() {
        let (name, must_check_owner) = if let Some(name) = &pod_claim.resource_claim_name {
            (Some(name.clone()), false)
        } else if pod_claim.resource_claim_template_name.is_some() {
            let statuses = pod
                .status
                .as_ref()
                .and_then(|s| s.resource_claim_statuses.as_ref());
            let Some(status) = statuses
                .into_iter()
                .flatten()
                .find(|s| s.name == pod_claim.name)
            else {
                return Err(format!(
                    "pod \"{}\": ResourceClaim not created yet",
                    pod_kobj(pod)
                ));
            };
            (status.resource_claim_name.clone(), true)
        } else {
            return Err(format!(
                "pod \"{}\", spec.resourceClaim {:?}: none of the supported fields are set",
                pod_kobj(pod),
                pod_claim.name
            ));
        };
        // A template's claim that is not needed: nothing to allocate.
        let Some(name) = name else { continue };
        let Some(claim) = resources.claim(namespace, &name) else {
            return Err(format!(
                "could not find ResourceClaim \"{}\"",
                kobj(namespace, &name)
            ));
        };
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("resourceclaim {name:?} is being deleted"));
        }
        if must_check_owner && !is_controlled_by(&claim, pod) {
            return Err(format!(
                "ResourceClaim {} was not created for Pod {} (Pod is not owner)",
                kobj(namespace, &name),
                pod_kobj(pod)
            ));
        }
        claims.push(claim);
    }
    Ok(claims)
}

/// Whether the pod controls `claim` (an owner reference with `controller: true` and the
/// pod's UID).
pub fn is_controlled_by(claim: &ResourceClaim, pod: &Pod) -> bool {
    pod.metadata
        .uid
        .as_deref()
        .is_some_and(|uid| crate::cluster::is_controlled_by(claim, uid))
}

/// The claim's `spec.devices.requests`.
pub fn claim_requests(claim: &ResourceClaim) -> Option<&Vec<DeviceRequest>> {
    claim.spec.as_ref()?.devices.as_ref()?.requests.as_ref()
}

pub fn allocation(claim: &ResourceClaim) -> Option<&AllocationResult> {
    claim.status.as_ref()?.allocation.as_ref()
}

/// Upstream `isClaimReadyForBinding`: every device with binding conditions has them all
/// True in the claim's device status; an error when a binding failure condition is True.
pub fn ready_for_binding(claim: &ResourceClaim) -> Result<bool, String> {
    let results = allocated_devices(claim);
    let statuses = claim.status.as_ref().and_then(|s| s.devices.as_ref());
    for result in results {
        let conditions = result.binding_conditions.as_deref().unwrap_or_default();
        if conditions.is_empty() {
            continue;
        }
        let Some(status) = statuses.into_iter().flatten().find(|d| {
            d.driver == result.driver && d.pool == result.pool && d.device == result.device
        }) else {
            return Ok(false);
        };
        let device_conditions = status.conditions.as_deref().unwrap_or_default();
        let true_condition = |kind: &str| {
            device_conditions
                .iter()
                .find(|c| c.type_ == kind && c.status == "True")
        };
        let failures = result
            .binding_failure_conditions
            .as_deref()
            .unwrap_or_default();
        if let Some(failed) = failures.iter().find_map(|f| true_condition(f)) {
            return Err(format!(
                "device binding failed: claim={}, reason={}, message={:?}",
                claim.name_any(),
                failed.reason,
                failed.message
            ));
        }
        if conditions.iter().any(|c| true_condition(c).is_none()) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Upstream `isClaimTimeout`: allocated with binding conditions longer ago than `timeout`.
pub fn binding_timed_out(
    claim: &ResourceClaim,
    timeout: std::time::Duration,
    now: k8s_openapi::jiff::Timestamp,
) -> bool {
    let Some(allocation) = allocation(claim) else {
        return false;
    };
    let Some(at) = &allocation.allocation_timestamp else {
        return false;
    };
    let has_conditions = allocation
        .devices
        .as_ref()
        .and_then(|d| d.results.as_ref())
        .is_some_and(|r| r.iter().any(|r| r.binding_conditions.is_some()));
    let Ok(timeout) = k8s_openapi::jiff::SignedDuration::try_from(timeout) else {
        return false;
    };
    has_conditions && at.0.saturating_add(timeout).is_ok_and(|end| end < now)
}

/// Whether `name` is a resource a DeviceClass may serve: an extended resource name, or
/// a class's implicit `deviceclass.resource.kubernetes.io/<class>`.
pub fn is_dra_extended_resource_name(name: &str) -> bool {
    crate::cluster::is_extended_resource_name(name)
        || name.starts_with(crate::cluster::IMPLICIT_EXTENDED_RESOURCE_PREFIX)
}

/// The requests and container mappings of the claim for `resources` (extended resource
/// → quantity this node must serve through DRA), by upstream's rules: one request per
/// container and resource, named `container-<i>-request-<j>` (`i` the container's
/// position among init and app containers, `j` the resource's among the container's
/// sorted requests), counting `exactCount` devices; an init container reuses the
/// devices of long-lived containers that start after it, and the init containers'
/// requests for one resource collapse into the largest.
pub fn requests_and_mappings(
    pod: &Pod,
    resources: &BTreeMap<String, i64>,
    class_of: impl Fn(&str) -> Option<String>,
) -> (Vec<DeviceRequest>, Vec<ContainerExtendedResourceRequest>) {
    let Some(spec) = pod.spec.as_ref() else {
        return (Vec::new(), Vec::new());
    };
    let containers: Vec<&Container> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .collect();
    let init_count = spec.init_containers.as_ref().map_or(0, Vec::len);
    let long_lived =
        |i: usize| i >= init_count || containers[i].restart_policy.as_deref() == Some("Always");
    let mut requests = Vec::new();
    let mut mappings = Vec::new();
    for name in resources.keys() {
        let Some(class) = class_of(name) else {
            continue;
        };
        let mut long: Vec<Option<DeviceRequest>> = vec![None; containers.len()];
        let mut long_mappings = Vec::new();
        for (i, container) in containers.iter().enumerate() {
            if !long_lived(i) {
                continue;
            }
            let (request, maps) = container_request(i, container, name, &class, &[]);
            long[i] = request;
            long_mappings.extend(maps);
        }
        let mut short: Vec<DeviceRequest> = Vec::new();
        let mut short_mappings = Vec::new();
        for (i, container) in containers.iter().enumerate() {
            if long_lived(i) {
                continue;
            }
            let (request, maps) = container_request(i, container, name, &class, &long[i..]);
            short.extend(request);
            short_mappings.extend(maps);
        }
        let count = |r: &DeviceRequest| r.exactly.as_ref().and_then(|e| e.count).unwrap_or(0);
        let short_names: Vec<String> = short.iter().map(|r| r.name.clone()).collect();
        let mut kept: Option<DeviceRequest> = None;
        for request in short {
            if kept.as_ref().is_none_or(|k| count(&request) > count(k)) {
                kept = Some(request);
            }
        }
        if let Some(kept) = &kept {
            for mapping in &mut short_mappings {
                if short_names.contains(&mapping.request_name) {
                    mapping.request_name = kept.name.clone();
                }
            }
        }
        requests.extend(kept);
        requests.extend(long.into_iter().flatten());
        mappings.extend(long_mappings);
        mappings.extend(short_mappings);
    }
    requests.sort_by(|a, b| a.name.cmp(&b.name));
    (requests, mappings)
}

/// Upstream `createResourceRequestAndMappings` for container `i`.
fn container_request(
    i: usize,
    container: &Container,
    resource: &str,
    class: &str,
    reusable: &[Option<DeviceRequest>],
) -> (Option<DeviceRequest>, Vec<ContainerExtendedResourceRequest>) {
    let requests = container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref());
    let Some(requests) = requests else {
        return (None, Vec::new());
    };
    let Some(quantity) = requests.get(resource) else {
        return (None, Vec::new());
    };
    let wanted = match parse_nanos_exact(resource, quantity) {
        Ok(nanos) if nanos % 1_000_000_000 == 0 => {
            i64::try_from(nanos / 1_000_000_000).unwrap_or(0)
        }
        _ => 0,
    };
    if wanted == 0 {
        return (None, Vec::new());
    }
    let mut mappings = Vec::new();
    let mut sum = 0i64;
    for request in reusable.iter().flatten() {
        sum += request.exactly.as_ref().and_then(|e| e.count).unwrap_or(0);
        mappings.push(ContainerExtendedResourceRequest {
            container_name: container.name.clone(),
            resource_name: resource.to_string(),
            request_name: request.name.clone(),
        });
        if sum >= wanted {
            return (None, mappings);
        }
    }
    let index = requests.keys().position(|k| k == resource).unwrap_or(0);
    let name = format!("container-{i}-request-{index}");
    mappings.push(ContainerExtendedResourceRequest {
        container_name: container.name.clone(),
        resource_name: resource.to_string(),
        request_name: name.clone(),
    });
    let request = DeviceRequest {
        name,
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.to_string(),
            allocation_mode: Some("ExactCount".into()),
            count: Some(wanted - sum),
            ..Default::default()
        }),
        ..Default::default()
    };
    (Some(request), mappings)
}

/// Upstream's Score (`computeScore`): for every `firstAvailable` request, 8 − i for the
/// i-th subrequest chosen; the allocations of the claims not allocated yet in order.
pub fn prioritized_list_score(
    claims: &[Arc<ResourceClaim>],
    results: &[AllocationResult],
) -> Result<i64, String> {
    let mut next = 0;
    let mut score = 0;
    for claim in claims {
        let allocation = match allocation(claim) {
            Some(a) => a,
            None => {
                let Some(a) = results.get(next) else {
                    return Err(format!(
                        "number of allocations {} is smaller than number of claims needing allocation",
                        results.len()
                    ));
                };
                next += 1;
                a
            }
        };
        let chosen: HashMap<&str, ()> = allocation
            .devices
            .as_ref()
            .and_then(|d| d.results.as_ref())
            .into_iter()
            .flatten()
            .map(|r| r.request.as_str())
            .filter(|r| r.matches('/').count() == 1)
            .map(|r| (r, ()))
            .collect();
        for request in claim_requests(claim).into_iter().flatten() {
            for (i, sub) in request.first_available.iter().flatten().enumerate() {
                if chosen.contains_key(format!("{}/{}", request.name, sub.name).as_str()) {
                    score += 8 - i as i64;
                }
            }
        }
    }
    Ok(score)
}

/// Whether the claim has the scheduler's finalizer.
pub fn has_finalizer(claim: &ResourceClaim) -> bool {
    claim.finalizers().iter().any(|f| f == FINALIZER)
}
