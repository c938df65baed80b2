//! "Editing a profile (LeastAllocated -> MostAllocated) changes where new pods go, with
//! no restart; deleting it stops bindings while its pending pods stay pending."
//! "Two profiles with one schedulerName: the newer reports `DuplicateSchedulerName`."

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, condition, conditions_summary, eventually, fit_strategy,
    node, pod, profile, simulated_placements,
};

const SCHEDULER: &str = "edit";

/// Two nodes with the same cpu:memory ratio as the pods (1 cpu : 2Gi), so
/// NodeResourcesBalancedAllocation scores both 100 and NodeResourcesFit alone decides:
/// LeastAllocated prefers the big node, MostAllocated the small one.
fn nodes() -> Vec<Value> {
    vec![
        node("node-small", "2", "4Gi"),
        node("node-big", "8", "16Gi"),
    ]
}

fn bound_to(mut p: Value, node: &str) -> Value {
    p["spec"]["nodeName"] = json!(node);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_a_profile_changes_placements_without_restart_and_deleting_it_stops_binding() {
    edit_and_delete(37).await;
}

/// The 1.35 smoke subset: the same profile lifecycle against kube-apiserver 1.35.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_profile_lifecycle_against_kubernetes_1_35() {
    edit_and_delete(35).await;
}

async fn edit_and_delete(minor: u32) {
    let Some(cluster) = Cluster::start_reporting(minor).await else {
        return;
    };
    for n in nodes() {
        cluster.create_node(n).await;
    }
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    let pid = berth.pid();

    let least = profile(
        SCHEDULER,
        json!({"pluginConfig": fit_strategy("LeastAllocated")}),
    );
    let most = profile(
        SCHEDULER,
        json!({"pluginConfig": fit_strategy("MostAllocated")}),
    );
    let first = pod("first", SCHEDULER, "500m", "1Gi");
    let second = pod("second", SCHEDULER, "500m", "1Gi");

    // What the core predicts: `first` under LeastAllocated; then `second` under
    // MostAllocated with `first` where it went. The two must differ, or this test would
    // not show the edit taking effect.
    let mut objects = nodes();
    objects.extend([least.clone(), first.clone()]);
    let first_node = simulated_placements(&objects, 0).await["first"].clone();
    let mut objects = nodes();
    objects.extend([
        most.clone(),
        bound_to(first.clone(), &first_node),
        second.clone(),
    ]);
    let second_node = simulated_placements(&objects, 0).await["second"].clone();
    let mut objects = nodes();
    objects.extend([
        least.clone(),
        bound_to(first.clone(), &first_node),
        second.clone(),
    ]);
    let second_if_unchanged = simulated_placements(&objects, 0).await["second"].clone();
    assert_ne!(
        second_node, second_if_unchanged,
        "test design: the two strategies must place `second` differently"
    );

    cluster.create_profile(least).await;
    cluster.wait_profile_ready(SCHEDULER, WAIT).await;
    cluster.create_pod(first).await;
    let placed = cluster.wait_bound(&["first"], WAIT).await;
    assert_eq!(placed["first"], first_node, "LeastAllocated placement");

    // The edit: a new generation, observed and accepted by the same process.
    cluster
        .patch_profile_spec(
            SCHEDULER,
            json!({"pluginConfig": fit_strategy("MostAllocated")}),
        )
        .await;
    eventually("the edit is observed and accepted", WAIT, || async {
        let p = cluster.profile(SCHEDULER).await;
        let accepted = condition(&p, "Accepted").is_some_and(|c| c["status"] == "True");
        let ready = condition(&p, "Ready").is_some_and(|c| c["status"] == "True");
        if p["status"]["observedGeneration"] == 2 && accepted && ready {
            Ok(())
        } else {
            Err(format!(
                "generation {}: {}",
                p["metadata"]["generation"],
                conditions_summary(&p)
            ))
        }
    })
    .await;
    // A `Reloaded` event on the profile says the instance was hot-swapped.
    eventually("a Reloaded event on the profile", WAIT, || async {
        let events = cluster.events_about("SchedulerProfile", SCHEDULER).await;
        let reasons: Vec<_> = events.iter().map(|e| e.reason.clone()).collect();
        if reasons.iter().any(|r| r.as_deref() == Some("Reloaded")) {
            Ok(())
        } else {
            Err(format!("reasons {reasons:?}"))
        }
    })
    .await;
    cluster.create_pod(second).await;
    let placed = cluster.wait_bound(&["second"], WAIT).await;
    assert_eq!(
        placed["second"], second_node,
        "MostAllocated placement after the edit"
    );
    berth.assert_running();
    assert_eq!(berth.pid(), pid, "no restart");

    // A pod the profile cannot place yet (more cpu than any node has) is pending when
    // the profile goes away.
    cluster
        .create_pod(pod("huge", SCHEDULER, "16", "16Gi"))
        .await;
    eventually("`huge` is reported unschedulable", WAIT, || async {
        let p = cluster.pod("huge").await;
        let conditions = p.status.and_then(|s| s.conditions).unwrap_or_default();
        if conditions
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "False")
        {
            Ok(())
        } else {
            Err(format!("{conditions:?}"))
        }
    })
    .await;

    cluster.delete_profile(SCHEDULER).await;
    // No status is left to poll once the object is gone; give the controller a moment to
    // stop the instance before changing the cluster.
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Now `huge` would fit, and `third` fits anywhere: neither may be bound.
    cluster.create_node(node("node-huge", "32", "64Gi")).await;
    cluster
        .create_pod(pod("third", SCHEDULER, "500m", "1Gi"))
        .await;
    cluster
        .assert_stay_unbound(&["huge", "third"], Duration::from_secs(3))
        .await;
    for name in ["huge", "third"] {
        let requests = cluster.binding_requests_for(name);
        assert!(
            requests.is_empty(),
            "bindings for {name} after the delete: {requests:?}"
        );
    }
    berth.assert_running();
    berth.terminate_cleanly().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_profiles_with_one_scheduler_name_the_newer_reports_duplicate() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-1", "4", "8Gi")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;

    cluster
        .create_profile(profile("dup-a", json!({"schedulerName": "shared"})))
        .await;
    cluster.wait_profile_ready("dup-a", WAIT).await;
    // creationTimestamp has one-second resolution: make "newer" unambiguous.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    cluster
        .create_profile(profile("dup-b", json!({"schedulerName": "shared"})))
        .await;

    let newer = cluster
        .wait_profile_condition(
            "dup-b",
            "Accepted",
            "False",
            Some("DuplicateSchedulerName"),
            WAIT,
        )
        .await;
    assert!(
        condition(&newer, "Ready").is_none_or(|c| c["status"] != "True"),
        "the duplicate must not be Ready: {}",
        newer["status"]
    );
    // The older keeps the name and keeps scheduling.
    let older = cluster.profile("dup-a").await;
    for type_ in ["Accepted", "Ready"] {
        assert!(
            condition(&older, type_).is_some_and(|c| c["status"] == "True"),
            "dup-a lost {type_}: {}",
            older["status"]
        );
    }
    cluster
        .create_pod(pod("shared-1", "shared", "100m", "128Mi"))
        .await;
    cluster.wait_bound(&["shared-1"], WAIT).await;
    assert_eq!(
        cluster.successful_bindings().get("default/shared-1"),
        Some(&1),
        "one binding for shared-1"
    );
    berth.terminate_cleanly().await;
}
