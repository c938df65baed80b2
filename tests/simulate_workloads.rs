//! `berth simulate` on a `kubectl get -o yaml`-style snapshot (a `kind: List`) with
//! workloads, completed pods and a pod for a scheduler no profile serves: every pod the
//! cluster would have pending is accounted for, as the controllers would create it.
//! The expectations follow from the snapshot's comment and upstream's controllers.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

mod support;
use cli::{assert_exit, run_berth, stderr, stdout};
use support::cli;

const SNAPSHOT: &str = "examples/cluster-snapshot.yaml";

fn snapshot() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(SNAPSHOT)
        .to_string_lossy()
        .into_owned()
}

fn report() -> Value {
    let output = run_berth(&["simulate", "-o", "json", "-f", &snapshot()], None);
    assert_exit(&output, 0);
    serde_json::from_str(&stdout(&output)).expect("stdout is JSON")
}

/// `namespace/name` -> (result, node) of every pod in the report.
fn outcomes(report: &Value) -> BTreeMap<String, (String, String)> {
    report["pods"]
        .as_array()
        .expect("pods array")
        .iter()
        .map(|p| {
            (
                format!(
                    "{}/{}",
                    p["namespace"].as_str().unwrap_or_default(),
                    p["name"].as_str().unwrap_or_default()
                ),
                (
                    p["result"].as_str().unwrap_or_default().to_string(),
                    p["node"].as_str().unwrap_or("-").to_string(),
                ),
            )
        })
        .collect()
}

/// Whether `name` is `<prefix><5 characters of the generateName alphabet>`.
fn generated_from(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix).is_some_and(|suffix| {
        suffix.len() == 5
            && suffix
                .chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
    })
}

#[test]
fn every_pod_of_the_snapshot_is_accounted_for() {
    let outcomes = outcomes(&report());
    let names: Vec<&str> = outcomes.keys().map(String::as_str).collect();
    let matching = |prefix: &str| names.iter().filter(|n| generated_from(n, prefix)).count();

    // web: its ReplicaSet wants 3 and has 2 running: one more, in the ReplicaSet's name.
    assert_eq!(matching("shop/web-7d4b9c8f6d-"), 1, "{names:?}");
    // api: no ReplicaSet in the snapshot: one `api-<hash>` with 2 pods.
    let api: Vec<&&str> = names
        .iter()
        .filter(|n| n.starts_with("shop/api-"))
        .collect();
    assert_eq!(api.len(), 2, "{names:?}");
    let hash = api[0]
        .strip_prefix("shop/api-")
        .and_then(|rest| rest.split_once('-'))
        .map(|(hash, _)| hash)
        .unwrap_or_default();
    assert_eq!(matching(&format!("shop/api-{hash}-")), 2, "{names:?}");
    // db: db-0 runs, db-1 and db-2 are created.
    assert!(outcomes.contains_key("shop/db-1") && outcomes.contains_key("shop/db-2"));
    assert!(
        !outcomes.contains_key("shop/db-0"),
        "running pods are not listed"
    );
    // batch: 4 completions, 1 succeeded, parallelism 2: two pods.
    assert_eq!(matching("shop/batch-"), 2, "{names:?}");
    // migrate is Complete: nothing new.
    assert_eq!(matching("shop/migrate-"), 0, "{names:?}");
    // node-agent: node-b has one, the control plane's taint is not tolerated: node-a only.
    assert_eq!(matching("kube-system/node-agent-"), 1, "{names:?}");
    // the pod for custom-scheduler is listed.
    assert!(outcomes.contains_key("shop/report"));
    assert_eq!(outcomes.len(), 1 + 2 + 2 + 2 + 1 + 1, "{names:?}");
}

#[test]
fn created_pods_are_scheduled_and_the_unserved_pod_is_reported() {
    let output = run_berth(&["simulate", "-f", &snapshot()], None);
    assert_exit(&output, 0);
    let outcomes = outcomes(&report());
    for (pod, (result, node)) in &outcomes {
        if pod == "shop/report" {
            assert_eq!(result, "NotServed");
        } else {
            assert_eq!(result, "Scheduled", "{pod}");
            assert_ne!(node, "control-plane", "{pod}");
        }
    }
    // The completed migrate pod (3.5 of node-a's 4 CPUs) holds nothing: the DaemonSet pod
    // pinned to node-a fits there.
    let (_, agent_node) = outcomes
        .iter()
        .find(|(pod, _)| pod.starts_with("kube-system/node-agent-"))
        .map(|(_, outcome)| outcome.clone())
        .expect("a node-agent pod");
    assert_eq!(agent_node, "node-a");
    let warnings: Vec<String> = stderr(&output)
        .lines()
        .filter(|line| line.contains("shop/report"))
        .map(String::from)
        .collect();
    assert_eq!(warnings.len(), 1, "{}", stderr(&output));
    assert!(warnings[0].starts_with("warning: pod shop/report: "));
    assert!(
        warnings[0].contains("\"custom-scheduler\""),
        "{}",
        warnings[0]
    );
}

#[test]
fn the_simulation_is_deterministic() {
    assert_eq!(report(), report());
}

#[test]
fn implicit_pod_groups_gang_schedule_a_job() {
    // A Job of 3 gang members on room for 2: the implicit PodGroup (minMember 3) keeps all
    // of them off the nodes, as it would live.
    let text = "\
apiVersion: berth.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: gang}
spec:
  plugins:
    multiPoint: {enabled: [{name: Coscheduling}]}
    queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: \"*\"}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: '2', memory: 8Gi, pods: '110'}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 3
  template:
    metadata:
      labels: {berth.dev/pod-group: train}
      annotations: {berth.dev/min-member: \"3\"}
    spec:
      schedulerName: gang
      restartPolicy: Never
      containers: [{name: w, image: t, resources: {requests: {cpu: '1'}}}]
";
    let output = run_berth(&["simulate", "-o", "json", "-f", "-"], Some(text));
    assert_exit(&output, 0);
    let report: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let outcomes = outcomes(&report);
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    for (pod, (result, _)) in &outcomes {
        assert!(generated_from(pod, "default/train-"), "{pod}");
        assert_ne!(result, "Scheduled", "{pod}: the group of 3 does not fit");
    }
}
