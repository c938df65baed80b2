//! Pods in a Workload API pod group where the API server does not serve the PodGroups
//! are refused live with why and never bound: a 1.37 API server with the GenericWorkload
//! gate on but `scheduling.k8s.io/v1beta1` not enabled (`schedulingGroup`), and a 1.35
//! one with the gate on but `scheduling.k8s.io/v1alpha1` not enabled (`workloadRef`).
//! Where they are served, `workload_gangs.rs` and `legacy_gangs.rs`. Pods with ResourceClaims are served since DynamicResources
//! (`devices.rs`).

use serde_json::{Value, json};

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, eventually, node, pod, profile, simulate,
};

const GROUP: &str = "0/1 nodes are available: pod belongs to a Workload pod group \
     (spec.schedulingGroup); the API server does not \
     serve scheduling.k8s.io/v1beta1 PodGroups, from which the pod-group cycle reads the group.";
const WORKLOAD_REF: &str = "0/1 nodes are available: pod names a Workload \
     (spec.workloadRef, Kubernetes 1.35); the API server does not serve \
     scheduling.k8s.io/v1alpha1 Workloads, from which GangScheduling reads the gang.";

/// `pod` with `field` set in its spec.
fn with_spec(mut pod: Value, field: &str, value: Value) -> Value {
    pod["spec"][field] = value;
    pod
}

/// Waits for `name`'s PodScheduled=False and FailedScheduling event; returns the
/// condition's reason and message and the event's note.
async fn refusal_of(cluster: &Cluster, name: &str) -> (String, String, String) {
    let condition = eventually(
        &format!("`{name}` has PodScheduled=False"),
        WAIT,
        || async {
            let p = cluster.pod(name).await;
            let conditions = p.status.and_then(|s| s.conditions).unwrap_or_default();
            match conditions.iter().find(|c| c.type_ == "PodScheduled") {
                Some(c) if c.status == "False" => Ok(c.clone()),
                _ => Err(format!("{conditions:?}")),
            }
        },
    )
    .await;
    let event = eventually(
        &format!("a FailedScheduling event for `{name}`"),
        WAIT,
        || async {
            let events = cluster.events_for(name).await;
            events
                .iter()
                .find(|e| e.reason.as_deref() == Some("FailedScheduling"))
                .cloned()
                .ok_or_else(|| format!("{events:?}"))
        },
    )
    .await;
    (
        condition.reason.unwrap_or_default(),
        condition.message.unwrap_or_default(),
        event.note.unwrap_or_default(),
    )
}

/// Creates `refused` and a plain pod on a node where all fit; checks each refused pod's
/// condition, event and message (and that the simulator never tries them), that the plain pod binds and that
/// no refused pod is ever bound.
/// Each refused pod: name, object, live message, the start of simulate's message.
async fn refused_live(minor: u32, refused: &[(&str, Value, &str, &str)]) {
    // The Workload API's pod field is behind the GenericWorkload gate (off by default in
    // 1.35 and 1.37): without it the API server drops the field and the pod is plain.
    let Some(cluster) =
        Cluster::start_reporting_with(minor, &["--feature-gates=GenericWorkload=true"]).await
    else {
        return;
    };
    cluster.create_node(node("n1", "8", "16Gi")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile("berth", json!({}))).await;
    cluster.wait_profile_ready("berth", WAIT).await;

    // Posted as JSON: the test's typed Pod would drop a 1.35 `workloadRef` itself.
    for (name, object, _, _) in refused {
        let (code, answer) = cluster
            .raw("POST", "/api/v1/namespaces/default/pods", object)
            .await;
        assert_eq!(code, 201, "creating {name}: {answer}");
    }
    cluster.create_pod(pod("plain", "berth", "1", "1Gi")).await;
    cluster.wait_bound(&["plain"], WAIT).await;

    let mut objects = vec![node("n1", "8", "16Gi"), profile("berth", json!({}))];
    objects.extend(refused.iter().map(|(_, object, _, _)| object.clone()));
    let simulated = simulate(&objects, 0).await;
    for (name, _, message, offline_start) in refused {
        let (reason, condition, note) = refusal_of(&cluster, name).await;
        assert_eq!(reason, "Unschedulable", "{name}");
        assert_eq!(condition, *message, "{name}: PodScheduled message");
        assert_eq!(note, *message, "{name}: FailedScheduling note");
        // The simulator reads PodGroups and Workloads from its input, as a server that
        // serves them would: it never tries a member whose group does not exist.
        let offline = simulated
            .pods
            .iter()
            .find(|p| p.name == *name)
            .map(|p| (p.attempts, p.message.clone()));
        let (attempts, offline) = offline.unwrap_or_else(|| panic!("{name} simulated"));
        assert_eq!(attempts, 0, "{name}: simulated, never tried");
        assert!(
            offline.starts_with(offline_start),
            "{name}: simulate's message: {offline}"
        );
    }
    let names: Vec<&str> = refused.iter().map(|(name, _, _, _)| *name).collect();
    cluster
        .assert_stay_unbound(&names, std::time::Duration::from_secs(2))
        .await;
    assert!(
        names
            .iter()
            .all(|name| cluster.binding_requests_for(name).is_empty()),
        "berth asked to bind a refused pod"
    );
    berth.terminate_cleanly().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduling_groups_are_refused_on_kubernetes_1_37() {
    let group = with_spec(
        pod("worker-0", "berth", "1", "1Gi"),
        "schedulingGroup",
        json!({"podGroupName": "workers"}),
    );
    refused_live(
        37,
        &[(
            "worker-0",
            group,
            GROUP,
            "waiting for PodGroup default/workers (spec.schedulingGroup)",
        )],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_refs_are_refused_on_kubernetes_1_35() {
    let reference = with_spec(
        pod("worker-1", "berth", "1", "1Gi"),
        "workloadRef",
        json!({"name": "training", "podGroup": "workers"}),
    );
    refused_live(
        35,
        &[(
            "worker-1",
            reference,
            WORKLOAD_REF,
            "waiting for Workload default/training (spec.workloadRef)",
        )],
    )
    .await;
}
