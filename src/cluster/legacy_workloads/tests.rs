//! Upstream's 1.35 `backend/workloadmanager` tables (TestWorkloadManager_AddPod,
//! _UpdatePod, _DeletePod, TestPodGroupInfo_AssumeForget, _SchedulingTimeout); pods are
//! known by berth's pod key (the UID when set, else namespace/name).

use super::*;
use crate::testing::make_pod;

fn reference(workload: &str, pod_group: &str, replica: &str) -> WorkloadReference {
    WorkloadReference {
        name: workload.into(),
        pod_group: pod_group.into(),
        pod_group_replica_key: replica.into(),
    }
}

fn member(namespace: &str, name: &str, node: Option<&str>) -> Arc<Pod> {
    let mut wrapper = make_pod().namespace(namespace).name(name);
    if let Some(node) = node {
        wrapper = wrapper.node(node);
    }
    let mut pod = wrapper.obj();
    reference("w1", "pg1", "").carry_into(&mut pod);
    Arc::new(pod)
}

fn relabelled(pod: &Arc<Pod>) -> Arc<Pod> {
    let mut pod = (**pod).clone();
    pod.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("foo".into(), "bar".into());
    Arc::new(pod)
}

fn key_of(pod: &Pod) -> LegacyGroupKey {
    LegacyGroupKey::of_pod(pod).expect("a member")
}

/// (in all, unscheduled, assumed, assigned) for `pod` in its gang.
fn where_is(manager: &LegacyWorkloads, pod: &Pod) -> Option<(bool, bool, bool, bool)> {
    let key = pod_key(pod);
    manager.with_group(&key_of(pod), |g| {
        (
            g.all.contains_key(&key),
            g.unscheduled.contains(&key),
            g.assumed.contains(&key),
            g.assigned.contains(&key),
        )
    })
}

fn groups(manager: &LegacyWorkloads) -> usize {
    read(&manager.groups).len()
}

#[test]
fn add_pod_as_upstream() {
    let p1 = member("ns1", "p1", None);
    let p2 = member("ns1", "p2", Some("node1"));
    let p3 = member("ns2", "p3", None);
    let plain = Arc::new(make_pod().namespace("ns1").name("non-workload").obj());
    // (name, initial pods, pod to add, gangs, where the pod is)
    let cases = [
        (
            "adding an unscheduled pod",
            vec![],
            p1.clone(),
            1,
            Some((true, true, false, false)),
        ),
        (
            "adding an assigned pod",
            vec![],
            p2.clone(),
            1,
            Some((true, false, false, true)),
        ),
        (
            "adding pod with different namespace",
            vec![p1.clone()],
            p3.clone(),
            2,
            Some((true, true, false, false)),
        ),
        (
            "adding a non-workload pod is a no-op",
            vec![],
            plain.clone(),
            0,
            None,
        ),
    ];
    for (name, initial, pod, want_groups, want) in cases {
        let manager = LegacyWorkloads::new();
        for p in &initial {
            manager.add_pod(p);
        }
        manager.add_pod(&pod);
        assert_eq!(groups(&manager), want_groups, "{name}");
        if want.is_some() {
            assert_eq!(where_is(&manager, &pod), want, "{name}");
        }
    }
}

#[test]
fn update_pod_as_upstream() {
    let pod = member("ns1", "p1", None);
    let assigned = member("ns1", "p2", Some("node1"));
    let bound = member("ns1", "p1", Some("node1"));
    let plain = Arc::new(make_pod().namespace("ns1").name("non-workload").obj());
    // (name, assume first, old, new, where the new pod is)
    let cases = [
        (
            "updating an unscheduled pod",
            false,
            pod.clone(),
            relabelled(&pod),
            Some((true, true, false, false)),
        ),
        (
            "updating an assumed pod",
            true,
            pod.clone(),
            relabelled(&pod),
            Some((true, false, true, false)),
        ),
        (
            "updating an assigned pod",
            false,
            assigned.clone(),
            relabelled(&assigned),
            Some((true, false, false, true)),
        ),
        (
            "binding an unscheduled pod",
            false,
            pod.clone(),
            bound.clone(),
            Some((true, false, false, true)),
        ),
        (
            "binding an assumed pod",
            true,
            pod.clone(),
            bound.clone(),
            Some((true, false, false, true)),
        ),
        (
            "updating a non-workload pod is a no-op",
            false,
            plain.clone(),
            relabelled(&plain),
            None,
        ),
    ];
    for (name, assume, old, new, want) in cases {
        let manager = LegacyWorkloads::new();
        manager.add_pod(&old);
        if assume {
            manager.assume(&old);
        }
        manager.update_pod(&old, &new);
        if want.is_none() {
            assert_eq!(groups(&manager), 0, "{name}");
            continue;
        }
        assert_eq!(where_is(&manager, &new), want, "{name}");
    }
}

#[test]
fn delete_pod_as_upstream() {
    let p1 = member("ns1", "p1", None);
    let p2 = member("ns1", "p2", None);
    let cases = [
        (
            "deleting a pod from a group with multiple pods",
            vec![p1.clone(), p2.clone()],
            1,
        ),
        (
            "deleting the last pod cleans up the info",
            vec![p1.clone()],
            0,
        ),
        ("deleting a non-existent pod is a no-op", vec![], 0),
    ];
    for (name, initial, want_groups) in cases {
        let manager = LegacyWorkloads::new();
        for p in &initial {
            manager.add_pod(p);
        }
        manager.delete_pod(&p1);
        assert_eq!(groups(&manager), want_groups, "{name}");
        if want_groups > 0 {
            assert_eq!(
                where_is(&manager, &p1),
                Some((false, false, false, false)),
                "{name}"
            );
            assert_eq!(
                manager.with_group(&key_of(&p1), LegacyGroup::all_pods_count),
                Some(1),
                "{name}"
            );
        }
    }
}

#[test]
fn a_terminal_pod_leaves_its_gang() {
    let manager = LegacyWorkloads::new();
    let pod = member("ns1", "p1", Some("node1"));
    manager.add_pod(&pod);
    let mut done = (*pod).clone();
    done.status.get_or_insert_with(Default::default).phase = Some("Succeeded".into());
    manager.update_pod(&pod, &Arc::new(done.clone()));
    assert_eq!(groups(&manager), 0);
    manager.add_pod(&Arc::new(done));
    assert_eq!(groups(&manager), 0, "a terminal pod is never added");
}

#[test]
fn gangs_differ_by_workload_pod_group_and_replica_key() {
    let manager = LegacyWorkloads::new();
    for (name, reference) in [
        ("a", reference("w1", "pg1", "")),
        ("b", reference("w1", "pg1", "1")),
        ("c", reference("w1", "pg2", "")),
        ("d", reference("w2", "pg1", "")),
        ("e", reference("w1", "pg1", "")),
    ] {
        let mut pod = make_pod().namespace("ns1").name(name).obj();
        reference.carry_into(&mut pod);
        manager.add_pod(&Arc::new(pod));
    }
    assert_eq!(groups(&manager), 4);
}

#[test]
fn assume_and_forget_as_upstream() {
    let manager = LegacyWorkloads::new();
    let pod = member("ns1", "p1", None);
    manager.add_pod(&pod);
    assert_eq!(where_is(&manager, &pod), Some((true, true, false, false)));
    manager.assume(&pod);
    assert_eq!(where_is(&manager, &pod), Some((true, false, true, false)));
    manager.forget(&pod);
    assert_eq!(where_is(&manager, &pod), Some((true, true, false, false)));
}

#[test]
fn the_scheduling_deadline_is_shared_until_it_passes() {
    let manager = LegacyWorkloads::new();
    let pod = member("ns1", "p1", None);
    manager.add_pod(&pod);
    let key = key_of(&pod);
    let start = Instant::now();
    assert_eq!(
        manager.scheduling_timeout(&key, start),
        LEGACY_SCHEDULING_TIMEOUT
    );
    let later = start + Duration::from_secs(10);
    assert_eq!(
        manager.scheduling_timeout(&key, later),
        LEGACY_SCHEDULING_TIMEOUT - Duration::from_secs(10),
        "the deadline set first holds"
    );
    let expired = start + LEGACY_SCHEDULING_TIMEOUT + Duration::from_secs(1);
    assert_eq!(
        manager.scheduling_timeout(&key, expired),
        LEGACY_SCHEDULING_TIMEOUT,
        "a passed deadline is set anew"
    );
}
