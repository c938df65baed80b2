//! Issue 8, "Done when", end to end: `berth run` with a NetworkTraffic profile against a
//! real Prometheus (`tests/support/prometheus.rs`): node-a at 200000 B/s, node-b at
//! 140000, node-c at 20000. Pods land on the quietest node; stopping Prometheus keeps
//! pods scheduling and turns the profile's Degraded condition True (MetricsUnavailable);
//! after a restart it turns False again.
//!
//! Issue 13, item 1, live: the tutorial's score-only configuration
//! (`tests/prometheus/network-traffic-tutorial.yaml`), converted with `berth convert` and
//! applied as is (the Prometheus address replaced by the test's), places a pod on the idle
//! node, and its status lists the PreScore resolution added.

use std::time::Duration;

use serde_json::json;

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, condition, node, pod, profile, repo_root,
};
use crate::prometheus::{self, EXAMPLE_RATES, Prometheus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_traffic_places_pods_on_the_quietest_node_and_degrades_while_prometheus_is_down() {
    if !prometheus::installed_or_skip("network_traffic_end_to_end") {
        return;
    }
    let mut prom = Prometheus::start(&prometheus::network_traffic(&EXAMPLE_RATES))
        .expect("starting Prometheus");
    let Some(cluster) = Cluster::start().await else {
        return;
    };
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

/// `berth convert -f <fixture>` as one SchedulerProfile object, with the tutorial's
/// Prometheus address replaced by `address`.
fn converted_tutorial(fixture: &str, address: &str) -> serde_json::Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["convert", "-f"])
        .arg(repo_root().join(fixture))
        .output()
        .expect("running berth convert");
    let yaml = String::from_utf8_lossy(&output.stdout).replace("http://10.0.0.5:9090", address);
    assert!(
        output.status.success() && yaml.contains(address),
        "berth convert {fixture}: {yaml}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("berth convert printed {yaml}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_converted_score_only_tutorial_places_pods_on_the_idle_node() {
    if !prometheus::installed_or_skip("the_converted_score_only_tutorial_live") {
        return;
    }
    let rates = [("node-a", 200000.0), ("node-b", 100000.0), ("node-c", 0.0)];
    let prom =
        Prometheus::start(&prometheus::network_traffic(&rates)).expect("starting Prometheus");
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    for name in ["node-a", "node-b", "node-c"] {
        cluster.create_node(node(name, "8", "16Gi")).await;
    }
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    let tutorial = converted_tutorial(
        "tests/prometheus/network-traffic-tutorial.yaml",
        &prom.address(),
    );
    assert_eq!(tutorial["metadata"]["name"], "network-aware", "{tutorial}");
    cluster.create_profile(tutorial).await;
    let ready = cluster.wait_profile_ready("network-aware", WAIT).await;
    let plugins = &ready["status"]["plugins"];
    assert_eq!(
        plugins["score"],
        json!([{"name": "NetworkTraffic", "weight": 10}]),
        "{plugins}"
    );
    assert!(
        plugins["preScore"]
            .as_array()
            .is_some_and(|names| names.contains(&json!("NetworkTraffic"))),
        "status.plugins.preScore shows the coupled point: {plugins}"
    );

    cluster
        .create_pod(pod("web-0", "network-aware", "100m", "64Mi"))
        .await;
    let placed = cluster.wait_bound(&["web-0"], WAIT).await;
    assert_eq!(placed["web-0"], "node-c", "the idle node is node-c");
    let healthy = cluster
        .wait_profile_condition("network-aware", "Degraded", "False", None, WAIT)
        .await;
    assert_eq!(
        condition(&healthy, "Degraded").expect("Degraded")["reason"],
        "AsExpected"
    );
    berth.terminate_cleanly().await;
}
