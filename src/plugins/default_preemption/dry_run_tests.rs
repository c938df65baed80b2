//! upstream's TestDryRunPreemption rows that berth's default Filter plugins reach
//! (NodeResourcesFit), with the offsets upstream's seeded source gives (4 for the first
//! call): the candidates (node and victims, sorted by name, as upstream compares them) and
//! their PodDisruptionBudget violations. Nodes hold 500m cpu.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::post_filter_tests::{budget, framework};
use super::*;
use crate::cluster::Cache;
use crate::testing::executor::complete;
use crate::testing::{make_node, make_pod};

/// A pod: name, priority, cpu request, node, and for some rows a start time (seconds) and
/// the `app: foo` label.
fn pod(name: &str, priority: i32, cpu: &str, node: Option<&str>) -> Pod {
    let mut pod = make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .priority(priority)
        .req(&[("cpu", cpu)]);
    if let Some(node) = node {
        pod = pod.node(node);
    }
    pod.obj()
}

fn started(mut pod: Pod, second: i64) -> Pod {
    let time = Timestamp::from_second(1_700_000_000 + second).expect("time in range");
    pod.status.get_or_insert_default().start_time = Some(Time(time));
    pod
}

fn app_foo(mut pod: Pod) -> Pod {
    pod.metadata.labels = Some([("app".to_string(), "foo".to_string())].into());
    pod
}

fn foo_budget(allowed: i32, disrupted: &[&str]) -> PodDisruptionBudget {
    let mut budget = budget("pdb", "app", allowed);
    if let Some(spec) = budget.spec.as_mut() {
        spec.selector = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some([("app".to_string(), "foo".to_string())].into()),
                ..Default::default()
            },
        );
    }
    if let Some(status) = budget.status.as_mut() {
        status.disrupted_pods = Some(
            disrupted
                .iter()
                .map(|p| (p.to_string(), Time(Timestamp::UNIX_EPOCH)))
                .collect(),
        );
    }
    budget
}

struct Case {
    name: &'static str,
    nodes: usize,
    preemptor: Pod,
    pods: Vec<Pod>,
    budgets: Vec<PodDisruptionBudget>,
    args: DefaultPreemptionArgs,
    /// (node, victims, PDB violations), sorted by node name.
    want: Vec<(&'static str, Vec<&'static str>, i64)>,
}

fn limited(percentage: i32, absolute: i32) -> DefaultPreemptionArgs {
    DefaultPreemptionArgs {
        min_candidate_nodes_percentage: percentage,
        min_candidate_nodes_absolute: absolute,
    }
}

fn run(case: &Case) -> Vec<(String, Vec<String>, i64)> {
    let framework = framework(case.budgets.clone());
    let mut cache = Cache::new(None);
    for i in 1..=case.nodes {
        let node = make_node()
            .name(&format!("node{i}"))
            .allocatable(&[("cpu", "500m"), ("memory", "500"), ("pods", "110")])
            .obj();
        cache.add_node(node).expect("node");
    }
    for pod in &case.pods {
        cache.add_pod(pod.clone()).expect("pod");
    }
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    let pod = PodInfo::new(case.preemptor.clone()).expect("pod");
    let mut state = CycleState::new();
    state.set_node_count(snapshot.len());
    let pre = complete(framework.run_pre_filter(&mut state, &pod, &snapshot));
    assert!(pre.status.is_success(), "{}: {:?}", case.name, pre.status);
    let mut potential = snapshot.nodes().to_vec();
    potential.sort_by(|a, b| a.name().cmp(b.name()));
    let run = dry_run::dry_run(
        &framework,
        &state,
        &pod,
        &potential,
        &case.budgets,
        &case.args,
        4,
    );
    let mut got: Vec<(String, Vec<String>, i64)> = run
        .candidates
        .iter()
        .map(|c| {
            let mut victims: Vec<String> = c
                .victims
                .iter()
                .map(|v| v.metadata.name.clone().unwrap_or_default())
                .collect();
            victims.sort();
            (c.node.clone(), victims, c.num_pdb_violations)
        })
        .collect();
    got.sort();
    got
}

#[test]
fn dry_run_table() {
    let default = DefaultPreemptionArgs::default;
    let cases = vec![
        Case {
            name: "a pod that fits on both nodes when lower priority pods are preempted",
            nodes: 2,
            preemptor: pod("p", 1000, "300m", None),
            pods: vec![
                pod("p1", 100, "300m", Some("node1")),
                pod("p2", 100, "300m", Some("node2")),
            ],
            budgets: vec![],
            args: default(),
            want: vec![("node1", vec!["p1"], 0), ("node2", vec!["p2"], 0)],
        },
        Case {
            name: "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
            nodes: 2,
            preemptor: pod("p", 0, "300m", None),
            pods: vec![
                pod("p1", 100, "300m", Some("node1")),
                pod("p2", 100, "300m", Some("node2")),
            ],
            budgets: vec![],
            args: default(),
            want: vec![],
        },
        Case {
            name: "medium priority pod is preempted, but lower priority one stays as it is small",
            nodes: 2,
            preemptor: pod("p", 1000, "300m", None),
            pods: vec![
                pod("p1.1", 0, "100m", Some("node1")),
                pod("p1.2", 100, "300m", Some("node1")),
                pod("p2", 100, "300m", Some("node2")),
            ],
            budgets: vec![],
            args: default(),
            want: vec![("node1", vec!["p1.2"], 0), ("node2", vec!["p2"], 0)],
        },
        Case {
            name: "mixed priority pods are preempted",
            nodes: 2,
            preemptor: pod("p", 1000, "300m", None),
            pods: vec![
                pod("p1.1", 100, "100m", Some("node1")),
                pod("p1.2", 0, "100m", Some("node1")),
                pod("p1.3", 100, "200m", Some("node1")),
                pod("p1.4", 1000, "100m", Some("node1")),
                pod("p2", 1000, "300m", Some("node2")),
            ],
            budgets: vec![],
            args: default(),
            want: vec![("node1", vec!["p1.2", "p1.3"], 0)],
        },
        Case {
            name: "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
            nodes: 2,
            preemptor: pod("p", 1000, "300m", None),
            pods: vec![
                started(pod("p1.1", 0, "100m", Some("node1")), 5),
                started(pod("p1.2", 0, "100m", Some("node1")), 4),
                started(pod("p1.3", 100, "200m", Some("node1")), 3),
                started(pod("p1.4", 1000, "100m", Some("node1")), 2),
                started(pod("p2", 1000, "300m", Some("node2")), 1),
            ],
            budgets: vec![],
            args: default(),
            want: vec![("node1", vec!["p1.1", "p1.3"], 0)],
        },
        Case {
            name: "preemption with violation of same pdb",
            nodes: 1,
            preemptor: pod("p", 1000, "500m", None),
            pods: vec![
                app_foo(pod("p1.1", 100, "200m", Some("node1"))),
                app_foo(pod("p1.2", 100, "200m", Some("node1"))),
            ],
            budgets: vec![foo_budget(1, &[])],
            args: default(),
            want: vec![("node1", vec!["p1.1", "p1.2"], 1)],
        },
        Case {
            name: "preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to DisruptedPods",
            nodes: 1,
            preemptor: pod("p", 1000, "500m", None),
            pods: vec![
                app_foo(pod("p1.1", 100, "200m", Some("node1"))),
                app_foo(pod("p1.2", 100, "200m", Some("node1"))),
            ],
            budgets: vec![foo_budget(1, &["p2"])],
            args: default(),
            want: vec![("node1", vec!["p1.1", "p1.2"], 1)],
        },
        Case {
            name: "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to DisruptedPods",
            nodes: 1,
            preemptor: pod("p", 1000, "500m", None),
            pods: vec![
                app_foo(pod("p1.1", 100, "200m", Some("node1"))),
                app_foo(pod("p1.2", 100, "200m", Some("node1"))),
            ],
            budgets: vec![foo_budget(1, &["p1.2"])],
            args: default(),
            want: vec![("node1", vec!["p1.1", "p1.2"], 0)],
        },
        Case {
            name: "preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to DisruptedPods is treated as 'nonViolating'",
            nodes: 1,
            preemptor: pod("p", 1000, "500m", None),
            pods: vec![
                app_foo(pod("p1.1", 100, "200m", Some("node1"))),
                app_foo(pod("p1.2", 100, "200m", Some("node1"))),
                app_foo(pod("p1.3", 100, "200m", Some("node1"))),
            ],
            budgets: vec![foo_budget(1, &["p1.3"])],
            args: default(),
            want: vec![("node1", vec!["p1.1", "p1.2", "p1.3"], 1)],
        },
        Case {
            name: "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
            nodes: 5,
            preemptor: pod("p", 1000, "300m", None),
            pods: (1..=5)
                .map(|i| pod(&format!("p{i}"), 100, "300m", Some(&format!("node{i}"))))
                .collect(),
            budgets: vec![],
            args: limited(40, 1),
            want: vec![("node1", vec!["p1"], 0), ("node5", vec!["p5"], 0)],
        },
        Case {
            name: "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
            nodes: 5,
            preemptor: pod("p", 1000, "300m", None),
            pods: vec![
                pod("p1", 100, "300m", Some("node1")),
                pod("p2", 10000, "300m", Some("node2")),
                pod("p3", 100, "300m", Some("node3")),
                pod("p4", 100, "300m", Some("node4")),
                pod("p5", 10000, "300m", Some("node5")),
            ],
            budgets: vec![],
            args: limited(40, 1),
            want: vec![("node1", vec!["p1"], 0), ("node3", vec!["p3"], 0)],
        },
        Case {
            name: "preemption looks past numCandidates until a non-PDB violating node is found",
            nodes: 5,
            preemptor: pod("p", 1000, "300m", None),
            pods: vec![
                app_foo(pod("p1", 100, "300m", Some("node1"))),
                app_foo(pod("p2", 100, "300m", Some("node2"))),
                pod("p3", 100, "300m", Some("node3")),
                pod("p4", 100, "300m", Some("node4")),
                app_foo(pod("p5", 100, "300m", Some("node5"))),
            ],
            budgets: vec![foo_budget(0, &[])],
            args: limited(40, 2),
            want: vec![
                ("node1", vec!["p1"], 1),
                ("node3", vec!["p3"], 0),
                ("node5", vec!["p5"], 1),
            ],
        },
    ];
    for case in &cases {
        let want: Vec<(String, Vec<String>, i64)> = case
            .want
            .iter()
            .map(|(n, v, k)| (n.to_string(), v.iter().map(|s| s.to_string()).collect(), *k))
            .collect();
        assert_eq!(run(case), want, "{}", case.name);
    }
}
