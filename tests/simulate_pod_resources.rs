//! Pod requests as the 1.37 scheduler counts them, seen through `berth simulate`:
//! pod-level `spec.resources.requests` over the containers' sum, overhead on top, and a
//! running pod in the middle of an in-place resize counted by the larger of what it asks
//! and what its node allocated (without the ask when the resize is infeasible).

mod support;

use std::path::{Path, PathBuf};
use support::simulate::{pod, simulate_default};

use berth::simulate::input::{load_files, load_str};
use berth::simulate::report::{PodResult, Report};

/// NodeResourcesFit's rejection of the only node, and DefaultPreemption finding no
/// victim of lower priority.
const INSUFFICIENT_CPU: &str = "0/1 nodes are available: 1 Insufficient cpu. \
     preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";

async fn run(input: berth::simulate::input::ClusterInput) -> Report {
    simulate_default(input).await
}

#[tokio::test]
async fn pod_level_requests_replace_the_containers_sum() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenarios/pod-level-resources.yaml");
    let (input, _warnings) = load_files(&[path]).expect("input loads");
    let report = run(input).await;

    let a = pod(&report, "a");
    assert_eq!(a.result, PodResult::Scheduled, "{a:#?}");
    assert_eq!(a.node.as_deref(), Some("n1"));
    let b = pod(&report, "b");
    assert_eq!(b.result, PodResult::Unschedulable, "{b:#?}");
    assert_eq!(b.message, INSUFFICIENT_CPU);
}

/// A 4-cpu node.
const NODE: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {kubernetes.io/hostname: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
"#;

/// A pending pod `name` with one container requesting `cpu`.
fn pending(name: &str, cpu: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {{cpu: "{cpu}"}}
"#
    )
}

/// Each case: the pods besides [`NODE`] (YAML documents), the pending pod to look at and
/// the message it gets (`None`: it binds to n1).
#[tokio::test]
async fn what_a_pod_takes_from_its_node() {
    let cases: Vec<(&str, String, &str, Option<&str>)> = vec![
        (
            "overhead is added to the pod-level requests: 1 + 250m leaves 2750m",
            r#"
apiVersion: v1
kind: Pod
metadata: {name: d}
spec:
  nodeName: n1
  overhead: {cpu: 250m}
  resources:
    requests: {cpu: "1"}
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {cpu: 500m}
status: {phase: Running}
"#
            .to_owned()
                + "---"
                + &pending("e", "2800m"),
            "e",
            Some(INSUFFICIENT_CPU),
        ),
        (
            "the same pod leaves room for exactly 2750m",
            r#"
apiVersion: v1
kind: Pod
metadata: {name: d}
spec:
  nodeName: n1
  overhead: {cpu: 250m}
  resources:
    requests: {cpu: "1"}
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {cpu: 500m}
status: {phase: Running}
"#
            .to_owned()
                + "---"
                + &pending("e", "2750m"),
            "e",
            None,
        ),
        (
            "pod-level limits without requests default the request: 3 cpu beside 2 do not fit",
            r#"
apiVersion: v1
kind: Pod
metadata: {name: r}
spec:
  nodeName: n1
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {cpu: "2"}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: l}
spec:
  resources:
    limits: {cpu: "3"}
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
"#
            .to_owned(),
            "l",
            Some(INSUFFICIENT_CPU),
        ),
        (
            "pod-level limits with container requests default to the containers' sum",
            r#"
apiVersion: v1
kind: Pod
metadata: {name: r}
spec:
  nodeName: n1
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {cpu: "2"}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: l}
spec:
  resources:
    limits: {cpu: "3"}
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {cpu: "1"}
"#
            .to_owned(),
            "l",
            None,
        ),
        (
            "a running pod resized down but still allocated 3 cpu holds 3",
            r#"
apiVersion: v1
kind: Pod
metadata: {name: r}
spec:
  nodeName: n1
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {cpu: "1"}
status:
  phase: Running
  containerStatuses:
  - name: app
    allocatedResources: {cpu: "3"}
    resources:
      requests: {cpu: "3"}
"#
            .to_owned()
                + "---"
                + &pending("p", "2"),
            "p",
            Some(INSUFFICIENT_CPU),
        ),
        (
            "an infeasible resize up is not counted: the pod holds what it runs with",
            r#"
apiVersion: v1
kind: Pod
metadata: {name: r}
spec:
  nodeName: n1
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {cpu: "3"}
status:
  phase: Running
  conditions:
  - {type: PodResizePending, status: "True", reason: Infeasible}
  containerStatuses:
  - name: app
    allocatedResources: {cpu: "1"}
    resources:
      requests: {cpu: "1"}
"#
            .to_owned()
                + "---"
                + &pending("p", "3"),
            "p",
            None,
        ),
        (
            "a deferred resize up is counted: it may still happen on this node",
            r#"
apiVersion: v1
kind: Pod
metadata: {name: r}
spec:
  nodeName: n1
  containers:
  - name: app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {cpu: "3"}
status:
  phase: Running
  conditions:
  - {type: PodResizePending, status: "True", reason: Deferred}
  containerStatuses:
  - name: app
    allocatedResources: {cpu: "1"}
    resources:
      requests: {cpu: "1"}
"#
            .to_owned()
                + "---"
                + &pending("p", "3"),
            "p",
            Some(INSUFFICIENT_CPU),
        ),
    ];
    for (name, pods, pending_pod, want) in cases {
        let text = format!("{NODE}---{pods}");
        let (input, _warnings) =
            load_str(Path::new("cluster.yaml"), &text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let report = run(input).await;
        let got = pod(&report, pending_pod);
        match want {
            None => {
                assert_eq!(got.result, PodResult::Scheduled, "{name}: {got:#?}");
                assert_eq!(got.node.as_deref(), Some("n1"), "{name}");
            }
            Some(message) => {
                assert_eq!(got.result, PodResult::Unschedulable, "{name}: {got:#?}");
                assert_eq!(got.message, message, "{name}");
            }
        }
    }
}
