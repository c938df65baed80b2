//! The pod-group cycle through the scheduler core with the default profile
//! (GangScheduling on, as kube-scheduler 1.37 with GenericWorkload on). Expected outcomes
//! follow upstream's `schedule_one_podgroup_test.go` (TestPodGroupSchedulingAlgorithm,
//! TestSubmitPodGroupAlgorithmResult, TestValidatePodGroup) and GangScheduling's
//! PreEnqueue/Permit/PlacementFeasible messages; node sizes make every verdict follow
//! from the pods' requests alone.
//!
//! The tests of a gang's course run once per [`Dialect`]: berth places scheduler-plugins'
//! and its own PodGroups through the same cycle, Coscheduling judging them in
//! GangScheduling's place (minMember for minCount, in its own words).

#[path = "support/core.rs"]
mod scheduler_core;

use std::collections::BTreeMap;
use std::sync::Arc;

use berth::api::SchedulerProfileSpec;
use berth::cluster::GroupKey;
use berth::scheduler::{CycleOutput, Outcome, PodGroupReport, Scheduler, merge_condition};
use berth::simulate::clock::VirtualClock;
use berth::testing::{make_node, make_pod};
use k8s_openapi::api::core::v1::{Node, Pod, PodSchedulingGroup};
use k8s_openapi::api::scheduling::v1beta1::{
    BasicSchedulingPolicy, GangSchedulingPolicy, PodGroup, PodGroupSchedulingPolicy, PodGroupSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use pretty_assertions::assert_eq;
use scheduler_core::{Core, DIALECTS, Dialect};

fn node(name: &str, cpu: &str) -> Node {
    make_node()
        .name(name)
        .allocatable(&[("cpu", cpu), ("memory", "8Gi"), ("pods", "110")])
        .obj()
}

fn member(name: &str, group: &str, cpu: &str) -> Pod {
    let mut pod = make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .req(&[("cpu", cpu)])
        .obj();
    pod.spec.as_mut().expect("spec").scheduling_group = Some(PodSchedulingGroup {
        pod_group_name: Some(group.to_string()),
    });
    pod
}

/// A PodGroup with a gang policy of `min_count`, or the basic policy for `None`.
fn pod_group(name: &str, min_count: Option<i32>) -> PodGroup {
    PodGroup {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            generation: Some(3),
            ..Default::default()
        },
        spec: PodGroupSpec {
            scheduling_policy: PodGroupSchedulingPolicy {
                gang: min_count.map(|min_count| GangSchedulingPolicy { min_count }),
                basic: min_count.is_none().then(BasicSchedulingPolicy::default),
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A scheduler of the default profile that groups pods by their PodGroups, over
/// `nodes` (name, cpu).
fn scheduler(nodes: &[(&str, &str)]) -> (Scheduler, VirtualClock) {
    scheduler_with(&SchedulerProfileSpec::default(), nodes)
}

/// [`scheduler`] in `dialect`: its profile, and the PodGroups Coscheduling reads.
fn scheduler_in(
    dialect: Dialect,
    nodes: &[(&str, &str)],
) -> (Scheduler, Arc<berth::cluster::PodGroups>) {
    let (core, lister) = dialect.core(Core::default());
    let mut scheduler = core.build();
    for (name, cpu) in nodes {
        scheduler.on_node_add(node(name, cpu)).expect("node");
    }
    (scheduler, lister)
}

/// A `cpu` member of `group` in `dialect`.
fn member_in(dialect: Dialect, name: &str, group: &str, cpu: &str) -> Pod {
    let mut pod = make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .req(&[("cpu", cpu)])
        .obj();
    dialect.join(&mut pod, group);
    pod
}

/// [`scheduler`] with the profile `spec`.
fn scheduler_with(
    spec: &SchedulerProfileSpec,
    nodes: &[(&str, &str)],
) -> (Scheduler, VirtualClock) {
    let clock = VirtualClock::new();
    let mut scheduler = Core {
        spec: spec.clone(),
        clock: Some(Arc::new(clock.clone())),
        pod_groups: true,
        ..Core::default()
    }
    .build();
    for (name, cpu) in nodes {
        scheduler.on_node_add(node(name, cpu)).expect("node");
    }
    (scheduler, clock)
}

/// What became of each pod and group after the queues ran dry.
#[derive(Default, Debug)]
struct Outcomes {
    pods: BTreeMap<String, Outcome>,
    groups: BTreeMap<GroupKey, PodGroupReport>,
    /// Each PodGroup's conditions, merged as the operator writes them.
    conditions: BTreeMap<GroupKey, Vec<Condition>>,
    attempts: BTreeMap<String, u32>,
}

impl Outcomes {
    fn node(&self, pod: &str) -> Option<&str> {
        match self.pods.get(pod) {
            Some(Outcome::Scheduled { node }) => Some(node),
            _ => None,
        }
    }

    fn message(&self, pod: &str) -> &str {
        match self.pods.get(pod) {
            Some(Outcome::Unschedulable { message } | Outcome::Error { message }) => message,
            other => panic!("{pod} was not rejected: {other:?}"),
        }
    }

    /// The group's message after its last cycle, in any dialect.
    fn group_message(&self, dialect: Dialect, group: &str) -> &str {
        let key = match dialect {
            Dialect::Workload => GroupKey::new("default", group),
            _ => GroupKey::coscheduling("default", group),
        };
        &self.groups[&key].message
    }

    /// The PodGroup's `PodGroupInitiallyScheduled` after every cycle's merge.
    fn condition(&self, group: &str) -> (String, String, String) {
        let conditions = &self.conditions[&GroupKey::new("default", group)];
        let [c] = &conditions[..] else {
            panic!("one condition: {conditions:?}");
        };
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }
}

/// Runs every cycle until activeQ is empty; binding cycles run to the end in order
/// (a member held at Permit was allowed by the member that completed the quorum, in the
/// same group cycle).
async fn run(scheduler: &mut Scheduler, outcomes: &mut Outcomes) {
    while let Some(output) = scheduler.schedule_one().await {
        let report = match output {
            CycleOutput::Done(report) => report,
            CycleOutput::Binding(cycle) => scheduler.complete_binding(cycle.run().await),
            CycleOutput::PodGroup(report) => {
                // Only a Workload API PodGroup has a condition.
                if let Some(wanted) = &report.condition {
                    let conditions = outcomes.conditions.entry(report.group.clone()).or_default();
                    if let Some(merged) = merge_condition(conditions, wanted, Timestamp::UNIX_EPOCH)
                    {
                        *conditions = merged;
                    }
                }
                outcomes.groups.insert(report.group.clone(), report);
                continue;
            }
        };
        let name = report.pod.name().to_string();
        outcomes.attempts.insert(name.clone(), report.attempts);
        outcomes.pods.insert(name, report.outcome);
    }
}

#[tokio::test]
async fn a_gang_that_fits_is_placed_whole() {
    for dialect in DIALECTS {
        let (mut s, lister) = scheduler_in(dialect, &[("n1", "2"), ("n2", "2")]);
        dialect.add_gang(&mut s, &lister, "train", Some(3), 0);
        for name in ["a", "b", "c"] {
            s.on_pod_add(member_in(dialect, name, "train", "1"))
                .expect("pod");
        }
        let mut outcomes = Outcomes::default();
        run(&mut s, &mut outcomes).await;
        for name in ["a", "b", "c"] {
            assert!(
                outcomes.node(name).is_some(),
                "{dialect:?} {name}: {outcomes:?}"
            );
        }
        assert_eq!(outcomes.group_message(dialect, "train"), "", "{dialect:?}");
        if dialect == Dialect::Workload {
            assert_eq!(
                outcomes.condition("train"),
                ("True".into(), "Scheduled".into(), String::new())
            );
            let report = &outcomes.groups[&GroupKey::new("default", "train")];
            assert_eq!((report.placed, report.members), (3, 3));
            let condition = report.condition.as_ref().expect("condition");
            assert_eq!(condition.observed_generation, Some(1));
        } else {
            let report = &outcomes.groups[&GroupKey::coscheduling("default", "train")];
            assert_eq!((report.placed, report.members), (3, 3), "{dialect:?}");
            assert!(report.condition.is_none(), "{dialect:?}");
        }
    }
}

#[tokio::test]
async fn a_gang_short_of_its_quorum_places_no_member() {
    for dialect in DIALECTS {
        short_of_quorum(dialect).await;
    }
}

async fn short_of_quorum(dialect: Dialect) {
    // Two 1-cpu nodes, three 1-cpu members, minCount 3: two fit, the third cannot.
    let (mut s, lister) = scheduler_in(dialect, &[("n1", "1"), ("n2", "1")]);
    dialect.add_gang(&mut s, &lister, "train", Some(3), 0);
    for name in ["a", "b", "c"] {
        s.on_pod_add(member_in(dialect, name, "train", "1"))
            .expect("pod");
    }
    let mut outcomes = Outcomes::default();
    run(&mut s, &mut outcomes).await;
    // After a and b: Wait; after c: 2 scheduled + 0 remaining < 3. A rejection after a
    // member was tried is the plugin's own status (GangScheduling's, or Coscheduling's
    // for its PodGroups); DefaultPreemption's PodGroupPostFilter reason follows (no pod
    // to preempt in an empty cluster), as the real kube-scheduler 1.37 words it
    // (tests/differential.rs, examples/gangs.yaml).
    let group = format!(
        "{}, pod group preemption: No preemption victims found for incoming preemptor",
        dialect.cannot_reach("train", 3, 2, 0)
    );
    assert_eq!(
        outcomes.group_message(dialect, "train"),
        group,
        "{dialect:?}"
    );
    if dialect == Dialect::Workload {
        assert_eq!(
            outcomes.condition("train"),
            ("False".into(), "Unschedulable".into(), group.clone())
        );
    }
    for name in ["a", "b"] {
        assert_eq!(outcomes.node(name), None, "{name}");
        assert_eq!(
            outcomes.message(name),
            format!("pod group is unschedulable, {group}"),
            "{dialect:?} {name}: placed in the algorithm, rejected with the group"
        );
    }
    assert_eq!(
        outcomes.message("c"),
        "0/2 nodes are available: 2 Insufficient cpu.",
        "{dialect:?}: c's own fit error, without PostFilter"
    );
    // Nothing stays assumed: the cluster is empty for the next pod.
    s.on_pod_add(
        make_pod()
            .name("lone")
            .namespace("default")
            .uid("lone")
            .req(&[("cpu", "1")])
            .obj(),
    )
    .expect("pod");
    let mut lone = Outcomes::default();
    run(&mut s, &mut lone).await;
    assert!(lone.node("lone").is_some(), "{dialect:?}: {lone:?}");
}

#[tokio::test]
async fn an_unsatisfiable_gang_stops_at_its_first_failure() {
    for dialect in DIALECTS {
        // minCount 3 and the first member fits nowhere: 0 scheduled + 2 remaining < 3.
        let (mut s, lister) = scheduler_in(dialect, &[("n1", "2")]);
        dialect.add_gang(&mut s, &lister, "big", Some(3), 0);
        for name in ["a", "b", "c"] {
            s.on_pod_add(member_in(dialect, name, "big", "4"))
                .expect("pod");
        }
        let mut outcomes = Outcomes::default();
        run(&mut s, &mut outcomes).await;
        let short = dialect.cannot_reach("big", 3, 0, 2);
        let group = format!(
            "{short}, pod group preemption: No preemption victims found for incoming preemptor"
        );
        assert_eq!(outcomes.group_message(dialect, "big"), group, "{dialect:?}");
        if dialect == Dialect::Workload {
            assert_eq!(
                outcomes.condition("big"),
                ("False".into(), "Unschedulable".into(), group.clone())
            );
        }
        assert_eq!(
            outcomes.message("a"),
            "0/1 nodes are available: 1 Insufficient cpu.",
            "{dialect:?}"
        );
        // Members never tried keep the group's status from before PodGroupPostFilter, as
        // the real kube-scheduler 1.37 gives them (regressions/gang-preemption-unit.yaml).
        for name in ["b", "c"] {
            assert_eq!(
                outcomes.message(name),
                short,
                "{dialect:?} {name}: not tried"
            );
        }
    }
}

#[tokio::test]
async fn a_gang_waits_at_pre_enqueue_for_its_quorum() {
    let (mut s, _) = scheduler(&[("n1", "4")]);
    s.on_scheduling_group_apply(pod_group("train", Some(3)));
    s.on_pod_add(member("a", "train", "1")).expect("pod");
    s.on_pod_add(member("b", "train", "1")).expect("pod");
    let mut outcomes = Outcomes::default();
    run(&mut s, &mut outcomes).await;
    assert!(
        outcomes.pods.is_empty(),
        "no attempt below minCount: {outcomes:?}"
    );
    let gated: Vec<_> = s.profiles()[0]
        .queue
        .gated_pods()
        .map(|q| (q.pod_info.name().to_string(), q.gated_by.clone()))
        .collect();
    let by = Some("GangScheduling".to_string());
    assert_eq!(gated, [("a".into(), by.clone()), ("b".into(), by)]);
    // The third member's arrival lets the whole gang through, in one cycle.
    s.on_pod_add(member("c", "train", "1")).expect("pod");
    run(&mut s, &mut outcomes).await;
    for name in ["a", "b", "c"] {
        assert_eq!(outcomes.node(name), Some("n1"), "{name}");
        assert_eq!(outcomes.attempts[name], 1, "{name}");
    }
}

#[tokio::test]
async fn members_that_do_not_fit_a_placed_gang_fail_alone() {
    for dialect in DIALECTS {
        // minCount 2 of 3: a and b fit, c does not; the gang is placed without c. c's
        // retry (a cycle that places nobody) does not turn the condition back to False.
        let (mut s, lister) = scheduler_in(dialect, &[("n1", "2")]);
        dialect.add_gang(&mut s, &lister, "train", Some(2), 0);
        for name in ["a", "b", "c"] {
            s.on_pod_add(member_in(dialect, name, "train", "1"))
                .expect("pod");
        }
        let mut outcomes = Outcomes::default();
        run(&mut s, &mut outcomes).await;
        assert_eq!(outcomes.node("a"), Some("n1"), "{dialect:?}");
        assert_eq!(outcomes.node("b"), Some("n1"), "{dialect:?}");
        assert_eq!(
            outcomes.message("c"),
            "0/1 nodes are available: 1 Insufficient cpu.",
            "{dialect:?}"
        );
        if dialect == Dialect::Workload {
            assert_eq!(
                outcomes.condition("train"),
                ("True".into(), "Scheduled".into(), String::new())
            );
        }
    }
}

#[tokio::test]
async fn a_basic_group_places_what_fits() {
    let (mut s, _) = scheduler(&[("n1", "1")]);
    s.on_scheduling_group_apply(pod_group("batch", None));
    for name in ["a", "b"] {
        s.on_pod_add(member(name, "batch", "1")).expect("pod");
    }
    let mut outcomes = Outcomes::default();
    run(&mut s, &mut outcomes).await;
    assert_eq!(outcomes.node("a"), Some("n1"));
    assert_eq!(
        outcomes.message("b"),
        "0/1 nodes are available: 1 Insufficient cpu."
    );
    assert_eq!(outcomes.condition("batch").0, "True");
}

#[tokio::test]
async fn an_inconsistent_group_is_a_scheduler_error() {
    let (mut s, _) = scheduler(&[("n1", "4")]);
    let mut group = pod_group("train", Some(1));
    group.spec.priority = Some(10);
    s.on_scheduling_group_apply(group);
    s.on_pod_add(member("a", "train", "1")).expect("pod");
    let mut outcomes = Outcomes::default();
    run(&mut s, &mut outcomes).await;
    let message = "all pods in a single pod group should have the same priority as the pod \
                   group's priority, got 0 and 10";
    assert_eq!(
        outcomes.condition("train"),
        ("False".into(), "SchedulerError".into(), message.to_string())
    );
    assert_eq!(
        outcomes.pods["a"],
        Outcome::Error {
            message: message.to_string()
        }
    );
}

#[tokio::test]
async fn members_of_an_unknown_pod_group_wait_for_it() {
    let (mut s, _) = scheduler(&[("n1", "4")]);
    s.on_pod_add(member("a", "train", "1")).expect("pod");
    let mut outcomes = Outcomes::default();
    run(&mut s, &mut outcomes).await;
    assert!(outcomes.pods.is_empty(), "{outcomes:?}");
    s.on_scheduling_group_apply(pod_group("train", Some(1)));
    run(&mut s, &mut outcomes).await;
    assert_eq!(outcomes.node("a"), Some("n1"));
}

/// Members of `group` at `priority` (the PodGroup's too) with `policy`, and a scheduler
/// whose profile is `spec`.
fn prioritized(name: &str, group: &str, priority: i32, policy: Option<&str>) -> Pod {
    let mut pod = member(name, group, "1");
    let spec = pod.spec.as_mut().expect("spec");
    spec.priority = Some(priority);
    spec.preemption_policy = policy.map(str::to_string);
    pod
}

/// The PodGroupPostFilter reasons a rejected gang's message ends with: DynamicResources'
/// (Unschedulable, collected) then DefaultPreemption's `preemptorEligibleToPreemptOthers`
/// (Unschedulable), `selectVictimsOnDomain` without a victim of lower priority
/// (UnschedulableAndUnresolvable, alone) or the group's own status when it does not fit
/// even without its victims (Unschedulable), as upstream's RunPodGroupPostFilterPlugins
/// combines them; the wording as the real kube-scheduler 1.37 gives it
/// (tests/differential/regressions/gang-preemption-never.yaml).
#[tokio::test]
async fn a_rejected_gangs_message_ends_with_why_it_cannot_preempt() {
    // a fits, b does not: 1 scheduled + 1 remaining < 3 ends the try.
    let gang = "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining, ";
    struct Case {
        name: &'static str,
        policy: Option<&'static str>,
        /// A pod of priority 0 already on the node.
        low_priority_pod: bool,
        preemption: bool,
        reason: &'static str,
    }
    let cases = [
        Case {
            name: "no pod of lower priority",
            policy: None,
            low_priority_pod: false,
            preemption: true,
            reason: "pod group preemption: No preemption victims found for incoming preemptor",
        },
        Case {
            name: "preemptionPolicy Never",
            policy: Some("Never"),
            low_priority_pod: true,
            preemption: true,
            reason: "deallocation and deletion of ResourceClaims completed, pod group preemption: not eligible due to preemptionPolicy=Never.",
        },
        Case {
            name: "victims exist, but the group does not fit even without them",
            policy: None,
            low_priority_pod: true,
            preemption: true,
            reason: "deallocation and deletion of ResourceClaims completed, pod group preemption: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",
        },
        Case {
            name: "no DefaultPreemption: DynamicResources' reason alone",
            policy: None,
            low_priority_pod: true,
            preemption: false,
            reason: "deallocation and deletion of ResourceClaims completed",
        },
    ];
    for case in cases {
        // One 2-cpu node; with the low-priority pod it has room for one member.
        let spec: SchedulerProfileSpec = if case.preemption {
            SchedulerProfileSpec::default()
        } else {
            serde_json::from_value(serde_json::json!({
                "plugins": {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}},
            }))
            .expect("a profile")
        };
        let cpu = if case.low_priority_pod { "2" } else { "1" };
        let (mut s, _) = scheduler_with(&spec, &[("n1", cpu)]);
        if case.low_priority_pod {
            let mut low = make_pod()
                .name("low")
                .namespace("default")
                .uid("low")
                .req(&[("cpu", "1")])
                .obj();
            low.spec.as_mut().expect("spec").node_name = Some("n1".into());
            s.on_pod_add(low).expect("pod");
        }
        let mut group = pod_group("train", Some(3));
        group.spec.priority = Some(100);
        s.on_scheduling_group_apply(group);
        for name in ["a", "b", "c"] {
            s.on_pod_add(prioritized(name, "train", 100, case.policy))
                .expect("pod");
        }
        let mut outcomes = Outcomes::default();
        run(&mut s, &mut outcomes).await;
        assert_eq!(
            outcomes.condition("train"),
            (
                "False".into(),
                "Unschedulable".into(),
                format!("{gang}{}", case.reason)
            ),
            "{}",
            case.name
        );
    }
}
