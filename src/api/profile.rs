//! The `SchedulerProfile` resource.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ExtensionPoint;

/// One scheduler: which plugins run at which extension point, with which weights and
/// arguments. Pods name it in `spec.schedulerName`.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "SchedulerProfile",
    plural = "schedulerprofiles",
    shortname = "sprof",
    category = "berth",
    doc = "A scheduler instance: pods whose `spec.schedulerName` names it are scheduled with its plugins.",
    status = "SchedulerProfileStatus",
    printcolumn = r#"{"name":"Scheduler","type":"string","jsonPath":".status.schedulerName"}"#,
    printcolumn = r#"{"name":"Accepted","type":"string","jsonPath":".status.conditions[?(@.type==\"Accepted\")].status"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
// Upstream `ValidateKubeSchedulerConfiguration`: "must be greater than or equal to
// PodInitialBackoffSeconds", with the defaults (initial 1, max 10) standing in for absent
// fields, so `podInitialBackoffSeconds: 20` alone is rejected as the running queue would
// misbehave with it.
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "(has(self.podMaxBackoffSeconds) ? self.podMaxBackoffSeconds : 10) >= (has(self.podInitialBackoffSeconds) ? self.podInitialBackoffSeconds : 1)",
    "message": "must be greater than or equal to podInitialBackoffSeconds (absent fields count as their defaults: podInitialBackoffSeconds 1, podMaxBackoffSeconds 10)",
    "fieldPath": ".podMaxBackoffSeconds",
}]))]
pub struct SchedulerProfileSpec {
    /// The name pods use in `spec.schedulerName`; defaults to `metadata.name`. A DNS-1123
    /// subdomain, as Pod validation requires of `spec.schedulerName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = crate::api::limits::DNS1123_SUBDOMAIN_PATTERN)
    )]
    pub scheduler_name: Option<String>,
    /// Percentage of nodes to score once that many feasible nodes are found; 0 means
    /// adaptive (upstream formula: `max(5, 50 - nodes/125)` percent, at least 100 nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Opportunistic batching (default true, as upstream's `OpportunisticBatching` gate
    /// since 1.35): a pod with the same scheduling signature as the pod scheduled just
    /// before it takes the best remaining node of that pod's scored candidates (that pod's
    /// node scored again among them while it still fits) instead of filtering and scoring
    /// the cluster again (docs/performance.md). Profiles with a plugin that cannot sign
    /// pods, and pods with inter-pod affinity or topology spreading (default spreading
    /// included), are never batched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opportunistic_batching: Option<bool>,
    /// Initial backoff of a pod that failed to schedule, in seconds (default 1, >= 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub pod_initial_backoff_seconds: Option<i64>,
    /// Maximum backoff, in seconds (default 10); at least `podInitialBackoffSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub pod_max_backoff_seconds: Option<i64>,
    /// Plugins enabled and disabled per extension point, merged with the default set as
    /// in `KubeSchedulerConfiguration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Plugins>,
    /// Plugin arguments, one property per plugin with args, named after the plugin in
    /// lowerCamelCase (`nodeResourcesFit`). The CRD types each property from the registry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "plugin_config_schema")]
    pub plugin_config: BTreeMap<String, serde_json::Value>,
}

fn plugin_config_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    // Replaced by one typed property per plugin when the CRD is generated from the
    // registry (see `schema::crd`).
    schemars::json_schema!({ "type": "object" })
}

impl SchedulerProfileSpec {
    pub const DEFAULT_INITIAL_BACKOFF_SECONDS: i64 = 1;
    pub const DEFAULT_MAX_BACKOFF_SECONDS: i64 = 10;
}

impl SchedulerProfile {
    /// `spec.schedulerName`, defaulting to `metadata.name`.
    pub fn scheduler_name(&self) -> String {
        self.spec
            .scheduler_name
            .clone()
            .or_else(|| self.metadata.name.clone())
            .unwrap_or_default()
    }
}

/// A plugin named in `enabled` or `disabled`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginRef {
    /// The plugin name (`"*"` in `disabled` means every default plugin).
    pub name: String,
    /// Score weight (Score and multiPoint only); 1..100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub weight: Option<i32>,
}

impl PluginRef {
    pub fn named(name: &str) -> Self {
        PluginRef {
            name: name.to_string(),
            weight: None,
        }
    }
}

/// Plugins to enable and disable at one extension point.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginSet {
    /// Plugins to run at this point, in order after the default ones (at most 64).
    // Upstream's framework refuses to start with "plugin X already registered" when one
    // list names a plugin twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = crate::api::limits::MAX_PLUGINS_PER_SET),
        extend("x-kubernetes-validations" = [{
            "rule": "self.all(p, self.exists_one(q, q.name == p.name))",
            "message": "a plugin may be enabled only once per extension point",
        }])
    )]
    pub enabled: Vec<PluginRef>,
    /// Default plugins not to run at this point; `"*"` disables them all (at most 64).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_PLUGINS_PER_SET))]
    pub disabled: Vec<PluginRef>,
}

/// Plugin sets per extension point, as `KubeSchedulerConfiguration.profiles[].plugins`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plugins {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_point: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_enqueue: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_sort: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_filter: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_filter: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_score: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permit: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_bind: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<PluginSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_bind: Option<PluginSet>,
}

impl Plugins {
    /// The plugin set configured at `point`, if any.
    pub fn at(&self, point: ExtensionPoint) -> Option<&PluginSet> {
        match point {
            ExtensionPoint::PreEnqueue => self.pre_enqueue.as_ref(),
            ExtensionPoint::QueueSort => self.queue_sort.as_ref(),
            ExtensionPoint::PreFilter => self.pre_filter.as_ref(),
            ExtensionPoint::Filter => self.filter.as_ref(),
            ExtensionPoint::PostFilter => self.post_filter.as_ref(),
            ExtensionPoint::PreScore => self.pre_score.as_ref(),
            ExtensionPoint::Score => self.score.as_ref(),
            ExtensionPoint::Reserve => self.reserve.as_ref(),
            ExtensionPoint::Permit => self.permit.as_ref(),
            ExtensionPoint::PreBind => self.pre_bind.as_ref(),
            ExtensionPoint::Bind => self.bind.as_ref(),
            ExtensionPoint::PostBind => self.post_bind.as_ref(),
        }
    }

    /// Mutable access to the plugin set at `point`, creating it when absent.
    pub fn at_mut(&mut self, point: ExtensionPoint) -> &mut PluginSet {
        let slot = match point {
            ExtensionPoint::PreEnqueue => &mut self.pre_enqueue,
            ExtensionPoint::QueueSort => &mut self.queue_sort,
            ExtensionPoint::PreFilter => &mut self.pre_filter,
            ExtensionPoint::Filter => &mut self.filter,
            ExtensionPoint::PostFilter => &mut self.post_filter,
            ExtensionPoint::PreScore => &mut self.pre_score,
            ExtensionPoint::Score => &mut self.score,
            ExtensionPoint::Reserve => &mut self.reserve,
            ExtensionPoint::Permit => &mut self.permit,
            ExtensionPoint::PreBind => &mut self.pre_bind,
            ExtensionPoint::Bind => &mut self.bind,
            ExtensionPoint::PostBind => &mut self.post_bind,
        };
        slot.get_or_insert_with(PluginSet::default)
    }
}

/// A Score plugin and its weight in the effective plugin list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WeightedPlugin {
    pub name: String,
    pub weight: i32,
}

/// The resolved plugins of a profile, per extension point. Each list holds distinct
/// registered plugins, so it is bounded by the registry (`maxItems` 256).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EffectivePlugins {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub pre_enqueue: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub queue_sort: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub pre_filter: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub filter: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub post_filter: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub pre_score: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub score: Vec<WeightedPlugin>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub reserve: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub permit: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub pre_bind: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub bind: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = crate::api::limits::MAX_EFFECTIVE_PLUGINS))]
    pub post_bind: Vec<String>,
}

/// What the operator reports about a profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerProfileStatus {
    /// The `metadata.generation` this status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The scheduler name this profile serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    /// Accepted, Ready and Degraded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::api::limits::conditions_schema")]
    pub conditions: Vec<Condition>,
    /// The effective, resolved plugin list per extension point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<EffectivePlugins>,
}
