//! The scenarios in `examples/scenarios/`, each showing a default plugin at work, run
//! through `berth simulate` with the upstream default profile. The expectations are the
//! behaviour the scenario's comment promises, in upstream's terms.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

fn simulate(file: &str) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["simulate", "-o", "json", "-f", file])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("berth runs");
    assert!(
        output.status.success(),
        "berth simulate -f {file} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON output")
}

fn pods(report: &Value) -> &Vec<Value> {
    report["pods"].as_array().expect("pods array")
}

#[test]
fn nine_replicas_with_a_hard_zone_spread_land_three_per_zone() {
    let report = simulate("examples/scenarios/zone-spread.yaml");
    let mut per_zone: BTreeMap<String, usize> = BTreeMap::new();
    for pod in pods(&report) {
        assert_eq!(pod["result"], "Scheduled", "{pod}");
        let node = pod["node"].as_str().expect("a node");
        // Node names encode their zone: a1/a2 in zone-a, b1/b2 in zone-b, c1/c2 in zone-c.
        let zone = format!("zone-{}", &node[..1]);
        *per_zone.entry(zone).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = [
        ("zone-a".into(), 3),
        ("zone-b".into(), 3),
        ("zone-c".into(), 3),
    ]
    .into();
    assert_eq!(per_zone, expected);
}

#[test]
fn required_anti_affinity_puts_one_replica_per_node_and_reports_the_rest() {
    let report = simulate("examples/scenarios/anti-affinity.yaml");
    let scheduled: Vec<&str> = pods(&report)
        .iter()
        .filter(|p| p["result"] == "Scheduled")
        .map(|p| p["node"].as_str().expect("a node"))
        .collect();
    let mut distinct = scheduled.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(scheduled.len(), 3, "{report}");
    assert_eq!(distinct.len(), 3, "one replica per node: {scheduled:?}");
    let unschedulable: Vec<&Value> = pods(&report)
        .iter()
        .filter(|p| p["result"] == "Unschedulable")
        .collect();
    assert_eq!(unschedulable.len(), 1, "{report}");
    assert_eq!(
        unschedulable[0]["message"],
        // The replicas are all of one priority: preemption finds no victim.
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. \
         preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    );
}

#[test]
fn preferred_affinity_pulls_a_pod_next_to_its_peer() {
    let report = simulate("examples/scenarios/preferred-affinity.yaml");
    let web = pods(&report)
        .iter()
        .find(|p| p["name"] == "web")
        .expect("the web pod is reported");
    assert_eq!(web["result"], "Scheduled");
    assert_eq!(web["node"], "middle", "the node running the cache");
}

fn explain(file: &str) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["simulate", "-o", "json", "--explain", "-f", file])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("berth runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON output")
}

#[test]
fn replicas_of_a_replica_set_are_spread_by_the_system_default_constraints() {
    // No topologySpreadConstraints on the pods: upstream's system defaults (hostname
    // maxSkew 3, zone maxSkew 5, ScheduleAnyway) apply because the ReplicaSet selects
    // them. The second replica's PodTopologySpread score is highest on the node in the
    // other zone, lower on the first replica's zone, lowest on the first replica's node.
    let report = explain("examples/scenarios/default-spread.yaml");
    let first = pods(&report)[0]["node"]
        .as_str()
        .expect("first replica placed")
        .to_string();
    let second = &pods(&report)[1];
    let spread_score = |node: &str| -> i64 {
        second["nodes"]
            .as_array()
            .expect("explain nodes")
            .iter()
            .find(|n| n["name"] == node)
            .and_then(|n| n["scores"].as_array())
            .and_then(|s| s.iter().find(|s| s["plugin"] == "PodTopologySpread"))
            .and_then(|s| s["score"].as_i64())
            .unwrap_or_else(|| panic!("no PodTopologySpread score on {node}: {second}"))
    };
    // Nodes a1, a2 in zone-a and b1, b2 in zone-b; the zone is the name's letter.
    let zone = |node: &str| node.chars().next();
    let nodes = ["a1", "a2", "b1", "b2"];
    let same_zone = nodes
        .iter()
        .find(|n| **n != first && zone(n) == zone(&first))
        .expect("a sibling");
    for other_zone in nodes.iter().filter(|n| zone(n) != zone(&first)) {
        assert!(
            spread_score(other_zone) > spread_score(same_zone),
            "{second}"
        );
    }
    assert!(spread_score(same_zone) > spread_score(&first), "{second}");
    let landed = second["node"].as_str().expect("second replica placed");
    assert_ne!(
        zone(landed),
        zone(&first),
        "the second replica goes to the other zone"
    );
}

/// The per-node filter reasons of `pod` in an `--explain` report.
fn filter_reasons(pod: &Value) -> BTreeMap<String, Vec<String>> {
    pod["nodes"]
        .as_array()
        .expect("explain nodes")
        .iter()
        .map(|n| {
            let reasons = n["filterReasons"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str().map(str::to_string))
                .collect();
            (n["name"].as_str().unwrap_or_default().to_string(), reasons)
        })
        .collect()
}

#[test]
fn a_pod_whose_volume_is_in_another_zone_than_its_node_selector_is_unschedulable() {
    let report = explain("examples/scenarios/volume-zone-conflict.yaml");
    let pod = &pods(&report)[0];
    assert_eq!(pod["result"], "Unschedulable", "{pod}");
    assert_eq!(
        pod["message"],
        // Both rejections are UnschedulableAndUnresolvable: no eviction would help.
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
         1 node(s) had volume node affinity conflict. \
         preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
    let reasons = filter_reasons(pod);
    assert_eq!(
        reasons,
        BTreeMap::from([
            (
                "node-a".to_string(),
                vec!["node(s) didn't match Pod's node affinity/selector".to_string()]
            ),
            (
                "node-b".to_string(),
                vec!["node(s) had volume node affinity conflict".to_string()]
            ),
        ]),
        "--explain names the volume reason on the node in the other zone"
    );
}

#[tokio::test]
async fn a_stateful_set_with_a_class_restricted_to_two_zones_lands_in_those_zones_with_its_disks() {
    use berth::helpers::volumes::{claim_volume_name, is_fully_bound};
    use berth::simulate::report::PodResult;

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenarios/statefulset-zonal-storage.yaml");
    let (input, _) = berth::simulate::input::load_files(&[path]).expect("valid input");
    let options = berth::simulate::run::SimulateOptions {
        explain: false,
        seed: 1,
        parallelism: 1,
    };
    let registry = berth::plugins::default_registry();
    let (report, volumes) = berth::simulate::run::simulate_with_storage(input, &registry, options)
        .await
        .expect("the simulation runs");

    let names: Vec<&str> = report.pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["db-0", "db-1", "db-2"]);
    for pod in &report.pods {
        assert_eq!(pod.result, PodResult::Scheduled, "{pod:?}");
        // node-a is in zone-a, node-b in zone-b, node-c in zone-c (not allowed).
        let node = pod.node.clone().unwrap_or_default();
        assert!(
            ["node-a", "node-b"].contains(&node.as_str()),
            "{} landed on {node}, outside the class's allowedTopologies",
            pod.name
        );
        let claim_name = format!("data-{}", pod.name);
        let claim = volumes
            .api_claim("default", &claim_name)
            .unwrap_or_else(|| panic!("claim {claim_name} exists"));
        assert!(is_fully_bound(&claim), "{claim_name}: {claim:?}");
        let volume = volumes
            .api_volume(claim_volume_name(&claim))
            .unwrap_or_else(|| panic!("{claim_name}'s volume was provisioned"));
        let zones: Vec<String> = volume
            .spec
            .iter()
            .filter_map(|s| s.node_affinity.as_ref()?.required.as_ref())
            .flat_map(|r| r.node_selector_terms.iter())
            .flat_map(|t| t.match_expressions.iter().flatten())
            .filter(|r| r.key == "topology.kubernetes.io/zone")
            .flat_map(|r| r.values.clone().unwrap_or_default())
            .collect();
        let zone = format!("zone-{}", node.trim_start_matches("node-"));
        assert_eq!(
            zones,
            vec![zone],
            "{claim_name}'s disk is in its pod's zone"
        );
    }
}

#[test]
fn the_differential_runs_regressions_simulate_as_kube_scheduler_decided() {
    // Each file of tests/differential/regressions/ records, in a
    // `# kube-scheduler 1.37: NS/POD bound to NODE` or `... unschedulable: MESSAGE` line,
    // what the real kube-scheduler did with its pending pod (tests/differential.rs gives
    // the files to both schedulers on real clusters; this checks the simulator alone).
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the regressions")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no regression files in {}",
        dir.display()
    );
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a regression file");
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("# kube-scheduler 1.37: "))
            .unwrap_or_else(|| panic!("{}: no `# kube-scheduler 1.37:` line", path.display()));
        let (pod, decision) = line.split_once(' ').expect("POD DECISION");
        let report = simulate(path.to_str().expect("a UTF-8 path"));
        let got = pods(&report)
            .iter()
            .find(|p| {
                format!(
                    "{}/{}",
                    p["namespace"].as_str().unwrap_or(""),
                    p["name"].as_str().unwrap_or("")
                ) == pod
            })
            .unwrap_or_else(|| panic!("{}: no pod {pod} in the report", path.display()));
        if let Some(node) = decision.strip_prefix("bound to ") {
            assert_eq!(got["result"], "Scheduled", "{}: {got}", path.display());
            assert_eq!(got["node"], node, "{}", path.display());
        } else {
            let message = decision
                .strip_prefix("unschedulable: ")
                .expect("bound to or unschedulable:");
            assert_eq!(got["result"], "Unschedulable", "{}: {got}", path.display());
            assert_eq!(got["message"], message, "{}", path.display());
        }
    }
}
