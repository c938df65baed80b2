//! On the real cluster: `/readyz` turns 200 once the caches are synced (before, it
//! answers only 503: `backoff.rs` holds it there with a kind berth may not list);
//! `/healthz`; `/metrics` carries `scheduler_schedule_attempts_total` with a `profile`
//! label after scheduling; SIGTERM exits 0.

use serde_json::json;

use crate::harness::{Berth, BerthOptions, Cluster, WAIT, eventually, node, pod, profile};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_after_sync_metrics_after_scheduling_and_sigterm_exits_0() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-1", "4", "8Gi")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    let before = berth.wait_ready().await;
    assert!(
        before.iter().all(|s| *s == 0 || *s == 503),
        "/readyz before sync answered {before:?} (0: no connection); expected only 503s"
    );
    let (status, _) = berth.get("/healthz").await.expect("/healthz answers");
    assert_eq!(status, 200, "/healthz");

    cluster.create_profile(profile("observed", json!({}))).await;
    cluster.wait_profile_ready("observed", WAIT).await;
    cluster
        .create_pod(pod("observed-1", "observed", "100m", "128Mi"))
        .await;
    cluster.wait_bound(&["observed-1"], WAIT).await;

    let line = eventually("/metrics counts the attempt", WAIT, || async {
        let (status, body) = berth.get("/metrics").await?;
        if status != 200 {
            return Err(format!("{status}: {body}"));
        }
        body.lines()
            .find(|l| {
                l.starts_with("scheduler_schedule_attempts_total{")
                    && l.contains("profile=\"observed\"")
                    && l.contains("result=\"scheduled\"")
            })
            .map(str::to_string)
            .ok_or(body)
    })
    .await;
    let count: f64 = line
        .rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no value in {line:?}"));
    assert!(count >= 1.0, "{line}");

    berth.terminate_cleanly().await;
    assert!(
        berth.get("/readyz").await.is_err(),
        "the endpoint is gone after exit"
    );
}
