//! What DynamicResources writes to the API: ResourceClaims (their allocation and
//! reservations, the claim it creates for a pod's extended resources) and the pod's
//! `status.extendedResourceClaimStatus`. The operator writes through kube-rs, `berth
//! simulate` into its in-memory cluster; the plugin stays free of Kubernetes I/O.

use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Pod, PodExtendedResourceClaimStatus};
use k8s_openapi::api::resource::v1::ResourceClaim;

/// Why a write failed. Upstream retries a status update on a conflict and ignores a
/// delete of an object that is gone; everything else fails the caller with the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The object changed since it was read (HTTP 409).
    #[error("{0}")]
    Conflict(String),
    /// The object does not exist (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Other(String),
}

/// Writes DynamicResources' changes. Updates are whole-object PUTs that fail with
/// [`WriteError::Conflict`] on a stale resourceVersion; each returns the object as stored.
#[async_trait]
pub trait ClaimWriter: Send + Sync {
    /// Reads claim `namespace/name` from the API (after a conflict).
    async fn get_claim(&self, namespace: &str, name: &str) -> Result<ResourceClaim, WriteError>;
    /// Creates a claim; its `generateName` names it.
    async fn create_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError>;
    /// Updates a claim's metadata and spec (its finalizers).
    async fn update_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError>;
    /// Updates a claim's status (allocation, reservedFor).
    async fn update_claim_status(&self, claim: &ResourceClaim)
    -> Result<ResourceClaim, WriteError>;
    /// Removes the reservation of the pod with `pod_uid` from the claim's
    /// `status.reservedFor` (upstream's strategic merge patch, guarded by the claim's UID).
    async fn remove_reservation(
        &self,
        claim: &ResourceClaim,
        pod_uid: &str,
    ) -> Result<(), WriteError>;
    /// Deletes claim `namespace/name`.
    async fn delete_claim(&self, namespace: &str, name: &str) -> Result<(), WriteError>;
    /// Sets the pod's `status.extendedResourceClaimStatus`.
    async fn set_extended_resource_claim_status(
        &self,
        pod: &Pod,
        status: &PodExtendedResourceClaimStatus,
    ) -> Result<(), WriteError>;
}

/// The claim writer of a framework without a cluster behind it ([`super::Handle::builder`]):
/// it keeps nothing but answers as an API server would for the object it is given, so
/// that a cycle runs through. A created claim is named from its `generateName` and a
/// counter and given a UID; nothing is there to read back.
#[derive(Default)]
pub struct AcceptClaims {
    created: AtomicU64,
}

#[async_trait]
impl ClaimWriter for AcceptClaims {
    async fn get_claim(&self, _: &str, name: &str) -> Result<ResourceClaim, WriteError> {
        Err(WriteError::NotFound(format!(
            "resourceclaims.resource.k8s.io \"{name}\" not found"
        )))
    }

    async fn create_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        let mut created = claim.clone();
        let prefix = claim.metadata.generate_name.clone().unwrap_or_default();
        created.metadata.name = Some(format!("{prefix}{n}"));
        created.metadata.uid = Some(format!("created-claim-{n}"));
        created.metadata.resource_version = Some("1".into());
        Ok(created)
    }

    async fn update_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        Ok(claim.clone())
    }

    async fn update_claim_status(
        &self,
        claim: &ResourceClaim,
    ) -> Result<ResourceClaim, WriteError> {
        Ok(claim.clone())
    }

    async fn remove_reservation(&self, _: &ResourceClaim, _: &str) -> Result<(), WriteError> {
        Ok(())
    }

    async fn delete_claim(&self, _: &str, _: &str) -> Result<(), WriteError> {
        Ok(())
    }

    async fn set_extended_resource_claim_status(
        &self,
        _: &Pod,
        _: &PodExtendedResourceClaimStatus,
    ) -> Result<(), WriteError> {
        Ok(())
    }
}
