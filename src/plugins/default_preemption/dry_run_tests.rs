//! upstream's TestDryRunPreemption through berth's framework (the default profile, whose
//! Filter plugins include the ones each row registers: NodeResourcesFit, InterPodAffinity,
//! PodTopologySpread, with their PreFilter AddPod/RemovePod), with the offsets upstream's
//! seeded source gives (4, then 1, then 3): the candidates (node and victims, sorted by
//! name, as upstream compares them), their PodDisruptionBudget violations, and how many
//! times Filter ran (upstream counts its FakeFilter's calls: one run after removing every
//! lower-priority pod, one per pod it tries to give back). upstream's rows whose fake
//! Filter plugins (FalseFilter, or a FakeFilter returning Unschedulable) reject every node
//! whatever is removed run with a Filter that does just that. Nodes hold 500m cpu and 32
//! pods; a node named `a/b` is `a` with labels `hostname: a` and `zone: b`.

use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::jiff::Timestamp;

use super::post_filter_tests::{budget, framework};
use super::*;
use crate::cluster::{Cache, NodeInfo};
use crate::framework::Framework;
use crate::testing::executor::complete;
use crate::testing::{make_node, make_pod};

/// A pod: name, priority, cpu request ("" for none), node.
fn pod(name: &str, priority: i32, cpu: &str, node: Option<&str>) -> Pod {
    let mut pod = make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .priority(priority);
    if !cpu.is_empty() {
        pod = pod.req(&[("cpu", cpu)]);
    }
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

fn label(mut pod: Pod, key: &str, value: &str) -> Pod {
    pod.metadata
        .labels
        .get_or_insert_default()
        .insert(key.to_string(), value.to_string());
    pod
}

fn app_foo(pod: Pod) -> Pod {
    label(pod, "app", "foo")
}

/// upstream's `st.MakeLabelSelector().Exists("foo")`.
pub(super) fn foo_exists() -> Option<LabelSelector> {
    Some(LabelSelector {
        match_expressions: Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                key: "foo".into(),
                operator: "Exists".into(),
                values: None,
            },
        ]),
        ..LabelSelector::default()
    })
}

fn foo_budget(allowed: i32, disrupted: &[&str]) -> PodDisruptionBudget {
    let mut budget = budget("pdb", "app", allowed);
    if let Some(spec) = budget.spec.as_mut() {
        spec.selector = Some(LabelSelector {
            match_labels: Some([("app".to_string(), "foo".to_string())].into()),
            ..Default::default()
        });
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

/// The framework, counting Filter runs as upstream's FakeFilter does; when `rejects`,
/// Filter rejects every node as Unschedulable, as upstream's FalseFilter and a FakeFilter
/// returning Unschedulable do.
struct Counting<'a> {
    framework: &'a Framework,
    filters: AtomicUsize,
    rejects: bool,
}

impl FilterRunner for Counting<'_> {
    fn filter_with_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.filters.fetch_add(1, Ordering::Relaxed);
        if self.rejects {
            return Status::unschedulable("rejected");
        }
        self.framework.filter_with_nominated_pods(state, pod, node)
    }

    fn pre_filter_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.framework.pre_filter_add_pod(state, pod, added, node)
    }

    fn pre_filter_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.framework
            .pre_filter_remove_pod(state, pod, removed, node)
    }
}

const FIVE: [&str; 5] = ["node1", "node2", "node3", "node4", "node5"];

/// The offsets upstream's `rand.NewSource(4)` draws for five nodes, one per cycle.
const OFFSETS: [usize; 3] = [4, 1, 3];

/// (node, victims, PDB violations).
type Want = Vec<(&'static str, Vec<&'static str>, i64)>;

/// [`Want`] as the dry run gives it.
type Got = Vec<(String, Vec<String>, i64)>;

struct Case {
    name: &'static str,
    nodes: &'static [&'static str],
    preemptor: Pod,
    pods: Vec<Pod>,
    budgets: Vec<PodDisruptionBudget>,
    args: DefaultPreemptionArgs,
    /// Sorted by node name.
    want: Want,
    filter_calls: usize,
}

fn limited(percentage: i32, absolute: i32) -> DefaultPreemptionArgs {
    DefaultPreemptionArgs {
        min_candidate_nodes_percentage: percentage,
        min_candidate_nodes_absolute: absolute,
    }
}

pub(super) fn snapshot(nodes: &[&str], pods: &[Pod]) -> Snapshot {
    let mut cache = Cache::new(None);
    for spec in nodes {
        let mut parts = spec.split('/');
        let name = parts.next().unwrap_or_default();
        let mut node = make_node().name(name).label("hostname", name);
        for (key, value) in ["zone", "region"].into_iter().zip(parts) {
            node = node.label(key, value);
        }
        let node = node
            .capacity(&[("cpu", "500m"), ("memory", "500"), ("pods", "32")])
            .obj();
        cache.add_node(node).expect("node");
    }
    for pod in pods {
        cache.add_pod(pod.clone()).expect("pod");
    }
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    snapshot
}

/// One dry run per preemptor, each from its offset, over every node sorted by name:
/// the candidates as upstream compares them, and the Filter runs each took.
fn run(
    name: &str,
    snapshot: &Snapshot,
    budgets: &[PodDisruptionBudget],
    args: &DefaultPreemptionArgs,
    preemptors: &[(Pod, usize)],
    rejects: bool,
) -> Vec<(Got, usize)> {
    let framework = framework(budgets.to_vec());
    let counting = Counting {
        framework: &framework,
        filters: AtomicUsize::new(0),
        rejects,
    };
    let mut potential = snapshot.nodes().to_vec();
    potential.sort_by(|a, b| a.name().cmp(b.name()));
    let mut cycles = Vec::new();
    for (preemptor, offset) in preemptors {
        let pod = PodInfo::new(preemptor.clone()).expect("pod");
        let mut state = CycleState::new();
        state.set_node_count(snapshot.len());
        let pre = complete(framework.run_pre_filter(&mut state, &pod, snapshot));
        assert!(pre.status.is_success(), "{name}: {:?}", pre.status);
        let before = counting.filters.load(Ordering::Relaxed);
        let rules = dry_run::Rules {
            budgets,
            grouping: None,
        };
        let run = dry_run::dry_run(&counting, &state, &pod, &potential, rules, args, *offset);
        let mut got: Got = run
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
        cycles.push((got, counting.filters.load(Ordering::Relaxed) - before));
    }
    cycles
}

fn owned(want: &Want) -> Got {
    want.iter()
        .map(|(n, v, k)| (n.to_string(), v.iter().map(|s| s.to_string()).collect(), *k))
        .collect()
}

#[test]
fn dry_run_table() {
    let default = DefaultPreemptionArgs::default;
    let cases = vec![
        Case {
            name: "a pod that fits on both nodes when lower priority pods are preempted",
            nodes: &["node1", "node2"],
            preemptor: pod("p", 1000, "300m", None),
            pods: vec![
                pod("p1", 100, "300m", Some("node1")),
                pod("p2", 100, "300m", Some("node2")),
            ],
            budgets: vec![],
            args: default(),
            want: vec![("node1", vec!["p1"], 0), ("node2", vec!["p2"], 0)],
            filter_calls: 4,
        },
        Case {
            name: "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
            nodes: &["node1", "node2"],
            preemptor: pod("p", 0, "300m", None),
            pods: vec![
                pod("p1", 100, "300m", Some("node1")),
                pod("p2", 100, "300m", Some("node2")),
            ],
            budgets: vec![],
            args: default(),
            want: vec![],
            filter_calls: 0,
        },
        Case {
            name: "medium priority pod is preempted, but lower priority one stays as it is small",
            nodes: &["node1", "node2"],
            preemptor: pod("p", 1000, "300m", None),
            pods: vec![
                pod("p1.1", 0, "100m", Some("node1")),
                pod("p1.2", 100, "300m", Some("node1")),
                pod("p2", 100, "300m", Some("node2")),
            ],
            budgets: vec![],
            args: default(),
            want: vec![("node1", vec!["p1.2"], 0), ("node2", vec!["p2"], 0)],
            filter_calls: 5,
        },
        Case {
            name: "mixed priority pods are preempted",
            nodes: &["node1", "node2"],
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
            filter_calls: 4,
        },
        Case {
            name: "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
            nodes: &["node1", "node2"],
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
            filter_calls: 4,
        },
        Case {
            name: "pod with anti-affinity is preempted",
            nodes: &["node1", "node2"],
            preemptor: label(pod("p", 1000, "100m", None), "foo", ""),
            pods: vec![
                label(
                    make_pod()
                        .name("p1.1")
                        .namespace("default")
                        .uid("p1.1")
                        .priority(0)
                        .req(&[("cpu", "100m")])
                        .node("node1")
                        .pod_anti_affinity_exists("foo", "hostname")
                        .obj(),
                    "foo",
                    "",
                ),
                pod("p1.2", 100, "100m", Some("node1")),
                pod("p1.3", 1000, "100m", Some("node1")),
                pod("p2", 1000, "100m", Some("node2")),
            ],
            budgets: vec![],
            args: default(),
            want: vec![("node1", vec!["p1.1"], 0)],
            filter_calls: 3,
        },
        Case {
            name: "preemption to resolve pod topology spread filter failure",
            nodes: &["node-a/zone1", "node-b/zone1", "node-x/zone2"],
            preemptor: make_pod()
                .name("p")
                .namespace("default")
                .uid("p")
                .label("foo", "")
                .priority(1000)
                .spread_constraint(1, "zone", "DoNotSchedule", foo_exists())
                .spread_constraint(1, "hostname", "DoNotSchedule", foo_exists())
                .obj(),
            pods: vec![
                label(pod("pod-a1", 100, "", Some("node-a")), "foo", ""),
                label(pod("pod-a2", 0, "", Some("node-a")), "foo", ""),
                label(pod("pod-b1", 0, "", Some("node-b")), "foo", ""),
                label(pod("pod-x1", 1000, "", Some("node-x")), "foo", ""),
                label(pod("pod-x2", 1000, "", Some("node-x")), "foo", ""),
            ],
            budgets: vec![],
            args: default(),
            want: vec![("node-a", vec!["pod-a2"], 0), ("node-b", vec!["pod-b1"], 0)],
            filter_calls: 5,
        },
        Case {
            name: "preemption with violation of same pdb",
            nodes: &["node1"],
            preemptor: pod("p", 1000, "500m", None),
            pods: vec![
                app_foo(pod("p1.1", 100, "200m", Some("node1"))),
                app_foo(pod("p1.2", 100, "200m", Some("node1"))),
            ],
            budgets: vec![foo_budget(1, &[])],
            args: default(),
            want: vec![("node1", vec!["p1.1", "p1.2"], 1)],
            filter_calls: 3,
        },
        Case {
            name: "preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to DisruptedPods",
            nodes: &["node1"],
            preemptor: pod("p", 1000, "500m", None),
            pods: vec![
                app_foo(pod("p1.1", 100, "200m", Some("node1"))),
                app_foo(pod("p1.2", 100, "200m", Some("node1"))),
            ],
            budgets: vec![foo_budget(1, &["p2"])],
            args: default(),
            want: vec![("node1", vec!["p1.1", "p1.2"], 1)],
            filter_calls: 3,
        },
        Case {
            name: "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to DisruptedPods",
            nodes: &["node1"],
            preemptor: pod("p", 1000, "500m", None),
            pods: vec![
                app_foo(pod("p1.1", 100, "200m", Some("node1"))),
                app_foo(pod("p1.2", 100, "200m", Some("node1"))),
            ],
            budgets: vec![foo_budget(1, &["p1.2"])],
            args: default(),
            want: vec![("node1", vec!["p1.1", "p1.2"], 0)],
            filter_calls: 3,
        },
        Case {
            name: "preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to DisruptedPods is treated as 'nonViolating'",
            nodes: &["node1"],
            preemptor: pod("p", 1000, "500m", None),
            pods: vec![
                app_foo(pod("p1.1", 100, "200m", Some("node1"))),
                app_foo(pod("p1.2", 100, "200m", Some("node1"))),
                app_foo(pod("p1.3", 100, "200m", Some("node1"))),
            ],
            budgets: vec![foo_budget(1, &["p1.3"])],
            args: default(),
            want: vec![("node1", vec!["p1.1", "p1.2", "p1.3"], 1)],
            filter_calls: 4,
        },
        Case {
            name: "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
            nodes: &FIVE,
            preemptor: pod("p", 1000, "300m", None),
            pods: (1..=5)
                .map(|i| pod(&format!("p{i}"), 100, "300m", Some(&format!("node{i}"))))
                .collect(),
            budgets: vec![],
            args: limited(40, 1),
            want: vec![("node1", vec!["p1"], 0), ("node5", vec!["p5"], 0)],
            filter_calls: 4,
        },
        Case {
            name: "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
            nodes: &FIVE,
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
            filter_calls: 4,
        },
        Case {
            name: "preemption looks past numCandidates until a non-PDB violating node is found",
            nodes: &FIVE,
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
            filter_calls: 8,
        },
    ];
    for case in cases {
        let snapshot = snapshot(case.nodes, &case.pods);
        let preemptors = [(case.preemptor, OFFSETS[0])];
        let got = run(
            case.name,
            &snapshot,
            &case.budgets,
            &case.args,
            &preemptors,
            false,
        );
        assert_eq!(
            got,
            vec![(owned(&case.want), case.filter_calls)],
            "{}: candidates and Filter runs",
            case.name
        );
    }
}

#[test]
fn dry_run_offset_across_cycles() {
    // upstream "preemption offset across multiple scheduling cycles and wrap around":
    // each cycle starts where upstream's offsets say and stops after two candidates.
    let pods: Vec<Pod> = (1..=5)
        .map(|i| pod(&format!("p{i}"), 100, "300m", Some(&format!("node{i}"))))
        .collect();
    let preemptors: Vec<(Pod, usize)> = ["tp1", "tp2", "tp3"]
        .into_iter()
        .zip(OFFSETS)
        .map(|(name, offset)| (pod(name, 1000, "300m", None), offset))
        .collect();
    let got = run(
        "wrap around",
        &snapshot(&FIVE, &pods),
        &[],
        &limited(40, 1),
        &preemptors,
        false,
    );
    let want: Vec<Want> = vec![
        vec![("node1", vec!["p1"], 0), ("node5", vec!["p5"], 0)],
        vec![("node2", vec!["p2"], 0), ("node3", vec!["p3"], 0)],
        vec![("node4", vec!["p4"], 0), ("node5", vec!["p5"], 0)],
    ];
    let want: Vec<_> = want.iter().map(|w| (owned(w), 4)).collect();
    assert_eq!(got, want);
}

#[test]
fn dry_run_when_filter_rejects() {
    // Filter rejects both nodes even with their lower-priority pod removed: no candidate,
    // and one Filter run per node (nothing is given back).
    let cases = [
        (
            "a pod that does not fit on any node",
            pod("p", 1000, "", None),
            vec![
                pod("p1", 100, "", Some("node1")),
                pod("p2", 100, "", Some("node2")),
            ],
        ),
        (
            "a pod that fits with no preemption",
            pod("p", 1000, "", None),
            vec![
                pod("p1", 100, "", Some("node1")),
                pod("p2", 100, "", Some("node2")),
            ],
        ),
        (
            "a pod that fits on one node with no preemption",
            pod("node1", 1000, "", None),
            vec![
                pod("p1", 100, "", Some("node1")),
                pod("p2", 100, "", Some("node2")),
            ],
        ),
        (
            "get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
            pod("p", 1000, "300m", None),
            vec![
                pod("p1", 100, "300m", Some("node1")),
                pod("p2", 100, "300m", Some("node2")),
            ],
        ),
    ];
    for (name, preemptor, pods) in cases {
        let snapshot = snapshot(&["node1", "node2"], &pods);
        let args = DefaultPreemptionArgs::default();
        let got = run(
            name,
            &snapshot,
            &[],
            &args,
            &[(preemptor, OFFSETS[0])],
            true,
        );
        assert_eq!(got, vec![(vec![], 2)], "{name}: candidates and Filter runs");
    }
}
