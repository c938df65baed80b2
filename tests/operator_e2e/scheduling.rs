//! "CRDs applied; a profile applied -> Accepted and Ready True within 2 s; its pods are
//! bound to the nodes the core predicts for the same inputs (compare with the simulator
//! on the same cluster); pods for an unknown schedulerName are left alone."

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, node, pod, profile, simulated_placements,
};

const SEED: u64 = 7;
const SCHEDULER: &str = "berth-e2e";

/// Three nodes of different sizes, one of them half full, so most placements are decided
/// by scores rather than ties.
fn nodes() -> Vec<Value> {
    vec![
        node("node-small", "2", "4Gi"),
        node("node-medium", "4", "8Gi"),
        node("node-large", "8", "16Gi"),
    ]
}

/// A pod already running on node-large (it counts in that node's requests).
fn running_pod() -> Value {
    let mut running = pod("running-1", "default-scheduler", "4", "8Gi");
    running["spec"]["nodeName"] = json!("node-large");
    running
}

/// The pods the profile schedules, in creation order: balanced and unbalanced requests,
/// so both NodeResourcesFit and NodeResourcesBalancedAllocation matter.
fn pending_pods() -> Vec<Value> {
    vec![
        pod("web-1", SCHEDULER, "1", "2Gi"),
        pod("web-2", SCHEDULER, "500m", "1Gi"),
        pod("cpu-heavy", SCHEDULER, "2", "1Gi"),
        pod("memory-heavy", SCHEDULER, "500m", "4Gi"),
        pod("tiny", SCHEDULER, "250m", "256Mi"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_applied_is_ready_within_2s_and_binds_where_the_simulator_does() {
    ready_and_bound_as_simulated(37).await;
}

/// The same scenario against an API server of the oldest supported release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_against_a_kubernetes_1_35_api_server() {
    ready_and_bound_as_simulated(35).await;
}

async fn ready_and_bound_as_simulated(minor: u32) {
    let Some(cluster) = Cluster::start_reporting(minor).await else {
        return;
    }; // installs crds/, checks both CRDs
    // The pinned release, stamped into the binary (kube/k8s-1.<minor>/go.mod).
    let (status, version) = cluster.raw("GET", "/version", &Value::Null).await;
    let want = match cluster.real() {
        Some(real) => real.kube.binaries.version.clone(),
        None => format!("v1.{minor}.0"),
    };
    assert!(want.starts_with(&format!("v1.{minor}.")), "{want}");
    assert_eq!((status, version["gitVersion"].clone()), (200, json!(want)));
    for n in nodes() {
        cluster.create_node(n).await;
    }
    cluster.create_pod(running_pod()).await;
    // Pods no profile serves: one naming an unknown scheduler, one with the default
    // scheduler name (no `default-scheduler` profile exists in this cluster).
    cluster
        .create_pod(pod("stray-unknown", "nobody-scheduler", "100m", "128Mi"))
        .await;
    cluster
        .create_pod(pod("stray-default", "default-scheduler", "100m", "128Mi"))
        .await;

    let mut berth = Berth::spawn(&cluster, BerthOptions::seed(SEED));
    berth.wait_ready().await;

    let the_profile = profile(SCHEDULER, json!({}));
    let created = cluster.create_profile(the_profile.clone()).await;
    let ready = cluster.wait_profile_ready(SCHEDULER, WAIT).await;
    let took = created.elapsed();
    assert!(
        took <= Duration::from_secs(2),
        "Accepted and Ready took {took:?} (more than 2 s): {}",
        crate::harness::conditions_summary(&ready)
    );
    assert_eq!(
        ready["status"]["schedulerName"], SCHEDULER,
        "status: {}",
        ready["status"]
    );
    let resource_version = ready["metadata"]["resourceVersion"].clone();
    let status_writes = cluster.profile_status_writes(SCHEDULER);

    // The oracle: the simulator on the same nodes, running pod, profile and pending pods,
    // with the same seed.
    //
    // Order: the live pods are created one at a time, each after the previous one is
    // bound, so every pod sees the same cluster the simulator shows it (the simulator
    // schedules in document order: equal priorities, creation timestamps one second
    // apart). Ties: the node sizes differ and one node is half full, which keeps most
    // scores distinct; where two nodes still tie, both sides break it with the same seed
    // in the same sequence of cycles. Creating all pods at once would make the live
    // order depend on which creation the watch delivers first within one
    // creationTimestamp second, which is not an input the simulator has.
    let mut objects = nodes();
    objects.push(running_pod());
    objects.push(the_profile);
    objects.extend(pending_pods());
    let expected = simulated_placements(&objects, SEED).await;
    assert_eq!(
        expected.len(),
        pending_pods().len(),
        "the simulator schedules every pending pod: {expected:?}"
    );

    let used: std::collections::BTreeSet<&String> = expected.values().collect();
    assert!(
        used.len() >= 2,
        "test design: the pods should spread over several nodes: {expected:?}"
    );

    let mut live = BTreeMap::new();
    for p in pending_pods() {
        let name = p["metadata"]["name"].as_str().expect("a name").to_string();
        cluster.create_pod(p).await;
        live.extend(cluster.wait_bound(&[name.as_str()], WAIT).await);
    }
    assert_eq!(
        live, expected,
        "live placements (left) differ from the simulator's (right)"
    );

    // Exactly one successful Binding per scheduled pod.
    let bindings = cluster.successful_bindings();
    for name in expected.keys() {
        assert_eq!(
            bindings.get(&format!("default/{name}")),
            Some(&1),
            "successful bindings of {name}: {bindings:?}"
        );
    }

    // Status is written only when it changes: scheduling pods changed nothing in it.
    let after = cluster.profile(SCHEDULER).await;
    assert_eq!(
        after["metadata"]["resourceVersion"], resource_version,
        "the profile changed while its pods were scheduled: {}",
        after["status"]
    );
    assert_eq!(
        cluster.profile_status_writes(SCHEDULER),
        status_writes,
        "status writes while nothing changed"
    );

    // Pods for an unknown schedulerName: still unbound, never a Binding for them.
    cluster
        .assert_stay_unbound(
            &["stray-unknown", "stray-default"],
            Duration::from_millis(500),
        )
        .await;
    for stray in ["stray-unknown", "stray-default"] {
        let requests = cluster.binding_requests_for(stray);
        assert!(
            requests.is_empty(),
            "binding requests for {stray}: {requests:?}"
        );
        let events = cluster.events_for(stray).await;
        assert!(events.is_empty(), "berth reported on {stray}: {events:?}");
        let status = cluster.pod(stray).await.status;
        let touched = status
            .and_then(|s| s.conditions)
            .is_some_and(|c| c.iter().any(|c| c.type_ == "PodScheduled"));
        assert!(!touched, "berth set PodScheduled on {stray}");
    }

    berth.assert_running();
    berth.terminate_cleanly().await;
}
