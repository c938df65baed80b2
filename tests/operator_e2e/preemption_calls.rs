//! The API calls that carry out a preemption ([`PreemptionExecutor`]), made with berth's
//! own client (its User-Agent, so the chart's RBAC replay sees them), against the test
//! API server. Expected calls and outcomes are upstream's (executor_test.go:
//! TestPrepareCandidate, TestAsyncPreemptionFailure, TestRemoveNominatedNodeName).
//!
//! Victims carry a finalizer, so a deleted victim stays readable (with a
//! deletionTimestamp) and its `DisruptionTarget` condition can be checked.

use std::sync::Arc;

use berth::operator::USER_AGENT;
use berth::operator::preemption::{PreemptionExecutor, Victim};
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use test_apiserver::{Fault, RequestRecord};

use crate::harness::{Berth, BerthOptions, Cluster, WAIT, eventually, within};

const SCHEDULER: &str = "preempting";
const NODE: &str = "node-1";
const INSTANCE: &str = "replica-0";
const FINALIZER: &str = "test.berth.dev/keep";
const MESSAGE: &str = "preempting: preempting to accommodate a higher priority pod";

/// The executor over berth's client for `cluster`.
async fn executor(cluster: &Cluster) -> PreemptionExecutor {
    let kubeconfig = cluster.kubeconfig().to_path_buf();
    let client = berth::operator::client(Some(&kubeconfig))
        .await
        .unwrap_or_else(|e| panic!("berth's client: {e}"));
    PreemptionExecutor::new(client, INSTANCE.into())
}

/// The preemptor: pending, priority 1000, served by [`SCHEDULER`].
async fn preemptor(cluster: &Cluster) -> Pod {
    cluster
        .create_pod(json!({
            "metadata": {"name": "preemptor", "namespace": "default"},
            "spec": {
                "schedulerName": SCHEDULER,
                "priority": 1000,
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
            },
        }))
        .await
}

/// A victim bound to [`NODE`], priority 100, kept after deletion by [`FINALIZER`].
async fn victim(cluster: &Cluster, name: &str) -> Pod {
    cluster
        .create_pod(json!({
            "metadata": {"name": name, "namespace": "default", "finalizers": [FINALIZER]},
            "spec": {
                "nodeName": NODE,
                "priority": 100,
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
            },
        }))
        .await
}

/// A pending pod of priority 100 no scheduler serves, so it stays pending.
async fn pending(cluster: &Cluster, name: &str) -> Pod {
    cluster
        .create_pod(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "schedulerName": "nobody",
                "priority": 100,
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
            },
        }))
        .await
}

/// A pod standing for one that does not exist (any more).
fn missing(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"nodeName": NODE, "containers": []},
    }))
    .expect("a Pod")
}

/// Writes `status` into pod `name` (with the test's own client) and returns the pod.
async fn patch_status(cluster: &Cluster, name: &str, status: Value) -> Pod {
    within(
        "patching a pod's status",
        WAIT,
        cluster.pods().patch_status(
            name,
            &PatchParams::default(),
            &Patch::Strategic(json!({ "status": status })),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("patching pod {name}'s status: {e}"))
}

/// The condition berth would write, stamped now: kube-controller-manager's disruption
/// controller resets a `DisruptionTarget` older than two minutes on a pod not being
/// deleted to `False`, so a fixed past timestamp races berth's delete on a real cluster.
fn identical_condition() -> Value {
    json!({"conditions": [{
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": MESSAGE,
        "lastTransitionTime": berth::operator::conditions::now(),
    }]})
}

/// Berth's requests about pod `name`, as `<verb>` or `<verb> <subresource>`.
fn calls_on(cluster: &Cluster, name: &str) -> Vec<String> {
    berth_requests(cluster)
        .into_iter()
        .filter(|r| r.resource == "pods" && r.name.as_deref() == Some(name))
        .map(|r| match r.subresource {
            Some(sub) => format!("{} {sub} {}", r.verb, r.status),
            None => format!("{} {}", r.verb, r.status),
        })
        .collect()
}

fn berth_requests(cluster: &Cluster) -> Vec<RequestRecord> {
    cluster
        .requests()
        .into_iter()
        .filter(|r| r.user_agent.as_deref() == Some(USER_AGENT))
        .collect()
}

/// Whether pod `name` is still there and not being deleted.
async fn alive(cluster: &Cluster, name: &str) -> bool {
    within("reading a pod", WAIT, cluster.pods().get_opt(name))
        .await
        .unwrap_or_else(|e| panic!("reading pod {name}: {e}"))
        .is_some_and(|p| p.metadata.deletion_timestamp.is_none())
}

fn disruption_target(pod: &Pod) -> Option<PodCondition> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "DisruptionTarget"))
        .cloned()
}

/// The `Preempted` events on pod `name`, checked to be upstream's.
async fn preempted_events(cluster: &Cluster, name: &str, preemptor: &Pod) -> usize {
    let events = cluster.events_for(name).await;
    for event in &events {
        assert_eq!(event.reason.as_deref(), Some("Preempted"), "{event:?}");
        assert_eq!(event.type_.as_deref(), Some("Normal"), "{event:?}");
        assert_eq!(event.action.as_deref(), Some("Preempting"), "{event:?}");
        let uid = preemptor.metadata.uid.as_deref().unwrap_or_default();
        assert_eq!(
            event.note.as_deref(),
            Some(format!("Preempted by pod {uid} on node {NODE}").as_str()),
        );
        assert_eq!(event.reporting_controller.as_deref(), Some(SCHEDULER));
        assert_eq!(
            event.reporting_instance.as_deref(),
            Some(format!("{SCHEDULER}-{INSTANCE}").as_str())
        );
        let related = event.related.as_ref().expect("the preemptor is related");
        assert_eq!(related.name.as_deref(), Some("preemptor"));
        assert_eq!(related.uid.as_deref(), Some(uid));
    }
    events.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicting_a_victim_sets_disruption_target_deletes_it_and_records_preempted() {
    // (case, the victim exists, it already carries the identical condition, berth's calls
    // on it, Preempted events)
    let cases: [(&str, bool, bool, &[&str], usize); 4] = [
        (
            "one victim without condition",
            true,
            false,
            &["patch status 200", "delete 200"],
            1,
        ),
        (
            "one victim with same condition",
            true,
            true,
            &["delete 200"],
            1,
        ),
        (
            "one victim, but victim is already deleted",
            false,
            false,
            &["patch status 404"],
            0,
        ),
        (
            "one victim with same condition, not found when deleting",
            false,
            true,
            &["delete 404"],
            0,
        ),
    ];
    for (name, exists, carries_condition, want_calls, want_events) in cases {
        let Some(cluster) = Cluster::start().await else {
            return;
        };
        let executor = executor(&cluster).await;
        let preemptor = preemptor(&cluster).await;
        let mut target = if exists {
            victim(&cluster, "victim1").await
        } else {
            missing("victim1")
        };
        if carries_condition {
            if exists {
                target = patch_status(&cluster, "victim1", identical_condition()).await;
            } else {
                target.status = serde_json::from_value(identical_condition()).ok();
            }
        }

        let result = executor.evict_victim(&target, &preemptor, NODE).await;

        assert_eq!(result, Ok(()), "case {name}");
        assert_eq!(calls_on(&cluster, "victim1"), want_calls, "case {name}");
        assert_eq!(
            preempted_events(&cluster, "victim1", &preemptor).await,
            want_events,
            "case {name}"
        );
        if exists {
            let kept = cluster.pod("victim1").await;
            assert!(
                kept.metadata.deletion_timestamp.is_some(),
                "case {name}: deleted"
            );
            let condition = disruption_target(&kept).expect("DisruptionTarget");
            assert_eq!(condition.status, "True", "case {name}");
            assert_eq!(
                condition.reason.as_deref(),
                Some("PreemptionByScheduler"),
                "case {name}"
            );
            assert_eq!(condition.message.as_deref(), Some(MESSAGE), "case {name}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicting_a_victim_fails_on_api_errors_and_retries_only_retriable_patches() {
    // (case, injected fault, want Ok, berth's calls on the victim, still alive)
    let cases: [(&str, Fault, bool, &[&str], bool); 3] = [
        (
            "one victim, but pod deletion failed",
            fault("delete", "pods", 1, 500),
            false,
            &["patch status 200", "delete 500"],
            true,
        ),
        (
            "one victim, but patch pod failed",
            fault("patch", "pods/status", 1, 403),
            false,
            &["patch status 403"],
            true,
        ),
        (
            "a patch answered 503 twice is retried",
            Fault {
                count: 2,
                ..fault("patch", "pods/status", 1, 503)
            },
            true,
            &[
                "patch status 503",
                "patch status 503",
                "patch status 200",
                "delete 200",
            ],
            false,
        ),
    ];
    for (name, injected, want_ok, want_calls, want_alive) in cases {
        let cluster = Cluster::start_test_server().await;
        let executor = executor(&cluster).await;
        let preemptor = preemptor(&cluster).await;
        let target = victim(&cluster, "victim1").await;
        cluster.server().inject_fault(injected);

        let result = executor.evict_victim(&target, &preemptor, NODE).await;

        assert_eq!(result.is_ok(), want_ok, "case {name}: {result:?}");
        if let Err(message) = &result {
            assert!(
                message.contains("default/victim1") && message.contains("injected"),
                "case {name}: the error names the pod and the failure: {message}"
            );
        }
        assert_eq!(calls_on(&cluster, "victim1"), want_calls, "case {name}");
        assert_eq!(alive(&cluster, "victim1").await, want_alive, "case {name}");
        assert_eq!(
            preempted_events(&cluster, "victim1", &preemptor).await,
            usize::from(want_ok),
            "case {name}: Preempted only once the victim is deleted"
        );
    }
}

fn fault(verb: &str, resource: &str, count: usize, status: u16) -> Fault {
    Fault {
        verb: Some(verb.into()),
        resource: Some(resource.into()),
        count,
        status,
        message: format!("injected {status}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_preemption_skips_the_last_victim_after_a_failure() {
    // Upstream's TestAsyncPreemptionFailure rows the server can fail deterministically:
    // one failing DELETE hits whichever of the first victims is deleted first.
    // (case, victims, DELETEs failing, succeeded, last victim attempted)
    let cases: [(&str, &[&str], usize, bool, bool); 3] = [
        ("Failure with a single victim", &["victim1"], 1, false, true),
        (
            "Failure in first of three victims",
            &["victim1", "victim2", "victim3"],
            1,
            false,
            false,
        ),
        (
            "Success with three victims",
            &["victim1", "victim2", "victim3"],
            0,
            true,
            true,
        ),
    ];
    for (name, names, failing, want_succeeded, want_last_attempted) in cases {
        let cluster = Cluster::start_test_server().await;
        let executor = executor(&cluster).await;
        let preemptor = preemptor(&cluster).await;
        let mut victims = Vec::new();
        for victim_name in names {
            victims.push(Victim {
                pod: Arc::new(victim(&cluster, victim_name).await),
                waiting: false,
            });
        }
        if failing > 0 {
            cluster
                .server()
                .inject_fault(fault("delete", "pods", failing, 500));
        }

        let succeeded = executor
            .run_preemption(&preemptor, NODE, &victims, &[])
            .await;

        assert_eq!(succeeded, want_succeeded, "case {name}");
        let last = names.last().expect("victims");
        assert_eq!(
            !calls_on(&cluster, last).is_empty(),
            want_last_attempted,
            "case {name}: calls on the last victim {:?}",
            calls_on(&cluster, last)
        );
        let mut deleted = 0;
        for victim_name in names {
            if !alive(&cluster, victim_name).await {
                deleted += 1;
            }
        }
        assert_eq!(
            deleted,
            names.len() - failing - usize::from(!want_last_attempted),
            "case {name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_preemption_clears_lower_nominations_and_leaves_waiting_victims_to_the_scheduler() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let executor = executor(&cluster).await;
    let preemptor = preemptor(&cluster).await;
    cluster
        .create_pod(json!({
            "metadata": {"name": "nominee", "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
        }))
        .await;
    let nominee = patch_status(&cluster, "nominee", json!({"nominatedNodeName": NODE})).await;
    let waiting = missing("waiting");
    let bound = victim(&cluster, "victim1").await;
    let victims = [
        Victim {
            pod: Arc::new(waiting),
            waiting: true,
        },
        Victim {
            pod: Arc::new(bound),
            waiting: false,
        },
    ];

    // As the scheduling loop runs it: spawned, owning what it needs.
    let task = {
        let (executor, preemptor) = (executor.clone(), preemptor.clone());
        tokio::spawn(async move {
            executor
                .run_preemption(&preemptor, NODE, &victims, &[Arc::new(nominee)])
                .await
        })
    };
    let succeeded = within("the preemption task", WAIT, task)
        .await
        .expect("the preemption task does not panic");

    assert!(succeeded);
    assert_eq!(calls_on(&cluster, "nominee"), ["patch status 200"]);
    let nomination = cluster
        .pod("nominee")
        .await
        .status
        .and_then(|s| s.nominated_node_name);
    assert_eq!(nomination, None, "the lower-priority nomination is cleared");
    assert!(
        calls_on(&cluster, "waiting").is_empty(),
        "no API call on a victim waiting at Permit"
    );
    assert_eq!(preempted_events(&cluster, "waiting", &preemptor).await, 1);
    assert_eq!(
        calls_on(&cluster, "victim1"),
        ["patch status 200", "delete 200"]
    );
    assert_eq!(preempted_events(&cluster, "victim1", &preemptor).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_a_nomination_patches_only_pods_that_have_one() {
    // (case, the pod's nomination, the pod exists, berth's calls, want Ok)
    let cases: [(&str, Option<&str>, bool, &[&str]); 3] = [
        ("nominated", Some(NODE), true, &["patch status 200"]),
        ("not nominated", None, true, &[]),
        (
            "nominated but gone",
            Some(NODE),
            false,
            &["patch status 404"],
        ),
    ];
    for (name, nominated, exists, want_calls) in cases {
        let Some(cluster) = Cluster::start().await else {
            return;
        };
        let executor = executor(&cluster).await;
        // A nominated pod is a pending one: the API server refuses a nomination on a
        // bound pod.
        let mut pod = if exists {
            pending(&cluster, "pod1").await
        } else {
            let mut gone = missing("pod1");
            gone.spec.get_or_insert_default().node_name = None;
            gone
        };
        if let Some(node) = nominated {
            if exists {
                pod = patch_status(&cluster, "pod1", json!({"nominatedNodeName": node})).await;
            } else {
                pod.status = serde_json::from_value(json!({"nominatedNodeName": node})).ok();
            }
        }

        let result = executor.clear_nominated_node(&pod).await;

        assert_eq!(result, Ok(()), "case {name}");
        assert_eq!(calls_on(&cluster, "pod1"), want_calls, "case {name}");
        if exists {
            let nomination = cluster
                .pod("pod1")
                .await
                .status
                .and_then(|s| s.nominated_node_name);
            assert_eq!(nomination, None, "case {name}");
        }
    }
}

/// `berth run` lists and watches PodDisruptionBudgets before it reports ready, and
/// follows them afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_watches_pod_disruption_budgets_before_it_is_ready() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    let budget_requests = |verb: &'static str| {
        berth_requests(&cluster)
            .into_iter()
            .filter(|r| {
                r.group == "policy"
                    && r.resource == "poddisruptionbudgets"
                    && r.verb == verb
                    && r.status == 200
            })
            .count()
    };
    assert!(
        budget_requests("list") >= 1,
        "no PodDisruptionBudget list before ready"
    );
    let budget: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }))
    .expect("a PodDisruptionBudget");
    within(
        "creating a PodDisruptionBudget",
        WAIT,
        Api::<PodDisruptionBudget>::namespaced(cluster.client.clone(), "default")
            .create(&PostParams::default(), &budget),
    )
    .await
    .unwrap_or_else(|e| panic!("creating a PodDisruptionBudget: {e}"));
    eventually("berth watches PodDisruptionBudgets", WAIT, || async {
        match budget_requests("watch") {
            0 => Err("no watch yet".to_string()),
            _ => Ok(()),
        }
    })
    .await;
    berth.assert_running();
}

/// A preemption whose eviction failed clears its preemptor's nomination before the
/// scheduler retries it; one that succeeded leaves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_preemption_clears_the_preemptors_nomination() {
    for (case, failing, want_nomination) in [
        ("delete fails", true, None),
        ("succeeds", false, Some(NODE.to_string())),
    ] {
        let cluster = Cluster::start_test_server().await;
        let executor = executor(&cluster).await;
        preemptor(&cluster).await;
        let preemptor =
            patch_status(&cluster, "preemptor", json!({"nominatedNodeName": NODE})).await;
        let victim = victim(&cluster, "victim1").await;
        if failing {
            cluster
                .server()
                .inject_fault(fault("delete", "pods", 1, 500));
        }
        let preemption = berth::framework::Preemption {
            preemptor: Arc::new(preemptor),
            node: NODE.into(),
            victims: vec![Victim {
                pod: Arc::new(victim),
                waiting: false,
            }],
            cleared_nominations: vec![],
            group: None,
        };

        assert_eq!(executor.run(&preemption).await, !failing, "{case}");
        let nomination = cluster
            .pod("preemptor")
            .await
            .status
            .and_then(|s| s.nominated_node_name);
        assert_eq!(nomination, want_nomination, "{case}");
    }
}
