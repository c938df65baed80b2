//! scheduler-plugins' `PodGroup` (`scheduling.x-k8s.io/v1alpha1`), as the CRD that
//! scheduler-plugins installs defines it: berth reads these groups and writes their
//! status where the CRD is installed, so a cluster running scheduler-plugins' Coscheduling
//! switches to berth by changing only `schedulerName` (docs/gang-scheduling.md).
//!
//! berth does not ship this CRD: the cluster has it from scheduler-plugins. [`crd`] gives
//! an equivalent one (same group, names, fields, status subresource, and no required
//! field), which tests install and `berth simulate` validates documents against.
//!
//! As in scheduler-plugins, `spec` may be left out: a group without one decodes with the
//! zero spec (the manual `Deserialize` of [`PodGroupSpec`]), so one such object cannot
//! break a watch that lists it.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// The API group of scheduler-plugins' PodGroup.
pub const GROUP: &str = "scheduling.x-k8s.io";
/// The version berth reads.
pub const VERSION: &str = "v1alpha1";

/// The specification of a scheduler-plugins PodGroup. Every field is optional, as in
/// scheduler-plugins: a `minMember` of zero or less behaves as one (no quorum).
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
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

impl<'de> Deserialize<'de> for PodGroupSpec {
    /// The fields as written, or the zero spec for a missing or null `spec` (serde asks
    /// a missing field's type to decode from "none").
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Fields {
            #[serde(default)]
            min_member: i32,
            #[serde(default)]
            min_resources: Option<BTreeMap<String, Quantity>>,
            #[serde(default)]
            schedule_timeout_seconds: Option<i32>,
        }
        let fields = Option::<Fields>::deserialize(deserializer)?.unwrap_or_default();
        Ok(PodGroupSpec {
            min_member: fields.min_member,
            min_resources: fields.min_resources,
            schedule_timeout_seconds: fields.schedule_timeout_seconds,
        })
    }
}

/// The CRD of scheduler-plugins' PodGroup: [`PodGroup::crd`] without the `required:
/// [spec]` the derive puts at its root, since scheduler-plugins' CRD requires no field.
pub fn crd() -> CustomResourceDefinition {
    let mut crd = PodGroup::crd();
    for version in &mut crd.spec.versions {
        if let Some(root) = version
            .schema
            .as_mut()
            .and_then(|schema| schema.open_api_v3_schema.as_mut())
        {
            root.required = None;
        }
    }
    crd
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_without_spec_decodes_with_the_zero_spec() {
        for text in [
            r#"{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"a"}}"#,
            r#"{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"a"},"spec":null}"#,
            r#"{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"a"},"spec":{}}"#,
        ] {
            let group: PodGroup = serde_json::from_str(text).expect(text);
            assert_eq!(group.spec, PodGroupSpec::default(), "{text}");
        }
        let group: PodGroup = serde_json::from_str(
            r#"{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"a"},"spec":{"minMember":3,"scheduleTimeoutSeconds":10}}"#,
        )
        .expect("a group");
        assert_eq!(
            group.spec,
            PodGroupSpec {
                min_member: 3,
                min_resources: None,
                schedule_timeout_seconds: Some(10),
            }
        );
    }

    #[test]
    fn the_crd_requires_no_field_and_has_the_status_subresource() {
        let crd = crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("podgroups.scheduling.x-k8s.io")
        );
        let version = &crd.spec.versions[0];
        let root = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .expect("a schema");
        assert_eq!(root.required, None);
        assert!(
            version
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some())
        );
        assert_eq!(
            crd.spec.names.short_names,
            Some(vec!["pg".to_string(), "pgs".to_string()])
        );
    }
}
