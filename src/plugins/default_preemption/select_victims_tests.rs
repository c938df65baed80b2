//! upstream's TestSelectVictimsOnNode, its workload-aware rows (GenericWorkload on), through
//! berth's framework (the default profile, whose Filter and PreFilter include
//! NodeResourcesFit, InterPodAffinity and PodTopologySpread, the plugins each row
//! registers): a pod of a PodGroup with `disruptionMode: All` is evicted with its whole
//! group, wherever its members run; a grouped pod counts at its PodGroup's priority; the
//! budgets count every pod of a unit. Nodes hold 500m cpu, 500 bytes of memory and 32
//! pods (upstream's `veryLargeRes`); a node named `a/b` is `a` in zone `b`.

use k8s_openapi::api::core::v1::{Pod, PodSchedulingGroup};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1beta1::{
    AllDisruptionMode, DisruptionMode, PodGroup, PodGroupSpec, SingleDisruptionMode,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::dry_run_tests::{foo_exists, snapshot};
use super::post_filter_tests::framework;
use super::*;
use crate::cluster::PodGroupStates;
use crate::testing::executor::complete;
use crate::testing::make_pod;

const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;
const VERY_HIGH: i32 = 10000;

/// upstream's smallRes, mediumRes and largeRes.
const SMALL: (&str, &str) = ("100m", "100");
const MEDIUM: (&str, &str) = ("200m", "200");
const LARGE: (&str, &str) = ("300m", "300");

fn pod(name: &str, node: Option<&str>, priority: i32, res: Option<(&str, &str)>) -> Pod {
    let mut pod = make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .priority(priority);
    if let Some((cpu, memory)) = res {
        pod = pod.req(&[("cpu", cpu), ("memory", memory)]);
    }
    if let Some(node) = node {
        pod = pod.node(node);
    }
    pod.obj()
}

fn in_group(mut pod: Pod, group: &str) -> Pod {
    pod.spec.as_mut().expect("spec").scheduling_group = Some(PodSchedulingGroup {
        pod_group_name: Some(group.into()),
    });
    pod
}

fn labelled(mut pod: Pod, key: &str, value: &str) -> Pod {
    pod.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(key.into(), value.into());
    pod
}

fn group(name: &str, priority: i32, all: bool) -> PodGroup {
    PodGroup {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: PodGroupSpec {
            priority: Some(priority),
            disruption_mode: Some(if all {
                DisruptionMode {
                    all: Some(AllDisruptionMode(serde_json::json!({}))),
                    single: None,
                }
            } else {
                DisruptionMode {
                    single: Some(SingleDisruptionMode(serde_json::json!({}))),
                    all: None,
                }
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A budget over `app=foo` allowing no disruption.
fn foo_budget() -> PodDisruptionBudget {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "foo"}}},
        "status": {
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        },
    }))
    .expect("a budget")
}

struct Row {
    name: &'static str,
    nodes: &'static [&'static str],
    main: &'static str,
    groups: Vec<PodGroup>,
    pods: Vec<Pod>,
    budgets: Vec<PodDisruptionBudget>,
    preemptor: Pod,
    /// The victims and how many violate a budget, or `None` for UnschedulableAndUnresolvable.
    want: Option<(&'static [&'static str], i64)>,
}

fn rows() -> Vec<Row> {
    let one = &["node1"][..];
    vec![
        Row {
            name: "Workload Aware: Atomic preemption of PodGroup",
            nodes: one,
            main: "node1",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                in_group(pod("g1-1", Some("node1"), LOW, Some(SMALL)), "pg1"),
                in_group(pod("g1-2", Some("node1"), LOW, Some(MEDIUM)), "pg1"),
            ],
            budgets: vec![],
            preemptor: pod("p", None, HIGH, Some(LARGE)),
            want: Some((&["g1-1", "g1-2"], 0)),
        },
        Row {
            name: "Workload Aware: prefer single pod over podGroup for preemption candidate",
            nodes: one,
            main: "node1",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                pod("p1", Some("node1"), LOW, Some(SMALL)),
                in_group(pod("g1-1", Some("node1"), LOW, Some(SMALL)), "pg1"),
                in_group(pod("g1-2", Some("node1"), LOW, Some(SMALL)), "pg1"),
            ],
            budgets: vec![],
            preemptor: pod("p", None, HIGH, Some(LARGE)),
            want: Some((&["p1"], 0)),
        },
        Row {
            name: "Workload Aware: preempt lower priority pod group instead of higher priority single pod",
            nodes: one,
            main: "node1",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                pod("p1", Some("node1"), HIGH, Some(MEDIUM)),
                in_group(pod("g1-1", Some("node1"), LOW, Some(MEDIUM)), "pg1"),
            ],
            budgets: vec![],
            preemptor: pod("p", None, VERY_HIGH, Some(LARGE)),
            want: Some((&["g1-1"], 0)),
        },
        Row {
            name: "Workload Aware: preempt lower priority single pod instead of higher priority pod group",
            nodes: one,
            main: "node1",
            groups: vec![group("pg1", HIGH, true)],
            pods: vec![
                pod("p1", Some("node1"), LOW, Some(MEDIUM)),
                in_group(pod("g1-1", Some("node1"), HIGH, Some(MEDIUM)), "pg1"),
            ],
            budgets: vec![],
            preemptor: pod("p", None, VERY_HIGH, Some(LARGE)),
            want: Some((&["p1"], 0)),
        },
        Row {
            name: "Workload Aware: PDB: PodGroup as victim with 2 PDB violations",
            nodes: one,
            main: "node1",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                labelled(
                    in_group(pod("g1-1", Some("node1"), LOW, Some(MEDIUM)), "pg1"),
                    "app",
                    "foo",
                ),
                labelled(
                    in_group(pod("g1-2", Some("node1"), LOW, Some(MEDIUM)), "pg1"),
                    "app",
                    "foo",
                ),
            ],
            budgets: vec![foo_budget()],
            preemptor: pod("p", None, HIGH, Some(LARGE)),
            want: Some((&["g1-1", "g1-2"], 2)),
        },
        Row {
            name: "Workload Aware: PDB: Prefer non-violating PodGroup over lower-priority violating PodGroup (DisruptionModeAll)",
            nodes: one,
            main: "node1",
            groups: vec![
                group("pg-violating", LOW, true),
                group("pg-non-violating", MID, true),
            ],
            pods: vec![
                labelled(
                    in_group(
                        pod("g1-1", Some("node1"), LOW, Some(MEDIUM)),
                        "pg-violating",
                    ),
                    "app",
                    "foo",
                ),
                in_group(
                    pod("g2-1", Some("node1"), MID, Some(MEDIUM)),
                    "pg-non-violating",
                ),
            ],
            budgets: vec![foo_budget()],
            preemptor: pod("p", None, HIGH, Some(LARGE)),
            want: Some((&["g2-1"], 0)),
        },
        Row {
            name: "Workload Aware: PDB: Prefer non-violating PodGroup over lower-priority violating PodGroup (DisruptionModeSingle)",
            nodes: one,
            main: "node1",
            groups: vec![
                group("pg-violating", LOW, false),
                group("pg-non-violating", MID, false),
            ],
            pods: vec![
                labelled(
                    in_group(
                        pod("g1-1", Some("node1"), LOW, Some(MEDIUM)),
                        "pg-violating",
                    ),
                    "app",
                    "foo",
                ),
                in_group(
                    pod("g2-1", Some("node1"), MID, Some(MEDIUM)),
                    "pg-non-violating",
                ),
            ],
            budgets: vec![foo_budget()],
            preemptor: pod("p", None, HIGH, Some(LARGE)),
            want: Some((&["g2-1"], 0)),
        },
        Row {
            name: "Cross-node PodGroup: zone anti-affinity blocks reprieve via PreFilterExtension on node-a",
            nodes: &["node-a/zone1", "node-b/zone1"],
            main: "node-a",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                in_group(pod("pod-x", Some("node-a"), LOW, None), "pg1"),
                labelled(
                    in_group(pod("pod-y", Some("node-b"), LOW, None), "pg1"),
                    "foo",
                    "",
                ),
            ],
            budgets: vec![],
            preemptor: anti_affine(pod("p", None, HIGH, None)),
            want: Some((&["pod-x", "pod-y"], 0)),
        },
        Row {
            name: "Cross-node PodGroup: zone anti-affinity blocks reprieve via PreFilterExtension on node-b",
            nodes: &["node-a/zone1", "node-b/zone1"],
            main: "node-b",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                in_group(pod("pod-x", Some("node-a"), LOW, None), "pg1"),
                labelled(
                    in_group(pod("pod-y", Some("node-b"), LOW, None), "pg1"),
                    "foo",
                    "",
                ),
            ],
            budgets: vec![],
            preemptor: anti_affine(pod("p", None, HIGH, None)),
            want: Some((&["pod-x", "pod-y"], 0)),
        },
        Row {
            name: "Cross-node PodGroup: zone anti-affinity reprieve succeeds when remote pod lacks constraint label (negative control)",
            nodes: &["node-a/zone1", "node-b/zone1"],
            main: "node-a",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                in_group(pod("pod-x", Some("node-a"), LOW, None), "pg1"),
                in_group(pod("pod-y", Some("node-b"), LOW, None), "pg1"),
            ],
            budgets: vec![],
            preemptor: anti_affine(pod("p", None, HIGH, None)),
            want: Some((&[], 0)),
        },
        Row {
            name: "Cross-node PodGroup: topology spread blocks reprieve via PreFilterExtension on node-a",
            nodes: &["node-a/zone1", "node-b/zone1", "node-c/zone2"],
            main: "node-a",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                labelled(
                    in_group(pod("pod-a", Some("node-a"), LOW, None), "pg1"),
                    "foo",
                    "",
                ),
                labelled(
                    in_group(pod("pod-b", Some("node-b"), LOW, None), "pg1"),
                    "foo",
                    "",
                ),
                labelled(pod("pod-c", Some("node-c"), VERY_HIGH, None), "foo", ""),
            ],
            budgets: vec![],
            preemptor: spread(labelled(pod("p", None, HIGH, None), "foo", "")),
            want: Some((&["pod-a", "pod-b"], 0)),
        },
        Row {
            name: "Cross-node PodGroup: topology spread blocks reprieve via PreFilterExtension on node-c",
            nodes: &["node-a/zone1", "node-b/zone1", "node-c/zone2"],
            main: "node-c",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                labelled(
                    in_group(pod("pod-a", Some("node-a"), LOW, None), "pg1"),
                    "foo",
                    "",
                ),
                labelled(
                    in_group(pod("pod-b", Some("node-b"), LOW, None), "pg1"),
                    "foo",
                    "",
                ),
                labelled(pod("pod-c", Some("node-c"), VERY_HIGH, None), "foo", ""),
            ],
            budgets: vec![],
            preemptor: spread(labelled(pod("p", None, HIGH, None), "foo", "")),
            want: None,
        },
        Row {
            name: "Cross-node PodGroup: whole pod group across multiple nodes expected to be preempted",
            nodes: &["node-a", "node-b"],
            main: "node-a",
            groups: vec![group("pg1", LOW, true)],
            pods: vec![
                in_group(pod("pod-a", Some("node-a"), LOW, Some(LARGE)), "pg1"),
                in_group(pod("pod-b", Some("node-b"), LOW, Some(LARGE)), "pg1"),
            ],
            budgets: vec![],
            preemptor: pod("p", None, HIGH, Some(LARGE)),
            want: Some((&["pod-a", "pod-b"], 0)),
        },
    ]
}

/// Required anti-affinity to pods with label `foo` in the same zone.
fn anti_affine(pod: Pod) -> Pod {
    let mut builder = crate::testing::make_pod();
    builder = builder.pod_anti_affinity_exists("foo", "zone");
    let mut pod = pod;
    pod.spec.as_mut().expect("spec").affinity = builder.obj().spec.and_then(|s| s.affinity);
    pod
}

/// At most a skew of 1 of pods with label `foo` over zones, or not scheduled.
fn spread(pod: Pod) -> Pod {
    let constraint = crate::testing::spread_constraint(1, "zone", "DoNotSchedule", foo_exists());
    let mut pod = pod;
    pod.spec.as_mut().expect("spec").topology_spread_constraints = Some(vec![constraint]);
    pod
}

#[test]
fn select_victims_on_node_workload_aware_rows() {
    for row in rows() {
        let snapshot = snapshot(row.nodes, &row.pods);
        let states = PodGroupStates::new();
        states.set_served();
        for g in &row.groups {
            states.apply_group(g.clone());
        }
        for p in &row.pods {
            states.add_pod(&std::sync::Arc::new(p.clone()));
        }
        let framework = framework(row.budgets.clone());
        let preemptor = PodInfo::new(row.preemptor.clone()).expect("pod");
        let mut state = CycleState::new();
        state.set_node_count(snapshot.len());
        let pre = complete(framework.run_pre_filter(&mut state, &preemptor, &snapshot));
        assert!(pre.status.is_success(), "{}: {:?}", row.name, pre.status);
        let main = snapshot.get(row.main).expect("the main node");
        let rules = dry_run::Rules {
            budgets: &row.budgets,
            grouping: Some(dry_run::Grouping {
                states: &states,
                snapshot: &snapshot,
            }),
        };
        let got = dry_run::select_victims_on_node(&framework, &state, &preemptor, main, rules);
        match (row.want, got) {
            (Some((victims, violating)), Ok((got, got_violating))) => {
                let mut names: Vec<String> = got.iter().map(|p| p.name().to_string()).collect();
                names.sort();
                assert_eq!(names, victims, "{}", row.name);
                assert_eq!(got_violating, violating, "{}", row.name);
            }
            (None, Err(status)) => {
                assert_eq!(
                    status.code(),
                    Code::UnschedulableAndUnresolvable,
                    "{}",
                    row.name
                );
            }
            (want, got) => panic!("{}: want {want:?}, got {got:?}", row.name),
        }
    }
}
