//! The real Kubernetes control plane for tests (`crates/kube-cluster`): started per
//! test, skipped loudly on a laptop without Go (never on CI), and its audit log read back
//! as the request log the test API server keeps ([`requests`]), so the same assertions
//! and the RBAC replay work on both.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube_cluster::{Error, KubeCluster, Options};
use serde_json::Value;
use test_apiserver::RequestRecord;

use super::tools::skip;

/// A real cluster, or `None` after a loud skip when Go is missing (not on CI, where
/// that fails the test). Any other failure to start fails the test with the components'
/// logs.
pub async fn start_or_skip(test: &str, options: Options) -> Option<KubeCluster> {
    match KubeCluster::start(options).await {
        Ok(cluster) => Some(cluster),
        Err(Error::NoGo) => {
            skip(
                test,
                "Go is not installed, so the real kube-apiserver, etcd, kube-controller-manager \
                 and kwok cannot be built (scripts/kube-build.sh)",
            );
            None
        }
        Err(e) => panic!("{test}: starting the real cluster: {e}"),
    }
}

/// kube-apiserver and etcd only, no controller manager and no kubelets: for tests of
/// what the API server itself does, where nothing else changes the objects. `None` as in
/// [`start_or_skip`].
pub async fn start_apiserver_or_skip(test: &str) -> Option<KubeCluster> {
    let options = Options {
        controller_manager: false,
        kwok: false,
        ..Options::default()
    };
    start_or_skip(test, options).await
}

/// The running test's name (its thread's), for skip lines and failures.
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string()
}

/// Creates ServiceAccount `namespace/default` (and the namespace), which admission
/// requires of every pod, on a cluster without the controller manager that would create it.
pub async fn create_default_service_account(client: &kube::Client, namespace: &str) {
    kube_cluster::ensure_service_account(client, namespace, "default")
        .await
        .unwrap_or_else(|e| panic!("ServiceAccount {namespace}/default: {e}"));
}

/// The HTTP method of a request the audit log names by its verb.
fn method_of(verb: &str) -> &'static str {
    match verb {
        "get" | "list" | "watch" => "GET",
        "create" => "POST",
        "update" => "PUT",
        "patch" => "PATCH",
        "delete" | "deletecollection" => "DELETE",
        _ => "GET",
    }
}

/// One audit event (`audit.k8s.io/v1`) as a [`RequestRecord`]; `None` for what is not a
/// finished (or, for a watch, started) request.
pub fn record_of(event: &Value) -> Option<RequestRecord> {
    let stage = event["stage"].as_str()?;
    if stage != "ResponseComplete" && stage != "ResponseStarted" && stage != "Panic" {
        return None;
    }
    let uri = event["requestURI"].as_str()?;
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let verb = event["verb"].as_str()?.to_string();
    let object = &event["objectRef"];
    let text = |v: &Value| v.as_str().map(str::to_string);
    let (resource, subresource, namespace, name, group, version) = if object.is_object() {
        (
            text(&object["resource"]).unwrap_or_default(),
            text(&object["subresource"]),
            text(&object["namespace"]),
            text(&object["name"]),
            text(&object["apiGroup"]).unwrap_or_default(),
            text(&object["apiVersion"]).unwrap_or_default(),
        )
    } else {
        Default::default()
    };
    Some(RequestRecord {
        method: method_of(&verb).to_string(),
        verb,
        path: path.to_string(),
        query: query.to_string(),
        group,
        version,
        resource,
        subresource,
        namespace,
        name,
        user_agent: text(&event["userAgent"]),
        status: event["responseStatus"]["code"]
            .as_u64()
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(0),
    })
}

/// The API server's audit log at `path` as request records, in the order the server
/// finished them. A long-running request (a watch) appears once, when it started.
pub fn requests(path: &Path) -> Vec<RequestRecord> {
    requests_where(path, |_| true)
}

fn requests_where(path: &Path, keep: impl Fn(&Value) -> bool) -> Vec<RequestRecord> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| keep(event))
        .filter(|event| {
            event["auditID"]
                .as_str()
                .is_none_or(|id| seen.insert(id.to_string()))
        })
        .filter_map(|event| record_of(&event))
        .collect()
}

/// Polls `check` every 200 ms for up to 60 s.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match check().await {
            Ok(()) => return,
            Err(state) if tokio::time::Instant::now() >= deadline => {
                panic!("timed out waiting until {what}: {state}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Installs `crds/` and waits until each is established.
pub async fn install_crds(client: &kube::Client) {
    install_crds_from(client, &super::api::berth_crds()).await;
}

/// Installs every CRD file in `dir` and waits until each is established.
pub async fn install_crds_from(client: &kube::Client, dir: &Path) {
    kube_cluster::install_crds(client, dir, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("installing the CRDs of {}: {e}", dir.display()));
}

/// Waits until every node is Ready and free of the node lifecycle controller's
/// `not-ready` and `unreachable` taints (a new node has them for a moment).
pub async fn wait_nodes_ready(client: &kube::Client) {
    let nodes: Api<Node> = Api::all(client.clone());
    eventually(
        "every node is Ready and untainted by the lifecycle controller",
        || async {
            let list = nodes
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            let waiting: Vec<String> = list
                .items
                .iter()
                .filter(|n| {
                    let ready = n
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|cs| {
                            cs.iter().any(|c| c.type_ == "Ready" && c.status == "True")
                        });
                    let tainted =
                        n.spec
                            .as_ref()
                            .and_then(|s| s.taints.as_ref())
                            .is_some_and(|ts| {
                                ts.iter().any(|t| {
                                    t.key == "node.kubernetes.io/not-ready"
                                        || t.key == "node.kubernetes.io/unreachable"
                                })
                            });
                    !ready || tainted
                })
                .map(|n| n.metadata.name.clone().unwrap_or_default())
                .collect();
            if waiting.is_empty() {
                Ok(())
            } else {
                Err(format!("{waiting:?}"))
            }
        },
    )
    .await;
}
