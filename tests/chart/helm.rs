//! helm and kubectl for the chart tests: where they are, running them with bounded time,
//! and the rendered chart as JSON values.
//!
//! The tools come from `scripts/install-kubectl.sh` (`$HOME/.cache/berth-tools/bin`) or
//! PATH. Without them a test skips with a loud message, except on CI (`CI=true`), where
//! it fails.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use crate::support::api::repo_root;
pub use crate::support::tools::{kubectl_or_skip, skip};

/// The chart under test.
pub fn chart_dir() -> PathBuf {
    repo_root().join("charts/berth")
}

/// The release namespace every render uses.
pub const NAMESPACE: &str = "berth-system";
/// The release name every render uses.
pub const RELEASE: &str = "berth";

/// helm (v3 or v4), or `None` after [`skip`].
pub fn helm_or_skip(test: &str) -> Option<Helm> {
    crate::support::tools::helm_or_skip(test).map(|binary| Helm { binary })
}

/// A finished command: exit code and output.
#[derive(Debug)]
pub struct Run {
    pub command: String,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Fails the test unless the command exited 0.
    pub fn success(self) -> Run {
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

    /// Fails the test if the command exited 0; returns stderr.
    pub fn failure(self) -> String {
        assert_ne!(
            self.code,
            Some(0),
            "`{}` succeeded but must fail\nstdout:\n{}",
            self.command,
            self.stdout
        );
        self.stderr
    }
}

/// Runs `command`, killing it after `timeout`.
pub fn run(mut command: Command, timeout: Duration) -> Run {
    let description = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {description}: {e}"));
    // Drain both pipes on threads so a chatty command cannot block on a full pipe.
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{description}` did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = Output {
        status,
        stdout: out.join().unwrap_or_default().into_bytes(),
        stderr: err.join().unwrap_or_default().into_bytes(),
    };
    Run {
        command: description,
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The helm binary.
pub struct Helm {
    pub binary: PathBuf,
}

impl Helm {
    /// `helm <args>`.
    pub fn run(&self, args: &[&str]) -> Run {
        let mut command = Command::new(&self.binary);
        command.args(args);
        // No user configuration, plugins or repositories leak into the tests.
        let home = std::env::temp_dir().join(format!("berth-chart-helm-{}", std::process::id()));
        command
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_DATA_HOME", home.join("data"));
        run(command, Duration::from_secs(60))
    }

    /// `helm template berth charts/berth --namespace berth-system <extra>`: the manifest
    /// text, or the failed run.
    pub fn template(&self, extra: &[&str]) -> Result<String, Run> {
        let chart = chart_dir();
        let chart = chart.to_str().expect("a UTF-8 path");
        let mut args = vec!["template", RELEASE, chart, "--namespace", NAMESPACE];
        args.extend_from_slice(extra);
        let run = self.run(&args);
        if run.code == Some(0) {
            Ok(run.stdout)
        } else {
            Err(run)
        }
    }

    /// [`Helm::template`], parsed: one JSON value per document. Fails the test when helm
    /// fails.
    pub fn render(&self, extra: &[&str]) -> Manifests {
        let text = self.template(extra).unwrap_or_else(|run| {
            panic!(
                "helm template {extra:?} failed\nstderr:\n{}\nstdout:\n{}",
                run.stderr, run.stdout
            )
        });
        Manifests::parse(&text)
    }
}

/// Rendered manifests.
#[derive(Debug, Clone)]
pub struct Manifests {
    pub objects: Vec<Value>,
}

impl Manifests {
    /// Multi-document YAML (empty documents dropped).
    pub fn parse(text: &str) -> Manifests {
        let documents: Vec<Value> = serde_saphyr::from_multiple(text)
            .unwrap_or_else(|e| panic!("the rendered chart is not valid YAML: {e}\n{text}"));
        Manifests {
            objects: documents.into_iter().filter(|d| !d.is_null()).collect(),
        }
    }

    /// Every object's kind, sorted.
    pub fn kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self
            .objects
            .iter()
            .map(|o| o["kind"].as_str().unwrap_or_default().to_string())
            .collect();
        kinds.sort();
        kinds
    }

    /// The objects of `kind`.
    pub fn all(&self, kind: &str) -> Vec<&Value> {
        self.objects.iter().filter(|o| o["kind"] == kind).collect()
    }

    /// The one object of `kind`; fails the test unless there is exactly one.
    pub fn one(&self, kind: &str) -> &Value {
        match self.all(kind).as_slice() {
            [one] => one,
            other => panic!(
                "expected exactly one {kind}, found {}; kinds: {:?}",
                other.len(),
                self.kinds()
            ),
        }
    }

    /// The Deployment's only container.
    pub fn container(&self) -> &Value {
        let containers = &self.one("Deployment")["spec"]["template"]["spec"]["containers"];
        match containers.as_array().map(Vec::as_slice) {
            Some([one]) => one,
            _ => panic!("the Deployment must have exactly one container: {containers}"),
        }
    }

    /// The Deployment container's args.
    pub fn args(&self) -> Vec<String> {
        self.container()["args"]
            .as_array()
            .unwrap_or_else(|| panic!("the container has no args: {}", self.container()))
            .iter()
            .map(|a| a.as_str().expect("args are strings").to_string())
            .collect()
    }

    /// The value of `--<flag>=<value>` in the container args.
    pub fn flag(&self, flag: &str) -> Option<String> {
        let prefix = format!("--{flag}=");
        self.args()
            .iter()
            .find_map(|a| a.strip_prefix(&prefix).map(str::to_string))
    }
}

/// `path` as a `&str` (test paths are UTF-8).
pub fn utf8(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}
