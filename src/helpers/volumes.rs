//! What the volume plugins (and the simulator's storage controllers) must read alike:
//! which claim a pod volume names, a claim's and a volume's storage class, whether a claim
//! is fully bound, and whether a volume's node affinity admits a node. Upstream keeps
//! these in component-helpers' storage packages.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSpec, PersistentVolume, PersistentVolumeClaim, Pod, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::node_affinity::NodeSelector;

/// The beta annotation that names a class and takes precedence over `storageClassName`.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// Set on a claim by the PV controller once its binding is complete.
pub const BIND_COMPLETED_ANNOTATION: &str = "pv.kubernetes.io/bind-completed";
/// Set on a volume (and claim) bound by the PV controller rather than by its author.
pub const BOUND_BY_CONTROLLER_ANNOTATION: &str = "pv.kubernetes.io/bound-by-controller";
/// Set on a WaitForFirstConsumer claim by the scheduler: provision it for this node.
pub const SELECTED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";
/// Set on a provisioned volume by the provisioner that created it.
pub const PROVISIONED_BY_ANNOTATION: &str = "pv.kubernetes.io/provisioned-by";

/// The claim a pod volume uses: `persistentVolumeClaim.claimName`, or `<pod>-<volume>`
/// for a generic ephemeral volume; `None` for every other volume type.
pub fn claim_name(pod: &Pod, volume: &Volume) -> Option<String> {
    if let Some(source) = &volume.persistent_volume_claim {
        return Some(source.claim_name.clone());
    }
    volume.ephemeral.as_ref().map(|_| {
        format!(
            "{}-{}",
            pod.metadata.name.as_deref().unwrap_or_default(),
            volume.name
        )
    })
}

/// Whether an ephemeral volume's claim was created for `pod` (its controller owner is
/// the pod, by UID); the error is upstream's words when it was not.
pub fn ephemeral_claim_owned_by(claim: &PersistentVolumeClaim, pod: &Pod) -> Result<(), String> {
    let owned = claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && Some(&o.uid) == pod.metadata.uid.as_ref());
    if owned {
        return Ok(());
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    Err(format!(
        "PVC {namespace}/{} was not created for pod {namespace}/{} (pod is not owner)",
        claim.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    ))
}

fn annotation<'a>(metadata: &'a ObjectMeta, key: &str) -> Option<&'a String> {
    metadata.annotations.as_ref().and_then(|a| a.get(key))
}

/// The class of a claim: the beta annotation when present, else `spec.storageClassName`,
/// else "".
pub fn claim_class(claim: &PersistentVolumeClaim) -> String {
    annotation(&claim.metadata, BETA_STORAGE_CLASS_ANNOTATION)
        .cloned()
        .or_else(|| claim.spec.as_ref()?.storage_class_name.clone())
        .unwrap_or_default()
}

/// The class of a volume, read like [`claim_class`].
pub fn volume_class(volume: &PersistentVolume) -> String {
    annotation(&volume.metadata, BETA_STORAGE_CLASS_ANNOTATION)
        .cloned()
        .or_else(|| volume.spec.as_ref()?.storage_class_name.clone())
        .unwrap_or_default()
}

/// The volume a claim names in `spec.volumeName` ("" when none).
pub fn claim_volume_name(claim: &PersistentVolumeClaim) -> &str {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default()
}

/// A claim is fully bound when it names its volume and the PV controller has marked the
/// binding complete.
pub fn is_fully_bound(claim: &PersistentVolumeClaim) -> bool {
    !claim_volume_name(claim).is_empty()
        && annotation(&claim.metadata, BIND_COMPLETED_ANNOTATION).is_some()
}

/// The claim's selected-node annotation, if any.
pub fn selected_node(claim: &PersistentVolumeClaim) -> Option<&str> {
    annotation(&claim.metadata, SELECTED_NODE_ANNOTATION).map(String::as_str)
}

/// Whether a volume's required node affinity admits a node with `labels` (upstream
/// `CheckNodeAffinity`, which matches a node carrying only the labels, so `matchFields`
/// terms never match). A volume without required affinity admits every node.
pub fn volume_admits(volume: &PersistentVolume, labels: &BTreeMap<String, String>) -> bool {
    let Some(required) = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    else {
        return true;
    };
    let node = Node {
        metadata: ObjectMeta {
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec::default()),
        ..Node::default()
    };
    NodeSelector::new(required).matches(&node)
}

#[cfg(test)]
mod tests;
