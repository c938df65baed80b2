//! "Faults (500s on binding, dropped watches, 410 Gone, a slow API server): every pod is
//! bound exactly once and none is lost (assert on the test server's request log and
//! final state)."

use std::time::Duration;

use serde_json::json;
use test_apiserver::Fault;

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, conditions_summary, eventually, node, pod, profile,
};

const SCHEDULER: &str = "faults";

async fn create_pods(cluster: &Cluster, names: &[&str]) {
    for name in names {
        cluster
            .create_pod(pod(name, SCHEDULER, "100m", "128Mi"))
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_every_pod_is_bound_exactly_once_and_none_is_lost() {
    let cluster = Cluster::start_test_server().await;
    cluster.create_node(node("node-1", "8", "16Gi")).await;
    cluster.create_node(node("node-2", "8", "16Gi")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile(SCHEDULER, json!({}))).await;
    cluster.wait_profile_ready(SCHEDULER, WAIT).await;
    let mut all: Vec<&str> = Vec::new();

    // 500s on binding: three failures, retried.
    cluster.server().inject_fault(Fault {
        verb: Some("create".into()),
        resource: Some("pods/binding".into()),
        count: 3,
        status: 500,
        message: "injected".into(),
    });
    let phase = ["err-1", "err-2", "err-3"];
    create_pods(&cluster, &phase).await;
    cluster.wait_bound(&phase, WAIT).await;
    all.extend(phase);
    let failed = cluster
        .binding_requests()
        .into_iter()
        .filter(|r| r.status == 500)
        .count();
    assert_eq!(
        failed, 3,
        "the three injected 500s were answered to binding POSTs"
    );

    // A 409 on binding: berth reads the pod back (not bound: a real conflict, the bind
    // failed), requeues it, and binds it on the next attempt.
    let log_mark = cluster.requests().len();
    cluster.server().inject_fault(Fault {
        verb: Some("create".into()),
        resource: Some("pods/binding".into()),
        count: 1,
        status: 409,
        message: "injected conflict".into(),
    });
    let phase = ["conflict-1"];
    create_pods(&cluster, &phase).await;
    cluster.wait_bound(&phase, WAIT).await;
    all.extend(phase);
    let read_back = cluster.requests()[log_mark..].iter().any(|r| {
        r.verb == "get"
            && r.resource == "pods"
            && r.subresource.is_none()
            && r.name.as_deref() == Some("conflict-1")
            && r.user_agent.as_deref() == Some(berth::operator::USER_AGENT)
    });
    assert!(read_back, "berth did not read the pod back after the 409");

    // Dropped watches: pods created while the watches reconnect.
    cluster.server().drop_watches();
    let phase = ["drop-1", "drop-2"];
    create_pods(&cluster, &phase).await;
    cluster.wait_bound(&phase, WAIT).await;
    all.extend(phase);

    // 410 Gone: the history is forgotten and the watches end at once (no bookmark can
    // hand out a fresh resourceVersion in between), so resuming fails with 410 and the
    // watches must relist to see the pods created meanwhile.
    let log_mark = cluster.requests().len();
    cluster.server().expire_history();
    cluster.server().drop_watches();
    let phase = ["gone-1", "gone-2", "gone-3"];
    create_pods(&cluster, &phase).await;
    cluster.wait_bound(&phase, WAIT).await;
    all.extend(phase);
    let relisted = cluster.requests()[log_mark..]
        .iter()
        .any(|r| r.verb == "list" && r.resource == "pods");
    assert!(
        relisted,
        "no pod relist after the history expired (the 410 path was not taken)"
    );

    // The profile controller came through the 410 as well: an edit is still observed.
    cluster
        .patch_profile_spec(SCHEDULER, json!({"percentageOfNodesToScore": 50}))
        .await;
    eventually(
        "the profile edit after the 410 is observed",
        WAIT,
        || async {
            let p = cluster.profile(SCHEDULER).await;
            if p["status"]["observedGeneration"] == 2 {
                Ok(())
            } else {
                Err(conditions_summary(&p))
            }
        },
    )
    .await;

    // A slow API server: every response 200 ms late.
    cluster.server().set_delay(Some(Duration::from_millis(200)));
    let phase = ["slow-1", "slow-2", "slow-3"];
    create_pods(&cluster, &phase).await;
    cluster.wait_bound(&phase, WAIT).await;
    all.extend(phase);
    cluster.server().set_delay(None);

    // Settle: anything still in flight has had time to land (or double-land).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let bindings = cluster.successful_bindings();
    for name in &all {
        assert_eq!(
            bindings.get(&format!("default/{name}")),
            Some(&1),
            "successful bindings of {name}: {bindings:?}"
        );
    }
    assert_eq!(
        bindings.values().sum::<usize>(),
        all.len(),
        "201s: {bindings:?}"
    );
    // The final state: every pod exists, bound to a node that exists.
    let pods = cluster
        .pods()
        .list(&Default::default())
        .await
        .expect("listing pods");
    assert_eq!(pods.items.len(), all.len(), "pods in the cluster");
    for p in pods.items {
        let node = p.spec.and_then(|s| s.node_name).unwrap_or_default();
        assert!(
            node == "node-1" || node == "node-2",
            "{:?} is on {node:?}",
            p.metadata.name
        );
    }
    berth.assert_running();
    berth.terminate_cleanly().await;
}
