//! Pod fields of the oldest supported API server that the 1.37 types berth is built on
//! do not know.
//!
//! Kubernetes 1.35 names a pod's gang in `spec.workloadRef` (a `scheduling.k8s.io/v1alpha1`
//! Workload, one of its pod groups, and a replica key); 1.36 replaced it with
//! `spec.schedulingGroup`. The 1.35 scheduler places such pods one by one, holding them at
//! Permit until the gang's quorum is placed (see [`super::LegacyWorkloads`]), not through
//! the pod-group cycle that `spec.schedulingGroup` pods take. So the reference is not read
//! into `spec.schedulingGroup`: the pod watch against a 1.35 server and `berth simulate`
//! keep it, in memory, in the annotation [`WORKLOAD_REF_ANNOTATION`]. berth never writes
//! pod metadata (it binds, patches status, evicts), so the annotation never reaches the
//! API server; a user writing it is read as a 1.35 server would read the field.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde::{Deserialize, Serialize};

/// Where berth keeps a 1.35 pod's `spec.workloadRef` (its JSON form).
pub const WORKLOAD_REF_ANNOTATION: &str = "internal.berth.dev/workload-ref";

/// A 1.35 pod's `spec.workloadRef`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadReference {
    /// The Workload's name.
    pub name: String,
    /// The pod group inside the Workload.
    pub pod_group: String,
    /// Which replica of the pod group; "" when the group has one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_group_replica_key: String,
}

impl WorkloadReference {
    /// Keeps this reference on `pod` (in [`WORKLOAD_REF_ANNOTATION`]).
    pub fn carry_into(&self, pod: &mut Pod) {
        let json = serde_json::to_string(self).unwrap_or_default();
        pod.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(WORKLOAD_REF_ANNOTATION.to_string(), json);
    }

    /// The reference kept on `pod`, if any (one that does not decode is none).
    pub fn of_pod(pod: &Pod) -> Option<WorkloadReference> {
        let json = pod
            .metadata
            .annotations
            .as_ref()?
            .get(WORKLOAD_REF_ANNOTATION)?;
        serde_json::from_str(json).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_ref_is_kept_on_the_pod_and_read_back() {
        let reference: WorkloadReference = serde_json::from_value(serde_json::json!({
            "name": "training", "podGroup": "workers", "podGroupReplicaKey": "0"
        }))
        .expect("decodes");
        let mut pod = Pod::default();
        assert_eq!(WorkloadReference::of_pod(&pod), None);
        reference.carry_into(&mut pod);
        assert_eq!(WorkloadReference::of_pod(&pod), Some(reference));
        assert!(
            pod.spec.is_none(),
            "the pod is not put in a 1.36+ scheduling group"
        );

        let without_key: WorkloadReference =
            serde_json::from_value(serde_json::json!({"name": "w", "podGroup": "pg"}))
                .expect("decodes");
        assert_eq!(without_key.pod_group_replica_key, "");
    }
}
