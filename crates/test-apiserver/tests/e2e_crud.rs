//! Object semantics through kube-rs: create/get/update/patch/delete, resourceVersions,
//! optimistic concurrency (409), the status and binding subresources, finalizers, and
//! namespaced objects in a missing namespace.

mod common;

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

fn rv(object: &impl ResourceExt) -> u64 {
    object
        .resource_version()
        .expect("a resourceVersion")
        .parse()
        .expect("the test server's resourceVersions are integers")
}

#[tokio::test]
async fn create_get_and_already_exists() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "crud").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "crud");
    let pp = PostParams::default();

    let created = pods
        .create(&pp, &pod("web", &[("app", "web")]))
        .await
        .expect("create");
    assert_eq!(created.namespace().as_deref(), Some("crud"));
    assert!(created.uid().is_some_and(|u| !u.is_empty()), "uid set");
    assert!(
        created.creation_timestamp().is_some(),
        "creationTimestamp set"
    );
    rv(&created);

    let fetched = pods.get("web").await.expect("get");
    assert_eq!(fetched.uid(), created.uid());
    assert_eq!(fetched.resource_version(), created.resource_version());
    assert_eq!(fetched.labels().get("app").map(String::as_str), Some("web"));

    let status = assert_api_error(
        "creating the same pod twice",
        pods.create(&pp, &pod("web", &[])).await,
        409,
        "AlreadyExists",
    );
    assert!(
        status.message.contains("\"web\" already exists"),
        "{status:?}"
    );

    let status = assert_api_error(
        "getting a missing pod",
        pods.get("nope").await,
        404,
        "NotFound",
    );
    assert_eq!(status.message, "pods \"nope\" not found");

    // get_opt maps 404 to None, which needs the NotFound Status body.
    assert!(pods.get_opt("nope").await.expect("get_opt").is_none());

    // generateName.
    let mut generated = pod("", &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let generated = pods.create(&pp, &generated).await.expect("generateName");
    assert!(generated.name_any().starts_with("gen-") && generated.name_any().len() > 4);
    server.shutdown().await;
}

#[tokio::test]
async fn resource_versions_are_store_wide_and_increasing() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "rv").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "rv");
    let nodes: Api<Node> = Api::all(client.clone());
    let pp = PostParams::default();
    let mut versions = Vec::new();
    for i in 0..3 {
        versions.push(rv(&pods
            .create(&pp, &pod(&format!("p{i}"), &[]))
            .await
            .expect("pod")));
        versions.push(rv(&nodes
            .create(&pp, &node(&format!("n{i}"), &[]))
            .await
            .expect("node")));
    }
    let patched = pods
        .patch(
            "p0",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect("patch");
    versions.push(rv(&patched));
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]),
        "resourceVersions must increase across resources: {versions:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn namespaced_object_in_a_missing_namespace_is_not_found() {
    let server = start().await;
    let client = server.client().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "does-not-exist");
    let status = assert_api_error(
        "creating a pod in a missing namespace",
        pods.create(&PostParams::default(), &pod("p", &[])).await,
        404,
        "NotFound",
    );
    assert!(
        status
            .message
            .contains("namespaces \"does-not-exist\" not found"),
        "{status:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn stale_update_conflicts_with_409() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "occ").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "occ");
    let pp = PostParams::default();
    let original = pods.create(&pp, &pod("p", &[])).await.expect("create");

    let mut first = original.clone();
    first.labels_mut().insert("writer".into(), "first".into());
    let first = pods.replace("p", &pp, &first).await.expect("first update");
    assert!(rv(&first) > rv(&original));

    // The second writer still holds the original resourceVersion.
    let mut second = original.clone();
    second.labels_mut().insert("writer".into(), "second".into());
    let status = assert_api_error(
        "an update from a stale object",
        pods.replace("p", &pp, &second).await,
        409,
        "Conflict",
    );
    assert!(
        status
            .message
            .contains("the object has been modified; please apply your changes to the latest version and try again"),
        "{status:?}"
    );
    let current = pods.get("p").await.expect("get");
    assert_eq!(
        current.labels().get("writer").map(String::as_str),
        Some("first")
    );

    // Retrying from the current object succeeds.
    let mut retry = current.clone();
    retry.labels_mut().insert("writer".into(), "second".into());
    pods.replace("p", &pp, &retry).await.expect("retry");

    // A merge patch carrying a stale resourceVersion conflicts too.
    assert_api_error(
        "a patch with a stale resourceVersion",
        pods.patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {
                "resourceVersion": original.resource_version(),
                "labels": {"writer": "third"},
            }})),
        )
        .await,
        409,
        "Conflict",
    );

    // Updating a missing object is 404.
    let mut missing = current.clone();
    missing.metadata.name = Some("gone".into());
    assert_api_error(
        "updating a missing pod",
        pods.replace("gone", &pp, &missing).await,
        404,
        "NotFound",
    );
    server.shutdown().await;
}

#[tokio::test]
async fn patch_types() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "patch").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "patch");
    let mut two_containers = pod("p", &[("keep", "yes")]);
    let spec = two_containers.spec.as_mut().expect("spec");
    let mut sidecar = spec.containers[0].clone();
    sidecar.name = "sidecar".into();
    spec.containers.push(sidecar);
    pods.create(&PostParams::default(), &two_containers)
        .await
        .expect("create");
    let params = PatchParams::default();

    // JSON merge patch: maps merge, null deletes.
    let merged = pods
        .patch(
            "p",
            &params,
            &Patch::Merge(json!({"metadata": {"labels": {"new": "1", "keep": null}}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        merged.labels().clone().into_iter().collect::<Vec<_>>(),
        [("new".to_string(), "1".to_string())]
    );

    // JSON patch.
    let json_patched = pods
        .patch(
            "p",
            &params,
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}},
                    {"op": "replace", "path": "/metadata/labels/new", "value": "2"},
                ]))
                .expect("a JSON patch"),
            ),
        )
        .await
        .expect("JSON patch");
    assert_eq!(
        json_patched.annotations().get("a").map(String::as_str),
        Some("b")
    );
    assert_eq!(
        json_patched.labels().get("new").map(String::as_str),
        Some("2")
    );

    // A failing JSON patch test op is rejected and changes nothing.
    let failed = pods
        .patch(
            "p",
            &params,
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "test", "path": "/metadata/labels/new", "value": "wrong"},
                    {"op": "replace", "path": "/metadata/labels/new", "value": "3"},
                ]))
                .expect("a JSON patch"),
            ),
        )
        .await;
    let status = api_status("a JSON patch whose test fails", failed);
    assert!(matches!(status.code, 409 | 422 | 400 | 500), "{status:?}");
    assert_eq!(
        pods.get("p")
            .await
            .expect("get")
            .labels()
            .get("new")
            .map(String::as_str),
        Some("2")
    );

    // Strategic merge patch: containers merge by name.
    let strategic = pods
        .patch(
            "p",
            &params,
            &Patch::Strategic(json!({"spec": {"containers": [
                {"name": "sidecar", "image": "registry.k8s.io/pause:3.9"},
            ]}})),
        )
        .await
        .expect("strategic merge patch");
    let containers = &strategic.spec.as_ref().expect("spec").containers;
    let images: Vec<(&str, Option<&str>)> = containers
        .iter()
        .map(|c| (c.name.as_str(), c.image.as_deref()))
        .collect();
    assert_eq!(
        images,
        [
            ("main", Some("registry.k8s.io/pause:3.10")),
            ("sidecar", Some("registry.k8s.io/pause:3.9")),
        ],
        "a strategic merge patch merges containers by name"
    );

    // Strategic merge patch on status: conditions merge by type.
    for (kind, state) in [
        ("PodScheduled", "False"),
        ("Ready", "False"),
        ("PodScheduled", "True"),
    ] {
        pods.patch_status(
            "p",
            &params,
            &Patch::Strategic(json!({"status": {"conditions": [
                {"type": kind, "status": state, "lastTransitionTime": "2025-01-01T00:00:00Z"},
            ]}})),
        )
        .await
        .expect("strategic status patch");
    }
    // (Sorted: upstream's strategic merge puts items new to the list before the others.)
    let mut conditions: Vec<(String, String)> = pods
        .get_status("p")
        .await
        .expect("get status")
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, c.status))
        .collect();
    conditions.sort();
    assert_eq!(
        conditions,
        [
            ("PodScheduled".to_string(), "True".to_string()),
            ("Ready".to_string(), "False".to_string())
        ],
        "conditions merge by type"
    );

    // Server-side apply is not served (415, like any other unknown patch type).
    let response = raw(
        &server,
        "PATCH",
        "/api/v1/namespaces/patch/pods/p?fieldManager=berth-e2e",
        "application/apply-patch+yaml",
        Some(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})),
    )
    .await;
    assert_eq!(response.status, 415, "{}", response.text);

    // Patching a missing object is 404; an unknown patch content type is 415.
    assert_api_error(
        "patching a missing pod",
        pods.patch("nope", &params, &Patch::Merge(json!({}))).await,
        404,
        "NotFound",
    );
    let response = raw(
        &server,
        "PATCH",
        "/api/v1/namespaces/patch/pods/p",
        "application/x-not-a-patch",
        Some(&json!({})),
    )
    .await;
    assert_eq!(response.status, 415, "{}", response.text);
    server.shutdown().await;
}

#[tokio::test]
async fn node_status_and_spec_are_separate() {
    let server = start().await;
    let client = server.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let created = nodes
        .create(&PostParams::default(), &node("n", &[]))
        .await
        .expect("create");

    // The main resource ignores status changes.
    let mut update = created.clone();
    update.spec.get_or_insert_default().unschedulable = Some(true);
    update.status.get_or_insert_default().phase = Some("Terminated".into());
    let updated = nodes
        .replace("n", &PostParams::default(), &update)
        .await
        .expect("replace");
    assert_eq!(
        updated.spec.as_ref().and_then(|s| s.unschedulable),
        Some(true)
    );
    assert_eq!(
        updated.status.as_ref().and_then(|s| s.phase.clone()),
        created.status.and_then(|s| s.phase)
    );

    // The status subresource ignores spec changes.
    let patched = nodes
        .patch_status(
            "n",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "spec": {"unschedulable": false},
                "status": {"allocatable": {"cpu": "8"}},
            })),
        )
        .await
        .expect("patch status");
    assert_eq!(
        patched.spec.as_ref().and_then(|s| s.unschedulable),
        Some(true)
    );
    let cpu = patched
        .status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get("cpu"))
        .map(|q| q.0.clone());
    assert_eq!(cpu.as_deref(), Some("8"));
    server.shutdown().await;
}

#[tokio::test]
async fn delete_with_finalizers_waits_for_them() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "fin").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "fin");
    let mut p = pod("p", &[]);
    p.metadata.finalizers = Some(vec!["berth.dev/test".into()]);
    let created = pods
        .create(&PostParams::default(), &p)
        .await
        .expect("create");

    let mut watch = Box::pin(
        pods.watch(
            &WatchParams::default(),
            &created.resource_version().expect("rv"),
        )
        .await
        .expect("watch"),
    );

    let deleted = pods
        .delete("p", &DeleteParams::default())
        .await
        .expect("delete");
    // The object is returned (left), still present, with a deletionTimestamp.
    let returned = deleted
        .left()
        .expect("a delete that must wait returns the object");
    assert!(
        returned.metadata.deletion_timestamp.is_some(),
        "{returned:?}"
    );
    let still = pods.get("p").await.expect("still there");
    assert!(still.metadata.deletion_timestamp.is_some());
    assert_eq!(still.finalizers(), ["berth.dev/test".to_string()]);

    // Deleting again while finalizers are pending keeps it too.
    pods.delete("p", &DeleteParams::default())
        .await
        .expect("delete again");
    assert!(pods.get_opt("p").await.expect("get").is_some());

    pods.patch(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("remove the finalizer");
    assert!(
        pods.get_opt("p").await.expect("get").is_none(),
        "gone once finalizers are empty"
    );

    // The watch saw the deletionTimestamp (MODIFIED) and then the deletion (DELETED).
    let mut kinds = Vec::new();
    while !kinds.contains(&"DELETED") {
        let event = within("the watch events of a finalized delete", watch.try_next())
            .await
            .expect("a watch event")
            .expect("the watch stays open");
        kinds.push(match event {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(p) => {
                assert!(p.metadata.deletion_timestamp.is_some() || kinds.contains(&"MODIFIED"));
                "MODIFIED"
            }
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        });
    }
    assert_eq!(kinds.first(), Some(&"MODIFIED"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"DELETED"), "{kinds:?}");

    // Without finalizers, delete removes at once and returns the object or a Status.
    pods.create(&PostParams::default(), &pod("q", &[]))
        .await
        .expect("create q");
    pods.delete("q", &DeleteParams::default())
        .await
        .expect("delete q");
    assert!(pods.get_opt("q").await.expect("get").is_none());
    assert_api_error(
        "deleting a missing pod",
        pods.delete("q", &DeleteParams::default()).await,
        404,
        "NotFound",
    );
    server.shutdown().await;
}

fn binding(pod: &str, node: &str) -> Binding {
    Binding {
        metadata: kube::api::ObjectMeta {
            name: Some(pod.into()),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.into()),
            ..Default::default()
        },
    }
}

#[tokio::test]
async fn binding_works_exactly_once() {
    let server = start().await;
    let client = server.client().await;
    ensure_namespace(&client, "bind").await;
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .create(&PostParams::default(), &node("node-1", &[]))
        .await
        .expect("node");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "bind");
    let created = pods
        .create(&PostParams::default(), &pod("p", &[]))
        .await
        .expect("pod");
    assert_eq!(
        created.spec.as_ref().and_then(|s| s.node_name.clone()),
        None
    );

    let mut watch = Box::pin(
        pods.watch(
            &WatchParams::default(),
            &created.resource_version().expect("rv"),
        )
        .await
        .expect("watch"),
    );

    let response: Value = pods
        .create_subresource(
            "binding",
            "p",
            &PostParams::default(),
            &binding("p", "node-1"),
        )
        .await
        .expect("the first binding succeeds");
    if response.get("kind").and_then(Value::as_str) == Some("Status") {
        assert_eq!(response["status"], "Success", "{response}");
    }
    let bound = pods.get("p").await.expect("get");
    assert_eq!(
        bound.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some("node-1")
    );
    assert!(rv(&bound) > rv(&created));

    let event = loop {
        match within("the MODIFIED event of a binding", watch.next())
            .await
            .expect("the watch stays open")
            .expect("a watch event")
        {
            WatchEvent::Bookmark(_) => continue,
            event => break event,
        }
    };
    match event {
        WatchEvent::Modified(p) => assert_eq!(
            p.spec.as_ref().and_then(|s| s.node_name.as_deref()),
            Some("node-1")
        ),
        other => panic!("expected MODIFIED after a binding, got {other:?}"),
    }

    assert_api_error(
        "binding an already bound pod",
        pods.create_subresource::<Binding, Value>(
            "binding",
            "p",
            &PostParams::default(),
            &binding("p", "node-2"),
        )
        .await,
        409,
        "Conflict",
    );
    assert_eq!(
        pods.get("p")
            .await
            .expect("get")
            .spec
            .and_then(|s| s.node_name)
            .as_deref(),
        Some("node-1"),
        "a failed second binding changes nothing"
    );
    assert_api_error(
        "binding a missing pod",
        pods.create_subresource::<Binding, Value>(
            "binding",
            "gone",
            &PostParams::default(),
            &binding("gone", "node-1"),
        )
        .await,
        404,
        "NotFound",
    );
    server.shutdown().await;
}

/// The writes of VolumeBinding's PreBind are whole-object updates of a PersistentVolume
/// (static binding) or a PersistentVolumeClaim (dynamic provisioning): one made from a
/// stale copy must be refused with 409 Conflict, as the real server refuses it, so that the
/// binding cycle fails instead of overwriting the PV controller's or provisioner's work.
#[tokio::test]
async fn stale_updates_of_volumes_and_claims_conflict_with_409() {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};

    let server = start().await;
    let client = server.client().await;
    let pp = PostParams::default();

    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let volume: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": "pv-a"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data"},
        },
    }))
    .expect("a PersistentVolume");
    let original = volumes.create(&pp, &volume).await.expect("create the PV");
    let mut bound = original.clone();
    bound.spec.get_or_insert_default().claim_ref = Some(ObjectReference {
        namespace: Some("default".into()),
        name: Some("claim-a".into()),
        ..ObjectReference::default()
    });
    let stored = volumes
        .replace("pv-a", &pp, &bound)
        .await
        .expect("an update from the current PV");
    assert!(rv(&stored) > rv(&original));
    let mut stale = original.clone();
    stale.spec.get_or_insert_default().claim_ref = Some(ObjectReference {
        namespace: Some("default".into()),
        name: Some("claim-b".into()),
        ..ObjectReference::default()
    });
    let status = assert_api_error(
        "an update of a PV from a stale copy",
        volumes.replace("pv-a", &pp, &stale).await,
        409,
        "Conflict",
    );
    assert!(
        status
            .message
            .starts_with("Operation cannot be fulfilled on persistentvolumes \"pv-a\""),
        "{status:?}"
    );
    let current = volumes.get("pv-a").await.expect("get the PV");
    assert_eq!(
        current
            .spec
            .and_then(|s| s.claim_ref)
            .and_then(|r| r.name)
            .as_deref(),
        Some("claim-a"),
        "the refused update must not be stored"
    );

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "claim-a"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "wait",
        },
    }))
    .expect("a PersistentVolumeClaim");
    let original = claims.create(&pp, &claim).await.expect("create the PVC");
    let mut annotated = original.clone();
    annotated
        .annotations_mut()
        .insert("volume.kubernetes.io/selected-node".into(), "node-a".into());
    claims
        .replace("claim-a", &pp, &annotated)
        .await
        .expect("an update from the current PVC");
    let mut stale = original.clone();
    stale
        .annotations_mut()
        .insert("volume.kubernetes.io/selected-node".into(), "node-b".into());
    let status = assert_api_error(
        "an update of a PVC from a stale copy",
        claims.replace("claim-a", &pp, &stale).await,
        409,
        "Conflict",
    );
    assert!(
        status
            .message
            .starts_with("Operation cannot be fulfilled on persistentvolumeclaims \"claim-a\""),
        "{status:?}"
    );
    let current = claims.get("claim-a").await.expect("get the PVC");
    assert_eq!(
        current
            .annotations()
            .get("volume.kubernetes.io/selected-node")
            .map(String::as_str),
        Some("node-a")
    );
    server.shutdown().await;
}

/// The storage.k8s.io/v1 kinds the volume plugins read are served (created, listed and
/// watched) with the scope of the real server: CSIStorageCapacity is namespaced, CSIDriver
/// and VolumeAttachment are cluster-scoped.
#[tokio::test]
async fn csi_drivers_storage_capacities_and_volume_attachments_are_served() {
    use k8s_openapi::api::storage::v1::{CSIDriver, CSIStorageCapacity, VolumeAttachment};

    let server = start().await;
    let client = server.client().await;
    let pp = PostParams::default();

    let drivers: Api<CSIDriver> = Api::all(client.clone());
    let driver: CSIDriver = serde_json::from_value(json!({
        "metadata": {"name": "ebs.csi.aws.com"},
        "spec": {"storageCapacity": true},
    }))
    .expect("a CSIDriver");
    drivers
        .create(&pp, &driver)
        .await
        .expect("create a CSIDriver");

    let capacities: Api<CSIStorageCapacity> = Api::namespaced(client.clone(), "kube-system");
    let capacity: CSIStorageCapacity = serde_json::from_value(json!({
        "metadata": {"name": "capacity-a"},
        "storageClassName": "wait",
        "capacity": "10Gi",
        "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}},
    }))
    .expect("a CSIStorageCapacity");
    let created = capacities
        .create(&pp, &capacity)
        .await
        .expect("create a CSIStorageCapacity");
    assert_eq!(created.namespace().as_deref(), Some("kube-system"));

    let attachments: Api<VolumeAttachment> = Api::all(client.clone());
    let attachment: VolumeAttachment = serde_json::from_value(json!({
        "metadata": {"name": "attachment-a"},
        "spec": {
            "attacher": "ebs.csi.aws.com",
            "nodeName": "node-a",
            "source": {"persistentVolumeName": "pv-a"},
        },
        "status": {"attached": true},
    }))
    .expect("a VolumeAttachment");
    let created = attachments
        .create(&pp, &attachment)
        .await
        .expect("create a VolumeAttachment");
    assert!(
        created.status.is_none(),
        "create resets the status of a resource with a status subresource: {:?}",
        created.status
    );

    let all_capacities: Api<CSIStorageCapacity> = Api::all(client.clone());
    let driver_names: Vec<String> = drivers
        .list(&Default::default())
        .await
        .expect("list CSIDrivers")
        .items
        .iter()
        .map(|d| d.name_any())
        .collect();
    assert_eq!(driver_names, ["ebs.csi.aws.com"]);
    let capacity_names: Vec<String> = all_capacities
        .list(&Default::default())
        .await
        .expect("list CSIStorageCapacities in every namespace")
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    assert_eq!(capacity_names, ["capacity-a"]);
    let mut watch = attachments
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch VolumeAttachments")
        .boxed();
    attachments
        .delete("attachment-a", &DeleteParams::default())
        .await
        .expect("delete the VolumeAttachment");
    let mut seen = Vec::new();
    while let Some(event) = within("a VolumeAttachment watch event", watch.try_next())
        .await
        .expect("the watch stays open")
    {
        match event {
            WatchEvent::Added(a) => seen.push(format!("ADDED {}", a.name_any())),
            WatchEvent::Deleted(a) => {
                seen.push(format!("DELETED {}", a.name_any()));
                break;
            }
            other => seen.push(format!("{other:?}")),
        }
    }
    assert_eq!(seen, ["ADDED attachment-a", "DELETED attachment-a"]);
    server.shutdown().await;
}
