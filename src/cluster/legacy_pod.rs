//! Pod fields of the oldest supported API server, read into their successors.
//!
//! Kubernetes 1.35 names a pod's Workload API group in `spec.workloadRef`; 1.36 replaced
//! it with `spec.schedulingGroup`, the only field the 1.37 types berth is built on know.
//! A 1.35 server with the `GenericWorkload` gate on sends `workloadRef`, which the typed
//! decoder would drop. The watch (against a 1.35 server) and `berth simulate` read it
//! into `schedulingGroup`, so the scheduler sees one field on every release and refuses
//! such pods instead of placing them as if they had no group.

use k8s_openapi::api::core::v1::{PodSchedulingGroup, PodSpec};
use serde::Deserialize;

/// A 1.35 pod's `spec.workloadRef`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadReference {
    /// The Workload's name.
    pub name: String,
    /// The pod group inside the Workload.
    pub pod_group: String,
    #[serde(default)]
    pub pod_group_replica_key: Option<String>,
}

impl WorkloadReference {
    /// Sets `spec.schedulingGroup` to this reference's group unless the spec names one.
    pub fn carry_into(self, spec: &mut PodSpec) {
        if spec.scheduling_group.is_none() {
            spec.scheduling_group = Some(PodSchedulingGroup {
                pod_group_name: Some(self.pod_group),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_ref_becomes_the_scheduling_group_unless_one_is_set() {
        let reference: WorkloadReference = serde_json::from_value(serde_json::json!({
            "name": "training", "podGroup": "workers", "podGroupReplicaKey": "0"
        }))
        .expect("decodes");
        let mut spec = PodSpec::default();
        reference.clone().carry_into(&mut spec);
        assert_eq!(
            spec.scheduling_group
                .as_ref()
                .and_then(|g| g.pod_group_name.as_deref()),
            Some("workers")
        );

        let mut spec = PodSpec {
            scheduling_group: Some(PodSchedulingGroup {
                pod_group_name: Some("own".into()),
            }),
            ..Default::default()
        };
        reference.carry_into(&mut spec);
        assert_eq!(
            spec.scheduling_group
                .as_ref()
                .and_then(|g| g.pod_group_name.as_deref()),
            Some("own")
        );
    }
}
