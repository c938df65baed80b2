//! Preemption end to end through DefaultPreemption's PostFilter on berth's framework (the
//! default profile): the node the pod is nominated to and the victims chosen there.
//!
//! - upstream's TestPreempt rows that need no extender: nodes of 500m cpu (a node named
//!   `a/b` is `a` with labels `hostname: a` and `zone: b`), every node handed to PostFilter
//!   as Unschedulable; then, with the victims terminating and the pod nominated, a second
//!   PostFilter (nothing rejected as Unschedulable this time) must choose nothing more.
//! - upstream's integration tests TestPDBInPreemption and TestPreemption (the rows berth's
//!   default plugins decide; the others count tokens in a test plugin) as unit rows: nodes
//!   of 500m cpu, 500 memory and 32 pods, pods of 100m/100 unless stated, priorities 100,
//!   200 and 300, budgets with the `disruptionsAllowed` the disruption controller computes
//!   for ready pods (healthy pods minus `minAvailable`, at least 0); the statuses handed to
//!   PostFilter are what Filter says of each node, as in a scheduling cycle.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, Time,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::post_filter_tests::framework;
use super::*;
use crate::cluster::Cache;
use crate::framework::Framework;
use crate::testing::executor::complete;
use crate::testing::{make_node, make_pod};

/// What PostFilter is told about the nodes.
enum Statuses {
    /// Every node Unschedulable, as upstream's TestPreempt hands them.
    AllUnschedulable,
    /// What Filter says of each node, as the scheduling cycle hands them.
    FromFilter,
}

struct Case {
    name: &'static str,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    budgets: Vec<PodDisruptionBudget>,
    preemptor: Pod,
    statuses: Statuses,
    /// `None`: the nomination is left alone; `Some("")`: it is cleared.
    want_node: Option<&'static str>,
    want_status: Status,
    want_victims: Vec<&'static str>,
}

fn snapshot(nodes: &[Node], pods: &[Pod]) -> Snapshot {
    let mut cache = Cache::new(None);
    for node in nodes {
        cache.add_node(node.clone()).expect("node");
    }
    for pod in pods {
        cache.add_pod(pod.clone()).expect("pod");
    }
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    snapshot
}

fn all_unresolvable() -> NodeToStatus {
    NodeToStatus {
        statuses: HashMap::new(),
        absent: Some(Status::unresolvable("rejected")),
    }
}

/// One scheduling cycle's PreFilter and PostFilter for `preemptor`: the nominated node,
/// PostFilter's status and, when a node is nominated, the victims chosen there.
struct Outcome {
    node: Option<String>,
    status: Status,
    victims: Option<(String, Vec<String>)>,
}

fn preempt(
    framework: &Framework,
    snapshot: &Snapshot,
    preemptor: &Pod,
    statuses: &Statuses,
    name: &str,
) -> Outcome {
    let pod = PodInfo::new(preemptor.clone()).expect("pod");
    let mut state = CycleState::new();
    state.set_node_count(snapshot.len());
    let pre = complete(framework.run_pre_filter(&mut state, &pod, snapshot));
    assert!(
        pre.status.is_success(),
        "{name}: PreFilter {:?}",
        pre.status
    );
    let mut given = all_unresolvable();
    for node in snapshot.nodes() {
        let status = match statuses {
            Statuses::AllUnschedulable => Status::unschedulable("rejected"),
            Statuses::FromFilter => framework.run_filter(&state, &pod, node),
        };
        assert!(!status.is_success(), "{name}: {} fits", node.name());
        given.statuses.insert(node.name().to_string(), status);
    }
    let (result, status) = complete(framework.run_post_filter(&state, &pod, snapshot, &given));
    let (node, preemption) = match result {
        Some(result) => (result.nominated_node_name, result.preemption),
        None => (None, None),
    };
    let victims = preemption.map(|preemption| {
        let mut victims: Vec<String> = preemption
            .victims
            .iter()
            .map(|v| v.pod.metadata.name.clone().unwrap_or_default())
            .collect();
        victims.sort();
        (preemption.node, victims)
    });
    Outcome {
        node,
        status,
        victims,
    }
}

fn check(case: Case, second_cycle: bool) {
    let name = case.name;
    let framework = framework(case.budgets.clone());
    let snapshot = snapshot(&case.nodes, &case.pods);
    let first = preempt(&framework, &snapshot, &case.preemptor, &case.statuses, name);
    assert_eq!(
        first.node.as_deref(),
        case.want_node,
        "{name}: nominated node"
    );
    // A success carries upstream's message naming the node and counting the victims
    // (`Evaluator.Preempt`, prefixed by DefaultPreemption's PostFilter).
    let want_status = match case.want_node {
        Some(node) if case.want_status.is_success() && !node.is_empty() => Status::new(
            Code::Success,
            format!(
                "preemption: found a potential placement for pod on node {node}, preempting {} victims",
                case.want_victims.len()
            ),
        ),
        _ => case.want_status.clone(),
    };
    assert_eq!(
        (first.status.code(), first.status.message()),
        (want_status.code(), want_status.message()),
        "{name}: status"
    );
    let want_victims = match case.want_node {
        Some(node) if !node.is_empty() => Some((
            node.to_string(),
            case.want_victims.iter().map(|v| v.to_string()).collect(),
        )),
        _ => None,
    };
    assert_eq!(first.victims, want_victims, "{name}: victims");
    if !second_cycle {
        return;
    }
    // upstream then marks the victims deleted and the pod nominated, and preempts again
    // with no node rejected as Unschedulable: no further node is chosen.
    let evicted: Vec<String> = first.victims.map(|(_, v)| v).unwrap_or_default();
    let pods: Vec<Pod> = case
        .pods
        .into_iter()
        .map(|mut p| {
            if evicted.contains(p.metadata.name.as_ref().unwrap_or(&String::new())) {
                p.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
            }
            p
        })
        .collect();
    let mut preemptor = case.preemptor;
    if let Some(node) = &first.node {
        preemptor.status.get_or_insert_default().nominated_node_name = Some(node.clone());
    }
    let snapshot = self::snapshot(&case.nodes, &pods);
    let pod = PodInfo::new(preemptor).expect("pod");
    let mut state = CycleState::new();
    state.set_node_count(snapshot.len());
    let pre = complete(framework.run_pre_filter(&mut state, &pod, &snapshot));
    assert!(
        pre.status.is_success(),
        "{name}: PreFilter {:?}",
        pre.status
    );
    let (result, _) =
        complete(framework.run_post_filter(&state, &pod, &snapshot, &all_unresolvable()));
    let again = result.and_then(|r| r.nominated_node_name);
    assert!(
        again.as_deref().unwrap_or_default().is_empty(),
        "{name}: second preemption chose {again:?}"
    );
}

/// A TestPreempt node: 500m cpu, 500 memory; `a/b` is node `a` in zone `b`.
fn zoned_node(spec: &str) -> Node {
    let mut parts = spec.split('/');
    let name = parts.next().unwrap_or_default();
    let mut node = make_node().name(name).label("hostname", name);
    for (key, value) in ["zone", "region"].into_iter().zip(parts) {
        node = node.label(key, value);
    }
    node.capacity(&[("cpu", "500m"), ("memory", "500"), ("pods", "32")])
        .obj()
}

/// upstream's smallRes, mediumRes, largeRes and veryLargeRes.
const SMALL: &[(&str, &str)] = &[("cpu", "100m"), ("memory", "100")];
const MEDIUM_RES: &[(&str, &str)] = &[("cpu", "200m"), ("memory", "200")];
const LARGE: &[(&str, &str)] = &[("cpu", "300m"), ("memory", "300")];
const VERY_LARGE: &[(&str, &str)] = &[("cpu", "500m"), ("memory", "500")];

fn pod(name: &str, priority: i32, requests: &[(&str, &str)], node: Option<&str>) -> Pod {
    let mut pod = make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .priority(priority)
        .req(requests);
    if let Some(node) = node {
        pod = pod.node(node);
    }
    pod.obj()
}

fn with_policy(mut pod: Pod, policy: &str) -> Pod {
    if let Some(spec) = pod.spec.as_mut() {
        spec.preemption_policy = Some(policy.to_string());
    }
    pod
}

fn foo_exists() -> Option<LabelSelector> {
    Some(LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "foo".into(),
            operator: "Exists".into(),
            values: None,
        }]),
        ..LabelSelector::default()
    })
}

/// The pods of upstream's "basic preemption logic" and the rows that reuse them.
fn basic_pods() -> Vec<Pod> {
    vec![
        pod("p1.1", 0, SMALL, Some("node1")),
        pod("p1.2", 0, SMALL, Some("node1")),
        pod("p2.1", 1000, LARGE, Some("node2")),
        pod("p3.1", 100, MEDIUM_RES, Some("node3")),
    ]
}

fn basic_nodes() -> Vec<Node> {
    ["node1", "node2", "node3"].map(zoned_node).to_vec()
}

#[test]
fn preempt_table() {
    let spread_pod = |name: &str, priority: i32, node: &str| {
        make_pod()
            .name(name)
            .namespace("default")
            .uid(name)
            .label("foo", "")
            .priority(priority)
            .node(node)
            .obj()
    };
    let cases = vec![
        Case {
            name: "basic preemption logic",
            nodes: basic_nodes(),
            pods: basic_pods(),
            budgets: vec![],
            preemptor: with_policy(pod("p", 1000, VERY_LARGE, None), "PreemptLowerPriority"),
            statuses: Statuses::AllUnschedulable,
            want_node: Some("node1"),
            want_status: Status::success(),
            want_victims: vec!["p1.1", "p1.2"],
        },
        Case {
            name: "preemption for topology spread constraints",
            nodes: ["node-a/zone1", "node-b/zone1", "node-x/zone2"]
                .map(zoned_node)
                .to_vec(),
            pods: vec![
                spread_pod("p-a1", 1000, "node-a"),
                spread_pod("p-a2", 1000, "node-a"),
                spread_pod("p-b1", 0, "node-b"),
                spread_pod("p-x1", 1000, "node-x"),
                spread_pod("p-x2", 1000, "node-x"),
            ],
            budgets: vec![],
            preemptor: make_pod()
                .name("p")
                .namespace("default")
                .uid("p")
                .label("foo", "")
                .priority(1000)
                .spread_constraint(1, "zone", "DoNotSchedule", foo_exists())
                .spread_constraint(1, "hostname", "DoNotSchedule", foo_exists())
                .obj(),
            statuses: Statuses::AllUnschedulable,
            want_node: Some("node-b"),
            want_status: Status::success(),
            want_victims: vec!["p-b1"],
        },
        Case {
            name: "no preempting in pod",
            nodes: basic_nodes(),
            pods: basic_pods(),
            budgets: vec![],
            preemptor: with_policy(pod("p", 1000, VERY_LARGE, None), "Never"),
            statuses: Statuses::AllUnschedulable,
            want_node: None,
            want_status: Status::unschedulable(
                "preemption: not eligible due to preemptionPolicy=Never.",
            ),
            want_victims: vec![],
        },
        Case {
            name: "PreemptionPolicy is nil",
            nodes: basic_nodes(),
            pods: basic_pods(),
            budgets: vec![],
            preemptor: pod("p", 1000, VERY_LARGE, None),
            statuses: Statuses::AllUnschedulable,
            want_node: Some("node1"),
            want_status: Status::success(),
            want_victims: vec!["p1.1", "p1.2"],
        },
    ];
    for case in cases {
        check(case, true);
    }
}

const LOW: i32 = 100;
const MEDIUM: i32 = 200;
const HIGH: i32 = 300;

/// An integration-test node: 500m cpu, 500 memory, 32 pods, labelled `node: <name>`.
fn test_node(name: &str) -> Node {
    make_node()
        .name(name)
        .label("node", name)
        .capacity(&[("cpu", "500m"), ("memory", "500"), ("pods", "32")])
        .obj()
}

/// An integration-test pause pod on `node`: 100m cpu and 100 memory, `labels`.
fn pause(name: &str, priority: i32, node: &str, labels: &[(&str, &str)]) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .priority(priority)
        .labels(labels)
        .req(&[("cpu", "100m"), ("memory", "100")])
        .node(node)
        .obj()
}

/// The preemptor of the integration rows: priority 300, `cpu` and `memory`.
fn preemptor(cpu: &str, memory: &str) -> Pod {
    make_pod()
        .name("preemptor-pod")
        .namespace("default")
        .uid("preemptor-pod")
        .priority(HIGH)
        .req(&[("cpu", cpu), ("memory", memory)])
        .obj()
}

/// upstream's `mkMinAvailablePDB` once the disruption controller has counted its pods.
fn min_available(name: &str, min: i32, key: &str, allowed: i32) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(min)),
            selector: Some(LabelSelector {
                match_labels: Some([(key.to_string(), "bar".to_string())].into()),
                ..LabelSelector::default()
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: Some(PodDisruptionBudgetStatus {
            disruptions_allowed: Some(allowed),
            ..PodDisruptionBudgetStatus::default()
        }),
    }
}

/// `pod` with required anti-affinity to the pods labelled `pod: <value>` on its node
/// (topology key `node`).
fn anti_affinity_to(mut pod: Pod, value: &str) -> Pod {
    let affinity = make_pod()
        .pod_anti_affinity_in("pod", "node", &[value])
        .obj()
        .spec
        .and_then(|s| s.affinity);
    if let Some(spec) = pod.spec.as_mut() {
        spec.affinity = affinity;
    }
    pod
}

#[test]
fn integration_table() {
    let anti_affinity_preemptor = anti_affinity_to(
        make_pod()
            .name("preemptor-pod")
            .namespace("default")
            .uid("preemptor-pod")
            .priority(HIGH)
            .label("pod", "preemptor")
            .req(&[("cpu", "100m"), ("memory", "100")])
            .obj(),
        "p0",
    );
    let cases = vec![
        Case {
            name: "A non-PDB violating pod is preempted despite its higher priority",
            nodes: vec![test_node("node-1")],
            pods: vec![
                pause("low-pod1", LOW, "node-1", &[("foo", "bar")]),
                pause("low-pod2", LOW, "node-1", &[("foo", "bar")]),
                pause("mid-pod3", MEDIUM, "node-1", &[]),
            ],
            // Two ready pods, minAvailable 2.
            budgets: vec![min_available("pdb-1", 2, "foo", 0)],
            preemptor: preemptor("300m", "200"),
            statuses: Statuses::FromFilter,
            want_node: Some("node-1"),
            want_status: Status::success(),
            want_victims: vec!["mid-pod3"],
        },
        Case {
            name: "A node without any PDB violating pods is preferred for preemption",
            nodes: vec![test_node("node-1"), test_node("node-2")],
            pods: vec![
                pause("low-pod1", LOW, "node-1", &[("foo", "bar")]),
                pause("mid-pod2", MEDIUM, "node-2", &[]),
            ],
            // One ready pod, minAvailable 2.
            budgets: vec![min_available("pdb-1", 2, "foo", 0)],
            preemptor: preemptor("500m", "200"),
            statuses: Statuses::FromFilter,
            want_node: Some("node-2"),
            want_status: Status::success(),
            want_victims: vec!["mid-pod2"],
        },
        Case {
            name: "A node with fewer PDB violating pods is preferred for preemption",
            nodes: vec![
                test_node("node-1"),
                test_node("node-2"),
                test_node("node-3"),
            ],
            pods: vec![
                pause("low-pod1", LOW, "node-1", &[("foo1", "bar")]),
                pause("mid-pod1", MEDIUM, "node-1", &[]),
                pause("low-pod2", LOW, "node-2", &[("foo2", "bar")]),
                pause("mid-pod2", MEDIUM, "node-2", &[("foo2", "bar")]),
                pause("low-pod4", LOW, "node-3", &[("foo2", "bar")]),
                pause("low-pod5", LOW, "node-3", &[("foo2", "bar")]),
                pause("low-pod6", LOW, "node-3", &[("foo2", "bar")]),
            ],
            // pdb-1: one ready pod, minAvailable 2; pdb-2: five ready pods, minAvailable 2.
            budgets: vec![
                min_available("pdb-1", 2, "foo1", 0),
                min_available("pdb-2", 2, "foo2", 3),
            ],
            preemptor: preemptor("500m", "400"),
            statuses: Statuses::FromFilter,
            want_node: Some("node-3"),
            want_status: Status::success(),
            want_victims: vec!["low-pod4", "low-pod5", "low-pod6"],
        },
        Case {
            name: "basic pod preemption",
            nodes: vec![test_node("node1")],
            pods: vec![
                make_pod()
                    .name("victim-pod")
                    .namespace("default")
                    .uid("victim-pod")
                    .priority(LOW)
                    .req(&[("cpu", "400m"), ("memory", "200")])
                    .node("node1")
                    .obj(),
            ],
            budgets: vec![],
            preemptor: preemptor("300m", "200"),
            statuses: Statuses::FromFilter,
            want_node: Some("node1"),
            want_status: Status::success(),
            want_victims: vec!["victim-pod"],
        },
        Case {
            name: "preemption is performed to satisfy anti-affinity",
            nodes: vec![test_node("node1")],
            pods: vec![
                pause("pod-0", MEDIUM, "node1", &[("pod", "p0")]),
                anti_affinity_to(pause("pod-1", LOW, "node1", &[("pod", "p1")]), "preemptor"),
            ],
            budgets: vec![],
            preemptor: anti_affinity_preemptor.clone(),
            statuses: Statuses::FromFilter,
            want_node: Some("node1"),
            want_status: Status::success(),
            want_victims: vec!["pod-0", "pod-1"],
        },
        Case {
            // pod-1 has the preemptor's priority: it stays, and so does its anti-affinity.
            name: "preemption is not performed when anti-affinity is not satisfied",
            nodes: vec![test_node("node1")],
            pods: vec![
                pause("pod-0", MEDIUM, "node1", &[("pod", "p0")]),
                anti_affinity_to(pause("pod-1", HIGH, "node1", &[("pod", "p1")]), "preemptor"),
            ],
            budgets: vec![],
            preemptor: anti_affinity_preemptor,
            statuses: Statuses::FromFilter,
            want_node: Some(""),
            want_status: Status::unschedulable(
                "preemption: 0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules.",
            ),
            want_victims: vec![],
        },
    ];
    for case in cases {
        check(case, false);
    }
}
