//! `berth run` started as the chart's container would be: the Dockerfile's ENTRYPOINT,
//! the Deployment's args, and the container's environment with the downward-API values
//! the kubelet would fill in.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::helm::{Manifests, NAMESPACE, repo_root};
pub use crate::support::http::free_port;
use crate::support::http::{self, Response, loopback};
use crate::support::https::{self, Trust};

/// The pod name the downward API would give `POD_NAME`.
pub const POD_NAME: &str = "berth-6d4cf56db6-x7k2p";

/// `berth run` started as the chart's container would be; killed on drop.
pub struct ChartProcess {
    child: Child,
    logs: Arc<Mutex<Vec<String>>>,
}

impl ChartProcess {
    /// The Dockerfile's ENTRYPOINT with the binary under test for `/berth`, then the
    /// container's args; only the container's env (downward-API values filled in as the
    /// kubelet would) plus KUBECONFIG, since the test has no in-cluster service account.
    pub fn spawn(manifests: &Manifests, kubeconfig: &Path) -> ChartProcess {
        let entrypoint = dockerfile_entrypoint();
        assert_eq!(entrypoint.first().map(String::as_str), Some("/berth"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
        command
            .args(&entrypoint[1..])
            .args(manifests.args())
            .env_clear()
            .envs(container_env(manifests.container()))
            .env("KUBECONFIG", kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start berth");
        let logs = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let logs = logs.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    logs.lock().unwrap_or_else(|p| p.into_inner()).push(line);
                }
            });
        }
        ChartProcess { child, logs }
    }

    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("berth exited ({status}):\n{}", self.logs().join("\n"));
        }
    }

    pub async fn terminate_cleanly(&mut self) {
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM");
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(
                    status.success(),
                    "berth exited with {status} after SIGTERM:\n{}",
                    self.logs().join("\n")
                );
                // Let the reader threads take the last lines.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return;
            }
            assert!(
                Instant::now() < deadline,
                "berth did not exit within {WAIT:?} of SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for ChartProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            std::thread::sleep(Duration::from_millis(100));
            eprintln!(
                "---- berth log ----\n{}\n---- end of berth log ----",
                self.logs().join("\n")
            );
        }
    }
}

/// What the kubelet's `httpGet` probe `probe` (`livenessProbe`, `readinessProbe`) of
/// `container` gets from berth listening on `port`: the status, over the probe's `scheme`
/// (HTTP when it names none). Over HTTPS the certificate is not verified, as the kubelet
/// does not verify it. Blocking.
pub fn probe_status(container: &Value, probe: &str, port: u16) -> Result<u16, String> {
    let get = &container[probe]["httpGet"];
    let path = get["path"]
        .as_str()
        .unwrap_or_else(|| panic!("{probe} has no httpGet path: {get}"));
    match get["scheme"].as_str().unwrap_or("HTTP") {
        "HTTP" => http::get(loopback(port), path).map(|response| response.status),
        "HTTPS" => https::get(loopback(port), "localhost", path, &[], &Trust::Any)
            .map(|exchange| exchange.response.status),
        other => panic!("{probe}: scheme {other:?} is neither HTTP nor HTTPS"),
    }
}

/// `GET /metrics` over HTTPS from berth on `port`, with `Authorization: Bearer <token>`
/// when a token is given, trusting any certificate (as the chart's ServiceMonitor does
/// with the self-signed one). Blocking.
pub fn get_metrics(port: u16, token: Option<&str>) -> Result<Response, String> {
    let authorization = token.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = authorization
        .iter()
        .map(|value| ("Authorization", value.as_str()))
        .collect();
    https::get(
        loopback(port),
        "localhost",
        "/metrics",
        &headers,
        &Trust::Any,
    )
    .map(|exchange| exchange.response)
}

/// The exec-form ENTRYPOINT of the Dockerfile's final stage.
pub fn dockerfile_entrypoint() -> Vec<String> {
    let text =
        std::fs::read_to_string(repo_root().join("Dockerfile")).expect("read the Dockerfile");
    let line = text
        .lines()
        .rfind(|l| l.trim_start().starts_with("ENTRYPOINT"))
        .expect("the Dockerfile has an ENTRYPOINT");
    let json = line.trim_start().trim_start_matches("ENTRYPOINT").trim();
    serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("ENTRYPOINT must be exec form (a JSON array): {line}: {e}"))
}

/// The container's environment as the kubelet would set it: values as given, the
/// downward-API fields the chart uses resolved for a pod [`POD_NAME`] in [`NAMESPACE`].
pub fn container_env(container: &Value) -> Vec<(String, String)> {
    container["env"]
        .as_array()
        .expect("the container has env")
        .iter()
        .map(|var| {
            let name = var["name"].as_str().expect("env name").to_string();
            let value = match (
                var["value"].as_str(),
                var["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
            ) {
                (Some(value), _) => value.to_string(),
                (None, Some("metadata.namespace")) => NAMESPACE.to_string(),
                (None, Some("metadata.name")) => POD_NAME.to_string(),
                _ => panic!("env {name}: a source this test cannot fill in: {var}"),
            };
            (name, value)
        })
        .collect()
}

pub const WAIT: Duration = Duration::from_secs(30);

/// Awaits `future` for at most [`WAIT`].
pub async fn within<F: std::future::Future>(what: &str, future: F) -> F::Output {
    crate::support::wait::within(what, WAIT, future).await
}

/// Polls `check` until it succeeds, failing after [`WAIT`] with the last state, or at
/// once when berth exits.
pub async fn eventually<F, Fut>(what: &str, berth: &mut ChartProcess, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        berth.assert_running();
        let last = match tokio::time::timeout(Duration::from_secs(5), check()).await {
            Ok(Ok(())) => return,
            Ok(Err(state)) => state,
            Err(_) => "(check timed out)".to_string(),
        };
        assert!(
            Instant::now() < deadline,
            "timed out after {WAIT:?} waiting until {what}; last: {last}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
