//! Workload-aware preemption through the scheduler core (DefaultPreemption's
//! PodGroupPostFilter, GenericWorkload on): a Workload API pod group that does not fit
//! picks its victims across the cluster, a PodGroup with `disruptionMode: All` goes as one.
//!
//! The rows are upstream's `TestPodGroupEvaluator_SelectVictimsOnDomain`
//! (`pkg/scheduler/framework/preemption/podgrouppreemption_test.go`, kube-scheduler 1.37)
//! whose victims do not depend on where the group's algorithm puts the members. Upstream
//! fakes both the algorithm (round-robin over a "capacity" per node) and Filter (a pod
//! count); here the real algorithm runs and a node's capacity is its `pods` allocatable,
//! which NodeResourcesFit enforces. Rows not carried, and why:
//!
//! - 4 (Complex Mixed), 6, 7, 16, 17 (PreemptLowerPriority policy rows): the victims
//!   follow the fake algorithm's node choice among equally free nodes.
//! - 25 (Cannot preempt if node is empty): through the core, a group with room is placed;
//!   it never gets to preemption.
//! - Upstream's `numPodGroupDisruptions` and `NumPDBViolations` feed only metrics berth
//!   does not export yet; the victims are what is compared.
//!
//! `TestPodGroupEvaluator_Preempt`'s preemptionPolicy rows need PodGroupPreemptionPolicy
//! (not served); its "ongoing preemption" rows are carried as
//! [`an_ongoing_preemption_keeps_the_nominations`].
//!
//! Every row runs once per [`Dialect`] of the preempting gang: a Workload API PodGroup,
//! scheduler-plugins' PodGroup and label, berth's own. berth places all three through the
//! same pod-group cycle and preemption, so the victims are the same; the victims' groups
//! are Workload API PodGroups in every run.

#[path = "support/core.rs"]
mod scheduler_core;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use berth::cluster::{DisruptionBudgets, PodGroups};
use berth::framework::clock::Clock;
use berth::framework::{Code, Preemption};
use berth::scheduler::{CycleOutput, GroupPreemptionAttempt, Outcome, Scheduler};
use berth::simulate::clock::VirtualClock;
use berth::testing::{make_node, make_pod};
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodSchedulingGroup, PodStatus};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::api::scheduling::v1beta1::{
    AllDisruptionMode, BasicSchedulingPolicy, DisruptionMode, GangSchedulingPolicy, PodGroup,
    PodGroupSchedulingPolicy, PodGroupSpec, SingleDisruptionMode,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use pretty_assertions::assert_eq;
use scheduler_core::{Core, DIALECTS, Dialect};

const LOW: i32 = 10;
const MID: i32 = 100;
const HIGH: i32 = 1000;

/// A PodGroup's disruption mode, as the rows give it.
#[derive(Clone, Copy)]
enum Mode {
    Unset,
    Single,
    All,
}

/// A pod already on a node.
struct Running {
    name: &'static str,
    node: &'static str,
    priority: i32,
    group: Option<&'static str>,
    /// `status.startTime` in seconds after the epoch (none: unknown, "now" upstream).
    start: Option<i64>,
    labels: &'static [(&'static str, &'static str)],
    /// Terminating with `DisruptionTarget` set by the scheduler's preemption.
    preempted: bool,
}

const fn running(name: &'static str, node: &'static str, priority: i32) -> Running {
    Running {
        name,
        node,
        priority,
        group: None,
        start: None,
        labels: &[],
        preempted: false,
    }
}

impl Running {
    const fn in_group(mut self, group: &'static str) -> Self {
        self.group = Some(group);
        self
    }
    const fn started(mut self, second: i64) -> Self {
        self.start = Some(second);
        self
    }
    const fn labelled(mut self, labels: &'static [(&'static str, &'static str)]) -> Self {
        self.labels = labels;
        self
    }
    const fn preempted(mut self) -> Self {
        self.preempted = true;
        self
    }

    fn pod(&self) -> Pod {
        let mut pod = make_pod()
            .name(self.name)
            .namespace("default")
            .uid(self.name)
            .labels(self.labels)
            .node(self.node)
            .priority(self.priority)
            .obj();
        if let Some(group) = self.group {
            pod.spec.as_mut().expect("spec").scheduling_group = Some(PodSchedulingGroup {
                pod_group_name: Some(group.into()),
            });
        }
        let mut status = PodStatus {
            start_time: self
                .start
                .map(|s| Time(k8s_openapi::jiff::Timestamp::from_second(s).expect("a time"))),
            ..Default::default()
        };
        if self.preempted {
            pod.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
            status.conditions = Some(vec![PodCondition {
                type_: "DisruptionTarget".into(),
                status: "True".into(),
                reason: Some("PreemptionByScheduler".into()),
                ..Default::default()
            }]);
        }
        pod.status = Some(status);
        pod
    }
}

fn pod_group(name: &str, priority: i32, mode: Mode, min_count: Option<i32>) -> PodGroup {
    PodGroup {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        },
        spec: PodGroupSpec {
            priority: Some(priority),
            disruption_mode: match mode {
                Mode::Unset => None,
                Mode::Single => Some(DisruptionMode {
                    single: Some(SingleDisruptionMode(serde_json::json!({}))),
                    all: None,
                }),
                Mode::All => Some(DisruptionMode {
                    all: Some(AllDisruptionMode(serde_json::json!({}))),
                    single: None,
                }),
            },
            scheduling_policy: PodGroupSchedulingPolicy {
                gang: min_count.map(|min_count| GangSchedulingPolicy { min_count }),
                basic: min_count.is_none().then(BasicSchedulingPolicy::default),
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A budget over pods labelled `app=foo` that allows no disruption.
fn budget() -> PodDisruptionBudget {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "foo"}}},
    }))
    .map(|mut pdb: PodDisruptionBudget| {
        pdb.status = Some(PodDisruptionBudgetStatus {
            disruptions_allowed: Some(0),
            ..Default::default()
        });
        pdb
    })
    .expect("a budget")
}

/// The preempting group: `members` pods at `priority` in PodGroup `preemptor-pg`.
struct Preemptor {
    priority: i32,
    members: usize,
    min_count: Option<i32>,
    /// Member index and the node it is nominated to.
    nominated: Option<(usize, &'static str)>,
}

const fn preemptor(priority: i32, members: usize) -> Preemptor {
    Preemptor {
        priority,
        members,
        min_count: None,
        nominated: None,
    }
}

struct Row {
    name: &'static str,
    /// Node name and how many pods it holds.
    nodes: &'static [(&'static str, u32)],
    pods: Vec<Running>,
    groups: Vec<PodGroup>,
    budgets: bool,
    preemptor: Preemptor,
    /// The victims, or the whole group's message when it cannot preempt.
    want: Result<&'static [&'static str], &'static str>,
}

struct Run {
    scheduler: Scheduler,
    clock: VirtualClock,
    outcomes: BTreeMap<String, Outcome>,
    nominations: BTreeMap<String, Option<String>>,
    preemptions: Vec<Preemption>,
    conditions: Vec<String>,
    /// The group's message after each pod-group cycle (empty when placed).
    messages: Vec<String>,
    /// DefaultPreemption's PodGroupPostFilter runs, as the pod-group reports give them.
    group_preemptions: Vec<GroupPreemptionAttempt>,
}

fn scheduler(
    nodes: &[(&str, u32)],
    budgets: bool,
    dialect: Dialect,
) -> (Scheduler, VirtualClock, Arc<PodGroups>) {
    let clock = VirtualClock::new();
    let disruption_budgets = Arc::new(DisruptionBudgets::new());
    if budgets {
        disruption_budgets.apply(budget());
    }
    let (core, lister) = dialect.core(Core {
        clock: Some(Arc::new(clock.clone())),
        budgets: Some(disruption_budgets),
        ..Core::default()
    });
    let mut scheduler = core.build();
    for (name, pods) in nodes {
        let pods = pods.to_string();
        let node = make_node()
            .name(name)
            .allocatable(&[("cpu", "64"), ("memory", "64Gi"), ("pods", &pods)])
            .obj();
        scheduler.on_node_add(node).expect("node");
    }
    (scheduler, clock, lister)
}

fn member(dialect: Dialect, index: usize, priority: i32, nominated: Option<&str>) -> Pod {
    let name = format!("p-{index}");
    let mut pod = make_pod()
        .name(&name)
        .namespace("default")
        .uid(&name)
        .priority(priority)
        .obj();
    dialect.join(&mut pod, "preemptor-pg");
    if let Some(node) = nominated {
        pod.status = Some(PodStatus {
            nominated_node_name: Some(node.into()),
            ..Default::default()
        });
    }
    pod
}

/// Runs every cycle until activeQ is empty, binding cycles to their end.
async fn drain(run: &mut Run) {
    while let Some(output) = run.scheduler.schedule_one().await {
        let report = match output {
            CycleOutput::Done(report) => report,
            CycleOutput::Binding(cycle) => run.scheduler.complete_binding(cycle.run().await),
            CycleOutput::PodGroup(report) => {
                run.group_preemptions.extend(report.preemption);
                run.messages.push(report.message);
                if let Some(c) = report.condition {
                    run.conditions
                        .push(format!("{} {}: {}", c.status, c.reason, c.message));
                }
                continue;
            }
        };
        let name = report.pod.name().to_string();
        if let Some(preemption) = report.preemption {
            run.preemptions.push(*preemption);
        }
        run.nominations.insert(name.clone(), report.nominating);
        run.outcomes.insert(name, report.outcome);
    }
}

async fn start(row: &Row, dialect: Dialect) -> Run {
    let (mut scheduler, clock, lister) = scheduler(row.nodes, row.budgets, dialect);
    for group in &row.groups {
        scheduler.on_scheduling_group_apply(group.clone());
    }
    for pod in &row.pods {
        scheduler.on_pod_add(pod.pod()).expect("pod");
    }
    let p = &row.preemptor;
    dialect.add_gang(
        &mut scheduler,
        &lister,
        "preemptor-pg",
        p.min_count,
        p.priority,
    );
    for index in 0..p.members {
        let nominated = p.nominated.filter(|(i, _)| *i == index).map(|(_, n)| n);
        scheduler
            .on_pod_add(member(dialect, index, p.priority, nominated))
            .expect("pod");
    }
    let mut run = Run {
        scheduler,
        clock,
        outcomes: BTreeMap::new(),
        nominations: BTreeMap::new(),
        preemptions: Vec::new(),
        conditions: Vec::new(),
        messages: Vec::new(),
        group_preemptions: Vec::new(),
    };
    drain(&mut run).await;
    run
}

fn victims(run: &Run) -> BTreeSet<String> {
    run.preemptions
        .iter()
        .flat_map(|p| &p.victims)
        .map(|v| v.pod.metadata.name.clone().unwrap_or_default())
        .collect()
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            name: "Priority: mix of no groups and pod groups",
            nodes: &[("node1", 2)],
            pods: vec![
                running("p1", "node1", LOW),
                running("p2", "node1", LOW).in_group("pg1"),
            ],
            groups: vec![pod_group("pg1", LOW, Mode::Single, None)],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1"]),
        },
        Row {
            name: "Priority: StartTime of pods from same group with disruption mode single",
            nodes: &[("node1", 2)],
            pods: vec![
                running("p1", "node1", LOW).in_group("pg1").started(1),
                running("p2", "node1", LOW).in_group("pg1").started(0),
            ],
            groups: vec![pod_group("pg1", LOW, Mode::Single, None)],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1"]),
        },
        Row {
            name: "Pod group with disruption mode group not reprieved",
            nodes: &[("node1", 1), ("node2", 1)],
            pods: vec![
                running("p1", "node1", LOW).in_group("pg1"),
                running("p2", "node2", LOW).in_group("pg1"),
            ],
            groups: vec![pod_group("pg1", LOW, Mode::All, None)],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1", "p2"]),
        },
        Row {
            name: "PDB: Mixed groups",
            nodes: &[("node1", 2)],
            pods: vec![
                running("victim-pdb", "node1", LOW)
                    .in_group("pg1")
                    .labelled(&[("app", "foo")]),
                running("victim-no-pdb", "node1", LOW).in_group("pg1"),
            ],
            groups: vec![],
            budgets: true,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["victim-no-pdb"]),
        },
        Row {
            name: "Preemptor group is eligible if terminating pods are on non-nominated nodes",
            nodes: &[("node1", 1), ("node2", 1)],
            pods: vec![
                running("victim", "node2", LOW).preempted(),
                running("other-victim", "node1", LOW),
            ],
            groups: vec![],
            budgets: false,
            preemptor: Preemptor {
                nominated: Some((1, "node1")),
                ..preemptor(HIGH, 2)
            },
            want: Ok(&["other-victim", "victim"]),
        },
        Row {
            name: "Preemptor group is eligible if nominated node has terminating pod belonging to a pod group of higher priority",
            nodes: &[("node1", 2), ("node2", 1)],
            pods: vec![
                running("victim", "node1", LOW)
                    .in_group("victim-pg")
                    .preempted(),
                running("other-victim", "node1", LOW),
            ],
            groups: vec![pod_group("victim-pg", HIGH, Mode::All, None)],
            budgets: false,
            preemptor: Preemptor {
                nominated: Some((1, "node1")),
                ..preemptor(MID, 2)
            },
            want: Ok(&["other-victim"]),
        },
        Row {
            name: "Preemptor group is eligible if nominated node has terminating pod belonging to a pod group of higher priority with nil DisruptionMode",
            nodes: &[("node1", 2), ("node2", 1)],
            pods: vec![
                running("victim", "node1", LOW)
                    .in_group("victim-pg")
                    .preempted(),
                running("other-victim", "node1", LOW),
            ],
            groups: vec![pod_group("victim-pg", HIGH, Mode::Unset, None)],
            budgets: false,
            preemptor: Preemptor {
                nominated: Some((1, "node1")),
                ..preemptor(MID, 2)
            },
            want: Ok(&["other-victim"]),
        },
        Row {
            name: "Preempt single lower priority pod",
            nodes: &[("node1", 1)],
            pods: vec![running("p1", "node1", LOW)],
            groups: vec![],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1"]),
        },
        Row {
            name: "Priority: Prefer lower priority victim",
            nodes: &[("node1", 2)],
            pods: vec![
                running("p1", "node1", LOW),
                running("p2", "node1", MID),
                running("p3", "node1", HIGH),
            ],
            groups: vec![],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1", "p2"]),
        },
        Row {
            name: "Efficiency: Preempt minimum number of victims",
            nodes: &[("node1", 3)],
            pods: vec![
                running("p1", "node1", LOW),
                running("p2", "node1", LOW),
                running("p3", "node1", LOW),
                running("p4", "node1", LOW),
            ],
            groups: vec![],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p3", "p4"]),
        },
        Row {
            name: "PDB: Prefer non-violating victim",
            nodes: &[("node1", 2)],
            pods: vec![
                running("victim-pdb", "node1", LOW).labelled(&[("app", "foo")]),
                running("victim-no-pdb", "node1", LOW),
            ],
            groups: vec![],
            budgets: true,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["victim-no-pdb"]),
        },
        Row {
            name: "PDB: Prefer removing non-violating victim over lower priority violating victim",
            nodes: &[("node1", 2)],
            pods: vec![
                running("victim-pdb", "node1", LOW).labelled(&[("app", "foo")]),
                running("victim-no-pdb", "node1", MID),
            ],
            groups: vec![],
            budgets: true,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["victim-no-pdb"]),
        },
        Row {
            name: "PDB: Prefer lower priority pod for preemption, when preemption without pdb violation is not possible",
            nodes: &[("node1", 2)],
            pods: vec![
                running("p1", "node1", LOW).labelled(&[("app", "foo")]),
                running("p2", "node1", MID).labelled(&[("app", "foo")]),
            ],
            groups: vec![],
            budgets: true,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1"]),
        },
        Row {
            name: "PodGroup: Preempt group as a whole",
            nodes: &[("node1", 1), ("node2", 1)],
            pods: vec![
                running("p1", "node1", LOW).in_group("pg1"),
                running("p2", "node2", LOW).in_group("pg1"),
            ],
            groups: vec![pod_group("pg1", LOW, Mode::All, None)],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1", "p2"]),
        },
        Row {
            name: "PodGroup: Prefer single pod over podGroup for preemption candidate",
            nodes: &[("node1", 3)],
            pods: vec![
                running("p1", "node1", LOW),
                running("g1-1", "node1", LOW).in_group("pg1"),
                running("g1-2", "node1", LOW).in_group("pg1"),
            ],
            groups: vec![pod_group("pg1", LOW, Mode::All, None)],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1"]),
        },
        Row {
            name: "PodGroup: Preempt group as a whole on single node",
            nodes: &[("node1", 3)],
            pods: vec![
                running("g1-1", "node1", LOW).in_group("pg1"),
                running("g1-2", "node1", LOW).in_group("pg1"),
                running("p1", "node1", MID),
            ],
            groups: vec![pod_group("pg1", LOW, Mode::All, None)],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["g1-1", "g1-2"]),
        },
        Row {
            name: "PDB: Unit violation if any member violates",
            nodes: &[("node1", 3)],
            pods: vec![
                running("g1-1", "node1", LOW)
                    .in_group("pg1")
                    .labelled(&[("app", "foo")]),
                running("g1-2", "node1", LOW).in_group("pg1"),
                running("p1", "node1", LOW),
            ],
            groups: vec![pod_group("pg1", LOW, Mode::All, None)],
            budgets: true,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1"]),
        },
        Row {
            name: "Failure: Cannot preempt the victim with higher priority",
            nodes: &[("node1", 1)],
            pods: vec![running("p1", "node1", HIGH)],
            groups: vec![],
            budgets: false,
            preemptor: preemptor(MID, 1),
            want: Err("pod group preemption: No preemption victims found for incoming preemptor"),
        },
        Row {
            name: "Failure: Cannot preempt the victim with equal priority",
            nodes: &[("node1", 1)],
            pods: vec![running("p1", "node1", MID)],
            groups: vec![],
            budgets: false,
            preemptor: preemptor(MID, 1),
            want: Err("pod group preemption: No preemption victims found for incoming preemptor"),
        },
        Row {
            name: "Priority divergence: candidate victim PodGroup has lower priority than the Pods from that group",
            nodes: &[("node1", 1), ("node2", 1)],
            pods: vec![
                running("p1", "node1", HIGH).in_group("pg1"),
                running("p2", "node2", HIGH).in_group("pg1"),
            ],
            groups: vec![pod_group("pg1", MID, Mode::All, None)],
            budgets: false,
            preemptor: preemptor(HIGH, 1),
            want: Ok(&["p1", "p2"]),
        },
        Row {
            name: "Priority divergence: candidate victim PodGroup has higher priority than the Pods from that group",
            nodes: &[("node1", 1), ("node2", 1)],
            pods: vec![
                running("p1", "node1", LOW).in_group("pg1"),
                running("p2", "node2", LOW).in_group("pg1"),
            ],
            groups: vec![pod_group("pg1", MID, Mode::All, None)],
            budgets: false,
            preemptor: preemptor(MID, 1),
            want: Err("pod group preemption: No preemption victims found for incoming preemptor"),
        },
        Row {
            name: "Gang scheduling: schedule as many pods as possible without preempting higher priority pods, but still more than minCount",
            nodes: &[("node1", 1), ("node2", 1), ("node3", 1), ("node4", 1)],
            pods: vec![
                running("p1", "node1", LOW),
                running("p2", "node2", LOW),
                running("p3", "node3", HIGH),
                running("p4", "node4", HIGH),
            ],
            groups: vec![],
            budgets: false,
            preemptor: Preemptor {
                min_count: Some(1),
                ..preemptor(HIGH, 3)
            },
            want: Ok(&["p1", "p2"]),
        },
        Row {
            name: "Gang scheduling: do not reprieve victim pod group of lower priority",
            nodes: &[("node1", 1), ("node2", 1), ("node3", 1)],
            pods: vec![
                running("v1", "node1", MID).in_group("victim-pg"),
                running("v2", "node2", MID).in_group("victim-pg"),
                running("v3", "node3", LOW),
            ],
            groups: vec![pod_group("victim-pg", MID, Mode::All, Some(1))],
            budgets: false,
            preemptor: Preemptor {
                min_count: Some(1),
                ..preemptor(HIGH, 3)
            },
            want: Ok(&["v1", "v2", "v3"]),
        },
        Row {
            name: "Gang scheduling: preempt a pod group victim but do not schedule full pod group",
            nodes: &[("node1", 1), ("node2", 1), ("node3", 1), ("node4", 1)],
            pods: vec![
                running("v1", "node1", MID).in_group("victim-pg"),
                running("v2", "node2", MID).in_group("victim-pg"),
                running("v3", "node3", HIGH).in_group("victim-pg2"),
                running("v4", "node4", HIGH).in_group("victim-pg2"),
            ],
            groups: vec![
                pod_group("victim-pg", MID, Mode::All, Some(2)),
                pod_group("victim-pg2", HIGH, Mode::All, Some(2)),
            ],
            budgets: false,
            preemptor: Preemptor {
                min_count: Some(1),
                ..preemptor(HIGH, 3)
            },
            want: Ok(&["v1", "v2"]),
        },
        Row {
            name: "Basic scheduling: schedule as many pods as possible without preempting higher priority pods",
            nodes: &[("node1", 1), ("node2", 1), ("node3", 1), ("node4", 1)],
            pods: vec![
                running("p1", "node1", LOW),
                running("p2", "node2", LOW),
                running("p3", "node3", HIGH),
                running("p4", "node4", HIGH),
            ],
            groups: vec![],
            budgets: false,
            preemptor: preemptor(HIGH, 3),
            want: Ok(&["p1", "p2"]),
        },
        Row {
            name: "Basic scheduling: preempt a pod group victim but do not schedule full pod group",
            nodes: &[("node1", 1), ("node2", 1), ("node3", 1), ("node4", 1)],
            pods: vec![
                running("v1", "node1", MID).in_group("victim-pg"),
                running("v2", "node2", MID).in_group("victim-pg"),
                running("v3", "node3", HIGH).in_group("victim-pg2"),
                running("v4", "node4", HIGH).in_group("victim-pg2"),
            ],
            groups: vec![
                pod_group("victim-pg", MID, Mode::All, Some(2)),
                pod_group("victim-pg2", HIGH, Mode::All, Some(2)),
            ],
            budgets: false,
            preemptor: preemptor(HIGH, 3),
            want: Ok(&["v1", "v2"]),
        },
        Row {
            name: "Basic scheduling: do not reprieve victim pod group of lower priority",
            nodes: &[("node1", 1), ("node2", 1), ("node3", 1)],
            pods: vec![
                running("v1", "node1", MID).in_group("victim-pg"),
                running("v2", "node2", MID).in_group("victim-pg"),
                running("v3", "node3", LOW),
            ],
            groups: vec![pod_group("victim-pg", MID, Mode::All, Some(1))],
            budgets: false,
            preemptor: preemptor(HIGH, 3),
            want: Ok(&["v1", "v2", "v3"]),
        },
    ]
}

#[tokio::test]
async fn victims_are_chosen_for_the_group_as_upstream_chooses_them() {
    for (dialect, row) in DIALECTS
        .iter()
        .flat_map(|d| rows().into_iter().map(move |r| (*d, r)))
    {
        let run = start(&row, dialect).await;
        let name = format!("{} ({dialect:?})", row.name);
        let row = Row {
            name: name.leak(),
            ..row
        };
        match row.want {
            Ok(want) => {
                // A victim already terminating is chosen but needs no eviction.
                let terminating: BTreeSet<&str> = row
                    .pods
                    .iter()
                    .filter(|p| p.preempted)
                    .map(|p| p.name)
                    .collect();
                let evicted: BTreeSet<String> = want
                    .iter()
                    .filter(|v| !terminating.contains(*v))
                    .map(|s| s.to_string())
                    .collect();
                assert_eq!(victims(&run), evicted, "{}", row.name);
                assert_eq!(run.preemptions.len(), 1, "{}: one preemption", row.name);
                let preemption = &run.preemptions[0];
                assert_eq!(preemption.node, "cluster", "{}", row.name);
                // Upstream's workload-preemption metrics see a successful run with every
                // chosen victim.
                let attempt = run.group_preemptions.last().expect("a PodGroupPostFilter");
                assert_eq!(attempt.code, Code::Success, "{}", row.name);
                assert_eq!(
                    attempt.victims.map(|(pods, _)| pods),
                    Some(want.len()),
                    "{}",
                    row.name
                );
                let group = preemption.group.as_ref().expect("a group preemption");
                assert_eq!(
                    group.metadata.name.as_deref(),
                    Some("preemptor-pg"),
                    "{}",
                    row.name
                );
                let message = run.messages.last().expect("a pod-group cycle");
                assert!(
                    message.ends_with(&format!(
                        "pod group preemption: found a placement for podgroup, preempting {} victims",
                        want.len()
                    )),
                    "{}: {message}",
                    row.name
                );
                // Only a Workload API PodGroup has a condition to write.
                let condition = run.conditions.last();
                if dialect == Dialect::Workload {
                    assert!(
                        condition.is_some_and(|c| c.ends_with(message.as_str())),
                        "{}: {condition:?}",
                        row.name
                    );
                } else {
                    assert_eq!(condition, None, "{}", row.name);
                }
            }
            Err(reason) => {
                assert_eq!(victims(&run), BTreeSet::new(), "{}", row.name);
                let message = run.messages.last().expect("a pod-group cycle");
                assert!(
                    message.ends_with(&format!(", {reason}")),
                    "{}: {message}",
                    row.name
                );
            }
        }
    }
}

/// Upstream's `TestPodGroupEvaluator_SelectVictimsOnDomain_NominatedNodes`: a member the
/// algorithm placed is nominated to its node; one it did not place is not nominated.
#[tokio::test]
async fn placed_members_are_nominated_and_the_rest_lose_their_nominations() {
    // One node for one pod, taken by a low-priority pod; a basic group of two.
    let row = Row {
        name: "nominations",
        nodes: &[("node1", 1)],
        pods: vec![running("p3", "node1", LOW)],
        groups: vec![],
        budgets: false,
        preemptor: preemptor(HIGH, 2),
        want: Ok(&["p3"]),
    };
    for dialect in DIALECTS {
        let run = start(&row, dialect).await;
        assert_eq!(
            victims(&run),
            BTreeSet::from(["p3".to_string()]),
            "{dialect:?}"
        );
        let nominated: Vec<_> = (0..2)
            .map(|i| run.nominations[&format!("p-{i}")].clone())
            .collect();
        assert_eq!(
            nominated,
            vec![Some("node1".to_string()), Some(String::new())],
            "{dialect:?}: p-0 placed on node1, p-1 left out"
        );
    }
}

/// Upstream's TestPodGroupEvaluator_Preempt, "ongoing preemption" rows: a member nominated
/// to a node where a lower-priority pod is terminating by preemption means the group's
/// preemption is under way; nothing more is evicted and the nominations stay.
#[tokio::test]
async fn an_ongoing_preemption_keeps_the_nominations() {
    let row = Row {
        name: "ongoing",
        nodes: &[("node1", 1), ("node2", 1)],
        pods: vec![
            running("victim", "node1", LOW).preempted(),
            running("other", "node2", LOW),
        ],
        groups: vec![],
        budgets: false,
        preemptor: Preemptor {
            nominated: Some((0, "node1")),
            min_count: Some(2),
            ..preemptor(HIGH, 2)
        },
        want: Ok(&[]),
    };
    for dialect in DIALECTS {
        let run = start(&row, dialect).await;
        assert_eq!(victims(&run), BTreeSet::new(), "{dialect:?}");
        // A successful run that chose no victims.
        assert_eq!(
            run.group_preemptions,
            [GroupPreemptionAttempt {
                code: Code::Success,
                victims: None,
            }],
            "{dialect:?}"
        );
        let message = run.messages.last().expect("a pod-group cycle");
        assert!(
            message.ends_with("pod group preemption: ongoing preemption on nominated nodes"),
            "{dialect:?}: {message}"
        );
        assert_eq!(run.nominations["p-0"], Some("node1".to_string()));
        assert_eq!(run.nominations["p-1"], Some(String::new()));
    }
}

/// The whole course, as the differential regression `gang-preemption-unit.yaml` has it
/// against the real kube-scheduler: the group preempts a PodGroup of `disruptionMode: All`
/// as one, waits while the victims go, and binds whole on the next cycle.
#[tokio::test]
async fn a_gang_preempts_as_a_unit_and_binds_once_the_victims_are_gone() {
    let row = Row {
        name: "unit",
        nodes: &[("node1", 4)],
        pods: vec![
            running("batch-0", "node1", LOW).in_group("batch"),
            running("batch-1", "node1", LOW).in_group("batch"),
            running("lone", "node1", LOW),
        ],
        groups: vec![pod_group("batch", LOW, Mode::All, None)],
        budgets: false,
        preemptor: Preemptor {
            min_count: Some(3),
            ..preemptor(HIGH, 3)
        },
        want: Ok(&["batch-0", "batch-1"]),
    };
    for dialect in DIALECTS {
        unit_preemption(&row, dialect).await;
    }
}

async fn unit_preemption(row: &Row, dialect: Dialect) {
    let mut run = start(row, dialect).await;
    assert_eq!(
        victims(&run),
        BTreeSet::from(["batch-0".to_string(), "batch-1".to_string()])
    );
    // One run of PodGroupPostFilter: two pods, one pod group's unit.
    assert_eq!(
        run.group_preemptions,
        [GroupPreemptionAttempt {
            code: Code::Success,
            victims: Some((2, 1)),
        }]
    );
    // The member that fit has the group's status; the one that did not, its own; the
    // one never tried, the group's from before PodGroupPostFilter.
    let mut messages: Vec<String> = run
        .outcomes
        .values()
        .map(|o| match o {
            Outcome::Unschedulable { message } => message.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    messages.sort();
    let short = dialect.cannot_reach("preemptor-pg", 3, 1, 1);
    let mut want = vec![
        "0/1 nodes are available: 1 Too many pods.".to_string(),
        short.clone(),
        format!(
            "{short}, pod group preemption: found a placement for podgroup, preempting 2 victims"
        ),
    ];
    want.sort();
    assert_eq!(messages, want, "{dialect:?}");
    for member in ["p-0", "p-1", "p-2"] {
        assert_eq!(
            run.nominations[member],
            Some("node1".to_string()),
            "{member}"
        );
    }
    // The adapter evicts the victims and reports the end.
    let preemption = run.preemptions.pop().expect("a preemption");
    for victim in &preemption.victims {
        run.scheduler.on_pod_delete(&victim.pod);
    }
    run.scheduler
        .complete_preemption(&preemption.preemptor_key(), true);
    run.outcomes.clear();
    // Past the group's backoff.
    let later = run.clock.now() + std::time::Duration::from_secs(30);
    run.clock.advance_to(later);
    run.scheduler.flush_queues(later, false);
    drain(&mut run).await;
    for member in ["p-0", "p-1", "p-2"] {
        assert_eq!(
            run.outcomes.get(member),
            Some(&Outcome::Scheduled {
                node: "node1".into()
            }),
            "{member}"
        );
    }
    assert_eq!(
        run.messages.last().map(String::as_str),
        Some(""),
        "{dialect:?}"
    );
    if dialect == Dialect::Workload {
        assert_eq!(
            run.conditions.last().map(String::as_str),
            Some("True Scheduled: ")
        );
    }
}
