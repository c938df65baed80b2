//! Issue 8, "Done when", end to end: `berth run` with a NetworkTraffic profile against a
//! real Prometheus (`tests/support/prometheus.rs`): node-a at 200000 B/s, node-b at
//! 140000, node-c at 20000. Pods land on the quietest node; stopping Prometheus keeps
//! pods scheduling and turns the profile's Degraded condition True (MetricsUnavailable);
//! after a restart it turns False again.

use std::time::Duration;

use serde_json::json;

use crate::harness::{Berth, BerthOptions, Cluster, WAIT, condition, node, pod, profile};
use crate::prometheus::{self, EXAMPLE_RATES, Prometheus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_traffic_places_pods_on_the_quietest_node_and_degrades_while_prometheus_is_down() {
    if !prometheus::installed_or_skip("network_traffic_end_to_end") {
        return;
    }
    let mut prom = Prometheus::start(&prometheus::network_traffic(&EXAMPLE_RATES))
        .expect("starting Prometheus");
    let cluster = Cluster::start().await;
    for name in ["node-a", "node-b", "node-c"] {
        cluster.create_node(node(name, "8", "16Gi")).await;
    }
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster
        .create_profile(profile(
            "network-aware",
            json!({
                "plugins": {"multiPoint": {"enabled": [{"name": "NetworkTraffic", "weight": 5}]}},
                "pluginConfig": {"networkTraffic": {
                    "prometheusAddress": prom.address(),
                    "queryTimeoutSeconds": 1,
                    "cacheTTLSeconds": 0,
                }},
            }),
        ))
        .await;
    cluster.wait_profile_ready("network-aware", WAIT).await;

    cluster
        .create_pod(pod("web-0", "network-aware", "100m", "64Mi"))
        .await;
    let placed = cluster.wait_bound(&["web-0"], WAIT).await;
    assert_eq!(placed["web-0"], "node-c", "the quietest node is node-c");
    let healthy = cluster
        .wait_profile_condition("network-aware", "Degraded", "False", None, WAIT)
        .await;
    assert_eq!(
        condition(&healthy, "Degraded").expect("Degraded")["reason"],
        "AsExpected"
    );

    // Prometheus goes away: scheduling goes on, neutrally, and the profile says why.
    prom.stop();
    cluster
        .create_pod(pod("web-1", "network-aware", "100m", "64Mi"))
        .await;
    cluster.wait_bound(&["web-1"], WAIT).await;
    let degraded = cluster
        .wait_profile_condition(
            "network-aware",
            "Degraded",
            "True",
            Some("MetricsUnavailable"),
            WAIT,
        )
        .await;
    let message = condition(&degraded, "Degraded").expect("Degraded")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("NetworkTraffic") && message.contains(&prom.address()),
        "the Degraded message names the plugin and the Prometheus: {message:?}"
    );
    berth.assert_running();

    // Back up: the next cycle's query succeeds and Degraded clears.
    prom.restart().expect("restarting Prometheus");
    cluster
        .create_pod(pod("web-2", "network-aware", "100m", "64Mi"))
        .await;
    let placed = cluster.wait_bound(&["web-2"], WAIT).await;
    assert_eq!(placed["web-2"], "node-c");
    cluster
        .wait_profile_condition(
            "network-aware",
            "Degraded",
            "False",
            Some("AsExpected"),
            Duration::from_secs(20),
        )
        .await;
    berth.terminate_cleanly().await;
}
