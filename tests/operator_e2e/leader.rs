//! "Two replicas: only the leader binds; stop the leader and the follower binds the next
//! pods within 20 s."
//!
//! Both replicas use the same client library, so the request log's user agent cannot
//! tell them apart. Who scheduled a pod is read from its `Scheduled` event instead:
//! berth reports as `<schedulerName>-<identity>` (`reportingInstance`), and the Lease
//! holder says who leads.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use crate::harness::{
    Berth, BerthOptions, Cluster, LEASE_NAME, WAIT, eventually, node, pod, profile,
};

const SCHEDULER: &str = "ha";

/// Waits for each pod's `Scheduled` event and returns the reporting instances.
async fn scheduled_by(cluster: &Cluster, names: &[&str]) -> Vec<String> {
    let mut instances = Vec::new();
    for name in names {
        let instance = eventually(&format!("a Scheduled event for {name}"), WAIT, || async {
            let events = cluster.events_for(name).await;
            events
                .iter()
                .find(|e| e.reason.as_deref() == Some("Scheduled"))
                .map(|e| e.reporting_instance.clone().unwrap_or_default())
                .ok_or_else(|| format!("{events:?}"))
        })
        .await;
        instances.push(instance);
    }
    instances
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_only_the_leader_binds_and_the_follower_takes_over_within_20s() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-1", "8", "16Gi")).await;
    cluster.create_node(node("node-2", "8", "16Gi")).await;

    // r1 first, so it is the leader; then r2.
    let mut r1 = Berth::spawn(&cluster, BerthOptions::leader("r1"));
    r1.wait_ready().await;
    eventually("r1 holds the lease", WAIT, || async {
        match cluster.lease_holder(LEASE_NAME).await {
            Some(holder) if holder == "r1" => Ok(()),
            other => Err(format!("holder {other:?}")),
        }
    })
    .await;
    let mut r2 = Berth::spawn(&cluster, BerthOptions::leader("r2"));
    r2.wait_ready().await;

    cluster.create_profile(profile(SCHEDULER, json!({}))).await;
    cluster.wait_profile_ready(SCHEDULER, WAIT).await;
    let before = ["before-1", "before-2", "before-3"];
    for name in before {
        cluster
            .create_pod(pod(name, SCHEDULER, "100m", "128Mi"))
            .await;
    }
    cluster.wait_bound(&before, WAIT).await;
    let instances = scheduled_by(&cluster, &before).await;
    assert!(
        instances.iter().all(|i| i == &format!("{SCHEDULER}-r1")),
        "pods scheduled while r1 leads were scheduled by {instances:?}"
    );
    assert_eq!(
        cluster.lease_holder(LEASE_NAME).await.as_deref(),
        Some("r1")
    );
    // No second replica tried: one Binding POST per pod, whatever its answer.
    for name in before {
        let requests = cluster.binding_requests_for(name);
        assert_eq!(
            requests.len(),
            1,
            "binding requests for {name}: {requests:?}"
        );
    }
    r2.assert_running();

    // Stop the leader: it exits 0 and the follower schedules the next pods within 20 s.
    let stopped = Instant::now();
    r1.terminate_cleanly().await;
    let after = ["after-1", "after-2"];
    for name in after {
        cluster
            .create_pod(pod(name, SCHEDULER, "100m", "128Mi"))
            .await;
    }
    let remaining = Duration::from_secs(20).saturating_sub(stopped.elapsed());
    cluster.wait_bound(&after, remaining).await;
    let instances = scheduled_by(&cluster, &after).await;
    assert!(
        instances.iter().all(|i| i == &format!("{SCHEDULER}-r2")),
        "pods scheduled after failover were scheduled by {instances:?}"
    );
    assert_eq!(
        cluster.lease_holder(LEASE_NAME).await.as_deref(),
        Some("r2")
    );

    // Every pod bound exactly once across both replicas.
    let bindings = cluster.successful_bindings();
    for name in before.iter().chain(after.iter()) {
        assert_eq!(
            bindings.get(&format!("default/{name}")),
            Some(&1),
            "{bindings:?}"
        );
    }
    assert_eq!(
        bindings.values().sum::<usize>(),
        before.len() + after.len(),
        "{bindings:?}"
    );
    r2.terminate_cleanly().await;
}
