//! Builders for the plugins' unit tests: pods and nodes with just the fields the plugins
//! read.

use std::collections::BTreeMap;
use std::sync::Arc;

use berth::cluster::{NodeInfo, PodInfo, Snapshot};
use k8s_openapi::api::core::v1::{Node, NodeSpec, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// A pod `namespace/name` with `labels`, running on `node` when given.
pub fn pod_on(namespace: &str, name: &str, pairs: &[(&str, &str)], node: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: labels(pairs),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(str::to_string),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// A pending pod `namespace/name` with `labels`.
pub fn pending(namespace: &str, name: &str, pairs: &[(&str, &str)]) -> PodInfo {
    PodInfo::new(pod_on(namespace, name, pairs, None)).expect("test pod is valid")
}

/// A node `name` with `labels`.
pub fn node(name: &str, pairs: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: labels(pairs),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec::default()),
        ..Node::default()
    }
}

pub fn node_info(name: &str, pairs: &[(&str, &str)]) -> Arc<NodeInfo> {
    Arc::new(NodeInfo::new(node(name, pairs)).expect("test node is valid"))
}

/// A snapshot of `nodes` with `pods` on them.
pub fn snapshot(nodes: Vec<Node>, pods: Vec<Pod>) -> Snapshot {
    Snapshot::from_objects(nodes, pods).expect("test objects are valid")
}
