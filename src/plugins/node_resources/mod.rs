//! NodeResourcesFit: rejects nodes without room for the pod's requests and scores the
//! rest by how their resources would be allocated, as upstream's `noderesources.Fit`.
//!
//! - PreFilter computes, once per cycle, what Filter checks: the pod's requests minus the
//!   ignored extended resources ([`fit`]).
//! - Filter rejects a node with one reason per insufficient resource, e.g.
//!   `Insufficient cpu`, `Too many pods`.
//! - PreScore computes the pod's request for each configured resource once; Score combines
//!   them with the node's allocation under the configured strategy
//!   ([`resource_allocation`]: [`least_allocated`], [`most_allocated`],
//!   [`requested_to_capacity_ratio`]).
//!
//! The args keep upstream's `NodeResourcesFitArgs` field names, defaults and validation.

pub mod balanced_allocation;
mod fit;
mod least_allocated;
mod most_allocated;
mod requested_to_capacity_ratio;
mod resource_allocation;
#[cfg(test)]
mod test_util;

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::{DeviceResources, NodeInfo, PodInfo, Snapshot};
use crate::framework::{
    ActionType, ClusterEvent, Coupling, CycleState, EventResource, FieldError, FilterPlugin,
    Handle, PluginArgs, PluginError, PluginFactory, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, ScorePlugin, Status,
};
use crate::helpers::validation::{
    QUALIFIED_NAME_MAX_LENGTH, QUALIFIED_NAME_PATTERN, qualified_name_errors,
};

pub use balanced_allocation::NodeResourcesBalancedAllocation;
use fit::PreFilterState;
use resource_allocation::{PreScoreState, ResourceAllocationScorer};

pub use crate::helpers::score::{
    MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION, UtilizationShapePoint, validate_shape,
};

/// The highest weight a scored resource may have.
pub const MAX_RESOURCE_WEIGHT: i64 = 100;
/// `maxItems` of the resource lists in the args (scored and ignored resources): generous
/// for real clusters, and a bound the API server needs to cost the CEL rules over them.
pub const MAX_RESOURCES: u32 = 32;
/// `maxItems` of a RequestedToCapacityRatio shape.
pub const MAX_SHAPE_POINTS: u32 = 16;

/// Args of NodeResourcesFit (upstream `NodeResourcesFitArgs`, v1 defaults).
// The schema carries what upstream's `ValidateNodeResourcesFitArgs` checks, so the API
// server rejects it at `kubectl apply`: qualified resource names (`pattern`), weights
// 1..=100 and shape bounds (`minimum`/`maximum`), and as CEL rules
// (`#[schemars(extend("x-kubernetes-validations" = ...))]`) resource groups without '/',
// a shape with RequestedToCapacityRatio and strictly increasing shape utilization.
// `PluginArgs::validate` repeats all of it with per-index paths, plus the length of a
// qualified name's prefix, which a pattern cannot bound.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeResourcesFitArgs {
    /// Extended resources Filter does not check, e.g. `example.com/foo` (qualified names,
    /// at most 32).
    #[schemars(
        length(max = MAX_RESOURCES),
        inner(
            length(min = 1, max = QUALIFIED_NAME_MAX_LENGTH),
            regex(pattern = QUALIFIED_NAME_PATTERN)
        )
    )]
    pub ignored_resources: Vec<String>,
    /// Groups of extended resources Filter does not check: the part of the resource
    /// name before `/`, e.g. `example.com` ignores `example.com/foo` and `example.com/bar`
    /// (at most 32).
    #[schemars(
        length(max = MAX_RESOURCES),
        inner(
            length(min = 1, max = QUALIFIED_NAME_MAX_LENGTH),
            regex(pattern = QUALIFIED_NAME_PATTERN)
        ),
        extend("x-kubernetes-validations" = [{
            "rule": "self.all(group, !group.contains('/'))",
            "message": "a resource group is the part of a resource name before '/', so it cannot contain '/' (e.g. 'example.com')",
        }])
    )]
    pub ignored_resource_groups: Vec<String>,
    /// How Score ranks feasible nodes.
    pub scoring_strategy: ScoringStrategy,
}

/// How Score ranks feasible nodes (upstream `ScoringStrategy`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.type != 'RequestedToCapacityRatio' || has(self.requestedToCapacityRatio)",
    "message": "required when type is RequestedToCapacityRatio: give a shape, e.g. {shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}",
    "fieldPath": ".requestedToCapacityRatio",
    "reason": "FieldValueRequired",
}]))]
pub struct ScoringStrategy {
    /// The scoring function.
    #[serde(rename = "type")]
    pub strategy_type: ScoringStrategyType,
    /// The resources scored and their weights; an empty list means cpu and memory with
    /// weight 1, as upstream's v1 defaulting (at most 32).
    #[schemars(length(max = MAX_RESOURCES))]
    pub resources: Vec<ResourceSpec>,
    /// The shape of the RequestedToCapacityRatio function; required with that type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

impl Default for ScoringStrategy {
    fn default() -> Self {
        ScoringStrategy {
            strategy_type: ScoringStrategyType::LeastAllocated,
            resources: default_resources(),
            requested_to_capacity_ratio: None,
        }
    }
}

/// The scoring function: `LeastAllocated` favours nodes with the most capacity left after
/// placing the pod (spreading), `MostAllocated` the least (bin packing),
/// `RequestedToCapacityRatio` scores each resource's utilization through a
/// piecewise-linear shape.
// Variants carry no doc comments so the schema is a plain string enum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ScoringStrategyType {
    #[default]
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio,
}

/// A scored resource and its weight (upstream `ResourceSpec`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// Resource name, e.g. `cpu`, `memory`, `nvidia.com/gpu`.
    #[schemars(length(min = 1, max = QUALIFIED_NAME_MAX_LENGTH))]
    pub name: String,
    /// Weight of this resource in the node score, 1..=100; 1 when omitted.
    #[serde(default = "default_weight")]
    #[schemars(range(min = 1, max = 100))]
    pub weight: i64,
}

impl ResourceSpec {
    pub fn new(name: impl Into<String>, weight: i64) -> Self {
        ResourceSpec {
            name: name.into(),
            weight,
        }
    }
}

/// Parameters of the RequestedToCapacityRatio strategy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct RequestedToCapacityRatioParam {
    /// Points of the scoring function, by strictly increasing utilization (1 to 16
    /// points).
    // Upstream `validateFunctionShape`. Sorted with no repeated value is strictly
    // increasing; `isSorted` is in the Kubernetes CEL list library (1.25+) and in kube-cel.
    // No schema default: `[]` would break `minItems: 1`, and the API server refuses a
    // CRD whose default fails its own schema.
    #[schemars(
        length(min = 1, max = MAX_SHAPE_POINTS),
        transform = crate::framework::without_default,
        extend("x-kubernetes-validations" = [{
            "rule": "self.map(p, p.utilization).isSorted() && self.all(p, self.exists_one(q, q.utilization == p.utilization))",
            "message": "utilization values must be strictly increasing",
        }])
    )]
    pub shape: Vec<UtilizationShapePoint>,
}

fn default_weight() -> i64 {
    1
}

/// cpu and memory, weight 1 each: upstream's default scored resources.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]
}

impl PluginArgs for NodeResourcesFitArgs {
    /// Upstream `ValidateNodeResourcesFitArgs`. One deliberate difference: shape errors
    /// name the real field, `scoringStrategy.requestedToCapacityRatio.shape[i]`, where
    /// upstream says `scoringStrategy.shape[i]`.
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        for (i, name) in self.ignored_resources.iter().enumerate() {
            let field = format!("{path}.ignoredResources[{i}]");
            errors.extend(
                qualified_name_errors(name)
                    .into_iter()
                    .map(|message| FieldError::new(&field, quoted(name), message)),
            );
        }
        for (i, group) in self.ignored_resource_groups.iter().enumerate() {
            let field = format!("{path}.ignoredResourceGroups[{i}]");
            if group.contains('/') {
                errors.push(FieldError::new(
                    &field,
                    quoted(group),
                    "a resource group is the part of a resource name before '/', so it cannot contain '/' (e.g. 'example.com')",
                ));
            }
            errors.extend(
                qualified_name_errors(group)
                    .into_iter()
                    .map(|message| FieldError::new(&field, quoted(group), message)),
            );
        }
        errors.extend(
            self.scoring_strategy
                .validate(&format!("{path}.scoringStrategy")),
        );
        errors
    }
}

impl ScoringStrategy {
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors: Vec<FieldError> = self
            .resources
            .iter()
            .enumerate()
            .filter(|(_, r)| !(1..=MAX_RESOURCE_WEIGHT).contains(&r.weight))
            .map(|(i, r)| {
                FieldError::new(
                    format!("{path}.resources[{i}].weight"),
                    r.weight,
                    format!(
                        "the weight of resource {} must be between 1 and {MAX_RESOURCE_WEIGHT}",
                        r.name
                    ),
                )
            })
            .collect();
        let param_path = format!("{path}.requestedToCapacityRatio");
        match &self.requested_to_capacity_ratio {
            Some(param) => {
                errors.extend(validate_shape(&param.shape, &format!("{param_path}.shape")))
            }
            None if self.strategy_type == ScoringStrategyType::RequestedToCapacityRatio => {
                errors.push(FieldError::new(
                    param_path,
                    "",
                    "required when type is RequestedToCapacityRatio: give a shape, e.g. {shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}",
                ));
            }
            None => {}
        }
        errors
    }
}

/// A string value rendered as JSON, as `FieldError.value` expects.
fn quoted(value: &str) -> String {
    serde_json::Value::from(value).to_string()
}

/// The NodeResourcesFit plugin.
pub struct NodeResourcesFit {
    ignored_resources: HashSet<String>,
    ignored_resource_groups: HashSet<String>,
    scorer: ResourceAllocationScorer,
    /// The DeviceClasses that serve extended resources: a node without allocatable of
    /// such a resource leaves it to DynamicResources (upstream
    /// `shouldDelegateResourceToDRA`).
    device_resources: Arc<DeviceResources>,
}

impl NodeResourcesFit {
    /// Builds the plugin from validated args.
    pub fn new(args: NodeResourcesFitArgs) -> Self {
        NodeResourcesFit {
            ignored_resources: args.ignored_resources.into_iter().collect(),
            ignored_resource_groups: args.ignored_resource_groups.into_iter().collect(),
            scorer: ResourceAllocationScorer::new(&args.scoring_strategy),
            device_resources: Arc::default(),
        }
    }
}

crate::plugin! {
    NodeResourcesFit {
        name: "NodeResourcesFit",
        points: [PreFilter, Filter, PreScore, Score],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Only freed or added capacity can make a rejected pod fit: an assigned pod deleted
        /// or scaled down, a node added or its allocatable changed, or a DeviceClass that
        /// serves an extended resource added or changed.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(
                    EventResource::Pod,
                    ActionType::DELETE.union(ActionType::UPDATE_POD_SCALE_DOWN),
                ),
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD.union(ActionType::UPDATE_NODE_ALLOCATABLE),
                ),
                ClusterEvent::new(
                    EventResource::DeviceClass,
                    ActionType::ADD.union(ActionType::UPDATE),
                ),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Rejects nodes without room for the pod's resource requests and scores the rest by the configured strategy (LeastAllocated, MostAllocated or RequestedToCapacityRatio).";
        // Filter reads the requests PreFilter computed (an error without them); Score
        // recomputes them when PreScore did not run, as upstream.
        const COUPLINGS: &'static [Coupling] = &[Coupling::FilterNeedsPreFilter];
        type Args = NodeResourcesFitArgs;

        fn build(args: NodeResourcesFitArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(NodeResourcesFit {
                device_resources: handle.device_resources.clone(),
                ..NodeResourcesFit::new(args)
            })
        }
    }
}

#[async_trait]
impl PreFilterPlugin for NodeResourcesFit {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(PreFilterState::new(
            &pod.filter_requests,
            &self.ignored_resources,
            &self.ignored_resource_groups,
            |name| {
                self.device_resources
                    .extended_resource_class(name)
                    .is_some()
            },
        ));
        (None, Status::success())
    }
}

impl FilterPlugin for NodeResourcesFit {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        match state.read::<PreFilterState>() {
            Some(request) => request.fits(node),
            None => Status::error(format!(
                "{}: no PreFilter state in this cycle; PreFilter must run before Filter",
                Self::NAME
            )),
        }
    }
}

#[async_trait]
impl PreScorePlugin for NodeResourcesFit {
    async fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[Arc<NodeInfo>],
    ) -> Status {
        state.write(PreScoreState {
            pod_requests: self.scorer.pod_requests(pod),
        });
        Status::success()
    }
}

impl ScorePlugin for NodeResourcesFit {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        match state.read::<PreScoreState>() {
            Some(pre_score) => self.scorer.score(node, &pre_score.pod_requests),
            // As upstream: without PreScore (e.g. Score called alone), compute it here.
            None => self.scorer.score(node, &self.scorer.pod_requests(pod)),
        }
    }
}

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for NodeResourcesFit {
    fn refusal(&self, pod: &crate::cluster::PodInfo) -> Option<String> {
        // An extended resource a DeviceClass serves is allocated as devices, which
        // differ from node to node and claim to claim.
        let by_devices = pod
            .filter_requests
            .scalar_resources
            .iter()
            .any(|(name, &q)| {
                q != 0
                    && self
                        .device_resources
                        .extended_resource_class(name)
                        .is_some()
            });
        by_devices.then(|| {
            "signature disabled when dra extended resources are used in the cluster".into()
        })
    }

    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::resources(pod)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Plugin;
    use crate::framework::decode_args;
    use serde_json::json;

    const PATH: &str = "spec.pluginConfig.nodeResourcesFit";

    fn errors_of(args: serde_json::Value) -> Vec<FieldError> {
        match decode_args::<NodeResourcesFitArgs>(Some(&args), PATH) {
            Ok(_) => Vec::new(),
            Err(errors) => errors,
        }
    }

    fn paths(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.path.clone()).collect()
    }

    #[test]
    fn defaults_are_upstream_v1_defaults() {
        let args = decode_args::<NodeResourcesFitArgs>(None, PATH).expect("defaults are valid");
        assert!(args.ignored_resources.is_empty());
        assert!(args.ignored_resource_groups.is_empty());
        assert_eq!(
            args.scoring_strategy.strategy_type,
            ScoringStrategyType::LeastAllocated
        );
        assert_eq!(args.scoring_strategy.resources, default_resources());
        assert_eq!(
            serde_json::to_value(&args).expect("serializable"),
            json!({
                "ignoredResources": [],
                "ignoredResourceGroups": [],
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
                }
            })
        );
        // A weight left out defaults to 1, as upstream's v1 defaulting.
        let args = decode_args::<NodeResourcesFitArgs>(
            Some(&json!({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "nvidia.com/gpu"}]}})),
            PATH,
        )
        .expect("valid");
        assert_eq!(
            args.scoring_strategy.resources,
            vec![ResourceSpec::new("nvidia.com/gpu", 1)]
        );
    }

    #[test]
    fn validation_matches_upstream_tables() {
        let w = |resources: serde_json::Value| json!({"scoringStrategy": {"type": "LeastAllocated", "resources": resources}});
        let rtcr = |shape: serde_json::Value| json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": shape}}});
        let strategy = format!("{PATH}.scoringStrategy");
        let shape = format!("{strategy}.requestedToCapacityRatio.shape");
        let cases: Vec<(&str, serde_json::Value, Vec<String>)> = vec![
            // upstream TestValidateFitArgs "IgnoredResources: too long value"
            (
                "ignored resource name too long",
                json!({"ignoredResources": [format!("longvalue{}", "a".repeat(64))]}),
                vec![format!("{PATH}.ignoredResources[0]")],
            ),
            // upstream TestValidateFitArgs "IgnoredResources: name is empty" (also fails the name syntax)
            (
                "ignored resource with empty name",
                json!({"ignoredResources": ["example.com/"]}),
                vec![
                    format!("{PATH}.ignoredResources[0]"),
                    format!("{PATH}.ignoredResources[0]"),
                ],
            ),
            // upstream TestValidateFitArgs "IgnoredResources: name has too many slash"
            (
                "ignored resource with two slashes",
                json!({"ignoredResources": ["example.com/aaa/bbb"]}),
                vec![format!("{PATH}.ignoredResources[0]")],
            ),
            // upstream TestValidateFitArgs "IgnoredResources: valid args"
            (
                "ignored resource valid",
                json!({"ignoredResources": ["example.com"]}),
                vec![],
            ),
            // upstream TestValidateFitArgs "IgnoredResourceGroups: valid args "
            (
                "ignored group valid",
                json!({"ignoredResourceGroups": ["example.com"]}),
                vec![],
            ),
            // upstream TestValidateFitArgs "IgnoredResourceGroups: illegal args": '/', empty name, name syntax
            (
                "ignored group with trailing slash",
                json!({"ignoredResourceGroups": ["example.com/"]}),
                vec![format!("{PATH}.ignoredResourceGroups[0]"); 3],
            ),
            // upstream TestValidateFitArgs "IgnoredResourceGroups: name is too long"
            (
                "ignored group too long",
                json!({"ignoredResourceGroups": ["a".repeat(64)]}),
                vec![format!("{PATH}.ignoredResourceGroups[0]")],
            ),
            // upstream TestValidateFitArgs "IgnoredResourceGroups: name cannot be contain slash"
            (
                "ignored group with slash",
                json!({"ignoredResourceGroups": ["example.com/aa"]}),
                vec![format!("{PATH}.ignoredResourceGroups[0]")],
            ),
            // upstream TestValidateLeastAllocatedScoringStrategy "multi valid resources"
            (
                "valid weights",
                w(json!([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 10}])),
                vec![],
            ),
            // upstream TestValidateLeastAllocatedScoringStrategy "weight less than min"
            (
                "weight 0",
                w(json!([{"name": "cpu", "weight": 0}])),
                vec![format!("{strategy}.resources[0].weight")],
            ),
            // upstream TestValidateLeastAllocatedScoringStrategy "weight greater than max"
            (
                "weight 101",
                w(json!([{"name": "cpu", "weight": 101}])),
                vec![format!("{strategy}.resources[0].weight")],
            ),
            // upstream TestLeastAllocatedScoringStrategy "resource with negative weight"
            (
                "negative weight",
                w(json!([{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}])),
                vec![format!("{strategy}.resources[0].weight")],
            ),
            // upstream TestValidateLeastAllocatedScoringStrategy "multi invalid resources"
            (
                "two bad weights",
                w(json!([{"name": "cpu", "weight": 0}, {"name": "memory", "weight": 101}])),
                vec![
                    format!("{strategy}.resources[0].weight"),
                    format!("{strategy}.resources[1].weight"),
                ],
            ),
            // upstream TestValidateRequestedToCapacityRatioScoringStrategy "no shapes"
            ("empty shape", rtcr(json!([])), vec![shape.clone()]),
            // upstream TestValidateRequestedToCapacityRatioScoringStrategy "valid shapes"
            (
                "one point",
                rtcr(json!([{"utilization": 30, "score": 3}])),
                vec![],
            ),
            // upstream TestValidateRequestedToCapacityRatioScoringStrategy "utilization less than min"
            (
                "utilization -1",
                rtcr(json!([{"utilization": -1, "score": 3}])),
                vec![format!("{shape}[0].utilization")],
            ),
            // upstream TestValidateRequestedToCapacityRatioScoringStrategy "utilization greater than max"
            (
                "utilization 101",
                rtcr(json!([{"utilization": 101, "score": 3}])),
                vec![format!("{shape}[0].utilization")],
            ),
            // upstream TestValidateRequestedToCapacityRatioScoringStrategy "duplicated utilization values"
            (
                "duplicate utilization",
                rtcr(json!([{"utilization": 10, "score": 3}, {"utilization": 10, "score": 3}])),
                vec![format!("{shape}[1].utilization")],
            ),
            // upstream TestValidateRequestedToCapacityRatioScoringStrategy "increasing utilization values"
            (
                "increasing utilization",
                rtcr(
                    json!([{"utilization": 10, "score": 3}, {"utilization": 20, "score": 3}, {"utilization": 30, "score": 3}]),
                ),
                vec![],
            ),
            // upstream TestValidateRequestedToCapacityRatioScoringStrategy "non-increasing utilization values"
            (
                "decreasing utilization",
                rtcr(
                    json!([{"utilization": 10, "score": 3}, {"utilization": 20, "score": 3}, {"utilization": 15, "score": 3}]),
                ),
                vec![format!("{shape}[2].utilization")],
            ),
            // upstream TestValidateRequestedToCapacityRatioScoringStrategy "score less than min"
            (
                "score -1",
                rtcr(json!([{"utilization": 10, "score": -1}])),
                vec![format!("{shape}[0].score")],
            ),
            // upstream TestValidateRequestedToCapacityRatioScoringStrategy "score greater than max"
            (
                "score 11",
                rtcr(json!([{"utilization": 10, "score": 11}])),
                vec![format!("{shape}[0].score")],
            ),
            // no upstream case (upstream dereferences a nil shape): the shape is required
            (
                "RequestedToCapacityRatio without shape",
                json!({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}),
                vec![format!("{strategy}.requestedToCapacityRatio")],
            ),
        ];
        for (name, args, want) in cases {
            assert_eq!(paths(&errors_of(args)), want, "case {name}");
        }
    }

    #[test]
    fn weight_errors_name_the_bad_value_and_the_valid_range() {
        let errors =
            errors_of(json!({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 101}]}}));
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].to_string(),
            format!(
                "{PATH}.scoringStrategy.resources[0].weight: Invalid value: 101: the weight of resource cpu must be between 1 and 100"
            )
        );
        let errors = errors_of(json!({"ignoredResourceGroups": ["example.com/aa"]}));
        assert!(
            errors[0]
                .to_string()
                .contains("Invalid value: \"example.com/aa\""),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn unknown_strategy_type_is_rejected_at_decoding() {
        // upstream TestValidateFitArgs "ScoringStrategy: type is unsupported"
        let errors = errors_of(json!({"scoringStrategy": {"type": "Invalid"}}));
        assert_eq!(paths(&errors), vec![PATH.to_string()]);
        assert!(errors[0].message.contains("Invalid"), "{}", errors[0]);
    }

    #[test]
    fn schema_carries_the_bounds() {
        let schema = serde_json::to_value(schemars::schema_for!(NodeResourcesFitArgs))
            .expect("schema is JSON");
        let text = schema.to_string();
        let weight = &schema["$defs"]["ResourceSpec"]["properties"]["weight"];
        assert_eq!(weight["minimum"], json!(1), "{text}");
        assert_eq!(weight["maximum"], json!(100), "{text}");
        assert_eq!(
            schema["$defs"]["ScoringStrategyType"]["enum"],
            json!([
                "LeastAllocated",
                "MostAllocated",
                "RequestedToCapacityRatio"
            ]),
            "{text}"
        );
        let score = &schema["$defs"]["UtilizationShapePoint"]["properties"]["score"];
        assert_eq!(score["maximum"], json!(10), "{text}");
        assert_eq!(
            schema["$defs"]["RequestedToCapacityRatioParam"]["properties"]["shape"]["minItems"],
            json!(1),
            "{text}"
        );
    }

    #[test]
    fn registry_points_match_the_accessors() {
        let plugin = NodeResourcesFit::new(NodeResourcesFitArgs::default());
        assert!(plugin.as_pre_filter().is_some());
        assert!(plugin.as_filter().is_some());
        assert!(plugin.as_pre_score().is_some());
        assert!(plugin.as_score().is_some());
        assert!(plugin.as_post_filter().is_none());
        assert_eq!(NodeResourcesFit::POINTS.len(), 4);
        let events = plugin.events_to_register().expect("registers events");
        let node_added = ClusterEvent::new(EventResource::Node, ActionType::ADD);
        let pod_deleted = ClusterEvent::new(EventResource::AssignedPod, ActionType::DELETE);
        let node_tainted = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_TAINT);
        assert!(events.iter().any(|e| e.matches(&node_added)));
        assert!(events.iter().any(|e| e.matches(&pod_deleted)));
        assert!(!events.iter().any(|e| e.matches(&node_tainted)));
    }
}
