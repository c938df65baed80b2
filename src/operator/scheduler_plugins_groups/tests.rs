//! Rows of scheduler-plugins' `pkg/controllers/podgroup_controller_test.go` (`Test_Run`,
//! `TestFillGroupStatusOccupied`): the group's phase (and `occupiedBy`) after its members
//! changed, reconciled until nothing changes as scheduler-plugins' writes re-trigger it.

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use pretty_assertions::assert_eq;

use super::*;
use crate::api::scheduler_plugins::PodGroupSpec;

const NOW: i64 = 1_800_000_000;

fn at(second: i64) -> Time {
    Time(Timestamp::from_second(second).expect("test timestamps are in range"))
}

/// scheduler-plugins' `makePG`: created now, `occupiedBy: test`, started now.
fn group(min_member: i32, phase: &str, created: i64) -> PodGroup {
    PodGroup {
        metadata: ObjectMeta {
            name: Some("pg".into()),
            namespace: Some("default".into()),
            uid: Some("uid-pg".into()),
            creation_timestamp: Some(at(created)),
            ..ObjectMeta::default()
        },
        spec: PodGroupSpec {
            min_member,
            ..PodGroupSpec::default()
        },
        status: Some(PodGroupStatus {
            phase: phase.into(),
            occupied_by: "test".into(),
            schedule_start_time: Some(at(NOW)),
            ..PodGroupStatus::default()
        }),
    }
}

/// scheduler-plugins' `makePods`: members in `default` in `phase`, with `owners`.
fn members(names: &[&str], phase: &str, owners: &[&str]) -> Vec<Pod> {
    names
        .iter()
        .map(|name| Pod {
            metadata: ObjectMeta {
                name: Some((*name).into()),
                namespace: Some("default".into()),
                owner_references: (!owners.is_empty()).then(|| {
                    owners
                        .iter()
                        .map(|o| OwnerReference {
                            name: (*o).into(),
                            ..OwnerReference::default()
                        })
                        .collect()
                }),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus {
                phase: Some(phase.into()),
                ..PodStatus::default()
            }),
            ..Pod::default()
        })
        .collect()
}

fn phase_after(group: &PodGroup, members: &[Pod]) -> String {
    match next_status(group, members) {
        Step::Write(status) => status.phase,
        Step::Unchanged | Step::TimedOut => group.status.clone().unwrap_or_default().phase,
    }
}

#[test]
fn run_table() {
    struct Row {
        name: &'static str,
        min_member: i32,
        pods: &'static [&'static str],
        pod_phase: &'static str,
        previous: &'static str,
        want: &'static str,
        created: i64,
    }
    let row = |name, min_member, pods, pod_phase, previous, want| Row {
        name,
        min_member,
        pods,
        pod_phase,
        previous,
        want,
        created: NOW,
    };
    let rows = [
        row(
            "Group running",
            2,
            &["pod1", "pod2"],
            "Running",
            "Scheduling",
            "Running",
        ),
        row(
            "Group running, more than min member",
            2,
            &["pod11", "pod21", "pod31", "pod41"],
            "Running",
            "Scheduling",
            "Running",
        ),
        row(
            "Group failed",
            2,
            &["pod1", "pod2"],
            "Failed",
            "Scheduling",
            "Failed",
        ),
        row(
            "Group finished",
            2,
            &["pod1", "pod2"],
            "Succeeded",
            "Scheduling",
            "Finished",
        ),
        row(
            "Group status convert from pending to prescheduling",
            2,
            &["pod1", "pod2"],
            "Pending",
            "Pending",
            "Scheduling",
        ),
        // podNextPhase Succeeded: the members' phase when reconciled.
        row(
            "Group status convert from scheduling to finished",
            2,
            &["pod1", "pod2"],
            "Succeeded",
            "Scheduling",
            "Finished",
        ),
        row(
            "Group status keeps pending",
            3,
            &["pod1", "pod2"],
            "Running",
            "Pending",
            "Pending",
        ),
        row(
            "Group status convert from pending to finished",
            2,
            &["pod1", "pod2"],
            "Succeeded",
            "Pending",
            "Finished",
        ),
        Row {
            created: NOW - 72 * 3600,
            ..row(
                "Group should not enqueue, created too long",
                2,
                &["pod1", "pod2"],
                "Running",
                "Pending",
                "Pending",
            )
        },
        row(
            "Group min member more than Pod number",
            3,
            &["pod91", "pod92"],
            "Pending",
            "Pending",
            "Pending",
        ),
        row(
            "Group status convert from running to pending",
            4,
            &["pod101", "pod102"],
            "Pending",
            "Running",
            "Pending",
        ),
    ];
    for row in rows {
        let group = group(row.min_member, row.previous, row.created);
        let members = members(row.pods, row.pod_phase, &[]);
        assert_eq!(phase_after(&group, &members), row.want, "{}", row.name);
    }
}

#[test]
fn a_group_scheduling_for_more_than_48_hours_is_left_alone_with_an_event() {
    let group = group(2, "Pending", NOW - 72 * 3600);
    let members = members(&["pod1", "pod2"], "Running", &[]);
    assert_eq!(next_status(&group, &members), Step::TimedOut);
}

#[test]
fn occupied_by_names_the_first_members_owners() {
    let rows: [(&str, &[&str], &str); 2] = [
        (
            "fill the Occupied of PodGroup with a single ownerReference",
            &["new-occupied"],
            "default/new-occupied",
        ),
        (
            "fill the Occupied of PodGroup with multi ownerReferences",
            &["new-occupied-2", "new-occupied-1"],
            "default/new-occupied-1,default/new-occupied-2",
        ),
    ];
    for (name, owners, want) in rows {
        let group = group(2, "Pending", NOW);
        let members = members(&["pod1", "pod2"], "Pending", owners);
        let Step::Write(status) = next_status(&group, &members) else {
            panic!("{name}: the group should change");
        };
        assert_eq!(status.occupied_by, want, "{name}");
        assert_eq!(status.phase, "Scheduling", "{name}");
    }
}

#[test]
fn a_new_group_goes_through_pending_and_is_counted_in_one_write() {
    let mut group = group(2, "", NOW);
    group.status = None;
    let mut pods = members(&["a", "b"], "Running", &["job"]);
    pods.extend(members(&["c"], "Failed", &[]));
    let Step::Write(status) = next_status(&group, &pods) else {
        panic!("a new group gets a status");
    };
    // Pending → Scheduling (occupiedBy from `a`) → counted: one failed, and failed +
    // running ≥ minMember makes the group Failed.
    assert_eq!(
        status,
        PodGroupStatus {
            phase: "Failed".into(),
            occupied_by: "default/job".into(),
            running: 2,
            succeeded: 0,
            failed: 1,
            schedule_start_time: None,
        }
    );
}

#[test]
fn final_and_settled_groups_are_not_written() {
    for phase in ["Finished", "Failed"] {
        let group = group(2, phase, NOW);
        let members = members(&["pod1"], "Pending", &[]);
        assert_eq!(next_status(&group, &members), Step::Unchanged, "{phase}");
    }
    let mut settled = group(2, "Running", NOW);
    if let Some(status) = settled.status.as_mut() {
        status.running = 2;
    }
    let members = members(&["pod1", "pod2"], "Running", &[]);
    assert_eq!(next_status(&settled, &members), Step::Unchanged);
}

#[test]
fn a_group_without_quorum_and_without_members_does_not_fail() {
    let group = group(0, "Pending", NOW);
    let Step::Write(status) = next_status(&group, &[]) else {
        panic!("a group without quorum moves on at once");
    };
    // Pending → Scheduling (0 ≥ 0 members) → counted: succeeded 0 ≥ minMember 0 is
    // scheduler-plugins' Finished.
    assert_eq!(status.phase, "Finished");
    assert_eq!(
        status.occupied_by, "test",
        "no member to take the owners from"
    );
}

#[test]
fn the_status_patch_clears_what_the_status_leaves_out() {
    let patch = status_patch(&PodGroupStatus {
        phase: "Pending".into(),
        ..PodGroupStatus::default()
    });
    assert_eq!(
        patch,
        serde_json::json!({"status": {
            "phase": "Pending", "occupiedBy": null, "running": 0, "succeeded": 0, "failed": 0
        }})
    );
}
