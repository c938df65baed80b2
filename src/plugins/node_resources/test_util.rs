//! Builders for the upstream test tables: nodes and pods as k8s-openapi objects, turned into
//! the `PodInfo`/`NodeInfo` the plugin sees.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Node, NodeStatus, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{NodeResourcesFit, NodeResourcesFitArgs};
use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{CycleState, PreScorePlugin, ScorePlugin, Status};

pub use crate::testing::executor::complete;

/// The requests of one container, e.g. `[("cpu", "1000"), ("memory", "2000")]`.
pub type Requests<'a> = Vec<(&'a str, String)>;

pub fn quantities<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_ref().to_string(), Quantity(v.as_ref().to_string())))
        .collect()
}

/// A node whose capacity and allocatable are `resources` (upstream `MakeNode().Capacity`).
pub fn make_node(name: &str, resources: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        status: Some(NodeStatus {
            capacity: Some(quantities(resources)),
            allocatable: Some(quantities(resources)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn container(i: usize, requests: &Requests) -> Container {
    Container {
        name: format!("c{i}"),
        resources: (!requests.is_empty()).then(|| ResourceRequirements {
            requests: Some(quantities(requests)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A pod with one app container per entry of `containers` and one init container per
/// entry of `init` (upstream `MakePod().Req(..)` / `newResourcePod` /
/// `newResourceInitPod`). An empty entry is a container without requests.
pub fn pod_with(containers: &[Requests], init: &[Requests]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("pod".to_string()),
            namespace: Some("default".to_string()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: containers
                .iter()
                .enumerate()
                .map(|(i, r)| container(i, r))
                .collect(),
            init_containers: (!init.is_empty()).then(|| {
                init.iter()
                    .enumerate()
                    .map(|(i, r)| container(i, r))
                    .collect()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `pod` with `spec.overhead` set (upstream `newResourceOverheadPod`).
pub fn with_overhead(mut pod: Pod, overhead: &[(&str, &str)]) -> Pod {
    if let Some(spec) = pod.spec.as_mut() {
        spec.overhead = Some(quantities(overhead));
    }
    pod
}

/// Requests from `(name, quantity)` pairs.
pub fn req<'a>(pairs: &[(&'a str, &str)]) -> Requests<'a> {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

pub fn pod_info(pod: Pod) -> PodInfo {
    PodInfo::new(pod).expect("test pod quantities are valid")
}

/// The NodeInfo of `node` running `pods`, aggregated by the cache's own code.
pub fn node_info(node: &Node, pods: &[Pod]) -> NodeInfo {
    let mut info = NodeInfo::new(node.clone()).expect("test node quantities are valid");
    for pod in pods {
        info.add_pod(Arc::new(pod_info(pod.clone())));
    }
    info
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
    let infos: Vec<Arc<NodeInfo>> = nodes
        .iter()
        .map(|(node, pods)| Arc::new(node_info(node, pods)))
        .collect();
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
