//! The PodDisruptionBudgets of the cluster, for preemption: DefaultPreemption prefers
//! victims whose eviction leaves every budget intact.
//!
//! Like [`super::PodGroups`], a lister shared (`Arc`) between the adapter that feeds it and
//! the plugin that reads it through the framework `Handle`.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::core::{Selector, SelectorExt};

const DEFAULT_NAMESPACE: &str = "default";

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

/// The disruptions the budgets still allow while victims are counted one by one
/// (upstream `FilterVictimsWithPDBViolation`'s `podIsViolating`).
pub struct BudgetTracker<'a> {
    pdbs: &'a [PodDisruptionBudget],
    selectors: Vec<Option<Selector>>,
    allowed: Vec<i64>,
}

impl<'a> BudgetTracker<'a> {
    pub fn new(pdbs: &'a [PodDisruptionBudget]) -> Self {
        BudgetTracker {
            pdbs,
            selectors: pdbs.iter().map(budget_selector).collect(),
            allowed: pdbs
                .iter()
                .map(|pdb| {
                    pdb.status
                        .as_ref()
                        .and_then(|s| s.disruptions_allowed)
                        .map_or(0, i64::from)
                })
                .collect(),
        }
    }

    /// Counts evicting `pod` against each budget that matches it, in order, and says
    /// whether one went below zero; as upstream, the budgets after that one are not
    /// counted for this pod.
    pub fn evict(&mut self, pod: &Pod) -> bool {
        for ((pdb, selector), allowed) in
            self.pdbs.iter().zip(&self.selectors).zip(&mut self.allowed)
        {
            if budget_counts(pdb, selector.as_ref(), pod) {
                *allowed -= 1;
                if *allowed < 0 {
                    return true;
                }
            }
        }
        false
    }
}

/// The budget's selector, `None` when it selects nothing (missing, empty or invalid).
fn budget_selector(pdb: &PodDisruptionBudget) -> Option<Selector> {
    let selector = pdb.spec.as_ref()?.selector.clone()?;
    Selector::try_from(selector)
        .ok()
        .filter(|s| !s.selects_all())
}

/// Whether evicting `pod` uses up one disruption of `pdb`.
fn budget_counts(pdb: &PodDisruptionBudget, selector: Option<&Selector>, pod: &Pod) -> bool {
    let Some(labels) = pod.metadata.labels.as_ref().filter(|l| !l.is_empty()) else {
        return false;
    };
    let Some(selector) = selector else {
        return false;
    };
    if namespace(&pdb.metadata.namespace) != namespace(&pod.metadata.namespace)
        || !selector.matches(labels)
    {
        return false;
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let disrupted = pdb
        .status
        .as_ref()
        .and_then(|s| s.disrupted_pods.as_ref())
        .is_some_and(|pods| pods.contains_key(name));
    !disrupted
}

/// A namespace as the cache reads it: `default` when unset or empty.
fn namespace(namespace: &Option<String>) -> &str {
    namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .unwrap_or(DEFAULT_NAMESPACE)
}
