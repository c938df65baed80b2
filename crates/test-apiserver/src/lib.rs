//! A Kubernetes API server stand-in for berth's end-to-end tests.
//!
//! It speaks the real HTTP API (discovery, CRUD, status and binding subresources, patch
//! types, list and watch with resourceVersions and bookmarks, CRDs) over plain HTTP on
//! 127.0.0.1 with a random port, and writes a kubeconfig for it. Tests start it
//! in-process ([`TestApiServer::start`]) for the faults a real kube-apiserver cannot make
//! on demand. Where it simplifies the real server, README.md says so.
//!
//! A request flows through the modules in this order:
//!
//! - [`http`]: the one handler. It parses the path into a [`request_info::RequestInfo`]
//!   (verb, group, version, namespace, resource, name, subresource), logs it, applies the
//!   delay and injected faults ([`control`]), then routes to [`discovery`], a review
//!   ([`access`]) or a resource operation.
//! - [`cluster`]: the operations on objects — create, get, update, patch ([`patch`]),
//!   delete with finalizers, binding, list with [`selectors`] and [`pagination`] — with
//!   the per-resource write rules of [`strategy`]. Writing a CRD ([`crd`]) changes what
//!   the [`resources`] registry serves.
//! - [`store`]: objects, the store-wide resourceVersion and the kept event history.
//! - [`watch`]: streams that follow the store's history, with bookmarks and 410s.
//! - [`access`]: TokenReview and SubjectAccessReview, answered from the configured
//!   tokens and rules (the server itself allows every request).

// ApiError is the response body of every failure (a metav1.Status with causes); it is
// returned once per request, so its size does not matter here.
#![allow(clippy::result_large_err)]

pub mod access;
pub mod cluster;
pub mod control;
pub mod crd;
pub mod discovery;
pub mod errors;
pub mod http;
pub mod kubeconfig;
pub mod pagination;
pub mod patch;
pub mod request_info;
pub mod resources;
pub mod selectors;
pub mod store;
pub mod strategy;
pub mod watch;

#[cfg(test)]
mod kube_smoke_tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use access::{Access, AccessRule, UserInfo};
pub use control::{Fault, RequestRecord};
pub use errors::ApiError;

use http::{Shared, lock};

/// Server settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// How many events are kept for watches to resume from; a watch (or continued list)
    /// from an older resourceVersion gets 410 Expired.
    pub history_window: usize,
    /// How often a watch with `allowWatchBookmarks=true` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// The Kubernetes minor version `/version` reports (1.`minor`.0): 37 by default, an
    /// older supported release to run a test against what such a server says.
    pub minor_version: u32,
    /// The tokens TokenReview knows and the rules SubjectAccessReview applies (none by
    /// default); [`TestApiServer::set_access`] replaces them while the server runs.
    pub access: Access,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            history_window: 10_000,
            bookmark_interval: Duration::from_secs(1),
            minor_version: 37,
            access: Access::default(),
        }
    }
}

/// A running server. Dropping it stops serving (use [`TestApiServer::shutdown`] to wait).
#[derive(Debug)]
pub struct TestApiServer {
    shared: Arc<Shared>,
    url: String,
    kubeconfig_path: PathBuf,
    /// The temp dir holding the kubeconfig, removed on shutdown.
    temp_dir: Option<PathBuf>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestApiServer {
    /// Serves on 127.0.0.1 with a random port and writes a kubeconfig into a fresh temp dir.
    pub async fn start(config: Config) -> std::io::Result<TestApiServer> {
        TestApiServer::start_on(config, 0, None).await
    }

    /// Serves on 127.0.0.1:`port` (0: random) and writes the kubeconfig to
    /// `kubeconfig_path` (None: a fresh temp dir). An invalid `config.access` (see
    /// [`Access::validate`]) is an `InvalidInput` error.
    pub async fn start_on(
        config: Config,
        port: u16,
        kubeconfig_path: Option<PathBuf>,
    ) -> std::io::Result<TestApiServer> {
        config.access.validate().map_err(|error| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid access configuration: {error}"),
            )
        })?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let address = listener.local_addr()?;
        let url = format!("http://{address}");
        let (temp_dir, kubeconfig_path) = match kubeconfig_path {
            Some(path) => (None, path),
            None => {
                let dir = kubeconfig::fresh_temp_dir()?;
                let path = dir.join("kubeconfig");
                (Some(dir), path)
            }
        };
        kubeconfig::write(&kubeconfig_path, &url)?;
        let shared = Arc::new(Shared::new(config, address.to_string()));
        let router = axum::Router::new()
            .fallback(http::handle)
            .with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, router).with_graceful_shutdown(async move {
                let _ = stopped.await;
            });
            if let Err(error) = serve.await {
                tracing::warn!(%error, "test-apiserver stopped serving");
            }
        });
        Ok(TestApiServer {
            shared,
            url,
            kubeconfig_path,
            temp_dir,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        self.url.clone()
    }

    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    pub fn kubeconfig(&self) -> kube::config::Kubeconfig {
        kube::config::Kubeconfig::from_yaml(&kubeconfig::render(&self.url))
            .expect("the rendered kubeconfig parses")
    }

    /// A kube-rs client for this server, built from its kubeconfig (default namespace
    /// `default`).
    pub async fn client(&self) -> kube::Client {
        let options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(self.kubeconfig(), &options)
            .await
            .expect("kube reads the kubeconfig");
        kube::Client::try_from(config).expect("a client for the test server")
    }

    /// Creates every CustomResourceDefinition in the `*.yaml`/`*.yml` files of `dir`
    /// (multi-document files allowed, other kinds skipped), in file order, as a create
    /// would. Returns the CRD names.
    pub fn install_crds_from_dir(&self, dir: &Path) -> Result<Vec<String>, ApiError> {
        let unreadable = |path: &Path, error: String| {
            ApiError::bad_request(format!("{}: {error}", path.display()))
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| unreadable(dir, e.to_string()))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
            })
            .collect();
        files.sort();
        let mut names = Vec::new();
        for file in files {
            let text =
                std::fs::read_to_string(&file).map_err(|e| unreadable(&file, e.to_string()))?;
            let documents: Vec<Value> =
                serde_saphyr::from_multiple(&text).map_err(|e| unreadable(&file, e.to_string()))?;
            for document in documents
                .into_iter()
                .filter(|d| d["kind"] == "CustomResourceDefinition")
            {
                let mut cluster = lock(&self.shared.cluster);
                let def = cluster
                    .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
                    .ok_or_else(|| ApiError::internal("CRDs are not served"))?;
                let created = cluster.create(&def, "", document)?;
                names.push(
                    created["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                );
            }
        }
        Ok(names)
    }

    /// The request log, in arrival order (test controls are not logged).
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.control).requests()
    }

    pub fn clear_requests(&self) {
        lock(&self.shared.control).clear_requests();
    }

    /// Fails the next `fault.count` matching requests.
    pub fn inject_fault(&self, fault: Fault) {
        lock(&self.shared.control).inject(fault);
    }

    /// Delays every response (None: no delay).
    pub fn set_delay(&self, delay: Option<Duration>) {
        lock(&self.shared.control).delay = delay;
    }

    /// The tokens and rules TokenReview and SubjectAccessReview answer from now.
    pub fn access(&self) -> Access {
        lock(&self.shared.access).clone()
    }

    /// Replaces the tokens and rules at once, so a test can grant or revoke access while
    /// its client runs; reviews from then on answer from them. An invalid `access` (see
    /// [`Access::validate`]) is a 400 BadRequest and changes nothing.
    pub fn set_access(&self, access: Access) -> Result<(), ApiError> {
        access
            .validate()
            .map_err(|error| ApiError::bad_request(format!("invalid access: {error}")))?;
        *lock(&self.shared.access) = access;
        Ok(())
    }

    /// Ends every open watch stream now (clients see the stream close, as on a
    /// connection loss or an apiserver restart).
    pub fn drop_watches(&self) {
        self.shared.drop_watches();
    }

    /// Forgets the watch history: a watch or continued list from any resourceVersion
    /// handed out so far gets 410 Expired. Open watches continue.
    pub fn expire_history(&self) {
        lock(&self.shared.cluster).store.expire_history();
    }

    /// Stops serving, ends open watches, and waits for the server task.
    pub async fn shutdown(mut self) {
        self.stop_serving();
        if let Some(task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .is_err()
        {
            tracing::warn!("test-apiserver did not stop within 5s");
        }
    }

    fn stop_serving(&mut self) {
        self.shared.drop_watches();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(dir) = self.temp_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Drop for TestApiServer {
    fn drop(&mut self) {
        self.stop_serving();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
