//! Kubernetes 1.35's `gangscheduling_test.go` (v1.35.4) TestGangSchedulingFlow, its rows
//! named as there, against [`LegacyWorkloads`]. Its queueing-hint tables are covered by
//! `events_to_register_cover_upstreams_queue_hints` (berth has no hints). Expected
//! statuses and messages come from upstream's table.

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use pretty_assertions::assert_eq;

use super::tests::permit_flow;
use super::*;
use crate::cluster::{
    LegacyGangPolicy, LegacyWorkload, LegacyWorkloadPodGroup, LegacyWorkloadPodGroupPolicy,
    WorkloadReference,
};
use crate::testing::{make_pod, pod_info};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const NS: &str = "ns1";
const NODE: &str = "some-node";

/// A pod in `ns1` naming `workload`'s `pod_group` (replica `replica`), or none.
fn pod(name: &str, reference: Option<(&str, &str, &str)>) -> Pod {
    let mut pod = make_pod().name(name).namespace(NS).obj();
    pod.metadata.uid = Some(name.into());
    if let Some((workload, pod_group, replica)) = reference {
        WorkloadReference {
            name: workload.into(),
            pod_group: pod_group.into(),
            pod_group_replica_key: replica.into(),
        }
        .carry_into(&mut pod);
    }
    pod
}

fn assumed(pod: &Pod) -> Pod {
    let mut pod = pod.clone();
    pod.spec.get_or_insert_with(PodSpec::default).node_name = Some(NODE.into());
    pod
}

/// A Workload in `ns1` with pod groups `(name, minCount)`; `None` is a basic policy.
fn workload(name: &str, groups: &[(&str, Option<i32>)]) -> LegacyWorkload {
    LegacyWorkload {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..ObjectMeta::default()
        },
        spec: crate::cluster::LegacyWorkloadSpec {
            controller_ref: None,
            pod_groups: groups
                .iter()
                .map(|(name, min_count)| LegacyWorkloadPodGroup {
                    name: (*name).into(),
                    policy: LegacyWorkloadPodGroupPolicy {
                        basic: min_count.is_none().then(|| serde_json::json!({})),
                        gang: min_count.map(|min_count| LegacyGangPolicy { min_count }),
                    },
                })
                .collect(),
        },
    }
}

fn plugin_with(legacy: Arc<LegacyWorkloads>) -> (GangScheduling, Handle) {
    legacy.set_served();
    let handle = Handle::builder().legacy_workloads(legacy).build();
    let plugin = GangScheduling::build(NoArgs {}, &handle).expect("no args");
    (plugin, handle)
}

struct FlowCase {
    name: &'static str,
    pod: Pod,
    initial_pods: Vec<Pod>,
    initial_workloads: Vec<LegacyWorkload>,
    waiting_on_permit: Vec<Pod>,
    want_pre_enqueue: Status,
    want_permit: Status,
    want_activated: &'static [&'static str],
    want_allowed: &'static [&'static str],
}

fn flow_cases() -> Vec<FlowCase> {
    let gang_wl = workload("gang-wl", &[("pg1", Some(3)), ("pg2", Some(4))]);
    let basic_wl = workload("basic-wl", &[("pg1", None)]);
    let p = |name, group, replica| pod(name, Some(("gang-wl", group, replica)));
    let (p1, p2, p3) = (p("p1", "pg1", ""), p("p2", "pg1", ""), p("p3", "pg1", ""));
    let p4 = p("p4", "pg2", "");
    let p5 = p("p5", "pg1", "2");
    let basic_policy_pod = pod("basic-pod", Some(("basic-wl", "pg1", "")));
    let non_gang_pod = pod("non-gang", None);
    let case = |name, pod| FlowCase {
        name,
        pod,
        initial_pods: Vec::new(),
        initial_workloads: Vec::new(),
        waiting_on_permit: Vec::new(),
        want_pre_enqueue: Status::success(),
        want_permit: Status::success(),
        want_activated: &[],
        want_allowed: &[],
    };
    vec![
        FlowCase {
            initial_workloads: vec![gang_wl.clone(), basic_wl.clone()],
            ..case("non-gang pod succeeds immediately", non_gang_pod)
        },
        FlowCase {
            initial_workloads: vec![gang_wl.clone(), basic_wl],
            ..case("basic policy pod succeeds immediately", basic_policy_pod)
        },
        FlowCase {
            initial_pods: vec![p2.clone(), p3.clone(), p4.clone(), p5.clone()],
            want_pre_enqueue: Status::unresolvable(
                "waiting for pods's workload \"gang-wl\" to appear in scheduling queue",
            ),
            ..case(
                "gang pod fails PreEnqueue when workload is not yet created",
                p1.clone(),
            )
        },
        FlowCase {
            // Only p1 and p2 exist from their gang, minCount is 3.
            initial_pods: vec![p2.clone(), p4.clone(), p5.clone()],
            initial_workloads: vec![gang_wl.clone()],
            want_pre_enqueue: Status::unresolvable(
                "waiting for minCount pods from a gang to appear in scheduling queue",
            ),
            ..case(
                "gang pod fails PreEnqueue when quorum is not met",
                p1.clone(),
            )
        },
        FlowCase {
            initial_pods: vec![p2.clone(), p3.clone(), p4.clone(), p5.clone()],
            initial_workloads: vec![gang_wl.clone()],
            waiting_on_permit: vec![p2.clone(), p4.clone(), p5.clone()],
            want_permit: Status::new(
                Code::Wait,
                "waiting for minCount pods from a gang to be waiting on permit",
            ),
            want_activated: &["p3"],
            ..case(
                "gang pod passes PreEnqueue, but waits at Permit",
                p1.clone(),
            )
        },
        FlowCase {
            initial_pods: vec![p2.clone(), p3.clone(), p4.clone(), p5.clone()],
            initial_workloads: vec![gang_wl],
            waiting_on_permit: vec![p2, p3, p4, p5],
            want_allowed: &["p1", "p2", "p3"],
            ..case(
                "final gang pod arrives at Permit and allows all waiting pods from a gang",
                p1,
            )
        },
    ]
}

/// As upstream's loop: the manager knows the initial pods and the pod; PreEnqueue; the
/// pods waiting on Permit are assumed and held there; then the pod is assumed and
/// permitted.
#[tokio::test]
async fn gang_scheduling_flow_matches_the_1_35_table() {
    for case in flow_cases() {
        let name = case.name;
        let legacy = Arc::new(LegacyWorkloads::new());
        let (plugin, handle) = plugin_with(legacy.clone());
        for workload in case.initial_workloads {
            legacy.apply_workload(workload);
        }
        for pod in case.initial_pods.iter().chain([&case.pod]) {
            legacy.add_pod(&Arc::new(pod.clone()));
        }
        let pre_enqueue = plugin.pre_enqueue(&pod_info(case.pod.clone()));
        assert_eq!(
            pre_enqueue, case.want_pre_enqueue,
            "case {name}: PreEnqueue"
        );
        if !pre_enqueue.is_success() {
            continue;
        }
        let pod = assumed(&case.pod);
        let flow = permit_flow(&plugin, &handle, &case.waiting_on_permit, &pod, |p| {
            legacy.assume(p)
        })
        .await;
        assert_eq!(flow.status, case.want_permit, "case {name}: Permit");
        assert_eq!(
            flow.activated, case.want_activated,
            "case {name}: activated"
        );
        if flow.status.is_wait() {
            assert!(
                flow.timeout > Duration::ZERO && flow.timeout <= Duration::from_secs(300),
                "case {name}: the gang's deadline: {:?}",
                flow.timeout
            );
        }
        flow.assert_allowed(&handle, case.want_allowed, name);
    }
}

#[tokio::test]
async fn a_missing_workload_or_pod_group_at_permit_is_an_error() {
    let legacy = Arc::new(LegacyWorkloads::new());
    let (plugin, _) = plugin_with(legacy.clone());
    let p1 = pod("p1", Some(("gang-wl", "pg9", "")));
    legacy.add_pod(&Arc::new(p1.clone()));
    let (status, _) = plugin
        .permit(&mut CycleState::new(), &pod_info(p1.clone()), NODE)
        .await;
    assert_eq!(
        status,
        Status::error(
            "failed to get workload ns1/gang-wl: workload.scheduling.k8s.io \"gang-wl\" not found"
        )
    );
    legacy.apply_workload(workload("gang-wl", &[("pg1", Some(3))]));
    let (status, _) = plugin
        .permit(&mut CycleState::new(), &pod_info(p1.clone()), NODE)
        .await;
    assert_eq!(
        status,
        Status::error("pod group \"pg9\" doesn't exist for a workload \"gang-wl\"")
    );
    assert_eq!(
        plugin.pre_enqueue(&pod_info(p1)),
        Status::unresolvable("pod group \"pg9\" doesn't exist for a workload \"gang-wl\"")
    );
}

#[test]
fn where_workloads_are_not_fed_pods_pass_pre_enqueue_to_be_refused() {
    let handle = Handle::builder().build();
    let plugin = GangScheduling::build(NoArgs {}, &handle).expect("no args");
    let p1 = pod("p1", Some(("gang-wl", "pg1", "")));
    assert_eq!(plugin.pre_enqueue(&pod_info(p1)), Status::success());
}
