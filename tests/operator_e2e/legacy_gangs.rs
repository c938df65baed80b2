//! Kubernetes 1.35 gangs live (issue 31: "a 1.35 server's `workloadRef` is read as the 1.35
//! scheduler reads it"): a real 1.35 API server with the GenericWorkload gate on and
//! `scheduling.k8s.io/v1alpha1` enabled, pods naming a Workload's pod group in
//! `spec.workloadRef` (posted as JSON: the 1.37 types drop the field).
//!
//! Expected from kube-scheduler 1.35's GangScheduling: a pod waits before the queue until
//! its Workload exists and the gang has `minCount` pods, then each is placed on its own
//! and held at Permit until `minCount` are placed; so the gang binds whole or not at all.
//! Node sizes make every verdict follow from the pods' requests.

use serde_json::{Value, json};

use crate::harness::{Berth, BerthOptions, Cluster, WAIT, node, pod, profile};

const SCHEDULER: &str = "berth";

/// A 1-cpu pod of Workload `train`'s pod group `workers`.
fn member(name: &str) -> Value {
    let mut p = pod(name, SCHEDULER, "1", "128Mi");
    p["spec"]["workloadRef"] = json!({"name": "train", "podGroup": "workers"});
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_35_gang_binds_whole_or_not_at_all() {
    let Some(cluster) = Cluster::start_reporting_with(
        35,
        &[
            "--feature-gates=GenericWorkload=true",
            "--runtime-config=scheduling.k8s.io/v1alpha1=true",
        ],
    )
    .await
    else {
        return;
    };
    for n in ["n1", "n2"] {
        cluster.create_node(node(n, "2", "8Gi")).await;
    }
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile(SCHEDULER, json!({}))).await;
    cluster.wait_profile_ready(SCHEDULER, WAIT).await;

    // One cpu taken: 3 free, a gang of 4 one-cpu pods does not fit.
    cluster
        .create_pod(pod("blocker", SCHEDULER, "1", "128Mi"))
        .await;
    cluster.wait_bound(&["blocker"], WAIT).await;
    let names = ["w-0", "w-1", "w-2", "w-3"];
    for name in names {
        let (code, answer) = cluster
            .raw("POST", "/api/v1/namespaces/default/pods", &member(name))
            .await;
        assert_eq!(code, 201, "creating {name}: {answer}");
    }
    // Without its Workload the gang is held before the queue.
    cluster
        .assert_stay_unbound(&names, std::time::Duration::from_secs(2))
        .await;
    let workload = json!({
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 4}}}]},
    });
    let (code, answer) = cluster
        .raw(
            "POST",
            "/apis/scheduling.k8s.io/v1alpha1/namespaces/default/workloads",
            &workload,
        )
        .await;
    assert_eq!(code, 201, "creating the Workload: {answer}");
    // Three fit and wait at Permit for the fourth, which does not fit: none is bound.
    cluster
        .assert_stay_unbound(&names, std::time::Duration::from_secs(3))
        .await;
    assert!(
        names
            .iter()
            .all(|name| cluster.binding_requests_for(name).is_empty()),
        "berth asked to bind part of a gang that does not fit"
    );

    // The blocker leaves: the fourth fits, the quorum is met, the whole gang binds.
    cluster.delete_pod("blocker").await;
    let bound = cluster.wait_bound(&names, WAIT).await;
    assert_eq!(bound.len(), 4, "{bound:?}");
    berth.terminate_cleanly().await;
}
