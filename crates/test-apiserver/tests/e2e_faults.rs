//! Fault injection (failing requests, delays) and the request log that tests read to
//! assert, for example, that a client watches instead of polling.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use test_apiserver::Fault;

fn fault(verb: Option<&str>, resource: Option<&str>, count: usize, status: u16) -> Fault {
    Fault {
        verb: verb.map(str::to_string),
        resource: resource.map(str::to_string),
        count,
        status,
        message: format!("injected fault {status}"),
    }
}

#[tokio::test]
async fn injected_faults_fail_the_next_matching_requests() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "faults").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "faults");
    let nodes: Api<Node> = Api::all(client.clone());
    let pp = PostParams::default();

    // Two pod creates fail with 500; other requests are unaffected meanwhile.
    server.inject_fault(fault(Some("create"), Some("pods"), 2, 500));
    let status = assert_api_error(
        "the first faulted create",
        pods.create(&pp, &pod("p", &[])).await,
        500,
        "InternalError",
    );
    assert!(status.message.contains("injected fault 500"), "{status:?}");
    nodes
        .create(&pp, &node("n", &[]))
        .await
        .expect("a node create does not match the fault");
    pods.list(&ListParams::default())
        .await
        .expect("a pod list does not match the fault");
    assert_eq!(
        api_status(
            "the second faulted create",
            pods.create(&pp, &pod("p", &[])).await
        )
        .code,
        500
    );
    pods.create(&pp, &pod("p", &[]))
        .await
        .expect("the third create succeeds: the fault is used up");

    // A fault with no verb or resource matches the next request of any kind, with the
    // status's usual reason.
    server.inject_fault(fault(None, None, 1, 409));
    let status = api_status("any request, faulted", nodes.get("n").await);
    assert_eq!(status.code, 409, "{status:?}");
    nodes.get("n").await.expect("the fault is used up");

    server.inject_fault(fault(Some("get"), None, 1, 404));
    assert_api_error("a faulted get", pods.get("p").await, 404, "NotFound");
    pods.get("p").await.expect("used up");

    server.inject_fault(fault(Some("patch"), Some("nodes"), 1, 422));
    let status = api_status(
        "a faulted patch",
        nodes
            .patch(
                "n",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
            )
            .await,
    );
    assert_eq!(status.code, 422, "{status:?}");

    // The faults appear in the request log with their status.
    let failed: Vec<(String, String, u16)> = server
        .requests()
        .into_iter()
        .filter(|r| r.status >= 400)
        .map(|r| (r.verb, r.resource, r.status))
        .collect();
    assert_eq!(
        failed,
        [
            ("create".to_string(), "pods".to_string(), 500),
            ("create".to_string(), "pods".to_string(), 500),
            ("get".to_string(), "nodes".to_string(), 409),
            ("get".to_string(), "pods".to_string(), 404),
            ("patch".to_string(), "nodes".to_string(), 422),
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn delay_slows_every_response_until_cleared() {
    let server = start().await;
    let client = server.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    nodes.list(&ListParams::default()).await.expect("warm up");

    let delay = Duration::from_millis(300);
    server.set_delay(Some(delay));
    let started = Instant::now();
    within("a delayed list", nodes.list(&ListParams::default()))
        .await
        .expect("a delayed list still succeeds");
    assert!(
        started.elapsed() >= delay,
        "the response came after {:?}, before the {delay:?} delay",
        started.elapsed()
    );
    server.set_delay(None);
    within("an undelayed list", nodes.list(&ListParams::default()))
        .await
        .expect("list");
    server.shutdown().await;
}

#[tokio::test]
async fn request_log_records_verbs_resources_and_user_agents() {
    let server = start().await;
    let setup = server.client().await;
    ensure_namespace(&setup, "log").await;
    server.clear_requests();
    assert!(
        server.requests().is_empty(),
        "clear_requests empties the log"
    );

    let agent = "berth-e2e-log/1.0";
    let client = client_with_agent(&server, agent).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "log");
    let pp = PostParams::default();
    pods.create(&pp, &pod("p", &[])).await.expect("create");
    pods.get("p").await.expect("get");
    let _ = pods.get("missing").await;
    pods.patch_status(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .expect("patch status");
    pods.list(&ListParams::default().labels("a=b"))
        .await
        .expect("list");
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .list(&ListParams::default())
        .await
        .expect("list nodes");

    let log = requests_by(&server, agent);
    let rows: Vec<_> = log
        .iter()
        .map(|r| {
            (
                r.verb.as_str(),
                r.method.as_str(),
                r.group.as_str(),
                r.version.as_str(),
                r.resource.as_str(),
                r.subresource.as_deref(),
                r.namespace.as_deref(),
                r.name.as_deref(),
                r.status,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "create",
                "POST",
                "",
                "v1",
                "pods",
                None,
                Some("log"),
                None,
                201
            ),
            (
                "get",
                "GET",
                "",
                "v1",
                "pods",
                None,
                Some("log"),
                Some("p"),
                200
            ),
            (
                "get",
                "GET",
                "",
                "v1",
                "pods",
                None,
                Some("log"),
                Some("missing"),
                404
            ),
            (
                "patch",
                "PATCH",
                "",
                "v1",
                "pods",
                Some("status"),
                Some("log"),
                Some("p"),
                200
            ),
            (
                "list",
                "GET",
                "",
                "v1",
                "pods",
                None,
                Some("log"),
                None,
                200
            ),
            ("list", "GET", "", "v1", "nodes", None, None, None, 200),
        ],
        "request log:{}",
        log_summary(&server)
    );
    assert_eq!(log[1].path, "/api/v1/namespaces/log/pods/p");
    assert!(
        log[4].query.contains("labelSelector=a%3Db") || log[4].query.contains("labelSelector=a=b"),
        "the query is recorded: {:?}",
        log[4].query
    );
    // Requests of the setup client are logged too, with their own user agent.
    assert!(server.requests().iter().all(|r| !r.verb.is_empty()));
    server.shutdown().await;
}

/// What "berth does not poll" will be checked with: a watcher makes one list and then
/// watches; while nothing changes it makes no further lists or gets.
#[tokio::test]
async fn request_log_shows_a_watcher_watches_instead_of_polling() {
    let server = start().await;
    let setup = server.client().await;
    ensure_namespace(&setup, "nopoll").await;
    let setup_pods: Api<Pod> = Api::namespaced(setup.clone(), "nopoll");
    setup_pods
        .create(&PostParams::default(), &pod("p", &[]))
        .await
        .expect("create");

    let agent = "berth-e2e-watcher/1.0";
    let client = client_with_agent(&server, agent).await;
    let pods: Api<Pod> = Api::namespaced(client, "nopoll");
    let mut events = Box::pin(watcher(pods, watcher::Config::default()).applied_objects());
    within("the watcher's first object", events.next())
        .await
        .expect("an event")
        .expect("no error");

    // Changes arrive over the watch.
    for i in 0..3 {
        setup_pods
            .patch(
                "p",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"i": i.to_string()}}})),
            )
            .await
            .expect("patch");
        within("a change over the watch", events.next())
            .await
            .expect("an event")
            .expect("no error");
    }
    let log = requests_by(&server, agent);
    let verbs: Vec<&str> = log.iter().map(|r| r.verb.as_str()).collect();
    assert_eq!(
        verbs,
        ["list", "watch"],
        "a watcher lists once and watches:{}",
        log_summary(&server)
    );
    assert!(
        log.iter()
            .all(|r| r.resource == "pods" && r.namespace.as_deref() == Some("nopoll"))
    );
    assert!(log[1].query.contains("watch=true"), "{:?}", log[1].query);
    server.shutdown().await;
}
