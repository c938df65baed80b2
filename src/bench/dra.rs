//! The resource.k8s.io objects of upstream's DRA workloads (`dra/templates/`, v1.37.2),
//! built in memory, and upstream's `allocResourceClaims` op.
//!
//! Upstream creates them with `createAny` from templates: one ResourceSlice per DRA node
//! (`resourceslice-basic-devices.yaml`, ten devices with the attributes and capacities of
//! an Intel GPU, whose PCI root cycles through two values), the DeviceClass `test-class`
//! (a CEL selector on the driver), the init claims (`resourceclaim.yaml`, one device of
//! the class each) and `test-claim-template` (`resourceclaimtemplate.yaml` with one
//! request, no selectors and no constraints). The controllers of upstream's test
//! cluster are mirrored by `berth simulate`'s: the claims made from the template come
//! from [`crate::simulate::claims`].
//!
//! [`alloc_resource_claims`] is `allocResourceClaims`: each unallocated claim of the
//! namespace, in the API server's list order (by name), is allocated by the allocator
//! DynamicResources runs, on the first node of a shuffled node list where it fits, and
//! stored with `status.allocation` only: no finalizer and no `reservedFor`, so these
//! claims hold their devices for the whole run. One deliberate difference: upstream
//! shuffles with an unseeded `math/rand`, berth with a generator seeded by `--seed`, so
//! that a run's cluster can be repeated.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{
    CELDeviceSelector, Device, DeviceAttribute, DeviceCapacity, DeviceClaim, DeviceClass,
    DeviceClassSpec, DeviceRequest, DeviceSelector, ExactDeviceRequest, ResourceClaim,
    ResourceClaimSpec, ResourceClaimStatus, ResourceClaimTemplate, ResourceClaimTemplateSpec,
    ResourcePool, ResourceSlice, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use rand::SeedableRng;
use rand::seq::SliceRandom;

use super::workload::{CLAIM_TEMPLATE, DEVICES_PER_NODE, TEST_NAMESPACE, dra_node_name};
use crate::cluster::{DeviceResources, is_allocated};
use crate::dra::allocator::{AllocatedState, Allocator};
use crate::dra::cel::Selectors;
use crate::simulate::input::{default_claim_spec, deterministic_uid};
use crate::simulate::run::SimulateError;

/// The driver of every slice (upstream's test driver).
pub const DRA_DRIVER: &str = "test-driver.cdi.k8s.io";
/// The DeviceClass every request names.
pub const DRA_CLASS: &str = "test-class";
/// The template's `numPCIRoots` default.
pub const PCI_ROOTS: u64 = 2;
/// The name of the one request of every claim.
pub const REQUEST: &str = "req-0";

/// The name of the ResourceSlice, and of its pool, of node `index`.
pub fn resource_slice_name(index: u64) -> String {
    format!("resourceslice-{index}")
}

/// The ResourceSlice of DRA node `index`: one pool of its own, with `devices` devices
/// `basic-device-<k>` whose PCI root is `k mod pci_roots`.
pub fn resource_slice(index: u64, devices: u64, pci_roots: u64) -> ResourceSlice {
    let name = resource_slice_name(index);
    let devices = (0..devices)
        .map(|k| {
            let root = k % pci_roots.max(1);
            let string = |value: String| DeviceAttribute {
                string: Some(value),
                ..Default::default()
            };
            let attributes = BTreeMap::from([
                ("driver".to_string(), string("xe".into())),
                (
                    "driverVersion".to_string(),
                    DeviceAttribute {
                        version: Some("1.2.3".into()),
                        ..Default::default()
                    },
                ),
                (
                    "resource.k8s.io/pciRoot".to_string(),
                    string(root.to_string()),
                ),
                ("family".to_string(), string("Arc Pro B-Series".into())),
                ("health".to_string(), string("Healthy".into())),
                ("model".to_string(), string("B60".into())),
                ("pciAddress".to_string(), string(format!("0000:0{k}:00.0"))),
                ("pciId".to_string(), string("0xe211".into())),
                ("pciRoot".to_string(), string(format!("0{root}"))),
                (
                    "resource.kubernetes.io/pciBusID".to_string(),
                    string(format!("0000:0{k}:00.0")),
                ),
                (
                    "resource.kubernetes.io/pciRoot".to_string(),
                    string(format!("pci0000:0{root}")),
                ),
                (
                    "sriov".to_string(),
                    DeviceAttribute {
                        bool: Some(true),
                        ..Default::default()
                    },
                ),
                ("type".to_string(), string("gpu".into())),
            ]);
            let capacity = |value: &str| DeviceCapacity {
                value: Quantity(value.to_string()),
                request_policy: None,
            };
            Device {
                name: format!("basic-device-{k}"),
                attributes: Some(attributes),
                capacity: Some(BTreeMap::from([
                    ("memory".to_string(), capacity("24480Mi")),
                    ("millicores".to_string(), capacity("1k")),
                ])),
                ..Default::default()
            }
        })
        .collect();
    ResourceSlice {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        spec: ResourceSliceSpec {
            driver: DRA_DRIVER.to_string(),
            pool: ResourcePool {
                name,
                generation: 1,
                resource_slice_count: 1,
            },
            node_name: Some(dra_node_name(index)),
            devices: Some(devices),
            ..Default::default()
        },
    }
}

/// `test-class`: every device of the test driver.
pub fn device_class() -> DeviceClass {
    DeviceClass {
        metadata: ObjectMeta {
            name: Some(DRA_CLASS.to_string()),
            ..Default::default()
        },
        spec: Some(DeviceClassSpec {
            selectors: Some(vec![DeviceSelector {
                cel: Some(CELDeviceSelector {
                    expression: format!("device.driver == \"{DRA_DRIVER}\""),
                }),
            }]),
            ..Default::default()
        }),
    }
}

/// One device of `test-class`. Upstream's templates leave the allocation mode and the
/// count out; the API server defaults them (ExactCount, 1), as `berth simulate` does.
fn claim_spec() -> ResourceClaimSpec {
    let mut spec = ResourceClaimSpec {
        devices: Some(DeviceClaim {
            requests: Some(vec![DeviceRequest {
                name: REQUEST.to_string(),
                exactly: Some(ExactDeviceRequest {
                    device_class_name: DRA_CLASS.to_string(),
                    ..Default::default()
                }),
                first_available: None,
            }]),
            ..Default::default()
        }),
    };
    default_claim_spec(&mut spec);
    spec
}

/// Init claim `index`, `test-claim-<index>` in `namespace`, as the API server stores it
/// (a UID and a resourceVersion).
pub fn init_claim(namespace: &str, index: u64) -> ResourceClaim {
    let name = format!("test-claim-{index}");
    ResourceClaim {
        metadata: ObjectMeta {
            uid: Some(deterministic_uid(&format!(
                "ResourceClaim/{namespace}/{name}"
            ))),
            name: Some(name),
            namespace: Some(namespace.to_string()),
            resource_version: Some("1".to_string()),
            ..Default::default()
        },
        spec: Some(claim_spec()),
        status: None,
    }
}

/// `test-claim-template` in the measured pods' namespace.
pub fn claim_template() -> ResourceClaimTemplate {
    ResourceClaimTemplate {
        metadata: ObjectMeta {
            name: Some(CLAIM_TEMPLATE.to_string()),
            namespace: Some(TEST_NAMESPACE.to_string()),
            ..Default::default()
        },
        spec: Some(ResourceClaimTemplateSpec {
            metadata: None,
            spec: Some(claim_spec()),
        }),
    }
}

/// The workload template's `createAny` ops before the init claims, for `nodes` DRA
/// nodes: a slice of [`DEVICES_PER_NODE`] devices per node, the class and the template.
pub fn publish(resources: &DeviceResources, nodes: u64) {
    for index in 0..nodes {
        resources.apply_slice(resource_slice(index, DEVICES_PER_NODE, PCI_ROOTS));
    }
    resources.apply_class(device_class());
    resources.apply_template(claim_template());
}

/// `createAny` of `count` init claims in `namespace`.
pub fn create_init_claims(resources: &DeviceResources, namespace: &str, count: u64) {
    for index in 0..count {
        resources.apply_claim(init_claim(namespace, index));
    }
}

/// `allocResourceClaims`: every unallocated claim of `namespace` allocated on a node of
/// `nodes`, the nodes shuffled for each claim by a generator seeded with `seed` (see the
/// module documentation). Fails when a claim fits no node, as upstream's op does.
pub fn alloc_resource_claims(
    resources: &Arc<DeviceResources>,
    namespace: &str,
    nodes: &[Node],
    seed: u64,
) -> Result<(), SimulateError> {
    let claims: Vec<Arc<ResourceClaim>> = resources
        .claims()
        .into_iter()
        .filter(|c| c.metadata.namespace.as_deref() == Some(namespace))
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let selectors = Arc::new(Selectors::new());
    let slices = resources.slices_with_taint_rules();
    // Kept up to date claim by claim rather than rebuilt from every allocated claim, as
    // upstream rebuilds it: the same state, without a cost quadratic in the claims.
    let mut allocated = Arc::new(AllocatedState::of(
        resources.allocated_claims().iter().map(Arc::as_ref),
    ));
    let mut order: Vec<&Node> = nodes.iter().collect();
    for (i, claim) in claims.iter().enumerate() {
        if is_allocated(claim) {
            continue;
        }
        let allocator = Allocator::new(
            allocated.clone(),
            resources.clone(),
            slices.clone(),
            selectors.clone(),
        );
        order.shuffle(&mut rng);
        let mut found = None;
        for node in &order {
            let result = allocator
                .allocate(node, &[claim.as_ref()], None)
                .map_err(|e| {
                    SimulateError::Internal(format!("allocate claim {}: {e}", claim.name_any()))
                })?;
            if let Some(mut results) = result {
                found = results.pop();
                break;
            }
        }
        drop(allocator);
        let Some(allocation) = found else {
            return Err(SimulateError::Internal(format!(
                "could not allocate claim {i} out of {}",
                claims.len()
            )));
        };
        let mut stored = (**claim).clone();
        stored.status = Some(ResourceClaimStatus {
            allocation: Some(allocation),
            ..Default::default()
        });
        let version = crate::cluster::resource_version(&stored) + 1;
        stored.metadata.resource_version = Some(version.to_string());
        Arc::make_mut(&mut allocated).add(&stored);
        resources.apply_claim(stored);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::bench::workload::dra_node;

    #[test]
    fn slices_are_upstreams_template() {
        // resourceslice-basic-devices.yaml with numDevices 10 and numPCIRoots 2.
        for index in [0, 499] {
            let slice = resource_slice(index, 10, 2);
            assert_eq!(slice.name_any(), format!("resourceslice-{index}"));
            assert_eq!(slice.spec.pool.name, format!("resourceslice-{index}"));
            assert_eq!(
                (
                    slice.spec.pool.generation,
                    slice.spec.pool.resource_slice_count
                ),
                (1, 1)
            );
            assert_eq!(slice.spec.driver, "test-driver.cdi.k8s.io");
            assert_eq!(
                slice.spec.node_name,
                Some(format!("scheduler-perf-dra-{index}"))
            );
            let devices = slice.spec.devices.unwrap_or_default();
            let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
            assert_eq!(
                names,
                [
                    "basic-device-0",
                    "basic-device-1",
                    "basic-device-2",
                    "basic-device-3",
                    "basic-device-4",
                    "basic-device-5",
                    "basic-device-6",
                    "basic-device-7",
                    "basic-device-8",
                    "basic-device-9"
                ]
            );
            let device = &devices[3];
            let attributes = device.attributes.clone().unwrap_or_default();
            assert_eq!(attributes.len(), 13);
            let string = |key: &str| attributes[key].string.clone().unwrap_or_default();
            assert_eq!(string("resource.k8s.io/pciRoot"), "1");
            assert_eq!(string("pciRoot"), "01");
            assert_eq!(string("resource.kubernetes.io/pciRoot"), "pci0000:01");
            assert_eq!(string("pciAddress"), "0000:03:00.0");
            assert_eq!(string("resource.kubernetes.io/pciBusID"), "0000:03:00.0");
            assert_eq!(string("model"), "B60");
            assert_eq!(
                attributes["driverVersion"].version.as_deref(),
                Some("1.2.3")
            );
            assert_eq!(attributes["sriov"].bool, Some(true));
            let capacity = device.capacity.clone().unwrap_or_default();
            assert_eq!(capacity["memory"].value, Quantity("24480Mi".into()));
            assert_eq!(capacity["millicores"].value, Quantity("1k".into()));
            let roots: Vec<String> = devices
                .iter()
                .map(|d| {
                    let a = d.attributes.clone().unwrap_or_default();
                    a["pciRoot"].string.clone().unwrap_or_default()
                })
                .collect();
            assert_eq!(
                roots,
                ["00", "01", "00", "01", "00", "01", "00", "01", "00", "01"]
            );
        }
    }

    #[test]
    fn class_claims_and_template_are_upstreams() {
        let class = device_class();
        assert_eq!(class.name_any(), "test-class");
        let selectors = class.spec.and_then(|s| s.selectors).unwrap_or_default();
        let expression = selectors[0].cel.as_ref().map(|c| c.expression.as_str());
        assert_eq!(
            expression,
            Some("device.driver == \"test-driver.cdi.k8s.io\"")
        );

        let request = |spec: Option<ResourceClaimSpec>| {
            let devices = spec.and_then(|s| s.devices).unwrap_or_default();
            assert_eq!(devices.constraints, None);
            let requests = devices.requests.unwrap_or_default();
            assert_eq!(requests.len(), 1);
            let exact = requests[0].exactly.clone().unwrap_or_default();
            (
                requests[0].name.clone(),
                exact.device_class_name,
                exact.selectors,
                exact.allocation_mode,
                exact.count,
            )
        };
        // The API server's defaults of an `exactly` request without a mode.
        let want = (
            "req-0".to_string(),
            "test-class".to_string(),
            None,
            Some("ExactCount".to_string()),
            Some(1),
        );
        let claim = init_claim("init", 7);
        assert_eq!(claim.name_any(), "test-claim-7");
        assert_eq!(claim.namespace().as_deref(), Some("init"));
        assert_eq!(request(claim.spec), want);
        let template = claim_template();
        assert_eq!(template.name_any(), "test-claim-template");
        assert_eq!(template.namespace().as_deref(), Some("test"));
        assert_eq!(request(template.spec.and_then(|s| s.spec)), want);
    }

    fn cluster(nodes: u64, claims: u64) -> (Arc<DeviceResources>, Vec<Node>) {
        let resources = Arc::new(DeviceResources::new());
        publish(&resources, nodes);
        create_init_claims(&resources, "init", claims);
        let nodes = (0..nodes).map(dra_node).collect();
        (resources, nodes)
    }

    #[test]
    fn init_claims_get_distinct_devices_on_their_node() {
        // Three nodes of ten devices, filled but for one device.
        let (resources, nodes) = cluster(3, 29);
        let allocated = alloc_resource_claims(&resources, "init", &nodes, 1);
        assert!(allocated.is_ok(), "{allocated:?}");
        let claims = resources.claims();
        assert_eq!(claims.len(), 29);
        let mut devices = BTreeSet::new();
        for claim in &claims {
            let status = claim.status.clone().unwrap_or_default();
            assert_eq!(status.reserved_for, None, "{}", claim.name_any());
            assert_eq!(claim.metadata.finalizers, None);
            let allocation = status.allocation.unwrap_or_default();
            let results = allocation
                .devices
                .and_then(|d| d.results)
                .unwrap_or_default();
            assert_eq!(results.len(), 1);
            let result = &results[0];
            assert_eq!(
                (result.request.as_str(), result.driver.as_str()),
                (REQUEST, DRA_DRIVER)
            );
            // The pool is the node's: resourceslice-<n> on scheduler-perf-dra-<n>, and
            // the node selector names that node.
            let index = result.pool.trim_start_matches("resourceslice-");
            let node = format!("scheduler-perf-dra-{index}");
            let selector = serde_json::to_string(&allocation.node_selector).unwrap_or_default();
            assert!(selector.contains(&format!("\"{node}\"")), "{selector}");
            assert!(devices.insert((result.pool.clone(), result.device.clone())));
        }
        assert_eq!(devices.len(), 29);
    }

    #[test]
    fn the_seed_decides_where_claims_go() {
        let placement = |seed| {
            let (resources, nodes) = cluster(5, 10);
            assert!(alloc_resource_claims(&resources, "init", &nodes, seed).is_ok());
            let pools: Vec<String> = resources
                .claims()
                .iter()
                .filter_map(|c| {
                    let allocation = c.status.as_ref()?.allocation.as_ref()?;
                    let results = allocation.devices.as_ref()?.results.as_ref()?;
                    Some(results[0].pool.clone())
                })
                .collect();
            pools
        };
        assert_eq!(placement(3), placement(3));
        assert_eq!(placement(3).len(), 10);
    }

    #[test]
    fn a_claim_that_fits_no_node_fails() {
        let (resources, nodes) = cluster(1, 11);
        let result = alloc_resource_claims(&resources, "init", &nodes, 0);
        assert!(
            matches!(&result, Err(SimulateError::Internal(m)) if m.contains("could not allocate claim 10 out of 11")),
            "{result:?}"
        );
    }
}
