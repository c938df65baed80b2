//! Preemption carried out in the simulated cluster: what `berth run` does through the API
//! server (delete the victims, clear the nominations of lower-priority pods, record the
//! preemptor's `status.nominatedNodeName`), done in memory right after the attempt that
//! decided it, before the next scheduling cycle, so that a simulation stays deterministic.
//!
//! Victims leave their node at once (the simulated kubelet gives no grace period): the
//! scheduler sees them deleted, which requeues the preemptor through the events of the
//! plugins that rejected it, and the preemptor binds on its nominated node in a later
//! cycle. Victims held at Permit were rejected in memory by DefaultPreemption: they are
//! not evicted (upstream deletes no waiting pod); they go back to the queue.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::pod_key;
use crate::scheduler::{AttemptReport, Scheduler};

use super::budgets::SimulatedBudgets;

/// A pod a preemption evicted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    /// The scheduler's key of the evicted pod.
    pub key: String,
    /// `namespace/name` of the evicted pod.
    pub pod: String,
    /// The node it was evicted from.
    pub node: String,
    /// `namespace/name` of the pod it made room for.
    pub preemptor: String,
    /// The scheduler's key of the pod it made room for.
    pub preemptor_key: String,
}

/// The preemptions of a simulation: evictions in the order they happened, and the
/// nominations the simulated API server holds.
#[derive(Debug, Default)]
pub struct Preemptions {
    pub evictions: Vec<Eviction>,
    /// `status.nominatedNodeName` by pod key: set by a nomination, cleared by a cleared
    /// nomination (PostFilter's "" or a higher-priority preemptor's on the same node),
    /// kept when the pod binds (as an API server without `ClearingNominatedNodeNameAfterBinding`).
    pub nominated: HashMap<String, String>,
}

impl Preemptions {
    /// Records the nomination `report` decided and carries out its preemption, if any.
    pub fn apply(
        &mut self,
        scheduler: &mut Scheduler,
        budgets: &mut SimulatedBudgets,
        report: &AttemptReport,
    ) {
        let key = report.pod.key().to_string();
        match report.nominating.as_deref() {
            Some("") => {
                self.nominated.remove(&key);
            }
            Some(node) => {
                self.nominated.insert(key.clone(), node.to_string());
            }
            None => {}
        }
        let Some(preemption) = &report.preemption else {
            return;
        };
        for cleared in &preemption.cleared_nominations {
            self.nominated.remove(&pod_key(cleared));
        }
        for victim in preemption.victims.iter().filter(|v| !v.waiting) {
            let victim_key = pod_key(&victim.pod);
            // The victim as the cache holds it (bound), else as the plugin saw it.
            let pod = scheduler
                .cache()
                .get_pod(&victim_key)
                .map(|info| info.pod.as_ref().clone())
                .unwrap_or_else(|| victim.pod.as_ref().clone());
            let node = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_else(|| preemption.node.clone());
            scheduler.on_pod_delete(&pod);
            budgets.evicted(&pod);
            self.evictions.push(Eviction {
                key: victim_key,
                pod: namespaced_name(&pod),
                node,
                preemptor: namespaced_name(&preemption.preemptor),
                preemptor_key: preemption.preemptor_key(),
            });
        }
        scheduler.complete_preemption(&preemption.preemptor_key(), true);
    }

    /// The eviction of the pod `key`, if a preemption evicted it.
    pub fn eviction_of(&self, key: &str) -> Option<&Eviction> {
        self.evictions.iter().find(|e| e.key == key)
    }

    /// The pods evicted by the preemptions of the pod `key`, in eviction order.
    pub fn victims_of(&self, key: &str) -> Vec<String> {
        self.evictions
            .iter()
            .filter(|e| e.preemptor_key == key)
            .map(|e| e.pod.clone())
            .collect()
    }
}

/// `namespace/name`, as the report names pods.
fn namespaced_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}
