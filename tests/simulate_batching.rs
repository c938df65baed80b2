//! Opportunistic batching through `berth simulate`: the scenario the differential run
//! also gives kube-scheduler 1.37 (`tests/differential/batched/`), where a batch places
//! the second of two identical pods elsewhere than pod-by-pod scheduling does. The
//! expected nodes follow from upstream's algorithm and the scenario's numbers (its
//! comment works them out); turning batching off must give the pod-by-pod answer.

mod support;

use std::process::Command;

use serde_json::Value;
use support::temp::TempDir;

const SCENARIO: &str = "tests/differential/batched/renormalized-affinity.yaml";

fn placements(yaml: &str) -> Vec<(String, String)> {
    let dir = TempDir::new("simulate-batching");
    let file = dir.write("scenario.yaml", yaml);
    let output = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["simulate", "-o", "json", "-f"])
        .arg(&file)
        .output()
        .expect("berth runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON output");
    report["pods"]
        .as_array()
        .expect("pods")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_string(),
                p["node"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn scenario() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SCENARIO);
    std::fs::read_to_string(path).expect("the scenario")
}

fn expected(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(p, n)| (p.to_string(), n.to_string()))
        .collect()
}

#[test]
fn the_second_identical_pod_takes_the_first_pods_next_best_node() {
    assert_eq!(
        placements(&scenario()),
        expected(&[("web-1", "a"), ("web-2", "c")])
    );
}

#[test]
fn without_batching_the_second_pod_is_scored_on_its_own() {
    let text = scenario();
    let off = text.replace(
        "opportunisticBatching: true",
        "opportunisticBatching: false",
    );
    assert_ne!(off, text, "the scenario turns batching on explicitly");
    assert_eq!(
        placements(&off),
        expected(&[("web-1", "a"), ("web-2", "b")])
    );
}
