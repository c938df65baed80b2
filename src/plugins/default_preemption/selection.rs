//! Choosing the node to preempt on among the dry run's candidates (upstream
//! `SelectCandidate` and `pickOneNodeForPreemption`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::{StartTime, start_time};

use super::eligibility::pod_priority;

/// A node where the preemptor fits once `victims` are evicted.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub node: String,
    /// Most important first, as the dry run returns them.
    pub victims: Vec<Arc<Pod>>,
    /// How many of the victims a PodDisruptionBudget does not allow to evict.
    pub num_pdb_violations: i64,
}

/// The candidate to preempt on: the only one, or the one
/// [`pick_one_node_for_preemption`] prefers; `None` without candidates.
pub fn select_candidate(candidates: &[Candidate]) -> Option<&Candidate> {
    match candidates {
        [] => None,
        [only] => Some(only),
        _ => pick_one_node_for_preemption(candidates).map(|i| &candidates[i]),
    }
}

/// The index of the candidate upstream's criteria prefer, each criterion deciding only
/// among the candidates that tie on the ones before it:
///
/// 1. the fewest PodDisruptionBudget violations;
/// 2. the lowest priority of the most important victim;
/// 3. the smallest sum of victim priorities, each shifted by 2^31 so that every victim
///    adds a positive amount (two pods of priority -100 weigh more than one);
/// 4. the fewest victims;
/// 5. the latest start among the victims of the highest victim priority, taking the
///    earliest of those per node (evict the pods that have run for the shortest time).
///
/// Candidates that tie on all of them: the first, in the order given. A candidate without
/// victims (which the dry run never returns) needs no eviction and wins at once.
pub fn pick_one_node_for_preemption(candidates: &[Candidate]) -> Option<usize> {
    if candidates.is_empty() {
        return None;
    }
    if let Some(free) = candidates.iter().position(|c| c.victims.is_empty()) {
        return Some(free);
    }
    let criteria: [fn(&Candidate) -> i128; 5] = [
        |c| -i128::from(c.num_pdb_violations),
        |c| -i128::from(highest_victim_priority(c)),
        |c| -victims(c).map(shifted_priority).sum::<i128>(),
        |c| -(c.victims.len() as i128),
        |c| start_score(earliest_start_of_most_important(c)),
    ];
    let mut remaining: Vec<usize> = (0..candidates.len()).collect();
    for score in criteria {
        let scores: Vec<i128> = remaining.iter().map(|&i| score(&candidates[i])).collect();
        let Some(&best) = scores.iter().max() else {
            break;
        };
        remaining = remaining
            .into_iter()
            .zip(scores)
            .filter(|&(_, s)| s == best)
            .map(|(i, _)| i)
            .collect();
        if remaining.len() == 1 {
            break;
        }
    }
    remaining.first().copied()
}

fn victims(candidate: &Candidate) -> impl Iterator<Item = &Pod> {
    candidate.victims.iter().map(|v| v.as_ref())
}

/// The highest victim priority. Victims come most important first, so this is the first
/// victim's (upstream reads `victims[0]`); the maximum does not depend on that order.
fn highest_victim_priority(candidate: &Candidate) -> i32 {
    victims(candidate)
        .map(pod_priority)
        .max()
        .unwrap_or(i32::MIN)
}

/// A priority plus 2^31 (upstream adds `MaxInt32 + 1`): never negative.
fn shifted_priority(pod: &Pod) -> i128 {
    i128::from(pod_priority(pod)) + (1 << 31)
}

/// Upstream `GetEarliestPodStartTime`: among the victims with the highest priority, the
/// earliest start.
fn earliest_start_of_most_important(candidate: &Candidate) -> Option<StartTime> {
    let highest = highest_victim_priority(candidate);
    victims(candidate)
        .filter(|v| pod_priority(v) == highest)
        .map(start_time)
        .min()
}

/// Later starts score higher; a pod without a start time counts as starting now, later
/// than any recorded start. No victims at all scores lowest.
fn start_score(start: Option<StartTime>) -> i128 {
    match start {
        Some(StartTime::At(at)) => at.as_nanosecond(),
        Some(StartTime::Unknown) => i128::MAX,
        None => i128::MIN,
    }
}
