//! The PodGroups of the cluster, for gang scheduling (the Coscheduling plugin).
//!
//! Like [`super::Workloads`], a lister shared (`Arc`) between the adapter that feeds it —
//! the operator's PodGroup watch, the simulator's input — and the plugins that read it
//! through the framework `Handle`, as upstream plugins read informer listers.

use std::collections::HashMap;
use std::sync::RwLock;

use crate::api::PodGroup;

/// PodGroups by namespace and name.
#[derive(Debug, Default)]
pub struct PodGroups {
    groups: RwLock<HashMap<(String, String), PodGroup>>,
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

    /// The PodGroup `namespace/name`, if it exists.
    pub fn get(&self, namespace: &str, name: &str) -> Option<PodGroup> {
        let groups = self.groups.read().unwrap_or_else(|p| p.into_inner());
        groups
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }
}
