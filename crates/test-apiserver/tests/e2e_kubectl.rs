//! kubectl 1.37 against the test API server: `apply -f`, `get` (with the printer
//! columns), `get -o json` and `delete` of a SchedulerProfile, an invalid profile rejected
//! at `apply` time, and the `test-apiserver` binary.
//!
//! kubectl comes from `scripts/install-kubectl.sh` (`$HOME/.cache/berth-tools/bin`) or
//! PATH. Without it these tests skip with a loud message, except on CI (`CI=true`), where
//! they fail.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use berth::api::SchedulerProfile;
use common::*;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

/// A scratch directory for one test, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "berth-e2e-{test}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Waits for `child` at most `limit`, killing it when it takes longer.
fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> Output {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().expect("collecting output"),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let output = child.wait_with_output().expect("collecting output");
                panic!(
                    "{what} did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            Err(e) => panic!("{what}: waiting failed: {e}"),
        }
    }
}

/// kubectl bound to one server's kubeconfig, with its own cache directory.
struct Kubectl {
    binary: PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

/// The result of one kubectl run.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    command: String,
}

impl Run {
    fn success(self) -> Run {
        assert_eq!(
            self.code,
            Some(0),
            "`{}` failed\nstdout:\n{}\nstderr:\n{}",
            self.command,
            self.stdout,
            self.stderr
        );
        self
    }

    fn failure(self) -> Run {
        assert!(
            self.code.is_some_and(|c| c != 0),
            "`{}` should have failed\nstdout:\n{}\nstderr:\n{}",
            self.command,
            self.stdout,
            self.stderr
        );
        self
    }
}

impl Kubectl {
    /// Runs `kubectl <args>` off the async runtime (the server runs on it).
    async fn run(&self, args: &[&str]) -> Run {
        let mut command = Command::new(&self.binary);
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .arg("--request-timeout=15s")
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let description = format!("kubectl {}", args.join(" "));
        let what = description.clone();
        let child = command.spawn().expect("kubectl starts");
        let output = tokio::task::spawn_blocking(move || wait_bounded(child, WAIT, &what))
            .await
            .expect("the kubectl thread");
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            command: description,
        }
    }
}

fn kubectl_for(binary: PathBuf, kubeconfig: &Path, scratch: &Scratch) -> Kubectl {
    Kubectl {
        binary,
        kubeconfig: kubeconfig.to_path_buf(),
        cache: scratch.0.join("kube-cache"),
    }
}

const PROFILE: &str = "\
apiVersion: berth.dev/v1alpha1
kind: SchedulerProfile
metadata:
  name: batch
spec:
  schedulerName: batch-scheduler
  percentageOfNodesToScore: 50
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 2
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_gets_and_deletes_a_scheduler_profile() {
    let Some(binary) = kubectl_or_skip("kubectl_applies_gets_and_deletes_a_scheduler_profile")
    else {
        return;
    };
    let server = start_with_crds().await;
    let scratch = Scratch::new("kubectl");
    let kubectl = kubectl_for(binary, server.kubeconfig_path(), &scratch);
    let file = scratch.0.join("batch.yaml");
    std::fs::write(&file, PROFILE).expect("write the profile");
    let file = file.to_str().expect("a UTF-8 path");

    let applied = kubectl
        .run(&["apply", "--validate=false", "-f", file])
        .await
        .success();
    assert!(
        applied
            .stdout
            .contains("schedulerprofile.berth.dev/batch created"),
        "{}",
        applied.stdout
    );

    // The operator's part, faked: a status that fills the printer columns.
    let client = server.client().await;
    let api: Api<SchedulerProfile> = Api::all(client.clone());
    let conditions: Vec<Value> = ["Accepted", "Ready"]
        .iter()
        .map(|kind| {
            json!({"type": kind, "status": "True", "reason": "Fine", "message": "",
                   "lastTransitionTime": "2025-01-01T00:00:00Z"})
        })
        .collect();
    api.patch_status(
        "batch",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "observedGeneration": 1,
            "schedulerName": "batch-scheduler",
            "conditions": conditions,
        }})),
    )
    .await
    .expect("patch status");

    // `kubectl get sprof`: the short name resolves and the printer columns show.
    let table = kubectl.run(&["get", "sprof"]).await.success();
    let mut lines = table.stdout.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "SCHEDULER", "ACCEPTED", "READY", "AGE"],
        "{}",
        table.stdout
    );
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        row.get(..4),
        Some(&["batch", "batch-scheduler", "True", "True"][..]),
        "{}",
        table.stdout
    );
    assert_eq!(row.len(), 5, "an AGE column value: {}", table.stdout);
    // By the full resource name and the category, too.
    let by_category = kubectl.run(&["get", "berth"]).await.success();
    assert!(
        by_category.stdout.contains("batch"),
        "{}",
        by_category.stdout
    );

    let json_out = kubectl
        .run(&["get", "schedulerprofiles", "batch", "-o", "json"])
        .await
        .success();
    let object: Value = serde_json::from_str(&json_out.stdout).unwrap_or_else(|e| {
        panic!(
            "kubectl -o json printed non-JSON ({e}): {}",
            json_out.stdout
        )
    });
    assert_eq!(object["kind"], "SchedulerProfile");
    assert_eq!(object["apiVersion"], "berth.dev/v1alpha1");
    assert_eq!(object["metadata"]["name"], "batch");
    assert_eq!(object["spec"]["schedulerName"], "batch-scheduler");
    assert_eq!(object["spec"]["percentageOfNodesToScore"], 50);
    assert_eq!(object["status"]["schedulerName"], "batch-scheduler");
    assert!(
        object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string(),
        "apply records the last applied configuration: {object}"
    );

    // Applying the same file again changes nothing; a changed file is configured.
    let again = kubectl
        .run(&["apply", "--validate=false", "-f", file])
        .await
        .success();
    assert!(
        again
            .stdout
            .contains("schedulerprofile.berth.dev/batch unchanged"),
        "{}",
        again.stdout
    );
    std::fs::write(
        file,
        PROFILE.replace(
            "percentageOfNodesToScore: 50",
            "percentageOfNodesToScore: 60",
        ),
    )
    .expect("rewrite the profile");
    let configured = kubectl
        .run(&["apply", "--validate=false", "-f", file])
        .await
        .success();
    assert!(
        configured
            .stdout
            .contains("schedulerprofile.berth.dev/batch configured"),
        "{}",
        configured.stdout
    );
    let stored = api.get("batch").await.expect("get");
    assert_eq!(stored.spec.percentage_of_nodes_to_score, Some(60));
    assert_eq!(stored.metadata.generation, Some(2));

    let deleted = kubectl.run(&["delete", "sprof", "batch"]).await.success();
    assert!(
        deleted
            .stdout
            .contains("schedulerprofile.berth.dev \"batch\" deleted"),
        "{}",
        deleted.stdout
    );
    let missing = kubectl.run(&["get", "sprof", "batch"]).await.failure();
    assert!(
        missing.stderr.contains("NotFound") && missing.stderr.contains("\"batch\" not found"),
        "{}",
        missing.stderr
    );
    let empty = kubectl.run(&["get", "sprof"]).await.success();
    assert!(
        empty.stderr.contains("No resources found"),
        "stdout: {}\nstderr: {}",
        empty.stdout,
        empty.stderr
    );

    // kubectl identified itself in the request log.
    assert!(
        server.requests().iter().any(|r| r
            .user_agent
            .as_deref()
            .is_some_and(|a| a.starts_with("kubectl/"))),
        "no request with a kubectl user agent:{}",
        log_summary(&server)
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_reports_admission_errors() {
    let Some(binary) = kubectl_or_skip("kubectl_apply_reports_admission_errors") else {
        return;
    };
    let server = start_with_crds().await;
    let scratch = Scratch::new("kubectl-invalid");
    let kubectl = kubectl_for(binary, server.kubeconfig_path(), &scratch);
    let file = repo_root().join("tests/profiles/invalid/cel-backoff-max-below-initial.yaml");
    let file = file.to_str().expect("a UTF-8 path");
    let rejected = kubectl
        .run(&["apply", "--validate=false", "-f", file])
        .await
        .failure();
    assert!(
        rejected.stderr.contains("is invalid")
            && rejected.stderr.contains("spec.podMaxBackoffSeconds"),
        "{}",
        rejected.stderr
    );
    // Nothing was stored.
    let none = kubectl.run(&["get", "sprof", "-o", "name"]).await.success();
    assert_eq!(none.stdout.trim(), "", "{}", none.stdout);

    // Built-in resources work through kubectl as well.
    let nodes_file = scratch.0.join("node.yaml");
    std::fs::write(
        &nodes_file,
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n  labels:\n    zone: a\n",
    )
    .expect("write");
    kubectl
        .run(&[
            "apply",
            "--validate=false",
            "-f",
            nodes_file.to_str().expect("UTF-8"),
        ])
        .await
        .success();
    let nodes = kubectl
        .run(&["get", "nodes", "-l", "zone=a", "-o", "name"])
        .await
        .success();
    assert_eq!(nodes.stdout.trim(), "node/node-1");
    let resources = kubectl
        .run(&["api-resources", "--api-group=berth.dev", "-o", "wide"])
        .await
        .success();
    assert!(
        resources.stdout.contains("schedulerprofiles") && resources.stdout.contains("sprof"),
        "{}",
        resources.stdout
    );
    server.shutdown().await;
}

/// Reads the binary's stdout until both announcement lines are seen.
fn read_announcements(child: &mut Child) -> (String, PathBuf) {
    let stdout = child.stdout.take().expect("piped stdout");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + WAIT;
    let (mut url, mut kubeconfig) = (None, None);
    let mut seen = Vec::new();
    while url.is_none() || kubeconfig.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = receiver.recv_timeout(left).unwrap_or_else(|_| {
            panic!("test-apiserver did not announce itself within {WAIT:?}; printed: {seen:?}")
        });
        if let Some(rest) = line.strip_prefix("listening on ") {
            url = Some(rest.trim().to_string());
        } else if let Some(rest) = line.strip_prefix("kubeconfig: ") {
            kubeconfig = Some(PathBuf::from(rest.trim()));
        }
        seen.push(line);
    }
    (url.expect("url"), kubeconfig.expect("kubeconfig"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_and_writes_a_kubeconfig() {
    let scratch = Scratch::new("binary");
    let kubeconfig_path = scratch.0.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_test-apiserver"))
        .arg("--kubeconfig")
        .arg(&kubeconfig_path)
        .arg("--crds")
        .arg(repo_root().join("crds"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("test-apiserver starts");
    // Kill the child whatever happens below.
    struct KillOnDrop(Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let (url, announced) = read_announcements(&mut child);
    let child = KillOnDrop(child);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert_eq!(announced, kubeconfig_path);

    let kubeconfig = kube::config::Kubeconfig::read_from(&kubeconfig_path).expect("a kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client config");
    assert_eq!(
        config.cluster_url.to_string().trim_end_matches('/'),
        url.trim_end_matches('/')
    );
    let client = kube::Client::try_from(config).expect("a client");
    let profiles: Api<SchedulerProfile> = Api::all(client);
    let list = within(
        "listing profiles from the binary",
        profiles.list(&Default::default()),
    )
    .await
    .expect("--crds installed berth's CRDs");
    assert!(list.items.is_empty());

    if let Some(binary) =
        kubectl_or_skip("the_binary_serves_and_writes_a_kubeconfig (kubectl part)")
    {
        let kubectl = kubectl_for(binary, &kubeconfig_path, &scratch);
        let run = kubectl.run(&["get", "sprof"]).await.success();
        assert!(run.stderr.contains("No resources found"), "{}", run.stderr);
    }
    drop(child);
}
