//! Tables reproducing upstream's `filtering_test.go`, `scoring_test.go` and
//! `TestValidatePodTopologySpreadArgs`; every case names the upstream case. Pods are in
//! the `default` namespace unless a case says otherwise, as upstream's test pods are in
//! the same (empty) namespace.

use crate::framework::{
    FilterPlugin, Plugin, PluginFactory, PreFilterPlugin, PreScorePlugin, ScorePlugin,
};
use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde_json::json;

use super::filtering::PreFilterState;
use super::*;
use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{
    Code, CycleState, FieldError, MAX_NODE_SCORE, PreFilterExtensions, ScoreExtensions, Status,
    decode_args,
};
use crate::testing::moves_on;
use crate::testing::{self as st, PodWrapper, pod_info, snapshot, spread_constraint as constraint};

// ---------------------------------------------------------------------------------------
// Builders, after upstream's `st.MakePod()` / `st.MakeNode()`.

/// A pod in `default`, where upstream's test pods share the empty namespace.
fn make_pod(name: &str) -> PodWrapper {
    st::make_pod().name(name).namespace("default")
}

/// Upstream `st.MakeLabelSelector().Exists(key)`.
fn exists(key: &str) -> Option<LabelSelector> {
    Some(LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: key.into(),
            operator: "Exists".into(),
            values: None,
        }]),
        ..LabelSelector::default()
    })
}

fn foo() -> Option<LabelSelector> {
    exists("foo")
}

fn make_node(name: &str, labels: &[(&str, &str)]) -> Node {
    st::make_node().name(name).labels(labels).obj()
}

/// A node with upstream's test taint `node.kubernetes.io/unschedulable:NoSchedule`.
fn tainted(name: &str, labels: &[(&str, &str)]) -> Node {
    st::make_node()
        .name(name)
        .labels(labels)
        .taint(st::taint(
            "node.kubernetes.io/unschedulable",
            "",
            "NoSchedule",
        ))
        .obj()
}

/// `node-<x>` with `zone` and `node` labels, as most upstream filtering cases.
fn zoned(name: &str, zone: &str) -> Node {
    make_node(name, &[("zone", zone), ("node", name)])
}

/// Four nodes node-a, node-b in zone1 and node-x, node-y in zone2.
fn four_nodes() -> Vec<Node> {
    vec![
        zoned("node-a", "zone1"),
        zoned("node-b", "zone1"),
        zoned("node-x", "zone2"),
        zoned("node-y", "zone2"),
    ]
}

/// Pods labelled `foo` on the given nodes, named `p-<node suffix><n>`.
fn foo_pods(on: &[(&str, usize)]) -> Vec<Pod> {
    on.iter()
        .flat_map(|&(node, n)| {
            let suffix = node.trim_start_matches("node-").to_string();
            (1..=n).map(move |i| {
                make_pod(&format!("p-{suffix}{i}"))
                    .node(node)
                    .label("foo", "")
                    .obj()
            })
        })
        .collect()
}

fn list_plugin() -> PodTopologySpread {
    PodTopologySpread::new(PodTopologySpreadArgs {
        defaulting_type: DefaultingType::List,
        ..PodTopologySpreadArgs::default()
    })
}

async fn pre_filter(
    plugin: &PodTopologySpread,
    pod: &PodInfo,
    snapshot: &Snapshot,
) -> (CycleState, Status) {
    let mut state = CycleState::new();
    let (_, status) = plugin.pre_filter(&mut state, pod, snapshot).await;
    (state, status)
}

// ---------------------------------------------------------------------------------------
// Filtering.

const S: Code = Code::Success;
const U: Code = Code::Unschedulable;
const UU: Code = Code::UnschedulableAndUnresolvable;

struct FilterCase {
    name: &'static str,
    pod: Pod,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    want: Vec<Code>,
}

#[tokio::test]
async fn filter_matches_upstream_tables() {
    let dns = DO_NOT_SCHEDULE;
    let p = || make_pod("p").label("foo", "");
    let honor = |mut c: TopologySpreadConstraint, affinity: Option<&str>, taints: Option<&str>| {
        c.node_affinity_policy = affinity.map(str::to_string);
        c.node_taints_policy = taints.map(str::to_string);
        c
    };
    let with_min_domains = |mut c: TopologySpreadConstraint, min: i32| {
        c.min_domains = Some(min);
        c
    };
    let foo_nodes = || {
        vec![
            make_node("node-a", &[("node", "node-a"), ("foo", "")]),
            make_node("node-b", &[("node", "node-b"), ("foo", "")]),
            make_node("node-x", &[("node", "node-x"), ("foo", "")]),
            make_node("node-y", &[("node", "node-y")]),
        ]
    };
    let spread_1_1_0_1 = || foo_pods(&[("node-a", 1), ("node-b", 1), ("node-y", 1)]);
    let cases = vec![
        FilterCase {
            name: "TestSingleConstraint: no existing pods",
            pod: p().spread_constraint(1, "zone", dns, foo()).obj(),
            nodes: four_nodes(),
            pods: vec![],
            want: vec![S, S, S, S],
        },
        FilterCase {
            name: "TestSingleConstraint: no existing pods, incoming pod doesn't match itself",
            pod: p().spread_constraint(1, "zone", dns, exists("bar")).obj(),
            nodes: four_nodes(),
            pods: vec![],
            want: vec![S, S, S, S],
        },
        FilterCase {
            name: "TestSingleConstraint: existing pods in a different namespace do not count",
            pod: p().spread_constraint(1, "zone", dns, foo()).obj(),
            nodes: four_nodes(),
            pods: vec![
                make_pod("p-a1")
                    .namespace("ns1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod("p-b1")
                    .namespace("ns2")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod("p-x1").node("node-x").label("foo", "").obj(),
                make_pod("p-y1").node("node-y").label("foo", "").obj(),
            ],
            want: vec![S, S, U, U],
        },
        FilterCase {
            name: "TestSingleConstraint: pods spread across zones as 3/3, all nodes fit",
            pod: p().spread_constraint(1, "zone", dns, foo()).obj(),
            nodes: four_nodes(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            want: vec![S, S, S, S],
        },
        FilterCase {
            name: "TestSingleConstraint: pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            pod: p().spread_constraint(1, "zone", dns, foo()).obj(),
            nodes: vec![
                zoned("node-a", "zone1"),
                make_node("node-b", &[("zon", "zone1"), ("node", "node-b")]),
                zoned("node-x", "zone2"),
                zoned("node-y", "zone2"),
            ],
            pods: foo_pods(&[("node-a", 1), ("node-b", 1), ("node-x", 1), ("node-y", 1)]),
            want: vec![S, UU, U, U],
        },
        FilterCase {
            name: "TestSingleConstraint: pod cannot be scheduled as all nodes don't have label 'rack'",
            pod: p().spread_constraint(1, "rack", dns, foo()).obj(),
            nodes: vec![zoned("node-a", "zone1"), zoned("node-x", "zone2")],
            pods: vec![],
            want: vec![UU, UU],
        },
        FilterCase {
            name: "TestSingleConstraint: pods spread across nodes as 2/1/0/3, only node-x fits",
            pod: p().spread_constraint(1, "node", dns, foo()).obj(),
            nodes: four_nodes(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            want: vec![U, U, S, U],
        },
        FilterCase {
            name: "TestSingleConstraint: pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            pod: p().spread_constraint(2, "node", dns, foo()).obj(),
            nodes: four_nodes(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            want: vec![U, S, S, U],
        },
        FilterCase {
            name: "TestSingleConstraint: pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
            pod: make_pod("p")
                .label("bar", "")
                .spread_constraint(1, "node", dns, foo())
                .obj(),
            nodes: four_nodes(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            want: vec![U, S, S, U],
        },
        FilterCase {
            // Only node-a and node-y count (2/~1~/~0~/3); NodeAffinity's own Filter, not
            // run here, would reject node-b and node-x.
            name: "TestSingleConstraint: incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
            pod: p()
                .node_affinity_in("node", &["node-a", "node-y"])
                .spread_constraint(1, "node", dns, foo())
                .obj(),
            nodes: four_nodes(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            want: vec![S, S, S, U],
        },
        FilterCase {
            name: "TestSingleConstraint: terminating Pods should be excluded",
            pod: p().spread_constraint(1, "node", dns, foo()).obj(),
            nodes: vec![
                make_node("node-a", &[("node", "node-a")]),
                make_node("node-b", &[("node", "node-b")]),
            ],
            pods: vec![
                make_pod("p-a")
                    .node("node-a")
                    .label("foo", "")
                    .terminating()
                    .obj(),
                make_pod("p-b").node("node-b").label("foo", "").obj(),
            ],
            want: vec![S, U],
        },
        FilterCase {
            name: "TestSingleConstraint: pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
            pod: p()
                .topology_spread_constraint(with_min_domains(constraint(2, "node", dns, foo()), 2))
                .obj(),
            nodes: vec![
                make_node("node-a", &[("node", "node-a")]),
                make_node("node-b", &[("node", "node-b")]),
                make_node("node-c", &[("node", "node-c")]),
            ],
            pods: foo_pods(&[("node-a", 2), ("node-b", 2), ("node-c", 1)]),
            want: vec![S, S, S],
        },
        FilterCase {
            name: "TestSingleConstraint: pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
            pod: p()
                .topology_spread_constraint(with_min_domains(constraint(2, "zone", dns, foo()), 3))
                .obj(),
            nodes: four_nodes(),
            pods: foo_pods(&[("node-a", 1), ("node-b", 1), ("node-y", 1)]),
            want: vec![U, U, S, S],
        },
        FilterCase {
            name: "TestSingleConstraint: pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
            pod: p()
                .topology_spread_constraint(with_min_domains(constraint(2, "zone", dns, foo()), 1))
                .obj(),
            nodes: four_nodes(),
            pods: foo_pods(&[("node-a", 1), ("node-b", 1), ("node-y", 1)]),
            want: vec![S, S, S, S],
        },
        FilterCase {
            // 1/1/0/~0~: node-y is excluded by the node selector, so its pod does not
            // count and the minimum is node-x's 0.
            name: "TestSingleConstraint: NodeAffinityPolicy honored with labelSelectors",
            pod: p()
                .node_selector("foo", "")
                .spread_constraint(1, "node", dns, foo())
                .obj(),
            nodes: foo_nodes(),
            pods: spread_1_1_0_1(),
            want: vec![U, U, S, S],
        },
        FilterCase {
            name: "TestSingleConstraint: NodeAffinityPolicy ignored with labelSelectors",
            pod: p()
                .node_selector("foo", "")
                .topology_spread_constraint(honor(
                    constraint(1, "node", dns, foo()),
                    Some("Ignore"),
                    None,
                ))
                .obj(),
            nodes: foo_nodes(),
            pods: spread_1_1_0_1(),
            want: vec![U, U, S, U],
        },
        FilterCase {
            name: "TestSingleConstraint: NodeAffinityPolicy honored with nodeAffinity",
            pod: p()
                .node_affinity_in("foo", &[""])
                .spread_constraint(1, "node", dns, foo())
                .obj(),
            nodes: foo_nodes(),
            pods: spread_1_1_0_1(),
            want: vec![U, U, S, S],
        },
        FilterCase {
            // Upstream repeats the name "NodeAffinityPolicy ignored with labelSelectors"
            // for this nodeAffinity variant.
            name: "TestSingleConstraint: NodeAffinityPolicy ignored with labelSelectors (nodeAffinity variant)",
            pod: p()
                .node_affinity_in("foo", &[""])
                .topology_spread_constraint(honor(
                    constraint(1, "node", dns, foo()),
                    Some("Ignore"),
                    None,
                ))
                .obj(),
            nodes: foo_nodes(),
            pods: spread_1_1_0_1(),
            want: vec![U, U, S, U],
        },
        FilterCase {
            name: "TestSingleConstraint: NodeTaintsPolicy honored",
            pod: p()
                .topology_spread_constraint(honor(
                    constraint(1, "node", dns, foo()),
                    None,
                    Some("Honor"),
                ))
                .obj(),
            nodes: vec![
                make_node("node-a", &[("node", "node-a"), ("foo", "")]),
                make_node("node-b", &[("node", "node-b"), ("foo", "")]),
                make_node("node-x", &[("node", "node-x"), ("foo", "")]),
                tainted("node-y", &[("node", "node-y")]),
            ],
            pods: spread_1_1_0_1(),
            want: vec![U, U, S, S],
        },
        FilterCase {
            name: "TestSingleConstraint: NodeTaintsPolicy ignored",
            pod: p().spread_constraint(1, "node", dns, foo()).obj(),
            nodes: vec![
                make_node("node-a", &[("node", "node-a"), ("foo", "")]),
                make_node("node-b", &[("node", "node-b"), ("foo", "")]),
                make_node("node-x", &[("node", "node-x"), ("foo", "")]),
                tainted("node-y", &[("node", "node-y")]),
            ],
            pods: spread_1_1_0_1(),
            want: vec![U, U, S, U],
        },
        FilterCase {
            name: "TestMultipleConstraints: two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
            pod: p()
                .spread_constraint(1, "zone", dns, foo())
                .spread_constraint(1, "node", dns, foo())
                .obj(),
            nodes: four_nodes(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 3)]),
            want: vec![U, U, S, U],
        },
        FilterCase {
            name: "TestMultipleConstraints: two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
            pod: p()
                .spread_constraint(1, "zone", dns, foo())
                .spread_constraint(1, "node", dns, foo())
                .obj(),
            nodes: four_nodes(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 4)]),
            want: vec![U, U, U, U],
        },
        FilterCase {
            name: "TestMultipleConstraints: Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
            pod: p()
                .label("bar", "")
                .spread_constraint(1, "zone", dns, foo())
                .spread_constraint(1, "node", dns, exists("bar"))
                .obj(),
            nodes: four_nodes(),
            pods: vec![
                make_pod("p-a1").node("node-a").label("foo", "").obj(),
                make_pod("p-y1").node("node-y").label("bar", "").obj(),
            ],
            want: vec![U, U, S, U],
        },
    ];
    assert!(cases.len() >= 15);
    let plugin = list_plugin();
    for case in cases {
        let snapshot = snapshot(case.nodes, case.pods);
        let pod = pod_info(case.pod);
        let (state, status) = pre_filter(&plugin, &pod, &snapshot).await;
        assert!(
            status.is_success(),
            "{}: PreFilter returned {status}",
            case.name
        );
        let got: Vec<Code> = snapshot
            .nodes()
            .iter()
            .map(|node| plugin.filter(&state, &pod, node).code())
            .collect();
        assert_eq!(got, case.want, "case {}", case.name);
    }
}

#[tokio::test]
async fn filter_reasons_are_upstreams() {
    // Upstream TestSingleConstraint "pods spread across zones as 1/2 due to absence of
    // label 'zone' on node-b": the exact statuses of node-b and node-x.
    let pod = pod_info(
        make_pod("p")
            .label("foo", "")
            .spread_constraint(1, "zone", DO_NOT_SCHEDULE, foo())
            .obj(),
    );
    let snapshot = snapshot(
        vec![
            zoned("node-a", "zone1"),
            make_node("node-b", &[("zon", "zone1")]),
            zoned("node-x", "zone2"),
        ],
        foo_pods(&[("node-a", 1), ("node-x", 2)]),
    );
    let plugin = list_plugin();
    let (state, _) = pre_filter(&plugin, &pod, &snapshot).await;
    let status = |name| plugin.filter(&state, &pod, snapshot.get(name).expect("node"));
    assert_eq!(
        status("node-b"),
        Status::unresolvable(
            "node(s) didn't match pod topology spread constraints (missing required label)"
        )
    );
    assert_eq!(
        status("node-x"),
        Status::unschedulable("node(s) didn't match pod topology spread constraints")
    );
}

#[tokio::test]
async fn match_label_keys_narrow_the_selector_to_the_pods_values() {
    // No upstream filter case; the rule is upstream `filterTopologySpreadConstraints`:
    // with matchLabelKeys [version], only pods with the incoming pod's version count.
    let mut c = constraint(1, "zone", DO_NOT_SCHEDULE, foo());
    c.match_label_keys = Some(vec!["version".into()]);
    let pod = pod_info(
        make_pod("p")
            .label("foo", "")
            .label("version", "v2")
            .topology_spread_constraint(c)
            .obj(),
    );
    // zone1 holds 3 pods of v1 and none of v2: without matchLabelKeys node-a would be
    // rejected (3 + 1 - 0 > 1).
    let mut pods = foo_pods(&[("node-a", 3)]);
    for pod in &mut pods {
        pod.metadata
            .labels
            .as_mut()
            .expect("labelled")
            .insert("version".into(), "v1".into());
    }
    pods.push(
        make_pod("p-x1")
            .node("node-x")
            .label("foo", "")
            .label("version", "v2")
            .obj(),
    );
    let snapshot = snapshot(
        vec![zoned("node-a", "zone1"), zoned("node-x", "zone2")],
        pods,
    );
    let plugin = list_plugin();
    let (state, _) = pre_filter(&plugin, &pod, &snapshot).await;
    let codes: Vec<Code> = snapshot
        .nodes()
        .iter()
        .map(|n| plugin.filter(&state, &pod, n).code())
        .collect();
    assert_eq!(codes, vec![S, U]);
}

#[tokio::test]
async fn pre_filter_skips_without_hard_constraints() {
    // Upstream PreFilter returns Skip when the pod has no DoNotSchedule constraint.
    let pod = pod_info(
        make_pod("p")
            .label("foo", "")
            .spread_constraint(1, "zone", SCHEDULE_ANYWAY, foo())
            .obj(),
    );
    let snapshot = snapshot(four_nodes(), vec![]);
    let (_, status) = pre_filter(&list_plugin(), &pod, &snapshot).await;
    assert_eq!(status.code(), Code::Skip);
}

/// `{domain: count}` per constraint, and the minimum each critical path holds.
fn counts_of(state: &CycleState) -> (Vec<HashMap<String, i64>>, Vec<i64>) {
    let s = state.read::<PreFilterState>().expect("PreFilter state");
    let minima = s.critical_paths.iter().map(|p| p.0[0].match_num).collect();
    (s.tp_value_to_match_num.clone(), minima)
}

fn domains(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[tokio::test]
async fn pre_filter_state_matches_upstream_table() {
    let p = || make_pod("p").label("foo", "");
    let dns = DO_NOT_SCHEDULE;
    let five = || foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 2)]);
    type Case = (
        &'static str,
        Pod,
        Vec<Pod>,
        Vec<Vec<(&'static str, i64)>>,
        Vec<i64>,
    );
    let cases: Vec<Case> = vec![
        (
            "TestPreFilterState: normal case with one spreadConstraint",
            p().spread_constraint(1, "zone", dns, foo()).obj(),
            five(),
            vec![vec![("zone1", 3), ("zone2", 2)]],
            vec![2],
        ),
        (
            "TestPreFilterState: normal case with null label selector",
            p().spread_constraint(1, "zone", dns, None).obj(),
            five(),
            vec![vec![("zone1", 0), ("zone2", 0)]],
            vec![0],
        ),
        (
            "TestPreFilterState: namespace mismatch doesn't count",
            p().spread_constraint(1, "zone", dns, foo()).obj(),
            vec![
                make_pod("p-a1").node("node-a").label("foo", "").obj(),
                make_pod("p-a2")
                    .namespace("ns1")
                    .node("node-a")
                    .label("foo", "")
                    .obj(),
                make_pod("p-b1").node("node-b").label("foo", "").obj(),
                make_pod("p-y1")
                    .namespace("ns2")
                    .node("node-y")
                    .label("foo", "")
                    .obj(),
                make_pod("p-y2").node("node-y").label("foo", "").obj(),
            ],
            vec![vec![("zone1", 2), ("zone2", 1)]],
            vec![1],
        ),
        (
            "TestPreFilterState: normal case with two spreadConstraints",
            p().spread_constraint(1, "zone", dns, foo())
                .spread_constraint(1, "node", dns, foo())
                .obj(),
            foo_pods(&[("node-a", 2), ("node-b", 1), ("node-y", 4)]),
            vec![
                vec![("zone1", 3), ("zone2", 4)],
                vec![("node-a", 2), ("node-b", 1), ("node-x", 0), ("node-y", 4)],
            ],
            vec![3, 0],
        ),
    ];
    let plugin = list_plugin();
    for (name, pod, pods, want_counts, want_minima) in cases {
        let snapshot = snapshot(four_nodes(), pods);
        let (state, status) = pre_filter(&plugin, &pod_info(pod), &snapshot).await;
        assert!(status.is_success(), "{name}: {status}");
        let want: Vec<HashMap<String, i64>> = want_counts.iter().map(|d| domains(d)).collect();
        assert_eq!(counts_of(&state), (want, want_minima), "case {name}");
    }
}

#[tokio::test]
async fn remove_pod_matches_upstream_table() {
    let p = || make_pod("p").label("foo", "");
    let zone = |p: PodWrapper| p.spread_constraint(1, "zone", DO_NOT_SCHEDULE, foo());
    let three = || {
        vec![
            zoned("node-a", "zone1"),
            zoned("node-b", "zone1"),
            zoned("node-x", "zone2"),
        ]
    };
    // (case, preemptor, nodes, existing pods, removed pod, its node, counts, minima)
    type Case = (
        &'static str,
        Pod,
        Vec<Node>,
        Vec<Pod>,
        Pod,
        &'static str,
        Vec<Vec<(&'static str, i64)>>,
        Vec<i64>,
    );
    let cases: Vec<Case> = vec![
        (
            "TestPreFilterStateRemovePod: one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
            zone(p()).obj(),
            three(),
            foo_pods(&[("node-a", 1), ("node-b", 1), ("node-x", 1)]),
            foo_pods(&[("node-a", 1)]).remove(0),
            "node-a",
            vec![vec![("zone1", 1), ("zone2", 1)]],
            vec![1],
        ),
        (
            "TestPreFilterStateRemovePod: one spreadConstraint on node, topologyKeyToMinPodsMap changed",
            zone(p()).obj(),
            four_nodes(),
            foo_pods(&[("node-a", 1), ("node-b", 1), ("node-x", 1), ("node-y", 1)]),
            foo_pods(&[("node-a", 1)]).remove(0),
            "node-a",
            vec![vec![("zone1", 1), ("zone2", 2)]],
            vec![1],
        ),
        (
            "TestPreFilterStateRemovePod: delete an irrelevant pod won't help",
            zone(p()).obj(),
            four_nodes(),
            [
                vec![make_pod("p-a0").node("node-a").label("bar", "").obj()],
                foo_pods(&[("node-a", 1), ("node-b", 1), ("node-x", 1), ("node-y", 1)]),
            ]
            .concat(),
            make_pod("p-a0").node("node-a").label("bar", "").obj(),
            "node-a",
            vec![vec![("zone1", 2), ("zone2", 2)]],
            vec![2],
        ),
        (
            "TestPreFilterStateRemovePod: two spreadConstraints",
            zone(p())
                .spread_constraint(1, "node", DO_NOT_SCHEDULE, foo())
                .obj(),
            three(),
            foo_pods(&[("node-a", 2), ("node-b", 1), ("node-x", 2)]),
            foo_pods(&[("node-x", 1)]).remove(0),
            "node-x",
            vec![
                vec![("zone1", 3), ("zone2", 1)],
                vec![("node-a", 2), ("node-b", 1), ("node-x", 1)],
            ],
            vec![1, 1],
        ),
    ];
    let plugin = list_plugin();
    for (name, preemptor, nodes, pods, removed, node, want_counts, want_minima) in cases {
        let snapshot = snapshot(nodes, pods);
        let preemptor = pod_info(preemptor);
        let (mut state, _) = pre_filter(&plugin, &preemptor, &snapshot).await;
        let node = snapshot.get(node).expect("node");
        let status = plugin.remove_pod(&mut state, &preemptor, &pod_info(removed), node);
        assert!(status.is_success(), "{name}: {status}");
        let want: Vec<HashMap<String, i64>> = want_counts.iter().map(|d| domains(d)).collect();
        assert_eq!(counts_of(&state), (want, want_minima), "case {name}");
    }
}

#[tokio::test]
async fn add_pod_counts_a_matching_pod_in_its_domain() {
    // Upstream TestPreFilterStateAddPod "node a and b both impact current min match":
    // adding a foo pod to node-b makes the node domains 1/1, minimum 1.
    let pod = pod_info(
        make_pod("p")
            .label("foo", "")
            .spread_constraint(1, "node", DO_NOT_SCHEDULE, foo())
            .obj(),
    );
    let snapshot = snapshot(
        vec![zoned("node-a", "zone1"), zoned("node-b", "zone1")],
        foo_pods(&[("node-a", 1)]),
    );
    let plugin = list_plugin();
    let (mut state, _) = pre_filter(&plugin, &pod, &snapshot).await;
    let added = pod_info(make_pod("p-b1").node("node-b").label("foo", "").obj());
    let node_b = snapshot.get("node-b").expect("node");
    assert!(
        plugin
            .add_pod(&mut state, &pod, &added, node_b)
            .is_success()
    );
    assert_eq!(
        counts_of(&state),
        (vec![domains(&[("node-a", 1), ("node-b", 1)])], vec![1])
    );
}

// ---------------------------------------------------------------------------------------
// Scoring.

struct ScoreCase {
    name: &'static str,
    pod: Pod,
    pods: Vec<Pod>,
    /// Feasible nodes.
    nodes: Vec<Node>,
    /// Nodes that failed filtering: their pods still count.
    failed: Vec<Node>,
    want: Vec<i64>,
}

async fn run_scoring(plugin: &PodTopologySpread, case: ScoreCase) -> Vec<i64> {
    let feasible_names: Vec<String> = case
        .nodes
        .iter()
        .map(|n| n.metadata.name.clone().unwrap_or_default())
        .collect();
    let snapshot = snapshot([case.nodes, case.failed].concat(), case.pods);
    let pod = pod_info(case.pod);
    let (mut state, _) = pre_filter(plugin, &pod, &snapshot).await;
    let feasible: Vec<Arc<NodeInfo>> = feasible_names
        .iter()
        .map(|n| snapshot.get(n).expect("node").clone())
        .collect();
    let status = plugin.pre_score(&mut state, &pod, &feasible).await;
    assert!(
        status.is_success(),
        "{}: PreScore returned {status}",
        case.name
    );
    let mut scores = feasible
        .iter()
        .map(|n| plugin.score(&state, &pod, n))
        .collect::<Result<Vec<i64>, Status>>()
        .unwrap_or_else(|s| panic!("{}: Score returned {s}", case.name));
    let status = plugin.normalize_score(&state, &pod, &feasible, &mut scores);
    assert!(
        status.is_success(),
        "{}: NormalizeScore returned {status}",
        case.name
    );
    scores
}

#[tokio::test]
async fn score_matches_upstream_table() {
    let sa = SCHEDULE_ANYWAY;
    let p = || make_pod("p").label("foo", "");
    let host = |name: &str| make_node(name, &[(LABEL_HOSTNAME, name)]);
    let hosts = |names: &[&str]| names.iter().map(|n| host(n)).collect::<Vec<_>>();
    let zone_host =
        |name: &str, zone: &str| make_node(name, &[("zone", zone), (LABEL_HOSTNAME, name)]);
    let abcd = || hosts(&["node-a", "node-b", "node-c", "node-d"]);
    let spread_4_3_2_1 = || foo_pods(&[("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)]);
    let spread_4_2_1_3 = || foo_pods(&[("node-a", 4), ("node-b", 2), ("node-x", 1), ("node-y", 3)]);
    let cases = vec![
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on node, no existing pods",
            pod: p().spread_constraint(1, LABEL_HOSTNAME, sa, foo()).obj(),
            pods: vec![],
            nodes: hosts(&["node-a", "node-b"]),
            failed: vec![],
            want: vec![100, 100],
        },
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on node, only one node is candidate",
            pod: p().spread_constraint(1, LABEL_HOSTNAME, sa, foo()).obj(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1)]),
            nodes: hosts(&["node-a"]),
            failed: hosts(&["node-b"]),
            want: vec![100],
        },
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on node, all nodes have the same number of matching pods",
            pod: p().spread_constraint(1, LABEL_HOSTNAME, sa, foo()).obj(),
            pods: foo_pods(&[("node-a", 1), ("node-b", 1)]),
            nodes: hosts(&["node-a", "node-b"]),
            failed: vec![],
            want: vec![100, 100],
        },
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on node, all 4 nodes are candidates",
            pod: p().spread_constraint(1, LABEL_HOSTNAME, sa, foo()).obj(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-d", 3)]),
            nodes: abcd(),
            failed: vec![],
            want: vec![20, 60, 100, 0],
        },
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on node, null selector",
            pod: p().spread_constraint(1, LABEL_HOSTNAME, sa, None).obj(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-d", 3)]),
            nodes: abcd(),
            failed: vec![],
            want: vec![100, 100, 100, 100],
        },
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on node, all 4 nodes are candidates, maxSkew=2",
            pod: p().spread_constraint(2, LABEL_HOSTNAME, sa, foo()).obj(),
            pods: foo_pods(&[("node-a", 2), ("node-b", 1), ("node-d", 3)]),
            nodes: abcd(),
            failed: vec![],
            want: vec![33, 66, 100, 16],
        },
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on node, all 4 nodes are candidates, maxSkew=3",
            pod: p().spread_constraint(3, LABEL_HOSTNAME, sa, foo()).obj(),
            pods: spread_4_3_2_1(),
            nodes: abcd(),
            failed: vec![],
            want: vec![44, 66, 77, 100],
        },
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on node, 3 out of 4 nodes are candidates",
            pod: p().spread_constraint(1, LABEL_HOSTNAME, sa, foo()).obj(),
            pods: spread_4_2_1_3(),
            nodes: hosts(&["node-a", "node-b", "node-x"]),
            failed: hosts(&["node-y"]),
            want: vec![33, 83, 100],
        },
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
            pod: p().spread_constraint(1, LABEL_HOSTNAME, sa, foo()).obj(),
            pods: spread_4_2_1_3(),
            nodes: vec![
                host("node-a"),
                make_node("node-b", &[("n", "node-b")]),
                host("node-x"),
            ],
            failed: hosts(&["node-y"]),
            want: vec![16, 0, 100],
        },
        ScoreCase {
            name: "TestPodTopologySpreadScore: one constraint on zone, 3 out of 4 nodes are candidates",
            pod: p().spread_constraint(1, "zone", sa, foo()).obj(),
            pods: spread_4_2_1_3(),
            nodes: vec![
                zone_host("node-a", "zone1"),
                zone_host("node-b", "zone1"),
                zone_host("node-x", "zone2"),
            ],
            failed: vec![zone_host("node-y", "zone2")],
            want: vec![75, 75, 100],
        },
    ];
    let plugin = list_plugin();
    for case in cases {
        let name = case.name;
        let want = case.want.clone();
        assert_eq!(run_scoring(&plugin, case).await, want, "case {name}");
    }
}

#[tokio::test]
async fn system_defaults_score_like_a_hostname_constraint() {
    // Upstream TestPodTopologySpreadScore "system defaulting, nodes don't have zone, pods
    // match service": a Service selecting foo; the nodes lack the zone label, which the
    // system defaults tolerate, so only the hostname constraint (maxSkew 3) scores.
    let service_selector: DefaultSelectorFn =
        Arc::new(|_: &Pod| Some(std::iter::once(("foo", "")).collect()));
    let plugin = PodTopologySpread::new(PodTopologySpreadArgs::default())
        .with_default_selector(service_selector);
    let hosts = ["node-a", "node-b", "node-c", "node-d"]
        .iter()
        .map(|n| make_node(n, &[(LABEL_HOSTNAME, n)]))
        .collect();
    let case = ScoreCase {
        name: "system defaulting, nodes don't have zone, pods match service",
        pod: make_pod("p").label("foo", "").obj(),
        pods: foo_pods(&[("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)]),
        nodes: hosts,
        failed: vec![],
        want: vec![],
    };
    assert_eq!(run_scoring(&plugin, case).await, vec![44, 66, 77, 100]);
}

#[tokio::test]
async fn defaults_without_a_derivable_selector_skip_scoring() {
    // Upstream `buildDefaultConstraints`: no workload selects the pod (here: no source of
    // selectors at all), so the system defaults give no constraint and PreScore skips.
    let plugin = PodTopologySpread::new(PodTopologySpreadArgs::default());
    let pod = pod_info(make_pod("p").label("foo", "").obj());
    let snapshot = snapshot(four_nodes(), vec![]);
    let (mut state, status) = pre_filter(&plugin, &pod, &snapshot).await;
    assert_eq!(status.code(), Code::Skip);
    let status = plugin.pre_score(&mut state, &pod, snapshot.nodes()).await;
    assert_eq!(status.code(), Code::Skip);
}

#[test]
fn score_without_pre_score_is_an_error() {
    let pod = pod_info(make_pod("p").obj());
    let node = NodeInfo::new(make_node("node-a", &[])).expect("node");
    let got = list_plugin().score(&CycleState::new(), &pod, &node);
    assert_eq!(got.map_err(|s| s.code()), Err(Code::Error));
    let mut scores = [0];
    let status = list_plugin().normalize_score(&CycleState::new(), &pod, &[], &mut scores);
    assert_eq!(status.code(), Code::Error);
    assert_eq!(MAX_NODE_SCORE, 100);
}

// ---------------------------------------------------------------------------------------
// Args.

const PATH: &str = "spec.pluginConfig.podTopologySpread";

fn errors_of(args: serde_json::Value) -> Vec<FieldError> {
    decode_args::<PodTopologySpreadArgs>(Some(&args), PATH)
        .err()
        .unwrap_or_default()
}

#[test]
fn defaults_are_upstream_v1_defaults() {
    let args = decode_args::<PodTopologySpreadArgs>(None, PATH).expect("defaults are valid");
    assert_eq!(args.defaulting_type, DefaultingType::System);
    assert!(args.default_constraints.is_empty());
    assert_eq!(
        serde_json::to_value(&args).expect("serializable"),
        json!({"defaultConstraints": [], "defaultingType": "System"})
    );
    let plugin = PodTopologySpread::new(args);
    assert_eq!(plugin.default_constraints, system_default_constraints());
    assert_eq!(
        plugin
            .default_constraints
            .iter()
            .map(|c| (
                c.topology_key.as_str(),
                c.max_skew,
                c.when_unsatisfiable.as_str()
            ))
            .collect::<Vec<_>>(),
        vec![
            ("kubernetes.io/hostname", 3, "ScheduleAnyway"),
            ("topology.kubernetes.io/zone", 5, "ScheduleAnyway"),
        ]
    );
}

#[test]
fn validation_matches_upstream_table() {
    let list = |constraints: serde_json::Value| json!({"defaultingType": "List", "defaultConstraints": constraints});
    let zone = |skew: i64, action: &str| json!({"maxSkew": skew, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": action});
    let c0 = format!("{PATH}.defaultConstraints[0]");
    let cases: Vec<(&str, serde_json::Value, Vec<String>)> = vec![
        (
            "upstream TestValidatePodTopologySpreadArgs: valid config",
            list(json!([
                zone(1, "ScheduleAnyway"),
                {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"},
            ])),
            vec![],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: maxSkew less than zero",
            list(json!([zone(-1, "DoNotSchedule")])),
            vec![format!("{c0}.maxSkew")],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: empty topology key",
            list(json!([{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}])),
            vec![format!("{c0}.topologyKey")],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: WhenUnsatisfiable is empty (a decode error here)",
            list(json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": ""}])),
            vec![PATH.to_string()],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: WhenUnsatisfiable contains unsupported action (a decode error here)",
            list(json!([zone(1, "NoSchedule")])),
            vec![PATH.to_string()],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: duplicated constraints",
            list(json!([zone(1, "DoNotSchedule"), zone(2, "DoNotSchedule")])),
            vec![format!("{PATH}.defaultConstraints[1]")],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: label selector present",
            list(json!([{
                "maxSkew": 1, "topologyKey": "key", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"foo": "bar"}},
            }])),
            vec![format!("{c0}.labelSelector")],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: list default constraints, no constraints",
            json!({"defaultingType": "List"}),
            vec![],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: system default constraints",
            json!({"defaultingType": "System"}),
            vec![],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: wrong constraints",
            json!({"defaultingType": "System", "defaultConstraints": [zone(1, "DoNotSchedule")]}),
            vec![format!("{PATH}.defaultingType")],
        ),
        (
            "upstream TestValidatePodTopologySpreadArgs: unknown defaulting type (a decode error here)",
            json!({"defaultingType": "Unknown"}),
            vec![PATH.to_string()],
        ),
    ];
    for (name, args, want) in cases {
        let paths: Vec<String> = errors_of(args).into_iter().map(|e| e.path).collect();
        assert_eq!(paths, want, "case {name}");
    }
}

#[test]
fn validation_errors_read_like_field_errors() {
    let errors = errors_of(json!({
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        ],
    }));
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        vec![
            format!(
                "{PATH}.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range: must be at least 1"
            ),
            format!("{PATH}.defaultConstraints[1]: Duplicate value: \"{{zone, DoNotSchedule}}\""),
        ]
    );
}

#[test]
fn schema_carries_the_bounds_and_rules() {
    let schema =
        serde_json::to_value(schemars::schema_for!(PodTopologySpreadArgs)).expect("schema is JSON");
    let text = schema.to_string();
    assert_eq!(
        schema["$defs"]["DefaultingType"]["enum"],
        json!(["System", "List"]),
        "{text}"
    );
    assert_eq!(
        schema["$defs"]["WhenUnsatisfiable"]["enum"],
        json!(["DoNotSchedule", "ScheduleAnyway"]),
        "{text}"
    );
    let constraint = &schema["$defs"]["DefaultConstraint"];
    assert_eq!(
        constraint["properties"]["maxSkew"]["minimum"],
        json!(1),
        "{text}"
    );
    assert_eq!(
        constraint["properties"]["topologyKey"]["minLength"],
        json!(1),
        "{text}"
    );
    assert_eq!(
        schema["properties"]["defaultConstraints"]["maxItems"],
        json!(MAX_DEFAULT_CONSTRAINTS),
        "{text}"
    );
    let rules = |v: &serde_json::Value| v["x-kubernetes-validations"].to_string();
    assert!(rules(&schema).contains("List"), "{text}");
    assert!(rules(constraint).contains("labelSelector"), "{text}");
    assert!(
        rules(&schema["properties"]["defaultConstraints"]).contains("exists_one"),
        "{text}"
    );
}

/// The `pts-*` corpus files, checked against the default registry plus this plugin
/// (`tests/profiles.rs` checks them against the default registry once the plugin is
/// registered there).
#[test]
fn corpus_files_behave_as_their_headers_say() {
    let mut registry = crate::plugins::default_registry();
    registry.register::<PodTopologySpread>();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/profiles");
    let mut checked = 0;
    for (dir, valid) in [("valid", true), ("invalid", false)] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("corpus directory")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("pts-") && n.ends_with(".yaml"))
            })
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("readable");
            let raw: serde_json::Value = serde_saphyr::from_str(&text).expect("YAML");
            let errors = crate::schema::validate_profile(&raw, &registry).errors;
            let listing: Vec<String> = errors.iter().map(ToString::to_string).collect();
            let mut expected: Vec<(String, String)> = Vec::new();
            for line in text.lines().filter_map(|l| l.strip_prefix("# ")) {
                if let Some(path) = line.strip_prefix("expect-path: ") {
                    expected.push((path.to_string(), String::new()));
                } else if let Some(message) = line.strip_prefix("expect-message: ") {
                    expected.last_mut().expect("path first").1 = message.to_string();
                }
            }
            if valid {
                assert!(errors.is_empty(), "{}: {listing:#?}", file.display());
            } else {
                assert!(!expected.is_empty(), "{}", file.display());
                for (path, message) in &expected {
                    assert!(
                        errors
                            .iter()
                            .any(|e| &e.path == path && e.to_string().contains(message)),
                        "{}: no error at {path} containing {message:?}: {listing:#?}",
                        file.display()
                    );
                }
                assert!(
                    errors
                        .iter()
                        .all(|e| expected.iter().any(|(p, _)| &e.path == p)),
                    "{}: errors at unexpected paths: {listing:#?}",
                    file.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 6, "checked {checked} corpus files");
}

#[test]
fn registry_points_match_the_accessors_and_events() {
    use crate::framework::{ActionType, EventResource};
    let plugin = list_plugin();
    assert!(
        plugin
            .as_pre_filter()
            .is_some_and(|p| p.pre_filter_extensions().is_some())
    );
    assert!(plugin.as_filter().is_some());
    assert!(plugin.as_pre_score().is_some());
    assert!(
        plugin
            .as_score()
            .is_some_and(|s| s.score_extensions().is_some())
    );
    assert!(plugin.as_post_filter().is_none());
    assert_eq!(PodTopologySpread::POINTS.len(), 4);
    let events = plugin.events_to_register().expect("registers events");
    assert!(moves_on(
        &events,
        EventResource::AssignedPod,
        ActionType::DELETE
    ));
    assert!(moves_on(
        &events,
        EventResource::AssignedPod,
        ActionType::UPDATE_POD_LABEL
    ));
    assert!(moves_on(
        &events,
        EventResource::Node,
        ActionType::UPDATE_NODE_TAINT
    ));
    assert!(moves_on(
        &events,
        EventResource::Node,
        ActionType::UPDATE_NODE_LABEL
    ));
    assert!(!moves_on(
        &events,
        EventResource::Node,
        ActionType::UPDATE_NODE_ALLOCATABLE
    ));
    assert!(!moves_on(
        &events,
        EventResource::AssignedPod,
        ActionType::UPDATE_POD_SCALE_DOWN
    ));
}
