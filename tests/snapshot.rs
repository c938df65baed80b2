//! Reading a live cluster (`berth::simulate::live`) and `berth snapshot`, against a real
//! kube-apiserver 1.37 with etcd (`crates/kube-cluster`; no controller manager or kubelets,
//! so nothing changes the objects once created): every kind is read with paginated
//! lists, a kind the user may not list (a real RBAC 403) or the server does not serve (a
//! CRD not installed) is a reported gap, and a snapshot simulates exactly as the objects
//! it was taken from (issue 19's round trip).

use std::collections::BTreeSet;
use std::process::Output;
use std::time::Duration;

use berth::simulate::live::{self, ReadOptions};
use kube::api::PostParams;
use kube::core::Request;
use kube_cluster::{KubeCluster, Options};
use serde_json::{Value, json};

mod support;
use support::cli::{assert_exit, run_berth, stderr, stdout};
use support::temp::TempDir;

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const SECRET: &str = "s3cret-value";

/// `(list path, object)` for everything the test cluster holds, in the order
/// `berth snapshot` writes them (kind order, then namespace and name), so that the same
/// objects written as YAML give the same report order.
///
/// - node-a (4 CPUs) runs shop/web-1 (2 CPUs); node-b (2 CPUs, tainted
///   `dedicated=batch:NoSchedule`, label values a YAML 1.1 reader would take for
///   booleans) runs shop/db-1 (1 CPU).
/// - Pending: shop/big (3 CPUs: fits nowhere, and at priority 0 preempts nothing),
///   shop/mpi-0 (gang profile, scheduler-plugins' PodGroup `mpi` of minMember 1 named by
///   the `scheduling.x-k8s.io/pod-group` label, 1 CPU: only node-a fits; without its
///   PodGroup Coscheduling would refuse it), shop/trainer-0 (gang profile, PodGroup
///   `trainers`, tolerates the taint, only node-b), shop/web-2 (PriorityClass `high`,
///   1 CPU: only node-a fits) and shop/z-other (a scheduler name no profile serves).
///
/// Every pod's outcome is the same in any queue order, so server-set creation
/// timestamps cannot change the report.
fn cluster_objects() -> Vec<(String, Value)> {
    let node = |name: &str, cpu: &str, extra: Value| {
        let mut node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": format!("zone-{name}")}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}, "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}
        });
        merge(&mut node, extra);
        ("/api/v1/nodes".to_string(), node)
    };
    let pod = |name: &str, cpu: &str, extra: Value| {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": name, "namespace": "shop", "labels": {"app": name},
                "annotations": {LAST_APPLIED: format!("{{\"password\":\"{SECRET}\"}}"), "example.com/team": "payments"}
            },
            "spec": {
                "containers": [{
                    "name": "main", "image": "registry.example/app:1",
                    "command": ["/app", format!("--token={SECRET}")],
                    "args": ["--password", SECRET],
                    "env": [{"name": "PASSWORD", "value": SECRET}, {"name": "DB", "valueFrom": {"secretKeyRef": {"name": SECRET, "key": "k"}}}],
                    "envFrom": [{"secretRef": {"name": SECRET}}],
                    "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}
                }],
                "priority": 0
            }
        });
        merge(&mut pod, extra);
        ("/api/v1/namespaces/shop/pods".to_string(), pod)
    };
    vec![
        node("node-a", "4", json!({})),
        node(
            "node-b",
            "2",
            json!({
                "metadata": {"labels": {"example.com/spot": "no", "example.com/ssd": "y", "example.com/arm": "on"}},
                "spec": {"taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]}
            }),
        ),
        pod("big", "3", json!({})),
        pod(
            "db-1",
            "1",
            json!({"spec": {"nodeName": "node-b", "tolerations": [{"key": "dedicated", "operator": "Exists"}]}}),
        ),
        pod(
            "mpi-0",
            "1",
            json!({
                "metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "mpi"}},
                "spec": {"schedulerName": "gang"}
            }),
        ),
        pod(
            "trainer-0",
            "1",
            json!({
                "metadata": {"labels": {"berth.dev/pod-group": "trainers"}},
                "spec": {
                    "schedulerName": "gang",
                    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}],
                    "nodeSelector": {"example.com/spot": "no"}
                }
            }),
        ),
        pod(
            "web-1",
            "2",
            json!({"metadata": {"managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1"}]}, "spec": {"nodeName": "node-a"}}),
        ),
        pod(
            "web-2",
            "1",
            json!({"metadata": {"labels": {"app": "web-1"}}, "spec": {"priorityClassName": "high", "priority": 1000}}),
        ),
        pod(
            "z-other",
            "1",
            json!({"spec": {"schedulerName": "other-scheduler"}}),
        ),
        (
            "/api/v1/namespaces".to_string(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "n"}}}),
        ),
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses".to_string(),
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}),
        ),
        (
            "/apis/policy/v1/namespaces/shop/poddisruptionbudgets".to_string(),
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "shop"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web-1"}}}}),
        ),
        (
            "/apis/berth.dev/v1alpha1/namespaces/shop/podgroups".to_string(),
            json!({"apiVersion": "berth.dev/v1alpha1", "kind": "PodGroup", "metadata": {"name": "trainers", "namespace": "shop"}, "spec": {"minMember": 1}}),
        ),
        (
            "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/shop/podgroups".to_string(),
            json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "mpi", "namespace": "shop"}, "spec": {"minMember": 1}}),
        ),
        (
            "/apis/berth.dev/v1alpha1/schedulerprofiles".to_string(),
            json!({
                "apiVersion": "berth.dev/v1alpha1", "kind": "SchedulerProfile", "metadata": {"name": "gang"},
                "spec": {
                    "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}, "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
                    "pluginConfig": {"coscheduling": {"permitWaitingTimeSeconds": 60, "podGroupBackoffSeconds": 0}}
                }
            }),
        ),
    ]
}

/// Merges `extra` into `base`, maps recursively.
fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(base), Value::Object(extra)) => {
            for (key, value) in extra {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, extra) => *base = extra,
    }
}

/// How much of a cluster a test needs.
#[derive(Clone, Copy, PartialEq)]
enum Setup {
    /// kube-apiserver and etcd, nothing created.
    Bare,
    /// kube-apiserver and etcd with berth's CRDs, scheduler-plugins' PodGroup CRD and
    /// [`cluster_objects`]: nothing changes the objects once created (the nodes keep the
    /// `not-ready` taint admission gives every new node).
    Populated,
    /// [`Setup::Populated`] plus kube-controller-manager and kwok, waited for until every
    /// node is Ready and untainted: the objects as a running cluster holds them.
    Running,
}

/// A real cluster as `setup` says, or `None` after a loud skip where Go is missing
/// (never on CI).
async fn cluster(test: &str, setup: Setup) -> Option<KubeCluster> {
    let running = setup == Setup::Running;
    let options = Options {
        controller_manager: running,
        kwok: running,
        ..Options::default()
    };
    let cluster = support::kube::start_or_skip(test, options).await?;
    let client = admin(&cluster).await;
    // The API server creates its own Service a moment after it is ready; a read taken
    // before that would miss an object the comparison with what is served then finds.
    support::kube::eventually(
        "the API server has created Service default/kubernetes",
        || {
            let services: kube::Api<k8s_openapi::api::core::v1::Service> =
                kube::Api::namespaced(client.clone(), "default");
            async move {
                services
                    .get("kubernetes")
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        },
    )
    .await;
    if setup == Setup::Bare {
        return Some(cluster);
    }
    support::kube::install_crds(&client).await;
    install_scheduler_plugins_crd(&client).await;
    let mut objects = cluster_objects();
    // What admission looks up first, as the API server requires: namespaces (each with
    // the ServiceAccount its pods are admitted with, which only a controller manager
    // would create), then PriorityClasses.
    objects.sort_by_key(|(_, object)| match object["kind"].as_str() {
        Some("Namespace") => 0,
        Some("PriorityClass") => 1,
        _ => 2,
    });
    for (path, object) in objects {
        create(&client, &path, &object).await;
        if object["kind"] != "Namespace" {
            continue;
        }
        let namespace = object["metadata"]["name"].as_str().unwrap_or_default();
        if running {
            support::kube::eventually(
                &format!("namespace {namespace} has its ServiceAccount"),
                || kube_cluster::default_service_account(&client, namespace),
            )
            .await;
        } else {
            support::kube::create_default_service_account(&client, namespace).await;
        }
    }
    if running {
        support::kube::wait_nodes_ready(&client).await;
    }
    Some(cluster)
}

/// Installs scheduler-plugins' PodGroup CRD (`scheduling.x-k8s.io/v1alpha1`), as a
/// cluster that ran scheduler-plugins has it, and waits until it is established.
async fn install_scheduler_plugins_crd(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd = berth::api::scheduler_plugins::crd();
    let name = crd.metadata.name.clone().unwrap_or_default();
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    api.create(&PostParams::default(), &crd)
        .await
        .unwrap_or_else(|e| panic!("creating CRD {name}: {e}"));
    kube_cluster::wait_crds_established(client, &[name], Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

async fn admin(cluster: &KubeCluster) -> kube::Client {
    cluster.admin_client().await.expect("an admin client")
}

async fn create(client: &kube::Client, path: &str, object: &Value) {
    let body = serde_json::to_vec(object).expect("JSON encodes");
    let request = Request::new(path)
        .create(&PostParams::default(), body)
        .expect("a create request");
    client
        .request::<Value>(request)
        .await
        .unwrap_or_else(|e| panic!("creating {object}: {e}"));
}

/// `Kind namespace/name` of each document, the kind with its apiVersion where kinds
/// share the name (`PodGroup (scheduling.x-k8s.io/v1alpha1) shop/mpi`, see
/// `KindSpec::label`).
fn keys(documents: &[Value]) -> Vec<String> {
    documents
        .iter()
        .map(|d| {
            let kind = d["kind"].as_str().unwrap_or_default();
            let api_version = d["apiVersion"].as_str().unwrap_or_default();
            let label = live::KINDS
                .iter()
                .find(|k| k.kind == kind && k.api_version == api_version)
                .map_or_else(|| kind.to_string(), |k| k.label());
            format!(
                "{label} {}/{}",
                d["metadata"]["namespace"].as_str().unwrap_or_default(),
                d["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// The keys of everything the server holds, without `except_kind`, as one unpaginated
/// list per kind gives them: what the test created, and what kube-apiserver creates
/// itself (its namespaces, its system PriorityClasses, the `kubernetes` Service).
async fn served_keys(client: &kube::Client, except_kind: Option<&str>) -> BTreeSet<String> {
    let mut documents = Vec::new();
    for kind in live::KINDS {
        let request = Request::new(kind.path)
            .list(&Default::default())
            .expect("a list");
        let list: Value = match client.request(request).await {
            Ok(list) => list,
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(e) => panic!("listing {}: {e}", kind.kind),
        };
        for mut item in list["items"].as_array().cloned().unwrap_or_default() {
            item["apiVersion"] = json!(kind.api_version);
            item["kind"] = json!(kind.kind);
            documents.push(item);
        }
    }
    keys(&documents)
        .into_iter()
        .filter(|key| except_kind.is_none_or(|kind| !key.starts_with(&format!("{kind} "))))
        .collect()
}

/// The keys of [`cluster_objects`].
fn created_keys() -> BTreeSet<String> {
    let created: Vec<Value> = cluster_objects().into_iter().map(|(_, o)| o).collect();
    keys(&created).into_iter().collect()
}

fn options(page_size: u32) -> ReadOptions {
    ReadOptions {
        page_size,
        ..ReadOptions::default()
    }
}

/// A kubeconfig for ServiceAccount `shop/reader`, which may list every kind berth reads
/// except the one served at `forbidden` (a `live::KINDS` path): a real RBAC 403.
async fn reader_kubeconfig(cluster: &KubeCluster, forbidden: &str) -> std::path::PathBuf {
    let client = admin(cluster).await;
    let rules: Vec<Value> = live::KINDS
        .iter()
        .filter(|kind| kind.path != forbidden)
        .map(|kind| {
            let group = kind.api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let resource = kind.path.rsplit('/').next().unwrap_or_default();
            json!({"apiGroups": [group], "resources": [resource], "verbs": ["list"]})
        })
        .collect();
    let objects = [
        (
            "/api/v1/namespaces/shop/serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reader"}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "reader"}, "rules": rules}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "reader"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "shop"}]
            }),
        ),
    ];
    for (path, object) in objects {
        create(&client, path, &object).await;
    }
    cluster
        .service_account_kubeconfig("shop", "reader", Duration::from_secs(3600))
        .await
        .expect("a token for shop/reader")
}

/// What kube-apiserver's RBAC authorizer says when ServiceAccount shop/reader lists
/// `resource` of `group` across namespaces.
fn forbidden_message(resource: &str, group: &str) -> String {
    format!(
        "{resource}.{group} is forbidden: User \"system:serviceaccount:shop:reader\" cannot list resource \"{resource}\" in API group \"{group}\" at the cluster scope"
    )
}

#[tokio::test]
async fn every_kind_is_read_with_paginated_lists() {
    let Some(cluster) = cluster(&support::kube::test_name(), Setup::Populated).await else {
        return;
    };
    let client = admin(&cluster).await;
    let read = live::read_cluster(&client, &options(2))
        .await
        .expect("the cluster is read");

    assert_eq!(read.gaps, vec![]);
    let expected = served_keys(&client, None).await;
    assert!(
        expected.is_superset(&created_keys()),
        "the server holds what the test created: {expected:?}"
    );
    let read_keys = keys(&read.documents);
    assert_eq!(
        read_keys.iter().cloned().collect::<BTreeSet<_>>(),
        expected,
        "every object, once"
    );
    assert_eq!(read_keys.len(), expected.len(), "no object twice");
    // Kind order, then namespace and name.
    let kind_rank = |key: &String| {
        live::KINDS
            .iter()
            .position(|k| key.starts_with(&format!("{} ", k.label())))
    };
    let mut sorted = read_keys.clone();
    sorted.sort_by_key(|key| (kind_rank(key), key.clone()));
    assert_eq!(read_keys, sorted, "documents in kind order, then by name");
    for document in &read.documents {
        assert!(document["apiVersion"].is_string(), "{document}");
        assert!(
            document["metadata"]["uid"].is_string(),
            "kept as served: {document}"
        );
    }
    // Every kind that was read has the resourceVersion of its list; the kinds the server
    // does not serve (the Workload API's, whose gate is off here) were not read.
    assert_eq!(
        read.resource_versions.len(),
        live::KINDS.len() - read.not_served.len()
    );

    // The admin's lists, as the audit log records them (the test's own unpaginated lists
    // for `expected_keys` came after and carry no limit).
    let lists: Vec<_> = support::kube::requests(cluster.audit_log())
        .into_iter()
        .filter(|r| r.verb == "list" && r.query.contains("limit=2"))
        .collect();
    // Three kinds share the name PodGroup (berth.dev's, the Workload API's and
    // scheduler-plugins'): a kind's lists are told by their path, and a kind the server
    // does not serve has none.
    for kind in live::KINDS
        .iter()
        .filter(|kind| !read.not_served.iter().any(|gone| gone.path == kind.path))
    {
        let of_kind: Vec<_> = lists.iter().filter(|r| r.path == kind.path).collect();
        let objects = expected
            .iter()
            .filter(|k| k.starts_with(&format!("{} ", kind.label())))
            .count();
        // A list of n objects in pages of 2 takes max(1, ceil(n / 2)) requests, all but
        // the first continued (a full last page may need one more, empty, page).
        let pages = objects.div_ceil(2).max(1);
        let continued = of_kind
            .iter()
            .filter(|r| r.query.contains("continue="))
            .count();
        assert!(
            of_kind.len() >= pages && continued == of_kind.len() - 1,
            "{}: {} objects read in {of_kind:?}",
            kind.kind,
            objects
        );
    }
}

#[tokio::test]
async fn a_forbidden_kind_is_a_gap_and_the_rest_is_read() {
    let Some(cluster) = cluster(&support::kube::test_name(), Setup::Populated).await else {
        return;
    };
    let reader = reader_kubeconfig(&cluster, "/apis/policy/v1/poddisruptionbudgets").await;
    let client = kube_cluster::client_from(&reader)
        .await
        .expect("the reader's client");
    let read = live::read_cluster(&client, &options(500))
        .await
        .expect("a forbidden kind is not fatal");

    assert_eq!(read.gaps.len(), 1, "{:?}", read.gaps);
    let gap = &read.gaps[0];
    assert_eq!((gap.kind, gap.status), ("PodDisruptionBudget", 403));
    assert_eq!(
        gap.message,
        forbidden_message("poddisruptionbudgets", "policy")
    );
    assert_eq!(gap.consequence, "preemption ignores disruption budgets");
    assert_eq!(
        keys(&read.documents).into_iter().collect::<BTreeSet<_>>(),
        served_keys(&admin(&cluster).await, Some("PodDisruptionBudget")).await
    );
    assert!(!read.resource_versions.contains_key("PodDisruptionBudget"));
}

#[tokio::test]
async fn kinds_the_server_does_not_serve_are_gaps() {
    // No berth CRDs installed: PodGroups and SchedulerProfiles are not found.
    let Some(cluster) = cluster(&support::kube::test_name(), Setup::Bare).await else {
        return;
    };
    let client = admin(&cluster).await;
    let read = live::read_cluster(&client, &options(500))
        .await
        .expect("missing CRDs are not fatal");
    let gaps: Vec<_> = read.gaps.iter().map(|g| (g.kind, g.status)).collect();
    assert_eq!(gaps, [("PodGroup", 404), ("SchedulerProfile", 404)]);
    // scheduler-plugins' PodGroups without their CRD are no gap: the cluster has none.
    assert!(
        read.not_served
            .iter()
            .any(|k| k.api_version == live::SCHEDULER_PLUGINS_V1ALPHA1),
        "{:?}",
        read.not_served
    );
    let served = served_keys(&client, None).await;
    assert_eq!(
        keys(&read.documents).into_iter().collect::<BTreeSet<_>>(),
        served
    );
    assert!(
        served.contains("Namespace /kube-system"),
        "the server's own objects are read: {served:?}"
    );
}

#[tokio::test]
async fn too_many_objects_stop_the_read() {
    let Some(cluster) = cluster(&support::kube::test_name(), Setup::Populated).await else {
        return;
    };
    let limited = ReadOptions {
        max_objects: 3,
        ..options(500)
    };
    let error = live::read_cluster(&admin(&cluster).await, &limited)
        .await
        .expect_err("more than 3 objects");
    // 2 nodes, then 7 pods: the pods overflow the limit.
    assert!(
        error.to_string().contains("more than 3 objects") && error.to_string().contains("Pod"),
        "{error}"
    );
}

/// Runs the binary off the runtime's threads, so the server keeps serving meanwhile.
async fn berth(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_berth(&args, None)
    })
    .await
    .expect("berth ran")
}

fn simulate_report(output: &Output) -> Value {
    assert_exit(output, 0);
    serde_json::from_str(&stdout(output)).expect("the report is JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_simulates_as_the_objects_it_was_taken_from() {
    let Some(cluster) = cluster(&support::kube::test_name(), Setup::Running).await else {
        return;
    };
    let dir = TempDir::new("snapshot");
    let snapshot = dir.join("snapshot.yaml");
    let kubeconfig = cluster.admin_kubeconfig().display().to_string();
    let output = berth(vec![
        "snapshot".into(),
        "--kubeconfig".into(),
        kubeconfig,
        "--page-size".into(),
        "3".into(),
        "-o".into(),
        snapshot.display().to_string(),
    ])
    .await;
    assert_exit(&output, 0);
    assert_eq!(stderr(&output), "", "no kind is missing");
    let text = std::fs::read_to_string(&snapshot).expect("the snapshot is written");

    // Secrets' worth of data is gone; what the scheduler reads is there.
    for removed in [
        SECRET,
        LAST_APPLIED,
        "managedFields",
        "envFrom",
        "command:",
        "args:",
    ] {
        assert!(
            !text.contains(removed),
            "{removed} is in the snapshot:\n{text}"
        );
    }
    for kept in [
        "name: PASSWORD",
        "example.com/team: payments",
        "nodeName: node-a",
        "Coscheduling",
        "minAvailable: 1",
        "apiVersion: scheduling.x-k8s.io/v1alpha1",
        "scheduling.x-k8s.io/pod-group: mpi",
    ] {
        assert!(
            text.contains(kept),
            "{kept} is missing from the snapshot:\n{text}"
        );
    }

    // The objects as created, written as YAML (JSON is YAML), against the snapshot.
    let original: String = cluster_objects()
        .iter()
        .map(|(_, object)| format!("---\n{object}\n"))
        .collect();
    let original = dir.write("original.yaml", &original);
    let simulate = |file: std::path::PathBuf| {
        berth(vec![
            "simulate".into(),
            "-f".into(),
            file.display().to_string(),
            "-o".into(),
            "json".into(),
            "--explain".into(),
        ])
    };
    let expected = simulate_report(&simulate(original).await);
    let from_snapshot = simulate_report(&simulate(snapshot).await);
    assert_eq!(from_snapshot, expected);

    // The report is the cluster's: the scenario's placements, not an empty simulation.
    let results: Vec<(String, String, Value)> = expected["pods"]
        .as_array()
        .map(|pods| {
            pods.iter()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap_or_default().to_string(),
                        p["result"].as_str().unwrap_or_default().to_string(),
                        p["node"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        results,
        [
            ("big".to_string(), "Unschedulable".to_string(), Value::Null),
            (
                "mpi-0".to_string(),
                "Scheduled".to_string(),
                json!("node-a")
            ),
            (
                "trainer-0".to_string(),
                "Scheduled".to_string(),
                json!("node-b")
            ),
            (
                "web-2".to_string(),
                "Scheduled".to_string(),
                json!("node-a")
            ),
            ("z-other".to_string(), "NotServed".to_string(), Value::Null),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_kind_is_one_warning_line() {
    let Some(cluster) = cluster(&support::kube::test_name(), Setup::Populated).await else {
        return;
    };
    let reader = reader_kubeconfig(&cluster, "/apis/scheduling.k8s.io/v1/priorityclasses").await;
    let kubeconfig = reader.display().to_string();
    let output = berth(vec!["snapshot".into(), "--kubeconfig".into(), kubeconfig]).await;
    assert_exit(&output, 0);
    assert_eq!(
        stderr(&output),
        format!(
            "warning: PriorityClass: {}; pods keep the spec.priority the API server gave them\n",
            forbidden_message("priorityclasses", "scheduling.k8s.io")
        )
    );
    assert!(stdout(&output).contains("kind: Node"));
    assert!(!stdout(&output).contains("kind: PriorityClass"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_cluster_or_kubeconfig_fails() {
    let Some(mut cluster) = cluster(&support::kube::test_name(), Setup::Bare).await else {
        return;
    };
    let dir = TempDir::new("snapshot-errors");
    let kubeconfig = cluster.admin_kubeconfig().to_path_buf();
    let text = std::fs::read_to_string(&kubeconfig).expect("the admin kubeconfig");
    let url = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("server: "))
        .expect("the kubeconfig names its server")
        .to_string();
    cluster.stop();

    let kubeconfig = kubeconfig.display().to_string();
    let refused = berth(vec![
        "snapshot".into(),
        "--kubeconfig".into(),
        kubeconfig.clone(),
    ])
    .await;
    assert_exit(&refused, 1);
    let message = stderr(&refused);
    assert!(
        message.starts_with("error: cannot list Node from ") && message.contains(&url),
        "{message}"
    );
    assert_eq!(stdout(&refused), "");

    let cases = [
        (
            "a kubeconfig that does not exist",
            vec![
                "--kubeconfig".to_string(),
                dir.join("missing").display().to_string(),
            ],
        ),
        (
            "a context the kubeconfig lacks",
            vec![
                "--kubeconfig".to_string(),
                kubeconfig,
                "--context".into(),
                "nope".into(),
            ],
        ),
        (
            "a page size out of range",
            vec!["--page-size".to_string(), "0".into()],
        ),
    ];
    for (name, args) in cases {
        let output = berth([vec!["snapshot".to_string()], args].concat()).await;
        assert_eq!(output.status.code(), Some(2), "{name}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("error"),
            "{name}: {}",
            stderr(&output)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_files_merge_and_the_context_flag_picks_one() {
    let Some(cluster) = cluster(&support::kube::test_name(), Setup::Populated).await else {
        return;
    };
    let dir = TempDir::new("snapshot-kubeconfig");
    // The first file's current context (which wins the merge, as in kubectl) points at a
    // port nothing listens on; the second file is the real cluster's admin's.
    let closed = support::http::free_port();
    let first = dir.write(
        "first",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster:\n    server: http://127.0.0.1:{closed}\ncontexts:\n- name: gone\n  context:\n    cluster: gone\n    user: nobody\ncurrent-context: gone\nusers:\n- name: nobody\n  user: {{}}\n"
        ),
    );
    let kubeconfig =
        std::env::join_paths([first.as_path(), cluster.admin_kubeconfig()]).expect("paths join");
    let run = |context: Option<&'static str>| {
        let kubeconfig = kubeconfig.clone();
        tokio::task::spawn_blocking(move || {
            let mut command = std::process::Command::new(support::cli::BERTH);
            command.arg("snapshot").env("KUBECONFIG", kubeconfig);
            if let Some(context) = context {
                command.args(["--context", context]);
            }
            command.output().expect("berth runs")
        })
    };
    let current = run(None).await.expect("berth ran");
    assert_exit(&current, 1);
    assert!(
        stderr(&current).contains(&format!("127.0.0.1:{closed}")),
        "{}",
        stderr(&current)
    );

    let chosen = run(Some("admin")).await.expect("berth ran");
    assert_exit(&chosen, 0);
    assert!(
        stdout(&chosen).contains("name: node-a"),
        "{}",
        stdout(&chosen)
    );
}
