//! Smoke tests through kube-rs: the server as a real client sees it. The end-to-end suite
//! in `tests/` covers the behaviour in depth; these guard the wiring.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, Pod};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;

use crate::{Config, TestApiServer};

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .expect("a valid pod")
}

async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..100 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn crud_conflict_and_binding_through_kube_rs() {
    let server = TestApiServer::start(Config::default())
        .await
        .expect("server starts");
    let pods: Api<Pod> = Api::default_namespaced(server.client().await);

    let created = pods
        .create(&PostParams::default(), &pod("a"))
        .await
        .expect("create");
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.status.and_then(|s| s.phase).as_deref(),
        Some("Pending")
    );
    let again = pods
        .create(&PostParams::default(), &pod("a"))
        .await
        .expect_err("exists");
    assert!(
        matches!(again, kube::Error::Api(ref s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{again:?}"
    );

    let mut stale = pods.get("a").await.expect("get");
    pods.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
    )
    .await
    .expect("patch");
    stale.metadata.labels = Some([("y".to_string(), "2".to_string())].into());
    let conflict = pods
        .replace("a", &PostParams::default(), &stale)
        .await
        .expect_err("stale RV");
    assert!(
        matches!(conflict, kube::Error::Api(ref s) if s.code == 409 && s.reason == "Conflict"),
        "{conflict:?}"
    );

    let binding = Binding {
        metadata: ObjectMeta {
            name: Some("a".into()),
            ..ObjectMeta::default()
        },
        target: k8s_openapi::api::core::v1::ObjectReference {
            kind: Some("Node".into()),
            name: Some("n1".into()),
            ..Default::default()
        },
    };
    let data = serde_json::to_vec(&binding).expect("serialises");
    let request = http_post(
        &server,
        "/api/v1/namespaces/default/pods/a/binding",
        data.clone(),
    )
    .await;
    assert_eq!(request, 201);
    assert_eq!(
        pods.get("a")
            .await
            .expect("get")
            .spec
            .and_then(|s| s.node_name)
            .as_deref(),
        Some("n1")
    );
    assert_eq!(
        http_post(&server, "/api/v1/namespaces/default/pods/a/binding", data).await,
        409
    );

    pods.delete("a", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(pods.get_opt("a").await.expect("get_opt").is_none());
    server.shutdown().await;
}

async fn http_post(server: &TestApiServer, path: &str, body: Vec<u8>) -> u16 {
    let client = server.client().await;
    let request = axum::http::Request::post(path)
        .header("content-type", "application/json")
        .body(body)
        .expect("request");
    match client.request_text(request).await {
        Ok(_) => 201,
        Err(kube::Error::Api(status)) => status.code,
        Err(other) => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_reflector_survives_dropped_watches_and_a_410_relist() {
    let config = Config {
        bookmark_interval: Duration::from_millis(100),
        ..Config::default()
    };
    let server = TestApiServer::start(config).await.expect("server starts");
    let pods: Api<Pod> = Api::default_namespaced(server.client().await);
    for name in ["a", "b"] {
        pods.create(&PostParams::default(), &pod(name))
            .await
            .expect("create");
    }
    let (reader, writer) = reflector::store();
    let stream = reflector(
        writer,
        watcher(pods.clone(), watcher::Config::default().any_semantic()),
    )
    .applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    eventually("the initial list", || reader.state().len() == 2).await;

    server.drop_watches();
    pods.create(&PostParams::default(), &pod("c"))
        .await
        .expect("create");
    eventually("c after a dropped watch", || reader.state().len() == 3).await;

    let lists_before = server
        .requests()
        .iter()
        .filter(|r| r.verb == "list")
        .count();
    server.expire_history();
    server.drop_watches();
    pods.delete("a", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("a gone after a 410 relist", || reader.state().len() == 2).await;
    let lists_after = server
        .requests()
        .iter()
        .filter(|r| r.verb == "list")
        .count();
    assert!(lists_after > lists_before, "the watcher relisted after 410");

    let listed = pods
        .list(&ListParams::default().limit(1))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 1);
    assert!(listed.metadata.continue_.is_some());
    task.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn crds_serve_their_resources_and_finalizers_hold_deletion() {
    use kube::api::DynamicObject;
    use kube::discovery::Discovery;

    let server = TestApiServer::start(Config::default())
        .await
        .expect("server starts");
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crds");
    let names = server
        .install_crds_from_dir(&crds)
        .expect("berth's CRDs install");
    assert!(
        names.contains(&"schedulerprofiles.berth.dev".to_string()),
        "{names:?}"
    );

    let client = server.client().await;
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let (resource, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "PodGroup")
        .expect("PodGroup is discovered");
    assert_eq!(resource.api_version, "berth.dev/v1alpha1");
    assert!(
        caps.subresources
            .iter()
            .any(|(sub, _)| sub.plural == "status")
    );

    let groups: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let mut object = DynamicObject::new("g", &resource).within("default");
    object.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    object.data = json!({"spec": {"minMember": 1}});
    groups
        .create(&PostParams::default(), &object)
        .await
        .expect("create a PodGroup");

    groups
        .delete("g", &DeleteParams::default())
        .await
        .expect("delete starts");
    let held = groups.get("g").await.expect("held by its finalizer");
    assert!(held.metadata.deletion_timestamp.is_some());
    let release = json!({"metadata": {"finalizers": null}});
    groups
        .patch("g", &PatchParams::default(), &Patch::Merge(release))
        .await
        .expect("patch");
    assert!(
        groups.get_opt("g").await.expect("get_opt").is_none(),
        "gone once finalizers are empty"
    );

    let crd_api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    crd_api
        .delete("podgroups.berth.dev", &DeleteParams::default())
        .await
        .expect("delete the CRD");
    let gone = groups
        .list(&ListParams::default())
        .await
        .expect_err("no longer served");
    assert!(
        matches!(gone, kube::Error::Api(ref s) if s.code == 404),
        "{gone:?}"
    );
    server.shutdown().await;
}
