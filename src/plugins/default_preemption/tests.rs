use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, Time,
};
use k8s_openapi::jiff::Timestamp;

use std::cmp::Ordering;

use super::*;
use crate::cluster::PodInfo;
use crate::framework::Code;
use crate::framework::victim_units::{VictimUnit, importance, split_by_budgets};
use crate::testing::{labels, make_pod};

// ---------------------------------------------------------------------------------------
// Args and sampling.

#[test]
fn args_are_validated_as_upstream() {
    let args = |percentage, absolute| DefaultPreemptionArgs {
        min_candidate_nodes_percentage: percentage,
        min_candidate_nodes_absolute: absolute,
    };
    let cases = [
        (
            "valid args (default)",
            DefaultPreemptionArgs::default(),
            vec![],
        ),
        (
            "negative minCandidateNodesPercentage",
            args(-1, 100),
            vec![
                "args.minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
            ],
        ),
        (
            "minCandidateNodesPercentage over 100",
            args(900, 100),
            vec![
                "args.minCandidateNodesPercentage: Invalid value: 900: not in valid range [0, 100]",
            ],
        ),
        (
            "negative minCandidateNodesAbsolute",
            args(20, -1),
            vec!["args.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"],
        ),
        (
            "all arguments are zero",
            args(0, 0),
            vec![
                "args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                "args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
            ],
        ),
        (
            "both negative",
            args(-1, -1),
            vec![
                "args.minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
                "args.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
            ],
        ),
        ("zero percentage alone is valid", args(0, 10), vec![]),
        ("zero absolute alone is valid", args(10, 0), vec![]),
    ];
    for (name, args, want) in cases {
        let got: Vec<String> = args
            .validate("args")
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn args_default_field_by_field_as_upstream_v1() {
    let cases = [
        ("empty", "{}", (10, 100)),
        (
            "percentage only",
            r#"{"minCandidateNodesPercentage": 20}"#,
            (20, 100),
        ),
        (
            "absolute only",
            r#"{"minCandidateNodesAbsolute": 5}"#,
            (10, 5),
        ),
        (
            "both",
            r#"{"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}"#,
            (0, 1),
        ),
    ];
    for (name, json, (percentage, absolute)) in cases {
        let args: DefaultPreemptionArgs = serde_json::from_str(json).expect(name);
        assert_eq!(
            (
                args.min_candidate_nodes_percentage,
                args.min_candidate_nodes_absolute
            ),
            (percentage, absolute),
            "{name}"
        );
    }
}

#[test]
fn num_candidates_is_the_larger_bound_capped_at_the_nodes() {
    let args = |percentage, absolute| DefaultPreemptionArgs {
        min_candidate_nodes_percentage: percentage,
        min_candidate_nodes_absolute: absolute,
    };
    let defaults = DefaultPreemptionArgs::default();
    let cases = [
        ("defaults, 50 nodes: all of them", 50, defaults.clone(), 50),
        (
            "defaults, 1000 nodes: the absolute 100",
            1000,
            defaults.clone(),
            100,
        ),
        (
            "defaults, 5000 nodes: 10% is 500",
            5000,
            defaults.clone(),
            500,
        ),
        ("no nodes", 0, defaults, 0),
        ("absolute dominates", 100, args(20, 50), 50),
        ("percentage dominates", 100, args(50, 10), 50),
        ("absolute larger than the nodes", 100, args(20, 500), 100),
        ("percentage rounds down", 99, args(10, 0), 9),
        ("all nodes by percentage", 7, args(100, 0), 7),
    ];
    for (name, nodes, args, want) in cases {
        assert_eq!(num_candidates(nodes, &args), want, "{name}");
    }
}

#[test]
fn nodes_are_visited_once_each_from_the_offset() {
    let cases: [(&str, usize, usize, Vec<usize>); 5] = [
        ("offset 0", 4, 0, vec![0, 1, 2, 3]),
        ("offset in the middle wraps around", 4, 2, vec![2, 3, 0, 1]),
        ("offset at the last node", 4, 3, vec![3, 0, 1, 2]),
        ("offset past the end wraps", 4, 6, vec![2, 3, 0, 1]),
        ("no nodes", 0, 3, vec![]),
    ];
    for (name, nodes, offset, want) in cases {
        let got: Vec<usize> = visiting_order(nodes, offset).collect();
        assert_eq!(got, want, "{name}");
    }
}

fn candidate(node: &str, violations: i64) -> Candidate {
    Candidate {
        node: node.to_owned(),
        victims: vec![Arc::new(make_pod().name(&format!("{node}-victim")).obj())],
        num_pdb_violations: violations,
    }
}

#[test]
fn candidate_list_stops_early_only_with_a_pdb_clean_candidate() {
    // (node, violations, whether the dry run may stop after adding it)
    type Found = (&'static str, i64, bool);
    let cases: [(&str, usize, Vec<Found>, Vec<&str>); 5] = [
        (
            "no pdb violation: all candidates kept (upstream generic TestDryRunPreemption)",
            2,
            vec![("node1", 0, false), ("node2", 0, true)],
            vec!["node1", "node2"],
        ),
        (
            "pdb violation on each node: all kept, the search never stops early",
            2,
            vec![("node1", 1, false), ("node2", 1, false)],
            vec!["node1", "node2"],
        ),
        (
            "violating candidates beyond the capacity are dropped",
            2,
            vec![
                ("node1", 1, false),
                ("node2", 2, false),
                ("node3", 1, false),
            ],
            vec!["node1", "node2"],
        ),
        (
            "a clean candidate after violating ones stops the search and comes first",
            2,
            vec![("node1", 1, false), ("node2", 0, true)],
            vec!["node2", "node1"],
        ),
        (
            "one clean candidate is not enough below the capacity",
            3,
            vec![("node1", 0, false), ("node2", 0, false), ("node3", 3, true)],
            vec!["node1", "node2", "node3"],
        ),
    ];
    for (name, capacity, found, want) in cases {
        let mut list = CandidateList::new(capacity);
        for (node, violations, stop) in found {
            assert_eq!(
                list.add(candidate(node, violations)),
                stop,
                "{name}: after {node}"
            );
        }
        let got: Vec<String> = list.into_candidates().into_iter().map(|c| c.node).collect();
        assert_eq!(got, want, "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// Importance order and PodDisruptionBudgets.

/// `second` after the epoch; upstream's tables use dates one day apart.
fn at(day: i64) -> Time {
    Time(Timestamp::from_second(day * 86_400).expect("test time in range"))
}

/// A pod of `priority` that started on `day` (`None`: no `status.startTime`).
fn pod(name: &str, priority: i32, day: Option<i64>) -> Pod {
    let mut pod = make_pod().name(name).priority(priority).obj();
    pod.status.get_or_insert_with(PodStatus::default).start_time = day.map(at);
    pod
}

/// `pod` as a unit of eviction of its own, at its own priority.
fn lone(pod: Pod) -> VictimUnit {
    let priority = pod_priority(&pod);
    VictimUnit::new(
        vec![Arc::new(PodInfo::new(pod).expect("a pod"))],
        priority,
        false,
    )
}

fn names(units: &[VictimUnit]) -> Vec<&str> {
    units
        .iter()
        .flat_map(|u| &u.pods)
        .map(|p| p.pod.metadata.name.as_deref().unwrap_or_default())
        .collect()
}

#[test]
fn more_important_means_higher_priority_then_older() {
    let cases = [
        (
            "higher priority wins over an earlier start",
            pod("a", 100, Some(5)),
            pod("b", 0, Some(1)),
            true,
        ),
        (
            "lower priority is less important",
            pod("a", -5, Some(1)),
            pod("b", 0, Some(5)),
            false,
        ),
        (
            "equal priority: earlier start",
            pod("a", 10, Some(1)),
            pod("b", 10, Some(2)),
            true,
        ),
        (
            "equal priority: later start",
            pod("a", 10, Some(3)),
            pod("b", 10, Some(2)),
            false,
        ),
        (
            "no start time counts as the newest",
            pod("a", 10, Some(3)),
            pod("b", 10, None),
            true,
        ),
        (
            "a pod without start time is not more important",
            pod("a", 10, None),
            pod("b", 10, Some(3)),
            false,
        ),
        (
            "equal priority and start: neither",
            pod("a", 10, Some(3)),
            pod("b", 10, Some(3)),
            false,
        ),
        (
            "unset priority is 0",
            make_pod().name("a").obj(),
            pod("b", -1, Some(0)),
            true,
        ),
    ];
    for (name, a, b, want) in cases {
        let more_important = importance(&lone(a), &lone(b)) == Ordering::Less;
        assert_eq!(more_important, want, "{name}");
    }
}

#[test]
fn sorting_keeps_the_order_of_pods_that_tie() {
    let mut pods: Vec<VictimUnit> = [
        pod("new-1", 0, None),
        pod("low", -10, Some(0)),
        pod("old", 0, Some(1)),
        pod("new-2", 0, None),
        pod("high", 100, Some(9)),
        pod("tie-1", 0, Some(4)),
        pod("tie-2", 0, Some(4)),
    ]
    .into_iter()
    .map(lone)
    .collect();
    pods.sort_by(importance);
    assert_eq!(
        names(&pods),
        ["high", "old", "tie-1", "tie-2", "new-1", "new-2", "low"]
    );
}

fn labelled(name: &str, namespace: &str, pairs: &[(&str, &str)]) -> Pod {
    make_pod()
        .name(name)
        .namespace(namespace)
        .labels(pairs)
        .obj()
}

fn pdb(
    namespace: &str,
    selector: Option<LabelSelector>,
    allowed: i32,
    disrupted: &[&str],
) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some("pdb".into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            selector,
            ..Default::default()
        }),
        status: Some(PodDisruptionBudgetStatus {
            disruptions_allowed: Some(allowed),
            disrupted_pods: (!disrupted.is_empty())
                .then(|| disrupted.iter().map(|p| (p.to_string(), at(0))).collect()),
            ..Default::default()
        }),
    }
}

fn match_labels(pairs: &[(&str, &str)]) -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: Some(labels(pairs)),
        ..Default::default()
    })
}

#[test]
fn pdb_violations_are_counted_in_importance_order() {
    let app_a = &[("app", "a")];
    let cases = [
        (
            "budget 1 with 2 matching pods: the more important is kept, the other violates",
            vec![labelled("p1", "ns", app_a), labelled("p2", "ns", app_a)],
            vec![pdb("ns", match_labels(app_a), 1, &[])],
            vec!["p2"],
        ),
        (
            "budget 2 with 2 matching pods: none violates",
            vec![labelled("p1", "ns", app_a), labelled("p2", "ns", app_a)],
            vec![pdb("ns", match_labels(app_a), 2, &[])],
            vec![],
        ),
        (
            "a pod in disruptedPods neither uses the budget nor violates it",
            vec![
                labelled("p1", "ns", app_a),
                labelled("p2", "ns", app_a),
                labelled("p3", "ns", app_a),
            ],
            vec![pdb("ns", match_labels(app_a), 1, &["p1"])],
            vec!["p3"],
        ),
        (
            "a budget in another namespace does not apply",
            vec![labelled("p1", "ns", app_a)],
            vec![pdb("other", match_labels(app_a), 0, &[])],
            vec![],
        ),
        (
            "an empty selector matches nothing",
            vec![labelled("p1", "ns", app_a)],
            vec![pdb("ns", Some(LabelSelector::default()), 0, &[])],
            vec![],
        ),
        (
            "a missing selector matches nothing",
            vec![labelled("p1", "ns", app_a)],
            vec![pdb("ns", None, 0, &[])],
            vec![],
        ),
        (
            "an invalid selector matches nothing",
            vec![labelled("p1", "ns", app_a)],
            vec![pdb(
                "ns",
                Some(LabelSelector {
                    match_expressions: Some(vec![LabelSelectorRequirement {
                        key: "app".into(),
                        operator: "Near".into(),
                        values: Some(vec!["a".into()]),
                    }]),
                    ..Default::default()
                }),
                0,
                &[],
            )],
            vec![],
        ),
        (
            "a pod without labels matches no budget",
            vec![make_pod().name("p1").namespace("ns").obj()],
            vec![pdb(
                "ns",
                Some(LabelSelector {
                    match_expressions: Some(vec![LabelSelectorRequirement {
                        key: "app".into(),
                        operator: "DoesNotExist".into(),
                        values: None,
                    }]),
                    ..Default::default()
                }),
                0,
                &[],
            )],
            vec![],
        ),
        (
            "a selector that does not select the pod",
            vec![labelled("p1", "ns", &[("app", "b")])],
            vec![pdb("ns", match_labels(app_a), 0, &[])],
            vec![],
        ),
        (
            "matchExpressions select too",
            vec![
                labelled("p1", "ns", app_a),
                labelled("p2", "ns", &[("app", "c")]),
            ],
            vec![pdb(
                "ns",
                Some(LabelSelector {
                    match_expressions: Some(vec![LabelSelectorRequirement {
                        key: "app".into(),
                        operator: "In".into(),
                        values: Some(vec!["a".into(), "b".into()]),
                    }]),
                    ..Default::default()
                }),
                0,
                &[],
            )],
            vec!["p1"],
        ),
        (
            "violating one of two matching budgets is enough",
            vec![labelled("p1", "ns", &[("app", "a"), ("tier", "db")])],
            vec![
                pdb("ns", match_labels(app_a), 1, &[]),
                pdb("ns", match_labels(&[("tier", "db")]), 0, &[]),
            ],
            vec!["p1"],
        ),
        (
            "each budget is used up on its own",
            vec![
                labelled("p1", "ns", &[("app", "a")]),
                labelled("p2", "ns", &[("app", "b")]),
                labelled("p3", "ns", &[("app", "a")]),
            ],
            vec![
                pdb("ns", match_labels(app_a), 1, &[]),
                pdb("ns", match_labels(&[("app", "b")]), 1, &[]),
            ],
            vec!["p3"],
        ),
        (
            "a pod without namespace is in default",
            vec![make_pod().name("p1").labels(app_a).obj()],
            vec![pdb("default", match_labels(app_a), 0, &[])],
            vec!["p1"],
        ),
    ];
    for (name, pods, pdbs, want_violating) in cases {
        let units: Vec<VictimUnit> = pods.into_iter().map(lone).collect();
        let all: Vec<String> = names(&units).iter().map(|s| s.to_string()).collect();
        let (violating, non_violating) = split_by_budgets(units, &pdbs);
        let violating: Vec<VictimUnit> = violating.into_iter().map(|(u, _)| u).collect();
        assert_eq!(names(&violating), want_violating, "{name}: violating");
        let want_non_violating: Vec<&str> = all
            .iter()
            .map(String::as_str)
            .filter(|n| !want_violating.contains(n))
            .collect();
        assert_eq!(
            names(&non_violating),
            want_non_violating,
            "{name}: non-violating"
        );
    }
}

#[test]
fn a_budget_without_status_allows_no_disruption() {
    let mut budget = pdb("ns", match_labels(&[("app", "a")]), 5, &[]);
    budget.status = None;
    let units = vec![lone(labelled("p1", "ns", &[("app", "a")]))];
    let (violating, non_violating) = split_by_budgets(units, &[budget]);
    assert_eq!(violating.len(), 1, "p1 violates");
    assert!(non_violating.is_empty());
}

// ---------------------------------------------------------------------------------------
// Candidate selection: upstream TestSelectBestCandidate.

/// The candidate on `node` evicting `pods` (name, priority, start day), in importance
/// order. In upstream's table the preemptor fills the whole node (all cases but the
/// first, where each node holds one pod), so the dry run evicts every pod on it.
fn evicting(node: &str, pods: &[(&str, i32, Option<i64>)]) -> Candidate {
    let mut units: Vec<VictimUnit> = pods
        .iter()
        .map(|&(name, priority, day)| lone(pod(name, priority, day)))
        .collect();
    units.sort_by(importance);
    Candidate {
        node: node.to_owned(),
        victims: units.into_iter().map(|u| u.pods[0].pod.clone()).collect(),
        num_pdb_violations: 0,
    }
}

#[test]
fn select_best_candidate_as_upstream() {
    let t0 = Some(0);
    let cases: Vec<(&str, Vec<Candidate>, Vec<&str>)> = vec![
        (
            "a pod that fits on both nodes when lower priority pods are preempted",
            vec![
                evicting("node1", &[("p1", 100, t0)]),
                evicting("node2", &[("p2", 100, t0)]),
            ],
            vec!["node1", "node2"],
        ),
        (
            "node with min highest priority pod is picked",
            vec![
                evicting("node1", &[("p1.1", 100, t0), ("p1.2", 100, t0)]),
                evicting("node2", &[("p2.1", 100, t0), ("p2.2", 0, t0)]),
                evicting("node3", &[("p3.1", 0, t0), ("p3.2", 0, t0)]),
            ],
            vec!["node3"],
        ),
        (
            "when highest priorities are the same, minimum sum of priorities is picked",
            vec![
                evicting("node1", &[("p1.1", 100, t0), ("p1.2", 100, t0)]),
                evicting("node2", &[("p2.1", 100, t0), ("p2.2", 0, t0)]),
                evicting("node3", &[("p3.1", 100, t0), ("p3.2", 100, t0)]),
            ],
            vec!["node2"],
        ),
        (
            "when highest priority and sum are the same, minimum number of pods is picked",
            vec![
                evicting(
                    "node1",
                    &[
                        ("p1.1", 100, t0),
                        ("p1.2", -100, t0),
                        ("p1.3", 100, t0),
                        ("p1.4", -100, t0),
                    ],
                ),
                evicting("node2", &[("p2.1", 100, t0), ("p2.2", -100, t0)]),
                evicting(
                    "node3",
                    &[("p3.1", 100, t0), ("p3.2", -100, t0), ("p3.3", 0, t0)],
                ),
            ],
            vec!["node2"],
        ),
        (
            "sum of adjusted priorities is considered",
            vec![
                evicting(
                    "node1",
                    &[("p1.1", 100, t0), ("p1.2", -100, t0), ("p1.3", -100, t0)],
                ),
                evicting("node2", &[("p2.1", 100, t0), ("p2.2", -100, t0)]),
                evicting(
                    "node3",
                    &[("p3.1", 100, t0), ("p3.2", -100, t0), ("p3.3", 0, t0)],
                ),
            ],
            vec!["node2"],
        ),
        (
            "non-overlapping lowest high priority, sum priorities, and number of pods",
            vec![
                evicting(
                    "node1",
                    &[("p1.1", 100, t0), ("p1.2", 0, t0), ("p1.3", 0, t0)],
                ),
                evicting("node2", &[("p2.1", 1000, t0)]),
                evicting(
                    "node3",
                    &[
                        ("p3.1", 100, t0),
                        ("p3.2", 0, t0),
                        ("p3.3", 0, t0),
                        ("p3.4", 0, t0),
                    ],
                ),
                evicting(
                    "node4",
                    &[
                        ("p4.1", 100, t0),
                        ("p4.2", 100, t0),
                        ("p4.3", 100, t0),
                        ("p4.4", -100, t0),
                    ],
                ),
            ],
            vec!["node1"],
        ),
        (
            "same priority, same number of victims, different start time for each node's pod",
            vec![
                evicting("node1", &[("p1.1", 100, Some(2)), ("p1.2", 100, Some(2))]),
                evicting("node2", &[("p2.1", 100, Some(3)), ("p2.2", 100, Some(3))]),
                evicting("node3", &[("p3.1", 100, Some(1)), ("p3.2", 100, Some(1))]),
            ],
            vec!["node2"],
        ),
        (
            "same priority, same number of victims, different start time for all pods",
            vec![
                evicting("node1", &[("p1.1", 100, Some(4)), ("p1.2", 100, Some(2))]),
                evicting("node2", &[("p2.1", 100, Some(5)), ("p2.2", 100, Some(1))]),
                evicting("node3", &[("p3.1", 100, Some(3)), ("p3.2", 100, Some(6))]),
            ],
            vec!["node3"],
        ),
        (
            "different priority, same number of victims, different start time for all pods",
            vec![
                evicting("node1", &[("p1.1", 0, Some(4)), ("p1.2", 100, Some(2))]),
                evicting("node2", &[("p2.1", 100, Some(6)), ("p2.2", 0, Some(1))]),
                evicting("node3", &[("p3.1", 0, Some(3)), ("p3.2", 100, Some(5))]),
            ],
            vec!["node2"],
        ),
    ];
    for (name, candidates, want) in cases {
        // Upstream finds candidates in parallel from a random offset: the choice must not
        // depend on the order they come in.
        for rotation in 0..candidates.len() {
            let mut order = candidates.clone();
            order.rotate_left(rotation);
            let got = select_candidate(&order).map(|c| c.node.as_str());
            assert!(
                got.is_some_and(|node| want.contains(&node)),
                "{name} (rotation {rotation}): got {got:?}, want one of {want:?}"
            );
        }
    }
}

#[test]
fn candidate_selection_criteria_apply_in_upstream_order() {
    let with_violations = |mut c: Candidate, n| {
        c.num_pdb_violations = n;
        c
    };
    let cases: Vec<(&str, Vec<Candidate>, Option<&str>)> = vec![
        ("no candidates", vec![], None),
        (
            "a single candidate",
            vec![evicting("node1", &[("p1", 100, Some(0))])],
            Some("node1"),
        ),
        (
            "fewer PDB violations beat a lower victim priority",
            vec![
                with_violations(evicting("node1", &[("p1", 0, Some(0))]), 1),
                evicting("node2", &[("p2", 100, Some(0))]),
            ],
            Some("node2"),
        ),
        (
            "the victim priority beats the number of victims",
            vec![
                evicting("node1", &[("p1", 100, Some(0))]),
                evicting("node2", &[("p2.1", 0, Some(0)), ("p2.2", 0, Some(0))]),
            ],
            Some("node2"),
        ),
        (
            "a victim without start time counts as the newest",
            vec![
                evicting("node1", &[("p1", 100, Some(9))]),
                evicting("node2", &[("p2", 100, None)]),
            ],
            Some("node2"),
        ),
        (
            "only the highest-priority victims' start times count",
            vec![
                evicting("node1", &[("p1.1", 100, Some(5)), ("p1.2", 0, None)]),
                evicting("node2", &[("p2.1", 100, Some(6)), ("p2.2", 0, Some(0))]),
            ],
            Some("node2"),
        ),
        (
            "a full tie goes to the first candidate",
            vec![
                evicting("node2", &[("p2", 100, Some(1))]),
                evicting("node1", &[("p1", 100, Some(1))]),
            ],
            Some("node2"),
        ),
    ];
    for (name, candidates, want) in cases {
        let got = select_candidate(&candidates).map(|c| c.node.as_str());
        assert_eq!(got, want, "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// Eligibility: upstream TestPodEligibleToPreemptOthers.

fn preemptor(nominated: Option<&str>) -> Pod {
    let mut pod = make_pod().name("p").uid("p").priority(1000).obj();
    pod.status
        .get_or_insert_with(PodStatus::default)
        .nominated_node_name = nominated.map(str::to_owned);
    pod
}

fn disruption_target(mut pod: Pod, status: &str, reason: &str) -> Pod {
    pod.status
        .get_or_insert_with(PodStatus::default)
        .conditions
        .get_or_insert_with(Vec::new)
        .push(PodCondition {
            type_: "DisruptionTarget".into(),
            status: status.into(),
            reason: Some(reason.into()),
            ..Default::default()
        });
    pod
}

fn on_node1(priority: i32) -> crate::testing::PodWrapper {
    make_pod()
        .name("p1")
        .uid("p1")
        .namespace("ns1")
        .node("node1")
        .priority(priority)
}

#[test]
fn pod_eligible_to_preempt_others_as_upstream() {
    let never = {
        let mut pod = preemptor(None);
        if let Some(spec) = pod.spec.as_mut() {
            spec.preemption_policy = Some("Never".into());
        }
        pod
    };
    let preempted = |priority| {
        disruption_target(
            on_node1(priority).terminating().obj(),
            "True",
            "PreemptionByScheduler",
        )
    };
    // (name, preemptor, pods on its nominated node, the node's Filter code, want)
    type Case = (&'static str, Pod, Vec<Pod>, Code, Result<(), &'static str>);
    let cases: Vec<Case> = vec![
        (
            "Pod with nominated node",
            preemptor(Some("node1")),
            vec![on_node1(0).terminating().obj()],
            Code::UnschedulableAndUnresolvable,
            Ok(()),
        ),
        (
            "Pod without nominated node",
            preemptor(None),
            vec![],
            Code::Success,
            Ok(()),
        ),
        (
            "Pod with 'PreemptNever' preemption policy",
            never,
            vec![],
            Code::Success,
            Err("not eligible due to preemptionPolicy=Never."),
        ),
        (
            "preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
            preemptor(Some("node1")),
            vec![preempted(0)],
            Code::Success,
            Err("not eligible due to a terminating pod on the nominated node."),
        ),
        (
            "non-victim Pods terminating",
            preemptor(Some("node1")),
            vec![on_node1(0).terminating().obj()],
            Code::Success,
            Ok(()),
        ),
        // Beyond upstream's table, from the rules it implements.
        (
            "a preempted pod on a nominated node found unresolvable does not block",
            preemptor(Some("node1")),
            vec![preempted(0)],
            Code::UnschedulableAndUnresolvable,
            Ok(()),
        ),
        (
            "a preempted pod of equal priority does not block",
            preemptor(Some("node1")),
            vec![preempted(1000)],
            Code::Success,
            Ok(()),
        ),
        (
            "a DisruptionTarget condition without deletion does not block",
            preemptor(Some("node1")),
            vec![disruption_target(
                on_node1(0).obj(),
                "True",
                "PreemptionByScheduler",
            )],
            Code::Success,
            Ok(()),
        ),
        (
            "a DisruptionTarget condition for another reason does not block",
            preemptor(Some("node1")),
            vec![disruption_target(
                on_node1(0).terminating().obj(),
                "True",
                "EvictionByEvictionAPI",
            )],
            Code::Success,
            Ok(()),
        ),
        (
            "a DisruptionTarget condition that is not True does not block",
            preemptor(Some("node1")),
            vec![disruption_target(
                on_node1(0).terminating().obj(),
                "False",
                "PreemptionByScheduler",
            )],
            Code::Success,
            Ok(()),
        ),
        (
            "an empty nominated node name is no nomination",
            preemptor(Some("")),
            vec![preempted(0)],
            Code::Success,
            Ok(()),
        ),
        (
            "the nominated node is gone from the snapshot",
            preemptor(Some("node1")),
            vec![],
            Code::Unschedulable,
            Ok(()),
        ),
    ];
    for (name, pod, on_nominated_node, status, want) in cases {
        let got = pod_eligible_to_preempt_others(&pod, status, &on_nominated_node, pod_priority);
        assert_eq!(got, want.map_err(str::to_owned), "{name}");
    }
}
