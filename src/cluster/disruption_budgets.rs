//! The PodDisruptionBudgets of the cluster, for preemption: DefaultPreemption prefers
//! victims whose eviction leaves every budget intact.
//!
//! Like [`super::PodGroups`], a lister shared (`Arc`) between the adapter that feeds it and
//! the plugin that reads it through the framework `Handle`.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::policy::v1::PodDisruptionBudget;

/// PodDisruptionBudgets by `namespace/name`.
#[derive(Debug, Default)]
pub struct DisruptionBudgets {
    budgets: RwLock<BTreeMap<String, Arc<PodDisruptionBudget>>>,
}

fn key(budget: &PodDisruptionBudget) -> String {
    format!(
        "{}/{}",
        budget.metadata.namespace.as_deref().unwrap_or("default"),
        budget.metadata.name.as_deref().unwrap_or_default()
    )
}

impl DisruptionBudgets {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn apply(&self, budget: PodDisruptionBudget) {
        let mut budgets = self.budgets.write().unwrap_or_else(|p| p.into_inner());
        budgets.insert(key(&budget), Arc::new(budget));
    }

    pub fn delete(&self, budget: &PodDisruptionBudget) {
        let mut budgets = self.budgets.write().unwrap_or_else(|p| p.into_inner());
        budgets.remove(&key(budget));
    }

    /// Every budget, by namespace and name.
    pub fn list(&self) -> Vec<Arc<PodDisruptionBudget>> {
        let budgets = self.budgets.read().unwrap_or_else(|p| p.into_inner());
        budgets.values().cloned().collect()
    }
}
