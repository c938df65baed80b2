//! The simulated disruption controller: the PodDisruptionBudgets of the input, with the
//! `status` preemption reads (`disruptionsAllowed` decides which victims violate a
//! budget), kept current while the simulation binds and evicts pods.
//!
//! A budget written with a `status` is taken as given, as a snapshot of a cluster shows
//! it; each eviction of a pod it selects then uses up one disruption (`currentHealthy`
//! drops by one). A budget written without one gets the status the disruption controller
//! would compute from the pods bound to nodes, recomputed after every binding and
//! eviction: `currentHealthy` counts the selected pods that are healthy (not terminating,
//! and Ready, a pod without a Ready condition counting as Ready), and
//! `disruptionsAllowed = currentHealthy - desiredHealthy` (at least 0, and 0 when no pod is
//! expected), where `desiredHealthy` is `minAvailable` (a percentage of the expected pods,
//! rounded up), or the expected pods less `maxUnavailable` (likewise). The controller
//! takes the expected pods of a percentage or of `maxUnavailable` from the scale of the
//! pods' controllers; the simulation takes the selected pods, which is the same count
//! when the workload runs at its scale.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::core::{Selector, SelectorExt};

use crate::cluster::{DisruptionBudgets, pod_key};

/// The budgets of the simulated cluster and the bound pods their statuses count.
#[derive(Debug, Default)]
pub struct SimulatedBudgets {
    lister: Arc<DisruptionBudgets>,
    /// Budgets whose status the simulation computes, in input order.
    computed: Vec<PodDisruptionBudget>,
    /// Budgets whose status the input gave, as the simulation left them.
    given: Vec<PodDisruptionBudget>,
    /// Pods bound to nodes, by key.
    bound: BTreeMap<String, Pod>,
}

impl SimulatedBudgets {
    /// The input's budgets over the pods already running.
    pub fn new<'a>(
        budgets: &[PodDisruptionBudget],
        running: impl IntoIterator<Item = &'a Pod>,
    ) -> Self {
        let (given, computed): (Vec<_>, Vec<_>) = budgets
            .iter()
            .cloned()
            .partition(|budget| budget.status.is_some());
        let budgets = SimulatedBudgets {
            lister: Arc::new(DisruptionBudgets::new()),
            computed,
            given,
            bound: running
                .into_iter()
                .map(|pod| (pod_key(pod), pod.clone()))
                .collect(),
        };
        budgets
            .given
            .iter()
            .cloned()
            .for_each(|b| budgets.lister.apply(b));
        budgets.refresh();
        budgets
    }

    /// The lister every profile's Handle reads.
    pub fn lister(&self) -> Arc<DisruptionBudgets> {
        self.lister.clone()
    }

    /// `pod` was bound to a node.
    pub fn bound(&mut self, pod: &Pod) {
        if self.budgets().next().is_none() {
            return;
        }
        self.bound.insert(pod_key(pod), pod.clone());
        self.refresh();
    }

    /// `pod` was evicted from its node.
    pub fn evicted(&mut self, pod: &Pod) {
        if self.budgets().next().is_none() {
            return;
        }
        self.bound.remove(&pod_key(pod));
        for budget in &mut self.given {
            if selects(budget, pod)
                && let Some(status) = budget.status.as_mut()
            {
                // An absent count is Go's zero value.
                let healthy = (status.current_healthy.unwrap_or(0) - 1).max(0);
                status.current_healthy = Some(healthy);
                status.disruptions_allowed =
                    Some((healthy - status.desired_healthy.unwrap_or(0)).max(0));
                self.lister.apply(budget.clone());
            }
        }
        self.refresh();
    }

    fn budgets(&self) -> impl Iterator<Item = &PodDisruptionBudget> {
        self.computed.iter().chain(&self.given)
    }

    /// Recomputes the status of every budget the input gave none.
    fn refresh(&self) {
        for budget in &self.computed {
            let mut budget = budget.clone();
            budget.status = Some(status(&budget, self.bound.values()));
            self.lister.apply(budget);
        }
    }
}

/// The status the disruption controller computes for `budget` over `pods`.
fn status<'a>(
    budget: &PodDisruptionBudget,
    pods: impl Iterator<Item = &'a Pod>,
) -> PodDisruptionBudgetStatus {
    let selected: Vec<&Pod> = pods.filter(|pod| selects(budget, pod)).collect();
    let expected = i32::try_from(selected.len()).unwrap_or(i32::MAX);
    let healthy = selected.iter().filter(|pod| is_healthy(pod)).count();
    let healthy = i32::try_from(healthy).unwrap_or(i32::MAX);
    let spec = budget.spec.as_ref();
    let desired = match (
        spec.and_then(|s| s.max_unavailable.as_ref()),
        spec.and_then(|s| s.min_available.as_ref()),
    ) {
        (Some(max_unavailable), _) => (expected - scaled(max_unavailable, expected)).max(0),
        (None, Some(min_available)) => scaled(min_available, expected),
        (None, None) => 0,
    };
    let allowed = if expected <= 0 {
        0
    } else {
        (healthy - desired).max(0)
    };
    PodDisruptionBudgetStatus {
        current_healthy: Some(healthy),
        desired_healthy: Some(desired),
        disruptions_allowed: Some(allowed),
        expected_pods: Some(expected),
        observed_generation: budget.metadata.generation,
        ..Default::default()
    }
}

/// An int, or a percentage of `total` rounded up (`GetScaledValueFromIntOrPercent`);
/// validation has refused any other string.
fn scaled(value: &IntOrString, total: i32) -> i32 {
    match value {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => {
            let percent: i64 = s
                .strip_suffix('%')
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            let scaled = (percent * i64::from(total) + 99).div_euclid(100);
            i32::try_from(scaled).unwrap_or(i32::MAX)
        }
    }
}

/// Whether `budget` counts `pod`: same namespace, and its selector (policy/v1: an empty
/// one selects every pod of the namespace, a missing one none) matches the pod's labels.
fn selects(budget: &PodDisruptionBudget, pod: &Pod) -> bool {
    let namespace = |ns: &Option<String>| ns.clone().unwrap_or_else(|| "default".into());
    if namespace(&budget.metadata.namespace) != namespace(&pod.metadata.namespace) {
        return false;
    }
    let Some(selector) = budget.spec.as_ref().and_then(|s| s.selector.clone()) else {
        return false;
    };
    Selector::try_from(selector)
        .map(|s| s.matches(&pod.metadata.labels.clone().unwrap_or_default()))
        .unwrap_or(false)
}

/// Not terminating, and Ready (a pod the input gives no Ready condition is taken as
/// Ready: the simulated kubelet starts every bound pod).
fn is_healthy(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_none_or(|ready| ready.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    fn pod(name: &str, label: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                labels: label.map(|l| [(l.to_string(), "bar".to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn budget(
        label: &str,
        min_available: Option<IntOrString>,
        max_unavailable: Option<IntOrString>,
    ) -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some(format!("pdb-{label}")),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                min_available,
                max_unavailable,
                selector: Some(LabelSelector {
                    match_labels: Some([(label.to_string(), "bar".to_string())].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn allowed(budgets: &SimulatedBudgets) -> Vec<i32> {
        budgets
            .lister()
            .list()
            .iter()
            .map(|b| {
                b.status
                    .as_ref()
                    .map_or(-1, |s| s.disruptions_allowed.unwrap_or(0))
            })
            .collect()
    }

    /// The budgets of upstream's TestPDBInPreemption, whose disruption controller counts
    /// Ready pods: minAvailable 2 over 1 pod allows 0, over 5 pods allows 3.
    #[test]
    fn computed_status_follows_the_disruption_controller() {
        let cases = [
            ("minAvailable 2 of 2", Some(IntOrString::Int(2)), None, 2, 0),
            ("minAvailable 2 of 1", Some(IntOrString::Int(2)), None, 1, 0),
            ("minAvailable 2 of 5", Some(IntOrString::Int(2)), None, 5, 3),
            (
                "minAvailable 50% of 5",
                Some(IntOrString::String("50%".into())),
                None,
                5,
                2,
            ),
            (
                "maxUnavailable 1 of 3",
                None,
                Some(IntOrString::Int(1)),
                3,
                1,
            ),
            (
                "maxUnavailable 30% of 5",
                None,
                Some(IntOrString::String("30%".into())),
                5,
                2,
            ),
            ("no pods", None, Some(IntOrString::Int(1)), 0, 0),
        ];
        for (name, min, max, pods, want) in cases {
            let running: Vec<Pod> = (0..pods)
                .map(|i| pod(&format!("p{i}"), Some("foo")))
                .chain([pod("other", Some("baz")), pod("plain", None)])
                .collect();
            let budgets = SimulatedBudgets::new(&[budget("foo", min, max)], &running);
            assert_eq!(allowed(&budgets), vec![want], "{name}");
        }
    }

    #[test]
    fn bindings_and_evictions_change_the_computed_status() {
        let running = [pod("a", Some("foo")), pod("b", Some("foo"))];
        let mut budgets =
            SimulatedBudgets::new(&[budget("foo", Some(IntOrString::Int(1)), None)], &running);
        assert_eq!(allowed(&budgets), vec![1]);
        budgets.bound(&pod("c", Some("foo")));
        assert_eq!(allowed(&budgets), vec![2]);
        budgets.evicted(&running[0]);
        budgets.evicted(&running[1]);
        assert_eq!(allowed(&budgets), vec![0]);
    }

    #[test]
    fn a_given_status_is_kept_and_used_up_by_evictions() {
        let mut given = budget("foo", Some(IntOrString::Int(1)), None);
        given.status = Some(PodDisruptionBudgetStatus {
            current_healthy: Some(3),
            desired_healthy: Some(1),
            disruptions_allowed: Some(2),
            expected_pods: Some(3),
            ..Default::default()
        });
        let running = [pod("a", Some("foo"))];
        let mut budgets = SimulatedBudgets::new(&[given], &running);
        assert_eq!(allowed(&budgets), vec![2]);
        budgets.evicted(&pod("x", Some("baz")));
        assert_eq!(allowed(&budgets), vec![2]);
        budgets.evicted(&running[0]);
        assert_eq!(allowed(&budgets), vec![1]);
    }
}
