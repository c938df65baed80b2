//! Upstream's `gangscheduling_test.go` (v1.37.2), its rows with the CompositePodGroup gate
//! off, named as there. Expected statuses, messages and pods come from upstream's tables
//! and, for messages its tables leave out, from upstream's format strings filled in by
//! hand.

use k8s_openapi::api::core::v1::{Pod, PodSchedulingGroup, PodSpec};
use k8s_openapi::api::scheduling::v1beta1::{
    BasicSchedulingPolicy, GangSchedulingPolicy, PodGroupSchedulingPolicy, PodGroupSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use pretty_assertions::assert_eq;

use super::*;
use crate::framework::{ExtensionPoint, Plugin};
use crate::testing::{make_pod, moves_on, pod_info};

const NS: &str = "ns1";
const NODE: &str = "some-node";

/// A pod in `ns1` whose UID is its name (as upstream's `UID(name)`), a member of `group`
/// when one is given.
fn pod(name: &str, group: Option<&str>) -> Pod {
    let mut pod = make_pod().name(name).namespace(NS).obj();
    pod.metadata.uid = Some(name.into());
    pod.spec
        .get_or_insert_with(PodSpec::default)
        .scheduling_group = group.map(|group| PodSchedulingGroup {
        pod_group_name: Some(group.into()),
    });
    pod
}

fn member(name: &str, group: &str) -> Pod {
    pod(name, Some(group))
}

/// The pod as assumed on the test's node.
fn assumed(pod: &Pod) -> Arc<Pod> {
    let mut pod = pod.clone();
    pod.spec.get_or_insert_with(PodSpec::default).node_name = Some(NODE.into());
    Arc::new(pod)
}

/// A PodGroup in `ns1` with `policy`. Upstream's fixtures also set `workloadRef`, which
/// the plugin never reads.
fn group(name: &str, policy: PodGroupSchedulingPolicy) -> PodGroup {
    PodGroup {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..ObjectMeta::default()
        },
        spec: PodGroupSpec {
            scheduling_policy: policy,
            ..PodGroupSpec::default()
        },
        status: None,
    }
}

fn gang(name: &str, min_count: i32) -> PodGroup {
    group(
        name,
        PodGroupSchedulingPolicy {
            gang: Some(GangSchedulingPolicy { min_count }),
            ..PodGroupSchedulingPolicy::default()
        },
    )
}

fn basic(name: &str) -> PodGroup {
    group(
        name,
        PodGroupSchedulingPolicy {
            basic: Some(BasicSchedulingPolicy::default()),
            ..PodGroupSchedulingPolicy::default()
        },
    )
}

/// `group` under a CompositePodGroup, which is ignored with the gate off.
fn child_of(mut group: PodGroup, parent: &str) -> PodGroup {
    group.spec.parent_composite_pod_group_name = Some(parent.into());
    group
}

/// The plugin over `states`, which the adapter feeds (served).
fn plugin_with(states: Arc<PodGroupStates>) -> (GangScheduling, Handle) {
    states.set_served();
    let handle = Handle::builder().pod_group_states(states).build();
    let plugin = GangScheduling::build(NoArgs {}, &handle).expect("GangScheduling takes no args");
    (plugin, handle)
}

#[test]
fn without_pod_groups_fed_members_pass_pre_enqueue_to_be_refused() {
    let states = Arc::new(PodGroupStates::new());
    let handle = Handle::builder().pod_group_states(states).build();
    let plugin = GangScheduling::build(NoArgs {}, &handle).expect("no args");
    assert_eq!(
        plugin.pre_enqueue(&pod_info(member("p1", "pg1"))),
        Status::success()
    );
}

#[test]
fn registry_points_match_the_accessors() {
    let (plugin, _) = plugin_with(Arc::default());
    assert!(plugin.as_pre_enqueue().is_some());
    assert!(plugin.as_permit().is_some());
    assert!(plugin.as_placement_feasible().is_some());
    assert!(plugin.as_filter().is_none());
    assert_eq!(
        GangScheduling::POINTS,
        &[ExtensionPoint::PreEnqueue, ExtensionPoint::Permit]
    );
}

/// One row of upstream's `TestGangSchedulingFlow`.
struct FlowCase {
    name: &'static str,
    pod: Pod,
    initial_pods: Vec<Pod>,
    initial_pod_groups: Vec<PodGroup>,
    /// Assumed and sent through Permit (which must say Wait) before `pod`.
    waiting_on_permit: Vec<Pod>,
    want_pre_enqueue: Status,
    want_permit: Status,
    /// Keys asked to be activated by `pod`'s Permit. Upstream's table names them for its
    /// Wait row but returns before comparing; berth checks them.
    want_activated: &'static [&'static str],
    /// Keys no longer held by this plugin after `pod`'s Permit (upstream lists the pod
    /// itself too, which never waits).
    want_allowed: &'static [&'static str],
}

impl Default for FlowCase {
    fn default() -> Self {
        FlowCase {
            name: "",
            pod: Pod::default(),
            initial_pods: Vec::new(),
            initial_pod_groups: Vec::new(),
            waiting_on_permit: Vec::new(),
            want_pre_enqueue: Status::success(),
            want_permit: Status::success(),
            want_activated: &[],
            want_allowed: &[],
        }
    }
}

fn flow_cases() -> Vec<FlowCase> {
    let (p1, p2, p3) = (
        member("p1", "pg1"),
        member("p2", "pg1"),
        member("p3", "pg1"),
    );
    let (p4, p5) = (member("p4", "pg2"), member("p5", "pg2"));
    let basic_policy_pod = member("basic-pod", "pg3");
    let non_gang_pod = pod("non-gang", None);
    let all_groups = vec![gang("pg1", 3), gang("pg2", 4), basic("pg3")];
    let gangs = vec![gang("pg1", 3), gang("pg2", 4)];
    // The composite fixtures: with the gate off, each PodGroup's own policy decides.
    let cpg_groups = vec![
        child_of(gang("pg1-cpg", 1), "cpg-sub1"),
        child_of(gang("pg2-cpg", 1), "cpg-sub1"),
        child_of(gang("pg3-cpg", 1), "cpg-sub1"),
        child_of(basic("pg4-cpg"), "cpg-sub2"),
        child_of(gang("pg5-cpg", 1), "cpg-sub2"),
        child_of(gang("pg6-cpg", 1), "cpg-sub3"),
        child_of(gang("pg7-cpg", 1), "cpg-sub3"),
    ];
    let p1_cpg = member("p1-cpg", "pg1-cpg");
    let p2_cpg = member("p2-cpg", "pg2-cpg");
    let p4_cpg = member("p4-cpg", "pg4-cpg");
    let p6_cpg = member("p6-cpg", "pg6-cpg");
    let (p1_1, p1_2, p2_1) = (
        member("p1_1", "pg-basic-1"),
        member("p1_2", "pg-basic-1"),
        member("p2_1", "pg-basic-2"),
    );
    let basic_root_groups = vec![
        child_of(gang("pg-basic-1", 2), "cpg-basic-root"),
        child_of(gang("pg-basic-2", 2), "cpg-basic-root"),
    ];
    let quorum_not_met =
        Status::unresolvable("waiting for minCount pods from a gang to appear in scheduling queue");
    vec![
        FlowCase {
            name: "non-gang pod succeeds immediately (CPG=false)",
            pod: non_gang_pod,
            initial_pod_groups: all_groups.clone(),
            ..FlowCase::default()
        },
        FlowCase {
            name: "basic policy pod succeeds immediately (CPG=false)",
            pod: basic_policy_pod,
            initial_pod_groups: all_groups,
            ..FlowCase::default()
        },
        FlowCase {
            name: "gang pod fails PreEnqueue when pod group is not yet created (CPG=false)",
            pod: p1.clone(),
            initial_pods: vec![p2.clone(), p3.clone(), p4.clone(), p5.clone()],
            want_pre_enqueue: Status::unresolvable(
                "waiting for pods's pod group \"pg1\" to appear in scheduling queue",
            ),
            ..FlowCase::default()
        },
        FlowCase {
            name: "gang pod fails PreEnqueue when quorum is not met (CPG=false)",
            pod: p1.clone(),
            initial_pods: vec![p2.clone(), p4.clone(), p5.clone()],
            initial_pod_groups: gangs.clone(),
            want_pre_enqueue: quorum_not_met.clone(),
            ..FlowCase::default()
        },
        FlowCase {
            name: "gang pod passes PreEnqueue, but waits at Permit (CPG=false)",
            pod: p1.clone(),
            initial_pods: vec![p2.clone(), p3.clone(), p4.clone(), p5.clone()],
            initial_pod_groups: gangs.clone(),
            waiting_on_permit: vec![p2.clone(), p4.clone(), p5.clone()],
            want_permit: Status::new(
                Code::Wait,
                "waiting for minCount pods from a gang to be scheduled",
            ),
            want_activated: &["p3"],
            ..FlowCase::default()
        },
        FlowCase {
            name: "final gang pod arrives at Permit and allows all waiting pods from a gang (CPG=false)",
            pod: p1,
            initial_pods: vec![p2.clone(), p3.clone(), p4.clone(), p5.clone()],
            initial_pod_groups: gangs,
            waiting_on_permit: vec![p2, p3, p4, p5],
            want_allowed: &["p1", "p2", "p3"],
            ..FlowCase::default()
        },
        FlowCase {
            name: "CPG Hierarchical Stage 1: No pods, tree not ready (CPG=false)",
            pod: p1_cpg.clone(),
            initial_pod_groups: cpg_groups.clone(),
            ..FlowCase::default()
        },
        FlowCase {
            name: "CPG Hierarchical Stage 2: Add p6 (CPG=false)",
            pod: p6_cpg.clone(),
            initial_pods: vec![p1_cpg.clone(), p2_cpg.clone()],
            initial_pod_groups: cpg_groups.clone(),
            ..FlowCase::default()
        },
        FlowCase {
            name: "CPG Hierarchical Stage 3: Add p4 (CPG=false)",
            pod: p4_cpg.clone(),
            initial_pods: vec![p1_cpg.clone(), p2_cpg.clone(), p6_cpg.clone()],
            initial_pod_groups: cpg_groups.clone(),
            ..FlowCase::default()
        },
        FlowCase {
            name: "CPG Basic With Gang Stage 1: pg1 ready, root ready (CPG=false)",
            pod: p2_1,
            initial_pods: vec![p1_1, p1_2],
            initial_pod_groups: basic_root_groups,
            want_pre_enqueue: quorum_not_met,
            ..FlowCase::default()
        },
        FlowCase {
            name: "CPG Permit Wait: Hierarchical gang waits at permit if gang isn't fully scheduled (CPG=false)",
            pod: p4_cpg,
            initial_pods: vec![p1_cpg, p2_cpg, p6_cpg],
            initial_pod_groups: cpg_groups,
            ..FlowCase::default()
        },
    ]
}

/// Upstream's procedure: the groups and members are known, the pod passes PreEnqueue (or
/// the row ends), the pods waiting on Permit are assumed and held there, then the pod is
/// assumed and permitted.
#[tokio::test]
async fn gang_scheduling_flow_matches_upstream_table() {
    for case in flow_cases() {
        let name = case.name;
        let states = Arc::new(PodGroupStates::new());
        let (plugin, handle) = plugin_with(states.clone());
        for group in case.initial_pod_groups {
            states.apply_group(group);
        }
        for member in case.initial_pods.iter().chain([&case.pod]) {
            states.add_pod(&Arc::new(member.clone()));
        }

        let pre_enqueue = plugin.pre_enqueue(&pod_info(case.pod.clone()));
        assert_eq!(
            pre_enqueue, case.want_pre_enqueue,
            "case {name}: PreEnqueue"
        );
        if !pre_enqueue.is_success() {
            continue;
        }

        let pod = (*assumed(&case.pod)).clone();
        let flow = permit_flow(&plugin, &handle, &case.waiting_on_permit, &pod, |p| {
            states.assume(&Arc::new(p.clone()))
        })
        .await;
        assert_eq!(flow.status, case.want_permit, "case {name}: Permit");
        assert_eq!(
            flow.activated, case.want_activated,
            "case {name}: activated"
        );
        if flow.status.is_wait() {
            assert_eq!(
                flow.timeout,
                Duration::from_secs(300),
                "case {name}: timeout"
            );
        }
        flow.assert_allowed(&handle, case.want_allowed, name);
    }
}

/// What [`permit_flow`] saw.
pub(super) struct PermitFlow {
    pub status: Status,
    pub timeout: Duration,
    /// The keys the pod's Permit asked to activate.
    pub activated: Vec<String>,
    /// The keys held at Permit before the pod.
    held: Vec<String>,
}

impl PermitFlow {
    /// Checks that exactly the held pods among `allowed` are no longer held by this
    /// plugin (upstream lists the pod itself too, which never waits).
    pub fn assert_allowed(&self, handle: &Handle, allowed: &[&str], name: &str) {
        let still_held = |key: &str| {
            handle
                .waiting_pods
                .get(key)
                .is_some_and(|w| w.pending_plugins().iter().any(|p| p == "GangScheduling"))
        };
        for key in allowed {
            assert!(!still_held(key), "case {name}: {key} is allowed");
        }
        for key in self.held.iter().filter(|k| !allowed.contains(&k.as_str())) {
            assert!(still_held(key), "case {name}: {key} still waits");
        }
    }
}

/// Upstream's loop after PreEnqueue: each pod of `waiting_on_permit` is assumed (on the
/// test's node, through `assume`), permitted (it must wait) and held at Permit as the
/// framework holds it; then `pod` (assumed already) is assumed and permitted.
pub(super) async fn permit_flow(
    plugin: &GangScheduling,
    handle: &Handle,
    waiting_on_permit: &[Pod],
    pod: &Pod,
    assume: impl Fn(&Pod),
) -> PermitFlow {
    let mut held = Vec::new();
    for waiting in waiting_on_permit {
        let waiting = (*assumed(waiting)).clone();
        assume(&waiting);
        let info = Arc::new(pod_info(waiting));
        let (status, timeout) = plugin.permit(&mut CycleState::new(), &info, NODE).await;
        assert_eq!(status.code(), Code::Wait, "{} waits", info.name());
        handle.waiting_pods.add(
            info.clone(),
            NODE,
            vec![(GangScheduling::NAME.into(), timeout)],
        );
        held.push(info.key().to_string());
    }
    assume(pod);
    let mut state = CycleState::new();
    let (status, timeout) = plugin
        .permit(&mut state, &pod_info(pod.clone()), NODE)
        .await;
    let activated = state
        .read::<PodsToActivate>()
        .map(|PodsToActivate(keys)| keys.iter().cloned().collect())
        .unwrap_or_default();
    PermitFlow {
        status,
        timeout,
        activated,
        held,
    }
}

#[tokio::test]
async fn permit_without_the_pod_group_is_an_error() {
    // Upstream reaches this only when the PodGroup is deleted between PreEnqueue and
    // Permit; its error names the group and wraps the lister's error.
    let states = Arc::new(PodGroupStates::new());
    let (plugin, _) = plugin_with(states.clone());
    let p1 = member("p1", "pg1");
    let (status, _) = plugin
        .permit(&mut CycleState::new(), &pod_info(p1.clone()), NODE)
        .await;
    assert_eq!(
        status,
        Status::error(
            "failed to get podGroup ns1/pg1: pod group state not found for pod group podgroup/ns1/pg1"
        )
    );
    states.add_pod(&Arc::new(p1.clone()));
    let (status, _) = plugin
        .permit(&mut CycleState::new(), &pod_info(p1), NODE)
        .await;
    assert_eq!(
        status,
        Status::error(
            "failed to get podGroup ns1/pg1: pod group object not found for pod group podgroup/ns1/pg1"
        )
    );
}

#[tokio::test]
async fn permit_keeps_the_pods_other_plugins_asked_to_activate() {
    let states = Arc::new(PodGroupStates::new());
    let (plugin, _) = plugin_with(states.clone());
    states.apply_group(gang("pg1", 3));
    let (p1, p2) = (member("p1", "pg1"), member("p2", "pg1"));
    states.add_pod(&Arc::new(p1.clone()));
    states.add_pod(&Arc::new(p2));
    states.assume(&assumed(&p1));
    let mut state = CycleState::new();
    state.write(PodsToActivate(BTreeSet::from(["other".to_string()])));
    let (status, _) = plugin.permit(&mut state, &pod_info(p1), NODE).await;
    assert!(status.is_wait(), "{status:?}");
    let activated = state.read::<PodsToActivate>().map(|a| a.0.clone());
    assert_eq!(
        activated,
        Some(BTreeSet::from(["other".to_string(), "p2".to_string()]))
    );
}

/// Upstream's `TestPlacementFeasible`, rows with `isCPG=false, cpgFeatureGate=false`.
/// Step `i` reports `children - (i + 1)` pods remaining and the pods scheduled so far
/// (initially scheduled plus the steps whose pod succeeded, this one included). Upstream
/// checks codes only; the messages of the Wait and Unschedulable steps are its format
/// strings filled in.
#[test]
fn placement_feasible_matches_upstream_table() {
    use Code::{Success, Unschedulable, Wait};
    // (name, minCount (None: basic policy), children, initially scheduled, pod outcomes,
    //  expected (code, message) per step)
    type Row = (
        &'static str,
        Option<i32>,
        usize,
        usize,
        &'static [Code],
        &'static [(Code, &'static str)],
    );
    let rows: [Row; 13] = [
        (
            "All pods succeed, minCount met at end (isCPG=false, cpgFeatureGate=false)",
            Some(2),
            2,
            0,
            &[Success, Success],
            &[
                (
                    Wait,
                    "minCount (2) is not yet satisfied: 1 scheduled, 1 remaining",
                ),
                (Success, ""),
            ],
        ),
        (
            "First pod fails, minCount not satisfiable (isCPG=false, cpgFeatureGate=false)",
            Some(3),
            3,
            0,
            &[Unschedulable],
            &[(
                Unschedulable,
                "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining",
            )],
        ),
        (
            "Second pod fails, minCount not satisfiable (isCPG=false, cpgFeatureGate=false)",
            Some(2),
            2,
            0,
            &[Success, Unschedulable],
            &[
                (
                    Wait,
                    "minCount (2) is not yet satisfied: 1 scheduled, 1 remaining",
                ),
                (
                    Unschedulable,
                    "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining",
                ),
            ],
        ),
        (
            "Non-gang pod group with 0 scheduled pods fails (isCPG=false, cpgFeatureGate=false)",
            None,
            1,
            0,
            &[Unschedulable],
            &[(
                Unschedulable,
                "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining",
            )],
        ),
        (
            "Non-gang pod group with succeeds once 1 pod is scheduled (isCPG=false, cpgFeatureGate=false)",
            None,
            1,
            0,
            &[Success],
            &[(Success, "")],
        ),
        (
            "Non-gang pod group with 1 initially scheduled pod succeeds (isCPG=false, cpgFeatureGate=false)",
            None,
            1,
            1,
            &[Unschedulable],
            &[(Success, "")],
        ),
        (
            "More than minCount pods, all succeed (isCPG=false, cpgFeatureGate=false)",
            Some(2),
            3,
            0,
            &[Success, Success, Success],
            &[
                (
                    Wait,
                    "minCount (2) is not yet satisfied: 1 scheduled, 2 remaining",
                ),
                (Success, ""),
                (Success, ""),
            ],
        ),
        (
            "More than minCount pods, first fails (isCPG=false, cpgFeatureGate=false)",
            Some(2),
            3,
            0,
            &[Unschedulable, Success, Success],
            &[
                (
                    Wait,
                    "minCount (2) is not yet satisfied: 0 scheduled, 2 remaining",
                ),
                (
                    Wait,
                    "minCount (2) is not yet satisfied: 1 scheduled, 1 remaining",
                ),
                (Success, ""),
            ],
        ),
        (
            "More than minCount pods, minCount not satisfiable (isCPG=false, cpgFeatureGate=false)",
            Some(2),
            3,
            0,
            &[Unschedulable, Unschedulable],
            &[
                (
                    Wait,
                    "minCount (2) is not yet satisfied: 0 scheduled, 2 remaining",
                ),
                (
                    Unschedulable,
                    "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining",
                ),
            ],
        ),
        (
            "1 pod scheduled, 2 unscheduled pods succeed, minCount 3 met (isCPG=false, cpgFeatureGate=false)",
            Some(3),
            2,
            1,
            &[Success, Success],
            &[
                (
                    Wait,
                    "minCount (3) is not yet satisfied: 2 scheduled, 1 remaining",
                ),
                (Success, ""),
            ],
        ),
        (
            "minCount already met by scheduled pods (isCPG=false, cpgFeatureGate=false)",
            Some(2),
            1,
            2,
            &[Unschedulable],
            &[(Success, "")],
        ),
        (
            "1 pod scheduled, minCount 3, first unscheduled fails, not enough remaining (isCPG=false, cpgFeatureGate=false)",
            Some(3),
            2,
            1,
            &[Unschedulable],
            &[(
                Unschedulable,
                "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining",
            )],
        ),
        (
            "1 pod scheduled, minCount 4, first unscheduled succeeds, not enough remaining (isCPG=false, cpgFeatureGate=false)",
            Some(4),
            2,
            1,
            &[Success],
            &[(
                Unschedulable,
                "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining",
            )],
        ),
    ];
    let (plugin, _) = plugin_with(Arc::default());
    for (name, min_count, children, initially_scheduled, outcomes, want) in rows {
        // Upstream's non-composite fixture sits under `cpg-root`, ignored with the gate off.
        let group = child_of(
            match min_count {
                Some(min_count) => gang("test-pg", min_count),
                None => basic("test-pg"),
            },
            "cpg-root",
        );
        let mut scheduled = initially_scheduled;
        for (step, (outcome, (code, message))) in outcomes.iter().zip(want).enumerate() {
            if *outcome == Success {
                scheduled += 1;
            }
            let progress = PlacementProgress {
                remaining: children - (step + 1),
                scheduled,
            };
            let got = plugin.placement_feasible(&GroupKey::new(NS, "test-pg"), &group, progress);
            assert_eq!(
                (got.code(), got.message().as_str()),
                (*code, *message),
                "case {name}, step {step}"
            );
        }
    }
}

/// Upstream's queueing-hint tables (`Test_isSchedulableAfterPodAdded`,
/// `Test_isSchedulableAfterPodGroupAdded`, `Test_isSchedulableAfterPodGroupUpdated`), as
/// far as berth's event model reaches: berth has no hints, so a pod this plugin rejected
/// moves on any event the plugin registers. The rows where upstream's hint says Queue
/// are checked below: the event is registered. The rows where it says QueueSkip cannot
/// be expressed, since berth moves the pod on them too:
///
/// - pod added: "add a newPod which doesn't match the pod's namespace (CPG=false)",
///   "add a newPod which doesn't match the pod's pod group name (CPG=false)", "add a newPod
///   which belongs to a different scheduling group but matches the root CPG (CPG=false)",
///   "add a newPod which belongs to a different scheduling group and does not match the
///   root CPG (CPG=false)";
/// - PodGroup added: "add a pod group which doesn't match the pod's scheduling group name
///   (CPG=false)", "... namespace (CPG=false)", "... but matches the root CPG
///   (CPG=false)", "... and doesn't match the root CPG (CPG=false)";
/// - PodGroup updated: "update Basic policy (CPG=false)", "minCount increased matches
///   target pod (CPG=false)", "minCount unchanged matches target pod (CPG=false)",
///   "minCount decreased but pod group name doesn't match target pod (CPG=false)",
///   "minCount decreased but pod group namespace doesn't match target pod (CPG=false)".
///
/// "pod without a scheduling group is skipped (CPG=false)" holds without a hint: this
/// plugin never rejects such a pod, so no event of its moves it. The rows with the gate
/// on, and `Test_isSchedulableAfterCompositePodGroupAdded`, need CompositePodGroup.
#[test]
fn events_to_register_cover_upstreams_queue_hints() {
    let (plugin, _) = plugin_with(Arc::default());
    let events = plugin.events_to_register().expect("registers events");
    assert_eq!(
        events,
        [
            ClusterEvent::new(EventResource::UnscheduledPod, ActionType::ADD),
            ClusterEvent::new(EventResource::AssignedPod, ActionType::ADD),
            ClusterEvent::new(EventResource::PodGroup, ActionType::ADD),
            ClusterEvent::new(EventResource::PodGroup, ActionType::UPDATE),
            ClusterEvent::new(EventResource::Workload, ActionType::ADD),
            ClusterEvent::new(EventResource::Workload, ActionType::UPDATE),
        ]
    );
    let queue_rows = [
        (
            "add a newPod which matches the pod's scheduling group (CPG=false)",
            EventResource::UnscheduledPod,
            ActionType::ADD,
        ),
        (
            "add a newPod with NodeName set which matches the pod's scheduling group (CPG=false)",
            EventResource::AssignedPod,
            ActionType::ADD,
        ),
        (
            "add a pod group which matches the pod's pod group name (CPG=false)",
            EventResource::PodGroup,
            ActionType::ADD,
        ),
        (
            "minCount decreased matches target pod (CPG=false)",
            EventResource::PodGroup,
            ActionType::UPDATE,
        ),
        // Kubernetes 1.35's Test_isSchedulableAfterPodAdded and _WorkloadAdded: berth has
        // no queueing hints, so the rows whose hint is QueueSkip (another namespace,
        // Workload, pod group or replica key) requeue too; those that queue are these.
        (
            "add a newPod which matches the pod's workload and pod group (1.35)",
            EventResource::UnscheduledPod,
            ActionType::ADD,
        ),
        (
            "add a workload which matches the pod's workload name (1.35)",
            EventResource::Workload,
            ActionType::ADD,
        ),
    ];
    for (name, resource, action) in queue_rows {
        assert!(moves_on(&events, resource, action), "case {name}");
    }
    // Upstream registers no delete: a member or PodGroup going away never admits a pod.
    for resource in [
        EventResource::UnscheduledPod,
        EventResource::AssignedPod,
        EventResource::PodGroup,
    ] {
        assert!(
            !moves_on(&events, resource, ActionType::DELETE),
            "{resource:?} delete"
        );
    }
}
