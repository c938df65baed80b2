//! `berth bench` as a user runs it: every scheduler_perf workload at a small size, the
//! gang workloads at upstream's smallest, the JSON report's fields, checks that fail under
//! a profile that breaks their constraint, and exit code 2 for bad input. Nothing here
//! asserts a timing.

use std::process::Output;

use serde_json::Value;

mod support;
use cli::{assert_exit, run_berth, stderr, stdout};
use support::cli;
use support::temp::TempDir;

/// Every workload but PreemptionBasic (which needs four init pods per node) and the
/// steady-state ones (10 s each; `bench::run`'s unit tests run one in a short window).
const WORKLOADS: [&str; 10] = [
    "SchedulingBasic",
    "TopologySpreading",
    "PreferredTopologySpreading",
    "SchedulingPodAntiAffinity",
    "SchedulingPodAffinity",
    "SchedulingPreferredPodAffinity",
    "SchedulingPreferredPodAntiAffinity",
    "SchedulingNodeAffinity",
    "SchedulingWithResourceClaimTemplate",
    "SchedulingWithExtendedResource",
];

/// 50 nodes and 40 measured pods: the anti-affinity workload's 10 init pods (upstream's
/// 100 per 500 nodes) and 40 measured pods fit one per node.
const SMALL: [&str; 4] = ["--nodes", "50", "--pods", "40"];

fn bench(args: &[&str]) -> Output {
    let argv: Vec<&str> = std::iter::once("bench")
        .chain(args.iter().copied())
        .collect();
    run_berth(&argv, None)
}

fn json(output: &Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|e| {
        panic!("stdout is JSON ({e}):\n{}", stdout(output));
    })
}

/// A scratch directory holding `profile.yaml`, removed when dropped.
fn profile_file(name: &str, yaml: &str) -> TempDir {
    let dir = TempDir::new(&format!("bench-{name}"));
    dir.write("profile.yaml", yaml);
    dir
}

#[test]
fn every_workload_schedules_all_measured_pods_and_passes_its_check() {
    for workload in WORKLOADS {
        let mut args = vec!["--workload", workload, "-o", "json"];
        args.extend(SMALL);
        let output = bench(&args);
        assert_exit(&output, 0);
        let report = json(&output);
        let run = &report["workloads"][0];
        assert_eq!(run["workload"], workload);
        assert_eq!(run["nodes"], 50, "{workload}");
        assert_eq!(run["measurePods"], 40, "{workload}");
        assert_eq!(run["check"]["passed"], true, "{workload}: {}", run["check"]);
        assert_eq!(run["check"]["scheduled"], 40, "{workload}");
        assert_eq!(report["passed"], true, "{workload}");
    }
}

#[test]
fn the_newest_test_cases_pass_their_checks_at_upstreams_smallest_workloads() {
    // (workload, nodes, side pods, measured pods, its background op)
    let cases = [
        ("SchedulingDaemonset/5Nodes", 6, 0, 10, None),
        ("PreemptionAsync/5Nodes", 5, 0, 5, Some("churn")),
        ("Unschedulable/5Nodes/1Init/10Pods", 5, 0, 10, Some("churn")),
        (
            "SchedulingWithMixedChurn/10Nodes",
            10,
            0,
            100,
            Some("churn"),
        ),
        (
            "SchedulingWhileGated/1Node_10GatedPods",
            1,
            10,
            10,
            Some("deletePods"),
        ),
        (
            "SchedulingDeletedPodsWithFinalizers/10Node_100DeletingPods",
            10,
            10,
            10,
            Some("deletePods"),
        ),
        (
            "HostPortConflict/10Nodes_10Pods_10BatchSize",
            10,
            0,
            10,
            None,
        ),
        (
            "ResourceSaturation/10Nodes_10Pods_10BatchSize",
            10,
            0,
            10,
            None,
        ),
    ];
    for (workload, nodes, side, measured, op) in cases {
        let output = bench(&["--workload", workload, "-o", "json"]);
        assert_exit(&output, 0);
        let report = json(&output);
        let run = &report["workloads"][0];
        let (case, size) = workload.split_once('/').unwrap_or_default();
        assert_eq!(
            (run["workload"].as_str(), run["size"].as_str()),
            (Some(case), Some(size))
        );
        assert_eq!(run["nodes"], nodes, "{workload}");
        assert_eq!(run["sidePods"], side, "{workload}");
        assert_eq!(run["check"]["scheduled"], measured, "{workload}");
        assert_eq!(run["check"]["passed"], true, "{workload}: {}", run["check"]);
        assert_eq!(run["background"]["op"].as_str(), op, "{workload}");
    }
}

#[test]
fn the_json_report_has_the_documented_fields() {
    let mut args = vec!["--workload", "SchedulingBasic", "-o", "json", "--seed", "7"];
    args.extend(SMALL);
    let output = bench(&args);
    assert_exit(&output, 0);
    let run = &json(&output)["workloads"][0];
    for field in [
        "durationSeconds",
        "initDurationSeconds",
        "schedulingThroughput/average",
        "schedulingThroughput/perc50",
        "schedulingThroughput/perc90",
        "schedulingThroughput/perc95",
        "schedulingThroughput/perc99",
        "schedulingThroughput/overall",
        "attemptDurationSeconds/perc50",
        "attemptDurationSeconds/perc90",
        "attemptDurationSeconds/perc95",
        "attemptDurationSeconds/perc99",
        "attemptDurationSeconds/max",
    ] {
        let value = run.pointer(&format!("/{field}"));
        assert!(
            value.is_some_and(|v| v.as_f64().is_some_and(|n| n >= 0.0)),
            "{field}: {value:?}"
        );
    }
    assert!(run["schedulingThroughput"]["samples"].as_u64() >= Some(1));
    // SchedulingBasic at 50 nodes: upstream's 500 init pods per 500 nodes, scaled.
    assert_eq!(run["initPods"], 50);
    assert_eq!(run["size"], "500Nodes (custom)");
    assert_eq!(run["schedulerName"], "default-scheduler");
    assert_eq!(run["seed"], 7);
    assert!(run["parallelism"].as_u64() >= Some(1));
    // Upstream's CI threshold for SchedulingBasic (misc/performance-config.yaml).
    assert_eq!(run["upstreamThreshold"]["size"], "5000Nodes_10000Pods");
    assert_eq!(run["upstreamThreshold"]["podsPerSecond"], 680.0);
    let rss = &run["peakRssBytes"];
    if cfg!(target_os = "linux") {
        assert!(rss.as_u64() > Some(0), "{rss}");
    }
    assert_eq!(run["check"]["failures"], Value::Array(vec![]));
}

#[test]
fn a_dra_run_reports_its_init_claims_under_upstreams_workload_name() {
    // 50 nodes of 10 devices: upstream's 5000pods_500nodes gives half of them to init
    // claims.
    let mut args = vec![
        "--workload",
        "SchedulingWithResourceClaimTemplate",
        "-o",
        "json",
    ];
    args.extend(SMALL);
    let output = bench(&args);
    assert_exit(&output, 0);
    let run = &json(&output)["workloads"][0];
    assert_eq!(run["size"], "5000pods_500nodes (custom)");
    assert_eq!(run["initClaims"], 250);
    assert_eq!(run["initPods"], 0);
    assert_eq!(run["steadyState"], Value::Null);
    // dra/performance-config.yaml, v1.37.2: `dra: 56`.
    assert_eq!(run["upstreamThreshold"]["size"], "5000pods_500nodes");
    assert_eq!(run["upstreamThreshold"]["podsPerSecond"], 56.0);
}

#[test]
fn the_table_has_one_row_per_workload() {
    let mut args = vec![
        "--workload",
        "SchedulingBasic",
        "--workload",
        "SchedulingNodeAffinity",
    ];
    args.extend(SMALL);
    let output = bench(&args);
    assert_exit(&output, 0);
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("WORKLOAD"), "{text}");
    assert!(lines[1].starts_with("SchedulingBasic "), "{text}");
    assert!(lines[2].starts_with("SchedulingNodeAffinity "), "{text}");
    assert!(lines[1].trim_end().ends_with("passed"), "{text}");
    // Not a terminal: no progress line.
    assert_eq!(stderr(&output), "");
}

#[test]
fn a_profile_that_breaks_the_constraint_fails_the_check() {
    // Without its plugin the constraint is not enforced, and MostAllocated packs the
    // pods onto as few nodes as fit them.
    let without = |plugin: &str| {
        format!(
            "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata:\n  name: \
             without-{}\nspec:\n  plugins:\n    multiPoint:\n      disabled:\n      - name: \
             {plugin}\n  pluginConfig:\n    nodeResourcesFit:\n      scoringStrategy:\n        \
             type: MostAllocated\n",
            plugin.to_lowercase()
        )
    };
    let cases = [
        (
            "anti-affinity without InterPodAffinity",
            "SchedulingPodAntiAffinity",
            "InterPodAffinity",
            "one pod per node",
        ),
        (
            "hard spreading without PodTopologySpread",
            "TopologySpreading",
            "PodTopologySpread",
            "maxSkew 5",
        ),
        (
            "claims without DynamicResources",
            "SchedulingWithResourceClaimTemplate",
            "DynamicResources",
            "claims unusable by their pod",
        ),
        (
            "DaemonSet pods without NodeAffinity",
            "SchedulingDaemonset/5Nodes",
            "NodeAffinity",
            "the only one their required node affinity admits",
        ),
        (
            "host port 80 without NodePorts",
            "HostPortConflict/10Nodes_10Pods_10BatchSize",
            "NodePorts",
            "host port 80: one per node",
        ),
    ];
    for (name, workload, plugin, failure) in cases {
        let dir = profile_file(plugin, &without(plugin));
        let path = dir.join("profile.yaml");
        let path = path.to_string_lossy();
        let mut args = vec!["--workload", workload, "--profile", &path, "-o", "json"];
        args.extend(SMALL);
        let output = bench(&args);
        assert_exit(&output, 1);
        let report = json(&output);
        assert_eq!(report["passed"], false, "{name}");
        let run = &report["workloads"][0];
        assert_eq!(
            run["schedulerName"],
            format!("without-{}", plugin.to_lowercase())
        );
        let failures = run["check"]["failures"].to_string();
        assert!(failures.contains(failure), "{name}: {failures}");
    }
}

#[test]
fn the_smallest_gang_workload_binds_its_three_gangs() {
    // podgroup/gangscheduling's 10Nodes_3Gangs: 10 nodes, gangs gang-0..gang-2 of
    // minCount 3, pods test-gang-scheduling-0..8.
    let output = bench(&["--workload", "GangScheduling/10Nodes_3Gangs", "-o", "json"]);
    assert_exit(&output, 0);
    let report = json(&output);
    let run = &report["workloads"][0];
    assert_eq!(run["workload"], "GangScheduling");
    assert_eq!(run["size"], "10Nodes_3Gangs");
    assert_eq!(run["nodes"], 10);
    assert_eq!(run["podGroups"], 3);
    assert_eq!(
        (run["initPods"].as_u64(), run["measurePods"].as_u64()),
        (Some(0), Some(9))
    );
    assert_eq!(run["check"]["scheduled"], 9, "{}", run["check"]);
    assert_eq!(run["check"]["passed"], true, "{}", run["check"]);
    // Upstream sets no threshold on the podgroup/ test cases.
    assert_eq!(run["upstreamThreshold"], Value::Null);
    assert_eq!(report["passed"], true);
}

#[test]
fn a_gang_is_bound_whole_unless_gang_scheduling_is_off() {
    // One node holds 40 pods of 100m: 13 gangs of three, and one pod of the 14th.
    let args = [
        "--workload",
        "GangScheduling/10Nodes_3Gangs",
        "--nodes",
        "1",
        "--pods",
        "42",
        "-o",
        "json",
    ];
    let failures = |output: &Output| json(output)["workloads"][0]["check"]["failures"].clone();

    // The 14th gang is left pending whole: pods not scheduled, but no gang split.
    let output = bench(&args);
    assert_exit(&output, 1);
    assert_eq!(
        failures(&output),
        serde_json::json!(["3 of 42 measured pods were not scheduled"])
    );

    // Without GangScheduling nothing holds the quorum, and the check names the split.
    let dir = profile_file(
        "no-gang",
        "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata:\n  name: \
         without-gangscheduling\nspec:\n  plugins:\n    multiPoint:\n      disabled:\n      \
         - name: GangScheduling\n",
    );
    let path = dir.join("profile.yaml");
    let path = path.to_string_lossy();
    let mut with_profile = args.to_vec();
    with_profile.extend(["--profile", &path]);
    let output = bench(&with_profile);
    assert_exit(&output, 1);
    let failures = failures(&output).to_string();
    assert!(
        failures.contains("1 gangs have only some members bound") && failures.contains("(1 of 3)"),
        "{failures}"
    );
}

#[test]
fn bad_input_exits_2_with_a_message() {
    let invalid_dir = profile_file(
        "invalid",
        "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata:\n  name: bad\nspec:\n  \
         percentageOfNodesToScore: 150\n",
    );
    let invalid = invalid_dir
        .join("profile.yaml")
        .to_string_lossy()
        .into_owned();
    let cases: [(&str, Vec<&str>, &str); 11] = [
        ("zero nodes", vec!["--nodes", "0"], "--nodes"),
        ("a billion pods", vec!["--pods", "1000000000"], "--pods"),
        ("unknown workload", vec!["--workload", "Nope"], "Nope"),
        ("unknown size", vec!["--size", "50Nodes"], "50Nodes"),
        (
            "a size the workload lacks",
            vec![
                "--workload",
                "SchedulingPodAffinity",
                "--size",
                "5000Nodes_10000Pods",
            ],
            "does not define SchedulingPodAffinity at this size",
        ),
        ("zero threads", vec!["--parallelism", "0"], "--parallelism"),
        (
            "a test case at a size it lacks",
            vec!["--workload", "GangScheduling"],
            "GangScheduling/10Nodes_3Gangs",
        ),
        (
            "part of a gang",
            vec![
                "--workload",
                "GangScheduling/10Nodes_3Gangs",
                "--pods",
                "10",
            ],
            "takes a multiple of 3",
        ),
        ("unknown output", vec!["-o", "yaml"], "yaml"),
        (
            "missing profile file",
            vec!["--profile", "/nonexistent/profile.yaml"],
            "/nonexistent/profile.yaml",
        ),
        (
            "invalid profile",
            vec!["--profile", &invalid],
            "percentageOfNodesToScore",
        ),
    ];
    for (name, args, message) in cases {
        let output = bench(&args);
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains(message),
            "{name}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "", "{name}");
    }
}
