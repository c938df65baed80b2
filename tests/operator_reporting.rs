//! The operator's API writes for one scheduling attempt: the Binding ([`KubeBinder`]) and
//! the pod condition and events ([`reporting`]). Against a real kube-apiserver 1.37 with
//! etcd (`crates/kube-cluster`), the request log read from its audit log; the three cases
//! that need a chosen request to fail (a 500 on the Nth binding, status patch or event)
//! run against the test API server, which can inject one.

use std::sync::Arc;
use std::time::Duration;

use berth::framework::{BindError, Binder};
use berth::operator::binder::KubeBinder;
use berth::operator::reporting::{self, PodReporter};
use berth::operator::types::SchedulingReport;
use berth::scheduler::Outcome;
use k8s_openapi::api::core::v1::{Binding, Node, Pod, PodCondition};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube_cluster::KubeCluster;
use serde_json::json;
use test_apiserver::{Fault, RequestRecord, TestApiServer};

mod support;
use support::api;

/// Any single API wait longer than this fails the test.
const WAIT: Duration = Duration::from_secs(20);
/// Short enough to keep retry tests fast, long enough to be a real wait.
const TEST_BACKOFF: Duration = Duration::from_millis(5);
const SCHEDULER: &str = "batch";

/// The API server a test runs against.
enum Server {
    /// kube-apiserver and etcd; `since` is how many audit records
    /// [`Server::clear_requests`] skipped.
    Real {
        cluster: Box<KubeCluster>,
        since: std::sync::Mutex<usize>,
    },
    /// The test API server, for a fault injected on a chosen request.
    Test(TestApiServer),
}

impl Server {
    /// Every request since the start or the last [`Server::clear_requests`], in the
    /// order they finished.
    fn requests(&self) -> Vec<RequestRecord> {
        match self {
            Server::Real { cluster, since } => {
                let skip = *since.lock().unwrap_or_else(|p| p.into_inner());
                let mut all = support::kube::requests(cluster.audit_log());
                all.drain(..skip.min(all.len()));
                all
            }
            Server::Test(server) => server.requests(),
        }
    }

    fn clear_requests(&self) {
        match self {
            Server::Real { cluster, since } => {
                let seen = support::kube::requests(cluster.audit_log()).len();
                *since.lock().unwrap_or_else(|p| p.into_inner()) = seen;
            }
            Server::Test(server) => server.clear_requests(),
        }
    }

    fn inject_fault(&self, fault: Fault) {
        match self {
            Server::Real { .. } => panic!("a real API server takes no injected fault"),
            Server::Test(server) => server.inject_fault(fault),
        }
    }

    async fn shutdown(self) {
        if let Server::Test(server) = self {
            server.shutdown().await;
        }
    }
}

/// kube-apiserver and etcd with the `default` ServiceAccount pods need; `None` after a
/// loud skip where Go is missing (never on CI).
async fn start() -> Option<(Server, kube::Client)> {
    let cluster = support::kube::start_apiserver_or_skip(&support::kube::test_name()).await?;
    let client = cluster.admin_client().await.expect("an admin client");
    support::kube::create_default_service_account(&client, "default").await;
    let since = std::sync::Mutex::new(0);
    let cluster = Box::new(cluster);
    Some((Server::Real { cluster, since }, client))
}

/// The test API server, for the cases that inject a fault.
async fn start_test_server() -> (Server, kube::Client) {
    let server = api::start().await;
    let client = server.client().await;
    (Server::Test(server), client)
}

async fn create_pod(client: &kube::Client, name: &str) -> Pod {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": SCHEDULER,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
        },
    }))
    .expect("a Pod");
    Api::<Pod>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .expect("the pod is created")
}

async fn create_node(client: &kube::Client, name: &str) {
    let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).expect("a Node");
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await
        .expect("the node is created");
}

async fn get_pod(client: &kube::Client, name: &str) -> Pod {
    Api::<Pod>::namespaced(client.clone(), "default")
        .get(name)
        .await
        .expect("the pod exists")
}

/// Binds through the API directly, as another scheduler (or an earlier attempt whose
/// response was lost) would have.
async fn bind_directly(client: &kube::Client, pod: &str, node: &str) {
    let binding: Binding = serde_json::from_value(json!({
        "metadata": {"name": pod, "namespace": "default"},
        "target": {"kind": "Node", "name": node},
    }))
    .expect("a Binding");
    Api::<Pod>::namespaced(client.clone(), "default")
        .create_subresource::<_, serde_json::Value>(
            "binding",
            pod,
            &PostParams::default(),
            &binding,
        )
        .await
        .expect("the direct bind succeeds");
}

fn binding_posts(server: &Server) -> Vec<u16> {
    requests(server, "create", "pods", Some("binding"))
        .iter()
        .map(|r| r.status)
        .collect()
}

fn requests(
    server: &Server,
    verb: &str,
    resource: &str,
    subresource: Option<&str>,
) -> Vec<RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| {
            r.verb == verb && r.resource == resource && r.subresource.as_deref() == subresource
        })
        .collect()
}

fn event_requests(server: &Server, verb: &str) -> Vec<RequestRecord> {
    requests(server, verb, "events", None)
        .into_iter()
        .filter(|r| r.group == "events.k8s.io")
        .collect()
}

fn node_name(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|spec| spec.node_name.clone())
}

fn pod_scheduled(pod: &Pod) -> Option<PodCondition> {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .and_then(|conditions| conditions.iter().find(|c| c.type_ == "PodScheduled"))
        .cloned()
}

/// The events.k8s.io/v1 Events about `pod`.
async fn events_about(client: &kube::Client, pod: &Pod) -> Vec<Event> {
    let events = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("events are listed");
    events
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.uid.as_ref()) == pod.metadata.uid.as_ref())
        .collect()
}

fn report(pod: &Pod, outcome: Outcome) -> SchedulingReport {
    SchedulingReport {
        pod: Arc::new(pod.clone()),
        scheduler_name: SCHEDULER.into(),
        outcome,
        nominating: None,
    }
}

fn unschedulable(message: &str) -> Outcome {
    Outcome::Unschedulable {
        message: message.into(),
    }
}

/// Runs [`reporting::run`] over `reports` and waits until it has handled them all (it
/// ends when the channel closes).
async fn run_reporting(client: &kube::Client, reports: Vec<SchedulingReport>) {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let task = tokio::spawn(reporting::run(rx, client.clone(), "replica-0".into()));
    for report in reports {
        tx.send(report)
            .await
            .expect("the reporting task is running");
    }
    drop(tx);
    tokio::time::timeout(WAIT, task)
        .await
        .expect("reporting ends once its channel closes")
        .expect("reporting does not panic");
}

// ---------------------------------------------------------------------------------------
// KubeBinder

#[tokio::test]
async fn bind_sets_the_node_name_with_one_binding() {
    let Some((server, client)) = start().await else {
        return;
    };
    create_node(&client, "node-a").await;
    let pod = create_pod(&client, "web-1").await;

    let result = KubeBinder::new(client.clone()).bind(&pod, "node-a").await;

    assert_eq!(result, Ok(()));
    let bound = get_pod(&client, "web-1").await;
    assert_eq!(node_name(&bound).as_deref(), Some("node-a"));
    assert_eq!(binding_posts(&server), vec![201]);
    server.shutdown().await;
}

#[tokio::test]
async fn bind_of_an_already_bound_pod_reads_it_back_instead_of_binding_again() {
    let cases = [
        ("the same node: an earlier bind landed", "node-a", Ok(())),
        (
            "another node",
            "node-b",
            Err(BindError::AlreadyBound {
                pod: "default/web-1".into(),
                node: "node-a".into(),
            }),
        ),
    ];
    for (name, node, want) in cases {
        let Some((server, client)) = start().await else {
            return;
        };
        let pod = create_pod(&client, "web-1").await;
        bind_directly(&client, "web-1", "node-a").await;
        let bound_version = get_pod(&client, "web-1").await.metadata.resource_version;
        server.clear_requests();

        let result = KubeBinder::new(client.clone()).bind(&pod, node).await;

        assert_eq!(result, want, "case {name}");
        assert_eq!(
            binding_posts(&server),
            vec![409],
            "case {name}: one refused POST"
        );
        let after = get_pod(&client, "web-1").await;
        assert_eq!(
            after.metadata.resource_version, bound_version,
            "case {name}: the pod was not written again"
        );
        assert_eq!(node_name(&after).as_deref(), Some("node-a"), "case {name}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn bind_of_a_missing_pod_is_not_found() {
    let Some((server, client)) = start().await else {
        return;
    };
    let ghost: Pod = serde_json::from_value(json!({
        "metadata": {"name": "ghost", "namespace": "default", "uid": "0000"},
    }))
    .expect("a Pod");

    let result = KubeBinder::new(client.clone()).bind(&ghost, "node-a").await;

    assert_eq!(result, Err(BindError::NotFound("default/ghost".into())));
    assert_eq!(binding_posts(&server), vec![404], "404 is not retried");
    server.shutdown().await;
}

#[tokio::test]
async fn bind_of_a_pod_recreated_under_its_name_is_not_found() {
    // The scheduled pod was deleted and a new one with the same name was bound elsewhere:
    // the 409 is about a different pod (different uid), so ours is gone.
    let Some((server, client)) = start().await else {
        return;
    };
    let scheduled = create_pod(&client, "web-1").await;
    Api::<Pod>::namespaced(client.clone(), "default")
        .delete("web-1", &DeleteParams::default())
        .await
        .expect("the pod is deleted");
    create_pod(&client, "web-1").await;
    bind_directly(&client, "web-1", "node-a").await;

    let result = KubeBinder::new(client.clone())
        .bind(&scheduled, "node-a")
        .await;

    assert_eq!(result, Err(BindError::NotFound("default/web-1".into())));
    server.shutdown().await;
}

#[tokio::test]
async fn bind_retries_transient_errors_only() {
    // (case, status injected, how many times, want bound, want POST statuses)
    let cases: [(&str, u16, usize, bool, Vec<u16>); 6] = [
        ("two 500s", 500, 2, true, vec![500, 500, 201]),
        ("a 429", 429, 1, true, vec![429, 201]),
        ("a 503", 503, 1, true, vec![503, 201]),
        (
            "500s beyond the retries",
            500,
            10,
            false,
            vec![500, 500, 500, 500, 500],
        ),
        ("a 403 is final", 403, 1, false, vec![403]),
        ("a 422 is final", 422, 1, false, vec![422]),
    ];
    for (name, status, count, want_bound, want_posts) in cases {
        let (server, client) = start_test_server().await;
        let pod = create_pod(&client, "web-1").await;
        server.inject_fault(Fault {
            verb: Some("create".into()),
            resource: Some("pods/binding".into()),
            count,
            status,
            message: format!("injected {status}"),
        });

        let result = KubeBinder::new(client.clone())
            .with_initial_backoff(TEST_BACKOFF)
            .bind(&pod, "node-a")
            .await;

        assert_eq!(binding_posts(&server), want_posts, "case {name}");
        let bound = node_name(&get_pod(&client, "web-1").await);
        if want_bound {
            assert_eq!(result, Ok(()), "case {name}");
            assert_eq!(bound.as_deref(), Some("node-a"), "case {name}");
        } else {
            match result {
                Err(BindError::Other(message)) => assert!(
                    message.contains(&format!("injected {status}")),
                    "case {name}: the error names the last failure: {message}"
                ),
                other => panic!("case {name}: want BindError::Other, got {other:?}"),
            }
            assert_eq!(bound, None, "case {name}");
        }
        server.shutdown().await;
    }
}

#[tokio::test]
async fn bind_retries_wait_with_exponential_backoff() {
    // Two retries with the default backoff wait 100 ms + 200 ms.
    let (server, client) = start_test_server().await;
    let pod = create_pod(&client, "web-1").await;
    server.inject_fault(Fault {
        verb: Some("create".into()),
        resource: Some("pods/binding".into()),
        count: 2,
        status: 500,
        message: String::new(),
    });

    let started = std::time::Instant::now();
    let result = KubeBinder::new(client.clone()).bind(&pod, "node-a").await;

    assert_eq!(result, Ok(()));
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300),
        "retries waited only {elapsed:?}"
    );
    server.shutdown().await;
}

// ---------------------------------------------------------------------------------------
// Reporting

#[tokio::test]
async fn a_failure_sets_pod_scheduled_false_and_a_failed_scheduling_event() {
    let message = "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.";
    let cases = [
        ("unschedulable", unschedulable(message), "Unschedulable"),
        (
            "scheduler error",
            Outcome::Error {
                message: message.into(),
            },
            "SchedulerError",
        ),
    ];
    for (name, outcome, want_reason) in cases {
        let Some((server, client)) = start().await else {
            return;
        };
        let pod = create_pod(&client, "web-1").await;

        run_reporting(&client, vec![report(&pod, outcome)]).await;

        let condition = pod_scheduled(&get_pod(&client, "web-1").await)
            .unwrap_or_else(|| panic!("case {name}: no PodScheduled condition"));
        assert_eq!(condition.status, "False", "case {name}");
        assert_eq!(
            condition.reason.as_deref(),
            Some(want_reason),
            "case {name}"
        );
        assert_eq!(condition.message.as_deref(), Some(message), "case {name}");
        assert!(condition.last_transition_time.is_some(), "case {name}");
        assert_eq!(condition.last_probe_time, None, "case {name}: as upstream");

        let events = events_about(&client, &pod).await;
        assert_eq!(events.len(), 1, "case {name}: {events:?}");
        let event = &events[0];
        assert_eq!(event.type_.as_deref(), Some("Warning"), "case {name}");
        assert_eq!(
            event.reason.as_deref(),
            Some("FailedScheduling"),
            "case {name}"
        );
        assert_eq!(event.action.as_deref(), Some("Scheduling"), "case {name}");
        assert_eq!(event.note.as_deref(), Some(message), "case {name}");
        assert_eq!(
            event.reporting_controller.as_deref(),
            Some(SCHEDULER),
            "case {name}: reported by the profile, as upstream"
        );
        assert_eq!(
            event.reporting_instance.as_deref(),
            Some("batch-replica-0"),
            "case {name}"
        );
        let regarding = event.regarding.as_ref().expect("the event regards the pod");
        assert_eq!(regarding.kind.as_deref(), Some("Pod"), "case {name}");
        assert_eq!(regarding.name.as_deref(), Some("web-1"), "case {name}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn ten_identical_failures_make_one_patch_and_one_event() {
    let Some((server, client)) = start().await else {
        return;
    };
    let pod = create_pod(&client, "web-1").await;
    let message = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.";
    server.clear_requests();

    // The same (stale) pod every time, as the queue holds it between attempts.
    let reports = (0..10)
        .map(|_| report(&pod, unschedulable(message)))
        .collect();
    run_reporting(&client, reports).await;

    assert_eq!(
        requests(&server, "patch", "pods", Some("status")).len(),
        1,
        "one condition patch"
    );
    assert_eq!(
        event_requests(&server, "create").len(),
        1,
        "one Event created"
    );
    assert_eq!(
        event_requests(&server, "patch").len(),
        0,
        "no series updates"
    );
    assert_eq!(events_about(&client, &pod).await.len(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_new_message_repatches_the_condition_and_extends_the_event_series() {
    let Some((server, client)) = start().await else {
        return;
    };
    let pod = create_pod(&client, "web-1").await;
    let first = "0/1 nodes are available: 1 Insufficient cpu.";
    let second = "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s).";

    let mut reporter = PodReporter::new(client.clone(), "replica-0".into());
    reporter.report(&report(&pod, unschedulable(first))).await;
    let transition = pod_scheduled(&get_pod(&client, "web-1").await)
        .and_then(|c| c.last_transition_time)
        .expect("the first failure sets lastTransitionTime");
    tokio::time::sleep(Duration::from_millis(1100)).await; // Time has second precision
    reporter.report(&report(&pod, unschedulable(second))).await;

    let condition = pod_scheduled(&get_pod(&client, "web-1").await).expect("PodScheduled");
    assert_eq!(condition.message.as_deref(), Some(second));
    assert_eq!(
        condition.last_transition_time,
        Some(transition),
        "the status stayed False, so the transition time stays"
    );
    let events = events_about(&client, &pod).await;
    assert_eq!(events.len(), 1, "one Event for the pod: {events:?}");
    // As upstream's recorder: a series keeps its first note; the condition has the latest.
    assert_eq!(events[0].note.as_deref(), Some(first));
    assert_eq!(events[0].series.as_ref().map(|s| s.count), Some(2));
    server.shutdown().await;
}

#[tokio::test]
async fn a_message_that_comes_back_is_patched_again() {
    // The queue's copy of the pod shows the first message, written before the second:
    // the reporter must not take that stale copy for the pod's state.
    let Some((server, client)) = start().await else {
        return;
    };
    let pod = create_pod(&client, "web-1").await;
    let a = "0/1 nodes are available: 1 Insufficient cpu.";
    let b = "0/1 nodes are available: 1 node(s) were unschedulable.";
    let mut reporter = PodReporter::new(client.clone(), "replica-0".into());
    reporter.report(&report(&pod, unschedulable(a))).await;
    let showing_a = get_pod(&client, "web-1").await;

    reporter.report(&report(&showing_a, unschedulable(b))).await;
    reporter.report(&report(&showing_a, unschedulable(a))).await;

    assert_eq!(requests(&server, "patch", "pods", Some("status")).len(), 3);
    let condition = pod_scheduled(&get_pod(&client, "web-1").await).expect("PodScheduled");
    assert_eq!(condition.message.as_deref(), Some(a));
    server.shutdown().await;
}

#[tokio::test]
async fn an_identical_failure_after_the_memory_window_is_counted_in_the_series() {
    let Some((server, client)) = start().await else {
        return;
    };
    let pod = create_pod(&client, "web-1").await;
    let message = "0/1 nodes are available: 1 Insufficient memory.";
    let mut reporter = PodReporter::new(client.clone(), "replica-0".into())
        .with_failure_memory(Duration::from_millis(200));

    reporter.report(&report(&pod, unschedulable(message))).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // By now the queue's copy of the pod has the condition from the watch.
    let refreshed = get_pod(&client, "web-1").await;
    reporter
        .report(&report(&refreshed, unschedulable(message)))
        .await;

    assert_eq!(
        requests(&server, "patch", "pods", Some("status")).len(),
        1,
        "the pod shows the condition, so it is not patched again"
    );
    let events = events_about(&client, &pod).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].series.as_ref().map(|s| s.count), Some(2));
    server.shutdown().await;
}

fn nomination(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()
        .and_then(|status| status.nominated_node_name.clone())
}

#[tokio::test]
async fn a_decided_nomination_is_patched_with_the_failure() {
    // Upstream's updatePod on a failure: nominatedNodeName is written with the
    // PodScheduled condition when preemption decided it (Override; "" clears) and differs
    // from the pod's; nothing is patched when neither changes.
    let message = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";
    // (case, the pod's nomination, the pod already has the condition, the decision,
    // status patches, the nomination after)
    type Case = (
        &'static str,
        Option<&'static str>,
        bool,
        Option<&'static str>,
        usize,
        Option<&'static str>,
    );
    let cases: [Case; 7] = [
        (
            "nominating sets the node with the condition",
            None,
            false,
            Some("node-a"),
            1,
            Some("node-a"),
        ),
        (
            "nominating another node",
            Some("node-a"),
            false,
            Some("node-b"),
            1,
            Some("node-b"),
        ),
        (
            "an empty nomination clears it",
            Some("node-a"),
            false,
            Some(""),
            1,
            None,
        ),
        (
            "no decision leaves the nomination",
            Some("node-a"),
            false,
            None,
            1,
            Some("node-a"),
        ),
        (
            "only the nomination changed",
            Some("node-a"),
            true,
            Some("node-b"),
            1,
            Some("node-b"),
        ),
        (
            "only the clearing changed",
            Some("node-a"),
            true,
            Some(""),
            1,
            None,
        ),
        (
            "neither changed: no patch",
            Some("node-a"),
            true,
            Some("node-a"),
            0,
            Some("node-a"),
        ),
    ];
    for (name, before, has_condition, decided, want_patches, want_after) in cases {
        let Some((server, client)) = start().await else {
            return;
        };
        create_pod(&client, "web-1").await;
        let mut status = json!({"nominatedNodeName": before});
        if has_condition {
            status["conditions"] = json!([{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": message, "lastTransitionTime": "2026-01-02T03:04:05Z",
            }]);
        }
        Api::<Pod>::namespaced(client.clone(), "default")
            .patch_status(
                "web-1",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Strategic(json!({ "status": status })),
            )
            .await
            .expect("the pod's status is written");
        let pod = get_pod(&client, "web-1").await;
        server.clear_requests();

        let mut failure = report(&pod, unschedulable(message));
        failure.nominating = decided.map(str::to_string);
        run_reporting(&client, vec![failure]).await;

        assert_eq!(
            requests(&server, "patch", "pods", Some("status")).len(),
            want_patches,
            "case {name}"
        );
        let after = get_pod(&client, "web-1").await;
        assert_eq!(nomination(&after).as_deref(), want_after, "case {name}");
        let condition = pod_scheduled(&after).expect("PodScheduled");
        assert_eq!(condition.message.as_deref(), Some(message), "case {name}");
        if has_condition {
            assert_eq!(
                condition.last_transition_time.map(|t| t.0.to_string()),
                Some("2026-01-02T03:04:05Z".to_string()),
                "case {name}: the condition was not rewritten"
            );
        }
        server.shutdown().await;
    }
}

#[tokio::test]
async fn success_publishes_the_upstream_scheduled_event() {
    let Some((server, client)) = start().await else {
        return;
    };
    let pod = create_pod(&client, "web-1").await;
    bind_directly(&client, "web-1", "node-a").await;

    run_reporting(
        &client,
        vec![report(
            &pod,
            Outcome::Scheduled {
                node: "node-a".into(),
            },
        )],
    )
    .await;

    let events = events_about(&client, &pod).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    assert_eq!(event.reason.as_deref(), Some("Scheduled"));
    assert_eq!(event.action.as_deref(), Some("Binding"));
    assert_eq!(
        event.note.as_deref(),
        Some("Successfully assigned default/web-1 to node-a")
    );
    assert_eq!(
        requests(&server, "patch", "pods", Some("status")).len(),
        0,
        "the binding already set PodScheduled=True"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_deleted_pod_is_skipped_and_reporting_goes_on() {
    let Some((server, client)) = start().await else {
        return;
    };
    let gone = create_pod(&client, "gone").await;
    Api::<Pod>::namespaced(client.clone(), "default")
        .delete("gone", &DeleteParams::default())
        .await
        .expect("the pod is deleted");
    let live = create_pod(&client, "live").await;

    run_reporting(
        &client,
        vec![
            report(&gone, unschedulable("0/1 nodes are available.")),
            report(&live, unschedulable("0/1 nodes are available.")),
        ],
    )
    .await;

    assert!(events_about(&client, &gone).await.is_empty());
    assert_eq!(events_about(&client, &live).await.len(), 1);
    assert!(pod_scheduled(&get_pod(&client, "live").await).is_some());
    server.shutdown().await;
}

#[tokio::test]
async fn failed_writes_are_retried_by_the_next_report() {
    let (server, client) = start_test_server().await;
    let pod = create_pod(&client, "web-1").await;
    let message = "0/1 nodes are available: 1 Too many pods.";
    server.inject_fault(Fault {
        verb: Some("patch".into()),
        resource: Some("pods/status".into()),
        count: 1,
        status: 500,
        message: String::new(),
    });
    server.inject_fault(Fault {
        verb: Some("create".into()),
        resource: Some("events".into()),
        count: 1,
        status: 500,
        message: String::new(),
    });

    run_reporting(
        &client,
        vec![
            report(&pod, unschedulable(message)),
            report(&pod, unschedulable(message)),
        ],
    )
    .await;

    let patches: Vec<u16> = requests(&server, "patch", "pods", Some("status"))
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(patches, vec![500, 200]);
    let creates: Vec<u16> = event_requests(&server, "create")
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(creates, vec![500, 201]);
    assert_eq!(
        pod_scheduled(&get_pod(&client, "web-1").await).and_then(|c| c.message),
        Some(message.to_string())
    );
    assert_eq!(events_about(&client, &pod).await.len(), 1);
    server.shutdown().await;
}
