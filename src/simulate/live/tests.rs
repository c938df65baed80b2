use serde_json::json;

use super::*;

#[test]
fn pages_are_read_from_list_responses() {
    let cases = [
        (
            "a first page with a continue token",
            json!({"kind": "PodList", "metadata": {"resourceVersion": "17", "continue": "abc"}, "items": [{"metadata": {"name": "a"}}]}),
            Some((1, "17".to_string(), Some("abc".to_string()))),
        ),
        (
            "the last page: an empty continue token ends the list",
            json!({"metadata": {"resourceVersion": "17", "continue": ""}, "items": []}),
            Some((0, "17".to_string(), None)),
        ),
        (
            "items: null is an empty list",
            json!({"metadata": {"resourceVersion": "3"}, "items": null}),
            Some((0, "3".to_string(), None)),
        ),
        ("no items: not a list", json!({"kind": "Status"}), None),
        ("items not an array", json!({"items": {}}), None),
    ];
    for (name, response, expected) in cases {
        let page = Page::read(response)
            .ok()
            .map(|p| (p.items.len(), p.resource_version, p.continue_token));
        assert_eq!(page, expected, "{name}");
    }
}

#[test]
fn items_get_the_kind_they_were_listed_as() {
    let spec = KINDS
        .iter()
        .find(|k| k.kind == "PodDisruptionBudget")
        .copied()
        .expect("PodDisruptionBudget is read");
    let item = json!({"metadata": {"name": "web"}, "spec": {"minAvailable": 1}});
    assert_eq!(
        typed(item, &spec),
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"}, "spec": {"minAvailable": 1}})
    );
}

#[test]
fn kinds_are_the_ones_the_simulation_reads_in_a_stable_order() {
    let kinds: Vec<&str> = KINDS.iter().map(|k| k.kind).collect();
    assert_eq!(
        kinds,
        [
            "Node",
            "Pod",
            "Namespace",
            "PersistentVolumeClaim",
            "PersistentVolume",
            "StorageClass",
            "CSINode",
            "DeviceClass",
            "ResourceSlice",
            "ResourceClaim",
            "ResourceClaimTemplate",
            "DeviceTaintRule",
            "PriorityClass",
            "PodDisruptionBudget",
            "Service",
            "ReplicaSet",
            "StatefulSet",
            "ReplicationController",
            "PodGroup",
            "PodGroup",
            "PodGroup",
            "Workload",
            "Workload",
            "SchedulerProfile",
        ]
    );
    for spec in KINDS {
        let (group, version) = spec
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", spec.api_version));
        let expected_prefix = if group.is_empty() {
            format!("/api/{version}/")
        } else {
            format!("/apis/{group}/{version}/")
        };
        assert!(spec.path.starts_with(&expected_prefix), "{spec:?}");
        assert!(
            spec.consequence
                .ends_with(|c: char| c.is_alphanumeric() || c == ')'),
            "{spec:?}"
        );
    }
}

#[test]
fn a_gap_reads_as_one_warning_line() {
    let gap = KindGap {
        kind: "PodDisruptionBudget",
        api_version: "policy/v1",
        status: 403,
        message: "poddisruptionbudgets.policy is forbidden".to_string(),
        consequence: "preemption ignores disruption budgets",
    };
    assert_eq!(
        gap.to_string(),
        "PodDisruptionBudget: poddisruptionbudgets.policy is forbidden; preemption ignores disruption budgets"
    );
}

/// A client whose API server is `answer`, called with each request's path and query.
fn scripted_client(
    answer: impl Fn(&str, &str) -> (u16, Value) + Clone + Send + Sync + 'static,
) -> kube::Client {
    use axum::response::IntoResponse;
    let router = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let answer = answer.clone();
        async move {
            let (status, body) = answer(uri.path(), uri.query().unwrap_or_default());
            let status = axum::http::StatusCode::from_u16(status)
                .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
            (status, axum::Json(body)).into_response()
        }
    });
    kube::Client::new(router, "default")
}

#[tokio::test]
async fn an_expired_continue_restarts_the_kind_once() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let node = |name: &str| json!({"metadata": {"name": name}});
    for (name, expiries, expected) in [
        (
            "one expiry: the list restarts from the first page, at a fresh resourceVersion",
            1,
            Ok((vec!["n1", "n2"], "9")),
        ),
        (
            "a second expiry: the read fails naming the kind",
            2,
            Err("Node"),
        ),
    ] {
        let left = Arc::new(AtomicUsize::new(expiries));
        let firsts = Arc::new(AtomicUsize::new(0));
        let client = scripted_client(move |path, query| {
            if path != "/api/v1/nodes" {
                return (
                    200,
                    json!({"metadata": {"resourceVersion": "1"}, "items": []}),
                );
            }
            if !query.contains("continue=") {
                // The first page; its resourceVersion moves on with every new list.
                let version = if firsts.fetch_add(1, Ordering::SeqCst) == 0 {
                    "5"
                } else {
                    "9"
                };
                return (
                    200,
                    json!({"metadata": {"resourceVersion": version, "continue": "next"}, "items": [node("n1")]}),
                );
            }
            if left.load(Ordering::SeqCst) > 0 {
                left.fetch_sub(1, Ordering::SeqCst);
                return (
                    410,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired", "message": "The provided continue parameter is too old"}),
                );
            }
            (
                200,
                json!({"metadata": {"resourceVersion": "9"}, "items": [node("n2")]}),
            )
        });
        let result = read_cluster(&client, &ReadOptions::default()).await;
        match (result, expected) {
            (Ok(read), Ok((names, version))) => {
                let nodes: Vec<&str> = read
                    .documents
                    .iter()
                    .filter(|d| d["kind"] == "Node")
                    .filter_map(|d| d.pointer("/metadata/name").and_then(Value::as_str))
                    .collect();
                assert_eq!(nodes, names, "{name}");
                assert_eq!(
                    read.resource_versions.get("Node").map(String::as_str),
                    Some(version),
                    "{name}"
                );
            }
            (Err(error), Err(kind)) => {
                let message = error.to_string();
                assert!(
                    message.starts_with(&format!("cannot list {kind} from ")),
                    "{name}: {message}"
                );
                assert!(message.contains("too old"), "{name}: {message}");
            }
            (result, expected) => panic!("{name}: got {result:?}, expected {expected:?}"),
        }
    }
}

#[tokio::test]
async fn a_server_error_fails_the_read_naming_the_kind_and_the_server() {
    let client = scripted_client(|path, _| {
        if path.ends_with("/storageclasses") {
            (
                500,
                json!({"kind": "Status", "code": 500, "message": "etcdserver: request timed out"}),
            )
        } else {
            (200, json!({"metadata": {}, "items": []}))
        }
    });
    let options = ReadOptions {
        server: "https://cluster.example:6443".to_string(),
        ..ReadOptions::default()
    };
    let error = read_cluster(&client, &options)
        .await
        .expect_err("a 500 is not a gap");
    assert_eq!(
        error.to_string(),
        "cannot list StorageClass from https://cluster.example:6443: etcdserver: request timed out"
    );
    assert!(!error.is_invalid_input());
}

#[tokio::test]
async fn the_workload_api_is_read_where_served_and_else_noted_without_a_gap() {
    let group = json!({"metadata": {"name": "train", "namespace": "ml"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}});
    for (name, serves, forbidden) in [
        ("a 1.37 cluster with GenericWorkload on", true, false),
        ("the 1.37 default: the API is not served", false, false),
        ("served but not readable: a gap", true, true),
    ] {
        let group = group.clone();
        let client = scripted_client(move |path, _| {
            let empty = json!({"metadata": {"resourceVersion": "1"}, "items": []});
            match path {
                "/apis/scheduling.k8s.io/v1beta1/podgroups" if forbidden => (
                    403,
                    json!({"kind": "Status", "code": 403, "message": "podgroups is forbidden"}),
                ),
                "/apis/scheduling.k8s.io/v1beta1/podgroups" if serves => (
                    200,
                    json!({"metadata": {"resourceVersion": "3"}, "items": [group.clone()]}),
                ),
                p if p.starts_with("/apis/scheduling.k8s.io/v1beta1/") && !serves => (
                    404,
                    json!({"kind": "Status", "code": 404, "message": "the server could not find the requested resource"}),
                ),
                _ => (200, empty),
            }
        });
        let read = read_cluster(&client, &ReadOptions::default())
            .await
            .expect("read");
        let groups: Vec<&Value> = read
            .documents
            .iter()
            .filter(|d| d["apiVersion"] == SCHEDULING_V1BETA1)
            .collect();
        let gaps: Vec<String> = read.gaps.iter().map(ToString::to_string).collect();
        let not_served: Vec<String> = read.not_served.iter().map(|k| k.label()).collect();
        match (serves, forbidden) {
            (true, false) => {
                assert_eq!(groups.len(), 1, "{name}");
                assert_eq!(groups[0]["kind"], "PodGroup", "{name}");
                assert!(gaps.is_empty() && not_served.is_empty(), "{name}: {gaps:?}");
                assert_eq!(
                    read.resource_versions
                        .get("PodGroup (scheduling.k8s.io/v1beta1)")
                        .map(String::as_str),
                    Some("3"),
                    "{name}"
                );
            }
            (false, _) => {
                assert!(groups.is_empty() && gaps.is_empty(), "{name}: {gaps:?}");
                assert_eq!(
                    not_served,
                    [
                        "PodGroup (scheduling.k8s.io/v1beta1)",
                        "Workload (scheduling.k8s.io/v1beta1)"
                    ],
                    "{name}"
                );
            }
            (true, true) => assert_eq!(
                gaps,
                [
                    "PodGroup (scheduling.k8s.io/v1beta1): podgroups is forbidden; pods in Workload API pod groups (spec.schedulingGroup) are held as if their PodGroup did not exist"
                ],
                "{name}"
            ),
        }
        assert_eq!(read.serves_scheduling_pod_groups(), serves, "{name}");
    }
}

#[tokio::test]
async fn scheduler_plugins_pod_groups_are_read_where_their_crd_is_installed() {
    const PATH: &str = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups";
    // As a cluster that ran scheduler-plugins lists it: no apiVersion or kind on the
    // item, the status its PodGroup controller keeps.
    let group = json!({"metadata": {"name": "mpi", "namespace": "ml", "uid": "u1"},
        "spec": {"minMember": 3, "scheduleTimeoutSeconds": 10},
        "status": {"phase": "Scheduling", "occupiedBy": "ml/mpi-job"}});
    for (name, status) in [
        ("the CRD installed", 200),
        ("no CRD: not served, not a gap", 404),
        ("installed but not readable: a gap", 403),
    ] {
        let listed = group.clone();
        let client = scripted_client(move |path, _| match (path, status) {
            (PATH, 200) => (
                200,
                json!({"metadata": {"resourceVersion": "4"}, "items": [listed.clone()]}),
            ),
            (PATH, 404) => (
                404,
                json!({"kind": "Status", "code": 404, "message": "the server could not find the requested resource"}),
            ),
            (PATH, _) => (
                403,
                json!({"kind": "Status", "code": 403, "message": "podgroups.scheduling.x-k8s.io is forbidden"}),
            ),
            _ => (
                200,
                json!({"metadata": {"resourceVersion": "1"}, "items": []}),
            ),
        });
        let read = read_cluster(&client, &ReadOptions::default())
            .await
            .expect("read");
        let groups: Vec<&Value> = read
            .documents
            .iter()
            .filter(|d| d["apiVersion"] == SCHEDULER_PLUGINS_V1ALPHA1)
            .collect();
        let gaps: Vec<String> = read.gaps.iter().map(ToString::to_string).collect();
        let not_served: Vec<String> = read.not_served.iter().map(|k| k.label()).collect();
        let label = "PodGroup (scheduling.x-k8s.io/v1alpha1)";
        match status {
            200 => {
                let mut expected = group.clone();
                expected["apiVersion"] = json!(SCHEDULER_PLUGINS_V1ALPHA1);
                expected["kind"] = json!("PodGroup");
                assert_eq!(groups, [&expected], "{name}");
                assert!(gaps.is_empty() && not_served.is_empty(), "{name}: {gaps:?}");
                assert_eq!(
                    read.resource_versions.get(label).map(String::as_str),
                    Some("4"),
                    "{name}"
                );
            }
            404 => {
                assert!(groups.is_empty() && gaps.is_empty(), "{name}: {gaps:?}");
                assert_eq!(not_served, [label], "{name}");
            }
            _ => {
                assert!(groups.is_empty() && not_served.is_empty(), "{name}");
                assert_eq!(
                    gaps,
                    [format!(
                        "{label}: podgroups.scheduling.x-k8s.io is forbidden; pods labelled scheduling.x-k8s.io/pod-group find only berth.dev PodGroups"
                    )],
                    "{name}"
                );
            }
        }
        // Only the Workload API decides whether members of Workload API groups wait.
        assert!(read.serves_scheduling_pod_groups(), "{name}");
    }
}

#[test]
fn a_read_scheduler_plugins_pod_group_loads_back_with_its_kind() {
    use crate::simulate::input::load_cluster;

    let listed = json!({"metadata": {"name": "mpi", "namespace": "ml", "uid": "u1",
            "resourceVersion": "7", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"minMember": 3},
        "status": {"phase": "Scheduling", "occupiedBy": "ml/mpi-job", "running": 1}});
    let spec = KINDS
        .iter()
        .find(|k| k.api_version == SCHEDULER_PLUGINS_V1ALPHA1)
        .copied()
        .expect("scheduler-plugins' PodGroups are read");
    let document = typed(listed, &spec);
    // What `berth snapshot` writes, read back as `berth simulate -f` reads it.
    let text = to_yaml(std::slice::from_ref(&document));
    assert!(
        text.contains("apiVersion: scheduling.x-k8s.io/v1alpha1"),
        "{text}"
    );
    let (from_file, _) = crate::simulate::input::load_str(std::path::Path::new("snap.yaml"), &text)
        .expect("the snapshot loads");
    let (from_cluster, _) = load_cluster(vec![document], &[]).expect("the read loads");
    for input in [&from_file, &from_cluster] {
        assert!(input.pod_groups.is_empty() && input.scheduling_pod_groups.is_empty());
        let [group] = &input.scheduler_plugins_pod_groups[..] else {
            panic!("one scheduler-plugins PodGroup: {input:?}");
        };
        assert_eq!(group.metadata.namespace.as_deref(), Some("ml"));
        assert_eq!(group.metadata.name.as_deref(), Some("mpi"));
        assert_eq!(group.spec.min_member, 3);
    }
    let json = |input: &crate::simulate::input::ClusterInput| {
        serde_json::to_value(&input.scheduler_plugins_pod_groups).expect("serializes")
    };
    assert_eq!(json(&from_file), json(&from_cluster));
}

#[tokio::test]
async fn kubernetes_1_35_workloads_are_read_where_served_and_else_noted_without_a_gap() {
    let workload = json!({"metadata": {"name": "train", "namespace": "ml"},
        "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]}});
    for (name, serves) in [
        (
            "a 1.35 cluster with GenericWorkload on and v1alpha1 enabled",
            true,
        ),
        ("any other cluster", false),
    ] {
        let workload = workload.clone();
        let client = scripted_client(move |path, _| match path {
            "/apis/scheduling.k8s.io/v1alpha1/workloads" if serves => (
                200,
                json!({"metadata": {"resourceVersion": "4"}, "items": [workload.clone()]}),
            ),
            "/apis/scheduling.k8s.io/v1alpha1/workloads" => (
                404,
                json!({"kind": "Status", "code": 404, "message": "the server could not find the requested resource"}),
            ),
            _ => (
                200,
                json!({"metadata": {"resourceVersion": "1"}, "items": []}),
            ),
        });
        let read = read_cluster(&client, &ReadOptions::default())
            .await
            .expect("read");
        let workloads: Vec<&Value> = read
            .documents
            .iter()
            .filter(|d| d["apiVersion"] == SCHEDULING_V1ALPHA1)
            .collect();
        let not_served: Vec<String> = read.not_served.iter().map(|k| k.label()).collect();
        assert!(read.gaps.is_empty(), "{name}: {:?}", read.gaps);
        assert_eq!(read.serves_legacy_workloads(), serves, "{name}");
        assert!(read.serves_scheduling_pod_groups(), "{name}");
        if serves {
            assert_eq!(workloads.len(), 1, "{name}");
            assert_eq!(workloads[0]["kind"], "Workload", "{name}");
            assert!(not_served.is_empty(), "{name}: {not_served:?}");
        } else {
            assert!(workloads.is_empty(), "{name}");
            assert_eq!(
                not_served,
                ["Workload (scheduling.k8s.io/v1alpha1)"],
                "{name}"
            );
        }
    }
}
