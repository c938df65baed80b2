//! The live [`ClaimWriter`]: DynamicResources' ResourceClaim and pod-status writes, sent
//! to the API server as upstream's plugin sends them.
//!
//! - Claim updates are whole-object PUTs (`Api::replace`, `replace_status`) carrying the
//!   resourceVersion the scheduler last saw; a 409 comes back as
//!   [`WriteError::Conflict`], which PreBind answers by reading the claim again and
//!   retrying, as upstream.
//! - Removing a pod from `status.reservedFor` is upstream's strategic merge patch with a
//!   `$patch: delete` directive on the entry and the claim's UID as a precondition, so
//!   no fresh copy of the claim is needed and a claim recreated under the same name is
//!   not touched.
//! - The pod's `status.extendedResourceClaimStatus` is a strategic merge patch of the
//!   pod's status subresource, with the pod's UID as a precondition.
//!
//! Each call gives up after [`WRITE_TIMEOUT`](super::volume_writer::WRITE_TIMEOUT) (the
//! write may still land; the binding cycle fails and the pod is retried).

use std::future::Future;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Pod, PodExtendedResourceClaimStatus};
use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::framework::{ClaimWriter, WriteError};

use super::volume_writer::WRITE_TIMEOUT;

/// Writes DynamicResources' changes through the API server.
#[derive(Clone)]
pub struct KubeClaimWriter {
    client: Client,
}

impl KubeClaimWriter {
    pub fn new(client: Client) -> KubeClaimWriter {
        KubeClaimWriter { client }
    }

    fn claims(&self, namespace: &str) -> Api<ResourceClaim> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

/// The namespace of a namespaced object the scheduler read (always set by the API
/// server; `default` for an object that somehow lacks it, as kubectl assumes).
fn namespace_of<K: ResourceExt>(object: &K) -> String {
    object.namespace().unwrap_or_else(|| "default".to_string())
}

/// Awaits `call`, bounded by [`WRITE_TIMEOUT`], and maps its error: 409 is a conflict,
/// 404 not found, anything else (with the transport's errors) other; the text is the
/// API server's message, or names `what` when the message does not.
async fn bounded<T>(
    what: String,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, WriteError> {
    match tokio::time::timeout(WRITE_TIMEOUT, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(kube::Error::Api(status))) => {
            let message = if status.message.is_empty() {
                format!("{what}: {} {}", status.code, status.reason)
            } else {
                status.message.clone()
            };
            Err(match status.code {
                409 => WriteError::Conflict(message),
                404 => WriteError::NotFound(message),
                _ => WriteError::Other(message),
            })
        }
        Ok(Err(other)) => Err(WriteError::Other(format!("{what}: {other}"))),
        Err(_) => Err(WriteError::Other(format!(
            "{what}: no answer within {}s",
            WRITE_TIMEOUT.as_secs()
        ))),
    }
}

fn claim_name(namespace: &str, name: &str) -> String {
    format!("resourceclaims.resource.k8s.io \"{namespace}/{name}\"")
}

#[async_trait]
impl ClaimWriter for KubeClaimWriter {
    async fn get_claim(&self, namespace: &str, name: &str) -> Result<ResourceClaim, WriteError> {
        bounded(
            claim_name(namespace, name),
            self.claims(namespace).get(name),
        )
        .await
    }

    async fn create_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        let namespace = namespace_of(claim);
        let name = claim
            .metadata
            .name
            .clone()
            .or_else(|| claim.metadata.generate_name.clone())
            .unwrap_or_default();
        bounded(
            claim_name(&namespace, &name),
            self.claims(&namespace)
                .create(&PostParams::default(), claim),
        )
        .await
    }

    async fn update_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        let (namespace, name) = (namespace_of(claim), claim.name_any());
        bounded(
            claim_name(&namespace, &name),
            self.claims(&namespace)
                .replace(&name, &PostParams::default(), claim),
        )
        .await
    }

    async fn update_claim_status(
        &self,
        claim: &ResourceClaim,
    ) -> Result<ResourceClaim, WriteError> {
        let (namespace, name) = (namespace_of(claim), claim.name_any());
        bounded(
            claim_name(&namespace, &name),
            self.claims(&namespace)
                .replace_status(&name, &PostParams::default(), claim),
        )
        .await
    }

    async fn remove_reservation(
        &self,
        claim: &ResourceClaim,
        pod_uid: &str,
    ) -> Result<(), WriteError> {
        let (namespace, name) = (namespace_of(claim), claim.name_any());
        let mut patch = json!({
            "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]},
        });
        if let Some(uid) = &claim.metadata.uid {
            patch["metadata"] = json!({"uid": uid});
        }
        bounded(
            claim_name(&namespace, &name),
            self.claims(&namespace).patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Strategic(patch),
            ),
        )
        .await
        .map(|_| ())
    }

    async fn delete_claim(&self, namespace: &str, name: &str) -> Result<(), WriteError> {
        bounded(
            claim_name(namespace, name),
            self.claims(namespace)
                .delete(name, &DeleteParams::default()),
        )
        .await
        .map(|_| ())
    }

    async fn set_extended_resource_claim_status(
        &self,
        pod: &Pod,
        status: &PodExtendedResourceClaimStatus,
    ) -> Result<(), WriteError> {
        let (namespace, name) = (namespace_of(pod), pod.name_any());
        let mut patch = json!({"status": {"extendedResourceClaimStatus": status}});
        if let Some(uid) = &pod.metadata.uid {
            patch["metadata"] = json!({"uid": uid});
        }
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        bounded(
            format!("pods \"{namespace}/{name}\""),
            pods.patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch)),
        )
        .await
        .map(|_| ())
    }
}
