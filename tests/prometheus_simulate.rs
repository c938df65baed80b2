//! Issue 8, "Done when", in `berth simulate`: NetworkTraffic and MetricsScore against a real
//! Prometheus (Debian's `prometheus`, started by `tests/support/prometheus.rs` on a TSDB
//! built with promtool) holding `node_network_receive_bytes_total` and `node_uname_info`
//! for three nodes: node-a at 200000 B/s, node-b at 140000, node-c at 20000.
//!
//! Expected numbers come from the issue's formula: NetworkTraffic normalizes to
//! `100 - value * 100 / max`, so node-a scores 0, node-b 30 and node-c 90.
//!
//! The simulator runs as the real binary (`berth simulate -o json --explain`), as a user
//! runs it. Without the binaries the tests skip loudly, unless `CI=true`.
//!
//! Issue 13, item 1: the tutorial's score-only configuration
//! (`tests/prometheus/network-traffic-tutorial.yaml`), converted with `berth convert` and
//! used as is, ranks nodes by their receive rates, as the profile resolution now runs
//! NetworkTraffic's PreScore (where it queries) wherever its Score runs.

mod support;
use support::http::free_port;
use support::prometheus;
use support::temp::TempDir;

use std::path::Path;
use std::process::Command;

use prometheus::{EXAMPLE_RATES, NETWORK_QUERY, Prometheus};
use serde_json::Value;

/// Three identical nodes named like the fixture's `nodename`s.
fn nodes() -> String {
    ["node-a", "node-b", "node-c"]
        .iter()
        .map(|name| {
            format!(
                "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{kubernetes.io/hostname: {name}}}\nstatus:\n  allocatable: {{cpu: \"8\", memory: 16Gi, pods: \"110\"}}\n  capacity: {{cpu: \"8\", memory: 16Gi, pods: \"110\"}}\n---\n"
            )
        })
        .collect()
}

fn pod(name: &str, scheduler: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  schedulerName: {scheduler}\n{extra_spec}  containers:\n  - name: main\n    image: registry.k8s.io/pause:3.10\n    resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}\n---\n"
    )
}

/// Runs `berth simulate -o json --explain` on `yaml`; the parsed report and the exit code.
fn simulate(dir: &Path, yaml: &str) -> (Value, i32) {
    let file = dir.join("cluster.yaml");
    std::fs::write(&file, yaml).expect("writing the input");
    let output = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["simulate", "-o", "json", "--explain", "-f"])
        .arg(&file)
        .output()
        .expect("running berth simulate");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "berth simulate printed no JSON report ({e}): stdout {stdout}\nstderr {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (report, output.status.code().unwrap_or(-1))
}

fn pod_report<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["pods"]
        .as_array()
        .and_then(|pods| pods.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no pod {name} in the report: {report:#}"))
}

/// The normalized score `plugin` gave each node, from the `--explain` section.
fn plugin_scores(pod: &Value, plugin: &str) -> Vec<(String, i64)> {
    let mut scores: Vec<(String, i64)> = pod["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("no per-node explanation: {pod:#}"))
        .iter()
        .filter_map(|node| {
            let score = node["scores"]
                .as_array()?
                .iter()
                .find(|s| s["plugin"] == plugin)?["score"]
                .as_i64()?;
            Some((node["name"].as_str()?.to_string(), score))
        })
        .collect();
    scores.sort();
    scores
}

/// `berth convert -f <fixture>`'s stdout, with the tutorial's Prometheus address
/// replaced by `address`.
fn convert_tutorial(fixture: &str, address: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(fixture);
    let output = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["convert", "-f"])
        .arg(&path)
        .output()
        .expect("running berth convert");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success() && stdout.contains("http://10.0.0.5:9090"),
        "berth convert {fixture}: stdout {stdout}\nstderr {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout.replace("http://10.0.0.5:9090", address)
}

#[test]
fn network_traffic_scores_follow_the_formula_and_pods_land_on_the_quietest_node() {
    if !prometheus::installed_or_skip("network_traffic_scores_follow_the_formula") {
        return;
    }
    let prom = Prometheus::start(&prometheus::network_traffic(&EXAMPLE_RATES))
        .expect("starting Prometheus");
    let profile = format!(
        "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata:\n  name: network-aware\nspec:\n  plugins:\n    multiPoint:\n      enabled: [{{name: NetworkTraffic, weight: 5}}]\n  pluginConfig:\n    networkTraffic:\n      prometheusAddress: {}\n      networkInterface: eth0\n      timeRangeSeconds: 60\n      cacheTTLSeconds: 0\n---\n",
        prom.address()
    );
    let pods: String = (0..3)
        .map(|i| pod(&format!("web-{i}"), "network-aware", ""))
        .collect();
    let dir = TempDir::new("prometheus-simulate-network");
    let before = prom
        .requests("/api/v1/query")
        .expect("Prometheus' request count");
    let (report, code) = simulate(dir.path(), &(profile + &nodes() + &pods));
    let after = prom
        .requests("/api/v1/query")
        .expect("Prometheus' request count");

    assert_eq!(code, 0, "{report:#}");
    assert!(
        report["degraded"].as_array().is_none_or(Vec::is_empty),
        "NetworkTraffic reported itself degraded with Prometheus up: {report:#}"
    );
    for i in 0..3 {
        let web = pod_report(&report, &format!("web-{i}"));
        assert_eq!(web["result"], "Scheduled", "{web:#}");
        assert_eq!(
            web["node"], "node-c",
            "web-{i} should avoid busy nodes: {web:#}"
        );
        assert_eq!(
            plugin_scores(web, "NetworkTraffic"),
            [
                ("node-a".to_string(), 0),
                ("node-b".to_string(), 30),
                ("node-c".to_string(), 90),
            ],
            "web-{i}: 100 - value * 100 / 200000"
        );
    }
    // One query per scheduling cycle (cache TTL 0), the three pods one cycle each; the
    // harness' own request-count reads are not queries.
    assert_eq!(after - before, 3, "queries to /api/v1/query for 3 cycles");
}

#[test]
fn metrics_score_filter_above_rejects_the_hot_node_and_queries_once_per_metric() {
    if !prometheus::installed_or_skip("metrics_score_filter_above") {
        return;
    }
    let prom = Prometheus::start(&prometheus::network_traffic(&EXAMPLE_RATES))
        .expect("starting Prometheus");
    // Two metrics: receive bandwidth with a threshold, and node_uname_info (1 everywhere)
    // as a second, neutral one — two queries per cycle.
    let profile = format!(
        r#"apiVersion: berth.dev/v1alpha1
kind: SchedulerProfile
metadata:
  name: load-aware
spec:
  plugins:
    multiPoint:
      enabled: [{{name: MetricsScore, weight: 5}}]
  pluginConfig:
    metricsScore:
      prometheusAddress: {address}
      cacheTTLSeconds: 0
      metrics:
      - name: rx
        query: '{query}'
        nodeLabel: nodename
        direction: LowerIsBetter
        weight: 2
        filterAbove: 150000
      - name: up
        query: 'node_uname_info'
        nodeLabel: nodename
        direction: HigherIsBetter
        weight: 1
---
"#,
        address = prom.address(),
        query = NETWORK_QUERY,
    );
    let pinned = pod(
        "pinned-to-a",
        "load-aware",
        "  nodeSelector: {kubernetes.io/hostname: node-a}\n",
    );
    let free = pod("free", "load-aware", "");
    let dir = TempDir::new("prometheus-simulate-metrics");
    let before = prom
        .requests("/api/v1/query")
        .expect("Prometheus' request count");
    let (report, code) = simulate(dir.path(), &(profile + &nodes() + &pinned + &free));
    let after = prom
        .requests("/api/v1/query")
        .expect("Prometheus' request count");

    // The input is valid (exit code 2 would say otherwise); the report says why.
    assert_ne!(code, 2, "{report:#}");
    let pinned = pod_report(&report, "pinned-to-a");
    assert_ne!(pinned["result"], "Scheduled", "{pinned:#}");
    let message = pinned["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(r#"metric "rx" is 200000, above filterAbove 150000"#),
        "the rejection must name the metric, the value and the threshold: {message:?}"
    );
    let node_a = pinned["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["name"] == "node-a"))
        .unwrap_or_else(|| panic!("{pinned:#}"));
    assert_eq!(node_a["feasible"], false, "{node_a:#}");

    let free = pod_report(&report, "free");
    assert_eq!(free["result"], "Scheduled", "{free:#}");
    // node-a is filtered out; of node-b (140000) and node-c (20000), c is quieter.
    assert_eq!(free["node"], "node-c", "{free:#}");

    // The pinned pod: one cycle per attempt; the free pod: one cycle. Each cycle asks
    // once per metric (two), whether it filtered, scored, or both.
    let cycles: i64 = ["pinned-to-a", "free"]
        .iter()
        .map(|name| pod_report(&report, name)["attempts"].as_i64().unwrap_or(0))
        .sum();
    assert!(cycles >= 2, "{report:#}");
    assert_eq!(
        after - before,
        2 * cycles as u64,
        "queries for {cycles} cycles of 2 metrics"
    );
}

#[test]
fn with_prometheus_down_every_pod_is_scheduled_and_the_plugin_is_reported_degraded() {
    // A closed port: no binary needed.
    let port = free_port();
    let profile = format!(
        "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata:\n  name: network-aware\nspec:\n  plugins:\n    multiPoint:\n      enabled: [{{name: NetworkTraffic}}]\n  pluginConfig:\n    networkTraffic:\n      prometheusAddress: http://127.0.0.1:{port}\n      queryTimeoutSeconds: 1\n---\n"
    );
    let pods: String = (0..2)
        .map(|i| pod(&format!("web-{i}"), "network-aware", ""))
        .collect();
    let dir = TempDir::new("prometheus-simulate-down");
    let (report, code) = simulate(dir.path(), &(profile + &nodes() + &pods));
    assert_eq!(code, 0, "{report:#}");
    for i in 0..2 {
        let web = pod_report(&report, &format!("web-{i}"));
        assert_eq!(web["result"], "Scheduled", "{web:#}");
        // Every node scores the same (neutral) from NetworkTraffic.
        let scores = plugin_scores(web, "NetworkTraffic");
        assert!(
            scores.windows(2).all(|w| w[0].1 == w[1].1),
            "web-{i}: {scores:?}"
        );
    }
    let degraded = report["degraded"].as_array().cloned().unwrap_or_default();
    assert!(
        degraded.iter().any(|d| d["plugin"] == "NetworkTraffic"
            && d["reason"] == "MetricsUnavailable"
            && d["message"]
                .as_str()
                .is_some_and(|m| m.contains(&format!("127.0.0.1:{port}")))),
        "{report:#}"
    );
}

#[test]
fn the_converted_score_only_tutorial_ranks_nodes_busiest_0_idle_100() {
    if !prometheus::installed_or_skip("the_converted_score_only_tutorial") {
        return;
    }
    let rates = [("node-a", 200000.0), ("node-b", 100000.0), ("node-c", 0.0)];
    let prom =
        Prometheus::start(&prometheus::network_traffic(&rates)).expect("starting Prometheus");
    let profile = convert_tutorial(
        "tests/prometheus/network-traffic-tutorial.yaml",
        &prom.address(),
    );
    let dir = TempDir::new("prometheus-simulate-tutorial");
    let input = format!(
        "{profile}\n---\n{}{}",
        nodes(),
        pod("web-0", "network-aware", "")
    );
    let (report, code) = simulate(dir.path(), &input);

    assert_eq!(code, 0, "{report:#}");
    let web = pod_report(&report, "web-0");
    assert_eq!(web["result"], "Scheduled", "{web:#}");
    assert_eq!(web["node"], "node-c", "the idle node: {web:#}");
    assert_eq!(
        plugin_scores(web, "NetworkTraffic"),
        [
            ("node-a".to_string(), 0),
            ("node-b".to_string(), 50),
            ("node-c".to_string(), 100),
        ],
        "busiest node 0, idle node 100: 100 - value * 100 / 200000"
    );
    assert!(
        report["degraded"].as_array().is_none_or(Vec::is_empty),
        "NetworkTraffic reported itself degraded with Prometheus up: {report:#}"
    );
}
