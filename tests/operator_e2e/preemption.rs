//! Preemption live: `berth run` evicts lower-priority pods for a pending pod that fits
//! nowhere, nominates it, and binds it once its victim is gone (issue: "victims get
//! DisruptionTarget and are deleted, the preemptor is nominated and then bound, events are
//! written, nothing else is deleted; an API failure during eviction leaves no pod bound
//! twice and the preemptor retried"), and PodDisruptionBudgets whose status the real
//! disruption controller computes steer the choice of victim.
//!
//! The victims carry a finalizer, as a kubelet's graceful termination would keep them:
//! a deleted victim stays, terminating, until the test lets it go, so what berth wrote on
//! it can be read and the preemptor can be seen waiting for it.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use test_apiserver::Fault;

use crate::harness::{Berth, BerthOptions, Cluster, WAIT, eventually, node, profile};

const SCHEDULER: &str = "preempting";
const FINALIZER: &str = "test.berth.dev/keep";

/// A pod of `priority` requesting `cpu`; bound to `node` when given, kept after deletion
/// until [`release`].
fn pod(name: &str, priority: i32, cpu: &str, node: Option<&str>) -> Value {
    let mut spec = json!({
        "schedulerName": SCHEDULER,
        "priority": priority,
        "containers": [{
            "name": "main",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}},
        }],
    });
    if let Some(node) = node {
        spec["nodeName"] = node.into();
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "finalizers": [FINALIZER]},
        "spec": spec,
    })
}

/// Lets a deleted pod go (the kubelet finished its termination).
async fn release(cluster: &Cluster, name: &str) {
    cluster
        .pods()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap_or_else(|e| panic!("releasing {name}: {e}"));
}

fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

fn disruption_target(pod: &Pod) -> Option<(String, String, String)> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    let c = conditions.iter().find(|c| c.type_ == "DisruptionTarget")?;
    Some((
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    ))
}

fn nominated_node(pod: &Pod) -> Option<String> {
    pod.status.as_ref()?.nominated_node_name.clone()
}

/// One 2-cpu node full with two priority-0 pods of 1 cpu; the preemptor (priority 1000,
/// 1 cpu) and a bystander on another full node whose pod has the preemptor's priority.
async fn full_cluster(cluster: &Cluster) {
    cluster.create_node(node("node-a", "2", "4Gi")).await;
    cluster.create_node(node("node-b", "1", "4Gi")).await;
    for victim in ["low-1", "low-2"] {
        cluster
            .create_pod(pod(victim, 0, "1", Some("node-a")))
            .await;
    }
    cluster
        .create_pod(pod("peer", 1000, "1", Some("node-b")))
        .await;
}

/// [`full_cluster`] with berth running a default profile for [`SCHEDULER`], on a real
/// cluster (`None` after a skip) or, with `test_server`, on the test API server.
async fn start(test_server: bool) -> Option<(Cluster, Berth)> {
    let cluster = match test_server {
        true => Cluster::start_test_server().await,
        false => Cluster::start().await?,
    };
    Some(started(cluster).await)
}

/// [`full_cluster`] on `cluster` with berth running a default profile for [`SCHEDULER`].
async fn started(cluster: Cluster) -> (Cluster, Berth) {
    full_cluster(&cluster).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile(SCHEDULER, json!({}))).await;
    cluster.wait_profile_ready(SCHEDULER, WAIT).await;
    (cluster, berth)
}

/// The victim berth chose: the one of `low-1`, `low-2` that is terminating (exactly one).
async fn wait_victim(cluster: &Cluster) -> (String, Pod) {
    eventually("one low-priority pod is being evicted", WAIT, || async {
        let mut terminating = Vec::new();
        for name in ["low-1", "low-2", "peer"] {
            let p = cluster.pod(name).await;
            if is_terminating(&p) {
                terminating.push((name.to_string(), p));
            }
        }
        match terminating.len() {
            1 => Ok(terminating.remove(0)),
            _ => Err(format!(
                "terminating: {:?}",
                terminating.iter().map(|(n, _)| n).collect::<Vec<_>>()
            )),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_priority_pod_evicts_one_victim_is_nominated_and_binds() {
    let Some((cluster, berth)) = start(false).await else {
        return;
    };
    evicts_one_victim(cluster, berth).await;
}

/// The 1.35 smoke subset: the same preemption against kube-apiserver 1.35.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preemption_against_kubernetes_1_35() {
    let Some(cluster) = Cluster::start_reporting(35).await else {
        return;
    };
    let berth = started(cluster).await;
    evicts_one_victim(berth.0, berth.1).await;
}

async fn evicts_one_victim(cluster: Cluster, mut berth: Berth) {
    let preemptor = cluster.create_pod(pod("preemptor", 1000, "1", None)).await;
    let uid = preemptor.metadata.uid.clone().unwrap_or_default();

    let (victim, terminating) = wait_victim(&cluster).await;
    assert_eq!(
        disruption_target(&terminating),
        Some((
            "True".to_string(),
            "PreemptionByScheduler".to_string(),
            format!("{SCHEDULER}: preempting to accommodate a higher priority pod"),
        )),
        "{victim}'s DisruptionTarget condition"
    );
    let preempted = cluster.preempted_event(&victim).await;
    assert_eq!(preempted.type_.as_deref(), Some("Normal"));
    assert_eq!(preempted.action.as_deref(), Some("Preempting"));
    assert_eq!(
        preempted.note.as_deref(),
        Some(format!("Preempted by pod {uid} on node node-a").as_str())
    );
    assert_eq!(
        preempted.related.as_ref().and_then(|r| r.name.as_deref()),
        Some("preemptor")
    );

    // Nominated, and waiting while the victim terminates.
    let nominated = eventually("the preemptor is nominated", WAIT, || async {
        let p = cluster.pod("preemptor").await;
        nominated_node(&p).ok_or_else(|| format!("{:?}", p.status))
    })
    .await;
    assert_eq!(nominated, "node-a");
    let scheduled = cluster.pod("preemptor").await;
    let condition = scheduled
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")
        .expect("the preempting attempt is reported");
    // kube-scheduler 1.37's message (berth follows 1.37 on every server it supports):
    // the successful preemption's own status ends it (1.35 added nothing).
    assert_eq!(
        condition.message.as_deref(),
        Some(
            "0/2 nodes are available: 2 Insufficient cpu. preemption: found a potential \
             placement for pod on node node-a, preempting 1 victims"
        ),
        "the message of the preempting attempt"
    );
    cluster.assert_stay_unbound(&["preemptor"], WAIT / 10).await;

    release(&cluster, &victim).await;
    let bound = cluster.wait_bound(&["preemptor"], WAIT).await;
    assert_eq!(bound["preemptor"], "node-a");

    // Nothing else was deleted, and every pod was bound at most once.
    let survivor = if victim == "low-1" { "low-2" } else { "low-1" };
    for name in [survivor, "peer"] {
        assert!(
            !is_terminating(&cluster.pod(name).await),
            "{name} was not a victim"
        );
    }
    assert!(
        cluster.successful_bindings().values().all(|&n| n == 1),
        "{:?}",
        cluster.successful_bindings()
    );
    berth.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_eviction_retries_the_preemptor_and_binds_it_once() {
    let Some((cluster, mut berth)) = start(true).await else {
        return;
    };

    // The first two deletions of a pod fail: the first preemption fails, the preemptor
    // is retried at once and preempts again.
    cluster.server().inject_fault(Fault {
        verb: Some("delete".into()),
        resource: Some("pods".into()),
        count: 2,
        status: 500,
        message: "injected 500".into(),
    });
    cluster.create_pod(pod("preemptor", 1000, "1", None)).await;

    let (victim, _) = wait_victim(&cluster).await;
    let deletes = cluster
        .requests()
        .into_iter()
        .filter(|r| r.verb == "delete" && r.resource == "pods")
        .count();
    assert!(
        deletes >= 3,
        "two failed deletions, then the one that worked: {deletes}"
    );
    release(&cluster, &victim).await;
    let bound = cluster.wait_bound(&["preemptor"], WAIT).await;
    assert_eq!(bound["preemptor"], "node-a");
    assert!(
        cluster.successful_bindings().values().all(|&n| n == 1),
        "{:?}",
        cluster.successful_bindings()
    );
    berth.assert_running();
}

/// A PodDisruptionBudget as kube-controller-manager's disruption controller keeps it:
/// berth spares the pod whose budget allows no disruption (its status, which only that
/// controller writes), and evicts it when the budget allows one. Upstream's victim
/// selection reprieves budget-violating pods first, then the more important (here: the
/// older) ones, so without the budget the younger pod, `guarded`, is the victim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_the_disruption_controller_exhausted_spares_its_pod() {
    // (case, the budget's minAvailable, the disruptions its status allows, the victim)
    let cases = [
        ("budget exhausted", 1, 0, "older"),
        ("budget allows one disruption", 0, 1, "guarded"),
    ];
    for (case, min_available, allowed, want_victim) in cases {
        let Some(cluster) = Cluster::start().await else {
            return;
        };
        cluster.create_node(node("node-a", "2", "4Gi")).await;
        for name in ["older", "guarded"] {
            let mut victim = pod(name, 0, "1", Some("node-a"));
            victim["metadata"]["labels"] = json!({"app": name});
            cluster.create_pod(victim).await;
            // Running with its start time (whole seconds) set, and the next pod's a
            // second later, so `older` is the more important of the two.
            eventually(&format!("{case}: {name} is running"), WAIT, || async {
                let p = cluster.pod(name).await;
                match p.status.as_ref().and_then(|s| s.start_time.as_ref()) {
                    Some(_) => Ok(()),
                    None => Err(format!("{:?}", p.status)),
                }
            })
            .await;
            tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        }
        let budgets: Api<PodDisruptionBudget> = Api::namespaced(cluster.client.clone(), "default");
        let budget: PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": {"name": "guarded", "namespace": "default"},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "guarded"}}},
        }))
        .expect("a PodDisruptionBudget");
        budgets
            .create(&PostParams::default(), &budget)
            .await
            .unwrap_or_else(|e| panic!("{case}: creating the budget: {e}"));
        eventually(
            &format!("{case}: the disruption controller computes the budget"),
            WAIT,
            || async {
                let status = budgets
                    .get("guarded")
                    .await
                    .map_err(|e| e.to_string())?
                    .status
                    .unwrap_or_default();
                if status.observed_generation == Some(1)
                    && status.current_healthy == Some(1)
                    && status.disruptions_allowed == Some(allowed)
                {
                    Ok(())
                } else {
                    Err(format!("{status:?}"))
                }
            },
        )
        .await;

        let mut berth = Berth::spawn(&cluster, BerthOptions::default());
        berth.wait_ready().await;
        cluster.create_profile(profile(SCHEDULER, json!({}))).await;
        cluster.wait_profile_ready(SCHEDULER, WAIT).await;
        cluster.create_pod(pod("preemptor", 1000, "1", None)).await;

        let victim = eventually(&format!("{case}: one pod is evicted"), WAIT, || async {
            let mut terminating = Vec::new();
            for name in ["older", "guarded"] {
                if is_terminating(&cluster.pod(name).await) {
                    terminating.push(name);
                }
            }
            match terminating[..] {
                [one] => Ok(one),
                _ => Err(format!("terminating: {terminating:?}")),
            }
        })
        .await;
        assert_eq!(victim, want_victim, "case {case}");
        release(&cluster, victim).await;
        let bound = cluster.wait_bound(&["preemptor"], WAIT).await;
        assert_eq!(bound["preemptor"], "node-a", "case {case}");
        assert!(
            cluster.successful_bindings().values().all(|&n| n == 1),
            "case {case}: {:?}",
            cluster.successful_bindings()
        );
        berth.assert_running();
    }
}
