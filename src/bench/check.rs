//! The check of a run's result: what the workload's constraints promise about where its
//! pods end up. A profile that breaks a constraint (say, InterPodAffinity disabled for
//! the anti-affinity workload) makes its check fail. GangScheduling's promise is on its
//! gangs: each is bound whole or not at all ([`partly_bound_gangs`]).
//!
//! The DRA workloads are checked on their claims as well ([`check_devices`]): no device
//! is held by two claims at once, and a pod's claim is allocated, reserved for it and
//! holds devices of the pod's node only. In a steady-state run pods come and go, so the
//! claims are recorded in batches: the pods bound in one pass of the driver held their
//! devices together with the init claims, which hold theirs throughout.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::cases::{Case, CaseTemplate, NAMED_NODE};
use super::workload::{
    HOSTNAME_KEY, NODE_AFFINITY_ZONES, PodTemplate, SPREAD_MAX_SKEW, Workload, ZONE_KEY,
    extended_resource_node_name,
};
use crate::dra::allocator::DeviceId;

/// Where one pod of the run went.
#[derive(Debug, Clone)]
pub struct Placement {
    pub template: PodTemplate,
    /// Measured (true) or init pod.
    pub measured: bool,
    /// The pod's index in its `createPods` op.
    pub index: u64,
    /// The node the pod is on, or `None` when it was not scheduled.
    pub node: Option<String>,
}

/// What one claim held, for [`check_devices`].
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// `namespace/name` of the claim, or of its pod when the claim is missing.
    pub claim: String,
    /// The node of the pod the claim was made for; `None` for a claim allocated without
    /// a pod.
    pub pod_node: Option<String>,
    /// What is wrong with the claim itself (missing, not allocated, not reserved for its
    /// pod), if anything.
    pub problem: Option<String>,
    /// The devices it holds, each with the node of the ResourceSlice it is published in
    /// (`None` for a device no slice of a node publishes).
    pub devices: Vec<(DeviceId, Option<String>)>,
}

/// Failures of the claims: `fixed` held their devices for the whole run, and the claims of
/// each of `batches` at the same time as `fixed`. No device may be held twice at once, a
/// pod's claim must be usable (see [`Held::problem`]) and hold devices of its pod's node
/// only. At most a few examples are named per kind of failure.
pub fn check_devices(fixed: &[Held], batches: &[Vec<Held>]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut elsewhere = Vec::new();
    let mut twice = Vec::new();
    let mut fixed_devices: HashMap<&DeviceId, &str> = HashMap::new();
    let mut judge = |held: &Held| {
        if let Some(problem) = &held.problem {
            problems.push(format!("{}: {problem}", held.claim));
        }
        if let Some(node) = &held.pod_node {
            for (device, device_node) in &held.devices {
                if device_node.as_deref() != Some(node.as_str()) {
                    elsewhere.push(format!(
                        "{} (pod on {node}) holds {device} of node {}",
                        held.claim,
                        device_node.as_deref().unwrap_or("none")
                    ));
                }
            }
        }
    };
    for held in fixed {
        judge(held);
        for (device, _) in &held.devices {
            if let Some(other) = fixed_devices.insert(device, &held.claim) {
                twice.push(format!("{device} ({other} and {})", held.claim));
            }
        }
    }
    for batch in batches {
        let mut taken: HashMap<&DeviceId, &str> = HashMap::new();
        for held in batch {
            judge(held);
            for (device, _) in &held.devices {
                let other = fixed_devices
                    .get(device)
                    .copied()
                    .or_else(|| taken.insert(device, &held.claim));
                if let Some(other) = other {
                    twice.push(format!("{device} ({other} and {})", held.claim));
                }
            }
        }
    }
    let mut failures = Vec::new();
    let mut report = |what: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            failures.push(format!(
                "{} {what}: {}",
                lines.len(),
                lines.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
            ));
        }
    };
    report("claims unusable by their pod", problems);
    report("devices on another node than their pod", elsewhere);
    report("devices allocated twice at once", twice);
    failures
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
    if let Workload::SteadyStateClusterResourceClaimTemplate(_) = workload {
        // Pods still pending when the window closed are not failures, as upstream's
        // steady state ignores them; a window without any bind is.
        if scheduled == 0 {
            failures.push("no pod at all got scheduled in the steady-state window".to_string());
        }
    } else if scheduled < measured.len() as u64 {
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
        Workload::SchedulingWithExtendedResource => {
            // Only node i has the extended resource pod i requests.
            let misplaced: Vec<String> = measured
                .iter()
                .filter_map(|p| {
                    let node = p.node.as_deref()?;
                    (node != extended_resource_node_name(p.index))
                        .then(|| format!("pod {} on {node}", p.index))
                })
                .collect();
            if !misplaced.is_empty() {
                failures.push(format!(
                    "{} pods are not on the one node with their extended resource: {}",
                    misplaced.len(),
                    misplaced
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        Workload::GangScheduling(_) => failures.extend(partly_bound_gangs(&measured)),
        Workload::Case(w) => failures.extend(case_failures(w.case, placements)),
        // Their promises are on claims: check_devices.
        Workload::SchedulingWithResourceClaimTemplate
        | Workload::SteadyStateClusterResourceClaimTemplate(_) => {}
        Workload::SchedulingBasic
        | Workload::SchedulingPreferredPodAffinity
        | Workload::SchedulingPreferredPodAntiAffinity
        | Workload::BasicScheduling(_) => {}
    }
    Check {
        passed: failures.is_empty(),
        scheduled,
        measured: measured.len() as u64,
        failures,
    }
}

/// What the test cases of [`super::cases`] promise: SchedulingDaemonset's pods all on
/// the one node their affinity names; gated pods never scheduled; the `batching/` test
/// cases' pods one per node (host port 80, or 3 of a node's 4 CPUs).
fn case_failures(case: Case, placements: &[Placement]) -> Vec<String> {
    let mut failures = Vec::new();
    match case {
        Case::SchedulingDaemonset => {
            let elsewhere = placements
                .iter()
                .filter(|p| p.node.as_deref().is_some_and(|n| n != NAMED_NODE))
                .count();
            if elsewhere > 0 {
                failures.push(format!(
                    "{elsewhere} pods are on another node than {NAMED_NODE}, the only one \
                     their required node affinity admits"
                ));
            }
        }
        Case::SchedulingWhileGated => {
            let gated = placements
                .iter()
                .filter(|p| p.template == PodTemplate::Case(CaseTemplate::Gated))
                .filter(|p| p.node.is_some())
                .count();
            if gated > 0 {
                failures.push(format!(
                    "{gated} gated pods were scheduled; a pod with a scheduling gate never is"
                ));
            }
        }
        Case::HostPortConflict | Case::ResourceSaturation => {
            let mut per_node: BTreeMap<&str, u64> = BTreeMap::new();
            for node in placements.iter().filter_map(|p| p.node.as_deref()) {
                *per_node.entry(node).or_default() += 1;
            }
            let crowded = per_node.values().filter(|count| **count > 1).count();
            if crowded > 0 {
                let why = match case {
                    Case::HostPortConflict => "host port 80",
                    _ => "3 CPUs each, nodes have 4",
                };
                failures.push(format!(
                    "{crowded} nodes hold more than one pod ({why}: one per node)"
                ));
            }
        }
        Case::PreemptionAsync
        | Case::Unschedulable
        | Case::SchedulingWithMixedChurn
        | Case::SchedulingDeletedPodsWithFinalizers => {}
    }
    failures
}

/// The gangs among `measured` of which some members were scheduled and others not, as
/// one failure line naming a few of them; `None` when every gang is bound whole or not at
/// all. (Members left pending fail the check anyway; this says a gang was split.)
fn partly_bound_gangs(measured: &[&Placement]) -> Option<String> {
    // Per gang, in index order: its name, members scheduled, members.
    let mut gangs: BTreeMap<u64, (String, u64, u64)> = BTreeMap::new();
    for placement in measured {
        let PodTemplate::GroupMember { per_group, .. } = placement.template else {
            continue;
        };
        let Some(name) = placement.template.group_of(placement.index) else {
            continue;
        };
        let gang = gangs
            .entry(placement.index / per_group.max(1))
            .or_insert((name, 0, 0));
        gang.2 += 1;
        if placement.node.is_some() {
            gang.1 += 1;
        }
    }
    let split: Vec<String> = gangs
        .values()
        .filter(|(_, scheduled, members)| *scheduled > 0 && scheduled < members)
        .map(|(name, scheduled, members)| format!("{name} ({scheduled} of {members})"))
        .collect();
    (!split.is_empty()).then(|| {
        format!(
            "a gang is bound whole or not at all; {} gangs have only some members bound: {}",
            split.len(),
            split.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        )
    })
}

impl Check {
    /// The check with more `failures`.
    pub fn with_failures(mut self, failures: Vec<String>) -> Check {
        self.failures.extend(failures);
        self.passed = self.failures.is_empty();
        self
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
            index: 0,
            node: node.map(str::to_string),
        }
    }

    fn at(index: u64, node: Option<String>) -> Placement {
        Placement {
            template: PodTemplate::ExtendedResource,
            measured: true,
            index,
            node,
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
            (
                "pod i on node i passes",
                Workload::SchedulingWithExtendedResource,
                (0..3)
                    .map(|i| at(i, Some(extended_resource_node_name(i))))
                    .collect(),
                true,
            ),
            (
                "pod 1 on node 2 fails",
                Workload::SchedulingWithExtendedResource,
                vec![
                    at(0, Some(extended_resource_node_name(0))),
                    at(1, Some(extended_resource_node_name(2))),
                ],
                false,
            ),
            (
                "steady state: pods left pending pass",
                Workload::SteadyStateClusterResourceClaimTemplate(
                    crate::bench::workload::Utilization::Full,
                ),
                vec![
                    on(T::ClaimTemplate, true, Some("n0")),
                    on(T::ClaimTemplate, true, None),
                ],
                true,
            ),
            (
                "steady state: no pod bound fails",
                Workload::SteadyStateClusterResourceClaimTemplate(
                    crate::bench::workload::Utilization::Empty,
                ),
                vec![on(T::ClaimTemplate, true, None)],
                false,
            ),
            (
                "burst: a pod left pending fails",
                Workload::SchedulingWithResourceClaimTemplate,
                vec![
                    on(T::ClaimTemplate, true, Some("n0")),
                    on(T::ClaimTemplate, true, None),
                ],
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

    #[test]
    fn gangs_are_bound_whole_or_not_at_all() {
        use crate::bench::workload::{GroupPolicy, GroupScale};
        // Two groups of three: `bound` says which of the six pods got a node.
        let members = |policy: GroupPolicy, bound: [bool; 6]| -> Vec<Placement> {
            let template = PodTemplate::GroupMember {
                policy,
                per_group: 3,
            };
            (0..6)
                .map(|index| Placement {
                    template,
                    measured: true,
                    index,
                    node: bound[index as usize].then(|| "n0".to_string()),
                })
                .collect()
        };
        let gang = Workload::GangScheduling(GroupScale::Nodes10);
        let basic = Workload::BasicScheduling(GroupScale::Nodes10);
        let pending = |n: usize| format!("{n} of 6 measured pods were not scheduled");
        let split = "a gang is bound whole or not at all; 1 gangs have only some members \
                     bound: gang-1 (2 of 3)";
        let cases = [
            (
                "both gangs bound whole",
                gang,
                members(GroupPolicy::Gang, [true; 6]),
                vec![],
            ),
            (
                "a gang left whole pending is only pending",
                gang,
                members(GroupPolicy::Gang, [true, true, true, false, false, false]),
                vec![pending(3)],
            ),
            (
                "a gang bound in part is split",
                gang,
                members(GroupPolicy::Gang, [true, true, true, true, false, true]),
                vec![pending(1), split.to_string()],
            ),
            (
                "a basic group bound in part is only pending",
                basic,
                members(GroupPolicy::Basic, [true, true, true, true, false, true]),
                vec![pending(1)],
            ),
        ];
        for (name, workload, placements, want) in cases {
            let got = check(workload, &placements, &nodes(&["a"]));
            assert_eq!(got.failures, want, "{name}");
        }
    }

    fn device(node: u64, k: u64) -> (DeviceId, Option<String>) {
        (
            DeviceId {
                driver: "d".into(),
                pool: format!("resourceslice-{node}"),
                device: format!("basic-device-{k}"),
            },
            Some(format!("scheduler-perf-dra-{node}")),
        )
    }

    fn held(claim: &str, pod_node: Option<u64>, devices: &[(u64, u64)]) -> Held {
        Held {
            claim: claim.to_string(),
            pod_node: pod_node.map(|n| format!("scheduler-perf-dra-{n}")),
            problem: None,
            devices: devices.iter().map(|&(n, k)| device(n, k)).collect(),
        }
    }

    #[test]
    fn device_checks() {
        let init = vec![
            held("init/a", None, &[(0, 0)]),
            held("init/b", None, &[(1, 0)]),
        ];
        /// Name, the claims held throughout, the batches, the failures' beginnings.
        type Case = (
            &'static str,
            Vec<Held>,
            Vec<Vec<Held>>,
            &'static [&'static str],
        );
        let cases: Vec<Case> = vec![
            (
                "distinct devices on the pods' nodes pass",
                init.clone(),
                vec![vec![held("test/p0", Some(0), &[(0, 1)])]],
                &[],
            ),
            (
                "a device freed and taken again in a later batch passes",
                init.clone(),
                vec![
                    vec![held("test/p0", Some(0), &[(0, 1)])],
                    vec![held("test/p1", Some(0), &[(0, 1)])],
                ],
                &[],
            ),
            (
                "two pods of one batch on one device fail",
                init.clone(),
                vec![vec![
                    held("test/p0", Some(0), &[(0, 1)]),
                    held("test/p1", Some(0), &[(0, 1)]),
                ]],
                &["1 devices allocated twice at once"],
            ),
            (
                "a pod on an init claim's device fails",
                init.clone(),
                vec![vec![held("test/p0", Some(1), &[(1, 0)])]],
                &["1 devices allocated twice at once"],
            ),
            (
                "two init claims on one device fail",
                vec![
                    held("init/a", None, &[(0, 0)]),
                    held("init/b", None, &[(0, 0)]),
                ],
                vec![],
                &["1 devices allocated twice at once"],
            ),
            (
                "a device of another node fails",
                init.clone(),
                vec![vec![held("test/p0", Some(1), &[(0, 1)])]],
                &["1 devices on another node than their pod"],
            ),
            (
                "an unusable claim fails",
                init.clone(),
                vec![vec![Held {
                    problem: Some("not allocated".into()),
                    ..held("test/p0", Some(0), &[])
                }]],
                &["1 claims unusable by their pod: test/p0: not allocated"],
            ),
        ];
        for (name, fixed, batches, want) in cases {
            let got = check_devices(&fixed, &batches);
            assert_eq!(got.len(), want.len(), "{name}: {got:?}");
            for (got, want) in got.iter().zip(want) {
                assert!(got.starts_with(want), "{name}: {got}");
            }
        }
    }
}
