//! How berth connects to a cluster: the one place a [`kube::Client`] is built, for the
//! operator (`berth run`) and for the commands that read a live cluster with the user's
//! own credentials (`berth snapshot`).
//!
//! The kubeconfig is found as kubectl finds it: the file a flag names, else the files of
//! `KUBECONFIG` (merged, first one wins), else `~/.kube/config`, else the in-cluster
//! service account. A context flag picks the context, as `kubectl --context` does.

use std::path::Path;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// The `User-Agent` of berth's requests to the API server.
pub const USER_AGENT: &str = concat!("berth/", env!("CARGO_PKG_VERSION"));

/// Why no client could be built: the kubeconfig is missing, unreadable or invalid, or
/// names no such context.
#[derive(Debug, thiserror::Error)]
#[error("cannot build a Kubernetes client: {0}")]
pub struct ClientError(pub String);

/// Builds the client from `kubeconfig` (a file, as `--kubeconfig`) or else as kubectl
/// finds one, with `context` (as `--context`) instead of the current context when given.
pub async fn client(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<Client, ClientError> {
    let config = config(kubeconfig, context).await?;
    Client::try_from(config).map_err(|e| ClientError(e.to_string()))
}

/// The client configuration [`client`] builds on (its `cluster_url` names the server in
/// messages).
pub async fn config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Config, ClientError> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let mut config = match kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path)
                .map_err(|e| ClientError(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| ClientError(format!("{}: {e}", path.display())))?
        }
        // A context only exists in a kubeconfig: no falling back to the in-cluster
        // account, whose identity the user did not ask for.
        None if context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| ClientError(e.to_string()))?,
        None => kube::Config::infer()
            .await
            .map_err(|e| ClientError(e.to_string()))?,
    };
    // Names berth in the API server's audit log (kube-rs sends no User-Agent of its own);
    // the chart's RBAC replay test also tells berth's requests apart by it.
    config.headers.push((
        axum::http::header::USER_AGENT,
        axum::http::HeaderValue::from_static(USER_AGENT),
    ));
    Ok(config)
}
