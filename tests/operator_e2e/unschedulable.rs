//! "An unschedulable pod gets the event and the condition, and is bound soon after a node
//! that fits is added."

use serde_json::json;

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, eventually, node, pod, profile, simulate,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unschedulable_pod_gets_event_and_condition_and_is_bound_when_a_node_fits() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-small", "2", "4Gi")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile("fits", json!({}))).await;
    cluster.wait_profile_ready("fits", WAIT).await;

    cluster.create_pod(pod("big", "fits", "3", "1Gi")).await;

    // PodScheduled=False, reason Unschedulable, upstream's message format.
    let message = eventually("`big` has PodScheduled=False", WAIT, || async {
        let p = cluster.pod("big").await;
        let conditions = p.status.and_then(|s| s.conditions).unwrap_or_default();
        match conditions.iter().find(|c| c.type_ == "PodScheduled") {
            Some(c) if c.status == "False" => Ok(c.clone()),
            _ => Err(format!("{conditions:?}")),
        }
    })
    .await;
    assert_eq!(
        message.reason.as_deref(),
        Some("Unschedulable"),
        "{message:?}"
    );
    let text = message.message.clone().unwrap_or_default();
    assert!(
        text.starts_with("0/1 nodes are available: ") && text.contains("1 Insufficient cpu"),
        "not an upstream-format message: {text:?}"
    );
    // The same message the core gives `berth simulate` for this cluster.
    let simulated = simulate(
        &[
            node("node-small", "2", "4Gi"),
            profile("fits", json!({})),
            pod("big", "fits", "3", "1Gi"),
        ],
        0,
    )
    .await;
    let expected = simulated
        .pods
        .iter()
        .find(|p| p.name == "big")
        .map(|p| p.message.clone())
        .expect("the simulator reports `big`");
    assert_eq!(
        text, expected,
        "live message (left) vs the simulator's (right)"
    );

    // A FailedScheduling Warning event (events.k8s.io/v1).
    let failed = eventually("a FailedScheduling event for `big`", WAIT, || async {
        let events = cluster.events_for("big").await;
        events
            .iter()
            .find(|e| e.reason.as_deref() == Some("FailedScheduling"))
            .cloned()
            .ok_or_else(|| format!("{events:?}"))
    })
    .await;
    assert_eq!(failed.type_.as_deref(), Some("Warning"), "{failed:?}");
    let note = failed.note.clone().unwrap_or_default();
    assert!(
        note.starts_with("0/1 nodes are available: "),
        "event note {note:?}"
    );
    assert_eq!(
        failed.reporting_controller.as_deref(),
        Some("fits"),
        "{failed:?}"
    );

    // A node that fits: the pod is bound to it (the node's arrival requeues it).
    cluster.create_node(node("node-big", "8", "16Gi")).await;
    let placed = cluster.wait_bound(&["big"], WAIT).await;
    assert_eq!(placed["big"], "node-big");
    assert_eq!(cluster.successful_bindings().get("default/big"), Some(&1));

    let scheduled = eventually("a Scheduled event for `big`", WAIT, || async {
        let events = cluster.events_for("big").await;
        events
            .iter()
            .find(|e| e.reason.as_deref() == Some("Scheduled"))
            .cloned()
            .ok_or_else(|| format!("{events:?}"))
    })
    .await;
    assert_eq!(scheduled.type_.as_deref(), Some("Normal"));
    assert_eq!(
        scheduled.note.as_deref(),
        Some("Successfully assigned default/big to node-big")
    );
    // Repeated failures did not flood: one FailedScheduling Event object.
    let failures = cluster
        .events_for("big")
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .count();
    assert_eq!(
        failures, 1,
        "FailedScheduling events for one unschedulable pod"
    );
    berth.terminate_cleanly().await;
}
