//! scheduler-plugins' `PodGroup` (`scheduling.x-k8s.io/v1alpha1`), as the CRD that
//! scheduler-plugins installs defines it: berth reads these groups and writes their
//! status where the CRD is installed, so a cluster running scheduler-plugins' Coscheduling
//! switches to berth by changing only `schedulerName` (docs/gang-scheduling.md).
//!
//! berth does not ship this CRD: the cluster has it from scheduler-plugins. [`PodGroup::crd`]
//! gives an equivalent one (same group, names, fields and status subresource) for tests
//! and for clusters that want the API without scheduler-plugins.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of scheduler-plugins' PodGroup.
pub const GROUP: &str = "scheduling.x-k8s.io";
/// The version berth reads.
pub const VERSION: &str = "v1alpha1";

/// The specification of a scheduler-plugins PodGroup. Every field is optional, as in
/// scheduler-plugins: a `minMember` of zero or less behaves as one (no quorum).
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "scheduling.x-k8s.io",
    version = "v1alpha1",
    kind = "PodGroup",
    plural = "podgroups",
    shortname = "pg",
    shortname = "pgs",
    doc = "PodGroup is a collection of Pod; used for batch workload (scheduler-plugins' Coscheduling).",
    namespaced,
    status = "PodGroupStatus",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"MinMember","type":"integer","jsonPath":".spec.minMember"}"#,
    printcolumn = r#"{"name":"Running","type":"string","jsonPath":".status.running"}"#,
    printcolumn = r#"{"name":"Succeeded","type":"string","jsonPath":".status.succeeded"}"#,
    printcolumn = r#"{"name":"Failed","type":"string","jsonPath":".status.failed"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// The least number of members that must be schedulable together.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_member: i32,
    /// Resources the whole group needs, checked against free capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::api::limits::quantity_map_schema")]
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    /// How long members wait at Permit for their siblings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// The status scheduler-plugins' PodGroup controller keeps; berth keeps it the same way
/// (`crate::operator` documents the phases).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// `Pending`, `Scheduling`, `Running`, `Finished` or `Failed` (scheduler-plugins also
    /// defines `Unknown`, which nothing sets).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// `namespace/owner` of the first member's owners, comma-separated.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub occupied_by: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub running: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub succeeded: i32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_start_time: Option<Time>,
}
