//! Pods berth cannot serve yet, through `berth simulate`: pods in a Workload API pod group
//! (1.36+ `spec.schedulingGroup`, 1.35 `spec.workloadRef`) are reported Unschedulable
//! with what berth does not support, are never bound and never preempt; the rest of the
//! cluster schedules as usual. (Pods with ResourceClaims are served: tests/simulate_dra.rs.)

mod support;

use std::path::PathBuf;
use support::simulate::{pod, simulate_default};

use berth::simulate::input::load_files;
use berth::simulate::report::PodResult;

const GROUP: &str = "0/1 nodes are available: pod belongs to a Workload pod group \
     (spec.schedulingGroup, spec.workloadRef before Kubernetes 1.36); berth does not support \
     the Workload API and GangScheduling yet.";

#[tokio::test]
async fn workload_groups_are_refused_without_preemption() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios/unsupported-pods.yaml");
    let (input, _warnings) = load_files(&[path]).expect("input loads");
    let report = simulate_default(input).await;

    for (name, message) in [("worker-0", GROUP), ("worker-1", GROUP)] {
        let refused = pod(&report, name);
        assert_eq!(refused.result, PodResult::Unschedulable, "{refused:#?}");
        assert_eq!(refused.message, message, "{name}");
        assert_eq!(refused.node, None, "{name}");
        assert_eq!(refused.nominated_node, None, "{name}");
    }
    assert!(report.evicted.is_empty(), "{:#?}", report.evicted);
    let web = pod(&report, "web");
    assert_eq!(web.result, PodResult::Scheduled, "{web:#?}");
    assert_eq!(web.node.as_deref(), Some("n1"));
}
