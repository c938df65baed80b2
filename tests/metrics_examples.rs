//! The metrics examples (`examples/network-aware.yaml`, `examples/load-aware.yaml`) through
//! the built binary, as a user runs them without a Prometheus: every pod is still
//! scheduled, the metrics plugin scores every node 50, and both the JSON report and the
//! table name the degraded plugin of the profile (docs/metrics-plugins.md).
//!
//! The examples point at 127.0.0.1:9090. Should a Prometheus listen there, it has no
//! samples for the examples' nodes, and the plugin is degraded all the same.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const BERTH: &str = env!("CARGO_BIN_EXE_berth");

fn simulate(example: &str, args: &[&str]) -> Output {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(example);
    Command::new(BERTH)
        .arg("simulate")
        .arg("-f")
        .arg(&path)
        .args(args)
        .output()
        .expect("berth runs")
}

fn json_report(example: &str) -> Value {
    let output = simulate(example, &["-o", "json", "--explain"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{example}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the report is JSON")
}

/// Every pending pod Scheduled, the plugin at 50 on every feasible node, and the plugin
/// listed as degraded for `profile`.
fn check_degraded_run(example: &str, profile: &str, plugin: &str, pods: usize) {
    let report = json_report(example);
    let pods_report = report["pods"].as_array().cloned().unwrap_or_default();
    assert_eq!(pods_report.len(), pods, "{report:#}");
    for pod in &pods_report {
        assert_eq!(pod["result"], "Scheduled", "{pod:#}");
        assert_eq!(pod["schedulerName"], profile, "{pod:#}");
        let scores: Vec<&Value> = pod["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|node| node["feasible"] == true)
            .flat_map(|node| node["scores"].as_array().into_iter().flatten())
            .filter(|score| score["plugin"] == plugin)
            .collect();
        assert_eq!(scores.len(), 3, "{plugin} scores every node: {pod:#}");
        for score in scores {
            assert_eq!(score["score"], 50, "{pod:#}");
        }
    }
    let degraded = report["degraded"].as_array().cloned().unwrap_or_default();
    assert_eq!(degraded.len(), 1, "{report:#}");
    assert_eq!(degraded[0]["schedulerName"], profile);
    assert_eq!(degraded[0]["plugin"], plugin);
    assert_eq!(degraded[0]["reason"], "MetricsUnavailable");
    let message = degraded[0]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with(&format!("{plugin}: ")), "{message}");
}

#[test]
fn network_aware_example_schedules_without_prometheus_and_reports_it() {
    check_degraded_run("network-aware.yaml", "network-aware", "NetworkTraffic", 3);
}

#[test]
fn load_aware_example_schedules_without_prometheus_and_reports_it() {
    check_degraded_run("load-aware.yaml", "load-aware", "MetricsScore", 3);
}

#[test]
fn the_table_lists_the_degraded_plugin_after_the_pods() {
    let output = simulate("network-aware.yaml", &[]);
    assert_eq!(output.status.code(), Some(0));
    let table = String::from_utf8_lossy(&output.stdout);
    let (_, degraded) = table
        .split_once("\n\n")
        .unwrap_or_else(|| panic!("no second table in:\n{table}"));
    let lines: Vec<&str> = degraded.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    let header: Vec<&str> = lines[0]
        .split("   ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(header, ["PROFILE", "DEGRADED PLUGIN", "REASON", "MESSAGE"]);
    let row: Vec<&str> = lines[1].split_whitespace().take(3).collect();
    assert_eq!(
        row,
        ["network-aware", "NetworkTraffic", "MetricsUnavailable"]
    );
}
