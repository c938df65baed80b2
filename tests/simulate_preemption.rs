//! Preemption in the simulator, on the scenarios in `examples/scenarios/preemption-*.yaml`:
//! upstream's worked example of a full cluster and its integration cases
//! (TestPDBInPreemption, TestPreemptionStarvation, TestNonPreemption), with the victims
//! and placements upstream expects.

mod support;

use std::path::PathBuf;
use support::simulate::{pod, simulate_default};

use berth::simulate::input::load_files;
use berth::simulate::report::{EvictedPod, PodResult, Report};

async fn run(scenario: &str) -> Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenarios")
        .join(scenario);
    let (input, _warnings) = load_files(&[path]).expect("input loads");
    simulate_default(input).await
}

fn evicted(pods: &[&str], node: &str, preemptor: &str) -> Vec<EvictedPod> {
    pods.iter()
        .map(|pod| EvictedPod {
            pod: format!("default/{pod}"),
            node: node.to_string(),
            preemptor: format!("default/{preemptor}"),
        })
        .collect()
}

fn sorted(mut evictions: Vec<EvictedPod>) -> Vec<EvictedPod> {
    evictions.sort_by(|a, b| a.pod.cmp(&b.pod));
    evictions
}

/// Each case: scenario, preemptor, the node it binds on, the pods evicted from that node
/// (in any order: upstream's victims of equal priority and unknown start time have no
/// set order).
#[tokio::test]
async fn a_preemptor_evicts_its_victims_and_binds_on_its_nominated_node() {
    let cases = [
        (
            "spec §7 example 1: the victim that started latest, one per node",
            "preemption-full-cluster.yaml",
            "critical",
            "node-b",
            vec!["low-b2"],
        ),
        (
            "TestPDBInPreemption: a node without PDB violations is preferred",
            "preemption-pdb-clean-node.yaml",
            "preemptor-pod",
            "node-2",
            vec!["mid-pod2"],
        ),
        (
            "TestPDBInPreemption: the node with fewer PDB violations is preferred",
            "preemption-pdb.yaml",
            "preemptor-pod",
            "node-3",
            vec!["low-pod4", "low-pod5", "low-pod6"],
        ),
    ];
    for (name, scenario, preemptor, node, victims) in cases {
        let report = run(scenario).await;
        let row = pod(&report, preemptor);
        assert_eq!(row.result, PodResult::Scheduled, "{name}: {row:?}");
        assert_eq!(row.node.as_deref(), Some(node), "{name}");
        assert_eq!(row.nominated_node.as_deref(), Some(node), "{name}");
        let want = evicted(&victims, node, preemptor);
        assert_eq!(sorted(report.evicted.clone()), want, "{name}");
        let mut named = row.victims.clone();
        named.sort();
        let want_named: Vec<String> = want.iter().map(|e| e.pod.clone()).collect();
        assert_eq!(named, want_named, "{name}");
        let in_order: Vec<String> = report.evicted.iter().map(|e| e.pod.clone()).collect();
        assert_eq!(row.victims, in_order, "{name}: victims in eviction order");
    }
}

/// TestNonPreemption and spec §7 example 4: a pod whose PriorityClass says
/// `preemptionPolicy: Never` waits and evicts nobody, and says why.
#[tokio::test]
async fn preemption_policy_never_never_evicts() {
    let report = run("preemption-never.yaml").await;
    let row = pod(&report, "polite");
    assert_eq!(row.result, PodResult::Unschedulable);
    assert_eq!(
        row.message,
        "0/3 nodes are available: 3 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    );
    assert_eq!(row.nominated_node, None);
    assert!(row.victims.is_empty());
    assert!(report.evicted.is_empty(), "{:?}", report.evicted);
}

/// TestPreemptionStarvation (spec §7 example 9): the room the preemptor's victims freed
/// is kept for it; the pending pods of lower priority, tried meanwhile, do not take it,
/// and find no pod of lower priority than theirs to evict. The preemptor (priority 300)
/// is tried first and backs off after preempting, so the medium pods' attempts all see
/// the freed 300m.
#[tokio::test]
async fn a_lower_priority_pod_does_not_steal_the_nominated_room() {
    let report = run("preemption-starvation.yaml").await;
    let preemptor = pod(&report, "preemptor-pod");
    assert_eq!(preemptor.result, PodResult::Scheduled, "{preemptor:?}");
    assert_eq!(preemptor.node.as_deref(), Some("node1"));
    assert_eq!(preemptor.nominated_node.as_deref(), Some("node1"));
    // 300m on a full 500m node: the two oldest running pods are reprieved.
    assert_eq!(
        sorted(report.evicted.clone()),
        evicted(
            &["running-2", "running-3", "running-4"],
            "node1",
            "preemptor-pod"
        )
    );
    for i in 0..5 {
        let row = pod(&report, &format!("pending-{i}"));
        assert_eq!(row.result, PodResult::Unschedulable, "{row:?}");
        assert_eq!(
            row.message,
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            "{row:?}"
        );
        assert!(row.victims.is_empty());
    }
}
