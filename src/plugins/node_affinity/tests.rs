use crate::framework::{Plugin, PluginFactory};

use k8s_openapi::api::core::v1::{
    Node, NodeAffinity as NodeAffinitySpec, NodeSelector as NodeSelectorSpec,
    NodeSelectorRequirement, PreferredSchedulingTerm,
};

use super::*;
use crate::framework::{Code, decode_args};
use crate::helpers::node_affinity::node_selector_term_matches;
use crate::testing::moves_on;
use crate::testing::{make_node, make_pod};

const PATH: &str = "spec.pluginConfig.nodeAffinity";

fn req(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.to_string(),
        operator: operator.to_string(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
    }
}

/// A term; an empty list leaves the field unset.
fn term(
    expressions: Vec<NodeSelectorRequirement>,
    fields: Vec<NodeSelectorRequirement>,
) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: (!expressions.is_empty()).then_some(expressions),
        match_fields: (!fields.is_empty()).then_some(fields),
    }
}

fn expressions(reqs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
    term(reqs, vec![])
}

fn name_in(names: &[&str]) -> NodeSelectorRequirement {
    req(OBJECT_NAME_FIELD, "In", names)
}

fn required(terms: Vec<NodeSelectorTerm>) -> NodeAffinitySpec {
    NodeAffinitySpec {
        required_during_scheduling_ignored_during_execution: Some(NodeSelectorSpec {
            node_selector_terms: terms,
        }),
        ..NodeAffinitySpec::default()
    }
}

fn preferred(terms: Vec<(i32, NodeSelectorTerm)>) -> NodeAffinitySpec {
    NodeAffinitySpec {
        preferred_during_scheduling_ignored_during_execution: Some(
            terms
                .into_iter()
                .map(|(weight, preference)| PreferredSchedulingTerm { weight, preference })
                .collect(),
        ),
        ..NodeAffinitySpec::default()
    }
}

fn pod(node_selector: &[(&str, &str)], affinity: Option<NodeAffinitySpec>) -> Pod {
    let pod = node_selector.iter().fold(
        make_pod().name("pod").namespace("default"),
        |pod, (k, v)| pod.node_selector(k, v),
    );
    match affinity {
        Some(affinity) => pod.node_affinity(affinity).obj(),
        None => pod.obj(),
    }
}

fn with_required(terms: Vec<NodeSelectorTerm>) -> Pod {
    pod(&[], Some(required(terms)))
}

/// A node named `name` (nameless when empty) labelled `node_labels`.
fn node(name: &str, node_labels: &[(&str, &str)]) -> Node {
    let node = match name {
        "" => make_node(),
        name => make_node().name(name),
    };
    node_labels
        .iter()
        .fold(node, |node, (k, v)| node.label(k, v))
        .obj()
}

fn plugin(added: Option<NodeAffinitySpec>) -> NodeAffinity {
    NodeAffinity::new(&NodeAffinityArgs {
        added_affinity: added,
    })
    .expect("test args are valid")
}

/// One case of upstream `TestNodeAffinity`.
#[derive(Default)]
struct FilterCase {
    name: &'static str,
    pod: Pod,
    node_name: &'static str,
    labels: Vec<(&'static str, &'static str)>,
    added: Option<NodeAffinitySpec>,
    skip_pre_filter: bool,
    want_pre_filter: Status,
    want_pre_filter_nodes: Option<Vec<&'static str>>,
    want_filter: Status,
}

fn filter_cases() -> Vec<FilterCase> {
    let rejected = || Status::unresolvable(ERR_REASON_POD);
    let foo_bar = vec![("foo", "bar")];
    vec![
        FilterCase {
            name: "missing labels",
            pod: pod(&[("foo", "bar")], None),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "same labels",
            pod: pod(&[("foo", "bar")], None),
            labels: foo_bar.clone(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "node labels are superset",
            pod: pod(&[("foo", "bar")], None),
            labels: vec![("foo", "bar"), ("baz", "blah")],
            ..FilterCase::default()
        },
        FilterCase {
            name: "node labels are subset",
            pod: pod(&[("foo", "bar"), ("baz", "blah")], None),
            labels: foo_bar.clone(),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with matchExpressions using In operator that matches the existing node",
            pod: with_required(vec![expressions(vec![req(
                "foo",
                "In",
                &["bar", "value2"],
            )])]),
            labels: foo_bar.clone(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with matchExpressions using Gt operator that matches the existing node",
            pod: with_required(vec![expressions(vec![req(
                "kernel-version",
                "Gt",
                &["0204"],
            )])]),
            labels: vec![("kernel-version", "0206")],
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with matchExpressions using NotIn operator that matches the existing node",
            pod: with_required(vec![expressions(vec![req(
                "mem-type",
                "NotIn",
                &["DDR", "DDR2"],
            )])]),
            labels: vec![("mem-type", "DDR3")],
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with matchExpressions using Exists operator that matches the existing node",
            pod: with_required(vec![expressions(vec![req("GPU", "Exists", &[])])]),
            labels: vec![("GPU", "NVIDIA-GRID-K1")],
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with affinity that don't match node's labels won't schedule onto the node",
            pod: with_required(vec![expressions(vec![req(
                "foo",
                "In",
                &["value1", "value2"],
            )])]),
            labels: foo_bar.clone(),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
            pod: with_required(vec![NodeSelectorTerm {
                match_expressions: Some(vec![]),
                match_fields: None,
            }]),
            labels: foo_bar.clone(),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with no Affinity will schedule onto a node",
            pod: pod(&[], None),
            labels: foo_bar.clone(),
            want_pre_filter: Status::skip(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with Affinity but nil NodeSelector will schedule onto a node",
            pod: pod(&[], Some(NodeAffinitySpec::default())),
            labels: foo_bar.clone(),
            want_pre_filter: Status::skip(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with multiple matchExpressions ANDed that matches the existing node",
            pod: with_required(vec![expressions(vec![
                req("GPU", "Exists", &[]),
                req("GPU", "NotIn", &["AMD", "INTER"]),
            ])]),
            labels: vec![("GPU", "NVIDIA-GRID-K1")],
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
            pod: with_required(vec![expressions(vec![
                req("GPU", "Exists", &[]),
                req("GPU", "In", &["AMD", "INTER"]),
            ])]),
            labels: vec![("GPU", "NVIDIA-GRID-K1")],
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
            pod: with_required(vec![
                expressions(vec![req("foo", "In", &["bar", "value2"])]),
                expressions(vec![req("diffkey", "In", &["wrong", "value2"])]),
            ]),
            labels: foo_bar.clone(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, will schedule onto the node",
            pod: pod(
                &[("foo", "bar")],
                Some(required(vec![expressions(vec![req("foo", "Exists", &[])])])),
            ),
            labels: foo_bar.clone(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
            pod: pod(
                &[("foo", "bar")],
                Some(required(vec![expressions(vec![req("foo", "Exists", &[])])])),
            ),
            labels: vec![("foo", "barrrrrr")],
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with an invalid value in Affinity term won't be scheduled onto the node",
            pod: with_required(vec![expressions(vec![req(
                "foo",
                "NotIn",
                &["invalid value: ___@#$%^"],
            )])]),
            labels: foo_bar.clone(),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with matchFields using In operator that matches the existing node",
            pod: with_required(vec![term(vec![], vec![name_in(&["node1"])])]),
            node_name: "node1",
            want_pre_filter_nodes: Some(vec!["node1"]),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with matchFields using In operator that does not match the existing node",
            pod: with_required(vec![term(vec![], vec![name_in(&["node1"])])]),
            node_name: "node2",
            want_pre_filter_nodes: Some(vec!["node1"]),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with two terms: matchFields does not match, but matchExpressions matches",
            pod: with_required(vec![
                term(vec![], vec![name_in(&["node1"]), name_in(&["node2"])]),
                expressions(vec![req("foo", "In", &["bar"])]),
            ]),
            node_name: "node2",
            labels: foo_bar.clone(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with one term: matchFields does not match, but matchExpressions matches",
            pod: with_required(vec![term(
                vec![req("foo", "In", &["bar"])],
                vec![name_in(&["node1"])],
            )]),
            node_name: "node2",
            labels: foo_bar.clone(),
            want_pre_filter_nodes: Some(vec!["node1"]),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with one term: both matchFields and matchExpressions match",
            pod: with_required(vec![term(
                vec![req("foo", "In", &["bar"])],
                vec![name_in(&["node1"])],
            )]),
            node_name: "node1",
            labels: foo_bar.clone(),
            want_pre_filter_nodes: Some(vec!["node1"]),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with two terms: both matchFields and matchExpressions do not match",
            pod: with_required(vec![
                term(vec![], vec![name_in(&["node1"])]),
                expressions(vec![req("foo", "In", &["not-match-to-bar"])]),
            ]),
            node_name: "node2",
            labels: foo_bar.clone(),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with two terms of node.Name affinity",
            pod: with_required(vec![
                term(vec![], vec![name_in(&["node1"])]),
                term(vec![], vec![name_in(&["node2"])]),
            ]),
            node_name: "node2",
            want_pre_filter_nodes: Some(vec!["node1", "node2"]),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Pod with two conflicting mach field requirements",
            pod: with_required(vec![term(
                vec![],
                vec![name_in(&["node1"]), name_in(&["node2"])],
            )]),
            node_name: "node2",
            labels: foo_bar.clone(),
            want_pre_filter: Status::unresolvable(ERR_REASON_CONFLICT),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Matches added affinity and Pod's node affinity",
            pod: with_required(vec![expressions(vec![req("zone", "In", &["foo"])])]),
            node_name: "node2",
            labels: vec![("zone", "foo")],
            added: Some(required(vec![term(vec![], vec![name_in(&["node2"])])])),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Matches added affinity but not Pod's node affinity",
            pod: with_required(vec![expressions(vec![req("zone", "In", &["bar"])])]),
            node_name: "node2",
            labels: vec![("zone", "foo")],
            added: Some(required(vec![term(vec![], vec![name_in(&["node2"])])])),
            want_filter: rejected(),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Doesn't match added affinity",
            pod: pod(&[], None),
            node_name: "node2",
            labels: vec![("zone", "foo")],
            added: Some(required(vec![expressions(vec![req(
                "zone",
                "In",
                &["bar"],
            )])])),
            want_filter: Status::unresolvable(ERR_REASON_ENFORCED),
            ..FilterCase::default()
        },
        FilterCase {
            name: "Matches node selector correctly even if PreFilter is not called",
            pod: pod(&[("foo", "bar")], None),
            labels: vec![("foo", "bar"), ("baz", "blah")],
            skip_pre_filter: true,
            ..FilterCase::default()
        },
        FilterCase {
            name: "Matches node affinity correctly even if PreFilter is not called",
            pod: with_required(vec![expressions(vec![
                req("GPU", "Exists", &[]),
                req("GPU", "NotIn", &["AMD", "INTER"]),
            ])]),
            labels: vec![("GPU", "NVIDIA-GRID-K1")],
            skip_pre_filter: true,
            ..FilterCase::default()
        },
    ]
}

#[tokio::test]
async fn pre_filter_and_filter_match_upstream_table() {
    // Every case of upstream `TestNodeAffinity`, in order: PreFilter (unless the case
    // skips it), then Filter regardless of the PreFilter status, as upstream's loop.
    let snapshot = Snapshot::new(vec![]);
    for case in filter_cases() {
        let name = case.name;
        let plugin = plugin(case.added);
        let pod = PodInfo::new(case.pod).expect("test pod is valid");
        let node = NodeInfo::new(node(case.node_name, &case.labels)).expect("valid node");
        let mut state = CycleState::new();
        if !case.skip_pre_filter {
            let (result, status) = plugin.pre_filter(&mut state, &pod, &snapshot).await;
            assert_eq!(
                status, case.want_pre_filter,
                "case {name}: PreFilter status"
            );
            let want_result = case.want_pre_filter_nodes.map(|names| PreFilterResult {
                node_names: Some(names.into_iter().map(String::from).collect()),
            });
            assert_eq!(result, want_result, "case {name}: PreFilterResult");
        }
        let got = plugin.filter(&state, &pod, &node);
        assert_eq!(got, case.want_filter, "case {name}: Filter");
    }
}

#[test]
fn filter_without_node_object_is_an_error() {
    let pod = PodInfo::new(pod(&[("foo", "bar")], None)).expect("valid pod");
    let got = plugin(None).filter(&CycleState::new(), &pod, &NodeInfo::default());
    assert_eq!(got.code(), Code::Error);
}

#[tokio::test]
async fn score_and_normalize_match_upstream_table() {
    // Upstream `TestNodeAffinityPriority`, in order: PreScore (unless the case skips
    // it), Score on every node, NormalizeScore; the expected scores are upstream's.
    let label1 = [("foo", "bar")];
    let label2 = [("key", "value")];
    let label3 = [("az", "az1")];
    let label4 = [("abc", "az11"), ("def", "az22")];
    let label5 = [("foo", "bar"), ("key", "value"), ("az", "az1")];
    let affinity1 = || preferred(vec![(2, expressions(vec![req("foo", "In", &["bar"])]))]);
    let affinity2 = || {
        preferred(vec![
            (2, expressions(vec![req("foo", "In", &["bar"])])),
            (4, expressions(vec![req("key", "In", &["value"])])),
            (
                5,
                expressions(vec![
                    req("foo", "In", &["bar"]),
                    req("key", "In", &["value"]),
                    req("az", "In", &["az1"]),
                ]),
            ),
        ])
    };
    // (case, pod affinity, added affinity, nodes, run PreScore, expected PreScore
    // status, expected normalized scores)
    type Case<'a> = (
        &'static str,
        Option<NodeAffinitySpec>,
        Option<NodeAffinitySpec>,
        Vec<(&'static str, &'a [(&'static str, &'static str)])>,
        bool,
        Code,
        Vec<i64>,
    );
    let cases: Vec<Case> = vec![
        (
            // Upstream's PreScore returns Skip here; Score, if called anyway, gives 0.
            "all nodes are same priority as NodeAffinity is nil",
            None,
            None,
            vec![("node1", &label1), ("node2", &label2), ("node3", &label3)],
            true,
            Code::Skip,
            vec![0, 0, 0],
        ),
        (
            "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
            Some(affinity1()),
            None,
            vec![("node1", &label4), ("node2", &label2), ("node3", &label3)],
            true,
            Code::Success,
            vec![0, 0, 0],
        ),
        (
            "only node1 matches the preferred scheduling requirements of pod",
            Some(affinity1()),
            None,
            vec![("node1", &label1), ("node2", &label2), ("node3", &label3)],
            true,
            Code::Success,
            vec![MAX_NODE_SCORE, 0, 0],
        ),
        (
            "all nodes matches the preferred scheduling requirements of pod but with different priorities",
            Some(affinity2()),
            None,
            vec![("node1", &label1), ("node5", &label5), ("node2", &label2)],
            true,
            Code::Success,
            vec![18, MAX_NODE_SCORE, 36],
        ),
        (
            "added affinity",
            None,
            Some(affinity1()),
            vec![("node1", &label1), ("node2", &label2)],
            true,
            Code::Success,
            vec![MAX_NODE_SCORE, 0],
        ),
        (
            "added affinity and pod has default affinity",
            Some(affinity1()),
            Some(preferred(vec![(
                3,
                expressions(vec![req("key", "In", &["value"])]),
            )])),
            vec![("node1", &label1), ("node2", &label2), ("node3", &label5)],
            true,
            Code::Success,
            vec![40, 60, MAX_NODE_SCORE],
        ),
        (
            "calculate the priorities correctly even if PreScore is not called",
            Some(affinity2()),
            None,
            vec![("node1", &label1), ("node5", &label5), ("node2", &label2)],
            false,
            Code::Success,
            vec![18, MAX_NODE_SCORE, 36],
        ),
    ];
    for (name, affinity, added, nodes, run_pre_score, want_pre_score, want) in cases {
        let plugin = plugin(added);
        let pod = PodInfo::new(pod(&[], affinity)).expect("valid pod");
        let nodes: Vec<Arc<NodeInfo>> = nodes
            .into_iter()
            .map(|(n, l)| Arc::new(NodeInfo::new(node(n, l)).expect("valid node")))
            .collect();
        let mut state = CycleState::new();
        if run_pre_score {
            let status = plugin.pre_score(&mut state, &pod, &nodes).await;
            assert_eq!(status.code(), want_pre_score, "case {name}: PreScore");
        }
        let mut scores = nodes
            .iter()
            .map(|node| plugin.score(&state, &pod, node))
            .collect::<Result<Vec<i64>, Status>>()
            .unwrap_or_else(|status| panic!("case {name}: Score returned {status}"));
        let status = plugin.normalize_score(&state, &pod, &nodes, &mut scores);
        assert!(status.is_success(), "case {name}: NormalizeScore {status}");
        assert_eq!(scores, want, "case {name}");
    }
}

#[tokio::test]
async fn pre_score_rejects_unparsable_preferred_terms() {
    // Upstream PreScore returns the parse error of the pod's preferred terms.
    let bad = preferred(vec![(1, expressions(vec![req("foo", "Gt", &["x"])]))]);
    let pod = PodInfo::new(pod(&[], Some(bad))).expect("valid pod");
    let status = plugin(None)
        .pre_score(&mut CycleState::new(), &pod, &[])
        .await;
    assert_eq!(status.code(), Code::Error);
}

#[test]
fn matching_rules_follow_component_helpers() {
    // berth cases for the rules of component-helpers `nodeaffinity` that upstream's
    // plugin table does not reach: Lt, non-integer labels under Gt/Lt, DoesNotExist,
    // matchFields NotIn and unknown field keys, nameless nodes, invalid operators.
    let n = node("node-a", &[("gen", "7"), ("zone", "z1"), ("rev", "v2")]);
    let cases = [
        (
            "Lt matches a smaller integer",
            req("gen", "Lt", &["8"]),
            true,
        ),
        (
            "Lt rejects an equal integer",
            req("gen", "Lt", &["7"]),
            false,
        ),
        (
            "Gt rejects a label that is not an integer",
            req("rev", "Gt", &["1"]),
            false,
        ),
        (
            "Gt rejects a missing label",
            req("missing", "Gt", &["1"]),
            false,
        ),
        (
            "Gt with a bound that is no label value ('+6') matches nothing",
            req("gen", "Gt", &["+6"]),
            false,
        ),
        (
            "DoesNotExist matches a missing label",
            req("gpu", "DoesNotExist", &[]),
            true,
        ),
        (
            "DoesNotExist rejects a present label",
            req("zone", "DoesNotExist", &[]),
            false,
        ),
        (
            "NotIn matches a missing label",
            req("gpu", "NotIn", &["a"]),
            true,
        ),
        (
            "unknown operator matches nothing",
            req("zone", "Equals", &["z1"]),
            false,
        ),
        (
            "Gt with two values matches nothing",
            req("gen", "Gt", &["1", "2"]),
            false,
        ),
        (
            "In without values matches nothing",
            req("zone", "In", &[]),
            false,
        ),
    ];
    for (name, requirement, want) in cases {
        let t = expressions(vec![requirement]);
        assert_eq!(node_selector_term_matches(&t, &n), want, "case {name}");
    }
    let field_cases = [
        (
            "metadata.name NotIn another name",
            req(OBJECT_NAME_FIELD, "NotIn", &["b"]),
            true,
        ),
        (
            "metadata.name NotIn its name",
            req(OBJECT_NAME_FIELD, "NotIn", &["node-a"]),
            false,
        ),
        (
            "an unknown field reads as empty",
            req("metadata.uid", "In", &["node-a"]),
            false,
        ),
        (
            "matchFields In with two values is invalid",
            name_in(&["node-a", "b"]),
            false,
        ),
        (
            "matchFields Exists is invalid",
            req(OBJECT_NAME_FIELD, "Exists", &[]),
            false,
        ),
    ];
    for (name, requirement, want) in field_cases {
        let t = term(vec![], vec![requirement]);
        assert_eq!(node_selector_term_matches(&t, &n), want, "case {name}");
    }
    // A node without a name has no fields; upstream skips matchFields for it.
    let nameless = node("", &[]);
    assert!(node_selector_term_matches(
        &term(vec![], vec![name_in(&["x"])]),
        &nameless
    ));
    assert!(!node_selector_term_matches(&term(vec![], vec![]), &n));
}

#[test]
fn required_node_affinity_combines_selector_and_terms() {
    // The public API other plugins use (upstream `GetRequiredNodeAffinity(pod).Match`).
    let p = pod(
        &[("disk", "ssd")],
        Some(required(vec![
            expressions(vec![req("zone", "In", &["z1"])]),
            term(vec![], vec![name_in(&["special"])]),
        ])),
    );
    let affinity = RequiredNodeAffinity::new(&p);
    assert!(affinity.matches(&node("a", &[("disk", "ssd"), ("zone", "z1")])));
    assert!(affinity.matches(&node("special", &[("disk", "ssd")])));
    assert!(!affinity.matches(&node("a", &[("zone", "z1")])));
    assert!(!affinity.matches(&node("a", &[("disk", "ssd"), ("zone", "z2")])));
    // No selector and no required terms: every node matches.
    assert!(RequiredNodeAffinity::new(&pod(&[], None)).matches(&node("a", &[])));
    // Required terms that are all empty: no node matches.
    let empty = with_required(vec![NodeSelectorTerm::default()]);
    assert!(!RequiredNodeAffinity::new(&empty).matches(&node("a", &[])));
}

fn errors_of(args: serde_json::Value) -> Vec<String> {
    match decode_args::<NodeAffinityArgs>(Some(&args), PATH) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.into_iter().map(|e| e.path).collect(),
    }
}

#[test]
fn args_validation_matches_upstream_table() {
    use serde_json::json;
    let added = format!("{PATH}.addedAffinity");
    let cases: Vec<(&str, serde_json::Value, Vec<String>)> = vec![
        // upstream TestValidateNodeAffinityArgs "empty"
        ("empty", json!({}), vec![]),
        // upstream "valid added affinity"
        (
            "valid added affinity",
            json!({"addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "label-1", "operator": "In", "values": ["label-1-val"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}}
                ]
            }}),
            vec![],
        ),
        // upstream "invalid added affinity" (berth's preferred path includes
        // `.preference`, the real field)
        (
            "invalid added affinity",
            json!({"addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "invalid/label/key", "operator": "In", "values": ["label-1-val"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1", "node-2"]}]}}
                ]
            }}),
            vec![
                format!(
                    "{added}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key"
                ),
                format!(
                    "{added}.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].values"
                ),
            ],
        ),
        // berth: weights are 1..=100, as the API server requires of pods
        (
            "preferred weights out of range",
            json!({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}},
                {"weight": 101, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}
            ]}}),
            vec![
                format!("{added}.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
                format!("{added}.preferredDuringSchedulingIgnoredDuringExecution[1].weight"),
            ],
        ),
        // berth: the requirement rules of labels.NewRequirement, one per kind
        (
            "operator and values errors",
            json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [
                    {"key": "a", "operator": "Equals", "values": ["x"]},
                    {"key": "a", "operator": "Gt", "values": ["x"]},
                    {"key": "a", "operator": "Exists", "values": ["x"]}
                ]}
            ]}}}),
            vec![
                format!(
                    "{added}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator"
                ),
                format!(
                    "{added}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values[0]"
                ),
                format!(
                    "{added}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values"
                ),
            ],
        ),
    ];
    for (name, args, want) in cases {
        assert_eq!(errors_of(args), want, "case {name}");
    }
}

#[test]
fn args_schema_carries_the_node_affinity_type() {
    let entry = crate::framework::PluginEntry::of::<NodeAffinity>();
    let schema = entry.args.expect("NodeAffinity has args").schema_json();
    let added = &schema["properties"]["addedAffinity"];
    assert!(
        added
            .to_string()
            .contains("requiredDuringSchedulingIgnoredDuringExecution"),
        "addedAffinity schema is k8s-openapi's NodeAffinity: {added}"
    );
}

#[test]
fn args_default_to_no_added_affinity() {
    let args = decode_args::<NodeAffinityArgs>(None, PATH).expect("defaults are valid");
    assert_eq!(args, NodeAffinityArgs::default());
    assert_eq!(
        serde_json::to_value(&args).expect("serializable"),
        serde_json::json!({})
    );
}

#[test]
fn registry_points_match_the_accessors_and_events() {
    let plugin = plugin(None);
    assert!(plugin.as_pre_filter().is_some());
    assert!(plugin.as_filter().is_some());
    assert!(plugin.as_pre_score().is_some());
    assert!(
        plugin
            .as_score()
            .is_some_and(|s| s.score_extensions().is_some())
    );
    assert_eq!(NodeAffinity::POINTS.len(), 4);
    let events = plugin.events_to_register().expect("registers events");
    assert!(moves_on(&events, EventResource::Node, ActionType::ADD));
    assert!(moves_on(
        &events,
        EventResource::Node,
        ActionType::UPDATE_NODE_LABEL
    ));
    assert!(!moves_on(
        &events,
        EventResource::Node,
        ActionType::UPDATE_NODE_TAINT
    ));
    assert!(!moves_on(
        &events,
        EventResource::AssignedPod,
        ActionType::DELETE
    ));
}
