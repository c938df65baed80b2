//! The PodGroups of the cluster, for gang scheduling (the Coscheduling plugin): berth's
//! own and scheduler-plugins'.
//!
//! Like [`super::Workloads`], a lister shared (`Arc`) between the adapter that feeds it —
//! the operator's PodGroup watch, the simulator's input — and the plugins that read it
//! through the framework `Handle`, as upstream plugins read informer listers.
//!
//! Also the one definition of an *implicit* PodGroup: the group a pod with a group label
//! and the `berth.dev/min-member` annotation gets when its PodGroup does not exist. The
//! operator creates it in the cluster; `berth simulate` adds it to the input.

use std::collections::HashMap;
use std::sync::RwLock;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::api::scheduler_plugins;
use crate::api::{
    MIN_MEMBER_ANNOTATION, POD_GROUP_LABEL, POD_GROUP_LABEL_COMPAT, PodGroup, PodGroupSpec,
};

/// PodGroups by namespace and name: berth's own and scheduler-plugins'
/// (`scheduling.x-k8s.io/v1alpha1`), the latter read as the berth PodGroup with the same
/// spec ([`from_scheduler_plugins`]).
///
/// A pod names its group by name only ([`pod_group_of`]), so when both kinds exist with
/// the same namespace and name, berth's own is the group: it is the one a berth user
/// wrote for berth.
#[derive(Debug, Default)]
pub struct PodGroups {
    groups: RwLock<HashMap<(String, String), PodGroup>>,
    scheduler_plugins: RwLock<HashMap<(String, String), PodGroup>>,
}

fn key(group: &PodGroup) -> (String, String) {
    (
        group
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        group.metadata.name.clone().unwrap_or_default(),
    )
}

impl PodGroups {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn apply(&self, group: &PodGroup) {
        let mut groups = self.groups.write().unwrap_or_else(|p| p.into_inner());
        groups.insert(key(group), group.clone());
    }

    pub fn delete(&self, group: &PodGroup) {
        let mut groups = self.groups.write().unwrap_or_else(|p| p.into_inner());
        groups.remove(&key(group));
    }

    /// The PodGroup `namespace/name`, if it exists: berth's own, else scheduler-plugins'.
    pub fn get(&self, namespace: &str, name: &str) -> Option<PodGroup> {
        let key = (namespace.to_string(), name.to_string());
        let groups = self.groups.read().unwrap_or_else(|p| p.into_inner());
        if let Some(group) = groups.get(&key) {
            return Some(group.clone());
        }
        drop(groups);
        let groups = self
            .scheduler_plugins
            .read()
            .unwrap_or_else(|p| p.into_inner());
        groups.get(&key).cloned()
    }

    /// Adds or replaces a scheduler-plugins PodGroup.
    pub fn apply_scheduler_plugins(&self, group: &scheduler_plugins::PodGroup) {
        let group = from_scheduler_plugins(group);
        let mut groups = self
            .scheduler_plugins
            .write()
            .unwrap_or_else(|p| p.into_inner());
        groups.insert(key(&group), group);
    }

    pub fn delete_scheduler_plugins(&self, group: &scheduler_plugins::PodGroup) {
        let group = from_scheduler_plugins(group);
        let mut groups = self
            .scheduler_plugins
            .write()
            .unwrap_or_else(|p| p.into_inner());
        groups.remove(&key(&group));
    }
}

/// A scheduler-plugins PodGroup as the berth PodGroup Coscheduling reads: the same
/// metadata and spec, where a `minMember` below one is one (as in scheduler-plugins, where
/// such a group has no quorum) and a `scheduleTimeoutSeconds` below one is unset: members
/// wait the plugin's `permitWaitingTimeSeconds` (scheduler-plugins would let them wait zero
/// seconds, so such a group could never gather). The status is left out: Coscheduling
/// does not read it.
pub fn from_scheduler_plugins(group: &scheduler_plugins::PodGroup) -> PodGroup {
    let mut metadata = group.metadata.clone();
    metadata.annotations.get_or_insert_default().insert(
        API_VERSION_ANNOTATION.to_string(),
        SCHEDULER_PLUGINS_API_VERSION.to_string(),
    );
    PodGroup {
        metadata,
        spec: PodGroupSpec {
            min_member: group.spec.min_member.max(1),
            min_resources: group.spec.min_resources.clone(),
            schedule_timeout_seconds: group.spec.schedule_timeout_seconds.filter(|s| *s >= 1),
        },
        status: None,
    }
}

/// The in-memory annotation naming the API a Coscheduling group's PodGroup was read from
/// (berth's `berth.dev/v1alpha1` or scheduler-plugins' `scheduling.x-k8s.io/v1alpha1`),
/// so that events about the group refer to the object that exists. berth never writes it.
pub const API_VERSION_ANNOTATION: &str = "internal.berth.dev/api-version";
const SCHEDULER_PLUGINS_API_VERSION: &str = "scheduling.x-k8s.io/v1alpha1";
const BERTH_API_VERSION: &str = "berth.dev/v1alpha1";

/// The Workload API PodGroup a Coscheduling group amounts to in the scheduler core: the
/// same metadata (with [`API_VERSION_ANNOTATION`]), a gang policy whose `minCount` is `minMember`, no priority (the
/// pod-group cycle takes its members' lowest), no disruption mode (its members are evicted
/// one by one, as any pod). `minResources` and `scheduleTimeoutSeconds` stay with
/// Coscheduling, which reads them from [`PodGroups`].
pub fn core_pod_group(group: &PodGroup) -> k8s_openapi::api::scheduling::v1beta1::PodGroup {
    use k8s_openapi::api::scheduling::v1beta1 as upstream;
    let mut metadata = ObjectMeta {
        managed_fields: None,
        ..group.metadata.clone()
    };
    metadata
        .annotations
        .get_or_insert_default()
        .entry(API_VERSION_ANNOTATION.to_string())
        .or_insert_with(|| BERTH_API_VERSION.to_string());
    upstream::PodGroup {
        metadata,
        spec: upstream::PodGroupSpec {
            scheduling_policy: upstream::PodGroupSchedulingPolicy {
                gang: Some(upstream::GangSchedulingPolicy {
                    min_count: group.spec.min_member.max(1),
                }),
                basic: None,
            },
            ..upstream::PodGroupSpec::default()
        },
        status: None,
    }
}

/// The `berth.dev/min-member` annotation: `Ok(None)` without it, `Err` with the message
/// for an invalid value.
pub fn min_member_of(pod: &Pod) -> Result<Option<i32>, String> {
    let Some(value) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(MIN_MEMBER_ANNOTATION))
    else {
        return Ok(None);
    };
    match value.trim().parse::<i32>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(format!(
            "annotation {MIN_MEMBER_ANNOTATION}: invalid value {value:?}: must be a positive integer; no PodGroup is created"
        )),
    }
}

/// The owner of an implicit group: the pod's controller owner (e.g. the Job that created
/// the pod), if any, so the group goes away with it. Neither `controller` nor
/// `blockOwnerDeletion`: berth, not the owner, manages the group. A pod without a
/// controller gets a group without owner (owning it by one member would delete it with
/// that pod).
pub fn implicit_owner(pod: &Pod) -> Option<OwnerReference> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| OwnerReference {
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            name: o.name.clone(),
            uid: o.uid.clone(),
            controller: None,
            block_owner_deletion: None,
        })
}

/// The PodGroup a pod belongs to: `(namespace, name)` from its group label
/// (`berth.dev/pod-group`, or the scheduler-plugins `scheduling.x-k8s.io/pod-group`).
pub fn pod_group_of(pod: &Pod) -> Option<(String, String)> {
    let labels = pod.metadata.labels.as_ref()?;
    let name = labels
        .get(POD_GROUP_LABEL)
        .or_else(|| labels.get(POD_GROUP_LABEL_COMPAT))
        .filter(|n| !n.is_empty())?;
    let namespace = pod
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    Some((namespace, name.clone()))
}

/// The implicit PodGroup `namespace/name` (the group the pod's label names) for `pod`:
/// `Ok(None)` when the pod has no min-member annotation, `Err` with the message for an
/// invalid one.
pub fn implicit_group(pod: &Pod, namespace: &str, name: &str) -> Result<Option<PodGroup>, String> {
    let Some(min_member) = min_member_of(pod)? else {
        return Ok(None);
    };
    Ok(Some(PodGroup {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            owner_references: implicit_owner(pod).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: PodGroupSpec {
            min_member,
            ..PodGroupSpec::default()
        },
        status: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::make_pod;

    fn pod(annotation: Option<&str>, owners: Vec<OwnerReference>) -> Pod {
        let pod = make_pod()
            .name("p")
            .namespace("default")
            .owner_references(owners);
        match annotation {
            Some(min_member) => pod.annotation(MIN_MEMBER_ANNOTATION, min_member).obj(),
            None => pod.obj(),
        }
    }

    #[test]
    fn min_member_annotation_must_be_a_positive_integer() {
        assert_eq!(min_member_of(&pod(None, vec![])), Ok(None), "no annotation");
        assert_eq!(min_member_of(&pod(Some("3"), vec![])), Ok(Some(3)));
        assert_eq!(min_member_of(&pod(Some("1"), vec![])), Ok(Some(1)));
        for bad in ["0", "-1", "abc", ""] {
            let error = min_member_of(&pod(Some(bad), vec![]))
                .expect_err(&format!("{bad:?} is not a positive integer"));
            assert!(
                error.contains(MIN_MEMBER_ANNOTATION)
                    && error.contains(&format!("{bad:?}"))
                    && error.contains("positive integer"),
                "names the annotation, the value and what is valid: {error}"
            );
        }
    }

    fn owner(kind: &str, name: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "batch/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller,
            block_owner_deletion: controller,
        }
    }

    #[test]
    fn implicit_group_is_owned_by_the_pods_controller_without_controlling_it() {
        let controlled = pod(
            Some("3"),
            vec![
                owner("ConfigMap", "settings", None),
                owner("Job", "train", Some(true)),
            ],
        );
        let got = implicit_owner(&controlled).expect("the pod has a controller owner");
        assert_eq!(
            (
                got.api_version.as_str(),
                got.kind.as_str(),
                got.name.as_str(),
                got.uid.as_str()
            ),
            ("batch/v1", "Job", "train", "uid-train")
        );
        assert_ne!(got.controller, Some(true), "berth manages the group");
        assert_ne!(got.block_owner_deletion, Some(true));

        let not_controlled = pod(
            Some("3"),
            vec![
                owner("ConfigMap", "settings", None),
                owner("Job", "train", Some(false)),
            ],
        );
        assert_eq!(implicit_owner(&not_controlled), None);
        assert_eq!(implicit_owner(&pod(Some("3"), vec![])), None);
    }

    #[test]
    fn implicit_group_takes_min_member_and_owner_from_the_pod() {
        let controlled = pod(Some("4"), vec![owner("Job", "train", Some(true))]);
        let group = implicit_group(&controlled, "ml", "train")
            .expect("valid annotation")
            .expect("annotated pod");
        assert_eq!(group.metadata.namespace.as_deref(), Some("ml"));
        assert_eq!(group.metadata.name.as_deref(), Some("train"));
        assert_eq!(group.spec.min_member, 4);
        let owners = group.metadata.owner_references.unwrap_or_default();
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].name, "train");
        assert!(matches!(
            implicit_group(&pod(None, vec![]), "ml", "g"),
            Ok(None)
        ));
        assert!(implicit_group(&pod(Some("0"), vec![]), "ml", "g").is_err());
    }
}
