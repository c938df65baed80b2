//! The check of a run's result: what the workload's constraints promise about where its
//! pods end up. A profile that breaks a constraint (say, InterPodAffinity disabled for
//! the anti-affinity workload) makes its check fail.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::workload::{
    HOSTNAME_KEY, NODE_AFFINITY_ZONES, PodTemplate, SPREAD_MAX_SKEW, Workload, ZONE_KEY,
};

/// Where one pod of the run went.
#[derive(Debug, Clone)]
pub struct Placement {
    pub template: PodTemplate,
    /// Measured (true) or init pod.
    pub measured: bool,
    /// The node the pod is on, or `None` when it was not scheduled.
    pub node: Option<String>,
}

/// The verdict on a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub passed: bool,
    /// Measured pods that were scheduled.
    pub scheduled: u64,
    pub measured: u64,
    /// One line per broken promise; empty when the check passed.
    pub failures: Vec<String>,
}

/// Checks `placements` against the promises of `workload`; `node_labels` holds every
/// node's labels by name.
pub fn check(
    workload: Workload,
    placements: &[Placement],
    node_labels: &HashMap<String, BTreeMap<String, String>>,
) -> Check {
    let measured: Vec<&Placement> = placements.iter().filter(|p| p.measured).collect();
    let scheduled = measured.iter().filter(|p| p.node.is_some()).count() as u64;
    let mut failures = Vec::new();
    if scheduled < measured.len() as u64 {
        failures.push(format!(
            "{} of {} measured pods were not scheduled",
            measured.len() as u64 - scheduled,
            measured.len()
        ));
    }
    let label = |node: &str, key: &str| {
        node_labels
            .get(node)
            .and_then(|labels| labels.get(key))
            .cloned()
    };
    // Pods of the template whose constraint is checked, with the node each is on.
    let constrained = |template: PodTemplate| -> Vec<&str> {
        placements
            .iter()
            .filter(|p| p.template == template)
            .filter_map(|p| p.node.as_deref())
            .collect()
    };
    match workload {
        Workload::TopologySpreading | Workload::PreferredTopologySpreading => {
            let template = placements
                .iter()
                .find(|p| p.measured)
                .map_or(PodTemplate::TopologySpreading, |p| p.template);
            let mut per_zone: BTreeMap<String, u64> = node_labels
                .values()
                .filter_map(|labels| labels.get(ZONE_KEY).cloned())
                .map(|zone| (zone, 0))
                .collect();
            for node in constrained(template) {
                if let Some(zone) = label(node, ZONE_KEY) {
                    *per_zone.entry(zone).or_default() += 1;
                }
            }
            let max = per_zone.values().max().copied().unwrap_or(0);
            let min = per_zone.values().min().copied().unwrap_or(0);
            if max - min > SPREAD_MAX_SKEW as u64 {
                failures.push(format!(
                    "skew over {ZONE_KEY} is {} (maxSkew {SPREAD_MAX_SKEW}): {per_zone:?}",
                    max - min
                ));
            }
        }
        Workload::SchedulingPodAntiAffinity => {
            let mut per_node: BTreeMap<&str, u64> = BTreeMap::new();
            for node in constrained(PodTemplate::PodAntiAffinity) {
                *per_node.entry(node).or_default() += 1;
            }
            let crowded: Vec<String> = per_node
                .iter()
                .filter(|(_, count)| **count > 1)
                .map(|(node, count)| format!("{node} ({count})"))
                .collect();
            if !crowded.is_empty() {
                failures.push(format!(
                    "required anti-affinity over {HOSTNAME_KEY} allows one pod per node; {} \
                     nodes hold more: {}",
                    crowded.len(),
                    crowded
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        Workload::SchedulingPodAffinity => {
            let mut zones: Vec<String> = constrained(PodTemplate::PodAffinity)
                .into_iter()
                .map(|node| label(node, ZONE_KEY).unwrap_or_default())
                .collect();
            zones.sort();
            zones.dedup();
            if zones.len() > 1 {
                failures.push(format!(
                    "required affinity over {ZONE_KEY} keeps the pods in one zone; they are \
                     in {zones:?}"
                ));
            }
        }
        Workload::SchedulingNodeAffinity => {
            let outside = constrained(PodTemplate::NodeAffinity)
                .into_iter()
                .filter(|node| {
                    !label(node, ZONE_KEY)
                        .is_some_and(|z| NODE_AFFINITY_ZONES.contains(&z.as_str()))
                })
                .count();
            if outside > 0 {
                failures.push(format!(
                    "{outside} pods are on nodes outside the zones their node affinity \
                     requires ({NODE_AFFINITY_ZONES:?})"
                ));
            }
        }
        Workload::PreemptionBasic => {
            // Two high-priority pods (3 CPUs each) never fit one 4-CPU node: each must
            // have preempted on a node of its own.
            let mut per_node: BTreeMap<&str, u64> = BTreeMap::new();
            for node in constrained(PodTemplate::HighPriority) {
                *per_node.entry(node).or_default() += 1;
            }
            let crowded = per_node.values().filter(|count| **count > 1).count();
            if crowded > 0 {
                failures.push(format!(
                    "{crowded} nodes hold more than one high-priority pod (3 CPUs each, \
                     nodes have 4)"
                ));
            }
        }
        Workload::SchedulingBasic
        | Workload::SchedulingPreferredPodAffinity
        | Workload::SchedulingPreferredPodAntiAffinity => {}
    }
    Check {
        passed: failures.is_empty(),
        scheduled,
        measured: measured.len() as u64,
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(zones: &[&str]) -> HashMap<String, BTreeMap<String, String>> {
        zones
            .iter()
            .enumerate()
            .map(|(i, zone)| {
                let name = format!("n{i}");
                let labels = BTreeMap::from([
                    (HOSTNAME_KEY.to_string(), name.clone()),
                    (ZONE_KEY.to_string(), zone.to_string()),
                ]);
                (name, labels)
            })
            .collect()
    }

    fn on(template: PodTemplate, measured: bool, node: Option<&str>) -> Placement {
        Placement {
            template,
            measured,
            node: node.map(str::to_string),
        }
    }

    #[test]
    fn checks() {
        use PodTemplate as T;
        let three_zones = nodes(&["a", "b", "c"]);
        let spread = |counts: [usize; 3]| -> Vec<Placement> {
            counts
                .iter()
                .enumerate()
                .flat_map(|(i, n)| {
                    std::iter::repeat_with(move || {
                        on(T::TopologySpreading, true, Some(["n0", "n1", "n2"][i]))
                    })
                    .take(*n)
                })
                .collect()
        };
        let cases: Vec<(&str, Workload, Vec<Placement>, bool)> = vec![
            (
                "all scheduled",
                Workload::SchedulingBasic,
                vec![
                    on(T::Default, true, Some("n0")),
                    on(T::Default, false, Some("n0")),
                ],
                true,
            ),
            (
                "a measured pod left pending fails",
                Workload::SchedulingBasic,
                vec![on(T::Default, true, Some("n0")), on(T::Default, true, None)],
                false,
            ),
            (
                "an unscheduled init pod is not the measured pods' failure",
                Workload::SchedulingBasic,
                vec![
                    on(T::Default, true, Some("n0")),
                    on(T::Default, false, None),
                ],
                true,
            ),
            (
                "skew of maxSkew passes",
                Workload::TopologySpreading,
                spread([5, 0, 3]),
                true,
            ),
            (
                "skew above maxSkew fails",
                Workload::TopologySpreading,
                spread([6, 0, 3]),
                false,
            ),
            (
                "one anti-affinity pod per node passes",
                Workload::SchedulingPodAntiAffinity,
                vec![
                    on(T::PodAntiAffinity, false, Some("n0")),
                    on(T::PodAntiAffinity, true, Some("n1")),
                ],
                true,
            ),
            (
                "an init and a measured pod sharing a node fail",
                Workload::SchedulingPodAntiAffinity,
                vec![
                    on(T::PodAntiAffinity, false, Some("n0")),
                    on(T::PodAntiAffinity, true, Some("n0")),
                ],
                false,
            ),
            (
                "affinity pods in two zones fail",
                Workload::SchedulingPodAffinity,
                vec![
                    on(T::PodAffinity, false, Some("n0")),
                    on(T::PodAffinity, true, Some("n1")),
                ],
                false,
            ),
            (
                "node affinity outside zone1 and zone2 fails",
                Workload::SchedulingNodeAffinity,
                vec![on(T::NodeAffinity, true, Some("n2"))],
                false,
            ),
        ];
        let node_affinity_nodes = nodes(&["zone1", "zone2", "zone3"]);
        for (name, workload, placements, passed) in cases {
            let labels = if workload == Workload::SchedulingNodeAffinity {
                &node_affinity_nodes
            } else {
                &three_zones
            };
            let got = check(workload, &placements, labels);
            assert_eq!(got.passed, passed, "{name}: {:?}", got.failures);
            assert_eq!(got.failures.is_empty(), passed, "{name}");
        }
    }
}
