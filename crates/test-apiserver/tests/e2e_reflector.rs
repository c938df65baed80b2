//! A kube-runtime reflector over the test API server stays correct when its watches are
//! dropped and when its resourceVersion expires (410 Gone, then a relist), in both the
//! list-then-watch and the streaming-list initial modes.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::json;
use test_apiserver::{Fault, RequestRecord, TestApiServer};
use tokio::task::JoinHandle;

/// The User-Agent of the reflectors' clients, to tell their requests from the checks'.
const AGENT: &str = "berth-e2e-reflector/1";

/// A running reflector: its store, the task driving it, and how many errors it has seen.
struct Reflector<K: Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    task: JoinHandle<()>,
    errors: Arc<AtomicUsize>,
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Drop for Reflector<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run_reflector<K>(api: Api<K>, config: watcher::Config) -> Reflector<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let errors = Arc::new(AtomicUsize::new(0));
    let counted = errors.clone();
    let stream = reflector::reflector(writer, watcher(api, config).default_backoff());
    let task = tokio::spawn(async move {
        stream
            .for_each(|event| {
                if let Err(error) = event {
                    eprintln!("reflector: watcher error (expected in these tests): {error}");
                    counted.fetch_add(1, Ordering::SeqCst);
                }
                std::future::ready(())
            })
            .await
    });
    within("the reflector's first sync", store.wait_until_ready())
        .await
        .expect("the reflector's writer is alive");
    Reflector {
        store,
        task,
        errors,
    }
}

/// name -> resourceVersion, as the server lists them.
async fn server_state<K>(api: &Api<K>) -> Result<BTreeMap<String, String>, String>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("list failed: {e}"))?;
    Ok(list
        .items
        .iter()
        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
        .collect())
}

/// name -> resourceVersion, as the reflector's store holds them.
fn store_state<K: Resource<DynamicType = ()> + Clone>(
    store: &Store<K>,
) -> BTreeMap<String, String> {
    store
        .state()
        .iter()
        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
        .collect()
}

/// Waits until the store holds exactly the server's objects, at their current versions.
async fn converge<K>(what: &str, api: &Api<K>, store: &Store<K>) -> BTreeMap<String, String>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    eventually(
        &format!("the reflector's store equals the server's objects ({what})"),
        || async {
            let server = server_state(api).await?;
            let store = store_state(store);
            if server == store {
                Ok(server)
            } else {
                Err(format!("server has {server:?}, store has {store:?}"))
            }
        },
    )
    .await
}

#[tokio::test]
async fn reflector_stays_correct_across_dropped_watches() {
    let server = start().await;
    let client = server.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let pp = PostParams::default();
    for name in ["node-a", "node-b"] {
        nodes
            .create(&pp, &node(name, &[]))
            .await
            .expect("create node");
    }

    let reflector_client = client_with_agent(&server, AGENT).await;
    let reflector = run_reflector(
        Api::<Node>::all(reflector_client),
        watcher::Config::default(),
    )
    .await;
    let initial = converge("after the first sync", &nodes, &reflector.store).await;
    assert_eq!(initial.len(), 2);

    // Each drop is followed by changes; the watcher resumes from its resourceVersion and
    // sees all of them.
    for round in 0..3 {
        server.drop_watches();
        nodes
            .create(&pp, &node(&format!("node-new-{round}"), &[]))
            .await
            .expect("create node");
        nodes
            .patch(
                "node-b",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"round": round.to_string()}}})),
            )
            .await
            .expect("patch node-b");
        let state = converge(&format!("after drop {round}"), &nodes, &reflector.store).await;
        assert_eq!(state.len(), 3 + round);
    }
    nodes
        .delete("node-a", &DeleteParams::default())
        .await
        .expect("delete node-a");
    server.drop_watches();
    let state = converge("after a delete and a drop", &nodes, &reflector.store).await;
    assert!(!state.contains_key("node-a"), "{state:?}");
    let labels = reflector
        .store
        .state()
        .iter()
        .find(|n| n.name_any() == "node-b")
        .map(|n| n.labels().clone())
        .expect("node-b in the store");
    assert_eq!(labels.get("round").map(String::as_str), Some("2"));

    // A dropped watch with history still kept resumes by watching again; it never needs
    // to list again.
    let mine = requests_by(&server, AGENT);
    let lists: Vec<_> = mine.iter().filter(|r| r.verb == "list").collect();
    let watches: Vec<_> = mine.iter().filter(|r| r.verb == "watch").collect();
    assert_eq!(
        lists.len(),
        1,
        "the reflector listed more than once although no resourceVersion expired:{}",
        log_summary(&server)
    );
    assert!(
        watches.len() >= 4,
        "expected a new watch after each of the 4 drops:{}",
        log_summary(&server)
    );
    drop(reflector);
    server.shutdown().await;
}

/// Drops the reflector's watch while its reconnect is held off by a fault, changes the
/// pods meanwhile (a deletion only a relist can reveal), then expires the history: the
/// reconnect gets 410 Gone and the reflector relists.
async fn relist_after_expired_history(streaming: bool) {
    let server = start().await;
    let client = server.client().await;
    let namespace = if streaming {
        "relist-streaming"
    } else {
        "relist"
    };
    ensure_namespace(&client, namespace).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pp = PostParams::default();
    for name in ["pod-1", "pod-2", "pod-3"] {
        pods.create(&pp, &pod(name, &[("app", "web")]))
            .await
            .expect("create pod");
    }

    let config = if streaming {
        watcher::Config::default().streaming_lists()
    } else {
        watcher::Config::default()
    };
    let reflector_client = client_with_agent(&server, AGENT).await;
    let reflector =
        run_reflector(Api::<Pod>::namespaced(reflector_client, namespace), config).await;
    converge("after the first sync", &pods, &reflector.store).await;
    let first_requests = requests_by(&server, AGENT).len();

    // The next watch of pods (the reconnect after the drop) fails, so the watcher backs
    // off and is not watching while the pods change.
    server.inject_fault(Fault {
        verb: Some("watch".into()),
        resource: Some("pods".into()),
        count: 1,
        status: 500,
        message: "injected: watch unavailable".into(),
    });
    server.drop_watches();
    pods.delete("pod-1", &DeleteParams::default())
        .await
        .expect("delete pod-1");
    pods.create(&pp, &pod("pod-4", &[("app", "web")]))
        .await
        .expect("create pod-4");
    pods.patch(
        "pod-2",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"changed": "yes"}}})),
    )
    .await
    .expect("patch pod-2");
    server.expire_history();

    let state = converge("after the 410 and the relist", &pods, &reflector.store).await;
    assert_eq!(
        state.keys().map(String::as_str).collect::<Vec<_>>(),
        ["pod-2", "pod-3", "pod-4"],
        "a pod deleted while the watcher was away must be gone after the relist"
    );
    assert!(
        reflector.errors.load(Ordering::SeqCst) >= 1,
        "the watcher should have seen the injected fault (and the 410)"
    );

    let mine = requests_by(&server, AGENT);
    let after = &mine[first_requests..];
    assert!(
        after.iter().any(|r| r.verb == "watch" && r.status == 500),
        "the injected fault should be in the request log:{}",
        log_summary(&server)
    );
    let lists = |requests: &[RequestRecord]| requests.iter().filter(|r| r.verb == "list").count();
    let streaming_watches = |requests: &[RequestRecord]| {
        requests
            .iter()
            .filter(|r| r.verb == "watch" && r.query.contains("sendInitialEvents=true"))
            .count()
    };
    if streaming {
        // The initial sync and the relist are watches with sendInitialEvents, never lists.
        assert_eq!(
            (lists(&mine), streaming_watches(&mine[..first_requests])),
            (0, 1),
            "expected one streaming initial sync and no list:{}",
            log_summary(&server)
        );
        assert!(
            streaming_watches(after) >= 1,
            "expected a streaming relist after the 410:{}",
            log_summary(&server)
        );
    } else {
        assert_eq!(
            lists(&mine[..first_requests]),
            1,
            "expected one initial list:{}",
            log_summary(&server)
        );
        assert!(
            lists(after) >= 1,
            "expected a relist after the 410:{}",
            log_summary(&server)
        );
    }
    drop(reflector);
    server.shutdown().await;
}

#[tokio::test]
async fn reflector_relists_after_410_gone() {
    relist_after_expired_history(false).await;
}

#[tokio::test]
async fn streaming_list_reflector_relists_after_410_gone() {
    relist_after_expired_history(true).await;
}

/// The server object a typed client sees through the store equals a fresh GET.
#[tokio::test]
async fn reflector_store_holds_current_objects() {
    let server: TestApiServer = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "objects").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "objects");
    pods.create(&PostParams::default(), &pod("p", &[("k", "v")]))
        .await
        .expect("create");
    let reflector = run_reflector(pods.clone(), watcher::Config::default()).await;
    pods.patch(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"a": "b"}}})),
    )
    .await
    .expect("patch");
    converge("after a patch", &pods, &reflector.store).await;
    let fresh = pods.get("p").await.expect("get");
    let cached = reflector
        .store
        .state()
        .into_iter()
        .find(|p| p.name_any() == "p")
        .expect("p is cached");
    assert_eq!(cached.metadata, fresh.metadata);
    assert_eq!(cached.spec, fresh.spec);
    drop(reflector);
    server.shutdown().await;
}
