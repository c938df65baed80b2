// The Coscheduling tables, included once per PodGroup dialect by `tests.rs`, which sets
// `SCHEDULER_PLUGINS`. Expected values follow the module docs and, where berth matches
// it, scheduler-plugins' `pkg/coscheduling` (its messages and defaults).

use futures::FutureExt;
use k8s_openapi::api::core::v1::{Node, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use pretty_assertions::assert_eq;

use super::super::*;
use crate::api::{POD_GROUP_LABEL, POD_GROUP_LABEL_COMPAT, PodGroupSpec, scheduler_plugins};
use crate::framework::WaitingPod;
use crate::testing::{make_node, make_pod, pod_info, quantities, snapshot};

const NS: &str = "default";
/// How long the test holds pods at Permit; longer than any backoff the tests wait out.
const HELD_FOR: Duration = Duration::from_secs(600);
const INSUFFICIENT_CPU: &str = "Insufficient cpu";
const UNTOLERATED_TAINT: &str = "node(s) had untolerated taint(s)";

fn at(second: i64) -> Time {
    Time(Timestamp::from_second(second).expect("test timestamps are in range"))
}

fn group(name: &str, min_member: i32, created: i64) -> PodGroup {
    PodGroup {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            creation_timestamp: Some(at(created)),
            ..ObjectMeta::default()
        },
        spec: PodGroupSpec {
            min_member,
            ..PodGroupSpec::default()
        },
        status: None,
    }
}

/// `group` as the scheduler-plugins PodGroup with the same spec.
fn as_scheduler_plugins(group: &PodGroup) -> scheduler_plugins::PodGroup {
    scheduler_plugins::PodGroup {
        metadata: group.metadata.clone(),
        spec: scheduler_plugins::PodGroupSpec {
            min_member: group.spec.min_member,
            min_resources: group.spec.min_resources.clone(),
            schedule_timeout_seconds: group.spec.schedule_timeout_seconds,
        },
        status: None,
    }
}

/// A pod in `default` with one container requesting `cpu`, labelled a member of
/// `group` when one is given.
fn pod(name: &str, group: Option<&str>, cpu: &str) -> Pod {
    let pod = make_pod().name(name).namespace(NS).req(&[("cpu", cpu)]);
    match group {
        Some(group) if SCHEDULER_PLUGINS => pod.label(POD_GROUP_LABEL_COMPAT, group).obj(),
        Some(group) => pod.label(POD_GROUP_LABEL, group).obj(),
        None => pod.obj(),
    }
}

/// A member of `group` requesting 1 cpu.
fn member(name: &str, group: &str) -> Pod {
    pod(name, Some(group), "1")
}

fn on_node(mut pod: Pod, node: &str) -> Pod {
    pod.spec.get_or_insert_with(PodSpec::default).node_name = Some(node.into());
    pod
}

fn with_priority(mut pod: Pod, priority: i32) -> Pod {
    pod.spec.get_or_insert_with(PodSpec::default).priority = Some(priority);
    pod
}

fn created_at(mut pod: Pod, second: i64) -> Pod {
    pod.metadata.creation_timestamp = Some(at(second));
    pod
}

fn with_uid(mut pod: Pod, uid: &str) -> Pod {
    pod.metadata.uid = Some(uid.into());
    pod
}

fn with_phase(mut pod: Pod, phase: &str) -> Pod {
    pod.status = Some(PodStatus {
        phase: Some(phase.into()),
        ..PodStatus::default()
    });
    pod
}

/// A node with `cpu` allocatable, plenty of memory and 110 pod slots.
fn node(name: &str, cpu: &str) -> Node {
    make_node()
        .name(name)
        .allocatable(&[("cpu", cpu), ("memory", "64Gi"), ("pods", "110")])
        .obj()
}

fn info(pod: &Pod) -> PodInfo {
    pod_info(pod.clone())
}

/// Filter's verdict: every listed node rejected the pod with `status`.
fn filtered(nodes: &[&str], status: &Status) -> NodeToStatus {
    NodeToStatus {
        statuses: nodes
            .iter()
            .map(|n| (n.to_string(), status.clone()))
            .collect(),
        absent: None,
    }
}

fn backoff_args(seconds: i64) -> CoschedulingArgs {
    CoschedulingArgs {
        pod_group_backoff_seconds: seconds,
        ..CoschedulingArgs::default()
    }
}

/// What a pod held at Permit has been told so far: `None` while it still waits.
fn verdict(waiting: &WaitingPod) -> Option<Status> {
    waiting.wait().now_or_never()
}

/// The verdict of a held pod rejected by Coscheduling with `message`.
fn rejected_with(message: &str) -> Option<Status> {
    Some(Status::unschedulable(message).with_plugin(Coscheduling::NAME))
}

fn key(pod: &Pod) -> String {
    crate::cluster::pod_key(pod)
}

struct Fixture {
    plugin: Coscheduling,
    waiting_pods: Arc<WaitingPods>,
}

impl Fixture {
    fn new(args: CoschedulingArgs, groups: &[PodGroup]) -> Self {
        let pod_groups = Arc::new(PodGroups::new());
        for g in groups {
            if SCHEDULER_PLUGINS {
                pod_groups.apply_scheduler_plugins(&as_scheduler_plugins(g));
            } else {
                pod_groups.apply(g);
            }
        }
        let handle = Handle::builder().pod_groups(pod_groups).build();
        let plugin = Coscheduling::build(args, &handle).expect("Coscheduling builds");
        Fixture {
            plugin,
            waiting_pods: handle.waiting_pods,
        }
    }

    /// PreEnqueue for each pod, as the queue runs it when a pod enters it.
    fn enqueue(&self, pods: &[&Pod]) {
        for p in pods {
            let status = self.plugin.pre_enqueue(&info(p));
            assert!(status.is_success(), "PreEnqueue always admits: {status}");
        }
    }

    /// Holds `pod`, assumed on `node`, at Permit for Coscheduling, as the framework does
    /// after Permit returned Wait.
    fn hold(&self, pod: &Pod, node: &str) -> Arc<WaitingPod> {
        self.waiting_pods.add(
            Arc::new(info(&on_node(pod.clone(), node))),
            node,
            vec![(Coscheduling::NAME.to_string(), HELD_FOR)],
        )
    }

    async fn pre_filter(&self, pod: &Pod, snapshot: &Snapshot) -> (CycleState, Status) {
        let mut state = CycleState::new();
        let (result, status) = self
            .plugin
            .pre_filter(&mut state, &info(pod), snapshot)
            .await;
        assert_eq!(result, None, "Coscheduling never narrows the nodes");
        (state, status)
    }

    async fn post_filter(
        &self,
        state: &CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
        filtered: &NodeToStatus,
    ) -> Status {
        let (result, status) = self
            .plugin
            .post_filter(&NoFilters, state, &info(pod), snapshot, filtered)
            .await;
        assert_eq!(result, None, "Coscheduling never nominates a node");
        status
    }

    /// A failed attempt: PreFilter (which must pass), then PostFilter after Filter
    /// rejected the pod as `filtered` says.
    async fn fail(&self, pod: &Pod, snapshot: &Snapshot, filtered: &NodeToStatus) -> Status {
        let (state, status) = self.pre_filter(pod, snapshot).await;
        assert!(
            status.is_success(),
            "PreFilter of {key}: {status}",
            key = key(pod)
        );
        self.post_filter(&state, pod, snapshot, filtered).await
    }

    /// PreFilter then Permit on `node` (the framework hands Permit the assumed pod).
    async fn permit(
        &self,
        pod: &Pod,
        snapshot: &Snapshot,
        node: &str,
    ) -> (CycleState, Status, Duration) {
        let (mut state, status) = self.pre_filter(pod, snapshot).await;
        assert!(
            status.is_success(),
            "PreFilter of {key}: {status}",
            key = key(pod)
        );
        let assumed = info(&on_node(pod.clone(), node));
        let (status, timeout) = self.plugin.permit(&mut state, &assumed, node).await;
        (state, status, timeout)
    }

    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        QueueSortPlugin::less(&self.plugin, a, b)
    }
}

// ---- Args ----

#[test]
fn args_default_to_scheduler_plugins_values() {
    let want = CoschedulingArgs {
        permit_waiting_time_seconds: 60,
        pod_group_backoff_seconds: 0,
    };
    assert_eq!(CoschedulingArgs::default(), want);
    let empty: CoschedulingArgs =
        serde_json::from_value(serde_json::json!({})).expect("empty args parse");
    assert_eq!(empty, want, "missing fields take the defaults");
    let set: CoschedulingArgs = serde_json::from_value(serde_json::json!({
        "permitWaitingTimeSeconds": 10,
        "podGroupBackoffSeconds": 5,
    }))
    .expect("args parse");
    assert_eq!(
        set,
        CoschedulingArgs {
            permit_waiting_time_seconds: 10,
            pod_group_backoff_seconds: 5,
        }
    );
}

#[test]
fn args_validation_names_the_field_and_the_value() {
    let path = "spec.pluginConfig.coscheduling";
    let permit_error = "spec.pluginConfig.coscheduling.permitWaitingTimeSeconds: Invalid value: 0: must be greater than or equal to 1";
    let backoff_error = "spec.pluginConfig.coscheduling.podGroupBackoffSeconds: Invalid value: -1: must be greater than or equal to 0";
    let cases: [(&str, i64, i64, Vec<&str>); 5] = [
        ("defaults", 60, 0, vec![]),
        ("smallest valid values", 1, 0, vec![]),
        ("no permit wait", 0, 0, vec![permit_error]),
        ("negative backoff", 60, -1, vec![backoff_error]),
        ("both wrong", 0, -1, vec![permit_error, backoff_error]),
    ];
    for (name, permit, backoff, want) in cases {
        let args = CoschedulingArgs {
            permit_waiting_time_seconds: permit,
            pod_group_backoff_seconds: backoff,
        };
        let got: Vec<String> = args.validate(path).iter().map(|e| e.to_string()).collect();
        assert_eq!(got, want, "case {name}");
    }
}

// ---- QueueSort ----

/// Groups of the QueueSort tests: `a` and `c` created together, `b` later.
fn sort_fixture() -> Fixture {
    Fixture::new(
        CoschedulingArgs::default(),
        &[group("a", 3, 100), group("b", 3, 200), group("c", 2, 100)],
    )
}

fn queued(pod: Pod, timestamp: Instant) -> QueuedPodInfo {
    QueuedPodInfo::new(Arc::new(info(&pod)), timestamp)
}

#[test]
fn less_table() {
    let f = sort_fixture();
    let t0 = Instant::now();
    let t1 = t0 + Duration::from_secs(1);
    let cases = [
        (
            "higher priority first, whatever the group's age",
            queued(with_priority(member("b-0", "b"), 10), t1),
            queued(member("a-0", "a"), t0),
        ),
        (
            "same priority: the older group first",
            queued(member("a-0", "a"), t1),
            queued(member("b-0", "b"), t0),
        ),
        (
            "a pod without a group goes by its own creationTimestamp (before a younger group)",
            queued(created_at(pod("solo", None, "1"), 150), t1),
            queued(member("b-0", "b"), t0),
        ),
        (
            "a pod without a group goes by its own creationTimestamp (after an older group)",
            queued(member("a-0", "a"), t1),
            queued(created_at(pod("solo", None, "1"), 150), t0),
        ),
        (
            "a pod whose PodGroup does not exist goes by its own creationTimestamp",
            queued(created_at(member("x-0", "missing"), 150), t1),
            queued(member("b-0", "b"), t0),
        ),
        (
            "no group and no creationTimestamp: the earlier queue timestamp first",
            queued(pod("late-name", None, "1"), t0),
            queued(pod("early-name", None, "1"), t1),
        ),
        (
            "groups created together: by group key",
            queued(member("z", "a"), t1),
            queued(member("a", "c"), t0),
        ),
        (
            "same group: by pod namespace/name",
            queued(member("a-0", "a"), t1),
            queued(member("a-1", "a"), t0),
        ),
    ];
    for (name, first, second) in cases {
        assert!(f.less(&first, &second), "case {name}: first goes first");
        assert!(!f.less(&second, &first), "case {name}: strict order");
    }
    let p = queued(member("a-0", "a"), t0);
    assert!(!f.less(&p, &p), "a pod is not less than itself");
}

/// The module docs order members of one group by "the pod's namespace/name"
/// (scheduler-plugins compares `GetNamespacedName` too). Pods from the API server
/// carry a uid, which must not decide the order.
#[test]
fn members_of_a_group_sort_by_name_not_by_uid() {
    let f = sort_fixture();
    let t0 = Instant::now();
    let first = queued(with_uid(member("a-0", "a"), "uid-z"), t0);
    let second = queued(with_uid(member("a-1", "a"), "uid-a"), t0);
    assert!(f.less(&first, &second), "a-0 goes before a-1");
    assert!(!f.less(&second, &first), "strict order");
}

#[test]
fn sorting_a_shuffled_queue_keeps_groups_together() {
    let f = sort_fixture();
    let t0 = Instant::now();
    // Queue timestamps interleave the groups, as members arriving one by one do.
    let arrivals: Vec<QueuedPodInfo> = [
        member("b-2", "b"),
        created_at(pod("solo-300", None, "1"), 300),
        member("a-1", "a"),
        member("c-1", "c"),
        member("b-0", "b"),
        with_priority(pod("urgent", None, "1"), 10),
        member("a-2", "a"),
        created_at(pod("solo-150", None, "1"), 150),
        member("c-0", "c"),
        member("b-1", "b"),
        member("a-0", "a"),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, p)| queued(p, t0 + Duration::from_secs(i as u64)))
    .collect();
    let want = [
        "urgent", "a-0", "a-1", "a-2", "c-0", "c-1", "solo-150", "b-0", "b-1", "b-2", "solo-300",
    ];
    let n = arrivals.len();
    for rotation in 0..n {
        for reversed in [false, true] {
            let mut queue = arrivals.clone();
            queue.rotate_left(rotation);
            if reversed {
                queue.reverse();
            }
            queue.sort_by(|x, y| {
                if f.less(x, y) {
                    Ordering::Less
                } else if f.less(y, x) {
                    Ordering::Greater
                } else {
                    Ordering::Equal
                }
            });
            let order: Vec<&str> = queue.iter().map(|q| q.pod_info.name()).collect();
            assert_eq!(order, want, "rotation {rotation}, reversed {reversed}");
        }
    }
}

// ---- PreFilter ----

#[tokio::test]
async fn pre_filter_rejects_a_pod_whose_group_does_not_exist() {
    let f = Fixture::new(CoschedulingArgs::default(), &[]);
    let (state, status) = f.pre_filter(&member("p", "pg"), &Snapshot::default()).await;
    assert_eq!(
        status,
        Status::unresolvable("pod group default/pg not found")
    );
    assert!(state.read::<RetryAfterBackoff>().is_none());
}

#[tokio::test]
async fn pods_without_a_group_pass_every_point() {
    let f = Fixture::new(CoschedulingArgs::default(), &[]);
    let solo = pod("solo", None, "1");
    let snap = snapshot(vec![node("n1", "4")], vec![]);
    let (mut state, status) = f.pre_filter(&solo, &snap).await;
    assert!(status.is_success(), "{status}");
    let (status, timeout) = f.plugin.permit(&mut state, &info(&solo), "n1").await;
    assert_eq!((status, timeout), (Status::success(), Duration::ZERO));
}

#[tokio::test]
async fn pre_filter_counts_pending_assigned_and_waiting_members() {
    struct Case {
        name: &'static str,
        /// Recorded at PreEnqueue.
        pending: Vec<Pod>,
        /// In the snapshot, on n1.
        assigned: Vec<Pod>,
        /// Held at Permit on n1 (and assumed there).
        waiting: Vec<Pod>,
        /// `None`: success; else the current pods number in the rejection.
        want_count: Option<i64>,
    }
    let other_namespace = {
        let mut p = member("elsewhere", "pg");
        p.metadata.namespace = Some("other".into());
        p
    };
    let cases = [
        Case {
            name: "only the pod itself",
            pending: vec![],
            assigned: vec![],
            waiting: vec![],
            want_count: Some(1),
        },
        Case {
            name: "the pod recorded at PreEnqueue counts once",
            pending: vec![member("p", "pg"), member("p2", "pg")],
            assigned: vec![],
            waiting: vec![],
            want_count: Some(2),
        },
        Case {
            name: "pending siblings reach minMember",
            pending: vec![member("p", "pg"), member("p2", "pg"), member("p3", "pg")],
            assigned: vec![],
            waiting: vec![],
            want_count: None,
        },
        Case {
            name: "assigned members count, terminal ones do not",
            pending: vec![],
            assigned: vec![
                with_phase(member("running", "pg"), "Running"),
                with_phase(member("done", "pg"), "Succeeded"),
                with_phase(member("crashed", "pg"), "Failed"),
            ],
            waiting: vec![],
            want_count: Some(2),
        },
        Case {
            name: "pending + assigned + this pod",
            pending: vec![member("p2", "pg")],
            assigned: vec![member("bound", "pg")],
            waiting: vec![],
            want_count: None,
        },
        Case {
            name: "a member waiting at Permit (also assumed) counts once",
            pending: vec![member("held", "pg")],
            assigned: vec![],
            waiting: vec![member("held", "pg")],
            want_count: Some(2),
        },
        Case {
            name: "waiting + pending + this pod",
            pending: vec![member("p2", "pg")],
            assigned: vec![],
            waiting: vec![member("held", "pg")],
            want_count: None,
        },
        Case {
            name: "pods of another group or namespace do not count",
            pending: vec![member("q", "other"), other_namespace],
            assigned: vec![member("q2", "other")],
            waiting: vec![],
            want_count: Some(1),
        },
    ];
    for case in cases {
        let f = Fixture::new(
            CoschedulingArgs::default(),
            &[group("pg", 3, 100), group("other", 1, 100)],
        );
        let pending: Vec<&Pod> = case.pending.iter().collect();
        f.enqueue(&pending);
        let mut on_n1: Vec<Pod> = case
            .assigned
            .iter()
            .map(|p| on_node(p.clone(), "n1"))
            .collect();
        for p in &case.waiting {
            f.hold(p, "n1");
            on_n1.push(on_node(p.clone(), "n1"));
        }
        let snap = snapshot(vec![node("n1", "32")], on_n1);
        let (_, status) = f.pre_filter(&member("p", "pg"), &snap).await;
        let want = match case.want_count {
            None => Status::success(),
            Some(n) => Status::unresolvable(format!(
                "pre-filter pod p cannot find enough sibling pods, current pods number: {n}, minMember of group: 3"
            )),
        };
        assert_eq!(status, want, "case {}", case.name);
    }
}

#[tokio::test]
async fn pre_filter_checks_min_resources_against_free_capacity() {
    let gpu = "nvidia.com/gpu";
    let with_min = |resources: &[(&str, &str)]| {
        let mut g = group("pg", 1, 100);
        g.spec.min_resources = Some(quantities(resources));
        g
    };
    // n1: 4 cpu free. n2: 4 cpu, 2 taken by a pod of no group and 1 by a member of
    // the group, which scheduler-plugins does not count as used (it holds part of
    // minResources already): 6 cpu free for the group.
    let nodes = || vec![node("n1", "4"), node("n2", "4")];
    let pods = || {
        vec![
            on_node(pod("stranger", None, "2"), "n2"),
            on_node(member("sibling", "pg"), "n2"),
        ]
    };
    let cases: [(&str, PodGroup, Option<&str>); 5] = [
        ("fits exactly", with_min(&[("cpu", "6")]), None),
        ("no minResources", group("pg", 1, 100), None),
        ("empty minResources", with_min(&[]), None),
        (
            "half a cpu short",
            with_min(&[("cpu", "6500m")]),
            Some("cpu"),
        ),
        (
            "an extended resource no node has",
            with_min(&[("cpu", "1"), (gpu, "1")]),
            Some(gpu),
        ),
    ];
    for (name, pg, short) in cases {
        let f = Fixture::new(CoschedulingArgs::default(), &[pg]);
        let snap = snapshot(nodes(), pods());
        let (_, status) = f.pre_filter(&member("p", "pg"), &snap).await;
        let Some(short) = short else {
            assert!(status.is_success(), "case {name}: {status}");
            continue;
        };
        let message = status.message();
        assert_eq!(
            status.code(),
            Code::UnschedulableAndUnresolvable,
            "case {name}: {message}"
        );
        assert!(
            message.contains("default/pg") && message.contains(&format!("insufficient {short}")),
            "case {name}: names the group and the resource: {message}"
        );
        let fitting = ["cpu", gpu].into_iter().filter(|r| *r != short);
        for r in fitting {
            assert!(!message.contains(r), "case {name}: {r} fits: {message}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn group_in_backoff_is_rejected_at_pre_filter_and_left_alone_by_post_filter() {
    let f = Fixture::new(backoff_args(10), &[group("pg", 2, 100)]);
    let (p1, p2, p3) = (member("p1", "pg"), member("p2", "pg"), member("p3", "pg"));
    f.enqueue(&[&p1, &p2, &p3]);
    let snap = snapshot(vec![node("n1", "4")], vec![on_node(p1.clone(), "n1")]);
    f.hold(&p1, "n1");
    // p2 fits nowhere: the group is rejected and backs off.
    let taint = Status::unresolvable(UNTOLERATED_TAINT);
    let status = f.fail(&p2, &snap, &filtered(&["n1"], &taint)).await;
    assert_eq!(status.code(), Code::Unschedulable);

    let snap = snapshot(vec![node("n1", "4")], vec![]);
    let (state, status) = f.pre_filter(&p3, &snap).await;
    assert_eq!(
        status,
        Status::unresolvable("podGroup default/pg failed recently, backing off")
    );
    assert!(
        state.read::<RetryAfterBackoff>().is_some(),
        "the backoff ends with time: the pod must be retried after its own backoff"
    );

    // A member that reached Permit meanwhile is not touched by the PostFilter of a
    // pod PreFilter rejected, and that PostFilter does not restart the backoff.
    let held = f.hold(&p2, "n1");
    let status = f
        .post_filter(&state, &p3, &snap, &NodeToStatus::default())
        .await;
    assert_eq!(status.code(), Code::Unschedulable);
    assert_eq!(verdict(&held), None, "the waiting member keeps waiting");

    tokio::time::advance(Duration::from_secs(10)).await;
    let (state, status) = f.pre_filter(&p3, &snap).await;
    assert!(status.is_success(), "backoff over after 10s: {status}");
    assert!(state.read::<RetryAfterBackoff>().is_none());
}

// ---- Permit ----

#[tokio::test]
async fn permit_below_quorum_waits_and_activates_queued_siblings() {
    struct Case {
        name: &'static str,
        schedule_timeout_seconds: Option<i32>,
        permit_waiting_time_seconds: i64,
        want_timeout: Duration,
    }
    let cases = [
        Case {
            name: "the PodGroup's scheduleTimeoutSeconds",
            schedule_timeout_seconds: Some(30),
            permit_waiting_time_seconds: 45,
            want_timeout: Duration::from_secs(30),
        },
        Case {
            name: "else the args' permitWaitingTimeSeconds",
            schedule_timeout_seconds: None,
            permit_waiting_time_seconds: 45,
            want_timeout: Duration::from_secs(45),
        },
    ];
    for case in cases {
        let mut pg = group("pg", 5, 100);
        pg.spec.schedule_timeout_seconds = case.schedule_timeout_seconds;
        let args = CoschedulingArgs {
            permit_waiting_time_seconds: case.permit_waiting_time_seconds,
            ..CoschedulingArgs::default()
        };
        let f = Fixture::new(args, &[pg]);
        let [bound, this, queued_1, queued_2, held] =
            ["bound", "this", "queued-1", "queued-2", "held"].map(|n| member(n, "pg"));
        f.enqueue(&[&bound, &this, &queued_1, &queued_2, &held]);
        f.hold(&held, "n1");
        let snap = snapshot(
            vec![node("n1", "32")],
            vec![on_node(bound.clone(), "n1"), on_node(held.clone(), "n1")],
        );
        // bound + held + this = 3 < 5.
        let (state, status, timeout) = f.permit(&this, &snap, "n1").await;
        assert_eq!(status.code(), Code::Wait, "case {}", case.name);
        assert_eq!(timeout, case.want_timeout, "case {}", case.name);
        let activated = state
            .read::<PodsToActivate>()
            .map(|a| a.0.clone())
            .unwrap_or_default();
        assert_eq!(
            activated,
            BTreeSet::from([key(&queued_1), key(&queued_2)]),
            "case {}: the queued siblings, not this pod nor assumed ones",
            case.name
        );
    }
}

#[tokio::test]
async fn permit_at_quorum_allows_the_waiting_siblings() {
    let f = Fixture::new(
        CoschedulingArgs::default(),
        &[group("pg", 3, 100), group("other", 2, 100)],
    );
    let [bound, held, this] = ["bound", "held", "this"].map(|n| member(n, "pg"));
    let stranger = member("stranger", "other");
    f.enqueue(&[&bound, &held, &this, &stranger]);
    let held_at_permit = f.hold(&held, "n1");
    let stranger_at_permit = f.hold(&stranger, "n1");
    let snap = snapshot(
        vec![node("n1", "32")],
        [&bound, &held, &stranger]
            .map(|p| on_node(p.clone(), "n1"))
            .to_vec(),
    );
    let (state, status, timeout) = f.permit(&this, &snap, "n1").await;
    assert_eq!((status, timeout), (Status::success(), Duration::ZERO));
    assert!(state.read::<PodsToActivate>().is_none());
    assert_eq!(verdict(&held_at_permit), Some(Status::success()));
    assert_eq!(
        verdict(&stranger_at_permit),
        None,
        "another group's member keeps waiting"
    );
}

// ---- PostFilter ----

const OPTIMISTIC_REJECTION: &str = "optimistic rejection in PostFilter";

#[tokio::test(start_paused = true)]
async fn post_filter_rejects_the_waiting_members_of_its_own_group() {
    for backoff in [0, 10] {
        // `older` is ahead of `pg` in the queue: nothing is reclaimed from it.
        let f = Fixture::new(
            backoff_args(backoff),
            &[group("pg", 3, 100), group("older", 2, 50)],
        );
        let [held_1, held_2, failing, next] =
            ["held-1", "held-2", "failing", "next"].map(|n| member(n, "pg"));
        let stranger = member("stranger", "older");
        f.enqueue(&[&held_1, &held_2, &failing, &next]);
        let waiting = [f.hold(&held_1, "n1"), f.hold(&held_2, "n2")];
        let stranger_at_permit = f.hold(&stranger, "n1");
        // n1 (2 cpu) and n2 (1 cpu) are full.
        let snap = snapshot(
            vec![node("n1", "2"), node("n2", "1")],
            vec![
                on_node(held_1.clone(), "n1"),
                on_node(stranger.clone(), "n1"),
                on_node(held_2.clone(), "n2"),
            ],
        );
        let status = f
            .fail(
                &failing,
                &snap,
                &filtered(&["n1", "n2"], &Status::unschedulable(INSUFFICIENT_CPU)),
            )
            .await;
        assert_eq!(
            status,
            Status::unschedulable(
                "PodGroup default/pg gets rejected due to Pod failing is unschedulable even after PostFilter"
            ),
            "backoff {backoff}"
        );
        for w in &waiting {
            assert_eq!(
                verdict(w),
                rejected_with(OPTIMISTIC_REJECTION),
                "backoff {backoff}: {}",
                w.pod().name()
            );
        }
        assert_eq!(verdict(&stranger_at_permit), None, "backoff {backoff}");

        let empty = snapshot(vec![node("n1", "2"), node("n2", "1")], vec![]);
        let (_, status) = f.pre_filter(&next, &empty).await;
        if backoff == 0 {
            assert!(status.is_success(), "no backoff configured: {status}");
        } else {
            assert_eq!(
                status.code(),
                Code::UnschedulableAndUnresolvable,
                "the group backs off: {status}"
            );
            tokio::time::advance(Duration::from_secs(10)).await;
            let (_, status) = f.pre_filter(&next, &empty).await;
            assert!(status.is_success(), "backoff over: {status}");
        }
    }
}

#[tokio::test]
async fn post_filter_leaves_a_group_already_satisfied_by_bound_members() {
    let f = Fixture::new(backoff_args(10), &[group("pg", 2, 100)]);
    let [bound_1, bound_2, extra] = ["bound-1", "bound-2", "extra"].map(|n| member(n, "pg"));
    f.enqueue(&[&extra]);
    let snap = snapshot(
        vec![node("n1", "2")],
        vec![
            with_phase(on_node(bound_1, "n1"), "Running"),
            with_phase(on_node(bound_2, "n1"), "Running"),
        ],
    );
    let status = f
        .fail(
            &extra,
            &snap,
            &filtered(&["n1"], &Status::unschedulable(INSUFFICIENT_CPU)),
        )
        .await;
    assert_eq!(status.code(), Code::Unschedulable);
    assert!(
        !status.message().contains("gets rejected"),
        "the group is not rejected: {status}"
    );
    let (_, status) = f.pre_filter(&extra, &snap).await;
    assert!(status.is_success(), "no backoff started: {status}");
}

// ---- Groups that arrive interleaved ----

const RELEASED_FOR_OLD: &str = "rejected to release room for the older pod group default/own";

struct ReclaimCase {
    name: &'static str,
    /// The other group's priority and creation time; `own` is priority 0, created
    /// at 100.
    other: (i32, i64),
    /// minMember of `own`.
    own_min_member: i32,
    /// How n1 rejected the failing member.
    n1_status: Status,
    /// The failing member's cpu request.
    failing_cpu: &'static str,
    reclaims: bool,
}

/// n1 (4 cpu) is full: `own-held` (2 cpu) of group `own` and `other-held` (2 cpu) of
/// group `other` wait there at Permit; n2 (1 cpu) has room for neither. `own-failing`
/// was rejected by every node.
async fn run_reclaim_case(case: ReclaimCase) {
    let (other_priority, other_created) = case.other;
    let other = group("other", 2, other_created);
    let own = group("own", case.own_min_member, 100);
    let f = Fixture::new(backoff_args(10), &[own, other]);
    let own_held = pod("own-held", Some("own"), "2");
    let own_failing = pod("own-failing", Some("own"), case.failing_cpu);
    let own_rest: Vec<Pod> = (0..case.own_min_member - 2)
        .map(|i| pod(&format!("own-pending-{i}"), Some("own"), case.failing_cpu))
        .collect();
    let other_held = with_priority(pod("other-held", Some("other"), "2"), other_priority);
    let other_next = with_priority(pod("other-next", Some("other"), "2"), other_priority);
    let mut queued = vec![&own_held, &own_failing, &other_held, &other_next];
    queued.extend(own_rest.iter());
    f.enqueue(&queued);
    let own_at_permit = f.hold(&own_held, "n1");
    let other_at_permit = f.hold(&other_held, "n1");
    let snap = snapshot(
        vec![node("n1", "4"), node("n2", "1")],
        vec![
            on_node(own_held.clone(), "n1"),
            on_node(other_held.clone(), "n1"),
        ],
    );
    let mut statuses = filtered(&["n1"], &case.n1_status);
    statuses
        .statuses
        .insert("n2".into(), Status::unschedulable(INSUFFICIENT_CPU));
    let status = f.fail(&own_failing, &snap, &statuses).await;
    let name = case.name;
    assert_eq!(status.code(), Code::Unschedulable, "case {name}: {status}");
    let empty = snapshot(vec![node("n1", "4"), node("n2", "1")], vec![]);
    let (_, other_pre_filter) = f.pre_filter(&other_next, &empty).await;
    if case.reclaims {
        assert!(
            status.message().contains("default/other"),
            "case {name}: the status names the younger group: {status}"
        );
        assert_eq!(
            verdict(&other_at_permit),
            rejected_with(RELEASED_FOR_OLD),
            "case {name}: the younger group releases its room"
        );
        assert_eq!(
            verdict(&own_at_permit),
            None,
            "case {name}: the older group keeps its room"
        );
        assert_eq!(
            other_pre_filter.code(),
            Code::UnschedulableAndUnresolvable,
            "case {name}: the younger group backs off: {other_pre_filter}"
        );
    } else {
        assert_eq!(
            status,
            Status::unschedulable(
                "PodGroup default/own gets rejected due to Pod own-failing is unschedulable even after PostFilter"
            ),
            "case {name}"
        );
        assert_eq!(
            verdict(&own_at_permit),
            rejected_with(OPTIMISTIC_REJECTION),
            "case {name}: the failing group releases its own room"
        );
        assert_eq!(
            verdict(&other_at_permit),
            None,
            "case {name}: the other group keeps its room"
        );
        assert!(
            other_pre_filter.is_success(),
            "case {name}: the other group is not backed off: {other_pre_filter}"
        );
    }
}

#[tokio::test]
async fn failing_member_of_an_older_group_reclaims_room_from_a_younger_group() {
    let cases = [
        ReclaimCase {
            name: "same priority, the other group created later",
            other: (0, 200),
            own_min_member: 2,
            n1_status: Status::unschedulable(INSUFFICIENT_CPU),
            failing_cpu: "2",
            reclaims: true,
        },
        ReclaimCase {
            name: "lower priority, though created earlier",
            other: (-10, 50),
            own_min_member: 2,
            n1_status: Status::unschedulable(INSUFFICIENT_CPU),
            failing_cpu: "2",
            reclaims: true,
        },
    ];
    for case in cases {
        run_reclaim_case(case).await;
    }
}

#[tokio::test]
async fn nothing_is_reclaimed_from_an_older_group() {
    let cases = [
        ReclaimCase {
            name: "same priority, the other group created earlier",
            other: (0, 50),
            own_min_member: 2,
            n1_status: Status::unschedulable(INSUFFICIENT_CPU),
            failing_cpu: "2",
            reclaims: false,
        },
        ReclaimCase {
            name: "higher priority, though created later",
            other: (10, 200),
            own_min_member: 2,
            n1_status: Status::unschedulable(INSUFFICIENT_CPU),
            failing_cpu: "2",
            reclaims: false,
        },
    ];
    for case in cases {
        run_reclaim_case(case).await;
    }
}

#[tokio::test]
async fn nothing_is_reclaimed_when_the_room_would_not_help() {
    let cases = [
        ReclaimCase {
            name: "the node rejected the member for more than resources",
            other: (0, 200),
            own_min_member: 2,
            n1_status: Status::unresolvable(UNTOLERATED_TAINT),
            failing_cpu: "2",
            reclaims: false,
        },
        ReclaimCase {
            name: "the released room is too small for the member",
            other: (0, 200),
            own_min_member: 2,
            n1_status: Status::unschedulable(INSUFFICIENT_CPU),
            failing_cpu: "3",
            reclaims: false,
        },
    ];
    for case in cases {
        run_reclaim_case(case).await;
    }
}

#[tokio::test]
async fn nothing_is_reclaimed_when_the_rest_of_the_group_cannot_fit() {
    // minMember 3: own-held is placed, so own-failing and one more member (2 cpu
    // each) are missing. Releasing other-held frees 2 cpu on n1, n2 has 1: 3 cpu
    // free in the cluster, less than the 4 the missing members need.
    run_reclaim_case(ReclaimCase {
        name: "two members missing, room for one",
        other: (0, 200),
        own_min_member: 3,
        n1_status: Status::unschedulable(INSUFFICIENT_CPU),
        failing_cpu: "2",
        reclaims: false,
    })
    .await;
}

/// Coscheduling's PostFilter repeats no Filter: a runner that refuses every call.
struct NoFilters;

impl crate::framework::FilterRunner for NoFilters {
    fn filter_with_nominated_pods(
        &self,
        _: &CycleState,
        _: &PodInfo,
        _: &crate::cluster::NodeInfo,
    ) -> Status {
        Status::error("Coscheduling's PostFilter does not filter")
    }

    fn pre_filter_add_pod(
        &self,
        _: &mut CycleState,
        _: &PodInfo,
        _: &PodInfo,
        _: &crate::cluster::NodeInfo,
    ) -> Status {
        Status::error("Coscheduling's PostFilter does not call AddPod")
    }

    fn pre_filter_remove_pod(
        &self,
        _: &mut CycleState,
        _: &PodInfo,
        _: &PodInfo,
        _: &crate::cluster::NodeInfo,
    ) -> Status {
        Status::error("Coscheduling's PostFilter does not call RemovePod")
    }
}

// ---- The pod-group cycle ----

#[test]
fn placement_feasible_judges_only_coscheduling_groups_by_min_member() {
    let f = Fixture::new(CoschedulingArgs::default(), &[group("pg", 3, 100)]);
    let key = GroupKey::coscheduling(NS, "pg");
    let core = crate::cluster::core_pod_group(&group("pg", 3, 100));
    /// (remaining, scheduled) -> (code, message)
    type Row = ((usize, usize), (Code, &'static str));
    let rows: [Row; 5] = [
        (
            (2, 0),
            (
                Code::Unschedulable,
                "pod group default/pg cannot reach minMember (3): 0 scheduled, 2 remaining",
            ),
        ),
        (
            (3, 0),
            (
                Code::Wait,
                "pod group default/pg has not reached minMember (3) yet: 0 scheduled, 3 remaining",
            ),
        ),
        (
            (1, 1),
            (
                Code::Unschedulable,
                "pod group default/pg cannot reach minMember (3): 1 scheduled, 1 remaining",
            ),
        ),
        ((0, 3), (Code::Success, "")),
        ((5, 4), (Code::Success, "")),
    ];
    for ((remaining, scheduled), (code, message)) in rows {
        let progress = PlacementProgress {
            remaining,
            scheduled,
        };
        let got = f.plugin.placement_feasible(&key, &core, progress);
        assert_eq!(
            (got.code(), got.message().as_str()),
            (code, message),
            "{remaining} remaining, {scheduled} scheduled"
        );
    }
    // A Workload API PodGroup is GangScheduling's to judge.
    let workload = GroupKey::new(NS, "pg");
    let progress = PlacementProgress {
        remaining: 0,
        scheduled: 0,
    };
    assert!(
        f.plugin
            .placement_feasible(&workload, &core, progress)
            .is_success()
    );
}

#[tokio::test(start_paused = true)]
async fn unreserve_in_a_pod_group_cycle_releases_no_sibling() {
    let f = Fixture::new(backoff_args(10), &[group("pg", 2, 100)]);
    let (p1, p2) = (member("p1", "pg"), member("p2", "pg"));
    f.enqueue(&[&p1, &p2]);
    let held = f.hold(&p1, "n1");
    // The cycle undoes a tentative placement: nothing is released, no backoff starts.
    let mut state = CycleState::new();
    state.write(PodGroupCycle);
    f.plugin
        .unreserve(&mut state, &info(&on_node(p2.clone(), "n1")), "n1")
        .await;
    assert_eq!(verdict(&held), None, "the waiting member keeps waiting");
    let snap = snapshot(vec![node("n1", "4")], vec![]);
    let (_, status) = f.pre_filter(&p2, &snap).await;
    assert!(status.is_success(), "no backoff: {status}");
    // A real Unreserve (a binding cycle's) releases the group and backs it off.
    let mut state = CycleState::new();
    f.plugin
        .unreserve(&mut state, &info(&on_node(p2.clone(), "n1")), "n1")
        .await;
    assert!(verdict(&held).is_some_and(|s| !s.is_success()));
    let (_, status) = f.pre_filter(&p2, &snap).await;
    assert_eq!(
        status,
        Status::unresolvable("podGroup default/pg failed recently, backing off")
    );
}

#[test]
fn pre_enqueue_holds_a_group_of_the_core_until_min_member_members_exist() {
    let states = Arc::new(PodGroupStates::new());
    let handle = Handle::builder().pod_group_states(states.clone()).build();
    let plugin = Coscheduling::build(CoschedulingArgs::default(), &handle).expect("builds");
    let (p1, p2, p3) = (member("p1", "pg"), member("p2", "pg"), member("p3", "pg"));
    // Without its PodGroup in the core's states, a member is tried alone: admitted.
    states.add_pod(&Arc::new(p1.clone()));
    assert!(plugin.pre_enqueue(&info(&p1)).is_success());
    states.apply_group_as(
        GroupKey::coscheduling(NS, "pg"),
        crate::cluster::core_pod_group(&group("pg", 3, 100)),
    );
    states.add_pod(&Arc::new(p2.clone()));
    assert_eq!(
        plugin.pre_enqueue(&info(&p2)),
        Status::unresolvable(
            "waiting for minMember pods of pod group default/pg to appear in scheduling queue: 2 of 3 exist"
        )
    );
    // A bound member counts as well as a pending one.
    states.add_pod(&Arc::new(on_node(p3.clone(), "n1")));
    assert!(plugin.pre_enqueue(&info(&p2)).is_success());
}
