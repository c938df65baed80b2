//! Preemption through the scheduler, as upstream's asynchronous preemption runs it: the
//! attempt that preempts fails, nominates the pod and hands the evictions to the adapter
//! (here, the test); DefaultPreemption's PreEnqueue holds the preemptor until the
//! adapter reports the end or the last victim is seen leaving; a failed eviction retries
//! the preemptor at once. The cases follow upstream's TestPreEnqueue, TestAsyncPreemption
//! and TestNominatedNodeCleanUp (integration), on one 4-cpu node.

#[path = "support/core.rs"]
mod scheduler_core;

use std::sync::Arc;

use berth::api::SchedulerProfileSpec;
use berth::cluster::PodInfo;
use berth::framework::{Code, ExtensionPoint, Framework, Handle, Nominator, Preemption, resolve};
use berth::plugins::default_preemption::WAITING_FOR_PREEMPTION;
use berth::queue::Placement;
use berth::scheduler::{AttemptReport, CycleOutput, Outcome, Scheduler};
use berth::simulate::clock::VirtualClock;
use berth::testing::{make_node, make_pod};
use k8s_openapi::api::core::v1::{Node, Pod};
use scheduler_core::Core;

fn node(name: &str) -> Node {
    make_node()
        .name(name)
        .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
        .obj()
}

fn pod(name: &str, priority: i32, cpu: &str) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .priority(priority)
        .req(&[("cpu", cpu)])
        .obj()
}

/// A scheduler of the default profile over one 4-cpu node `node`, running `victims`
/// (name, cpu) of priority 1, on a virtual clock.
fn scheduler(victims: &[(&str, &str)]) -> (Scheduler, VirtualClock) {
    let clock = VirtualClock::new();
    let mut scheduler = Core {
        clock: Some(Arc::new(clock.clone())),
        ..Core::default()
    }
    .build();
    scheduler.on_node_add(node("node")).expect("node");
    for (name, cpu) in victims {
        let mut victim = pod(name, 1, cpu);
        victim.spec.as_mut().expect("spec").node_name = Some("node".into());
        scheduler.on_pod_add(victim).expect("running pod");
    }
    (scheduler, clock)
}

/// One attempt of the next pod, its binding cycle run to the end.
async fn attempt(scheduler: &mut Scheduler) -> AttemptReport {
    match scheduler.schedule_one().await.expect("a pod is in activeQ") {
        CycleOutput::Done(report) => report,
        CycleOutput::PodGroup(report) => panic!("no pod group here: {report:?}"),
        CycleOutput::Binding(cycle) => scheduler.complete_binding(cycle.run().await),
    }
}

/// Lets every backoff expire (upstream's integration test turns backoff off).
fn wait_out_backoff(scheduler: &mut Scheduler, clock: &VirtualClock) {
    let later = scheduler.clock().now() + std::time::Duration::from_secs(60);
    clock.advance_to(later);
    scheduler.flush_queues(later, false);
}

fn placement(scheduler: &Scheduler, key: &str) -> Option<Placement> {
    scheduler.profiles()[0].queue.placement(key)
}

fn victim_names(preemption: &Preemption) -> Vec<String> {
    let mut names: Vec<String> = preemption
        .victims
        .iter()
        .map(|v| v.pod.metadata.name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

/// The victims leave the cluster in the order the adapter evicts them.
fn evict(scheduler: &mut Scheduler, preemption: &Preemption) {
    for victim in &preemption.victims {
        scheduler.on_pod_delete(&victim.pod);
    }
}

/// The preempting attempt fails with the fit error ended by the successful preemption's
/// status (kube-scheduler 1.37's `found a potential placement …`, naming the node and
/// counting `victims`), nominates the node and returns the evictions.
async fn preempting_attempt(scheduler: &mut Scheduler, name: &str, victims: usize) -> Preemption {
    let report = attempt(scheduler).await;
    assert_eq!(report.pod.name(), name);
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: format!(
                "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential \
                 placement for pod on node node, preempting {victims} victims"
            )
        },
        "{name}"
    );
    assert_eq!(report.nominating.as_deref(), Some("node"), "{name}");
    assert_eq!(
        scheduler.nominator().nominated_node(name).as_deref(),
        Some("node"),
        "{name}"
    );
    *report.preemption.expect("evictions to carry out")
}

/// upstream "basic: async preemption happens expectedly", and TestPreEnqueue: while the
/// evictions run, the preemptor is held at PreEnqueue with upstream's message, even when
/// an event would move it; once its last victim has left it is tried and binds on the
/// nominated node.
#[tokio::test]
async fn the_preemptor_waits_for_its_evictions_then_binds_on_the_nominated_node() {
    let (mut scheduler, clock) = scheduler(&[("victim1", "2"), ("victim2", "2")]);
    scheduler
        .on_pod_add(pod("preemptor", 100, "4"))
        .expect("preemptor");
    let preemption = preempting_attempt(&mut scheduler, "preemptor", 2).await;
    assert_eq!(preemption.node, "node");
    assert_eq!(victim_names(&preemption), ["victim1", "victim2"]);
    assert!(preemption.victims.iter().all(|v| !v.waiting));
    assert!(preemption.cleared_nominations.is_empty());

    // An event that moves the pods NodeResourcesFit rejected, and the backoff's end,
    // meet the gate.
    scheduler
        .on_node_add(make_node().name("tiny").obj())
        .expect("node");
    assert_eq!(placement(&scheduler, "preemptor"), Some(Placement::Backoff));
    wait_out_backoff(&mut scheduler, &clock);
    assert_eq!(placement(&scheduler, "preemptor"), Some(Placement::Gated));
    let gated: Vec<_> = scheduler.profiles()[0]
        .queue
        .gated_pods()
        .map(|q| (q.pod_info.name().to_string(), q.gated_by.clone()))
        .collect();
    assert_eq!(
        gated,
        [(
            "preemptor".to_string(),
            Some("DefaultPreemption".to_string())
        )]
    );

    // The first victim leaving is not enough; the last one is.
    scheduler.on_pod_delete(&preemption.victims[0].pod);
    assert_eq!(placement(&scheduler, "preemptor"), Some(Placement::Gated));
    scheduler.on_pod_delete(&preemption.victims[1].pod);
    assert_eq!(placement(&scheduler, "preemptor"), Some(Placement::Active));
    scheduler.complete_preemption("preemptor", true);

    let report = attempt(&mut scheduler).await;
    assert_eq!(
        report.outcome,
        Outcome::Scheduled {
            node: "node".into()
        }
    );
}

/// An eviction failed: the preemptor's nomination is cleared and it is tried again at
/// once (upstream activates it), and preempts again for the victims still there.
#[tokio::test]
async fn a_failed_eviction_retries_the_preemptor_at_once() {
    let (mut scheduler, _) = scheduler(&[("victim1", "2"), ("victim2", "2")]);
    scheduler
        .on_pod_add(pod("preemptor", 100, "4"))
        .expect("preemptor");
    let first = preempting_attempt(&mut scheduler, "preemptor", 2).await;
    assert_eq!(
        placement(&scheduler, "preemptor"),
        Some(Placement::Unschedulable)
    );
    scheduler.complete_preemption("preemptor", false);
    assert_eq!(
        scheduler.nominator().nominated_node("preemptor"),
        None,
        "a failed eviction clears the nomination"
    );
    assert_eq!(placement(&scheduler, "preemptor"), Some(Placement::Active));
    let again = preempting_attempt(&mut scheduler, "preemptor", 2).await;
    assert_eq!(victim_names(&again), victim_names(&first));
}

/// upstream "Lower priority Pod doesn't take over the place for higher priority Pod that
/// is running the preemption": the nominated preemptor counts on its node for pods of
/// lower priority, so the lower pod finds no room, even by preempting.
#[tokio::test]
async fn a_lower_priority_pod_does_not_take_the_room_being_made() {
    let (mut scheduler, clock) = scheduler(&[("victim1", "2"), ("victim2", "2")]);
    scheduler
        .on_pod_add(pod("preemptor-high-priority", 100, "4"))
        .expect("preemptor");
    let preemption = preempting_attempt(&mut scheduler, "preemptor-high-priority", 2).await;

    scheduler
        .on_pod_add(pod("pod-mid-priority", 50, "4"))
        .expect("mid");
    let mid = attempt(&mut scheduler).await;
    assert_eq!(mid.pod.name(), "pod-mid-priority");
    assert_eq!(
        mid.outcome,
        Outcome::Unschedulable {
            message: "0/1 nodes are available: 1 Insufficient cpu. \
                      preemption: 0/1 nodes are available: 1 Insufficient cpu."
                .into()
        }
    );
    assert_eq!(mid.preemption, None);

    evict(&mut scheduler, &preemption);
    scheduler.complete_preemption("preemptor-high-priority", true);
    wait_out_backoff(&mut scheduler, &clock);
    let next = attempt(&mut scheduler).await;
    assert_eq!(
        (next.pod.name(), next.outcome),
        (
            "preemptor-high-priority",
            Outcome::Scheduled {
                node: "node".into()
            }
        ),
        "the higher-priority pod is popped first"
    );
}

/// upstream "Higher priority Pod takes over the place for lower priority Pod that is
/// running the preemption", and TestNominatedNodeCleanUp: a higher-priority pod ignores
/// the lower nomination, preempts on the same node, and that nomination is dropped.
#[tokio::test]
async fn a_higher_priority_pod_takes_over_and_clears_the_lower_nomination() {
    let (mut scheduler, clock) = scheduler(&[("v1", "1"), ("v2", "1"), ("v3", "1"), ("v4", "1")]);
    scheduler
        .on_pod_add(pod("preemptor-high-priority", 100, "4"))
        .expect("high");
    let high = preempting_attempt(&mut scheduler, "preemptor-high-priority", 4).await;
    assert_eq!(victim_names(&high), ["v1", "v2", "v3", "v4"]);

    scheduler
        .on_pod_add(pod("preemptor-super-high-priority", 200, "4"))
        .expect("super");
    let sup = preempting_attempt(&mut scheduler, "preemptor-super-high-priority", 4).await;
    assert_eq!(victim_names(&sup), ["v1", "v2", "v3", "v4"]);
    let cleared: Vec<_> = sup
        .cleared_nominations
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(cleared, ["preemptor-high-priority"]);
    assert_eq!(
        scheduler
            .nominator()
            .nominated_node("preemptor-high-priority"),
        None
    );

    evict(&mut scheduler, &sup);
    scheduler.complete_preemption("preemptor-super-high-priority", true);
    scheduler.complete_preemption("preemptor-high-priority", true);
    wait_out_backoff(&mut scheduler, &clock);
    let first = attempt(&mut scheduler).await;
    assert_eq!(
        (first.pod.name(), first.outcome),
        (
            "preemptor-super-high-priority",
            Outcome::Scheduled {
                node: "node".into()
            }
        )
    );
    let second = attempt(&mut scheduler).await;
    assert_eq!(second.pod.name(), "preemptor-high-priority");
    assert!(
        matches!(second.outcome, Outcome::Unschedulable { .. }),
        "{:?}",
        second.outcome
    );
}

/// upstream TestNonPreemption: `preemptionPolicy: Never` is neither nominated nor held.
#[tokio::test]
async fn a_pod_that_never_preempts_is_neither_nominated_nor_held() {
    let (mut scheduler, _) = scheduler(&[("victim", "4")]);
    let mut never = pod("preemptor", 100, "1");
    never.spec.as_mut().expect("spec").preemption_policy = Some("Never".into());
    scheduler.on_pod_add(never).expect("preemptor");
    let report = attempt(&mut scheduler).await;
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: "0/1 nodes are available: 1 Insufficient cpu. \
                      preemption: not eligible due to preemptionPolicy=Never."
                .into()
        }
    );
    assert_eq!((report.nominating, report.preemption), (None, None));
    assert_eq!(
        placement(&scheduler, "preemptor"),
        Some(Placement::Unschedulable)
    );
}

/// upstream TestPreEnqueue: the gate holds the pod whose preemption runs, and no other.
#[test]
fn pre_enqueue_holds_only_the_pod_whose_preemption_runs() {
    let nominator = Arc::new(Nominator::new());
    let registry = berth::plugins::default_registry();
    let resolved = resolve(&SchedulerProfileSpec::default(), &registry).expect("valid");
    let handle = Handle::builder().nominator(nominator.clone()).build();
    let framework =
        Framework::new("default-scheduler", resolved, &registry, handle).expect("plugins");
    let gate = framework
        .plugins(ExtensionPoint::PreEnqueue)
        .iter()
        .find(|p| p.name() == "DefaultPreemption")
        .expect("DefaultPreemption is at PreEnqueue")
        .clone();
    let gate = gate.as_pre_enqueue().expect("a PreEnqueue plugin");
    let p = PodInfo::new(pod("p", 1000, "1")).expect("pod");
    let other = PodInfo::new(pod("p_other", 1000, "1")).expect("pod");

    assert!(gate.pre_enqueue(&p).is_success(), "no preemption runs");
    nominator.start_preemption("p", Some("default/victim".into()));
    let held = gate.pre_enqueue(&p);
    assert_eq!(
        (held.code(), held.message()),
        (
            Code::UnschedulableAndUnresolvable,
            WAITING_FOR_PREEMPTION.to_string()
        )
    );
    assert_eq!(
        WAITING_FOR_PREEMPTION,
        "waiting for the preemption for this pod to be finished"
    );
    assert!(gate.pre_enqueue(&other).is_success(), "different pod");
    nominator.finish_preemption("p");
    assert!(gate.pre_enqueue(&p).is_success(), "finished");
}
