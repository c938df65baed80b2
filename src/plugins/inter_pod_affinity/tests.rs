//! Upstream's tables for InterPodAffinity (`filtering_test.go`, `scoring_test.go`,
//! `validation_pluginargs_test.go`), case by case under upstream's names.
//!
//! Upstream's test pods live in namespace `""`; the API server defaults that to
//! `default`, which is what berth reads, so a term naming namespace `""` names `default`
//! here.

use crate::framework::{Plugin, PluginFactory};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::{Node, Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::filtering::PreFilterState;
use super::*;
use crate::cluster::NamespaceLabels;
use crate::framework::{Code, MAX_NODE_SCORE, decode_args};
use crate::testing::moves_on;
use crate::testing::{PodWrapper, labels, make_node, make_pod, pod_info};

// ---------------------------------------------------------------------------------------
// Builders, after upstream's `st.MakePod()`.

fn req(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
    }
}

/// A term with a `matchExpressions` selector.
fn term(topology_key: &str, expressions: Vec<LabelSelectorRequirement>) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_expressions: Some(expressions),
            ..LabelSelector::default()
        }),
        topology_key: topology_key.into(),
        ..PodAffinityTerm::default()
    }
}

fn with_namespaces(mut t: PodAffinityTerm, namespaces: &[&str]) -> PodAffinityTerm {
    t.namespaces = Some(namespaces.iter().map(|n| n.to_string()).collect());
    t
}

fn with_namespace_selector(
    mut t: PodAffinityTerm,
    expressions: Vec<LabelSelectorRequirement>,
) -> PodAffinityTerm {
    t.namespace_selector = Some(LabelSelector {
        match_expressions: (!expressions.is_empty()).then_some(expressions),
        ..LabelSelector::default()
    });
    t
}

fn weighted(weight: i32, t: PodAffinityTerm) -> WeightedPodAffinityTerm {
    WeightedPodAffinityTerm {
        weight,
        pod_affinity_term: t,
    }
}

static POD_SEQ: AtomicUsize = AtomicUsize::new(0);

/// A pod named `pod-<n>`, `n` counting up, as upstream's unnamed test pods are told apart
/// by their UID.
fn pod() -> PodWrapper {
    let n = POD_SEQ.fetch_add(1, Ordering::Relaxed);
    make_pod().name(&format!("pod-{n}"))
}

fn node(name: &str, pairs: &[(&str, &str)]) -> Node {
    make_node().name(name).labels(pairs).obj()
}

/// Upstream's `namespaces` fixture.
fn team_namespaces() -> Arc<NamespaceLabels> {
    Arc::new(
        [
            ("subteam1.team1", "team1"),
            ("subteam2.team1", "team1"),
            ("subteam1.team2", "team2"),
            ("subteam2.team2", "team2"),
        ]
        .into_iter()
        .map(|(ns, team)| (ns.to_string(), labels(&[("team", team)])))
        .collect(),
    )
}

fn snapshot(nodes: Vec<Node>, pods: Vec<Pod>) -> Snapshot {
    let mut snapshot = Snapshot::from_objects(nodes, pods).expect("valid test objects");
    snapshot.set_namespaces(team_namespaces());
    snapshot
}

/// PreFilter, then Filter on every node unless PreFilter did not succeed.
async fn run_filter(
    plugin: &InterPodAffinity,
    incoming: &Pod,
    snapshot: &Snapshot,
) -> (Status, Vec<Status>) {
    let pod = pod_info(incoming.clone());
    let mut state = CycleState::new();
    let (_, pre) = plugin.pre_filter(&mut state, &pod, snapshot).await;
    if !pre.is_success() {
        return (pre, Vec::new());
    }
    let statuses = snapshot
        .nodes()
        .iter()
        .map(|n| plugin.filter(&state, &pod, n))
        .collect();
    (pre, statuses)
}

const AFFINITY: &str = ERR_REASON_AFFINITY_RULES_NOT_MATCH;
const ANTI: &str = ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH;
const EXISTING: &str = ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH;

fn ok() -> Status {
    Status::success()
}
fn unresolvable(reason: &str) -> Status {
    Status::unresolvable(reason)
}
fn unschedulable(reason: &str) -> Status {
    Status::unschedulable(reason)
}

// ---------------------------------------------------------------------------------------
// Filtering.

#[tokio::test]
async fn required_affinity_single_node_matches_upstream_table() {
    // Upstream `TestRequiredAffinitySingleNode`, in order. `Err(status)` is the expected
    // PreFilter status; `Ok(status)` the expected Filter status on node1.
    let security_scan = [("service", "securityscan")];
    let s1 = [("security", "S1")];
    let node1 = || node("node1", &[("region", "r1"), ("zone", "z11")]);
    let existing = || pod().labels(&security_scan).node("node1").obj();
    let in_team1 = || vec![req("team", "In", &["team1"])];
    let scan_term = |topology: &str| {
        term(
            topology,
            vec![req("service", "In", &["securityscan", "value2"])],
        )
    };
    type Case = (&'static str, Pod, Vec<Pod>, Result<Status, Status>);
    let cases: Vec<Case> = vec![
        (
            "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
            pod().obj(),
            vec![],
            Err(Status::skip()),
        ),
        (
            "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
            pod()
                .labels(&s1)
                .pod_affinity_in("service", "region", &["securityscan", "value2"])
                .obj(),
            vec![existing()],
            Ok(ok()),
        ),
        (
            "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
            pod()
                .labels(&s1)
                .pod_affinity_not_in("service", "region", &["securityscan3", "value3"])
                .obj(),
            vec![existing()],
            Ok(ok()),
        ),
        (
            "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
            pod()
                .labels(&s1)
                .required_pod_affinity(with_namespaces(scan_term(""), &["DiffNameSpace"]))
                .obj(),
            vec![
                pod()
                    .namespace("ns")
                    .labels(&security_scan)
                    .node("node1")
                    .obj(),
            ],
            Ok(unresolvable(AFFINITY)),
        ),
        (
            "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
            pod()
                .labels(&security_scan)
                .pod_affinity_in("service", "", &["antivirusscan", "value2"])
                .obj(),
            vec![existing()],
            Ok(unresolvable(AFFINITY)),
        ),
        (
            "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
            pod()
                .labels(&s1)
                .required_pod_affinity(term(
                    "region",
                    vec![
                        req("service", "Exists", &[]),
                        req("wrongkey", "DoesNotExist", &[]),
                    ],
                ))
                .required_pod_affinity(term(
                    "region",
                    vec![
                        req("service", "In", &["securityscan"]),
                        req("service", "NotIn", &["WrongValue"]),
                    ],
                ))
                .obj(),
            vec![existing()],
            Ok(ok()),
        ),
        (
            "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
            pod()
                .labels(&s1)
                .required_pod_affinity(term(
                    "region",
                    vec![
                        req("service", "Exists", &[]),
                        req("wrongkey", "DoesNotExist", &[]),
                    ],
                ))
                .required_pod_affinity(term(
                    "region",
                    vec![
                        req("service", "In", &["securityscan2"]),
                        req("service", "NotIn", &["WrongValue"]),
                    ],
                ))
                .obj(),
            vec![existing()],
            Ok(unresolvable(AFFINITY)),
        ),
        (
            "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
            pod()
                .labels(&s1)
                .pod_affinity_in("service", "region", &["securityscan", "value2"])
                .pod_anti_affinity_in("service", "node", &["antivirusscan", "value2"])
                .obj(),
            vec![existing()],
            Ok(ok()),
        ),
        (
            "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
            pod()
                .labels(&s1)
                .pod_affinity_in("service", "region", &["securityscan", "value2"])
                .pod_anti_affinity_in("service", "node", &["antivirusscan", "value2"])
                .obj(),
            vec![
                pod()
                    .node("node1")
                    .labels(&security_scan)
                    .pod_anti_affinity_in("service", "node", &["antivirusscan", "value2"])
                    .obj(),
            ],
            Ok(ok()),
        ),
        (
            "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
            pod()
                .labels(&s1)
                .pod_affinity_in("service", "region", &["securityscan", "value2"])
                .pod_anti_affinity_in("service", "zone", &["securityscan", "value2"])
                .obj(),
            vec![existing()],
            Ok(unschedulable(ANTI)),
        ),
        (
            "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            pod()
                .labels(&security_scan)
                .pod_affinity_in("service", "region", &["securityscan", "value2"])
                .pod_anti_affinity_in("service", "node", &["antivirusscan", "value2"])
                .obj(),
            vec![
                pod()
                    .labels(&security_scan)
                    .node("node1")
                    .pod_anti_affinity_in("service", "zone", &["securityscan", "value2"])
                    .obj(),
            ],
            Ok(unschedulable(EXISTING)),
        ),
        (
            "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
            pod()
                .labels(&security_scan)
                .pod_affinity_not_in("service", "region", &["securityscan", "value2"])
                .obj(),
            vec![pod().labels(&security_scan).node("node2").obj()],
            Ok(unresolvable(AFFINITY)),
        ),
        (
            "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            pod().labels(&security_scan).obj(),
            vec![
                pod()
                    .node("node1")
                    .labels(&security_scan)
                    .pod_anti_affinity_in("service", "zone", &["securityscan", "value2"])
                    .obj(),
            ],
            Ok(unschedulable(EXISTING)),
        ),
        (
            "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
            pod().labels(&security_scan).obj(),
            vec![
                pod()
                    .node("node1")
                    .labels(&security_scan)
                    .pod_anti_affinity_not_in("service", "zone", &["securityscan", "value2"])
                    .obj(),
            ],
            Err(Status::skip()),
        ),
        (
            "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
            pod()
                .labels(&security_scan)
                .pod_anti_affinity_exists("service", "region")
                .pod_anti_affinity_exists("security", "region")
                .obj(),
            vec![
                pod()
                    .node("node1")
                    .labels(&s1)
                    .pod_anti_affinity_exists("security", "zone")
                    .obj(),
            ],
            Ok(unschedulable(ANTI)),
        ),
        (
            "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
            pod()
                .labels(&security_scan)
                .pod_anti_affinity_exists("service", "zone")
                .pod_anti_affinity_exists("security", "zone")
                .obj(),
            vec![
                pod()
                    .node("node1")
                    .labels(&s1)
                    .pod_anti_affinity_exists("security", "zone")
                    .obj(),
            ],
            Ok(unschedulable(ANTI)),
        ),
        (
            "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
            pod()
                .labels(&s1)
                .pod_anti_affinity_exists("security", "zone")
                .obj(),
            vec![
                pod()
                    .node("node1")
                    .labels(&security_scan)
                    .pod_anti_affinity_exists("service", "zone")
                    .pod_anti_affinity_exists("security", "zone")
                    .obj(),
            ],
            Ok(unschedulable(EXISTING)),
        ),
        (
            "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
            pod()
                .labels(&[("abc", ""), ("xyz", "")])
                .pod_anti_affinity_exists("abc", "zone")
                .pod_anti_affinity_exists("def", "zone")
                .obj(),
            vec![
                pod()
                    .node("node1")
                    .labels(&[("def", ""), ("xyz", "")])
                    .pod_anti_affinity_exists("abc", "zone")
                    .pod_anti_affinity_exists("def", "zone")
                    .obj(),
            ],
            Ok(unschedulable(ANTI)),
        ),
        (
            "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
            pod()
                .labels(&[("def", ""), ("xyz", "")])
                .pod_anti_affinity_exists("abc", "zone")
                .pod_anti_affinity_exists("def", "zone")
                .obj(),
            vec![
                pod()
                    .node("node1")
                    .labels(&[("abc", ""), ("xyz", "")])
                    .pod_anti_affinity_exists("abc", "zone")
                    .pod_anti_affinity_exists("def", "zone")
                    .obj(),
            ],
            Ok(unschedulable(ANTI)),
        ),
        (
            "PodAffinity fails PreFilter with an invalid affinity label syntax",
            pod()
                .labels(&security_scan)
                .pod_affinity_in("service", "region", &["{{.bad-value.}}"])
                .pod_affinity_in("service", "node", &["antivirusscan", "value2"])
                .obj(),
            vec![],
            Err(unresolvable(
                "parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: \"{{.bad-value.}}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            )),
        ),
        (
            "affinity with NamespaceSelector",
            pod()
                .labels(&s1)
                .required_pod_affinity(with_namespace_selector(scan_term("region"), in_team1()))
                .obj(),
            vec![
                pod()
                    .namespace("subteam1.team1")
                    .labels(&security_scan)
                    .node("node1")
                    .obj(),
            ],
            Ok(ok()),
        ),
        (
            "affinity with non-matching NamespaceSelector",
            pod()
                .labels(&s1)
                .required_pod_affinity(with_namespace_selector(scan_term("region"), in_team1()))
                .obj(),
            vec![
                pod()
                    .namespace("subteam1.team2")
                    .labels(&security_scan)
                    .node("node1")
                    .obj(),
            ],
            Ok(unresolvable(AFFINITY)),
        ),
        (
            "anti-affinity with matching NamespaceSelector",
            pod()
                .namespace("subteam1.team1")
                .labels(&s1)
                .required_pod_anti_affinity(with_namespace_selector(scan_term("zone"), in_team1()))
                .obj(),
            vec![
                pod()
                    .namespace("subteam2.team1")
                    .labels(&security_scan)
                    .node("node1")
                    .obj(),
            ],
            Ok(unschedulable(ANTI)),
        ),
        (
            "anti-affinity with matching all NamespaceSelector",
            pod()
                .namespace("subteam1.team1")
                .labels(&s1)
                .required_pod_anti_affinity(with_namespace_selector(scan_term("zone"), vec![]))
                .obj(),
            vec![
                pod()
                    .namespace("subteam2.team1")
                    .labels(&security_scan)
                    .node("node1")
                    .obj(),
            ],
            Ok(unschedulable(ANTI)),
        ),
        (
            "anti-affinity with non-matching NamespaceSelector",
            pod()
                .namespace("subteam1.team1")
                .labels(&s1)
                .required_pod_anti_affinity(with_namespace_selector(scan_term("zone"), in_team1()))
                .obj(),
            vec![
                pod()
                    .namespace("subteam1.team2")
                    .labels(&security_scan)
                    .node("node1")
                    .obj(),
            ],
            Ok(ok()),
        ),
    ];
    let plugin = InterPodAffinity::default();
    for (name, incoming, pods, want) in cases {
        let snapshot = snapshot(vec![node1()], pods);
        let (pre, filtered) = run_filter(&plugin, &incoming, &snapshot).await;
        match want {
            Err(want_pre) => assert_eq!(pre, want_pre, "case {name}: PreFilter"),
            Ok(want_filter) => {
                assert!(pre.is_success(), "case {name}: PreFilter returned {pre}");
                assert_eq!(filtered, vec![want_filter], "case {name}: Filter");
            }
        }
    }
}

#[tokio::test]
async fn required_affinity_multiple_nodes_matches_upstream_table() {
    // Upstream `TestRequiredAffinityMultipleNodes`, in order; statuses per node in the
    // given node order. `pre_skip` marks cases whose PreFilter returns Skip (Filter is
    // then not run; upstream expects every node to pass).
    let china = [("region", "China")];
    let china_az1 = [("region", "China"), ("az", "az1")];
    let india = [("region", "India")];
    let host = |name: &'static str, zone: &'static str| {
        node(
            name,
            &[("region", "r1"), ("zone", zone), ("hostname", name)],
        )
    };
    type Case = (&'static str, Pod, Vec<Pod>, Vec<Node>, bool, Vec<Status>);
    let cases: Vec<Case> = vec![
        (
            "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
            pod().pod_affinity_in("foo", "region", &["bar"]).obj(),
            vec![pod().node("node1").labels(&[("foo", "bar")]).obj()],
            vec![
                node("node1", &china),
                node("node2", &china_az1),
                node("node3", &india),
            ],
            false,
            vec![ok(), ok(), unresolvable(AFFINITY)],
        ),
        (
            "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
            pod()
                .labels(&[("foo", "bar"), ("service", "securityscan")])
                .pod_affinity_in("foo", "zone", &["bar"])
                .pod_affinity_in("service", "zone", &["securityscan"])
                .obj(),
            vec![pod().node("nodeA").labels(&[("foo", "bar")]).obj()],
            vec![
                node("nodeA", &[("zone", "az1"), ("hostname", "h1")]),
                node("nodeB", &[("zone", "az2"), ("hostname", "h2")]),
            ],
            false,
            vec![ok(), ok()],
        ),
        (
            "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
            pod()
                .labels(&[("foo", "bar"), ("service", "securityscan")])
                .pod_affinity_in("foo", "zone", &["bar"])
                .pod_affinity_in("service", "zone", &["securityscan"])
                .obj(),
            vec![pod().node("nodeA").labels(&[("foo", "bar")]).obj()],
            vec![
                node("nodeA", &[("zoneLabel", "az1"), ("hostname", "h1")]),
                node("nodeB", &[("zoneLabel", "az2"), ("hostname", "h2")]),
            ],
            false,
            vec![unresolvable(AFFINITY), unresolvable(AFFINITY)],
        ),
        (
            "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
            pod().pod_anti_affinity_in("foo", "region", &["abc"]).obj(),
            vec![pod().node("nodeA").labels(&[("foo", "abc")]).obj()],
            vec![
                node("nodeA", &[("region", "r1"), ("hostname", "nodeA")]),
                node("nodeB", &[("region", "r1"), ("hostname", "nodeB")]),
            ],
            false,
            vec![unschedulable(ANTI), unschedulable(ANTI)],
        ),
        (
            "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
            pod()
                .pod_anti_affinity_in("foo", "region", &["abc"])
                .pod_anti_affinity_in("service", "zone", &["securityscan"])
                .obj(),
            vec![
                pod()
                    .node("nodeA")
                    .labels(&[("foo", "abc"), ("service", "securityscan")])
                    .obj(),
            ],
            vec![
                node(
                    "nodeA",
                    &[("region", "r1"), ("zone", "z1"), ("hostname", "nodeA")],
                ),
                node(
                    "nodeB",
                    &[("region", "r1"), ("zone", "z2"), ("hostname", "nodeB")],
                ),
            ],
            false,
            vec![unschedulable(ANTI), unschedulable(ANTI)],
        ),
        (
            "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
            pod().pod_anti_affinity_in("foo", "region", &["abc"]).obj(),
            vec![pod().node("nodeA").labels(&[("foo", "abc")]).obj()],
            vec![
                node("nodeA", &china),
                node("nodeB", &china_az1),
                node("nodeC", &india),
            ],
            false,
            vec![unschedulable(ANTI), unschedulable(ANTI), ok()],
        ),
        (
            "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
            pod()
                .namespace("NS1")
                .labels(&[("foo", "123")])
                .pod_anti_affinity_in("foo", "region", &["bar"])
                .obj(),
            vec![
                pod()
                    .node("nodeA")
                    .namespace("NS1")
                    .labels(&[("foo", "bar")])
                    .obj(),
                pod()
                    .node("nodeC")
                    .namespace("NS2")
                    .pod_anti_affinity_in("foo", "region", &["123"])
                    .obj(),
            ],
            vec![
                node("nodeA", &china),
                node("nodeB", &china_az1),
                node("nodeC", &india),
            ],
            false,
            vec![unschedulable(ANTI), unschedulable(ANTI), ok()],
        ),
        (
            "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
            pod().labels(&[("foo", "")]).obj(),
            vec![
                pod()
                    .node("nodeA")
                    .pod_anti_affinity_exists("foo", "invalid-node-label")
                    .obj(),
            ],
            vec![host("nodeA", "z1"), host("nodeB", "z1")],
            true,
            vec![],
        ),
        (
            "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
            pod()
                .node("nodeA")
                .pod_anti_affinity_exists("foo", "invalid-node-label")
                .obj(),
            vec![pod().node("nodeA").labels(&[("foo", "")]).obj()],
            vec![host("nodeA", "z1"), host("nodeB", "z1")],
            false,
            vec![ok(), ok()],
        ),
        (
            "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
            pod().labels(&[("foo", ""), ("bar", "")]).obj(),
            vec![
                pod()
                    .node("nodeA")
                    .pod_anti_affinity_exists("foo", "zone")
                    .obj(),
                pod()
                    .node("nodeA")
                    .pod_anti_affinity_exists("bar", "region")
                    .obj(),
            ],
            vec![host("nodeA", "z1"), host("nodeB", "z2")],
            false,
            vec![unschedulable(EXISTING), unschedulable(EXISTING)],
        ),
        (
            "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
            pod()
                .pod_anti_affinity_exists("foo", "zone")
                .pod_anti_affinity_exists("bar", "region")
                .obj(),
            vec![
                pod().node("nodeA").labels(&[("foo", "")]).obj(),
                pod().node("nodeB").labels(&[("bar", "")]).obj(),
            ],
            vec![host("nodeA", "z1"), host("nodeB", "z2")],
            false,
            vec![unschedulable(ANTI), unschedulable(ANTI)],
        ),
        (
            "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
            pod().labels(&[("foo", ""), ("bar", "")]).obj(),
            vec![
                pod()
                    .node("nodeA")
                    .pod_anti_affinity_exists("foo", "invalid-node-label")
                    .pod_anti_affinity_exists("bar", "zone")
                    .obj(),
            ],
            vec![host("nodeA", "z1"), host("nodeB", "z2")],
            false,
            vec![unschedulable(EXISTING), ok()],
        ),
        (
            "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
            pod()
                .pod_anti_affinity_exists("foo", "invalid-node-label")
                .pod_anti_affinity_exists("bar", "zone")
                .obj(),
            vec![
                pod()
                    .node("nodeA")
                    .labels(&[("foo", ""), ("bar", "")])
                    .obj(),
            ],
            vec![host("nodeA", "z1"), host("nodeB", "z2")],
            false,
            vec![unschedulable(ANTI), ok()],
        ),
        (
            "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
            pod().labels(&[("foo", ""), ("bar", "")]).obj(),
            vec![
                pod()
                    .node("nodeA")
                    .pod_anti_affinity_exists("foo", "region")
                    .pod_anti_affinity_exists("bar", "zone")
                    .obj(),
            ],
            vec![host("nodeA", "z1"), host("nodeB", "z2")],
            false,
            vec![unschedulable(EXISTING), unschedulable(EXISTING)],
        ),
        (
            "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
            pod()
                .pod_anti_affinity_exists("foo", "region")
                .pod_anti_affinity_exists("bar", "zone")
                .obj(),
            vec![
                pod()
                    .node("nodeA")
                    .labels(&[("foo", ""), ("bar", "")])
                    .obj(),
            ],
            vec![host("nodeA", "z1"), host("nodeB", "z2")],
            false,
            vec![unschedulable(ANTI), unschedulable(ANTI)],
        ),
        (
            "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
            pod().labels(&[("foo", ""), ("bar", "")]).obj(),
            vec![
                pod()
                    .node("nodeA")
                    .pod_anti_affinity_exists("foo", "zone")
                    .pod_anti_affinity_exists("labelA", "zone")
                    .obj(),
                pod()
                    .node("nodeB")
                    .pod_anti_affinity_exists("bar", "zone")
                    .pod_anti_affinity_exists("labelB", "zone")
                    .obj(),
            ],
            vec![
                host("nodeA", "z1"),
                host("nodeB", "z2"),
                host("nodeC", "z3"),
            ],
            false,
            vec![unschedulable(EXISTING), unschedulable(EXISTING), ok()],
        ),
        (
            "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
            pod()
                .pod_affinity_exists("foo", "region")
                .pod_affinity_exists("bar", "zone")
                .obj(),
            vec![
                pod()
                    .labels(&[("foo", ""), ("bar", "")])
                    .node("nodeA")
                    .obj(),
            ],
            vec![host("nodeA", "z1"), host("nodeB", "z1")],
            false,
            vec![ok(), ok()],
        ),
        (
            "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match, and the match logic should be satisfied on the same pod",
            pod()
                .pod_affinity_exists("foo", "region")
                .pod_affinity_exists("bar", "zone")
                .obj(),
            vec![
                pod().node("nodeA").labels(&[("foo", "")]).obj(),
                pod().node("nodeB").labels(&[("bar", "")]).obj(),
            ],
            vec![host("nodeA", "z1"), host("nodeB", "z2")],
            false,
            vec![unresolvable(AFFINITY), unresolvable(AFFINITY)],
        ),
    ];
    let plugin = InterPodAffinity::default();
    for (name, incoming, pods, nodes, pre_skip, want) in cases {
        let snapshot = snapshot(nodes, pods);
        let (pre, filtered) = run_filter(&plugin, &incoming, &snapshot).await;
        if pre_skip {
            assert_eq!(pre, Status::skip(), "case {name}: PreFilter");
            continue;
        }
        assert!(pre.is_success(), "case {name}: PreFilter returned {pre}");
        assert_eq!(filtered, want, "case {name}: Filter");
    }
}

#[test]
fn filter_without_pre_filter_is_an_error() {
    // Upstream `TestPreFilterDisabled`.
    let pod = pod_info(pod().obj());
    let node_info = NodeInfo::new(node("node1", &[])).expect("valid node");
    let got = InterPodAffinity::default().filter(&CycleState::new(), &pod, &node_info);
    assert_eq!(got.code(), Code::Error);
    assert_eq!(
        got.message(),
        "error reading \"PreFilterInterPodAffinity\" from cycleState: not found"
    );
}

#[tokio::test]
async fn add_and_remove_pod_update_the_counts_like_upstream() {
    // Upstream `TestPreFilterStateAddRemovePod`, its first two cases: after AddPod the
    // counts of the incoming pod's terms are upstream's; RemovePod restores PreFilter's.
    let foo_bar = [("foo", "bar")];
    let anti_foo_bar = |b: PodWrapper| b.pod_anti_affinity_in("foo", "region", &["bar"]);
    let anti_complex = |b: PodWrapper| {
        b.pod_anti_affinity_in("foo", "region", &["bar", "buzz"])
            .pod_anti_affinity_not_in("service", "zone", &["bar", "security", "test"])
    };
    let nodes = || {
        vec![
            node("nodeA", &[("region", "r1"), ("zone", "z11")]),
            node("nodeB", &[("region", "r1"), ("zone", "z12")]),
            node("nodeC", &[("region", "r2"), ("zone", "z21")]),
        ]
    };
    let pair = |k: &str, v: &str, n: i64| ((k.to_string(), v.to_string()), n);
    type Case = (
        &'static str,
        Pod,
        Pod,
        &'static str,
        Vec<((String, String), i64)>,
    );
    let cases: Vec<Case> = vec![
        (
            "preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
            anti_foo_bar(pod().labels(&foo_bar)).obj(),
            anti_foo_bar(pod().labels(&foo_bar).node("nodeB")).obj(),
            "nodeB",
            vec![pair("region", "r1", 2)],
        ),
        (
            "preFilterState anti-affinity terms are updated correctly after adding and removing a pod (complex terms)",
            anti_complex(pod().labels(&foo_bar)).obj(),
            anti_complex(pod().labels(&foo_bar).node("nodeA")).obj(),
            "nodeA",
            vec![
                pair("region", "r1", 2),
                pair("zone", "z11", 2),
                pair("zone", "z21", 1),
            ],
        ),
    ];
    let plugin = InterPodAffinity::default();
    for (name, pending, added, added_node, want_anti) in cases {
        let existing = vec![
            pod().labels(&foo_bar).node("nodeA").obj(),
            anti_foo_bar(pod().node("nodeC")).obj(),
        ];
        let snapshot = snapshot(nodes(), existing);
        let pending = pod_info(pending);
        let mut state = CycleState::new();
        let (_, pre) = plugin.pre_filter(&mut state, &pending, &snapshot).await;
        assert!(pre.is_success(), "case {name}: PreFilter returned {pre}");
        let before = state.read::<PreFilterState>().expect("state").clone();
        let node_info = snapshot.get(added_node).expect("node");
        let added = pod_info(added);
        let status = plugin.add_pod(&mut state, &pending, &added, node_info);
        assert!(status.is_success(), "case {name}: AddPod returned {status}");
        let after = state.read::<PreFilterState>().expect("state");
        assert_eq!(
            after.anti_affinity_counts.pairs(),
            want_anti.into_iter().collect(),
            "case {name}"
        );
        assert!(
            after.affinity_counts.is_empty(),
            "case {name}: affinity counts"
        );
        let status = plugin.remove_pod(&mut state, &pending, &added, node_info);
        assert!(
            status.is_success(),
            "case {name}: RemovePod returned {status}"
        );
        let restored = state.read::<PreFilterState>().expect("state");
        assert_eq!(
            restored.anti_affinity_counts, before.anti_affinity_counts,
            "case {name}"
        );
        assert_eq!(
            restored.existing_anti_affinity_counts, before.existing_anti_affinity_counts,
            "case {name}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Scoring.

/// PreFilter (as a cycle would), then PreScore on every node, Score, NormalizeScore.
/// `Err` carries a non-Success PreScore status.
async fn run_score(
    plugin: &InterPodAffinity,
    incoming: &Pod,
    snapshot: &Snapshot,
) -> Result<Vec<i64>, Status> {
    let pod = pod_info(incoming.clone());
    let mut state = CycleState::new();
    let (_, pre) = plugin.pre_filter(&mut state, &pod, snapshot).await;
    if pre.is_rejected() {
        // Upstream's scoring table calls PreScore directly; without PreFilter's input it
        // parses the pod itself.
        state = CycleState::new();
    }
    let nodes = snapshot.nodes();
    let status = plugin.pre_score(&mut state, &pod, nodes).await;
    if !status.is_success() {
        return Err(status);
    }
    let mut scores = nodes
        .iter()
        .map(|n| plugin.score(&state, &pod, n))
        .collect::<Result<Vec<_>, _>>()?;
    let status = plugin.normalize_score(&state, &pod, nodes, &mut scores);
    assert!(status.is_success(), "NormalizeScore returned {status}");
    Ok(scores)
}

#[tokio::test]
async fn preferred_affinity_matches_upstream_table() {
    // Upstream `TestPreferredAffinity`, in order. `Err(code)` is the expected PreScore
    // status code; for the invalid-selector cases the message must also name the value.
    let china = [("region", "China")];
    let india = [("region", "India")];
    let az1 = [("az", "az1")];
    let az2 = [("az", "az2")];
    let china_az1 = [("region", "China"), ("az", "az1")];
    let s1 = [("security", "S1")];
    let s2 = [("security", "S2")];
    let sec_in = |v: &str, topology: &str| term(topology, vec![req("security", "In", &[v])]);
    let stay_with_s1_in_region =
        |b: PodWrapper| b.preferred_pod_affinity(weighted(5, sec_in("S1", "region")));
    let stay_with_s2_in_region =
        |b: PodWrapper| b.preferred_pod_affinity(weighted(6, sec_in("S2", "region")));
    let affinity3 = |b: PodWrapper| {
        b.preferred_pod_affinity(weighted(
            8,
            term(
                "region",
                vec![
                    req("security", "NotIn", &["S1"]),
                    req("security", "In", &["S2"]),
                ],
            ),
        ))
        .preferred_pod_affinity(weighted(
            2,
            term(
                "region",
                vec![
                    req("security", "Exists", &[]),
                    req("wrongkey", "DoesNotExist", &[]),
                ],
            ),
        ))
    };
    let hard_affinity = |b: PodWrapper| {
        b.required_pod_affinity(term(
            "region",
            vec![req("security", "In", &["S1", "value2"])],
        ))
        .required_pod_affinity(term(
            "region",
            vec![
                req("security", "Exists", &[]),
                req("wrongkey", "DoesNotExist", &[]),
            ],
        ))
    };
    let away_from_s1_in_az =
        |b: PodWrapper| b.preferred_pod_anti_affinity(weighted(5, sec_in("S1", "az")));
    let away_from_s2_in_az =
        |b: PodWrapper| b.preferred_pod_anti_affinity(weighted(5, sec_in("S2", "az")));
    let stay_s1_region_away_s2_az = |b: PodWrapper| {
        b.preferred_pod_affinity(weighted(8, sec_in("S1", "region")))
            .preferred_pod_anti_affinity(weighted(5, sec_in("S2", "az")))
    };
    let ns_term = || {
        with_namespace_selector(
            with_namespaces(sec_in("S1", "region"), &["subteam2.team2"]),
            vec![req("team", "In", &["team1"])],
        )
    };
    let affinity_ns_selector = |b: PodWrapper| b.preferred_pod_affinity(weighted(5, ns_term()));
    let anti_affinity_ns_selector =
        |b: PodWrapper| b.preferred_pod_anti_affinity(weighted(5, ns_term()));
    let bad = |topology: &str| term(topology, vec![req("security", "In", &["{{.bad-value.}}"])]);
    let three = || {
        vec![
            node("node1", &china),
            node("node2", &india),
            node("node3", &az1),
        ]
    };
    const MAX: i64 = MAX_NODE_SCORE;
    // (case, incoming pod, existing pods, nodes, ignorePreferredTermsOfExistingPods, want)
    type Case = (
        &'static str,
        Pod,
        Vec<Pod>,
        Vec<Node>,
        bool,
        Result<Vec<i64>, Code>,
    );
    let cases: Vec<Case> = vec![
        (
            "all nodes are same priority as Affinity is nil",
            pod().labels(&s1).obj(),
            vec![],
            three(),
            false,
            Err(Code::Skip),
        ),
        (
            "Affinity: pod that matches topology key & pods in nodes will get high score comparing to otherswhich doesn't match either pods in nodes or in topology key",
            stay_with_s1_in_region(pod().labels(&s1)).obj(),
            vec![
                pod().node("node1").labels(&s1).obj(),
                pod().node("node2").labels(&s2).obj(),
                pod().node("node3").labels(&s1).obj(),
            ],
            three(),
            false,
            Ok(vec![MAX, 0, 0]),
        ),
        (
            "All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
            stay_with_s1_in_region(pod()).obj(),
            vec![pod().node("node1").labels(&s1).obj()],
            vec![
                node("node1", &china),
                node("node2", &china_az1),
                node("node3", &india),
            ],
            false,
            Ok(vec![MAX, MAX, 0]),
        ),
        (
            "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
            stay_with_s2_in_region(pod().labels(&s1)).obj(),
            ["node1", "node1", "node2", "node3", "node4", "node5"]
                .iter()
                .map(|n| pod().node(n).labels(&s2).obj())
                .collect(),
            vec![
                node("node1", &china),
                node("node2", &india),
                node("node3", &china),
                node("node4", &china),
                node("node5", &india),
            ],
            false,
            Ok(vec![MAX, 0, MAX, MAX, 0]),
        ),
        (
            "Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",
            affinity3(pod().labels(&s1)).obj(),
            vec![
                pod().node("node1").labels(&s1).obj(),
                pod().node("node2").labels(&s2).obj(),
                pod().node("node3").labels(&s1).obj(),
            ],
            three(),
            false,
            Ok(vec![20, MAX, 0]),
        ),
        (
            "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
            pod().labels(&s2).obj(),
            vec![
                stay_with_s1_in_region(pod().node("node1").labels(&s1)).obj(),
                stay_with_s2_in_region(pod().node("node2").labels(&s2)).obj(),
            ],
            three(),
            false,
            Ok(vec![0, MAX, 0]),
        ),
        (
            "Affinity symmetry with namespace selector",
            pod().namespace("subteam1.team1").labels(&s1).obj(),
            vec![
                affinity_ns_selector(pod().node("node1").labels(&s1)).obj(),
                stay_with_s2_in_region(pod().node("node2").labels(&s2)).obj(),
            ],
            three(),
            false,
            Ok(vec![MAX, 0, 0]),
        ),
        (
            "AntiAffinity symmetry with namespace selector",
            pod().namespace("subteam1.team1").labels(&s1).obj(),
            vec![
                anti_affinity_ns_selector(pod().node("node1").labels(&s1)).obj(),
                stay_with_s2_in_region(pod().node("node2").labels(&s2)).obj(),
            ],
            three(),
            false,
            Ok(vec![0, MAX, MAX]),
        ),
        (
            "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
            pod().labels(&s1).obj(),
            vec![
                hard_affinity(pod().node("node1").labels(&s1)).obj(),
                hard_affinity(pod().node("node2").labels(&s2)).obj(),
            ],
            three(),
            false,
            Ok(vec![MAX, MAX, 0]),
        ),
        (
            "Anti Affinity: pod that does not match existing pods in node will get high score ",
            away_from_s1_in_az(pod().labels(&s1)).obj(),
            vec![
                pod().node("node1").labels(&s1).obj(),
                pod().node("node2").labels(&s2).obj(),
            ],
            vec![node("node1", &az1), node("node2", &china)],
            false,
            Ok(vec![0, MAX]),
        ),
        (
            "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others ",
            away_from_s1_in_az(pod().labels(&s1)).obj(),
            vec![
                pod().node("node1").labels(&s1).obj(),
                pod().node("node2").labels(&s1).obj(),
            ],
            vec![node("node1", &az1), node("node2", &china)],
            false,
            Ok(vec![0, MAX]),
        ),
        (
            "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score",
            away_from_s1_in_az(pod().labels(&s1)).obj(),
            vec![
                pod().node("node1").labels(&s1).obj(),
                pod().node("node1").labels(&s1).obj(),
                pod().node("node2").labels(&s2).obj(),
            ],
            vec![node("node1", &az1), node("node2", &india)],
            false,
            Ok(vec![0, MAX]),
        ),
        (
            "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
            pod().labels(&s2).obj(),
            vec![
                away_from_s2_in_az(pod().node("node1").labels(&s1)).obj(),
                away_from_s1_in_az(pod().node("node2").labels(&s2)).obj(),
            ],
            vec![node("node1", &az1), node("node2", &az2)],
            false,
            Ok(vec![0, MAX]),
        ),
        (
            "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
            stay_s1_region_away_s2_az(pod().labels(&s1)).obj(),
            vec![
                pod().node("node1").labels(&s1).obj(),
                pod().node("node2").labels(&s1).obj(),
            ],
            vec![node("node1", &china), node("node2", &az1)],
            false,
            Ok(vec![MAX, 0]),
        ),
        (
            "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
            stay_s1_region_away_s2_az(pod().labels(&s1)).obj(),
            [
                "node1", "node1", "node2", "node3", "node3", "node4", "node5",
            ]
            .iter()
            .map(|n| pod().node(n).labels(&s1).obj())
            .collect(),
            vec![
                node("node1", &china_az1),
                node("node2", &india),
                node("node3", &china),
                node("node4", &china),
                node("node5", &india),
            ],
            false,
            Ok(vec![MAX, 0, MAX, MAX, 0]),
        ),
        (
            "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
            stay_s1_region_away_s2_az(pod().labels(&s1)).obj(),
            vec![
                pod().node("node1").labels(&s1).obj(),
                pod().node("node2").labels(&s2).obj(),
                stay_s1_region_away_s2_az(pod().node("node3")).obj(),
                away_from_s1_in_az(pod().node("node4")).obj(),
            ],
            vec![
                node("node1", &china),
                node("node2", &az1),
                node("node3", &india),
                node("node4", &az2),
            ],
            false,
            Ok(vec![MAX, 0, MAX, 0]),
        ),
        (
            "Avoid panic when partial nodes in a topology don't have pods with affinity",
            pod().labels(&s1).obj(),
            vec![
                pod().node("node1").labels(&s1).obj(),
                stay_s1_region_away_s2_az(pod().node("node2")).obj(),
            ],
            vec![node("node1", &china), node("node2", &china)],
            false,
            Ok(vec![0, 0]),
        ),
        (
            "invalid Affinity fails PreScore",
            pod()
                .preferred_pod_affinity(weighted(8, bad("region")))
                .obj(),
            vec![],
            vec![node("node1", &china), node("node2", &china)],
            false,
            Err(Code::Error),
        ),
        (
            "invalid AntiAffinity fails PreScore",
            pod()
                .preferred_pod_anti_affinity(weighted(5, bad("az")))
                .obj(),
            vec![],
            vec![node("node1", &china), node("node2", &china)],
            false,
            Err(Code::Error),
        ),
        (
            "Affinity with pods matching NamespaceSelector",
            affinity_ns_selector(pod().namespace("subteam1.team1").labels(&s1)).obj(),
            vec![
                pod()
                    .node("node1")
                    .namespace("subteam1.team1")
                    .labels(&s1)
                    .obj(),
                pod()
                    .node("node1")
                    .namespace("subteam1.team1")
                    .labels(&s1)
                    .obj(),
                pod()
                    .node("node1")
                    .namespace("subteam1.team2")
                    .labels(&s1)
                    .obj(),
                pod()
                    .node("node2")
                    .namespace("subteam2.team1")
                    .labels(&s1)
                    .obj(),
            ],
            vec![node("node1", &china), node("node2", &india)],
            false,
            Ok(vec![MAX, 0]),
        ),
        (
            "Affinity with pods matching both NamespaceSelector and Namespaces fields",
            affinity_ns_selector(pod().namespace("subteam1.team1").labels(&s1)).obj(),
            vec![
                pod()
                    .node("node1")
                    .namespace("subteam1.team1")
                    .labels(&s1)
                    .obj(),
                pod()
                    .node("node1")
                    .namespace("subteam1.team1")
                    .labels(&s1)
                    .obj(),
                pod()
                    .node("node1")
                    .namespace("subteam2.team2")
                    .labels(&s1)
                    .obj(),
                pod()
                    .node("node2")
                    .namespace("subteam2.team1")
                    .labels(&s1)
                    .obj(),
            ],
            vec![node("node1", &china), node("node2", &india)],
            false,
            Ok(vec![MAX, 0]),
        ),
        (
            "Affinity with pods matching NamespaceSelector (anti-affinity)",
            anti_affinity_ns_selector(pod().namespace("subteam1.team1").labels(&s1)).obj(),
            vec![
                pod()
                    .node("node1")
                    .namespace("subteam1.team1")
                    .labels(&s1)
                    .obj(),
                pod()
                    .node("node1")
                    .namespace("subteam1.team1")
                    .labels(&s1)
                    .obj(),
                pod()
                    .node("node1")
                    .namespace("subteam1.team2")
                    .labels(&s1)
                    .obj(),
                pod()
                    .node("node2")
                    .namespace("subteam2.team1")
                    .labels(&s1)
                    .obj(),
            ],
            vec![node("node1", &china), node("node2", &india)],
            false,
            Ok(vec![0, MAX]),
        ),
        (
            "Ignore preferred terms of existing pods",
            pod().labels(&s2).obj(),
            vec![
                stay_s1_region_away_s2_az(pod().node("node1").labels(&s1)).obj(),
                stay_with_s2_in_region(pod().node("node2").labels(&s2)).obj(),
            ],
            vec![node("node1", &china), node("node2", &india)],
            true,
            Err(Code::Skip),
        ),
        (
            "Do not ignore preferred terms of existing pods",
            pod().labels(&s2).obj(),
            vec![
                stay_s1_region_away_s2_az(pod().node("node1").labels(&s1)).obj(),
                stay_with_s2_in_region(pod().node("node2").labels(&s2)).obj(),
            ],
            vec![node("node1", &china), node("node2", &india)],
            false,
            Ok(vec![0, MAX]),
        ),
        (
            "No nodes to score",
            pod().labels(&s2).obj(),
            vec![],
            vec![],
            false,
            Err(Code::Skip),
        ),
    ];
    for (name, incoming, pods, nodes, ignore, want) in cases {
        let plugin = InterPodAffinity::new(InterPodAffinityArgs {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: ignore,
        });
        let got = run_score(&plugin, &incoming, &snapshot(nodes, pods)).await;
        match (got, want) {
            (Ok(scores), Ok(want)) => assert_eq!(scores, want, "case {name}"),
            (Err(status), Err(code)) => {
                assert_eq!(status.code(), code, "case {name}: {status}");
                if code == Code::Error {
                    assert!(
                        status
                            .message()
                            .contains("Invalid value: \"{{.bad-value.}}\""),
                        "case {name}: {status}"
                    );
                }
            }
            (got, want) => panic!("case {name}: got {got:?}, want {want:?}"),
        }
    }
}

#[tokio::test]
async fn hard_pod_affinity_weight_matches_upstream_table() {
    // Upstream `TestPreferredAffinityWithHardPodAffinitySymmetricWeight`, in order.
    let hard_pod_affinity = |b: PodWrapper| {
        b.required_pod_affinity(with_namespace_selector(
            with_namespaces(
                term("region", vec![req("service", "In", &["S1"])]),
                // Upstream's `""` namespace: see the module comment.
                &["default", "subteam2.team2"],
            ),
            vec![req("team", "In", &["team1"])],
        ))
    };
    let service_s1 = [("service", "S1")];
    let existing = || {
        vec![
            hard_pod_affinity(pod().node("node1")).obj(),
            hard_pod_affinity(pod().node("node2")).obj(),
        ]
    };
    let nodes = || {
        vec![
            node("node1", &[("region", "China")]),
            node("node2", &[("region", "India")]),
            node("node3", &[("az", "az1")]),
        ]
    };
    const MAX: i64 = MAX_NODE_SCORE;
    // (case, incoming pod, hardPodAffinityWeight, want)
    type Case = (&'static str, Pod, i32, Result<Vec<i64>, Code>);
    let cases: Vec<Case> = vec![
        (
            "with default weight",
            pod().labels(&service_s1).obj(),
            1,
            Ok(vec![MAX, MAX, 0]),
        ),
        (
            "with zero weight",
            pod().labels(&service_s1).obj(),
            0,
            Err(Code::Skip),
        ),
        (
            "with no matching namespace",
            pod().namespace("subteam1.team2").labels(&service_s1).obj(),
            1,
            Err(Code::Skip),
        ),
        (
            "with matching NamespaceSelector",
            pod().namespace("subteam1.team1").labels(&service_s1).obj(),
            1,
            Ok(vec![MAX, MAX, 0]),
        ),
        (
            "with matching Namespaces",
            pod().namespace("subteam2.team2").labels(&service_s1).obj(),
            1,
            Ok(vec![MAX, MAX, 0]),
        ),
    ];
    for (name, incoming, weight, want) in cases {
        let plugin = InterPodAffinity::new(InterPodAffinityArgs {
            hard_pod_affinity_weight: weight,
            ..InterPodAffinityArgs::default()
        });
        let got = run_score(&plugin, &incoming, &snapshot(nodes(), existing())).await;
        assert_eq!(got.map_err(|s| s.code()), want, "case {name}");
    }
}

// ---------------------------------------------------------------------------------------
// Args and registration.

#[test]
fn args_defaults_and_validation_match_upstream() {
    // Upstream v1 defaults, and `TestValidateInterPodAffinityArgs`.
    let defaults: InterPodAffinityArgs =
        decode_args(None, "spec.pluginConfig.interPodAffinity").expect("defaults are valid");
    assert_eq!(defaults.hard_pod_affinity_weight, 1);
    assert!(!defaults.ignore_preferred_terms_of_existing_pods);
    let path = "spec.pluginConfig.interPodAffinity";
    let cases: Vec<(&str, serde_json::Value, Option<&str>)> = vec![
        (
            "valid args",
            serde_json::json!({"hardPodAffinityWeight": 10}),
            None,
        ),
        (
            "hardPodAffinityWeight less than min",
            serde_json::json!({"hardPodAffinityWeight": -1}),
            Some(
                "spec.pluginConfig.interPodAffinity.hardPodAffinityWeight: Invalid value: -1: not in valid range [0-100]",
            ),
        ),
        (
            "hardPodAffinityWeight more than max",
            serde_json::json!({"hardPodAffinityWeight": 101}),
            Some(
                "spec.pluginConfig.interPodAffinity.hardPodAffinityWeight: Invalid value: 101: not in valid range [0-100]",
            ),
        ),
        (
            "ignorePreferredTermsOfExistingPods alone keeps the default weight",
            serde_json::json!({"ignorePreferredTermsOfExistingPods": true}),
            None,
        ),
    ];
    for (name, value, want) in cases {
        let got = decode_args::<InterPodAffinityArgs>(Some(&value), path);
        match want {
            None => assert!(got.is_ok(), "case {name}: {got:?}"),
            Some(message) => {
                let errors = got.expect_err(name);
                let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
                assert_eq!(rendered, vec![message.to_string()], "case {name}");
            }
        }
    }
    let schema = serde_json::to_value(schemars::schema_for!(InterPodAffinityArgs))
        .expect("schema serializes");
    let weight = &schema["properties"]["hardPodAffinityWeight"];
    assert_eq!(weight["minimum"], 0);
    assert_eq!(weight["maximum"], 100);
}

#[test]
fn registry_points_match_the_accessors_and_events() {
    let plugin = InterPodAffinity::default();
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
    assert_eq!(InterPodAffinity::POINTS.len(), 4);
    let events = plugin.events_to_register().expect("registers events");
    assert!(moves_on(
        &events,
        EventResource::AssignedPod,
        ActionType::ADD
    ));
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
    assert!(moves_on(&events, EventResource::Node, ActionType::ADD));
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
}

#[tokio::test]
async fn kept_scores_follow_cluster_changes_like_a_fresh_walk() {
    // The scores a plugin keeps across cycles must equal a walk over the cluster as it is
    // now, after pods come and go between cycles.
    let hostname = "kubernetes.io/hostname";
    let mut cache = crate::cluster::Cache::new(None);
    for (name, zone) in [("n1", "a"), ("n2", "a"), ("n3", "b")] {
        let n = node(name, &[("zone", zone), (hostname, name)]);
        cache.add_node(n).expect("node");
    }
    let web_avoiding_web = || {
        pod()
            .namespace("default")
            .labels(&[("app", "web")])
            .preferred_pod_anti_affinity(weighted(
                5,
                term(hostname, vec![req("app", "In", &["web"])]),
            ))
    };
    cache
        .add_pod(web_avoiding_web().node("n1").obj())
        .expect("pod");
    let db = pod()
        .namespace("default")
        .labels(&[("app", "db")])
        .node("n3")
        .obj();
    cache.add_pod(db.clone()).expect("pod");
    let incoming = pod()
        .namespace("default")
        .labels(&[("app", "web")])
        .preferred_pod_affinity(weighted(3, term("zone", vec![req("app", "In", &["db"])])))
        .preferred_pod_anti_affinity(weighted(
            2,
            term(hostname, vec![req("app", "In", &["web"])]),
        ))
        .obj();
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    let kept = InterPodAffinity::new(InterPodAffinityArgs::default());
    let before = run_score(&kept, &incoming, &snapshot)
        .await
        .expect("scored");
    let fresh = InterPodAffinity::new(InterPodAffinityArgs::default());
    assert_eq!(
        before,
        run_score(&fresh, &incoming, &snapshot)
            .await
            .expect("scored")
    );
    // The db pod (which attracted the incoming pod to zone b) leaves; a web pod that
    // avoids web pods is assumed on n2; a db pod arrives on n1.
    cache.remove_pod(&db);
    let assumed = pod_info(web_avoiding_web().obj());
    cache.assume_pod(&assumed, "n2").expect("assume");
    cache
        .add_pod(
            pod()
                .namespace("default")
                .labels(&[("app", "db")])
                .node("n1")
                .obj(),
        )
        .expect("pod");
    cache.update_snapshot(&mut snapshot);
    let after = run_score(&kept, &incoming, &snapshot)
        .await
        .expect("scored");
    let fresh = InterPodAffinity::new(InterPodAffinityArgs::default());
    assert_eq!(
        after,
        run_score(&fresh, &incoming, &snapshot)
            .await
            .expect("scored")
    );
    // n1: +3 (a db pod in zone a, on n1 and n2's zone), -2 -5 (a web pod avoiding web);
    // n2 the same; n3: nothing. Min-max normalized: n3 best.
    assert_eq!(
        after,
        vec![0, 0, MAX_NODE_SCORE],
        "scores after the changes"
    );
    assert_ne!(before, after, "the changes moved the scores");
}

#[tokio::test]
async fn kept_counts_follow_cluster_changes_like_a_fresh_walk() {
    // PreFilter's counts kept across cycles must equal a walk over the cluster as it is
    // now, and Filter must decide as upstream's table says for the cluster as it is now.
    let hostname = "kubernetes.io/hostname";
    let mut cache = crate::cluster::Cache::new(None);
    for (name, zone) in [("n1", "a"), ("n2", "a"), ("n3", "b")] {
        let n = node(name, &[("zone", zone), (hostname, name)]);
        cache.add_node(n).expect("node");
    }
    let lonely = || {
        pod()
            .namespace("default")
            .labels(&[("app", "lonely")])
            .pod_anti_affinity_in("app", hostname, &["lonely"])
    };
    let db = pod()
        .namespace("default")
        .labels(&[("app", "db")])
        .node("n3")
        .obj();
    cache.add_pod(lonely().node("n1").obj()).expect("pod");
    cache.add_pod(db.clone()).expect("pod");
    // Wants a db pod in its zone, and no lonely pod on its node (and is lonely itself).
    let incoming = lonely().pod_affinity_in("app", "zone", &["db"]).obj();
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    let plugin = InterPodAffinity::new(InterPodAffinityArgs::default());
    let (_, before) = run_filter(&plugin, &incoming, &snapshot).await;
    assert_eq!(
        before,
        vec![unresolvable(AFFINITY), unresolvable(AFFINITY), ok()],
        "only zone b has a db pod"
    );
    // The db pod moves to zone a (n2), a lonely pod is assumed on n3.
    cache.remove_pod(&db);
    cache
        .add_pod(
            pod()
                .namespace("default")
                .labels(&[("app", "db")])
                .node("n2")
                .obj(),
        )
        .expect("pod");
    cache
        .assume_pod(&pod_info(lonely().obj()), "n3")
        .expect("assume");
    cache.update_snapshot(&mut snapshot);
    let (_, after) = run_filter(&plugin, &incoming, &snapshot).await;
    assert_eq!(
        after,
        vec![unschedulable(ANTI), ok(), unresolvable(AFFINITY)],
        "n1 holds a lonely pod, zone a has the db pod, zone b none"
    );
    // The kept counts are the counts of a walk from scratch.
    let pod_info = pod_info(incoming.clone());
    let mut state = CycleState::new();
    let _ = plugin.pre_filter(&mut state, &pod_info, &snapshot).await;
    let kept = state.read::<PreFilterState>().expect("PreFilter state");
    let fresh = PreFilterState::compute(
        &incoming,
        kept.terms.clone(),
        kept.namespace_labels.clone(),
        &snapshot,
    );
    assert_eq!(
        kept.existing_anti_affinity_counts,
        fresh.existing_anti_affinity_counts
    );
    assert_eq!(kept.affinity_counts, fresh.affinity_counts);
    assert_eq!(kept.anti_affinity_counts, fresh.anti_affinity_counts);
}
