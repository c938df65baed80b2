//! The `PodGroup` resource: a gang of pods scheduled all-or-nothing.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The label that makes a pod a member of a PodGroup in its namespace.
pub const POD_GROUP_LABEL: &str = "berth.dev/pod-group";
/// scheduler-plugins' label, honoured so its users need not relabel.
pub const POD_GROUP_LABEL_COMPAT: &str = "scheduling.x-k8s.io/pod-group";
/// With the group label, asks the operator to create the PodGroup with this minMember.
pub const MIN_MEMBER_ANNOTATION: &str = "berth.dev/min-member";

/// A group of pods that is scheduled only when at least `minMember` of them can be.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "PodGroup",
    plural = "podgroups",
    shortname = "pg",
    category = "berth",
    doc = "A gang of pods scheduled all-or-nothing: no member is bound until `minMember` of them fit.",
    namespaced,
    status = "PodGroupStatus",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Min","type":"integer","jsonPath":".spec.minMember"}"#,
    printcolumn = r#"{"name":"Scheduled","type":"integer","jsonPath":".status.scheduled"}"#,
    printcolumn = r#"{"name":"Running","type":"integer","jsonPath":".status.running"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// The least number of members that must be schedulable together.
    #[schemars(range(min = 1))]
    pub min_member: i32,
    /// Resources the whole group needs; checked against free capacity before any member
    /// is placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::api::limits::quantity_map_schema")]
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    /// How long members wait at Permit for their siblings; defaults to the Coscheduling
    /// plugin's `permitWaitingTimeSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub schedule_timeout_seconds: Option<i32>,
}

/// The lifecycle of a PodGroup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PodGroupPhase {
    #[default]
    Pending,
    Scheduling,
    Scheduled,
    Running,
    Finished,
    Failed,
}

/// What the operator reports about a PodGroup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PodGroupPhase>,
    #[serde(default)]
    pub scheduled: i32,
    #[serde(default)]
    pub running: i32,
    #[serde(default)]
    pub succeeded: i32,
    #[serde(default)]
    pub failed: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_start_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::api::limits::conditions_schema")]
    pub conditions: Vec<Condition>,
}
