//! Preemption's dry run (upstream `SelectVictimsOnNode`, `DryRunPreemption` and
//! `Evaluator.Preempt` up to the choice of a node): on each candidate node, remove every
//! victim of lower priority, check that the preemptor fits, then give victims back
//! greedily (most important first, PodDisruptionBudget-violating ones before the others)
//! while it still fits. What could not be given back are the node's victims. Victims are
//! units ([`crate::framework::victim_units`]): a pod of a PodGroup evicted whole takes
//! the whole group along, wherever its members run.
//!
//! Everything runs on clones of the cycle state and of the node: the cluster is not
//! touched. Filter runs as in the Filter phase, nominated pods included, and PreFilter's
//! RemovePod/AddPod keep the plugins' per-cycle state in step with the pods removed and
//! given back.

use std::sync::Arc;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::cluster::{NodeInfo, PodGroupStates, PodInfo, Snapshot};
use crate::framework::victim_units::{VictimUnit, importance, split_by_budgets, units_on};
use crate::framework::{Code, CycleState, FilterRunner, NodeToStatus, Status};

use super::{Candidate, CandidateList, DefaultPreemptionArgs, num_candidates, visiting_order};

/// The status of a node without lower-priority pods.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// The status of the nodes preemption does not try.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// Where the dry run learns how victims group (GenericWorkload): the Workload API's pod
/// groups, and the snapshot, which holds a group's members on other nodes. Without it,
/// every pod is a victim of its own at its own priority.
#[derive(Clone, Copy)]
pub struct Grouping<'a> {
    pub states: &'a PodGroupStates,
    pub snapshot: &'a Snapshot,
}

/// What weighs on the choice of victims: the budgets, and how victims group.
#[derive(Clone, Copy)]
pub struct Rules<'a> {
    pub budgets: &'a [PodDisruptionBudget],
    pub grouping: Option<Grouping<'a>>,
}

/// The victims on `node` that would let `pod` fit, with how many of them violate a
/// PodDisruptionBudget; the node's status when none would. Victims go by units
/// ([`VictimUnit`]): a PodGroup evicted whole brings its members on other nodes, whose
/// nodes see the change only through PreFilter's RemovePod/AddPod (upstream changes only
/// the main node's info; Filter runs on it alone).
pub fn select_victims_on_node(
    fwk: &dyn FilterRunner,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    rules: Rules<'_>,
) -> Result<(Vec<Arc<PodInfo>>, i64), Status> {
    let Rules { budgets, grouping } = rules;
    let mut state = state.clone();
    let mut node = node.clone();
    let units = match grouping {
        Some(g) => units_on([&node], g.states, g.snapshot),
        None => node
            .pods
            .iter()
            .map(|p| VictimUnit::new(vec![p.clone()], p.priority(), false))
            .collect(),
    };
    let potential: Vec<VictimUnit> = units
        .into_iter()
        .filter(|u| u.priority < pod.priority())
        .collect();
    if potential.is_empty() {
        return Err(Status::unresolvable(NO_VICTIMS));
    }
    let remote = |victim: &PodInfo| {
        grouping.and_then(|g| victim.node_name().and_then(|n| g.snapshot.get(n)).cloned())
    };
    for unit in &potential {
        move_unit(fwk, &mut state, pod, &mut node, unit, &remote, false)?;
    }
    let status = fwk.filter_with_nominated_pods(&state, pod, &node);
    if !status.is_success() {
        return Err(status);
    }
    let mut sorted = potential;
    sorted.sort_by(importance);
    let (violating, non_violating) = split_by_budgets(sorted, budgets);
    let both = !violating.is_empty() && !non_violating.is_empty();
    let mut victims: Vec<VictimUnit> = Vec::new();
    let mut num_violating = 0;
    for (violations, unit) in violating
        .into_iter()
        .map(|(u, count)| (count, u))
        .chain(non_violating.into_iter().map(|u| (0, u)))
    {
        move_unit(fwk, &mut state, pod, &mut node, &unit, &remote, true)?;
        if fwk
            .filter_with_nominated_pods(&state, pod, &node)
            .is_success()
        {
            continue;
        }
        move_unit(fwk, &mut state, pod, &mut node, &unit, &remote, false)?;
        num_violating += violations as i64;
        victims.push(unit);
    }
    if both {
        victims.sort_by(importance);
    }
    Ok((
        victims.into_iter().flat_map(|u| u.pods).collect(),
        num_violating,
    ))
}

/// Takes `unit` off `node` (its pods there) and out of the cycle state (all its pods),
/// or, with `back`, gives it back.
fn move_unit(
    fwk: &dyn FilterRunner,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &mut NodeInfo,
    unit: &VictimUnit,
    remote: &dyn Fn(&PodInfo) -> Option<Arc<NodeInfo>>,
    back: bool,
) -> Result<(), Status> {
    let change = |state: &mut CycleState, victim: &PodInfo, on: &NodeInfo| {
        if back {
            fwk.pre_filter_add_pod(state, pod, victim, on)
        } else {
            fwk.pre_filter_remove_pod(state, pod, victim, on)
        }
    };
    for victim in &unit.pods {
        let status = if victim.node_name() == Some(node.name()) {
            if back {
                node.add_pod(victim.clone());
            } else {
                node.remove_pod(victim.key());
            }
            change(state, victim, node)
        } else if let Some(other) = remote(victim) {
            change(state, victim, &other)
        } else {
            continue;
        };
        if !status.is_success() {
            return Err(status);
        }
    }
    Ok(())
}

/// What the dry run found: candidates (PDB-clean ones first) and the status of every node
/// it tried without finding one.
#[derive(Debug, Default)]
pub struct DryRun {
    pub candidates: Vec<Candidate>,
    pub statuses: NodeToStatus,
    /// Errors (not rejections) met on the way, reported only when no candidate was found.
    pub errors: Vec<Status>,
}

/// Upstream `DryRunPreemption`: tries the potential nodes in rotation from `offset` until
/// enough candidates are found (see [`CandidateList`]).
pub fn dry_run(
    fwk: &dyn FilterRunner,
    state: &CycleState,
    pod: &PodInfo,
    potential: &[Arc<NodeInfo>],
    rules: Rules<'_>,
    args: &DefaultPreemptionArgs,
    offset: usize,
) -> DryRun {
    let n = potential.len();
    let mut found = CandidateList::new(num_candidates(n, args));
    let mut run = DryRun::default();
    for index in visiting_order(n, offset) {
        let node = &potential[index];
        match select_victims_on_node(fwk, state, pod, node, rules) {
            Ok((victims, _)) if victims.is_empty() => {
                let status = Status::error(format!(
                    "expected at least one victim pod on node {:?}",
                    node.name()
                ));
                run.statuses
                    .statuses
                    .insert(node.name().to_string(), status.clone());
                run.errors.push(status);
            }
            Ok((victims, violations)) => {
                let candidate = Candidate {
                    node: node.name().to_string(),
                    victims: victims.iter().map(|v| v.pod.clone()).collect(),
                    num_pdb_violations: violations,
                };
                if found.add(candidate) {
                    break;
                }
            }
            Err(status) => {
                if status.code() == Code::Error {
                    run.errors.push(status.clone());
                }
                run.statuses
                    .statuses
                    .insert(node.name().to_string(), status);
            }
        }
    }
    run.candidates = found.into_candidates();
    run
}

/// The nodes preemption may help on: those Filter rejected as Unschedulable (never
/// UnschedulableAndUnresolvable ones), in snapshot order.
pub fn potential_nodes(snapshot: &Snapshot, statuses: &NodeToStatus) -> Vec<Arc<NodeInfo>> {
    snapshot
        .nodes()
        .iter()
        .filter(|n| {
            statuses
                .get(n.name())
                .is_some_and(|s| s.code() == Code::Unschedulable)
        })
        .cloned()
        .collect()
}

/// upstream's FitError message over `num_all_nodes`: the reasons of the nodes in
/// `statuses`, the others counted as [`NOT_HELPFUL`].
pub fn fit_error_message(num_all_nodes: usize, statuses: &NodeToStatus) -> String {
    let statuses = NodeToStatus {
        statuses: statuses.statuses.clone(),
        absent: Some(Status::unresolvable(NOT_HELPFUL)),
    };
    format!(
        "0/{num_all_nodes} nodes are available: {}.",
        statuses.reason_histogram(num_all_nodes).join(", ")
    )
}
