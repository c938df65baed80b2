//! Builders for the upstream test tables: nodes and pods as k8s-openapi objects, turned into
//! the `PodInfo`/`NodeInfo` the plugin sees.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::{NodeResourcesFit, NodeResourcesFitArgs};
use crate::cluster::{NodeInfo, Snapshot};
use crate::framework::{CycleState, PreScorePlugin, ScorePlugin, Status};
use crate::testing::{make_node as st_make_node, make_pod};

pub use crate::testing::executor::complete;
pub use crate::testing::{pod_info, quantities};

/// The requests of one container, e.g. `[("cpu", "1000"), ("memory", "2000")]`.
pub type Requests<'a> = Vec<(&'a str, String)>;

/// A node whose capacity and allocatable are `resources` (upstream `MakeNode().Capacity`).
pub fn make_node(name: &str, resources: &[(&str, &str)]) -> Node {
    st_make_node().name(name).capacity(resources).obj()
}

/// A pod with one app container per entry of `containers` and one init container per
/// entry of `init` (upstream `MakePod().Req(..)` / `newResourcePod` /
/// `newResourceInitPod`). An empty entry is a container without requests.
pub fn pod_with(containers: &[Requests], init: &[Requests]) -> Pod {
    let pod = make_pod().name("pod").namespace("default");
    let pod = containers.iter().fold(pod, |pod, r| pod.req(&as_strs(r)));
    init.iter()
        .fold(pod, |pod, r| pod.init_req(&as_strs(r)))
        .obj()
}

/// `pod` with `spec.overhead` set (upstream `newResourceOverheadPod`).
pub fn with_overhead(mut pod: Pod, overhead: &[(&str, &str)]) -> Pod {
    if let Some(spec) = pod.spec.as_mut() {
        spec.overhead = Some(quantities(overhead));
    }
    pod
}

/// `pod` with pod-level `spec.resources.requests` set (upstream `newPodLevelResourcesPod`).
pub fn with_pod_requests(mut pod: Pod, requests: &[(&str, &str)]) -> Pod {
    if let Some(spec) = pod.spec.as_mut() {
        spec.resources = Some(k8s_openapi::api::core::v1::ResourceRequirements {
            requests: Some(quantities(requests)),
            ..Default::default()
        });
    }
    pod
}

/// Requests from `(name, quantity)` pairs.
pub fn req<'a>(pairs: &[(&'a str, &str)]) -> Requests<'a> {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

/// The NodeInfo of `node` running `pods`, aggregated by the cache's own code.
pub fn node_info(node: &Node, pods: &[Pod]) -> NodeInfo {
    crate::testing::node_info(node.clone(), pods.iter().cloned())
}

fn as_strs<'a>(requests: &'a Requests) -> Vec<(&'a str, &'a str)> {
    requests.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The NodeInfos of `nodes`, in order, as a cycle hands them to PreScore and Score.
pub fn node_infos(nodes: &[TestNode]) -> Vec<Arc<NodeInfo>> {
    nodes
        .iter()
        .map(|(node, pods)| Arc::new(node_info(node, pods)))
        .collect()
}

pub fn empty_snapshot() -> Snapshot {
    Snapshot::default()
}

/// Runs PreScore once, then Score on every node, as upstream's scoring tests do.
pub fn score_nodes(
    args: NodeResourcesFitArgs,
    pod: Pod,
    nodes: &[TestNode],
) -> Vec<Result<i64, Status>> {
    let plugin = NodeResourcesFit::new(args);
    let pod = pod_info(pod);
    let infos = node_infos(nodes);
    let mut state = CycleState::new();
    let status = complete(plugin.pre_score(&mut state, &pod, &infos));
    assert!(status.is_success(), "PreScore: {status}");
    infos
        .iter()
        .map(|node| plugin.score(&state, &pod, node))
        .collect()
}

/// Like [`score_nodes`], for cases where every Score must succeed.
pub fn scores(args: NodeResourcesFitArgs, pod: Pod, nodes: &[TestNode]) -> Vec<i64> {
    score_nodes(args, pod, nodes)
        .into_iter()
        .map(|r| r.unwrap_or_else(|status| panic!("Score failed: {status}")))
        .collect()
}

/// A node with allocatable `resources` running `pods`, for the scoring tables.
pub fn node(name: &str, resources: &[(&str, &str)], pods: Vec<Pod>) -> TestNode {
    (make_node(name, resources), pods)
}

/// A pod with one container requesting `cpu` and `memory` (upstream `MakePod().Req(..)`).
pub fn cpu_mem(cpu: &str, memory: &str) -> Pod {
    pod_with(&[req(&[("cpu", cpu), ("memory", memory)])], &[])
}

/// The pod most of upstream's scoring cases schedule: containers of 1000/2000 and
/// 2000/3000 cpu/memory, the second also requesting `extra`.
pub fn two_containers(extra: &[(&str, &str)]) -> Pod {
    let mut second = req(&[("cpu", "2000"), ("memory", "3000")]);
    second.extend(req(extra));
    pod_with(&[req(&[("cpu", "1000"), ("memory", "2000")]), second], &[])
}

/// Args selecting `strategy` over `resources`.
pub fn strategy_args(
    strategy: super::ScoringStrategyType,
    resources: Vec<super::ResourceSpec>,
    shape: Option<&[(i64, i64)]>,
) -> NodeResourcesFitArgs {
    NodeResourcesFitArgs {
        scoring_strategy: super::ScoringStrategy {
            strategy_type: strategy,
            resources,
            requested_to_capacity_ratio: shape.map(|points| super::RequestedToCapacityRatioParam {
                shape: points
                    .iter()
                    .map(|&(utilization, score)| super::UtilizationShapePoint {
                        utilization,
                        score,
                    })
                    .collect(),
            }),
        },
        ..Default::default()
    }
}

/// upstream `extendedRes` of the scoring tests.
pub const EXTENDED_RES: &str = "abc.com/xyz";

/// A pod without containers (upstream `MakePod().Obj()`).
pub fn no_requests() -> Pod {
    pod_with(&[], &[])
}

/// upstream `extendedResourceSet`: cpu, memory and `abc.com/xyz`, weight 1 each.
pub fn extended_resource_set() -> Vec<super::ResourceSpec> {
    ["cpu", "memory", EXTENDED_RES]
        .into_iter()
        .map(|name| super::ResourceSpec::new(name, 1))
        .collect()
}

/// A node and the pods already running on it.
pub type TestNode = (Node, Vec<Pod>);

/// A scoring case: upstream name, incoming pod, nodes, scored resources, expected scores.
pub type ScoreCase = (
    &'static str,
    Pod,
    Vec<TestNode>,
    Vec<super::ResourceSpec>,
    Vec<i64>,
);

/// A scoring case whose resources and shape are fixed by the table.
pub type ShapeCase = (&'static str, Pod, Vec<TestNode>, Vec<i64>);
