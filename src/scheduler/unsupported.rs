//! Pods berth cannot schedule as upstream would where the objects they need are not fed
//! to the scheduler, refused before any plugin runs.
//!
//! Upstream kube-scheduler 1.37 serves two kinds of pods that read objects beyond pods
//! and nodes: pods with `spec.resourceClaims`, whose devices DynamicResources allocates
//! from the resource.k8s.io objects, and pods in a Workload API pod group
//! (`spec.schedulingGroup`, `spec.workloadRef` on 1.35), which the pod-group cycle and
//! GangScheduling place as a unit from the `scheduling.k8s.io/v1beta1` PodGroups. An
//! adapter feeds those objects only where the API server serves them
//! ([`DeviceResources::is_served`](crate::cluster::DeviceResources::is_served),
//! [`PodGroupStates::is_served`](crate::cluster::PodGroupStates::is_served)): every
//! release berth supports serves resource.k8s.io/v1; PodGroups are served from 1.37 with
//! the `GenericWorkload` gate on (1.35's `v1alpha1` Workloads are not read yet). Placing
//! such pods as if the claim or the group did not exist would bind pods that cannot
//! start, or gangs one member at a time. So where the objects are not fed, every profile
//! refuses them: the attempt fails with an UnschedulableAndUnresolvable status naming
//! what is missing, before PreFilter and without PostFilter (no eviction can make such a
//! pod schedulable). The usual failure path then reports it: a FailedScheduling event
//! and `PodScheduled=False` live, an Unschedulable result in `berth simulate`.
//!
//! The status is attributed to the upstream plugin that would serve the pod, and the
//! queue gives those names no events unless the profile runs a plugin of that name (see
//! [`rejector_events`]): nothing in the cluster
//! can change the verdict, and both fields are immutable, so the pod waits in the
//! unschedulable set until the periodic flush instead of being retried on every change.

use k8s_openapi::api::core::v1::Pod;

use crate::framework::{ClusterEvent, Status};

/// The upstream plugin that allocates a pod's resource claims.
pub const DYNAMIC_RESOURCES: &str = "DynamicResources";
/// The upstream plugin that places a Workload API pod group.
pub const GANG_SCHEDULING: &str = "GangScheduling";

/// The message for a pod with `spec.resourceClaims`.
pub const RESOURCE_CLAIMS_MESSAGE: &str = "pod has resourceClaims (dynamic resource allocation); \
     the API server does not serve resource.k8s.io/v1, from which DynamicResources reads devices";
/// The message for a pod in a Workload API pod group.
pub const SCHEDULING_GROUP_MESSAGE: &str = "pod belongs to a Workload pod group \
     (spec.schedulingGroup, spec.workloadRef before Kubernetes 1.36); \
     the API server does not serve scheduling.k8s.io/v1beta1 PodGroups, \
     from which the pod-group cycle reads the group";

/// Why berth refuses `pod`, if it does: an UnschedulableAndUnresolvable status from the
/// plugin upstream would serve it with. A pod with claims is refused only where the
/// adapter does not feed the resource.k8s.io objects (`claims_served` false), a pod in a
/// pod group only where it does not feed the PodGroups (`groups_served` false).
pub fn refusal(pod: &Pod, claims_served: bool, groups_served: bool) -> Option<Status> {
    let spec = pod.spec.as_ref()?;
    if !claims_served && spec.resource_claims.as_ref().is_some_and(|c| !c.is_empty()) {
        return Some(Status::unresolvable(RESOURCE_CLAIMS_MESSAGE).with_plugin(DYNAMIC_RESOURCES));
    }
    if !groups_served && spec.scheduling_group.is_some() {
        return Some(Status::unresolvable(SCHEDULING_GROUP_MESSAGE).with_plugin(GANG_SCHEDULING));
    }
    None
}

/// The refusing names with the events that requeue their pods: none.
pub fn rejector_events() -> [(String, Option<Vec<ClusterEvent>>); 2] {
    [
        (DYNAMIC_RESOURCES.to_string(), Some(Vec::new())),
        (GANG_SCHEDULING.to_string(), Some(Vec::new())),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use k8s_openapi::api::core::v1::{PodResourceClaim, PodSchedulingGroup, PodSpec};

    fn pod(spec: PodSpec) -> Pod {
        Pod {
            spec: Some(spec),
            ..Default::default()
        }
    }

    #[test]
    fn refuses_claims_and_pod_groups_where_their_objects_are_not_served() {
        let claim = PodResourceClaim {
            name: "gpu".into(),
            resource_claim_template_name: Some("gpu-template".into()),
            ..Default::default()
        };
        let group = PodSchedulingGroup {
            pod_group_name: Some("train".into()),
        };
        let cases = [
            ("plain pod", PodSpec::default(), None),
            (
                "empty resourceClaims list",
                PodSpec {
                    resource_claims: Some(vec![]),
                    ..Default::default()
                },
                None,
            ),
            (
                "resource claim",
                PodSpec {
                    resource_claims: Some(vec![claim.clone()]),
                    ..Default::default()
                },
                Some((DYNAMIC_RESOURCES, RESOURCE_CLAIMS_MESSAGE)),
            ),
            (
                "scheduling group",
                PodSpec {
                    scheduling_group: Some(group.clone()),
                    ..Default::default()
                },
                Some((GANG_SCHEDULING, SCHEDULING_GROUP_MESSAGE)),
            ),
            (
                "both: the claim is named first",
                PodSpec {
                    resource_claims: Some(vec![claim]),
                    scheduling_group: Some(group),
                    ..Default::default()
                },
                Some((DYNAMIC_RESOURCES, RESOURCE_CLAIMS_MESSAGE)),
            ),
        ];
        for (name, spec, want) in cases {
            let served = refusal(&pod(spec.clone()), true, true);
            assert!(
                served.is_none(),
                "case {name}: everything served: {served:?}"
            );
            let group = spec.scheduling_group.is_some();
            let claims_only = refusal(&pod(spec.clone()), true, false);
            assert_eq!(
                claims_only.is_some(),
                group,
                "case {name}: with claims served only a pod group is refused"
            );
            let got = refusal(&pod(spec), false, false);
            match want {
                None => assert!(got.is_none(), "case {name}: {got:?}"),
                Some((plugin, message)) => {
                    let got = got.unwrap_or_else(|| panic!("case {name}: not refused"));
                    assert_eq!(
                        got.code(),
                        Code::UnschedulableAndUnresolvable,
                        "case {name}"
                    );
                    assert_eq!(got.plugin(), Some(plugin), "case {name}");
                    assert_eq!(got.message(), message, "case {name}");
                }
            }
        }
    }
}
