//! `berth-custom simulate` on cluster.yaml + profile.yaml: each out-of-tree plugin's effect
//! is visible in the JSON report (`--explain`) and in its PreBind log lines.
//!
//! The expectations are worked out by hand from the plugins' rules and the cluster (see
//! the comment at the top of cluster.yaml), not read back from a previous run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BERTH_CUSTOM: &str = env!("CARGO_BIN_EXE_berth-custom");

const FULL_ZONE: &str =
    "node(s) were in a topology.kubernetes.io/zone domain already running 2 pod(s) with app=web";
const NO_ZONE: &str = "node(s) had no topology.kubernetes.io/zone label";

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn simulate(files: &[PathBuf]) -> Output {
    let mut command = Command::new(BERTH_CUSTOM);
    command
        .args(["simulate", "-o", "json", "--explain"])
        .env("RUST_LOG", "berth_custom=info");
    for file in files {
        command.arg("-f").arg(file);
    }
    command.output().expect("berth-custom runs")
}

/// `text` without ANSI colour sequences (`ESC [ ... m`), which the log formatter may add.
fn strip_ansi(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            plain.push(c);
        }
    }
    plain
}

/// The report of the example run and its log (stderr, uncoloured).
fn report() -> (Value, String) {
    let output = simulate(&[example("cluster.yaml"), example("profile.yaml")]);
    let stderr = strip_ansi(&String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    let report = serde_json::from_slice(&output.stdout).expect("a JSON report");
    (report, stderr)
}

fn pod<'a>(report: &'a Value, namespace: &str, name: &str) -> &'a Value {
    report["pods"]
        .as_array()
        .expect("pods")
        .iter()
        .find(|p| p["namespace"] == namespace && p["name"] == name)
        .unwrap_or_else(|| panic!("{namespace}/{name} is in the report"))
}

fn node<'a>(pod: &'a Value, name: &str) -> &'a Value {
    pod["nodes"]
        .as_array()
        .expect("--explain lists nodes")
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("node {name} is explained"))
}

/// The normalized score `plugin` gave `node`, if it scored it.
fn score(pod: &Value, node_name: &str, plugin: &str) -> Option<i64> {
    node(pod, node_name)["scores"]
        .as_array()?
        .iter()
        .find(|s| s["plugin"] == plugin)
        .and_then(|s| s["score"].as_i64())
}

fn filter_reasons(pod: &Value, node_name: &str) -> Vec<String> {
    node(pod, node_name)["filterReasons"]
        .as_array()
        .expect("filterReasons")
        .iter()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect()
}

#[test]
fn pods_land_where_the_plugins_say() {
    let (report, _) = report();
    let placements = [
        ("default", "web-1", Some("node-c1")),
        ("default", "web-2", Some("node-c1")),
        ("default", "web-3", Some("node-b1")),
        ("default", "web-4", Some("node-b1")),
        ("default", "web-5", None),
        ("default", "batch-1", Some("node-c1")),
        ("kube-system", "node-agent", Some("node-c1")),
    ];
    for (namespace, name, want) in placements {
        let pod = pod(&report, namespace, name);
        assert_eq!(pod["node"].as_str(), want, "{namespace}/{name}");
        let result = if want.is_some() {
            "Scheduled"
        } else {
            "Unschedulable"
        };
        assert_eq!(pod["result"], result, "{namespace}/{name}");
        // No pod was turned away at Reserve: node-c1 gets 4 pods, maxPerNode is 4.
        assert_eq!(pod["attempts"], 1, "{namespace}/{name}");
    }
}

#[test]
fn max_pods_per_zone_rejects_full_zones_and_unzoned_nodes() {
    let (report, _) = report();
    // zone-a runs web-0a and web-0b: its nodes are rejected for web-1; so is edge-1.
    let web_1 = pod(&report, "default", "web-1");
    for full in ["node-a1", "node-a2"] {
        assert_eq!(filter_reasons(web_1, full), [FULL_ZONE], "{full}");
        assert_eq!(node(web_1, full)["feasible"], false);
    }
    assert_eq!(filter_reasons(web_1, "edge-1"), [NO_ZONE]);
    assert_eq!(node(web_1, "node-b1")["feasible"], true);
    // web-1 and web-2 filled zone-c: node-c1 is rejected for web-3.
    let web_3 = pod(&report, "default", "web-3");
    assert_eq!(filter_reasons(web_3, "node-c1"), [FULL_ZONE]);
    // Every zone full for web-5: the message aggregates the reasons, upstream style.
    let web_5 = pod(&report, "default", "web-5");
    let message = web_5["message"].as_str().expect("a message");
    assert!(
        message.starts_with(&format!(
            "0/5 nodes are available: 1 {NO_ZONE}, 4 {FULL_ZONE}."
        )),
        "{message}"
    );
    // Other groups are counted separately, and exempt namespaces are not limited.
    let batch = pod(&report, "default", "batch-1");
    assert_eq!(node(batch, "node-a1")["feasible"], true);
    let agent = pod(&report, "kube-system", "node-agent");
    assert_eq!(node(agent, "node-a1")["feasible"], true);
    assert_eq!(node(agent, "edge-1")["feasible"], true);
}

#[test]
fn prefer_nodes_scores_are_min_max_normalized_over_the_feasible_nodes() {
    let (report, _) = report();
    // nodes: [node-c1, node-a1] -> raw node-c1 2, node-a1 1, others 0.
    // web-1: feasible node-b1 (0) and node-c1 (2): min 0, max 2.
    let web_1 = pod(&report, "default", "web-1");
    assert_eq!(score(web_1, "node-c1", "PreferNodes"), Some(100));
    assert_eq!(score(web_1, "node-b1", "PreferNodes"), Some(0));
    // batch-1: feasible node-a1 (1), node-a2 (0), node-b1 (0), node-c1 (2):
    // node-a1 = (1 - 0) * 100 / (2 - 0) = 50.
    let batch = pod(&report, "default", "batch-1");
    for (node_name, want) in [
        ("node-c1", 100),
        ("node-a1", 50),
        ("node-a2", 0),
        ("node-b1", 0),
    ] {
        assert_eq!(
            score(batch, node_name, "PreferNodes"),
            Some(want),
            "{node_name}"
        );
    }
    // Weight 10 in the profile: the preferred node has the highest total.
    let total = |name: &str| node(batch, name)["totalScore"].as_i64().expect("total");
    assert!(total("node-c1") > total("node-a1") && total("node-a1") > total("node-b1"));
}

#[test]
fn pre_bind_of_both_binding_plugins_ran_for_every_bound_pod() {
    let (_, stderr) = report();
    for pod in [
        "default/web-1",
        "default/web-2",
        "default/web-3",
        "default/web-4",
        "default/batch-1",
        "kube-system/node-agent",
    ] {
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains(&format!("pod={pod} ")))
            .collect();
        // InFlightBindings read the Reservation its Reserve wrote into CycleState.
        assert!(
            lines.iter().any(|l| l.contains("InFlightBindings PreBind")),
            "{pod}: {lines:?}"
        );
        // MaxPodsPerZone runs for group pods outside exempt namespaces only.
        let limited = !pod.starts_with("kube-system/");
        assert_eq!(
            lines.iter().any(|l| l.contains("MaxPodsPerZone PreBind")),
            limited,
            "{pod}: {lines:?}"
        );
    }
    assert!(
        !stderr.contains("pod=default/web-5 "),
        "web-5 was never bound"
    );
}

/// Runs the example with profile.yaml edited by `edit`; returns the exit code and stderr.
fn simulate_edited_profile(case: &str, edit: impl Fn(&str) -> String) -> (Option<i32>, String) {
    let profile = std::fs::read_to_string(example("profile.yaml")).expect("profile.yaml");
    let wrong = edit(&profile);
    assert_ne!(wrong, profile, "the edit applies");
    let path =
        std::env::temp_dir().join(format!("berth-custom-{case}-{}.yaml", std::process::id()));
    std::fs::write(&path, wrong).expect("temp file");
    let output = simulate(&[example("cluster.yaml"), path.clone()]);
    let _ = std::fs::remove_file(&path);
    assert!(
        output.stdout.is_empty(),
        "nothing is scheduled from invalid input"
    );
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn wrong_args_make_simulate_exit_2_naming_each_field() {
    let (code, stderr) = simulate_edited_profile("wrong-args", |profile| {
        profile
            .replace("maxPods: 2", "maxPods: two")
            .replace("nodes: [node-c1, node-a1]", "nodes: [node-c1, node-c1]")
    });
    assert_eq!(code, Some(2), "stderr:\n{stderr}");
    assert!(
        stderr.contains("spec.pluginConfig.maxPodsPerZone") && stderr.contains("\"two\""),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "spec.pluginConfig.preferNodes.nodes[1]: Invalid value: \"node-c1\": duplicate of nodes[0]"
        ),
        "{stderr}"
    );
}

#[test]
fn the_cel_rule_of_the_args_is_enforced_with_its_field_path() {
    // MaxPodsPerZone's only cross-field rule lives in CEL (x-kubernetes-validations).
    let (code, stderr) = simulate_edited_profile("cel", |profile| {
        profile.replace("groupLabel: app", "groupLabel: topology.kubernetes.io/zone")
    });
    assert_eq!(code, Some(2), "stderr:\n{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("spec.pluginConfig.maxPodsPerZone.groupLabel"))
        .unwrap_or_else(|| panic!("an error names the groupLabel field:\n{stderr}"));
    assert!(
        line.contains("groupLabel must differ from topologyKey"),
        "{line}"
    );
}
