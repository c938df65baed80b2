//! Kubernetes 1.35's gangs: `scheduling.k8s.io/v1alpha1` Workloads and the pods that name
//! one of their pod groups in `spec.workloadRef` (kept on the pod as
//! [`WorkloadReference`]), as kube-scheduler 1.35 tracks them with the GenericWorkload and
//! GangScheduling gates on (its Workload lister and `backend/workloadmanager`).
//!
//! A 1.35 gang is the pods with the same namespace and reference (Workload, pod group and
//! replica key). Each is scheduled on its own; GangScheduling holds it before the queue
//! until the gang has `minCount` pods and at Permit until `minCount` are assumed or bound.
//! [`LegacyWorkloads`] is what it counts with: every non-terminal pod with a reference
//! (whatever its scheduler, as upstream's informer delivers them all), sorted into
//! unscheduled, assumed and assigned, and each gang's shared Permit deadline. The
//! scheduler core keeps the pods current (adds, updates, deletes, assume and forget); the
//! adapter feeds the Workloads and says whether the API server serves them
//! ([`LegacyWorkloads::set_served`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::legacy_pod::WorkloadReference;
use super::lock::{read, write};
use super::pod_group_states::{is_assigned, is_terminal, namespace};
use super::pod_key;

/// How long a 1.35 gang's pods wait at Permit for the rest, from the first that waits
/// (upstream's `DefaultSchedulingTimeoutDuration`).
pub const LEGACY_SCHEDULING_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// A `scheduling.k8s.io/v1alpha1` Workload (Kubernetes 1.35; the 1.37 types have none).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Workload {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: WorkloadSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// The object that created the Workload; the scheduler does not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_ref: Option<serde_json::Value>,
    #[serde(default)]
    pub pod_groups: Vec<WorkloadPodGroup>,
}

/// One pod group of a Workload.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct WorkloadPodGroup {
    pub name: String,
    #[serde(default)]
    pub policy: WorkloadPodGroupPolicy,
}

/// `basic` (no quorum) or `gang`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct WorkloadPodGroupPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang: Option<LegacyGangPolicy>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyGangPolicy {
    #[serde(default)]
    pub min_count: i32,
}

impl Workload {
    /// The policy of pod group `name`, if the Workload has it.
    pub fn pod_group_policy(&self, name: &str) -> Option<&WorkloadPodGroupPolicy> {
        self.spec
            .pod_groups
            .iter()
            .find(|g| g.name == name)
            .map(|g| &g.policy)
    }
}

impl kube::Resource for Workload {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Workload".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "scheduling.k8s.io".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1alpha1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "workloads".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A 1.35 gang: the namespace and the reference its pods share.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LegacyGroupKey {
    pub namespace: String,
    pub reference: WorkloadReference,
}

impl LegacyGroupKey {
    /// The gang of `pod`, if it has a reference.
    pub fn of_pod(pod: &Pod) -> Option<LegacyGroupKey> {
        let reference = WorkloadReference::of_pod(pod)?;
        Some(LegacyGroupKey {
            namespace: namespace(pod.metadata.namespace.as_deref()),
            reference,
        })
    }
}

fn workload_key(workload: &Workload) -> (String, String) {
    (
        namespace(workload.metadata.namespace.as_deref()),
        workload.metadata.name.clone().unwrap_or_default(),
    )
}

/// One gang's pods by pod key (upstream's `podGroupInfo`).
#[derive(Debug, Default)]
pub struct LegacyGroup {
    all: BTreeMap<String, Arc<Pod>>,
    unscheduled: BTreeSet<String>,
    assumed: BTreeSet<String>,
    assigned: BTreeSet<String>,
    deadline: Option<Instant>,
}

impl LegacyGroup {
    /// Every pod of the gang.
    pub fn all_pods_count(&self) -> usize {
        self.all.len()
    }

    /// Pods assumed or bound.
    pub fn scheduled_pods_count(&self) -> usize {
        self.assumed.union(&self.assigned).count()
    }

    /// The keys of pods neither assumed nor bound.
    pub fn unscheduled_pods(&self) -> impl Iterator<Item = &str> {
        self.unscheduled.iter().map(String::as_str)
    }

    /// The keys of assumed pods.
    pub fn assumed_pods(&self) -> impl Iterator<Item = &str> {
        self.assumed.iter().map(String::as_str)
    }

    fn add(&mut self, key: String, pod: &Arc<Pod>) {
        if is_assigned(pod) {
            self.assigned.insert(key.clone());
        } else {
            self.unscheduled.insert(key.clone());
        }
        self.all.insert(key, pod.clone());
    }

    fn update(&mut self, key: String, old: &Pod, new: &Arc<Pod>) {
        if !is_assigned(old) && is_assigned(new) {
            self.assigned.insert(key.clone());
            self.unscheduled.remove(&key);
            self.assumed.remove(&key);
        }
        self.all.insert(key, new.clone());
    }

    fn delete(&mut self, key: &str) {
        self.all.remove(key);
        self.unscheduled.remove(key);
        self.assumed.remove(key);
        self.assigned.remove(key);
    }
}

/// The 1.35 Workloads and gangs; see the module docs. Shared (`Arc`) between the
/// scheduler core, the adapter and GangScheduling.
#[derive(Debug, Default)]
pub struct LegacyWorkloads {
    served: AtomicBool,
    workloads: RwLock<HashMap<(String, String), Arc<Workload>>>,
    groups: RwLock<BTreeMap<LegacyGroupKey, LegacyGroup>>,
}

impl LegacyWorkloads {
    pub fn new() -> Self {
        Self::default()
    }

    /// The API server serves `scheduling.k8s.io/v1alpha1` Workloads and the adapter feeds
    /// them; until then pods with a reference are refused (`scheduler::unsupported`).
    pub fn set_served(&self) {
        self.served.store(true, Ordering::Release);
    }

    pub fn is_served(&self) -> bool {
        self.served.load(Ordering::Acquire)
    }

    pub fn apply_workload(&self, workload: Workload) {
        write(&self.workloads).insert(workload_key(&workload), Arc::new(workload));
    }

    pub fn delete_workload(&self, workload: &Workload) {
        write(&self.workloads).remove(&workload_key(workload));
    }

    /// Workload `namespace/name`, if the adapter delivered it.
    pub fn workload(&self, namespace: &str, name: &str) -> Option<Arc<Workload>> {
        read(&self.workloads)
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// Reads gang `key`; `None` when it has no pods (upstream's "internal pod group state
    /// doesn't exist").
    pub fn with_group<R>(
        &self,
        key: &LegacyGroupKey,
        f: impl FnOnce(&LegacyGroup) -> R,
    ) -> Option<R> {
        read(&self.groups).get(key).map(f)
    }

    /// How long a pod of gang `key` may wait at Permit: until the gang's deadline, which
    /// the first to wait sets [`LEGACY_SCHEDULING_TIMEOUT`] ahead and a wait after it
    /// passed sets anew.
    pub fn scheduling_timeout(&self, key: &LegacyGroupKey, now: Instant) -> Duration {
        let mut groups = write(&self.groups);
        let Some(group) = groups.get_mut(key) else {
            return LEGACY_SCHEDULING_TIMEOUT;
        };
        let deadline = match group.deadline {
            Some(deadline) if deadline >= now => deadline,
            _ => now + LEGACY_SCHEDULING_TIMEOUT,
        };
        group.deadline = Some(deadline);
        deadline - now
    }

    /// A pod appeared. Pods without a reference and terminal pods are ignored.
    pub fn add_pod(&self, pod: &Arc<Pod>) {
        let Some(group) = LegacyGroupKey::of_pod(pod) else {
            return;
        };
        if is_terminal(pod) {
            return;
        }
        write(&self.groups)
            .entry(group)
            .or_default()
            .add(pod_key(pod), pod);
    }

    /// A pod changed: a pod that got a node is assigned; a pod turning terminal leaves.
    pub fn update_pod(&self, old: &Pod, new: &Arc<Pod>) {
        if is_terminal(new) {
            self.delete_pod(old);
            return;
        }
        let Some(group) = LegacyGroupKey::of_pod(new) else {
            return;
        };
        let key = pod_key(new);
        let mut groups = write(&self.groups);
        match groups.get_mut(&group) {
            Some(state) if state.all.contains_key(&key) => state.update(key, old, new),
            Some(state) => state.add(key, new),
            None => groups.entry(group).or_default().add(key, new),
        }
    }

    /// A pod is gone; a gang left without pods is dropped.
    pub fn delete_pod(&self, pod: &Pod) {
        let Some(group) = LegacyGroupKey::of_pod(pod) else {
            return;
        };
        let mut groups = write(&self.groups);
        if let Some(state) = groups.get_mut(&group) {
            state.delete(&pod_key(pod));
            if state.all.is_empty() {
                groups.remove(&group);
            }
        }
    }

    /// A pod was assumed on a node (upstream's GangScheduling Reserve).
    pub fn assume(&self, pod: &Pod) {
        self.mark(pod, true);
    }

    /// An assumed pod was forgotten (Unreserve): unscheduled again.
    pub fn forget(&self, pod: &Pod) {
        self.mark(pod, false);
    }

    fn mark(&self, pod: &Pod, assumed: bool) {
        let Some(group) = LegacyGroupKey::of_pod(pod) else {
            return;
        };
        let key = pod_key(pod);
        let mut groups = write(&self.groups);
        let Some(state) = groups.get_mut(&group) else {
            return;
        };
        if assumed {
            state.unscheduled.remove(&key);
            state.assumed.insert(key);
        } else {
            state.assumed.remove(&key);
            state.unscheduled.insert(key);
        }
    }
}

#[cfg(test)]
mod tests;
