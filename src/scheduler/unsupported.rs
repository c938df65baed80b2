//! Pods berth cannot schedule as upstream would where the objects they need are not fed
//! to the scheduler, refused before any plugin runs.
//!
//! Upstream kube-scheduler serves three kinds of pods that read objects beyond pods and
//! nodes: pods with `spec.resourceClaims`, whose devices DynamicResources allocates from
//! the resource.k8s.io objects; pods in a Workload API pod group (`spec.schedulingGroup`),
//! which the pod-group cycle and GangScheduling place as a unit from the
//! `scheduling.k8s.io/v1beta1` PodGroups; and, on 1.35, pods naming a Workload
//! (`spec.workloadRef`), which GangScheduling holds together from the
//! `scheduling.k8s.io/v1alpha1` Workloads. An adapter feeds those objects only where the
//! API server serves them ([`Served`]): every release berth supports serves
//! resource.k8s.io/v1; PodGroups are served from 1.37 with the `GenericWorkload` gate on,
//! `v1alpha1` Workloads by 1.35 with that gate and the API enabled. Placing
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

use crate::cluster::WorkloadReference;
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
     (spec.schedulingGroup); \
     the API server does not serve scheduling.k8s.io/v1beta1 PodGroups, \
     from which the pod-group cycle reads the group";
/// The message for a pod naming a Kubernetes 1.35 Workload.
pub const WORKLOAD_REF_MESSAGE: &str = "pod names a Workload (spec.workloadRef, Kubernetes 1.35); \
     the API server does not serve scheduling.k8s.io/v1alpha1 Workloads, \
     from which GangScheduling reads the gang";

/// Which of the objects those pods need the adapter feeds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Served {
    /// The resource.k8s.io objects.
    pub claims: bool,
    /// The `scheduling.k8s.io/v1beta1` PodGroups.
    pub pod_groups: bool,
    /// The `scheduling.k8s.io/v1alpha1` Workloads.
    pub workloads: bool,
}

/// Why berth refuses `pod`, if it does: an UnschedulableAndUnresolvable status from the
/// plugin upstream would serve it with, where the objects it needs are not [`Served`].
pub fn refusal(pod: &Pod, served: Served) -> Option<Status> {
    let spec = pod.spec.as_ref()?;
    if !served.claims && spec.resource_claims.as_ref().is_some_and(|c| !c.is_empty()) {
        return Some(Status::unresolvable(RESOURCE_CLAIMS_MESSAGE).with_plugin(DYNAMIC_RESOURCES));
    }
    if !served.pod_groups && spec.scheduling_group.is_some() {
        return Some(Status::unresolvable(SCHEDULING_GROUP_MESSAGE).with_plugin(GANG_SCHEDULING));
    }
    if !served.workloads && WorkloadReference::of_pod(pod).is_some() {
        return Some(Status::unresolvable(WORKLOAD_REF_MESSAGE).with_plugin(GANG_SCHEDULING));
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

    const ALL: Served = Served {
        claims: true,
        pod_groups: true,
        workloads: true,
    };

    #[test]
    fn refuses_workload_refs_where_workloads_are_not_served() {
        let mut member = pod(PodSpec::default());
        WorkloadReference {
            name: "training".into(),
            pod_group: "workers".into(),
            pod_group_replica_key: String::new(),
        }
        .carry_into(&mut member);
        assert!(refusal(&member, ALL).is_none());
        let pod_groups_only = Served {
            workloads: false,
            ..ALL
        };
        let got = refusal(&member, pod_groups_only).expect("refused");
        assert_eq!(got.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(got.plugin(), Some(GANG_SCHEDULING));
        assert_eq!(got.message(), WORKLOAD_REF_MESSAGE);
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
            let served = refusal(&pod(spec.clone()), ALL);
            assert!(
                served.is_none(),
                "case {name}: everything served: {served:?}"
            );
            let group = spec.scheduling_group.is_some();
            let claims_only = refusal(
                &pod(spec.clone()),
                Served {
                    pod_groups: false,
                    ..ALL
                },
            );
            assert_eq!(
                claims_only.is_some(),
                group,
                "case {name}: with claims served only a pod group is refused"
            );
            let got = refusal(&pod(spec), Served::default());
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
