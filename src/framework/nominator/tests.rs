//! upstream's TestPriorityQueue_UpdateNominatedPodForNode, on the nominator alone (the
//! queue's part, that popping a pod keeps its nomination, is the queue's), and the update
//! rule of `UpdateNominatedPod`.

use k8s_openapi::api::core::v1::PodStatus;

use super::*;
use crate::testing::{make_pod, pod_info};

fn pod(name: &str, status_node: Option<&str>, assigned: Option<&str>) -> Arc<PodInfo> {
    let mut pod = make_pod().name(name).namespace("ns1");
    if let Some(node) = assigned {
        pod = pod.node(node);
    }
    let mut pod = pod.obj();
    if let Some(node) = status_node {
        pod.status = Some(PodStatus {
            nominated_node_name: Some(node.into()),
            ..PodStatus::default()
        });
    }
    Arc::new(pod_info(pod))
}

/// The nominations as `node -> [pod names]`.
fn view(nominator: &Nominator) -> BTreeMap<String, Vec<String>> {
    nominator
        .read()
        .by_node
        .iter()
        .map(|(node, pods)| {
            let names = pods
                .iter()
                .map(|p| p.pod.metadata.name.clone().unwrap_or_default())
                .collect();
            (node.clone(), names)
        })
        .collect()
}

fn want(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    pairs
        .iter()
        .map(|(node, pods)| {
            (
                node.to_string(),
                pods.iter().map(|p| p.to_string()).collect(),
            )
        })
        .collect()
}

#[test]
fn nominations_follow_upstreams_update_nominated_pod_for_node() {
    let nominator = Nominator::new();
    let med = pod("mpp", Some("node1"), None);
    let unschedulable = pod("up", Some("node1"), None);
    let high = pod("hpp", None, None);

    // Added: the nomination comes from the pod's status.
    nominator.add(med.clone());
    assert_eq!(view(&nominator), want(&[("node1", &["mpp"])]));

    // Override wins over whatever the pod object says.
    nominator.nominate(unschedulable.clone(), "node5");
    nominator.nominate(high.clone(), "node2");
    assert_eq!(
        view(&nominator),
        want(&[("node1", &["mpp"]), ("node2", &["hpp"]), ("node5", &["up"])])
    );

    // A new nomination moves the pod.
    nominator.nominate(high.clone(), "node4");
    assert_eq!(
        view(&nominator),
        want(&[("node1", &["mpp"]), ("node4", &["hpp"]), ("node5", &["up"])])
    );

    // A pod bound to a node is not nominated.
    nominator.nominate(pod("sp", None, Some("node1")), "node1");
    assert_eq!(
        view(&nominator),
        want(&[("node1", &["mpp"]), ("node4", &["hpp"]), ("node5", &["up"])])
    );

    nominator.delete(high.key());
    assert_eq!(
        view(&nominator),
        want(&[("node1", &["mpp"]), ("node5", &["up"])])
    );
    assert_eq!(
        nominator.nominated_node(med.key()).as_deref(),
        Some("node1")
    );
    assert_eq!(nominator.pods_for_node("node5").len(), 1);
}

#[test]
fn an_update_keeps_a_nomination_whose_status_has_not_arrived_and_follows_one_that_has() {
    let cases = [
        // (old status node, new status node, nominated here before, want)
        (
            "neither status names a node: the nomination stays",
            None,
            None,
            Some("node2"),
            Some("node2"),
        ),
        (
            "the new status names a node: it wins",
            None,
            Some("node3"),
            Some("node2"),
            Some("node3"),
        ),
        (
            "the status was cleared: the nomination goes",
            Some("node2"),
            None,
            Some("node2"),
            None,
        ),
        ("never nominated, no status", None, None, None, None),
    ];
    for (name, old_node, new_node, before, want_node) in cases {
        let nominator = Nominator::new();
        if let Some(node) = before {
            nominator.nominate(pod("p", None, None), node);
        }
        let old = pod("p", old_node, None);
        nominator.update(&old.pod, pod("p", new_node, None));
        assert_eq!(
            nominator.nominated_node("ns1/p").as_deref(),
            want_node,
            "{name}"
        );
    }
}

/// Upstream's TestIsPodRunningPreemption: the set of preemptions under way, the last
/// victim each registered, and whether that victim was seen leaving (deleted, or
/// terminating: upstream looks it up in its pod lister).
#[test]
fn a_preemption_runs_until_finished_or_its_last_victim_leaves() {
    struct Case {
        name: &'static str,
        /// (preemptor, last victim)
        started: &'static [(&'static str, Option<&'static str>)],
        /// Victims seen deleted or terminating.
        left: &'static [&'static str],
        want: bool,
    }
    let cases = [
        Case {
            name: "preemptor not in preemptingSet",
            started: &[],
            left: &[],
            want: false,
        },
        Case {
            name: "preemptor not in preemptingSet, lastVictimSet not empty",
            started: &[("otherPod", Some("ns/victim1"))],
            left: &[],
            want: false,
        },
        Case {
            name: "preemptor in preemptingSet, no lastVictim for preemptor",
            started: &[("preemptor", None), ("otherPod", Some("ns/victim1"))],
            left: &[],
            want: true,
        },
        Case {
            name: "preemptor in preemptingSet, victim in lastVictimSet, not in PodLister",
            started: &[("preemptor", Some("ns/victim1"))],
            left: &["ns/victim1"],
            want: false,
        },
        Case {
            name: "preemptor in preemptingSet, victim in lastVictimSet and in PodLister",
            started: &[("preemptor", Some("ns/victim1"))],
            left: &[],
            want: true,
        },
        Case {
            name: "preemptor in preemptingSet, victim in lastVictimSet and in PodLister with deletion timestamp",
            started: &[("preemptor", Some("ns/victim-deleted"))],
            left: &["ns/victim-deleted"],
            want: false,
        },
        Case {
            name: "another pod leaving does not end the preemption",
            started: &[("preemptor", Some("ns/victim1"))],
            left: &["ns/victim2"],
            want: true,
        },
    ];
    for case in cases {
        let nominator = Nominator::new();
        for (preemptor, victim) in case.started {
            nominator.start_preemption(preemptor, victim.map(str::to_string));
        }
        for victim in case.left {
            nominator.victim_left(victim);
        }
        assert_eq!(
            nominator.is_running_preemption("preemptor"),
            case.want,
            "{}",
            case.name
        );
        nominator.finish_preemption("preemptor");
        assert!(
            !nominator.is_running_preemption("preemptor"),
            "{}: a finished preemption no longer runs",
            case.name
        );
    }
}
