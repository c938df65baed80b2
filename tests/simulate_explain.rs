//! `berth simulate --explain` explains every node, also when PreFilter decided: a pod
//! PreFilter rejected lists every node with the PreFilter's message, and a pod whose
//! candidates a PreFilterResult narrowed lists the nodes left out with upstream's
//! `node(s) didn't satisfy plugin(s) [X]`, naming only the plugins that narrowed.

mod support;
use support::cli;

use cli::{assert_exit, run_berth, stdout};
use serde_json::Value;

const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n3}
status: {allocatable: {cpu: "4", memory: 4Gi, pods: "110"}}
---
# Pinned to n1 by matchFields (NodeAffinity's PreFilterResult), which is too small.
apiVersion: v1
kind: Pod
metadata: {name: pinned}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [n1]}]
  containers: [{name: c, image: app, resources: {requests: {cpu: "2"}}}]
---
# One term pins two different nodes at once: NodeAffinity's PreFilter rejects the pod.
apiVersion: v1
kind: Pod
metadata: {name: conflicting}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields:
          - {key: metadata.name, operator: In, values: [n1]}
          - {key: metadata.name, operator: In, values: [n2]}
  containers: [{name: c, image: app}]
"#;

/// `(node, feasible, filterReasons)` for every node the pod's explanation lists.
fn explained(report: &Value, pod: &str) -> Vec<(String, bool, Vec<String>)> {
    let pod = report["pods"]
        .as_array()
        .expect("pods")
        .iter()
        .find(|p| p["name"] == pod)
        .unwrap_or_else(|| panic!("pod {pod} in the report: {report}"));
    let mut nodes: Vec<(String, bool, Vec<String>)> = pod["nodes"]
        .as_array()
        .expect("nodes with --explain")
        .iter()
        .map(|n| {
            let reasons = n["filterReasons"]
                .as_array()
                .expect("filterReasons")
                .iter()
                .map(|r| r.as_str().expect("a reason").to_string())
                .collect();
            (
                n["name"].as_str().expect("name").to_string(),
                n["feasible"].as_bool().expect("feasible"),
                reasons,
            )
        })
        .collect();
    nodes.sort();
    nodes
}

fn report() -> Value {
    let output = run_berth(
        &["simulate", "-f", "-", "-o", "json", "--explain"],
        Some(CLUSTER),
    );
    assert_exit(&output, 0);
    serde_json::from_str(&stdout(&output)).expect("JSON report")
}

fn rejected(node: &str, reason: &str) -> (String, bool, Vec<String>) {
    (node.to_string(), false, vec![reason.to_string()])
}

#[test]
fn nodes_a_prefilter_result_left_out_name_the_narrowing_plugin() {
    let narrowed = "node(s) didn't satisfy plugin(s) [NodeAffinity]";
    assert_eq!(
        explained(&report(), "pinned"),
        vec![
            rejected("n1", "Insufficient cpu"),
            rejected("n2", narrowed),
            rejected("n3", narrowed),
        ]
    );
}

#[test]
fn a_prefilter_rejection_lists_every_node_with_its_message() {
    // NodeAffinity's errReasonConflict, on every node.
    let conflict = "pod affinity terms conflict";
    assert_eq!(
        explained(&report(), "conflicting"),
        vec![
            rejected("n1", conflict),
            rejected("n2", conflict),
            rejected("n3", conflict),
        ]
    );
}
