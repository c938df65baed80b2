//! The live [`Binder`]: posts a `Binding` to the API server's `pods/<name>/binding`
//! subresource, as upstream's DefaultBinder does.
//!
//! What each answer means:
//!
//! | answer | result |
//! | --- | --- |
//! | 201 | bound |
//! | 409 | the pod is read back: bound to this node -> success (an earlier attempt landed, e.g. its response was lost); bound elsewhere -> [`BindError::AlreadyBound`]; gone or re-created under a new uid -> [`BindError::NotFound`]; otherwise (being deleted) -> [`BindError::Other`] |
//! | 404 | [`BindError::NotFound`] |
//! | 429, 5xx, timeouts, connection errors | retried [`RETRIES`] times, waiting [`INITIAL_BACKOFF`] doubling, then [`BindError::Other`] with the last error |
//! | any other 4xx | [`BindError::Other`] at once: asking again gets the same answer |
//!
//! The 409 read-back never writes a second Binding, so a bind is at most one successful
//! write whatever the retries.

use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use crate::framework::{BindError, Binder};

/// How many times a transient failure is retried (so at most `RETRIES + 1` Binding POSTs).
pub const RETRIES: u32 = 4;
/// The wait before the first retry; it doubles before each further one.
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(100);

/// Binds pods through the API server.
#[derive(Clone)]
pub struct KubeBinder {
    client: kube::Client,
    initial_backoff: Duration,
}

impl KubeBinder {
    pub fn new(client: kube::Client) -> KubeBinder {
        KubeBinder {
            client,
            initial_backoff: INITIAL_BACKOFF,
        }
    }

    /// Replaces [`INITIAL_BACKOFF`] (tests use a shorter one).
    pub fn with_initial_backoff(mut self, initial_backoff: Duration) -> KubeBinder {
        self.initial_backoff = initial_backoff;
        self
    }

    /// POSTs the Binding, retrying transient failures.
    async fn post_binding(&self, pods: &Api<Pod>, binding: &Binding) -> kube::Result<()> {
        let name = binding.metadata.name.as_deref().unwrap_or_default();
        let mut backoff = self.initial_backoff;
        let mut retries = 0;
        loop {
            let result = pods
                .create_subresource::<_, serde_json::Value>(
                    "binding",
                    name,
                    &PostParams::default(),
                    binding,
                )
                .await;
            match result {
                Err(err) if is_transient(&err) && retries < RETRIES => {
                    retries += 1;
                    tracing::warn!(
                        error = %err,
                        retry = retries,
                        of = RETRIES,
                        backoff_ms = backoff.as_millis() as u64,
                        "binding failed with a transient error; retrying"
                    );
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                }
                other => return other.map(drop),
            }
        }
    }

    /// After a 409: reads the pod back to tell a bind that already landed from a real
    /// conflict.
    async fn resolve_conflict(
        &self,
        pods: &Api<Pod>,
        pod: &Pod,
        key: &str,
        node_name: &str,
        conflict: &str,
    ) -> Result<(), BindError> {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let current = match pods.get_opt(name).await {
            Ok(Some(current)) => current,
            Ok(None) => return Err(BindError::NotFound(key.to_string())),
            Err(err) => {
                return Err(BindError::Other(format!(
                    "{conflict}; reading pod {key} back failed: {err}"
                )));
            }
        };
        // The real API server checks the Binding's uid as a precondition: a 409 for a pod
        // re-created under the same name means the pod we scheduled is gone.
        if pod.metadata.uid.is_some() && current.metadata.uid != pod.metadata.uid {
            return Err(BindError::NotFound(key.to_string()));
        }
        match current.spec.and_then(|spec| spec.node_name) {
            Some(bound) if bound == node_name => {
                tracing::info!(
                    pod = key,
                    node = node_name,
                    "pod is already bound to this node"
                );
                Ok(())
            }
            Some(bound) if !bound.is_empty() => Err(BindError::AlreadyBound {
                pod: key.to_string(),
                node: bound,
            }),
            _ => Err(BindError::Other(conflict.to_string())),
        }
    }
}

#[async_trait]
impl Binder for KubeBinder {
    async fn bind(&self, pod: &Pod, node_name: &str) -> Result<(), BindError> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let key = format!(
            "{namespace}/{}",
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let binding = binding_for(pod, namespace, node_name);
        match self.post_binding(&pods, &binding).await {
            Ok(()) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                self.resolve_conflict(&pods, pod, &key, node_name, &status.message)
                    .await
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Err(BindError::NotFound(key)),
            Err(err) => Err(BindError::Other(format!(
                "binding pod {key} to node {node_name}: {err}"
            ))),
        }
    }
}

/// The Binding upstream's DefaultBinder posts: the pod's name, namespace and uid (the
/// uid is a precondition on the real server), the node as target.
fn binding_for(pod: &Pod, namespace: &str, node_name: &str) -> Binding {
    Binding {
        metadata: ObjectMeta {
            name: pod.metadata.name.clone(),
            namespace: Some(namespace.to_string()),
            uid: pod.metadata.uid.clone(),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            kind: Some("Node".into()),
            name: Some(node_name.to_string()),
            ..ObjectReference::default()
        },
    }
}

/// Whether asking again may get another answer: throttling (429), server errors (5xx),
/// and failures to get any answer (connection errors, timeouts).
pub(crate) fn is_transient(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}
