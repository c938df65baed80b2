//! The pod groups as the scheduler tracks them (upstream's
//! `backend/cache/podgroupstate.go`): each `scheduling.k8s.io/v1beta1` PodGroup object and
//! the pods that name it in `spec.schedulingGroup.podGroupName`, sorted by where they are:
//! unscheduled (pending), assumed (placed by a cycle, not yet bound) or assigned (bound).
//! berth's and scheduler-plugins' PodGroups are held here too, under their own
//! [`GroupDialect`], as the Workload API PodGroup they amount to, with the pods their
//! label names: the pod-group cycle places every dialect alike.
//!
//! The state of a group exists while it has a PodGroup object or a member pod: pods may
//! arrive before their PodGroup, and a PodGroup may have no pods yet. The scheduler core
//! keeps the pods current (pending pods of its profiles, every bound pod, assume and
//! forget); the adapter feeds the PodGroup objects. GangScheduling and the pod-group
//! cycle read it through the framework [`Handle`](crate::framework::Handle).
//!
//! Terminal pods are not members: upstream's pod informer never delivers Succeeded or
//! Failed pods, so a pod turning terminal leaves its group as if deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1beta1::PodGroup;

use super::lock::{read, write};
use super::pod_key;

/// Which API a pod group comes from. The core schedules both alike (one pod-group cycle
/// per group); the dialect decides which plugin judges the group and what is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupDialect {
    /// A Workload API PodGroup (`scheduling.k8s.io/v1beta1`), named by
    /// `spec.schedulingGroup`; GangScheduling's.
    Workload,
    /// berth's or scheduler-plugins' PodGroup, named by the pod-group label;
    /// Coscheduling's. The core holds it as the Workload API PodGroup it amounts to
    /// ([`crate::cluster::core_pod_group`]).
    Coscheduling,
}

/// A pod group by dialect, namespace and name (upstream's `podgroup/<namespace>/<name>`
/// key, plus the dialect: a Workload API PodGroup and a scheduler-plugins PodGroup of the
/// same name are different groups).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKey {
    pub dialect: GroupDialect,
    pub namespace: String,
    pub name: String,
}

impl GroupKey {
    /// The key of a Workload API PodGroup.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        GroupKey {
            dialect: GroupDialect::Workload,
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of a Coscheduling group (berth's or scheduler-plugins' PodGroup).
    pub fn coscheduling(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        GroupKey {
            dialect: GroupDialect::Coscheduling,
            ..GroupKey::new(namespace, name)
        }
    }

    /// The group `pod` belongs to in any dialect: the Workload API PodGroup it names in
    /// `spec.schedulingGroup`, else the Coscheduling group its label names.
    pub fn member_of(pod: &Pod) -> Option<GroupKey> {
        GroupKey::of_pod(pod).or_else(|| {
            super::pod_group_of(pod)
                .map(|(namespace, name)| GroupKey::coscheduling(namespace, name))
        })
    }

    /// The Workload API PodGroup `pod` names in `spec.schedulingGroup`, if any.
    pub fn of_pod(pod: &Pod) -> Option<GroupKey> {
        let name = pod
            .spec
            .as_ref()?
            .scheduling_group
            .as_ref()?
            .pod_group_name
            .as_deref()
            .filter(|n| !n.is_empty())?;
        Some(GroupKey::new(
            namespace(pod.metadata.namespace.as_deref()),
            name,
        ))
    }

    /// The key of a Workload API PodGroup object.
    pub fn of_group(group: &PodGroup) -> GroupKey {
        GroupKey::new(
            namespace(group.metadata.namespace.as_deref()),
            group.metadata.name.clone().unwrap_or_default(),
        )
    }
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

pub(super) fn namespace(namespace: Option<&str>) -> String {
    namespace
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
        .to_string()
}

/// The gang policy's `minCount` of `group`, `None` for a group without one (basic).
pub fn gang_min_count(group: &PodGroup) -> Option<i32> {
    group
        .spec
        .scheduling_policy
        .gang
        .as_ref()
        .map(|gang| gang.min_count)
}

/// Whether `count` pods fall short of `min_count` (a count below 1 is met by any number).
pub fn short_of(count: usize, min_count: i32) -> bool {
    usize::try_from(min_count).is_ok_and(|min| count < min)
}

pub(super) fn is_assigned(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

pub(super) fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// One group: its PodGroup object, if seen, and its member pods by pod key.
#[derive(Debug, Clone, Default)]
pub struct PodGroupState {
    pod_group: Option<Arc<PodGroup>>,
    all: BTreeMap<String, Arc<Pod>>,
    unscheduled: BTreeSet<String>,
    /// The assumed copies (with `spec.nodeName`).
    assumed: BTreeMap<String, Arc<Pod>>,
    assigned: BTreeSet<String>,
}

impl PodGroupState {
    /// The PodGroup object, if the adapter has delivered it.
    pub fn pod_group(&self) -> Option<&Arc<PodGroup>> {
        self.pod_group.as_ref()
    }

    /// Every member the scheduler knows (upstream `AllPodsCount`).
    pub fn all_pods_count(&self) -> usize {
        self.all.len()
    }

    /// Members assumed or bound (upstream `ScheduledPodsCount`).
    pub fn scheduled_pods_count(&self) -> usize {
        self.assumed.len() + self.assigned.len()
    }

    /// The keys of members neither assumed nor bound.
    pub fn unscheduled_pods(&self) -> impl Iterator<Item = &str> {
        self.unscheduled.iter().map(String::as_str)
    }

    /// The keys of assumed members.
    pub fn assumed_pods(&self) -> impl Iterator<Item = &str> {
        self.assumed.keys().map(String::as_str)
    }

    /// Bound members, then the assumed copies (upstream `ScheduledPods`).
    pub fn scheduled_pods(&self) -> impl Iterator<Item = &Arc<Pod>> {
        self.assigned
            .iter()
            .filter_map(|key| self.all.get(key))
            .chain(self.assumed.values())
    }

    fn is_empty(&self) -> bool {
        self.pod_group.is_none() && self.all.is_empty()
    }

    fn add(&mut self, key: String, pod: Arc<Pod>) {
        if is_assigned(&pod) {
            self.unscheduled.remove(&key);
            self.assumed.remove(&key);
            self.assigned.insert(key.clone());
        } else if !self.assigned.contains(&key) && !self.assumed.contains_key(&key) {
            self.unscheduled.insert(key.clone());
        }
        self.all.insert(key, pod);
    }

    fn delete(&mut self, key: &str) {
        self.all.remove(key);
        self.unscheduled.remove(key);
        self.assumed.remove(key);
        self.assigned.remove(key);
    }
}

/// Every pod group's state; see the module docs. Shared (`Arc`) between the scheduler
/// core, the adapter and the plugins.
#[derive(Debug, Default)]
pub struct PodGroupStates {
    groups: RwLock<BTreeMap<GroupKey, PodGroupState>>,
    /// Set by an adapter that feeds the cluster's PodGroups; until then pods naming a
    /// pod group are not grouped but refused (see `scheduler::unsupported`).
    served: AtomicBool,
}

impl PodGroupStates {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the adapter feeds the cluster's `scheduling.k8s.io/v1beta1`
    /// PodGroups here, so that their members are scheduled as groups.
    pub fn set_served(&self) {
        self.served.store(true, Ordering::Release);
    }

    /// Whether an adapter feeds the PodGroups.
    pub fn is_served(&self) -> bool {
        self.served.load(Ordering::Acquire)
    }

    /// Adds or replaces a Workload API PodGroup object.
    pub fn apply_group(&self, group: PodGroup) {
        self.apply_group_as(GroupKey::of_group(&group), group);
    }

    /// Adds or replaces the PodGroup object of `key`: a Coscheduling group's is the
    /// Workload API PodGroup it amounts to.
    pub fn apply_group_as(&self, key: GroupKey, group: PodGroup) {
        write(&self.groups).entry(key).or_default().pod_group = Some(Arc::new(group));
    }

    /// Removes a PodGroup object; the group's state lives on while it has members.
    pub fn delete_group(&self, key: &GroupKey) {
        let mut groups = write(&self.groups);
        if let Some(state) = groups.get_mut(key) {
            state.pod_group = None;
            if state.is_empty() {
                groups.remove(key);
            }
        }
    }

    /// The PodGroup object of `key`.
    pub fn pod_group(&self, key: &GroupKey) -> Option<Arc<PodGroup>> {
        read(&self.groups).get(key)?.pod_group.clone()
    }

    /// The gang's `minCount` (`None` for a group without one) and how many members exist,
    /// pending or placed (what a PreEnqueue gate counts); `None` when the group has no
    /// PodGroup object.
    pub fn gang_members(&self, key: &GroupKey) -> Option<(Option<i32>, usize)> {
        self.with_state(key, |s| {
            s.pod_group()
                .map(|group| (gang_min_count(group), s.all_pods_count()))
        })
        .flatten()
    }

    /// Reads the state of `key`, if the group has one.
    pub fn with_state<R>(&self, key: &GroupKey, f: impl FnOnce(&PodGroupState) -> R) -> Option<R> {
        read(&self.groups).get(key).map(f)
    }

    /// A pod the scheduler is responsible for appeared (pending pods of its profiles, every
    /// bound pod). Non-members and terminal pods are ignored.
    pub fn add_pod(&self, pod: &Arc<Pod>) {
        let Some(group) = GroupKey::member_of(pod) else {
            return;
        };
        if is_terminal(pod) {
            return;
        }
        write(&self.groups)
            .entry(group)
            .or_default()
            .add(pod_key(pod), pod.clone());
    }

    /// A member changed; a pod turning terminal leaves its group.
    pub fn update_pod(&self, old: &Pod, new: &Arc<Pod>) {
        if is_terminal(new) {
            self.delete_pod(old);
            return;
        }
        if GroupKey::member_of(old) != GroupKey::member_of(new) {
            self.delete_pod(old);
        }
        self.add_pod(new);
    }

    /// A member is gone.
    pub fn delete_pod(&self, pod: &Pod) {
        let Some(group) = GroupKey::member_of(pod) else {
            return;
        };
        let mut groups = write(&self.groups);
        if let Some(state) = groups.get_mut(&group) {
            state.delete(&pod_key(pod));
            if state.is_empty() {
                groups.remove(&group);
            }
        }
    }

    /// A member was assumed on a node (`assumed` carries `spec.nodeName`). A pod the group
    /// does not know (deleted meanwhile) is left out, as upstream does.
    pub fn assume(&self, assumed: &Arc<Pod>) {
        let Some(group) = GroupKey::member_of(assumed) else {
            return;
        };
        let key = pod_key(assumed);
        let mut groups = write(&self.groups);
        let Some(state) = groups.get_mut(&group) else {
            return;
        };
        let Some(stored) = state.all.get(&key) else {
            return;
        };
        state.unscheduled.remove(&key);
        if is_assigned(stored) {
            state.assigned.insert(key);
        } else {
            state.assumed.insert(key, assumed.clone());
        }
    }

    /// An assumed member was forgotten (its cycle or binding failed): unscheduled again.
    pub fn forget(&self, pod: &Pod) {
        let Some(group) = GroupKey::member_of(pod) else {
            return;
        };
        let key = pod_key(pod);
        let mut groups = write(&self.groups);
        let Some(state) = groups.get_mut(&group) else {
            return;
        };
        let Some(stored) = state.all.get(&key) else {
            return;
        };
        state.assumed.remove(&key);
        if is_assigned(stored) {
            state.assigned.insert(key);
        } else {
            state.unscheduled.insert(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSchedulingGroup, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn member(name: &str, group: &str, node: Option<&str>) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns1".into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(Into::into),
                scheduling_group: Some(PodSchedulingGroup {
                    pod_group_name: Some(group.into()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn group(name: &str) -> PodGroup {
        PodGroup {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns1".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn counts(states: &PodGroupStates, name: &str) -> Option<(usize, usize, Vec<String>)> {
        states.with_state(&GroupKey::new("ns1", name), |s| {
            (
                s.all_pods_count(),
                s.scheduled_pods_count(),
                s.unscheduled_pods().map(String::from).collect(),
            )
        })
    }

    #[test]
    fn members_move_between_unscheduled_assumed_and_assigned() {
        let states = PodGroupStates::new();
        let (p1, p2) = (member("p1", "pg", None), member("p2", "pg", None));
        states.add_pod(&p1);
        states.add_pod(&p2);
        assert_eq!(
            counts(&states, "pg"),
            Some((2, 0, vec!["uid-p1".into(), "uid-p2".into()]))
        );
        let assumed = member("p1", "pg", Some("node1"));
        states.assume(&assumed);
        assert_eq!(counts(&states, "pg"), Some((2, 1, vec!["uid-p2".into()])));
        let assumed_keys: Vec<String> = states
            .with_state(&GroupKey::new("ns1", "pg"), |s| {
                s.assumed_pods().map(String::from).collect()
            })
            .unwrap();
        assert_eq!(assumed_keys, ["uid-p1"]);
        states.forget(&assumed);
        assert_eq!(counts(&states, "pg").unwrap().1, 0);
        states.assume(&assumed);
        // The binding is observed: the assumed member becomes assigned.
        states.update_pod(&p1, &assumed);
        assert_eq!(counts(&states, "pg"), Some((2, 1, vec!["uid-p2".into()])));
        let scheduled: Vec<_> = states
            .with_state(&GroupKey::new("ns1", "pg"), |s| {
                s.scheduled_pods()
                    .map(|p| p.metadata.name.clone().unwrap())
                    .collect::<Vec<_>>()
            })
            .unwrap();
        assert_eq!(scheduled, ["p1"]);
    }

    #[test]
    fn a_state_lives_while_it_has_a_group_object_or_a_member() {
        let states = PodGroupStates::new();
        let key = GroupKey::new("ns1", "pg");
        let p1 = member("p1", "pg", None);
        states.add_pod(&p1);
        assert!(states.pod_group(&key).is_none());
        states.apply_group(group("pg"));
        assert!(states.pod_group(&key).is_some());
        states.delete_pod(&p1);
        assert_eq!(counts(&states, "pg"), Some((0, 0, vec![])));
        states.delete_group(&key);
        assert!(states.with_state(&key, |_| ()).is_none());
    }

    #[test]
    fn terminal_pods_and_non_members_are_not_counted() {
        let states = PodGroupStates::new();
        let mut done = (*member("p1", "pg", Some("node1"))).clone();
        done.status = Some(PodStatus {
            phase: Some("Succeeded".into()),
            ..Default::default()
        });
        states.add_pod(&Arc::new(done.clone()));
        states.add_pod(&Arc::new(Pod::default()));
        assert!(
            states
                .with_state(&GroupKey::new("ns1", "pg"), |_| ())
                .is_none()
        );
        let running = member("p1", "pg", Some("node1"));
        states.add_pod(&running);
        states.update_pod(&running, &Arc::new(done));
        assert!(
            states
                .with_state(&GroupKey::new("ns1", "pg"), |_| ())
                .is_none()
        );
    }

    #[test]
    fn assuming_an_unknown_pod_changes_nothing() {
        let states = PodGroupStates::new();
        states.apply_group(group("pg"));
        states.assume(&member("p9", "pg", Some("node1")));
        assert_eq!(counts(&states, "pg"), Some((0, 0, vec![])));
    }
}
