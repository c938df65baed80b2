//! Pods nominated to nodes, as upstream's framework treats them: Filter leaves room on a
//! node for the pods of equal or higher priority nominated to it (two passes, with and
//! without them), ignores lower-priority nominees, and the scheduler tries a pod's own
//! nominated node first. The nominated pods here request cpu, so NodeResourcesFit is the
//! filter that feels them, as in upstream's preemption integration tests.

#[path = "support/core.rs"]
mod scheduler_core;

use std::sync::Arc;

use berth::api::SchedulerProfileSpec;
use berth::cluster::{NodeInfo, PodInfo};
use berth::framework::{CycleState, Framework, Handle, Nominator, resolve};
use berth::scheduler::{CycleOutput, Outcome, Scheduler};
use berth::testing::{make_node, make_pod};
use futures::executor::block_on;
use k8s_openapi::api::core::v1::{Node, Pod, PodStatus};
use scheduler_core::Core;

fn node(name: &str) -> Node {
    make_node()
        .name(name)
        .allocatable(&[("cpu", "1"), ("memory", "8Gi"), ("pods", "110")])
        .obj()
}

fn pod(name: &str, priority: i32, cpu: &str) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(&format!("uid-{name}"))
        .priority(priority)
        .req(&[("cpu", cpu)])
        .obj()
}

fn info(pod: Pod) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(pod).expect("valid pod"))
}

fn default_framework(nominator: Arc<Nominator>) -> Framework {
    let registry = berth::plugins::default_registry();
    let resolved = resolve(&SchedulerProfileSpec::default(), &registry).expect("valid");
    let handle = Handle::builder().nominator(nominator).build();
    Framework::new("default-scheduler", resolved, &registry, handle).expect("plugins build")
}

/// Filter of `pod` on an empty 1-cpu node, with `nominee` (if any) nominated to it.
fn filter_with_nominee(pod: Pod, nominee: Option<Pod>) -> Result<(), String> {
    let nominator = Arc::new(Nominator::new());
    if let Some(nominee) = nominee {
        nominator.nominate(info(nominee), "node-a");
    }
    let framework = default_framework(nominator);
    let node = NodeInfo::new(node("node-a")).expect("valid node");
    let pod = info(pod);
    let mut state = CycleState::new();
    let snapshot = berth::cluster::Snapshot::default();
    let pre = block_on(framework.run_pre_filter(&mut state, &pod, &snapshot));
    assert!(pre.status.is_success(), "{:?}", pre.status);
    let status = framework.run_filter(&state, &pod, &node);
    if status.is_success() {
        Ok(())
    } else {
        Err(status.message())
    }
}

#[test]
fn filter_leaves_room_for_nominated_pods_of_equal_or_higher_priority_only() {
    let cases = [
        ("no nominee", None, Ok(())),
        (
            "a higher-priority nominee keeps its room",
            Some(pod("nominee", 1000, "800m")),
            Err("Insufficient cpu".to_string()),
        ),
        (
            "an equal-priority nominee keeps its room",
            Some(pod("nominee", 100, "800m")),
            Err("Insufficient cpu".to_string()),
        ),
        (
            "a lower-priority nominee is ignored",
            Some(pod("nominee", 10, "800m")),
            Ok(()),
        ),
        (
            "a nominee that leaves enough room",
            Some(pod("nominee", 1000, "400m")),
            Ok(()),
        ),
    ];
    for (name, nominee, want) in cases {
        let got = filter_with_nominee(pod("incoming", 100, "500m"), nominee);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn a_pod_is_never_in_its_own_way() {
    let incoming = pod("incoming", 100, "800m");
    assert_eq!(
        filter_with_nominee(incoming.clone(), Some(incoming)),
        Ok(())
    );
}

/// A scheduler of the default profile over 1-cpu nodes, with `running` pods (name, node,
/// cpu) bound.
fn scheduler(nodes: &[&str], running: &[(&str, &str, &str)]) -> Scheduler {
    let mut scheduler = Core::default().build();
    for name in nodes {
        scheduler.on_node_add(node(name)).expect("node");
    }
    for (name, node, cpu) in running {
        let mut pod = pod(name, 0, cpu);
        pod.spec.as_mut().expect("spec").node_name = Some(node.to_string());
        scheduler.on_pod_add(pod).expect("running pod");
    }
    scheduler
}

fn nominated(mut pod: Pod, node: &str) -> Pod {
    pod.status = Some(PodStatus {
        nominated_node_name: Some(node.into()),
        ..PodStatus::default()
    });
    pod
}

/// Schedules until the queues are empty: (pod, node or failure message), in order.
async fn run(scheduler: &mut Scheduler) -> Vec<(String, String)> {
    let mut outcomes = Vec::new();
    while let Some(output) = scheduler.schedule_one().await {
        let report = match output {
            CycleOutput::Done(report) => report,
            CycleOutput::PodGroup(report) => panic!("no pod group here: {report:?}"),
            CycleOutput::Binding(cycle) => scheduler.complete_binding(cycle.run().await),
        };
        let placed = match report.outcome {
            Outcome::Scheduled { node } => node,
            Outcome::Unschedulable { message } | Outcome::Error { message } => message,
        };
        outcomes.push((report.pod.name().to_string(), placed));
    }
    outcomes
}

/// upstream's "nominated node evaluated first": node-c is the better node by score
/// (node-d carries a pod), yet the pod nominated to node-d goes there.
#[tokio::test]
async fn a_pod_goes_to_its_nominated_node_when_it_fits_there() {
    let mut scheduler = scheduler(&["node-c", "node-d"], &[("small", "node-d", "100m")]);
    scheduler
        .on_pod_add(nominated(pod("nominee", 1000, "500m"), "node-d"))
        .expect("nominee");
    assert_eq!(
        scheduler
            .nominator()
            .nominated_node("uid-nominee")
            .as_deref(),
        Some("node-d"),
        "the nomination is read from the pod's status"
    );
    assert_eq!(
        run(&mut scheduler).await,
        [("nominee".to_string(), "node-d".to_string())]
    );
    assert_eq!(
        scheduler.nominator().nominated_node("uid-nominee"),
        None,
        "an assumed pod is nominated no more"
    );
}

/// The room a pending higher-priority pod was nominated to stays its own: a lower-priority
/// pod that would fit there without the nomination does not take it.
#[tokio::test]
async fn a_lower_priority_pod_does_not_take_a_nominated_pods_room() {
    let mut scheduler = scheduler(&["node-a", "node-b"], &[("busy", "node-a", "800m")]);
    // The nominee is not tried yet (a scheduling gate holds it; tried and unplaceable,
    // preemption would clear its nomination), but it was nominated to node-b and keeps
    // the room there.
    let mut nominee = nominated(pod("nominee", 1000, "800m"), "node-b");
    nominee.spec.as_mut().expect("spec").scheduling_gates =
        Some(vec![k8s_openapi::api::core::v1::PodSchedulingGate {
            name: "example.com/wait".into(),
        }]);
    scheduler.on_pod_add(nominee).expect("nominee");
    scheduler
        .on_pod_add(pod("low", 0, "500m"))
        .expect("low-priority pod");
    let outcomes = run(&mut scheduler).await;
    let low = outcomes
        .iter()
        .find(|(name, _)| name == "low")
        .expect("low was attempted");
    assert_eq!(
        low.1,
        "0/2 nodes are available: 2 Insufficient cpu. \
         preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
        "node-b's room is the nominee's"
    );
}
