//! Preemption's dry run (upstream `SelectVictimsOnNode`, `DryRunPreemption` and
//! `Evaluator.Preempt` up to the choice of a node): on each candidate node, remove every
//! pod of lower priority, check that the preemptor fits, then give pods back greedily
//! (most important first, PodDisruptionBudget-violating ones before the others) while it
//! still fits. What could not be given back are the node's victims.
//!
//! Everything runs on clones of the cycle state and of the node: the cluster is not
//! touched. Filter runs as in the Filter phase, nominated pods included, and PreFilter's
//! RemovePod/AddPod keep the plugins' per-cycle state in step with the pods removed and
//! given back.

use std::sync::Arc;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{Code, CycleState, FilterRunner, NodeToStatus, Status};

use super::{
    Candidate, CandidateList, DefaultPreemptionArgs, filter_pods_with_pdb_violation,
    num_candidates, sort_by_importance, visiting_order,
};

/// The status of a node without lower-priority pods.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// The status of the nodes preemption does not try.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// The victims on `node` that would let `pod` fit, with how many of them violate a
/// PodDisruptionBudget; the node's status when none would.
pub fn select_victims_on_node(
    fwk: &dyn FilterRunner,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    budgets: &[PodDisruptionBudget],
) -> Result<(Vec<Arc<PodInfo>>, i64), Status> {
    let mut state = state.clone();
    let mut node = node.clone();
    let potential: Vec<Arc<PodInfo>> = node
        .pods
        .iter()
        .filter(|p| p.priority() < pod.priority())
        .cloned()
        .collect();
    for victim in &potential {
        node.remove_pod(victim.key());
        let status = fwk.pre_filter_remove_pod(&mut state, pod, victim, &node);
        if !status.is_success() {
            return Err(status);
        }
    }
    if potential.is_empty() {
        return Err(Status::unresolvable(NO_VICTIMS));
    }
    let status = fwk.filter_with_nominated_pods(&state, pod, &node);
    if !status.is_success() {
        return Err(status);
    }
    let mut sorted = potential;
    sort_by_importance(&mut sorted);
    let (violating, non_violating) = filter_pods_with_pdb_violation(sorted, budgets);
    let both = !violating.is_empty() && !non_violating.is_empty();
    let mut victims = Vec::new();
    let mut num_violating = 0;
    for (is_violating, candidate) in violating
        .into_iter()
        .map(|p| (true, p))
        .chain(non_violating.into_iter().map(|p| (false, p)))
    {
        node.add_pod(candidate.clone());
        let status = fwk.pre_filter_add_pod(&mut state, pod, &candidate, &node);
        if !status.is_success() {
            return Err(status);
        }
        if fwk
            .filter_with_nominated_pods(&state, pod, &node)
            .is_success()
        {
            continue;
        }
        node.remove_pod(candidate.key());
        let status = fwk.pre_filter_remove_pod(&mut state, pod, &candidate, &node);
        if !status.is_success() {
            return Err(status);
        }
        if is_violating {
            num_violating += 1;
        }
        victims.push(candidate);
    }
    if both {
        sort_by_importance(&mut victims);
    }
    Ok((victims, num_violating))
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
    budgets: &[PodDisruptionBudget],
    args: &DefaultPreemptionArgs,
    offset: usize,
) -> DryRun {
    let n = potential.len();
    let mut found = CandidateList::new(num_candidates(n, args));
    let mut run = DryRun::default();
    for index in visiting_order(n, offset) {
        let node = &potential[index];
        match select_victims_on_node(fwk, state, pod, node, budgets) {
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
