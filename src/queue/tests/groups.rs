//! Pod groups in the queue; expected behaviour follows upstream's
//! `scheduling_queue_test.go` (TestAddPodGroupMember, TestDeletePodGroupMember,
//! TestAddAttemptedPodGroupIfNeeded, TestActivatePodGroupMember,
//! TestMoveAllToActiveOrBackoffQueuePodGroupMember, TestAddPodGroup, TestDeletePodGroup)
//! and `backoff_queue_test.go`.

use k8s_openapi::api::core::v1::PodSchedulingGroup;

use super::*;
use crate::queue::groups::{GroupEntity, member_order};
use pretty_assertions::assert_eq;

fn group(name: &str) -> GroupKey {
    GroupKey::new("default", name)
}

/// A member of `group` in `default`.
fn member(name: &str, group: &str, priority: i32) -> Pod {
    let mut pod = pod(name, priority);
    if let Some(spec) = pod.spec.as_mut() {
        spec.scheduling_group = Some(PodSchedulingGroup {
            pod_group_name: Some(group.to_string()),
        });
    }
    pod
}

fn key(name: &str) -> String {
    format!("uid-{name}")
}

fn pop_group(q: &mut SchedulingQueue, now: Instant) -> QueuedGroup {
    match q.pop(now) {
        Some(Popped::Group(group)) => group,
        other => panic!("expected a group, got {other:?}"),
    }
}

fn member_names(group: &QueuedGroup) -> Vec<&str> {
    group.members.iter().map(name).collect()
}

#[test]
fn first_member_of_a_known_group_enters_active_q_as_the_group() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(group("pg"), 0, t0);
    assert_eq!(q.add(info(member("p1", "pg", 0)), t0), Placement::Active);
    assert_eq!(q.add(info(member("p2", "pg", 0)), t0), Placement::Active);
    assert_eq!(
        q.pending_counts().active,
        2,
        "pods are counted, not entities"
    );
    let popped = pop_group(&mut q, t0);
    assert_eq!(member_names(&popped), ["p1", "p2"]);
    assert!(q.pop(t0).is_none(), "the group left activeQ as one entity");
    assert_eq!(q.placement(&key("p1")), Some(Placement::InFlight));
}

#[test]
fn members_of_an_unknown_group_wait_for_its_pod_group() {
    let t0 = Instant::now();
    let mut q = queue();
    assert_eq!(
        q.add(info(member("p1", "pg", 0)), t0),
        Placement::Incomplete
    );
    assert!(q.pop(t0).is_none());
    assert_eq!(q.pending_counts().incomplete, 1);
    q.add_pod_group(group("pg"), 0, t0);
    assert_eq!(q.placement(&key("p1")), Some(Placement::Active));
    assert_eq!(q.pending_counts().incomplete, 0);
}

#[test]
fn one_gated_member_gates_the_group() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(group("pg"), 0, t0);
    // existing group in activeQ + a gated member: the group becomes gated.
    q.add(info(member("p1", "pg", 0)), t0);
    assert_eq!(
        q.add(info(gated(member("p2", "pg", 0))), t0),
        Placement::Gated
    );
    assert_eq!(q.placement(&key("p1")), Some(Placement::Gated));
    let gated_by: Vec<_> = q.gated_pods().map(|m| m.gated_by.clone()).collect();
    assert_eq!(
        gated_by,
        vec![Some(GATES.to_string()); 2],
        "every member names the gate"
    );
    // existing gated group + an ungated member: stays gated, PreEnqueue not re-run.
    assert_eq!(q.add(info(member("p3", "pg", 0)), t0), Placement::Gated);
    assert!(q.pop(t0).is_none());
    // gate removal of the gated member ungates the group.
    let old = info(gated(member("p2", "pg", 0)));
    q.update(&old, info(member("p2", "pg", 0)), t0);
    assert_eq!(q.placement(&key("p1")), Some(Placement::Active));
    assert_eq!(member_names(&pop_group(&mut q, t0)), ["p1", "p2", "p3"]);
}

#[test]
fn groups_pop_in_pod_group_priority_order_among_pods() {
    let t0 = Instant::now();
    let mut q = queue();
    for (name, priority) in [("low", 1), ("high", 3), ("mid", 2)] {
        q.add_pod_group(group(name), priority, t0);
        // The members' own priority is not the group's.
        q.add(info(member(&format!("{name}-0"), name, 0)), t0);
    }
    q.add(info(pod("lone", 2)), t0 + ms(1));
    let mut order = Vec::new();
    while let Some(popped) = q.pop(t0) {
        order.push(match popped {
            Popped::Group(g) => g.key.name,
            Popped::Pod(p) => name(&p).to_string(),
        });
    }
    assert_eq!(order, ["high", "mid", "lone", "low"]);
}

#[test]
fn members_are_ordered_by_priority_attempts_timestamp_then_name() {
    let t0 = Instant::now();
    let queued = |name: &str, priority: i32, attempts: u32, at: Instant| {
        let mut q = QueuedPodInfo::new(info(member(name, "pg", priority)), at);
        q.attempts = attempts;
        q
    };
    let mut entity = GroupEntity::new(group("pg"), 0, GroupParams::new(t0));
    for m in [
        queued("e", 0, 0, t0 + secs(1)),
        queued("d", 0, 0, t0),
        queued("c", 0, 2, t0 + secs(5)),
        queued("b", 5, 0, t0 + secs(9)),
        queued("a", 0, 0, t0),
    ] {
        entity.insert(m);
    }
    let names: Vec<&str> = entity.members.iter().map(name).collect();
    assert_eq!(names, ["b", "c", "a", "d", "e"]);
    let (a, d) = (&entity.members[2], &entity.members[3]);
    assert_eq!(member_order(a, d), std::cmp::Ordering::Less);
}

#[test]
fn group_backoff_caps_at_max_times_the_square_root_of_its_size() {
    // backoff_queue_test.go: initial 1ns, max 32ns, 16 failures, 10 members -> 101ns.
    let t0 = Instant::now();
    let mut entity = GroupEntity::new(group("pg"), 0, GroupParams::new(t0));
    for i in 0..10 {
        entity.insert(QueuedPodInfo::new(
            info(member(&format!("p{i}"), "pg", 0)),
            t0,
        ));
    }
    entity.params.unschedulable_count = 16;
    let (initial, max) = (Duration::from_nanos(1), Duration::from_nanos(32));
    assert_eq!(entity.backoff(initial, max), Duration::from_nanos(101));
    // Errors in a row count instead of rejections when there are any.
    entity.params.consecutive_errors = 2;
    assert_eq!(entity.backoff(initial, max), Duration::from_nanos(2));
    // Before any failure: no backoff.
    entity.params.consecutive_errors = 0;
    entity.params.unschedulable_count = 0;
    assert_eq!(entity.backoff(initial, max), Duration::ZERO);
}

#[test]
fn a_rejected_group_backs_off_as_a_group_never_into_the_unschedulable_set() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(group("pg"), 0, t0);
    q.add(info(member("p1", "pg", 0)), t0);
    q.add(info(member("p2", "pg", 0)), t0);
    let mut popped = pop_group(&mut q, t0);
    for m in &mut popped.members {
        m.unschedulable_plugins = [FIT.to_string()].into();
    }
    let placement = q.requeue_group(popped, GroupOutcome::Rejected, t0);
    assert_eq!(placement, Some(Placement::Backoff));
    assert_eq!(q.pending_counts().unschedulable, 0);
    // One rejection: the initial backoff (1 s).
    assert_eq!(q.next_backoff_expiry(), Some(t0 + secs(1)));
    // A matching event does not move a backing-off group (it is not parked).
    assert_eq!(q.move_all_to_active_or_backoff(&NODE_ADD, t0), 0);
    assert_eq!(q.flush_backoff_completed(t0 + secs(1)), 1);
    let popped = pop_group(&mut q, t0 + secs(1));
    assert_eq!(popped.params.attempts, 2);
    assert!(popped.members.iter().all(|m| m.attempts == 2));
    let at = t0 + secs(2);
    q.requeue_group(popped, GroupOutcome::Rejected, at);
    // Two rejections in a row: 2 s.
    assert_eq!(q.next_backoff_expiry(), Some(at + secs(2)));
}

#[test]
fn leftovers_of_a_placed_group_retry_at_once_keeping_its_timestamp() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(group("pg"), 0, t0);
    q.add(info(member("p1", "pg", 0)), t0);
    q.add(info(member("p2", "pg", 0)), t0);
    let mut popped = pop_group(&mut q, t0);
    // p1 went to binding; p2 did not fit.
    popped.members.retain(|m| name(m) == "p2");
    q.done(&key("p1"));
    let later = t0 + secs(3);
    assert_eq!(
        q.requeue_group(popped, GroupOutcome::Scheduled, later),
        Some(Placement::Active)
    );
    let again = pop_group(&mut q, later);
    assert_eq!(member_names(&again), ["p2"]);
    assert_eq!(again.params.timestamp, t0, "the group keeps its place");
}

#[test]
fn members_deleted_while_in_flight_are_not_requeued() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(group("pg"), 0, t0);
    q.add(info(member("p1", "pg", 0)), t0);
    q.add(info(member("p2", "pg", 0)), t0);
    let popped = pop_group(&mut q, t0);
    assert!(q.delete(&key("p1")));
    q.requeue_group(popped, GroupOutcome::Rejected, t0);
    assert_eq!(q.placement(&key("p1")), None);
    assert_eq!(q.placement(&key("p2")), Some(Placement::Backoff));
}

#[test]
fn deleting_members_and_pod_groups() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(group("pg"), 0, t0);
    q.add(info(member("p1", "pg", 0)), t0);
    q.add(info(member("p2", "pg", 0)), t0);
    // A non-empty group stays where it is.
    assert!(q.delete(&key("p1")));
    assert_eq!(q.placement(&key("p2")), Some(Placement::Active));
    // PodGroup deleted: its members wait for it again.
    q.delete_pod_group(&group("pg"), t0);
    assert_eq!(q.placement(&key("p2")), Some(Placement::Incomplete));
    assert!(q.pop(t0).is_none());
    q.add_pod_group(group("pg"), 0, t0);
    assert_eq!(q.placement(&key("p2")), Some(Placement::Active));
    // The last member deleted: the group is gone.
    assert!(q.delete(&key("p2")));
    assert!(q.pop(t0).is_none());
    assert_eq!(q.len(), 0);
    // An unknown pod is a no-op.
    assert!(!q.delete(&key("p9")));
}

#[test]
fn activating_a_member_moves_its_whole_group() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(group("pg"), 0, t0);
    q.add(info(member("p1", "pg", 0)), t0);
    q.add(info(member("p2", "pg", 0)), t0);
    let popped = pop_group(&mut q, t0);
    q.requeue_group(popped, GroupOutcome::Rejected, t0);
    assert_eq!(q.placement(&key("p2")), Some(Placement::Backoff));
    assert_eq!(q.activate([key("p2").as_str()], t0), 1);
    assert_eq!(q.placement(&key("p1")), Some(Placement::Active));
    assert_eq!(member_names(&pop_group(&mut q, t0)), ["p1", "p2"]);
}

#[test]
fn a_gated_group_moves_only_on_its_gates_events() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(group("pg"), 0, t0);
    q.add(info(gated(member("p1", "pg", 0))), t0);
    assert_eq!(q.placement(&key("p1")), Some(Placement::Gated));
    // Outside the gating plugin's events: ignored.
    assert_eq!(q.move_all_to_active_or_backoff(&NODE_ADD, t0), 0);
    // The gate's event re-runs PreEnqueue; still gated, it stays.
    let gates_removed = ClusterEvent::new(
        EventResource::Pod,
        ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    );
    assert_eq!(q.move_all_to_active_or_backoff(&gates_removed, t0), 0);
    assert_eq!(q.placement(&key("p1")), Some(Placement::Gated));
    // The leftover flush re-runs it too, wildcard.
    let stay = DEFAULT_UNSCHEDULABLE_MAX_STAY;
    assert_eq!(q.flush_unschedulable_leftover(t0 + stay), 0);
    assert_eq!(q.placement(&key("p1")), Some(Placement::Gated));
}

#[test]
fn a_member_that_failed_its_binding_rejoins_or_restarts_its_group() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(group("pg"), 0, t0);
    q.add(info(member("p1", "pg", 0)), t0);
    let popped = pop_group(&mut q, t0);
    let cycle = q.scheduling_cycle();
    // p1 went to binding (still in flight), the group is requeued with nothing.
    let mut p1 = popped.members[0].clone();
    assert_eq!(
        q.requeue_group(
            QueuedGroup {
                members: Vec::new(),
                ..popped
            },
            GroupOutcome::Scheduled,
            t0
        ),
        None
    );
    // Its binding fails: a new entity in activeQ.
    p1.unschedulable_plugins = [FIT.to_string()].into();
    assert_eq!(
        q.add_unschedulable_if_not_present(p1, cycle, t0),
        Some(Placement::Active)
    );
    assert_eq!(member_names(&pop_group(&mut q, t0)), ["p1"]);
}

#[test]
fn without_pod_groups_members_are_lone_pods() {
    let t0 = Instant::now();
    let mut q = SchedulingQueue::new(QueueConfig {
        pod_groups: false,
        ..config()
    });
    assert_eq!(q.add(info(member("p1", "pg", 0)), t0), Placement::Active);
    assert_eq!(
        q.pop_pod(t0).map(|p| name(&p).to_string()).as_deref(),
        Some("p1")
    );
}

/// A member of berth's or scheduler-plugins' group `group` (the pod-group label).
fn labelled(name: &str, group: &str, priority: i32) -> Pod {
    let mut pod = pod(name, priority);
    pod.metadata.labels.get_or_insert_default().insert(
        crate::api::POD_GROUP_LABEL_COMPAT.to_string(),
        group.to_string(),
    );
    pod
}

fn coscheduling_queue() -> SchedulingQueue {
    SchedulingQueue::new(QueueConfig {
        coscheduling_groups: true,
        ..config()
    })
}

#[test]
fn coscheduling_members_are_lone_pods_until_their_pod_group_is_known() {
    let t0 = Instant::now();
    let mut q = coscheduling_queue();
    // No PodGroup yet: a lone pod, for Coscheduling's PreFilter to reject as
    // scheduler-plugins does; not held aside as a Workload API member would be.
    assert_eq!(q.add(info(labelled("p1", "pg", 0)), t0), Placement::Active);
    assert_eq!(q.add(info(labelled("p2", "pg", 0)), t0), Placement::Active);
    assert!(matches!(q.pop(t0), Some(Popped::Pod(_))));
    // p1 failed alone; p2 still waits in activeQ. The PodGroup appears: both join it,
    // wherever they wait, and leave together.
    let failed = QueuedPodInfo::new(info(labelled("p1", "pg", 0)), t0);
    q.add_unschedulable_if_not_present(failed, q.scheduling_cycle(), t0);
    q.add_pod_group(GroupKey::coscheduling("default", "pg"), 0, t0);
    let popped = pop_group(&mut q, t0);
    assert_eq!(popped.key, GroupKey::coscheduling("default", "pg"));
    assert_eq!(member_names(&popped), ["p1", "p2"]);
    assert!(q.pop(t0).is_none());
}

#[test]
fn a_coscheduling_groups_proxy_carries_its_label_and_highest_priority() {
    let t0 = Instant::now();
    let mut q = coscheduling_queue();
    let key = GroupKey::coscheduling("default", "pg");
    q.add_pod_group(key.clone(), 0, t0);
    q.add(info(labelled("low", "pg", 5)), t0);
    q.add(info(labelled("high", "pg", 50)), t0);
    let entity = &q.groups[&proxy_key(&key)];
    let proxy = entity.proxy(None);
    assert_eq!(proxy.pod_info.priority(), 50);
    assert_eq!(
        crate::cluster::pod_group_of(&proxy.pod_info.pod),
        Some(("default".to_string(), "pg".to_string()))
    );
    // A Workload API group of the same name is another entity.
    assert_ne!(proxy_key(&key), proxy_key(&group("pg")));
}

#[test]
fn a_deleted_coscheduling_pod_group_leaves_its_members_as_lone_pods() {
    let t0 = Instant::now();
    let mut q = coscheduling_queue();
    let pg = GroupKey::coscheduling("default", "pg");
    q.add_pod_group(pg.clone(), 0, t0);
    q.add(info(labelled("p1", "pg", 0)), t0);
    q.add(info(labelled("p2", "pg", 0)), t0);
    q.delete_pod_group(&pg, t0);
    assert_eq!(q.placement(&key("p1")), Some(Placement::Active));
    assert_eq!(q.pending_counts().incomplete, 0);
    assert!(matches!(q.pop(t0), Some(Popped::Pod(_))));
    assert!(matches!(q.pop(t0), Some(Popped::Pod(_))));
}

#[test]
fn a_profile_without_coscheduling_never_groups_labelled_pods() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add_pod_group(GroupKey::coscheduling("default", "pg"), 0, t0);
    q.add(info(labelled("p1", "pg", 0)), t0);
    q.add(info(labelled("p2", "pg", 0)), t0);
    assert!(matches!(q.pop(t0), Some(Popped::Pod(_))));
    assert!(matches!(q.pop(t0), Some(Popped::Pod(_))));
}
