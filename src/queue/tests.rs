//! Scenario and table tests of the scheduling queue; expected behaviour follows upstream's
//! `scheduling_queue_test.go`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, PodSchedulingGate};
use pretty_assertions::assert_eq;

use super::*;
use crate::framework::{PreEnqueuePlugin, QueueSortPlugin, Status};
use crate::testing::make_pod;

impl SchedulingQueue {
    /// Pops a lone pod (these tests queue no pod group).
    fn pop_pod(&mut self, now: Instant) -> Option<QueuedPodInfo> {
        self.pop(now).and_then(Popped::pod)
    }
}

/// PrioritySort's order: higher priority first, then the earlier queue timestamp.
pub(super) struct TestPrioritySort;

impl Plugin for TestPrioritySort {
    fn name(&self) -> &str {
        "TestPrioritySort"
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for TestPrioritySort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority(), b.pod_info.priority());
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

/// Gates pods carrying `spec.schedulingGates`, as SchedulingGates does.
struct TestGates;

impl Plugin for TestGates {
    fn name(&self) -> &str {
        GATES
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for TestGates {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let gated = pod
            .pod
            .spec
            .as_ref()
            .and_then(|spec| spec.scheduling_gates.as_ref())
            .is_some_and(|gates| !gates.is_empty());
        if gated {
            Status::unresolvable("waiting for scheduling gates")
        } else {
            Status::success()
        }
    }
}

/// A PreEnqueue plugin that gates every pod until the test opens it.
struct TestSwitch(AtomicBool);

impl Plugin for TestSwitch {
    fn name(&self) -> &str {
        SWITCH
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for TestSwitch {
    fn pre_enqueue(&self, _: &PodInfo) -> Status {
        if self.0.load(Ordering::SeqCst) {
            Status::success()
        } else {
            Status::pending("switch is closed")
        }
    }
}

const GATES: &str = "TestGates";
const SWITCH: &str = "TestSwitch";
/// Registered node additions and assigned-pod deletions, as NodeResourcesFit.
const FIT: &str = "Fit";
/// Registered node taint updates, as TaintToleration.
const TAINTS: &str = "Taints";
/// Registered nothing: retried on any event.
const ANY: &str = "Any";
/// Registered an empty list: retried only by the leftover flush.
const NEVER: &str = "Never";

const NODE_ADD: ClusterEvent = ClusterEvent::new(EventResource::Node, ActionType::ADD);
const NODE_TAINT: ClusterEvent =
    ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_TAINT);
const PV_ADD: ClusterEvent = ClusterEvent::new(EventResource::PersistentVolume, ActionType::ADD);
const PODGROUP_ADD: ClusterEvent = ClusterEvent::new(EventResource::PodGroup, ActionType::ADD);

fn plugin_events() -> HashMap<String, Option<Vec<ClusterEvent>>> {
    HashMap::from([
        (
            GATES.to_string(),
            Some(vec![ClusterEvent::new(
                EventResource::Pod,
                ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
            )]),
        ),
        (SWITCH.to_string(), Some(vec![PODGROUP_ADD])),
        (
            FIT.to_string(),
            Some(vec![
                NODE_ADD,
                ClusterEvent::new(EventResource::AssignedPod, ActionType::DELETE),
            ]),
        ),
        (TAINTS.to_string(), Some(vec![NODE_TAINT])),
        (ANY.to_string(), None),
        (NEVER.to_string(), Some(Vec::new())),
    ])
}

fn config() -> QueueConfig {
    QueueConfig::new(Arc::new(TestPrioritySort))
        .with_pre_enqueue(vec![Arc::new(TestGates)])
        .with_plugin_events(plugin_events())
}

fn queue() -> SchedulingQueue {
    SchedulingQueue::new(config())
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

/// A pod in `default` whose uid is `uid-<name>`.
fn pod(name: &str, priority: i32) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(&format!("uid-{name}"))
        .priority(priority)
        .obj()
}

fn gated(mut pod: Pod) -> Pod {
    if let Some(spec) = pod.spec.as_mut() {
        spec.scheduling_gates = Some(vec![PodSchedulingGate {
            name: "example.com/quota".to_string(),
        }]);
    }
    pod
}

fn labelled(mut pod: Pod, key: &str, value: &str) -> Pod {
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_string(), value.to_string());
    pod
}

fn info(pod: Pod) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(pod).expect("test pods are valid"))
}

fn name(queued: &QueuedPodInfo) -> &str {
    queued
        .pod_info
        .pod
        .metadata
        .name
        .as_deref()
        .unwrap_or_default()
}

/// Pops the head and fails it with the given rejectors, as the scheduler's failure
/// handler does; `during` runs between pop and requeue (events, updates, deletes).
fn attempt(
    q: &mut SchedulingQueue,
    now: Instant,
    unschedulable: &[&str],
    pending: &[&str],
    during: impl FnOnce(&mut SchedulingQueue),
) -> Option<Placement> {
    let mut queued = q.pop_pod(now).expect("activeQ holds a pod");
    let cycle = q.scheduling_cycle();
    during(q);
    queued.unschedulable_plugins = unschedulable.iter().map(|p| p.to_string()).collect();
    queued.pending_plugins = pending.iter().map(|p| p.to_string()).collect();
    q.add_unschedulable_if_not_present(queued, cycle, now)
}

fn pop_names(q: &mut SchedulingQueue, now: Instant) -> Vec<String> {
    std::iter::from_fn(|| q.pop_pod(now))
        .map(|queued| name(&queued).to_string())
        .collect()
}

#[test]
fn pop_order_follows_queue_sort() {
    struct Case {
        name: &'static str,
        /// (pod, priority, added at t0 + ms)
        pods: &'static [(&'static str, i32, u64)],
        want: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "higher priority first",
            pods: &[("low", 0, 0), ("high", 10, 1), ("mid", 5, 2)],
            want: &["high", "mid", "low"],
        },
        Case {
            name: "equal priority: earlier timestamp first",
            pods: &[("third", 1, 20), ("first", 1, 0), ("second", 1, 10)],
            want: &["first", "second", "third"],
        },
        Case {
            name: "equal priority and timestamp: arrival order",
            pods: &[("a", 1, 0), ("b", 1, 0), ("c", 1, 0), ("d", 1, 0)],
            want: &["a", "b", "c", "d"],
        },
        Case {
            name: "priority beats timestamp",
            pods: &[("old", -5, 0), ("new", 0, 100)],
            want: &["new", "old"],
        },
    ];
    for case in cases {
        let t0 = Instant::now();
        let mut q = queue();
        for &(p, priority, at) in case.pods {
            assert_eq!(
                q.add(info(pod(p, priority)), t0 + ms(at)),
                Placement::Active
            );
        }
        assert_eq!(pop_names(&mut q, t0 + secs(1)), case.want, "{}", case.name);
        assert!(q.is_empty(), "{}", case.name);
    }
}

#[test]
fn heap_stays_ordered_through_updates_and_deletes() {
    let t0 = Instant::now();
    let mut q = queue();
    // A fixed pseudo-random sequence of priorities, with many duplicates.
    let mut seed = 7u32;
    let mut priorities = BTreeMap::new();
    for i in 0..200 {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let priority = (seed >> 16) as i32 % 50;
        let p = format!("p{i:03}");
        q.add(info(pod(&p, priority)), t0);
        priorities.insert(p, priority);
    }
    for i in (0..200).step_by(7) {
        let p = format!("p{i:03}");
        assert!(q.delete(info(pod(&p, 0)).key()));
        priorities.remove(&p);
    }
    for i in (3..200).step_by(11) {
        let p = format!("p{i:03}");
        if let Some(priority) = priorities.get_mut(&p) {
            let old = info(pod(&p, *priority));
            *priority = 100 - *priority;
            assert_eq!(
                q.update(&old, info(pod(&p, *priority)), t0),
                Placement::Active
            );
        }
    }
    let mut want: Vec<(i32, String)> = priorities.into_iter().map(|(p, pr)| (-pr, p)).collect();
    // All pods share one timestamp, so ties leave in arrival order, which is name order.
    want.sort();
    let want: Vec<String> = want.into_iter().map(|(_, p)| p).collect();
    assert_eq!(pop_names(&mut q, t0), want);
}

#[test]
fn pop_counts_attempts_and_scheduling_cycles() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add(info(pod("a", 0)), t0);
    assert_eq!(q.scheduling_cycle(), 0);

    let first = q.pop_pod(t0 + secs(1)).expect("a is active");
    assert_eq!(
        (first.attempts, q.scheduling_cycle()),
        (1, 1),
        "first attempt"
    );
    assert_eq!(first.initial_attempt_timestamp, Some(t0 + secs(1)));
    assert_eq!(q.placement(first.pod_info.key()), Some(Placement::InFlight));
    assert!(q.pop_pod(t0 + secs(1)).is_none(), "nothing else is active");

    // An Error (no rejectors) goes to backoffQ for 1s.
    let key = first.pod_info.key().to_string();
    assert_eq!(
        q.add_unschedulable_if_not_present(first, 1, t0 + secs(2)),
        Some(Placement::Backoff)
    );
    assert_eq!(q.flush_backoff_completed(t0 + secs(3)), 1);
    let second = q.pop_pod(t0 + secs(4)).expect("a is active again");
    assert_eq!((second.attempts, q.scheduling_cycle()), (2, 2));
    assert_eq!(
        second.initial_attempt_timestamp,
        Some(t0 + secs(1)),
        "the first attempt's time is kept"
    );
    q.done(&key);
    assert_eq!(q.placement(&key), None);
}

#[test]
fn backoff_doubles_up_to_max() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add(info(pod("a", 0)), t0);
    let mut now = t0;
    for (attempt_no, want) in [1, 2, 4, 8, 10, 10].into_iter().enumerate() {
        let placement = attempt(&mut q, now, &[FIT], &[], |q| {
            // An event during the attempt sends the pod to backoffQ.
            q.move_all_to_active_or_backoff(&NODE_ADD, now);
        });
        assert_eq!(
            placement,
            Some(Placement::Backoff),
            "attempt {}",
            attempt_no + 1
        );
        let expiry = now + secs(want);
        assert_eq!(
            q.next_backoff_expiry(),
            Some(expiry),
            "attempt {}",
            attempt_no + 1
        );
        assert_eq!(q.flush_backoff_completed(expiry - ms(1)), 0);
        assert_eq!(q.flush_backoff_completed(expiry), 1);
        assert_eq!(q.next_backoff_expiry(), None);
        now = expiry;
    }
}

#[test]
fn backoff_duration_table() {
    struct Case {
        name: &'static str,
        initial: Duration,
        max: Duration,
        attempts: u32,
        want: Duration,
    }
    let cases = [
        Case {
            name: "never attempted: no backoff",
            initial: secs(1),
            max: secs(10),
            attempts: 0,
            want: Duration::ZERO,
        },
        Case {
            name: "first failure: initial",
            initial: secs(1),
            max: secs(10),
            attempts: 1,
            want: secs(1),
        },
        Case {
            name: "fourth failure: 2^3 * initial",
            initial: secs(1),
            max: secs(10),
            attempts: 4,
            want: secs(8),
        },
        Case {
            name: "capped at max",
            initial: secs(1),
            max: secs(10),
            attempts: 5,
            want: secs(10),
        },
        Case {
            name: "huge attempt count does not overflow",
            initial: secs(1),
            max: secs(10),
            attempts: u32::MAX,
            want: secs(10),
        },
        Case {
            name: "initial above max is capped",
            initial: secs(30),
            max: secs(10),
            attempts: 1,
            want: secs(10),
        },
        Case {
            name: "zero initial backoff",
            initial: Duration::ZERO,
            max: secs(10),
            attempts: 3,
            want: Duration::ZERO,
        },
    ];
    for case in cases {
        let q = SchedulingQueue::new(config().with_backoff(case.initial, case.max));
        assert_eq!(
            q.backoff_duration(case.attempts),
            case.want,
            "{}",
            case.name
        );
    }
}

#[test]
fn failed_pod_placement_follows_move_request_cycle() {
    #[derive(Clone, Copy)]
    enum During {
        Nothing,
        Event,
        Update,
        Delete,
    }
    struct Case {
        name: &'static str,
        event_before_pop: bool,
        during: During,
        rejectors: &'static [&'static str],
        want: Option<Placement>,
    }
    let cases = [
        Case {
            name: "rejected, no event meanwhile: unschedulable",
            event_before_pop: false,
            during: During::Nothing,
            rejectors: &[FIT],
            want: Some(Placement::Unschedulable),
        },
        Case {
            name: "event during the attempt: backoffQ",
            event_before_pop: false,
            during: During::Event,
            rejectors: &[FIT],
            want: Some(Placement::Backoff),
        },
        Case {
            name: "event before the attempt only: unschedulable",
            event_before_pop: true,
            during: During::Nothing,
            rejectors: &[FIT],
            want: Some(Placement::Unschedulable),
        },
        Case {
            name: "no rejector plugins (an Error): backoffQ",
            event_before_pop: false,
            during: During::Nothing,
            rejectors: &[],
            want: Some(Placement::Backoff),
        },
        Case {
            name: "pod updated during the attempt: backoffQ",
            event_before_pop: false,
            during: During::Update,
            rejectors: &[FIT],
            want: Some(Placement::Backoff),
        },
        Case {
            name: "pod deleted during the attempt: not requeued",
            event_before_pop: false,
            during: During::Delete,
            rejectors: &[FIT],
            want: None,
        },
    ];
    for case in cases {
        let t0 = Instant::now();
        let mut q = queue();
        let p = pod("a", 0);
        let key = info(p.clone()).key().to_string();
        q.add(info(p.clone()), t0);
        if case.event_before_pop {
            q.move_all_to_active_or_backoff(&NODE_ADD, t0);
        }
        let got = attempt(&mut q, t0, case.rejectors, &[], |q| match case.during {
            During::Nothing => {}
            During::Event => {
                q.move_all_to_active_or_backoff(&NODE_ADD, t0);
            }
            During::Update => {
                let new = labelled(p.clone(), "app", "web");
                assert_eq!(
                    q.update(&info(p.clone()), info(new), t0),
                    Placement::InFlight
                );
            }
            During::Delete => assert!(q.delete(&key)),
        });
        assert_eq!(got, case.want, "{}", case.name);
        assert_eq!(q.placement(&key), case.want, "{}", case.name);
        assert_eq!(q.len(), usize::from(case.want.is_some()), "{}", case.name);
    }
}

#[test]
fn requeued_pod_carries_update_seen_in_flight() {
    let t0 = Instant::now();
    let mut q = queue();
    let p = pod("a", 0);
    q.add(info(p.clone()), t0);
    attempt(&mut q, t0, &[FIT], &[], |q| {
        q.update(
            &info(p.clone()),
            info(labelled(p.clone(), "app", "web")),
            t0,
        );
    });
    let requeued = q.pending_pods().next().expect("a is queued").1;
    let labels = requeued
        .pod_info
        .pod
        .metadata
        .labels
        .clone()
        .unwrap_or_default();
    assert_eq!(labels.get("app").map(String::as_str), Some("web"));
}

#[test]
fn failed_pod_already_queued_is_not_duplicated() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add(info(pod("a", 0)), t0);
    let queued = q.pop_pod(t0).expect("a is active");
    // The pod is re-added (e.g. a relist) while a stale copy is requeued.
    q.done(queued.pod_info.key());
    q.add(info(pod("a", 0)), t0);
    assert_eq!(q.add_unschedulable_if_not_present(queued, 1, t0), None);
    assert_eq!(q.pending_counts().active, 1);
    assert_eq!(q.len(), 1);
}

#[test]
fn event_moves_only_pods_whose_rejector_registered_it() {
    /// (pod, unschedulable plugins, pending plugins)
    const PODS: &[(&str, &[&str], &[&str])] = &[
        ("fit", &[FIT], &[]),
        ("taints", &[TAINTS], &[]),
        ("fit-and-taints", &[FIT, TAINTS], &[]),
        ("any", &[ANY], &[]),
        ("never", &[NEVER], &[]),
        ("pending-fit", &[], &[FIT]),
        ("unknown-plugin", &["NotInTheProfile"], &[]),
    ];
    struct Case {
        name: &'static str,
        event: ClusterEvent,
        /// Time of the event after the failures; backoff is 1s.
        after: Duration,
        moved: &'static [(&'static str, Placement)],
    }
    use Placement::{Active, Backoff};
    let cases = [
        Case {
            name: "node added, while backing off",
            event: NODE_ADD,
            after: ms(500),
            moved: &[
                ("fit", Backoff),
                ("fit-and-taints", Backoff),
                ("any", Backoff),
                ("pending-fit", Active),
                ("unknown-plugin", Backoff),
            ],
        },
        Case {
            name: "node added, backoff completed",
            event: NODE_ADD,
            after: secs(2),
            moved: &[
                ("fit", Active),
                ("fit-and-taints", Active),
                ("any", Active),
                ("pending-fit", Active),
                ("unknown-plugin", Active),
            ],
        },
        Case {
            name: "node taint changed",
            event: NODE_TAINT,
            after: ms(500),
            moved: &[
                ("taints", Backoff),
                ("fit-and-taints", Backoff),
                ("any", Backoff),
                ("unknown-plugin", Backoff),
            ],
        },
        Case {
            name: "volume added: only plugins without registered events",
            event: PV_ADD,
            after: ms(500),
            moved: &[("any", Backoff), ("unknown-plugin", Backoff)],
        },
        Case {
            name: "unschedulable timeout moves everything",
            event: ClusterEvent::UNSCHEDULABLE_TIMEOUT,
            after: ms(500),
            moved: &[
                ("fit", Backoff),
                ("taints", Backoff),
                ("fit-and-taints", Backoff),
                ("any", Backoff),
                ("never", Backoff),
                ("pending-fit", Backoff),
                ("unknown-plugin", Backoff),
            ],
        },
    ];
    for case in cases {
        let t0 = Instant::now();
        let mut q = queue();
        let mut keys = HashMap::new();
        for &(p, unschedulable, pending) in PODS {
            let pod_info = info(pod(p, 0));
            keys.insert(p, pod_info.key().to_string());
            q.add(pod_info, t0);
            let placement = attempt(&mut q, t0, unschedulable, pending, |_| {});
            assert_eq!(
                placement,
                Some(Placement::Unschedulable),
                "{}: {p}",
                case.name
            );
        }
        let moved = q.move_all_to_active_or_backoff(&case.event, t0 + case.after);
        assert_eq!(moved, case.moved.len(), "{}", case.name);
        for &(p, _, _) in PODS {
            let want = case
                .moved
                .iter()
                .find(|(m, _)| *m == p)
                .map_or(Placement::Unschedulable, |(_, placement)| *placement);
            assert_eq!(q.placement(&keys[p]), Some(want), "{}: {p}", case.name);
        }
    }
}

#[test]
fn gated_pod_stays_out_of_active_queue_until_its_gate_is_removed() {
    let t0 = Instant::now();
    let mut q = queue();
    let p = gated(pod("a", 0));
    let key = info(p.clone()).key().to_string();
    assert_eq!(q.add(info(p.clone()), t0), Placement::Gated);
    let counts = q.pending_counts();
    assert_eq!((counts.active, counts.gated), (0, 1));
    assert_eq!(
        q.gated_pods().next().and_then(|g| g.gated_by.as_deref()),
        Some(GATES)
    );
    assert!(q.pop_pod(t0).is_none(), "a gated pod is never popped");

    // Events the gate did not register leave it gated.
    assert_eq!(q.move_all_to_active_or_backoff(&NODE_ADD, t0 + secs(1)), 0);
    assert_eq!(q.placement(&key), Some(Placement::Gated));

    // An update that keeps the gate re-runs PreEnqueue and stays gated.
    let relabelled = labelled(p.clone(), "app", "web");
    assert_eq!(
        q.update(&info(p), info(relabelled.clone()), t0 + secs(2)),
        Placement::Gated
    );

    // Removing the gate admits it.
    let mut ungated = relabelled.clone();
    if let Some(spec) = ungated.spec.as_mut() {
        spec.scheduling_gates = None;
    }
    assert_eq!(
        q.update(&info(relabelled), info(ungated), t0 + secs(3)),
        Placement::Active
    );
    let popped = q.pop_pod(t0 + secs(3)).expect("a is active");
    assert_eq!(popped.gated_by, None);
    assert_eq!(popped.attempts, 1);
}

#[test]
fn gated_pod_moves_on_events_its_pre_enqueue_plugin_registered() {
    let t0 = Instant::now();
    let switch = Arc::new(TestSwitch(AtomicBool::new(false)));
    let mut q = SchedulingQueue::new(config().with_pre_enqueue(vec![switch.clone()]));
    let pod_info = info(pod("a", 0));
    let key = pod_info.key().to_string();
    assert_eq!(q.add(pod_info, t0), Placement::Gated);

    // Registered event, but the plugin still rejects.
    assert_eq!(q.move_all_to_active_or_backoff(&PODGROUP_ADD, t0), 0);
    assert_eq!(q.placement(&key), Some(Placement::Gated));

    switch.0.store(true, Ordering::SeqCst);
    // An event the plugin did not register does not re-run it.
    assert_eq!(q.move_all_to_active_or_backoff(&NODE_ADD, t0), 0);
    assert_eq!(q.placement(&key), Some(Placement::Gated));
    assert_eq!(q.move_all_to_active_or_backoff(&PODGROUP_ADD, t0), 1);
    assert_eq!(q.placement(&key), Some(Placement::Active));
}

#[test]
fn expired_backoff_passes_pre_enqueue_again() {
    let t0 = Instant::now();
    let switch = Arc::new(TestSwitch(AtomicBool::new(true)));
    let mut q = SchedulingQueue::new(config().with_pre_enqueue(vec![switch.clone()]));
    q.add(info(pod("a", 0)), t0);
    assert_eq!(
        attempt(&mut q, t0, &[], &[], |_| {}),
        Some(Placement::Backoff)
    );
    switch.0.store(false, Ordering::SeqCst);
    assert_eq!(q.flush_backoff_completed(t0 + secs(1)), 1);
    assert_eq!(q.pending_counts().gated, 1);
}

#[test]
fn unschedulable_pods_are_flushed_after_max_stay() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add(info(pod("a", 0)), t0);
    assert_eq!(
        attempt(&mut q, t0, &[NEVER], &[], |_| {}),
        Some(Placement::Unschedulable)
    );
    assert_eq!(q.unschedulable_pods().map(name).collect::<Vec<_>>(), ["a"]);
    // No event revives a pod whose rejector registered none.
    q.move_all_to_active_or_backoff(&NODE_ADD, t0 + secs(60));
    assert_eq!(q.pending_counts().unschedulable, 1);

    let due = t0 + secs(5 * 60);
    assert_eq!(q.next_unschedulable_flush(), Some(due));
    assert_eq!(q.flush_unschedulable_leftover(due - ms(1)), 0);
    assert_eq!(q.flush_unschedulable_leftover(due), 1);
    assert_eq!(q.pending_counts().active, 1, "backoff completed long ago");
    assert_eq!(q.next_unschedulable_flush(), None);
}

#[test]
fn gated_pod_still_gated_after_flush_waits_another_max_stay() {
    let t0 = Instant::now();
    let mut q = queue();
    q.add(info(gated(pod("a", 0))), t0);
    let due = t0 + secs(5 * 60);
    assert_eq!(q.next_unschedulable_flush(), Some(due));
    assert_eq!(q.flush_unschedulable_leftover(due), 0);
    assert_eq!(q.pending_counts().gated, 1);
    assert_eq!(q.next_unschedulable_flush(), Some(due + secs(5 * 60)));
}

#[test]
fn delete_removes_the_pod_wherever_it_waits() {
    struct Case {
        name: &'static str,
        setup: fn(&mut SchedulingQueue, Arc<PodInfo>, Instant),
        was: Placement,
    }
    let cases = [
        Case {
            name: "activeQ",
            setup: |q, p, now| {
                q.add(p, now);
            },
            was: Placement::Active,
        },
        Case {
            name: "backoffQ",
            setup: |q, p, now| {
                q.add(p, now);
                attempt(q, now, &[], &[], |_| {});
            },
            was: Placement::Backoff,
        },
        Case {
            name: "unschedulable",
            setup: |q, p, now| {
                q.add(p, now);
                attempt(q, now, &[FIT], &[], |_| {});
            },
            was: Placement::Unschedulable,
        },
        Case {
            name: "gated",
            setup: |q, _, now| {
                q.add(info(gated(pod("a", 0))), now);
            },
            was: Placement::Gated,
        },
    ];
    for case in cases {
        let t0 = Instant::now();
        let mut q = queue();
        let p = info(pod("a", 0));
        let key = p.key().to_string();
        q.add(info(pod("other", 0)), t0 + secs(1));
        (case.setup)(&mut q, p, t0);
        assert_eq!(q.placement(&key), Some(case.was), "{}", case.name);
        assert!(q.delete(&key), "{}", case.name);
        assert!(!q.contains(&key), "{}", case.name);
        assert_eq!(q.len(), 1, "{}: other pods stay", case.name);
        assert!(!q.delete(&key), "{}: second delete", case.name);
        assert_eq!(q.next_backoff_expiry(), None, "{}", case.name);
        assert_eq!(q.next_unschedulable_flush(), None, "{}", case.name);
    }
}

#[test]
fn update_moves_an_unschedulable_pod_only_when_it_may_now_fit() {
    struct Case {
        name: &'static str,
        change: fn(Pod) -> Pod,
        /// When the update arrives after the failure; backoff is 1s.
        after: Duration,
        want: Placement,
    }
    let cases = [
        Case {
            name: "bookkeeping only: stays",
            change: |mut p| {
                p.metadata.resource_version = Some("42".to_string());
                p
            },
            after: ms(500),
            want: Placement::Unschedulable,
        },
        Case {
            name: "label changed while backing off: backoffQ",
            change: |p| labelled(p, "app", "web"),
            after: ms(500),
            want: Placement::Backoff,
        },
        Case {
            name: "label changed after backoff: activeQ",
            change: |p| labelled(p, "app", "web"),
            after: secs(2),
            want: Placement::Active,
        },
        Case {
            name: "gate added: gated",
            change: gated,
            after: secs(2),
            want: Placement::Gated,
        },
        Case {
            name: "another status field (a condition) changed: stays",
            change: |mut p| {
                p.status.get_or_insert_default().conditions = Some(vec![Default::default()]);
                p
            },
            after: secs(2),
            want: Placement::Unschedulable,
        },
        Case {
            name: "the claim of a template made (resourceClaimStatuses): activeQ",
            change: |mut p| {
                p.status.get_or_insert_default().resource_claim_statuses =
                    Some(vec![k8s_openapi::api::core::v1::PodResourceClaimStatus {
                        name: "gpu".into(),
                        resource_claim_name: Some("a-gpu-x7k2p".into()),
                    }]);
                p
            },
            after: secs(2),
            want: Placement::Active,
        },
        Case {
            name: "the claim of extended resources made: activeQ",
            change: |mut p| {
                p.status
                    .get_or_insert_default()
                    .extended_resource_claim_status =
                    Some(k8s_openapi::api::core::v1::PodExtendedResourceClaimStatus {
                        resource_claim_name: "a-extended-resources-9vz4q".into(),
                        request_mappings: Vec::new(),
                    });
                p
            },
            after: secs(2),
            want: Placement::Active,
        },
    ];
    for case in cases {
        let t0 = Instant::now();
        let mut q = queue();
        let p = pod("a", 0);
        let key = info(p.clone()).key().to_string();
        q.add(info(p.clone()), t0);
        attempt(&mut q, t0, &[NEVER], &[], |_| {});
        let new = (case.change)(p.clone());
        let got = q.update(&info(p), info(new.clone()), t0 + case.after);
        assert_eq!(got, case.want, "{}", case.name);
        assert_eq!(q.placement(&key), Some(case.want), "{}", case.name);
        let queued = q.pending_pods().next().expect("a is queued").1;
        assert_eq!(queued.pod_info.pod.metadata, new.metadata, "{}", case.name);
    }
}

#[test]
fn update_of_backing_off_pod_keeps_its_expiry() {
    let t0 = Instant::now();
    let mut q = queue();
    let p = pod("a", 0);
    q.add(info(p.clone()), t0);
    attempt(&mut q, t0, &[], &[], |_| {});
    let expiry = q.next_backoff_expiry();
    let new = labelled(p.clone(), "app", "web");
    assert_eq!(q.update(&info(p), info(new), t0), Placement::Backoff);
    assert_eq!(q.next_backoff_expiry(), expiry);
}

#[test]
fn update_or_add_of_an_unknown_pod_adds_it() {
    let t0 = Instant::now();
    let mut q = queue();
    let p = pod("a", 0);
    assert_eq!(
        q.update(&info(p.clone()), info(p.clone()), t0),
        Placement::Active
    );
    // Adding a pod the queue holds updates it rather than duplicating it.
    assert_eq!(
        q.add(info(labelled(p, "app", "web")), t0),
        Placement::Active
    );
    assert_eq!(q.len(), 1);
}

#[test]
fn activate_moves_unschedulable_and_backing_off_pods_to_active_queue() {
    let t0 = Instant::now();
    let mut q = queue();
    let key = |p: &str| info(pod(p, 0)).key().to_string();

    q.add(info(pod("backing-off", 0)), t0);
    assert_eq!(
        attempt(&mut q, t0, &[FIT], &[], |q| {
            q.move_all_to_active_or_backoff(&NODE_ADD, t0);
        }),
        Some(Placement::Backoff)
    );
    q.add(info(pod("parked", 0)), t0);
    assert_eq!(
        attempt(&mut q, t0, &[FIT], &[], |_| {}),
        Some(Placement::Unschedulable)
    );
    q.add(info(pod("in-flight", 0)), t0);
    let flying = q.pop_pod(t0).expect("in-flight is active");
    q.add(info(pod("active", 0)), t0);
    q.add(info(gated(pod("gated", 0))), t0);

    // Still within backing-off's 1s backoff: activation does not wait it out.
    let now = t0 + ms(100);
    let names = [
        "parked",
        "backing-off",
        "active",
        "gated",
        "in-flight",
        "unknown",
    ];
    let keys: Vec<String> = names.iter().map(|p| key(p)).collect();
    assert_eq!(q.activate(keys.iter().map(String::as_str), now), 2);

    let want = [
        Some(Placement::Active),
        Some(Placement::Active),
        Some(Placement::Active),
        Some(Placement::Gated),
        Some(Placement::InFlight),
        None,
    ];
    for ((p, k), want) in names.iter().zip(&keys).zip(want) {
        assert_eq!(q.placement(k), want, "{p}");
    }
    assert_eq!(
        q.pending_counts(),
        PendingCounts {
            active: 3,
            backoff: 0,
            unschedulable: 0,
            gated: 1,
            incomplete: 0,
        }
    );
    q.done(flying.pod_info.key());
}

#[test]
fn activated_pod_passes_pre_enqueue_again() {
    let t0 = Instant::now();
    let switch = Arc::new(TestSwitch(AtomicBool::new(true)));
    let mut q = SchedulingQueue::new(config().with_pre_enqueue(vec![switch.clone()]));
    let pod_info = info(pod("a", 0));
    let key = pod_info.key().to_string();
    q.add(pod_info, t0);
    assert_eq!(
        attempt(&mut q, t0, &[FIT], &[], |_| {}),
        Some(Placement::Unschedulable)
    );
    switch.0.store(false, Ordering::SeqCst);
    q.activate([key.as_str()], t0 + secs(2));
    assert_eq!(q.placement(&key), Some(Placement::Gated));
    assert_eq!(
        q.gated_pods().next().and_then(|g| g.gated_by.as_deref()),
        Some(SWITCH)
    );
}

/// A rejection that ends with time rather than with a cluster event (Coscheduling's
/// group backoff, `RetryAfterBackoff`) reaches the queue with every rejector cleared: the
/// pod must be retried after its own backoff, not parked waiting for an event.
#[test]
fn failure_with_rejectors_cleared_is_retried_after_its_backoff() {
    let t0 = Instant::now();
    let mut q = queue();
    let pod_info = info(pod("member", 0));
    let key = pod_info.key().to_string();
    q.add(pod_info, t0);
    // First attempt: rejected by Fit, parked until a node is added.
    assert_eq!(
        attempt(&mut q, t0, &[FIT], &[], |_| {}),
        Some(Placement::Unschedulable)
    );
    assert_eq!(q.move_all_to_active_or_backoff(&NODE_ADD, t0 + secs(5)), 1);
    assert_eq!(q.placement(&key), Some(Placement::Active));

    // Second attempt: the scheduler cleared the rejectors.
    let now = t0 + secs(6);
    let mut queued = q.pop_pod(now).expect("member is active");
    let cycle = q.scheduling_cycle();
    queued.unschedulable_plugins.clear();
    queued.pending_plugins.clear();
    assert_eq!(
        q.add_unschedulable_if_not_present(queued, cycle, now),
        Some(Placement::Backoff)
    );
    // Second failure: 2s of backoff, and no event is needed to leave it.
    let expiry = now + secs(2);
    assert_eq!(q.next_backoff_expiry(), Some(expiry));
    assert_eq!(q.flush_backoff_completed(expiry - ms(1)), 0);
    assert_eq!(q.flush_backoff_completed(expiry), 1);
    assert_eq!(q.placement(&key), Some(Placement::Active));
}

mod groups;
