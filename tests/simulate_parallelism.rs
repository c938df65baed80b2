//! The same seed gives the same placements for any `--parallelism`: Filter and Score
//! split their nodes over threads, but the cut at the wanted number of feasible nodes, the
//! rotation of the start node and the tie-break follow node order, never thread timing.

mod support;

use serde_json::Value;
use support::cli::{assert_exit, run_berth, stdout};

/// A cluster large enough that not every node is filtered (above 100 nodes only a share
/// is), with pods whose placement depends on the ones before them: zone spreading,
/// hostname anti-affinity, preferred affinity, and pods too large for any node.
fn cluster() -> String {
    let mut yaml = String::new();
    for i in 0..240 {
        let zone = ["a", "b", "c"][i % 3];
        // Nodes of three sizes, so that resource scores differ between them.
        let cpu = [4, 8, 16][(i / 3) % 3];
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-{i:03}\n  labels:\n    \
             kubernetes.io/hostname: node-{i:03}\n    topology.kubernetes.io/zone: {zone}\n\
             status:\n  allocatable: {{cpu: \"{cpu}\", memory: 32Gi, pods: \"110\"}}\n"
        ));
    }
    for i in 0..150 {
        let (labels, extra, cpu) = match i % 5 {
            0 => ("app: spread", SPREAD, "500m"),
            1 => ("app: lonely", ANTI_AFFINITY, "250m"),
            2 => ("app: friendly", PREFERRED_AFFINITY, "1"),
            3 => ("app: huge", "", "64"),
            _ => ("app: plain", "", "100m"),
        };
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{i:03}\n  namespace: default\n  \
             labels:\n    {labels}\nspec:\n{extra}  containers:\n  - name: c\n    image: pause\n    \
             resources:\n      requests: {{cpu: \"{cpu}\", memory: 100Mi}}\n"
        ));
    }
    yaml
}

const SPREAD: &str = "  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: spread}}
";

const ANTI_AFFINITY: &str = "  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector: {matchLabels: {app: lonely}}
";

const PREFERRED_AFFINITY: &str = "  affinity:
    podAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 50
        podAffinityTerm:
          topologyKey: topology.kubernetes.io/zone
          labelSelector: {matchLabels: {app: spread}}
";

#[test]
fn placements_do_not_depend_on_parallelism() {
    let yaml = cluster();
    let run = |parallelism: &str| {
        let output = run_berth(
            &[
                "simulate",
                "-f",
                "-",
                "-o",
                "json",
                "--seed",
                "7",
                "--parallelism",
                parallelism,
            ],
            Some(&yaml),
        );
        assert_exit(&output, 0);
        let report: Value = serde_json::from_str(&stdout(&output)).expect("a JSON report");
        report["pods"]
            .as_array()
            .expect("pods is an array")
            .iter()
            .map(|pod| {
                (
                    pod["name"].as_str().unwrap_or_default().to_string(),
                    pod["result"].as_str().unwrap_or_default().to_string(),
                    pod["node"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let one = run("1");
    assert_eq!(one.len(), 150, "every pod is reported");
    for (name, result, node) in &one {
        let huge = name.ends_with(['3', '8']);
        let want = if huge { "Unschedulable" } else { "Scheduled" };
        assert_eq!(result, want, "{name} on {node:?}");
    }
    for parallelism in ["2", "3"] {
        assert_eq!(run(parallelism), one, "--parallelism {parallelism}");
    }
}
