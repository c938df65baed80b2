//! The workload objects whose selectors define a pod's default spreading: Services,
//! ReplicationControllers, ReplicaSets and StatefulSets.
//!
//! Upstream's PodTopologySpread (system or `List` default constraints) spreads a pod
//! among the pods selected by the same workloads (`helper.DefaultSelector`), reading
//! informer listers rather than the scheduling snapshot. [`Workloads`] is that lister:
//! shared (`Arc`) between the adapter that feeds it (the operator's watches, the
//! simulator's input) and the plugins that read it through the framework `Handle`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::{Selector, SelectorExt};

type Key = (String, String);

#[derive(Debug, Default)]
struct Inner {
    /// `spec.selector` of each Service that has one.
    services: HashMap<Key, BTreeMap<String, String>>,
    replication_controllers: HashMap<Key, BTreeMap<String, String>>,
    replica_sets: HashMap<Key, LabelSelector>,
    stateful_sets: HashMap<Key, LabelSelector>,
}

/// Selectors of the workloads in the cluster, by namespace and name.
#[derive(Debug, Default)]
pub struct Workloads {
    inner: RwLock<Inner>,
}

fn key(namespace: Option<&String>, name: Option<&String>) -> Key {
    (
        namespace.cloned().unwrap_or_else(|| "default".into()),
        name.cloned().unwrap_or_default(),
    )
}

impl Workloads {
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        super::lock::read(&self.inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        super::lock::write(&self.inner)
    }

    pub fn apply_service(&self, service: &Service) {
        let k = key(
            service.metadata.namespace.as_ref(),
            service.metadata.name.as_ref(),
        );
        match service.spec.as_ref().and_then(|s| s.selector.clone()) {
            Some(selector) => self.write().services.insert(k, selector),
            None => self.write().services.remove(&k),
        };
    }

    pub fn delete_service(&self, service: &Service) {
        let k = key(
            service.metadata.namespace.as_ref(),
            service.metadata.name.as_ref(),
        );
        self.write().services.remove(&k);
    }

    pub fn apply_replication_controller(&self, rc: &ReplicationController) {
        let k = key(rc.metadata.namespace.as_ref(), rc.metadata.name.as_ref());
        let selector = rc
            .spec
            .as_ref()
            .and_then(|s| s.selector.clone())
            .unwrap_or_default();
        self.write().replication_controllers.insert(k, selector);
    }

    pub fn delete_replication_controller(&self, rc: &ReplicationController) {
        let k = key(rc.metadata.namespace.as_ref(), rc.metadata.name.as_ref());
        self.write().replication_controllers.remove(&k);
    }

    pub fn apply_replica_set(&self, rs: &ReplicaSet) {
        let k = key(rs.metadata.namespace.as_ref(), rs.metadata.name.as_ref());
        let selector = rs.spec.selector.clone();
        self.write().replica_sets.insert(k, selector);
    }

    pub fn delete_replica_set(&self, rs: &ReplicaSet) {
        let k = key(rs.metadata.namespace.as_ref(), rs.metadata.name.as_ref());
        self.write().replica_sets.remove(&k);
    }

    pub fn apply_stateful_set(&self, ss: &StatefulSet) {
        let k = key(ss.metadata.namespace.as_ref(), ss.metadata.name.as_ref());
        let selector = ss.spec.selector.clone();
        self.write().stateful_sets.insert(k, selector);
    }

    pub fn delete_stateful_set(&self, ss: &StatefulSet) {
        let k = key(ss.metadata.namespace.as_ref(), ss.metadata.name.as_ref());
        self.write().stateful_sets.remove(&k);
    }

    /// Upstream `helper.DefaultSelector`: the union of the selectors of the Services in
    /// the pod's namespace that select it, plus the selector of its controller when that
    /// is a ReplicationController, ReplicaSet or StatefulSet. Workloads select their pods,
    /// so the merged labels cannot conflict.
    pub fn default_selector(&self, pod: &Pod) -> Selector {
        let namespace = pod
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let inner = self.read();
        let mut merged: BTreeMap<String, String> = BTreeMap::new();
        for ((ns, _), selector) in &inner.services {
            let selects =
                ns == &namespace && Selector::from_iter(selector.clone()).matches(&labels);
            if selects {
                merged.extend(selector.clone());
            }
        }
        let Some(owner) = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
        else {
            return Selector::from_iter(merged);
        };
        let owner_key = (namespace, owner.name.clone());
        let group = owner.api_version.split('/').next().unwrap_or_default();
        match (group, owner.kind.as_str()) {
            ("v1", "ReplicationController") => {
                if let Some(selector) = inner.replication_controllers.get(&owner_key) {
                    merged.extend(selector.clone());
                }
                Selector::from_iter(merged)
            }
            ("apps", "ReplicaSet") => with_requirements(merged, inner.replica_sets.get(&owner_key)),
            ("apps", "StatefulSet") => {
                with_requirements(merged, inner.stateful_sets.get(&owner_key))
            }
            _ => Selector::from_iter(merged),
        }
    }
}

/// The label set as a selector, with the requirements of `selector` added (an invalid
/// selector adds nothing, as upstream ignores a conversion error).
fn with_requirements(
    labels: BTreeMap<String, String>,
    selector: Option<&LabelSelector>,
) -> Selector {
    let mut result = Selector::from_iter(labels);
    if let Some(other) = selector.and_then(|s| Selector::try_from(s.clone()).ok()) {
        result.extend(other);
    }
    result
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::ServiceSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;
    use crate::testing::{labels, make_pod};

    fn pod(pod_labels: &[(&str, &str)], owner: Option<(&str, &str, &str)>) -> Pod {
        let pod = make_pod().name("p").namespace("ns").labels(pod_labels);
        match owner {
            Some((api_version, kind, name)) => pod
                .owner_reference(OwnerReference {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    name: name.into(),
                    uid: "u".into(),
                    controller: Some(true),
                    ..Default::default()
                })
                .obj(),
            None => pod.obj(),
        }
    }

    fn service(namespace: &str, selector: &[(&str, &str)]) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some(format!("svc-{}", selector.len())),
                namespace: Some(namespace.into()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                selector: Some(labels(selector)),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn services_selecting_the_pod_in_its_namespace_define_the_selector() {
        // Upstream `DefaultSelector`: services in the pod's namespace whose selector
        // matches the pod's labels contribute their selector; others do not.
        let workloads = Workloads::new();
        workloads.apply_service(&service("ns", &[("app", "web")]));
        workloads.apply_service(&service("other", &[("tier", "front")]));
        let selector = workloads.default_selector(&pod(&[("app", "web"), ("tier", "front")], None));
        assert!(selector.matches(&labels(&[("app", "web")])));
        assert!(!selector.matches(&labels(&[("app", "db")])));
        assert!(
            workloads
                .default_selector(&pod(&[("app", "db")], None))
                .selects_all()
        );
    }

    #[test]
    fn a_replica_set_owner_adds_its_selector() {
        let workloads = Workloads::new();
        workloads.apply_replica_set(&ReplicaSet {
            metadata: ObjectMeta {
                name: Some("web-abc".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: ReplicaSetSpec {
                selector: LabelSelector {
                    match_labels: Some(labels(&[("app", "web"), ("pod-template-hash", "abc")])),
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        });
        let owned = pod(
            &[("app", "web"), ("pod-template-hash", "abc")],
            Some(("apps/v1", "ReplicaSet", "web-abc")),
        );
        let selector = workloads.default_selector(&owned);
        assert!(selector.matches(&labels(&[("app", "web"), ("pod-template-hash", "abc")])));
        assert!(!selector.matches(&labels(&[("app", "web"), ("pod-template-hash", "xyz")])));
    }
}
