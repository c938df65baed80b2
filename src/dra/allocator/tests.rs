//! Upstream's shared allocator table, carried to berth's allocator: `TestAllocator` in
//! k8s.io/dynamic-resource-allocation v0.37.2 `structured/internal/allocatortesting/
//! allocator_testing.go` (275 rows), `TestLexicographicalAllocator` in
//! `lexicographical_testing.go` (4 rows) and its `interrupt` sub-test, with upstream's
//! row names and the names and values of its constants and constructors.
//!
//! Upstream runs each row with exactly the features the row sets (none set: all off)
//! and skips the rows an allocator does not support; kube-scheduler 1.37 runs the
//! incubating allocator with AdminAccess, PrioritizedList, PartitionableDevices,
//! DeviceTaints, DeviceBindingAndStatus, ConsumableCapacity and FractionalCapacityRange
//! on, which is all berth implements. A row is carried when it sets no off-by-default
//! feature and the default-on features it leaves off do not change its outcome.
//!
//! How a row is compared, as upstream's harness does:
//! - The claims' allocations match the expected ones in any order (`ConsistOf`).
//! - Upstream's `allocationResult` matcher: the device results in any order, each
//!   compared whole (an unset list and an empty one differ), no configuration, no
//!   timestamp, and the node selector with its terms, requirements and values in any
//!   order. A plain `AllocationResult` (the configuration and binding-condition rows) is
//!   compared as it is, order included.
//! - Every share ID is replaced by `aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa` first.
//!   Consumed capacities compare by value (Go's `DeepEqual` also compares a quantity's
//!   internal form, which berth does not have).
//! - An expected error must contain each of upstream's texts (no allocation comes with
//!   an error). Expecting no allocation accepts none and the empty list of no claims.
//! - Not checked: upstream's counts of search steps (`expectNumAllocateOneInvocations`,
//!   rows prioritized-list-overflowing-first-subrequest-is-pruned,
//!   prioritized-list-max-allocation-limit-request,
//!   prioritized-list-max-allocation-allocation-mode-all and the seven check-combinations-*
//!   rows; berth keeps no such count, their outcomes are compared), and that the inputs
//!   are unchanged (the allocator only borrows them).
//!
//! Carried although it leaves a default-on feature off:
//! partitionable-devices-disabled-device-consumes-counters (its pool is incomplete with
//! partitionable devices on as well, so the outcome is the same), and the rows that turn
//! compatibility groups or list-type attributes off explicitly (their 1.37 default).
//!
//! Not carried, and why:
//! - They set CompatibilityGroups (alpha, off in 1.37): compatibility-groups-compatible,
//!   -incompatible, -taint-rollback, -incompatible-with-allocated-peer,
//!   -compatible-with-allocated-peer, -multiple-counter-sets,
//!   -multiple-counter-sets-spanning-device, -with-prioritized-list,
//!   -with-consumable-capacity, -multiple-claims, -multiple-claims-incompatible.
//! - They set OptionalNodeOperations (alpha): optional-node-operations,
//!   optional-node-operations-missing-feature.
//! - They set ListTypeAttributes (alpha): list-attributes-match-constaint-*
//!   (scalar-string-values, list-of-string-values-with-common-elements,
//!   -with-partially-common-elements,
//!   -without-common-elements, mixed-scalar-and-list-of-string-values-with-common-elements,
//!   -with-partially-common-elements, -without-common-elements,
//!   list-of-int-values-with-common-elements, list-of-bool-values-with-common-elements,
//!   list-of-version-values-with-common-elements, with-empty-or-unknown-type),
//!   list-attributes-match-constraint-backtrack-needs-intersection-restore,
//!   numanode-matchattribute-overlapping-lists-are-co-placed,
//!   numanode-matchattribute-disjoint-lists-are-not-allocated,
//!   list-attributes-distinct-constraint-* (scalar-string-values-all-distinct,
//!   scalar-string-values-not-distinct, single-request-count-3-not-distinct,
//!   single-request-count-3-all-distinct, list-of-string-values-all-distinct,
//!   list-of-string-values-with-common-elements, mixed-scalar-and-list-all-distinct,
//!   mixed-scalar-and-list-with-common-elements, list-of-int-values-all-distinct,
//!   list-of-bool-values-all-distinct, list-of-version-values-all-distinct,
//!   backtrack-needs-remove), list-attributes-distinct-constaint-with-empty-or-unknown-type.
//! - They set DerivedAttributes (alpha): derived-attributes,
//!   derived-attributes-with-prioritized-list, derived-attributes-override,
//!   derived-attributes-cel-missing-attribute, derived-attributes-type-mismatch.
//! - They expect a disabled default-on feature's error: admin-access-disabled,
//!   prioritized-list-disabled, consumable-capacity-disabled-feature,
//!   consumable-capacity-disabled-feature-with-prioritized-list.
//! - With the feature they leave off on, the outcome differs:
//!   partitionable-devices-disabled-other-device-do-not-consume-counters (device-1 is
//!   allocatable), partitionable-devices-disabled-per-device-node-selection (device-2 is
//!   for node-1), tainted-disabled, tainted-prioritized-list-disabled,
//!   tainted-admin-access-disabled, tainted-all-devices-single-disabled (the taints are not
//!   tolerated), binding-conditions-without-feature-gate (the device is allocatable),
//!   consumable-capacity-fractional-range-gate-disabled (200m is consumed, not 1).
//! - The `interrupt` sub-test's "cancel" variant: the search has a deadline, not a
//!   cancellation (`interrupt` carries "off", "timeout" and "deadline").

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::api::resource::v1::{
    AllocationResult, CELDeviceSelector, CapacityRequestPolicy, CapacityRequestPolicyRange,
    CapacityRequirements, Counter, CounterSet, Device, DeviceAllocationConfiguration,
    DeviceAllocationResult, DeviceAttribute, DeviceCapacity, DeviceClaim, DeviceClaimConfiguration,
    DeviceClass, DeviceClassConfiguration, DeviceClassSpec, DeviceConstraint,
    DeviceCounterConsumption, DeviceRequest, DeviceRequestAllocationResult, DeviceSelector,
    DeviceSubRequest, DeviceTaint, DeviceToleration, ExactDeviceRequest, OpaqueDeviceConfiguration,
    ResourceClaim, ResourceClaimSpec, ResourcePool, ResourceSlice, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::json;

use super::{AllocateError, AllocatedState, Allocator, DeviceId};
use crate::dra::cel::Selectors;
use crate::dra::quantity::Amount;

// The names upstream's table uses.
const REGION1: &str = "region-1";
const REGION2: &str = "region-2";
const NODE1: &str = "node-1";
const NODE2: &str = "node-2";
const CLASS_A: &str = "class-a";
const CLASS_B: &str = "class-b";
const DRIVER_A: &str = "driver-a";
const DRIVER_B: &str = "driver-b";
const POOL1: &str = "pool-1";
const POOL2: &str = "pool-2";
const POOL3: &str = "pool-3";
const POOL4: &str = "pool-4";
const REQ0: &str = "req-0";
const REQ1: &str = "req-1";
const REQ2: &str = "req-2";
const REQ3: &str = "req-3";
const SUB_REQ0: &str = "subReq-0";
const SUB_REQ1: &str = "subReq-1";
const REQ0_SUB_REQ0: &str = "req-0/subReq-0";
const REQ0_SUB_REQ1: &str = "req-0/subReq-1";
const REQ1_SUB_REQ0: &str = "req-1/subReq-0";
const REQ1_SUB_REQ1: &str = "req-1/subReq-1";
const REQ2_SUB_REQ0: &str = "req-2/subReq-0";
const REQ2_SUB_REQ1: &str = "req-2/subReq-1";
const CLAIM0: &str = "claim-0";
const CLAIM1: &str = "claim-1";
const SLICE1: &str = "slice-1";
const SLICE2: &str = "slice-2";
const SLICE3: &str = "slice-3";
const SLICE4: &str = "slice-4";
const DEVICE0: &str = "device-0";
const DEVICE1: &str = "device-1";
const DEVICE2: &str = "device-2";
const DEVICE3: &str = "device-3";
const DEVICE4: &str = "device-4";
const COUNTER_SET1: &str = "counter-set-1";
const COUNTER_SET2: &str = "counter-set-2";
const CAPACITY0: &str = "capacity-0";
const CAPACITY1: &str = "capacity-1";
const FIELD_NAME_KEY: &str = "metadata.name";
const REGION_KEY: &str = "region";
const PLANET_KEY: &str = "planet";
const PLANET_VALUE_EARTH: &str = "earth";
/// What every share ID in a result is replaced by before comparing.
const FIXED_SHARE_ID: &str = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa";

// The attribute names of upstream's `TestAllocator`.
const NON_EXISTENT_ATTRIBUTE: &str = "driver-a/NonExistentAttribute";
const BOOL_ATTRIBUTE: &str = "driver-a/boolAttribute";
const STRING_ATTRIBUTE: &str = "driver-a/stringAttribute";
const VERSION_ATTRIBUTE: &str = "driver-a/driverVersion";
const INT_ATTRIBUTE: &str = "driver-a/numa";

// Taints and tolerations of upstream's `TestAllocator`.
const TAINT_KEY: &str = "taint-key";
const TAINT_VALUE: &str = "taint-value";
const TAINT_VALUE2: &str = "taint-value-2";

/// A device taint.
fn taint(key: &str, value: &str, effect: &str) -> DeviceTaint {
    DeviceTaint {
        key: key.into(),
        value: Some(value.into()),
        effect: effect.into(),
        time_added: None,
    }
}

/// Upstream's `taintNone`: a taint without an effect.
fn taint_none() -> DeviceTaint {
    taint(TAINT_KEY, TAINT_VALUE, "None")
}

/// Upstream's `taintNoSchedule`.
fn taint_no_schedule() -> DeviceTaint {
    taint(TAINT_KEY, TAINT_VALUE, "NoSchedule")
}

/// Upstream's `taintNoExecute`.
fn taint_no_execute() -> DeviceTaint {
    taint(TAINT_KEY, TAINT_VALUE2, "NoExecute")
}

/// A device toleration.
fn toleration(operator: &str, key: &str, value: Option<&str>, effect: &str) -> DeviceToleration {
    DeviceToleration {
        operator: Some(operator.into()),
        key: Some(key.into()),
        value: value.map(Into::into),
        effect: Some(effect.into()),
        toleration_seconds: None,
    }
}

/// Upstream's `tolerationNoSchedule`: any value of `taint-key`, NoSchedule.
fn toleration_no_schedule() -> DeviceToleration {
    toleration("Exists", TAINT_KEY, None, "NoSchedule")
}

/// Upstream's `tolerationNoExecute`: `taint-key=taint-value-2`, NoExecute.
fn toleration_no_execute() -> DeviceToleration {
    toleration("Equal", TAINT_KEY, Some(TAINT_VALUE2), "NoExecute")
}

/// Upstream's `tolerationNoScheduleKey1`: any value of `key1`, NoSchedule.
fn toleration_no_schedule_key1() -> DeviceToleration {
    toleration("Exists", "key1", None, "NoSchedule")
}

/// A quantity as written.
fn q(text: &str) -> Quantity {
    Quantity(text.into())
}

/// Object metadata with just a name.
fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

/// A node with a region and the planet label.
fn node(name: &str, region: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([
                (REGION_KEY.to_string(), region.to_string()),
                (PLANET_KEY.to_string(), PLANET_VALUE_EARTH.to_string()),
            ])),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}

/// A CEL selector.
fn cel(expression: impl Into<String>) -> DeviceSelector {
    DeviceSelector {
        cel: Some(CELDeviceSelector {
            expression: expression.into(),
        }),
    }
}

/// A class selecting the devices of `driver`.
fn class(name: &str, driver: &str) -> DeviceClass {
    class_with_selector(name, format!(r#"device.driver == "{driver}""#))
}

/// A class with one CEL selector.
fn class_with_selector(name: &str, expression: String) -> DeviceClass {
    DeviceClass {
        metadata: meta(name),
        spec: Some(DeviceClassSpec {
            selectors: Some(vec![cel(expression)]),
            ..DeviceClassSpec::default()
        }),
    }
}

/// A class selecting the devices of `driver` that do (or do not) allow multiple
/// allocations.
fn class_with_allow_multiple_allocations(name: &str, driver: &str, multi: bool) -> DeviceClass {
    class_with_selector(
        name,
        format!(r#"device.driver == "{driver}" && device.allowMultipleAllocations == {multi}"#),
    )
}

/// Opaque configuration for `driver` with the parameters `{"<attribute>": "<attribute>Value"}`.
fn device_configuration(driver: &str, attribute: &str) -> OpaqueDeviceConfiguration {
    OpaqueDeviceConfiguration {
        driver: driver.into(),
        parameters: RawExtension(json!({ attribute: format!("{attribute}Value") })),
    }
}

fn class_with_config(name: &str, driver: &str, attribute: &str) -> DeviceClass {
    let mut class = class(name, driver);
    class
        .spec
        .get_or_insert_with(DeviceClassSpec::default)
        .config = Some(vec![DeviceClassConfiguration {
        opaque: Some(device_configuration(driver, attribute)),
    }]);
    class
}

/// An `ExactCount` request.
fn request(name: &str, class: &str, count: i64) -> DeviceRequest {
    DeviceRequest {
        name: name.into(),
        exactly: Some(ExactDeviceRequest {
            count: Some(count),
            allocation_mode: Some("ExactCount".into()),
            device_class_name: class.into(),
            ..ExactDeviceRequest::default()
        }),
        first_available: None,
    }
}

/// An `All` request.
fn all_request(name: &str, class: &str) -> DeviceRequest {
    DeviceRequest {
        name: name.into(),
        exactly: Some(ExactDeviceRequest {
            allocation_mode: Some("All".into()),
            device_class_name: class.into(),
            ..ExactDeviceRequest::default()
        }),
        first_available: None,
    }
}

/// An `ExactCount` subrequest.
fn sub_request(name: &str, class: &str, count: i64) -> DeviceSubRequest {
    DeviceSubRequest {
        name: name.into(),
        count: Some(count),
        allocation_mode: Some("ExactCount".into()),
        device_class_name: class.into(),
        ..DeviceSubRequest::default()
    }
}

/// A request for the first of `subs` that can be allocated.
fn first_available(name: &str, subs: Vec<DeviceSubRequest>) -> DeviceRequest {
    DeviceRequest {
        name: name.into(),
        exactly: None,
        first_available: Some(subs),
    }
}

/// `{"capacity-0": quantity}`, or no requested capacity at all.
fn capacity_requests(quantity: Option<&str>) -> CapacityRequirements {
    CapacityRequirements {
        requests: Some(
            quantity
                .map(|v| (CAPACITY0.to_string(), q(v)))
                .into_iter()
                .collect(),
        ),
    }
}

/// Changes to a request's `exactly`.
trait ExactRequest: Sized {
    /// The `exactly` part being built.
    fn exact(&mut self) -> &mut ExactDeviceRequest;

    /// Adds a CEL selector.
    fn selector(mut self, expression: impl Into<String>) -> Self {
        self.exact()
            .selectors
            .get_or_insert_with(Vec::new)
            .push(cel(expression));
        self
    }

    /// Replaces the selectors.
    fn selectors(mut self, selectors: Vec<DeviceSelector>) -> Self {
        self.exact().selectors = Some(selectors);
        self
    }

    /// Requests `quantity` of `capacity-0` (an empty request map without one).
    fn capacity(mut self, quantity: Option<&str>) -> Self {
        self.exact().capacity = Some(capacity_requests(quantity));
        self
    }

    /// Asks for admin access.
    fn admin_access(mut self) -> Self {
        self.exact().admin_access = Some(true);
        self
    }

    /// Sets the allocation mode (`ExactCount`, `All`, or any other text).
    fn mode(mut self, mode: &str) -> Self {
        self.exact().allocation_mode = Some(mode.into());
        self
    }

    /// Sets the count.
    fn count(mut self, count: i64) -> Self {
        self.exact().count = Some(count);
        self
    }
}

impl ExactRequest for DeviceRequest {
    fn exact(&mut self) -> &mut ExactDeviceRequest {
        self.exactly.get_or_insert_with(ExactDeviceRequest::default)
    }
}

/// Changes to a subrequest.
trait SubRequest: Sized {
    /// The subrequest being built.
    fn sub(&mut self) -> &mut DeviceSubRequest;

    /// Adds a CEL selector.
    fn selector(mut self, expression: impl Into<String>) -> Self {
        self.sub()
            .selectors
            .get_or_insert_with(Vec::new)
            .push(cel(expression));
        self
    }

    /// Adds a toleration.
    fn toleration(mut self, toleration: DeviceToleration) -> Self {
        self.sub()
            .tolerations
            .get_or_insert_with(Vec::new)
            .push(toleration);
        self
    }

    /// Sets the allocation mode (`ExactCount`, `All`, or any other text).
    fn mode(mut self, mode: &str) -> Self {
        self.sub().allocation_mode = Some(mode.into());
        self
    }

    /// Sets the count.
    fn count(mut self, count: i64) -> Self {
        self.sub().count = Some(count);
        self
    }

    /// Requests `quantity` of `capacity-0` (an empty request map without one).
    fn capacity(mut self, quantity: Option<&str>) -> Self {
        self.sub().capacity = Some(capacity_requests(quantity));
        self
    }
}

impl SubRequest for DeviceSubRequest {
    fn sub(&mut self) -> &mut DeviceSubRequest {
        self
    }
}

/// A claim with `requests` and `constraints`.
fn claim_with_requests(
    name: &str,
    constraints: Vec<DeviceConstraint>,
    requests: Vec<DeviceRequest>,
) -> ResourceClaim {
    claim(name).requests(requests).constraints(constraints)
}

/// A claim with one request for one device of `class`.
fn claim_with_request(name: &str, req: &str, class: &str) -> ResourceClaim {
    claim_with_requests(name, Vec::new(), vec![request(req, class, 1)])
}

/// A claim with nothing in it but its name.
fn claim(name: &str) -> ResourceClaim {
    ResourceClaim {
        metadata: meta(name),
        spec: Some(ResourceClaimSpec {
            devices: Some(DeviceClaim::default()),
        }),
        status: None,
    }
}

/// A claim for one device of `class` with configuration for all its requests.
fn claim_with_device_config(
    name: &str,
    req: &str,
    class: &str,
    driver: &str,
    attribute: &str,
) -> ResourceClaim {
    claim_with_request(name, req, class).configs(vec![DeviceClaimConfiguration {
        opaque: Some(device_configuration(driver, attribute)),
        requests: None,
    }])
}

/// Claim configuration for the named requests.
fn claim_config(requests: &[&str], config: OpaqueDeviceConfiguration) -> DeviceClaimConfiguration {
    DeviceClaimConfiguration {
        opaque: Some(config),
        requests: Some(requests.iter().map(|r| r.to_string()).collect()),
    }
}

/// Changes to a claim.
trait ClaimBuilder: Sized {
    /// The claim's `spec.devices`.
    fn devices(&mut self) -> &mut DeviceClaim;

    /// Replaces the requests.
    fn requests(mut self, requests: Vec<DeviceRequest>) -> Self {
        self.devices().requests = Some(requests);
        self
    }

    /// Replaces the constraints (none: unset).
    fn constraints(mut self, constraints: Vec<DeviceConstraint>) -> Self {
        self.devices().constraints = (!constraints.is_empty()).then_some(constraints);
        self
    }

    /// Replaces the configuration.
    fn configs(mut self, configs: Vec<DeviceClaimConfiguration>) -> Self {
        self.devices().config = Some(configs);
        self
    }

    /// Adds `tolerations` to every request.
    fn tolerations(mut self, tolerations: Vec<DeviceToleration>) -> Self {
        for request in self.devices().requests.iter_mut().flatten() {
            if let Some(exact) = &mut request.exactly {
                exact
                    .tolerations
                    .get_or_insert_with(Vec::new)
                    .extend(tolerations.iter().cloned());
            }
        }
        self
    }

    /// Changes its request at `index`.
    fn request_at(
        mut self,
        index: usize,
        change: impl FnOnce(DeviceRequest) -> DeviceRequest,
    ) -> Self {
        if let Some(requests) = &mut self.devices().requests {
            requests[index] = change(requests[index].clone());
        }
        self
    }
}

impl ClaimBuilder for ResourceClaim {
    fn devices(&mut self) -> &mut DeviceClaim {
        self.spec
            .get_or_insert_with(ResourceClaimSpec::default)
            .devices
            .get_or_insert_with(DeviceClaim::default)
    }
}

/// Request names, unset for none.
fn names(requests: &[&str]) -> Option<Vec<String>> {
    (!requests.is_empty()).then(|| requests.iter().map(|r| r.to_string()).collect())
}

/// A `matchAttribute` constraint on `requests` (all requests for none).
fn match_attribute(attribute: &str, requests: &[&str]) -> DeviceConstraint {
    DeviceConstraint {
        match_attribute: Some(attribute.into()),
        requests: names(requests),
        ..DeviceConstraint::default()
    }
}

/// A `distinctAttribute` constraint on `requests` (all requests for none).
fn distinct_attribute(attribute: &str, requests: &[&str]) -> DeviceConstraint {
    DeviceConstraint {
        distinct_attribute: Some(attribute.into()),
        requests: names(requests),
        ..DeviceConstraint::default()
    }
}

/// A string attribute.
fn string_attribute(value: &str) -> DeviceAttribute {
    DeviceAttribute {
        string: Some(value.into()),
        ..DeviceAttribute::default()
    }
}

/// A list-of-strings attribute (alpha, not matched by constraints in 1.37).
fn strings_attribute(values: &[&str]) -> DeviceAttribute {
    DeviceAttribute {
        strings: Some(values.iter().map(|v| v.to_string()).collect()),
        ..DeviceAttribute::default()
    }
}

/// An int attribute.
fn int_attribute(value: i64) -> DeviceAttribute {
    DeviceAttribute {
        int: Some(value),
        ..DeviceAttribute::default()
    }
}

/// A bool attribute.
fn bool_attribute(value: bool) -> DeviceAttribute {
    DeviceAttribute {
        bool: Some(value),
        ..DeviceAttribute::default()
    }
}

/// A semantic version attribute.
fn version_attribute(value: &str) -> DeviceAttribute {
    DeviceAttribute {
        version: Some(value.into()),
        ..DeviceAttribute::default()
    }
}

/// A device with nothing but its name.
fn device(name: &str) -> Device {
    Device {
        name: name.into(),
        ..Device::default()
    }
}

/// Counters by name.
fn counters(values: &[(&str, &str)]) -> BTreeMap<String, Counter> {
    values
        .iter()
        .map(|(name, value)| (name.to_string(), Counter { value: q(value) }))
        .collect()
}

/// Changes to a device.
trait DeviceBuilder: Sized {
    /// The device being built.
    fn dev(&mut self) -> &mut Device;

    /// Adds an attribute.
    fn attribute(mut self, name: &str, value: DeviceAttribute) -> Self {
        self.dev()
            .attributes
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), value);
        self
    }

    /// An empty (but present) attribute map.
    fn no_attributes(mut self) -> Self {
        self.dev().attributes.get_or_insert_with(BTreeMap::new);
        self
    }

    /// A capacity without a request policy.
    fn capacity(mut self, name: &str, value: &str) -> Self {
        self.dev()
            .capacity
            .get_or_insert_with(BTreeMap::new)
            .insert(
                name.into(),
                DeviceCapacity {
                    value: q(value),
                    request_policy: None,
                },
            );
        self
    }

    /// A capacity with a request policy.
    fn capacity_with_policy(
        mut self,
        name: &str,
        value: &str,
        policy: CapacityRequestPolicy,
    ) -> Self {
        self.dev()
            .capacity
            .get_or_insert_with(BTreeMap::new)
            .insert(
                name.into(),
                DeviceCapacity {
                    value: q(value),
                    request_policy: Some(policy),
                },
            );
        self
    }

    /// Upstream's `withCapacityRequestPolicyRange`: default 2, from 2 in steps of 2 up
    /// to 4.
    fn capacity_range(self, name: &str, value: &str) -> Self {
        self.capacity_with_policy(name, value, range_policy("2", "2", "2", "4"))
    }

    /// Upstream's `withFractionalCapacityRequestPolicyRange`: default 200m, from 200m in
    /// steps of 100m up to 1.
    fn capacity_fractional_range(self, name: &str, value: &str) -> Self {
        self.capacity_with_policy(name, value, range_policy("200m", "200m", "100m", "1"))
    }

    /// Upstream's `withCapacityRequestPolicyValidValues`: the default and `more` are the
    /// valid values.
    fn capacity_valid_values(self, default: &str, name: &str, value: &str, more: &[&str]) -> Self {
        let mut values = vec![q(default)];
        values.extend(more.iter().map(|v| q(v)));
        let policy = CapacityRequestPolicy {
            default: Some(q(default)),
            valid_values: Some(values),
            valid_range: None,
        };
        self.capacity_with_policy(name, value, policy)
    }

    /// Consumes `values` of the counters of `counter_set`.
    fn consumes(mut self, counter_set: &str, values: &[(&str, &str)]) -> Self {
        self.dev()
            .consumes_counters
            .get_or_insert_with(Vec::new)
            .push(DeviceCounterConsumption {
                counter_set: counter_set.into(),
                counters: counters(values),
                compatibility_groups: None,
            });
        self
    }

    /// Consumes counters as a member of compatibility `groups` (alpha, off in 1.37).
    fn consumes_in_groups(
        mut self,
        counter_set: &str,
        values: &[(&str, &str)],
        groups: &[&str],
    ) -> Self {
        self.dev()
            .consumes_counters
            .get_or_insert_with(Vec::new)
            .push(DeviceCounterConsumption {
                counter_set: counter_set.into(),
                counters: counters(values),
                compatibility_groups: Some(groups.iter().map(|g| g.to_string()).collect()),
            });
        self
    }

    /// Upstream's `fromCounters` capacity: the device's capacity is every counter it
    /// consumes, with the same name and value.
    fn capacity_from_counters(mut self) -> Self {
        let device = self.dev();
        let capacity = device
            .consumes_counters
            .iter()
            .flatten()
            .flat_map(|c| &c.counters)
            .map(|(name, counter)| {
                let capacity = DeviceCapacity {
                    value: counter.value.clone(),
                    request_policy: None,
                };
                (name.clone(), capacity)
            })
            .collect();
        device.capacity = Some(capacity);
        self
    }

    /// Adds taints.
    fn taints(mut self, taints: Vec<DeviceTaint>) -> Self {
        self.dev()
            .taints
            .get_or_insert_with(Vec::new)
            .extend(taints);
        self
    }

    /// Makes the device one of `node` (per-device node selection).
    fn node_name(mut self, node: &str) -> Self {
        self.dev().node_name = Some(node.into());
        self
    }

    /// Makes the device one of every node (per-device node selection).
    fn all_nodes(mut self) -> Self {
        self.dev().all_nodes = Some(true);
        self
    }

    /// Makes the device one of the selected nodes (per-device node selection).
    fn node_selector(mut self, selector: NodeSelector) -> Self {
        self.dev().node_selector = Some(selector);
        self
    }

    /// With binding (failure) conditions.
    fn binding_conditions(mut self, conditions: &[&str], failure_conditions: &[&str]) -> Self {
        let device = self.dev();
        device.binding_conditions = Some(conditions.iter().map(|c| c.to_string()).collect());
        device.binding_failure_conditions =
            Some(failure_conditions.iter().map(|c| c.to_string()).collect());
        self
    }

    /// Sets `bindsToNode`.
    fn binds_to_node(mut self, binds: bool) -> Self {
        self.dev().binds_to_node = Some(binds);
        self
    }

    /// Allows multiple allocations (shares).
    fn allow_multiple_allocations(mut self) -> Self {
        self.dev().allow_multiple_allocations = Some(true);
        self
    }
}

impl DeviceBuilder for Device {
    fn dev(&mut self) -> &mut Device {
        self
    }
}

/// A request policy of a range with a default.
fn range_policy(default: &str, min: &str, step: &str, max: &str) -> CapacityRequestPolicy {
    CapacityRequestPolicy {
        default: Some(q(default)),
        valid_range: Some(CapacityRequestPolicyRange {
            min: q(min),
            step: Some(q(step)),
            max: Some(q(max)),
        }),
        valid_values: None,
    }
}

/// Which nodes a slice is for.
enum Nodes {
    Name(&'static str),
    All,
    PerDevice,
    Selector(NodeSelector),
}

impl From<&'static str> for Nodes {
    fn from(name: &'static str) -> Nodes {
        Nodes::Name(name)
    }
}

impl From<NodeSelector> for Nodes {
    fn from(selector: NodeSelector) -> Nodes {
        Nodes::Selector(selector)
    }
}

/// A pool: a name alone is a pool of one slice in generation 1.
trait IntoPool {
    /// The pool.
    fn into_pool(self) -> ResourcePool;
}

impl IntoPool for &str {
    fn into_pool(self) -> ResourcePool {
        resource_pool(self, 1)
    }
}

impl IntoPool for ResourcePool {
    fn into_pool(self) -> ResourcePool {
        self
    }
}

/// A pool of `count` slices in generation 1.
fn resource_pool(name: &str, count: i64) -> ResourcePool {
    ResourcePool {
        name: name.into(),
        resource_slice_count: count,
        generation: 1,
    }
}

/// A slice without devices.
fn slice(name: &str, nodes: impl Into<Nodes>, pool: impl IntoPool, driver: &str) -> ResourceSlice {
    let mut spec = ResourceSliceSpec {
        driver: driver.into(),
        pool: pool.into_pool(),
        ..ResourceSliceSpec::default()
    };
    match nodes.into() {
        Nodes::Name(node) => spec.node_name = Some(node.into()),
        Nodes::All => spec.all_nodes = Some(true),
        Nodes::PerDevice => spec.per_device_node_selection = Some(true),
        Nodes::Selector(selector) => spec.node_selector = Some(selector),
    }
    ResourceSlice {
        metadata: meta(name),
        spec,
    }
}

/// A slice with one device, `device-1`.
fn slice_with_one_device(
    name: &str,
    nodes: impl Into<Nodes>,
    pool: impl IntoPool,
    driver: &str,
) -> ResourceSlice {
    slice(name, nodes, pool, driver).devices(vec![device(DEVICE1)])
}

/// A slice with the devices `device-0` .. `device-<count-1>`.
fn slice_with_multiple_devices(
    name: &str,
    nodes: impl Into<Nodes>,
    pool: impl IntoPool,
    driver: &str,
    count: usize,
) -> ResourceSlice {
    let devices = (0..count).map(|i| device(&format!("device-{i}"))).collect();
    slice(name, nodes, pool, driver).devices(devices)
}

fn counter_set(name: &str, values: &[(&str, &str)]) -> CounterSet {
    CounterSet {
        name: name.into(),
        counters: counters(values),
    }
}

/// Changes to a slice.
trait SliceBuilder: Sized {
    /// The slice's spec.
    fn spec(&mut self) -> &mut ResourceSliceSpec;

    /// Adds devices.
    fn devices(mut self, devices: Vec<Device>) -> Self {
        self.spec()
            .devices
            .get_or_insert_with(Vec::new)
            .extend(devices);
        self
    }

    /// Sets the shared counter sets.
    fn counter_sets(mut self, sets: Vec<CounterSet>) -> Self {
        self.spec().shared_counters = Some(sets);
        self
    }

    /// Sets the pool generation.
    fn generation(mut self, generation: i64) -> Self {
        self.spec().pool.generation = generation;
        self
    }

    /// Sets the pool's slice count.
    fn slice_count(mut self, count: i64) -> Self {
        self.spec().pool.resource_slice_count = count;
        self
    }
}

impl SliceBuilder for ResourceSlice {
    fn spec(&mut self) -> &mut ResourceSliceSpec {
        &mut self.spec
    }
}

/// `key In values`.
fn requirement(key: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: "In".into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
    }
}

/// Nodes whose label `key` is one of `values`.
fn node_label_selector(key: &str, values: &[&str]) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Some(vec![requirement(key, values)]),
            match_fields: None,
        }],
    }
}

/// The node named `node`: the selector of an allocation with a node-local device.
fn local_node_selector(node: &str) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![requirement(FIELD_NAME_KEY, &[node])]),
        }],
    }
}

/// Upstream's `MakeDeviceID`.
fn id(driver: &str, pool: &str, device: &str) -> DeviceId {
    DeviceId {
        driver: driver.into(),
        pool: pool.into(),
        device: device.into(),
    }
}

/// A device allocated for a request.
fn result(request: &str, driver: &str, pool: &str, device: &str) -> DeviceRequestAllocationResult {
    DeviceRequestAllocationResult {
        request: request.into(),
        driver: driver.into(),
        pool: pool.into(),
        device: device.into(),
        ..DeviceRequestAllocationResult::default()
    }
}

/// Results for `device-<start>` .. `device-<start+count-1>`.
fn multiple_results(
    request: &str,
    driver: &str,
    pool: &str,
    count: usize,
    start: usize,
) -> Vec<DeviceRequestAllocationResult> {
    (start..start + count)
        .map(|i| result(request, driver, pool, &format!("device-{i}")))
        .collect()
}

/// Changes to an expected device result.
trait ResultBuilder: Sized {
    /// The result being built.
    fn res(&mut self) -> &mut DeviceRequestAllocationResult;

    /// With admin access.
    fn admin(mut self) -> Self {
        self.res().admin_access = Some(true);
        self
    }

    /// With the request's tolerations.
    fn tolerations(mut self, tolerations: Vec<DeviceToleration>) -> Self {
        self.res().tolerations = Some(tolerations);
        self
    }

    /// A share of the device, consuming no capacity.
    fn shared(mut self) -> Self {
        self.res().share_id = Some(FIXED_SHARE_ID.into());
        self
    }

    /// A share of the device, consuming `consumed`.
    fn consumed(mut self, consumed: &[(&str, &str)]) -> Self {
        let result = self.res();
        result.share_id = Some(FIXED_SHARE_ID.into());
        result.consumed_capacity = Some(
            consumed
                .iter()
                .map(|(name, value)| (name.to_string(), q(value)))
                .collect(),
        );
        self
    }

    /// With binding (failure) conditions.
    fn binding_conditions(mut self, conditions: &[&str], failure_conditions: &[&str]) -> Self {
        let result = self.res();
        result.binding_conditions = Some(conditions.iter().map(|c| c.to_string()).collect());
        result.binding_failure_conditions =
            Some(failure_conditions.iter().map(|c| c.to_string()).collect());
        self
    }
}

impl ResultBuilder for DeviceRequestAllocationResult {
    fn res(&mut self) -> &mut DeviceRequestAllocationResult {
        self
    }
}

/// One claim's expected allocation.
enum Want {
    /// Upstream's `allocationResult` matcher: the results in any order, no
    /// configuration, the node selector's terms, requirements and values in any order.
    Matching(NodeSelector, Vec<DeviceRequestAllocationResult>),
    /// A plain `AllocationResult`, compared as it is (order included).
    Exact(AllocationResult),
}

/// Upstream's `allocationResult` matcher.
fn allocation(selector: NodeSelector, results: Vec<DeviceRequestAllocationResult>) -> Want {
    Want::Matching(selector, results)
}

/// Upstream's plain `AllocationResult` value (`allocationResultWithConfigs`).
fn exact(
    selector: NodeSelector,
    results: Vec<DeviceRequestAllocationResult>,
    config: Vec<DeviceAllocationConfiguration>,
) -> Want {
    Want::Exact(AllocationResult {
        allocation_timestamp: None,
        devices: Some(DeviceAllocationResult {
            results: Some(results),
            config: (!config.is_empty()).then_some(config),
        }),
        node_selector: Some(selector),
    })
}

/// An allocation's configuration entry from `source` for `requests` (unset: all).
fn config_entry(
    source: &str,
    requests: Option<&[&str]>,
    config: OpaqueDeviceConfiguration,
) -> DeviceAllocationConfiguration {
    DeviceAllocationConfiguration {
        source: source.into(),
        requests: requests.map(|r| r.iter().map(|r| r.to_string()).collect()),
        opaque: Some(config),
    }
}

/// One row of the table.
#[derive(Default)]
struct Case {
    name: &'static str,
    claims: Vec<ResourceClaim>,
    allocated: Vec<DeviceId>,
    /// Devices with persisted shares (upstream `allocatedSharedDeviceIDs`).
    shared: Vec<DeviceId>,
    /// What persisted shares consume (upstream `allocatedCapacityDevices`).
    capacity: Vec<(DeviceId, Vec<(&'static str, &'static str)>)>,
    classes: Vec<DeviceClass>,
    slices: Vec<ResourceSlice>,
    /// `node-1` in `region-1` when not set.
    node: Option<Node>,
    want: Vec<Want>,
    /// Texts the error must contain; no error is expected when empty.
    error: Vec<&'static str>,
}

/// Upstream's informer lister: the first class of the name.
fn class_lister(
    classes: Vec<DeviceClass>,
) -> impl Fn(&str) -> Option<Arc<DeviceClass>> + Sync + Send + 'static {
    move |name: &str| {
        classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name))
            .cloned()
            .map(Arc::new)
    }
}

/// Runs every row, then fails naming every row that did not get its expectation.
fn run(cases: Vec<Case>) {
    let selectors = Arc::new(Selectors::new());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            check(case, &selectors)
                .err()
                .map(|why| format!("{}: {why}", case.name))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Runs one row: `Err` says how the outcome differs from the expectation.
fn check(case: &Case, selectors: &Arc<Selectors>) -> Result<(), String> {
    let state = AllocatedState {
        devices: case.allocated.iter().cloned().collect(),
        shared: case.shared.iter().cloned().collect(),
        capacity: case
            .capacity
            .iter()
            .map(|(id, consumed)| {
                let consumed = consumed
                    .iter()
                    .map(|(name, value)| (name.to_string(), amount(value)))
                    .collect();
                (id.clone(), consumed)
            })
            .collect(),
    };
    let lister = class_lister(case.classes.clone());
    let slices: Vec<Arc<ResourceSlice>> = case.slices.iter().cloned().map(Arc::new).collect();
    let slices = Arc::new(slices);
    let node = case.node.clone().unwrap_or_else(|| node(NODE1, REGION1));
    let claims: Vec<&ResourceClaim> = case.claims.iter().collect();
    let allocator = Allocator::new(Arc::new(state), Arc::new(lister), slices, selectors.clone());
    let outcome = allocator.allocate(&node, &claims, None);
    if !case.error.is_empty() {
        return match outcome {
            Err(e) => {
                let text = e.to_string();
                match case.error.iter().find(|want| !text.contains(*want)) {
                    None => Ok(()),
                    Some(missing) => Err(format!("error {text:?} does not contain {missing:?}")),
                }
            }
            Ok(results) => Err(format!(
                "expected an error containing {:?}, got {}",
                case.error,
                describe(results.as_deref().unwrap_or_default())
            )),
        };
    }
    let mut results = match outcome {
        Ok(results) => results.unwrap_or_default(),
        Err(e) => return Err(format!("unexpected error: {e}")),
    };
    for result in &mut results {
        let devices = result
            .devices
            .iter_mut()
            .flat_map(|d| d.results.iter_mut().flatten());
        for device in devices {
            if device.share_id.is_some() {
                device.share_id = Some(FIXED_SHARE_ID.into());
            }
        }
    }
    if matches_all(&case.want, &results, &mut vec![false; results.len()]) {
        Ok(())
    } else {
        Err(format!(
            "got {}, want {}",
            describe(&results),
            describe_wanted(&case.want)
        ))
    }
}

/// Whether every wanted allocation matches a distinct result, each result used once
/// (gomega's `ConsistOf`).
fn matches_all(want: &[Want], results: &[AllocationResult], used: &mut Vec<bool>) -> bool {
    let Some((first, rest)) = want.split_first() else {
        return used.iter().all(|u| *u);
    };
    for i in 0..results.len() {
        if used[i] || !matches(first, &results[i]) {
            continue;
        }
        used[i] = true;
        if matches_all(rest, results, used) {
            return true;
        }
        used[i] = false;
    }
    false
}

/// A quantity's exact value.
fn amount(value: &str) -> Amount {
    Amount::parse("quantity", &q(value)).unwrap_or_else(|e| panic!("quantity {value}: {e}"))
}

/// A result with its consumed capacity in nano-units, so that quantities compare by
/// value.
fn normalized(result: &DeviceRequestAllocationResult) -> DeviceRequestAllocationResult {
    let mut result = result.clone();
    if let Some(consumed) = &mut result.consumed_capacity {
        for value in consumed.values_mut() {
            *value = q(&format!("{}n", amount(&value.0).nanos));
        }
    }
    result
}

/// Whether a claim's allocation is the wanted one.
fn matches(want: &Want, got: &AllocationResult) -> bool {
    match want {
        Want::Exact(expected) => {
            let normalize = |a: &AllocationResult| {
                let mut a = a.clone();
                for r in a
                    .devices
                    .iter_mut()
                    .flat_map(|d| d.results.iter_mut().flatten())
                {
                    *r = normalized(r);
                }
                a
            };
            normalize(expected) == normalize(got)
        }
        Want::Matching(selector, results) => {
            let devices = got.devices.clone().unwrap_or_default();
            if got.allocation_timestamp.is_some() || devices.config.is_some() {
                return false;
            }
            let mut got_results: Vec<DeviceRequestAllocationResult> =
                devices.results.iter().flatten().map(normalized).collect();
            if got_results.len() != results.len() {
                return false;
            }
            for want in results.iter().map(normalized) {
                match got_results.iter().position(|g| *g == want) {
                    Some(i) => {
                        got_results.swap_remove(i);
                    }
                    None => return false,
                }
            }
            got.node_selector.as_ref().map(sorted_selector) == Some(sorted_selector(selector))
        }
    }
}

/// A node selector with its terms, requirements and values sorted; no requirements
/// and an empty list of them are the same.
fn sorted_selector(selector: &NodeSelector) -> Vec<(Vec<String>, Vec<String>)> {
    let sorted = |requirements: &Option<Vec<NodeSelectorRequirement>>| {
        let mut out: Vec<String> = requirements
            .iter()
            .flatten()
            .map(|r| {
                let mut values = r.values.clone().unwrap_or_default();
                values.sort();
                format!("{} {} {values:?}", r.key, r.operator)
            })
            .collect();
        out.sort();
        out
    };
    let mut terms: Vec<(Vec<String>, Vec<String>)> = selector
        .node_selector_terms
        .iter()
        .map(|t| (sorted(&t.match_expressions), sorted(&t.match_fields)))
        .collect();
    terms.sort();
    terms
}

/// A device result, briefly, for failure messages.
fn describe_result(r: &DeviceRequestAllocationResult) -> String {
    let mut text = format!("{}: {}/{}/{}", r.request, r.driver, r.pool, r.device);
    if r.admin_access.is_some() {
        text.push_str(&format!(" admin={:?}", r.admin_access));
    }
    if let Some(t) = &r.tolerations {
        text.push_str(&format!(" tolerations={t:?}"));
    }
    if let Some(s) = &r.share_id {
        text.push_str(&format!(" share={s}"));
    }
    if let Some(c) = &r.consumed_capacity {
        text.push_str(&format!(" consumed={c:?}"));
    }
    if r.binding_conditions.is_some() || r.binding_failure_conditions.is_some() {
        text.push_str(&format!(
            " binding={:?}/{:?}",
            r.binding_conditions, r.binding_failure_conditions
        ));
    }
    text
}

/// A claim's allocation, briefly, for failure messages.
fn describe_allocation(a: &AllocationResult) -> String {
    let devices = a.devices.clone().unwrap_or_default();
    let results: Vec<String> = devices
        .results
        .iter()
        .flatten()
        .map(describe_result)
        .collect();
    let mut text = format!("[{}]", results.join(", "));
    if let Some(config) = &devices.config {
        text.push_str(&format!(" config={config:?}"));
    }
    text.push_str(&format!(
        " selector={:?}",
        a.node_selector.as_ref().map(sorted_selector)
    ));
    text
}

/// The allocations, briefly, for failure messages.
fn describe(results: &[AllocationResult]) -> String {
    if results.is_empty() {
        return "no allocation".into();
    }
    let claims: Vec<String> = results.iter().map(describe_allocation).collect();
    claims.join(" | ")
}

/// The expected allocations, briefly, for failure messages.
fn describe_wanted(want: &[Want]) -> String {
    if want.is_empty() {
        return "no allocation".into();
    }
    let claims: Vec<String> = want
        .iter()
        .map(|w| match w {
            Want::Exact(a) => describe_allocation(a),
            Want::Matching(selector, results) => {
                let results: Vec<String> = results.iter().map(describe_result).collect();
                format!(
                    "[{}] (any order) selector={:?}",
                    results.join(", "),
                    sorted_selector(selector)
                )
            }
        })
        .collect();
    claims.join(" | ")
}

/// Upstream's selector for devices with at least `size` of memory.
fn memory_at_least(size: &str) -> String {
    format!(r#"device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{size}")) >= 0"#)
}

/// An allocation of `results` usable on node-1 only.
fn local_to_node1(results: Vec<DeviceRequestAllocationResult>) -> Want {
    allocation(local_node_selector(NODE1), results)
}

#[test]
fn basic_rows() {
    run(vec![
        Case {
            name: "empty",
            ..Case::default()
        },
        Case {
            name: "simple",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            name: "other-node",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
                slice_with_one_device(SLICE2, NODE2, POOL2, DRIVER_A),
            ],
            node: Some(node(NODE2, REGION2)),
            want: vec![allocation(
                local_node_selector(NODE2),
                vec![result(REQ0, DRIVER_A, POOL2, DEVICE1)],
            )],
            ..Case::default()
        },
        Case {
            name: "small-and-large",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ0, CLASS_A, 1).selector(memory_at_least("1Gi")),
                    request(REQ1, CLASS_A, 1).selector(memory_at_least("2Gi")),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE1).capacity("memory", "1Gi"),
                device(DEVICE2).capacity("memory", "2Gi"),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            ])],
            ..Case::default()
        },
        Case {
            name: "small-and-large-backtrack-requests",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ0, CLASS_A, 1).selector(memory_at_least("1Gi")),
                    request(REQ1, CLASS_A, 1).selector(memory_at_least("2Gi")),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE2).capacity("memory", "2Gi"),
                device(DEVICE1).capacity("memory", "1Gi"),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            ])],
            ..Case::default()
        },
        Case {
            name: "small-and-large-backtrack-claims",
            claims: vec![
                claim_with_requests(
                    CLAIM0,
                    vec![],
                    vec![request(REQ0, CLASS_A, 1).selector(memory_at_least("1Gi"))],
                ),
                claim_with_requests(
                    CLAIM1,
                    vec![],
                    vec![request(REQ1, CLASS_A, 1).selector(memory_at_least("2Gi"))],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE2).capacity("memory", "2Gi"),
                device(DEVICE1).capacity("memory", "1Gi"),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                local_to_node1(vec![result(REQ1, DRIVER_A, POOL1, DEVICE2)]),
            ],
            ..Case::default()
        },
        Case {
            name: "devices-split-across-different-slices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_A),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            ])],
            ..Case::default()
        },
        Case {
            name: "obsolete-slice",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice("slice-1-obsolete", NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
                // This makes the other slice obsolete.
                slice("slice-1-obsolete", NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE2)])
                    .generation(2),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "duplicate-slice",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            // Two identical slices of a pool of two under different names.
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A).slice_count(2),
                slice_with_one_device("slice-1-2", NODE1, POOL1, DRIVER_A).slice_count(2),
            ],
            node: Some(node(NODE1, REGION1)),
            error: vec!["invalid resource pools were encountered"],
            ..Case::default()
        },
        Case {
            name: "no-slices",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "not-enough-suitable-devices",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM0, REQ1, CLASS_A),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "no-classes",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: vec!["could not retrieve device class class-a"],
            ..Case::default()
        },
        Case {
            name: "unknown-class",
            claims: vec![claim_with_request(CLAIM0, REQ0, "unknown-class")],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: vec!["could not retrieve device class unknown-class"],
            ..Case::default()
        },
        Case {
            name: "empty-class",
            claims: vec![claim_with_request(CLAIM0, REQ0, "")],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: vec![
                "claim claim-0, request req-0: missing device class name (unsupported request type?)",
            ],
            ..Case::default()
        },
        Case {
            name: "no-claims-to-allocate",
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
    ]);
}

#[test]
fn all_devices_and_admin_access_rows() {
    // A firstAvailable request whose first subrequest asks for all devices of class-a.
    let all_or_one_of_b = || {
        claim(CLAIM0).requests(vec![first_available(
            REQ0,
            vec![
                sub_request(SUB_REQ0, CLASS_A, 1).mode("All").count(0),
                sub_request(SUB_REQ1, CLASS_B, 1),
            ],
        )])
    };
    run(vec![
        Case {
            name: "all-devices-single",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![all_request(REQ0, CLASS_A)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            name: "all-devices-with-consumed-counters",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![all_request(REQ0, CLASS_A)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    device(DEVICE1).consumes(COUNTER_SET1, &[("memory", "4Gi")]),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "8Gi")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            name: "all-devices-many",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![all_request(REQ0, CLASS_A)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            ])],
            ..Case::default()
        },
        Case {
            name: "all-devices-of-the-incomplete-pool",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![all_request(REQ0, CLASS_A).count(1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            // The pool is incomplete: one other slice is missing.
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A).slice_count(2)],
            node: Some(node(NODE1, REGION1)),
            error: vec![
                "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated",
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-plus-another",
            claims: vec![
                claim_with_requests(CLAIM0, vec![], vec![all_request(REQ0, CLASS_A)]),
                claim_with_requests(CLAIM1, vec![], vec![request(REQ0, CLASS_B, 1)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                local_to_node1(vec![result(REQ0, DRIVER_B, POOL1, DEVICE1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-plus-another-reversed",
            claims: vec![
                claim_with_requests(CLAIM1, vec![], vec![request(REQ0, CLASS_B, 1)]),
                claim_with_requests(CLAIM0, vec![], vec![all_request(REQ0, CLASS_A)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_B, POOL1, DEVICE1)]),
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-many-plus-another",
            claims: vec![
                claim_with_requests(CLAIM0, vec![], vec![all_request(REQ0, CLASS_A)]),
                claim_with_requests(CLAIM1, vec![], vec![request(REQ0, CLASS_B, 1)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE2),
                ]),
                local_to_node1(vec![result(REQ0, DRIVER_B, POOL1, DEVICE1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-many-plus-another-reversed",
            claims: vec![
                claim_with_requests(CLAIM1, vec![], vec![request(REQ0, CLASS_B, 1)]),
                claim_with_requests(CLAIM0, vec![], vec![all_request(REQ0, CLASS_A)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_B, POOL1, DEVICE1)]),
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE2),
                ]),
            ],
            ..Case::default()
        },
        Case {
            // One device, two claims both trying to allocate it.
            name: "all-devices-no-solution",
            claims: vec![
                claim_with_requests(CLAIM1, vec![], vec![request(REQ0, CLASS_A, 1)]),
                claim_with_requests(CLAIM0, vec![], vec![all_request(REQ0, CLASS_A)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-no-solution-reversed",
            claims: vec![
                claim_with_requests(CLAIM0, vec![], vec![all_request(REQ0, CLASS_A)]),
                claim_with_requests(CLAIM1, vec![], vec![request(REQ0, CLASS_A, 1)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-slice-without-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![all_request(REQ0, CLASS_A)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-no-slices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![all_request(REQ0, CLASS_A)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-some-allocated",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![all_request(REQ0, CLASS_A)],
            )],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-some-allocated-admin-access",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A)
                    .request_at(0, |r| r.admin_access().mode("All")),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).admin(),
                result(REQ0, DRIVER_A, POOL1, DEVICE2).admin(),
            ])],
            ..Case::default()
        },
        Case {
            // The second request, for all devices, cannot be fulfilled because the first
            // request claims a device.
            name: "all-devices-some-allocating-admin-access",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ0, CLASS_A, 1).admin_access(),
                    request(REQ1, CLASS_A, 1).admin_access().mode("All"),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "count-devices-some-allocated-admin-access",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A)
                    .request_at(0, |r| r.admin_access().mode("ExactCount").count(2)),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).admin(),
                result(REQ0, DRIVER_A, POOL1, DEVICE2).admin(),
            ])],
            ..Case::default()
        },
        Case {
            name: "separate-claims-share-device-admin-access",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A).request_at(0, |r| r.admin_access()),
                claim_with_request(CLAIM1, REQ0, CLASS_A).request_at(0, |r| r.admin_access()),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1).admin()]),
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1).admin()]),
            ],
            ..Case::default()
        },
        Case {
            name: "admin-access-claims-device-allocating-for-non-admin-access",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM1, REQ0, CLASS_A).request_at(0, |r| r.admin_access()),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1).admin()]),
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-slice-without-devices-prioritized-list",
            claims: vec![all_or_one_of_b()],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_B,
                POOL2,
                DEVICE1,
            )])],
            ..Case::default()
        },
        Case {
            name: "all-devices-no-slices-prioritized-list",
            claims: vec![all_or_one_of_b()],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_B,
                POOL2,
                DEVICE1,
            )])],
            ..Case::default()
        },
        Case {
            name: "all-devices-some-allocated-prioritized-list",
            claims: vec![all_or_one_of_b()],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_B,
                POOL2,
                DEVICE1,
            )])],
            ..Case::default()
        },
        Case {
            name: "admin-access-enabled",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A).request_at(0, |r| r.admin_access()),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1), id(DRIVER_A, POOL1, DEVICE2)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).admin(),
            ])],
            ..Case::default()
        },
    ]);
}

#[test]
fn node_selection_rows() {
    run(vec![
        Case {
            name: "network-attached-device",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                node_label_selector(REGION_KEY, &[REGION1]),
                POOL1,
                DRIVER_A,
            )],
            node: Some(node(NODE1, REGION1)),
            want: vec![allocation(
                node_label_selector(REGION_KEY, &[REGION1]),
                vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)],
            )],
            ..Case::default()
        },
        Case {
            name: "unsuccessful-allocation-network-attached-device",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                node_label_selector(REGION_KEY, &[REGION1]),
                POOL1,
                DRIVER_A,
            )],
            // Wrong region, no devices available.
            node: Some(node(NODE2, REGION2)),
            ..Case::default()
        },
        Case {
            name: "many-network-attached-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 4)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(
                    SLICE1,
                    node_label_selector(REGION_KEY, &[REGION1]),
                    POOL1,
                    DRIVER_A,
                ),
                slice_with_one_device(SLICE1, Nodes::All, POOL2, DRIVER_A),
                slice_with_one_device(
                    SLICE1,
                    node_label_selector(PLANET_KEY, &[PLANET_VALUE_EARTH]),
                    POOL3,
                    DRIVER_A,
                ),
                slice_with_one_device(SLICE1, local_node_selector(NODE1), POOL4, DRIVER_A),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![allocation(
                // A union of the individual selectors.
                NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![
                            requirement(REGION_KEY, &[REGION1]),
                            requirement(PLANET_KEY, &[PLANET_VALUE_EARTH]),
                        ]),
                        match_fields: Some(vec![requirement(FIELD_NAME_KEY, &[NODE1])]),
                    }],
                },
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ0, DRIVER_A, POOL2, DEVICE1),
                    result(REQ0, DRIVER_A, POOL3, DEVICE1),
                    result(REQ0, DRIVER_A, POOL4, DEVICE1),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "local-and-network-attached-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(
                    SLICE1,
                    node_label_selector(REGION_KEY, &[REGION1]),
                    POOL1,
                    DRIVER_A,
                ),
                slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A),
            ],
            node: Some(node(NODE1, REGION1)),
            // Once there is any node-local device, the selector is for that node.
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            ])],
            ..Case::default()
        },
        Case {
            name: "several-different-drivers",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM0, REQ0, CLASS_B),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                local_to_node1(vec![result(REQ0, DRIVER_B, POOL1, DEVICE1)]),
            ],
            ..Case::default()
        },
        Case {
            name: "already-allocated-devices",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1), id(DRIVER_A, POOL1, DEVICE2)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
    ]);
}

#[test]
fn constraint_rows() {
    let numa = |value| device(DEVICE1).attribute("numa", int_attribute(value));
    run(vec![
        Case {
            name: "with-constraint",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![
                    match_attribute(INT_ATTRIBUTE, &[]),
                    match_attribute(VERSION_ATTRIBUTE, &[]),
                    match_attribute(STRING_ATTRIBUTE, &[]),
                    match_attribute(BOOL_ATTRIBUTE, &[]),
                ],
                vec![request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(
                    [DEVICE1, DEVICE2]
                        .into_iter()
                        .map(|name| {
                            device(name)
                                .attribute("driverVersion", version_attribute("1.0.0"))
                                .attribute("numa", int_attribute(1))
                                .attribute(
                                    "stringAttribute",
                                    string_attribute("stringAttributeValue"),
                                )
                                .attribute("boolAttribute", bool_attribute(true))
                        })
                        .collect(),
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            ])],
            ..Case::default()
        },
        Case {
            name: "with-constraint-non-existent-attribute",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A)
                    .constraints(vec![match_attribute(NON_EXISTENT_ATTRIBUTE, &[])]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-int-attribute",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![match_attribute(INT_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                numa(1),
                device(DEVICE2).attribute("numa", int_attribute(2)),
            ])],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-int-attribute-all-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![match_attribute(INT_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 0).mode("All")],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                numa(1),
                device(DEVICE2).attribute("numa", int_attribute(2)),
            ])],
            node: Some(node(NODE1, REGION1)),
            error: vec![
                "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied",
            ],
            ..Case::default()
        },
        Case {
            // device-2 fails the constraint after reserving the only counter.
            name: "partitionable-all-mode-constraint-must-error-with-reserved-counter",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![match_attribute(INT_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 0).mode("All")],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    numa(1),
                    device(DEVICE2)
                        .attribute("numa", int_attribute(2))
                        .consumes(COUNTER_SET1, &[("c", "1")]),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("c", "1")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            error: vec![
                "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied",
            ],
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-string-attribute",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![match_attribute(STRING_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                    device(DEVICE1)
                        .attribute("stringAttribute", string_attribute("stringAttributeValue")),
                    device(DEVICE2)
                        .attribute("stringAttribute", string_attribute("stringAttributeValue2")),
                ])],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-bool-attribute",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![match_attribute(BOOL_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE1).attribute("boolAttribute", bool_attribute(true)),
                device(DEVICE2).attribute("boolAttribute", bool_attribute(false)),
            ])],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-version-attribute",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![match_attribute(VERSION_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE1).attribute("driverVersion", version_attribute("1.0.0")),
                device(DEVICE2).attribute("driverVersion", version_attribute("2.0.0")),
            ])],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-for-request",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![match_attribute(VERSION_ATTRIBUTE, &[REQ0])],
                vec![request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE1).attribute("driverVersion", version_attribute("1.0.0")),
                device(DEVICE2).attribute("driverVersion", version_attribute("2.0.0")),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            ])],
            ..Case::default()
        },
        Case {
            name: "with-constraint-for-request-retry",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![
                    match_attribute(VERSION_ATTRIBUTE, &[REQ0]),
                    match_attribute(STRING_ATTRIBUTE, &[]),
                ],
                vec![request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                // This device does not satisfy the second match attribute, so the
                // allocator must backtrack.
                device(DEVICE1)
                    .attribute("driverVersion", version_attribute("1.0.0"))
                    .attribute("stringAttribute", string_attribute("a")),
                device(DEVICE2)
                    .attribute("driverVersion", version_attribute("2.0.0"))
                    .attribute("stringAttribute", string_attribute("b")),
                device(DEVICE3)
                    .attribute("driverVersion", version_attribute("3.0.0"))
                    .attribute("stringAttribute", string_attribute("b")),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
            ])],
            ..Case::default()
        },
    ]);
}

#[test]
fn config_rows() {
    run(vec![
        Case {
            name: "with-class-device-config",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class_with_config(CLASS_A, DRIVER_A, "classAttribute")],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)],
                vec![config_entry(
                    "FromClass",
                    None,
                    device_configuration(DRIVER_A, "classAttribute"),
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "with-class-device-config-with-multiple-request-and-configs",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ0, CLASS_A, 1),
                    request(REQ1, CLASS_A, 1),
                    request(REQ2, CLASS_B, 1),
                ],
            )],
            classes: vec![
                class_with_config(CLASS_A, DRIVER_A, "classAttribute-A"),
                class_with_config(CLASS_B, DRIVER_B, "classAttribute-B"),
            ],
            slices: vec![
                slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2),
                slice_with_one_device(SLICE2, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE0),
                    result(REQ1, DRIVER_A, POOL1, DEVICE1),
                    result(REQ2, DRIVER_B, POOL1, DEVICE1),
                ],
                vec![
                    config_entry(
                        "FromClass",
                        Some(&[REQ0, REQ1]),
                        device_configuration(DRIVER_A, "classAttribute-A"),
                    ),
                    config_entry(
                        "FromClass",
                        Some(&[REQ2]),
                        device_configuration(DRIVER_B, "classAttribute-B"),
                    ),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "with-claim-config-for-two-requests",
            claims: vec![
                claim_with_requests(
                    CLAIM0,
                    vec![],
                    vec![
                        request(REQ0, CLASS_A, 1),
                        request(REQ1, CLASS_A, 1),
                        request(REQ2, CLASS_A, 1),
                    ],
                )
                .configs(vec![claim_config(
                    &[REQ0, REQ1],
                    device_configuration(DRIVER_A, "deviceAttribute"),
                )]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_multiple_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, 3,
            )],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE0),
                    result(REQ1, DRIVER_A, POOL1, DEVICE1),
                    result(REQ2, DRIVER_A, POOL1, DEVICE2),
                ],
                vec![config_entry(
                    "FromClaim",
                    Some(&[REQ0, REQ1]),
                    device_configuration(DRIVER_A, "deviceAttribute"),
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "claim-with-device-config",
            claims: vec![claim_with_device_config(
                CLAIM0,
                REQ0,
                CLASS_A,
                DRIVER_A,
                "deviceAttribute",
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)],
                vec![config_entry(
                    "FromClaim",
                    None,
                    device_configuration(DRIVER_A, "deviceAttribute"),
                )],
            )],
            ..Case::default()
        },
    ]);
}

#[test]
fn invalid_input_rows() {
    // Half of the largest count plus one: two of them overflow a naive sum.
    let half_max = i64::MAX / 2 + 1;
    let invalid_class = || {
        let mut class = class(CLASS_A, DRIVER_A);
        class.spec = Some(DeviceClassSpec {
            selectors: Some(vec![cel("noSuchVar")]),
            ..DeviceClassSpec::default()
        });
        class
    };
    run(vec![
        // berth has no type checker: upstream's compile error is a runtime error here,
        // with cel-go's words (see `dra::cel`).
        Case {
            name: "invalid-CEL-one-device",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A)
                    .request_at(0, |r| r.selectors(vec![cel("noSuchVar")])),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: vec!["undeclared reference"],
            ..Case::default()
        },
        Case {
            name: "invalid-CEL-one-device-class",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![invalid_class()],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: vec!["undeclared reference"],
            ..Case::default()
        },
        Case {
            name: "invalid-CEL-all-devices",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A)
                    .request_at(0, |r| r.selectors(vec![cel("noSuchVar")]).mode("All")),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: vec!["undeclared reference"],
            ..Case::default()
        },
        Case {
            name: "unknown-selector",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A)
                    // An empty selector: one of a future type.
                    .request_at(0, |r| r.selectors(vec![DeviceSelector::default()])),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: vec!["CEL expression empty (unsupported selector type?)"],
            ..Case::default()
        },
        Case {
            name: "unknown-allocation-mode",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A).request_at(0, |r| r.mode("future-mode")),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: vec!["unsupported count mode future-mode"],
            ..Case::default()
        },
        Case {
            name: "unknown-constraint",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A)
                    // An empty constraint: one of a future type.
                    .constraints(vec![DeviceConstraint::default()]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: vec!["empty constraint (unsupported constraint type?)"],
            ..Case::default()
        },
        Case {
            name: "too-many-devices-single-request",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 500)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            error: vec!["exceeds the claim limit"],
            ..Case::default()
        },
        Case {
            name: "many-devices-okay",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 32)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            ..Case::default()
        },
        Case {
            name: "too-many-devices-total",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 32), request(REQ1, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_multiple_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, 33,
            )],
            node: Some(node(NODE1, REGION1)),
            error: vec!["exceeds the claim limit"],
            ..Case::default()
        },
        Case {
            // Each count is representable, their sum is not.
            name: "exact-count-total-overflows-claim-limit",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, half_max),
                request(REQ1, CLASS_A, half_max),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            error: vec!["exceeds the claim limit"],
            ..Case::default()
        },
        Case {
            // Four counts that would wrap a naive sum back to zero.
            name: "exact-count-total-would-wrap-to-zero",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, half_max),
                request(REQ1, CLASS_A, half_max),
                request(REQ2, CLASS_A, half_max),
                request(REQ3, CLASS_A, half_max),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            error: vec!["exceeds the claim limit"],
            ..Case::default()
        },
        Case {
            // req-0 fits on its own: the error names req-1.
            name: "exact-count-sum-exceeds-claim-limit",
            claims: vec![
                claim(CLAIM0)
                    .requests(vec![request(REQ0, CLASS_A, 20), request(REQ1, CLASS_A, 20)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            error: vec!["request req-1", "exceeds the claim limit"],
            ..Case::default()
        },
        Case {
            name: "exact-count-sum-exactly-fills-claim-limit",
            claims: vec![
                claim(CLAIM0)
                    .requests(vec![request(REQ0, CLASS_A, 16), request(REQ1, CLASS_A, 16)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_multiple_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, 32,
            )],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(
                [
                    multiple_results(REQ0, DRIVER_A, POOL1, 16, 0),
                    multiple_results(REQ1, DRIVER_A, POOL1, 16, 16),
                ]
                .concat(),
            )],
            ..Case::default()
        },
        Case {
            name: "all-devices-invalid-CEL",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 500)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            error: vec!["exceeds the claim limit"],
            ..Case::default()
        },
    ]);
}

#[test]
fn prioritized_list_rows() {
    let memory_and_version = |name: &str, memory: &str, version: &str| {
        device(name)
            .capacity("memory", memory)
            .attribute("driverVersion", version_attribute(version))
    };
    run(vec![
        Case {
            name: "prioritized-list-first-unavailable",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_B, 1),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_A,
                POOL1,
                DEVICE1,
            )])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-non-available",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_B, 2),
                    sub_request(SUB_REQ1, CLASS_A, 2),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "prioritized-list-device-config",
            claims: vec![
                claim(CLAIM0)
                    .requests(vec![first_available(
                        REQ0,
                        vec![
                            sub_request(SUB_REQ0, CLASS_A, 1),
                            sub_request(SUB_REQ1, CLASS_B, 2),
                        ],
                    )])
                    .configs(vec![
                        claim_config(&[REQ0_SUB_REQ0], device_configuration(DRIVER_A, "foo")),
                        claim_config(&[REQ0_SUB_REQ1], device_configuration(DRIVER_B, "bar")),
                    ]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_B).devices(vec![
                device(DEVICE1).no_attributes(),
                device(DEVICE2).no_attributes(),
            ])],
            node: Some(node(NODE1, REGION1)),
            // The configuration of the subrequest not used is dropped, and the other
            // one covers every request.
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE1),
                    result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE2),
                ],
                vec![config_entry(
                    "FromClaim",
                    None,
                    device_configuration(DRIVER_B, "bar"),
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-class-config",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 2),
                    sub_request(SUB_REQ1, CLASS_B, 2),
                ],
            )])],
            classes: vec![
                class_with_config(CLASS_A, DRIVER_A, "foo"),
                class_with_config(CLASS_B, DRIVER_B, "bar"),
            ],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_B)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
                slice(SLICE2, NODE1, POOL2, DRIVER_A).devices(vec![device(DEVICE3)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE1),
                    result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE2),
                ],
                vec![config_entry(
                    "FromClass",
                    None,
                    device_configuration(DRIVER_B, "bar"),
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "claim-config-scoped-to-subrequests-of-one-request",
            claims: vec![
                claim(CLAIM0)
                    .requests(vec![
                        first_available(
                            REQ0,
                            vec![
                                sub_request(SUB_REQ0, CLASS_A, 1),
                                sub_request(SUB_REQ1, CLASS_B, 1),
                            ],
                        ),
                        request(REQ1, CLASS_A, 1),
                    ])
                    .configs(vec![claim_config(
                        &[REQ0_SUB_REQ0, REQ0_SUB_REQ1],
                        device_configuration(DRIVER_A, "scoped"),
                    )]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_multiple_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, 2,
            )],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0_SUB_REQ0, DRIVER_A, POOL1, DEVICE0),
                    result(REQ1, DRIVER_A, POOL1, DEVICE1),
                ],
                vec![config_entry(
                    "FromClaim",
                    Some(&[REQ0_SUB_REQ0, REQ0_SUB_REQ1]),
                    device_configuration(DRIVER_A, "scoped"),
                )],
            )],
            ..Case::default()
        },
        Case {
            // The configuration covers req-0 through its subrequest and req-1 by name:
            // every request, so it names none.
            name: "claim-config-covering-all-requests-is-cleared",
            claims: vec![
                claim(CLAIM0)
                    .requests(vec![
                        first_available(
                            REQ0,
                            vec![
                                sub_request(SUB_REQ0, CLASS_A, 1),
                                sub_request(SUB_REQ1, CLASS_B, 1),
                            ],
                        ),
                        request(REQ1, CLASS_A, 1),
                    ])
                    .configs(vec![claim_config(
                        &[REQ0_SUB_REQ0, REQ1],
                        device_configuration(DRIVER_A, "all"),
                    )]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_multiple_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, 2,
            )],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0_SUB_REQ0, DRIVER_A, POOL1, DEVICE0),
                    result(REQ1, DRIVER_A, POOL1, DEVICE1),
                ],
                vec![config_entry(
                    "FromClaim",
                    None,
                    device_configuration(DRIVER_A, "all"),
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-subrequests-with-expressions",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, 1).selectors(vec![cel(memory_at_least("1Gi"))]),
                first_available(
                    REQ1,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 1).selector(memory_at_least("4Gi")),
                        sub_request(SUB_REQ1, CLASS_A, 2).selector(memory_at_least("2Gi")),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE1).capacity("memory", "2Gi"),
                device(DEVICE2).capacity("memory", "2Gi"),
                device(DEVICE3).capacity("memory", "1Gi"),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2),
            ])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-subrequests-with-constraints-ref-parent-request",
            claims: vec![
                claim(CLAIM0)
                    .constraints(vec![match_attribute(VERSION_ATTRIBUTE, &[REQ0, REQ1])])
                    .requests(vec![
                        request(REQ0, CLASS_A, 1).selectors(vec![cel(memory_at_least("8Gi"))]),
                        first_available(
                            REQ1,
                            vec![
                                sub_request(SUB_REQ0, CLASS_A, 1).selector(memory_at_least("2Gi")),
                                sub_request(SUB_REQ1, CLASS_A, 1).selector(memory_at_least("1Gi")),
                            ],
                        ),
                    ]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![memory_and_version(DEVICE1, "8Gi", "1.0.0")]),
                slice(SLICE2, NODE1, POOL2, DRIVER_A).devices(vec![
                    memory_and_version(DEVICE2, "2Gi", "2.0.0"),
                    memory_and_version(DEVICE3, "1Gi", "1.0.0"),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL2, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-subrequests-with-constraints-ref-sub-request",
            claims: vec![
                claim(CLAIM0)
                    .constraints(vec![match_attribute(
                        VERSION_ATTRIBUTE,
                        &[REQ0, REQ1_SUB_REQ0],
                    )])
                    .requests(vec![
                        request(REQ0, CLASS_A, 1).selectors(vec![cel(memory_at_least("8Gi"))]),
                        first_available(
                            REQ1,
                            vec![
                                sub_request(SUB_REQ0, CLASS_A, 1).selector(memory_at_least("2Gi")),
                                sub_request(SUB_REQ1, CLASS_A, 1).selector(memory_at_least("1Gi")),
                            ],
                        ),
                    ]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![memory_and_version(DEVICE1, "8Gi", "1.0.0")]),
                slice(SLICE2, NODE1, POOL2, DRIVER_A)
                    .devices(vec![memory_and_version(DEVICE2, "2Gi", "2.0.0")]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL2, DEVICE2),
            ])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-subrequests-with-allocation-mode-all",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 1).mode("All").count(0),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_A,
                POOL1,
                DEVICE2,
            )])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-allocation-mode-all-multiple-requests",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, 1),
                first_available(
                    REQ1,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 0).mode("All"),
                        sub_request(SUB_REQ1, CLASS_A, 1),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2),
            ])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-multi-request",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ1, CLASS_A, 1).selectors(vec![cel(memory_at_least("8Gi"))]),
                first_available(
                    REQ0,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 1).selector(memory_at_least("8Gi")),
                        sub_request(SUB_REQ1, CLASS_A, 1).selector(memory_at_least("4Gi")),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                    device(DEVICE1).capacity("memory", "8Gi").no_attributes(),
                ]),
                slice(SLICE2, NODE1, POOL2, DRIVER_A).devices(vec![
                    device(DEVICE2).capacity("memory", "4Gi").no_attributes(),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ0_SUB_REQ1, DRIVER_A, POOL2, DEVICE2),
            ])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-with-backtracking",
            claims: vec![claim(CLAIM0).requests(vec![
                first_available(
                    REQ0,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 1).selector(memory_at_least("8Gi")),
                        sub_request(SUB_REQ1, CLASS_A, 1).selector(memory_at_least("4Gi")),
                    ],
                ),
                request(REQ1, CLASS_A, 1).selectors(vec![cel(memory_at_least("8Gi"))]),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                    device(DEVICE1).capacity("memory", "8Gi").no_attributes(),
                ]),
                slice(SLICE2, NODE1, POOL2, DRIVER_A).devices(vec![
                    device(DEVICE2).capacity("memory", "4Gi").no_attributes(),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0_SUB_REQ1, DRIVER_A, POOL2, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
            ])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-too-many-in-first-subrequest",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_B, 500),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_A,
                POOL1,
                DEVICE1,
            )])],
            ..Case::default()
        },
        Case {
            // The pre-flight check counts the smallest alternative: 20 + min(20, 24).
            name: "prioritized-list-minimum-sum-exceeds-claim-limit",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, 20),
                first_available(
                    REQ1,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 20),
                        sub_request(SUB_REQ1, CLASS_A, 24),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            error: vec!["request req-1", "exceeds the claim limit"],
            ..Case::default()
        },
        Case {
            // Upstream also pins 8 allocateOne invocations here, which berth does not
            // count; the result is what is compared.
            name: "prioritized-list-overflowing-first-subrequest-is-pruned",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, 1),
                first_available(
                    REQ1,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, i64::MAX),
                        sub_request(SUB_REQ1, CLASS_A, 1),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2),
            ])],
            ..Case::default()
        },
    ]);
}

/// Upstream's selector for devices whose driver-a attribute `name` is `value`.
fn attribute_is(name: &str, value: &str) -> String {
    format!(r#"device.attributes["{DRIVER_A}"].{name} == "{value}""#)
}

/// A device consuming `values` of `counter_set`, its capacity those counters.
fn counter_device(name: &str, counter_set: &str, values: &[(&str, &str)]) -> Device {
    device(name)
        .consumes(counter_set, values)
        .capacity_from_counters()
}

#[test]
fn partitionable_device_rows() {
    // Three devices of 4Gi, 6Gi and 4Gi memory from a counter set of 8Gi.
    let three_devices_of_eight_gi = || {
        vec![
            slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                counter_device(DEVICE1, COUNTER_SET1, &[("memory", "4Gi")]),
                counter_device(DEVICE2, COUNTER_SET1, &[("memory", "6Gi")]),
                counter_device(DEVICE3, COUNTER_SET1, &[("memory", "4Gi")]),
            ]),
            slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "8Gi")])]),
        ]
    };
    let six_or_four_gi = |name: &str| {
        first_available(
            name,
            vec![
                sub_request(SUB_REQ0, CLASS_A, 1).selector(memory_at_least("6Gi")),
                sub_request(SUB_REQ1, CLASS_A, 1).selector(memory_at_least("4Gi")),
            ],
        )
    };
    let counter_c = |name: &str, value: &str| device(name).consumes(COUNTER_SET1, &[("c", value)]);
    run(vec![
        Case {
            // Compatibility groups are off: the slice of device-1, which declares one, is
            // ignored, which leaves pool-1 incomplete; pool-2 declares none.
            name: "compatibility-groups-disabled-skips-grouped-pool",
            claims: vec![claim(CLAIM0).requests(vec![request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    device(DEVICE1).consumes_in_groups(COUNTER_SET1, &[(CAPACITY0, "2")], &["mig"]),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[(CAPACITY0, "4")])]),
                slice(SLICE3, NODE1, resource_pool(POOL2, 2), DRIVER_A).devices(vec![
                    device(DEVICE2).consumes(COUNTER_SET2, &[(CAPACITY0, "2")]),
                ]),
                slice(SLICE4, NODE1, resource_pool(POOL2, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET2, &[(CAPACITY0, "4")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL2, DEVICE2)])],
            ..Case::default()
        },
        Case {
            // The ignored slice of device-1 leaves the pool incomplete, which blocks
            // device-2 too.
            name: "compatibility-groups-disabled-skips-ungrouped-device-in-grouped-pool",
            claims: vec![claim(CLAIM0).requests(vec![request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 3), DRIVER_A).devices(vec![
                    device(DEVICE1).consumes_in_groups(COUNTER_SET1, &[(CAPACITY0, "1")], &["mig"]),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 3), DRIVER_A).devices(vec![
                    device(DEVICE2).consumes(COUNTER_SET1, &[(CAPACITY0, "1")]),
                ]),
                slice(SLICE3, NODE1, resource_pool(POOL1, 3), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[(CAPACITY0, "4")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // Upstream runs this row with partitionable devices off, where the device
            // that consumes counters is not allocatable. With them on, as in 1.37, the
            // outcome is the same for another reason: two slices in a pool of one leave
            // the pool incomplete.
            name: "partitionable-devices-disabled-device-consumes-counters",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                    device(DEVICE1).consumes(COUNTER_SET1, &[("memory", "4Gi")]),
                ]),
                slice(SLICE2, NODE1, POOL1, DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "18Gi")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-single-device",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    device(DEVICE1).consumes(COUNTER_SET1, &[("memory", "4Gi")]),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "8Gi")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-counter-quantities-are-not-modified",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    counter_c(DEVICE1, "9000000000000000000"),
                    counter_c(DEVICE2, "1"),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A).counter_sets(vec![
                    counter_set(COUNTER_SET1, &[("c", "10000000000000000000")]),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE2)])],
            ..Case::default()
        },
        Case {
            // Two pools named pool-1 of different drivers, with counter sets of the same
            // name but different sizes.
            name: "partitionable-devices-counter-cache-scoped-by-pool-ID",
            claims: vec![
                claim_with_requests(CLAIM0, vec![], vec![request(REQ0, CLASS_A, 1)]),
                claim_with_requests(CLAIM1, vec![], vec![request(REQ1, CLASS_B, 1)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![counter_c(DEVICE1, "1")]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("c", "1")])]),
                slice(SLICE3, NODE1, resource_pool(POOL1, 2), DRIVER_B)
                    .devices(vec![counter_c(DEVICE2, "2")]),
                slice(SLICE4, NODE1, resource_pool(POOL1, 2), DRIVER_B)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("c", "2")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)]),
                local_to_node1(vec![result(REQ1, DRIVER_B, POOL1, DEVICE2)]),
            ],
            ..Case::default()
        },
        Case {
            // device-2 consumes more of its own counter set than there is.
            name: "partitionable-devices-counter-cache-not-crossed-between-driver-schemas",
            claims: vec![
                claim_with_requests(CLAIM0, vec![], vec![request(REQ0, CLASS_A, 1)]),
                claim_with_requests(CLAIM1, vec![], vec![request(REQ1, CLASS_B, 1)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![counter_c(DEVICE1, "1")]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("c", "1")])]),
                slice(SLICE3, NODE1, resource_pool(POOL1, 2), DRIVER_B)
                    .devices(vec![device(DEVICE2).consumes(COUNTER_SET2, &[("d", "2")])]),
                slice(SLICE4, NODE1, resource_pool(POOL1, 2), DRIVER_B)
                    .counter_sets(vec![counter_set(COUNTER_SET2, &[("d", "1")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // device-1's taint rejects it after its counter is reserved; releasing that
            // lets device-2 have it.
            name: "partitionable-devices-taint-releases-counter",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    counter_c(DEVICE1, "1").taints(vec![taint_no_schedule()]),
                    counter_c(DEVICE2, "1"),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("c", "1")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE2)])],
            ..Case::default()
        },
        Case {
            // The blue devices are rejected by the constraint after reserving their
            // counters; releasing those lets both of them be allocated.
            name: "partitionable-devices-constraint-releases-counter",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![match_attribute(STRING_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    counter_c(DEVICE1, "1").attribute("stringAttribute", string_attribute("red")),
                    counter_c(DEVICE2, "1").attribute("stringAttribute", string_attribute("blue")),
                    counter_c(DEVICE3, "1").attribute("stringAttribute", string_attribute("blue")),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("c", "2")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            // req-0 first takes the shareable device-1 and its counter; req-1 needs that
            // counter for device-3, so backtracking must release it.
            name: "partitionable-consumable-capacity-backtrack-releases-counter",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ0, CLASS_A, 1).selector(attribute_is("kind", "shared")),
                    request(REQ1, CLASS_A, 1).selector(attribute_is("kind", "counteronly")),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    device(DEVICE1)
                        .attribute("kind", string_attribute("shared"))
                        .allow_multiple_allocations()
                        .consumes(COUNTER_SET1, &[("c", "1")]),
                    device(DEVICE2).attribute("kind", string_attribute("shared")),
                    device(DEVICE3)
                        .attribute("kind", string_attribute("counteronly"))
                        .consumes(COUNTER_SET1, &[("c", "1")]),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("c", "1")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            // claim-1's all-mode subrequest adds device-1 to its constraint, then finds
            // its capacity used up by claim-0; rolling back the constraint lets the
            // fallback take device-2.
            name: "consumable-capacity-rejection-rolls-back-constraints",
            claims: vec![
                claim(CLAIM0).requests(vec![
                    request(REQ0, CLASS_A, 1)
                        .capacity(Some("2"))
                        .selectors(vec![cel(attribute_is("stringAttribute", "cap"))]),
                ]),
                claim(CLAIM1)
                    .constraints(vec![match_attribute(STRING_ATTRIBUTE, &[])])
                    .requests(vec![first_available(
                        REQ0,
                        vec![
                            sub_request(SUB_REQ0, CLASS_A, 1)
                                .selector(attribute_is("stringAttribute", "cap"))
                                .mode("All")
                                .capacity(Some("2")),
                            sub_request(SUB_REQ1, CLASS_A, 1)
                                .selector(attribute_is("stringAttribute", "fb")),
                        ],
                    )]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE1)
                    .capacity(CAPACITY0, "2")
                    .attribute("stringAttribute", string_attribute("cap"))
                    .allow_multiple_allocations(),
                device(DEVICE2).attribute("stringAttribute", string_attribute("fb")),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
                ]),
                local_to_node1(vec![result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE2)]),
            ],
            ..Case::default()
        },
        Case {
            // claim-1's req-1 tries device-1 as a second share, then backtracks onto
            // device-2; that must not drop the share claim-0 holds, so req-3 shares
            // device-1 again without charging its counter twice.
            name: "partitionable-empty-capacity-multiple-share-backtrack-keeps-counter-ownership",
            claims: vec![
                claim_with_requests(
                    CLAIM0,
                    vec![],
                    vec![request(REQ0, CLASS_A, 1).selector(attribute_is("kind", "shared"))],
                ),
                claim_with_requests(
                    CLAIM1,
                    vec![match_attribute(STRING_ATTRIBUTE, &[REQ1, REQ2])],
                    vec![
                        request(REQ1, CLASS_A, 1).selector(format!(
                            "{} || {}",
                            attribute_is("kind", "shared"),
                            attribute_is("kind", "fallback")
                        )),
                        request(REQ2, CLASS_A, 1).selector(attribute_is("kind", "gate")),
                        request(REQ3, CLASS_A, 1).selector(attribute_is("kind", "shared")),
                    ],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    device(DEVICE1)
                        .attribute("kind", string_attribute("shared"))
                        .attribute("stringAttribute", string_attribute("red"))
                        .allow_multiple_allocations()
                        .consumes(COUNTER_SET1, &[("c", "1")]),
                    device(DEVICE2)
                        .attribute("kind", string_attribute("fallback"))
                        .attribute("stringAttribute", string_attribute("blue")),
                    device(DEVICE3)
                        .attribute("kind", string_attribute("gate"))
                        .attribute("stringAttribute", string_attribute("blue")),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("c", "1")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1).shared()]),
                local_to_node1(vec![
                    result(REQ1, DRIVER_A, POOL1, DEVICE2),
                    result(REQ2, DRIVER_A, POOL1, DEVICE3),
                    result(REQ3, DRIVER_A, POOL1, DEVICE1).shared(),
                ]),
            ],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-prioritized-list",
            claims: vec![
                claim(CLAIM0).requests(vec![request(REQ0, CLASS_A, 1), six_or_four_gi(REQ1)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: three_devices_of_eight_gi(),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-multiple-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: three_devices_of_eight_gi(),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-multiple-capacity-pools",
            claims: vec![
                claim(CLAIM0).requests(vec![request(REQ0, CLASS_A, 1), six_or_four_gi(REQ1)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(
                    [
                        (DEVICE1, "4Gi", "4"),
                        (DEVICE2, "6Gi", "6"),
                        (DEVICE3, "4Gi", "4"),
                    ]
                    .into_iter()
                    .map(|(name, memory, cpus)| {
                        device(name)
                            .consumes(COUNTER_SET1, &[("memory", memory)])
                            .consumes(COUNTER_SET2, &[("cpus", cpus)])
                            .capacity_from_counters()
                    })
                    .collect(),
                ),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A).counter_sets(vec![
                    counter_set(COUNTER_SET1, &[("memory", "18Gi")]),
                    counter_set(COUNTER_SET2, &[("cpus", "8")]),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-multiple-counters",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    device(DEVICE1)
                        .consumes(COUNTER_SET1, &[("memory", "4Gi"), ("cpus", "6")])
                        .consumes(COUNTER_SET2, &[("cpus", "4"), ("memory", "2Gi")])
                        .capacity_from_counters(),
                    device(DEVICE2)
                        .consumes(COUNTER_SET1, &[("memory", "6Gi"), ("cpus", "4")])
                        .consumes(COUNTER_SET2, &[("cpus", "6"), ("memory", "6Gi")])
                        .capacity_from_counters(),
                    device(DEVICE3)
                        .consumes(COUNTER_SET1, &[("memory", "4Gi"), ("cpus", "4")])
                        .consumes(COUNTER_SET2, &[("cpus", "4"), ("memory", "4Gi")])
                        .capacity_from_counters(),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A).counter_sets(vec![
                    counter_set(COUNTER_SET1, &[("cpus", "8"), ("memory", "18Gi")]),
                    counter_set(COUNTER_SET2, &[("cpus", "12"), ("memory", "18Gi")]),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-multiple-pools",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("cpus", "6"), ("memory", "4Gi")]),
                    counter_device(DEVICE2, COUNTER_SET1, &[("cpus", "4"), ("memory", "6Gi")]),
                    counter_device(DEVICE3, COUNTER_SET1, &[("cpus", "4"), ("memory", "4Gi")]),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A).counter_sets(vec![
                    counter_set(COUNTER_SET1, &[("cpus", "8"), ("memory", "18Gi")]),
                ]),
                slice(SLICE3, NODE1, resource_pool(POOL2, 2), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("cpus", "6"), ("memory", "4Gi")]),
                    counter_device(DEVICE2, COUNTER_SET1, &[("cpus", "1"), ("memory", "7Gi")]),
                    counter_device(DEVICE3, COUNTER_SET1, &[("cpus", "1"), ("memory", "7Gi")]),
                ]),
                slice(SLICE4, NODE1, resource_pool(POOL2, 2), DRIVER_A).counter_sets(vec![
                    counter_set(COUNTER_SET1, &[("cpus", "8"), ("memory", "18Gi")]),
                ]),
            ],
            allocated: vec![
                id(DRIVER_A, POOL1, DEVICE2),
                id(DRIVER_A, POOL1, DEVICE3),
                id(DRIVER_A, POOL2, DEVICE1),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL2, DEVICE2),
                result(REQ1, DRIVER_A, POOL2, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-unused-counters-in-counter-set",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    device(DEVICE1).consumes(COUNTER_SET1, &[("memory", "5Gi")]),
                    device(DEVICE2).consumes(COUNTER_SET1, &[("memory", "4Gi")]),
                    device(DEVICE3).consumes(COUNTER_SET1, &[("memory", "4Gi")]),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A).counter_sets(vec![
                    counter_set(COUNTER_SET1, &[("memory", "8Gi"), ("unused", "1Gi")]),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            // Two slices in a pool of one: the pool is incomplete as well.
            name: "partitionable-devices-no-capacity-available",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("memory", "4Gi")]),
                    counter_device(DEVICE2, COUNTER_SET1, &[("memory", "16Gi")]),
                ]),
                slice(SLICE2, NODE1, POOL1, DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "18Gi")])]),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE2)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-overallocated-capacity-pool",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("memory", "4Gi")]),
                    counter_device(DEVICE2, COUNTER_SET1, &[("memory", "20Gi")]),
                ]),
                slice(SLICE2, NODE1, POOL1, DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "18Gi")])]),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE2)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-per-device-node-selection-nodename",
            claims: vec![claim(CLAIM0).requests(vec![six_or_four_gi(REQ0)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, Nodes::PerDevice, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("memory", "4Gi")]).node_name(NODE1),
                    counter_device(DEVICE2, COUNTER_SET1, &[("memory", "6Gi")]).node_name(NODE2),
                ]),
                slice(SLICE2, Nodes::PerDevice, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "18Gi")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_A,
                POOL1,
                DEVICE1,
            )])],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-per-device-node-selection-node-selector",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, Nodes::PerDevice, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("memory", "4Gi")])
                        .node_selector(node_label_selector(REGION_KEY, &[REGION1])),
                ]),
                slice(SLICE2, Nodes::PerDevice, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "18Gi")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![allocation(
                node_label_selector(REGION_KEY, &[REGION1]),
                vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)],
            )],
            ..Case::default()
        },
        Case {
            // With a node-local device among them, the selector is for that node alone.
            name: "partitionable-devices-per-device-node-selection-node-selector-multiple-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 3), request(REQ1, CLASS_B, 3)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice(SLICE1, Nodes::PerDevice, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("memory", "4Gi")])
                        .node_selector(node_label_selector(REGION_KEY, &[REGION1])),
                    counter_device(DEVICE2, COUNTER_SET1, &[("memory", "4Gi")]).node_name(NODE1),
                    counter_device(DEVICE3, COUNTER_SET1, &[("memory", "4Gi")]).all_nodes(),
                ]),
                slice(SLICE2, Nodes::PerDevice, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "18Gi")])]),
                slice(SLICE3, NODE1, resource_pool(POOL2, 2), DRIVER_B).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET2, &[("memory", "4Gi")]),
                    counter_device(DEVICE2, COUNTER_SET2, &[("memory", "4Gi")]),
                    counter_device(DEVICE3, COUNTER_SET2, &[("memory", "4Gi")]),
                ]),
                slice(SLICE4, NODE1, resource_pool(POOL2, 2), DRIVER_B)
                    .counter_sets(vec![counter_set(COUNTER_SET2, &[("memory", "12Gi")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1, DRIVER_B, POOL2, DEVICE1),
                result(REQ1, DRIVER_B, POOL2, DEVICE2),
                result(REQ1, DRIVER_B, POOL2, DEVICE3),
            ])],
            ..Case::default()
        },
    ]);
}

#[test]
fn taint_rows() {
    let no_schedule_and_no_execute = || {
        vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
            device(DEVICE1).taints(vec![taint_no_schedule()]),
            device(DEVICE2).taints(vec![taint_no_execute()]),
        ])]
    };
    let two_taints = || {
        vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
            device(DEVICE1).taints(vec![taint_no_schedule(), taint_no_execute()]),
        ])]
    };
    run(vec![
        Case {
            name: "tainted-two-devices",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: no_schedule_and_no_execute(),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "tainted-one-device-two-taints",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: two_taints(),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // Only the second device's taint is tolerated.
            name: "tainted-two-devices-tolerated",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A)
                    .tolerations(vec![toleration_no_execute()]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: no_schedule_and_no_execute(),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE2).tolerations(vec![toleration_no_execute()]),
            ])],
            ..Case::default()
        },
        Case {
            name: "tainted-two-devices-prioritized-list-tolerated",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 1),
                    sub_request(SUB_REQ1, CLASS_A, 1).toleration(toleration_no_execute()),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: no_schedule_and_no_execute(),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE2)
                    .tolerations(vec![toleration_no_execute()]),
            ])],
            ..Case::default()
        },
        Case {
            name: "tainted-no-effect",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1).taints(vec![taint_none()])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            name: "tainted-one-device-two-taints-both-tolerated",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A)
                    .tolerations(vec![toleration_no_schedule(), toleration_no_execute()]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: two_taints(),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1)
                    .tolerations(vec![toleration_no_schedule(), toleration_no_execute()]),
            ])],
            ..Case::default()
        },
        Case {
            name: "tainted-prioritized-list",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_B, 1),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1).taints(vec![taint_no_schedule()])]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // Admin access does not bypass taints.
            name: "tainted-admin-access",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A).request_at(0, |r| r.admin_access()),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1), id(DRIVER_A, POOL1, DEVICE2)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1).taints(vec![taint_no_schedule()])]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "tainted-all-devices-single",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![all_request(REQ0, CLASS_A)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1).taints(vec![taint_no_schedule()])]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
    ]);
}

#[test]
fn prioritized_list_all_devices_rows() {
    // Subrequests for all devices of generation v6, else all of generation v5.
    let all_v6_or_all_v5 = || {
        claim(CLAIM0).requests(vec![first_available(
            REQ0,
            vec![
                sub_request(SUB_REQ0, CLASS_A, 0)
                    .selector(attribute_is("generation", "v6"))
                    .mode("All"),
                sub_request(SUB_REQ1, CLASS_A, 0)
                    .selector(attribute_is("generation", "v5"))
                    .mode("All"),
            ],
        )])
    };
    let generation =
        |name: &str, value: &str| device(name).attribute("generation", string_attribute(value));
    run(vec![
        Case {
            name: "prioritized-list-allocation-mode-all",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 0).mode("All"),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE2)],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_A,
                POOL1,
                DEVICE1,
            )])],
            ..Case::default()
        },
        Case {
            // An "All" subrequest that selects no device fails: the next one is tried.
            name: "prioritized-list-allocation-mode-all-with-selectors",
            claims: vec![all_v6_or_all_v5()],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![generation(DEVICE1, "v5")]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_A,
                POOL1,
                DEVICE1,
            )])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-allocation-mode-all-with-selectors-multiple-pools",
            claims: vec![all_v6_or_all_v5()],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![generation(DEVICE1, "v5")]),
                slice(SLICE2, NODE1, POOL2, DRIVER_A).devices(vec![generation(DEVICE1, "v5")]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ0_SUB_REQ1, DRIVER_A, POOL2, DEVICE1),
            ])],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes",
            claims: vec![all_v6_or_all_v5()],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![generation(DEVICE1, "v5")]),
                slice(SLICE2, NODE2, POOL2, DRIVER_A)
                    .devices(vec![generation(DEVICE1, "v5"), generation(DEVICE2, "v6")]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_A,
                POOL1,
                DEVICE1,
            )])],
            ..Case::default()
        },
        Case {
            // Only the devices of the class count.
            name: "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset",
            claims: vec![all_v6_or_all_v5()],
            classes: vec![class_with_selector(
                CLASS_A,
                format!(
                    r#"device.driver == "{DRIVER_A}" && device.attributes["{DRIVER_A}"].selected"#
                ),
            )],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                generation(DEVICE1, "v6").attribute("selected", bool_attribute(false)),
                generation(DEVICE2, "v5").attribute("selected", bool_attribute(false)),
                generation(DEVICE3, "v5").attribute("selected", bool_attribute(true)),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_A,
                POOL1,
                DEVICE3,
            )])],
            ..Case::default()
        },
        Case {
            name: "max-number-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 32)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_multiple_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, 32,
            )],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(multiple_results(
                REQ0, DRIVER_A, POOL1, 32, 0,
            ))],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-attribute-selector",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ0, CLASS_A, 2),
                    request(REQ1, CLASS_A, 1)
                        .selector(format!(r#"device.attributes["{DRIVER_A}"].special"#)),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(
                    [
                        (DEVICE1, true, "cpu1"),
                        (DEVICE2, false, "cpu2"),
                        (DEVICE3, false, "cpu3"),
                    ]
                    .into_iter()
                    .map(|(name, special, cpu)| {
                        device(name)
                            .attribute("special", bool_attribute(special))
                            .consumes(COUNTER_SET1, &[(cpu, "1")])
                            .consumes(COUNTER_SET2, &[("mem", "10Gi")])
                    })
                    .collect(),
                ),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A).counter_sets(vec![
                    counter_set(COUNTER_SET1, &[("cpu1", "1"), ("cpu2", "1"), ("cpu3", "1")]),
                    counter_set(COUNTER_SET2, &[("mem", "30Gi")]),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
            ])],
            ..Case::default()
        },
        Case {
            // Upstream also pins 75 allocateOne invocations (not counted by berth).
            name: "prioritized-list-max-allocation-limit-request",
            claims: vec![
                claim(CLAIM0).requests(
                    [REQ0, REQ1]
                        .into_iter()
                        .map(|name| {
                            first_available(
                                name,
                                vec![
                                    sub_request(SUB_REQ0, CLASS_A, 32),
                                    sub_request(SUB_REQ1, CLASS_A, 16),
                                ],
                            )
                        })
                        .collect(),
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_multiple_devices(
                SLICE1, NODE1, POOL1, DRIVER_A, 64,
            )],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(
                [
                    multiple_results(REQ0_SUB_REQ1, DRIVER_A, POOL1, 16, 0),
                    multiple_results(REQ1_SUB_REQ1, DRIVER_A, POOL1, 16, 16),
                ]
                .concat(),
            )],
            ..Case::default()
        },
        Case {
            // Upstream also pins 42 allocateOne invocations (not counted by berth).
            name: "prioritized-list-max-allocation-allocation-mode-all",
            claims: vec![claim(CLAIM0).requests(vec![
                first_available(
                    REQ0,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 0).mode("All"),
                        sub_request(SUB_REQ1, CLASS_A, 2),
                    ],
                ),
                request(REQ1, CLASS_B, 2),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 31),
                slice_with_multiple_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE0),
                result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_B, POOL2, DEVICE0),
                result(REQ1, DRIVER_B, POOL2, DEVICE1),
            ])],
            ..Case::default()
        },
    ]);
}

#[test]
fn binding_condition_rows() {
    let memory_device = |name: &str, counter_set: &str, memory: &str| {
        counter_device(name, counter_set, &[("memory", memory)])
    };
    let memory_counters = |name: &str, counter_set: &str| {
        counter_set_slice(name, resource_pool(POOL1, 2), counter_set, "8Gi")
    };
    let key1_taint = || taint("key1", "value1", "NoSchedule");
    run(vec![
        Case {
            name: "device-binding-conditions",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE1).binding_conditions(&["IsPrepare"], &["BindingFailed"]),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                ],
                vec![],
            )],
            ..Case::default()
        },
        Case {
            name: "binding-conditions-multiple-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE1).binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                device(DEVICE2).binding_conditions(&["IsPrepare2"], &["BindingFailed2"]),
                device(DEVICE3).binding_conditions(&["IsPrepare3"], &["BindingFailed3"]),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                    result(REQ0, DRIVER_A, POOL1, DEVICE2)
                        .binding_conditions(&["IsPrepare2"], &["BindingFailed2"]),
                    result(REQ1, DRIVER_A, POOL1, DEVICE3)
                        .binding_conditions(&["IsPrepare3"], &["BindingFailed3"]),
                ],
                vec![],
            )],
            ..Case::default()
        },
        Case {
            name: "binding-conditions-with-and-without",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                device(DEVICE1),
                device(DEVICE2).binding_conditions(&["IsPrepare"], &["BindingFailed"]),
            ])],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ1, DRIVER_A, POOL1, DEVICE2)
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                ],
                vec![],
            )],
            ..Case::default()
        },
        Case {
            // A device bound to the node it is allocated for narrows the selector to it.
            name: "node-restriction",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(
                    SLICE1,
                    node_label_selector(PLANET_KEY, &[PLANET_VALUE_EARTH]),
                    POOL1,
                    DRIVER_A,
                )
                .devices(vec![device(DEVICE1).binds_to_node(true)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    memory_device(DEVICE1, COUNTER_SET1, "4Gi")
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                ]),
                memory_counters(SLICE2, COUNTER_SET1),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                ],
                vec![],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions-multiple",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    memory_device(DEVICE1, COUNTER_SET1, "4Gi")
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                    memory_device(DEVICE2, COUNTER_SET1, "4Gi")
                        .binding_conditions(&["IsPrepare2"], &["BindingFailed2"]),
                ]),
                memory_counters(SLICE2, COUNTER_SET1),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                    result(REQ0, DRIVER_A, POOL1, DEVICE2)
                        .binding_conditions(&["IsPrepare2"], &["BindingFailed2"]),
                ],
                vec![],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions-some-devices-no-conditions",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 3)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    memory_device(DEVICE1, COUNTER_SET1, "2Gi")
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                    memory_device(DEVICE2, COUNTER_SET1, "2Gi"),
                    memory_device(DEVICE3, COUNTER_SET1, "4Gi")
                        .binding_conditions(&["IsReady"], &["BindingTimeout"]),
                ]),
                memory_counters(SLICE2, COUNTER_SET1),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                    result(REQ0, DRIVER_A, POOL1, DEVICE2),
                    result(REQ0, DRIVER_A, POOL1, DEVICE3)
                        .binding_conditions(&["IsReady"], &["BindingTimeout"]),
                ],
                vec![],
            )],
            ..Case::default()
        },
        Case {
            // Slices are tried by name: device-2 of slice-2 comes first.
            name: "partitionable-devices-with-binding-conditions-multi-slices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE4, NODE1, resource_pool(POOL1, 4), DRIVER_A).devices(vec![
                    memory_device(DEVICE1, COUNTER_SET1, "4Gi")
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                ]),
                counter_set_slice(SLICE3, resource_pool(POOL1, 4), COUNTER_SET1, "8Gi"),
                slice(SLICE2, NODE1, resource_pool(POOL1, 4), DRIVER_A)
                    .devices(vec![memory_device(DEVICE2, COUNTER_SET2, "4Gi")]),
                counter_set_slice(SLICE1, resource_pool(POOL1, 4), COUNTER_SET2, "8Gi"),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE2),
                    result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                ],
                vec![],
            )],
            ..Case::default()
        },
        Case {
            // device-1's taint is not tolerated (and two slices in a pool of one leave
            // the pool incomplete as well).
            name: "partitionable-devices-with-binding-conditions-and-taints",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                    memory_device(DEVICE1, COUNTER_SET1, "4Gi")
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"])
                        .taints(vec![key1_taint()]),
                    memory_device(DEVICE2, COUNTER_SET1, "4Gi"),
                ]),
                counter_set_slice(SLICE2, POOL1, COUNTER_SET1, "8Gi"),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions-and-taints-tolerated",
            claims: vec![
                claim_with_requests(CLAIM0, vec![], vec![request(REQ0, CLASS_A, 2)])
                    .tolerations(vec![toleration_no_schedule_key1()]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    memory_device(DEVICE1, COUNTER_SET1, "4Gi")
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"])
                        .taints(vec![key1_taint()]),
                    memory_device(DEVICE2, COUNTER_SET1, "4Gi"),
                ]),
                memory_counters(SLICE2, COUNTER_SET1),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"])
                        .tolerations(vec![toleration_no_schedule_key1()]),
                    result(REQ0, DRIVER_A, POOL1, DEVICE2)
                        .tolerations(vec![toleration_no_schedule_key1()]),
                ],
                vec![],
            )],
            ..Case::default()
        },
    ]);
}

/// A node-1 slice of driver-a with nothing but a counter set of `memory`.
fn counter_set_slice(
    name: &str,
    pool: impl IntoPool,
    counter_set: &str,
    memory: &str,
) -> ResourceSlice {
    slice(name, NODE1, pool, DRIVER_A)
        .counter_sets(vec![self::counter_set(counter_set, &[("memory", memory)])])
}

/// A claim with one request for one device of class-a, and that request's capacity.
fn capacity_claim(name: &str, quantity: Option<&str>) -> ResourceClaim {
    claim(name).requests(vec![request(REQ0, CLASS_A, 1).capacity(quantity)])
}

/// A node-1 slice of driver-a in pool-1 with `devices`.
fn pool1_slice(devices: Vec<Device>) -> Vec<ResourceSlice> {
    vec![slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(devices)]
}

/// A device that allows multiple allocations, with a `capacity-0` of `value` from 2
/// in steps of 2 up to 4, 2 by default.
fn ranged_device(name: &str, value: &str) -> Device {
    device(name)
        .allow_multiple_allocations()
        .capacity_range(CAPACITY0, value)
}

/// A device that allows multiple allocations, with a `capacity-0` of `value` and no
/// request policy.
fn shareable_device(name: &str, value: &str) -> Device {
    device(name)
        .allow_multiple_allocations()
        .capacity(CAPACITY0, value)
}

#[test]
fn consumable_capacity_rows() {
    let multi_class = || {
        vec![class_with_allow_multiple_allocations(
            CLASS_A, DRIVER_A, true,
        )]
    };
    // 2^64: more than the integer arithmetic of a range can hold.
    let above_int64 = "18446744073709551616";
    run(vec![
        Case {
            // The device has no capacity of the requested name.
            name: "consumable-capacity-multi-allocatable-device-with-missing-capacity-request",
            claims: vec![capacity_claim(CLAIM0, Some("1"))],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                device(DEVICE1)
                    .capacity(CAPACITY1, "1")
                    .allow_multiple_allocations(),
            ]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request",
            claims: vec![
                claim(CLAIM0).requests(vec![all_request(REQ0, CLASS_A).capacity(Some("1"))]),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![
                device(DEVICE1)
                    .capacity(CAPACITY1, "1")
                    .allow_multiple_allocations(),
            ]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // Both share the device; it has no capacity to consume.
            name: "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM1, REQ0, CLASS_A),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![device(DEVICE1).allow_multiple_allocations()]),
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1).shared()]),
                local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1).shared()]),
            ],
            ..Case::default()
        },
        Case {
            // Without a policy, each share takes all of a device.
            name: "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM1, REQ0, CLASS_A),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![
                shareable_device(DEVICE1, "1"),
                shareable_device(DEVICE2, "1"),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "1")]),
                ]),
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE2).consumed(&[(CAPACITY0, "1")]),
                ]),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM1, REQ0, CLASS_A),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![shareable_device(DEVICE1, "2")]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request",
            claims: vec![
                capacity_claim(CLAIM0, Some("1")),
                capacity_claim(CLAIM1, Some("1")),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![shareable_device(DEVICE1, "2")]),
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "1")]),
                ]),
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "1")]),
                ]),
            ],
            ..Case::default()
        },
        Case {
            // Both get the policy's default.
            name: "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request",
            claims: vec![
                claim_with_requests(CLAIM0, vec![], vec![request(REQ0, CLASS_A, 1)]),
                claim_with_requests(CLAIM1, vec![], vec![request(REQ0, CLASS_A, 1)]),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "4")]),
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
                ]),
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
                ]),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-zero-request-policy",
            claims: vec![
                claim_with_requests(CLAIM0, vec![], vec![request(REQ0, CLASS_A, 1)]),
                claim_with_requests(CLAIM1, vec![], vec![request(REQ0, CLASS_A, 1)]),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![
                device(DEVICE1)
                    .allow_multiple_allocations()
                    .capacity_valid_values("0", CAPACITY0, "1", &[]),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "0")]),
                ]),
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "0")]),
                ]),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-violates-zero-request-policy",
            claims: vec![capacity_claim(CLAIM0, Some("1"))],
            classes: multi_class(),
            slices: pool1_slice(vec![
                device(DEVICE1)
                    .allow_multiple_allocations()
                    .capacity_valid_values("0", CAPACITY0, "1", &[]),
            ]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // 1 rounds up to the minimum, 2.
            name: "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request",
            claims: vec![
                capacity_claim(CLAIM0, Some("1")),
                capacity_claim(CLAIM1, Some("1")),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "4")]),
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
                ]),
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
                ]),
            ],
            ..Case::default()
        },
        Case {
            // 3 rounds up to the next step, 4.
            name: "consumable-capacity-multi-allocatable-device-with-range-policy-step",
            claims: vec![capacity_claim(CLAIM0, Some("3"))],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "4")]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "4")]),
            ])],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-range-policy-request-above-int64-rejected",
            claims: vec![capacity_claim(CLAIM0, Some(above_int64))],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "4")]),
            node: Some(node(NODE1, REGION1)),
            error: vec!["cannot be represented"],
            ..Case::default()
        },
        Case {
            // Rounding the largest int64 up to the next step passes it.
            name: "consumable-capacity-range-policy-rounded-value-overflow-rejected",
            claims: vec![capacity_claim(CLAIM0, Some("9223372036854775807"))],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "4")]),
            node: Some(node(NODE1, REGION1)),
            error: vec!["cannot be represented"],
            ..Case::default()
        },
        Case {
            // device-2 could hold the request, but an unrepresentable request aborts.
            name: "consumable-capacity-range-policy-overflow-aborts-not-skip",
            claims: vec![capacity_claim(CLAIM0, Some(above_int64))],
            classes: multi_class(),
            slices: pool1_slice(vec![
                ranged_device(DEVICE1, "4"),
                shareable_device(DEVICE2, "36893488147419103232"),
            ]),
            node: Some(node(NODE1, REGION1)),
            error: vec!["cannot be represented"],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-range-policy-allocation-mode-all-overflow-aborts",
            claims: vec![
                claim(CLAIM0)
                    .requests(vec![all_request(REQ0, CLASS_A).capacity(Some(above_int64))]),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "4")]),
            node: Some(node(NODE1, REGION1)),
            error: vec!["cannot be represented"],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-negative-request-aborts",
            claims: vec![capacity_claim(CLAIM0, Some("-5"))],
            classes: multi_class(),
            slices: pool1_slice(vec![shareable_device(DEVICE1, "10")]),
            node: Some(node(NODE1, REGION1)),
            error: vec!["negative"],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-valid-values-policy",
            claims: vec![capacity_claim(CLAIM0, Some("2"))],
            classes: multi_class(),
            slices: pool1_slice(vec![
                device(DEVICE1)
                    .allow_multiple_allocations()
                    .capacity_valid_values("1", CAPACITY0, "4", &["2"]),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
            ])],
            ..Case::default()
        },
        Case {
            // 2 rounds up to the next valid value, 3.
            name: "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up",
            claims: vec![capacity_claim(CLAIM0, Some("2"))],
            classes: multi_class(),
            slices: pool1_slice(vec![
                device(DEVICE1)
                    .allow_multiple_allocations()
                    .capacity_valid_values("1", CAPACITY0, "3", &["3"]),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "3")]),
            ])],
            ..Case::default()
        },
        Case {
            // The first share rounds up to all of the device.
            name: "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request",
            claims: vec![
                capacity_claim(CLAIM0, Some("1")),
                capacity_claim(CLAIM1, Some("2")),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "2")]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // 6 is above the policy's maximum of 4, though the device has 10.
            name: "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy",
            claims: vec![capacity_claim(CLAIM0, Some("6"))],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "10")]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining",
            claims: vec![capacity_claim(CLAIM0, Some("2"))],
            capacity: vec![(id(DRIVER_A, POOL1, DEVICE1), vec![(CAPACITY0, "2")])],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "4")]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
            ])],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device",
            claims: vec![capacity_claim(CLAIM0, Some("2"))],
            capacity: vec![(id(DRIVER_A, POOL1, DEVICE1), vec![(CAPACITY0, "2")])],
            classes: multi_class(),
            slices: pool1_slice(vec![
                ranged_device(DEVICE1, "2"),
                ranged_device(DEVICE2, "2"),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE2).consumed(&[(CAPACITY0, "2")]),
            ])],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-with-multi-allocatable-device-backtrack",
            claims: vec![
                claim(CLAIM0)
                    .constraints(vec![match_attribute(STRING_ATTRIBUTE, &[])])
                    .requests(vec![
                        request(REQ0, CLASS_A, 1).capacity(Some("2")),
                        request(REQ1, CLASS_A, 1).capacity(Some("2")),
                    ]),
                capacity_claim(CLAIM1, Some("2")),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                ranged_device(DEVICE2, "2")
                    .attribute("stringAttribute", string_attribute("stringAttributeValue1")),
                ranged_device(DEVICE1, "4")
                    .attribute("stringAttribute", string_attribute("stringAttributeValue2")),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
                    result(REQ1, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
                ]),
                local_to_node1(vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE2).consumed(&[(CAPACITY0, "2")]),
                ]),
            ],
            ..Case::default()
        },
        Case {
            // Two subrequests share a name.
            name: "consumable-capacity-multi-allocatable-device-with-subrequest",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 1).capacity(Some("4")),
                    sub_request(SUB_REQ1, CLASS_A, 1).capacity(Some("2")),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ],
            )])],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "2")]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
            ])],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity",
            claims: vec![capacity_claim(CLAIM0, Some("2"))],
            capacity: vec![(id(DRIVER_A, POOL1, DEVICE1), vec![(CAPACITY0, "2")])],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "2")]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // Only the device with the capacity is taken.
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity",
            claims: vec![
                claim(CLAIM0).requests(vec![all_request(REQ0, CLASS_A).capacity(Some("2"))]),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![
                shareable_device(DEVICE1, "2"),
                device(DEVICE2).allow_multiple_allocations(),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
            ])],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity",
            claims: vec![
                claim(CLAIM0).requests(vec![all_request(REQ0, CLASS_A).capacity(Some("2"))]),
            ],
            classes: multi_class(),
            slices: pool1_slice(vec![
                shareable_device(DEVICE1, "2"),
                shareable_device(DEVICE2, "1"),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
            ])],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, 1).capacity(Some("1")),
                all_request(REQ1, CLASS_A).capacity(Some("1")),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                shareable_device(DEVICE1, "2"),
                shareable_device(DEVICE2, "1"),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "1")]),
                result(REQ1, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "1")]),
                result(REQ1, DRIVER_A, POOL1, DEVICE2).consumed(&[(CAPACITY0, "1")]),
            ])],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient",
            capacity: vec![(id(DRIVER_A, POOL1, DEVICE1), vec![(CAPACITY0, "1")])],
            claims: vec![
                claim(CLAIM0).requests(vec![all_request(REQ0, CLASS_A).capacity(Some("1"))]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                shareable_device(DEVICE1, "2"),
                shareable_device(DEVICE2, "1"),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "1")]),
                result(REQ0, DRIVER_A, POOL1, DEVICE2).consumed(&[(CAPACITY0, "1")]),
            ])],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, 1).capacity(Some("1")),
                all_request(REQ1, CLASS_A).capacity(Some("1")),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                shareable_device(DEVICE1, "1"),
                shareable_device(DEVICE2, "1"),
            ]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // device-1 has no capacity left but is still one of "all": no allocation.
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient",
            capacity: vec![(id(DRIVER_A, POOL1, DEVICE1), vec![(CAPACITY0, "1")])],
            claims: vec![
                claim(CLAIM0).requests(vec![all_request(REQ0, CLASS_A).capacity(Some("1"))]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                shareable_device(DEVICE1, "1"),
                shareable_device(DEVICE2, "1"),
            ]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-dedicated-device-with-consumable-capacity-request",
            claims: vec![capacity_claim(CLAIM0, Some("1"))],
            classes: vec![class_with_allow_multiple_allocations(
                CLASS_A, DRIVER_A, false,
            )],
            slices: pool1_slice(vec![device(DEVICE1).capacity(CAPACITY0, "1")]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            // A device that does not allow multiple allocations is allocated once.
            name: "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request",
            claims: vec![
                capacity_claim(CLAIM0, Some("1")),
                capacity_claim(CLAIM1, Some("1")),
            ],
            classes: vec![class_with_allow_multiple_allocations(
                CLASS_A, DRIVER_A, false,
            )],
            slices: pool1_slice(vec![device(DEVICE1).capacity_range(CAPACITY0, "2")]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-requests-are-not-modified",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, 1).capacity(Some("2")),
                request(REQ1, CLASS_A, 1).capacity(Some("1000000000000000000000")),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                device(DEVICE1)
                    .capacity_with_policy(
                        CAPACITY0,
                        "1000000000000000000002",
                        CapacityRequestPolicy {
                            default: Some(q("1000000000000000000000")),
                            valid_range: Some(CapacityRequestPolicyRange {
                                min: q("2"),
                                max: None,
                                step: None,
                            }),
                            valid_values: None,
                        },
                    )
                    .allow_multiple_allocations(),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
                result(REQ1, DRIVER_A, POOL1, DEVICE1)
                    .consumed(&[(CAPACITY0, "1000000000000000000000")]),
            ])],
            ..Case::default()
        },
    ]);
}

#[test]
fn shared_device_rows() {
    let multi_class = || {
        vec![class_with_allow_multiple_allocations(
            CLASS_A, DRIVER_A, true,
        )]
    };
    let string_device = |name: &str, value: &str| {
        device(name).attribute("stringAttribute", string_attribute(value))
    };
    let numa_device = |name: &str, value: i64| device(name).attribute("numa", int_attribute(value));
    run(vec![
        Case {
            name: "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector",
            claims: vec![capacity_claim(CLAIM0, Some("1"))],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, false)],
            slices: pool1_slice(vec![shareable_device(DEVICE1, "1")]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated",
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            claims: vec![capacity_claim(CLAIM0, Some("1"))],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "2")]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable",
            claims: vec![capacity_claim(CLAIM0, Some("1"))],
            capacity: vec![(id(DRIVER_A, POOL1, DEVICE1), vec![(CAPACITY0, "1")])],
            classes: multi_class(),
            slices: pool1_slice(vec![device(DEVICE1).capacity_range(CAPACITY0, "2")]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "allow-multiple-allocations-with-partitionable-device",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, 1),
                first_available(
                    REQ1,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 1).selector(memory_at_least("6Gi")),
                        sub_request(SUB_REQ1, CLASS_A, 1).selector(memory_at_least("4Gi")),
                    ],
                ),
            ])],
            classes: multi_class(),
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("memory", "4Gi")]).allow_multiple_allocations(),
                    counter_device(DEVICE2, COUNTER_SET1, &[("memory", "6Gi")]).allow_multiple_allocations(),
                    counter_device(DEVICE3, COUNTER_SET1, &[("memory", "4Gi")]).allow_multiple_allocations(),
                ]),
                counter_set_slice(SLICE2, resource_pool(POOL1, 2), COUNTER_SET1, "8Gi"),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[("memory", "4Gi")]),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3).consumed(&[("memory", "4Gi")]),
            ])],
            ..Case::default()
        },
        Case {
            // device-1's persisted share holds the only counter, so device-2 cannot
            // have it.
            name: "allow-multiple-allocations-with-shared-device-counter-cross-cycle",
            claims: vec![claim(CLAIM0).requests(vec![request(REQ0, CLASS_A, 1)
                .capacity(Some("1"))
                .selectors(vec![cel(attribute_is("mode", "b"))])])],
            shared: vec![id(DRIVER_A, POOL1, DEVICE1)],
            capacity: vec![(id(DRIVER_A, POOL1, DEVICE1), vec![(CAPACITY0, "1")])],
            classes: multi_class(),
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[(CAPACITY0, "1")])
                        .attribute("mode", string_attribute("a"))
                        .allow_multiple_allocations(),
                    counter_device(DEVICE2, COUNTER_SET1, &[(CAPACITY0, "1")])
                        .attribute("mode", string_attribute("b"))
                        .allow_multiple_allocations(),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[(CAPACITY0, "1")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // device-1's persisted share (without capacity) already holds its counter.
            name: "partitionable-consumable-capacity-shared-device-counter-not-recharged",
            shared: vec![id(DRIVER_A, POOL1, DEVICE1)],
            claims: vec![claim_with_requests(CLAIM0, vec![], vec![request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![device(DEVICE1)
                    .allow_multiple_allocations()
                    .consumes(COUNTER_SET1, &[("c", "1")])]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("c", "1")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1).shared()])],
            ..Case::default()
        },
        Case {
            // req-0 takes 1 of device-1; req-2 needs 2, which device-1 no longer has and
            // device-2 cannot have beside device-1's counters, so device-3; req-1's first
            // subrequest finds no device of 4 left, its second takes device-1's last 1.
            name: "consumable-capacity-with-partitionable-device-multiple-capacity-pools",
            claims: vec![claim(CLAIM0).requests(vec![
                request(REQ0, CLASS_A, 1).capacity(Some("1")),
                request(REQ2, CLASS_A, 1).capacity(Some("2")),
                first_available(
                    REQ1,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 1)
                            .selector(format!(
                                r#"device.capacity["{DRIVER_A}"]["{CAPACITY0}"].compareTo(quantity("4")) >= 0"#
                            ))
                            .capacity(Some("1")),
                        sub_request(SUB_REQ1, CLASS_A, 1)
                            .selector(format!(
                                r#"device.capacity["{DRIVER_A}"]["{CAPACITY0}"].compareTo(quantity("2")) >= 0"#
                            ))
                            .capacity(Some("1")),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(
                    [(DEVICE1, "2"), (DEVICE2, "4"), (DEVICE3, "2")]
                        .into_iter()
                        .map(|(name, capacity0)| {
                            device(name)
                                .consumes(COUNTER_SET1, &[(CAPACITY0, capacity0)])
                                .consumes(COUNTER_SET2, &[(CAPACITY1, "4")])
                                .capacity_from_counters()
                                .allow_multiple_allocations()
                                .capacity_range(CAPACITY1, "4")
                        })
                        .collect(),
                ),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A).counter_sets(vec![
                    counter_set(COUNTER_SET1, &[(CAPACITY0, "4")]),
                    counter_set(COUNTER_SET2, &[(CAPACITY1, "8")]),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "1"), (CAPACITY1, "2")]),
                result(REQ2, DRIVER_A, POOL1, DEVICE3).consumed(&[(CAPACITY0, "2"), (CAPACITY1, "2")]),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE1)
                    .consumed(&[(CAPACITY0, "1"), (CAPACITY1, "2")]),
            ])],
            ..Case::default()
        },
        Case {
            name: "with-distinct-constraints",
            claims: vec![claim(CLAIM0)
                .constraints(vec![
                    distinct_attribute(BOOL_ATTRIBUTE, &[REQ0, REQ1]),
                    distinct_attribute(VERSION_ATTRIBUTE, &[REQ0, REQ1, REQ2]),
                    distinct_attribute(INT_ATTRIBUTE, &[REQ0, REQ1, REQ2, REQ3]),
                ])
                .requests(vec![
                    request(REQ0, CLASS_A, 1),
                    request(REQ1, CLASS_A, 1),
                    request(REQ2, CLASS_A, 1),
                    request(REQ3, CLASS_A, 1),
                ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(
                [
                    (DEVICE1, "1.0.0", 0, true),
                    (DEVICE2, "1.0.1", 1, false),
                    (DEVICE3, "1.0.2", 2, true),
                    (DEVICE4, "1.0.0", 3, true),
                ]
                .into_iter()
                .map(|(name, version, numa, flag)| {
                    device(name)
                        .attribute("driverVersion", version_attribute(version))
                        .attribute("numa", int_attribute(numa))
                        .attribute("boolAttribute", bool_attribute(flag))
                        .allow_multiple_allocations()
                })
                .collect(),
            ),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).shared(),
                result(REQ1, DRIVER_A, POOL1, DEVICE2).shared(),
                result(REQ2, DRIVER_A, POOL1, DEVICE3).shared(),
                result(REQ3, DRIVER_A, POOL1, DEVICE4).shared(),
            ])],
            ..Case::default()
        },
        Case {
            name: "distinct-constraint-single-request-count-3-not-distinct",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![distinct_attribute(STRING_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 3)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                string_device(DEVICE1, "value1"),
                string_device(DEVICE2, "value2"),
                string_device(DEVICE3, "value1"),
            ]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "distinct-constraint-single-request-count-3-all-distinct",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![distinct_attribute(STRING_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 3)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                string_device(DEVICE1, "value1"),
                string_device(DEVICE2, "value2"),
                string_device(DEVICE3, "value3"),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            name: "distinct-constraint-two-requests-with-count-not-distinct",
            claims: vec![claim(CLAIM0)
                .constraints(vec![distinct_attribute(STRING_ATTRIBUTE, &[REQ0, REQ1])])
                .requests(vec![request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                string_device(DEVICE1, "value1"),
                string_device(DEVICE2, "value2"),
                string_device(DEVICE3, "value1"),
            ]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-distinct-constraints-attribute-not-set",
            claims: vec![claim(CLAIM0)
                .constraints(vec![distinct_attribute(BOOL_ATTRIBUTE, &[REQ0])])
                .requests(vec![request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![device(DEVICE1).allow_multiple_allocations()]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // An attribute without a value.
            name: "with-distinct-constraints-unknown-type-attribute",
            claims: vec![claim(CLAIM0)
                .constraints(vec![distinct_attribute(BOOL_ATTRIBUTE, &[REQ0])])
                .requests(vec![request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![device(DEVICE1)
                .attribute("boolAttribute", DeviceAttribute::default())
                .allow_multiple_allocations()]),
            node: Some(node(NODE1, REGION1)),
            error: vec!["unsupported attribute value"],
            ..Case::default()
        },
        Case {
            // The constraint covers req-0 and req-1 only: req-1 falls back to its
            // second subrequest and device-2, req-2 takes device-1 again.
            name: "with-distinct-constraints-with-subrequests",
            claims: vec![claim(CLAIM0)
                .constraints(vec![distinct_attribute(BOOL_ATTRIBUTE, &[REQ0, REQ1])])
                .requests(
                    [REQ0, REQ1, REQ2]
                        .into_iter()
                        .map(|name| {
                            first_available(
                                name,
                                vec![
                                    sub_request(SUB_REQ0, CLASS_A, 1)
                                        .selector(format!(r#"device.attributes["{DRIVER_A}"].boolAttribute"#)),
                                    sub_request(SUB_REQ1, CLASS_A, 1),
                                ],
                            )
                        })
                        .collect(),
                )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                device(DEVICE1).attribute("boolAttribute", bool_attribute(true)).allow_multiple_allocations(),
                device(DEVICE2).attribute("boolAttribute", bool_attribute(false)).allow_multiple_allocations(),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0_SUB_REQ0, DRIVER_A, POOL1, DEVICE1).shared(),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2).shared(),
                result(REQ2_SUB_REQ0, DRIVER_A, POOL1, DEVICE1).shared(),
            ])],
            ..Case::default()
        },
        Case {
            name: "distinct-constraint-single-request-multiple-devices-attribute-not-set",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![distinct_attribute(INT_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 3)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![device(DEVICE1), device(DEVICE2), device(DEVICE3)]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "distinct-constraint-single-request-not-enough-distinct-values",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![distinct_attribute(INT_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 3)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                numa_device(DEVICE1, 1),
                numa_device(DEVICE2, 2),
                numa_device(DEVICE3, 2),
                numa_device(DEVICE4, 2),
            ]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "distinct-constraint-single-request-multiple-devices-attribute-set",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![distinct_attribute(INT_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 3)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                numa_device(DEVICE1, 1),
                numa_device(DEVICE2, 2),
                numa_device(DEVICE3, 1),
                numa_device(DEVICE4, 3),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE4),
            ])],
            ..Case::default()
        },
        Case {
            // Two shares of one device have the same attribute.
            name: "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint",
            claims: vec![claim(CLAIM0)
                .constraints(vec![distinct_attribute(STRING_ATTRIBUTE, &[])])
                .requests(vec![
                    request(REQ0, CLASS_A, 1).capacity(Some("1")),
                    request(REQ1, CLASS_A, 1).capacity(Some("1")),
                ])],
            classes: multi_class(),
            slices: pool1_slice(vec![ranged_device(DEVICE1, "2")
                .attribute("stringAttribute", string_attribute("stringAttributeValue"))]),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint",
            claims: vec![claim(CLAIM0)
                .constraints(vec![distinct_attribute(STRING_ATTRIBUTE, &[])])
                .requests(vec![
                    request(REQ0, CLASS_A, 1).capacity(Some("2")),
                    request(REQ1, CLASS_A, 1).capacity(Some("2")),
                ])],
            classes: multi_class(),
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![ranged_device(DEVICE1, "4")
                    .attribute("stringAttribute", string_attribute("stringAttributeValue1"))]),
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![ranged_device(DEVICE2, "4")
                    .attribute("stringAttribute", string_attribute("stringAttributeValue2"))]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "2")]),
                result(REQ1, DRIVER_A, POOL1, DEVICE2).consumed(&[(CAPACITY0, "2")]),
            ])],
            ..Case::default()
        },
        Case {
            // 250m is between the minimum, 200m, and the next step, 300m.
            name: "consumable-capacity-fractional-range-gate-enabled-round-up",
            claims: vec![capacity_claim(CLAIM0, Some("250m"))],
            classes: multi_class(),
            slices: pool1_slice(vec![device(DEVICE1)
                .allow_multiple_allocations()
                .capacity_fractional_range(CAPACITY0, "1")]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1).consumed(&[(CAPACITY0, "300m")]),
            ])],
            ..Case::default()
        },
    ]);
}

#[test]
fn list_attribute_rows() {
    // List-valued attributes are an alpha feature: a constraint does not match them.
    let lists = || {
        pool1_slice(vec![
            device(DEVICE1).attribute(
                "stringAttribute",
                strings_attribute(&["value1", "value2", "value3"]),
            ),
            device(DEVICE2).attribute(
                "stringAttribute",
                strings_attribute(&["value2", "value3", "value4"]),
            ),
        ])
    };
    run(vec![
        Case {
            name: "list-attributes-disabled-match-constraint-with-lists",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![match_attribute(STRING_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: lists(),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "list-attributes-disabled-distinct-constraint-with-lists",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![distinct_attribute(STRING_ATTRIBUTE, &[])],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: lists(),
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
    ]);
}

#[test]
fn pool_rows() {
    // A slice of pool-1 in `generation` of a pool of two slices.
    let generation = |name: &str, node: &'static str, generation: i64, device_name: &str| {
        slice(name, node, POOL1, DRIVER_A)
            .devices(vec![device(device_name)])
            .generation(generation)
            .slice_count(2)
    };
    run(vec![
        Case {
            // "All" devices are those on the node; the pool is complete.
            name: "allocation-mode-all-with-multi-host-resource-pool",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![all_request(REQ0, CLASS_A)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
                slice(SLICE2, NODE2, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            name: "multi-host-resource-pool-with-stale-slice-for-current-node",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                generation(SLICE1, NODE1, 1, DEVICE1),
                generation(SLICE2, NODE2, 2, DEVICE2),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            // Upstream would rather not allocate here, but ignores the newer slices.
            name: "multi-host-resource-pool-complete-update-from-node-1-to-node-2",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                generation(SLICE1, NODE1, 1, DEVICE1),
                generation(SLICE1, NODE1, 1, DEVICE2),
                generation(SLICE2, NODE2, 2, DEVICE1),
                generation(SLICE2, NODE2, 2, DEVICE2),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            name: "multi-host-resource-pool-complete-update-from-node-2-to-node-1",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                generation(SLICE1, NODE2, 1, DEVICE1),
                generation(SLICE1, NODE2, 1, DEVICE2),
                generation(SLICE2, NODE1, 2, DEVICE1),
                generation(SLICE2, NODE1, 2, DEVICE2),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            // Upstream would rather not allocate here, but ignores the newer slice.
            name: "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                generation(SLICE1, NODE1, 1, DEVICE1),
                generation(SLICE1, NODE1, 1, DEVICE2),
                generation(SLICE2, NODE2, 2, DEVICE1),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE1)])],
            ..Case::default()
        },
        Case {
            // The newer generation is incomplete.
            name: "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                generation(SLICE1, NODE2, 1, DEVICE1),
                generation(SLICE1, NODE2, 1, DEVICE2),
                generation(SLICE2, NODE1, 2, DEVICE1),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-same-counter-set-name-in-different-resource-slices",
            claims: vec![claim(CLAIM0).requests(vec![request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 4), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 4), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[])]),
                slice(SLICE3, NODE1, resource_pool(POOL1, 4), DRIVER_A)
                    .devices(vec![device(DEVICE2)]),
                slice(SLICE4, NODE1, resource_pool(POOL1, 4), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[])]),
            ],
            node: Some(node(NODE1, REGION1)),
            error: vec!["invalid resource pools were encountered"],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-device-counter-consumption-references-unknown-counter-set",
            claims: vec![claim(CLAIM0).requests(vec![request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1).consumes(COUNTER_SET2, &[])]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[])]),
            ],
            node: Some(node(NODE1, REGION1)),
            error: vec!["invalid resource pools were encountered"],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set",
            claims: vec![claim(CLAIM0).requests(vec![request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A).devices(vec![
                    device(DEVICE1).consumes(COUNTER_SET1, &[("memory", "8Gi")]),
                ]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("other-memory", "8Gi")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            error: vec!["invalid resource pools were encountered"],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool",
            claims: vec![claim(CLAIM0).requests(vec![request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
                    device(DEVICE1).consumes(COUNTER_SET1, &[("memory", "8Gi")]),
                ]),
                slice(SLICE2, NODE1, POOL2, DRIVER_A)
                    .counter_sets(vec![counter_set(COUNTER_SET1, &[("memory", "8Gi")])]),
            ],
            node: Some(node(NODE1, REGION1)),
            error: vec!["invalid resource pools were encountered"],
            ..Case::default()
        },
        Case {
            // device-3 on node-2 already uses 6Gi of the pool's counters.
            name: "partitionable-devices-devices-on-different-nodes-consume-same-counter-set",
            claims: vec![claim(CLAIM0).requests(vec![first_available(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 1).selector(memory_at_least("6Gi")),
                    sub_request(SUB_REQ1, CLASS_A, 1).selector(memory_at_least("2Gi")),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                counter_set_slice(SLICE1, resource_pool(POOL1, 3), COUNTER_SET1, "8Gi"),
                slice(SLICE2, NODE1, resource_pool(POOL1, 3), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("memory", "6Gi")]),
                    counter_device(DEVICE2, COUNTER_SET1, &[("memory", "2Gi")]),
                ]),
                slice(SLICE3, NODE2, resource_pool(POOL1, 3), DRIVER_A).devices(vec![
                    device(DEVICE3).consumes(COUNTER_SET1, &[("memory", "6Gi")]),
                ]),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE3)],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(
                REQ0_SUB_REQ1,
                DRIVER_A,
                POOL1,
                DEVICE2,
            )])],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-devices-consume-counter-set-in-different-nodes",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                counter_set_slice(SLICE1, resource_pool(POOL1, 3), COUNTER_SET1, "8Gi"),
                slice(SLICE2, NODE1, resource_pool(POOL1, 3), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("memory", "6Gi")]),
                ]),
                slice(SLICE3, NODE2, resource_pool(POOL1, 3), DRIVER_A).devices(vec![
                    counter_device(DEVICE2, COUNTER_SET1, &[("memory", "6Gi")]),
                    counter_device(DEVICE3, COUNTER_SET1, &[("memory", "2Gi")]),
                ]),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            node: Some(node(NODE2, REGION1)),
            want: vec![allocation(
                local_node_selector(NODE2),
                vec![result(REQ0, DRIVER_A, POOL1, DEVICE3)],
            )],
            ..Case::default()
        },
        Case {
            // The slice for node-2 names a counter set the pool does not have.
            name: "partitionable-devices-validation-error-on-non-targeting-slice",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                counter_set_slice(SLICE1, resource_pool(POOL1, 3), COUNTER_SET1, "8Gi"),
                slice(SLICE2, NODE1, resource_pool(POOL1, 3), DRIVER_A).devices(vec![
                    counter_device(DEVICE1, COUNTER_SET1, &[("memory", "6Gi")]),
                ]),
                slice(SLICE3, NODE2, resource_pool(POOL1, 3), DRIVER_A).devices(vec![
                    device(DEVICE3).consumes(COUNTER_SET2, &[("memory", "6Gi")]),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            error: vec!["invalid resource pools were encountered"],
            ..Case::default()
        },
        Case {
            name: "different-resourceslices-in-pool-can-target-different-nodes",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE2, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL1, DEVICE2)])],
            ..Case::default()
        },
        Case {
            // pool-1 lists device-1 twice.
            name: "invalid-pool-is-ok-if-devices-can-be-allocated-from-other",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
                slice(SLICE3, NODE1, resource_pool(POOL2, 1), DRIVER_A)
                    .devices(vec![device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![result(REQ0, DRIVER_A, POOL2, DEVICE2)])],
            ..Case::default()
        },
        Case {
            name: "invalid-pool-is-error-if-no-other-device-can-be-allocated",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
                slice(SLICE3, NODE1, resource_pool(POOL2, 1), DRIVER_A)
                    .devices(vec![device(DEVICE2)]),
            ],
            allocated: vec![id(DRIVER_A, POOL2, DEVICE2)],
            node: Some(node(NODE1, REGION1)),
            error: vec!["invalid resource pools were encountered"],
            ..Case::default()
        },
        Case {
            name: "no-allocation-from-incomplete-pools",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 1)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
    ]);
}

/// Rows that pin upstream's count of search steps (`expectNumAllocateOneInvocations`);
/// berth does not count them, so only the outcome is compared.
#[test]
fn search_combination_rows() {
    let four_devices = |slices: Vec<ResourceSlice>| Case {
        claims: vec![claim_with_requests(
            CLAIM0,
            vec![],
            vec![request(REQ0, CLASS_A, 5)],
        )],
        classes: vec![class(CLASS_A, DRIVER_A)],
        slices,
        node: Some(node(NODE1, REGION1)),
        ..Case::default()
    };
    let typed = |name: &str, kind: &str| device(name).attribute("type", string_attribute(kind));
    run(vec![
        Case {
            name: "check-combinations-within-single-request-single-pool-single-slice",
            ..four_devices(pool1_slice(vec![
                device(DEVICE1),
                device(DEVICE2),
                device(DEVICE3),
                device(DEVICE4),
            ]))
        },
        Case {
            name: "check-combinations-within-single-request-single-pool-multiple-slices",
            ..four_devices(vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1), device(DEVICE2)]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE3), device(DEVICE4)]),
            ])
        },
        Case {
            name: "check-combinations-within-single-request-multiple-pools-multiple-slices",
            ..four_devices(vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![device(DEVICE2)]),
                slice(SLICE3, NODE1, POOL2, DRIVER_A)
                    .devices(vec![device(DEVICE3), device(DEVICE4)]),
            ])
        },
        Case {
            name: "check-combinations-within-single-request-many-pools",
            ..four_devices(vec![
                slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![device(DEVICE1)]),
                slice(SLICE2, NODE1, POOL2, DRIVER_A).devices(vec![device(DEVICE2)]),
                slice(SLICE3, NODE1, POOL3, DRIVER_A).devices(vec![device(DEVICE3)]),
                slice(SLICE4, NODE1, POOL4, DRIVER_A).devices(vec![device(DEVICE4)]),
            ])
        },
        Case {
            // req-1 first takes device-1 and device-2; req-2 needs device-1.
            name: "check-combinations-with-backtracking",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ1, CLASS_A, 2),
                    request(REQ2, CLASS_A, 1).selector(attribute_is("type", "X")),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                typed(DEVICE1, "X"),
                typed(DEVICE2, "Y"),
                typed(DEVICE3, "Y"),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            ])],
            ..Case::default()
        },
        Case {
            // The binding condition puts pool-2 after pool-1.
            name: "check-combinations-with-backtracking-across-slices-and-pools",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![
                    request(REQ1, CLASS_A, 2),
                    request(REQ2, CLASS_A, 1).selector(attribute_is("type", "X")),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![typed(DEVICE1, "X")]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A)
                    .devices(vec![typed(DEVICE2, "Y")]),
                slice(SLICE3, NODE1, POOL2, DRIVER_A).devices(vec![
                    typed(DEVICE3, "Y").binding_conditions(&["IsPrepare"], &[]),
                ]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL2, DEVICE3).binding_conditions(&["IsPrepare"], &[]),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            ])],
            ..Case::default()
        },
        Case {
            name: "check-combinations-with-prioritized-list",
            claims: vec![claim(CLAIM0).requests(vec![
                // Not enough devices of type Y for the first subrequest.
                first_available(
                    REQ1,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 3).selector(attribute_is("type", "Y")),
                        sub_request(SUB_REQ1, CLASS_A, 2),
                    ],
                ),
                // The first subrequest asks for too many devices.
                first_available(
                    REQ2,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 2),
                        sub_request(SUB_REQ1, CLASS_A, 1).selector(attribute_is("type", "X")),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: pool1_slice(vec![
                typed(DEVICE1, "X"),
                typed(DEVICE2, "Y"),
                typed(DEVICE3, "Y"),
            ]),
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3),
                result(REQ2_SUB_REQ1, DRIVER_A, POOL1, DEVICE1),
            ])],
            ..Case::default()
        },
    ]);
}

/// Upstream's `TestLexicographicalAllocator` (lexicographical_testing.go).
#[test]
fn lexicographical_rows() {
    run(vec![
        Case {
            // Pools are tried by name, whatever the order of their slices.
            name: "lexicographical-sorting-pools",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, resource_pool(POOL3, 1), DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, resource_pool(POOL2, 1), DRIVER_A),
                slice_with_one_device(SLICE3, NODE1, resource_pool(POOL1, 1), DRIVER_A),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            ])],
            ..Case::default()
        },
        Case {
            // Pools with binding conditions come after the others.
            name: "lexicographical-sorting-pools-with-binding-conditions",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 1), DRIVER_A).devices(vec![
                    device(DEVICE1).binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                ]),
                slice(SLICE3, NODE1, resource_pool(POOL3, 1), DRIVER_A)
                    .devices(vec![device(DEVICE3)]),
                slice(SLICE2, NODE1, resource_pool(POOL2, 1), DRIVER_A)
                    .devices(vec![device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL2, DEVICE2),
                result(REQ0, DRIVER_A, POOL3, DEVICE3),
            ])],
            ..Case::default()
        },
        Case {
            // Slices of a pool are tried by name.
            name: "lexicographical-sorting-slices",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE3, NODE1, resource_pool(POOL1, 3), DRIVER_A)
                    .devices(vec![device(DEVICE3)]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 3), DRIVER_A)
                    .devices(vec![device(DEVICE2)]),
                slice(SLICE1, NODE1, resource_pool(POOL1, 3), DRIVER_A)
                    .devices(vec![device(DEVICE1)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![local_to_node1(vec![
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
            ])],
            ..Case::default()
        },
        Case {
            // Binding conditions order pools, not slices: slice-1 still comes first.
            name: "lexicographical-sorting-slices-with-binding-conditions",
            claims: vec![claim_with_requests(
                CLAIM0,
                vec![],
                vec![request(REQ0, CLASS_A, 2)],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice(SLICE1, NODE1, resource_pool(POOL1, 3), DRIVER_A).devices(vec![
                    device(DEVICE1).binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                ]),
                slice(SLICE3, NODE1, resource_pool(POOL1, 3), DRIVER_A)
                    .devices(vec![device(DEVICE3)]),
                slice(SLICE2, NODE1, resource_pool(POOL1, 3), DRIVER_A)
                    .devices(vec![device(DEVICE2)]),
            ],
            node: Some(node(NODE1, REGION1)),
            want: vec![exact(
                local_node_selector(NODE1),
                vec![
                    result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .binding_conditions(&["IsPrepare"], &["BindingFailed"]),
                    result(REQ0, DRIVER_A, POOL1, DEVICE2),
                ],
                vec![],
            )],
            ..Case::default()
        },
    ]);
}

/// Upstream's `interrupt` sub-test: a search that cannot succeed (six devices of five)
/// either runs to its end or stops at a deadline that has passed. (Its "cancel" variant,
/// a cancelled context, has no counterpart: the search only has a deadline.)
#[test]
fn interrupt() {
    let lister = class_lister(vec![class(CLASS_A, DRIVER_A)]);
    let claim = claim_with_requests(CLAIM0, vec![], vec![request(REQ0, CLASS_A, 6)]);
    let slices = [slice(SLICE1, NODE1, POOL1, DRIVER_A).devices(vec![
        device(DEVICE1),
        device(DEVICE2),
        device(DEVICE3),
        device(DEVICE4),
        device("device-5"),
    ])]
    .map(Arc::new);
    let node = node(NODE1, REGION1);
    let allocator = Allocator::new(
        Arc::new(AllocatedState::default()),
        Arc::new(lister),
        Arc::new(slices.to_vec()),
        Arc::new(Selectors::new()),
    );
    assert_eq!(allocator.allocate(&node, &[&claim], None), Ok(None), "off");
    let outcome = allocator.allocate(&node, &[&claim], Some(Instant::now()));
    assert_eq!(outcome, Err(AllocateError::Timeout), "deadline");
    assert_eq!(
        outcome.map_err(|e| e.to_string()),
        Err("filter operation aborted: context deadline exceeded".to_string())
    );
}
