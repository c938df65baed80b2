//! Pods as a Kubernetes 1.35 API server sends them.
//!
//! berth is built on the 1.37 types, whose decoder drops 1.35's `spec.workloadRef`. Against
//! a 1.35 server the pod watch decodes [`LegacyPod`] instead, which keeps that field on the
//! pod (see `crate::cluster::WorkloadReference`) for GangScheduling's 1.35 behaviour. Newer
//! servers get the plain `Pod` watch: the extra decoding step costs nothing there.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::{Deserialize, Deserializer};

use crate::cluster::WorkloadReference;

/// The first minor release whose pods name their group in `spec.schedulingGroup`.
pub const SCHEDULING_GROUP_MINOR: u32 = 36;

/// The minor release of a `/version` answer: `"35"`, or `"35+"` as some providers write it.
pub fn minor_release(minor: &str) -> Option<u32> {
    let digits: String = minor.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A pod decoded from a 1.35 server, its `spec.workloadRef` carried over.
#[derive(Debug, Clone)]
pub struct LegacyPod(pub Pod);

impl<'de> Deserialize<'de> for LegacyPod {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            #[serde(default)]
            metadata: ObjectMeta,
            spec: Option<WireSpec>,
            status: Option<PodStatus>,
        }
        #[derive(Deserialize)]
        struct WireSpec {
            #[serde(rename = "workloadRef")]
            workload_ref: Option<WorkloadReference>,
            #[serde(flatten)]
            spec: PodSpec,
        }
        let wire = Wire::deserialize(deserializer)?;
        let (spec, reference) = match wire.spec {
            Some(WireSpec { workload_ref, spec }) => (Some(spec), workload_ref),
            None => (None, None),
        };
        let mut pod = Pod {
            metadata: wire.metadata,
            spec,
            status: wire.status,
        };
        if let Some(reference) = reference {
            reference.carry_into(&mut pod);
        }
        Ok(LegacyPod(pod))
    }
}

impl Resource for LegacyPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        Pod::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        Pod::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        Pod::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        Pod::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn minor_release_reads_provider_suffixes() {
        let cases = [("35", Some(35)), ("37+", Some(37)), ("", None), ("x", None)];
        for (minor, want) in cases {
            assert_eq!(minor_release(minor), want, "minor {minor:?}");
        }
    }

    #[test]
    fn decodes_the_pod_and_carries_its_workload_ref() {
        let pod: LegacyPod = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "worker-0", "namespace": "ml"},
            "spec": {
                "schedulerName": "berth",
                "containers": [{"name": "main", "image": "trainer"}],
                "workloadRef": {"name": "training", "podGroup": "workers"},
            },
            "status": {"phase": "Pending"},
        }))
        .expect("decodes");
        let spec = pod.0.spec.as_ref().expect("spec");
        assert_eq!(spec.scheduler_name.as_deref(), Some("berth"));
        assert_eq!(spec.containers.len(), 1);
        assert!(spec.scheduling_group.is_none());
        assert_eq!(
            WorkloadReference::of_pod(&pod.0),
            Some(WorkloadReference {
                name: "training".into(),
                pod_group: "workers".into(),
                pod_group_replica_key: String::new(),
            })
        );
        assert_eq!(pod.0.metadata.name.as_deref(), Some("worker-0"));
        assert_eq!(
            pod.0.status.and_then(|s| s.phase).as_deref(),
            Some("Pending")
        );

        let plain: LegacyPod = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "main", "image": "nginx"}]},
        }))
        .expect("decodes");
        assert_eq!(WorkloadReference::of_pod(&plain.0), None);
    }
}
