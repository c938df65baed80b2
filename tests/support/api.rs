//! The test API server (crates/test-apiserver) as the operator tests start it: on a free
//! port, within a deadline, with the CRDs they need installed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use test_apiserver::{Config, TestApiServer};

/// How long the server may take to start before the test fails.
pub const START_WITHIN: Duration = Duration::from_secs(20);

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// berth's generated CRDs (`crds/`).
pub fn berth_crds() -> PathBuf {
    repo_root().join("crds")
}

/// A server without CRDs.
pub async fn start() -> TestApiServer {
    start_with(Config::default()).await
}

/// A server without CRDs, configured by `config`.
pub async fn start_with(config: Config) -> TestApiServer {
    tokio::time::timeout(START_WITHIN, TestApiServer::start(config))
        .await
        .expect("the test API server starts in time")
        .expect("the test API server starts")
}

/// A server with the CRDs of `dir` installed; fails the test when one does not install.
pub async fn start_with_crds(dir: &Path) -> TestApiServer {
    let server = start().await;
    server
        .install_crds_from_dir(dir)
        .unwrap_or_else(|e| panic!("installing the CRDs of {}: {e:?}", dir.display()));
    server
}
