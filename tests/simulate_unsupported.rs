//! Pods in a Workload API pod group whose PodGroup is missing, through `berth simulate`
//! (`examples/scenarios/unsupported-pods.yaml`: 1.36+ `spec.schedulingGroup`, and a 1.35
//! `spec.workloadRef` whose Workload is missing). Where the PodGroups and Workloads are
//! served, as in a YAML cluster, upstream's queue never tries such a pod; where the
//! PodGroups are not (`--from-cluster` of an API server without
//! `scheduling.k8s.io/v1beta1`), berth refuses a `spec.schedulingGroup` pod with why. Either way it is never
//! bound and never preempts; the rest of the cluster schedules as usual. (Pods with
//! ResourceClaims are served: tests/simulate_dra.rs.)

mod support;

use std::path::PathBuf;
use support::simulate::{pod, simulate_default};

use berth::simulate::input::{ClusterInput, load_files};
use berth::simulate::report::{PodResult, Report};

const GROUP: &str = "0/1 nodes are available: pod belongs to a Workload pod group \
     (spec.schedulingGroup); the API server does not \
     serve scheduling.k8s.io/v1beta1 PodGroups, from which the pod-group cycle reads the group.";

const WORKLOAD_REF: &str = "0/1 nodes are available: pod names a Workload \
     (spec.workloadRef, Kubernetes 1.35); the API server does not serve \
     scheduling.k8s.io/v1alpha1 Workloads, from which GangScheduling reads the gang.";

fn example() -> ClusterInput {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios/unsupported-pods.yaml");
    load_files(&[path]).expect("input loads").0
}

fn assert_rest_schedules(report: &Report) {
    assert!(report.evicted.is_empty(), "{:#?}", report.evicted);
    let web = pod(report, "web");
    assert_eq!(web.result, PodResult::Scheduled, "{web:#?}");
    assert_eq!(web.node.as_deref(), Some("n1"));
}

#[tokio::test]
async fn members_of_a_missing_pod_group_are_never_tried() {
    let report = simulate_default(example()).await;
    let waiting = [
        (
            "worker-0",
            "waiting for PodGroup default/workers (spec.schedulingGroup)",
        ),
        (
            "worker-1",
            "waiting for Workload default/training (spec.workloadRef)",
        ),
    ];
    for (name, message) in waiting {
        let held = pod(&report, name);
        assert_ne!(held.result, PodResult::Scheduled, "{held:#?}");
        assert_eq!(held.attempts, 0, "{name}: never tried");
        assert_eq!(held.node, None, "{name}");
        assert_eq!(held.nominated_node, None, "{name}");
        assert!(
            held.message.starts_with(message),
            "{name}: {}",
            held.message
        );
    }
    assert_rest_schedules(&report);
}

#[tokio::test]
async fn without_1_35_workloads_served_their_pods_are_refused_without_preemption() {
    let mut input = example();
    input.legacy_workloads_not_served = true;
    let report = simulate_default(input).await;
    let refused = pod(&report, "worker-1");
    assert_eq!(refused.result, PodResult::Unschedulable, "{refused:#?}");
    assert_eq!(refused.message, WORKLOAD_REF);
    assert_eq!(refused.node, None);
    assert_eq!(refused.nominated_node, None);
    assert_rest_schedules(&report);
}

#[tokio::test]
async fn without_pod_groups_served_members_are_refused_without_preemption() {
    let mut input = example();
    input.pod_groups_not_served = true;
    let report = simulate_default(input).await;
    let refused = pod(&report, "worker-0");
    assert_eq!(refused.result, PodResult::Unschedulable, "{refused:#?}");
    assert_eq!(refused.message, GROUP);
    assert_eq!(refused.node, None);
    assert_eq!(refused.nominated_node, None);
    // The Workloads are still served: the 1.35 pod waits for its Workload, untried.
    let held = pod(&report, "worker-1");
    assert_eq!(held.attempts, 0, "{held:#?}");
    assert_eq!(held.node, None);
    assert_rest_schedules(&report);
}
