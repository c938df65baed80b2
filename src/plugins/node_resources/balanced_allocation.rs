//! NodeResourcesBalancedAllocation: prefers nodes whose resources would be used evenly
//! once the pod is placed, as upstream's `noderesources.BalancedAllocation`.
//!
//! - PreScore computes the pod's plain request (no non-zero defaults) of each configured
//!   resource once; a pod that requests none of them (best-effort) returns Skip, so it is
//!   not drawn to the emptiest-looking node (kubernetes/kubernetes#129138).
//! - Score rewards how much placing the pod improves the node's balance (upstream since
//!   1.37). The balance of a set of utilizations (`requested / allocatable` capped at 1,
//!   over the resources the node has; a scalar resource the pod does not request is left
//!   out) is `(1 - std) * 100` truncated, where `std` is their standard deviation
//!   (`|a - b| / 2` for two resources, 0 for fewer). With `with` the balance after
//!   placing the pod and `without` before, the score is `50 + (50 + with - without) / 2`
//!   in integers: 75 when the pod changes nothing, towards 100 when it evens the node
//!   out, towards 50 when it unbalances it.
//!
//! Requests and allocatable come from the scorer NodeResourcesFit uses
//! ([`super::resource_allocation`]). No NormalizeScore, and no EnqueueExtensions: a Score
//! plugin rejects no pod, and upstream registers none.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::{NodeInfo, PodInfo};
use crate::framework::{
    CycleState, FieldError, Handle, MAX_NODE_SCORE, PluginArgs, PluginError, PreScorePlugin,
    ScorePlugin, Status,
};

use super::resource_allocation::ResourceAllocationScorer;
use super::{MAX_RESOURCES, ResourceSpec, default_resources};

/// Args of NodeResourcesBalancedAllocation (upstream `NodeResourcesBalancedAllocationArgs`,
/// v1 defaults).
// The schema carries what upstream's `ValidateNodeResourcesBalancedAllocationArgs` checks
// (unique names, weight 1) as CEL rules, so the API server rejects it at `kubectl apply`;
// `PluginArgs::validate` repeats it with per-index paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeResourcesBalancedAllocationArgs {
    /// The resources whose utilization is balanced, each with weight 1 (weights do not
    /// take part in this score); an empty list means cpu and memory, as upstream's v1
    /// defaulting (at most 32, unique names).
    #[schemars(
        length(max = MAX_RESOURCES),
        extend("x-kubernetes-validations" = [
            {
                "rule": "self.all(r, self.exists_one(q, q.name == r.name))",
                "message": "resource names must be unique",
            },
            {
                "rule": "self.all(r, !has(r.weight) || r.weight == 1)",
                "message": "every weight must be 1: NodeResourcesBalancedAllocation does not weigh resources",
            },
        ])
    )]
    pub resources: Vec<ResourceSpec>,
}

impl Default for NodeResourcesBalancedAllocationArgs {
    fn default() -> Self {
        NodeResourcesBalancedAllocationArgs {
            resources: default_resources(),
        }
    }
}

impl PluginArgs for NodeResourcesBalancedAllocationArgs {
    /// Upstream `ValidateNodeResourcesBalancedAllocationArgs`: a name listed twice, and
    /// any weight other than 1.
    ///
    /// One difference: upstream's defaulting turns an explicit weight 0 into 1; here the
    /// schema of [`ResourceSpec`] (shared with NodeResourcesFit) rejects 0, so this
    /// rejects it too, keeping local validation equal to the API server's.
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        for (i, resource) in self.resources.iter().enumerate() {
            let field = format!("{path}.resources[{i}]");
            if self.resources[..i].iter().any(|r| r.name == resource.name) {
                errors.push(FieldError::duplicate(
                    format!("{field}.name"),
                    &serde_json::Value::from(resource.name.as_str()),
                    "",
                ));
            }
            if resource.weight != 1 {
                errors.push(FieldError::new(
                    format!("{field}.weight"),
                    resource.weight,
                    "must be 1: NodeResourcesBalancedAllocation does not weigh resources",
                ));
            }
        }
        errors
    }
}

/// The NodeResourcesBalancedAllocation plugin.
#[derive(Debug, Clone)]
pub struct NodeResourcesBalancedAllocation {
    scorer: ResourceAllocationScorer,
}

/// What PreScore hands to Score: the pod's request of each configured resource, in the
/// order of the args. Its own type, so it never meets NodeResourcesFit's in CycleState.
#[derive(Debug, Clone)]
struct PreScoreState {
    pod_requests: Vec<i64>,
}

impl NodeResourcesBalancedAllocation {
    /// The plugin over defaulted, validated args.
    pub fn new(args: NodeResourcesBalancedAllocationArgs) -> Self {
        NodeResourcesBalancedAllocation {
            scorer: ResourceAllocationScorer::balanced_allocation(&args.resources),
        }
    }
}

/// Upstream `isBestEffortPod`: the pod requests none of the configured resources.
fn is_best_effort(pod_requests: &[i64]) -> bool {
    pod_requests.iter().all(|&request| request == 0)
}

crate::plugin! {
    NodeResourcesBalancedAllocation {
        name: "NodeResourcesBalancedAllocation",
        points: [PreScore, Score],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Prefers nodes where the pod makes the use of resources (cpu and memory by default) more even.";
        type Args = NodeResourcesBalancedAllocationArgs;

        fn build(args: NodeResourcesBalancedAllocationArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(NodeResourcesBalancedAllocation::new(args))
        }
    }
}

#[async_trait]
impl PreScorePlugin for NodeResourcesBalancedAllocation {
    async fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[Arc<NodeInfo>],
    ) -> Status {
        let pod_requests = self.scorer.pod_requests(pod);
        if is_best_effort(&pod_requests) {
            return Status::skip();
        }
        state.write(PreScoreState { pod_requests });
        Status::success()
    }
}

impl ScorePlugin for NodeResourcesBalancedAllocation {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        if let Some(pre_score) = state.read::<PreScoreState>() {
            return self.scorer.score(node, &pre_score.pod_requests);
        }
        // As upstream: without PreScore (e.g. Score called alone), compute it here, and
        // give a best-effort pod 0 where PreScore would have skipped.
        let pod_requests = self.scorer.pod_requests(pod);
        if is_best_effort(&pod_requests) {
            return Ok(0);
        }
        self.scorer.score(node, &pod_requests)
    }
}

/// The score from the balance with the pod (`with`) and without it (upstream
/// `balancedResourceScorer`): both balances are in 50..=100, so the result is too.
pub(super) fn improvement(with: i64, without: i64) -> i64 {
    MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + with - without) / 2
}

/// A resource's utilization, `requested / allocatable` capped at 1 (allocatable is not 0).
pub(super) fn fraction(requested: i64, allocatable: i64) -> f64 {
    (requested as f64 / allocatable as f64).min(1.0)
}

/// `(1 - std) * MAX_NODE_SCORE` truncated, over the utilizations of the resources with
/// non-zero allocatable (upstream `balancedResourceScore`).
pub(super) fn balance(fractions: &[f64]) -> i64 {
    let std = match fractions {
        [] | [_] => 0.0,
        // The common cpu + memory case, as upstream computes it.
        [a, b] => ((a - b) / 2.0).abs(),
        _ => {
            let n = fractions.len() as f64;
            let mean = fractions.iter().sum::<f64>() / n;
            let squares: f64 = fractions.iter().map(|f| (f - mean) * (f - mean)).sum();
            (squares / n).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// [`balance`] over `(requested, allocatable)` pairs.
#[cfg(test)]
fn score(resources: impl Iterator<Item = (i64, i64)>) -> i64 {
    let fractions: Vec<f64> = resources.map(|(r, a)| fraction(r, a)).collect();
    balance(&fractions)
}

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for NodeResourcesBalancedAllocation {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::resources(pod)]
    }
}

#[cfg(test)]
mod tests {
    use crate::framework::{ExtensionPoint, Plugin, PluginFactory};
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::super::test_util::*;
    use super::*;
    use crate::framework::{Code, Registry, decode_args};
    use crate::schema::ProfileValidator;

    const PATH: &str = "spec.pluginConfig.nodeResourcesBalancedAllocation";
    const GPU: &str = "nvidia.com/gpu";

    /// upstream `cpuOnly`: 1000m and 2000m cpu, memory explicitly 0.
    fn cpu_only() -> Pod {
        pod_with(
            &[
                req(&[("cpu", "1000m"), ("memory", "0")]),
                req(&[("cpu", "2000m"), ("memory", "0")]),
            ],
            &[],
        )
    }

    /// upstream `cpuAndMemory`: 1000m/2000 and 2000m/3000 cpu/memory.
    fn cpu_and_memory() -> Pod {
        pod_with(
            &[
                req(&[("cpu", "1000m"), ("memory", "2000")]),
                req(&[("cpu", "2000m"), ("memory", "3000")]),
            ],
            &[],
        )
    }

    /// upstream `cpuAndMemoryAndGPU`: `cpuAndMemory` with 3 GPUs on the second container.
    fn cpu_and_memory_and_gpu() -> Pod {
        pod_with(
            &[
                req(&[("cpu", "1000m"), ("memory", "2000")]),
                req(&[("cpu", "2000m"), ("memory", "3000"), (GPU, "3")]),
            ],
            &[],
        )
    }

    /// upstream `makeNode(name, milliCPU, memory, scalars)`.
    fn node_of(
        name: &str,
        milli_cpu: &str,
        memory: &str,
        gpus: Option<&str>,
        pods: Vec<Pod>,
    ) -> TestNode {
        let cpu = format!("{milli_cpu}m");
        let mut resources = vec![("cpu", cpu.as_str()), ("memory", memory)];
        resources.extend(gpus.map(|n| (GPU, n)));
        node(name, &resources, pods)
    }

    fn args_of(names: &[&str]) -> NodeResourcesBalancedAllocationArgs {
        NodeResourcesBalancedAllocationArgs {
            resources: names.iter().map(|n| ResourceSpec::new(*n, 1)).collect(),
        }
    }

    /// Runs PreScore (when `pre_score`) and then Score on every node, as upstream's test
    /// does; returns PreScore's code and the scores (none after Skip).
    fn run(
        args: NodeResourcesBalancedAllocationArgs,
        pod: Pod,
        nodes: &[TestNode],
        pre_score: bool,
    ) -> (Code, Vec<i64>) {
        let plugin = NodeResourcesBalancedAllocation::new(args);
        let pod = pod_info(pod);
        let infos = node_infos(nodes);
        let mut state = CycleState::new();
        let code = if pre_score {
            complete(plugin.pre_score(&mut state, &pod, &infos)).code()
        } else {
            Code::Success
        };
        if code == Code::Skip {
            return (code, Vec::new());
        }
        let scores = infos
            .iter()
            .map(|node| {
                plugin
                    .score(&state, &pod, node)
                    .unwrap_or_else(|status| panic!("Score failed: {status}"))
            })
            .collect();
        (code, scores)
    }

    /// A scoring case: name, args, incoming pod, nodes, whether PreScore runs, PreScore's
    /// code, expected scores.
    type Case = (
        &'static str,
        NodeResourcesBalancedAllocationArgs,
        Pod,
        Vec<TestNode>,
        bool,
        Code,
        Vec<i64>,
    );

    #[test]
    fn scores_match_upstream() {
        let cpu_mem = || args_of(&["cpu", "memory"]);
        let with_gpu = || args_of(&["cpu", "memory", GPU]);
        let cases: Vec<Case> = vec![
            // upstream TestNodeResourcesBalancedAllocation "nothing scheduled, nothing requested, skip in PreScore"
            (
                "best-effort pod is skipped",
                cpu_mem(),
                no_requests(),
                vec![
                    node_of("node1", "4000", "10000", None, vec![]),
                    node_of("node2", "4000", "10000", None, vec![]),
                ],
                true,
                Code::Skip,
                vec![],
            ),
            // upstream "nothing scheduled, resources requested, differently sized nodes":
            // node1 balance 100 -> 87 (cpu 75%, memory 50%) -> 68; node2 100 -> 100 -> 75.
            (
                "differently sized empty nodes",
                cpu_mem(),
                cpu_and_memory(),
                vec![
                    node_of("node1", "4000", "10000", None, vec![]),
                    node_of("node2", "6000", "10000", None, vec![]),
                ],
                true,
                Code::Success,
                vec![68, 75],
            ),
            // upstream "resources requested, pods scheduled with resources":
            // node1 85 -> 82 (30%/0% -> 60%/25%) -> 73; node2 97 -> 95 -> 74.
            (
                "pods scheduled with resources",
                cpu_mem(),
                cpu_and_memory(),
                vec![
                    node_of("node1", "10000", "20000", None, vec![cpu_only()]),
                    node_of("node2", "10000", "20000", None, vec![cpu_and_memory()]),
                ],
                true,
                Code::Success,
                vec![73, 74],
            ),
            // upstream "resources requested, pods scheduled with resources, differently sized nodes":
            // node2 90 -> 80 (30%/10% -> 60%/20%) -> 70.
            (
                "pods scheduled with resources, differently sized nodes",
                cpu_mem(),
                cpu_and_memory(),
                vec![
                    node_of("node1", "10000", "20000", None, vec![cpu_only()]),
                    node_of("node2", "10000", "50000", None, vec![cpu_and_memory()]),
                ],
                true,
                Code::Success,
                vec![73, 70],
            ),
            // upstream "resources requested, pods scheduled with resources, nodes to reach
            // min/max score": node1 50 -> 100 (cpu 100%, memory 0% -> 100%); node2 100 -> 50.
            (
                "nodes to reach min/max score",
                cpu_mem(),
                pod_with(
                    &[req(&[("memory", "2000")]), req(&[("memory", "3000")])],
                    &[],
                ),
                vec![
                    node_of("node1", "3000", "5000", None, vec![cpu_only()]),
                    node_of("node2", "3000", "5000", None, vec![]),
                ],
                true,
                Code::Success,
                vec![100, 50],
            ),
            // upstream "requested resources at node capacity": node1 75 -> 50 (explicit 0
            // memory requests count as 0) -> 62; node2 100 -> 75 -> 62.
            (
                "requested resources at node capacity",
                cpu_mem(),
                cpu_only(),
                vec![
                    node_of("node1", "6000", "10000", None, vec![cpu_only()]),
                    node_of("node2", "6000", "10000", None, vec![cpu_and_memory()]),
                ],
                true,
                Code::Success,
                vec![62, 62],
            ),
            // upstream "scalar resource is included in the score computation if pod
            // requests the scalar resource": three fractions, node1 69 -> 70 (GPU 3/8 ->
            // 4/8) -> 75; node2 62 -> 65 (GPU 0 -> 1/8) -> 76.
            (
                "scalar resource takes part",
                with_gpu(),
                pod_with(&[req(&[("memory", "0"), (GPU, "1")])], &[]),
                vec![
                    node_of(
                        "node1",
                        "3500",
                        "40000",
                        Some("8"),
                        vec![cpu_and_memory_and_gpu()],
                    ),
                    node_of("node2", "3500", "40000", Some("8"), vec![cpu_and_memory()]),
                ],
                true,
                Code::Success,
                vec![75, 76],
            ),
            // upstream "scalar resource is not included in the score computation if pod
            // doesn't request the scalar resource": only cpu and memory count, 100 -> 63 -> 56.
            (
                "scalar resource the pod does not request is skipped",
                with_gpu(),
                cpu_and_memory(),
                vec![
                    node_of("node1", "3500", "40000", Some("8"), vec![]),
                    node_of("node2", "3500", "40000", None, vec![]),
                ],
                true,
                Code::Success,
                vec![56, 56],
            ),
            // upstream "resources requested, pods scheduled with resources if PreScore not called"
            (
                "Score without PreScore",
                cpu_mem(),
                cpu_and_memory(),
                vec![
                    node_of("node1", "10000", "20000", None, vec![cpu_only()]),
                    node_of("node2", "10000", "20000", None, vec![cpu_and_memory()]),
                ],
                false,
                Code::Success,
                vec![73, 74],
            ),
        ];
        for (name, args, pod, nodes, pre_score, want_code, want) in cases {
            let (code, scores) = run(args, pod, &nodes, pre_score);
            assert_eq!(code, want_code, "case {name}: PreScore code");
            assert_eq!(scores, want, "case {name}");
        }
    }

    #[test]
    fn best_effort_pod_scores_zero_without_pre_score() {
        // upstream Score: a best-effort pod whose PreScore did not run scores 0.
        let (_, scores) = run(
            NodeResourcesBalancedAllocationArgs::default(),
            no_requests(),
            &[node_of("node1", "4000", "10000", None, vec![])],
            false,
        );
        assert_eq!(scores, vec![0]);
    }

    #[test]
    fn one_fraction_has_no_deviation() {
        // A single resource the node has: std 0, whatever the utilization.
        assert_eq!(score([(3, 4)].into_iter()), 100);
        // Over-requested resources are capped at 1: |1 - 0.5| / 2 = 0.25.
        assert_eq!(score([(8, 4), (1, 2)].into_iter()), 75);
        assert_eq!(score(std::iter::empty()), 100);
    }

    fn errors_of(args: serde_json::Value) -> Vec<FieldError> {
        match decode_args::<NodeResourcesBalancedAllocationArgs>(Some(&args), PATH) {
            Ok(_) => Vec::new(),
            Err(errors) => errors,
        }
    }

    #[test]
    fn defaults_are_upstream_v1_defaults() {
        let args = decode_args::<NodeResourcesBalancedAllocationArgs>(None, PATH)
            .expect("defaults are valid");
        assert_eq!(args.resources, default_resources());
        assert_eq!(
            serde_json::to_value(&args).expect("serializable"),
            json!({"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]})
        );
        // A weight left out is 1.
        let args = decode_args::<NodeResourcesBalancedAllocationArgs>(
            Some(&json!({"resources": [{"name": GPU}]})),
            PATH,
        )
        .expect("valid");
        assert_eq!(args.resources, vec![ResourceSpec::new(GPU, 1)]);
    }

    #[test]
    fn validation_matches_upstream_table() {
        let res = |list: serde_json::Value| json!({ "resources": list });
        let cases: Vec<(&str, serde_json::Value, Vec<String>)> = vec![
            // upstream TestValidateNodeResourcesBalancedAllocationArgs "valid config"
            (
                "cpu and memory, weight 1",
                res(json!([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}])),
                vec![],
            ),
            // upstream TestValidateNodeResourcesBalancedAllocationArgs "invalid config"
            (
                "weight 2",
                res(json!([{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}])),
                vec![format!("{PATH}.resources[0].weight")],
            ),
            // upstream TestValidateNodeResourcesBalancedAllocationArgs "repeated resources"
            (
                "cpu twice",
                res(json!([{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}])),
                vec![format!("{PATH}.resources[1].name")],
            ),
            // no upstream case: an empty list is valid and means the defaults
            ("empty list", res(json!([])), vec![]),
        ];
        for (name, args, want) in cases {
            let paths: Vec<String> = errors_of(args).into_iter().map(|e| e.path).collect();
            assert_eq!(paths, want, "case {name}");
        }
    }

    #[test]
    fn errors_name_the_bad_value() {
        let errors = errors_of(json!({"resources": [{"name": "cpu", "weight": 2}]}));
        assert_eq!(
            errors[0].to_string(),
            format!(
                "{PATH}.resources[0].weight: Invalid value: 2: must be 1: NodeResourcesBalancedAllocation does not weigh resources"
            )
        );
        let errors = errors_of(json!({"resources": [{"name": "cpu"}, {"name": "cpu"}]}));
        assert_eq!(
            errors[0].to_string(),
            format!("{PATH}.resources[1].name: Duplicate value: \"cpu\"")
        );
    }

    #[test]
    fn api_server_rejects_what_validate_rejects() {
        let mut registry = Registry::new();
        registry.register::<NodeResourcesBalancedAllocation>();
        let validator = ProfileValidator::new(&registry).expect("schema builds");
        assert_eq!(validator.rule_compilation_errors(), Vec::<String>::new());
        let admission = |resources: serde_json::Value| {
            let raw = json!({"apiVersion": "berth.dev/v1alpha1", "kind": "SchedulerProfile",
                             "metadata": {"name": "p"},
                             "spec": {"pluginConfig": {"nodeResourcesBalancedAllocation": {"resources": resources}}}});
            validator.admission_errors(&raw)
        };
        assert_eq!(
            admission(json!([{"name": "cpu"}, {"name": "memory", "weight": 1}])),
            Vec::new()
        );
        let duplicate = admission(json!([{"name": "cpu"}, {"name": "cpu"}]));
        assert!(
            duplicate
                .iter()
                .any(|e| e.path == format!("{PATH}.resources")
                    && e.message.contains("must be unique")),
            "{duplicate:?}"
        );
        let weight = admission(json!([{"name": "cpu", "weight": 2}]));
        assert!(
            weight
                .iter()
                .any(|e| e.path == format!("{PATH}.resources") && e.message.contains("must be 1")),
            "{weight:?}"
        );
    }

    #[test]
    fn empty_resources_score_cpu_and_memory() {
        // An explicit empty list means the defaults, as upstream's v1 defaulting.
        let (_, scores) = run(
            NodeResourcesBalancedAllocationArgs { resources: vec![] },
            cpu_and_memory(),
            &[node_of("node1", "4000", "10000", None, vec![])],
            true,
        );
        assert_eq!(scores, vec![68]);
    }

    #[test]
    fn schema_carries_the_bounds() {
        let schema =
            serde_json::to_value(schemars::schema_for!(NodeResourcesBalancedAllocationArgs))
                .expect("schema is JSON");
        let text = schema.to_string();
        let resources = &schema["properties"]["resources"];
        assert_eq!(resources["maxItems"], json!(MAX_RESOURCES), "{text}");
        let rules = resources["x-kubernetes-validations"]
            .as_array()
            .expect("CEL rules");
        assert_eq!(rules.len(), 2, "{text}");
        assert_eq!(
            schema["properties"]["resources"]["default"],
            json!([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]),
            "{text}"
        );
    }

    #[test]
    fn registry_points_match_the_accessors() {
        let plugin = NodeResourcesBalancedAllocation::new(Default::default());
        assert!(plugin.as_pre_score().is_some());
        assert!(plugin.as_score().is_some());
        assert!(plugin.as_filter().is_none());
        assert!(plugin.as_pre_filter().is_none());
        assert!(
            plugin
                .as_score()
                .and_then(|s| s.score_extensions())
                .is_none()
        );
        assert_eq!(
            NodeResourcesBalancedAllocation::POINTS,
            &[ExtensionPoint::PreScore, ExtensionPoint::Score]
        );
        // Upstream registers no events: a Score plugin rejects no pod.
        assert!(plugin.events_to_register().is_none());
    }
}
