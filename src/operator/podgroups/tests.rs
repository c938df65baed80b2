//! Expected values follow the phase table and the status rules of the module docs.

use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use pretty_assertions::assert_eq;

use super::*;

fn at(second: i64) -> Time {
    Time(Timestamp::from_second(second).expect("test timestamps are in range"))
}

/// A member named `name`, bound to `node` when given, in pod `phase` when given.
fn member(name: &str, node: Option<&str>, phase: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some(BTreeMap::from([(POD_GROUP_LABEL.into(), "pg".into())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(Into::into),
            ..PodSpec::default()
        }),
        status: phase.map(|p| PodStatus {
            phase: Some(p.into()),
            ..PodStatus::default()
        }),
    }
}

/// `n` members bound to n1 in `phase`, named `<prefix>-<i>`.
fn bound(prefix: &str, n: usize, phase: &str) -> Vec<Pod> {
    (0..n)
        .map(|i| member(&format!("{prefix}-{i}"), Some("n1"), Some(phase)))
        .collect()
}

/// `n` members not bound to a node yet.
fn unbound(prefix: &str, n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| member(&format!("{prefix}-{i}"), None, Some("Pending")))
        .collect()
}

/// `pod` with the scheduler's `PodScheduled=False` condition saying `message`.
fn unschedulable(mut pod: Pod, message: &str) -> Pod {
    pod.status.get_or_insert_with(PodStatus::default).conditions = Some(vec![PodCondition {
        type_: "PodScheduled".into(),
        status: "False".into(),
        reason: Some("Unschedulable".into()),
        message: Some(message.into()),
        ..PodCondition::default()
    }]);
    pod
}

fn spec(min_member: i32) -> PodGroupSpec {
    PodGroupSpec {
        min_member,
        ..PodGroupSpec::default()
    }
}

fn with_phase(phase: PodGroupPhase) -> PodGroupStatus {
    PodGroupStatus {
        phase: Some(phase),
        ..PodGroupStatus::default()
    }
}

fn status_of(min_member: i32, members: &[Pod], current: &PodGroupStatus) -> PodGroupStatus {
    compute_status(&spec(min_member), Some(1), members, current, &at(1000))
}

fn scheduled_condition(status: &PodGroupStatus) -> &Condition {
    conditions::find(&status.conditions, SCHEDULED).expect("the Scheduled condition is set")
}

#[test]
fn phase_and_counts_follow_the_phase_table() {
    use PodGroupPhase::*;
    struct Case {
        name: &'static str,
        min_member: i32,
        /// The phase before this reconcile, for the "drop back" transitions.
        current: Option<PodGroupPhase>,
        members: Vec<Pod>,
        want: PodGroupPhase,
        /// scheduled, running, succeeded, failed
        counts: (i32, i32, i32, i32),
    }
    let cases = [
        Case {
            name: "no members",
            min_member: 3,
            current: None,
            members: vec![],
            want: Pending,
            counts: (0, 0, 0, 0),
        },
        Case {
            name: "enough members, none bound",
            min_member: 3,
            current: None,
            members: unbound("p", 3),
            want: Pending,
            counts: (0, 0, 0, 0),
        },
        Case {
            name: "fewer than minMember exist, though all bound",
            min_member: 3,
            current: None,
            members: bound("p", 2, "Pending"),
            want: Pending,
            counts: (2, 0, 0, 0),
        },
        Case {
            name: "some, but fewer than minMember, bound",
            min_member: 3,
            current: Some(Pending),
            members: [bound("b", 1, "Pending"), unbound("u", 2)].concat(),
            want: Scheduling,
            counts: (1, 0, 0, 0),
        },
        Case {
            name: "minMember bound, not running yet",
            min_member: 3,
            current: Some(Scheduling),
            members: [bound("b", 3, "Pending"), unbound("u", 1)].concat(),
            want: Scheduled,
            counts: (3, 0, 0, 0),
        },
        Case {
            name: "minMember running",
            min_member: 3,
            current: Some(Scheduled),
            members: bound("r", 3, "Running"),
            want: Running,
            counts: (3, 3, 0, 0),
        },
        Case {
            name: "running and succeeded members together reach minMember",
            min_member: 3,
            current: Some(Running),
            members: [
                bound("r", 2, "Running"),
                bound("s", 1, "Succeeded"),
                unbound("u", 1),
            ]
            .concat(),
            want: Running,
            counts: (3, 2, 1, 0),
        },
        Case {
            name: "every member succeeded",
            min_member: 3,
            current: Some(Running),
            members: bound("s", 4, "Succeeded"),
            want: Finished,
            counts: (4, 0, 4, 0),
        },
        Case {
            name: "every member succeeded, but fewer than minMember exist",
            min_member: 3,
            current: None,
            members: bound("s", 2, "Succeeded"),
            want: Pending,
            counts: (2, 0, 2, 0),
        },
        Case {
            name: "a failed member fails the group",
            min_member: 3,
            current: Some(Running),
            members: [bound("r", 3, "Running"), bound("f", 1, "Failed")].concat(),
            want: Failed,
            counts: (4, 3, 0, 1),
        },
        Case {
            name: "a failed member wins over the others succeeding",
            min_member: 3,
            current: Some(Running),
            members: [bound("s", 3, "Succeeded"), bound("f", 1, "Failed")].concat(),
            want: Failed,
            counts: (4, 0, 3, 1),
        },
        Case {
            name: "drop back: Running to Scheduled when a running member is deleted",
            min_member: 3,
            current: Some(Running),
            members: [bound("r", 2, "Running"), bound("b", 1, "Pending")].concat(),
            want: Scheduled,
            counts: (3, 2, 0, 0),
        },
        Case {
            name: "drop back: Running to Scheduling when members are recreated unbound",
            min_member: 3,
            current: Some(Running),
            members: [bound("r", 1, "Running"), unbound("u", 2)].concat(),
            want: Scheduling,
            counts: (1, 1, 0, 0),
        },
        Case {
            name: "drop back: Scheduled to Pending when members are deleted",
            min_member: 3,
            current: Some(Scheduled),
            members: bound("b", 2, "Pending"),
            want: Pending,
            counts: (2, 0, 0, 0),
        },
        Case {
            name: "Failed is left once the failed member is deleted",
            min_member: 3,
            current: Some(Failed),
            members: bound("r", 3, "Running"),
            want: Running,
            counts: (3, 3, 0, 0),
        },
    ];
    for case in cases {
        let current = case.current.map(with_phase).unwrap_or_default();
        let status = status_of(case.min_member, &case.members, &current);
        assert_eq!(status.phase, Some(case.want), "case {}", case.name);
        assert_eq!(
            (
                status.scheduled,
                status.running,
                status.succeeded,
                status.failed
            ),
            case.counts,
            "case {}: scheduled, running, succeeded, failed",
            case.name
        );
    }
}

/// The table's Running row: "at least `min` members are running or have succeeded",
/// whether or not one of them still runs (scheduler-plugins: `Succeeded + Running >=
/// MinMember`). Here three members finished and a fourth is still pending, so the
/// group is not Finished but has run its quorum.
#[test]
fn min_member_succeeded_with_none_running_is_running() {
    let members = [bound("s", 3, "Succeeded"), unbound("u", 1)].concat();
    let status = status_of(3, &members, &with_phase(PodGroupPhase::Running));
    assert_eq!(
        (
            status.phase,
            status.scheduled,
            status.running,
            status.succeeded
        ),
        (Some(PodGroupPhase::Running), 3, 0, 3)
    );
}

#[test]
fn schedule_start_time_is_set_once_a_member_is_pending_and_then_kept() {
    let earlier = PodGroupStatus {
        schedule_start_time: Some(at(500)),
        ..PodGroupStatus::default()
    };
    let cases = [
        ("no members", vec![], PodGroupStatus::default(), None),
        (
            "every member bound",
            bound("b", 2, "Running"),
            PodGroupStatus::default(),
            None,
        ),
        (
            "first pending member seen",
            [bound("b", 1, "Running"), unbound("u", 1)].concat(),
            PodGroupStatus::default(),
            Some(at(1000)),
        ),
        (
            "kept while members are pending",
            unbound("u", 2),
            earlier.clone(),
            Some(at(500)),
        ),
        (
            "kept once every member is bound",
            bound("b", 2, "Running"),
            earlier,
            Some(at(500)),
        ),
    ];
    for (name, members, current, want) in cases {
        let status = status_of(2, &members, &current);
        assert_eq!(status.schedule_start_time, want, "case {name}");
    }
}

#[test]
fn observed_generation_is_the_group_generation() {
    let status = compute_status(
        &spec(2),
        Some(7),
        &unbound("u", 2),
        &PodGroupStatus {
            observed_generation: Some(6),
            ..PodGroupStatus::default()
        },
        &at(1000),
    );
    assert_eq!(status.observed_generation, Some(7));
    assert_eq!(scheduled_condition(&status).observed_generation, Some(7));
}

#[test]
fn scheduled_condition_reports_progress_towards_min_member() {
    let why = "0/5 nodes are available: 5 Insufficient cpu.";
    struct Case {
        name: &'static str,
        min_member: i32,
        members: Vec<Pod>,
        status: &'static str,
        reason: &'static str,
        /// The message starts with this.
        message: &'static str,
        /// ... and, when set, ends with this.
        ends_with: Option<String>,
    }
    let cases = [
        Case {
            name: "one member missing",
            min_member: 4,
            members: [bound("b", 3, "Pending"), unbound("u", 1)].concat(),
            status: "False",
            reason: reason::NOT_ENOUGH_PODS,
            message: "3/4 pods scheduled; waiting for 1 more",
            ends_with: None,
        },
        Case {
            name: "the scheduler's reason for a pending member follows",
            min_member: 4,
            members: [
                bound("b", 3, "Pending"),
                vec![unschedulable(member("stuck", None, Some("Pending")), why)],
            ]
            .concat(),
            status: "False",
            reason: reason::NOT_ENOUGH_PODS,
            message: "3/4 pods scheduled; waiting for 1 more",
            ends_with: Some(format!("stuck: {why}")),
        },
        Case {
            name: "fewer members than minMember exist",
            min_member: 4,
            members: [bound("b", 1, "Pending"), unbound("u", 1)].concat(),
            status: "False",
            reason: reason::NOT_ENOUGH_PODS,
            message: "1/4 pods scheduled; waiting for 3 more",
            ends_with: None,
        },
        Case {
            name: "minMember bound",
            min_member: 4,
            members: bound("b", 4, "Pending"),
            status: "True",
            reason: reason::MIN_MEMBER_SCHEDULED,
            message: "",
            ends_with: None,
        },
        Case {
            name: "Finished",
            min_member: 2,
            members: bound("s", 2, "Succeeded"),
            status: "True",
            reason: reason::MIN_MEMBER_SCHEDULED,
            message: "",
            ends_with: None,
        },
    ];
    for case in cases {
        let status = status_of(case.min_member, &case.members, &PodGroupStatus::default());
        let condition = scheduled_condition(&status);
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            (case.status, case.reason),
            "case {}",
            case.name
        );
        assert!(
            condition.message.starts_with(case.message),
            "case {}: {:?}",
            case.name,
            condition.message
        );
        if let Some(tail) = &case.ends_with {
            assert!(
                condition.message.ends_with(tail.as_str()),
                "case {}: {:?}",
                case.name,
                condition.message
            );
        }
    }
    let exact = status_of(
        4,
        &[bound("b", 3, "Pending"), unbound("u", 1)].concat(),
        &PodGroupStatus::default(),
    );
    assert_eq!(
        scheduled_condition(&exact).message,
        "3/4 pods scheduled; waiting for 1 more",
        "without a scheduler message, the count is the whole message"
    );
}

#[test]
fn scheduled_condition_moves_its_transition_time_only_when_it_flips() {
    let members = [bound("b", 1, "Pending"), unbound("u", 1)].concat();
    let first = compute_status(
        &spec(2),
        Some(1),
        &members,
        &PodGroupStatus::default(),
        &at(500),
    );
    assert_eq!(scheduled_condition(&first).last_transition_time, at(500));

    let still_waiting = compute_status(&spec(2), Some(1), &members, &first, &at(1000));
    assert_eq!(
        scheduled_condition(&still_waiting).last_transition_time,
        at(500),
        "still False"
    );

    let scheduled = compute_status(
        &spec(2),
        Some(1),
        &bound("b", 2, "Pending"),
        &still_waiting,
        &at(2000),
    );
    let condition = scheduled_condition(&scheduled);
    assert_eq!(
        (condition.status.as_str(), &condition.last_transition_time),
        ("True", &at(2000))
    );
}
