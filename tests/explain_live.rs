//! `berth simulate --from-cluster` and `kubectl berth` against a real cluster (issue 19,
//! "Done when"; since the issue "Real Kubernetes in the loop": etcd, kube-apiserver 1.37,
//! kube-controller-manager and kwok, `crates/kube-cluster`): a cluster built from
//! examples/quickstart.yaml (nodes, running pods,
//! pending pods, a PriorityClass, a namespace, a profile). Reading the cluster gives the
//! same placements and reasons as `berth simulate -f` on the same objects written as YAML
//! by kubectl; `--pod` explains one pod; a what-if with another profile lists exactly the
//! pods two plain simulations place differently; `kubectl berth why` runs through kubectl's
//! plugin mechanism; and nothing is written to the cluster (the API server's audit log has
//! no write from berth's user agent).

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_cluster::KubeCluster;
use serde_json::Value;
use support::api::repo_root;
use support::cli::{BERTH, stderr, stdout};
use support::kube::{eventually, install_crds, test_name, wait_nodes_ready};
use support::temp::TempDir;
use support::tools::kubectl_or_skip;

/// Where each of the quickstart's kinds is served: (group, version, plural, namespaced).
fn served(kind: &str) -> (&'static str, &'static str, &'static str, bool) {
    match kind {
        "Node" => ("", "v1", "nodes", false),
        "Pod" => ("", "v1", "pods", true),
        "Namespace" => ("", "v1", "namespaces", false),
        "PriorityClass" => ("scheduling.k8s.io", "v1", "priorityclasses", false),
        "SchedulerProfile" => ("berth.dev", "v1alpha1", "schedulerprofiles", false),
        other => panic!("the test does not create {other}"),
    }
}

/// The documents of an example file.
fn example(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo_root().join("examples").join(name))
        .unwrap_or_else(|e| panic!("reading examples/{name}: {e}"));
    serde_saphyr::from_str_multiple::<Value, Vec<Value>>(&text)
        .unwrap_or_else(|e| panic!("parsing examples/{name}: {e}"))
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

/// Creates `objects` in the cluster, in order, as `kubectl apply` would: a namespace's
/// pods once its default ServiceAccount exists (admission needs it), the pending pods once
/// every node is Ready without the node lifecycle controller's `not-ready` taint (a real
/// cluster's new node has it for a moment, and a read then would see it).
async fn create_all(client: &kube::Client, objects: &[Value]) {
    for object in objects {
        let kind = object["kind"].as_str().expect("kind");
        let (group, version, plural, namespaced) = served(kind);
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let api: Api<DynamicObject> = if namespaced {
            let namespace = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default");
            eventually(
                &format!("namespace {namespace} has its ServiceAccount"),
                || kube_cluster::default_service_account(client, namespace),
            )
            .await;
            Api::namespaced_with(client.clone(), namespace, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        if kind == "Pod" && object["spec"]["nodeName"].is_null() {
            wait_nodes_ready(client).await;
        }
        let dynamic: DynamicObject = serde_json::from_value(object.clone()).expect("an object");
        api.create(&PostParams::default(), &dynamic)
            .await
            .unwrap_or_else(|e| panic!("creating {kind} {:?}: {e}", object["metadata"]["name"]));
    }
    wait_nodes_ready(client).await;
}

fn berth(args: &[&str]) -> Output {
    Command::new(BERTH)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("berth runs")
}

fn json_report(output: &Output) -> Value {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
    serde_json::from_str(&stdout(output)).expect("a JSON report")
}

/// namespace/name -> (result, node, message) of every pod of a report.
fn outcomes(report: &Value) -> BTreeMap<String, (String, String, String)> {
    report["pods"]
        .as_array()
        .expect("pods")
        .iter()
        .map(|pod| {
            let text = |field: &str| pod[field].as_str().unwrap_or_default().to_string();
            (
                format!("{}/{}", text("namespace"), text("name")),
                (text("result"), text("node"), text("message")),
            )
        })
        .collect()
}

/// The cluster's objects as `kubectl get -o yaml` writes them, into `file`.
fn kubectl_get_yaml(kubectl: &Path, kubeconfig: &Path, file: &Path) {
    let output = Command::new(kubectl)
        .args([
            "get",
            "nodes,namespaces,priorityclasses,pods,schedulerprofiles",
            "-A",
            "-o",
            "yaml",
        ])
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::null())
        .output()
        .expect("kubectl runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "kubectl get: {}",
        stderr(&output)
    );
    std::fs::write(file, &output.stdout).expect("the YAML is written");
}

/// The quickstart cluster on a real cluster, with berth's CRDs.
struct Live {
    kube: KubeCluster,
}

impl Live {
    /// The admin's kubeconfig: a person reads their cluster with their own credentials.
    fn kubeconfig(&self) -> std::path::PathBuf {
        self.kube.admin_kubeconfig().to_path_buf()
    }
}

/// One real cluster at a time in this binary (2 cores).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The quickstart cluster, or `None` after a loud skip on a machine without Go.
async fn quickstart_cluster(test: &str) -> Option<(Live, tokio::sync::MutexGuard<'static, ()>)> {
    let serial = SERIAL.lock().await;
    let kube = support::kube::start_or_skip(test, kube_cluster::Options::default()).await?;
    let client = kube.admin_client().await.unwrap_or_else(|e| panic!("{e}"));
    install_crds(&client).await;
    create_all(&client, &example("quickstart.yaml")).await;
    Some((Live { kube }, serial))
}

/// Fails the test if berth (its user agent in the API server's audit log) wrote anything.
fn assert_read_only(live: &Live) {
    let requests = support::kube::requests(live.kube.audit_log());
    let berths: Vec<_> = requests
        .iter()
        .filter(|r| r.user_agent.as_deref() == Some(berth::operator::USER_AGENT))
        .collect();
    assert!(!berths.is_empty(), "no request of berth's in the audit log");
    let writes: Vec<String> = berths
        .into_iter()
        .filter(|r| !matches!(r.verb.as_str(), "get" | "list" | "watch"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(writes.is_empty(), "berth wrote to the cluster: {writes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_cluster_is_simulate_on_the_same_objects_and_writes_nothing() {
    let Some(kubectl) =
        kubectl_or_skip("from_cluster_is_simulate_on_the_same_objects_and_writes_nothing")
    else {
        return;
    };
    let Some((server, _serial)) = quickstart_cluster(&test_name()).await else {
        return;
    };
    let kubeconfig = server.kubeconfig();
    let config = kubeconfig.to_str().expect("a UTF-8 path");

    let live = json_report(&berth(&[
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        config,
        "-o",
        "json",
    ]));
    assert_read_only(&server);

    let dir = TempDir::new("explain-live");
    let objects = dir.path().join("cluster.yaml");
    kubectl_get_yaml(&kubectl, &kubeconfig, &objects);
    let offline = json_report(&berth(&[
        "simulate",
        "-f",
        objects.to_str().expect("a UTF-8 path"),
        "-o",
        "json",
    ]));
    let live = outcomes(&live);
    assert_eq!(
        live,
        outcomes(&offline),
        "--from-cluster (left) vs -f (right)"
    );
    // Explaining one pod runs the same simulation: the same placements and reasons.
    let explained = json_report(&berth(&[
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        config,
        "--pod",
        "default/batch-huge",
        "-o",
        "json",
    ]));
    assert_eq!(
        outcomes(&explained),
        live,
        "--pod (left) vs without (right)"
    );
    assert_read_only(&server);
    // The quickstart's two pods that fit nowhere are among them, as the file says.
    for pod in ["default/batch-huge", "ml/gpu-untolerated"] {
        assert_eq!(live[pod].0, "Unschedulable", "{pod}: {:?}", live[pod]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_explains_one_pending_pod_and_refuses_others() {
    let Some((server, _serial)) = quickstart_cluster(&test_name()).await else {
        return;
    };
    let config = server
        .kubeconfig()
        .to_str()
        .expect("a UTF-8 path")
        .to_string();
    let from_cluster = [
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        config.as_str(),
    ];

    // The explanation of an unschedulable pod names its reasons and the nodes.
    let why = berth(&[&from_cluster[..], &["--pod", "default/batch-huge"]].concat());
    assert_eq!(why.status.code(), Some(0), "{}", stderr(&why));
    let text = stdout(&why);
    for expected in ["batch-huge", "Insufficient cpu", "node-a"] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
    // -o json is the documented report, with this pod's per-node verdicts.
    let report = json_report(&berth(
        &[
            &from_cluster[..],
            &["--pod", "default/batch-huge", "-o", "json"],
        ]
        .concat(),
    ));
    let pod = report["pods"]
        .as_array()
        .and_then(|pods| pods.iter().find(|p| p["name"] == "batch-huge"))
        .expect("the pod is reported");
    assert_eq!(pod["nodes"].as_array().map(Vec::len), Some(6), "{pod}");

    for (pod, error) in [
        (
            "default/existing-db",
            "is not pending: it is bound to node node-b",
        ),
        ("default/nope", "is not in the cluster"),
        ("nope", "expected NAMESPACE/NAME"),
    ] {
        let output = berth(&[&from_cluster[..], &["--pod", pod]].concat());
        assert_eq!(output.status.code(), Some(2), "{pod}");
        assert!(
            stderr(&output).contains(error),
            "{pod}: {}",
            stderr(&output)
        );
    }
    assert_read_only(&server);
}

/// A profile that packs pods onto the fullest nodes, serving `binpack`.
const BINPACK: &str = "apiVersion: berth.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: binpack}
spec:
  pluginConfig:
    nodeResourcesFit:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_if_lists_the_pods_another_profile_moves() {
    let Some(kubectl) = kubectl_or_skip("what_if_lists_the_pods_another_profile_moves") else {
        return;
    };
    let Some((server, _serial)) = quickstart_cluster(&test_name()).await else {
        return;
    };
    let kubeconfig = server.kubeconfig();
    let config = kubeconfig.to_str().expect("a UTF-8 path");
    let dir = TempDir::new("what-if");
    let profile = dir.path().join("binpack.yaml");
    std::fs::write(&profile, BINPACK).expect("profile written");
    let profile = profile.to_str().expect("a UTF-8 path");

    let what_if = json_report(&berth(&[
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        config,
        "-f",
        profile,
        "--profile",
        "binpack",
        "-o",
        "json",
    ]));
    assert_read_only(&server);

    // The oracle: two plain simulations of the same objects, the second with every
    // pending pod's schedulerName set to binpack.
    let objects = dir.path().join("cluster.yaml");
    kubectl_get_yaml(&kubectl, &kubeconfig, &objects);
    let objects = objects.to_str().expect("a UTF-8 path");
    let before = outcomes(&json_report(&berth(&[
        "simulate", "-f", objects, "-f", profile, "-o", "json",
    ])));
    let text = std::fs::read_to_string(objects).expect("the YAML");
    let mut redirected: Value = serde_saphyr::from_str(&text).expect("kubectl's List");
    for item in redirected["items"].as_array_mut().expect("items") {
        if item["kind"] == "Pod" && item["spec"]["nodeName"].is_null() {
            item["spec"]["schedulerName"] = Value::from("binpack");
        }
    }
    let redirected_file = dir.path().join("redirected.json");
    std::fs::write(&redirected_file, redirected.to_string()).expect("written");
    let after = outcomes(&json_report(&berth(&[
        "simulate",
        "-f",
        redirected_file.to_str().expect("a UTF-8 path"),
        "-f",
        profile,
        "-o",
        "json",
    ])));
    let place = |(result, node, _): &(String, String, String)| {
        if node.is_empty() {
            result.clone()
        } else {
            node.clone()
        }
    };
    let expected: Vec<(String, String, String)> = after
        .iter()
        .filter_map(|(pod, outcome)| {
            let from = place(before.get(pod)?);
            let to = place(outcome);
            (from != to).then(|| (pod.clone(), from, to))
        })
        .collect();
    let mut moved: Vec<(String, String, String)> = what_if["moved"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            let text = |f: &str| m[f].as_str().unwrap_or_default().to_string();
            (text("pod"), text("from"), text("to"))
        })
        .collect();
    moved.sort();
    assert!(
        !expected.is_empty(),
        "packing moves none of the quickstart's pods?"
    );
    assert_eq!(
        moved, expected,
        "what-if's moves (left) vs two simulations (right)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_berth_why_runs_as_a_kubectl_plugin() {
    let Some(kubectl) = kubectl_or_skip("kubectl_berth_why_runs_as_a_kubectl_plugin") else {
        return;
    };
    let Some((server, _serial)) = quickstart_cluster(&test_name()).await else {
        return;
    };
    let kubeconfig = server.kubeconfig();
    let dir = TempDir::new("kubectl-plugin");
    let plugin = dir.path().join("kubectl-berth");
    std::os::unix::fs::symlink(BERTH, &plugin).expect("the plugin link");
    let path = std::env::join_paths(std::iter::once(dir.path().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");

    let why = Command::new(&kubectl)
        .args(["berth", "why", "default/batch-huge"])
        .env("PATH", &path)
        .env("KUBECONFIG", &kubeconfig)
        .stdin(Stdio::null())
        .output()
        .expect("kubectl runs");
    assert_eq!(why.status.code(), Some(0), "{}", stderr(&why));
    let direct = berth(&[
        "simulate",
        "--from-cluster",
        "--kubeconfig",
        kubeconfig.to_str().expect("a UTF-8 path"),
        "--pod",
        "default/batch-huge",
    ]);
    assert_eq!(
        stdout(&why),
        stdout(&direct),
        "kubectl berth why vs berth simulate --pod"
    );
    assert!(stdout(&why).contains("batch-huge"), "{}", stdout(&why));
    assert_read_only(&server);
}
