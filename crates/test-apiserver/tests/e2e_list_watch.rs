//! List and watch: label and field selectors, `limit`/`continue` pagination, the list
//! resourceVersion, watch events in order from a resourceVersion, bookmarks,
//! timeoutSeconds, 410 Gone, and streaming lists with the initial-events-end bookmark.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use test_apiserver::Config;

fn names<K: ResourceExt>(items: &[K]) -> BTreeSet<String> {
    items.iter().map(|o| o.name_any()).collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[tokio::test]
async fn label_selectors() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "labels").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "labels");
    let pp = PostParams::default();
    for (name, labels) in [
        ("web-front", vec![("app", "web"), ("tier", "frontend")]),
        ("web-plain", vec![("app", "web")]),
        ("db", vec![("app", "db"), ("tier", "backend")]),
        ("bare", vec![]),
    ] {
        pods.create(&pp, &pod(name, &labels)).await.expect("create");
    }
    let cases: &[(&str, &[&str])] = &[
        ("app=web", &["web-front", "web-plain"]),
        ("app==web", &["web-front", "web-plain"]),
        // `!=` and `notin` also match objects without the label, as upstream.
        ("app!=web", &["db", "bare"]),
        ("app in (web,db)", &["web-front", "web-plain", "db"]),
        ("app notin (web)", &["db", "bare"]),
        ("tier", &["web-front", "db"]),
        ("!tier", &["web-plain", "bare"]),
        ("app=web,tier=frontend", &["web-front"]),
        ("app=web,!tier", &["web-plain"]),
        ("app in (web),tier notin (frontend)", &["web-plain"]),
        ("app=nothing", &[]),
    ];
    let mut failures = Vec::new();
    for (selector, want) in cases {
        match pods.list(&ListParams::default().labels(selector)).await {
            Ok(list) if names(&list.items) == set(want) => {}
            Ok(list) => failures.push(format!(
                "labelSelector {selector:?}: got {:?}, want {want:?}",
                names(&list.items)
            )),
            Err(e) => failures.push(format!("labelSelector {selector:?}: {e}")),
        }
    }
    // The same selectors filter watches.
    let list = pods.list(&ListParams::default()).await.expect("list");
    let version = list
        .metadata
        .resource_version
        .expect("a list resourceVersion");
    let mut watch = Box::pin(
        pods.watch(&WatchParams::default().labels("tier=backend"), &version)
            .await
            .expect("watch"),
    );
    pods.create(&pp, &pod("web-2", &[("app", "web"), ("tier", "frontend")]))
        .await
        .expect("create");
    pods.create(&pp, &pod("db-2", &[("app", "db"), ("tier", "backend")]))
        .await
        .expect("create");
    let first = loop {
        match within("a selected watch event", watch.try_next())
            .await
            .expect("a watch event")
            .expect("the watch stays open")
        {
            WatchEvent::Bookmark(_) => continue,
            event => break event,
        }
    };
    match first {
        WatchEvent::Added(p) => assert_eq!(p.name_any(), "db-2", "the watch filters by label"),
        other => panic!("expected ADDED db-2, got {other:?}"),
    }

    // A malformed selector is a 400.
    let status = api_status(
        "a malformed label selector",
        pods.list(&ListParams::default().labels("app in (web"))
            .await,
    );
    assert_eq!(status.code, 400, "{status:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    server.shutdown().await;
}

#[tokio::test]
async fn field_selectors() {
    let server = start().await;
    let client = server.client().await;
    for namespace in ["fields-a", "fields-b"] {
        ensure_namespace(&client, namespace).await;
    }
    let pp = PostParams::default();
    let in_a: Api<Pod> = Api::namespaced(client.clone(), "fields-a");
    let in_b: Api<Pod> = Api::namespaced(client.clone(), "fields-b");
    let mut batch = pod("batch-job", &[]);
    batch.spec.as_mut().expect("spec").scheduler_name = Some("batch".into());
    in_a.create(&pp, &batch).await.expect("create");
    let mut bound = pod("bound", &[]);
    bound.spec.as_mut().expect("spec").node_name = Some("node-1".into());
    bound.spec.as_mut().expect("spec").scheduler_name = Some("batch".into());
    in_a.create(&pp, &bound).await.expect("create");
    in_a.create(&pp, &pod("done", &[])).await.expect("create");
    in_a.patch_status(
        "done",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
    )
    .await
    .expect("set phase");
    in_b.create(&pp, &pod("other", &[])).await.expect("create");

    let all: Api<Pod> = Api::all(client.clone());
    let cases: &[(&Api<Pod>, &str, &[&str])] = &[
        (&in_a, "metadata.name=bound", &["bound"]),
        (&in_a, "metadata.name!=bound", &["batch-job", "done"]),
        (&all, "metadata.namespace=fields-b", &["other"]),
        (
            &all,
            "metadata.namespace!=fields-b",
            &["batch-job", "bound", "done"],
        ),
        (&all, "spec.nodeName=node-1", &["bound"]),
        // What a scheduler lists: unassigned pods.
        (&all, "spec.nodeName=", &["batch-job", "done", "other"]),
        (&all, "spec.nodeName!=", &["bound"]),
        (&all, "spec.schedulerName=batch", &["batch-job", "bound"]),
        (
            &all,
            "spec.schedulerName=batch,spec.nodeName=",
            &["batch-job"],
        ),
        (&all, "status.phase=Succeeded", &["done"]),
        (
            &all,
            "status.phase!=Succeeded,status.phase!=Failed",
            &["batch-job", "bound", "other"],
        ),
        (&all, "metadata.name==other", &["other"]),
    ];
    let mut failures = Vec::new();
    for (api, selector, want) in cases {
        match api.list(&ListParams::default().fields(selector)).await {
            Ok(list) if names(&list.items) == set(want) => {}
            Ok(list) => failures.push(format!(
                "fieldSelector {selector:?}: got {:?}, want {want:?}",
                names(&list.items)
            )),
            Err(e) => failures.push(format!("fieldSelector {selector:?}: {e}")),
        }
    }
    // Node field selectors: metadata.name.
    let nodes: Api<Node> = Api::all(client.clone());
    for name in ["n1", "n2"] {
        nodes.create(&pp, &node(name, &[])).await.expect("node");
    }
    let list = nodes
        .list(&ListParams::default().fields("metadata.name=n2"))
        .await
        .expect("list nodes");
    assert_eq!(names(&list.items), set(&["n2"]));

    // An unsupported field is a 400, as upstream.
    let status = api_status(
        "an unsupported field selector",
        all.list(&ListParams::default().fields("spec.noSuchField=x"))
            .await,
    );
    assert_eq!(status.code, 400, "{status:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    server.shutdown().await;
}

#[tokio::test]
async fn limit_and_continue_paginate() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "pages").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "pages");
    let pp = PostParams::default();
    let mut all = BTreeSet::new();
    for i in 0..7 {
        let name = format!("p{i}");
        pods.create(&pp, &pod(&name, &[("n", &i.to_string())]))
            .await
            .expect("create");
        all.insert(name);
    }

    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut token: Option<String> = None;
    let mut first_version = None;
    for _ in 0..10 {
        let mut params = ListParams::default().limit(3);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let page = pods.list(&params).await.expect("a page");
        sizes.push(page.items.len());
        seen.extend(page.items.iter().map(|p| p.name_any()));
        // Every page reports the resourceVersion of the first one (a consistent snapshot).
        let version = page.metadata.resource_version.clone();
        assert!(version.is_some(), "every page has a resourceVersion");
        let first = first_version.get_or_insert_with(|| version.clone());
        assert_eq!(
            *first, version,
            "continued pages keep the first page's resourceVersion"
        );
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
        if seen.len() == 3 {
            // A change between pages does not disturb the pagination.
            pods.create(&pp, &pod("late", &[]))
                .await
                .expect("create late");
        }
    }
    assert_eq!(sizes, [3, 3, 1], "pages of at most 3, the last one partial");
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "no object twice: {seen:?}");
    assert_eq!(unique, all, "every object exactly once");

    // A selector combined with limit.
    let page = pods
        .list(&ListParams::default().labels("n in (1,2,3,4)").limit(2))
        .await
        .expect("page");
    assert_eq!(page.items.len(), 2);
    assert!(page.metadata.continue_.is_some_and(|c| !c.is_empty()));

    // A garbage continue token is a 400 (upstream: BadRequest) or 410 (expired).
    let status = api_status(
        "a garbage continue token",
        pods.list(&ListParams::default().limit(3).continue_token("garbage"))
            .await,
    );
    assert!(matches!(status.code, 400 | 410), "{status:?}");
    server.shutdown().await;
}

/// (kind, name) of the next non-bookmark watch events.
async fn next_events(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<Pod>>> + Unpin),
    count: usize,
) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    while out.len() < count {
        let event = within("watch events", stream.try_next())
            .await
            .expect("a watch event")
            .expect("the watch stays open");
        let (kind, pod) = match event {
            WatchEvent::Added(p) => ("ADDED", p),
            WatchEvent::Modified(p) => ("MODIFIED", p),
            WatchEvent::Deleted(p) => ("DELETED", p),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        };
        let version = pod
            .resource_version()
            .and_then(|v| v.parse().ok())
            .expect("an integer resourceVersion");
        out.push((kind.to_string(), pod.name_any(), version));
    }
    out
}

#[tokio::test]
async fn watch_from_a_resource_version_replays_in_order() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "watch").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "watch");
    let pp = PostParams::default();
    pods.create(&pp, &pod("before", &[])).await.expect("create");
    let version = pods
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("list resourceVersion");

    // Changes made before the watch starts are replayed from the version.
    pods.create(&pp, &pod("a", &[])).await.expect("create a");
    pods.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
    )
    .await
    .expect("patch a");
    pods.delete("before", &Default::default())
        .await
        .expect("delete before");
    let mut stream = Box::pin(
        pods.watch(&WatchParams::default(), &version)
            .await
            .expect("watch"),
    );
    // And live ones follow.
    pods.create(&pp, &pod("b", &[])).await.expect("create b");

    let events = next_events(&mut stream, 4).await;
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|(k, n, _)| (k.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("ADDED", "a"),
            ("MODIFIED", "a"),
            ("DELETED", "before"),
            ("ADDED", "b")
        ]
    );
    assert!(
        events.windows(2).all(|w| w[0].2 < w[1].2),
        "events come in resourceVersion order: {events:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn bookmarks_arrive_when_requested() {
    let server = start_with(Config {
        bookmark_interval: Duration::from_millis(100),
        ..Config::default()
    })
    .await;
    let client = server.client().await;
    ensure_namespace(&client, "bookmarks").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "bookmarks");
    pods.create(&PostParams::default(), &pod("p", &[]))
        .await
        .expect("create");
    let version = pods
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");

    let mut with = Box::pin(
        // (kube-rs asks for bookmarks by default.)
        pods.watch(&WatchParams::default(), &version)
            .await
            .expect("watch"),
    );
    let bookmark = within("a BOOKMARK event", async {
        loop {
            match with.try_next().await.expect("event").expect("open") {
                WatchEvent::Bookmark(b) => break b,
                other => eprintln!("before the bookmark: {other:?}"),
            }
        }
    })
    .await;
    let bookmark_version: u64 = bookmark
        .metadata
        .resource_version
        .parse()
        .expect("an integer resourceVersion");
    assert!(bookmark_version >= version.parse::<u64>().expect("integer"));

    // Without allowWatchBookmarks no bookmark comes, however long we wait (here, 5
    // bookmark intervals).
    let mut without = Box::pin(
        pods.watch(&WatchParams::default().disable_bookmarks(), &version)
            .await
            .expect("watch"),
    );
    let quiet = tokio::time::timeout(Duration::from_millis(500), without.try_next()).await;
    match quiet {
        Err(_) => {}
        Ok(Ok(Some(WatchEvent::Bookmark(b)))) => {
            panic!(
                "a bookmark without allowWatchBookmarks (at {})",
                b.metadata.resource_version
            )
        }
        Ok(other) => panic!("unexpected watch result on a quiet watch: {other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test]
async fn watch_timeout_seconds_ends_the_watch() {
    let server = start().await;
    let client = server.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let mut stream = Box::pin(
        nodes
            .watch(&WatchParams::default().timeout(1), "0")
            .await
            .expect("watch"),
    );
    within("a watch with timeoutSeconds=1 to end", async {
        while let Some(event) = stream.next().await {
            event.expect("no error before the timeout");
        }
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn expired_resource_version_is_410_gone() {
    let server = start().await;
    let client = server.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let pp = PostParams::default();
    let old = nodes.create(&pp, &node("n1", &[])).await.expect("create");
    nodes.create(&pp, &node("n2", &[])).await.expect("create");
    server.expire_history();
    nodes.create(&pp, &node("n3", &[])).await.expect("create");

    let old_version = old.resource_version().expect("rv");
    // Upstream sends the 410 either as the response or as an ERROR event on the stream.
    let gone = match nodes.watch(&WatchParams::default(), &old_version).await {
        Err(kube::Error::Api(status)) => *status,
        Err(other) => panic!("expected 410, got {other:?}"),
        Ok(stream) => {
            let mut stream = Box::pin(stream);
            match within("the 410 on the watch stream", stream.next()).await {
                Some(Ok(WatchEvent::Error(status))) => kube::core::Status {
                    code: status.code,
                    reason: status.reason,
                    message: status.message,
                    ..Default::default()
                },
                Some(Err(kube::Error::Api(status))) => *status,
                other => panic!("expected a 410 ERROR event, got {other:?}"),
            }
        }
    };
    assert_eq!(gone.code, 410, "{gone:?}");
    assert!(
        gone.reason == "Expired" || gone.reason == "Gone",
        "{gone:?}"
    );

    // A fresh list and watch from its version work.
    let version = nodes
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    let mut stream = Box::pin(
        nodes
            .watch(&WatchParams::default(), &version)
            .await
            .expect("watch"),
    );
    nodes.create(&pp, &node("n4", &[])).await.expect("create");
    let event = within("an event after a fresh list", async {
        loop {
            match stream.try_next().await.expect("event").expect("open") {
                WatchEvent::Bookmark(_) => continue,
                other => break other,
            }
        }
    })
    .await;
    assert!(
        matches!(&event, WatchEvent::Added(n) if n.name_any() == "n4"),
        "{event:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn streaming_list_sends_initial_events_then_the_end_bookmark() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "streaming").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "streaming");
    let pp = PostParams::default();
    for name in ["a", "b", "c"] {
        pods.create(&pp, &pod(name, &[])).await.expect("create");
    }
    let mut stream = Box::pin(
        pods.watch(&WatchParams::streaming_lists(), "")
            .await
            .expect("a streaming list"),
    );
    let (added, end) = within("the initial events and their end bookmark", async {
        let mut added = BTreeSet::new();
        loop {
            match stream.try_next().await.expect("event").expect("open") {
                WatchEvent::Added(p) => {
                    added.insert(p.name_any());
                }
                WatchEvent::Bookmark(b)
                    if b.metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .is_some_and(|v| v == "true") =>
                {
                    break (added, b);
                }
                WatchEvent::Bookmark(_) => {}
                other => panic!("unexpected event in the initial list: {other:?}"),
            }
        }
    })
    .await;
    assert_eq!(added, set(&["a", "b", "c"]));
    assert!(!end.metadata.resource_version.is_empty());
    // The watch goes on after the initial events.
    pods.create(&pp, &pod("d", &[])).await.expect("create d");
    let event = within("a live event after the initial list", async {
        loop {
            match stream.try_next().await.expect("event").expect("open") {
                WatchEvent::Bookmark(_) => continue,
                other => break other,
            }
        }
    })
    .await;
    assert!(
        matches!(&event, WatchEvent::Added(p) if p.name_any() == "d"),
        "{event:?}"
    );
    server.shutdown().await;
}
