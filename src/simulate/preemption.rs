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
use crate::framework::{ActionType, EventResource};
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
            // The resourceclaim controller frees the victim's devices.
            let resources = scheduler
                .profiles()
                .first()
                .map(|p| p.framework.handle().device_resources.clone());
            if let Some(resources) = resources
                && super::claims::release_pod_claims(&resources, &pod)
            {
                scheduler.on_storage_change(EventResource::ResourceClaim, ActionType::UPDATE);
            }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::cluster::PodInfo;
    use crate::framework::{Preemption, Victim};
    use crate::scheduler::{Outcome, SchedulerOptions};
    use crate::testing::{make_node, make_pod};

    use super::*;

    fn pod(name: &str, node: Option<&str>) -> Pod {
        let mut pod = make_pod()
            .name(name)
            .namespace("default")
            .uid(name)
            .req(&[("cpu", "1")])
            .obj();
        if let Some(node) = node {
            pod.spec.get_or_insert_default().node_name = Some(node.to_string());
        }
        pod
    }

    /// upstream's TestPreemptWithPermitPlugin "waiting pod is not physically deleted upon
    /// preemption": the bound victim leaves its node, the one held at Permit is not
    /// evicted; the lower-priority nominee of the node loses its nomination.
    #[test]
    fn bound_victims_are_evicted_and_waiting_ones_are_not() {
        let mut scheduler = Scheduler::new(SchedulerOptions::default());
        let node = make_node()
            .name("node")
            .allocatable(&[("cpu", "4"), ("pods", "110")])
            .obj();
        scheduler.on_node_add(node).expect("node");
        let running = pod("running-pod", Some("node"));
        scheduler.on_pod_add(running.clone()).expect("running pod");
        let preemptor = pod("preemptor", None);
        let nominee = pod("nominee", None);
        let mut preemptions = Preemptions::default();
        preemptions
            .nominated
            .insert(pod_key(&nominee), "node".to_string());
        let report = AttemptReport {
            pod: Arc::new(PodInfo::new(preemptor.clone()).expect("pod")),
            scheduler_name: "default-scheduler".to_string(),
            attempts: 1,
            outcome: Outcome::Unschedulable {
                message: "0/1 nodes are available: 1 Insufficient cpu.".to_string(),
            },
            diagnosis: None,
            nominating: Some("node".to_string()),
            preemption: Some(Box::new(Preemption {
                preemptor: Arc::new(preemptor.clone()),
                node: "node".to_string(),
                victims: vec![
                    Victim {
                        pod: Arc::new(pod("waiting-pod", Some("node"))),
                        waiting: true,
                    },
                    Victim {
                        pod: Arc::new(running.clone()),
                        waiting: false,
                    },
                ],
                cleared_nominations: vec![Arc::new(nominee.clone())],
                group: None,
            })),
        };
        let mut budgets = SimulatedBudgets::default();
        preemptions.apply(&mut scheduler, &mut budgets, &report);
        assert_eq!(
            preemptions.evictions,
            vec![Eviction {
                key: pod_key(&running),
                pod: "default/running-pod".to_string(),
                node: "node".to_string(),
                preemptor: "default/preemptor".to_string(),
                preemptor_key: pod_key(&preemptor),
            }]
        );
        assert!(scheduler.cache().get_pod(&pod_key(&running)).is_none());
        assert_eq!(
            preemptions.victims_of(&pod_key(&preemptor)),
            vec!["default/running-pod"]
        );
        assert_eq!(
            preemptions.nominated,
            HashMap::from([(pod_key(&preemptor), "node".to_string())])
        );
    }
}
