//! Resource amounts with Kubernetes quantity semantics.
//!
//! CPU is kept in millicores and everything else in base units (bytes, pods, devices), as
//! upstream's `framework.Resource` does. Quantities are parsed with `kube_quantity`
//! and rounded up, as `resource.Quantity.MilliValue()` / `Value()` do.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// CPU assumed for a container that requests none, when scoring (upstream
/// `DefaultMilliCPURequest`, 0.1 core).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory assumed for a container that requests none, when scoring (upstream
/// `DefaultMemoryRequest`, 200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A quantity string that is not a valid Kubernetes quantity.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("invalid quantity {value:?} for resource {resource}: {reason}")]
pub struct QuantityError {
    pub resource: String,
    pub value: String,
    pub reason: String,
}

/// Amounts of every resource kind. Scalar resources (extended resources, hugepages,
/// attachable volumes) are keyed by their resource name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub allowed_pod_number: i64,
    pub scalar_resources: BTreeMap<String, i64>,
}

impl Resource {
    /// Parses a resource list (requests, limits, allocatable, overhead).
    pub fn from_list(list: &BTreeMap<String, Quantity>) -> Result<Self, QuantityError> {
        todo!("cluster helper")
    }

    /// The amount of `name` (`cpu` in millicores).
    pub fn get(&self, name: &str) -> i64 {
        todo!("cluster helper")
    }

    /// Sets the amount of `name` (`cpu` in millicores).
    pub fn set(&mut self, name: &str, value: i64) {
        todo!("cluster helper")
    }

    pub fn add(&mut self, other: &Resource) {
        todo!("cluster helper")
    }

    pub fn sub(&mut self, other: &Resource) {
        todo!("cluster helper")
    }
}

/// `Quantity.Value()`: the amount in base units, rounded up.
pub fn parse_value(resource: &str, q: &Quantity) -> Result<i64, QuantityError> {
    todo!("cluster helper")
}

/// `Quantity.MilliValue()`: the amount in thousandths, rounded up.
pub fn parse_milli_value(resource: &str, q: &Quantity) -> Result<i64, QuantityError> {
    todo!("cluster helper")
}

/// Upstream `IsExtendedResourceName`: a fully-qualified name outside `kubernetes.io/`
/// that is not `requests.`-prefixed.
pub fn is_extended_resource_name(name: &str) -> bool {
    todo!("cluster helper")
}

/// Upstream `IsScalarResourceName`: extended, hugepages-*, attachable-volumes-*, or
/// other native scalar resources.
pub fn is_scalar_resource_name(name: &str) -> bool {
    todo!("cluster helper")
}
