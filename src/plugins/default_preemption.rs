//! DefaultPreemption: when no node fits a pod, find a node where evicting lower-priority
//! pods would make it fit, and nominate the pod there (upstream `defaultpreemption` and
//! the generic `preemption.Evaluator`).
//!
//! This module holds the parts of upstream's algorithm that need neither the framework nor
//! the API server, each matching its upstream counterpart:
//!
//! - [`DefaultPreemptionArgs`]: how many candidate nodes to look for, with upstream's
//!   defaults and validation.
//! - [`num_candidates`] and [`visiting_order`]: the sample of nodes the dry run tries,
//!   starting at a random offset so that successive preemptions spread over the cluster,
//!   and [`CandidateList`], which collects what the dry run finds and says when to stop.
//! - The order in which victims are kept (higher priority, then older) and their split by
//!   PodDisruptionBudget live in [`crate::framework::victim_units`], shared with the pod
//!   group's preemption: the dry run weighs units of eviction, and with Workload API
//!   PodGroups a pod counts at its group's priority and a group whose `disruptionMode` is
//!   `All` goes whole, as upstream's GenericWorkload preemption.
//! - [`selection`]: [`pick_one_node_for_preemption`], upstream's criteria for choosing
//!   among the candidates.
//! - [`eligibility`]: [`pod_eligible_to_preempt_others`], which refuses pods with
//!   `preemptionPolicy: Never` and pods whose earlier preemption is still evicting.
//!
//! - [`dry_run`]: upstream's `SelectVictimsOnNode` and `DryRunPreemption` on clones of the
//!   cycle state and the nodes, through the framework's Filter (nominated pods included)
//!   and PreFilter's RemovePod/AddPod ([`FilterRunner`]).
//! - [`DefaultPreemption`], the PostFilter: eligibility, the potential nodes (those Filter
//!   rejected as Unschedulable), the dry run from a seeded random offset, the choice of a
//!   node, and upstream's messages (`preemption: 0/3 nodes are available: ...`); a result
//!   that nominates the chosen node, or clears the nomination when no node can help.
//!
//! The plugin decides; it does not evict. Its result names the node and carries a
//! [`Preemption`]: the victims (pods held at Permit are rejected here, in memory, as
//! upstream does) and the lower-priority pods nominated to that node, whose nominations
//! the preemptor takes over. The scheduler hands the preemption to its adapter, which
//! carries it out off the scheduling loop (upstream's asynchronous preemption: the
//! `DisruptionTarget` condition, the deletion, the `Preempted` event live; an in-memory
//! eviction in `berth simulate`). Until the adapter reports the end, or the last victim
//! is seen leaving, the plugin's PreEnqueue keeps the preemptor out of activeQ with
//! upstream's `waiting for the preemption for this pod to be finished`.

pub mod dry_run;
pub mod eligibility;
pub mod selection;

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::{DisruptionBudgets, PodGroupStates, PodInfo, Snapshot, pod_key};
use crate::framework::nominator::status_nominated_node;
use crate::framework::victim_units::victim_priority;
use crate::framework::{
    ActionType, ClusterEvent, Code, CycleState, EventResource, FieldError, FilterRunner, Handle,
    NodeToStatus, Nominator, PluginArgs, PluginError, PostFilterPlugin, PostFilterResult,
    PreEnqueuePlugin, Preemption, Status, Victim, WaitingPods,
};

pub use eligibility::{
    ERR_PREEMPTION_POLICY_NEVER, ERR_TERMINATING_POD_ON_NOMINATED_NODE,
    pod_eligible_to_preempt_others, pod_priority,
};
pub use selection::{Candidate, pick_one_node_for_preemption, select_candidate};

/// The plugin's name in profiles (upstream `names.DefaultPreemption`).
pub const NAME: &str = "DefaultPreemption";

/// upstream's default `minCandidateNodesPercentage`.
pub const DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE: i32 = 10;

/// upstream's default `minCandidateNodesAbsolute`.
pub const DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE: i32 = 100;

/// Args of DefaultPreemption (upstream `DefaultPreemptionArgs`, v1 defaults).
///
/// The dry run stops once it has found `max(nodes * percentage / 100, absolute)`
/// candidates (at most all nodes) of which at least one violates no PodDisruptionBudget:
/// fewer candidates make preemption cheaper on large clusters, more make its choice better.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct DefaultPreemptionArgs {
    /// The share of the nodes, in percent, to find candidates on; 10 when omitted.
    #[schemars(range(min = 0, max = 100))]
    pub min_candidate_nodes_percentage: i32,
    /// The least number of candidates to find, whatever the percentage gives; 100 when
    /// omitted. Not both this and the percentage may be 0.
    #[schemars(range(min = 0))]
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs {
            min_candidate_nodes_percentage: DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
            min_candidate_nodes_absolute: DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
        }
    }
}

impl PluginArgs for DefaultPreemptionArgs {
    /// Upstream `ValidateDefaultPreemptionArgs`.
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let percentage_path = format!("{path}.minCandidateNodesPercentage");
        let absolute_path = format!("{path}.minCandidateNodesAbsolute");
        let (percentage, absolute) = (
            self.min_candidate_nodes_percentage,
            self.min_candidate_nodes_absolute,
        );
        let mut errors = Vec::new();
        if !(0..=100).contains(&percentage) {
            errors.push(FieldError::new(
                &percentage_path,
                percentage,
                "not in valid range [0, 100]",
            ));
        }
        if absolute < 0 {
            errors.push(FieldError::new(
                &absolute_path,
                absolute,
                "not in valid range [0, inf)",
            ));
        }
        if percentage == 0 && absolute == 0 {
            errors.push(FieldError::new(
                percentage_path,
                percentage,
                "cannot be zero at the same time as minCandidateNodesAbsolute",
            ));
            errors.push(FieldError::new(
                absolute_path,
                absolute,
                "cannot be zero at the same time as minCandidateNodesPercentage",
            ));
        }
        errors
    }
}

/// How many candidates the dry run looks for among `num_nodes` potential nodes (upstream
/// `calculateNumCandidates`): `num_nodes * percentage / 100`, at least the absolute
/// number, at most `num_nodes`. Negative args (rejected by validation) count as 0.
pub fn num_candidates(num_nodes: usize, args: &DefaultPreemptionArgs) -> usize {
    let percentage = usize::try_from(args.min_candidate_nodes_percentage).unwrap_or(0);
    let absolute = usize::try_from(args.min_candidate_nodes_absolute).unwrap_or(0);
    let by_percentage = num_nodes.saturating_mul(percentage) / 100;
    by_percentage.max(absolute).min(num_nodes)
}

/// The indices of `num_nodes` potential nodes in the order the dry run tries them:
/// starting at `offset` (upstream draws it at random in `[0, num_nodes)`) and wrapping
/// around, so every node is visited once.
pub fn visiting_order(num_nodes: usize, offset: usize) -> impl Iterator<Item = usize> {
    let start = offset.checked_rem(num_nodes).unwrap_or(0);
    (0..num_nodes).map(move |i| (start + i) % num_nodes)
}

/// The candidates the dry run found, in two lists of at most `capacity` each: those
/// violating no PodDisruptionBudget and the others (upstream's pair of `candidateList`s).
#[derive(Debug, Clone)]
pub struct CandidateList {
    capacity: usize,
    non_violating: Vec<Candidate>,
    violating: Vec<Candidate>,
}

impl CandidateList {
    /// Room for `capacity` candidates of each kind: [`num_candidates`].
    pub fn new(capacity: usize) -> Self {
        CandidateList {
            capacity,
            non_violating: Vec::new(),
            violating: Vec::new(),
        }
    }

    /// Adds a candidate (dropped when its list is full) and says whether the dry run may
    /// stop: upstream stops once it holds `capacity` candidates in all, at least one of
    /// them violating no budget; with violating candidates only, it tries every node.
    pub fn add(&mut self, candidate: Candidate) -> bool {
        let list = if candidate.num_pdb_violations == 0 {
            &mut self.non_violating
        } else {
            &mut self.violating
        };
        if list.len() < self.capacity {
            list.push(candidate);
        }
        !self.non_violating.is_empty()
            && self.non_violating.len() + self.violating.len() >= self.capacity
    }

    /// The candidates violating no budget, then the others, each in the order found.
    pub fn into_candidates(self) -> Vec<Candidate> {
        let mut candidates = self.non_violating;
        candidates.extend(self.violating);
        candidates
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod post_filter_tests;

#[cfg(test)]
mod dry_run_tests;

#[cfg(test)]
mod preempt_tests;

#[cfg(test)]
mod select_victims_tests;

/// upstream's PreEnqueue message for a preemptor whose victims are still being evicted.
pub const WAITING_FOR_PREEMPTION: &str = "waiting for the preemption for this pod to be finished";

/// The message a victim held at Permit is rejected with (upstream's).
pub const PREEMPTED: &str = "preempted";

/// The DefaultPreemption plugin: PostFilter, and PreEnqueue for preemptors whose
/// evictions are under way.
pub struct DefaultPreemption {
    args: DefaultPreemptionArgs,
    budgets: Arc<DisruptionBudgets>,
    nominator: Arc<Nominator>,
    waiting_pods: Arc<WaitingPods>,
    /// The Workload API's pod groups: a victim's priority and whether its group goes
    /// whole.
    pod_groups: Arc<PodGroupStates>,
    /// Where each dry run starts among the potential nodes: random, as upstream, from a
    /// fixed seed so that simulations repeat.
    offsets: Mutex<ChaCha8Rng>,
}

crate::plugin! {
    DefaultPreemption {
        name: "DefaultPreemption",
        points: [PreEnqueue, PostFilter],
    }

    impl Plugin {
        /// A preemptor held back by PreEnqueue is looked at again when a bound pod is
        /// deleted or updated (its last victim leaving).
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![ClusterEvent::new(
                EventResource::AssignedPod,
                ActionType::DELETE | ActionType::UPDATE,
            )])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "When no node fits a pod, evicts pods of lower priority from the node where that does the least harm, and nominates the pod there.";
        type Args = DefaultPreemptionArgs;

        fn build(args: DefaultPreemptionArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(DefaultPreemption {
                args,
                budgets: handle.disruption_budgets.clone(),
                nominator: handle.nominator.clone(),
                waiting_pods: handle.waiting_pods.clone(),
                pod_groups: handle.pod_group_states.clone(),
                offsets: Mutex::new(ChaCha8Rng::seed_from_u64(0)),
            })
        }
    }
}

impl DefaultPreemption {
    fn offset(&self, num_nodes: usize) -> usize {
        if num_nodes == 0 {
            return 0;
        }
        let mut rng = self.offsets.lock().unwrap_or_else(PoisonError::into_inner);
        rng.random_range(0..num_nodes)
    }

    /// upstream `Evaluator.Preempt`, up to choosing the node.
    fn preempt(
        &self,
        fwk: &dyn FilterRunner,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let nominated = self
            .nominator
            .nominated_node(pod.key())
            .or_else(|| status_nominated_node(&pod.pod).map(str::to_string));
        if let Some(node) = &nominated {
            let code = statuses
                .get(node)
                .map(Status::code)
                .unwrap_or(Code::Success);
            let pods = snapshot
                .get(node)
                .map(|n| n.pods.iter().map(|p| p.pod.as_ref()).collect::<Vec<_>>())
                .unwrap_or_default();
            let priority =
                |p: &k8s_openapi::api::core::v1::Pod| victim_priority(&self.pod_groups, p);
            if let Err(message) = pod_eligible_to_preempt_others(&pod.pod, code, pods, priority) {
                return (None, Status::unschedulable(message));
            }
        } else if let Err(message) =
            pod_eligible_to_preempt_others(&pod.pod, Code::Success, Vec::new(), pod_priority)
        {
            return (None, Status::unschedulable(message));
        }
        let all = snapshot.nodes();
        if all.is_empty() {
            return (None, Status::error("no nodes available"));
        }
        let clear = Some(PostFilterResult {
            nominated_node_name: Some(String::new()),
            preemption: None,
        });
        let potential = dry_run::potential_nodes(snapshot, statuses);
        if potential.is_empty() {
            let message = dry_run::fit_error_message(all.len(), &NodeToStatus::default());
            return (clear, Status::unschedulable(message));
        }
        let budgets: Vec<_> = self.budgets.list().iter().map(|b| (**b).clone()).collect();
        let offset = self.offset(potential.len());
        let rules = dry_run::Rules {
            budgets: &budgets,
            grouping: Some(dry_run::Grouping {
                states: &self.pod_groups,
                snapshot,
            }),
        };
        let run = dry_run::dry_run(fwk, state, pod, &potential, rules, &self.args, offset);
        if run.candidates.is_empty() {
            if let Some(error) = run.errors.first() {
                return (None, error.clone());
            }
            let message = dry_run::fit_error_message(all.len(), &run.statuses);
            return (clear, Status::unschedulable(message));
        }
        match select_candidate(&run.candidates) {
            // Upstream's success carries a message, which becomes the end of the
            // pod's FailedScheduling message (`… preemption: found a potential …`).
            Some(best) if !best.node.is_empty() => (
                Some(PostFilterResult {
                    nominated_node_name: Some(best.node.clone()),
                    preemption: self.prepare(pod, best),
                }),
                Status::new(
                    Code::Success,
                    format!(
                        "found a potential placement for pod on node {}, preempting {} victims",
                        best.node,
                        best.victims.len()
                    ),
                ),
            ),
            _ => (
                None,
                Status::unschedulable("no candidate node for preemption"),
            ),
        }
    }
}

impl DefaultPreemption {
    /// What is left to do for the chosen candidate (upstream's `prepareCandidateAsync`
    /// up to its goroutine): victims already terminating need nothing; victims held at
    /// Permit are rejected now; the lower-priority pods nominated to the node lose their
    /// nominations. `None` when no victim is left to evict.
    fn prepare(&self, pod: &PodInfo, best: &Candidate) -> Option<Preemption> {
        let victims: Vec<Victim> = best
            .victims
            .iter()
            .filter(|victim| victim.metadata.deletion_timestamp.is_none())
            .map(|victim| {
                let waiting = self.waiting_pods.get(&pod_key(victim));
                if let Some(waiting) = &waiting {
                    waiting.reject(NAME, PREEMPTED);
                }
                Victim {
                    pod: victim.clone(),
                    waiting: waiting.is_some(),
                }
            })
            .collect();
        if victims.is_empty() {
            return None;
        }
        let priority = pod_priority(&pod.pod);
        let cleared_nominations = self
            .nominator
            .pods_for_node(&best.node)
            .into_iter()
            .filter(|nominee| nominee.key() != pod.key() && pod_priority(&nominee.pod) < priority)
            .map(|nominee| nominee.pod.clone())
            .collect();
        Some(Preemption {
            preemptor: pod.pod.clone(),
            node: best.node.clone(),
            victims,
            cleared_nominations,
            group: None,
        })
    }
}

impl PreEnqueuePlugin for DefaultPreemption {
    /// Keeps a preemptor out of activeQ while its victims are being evicted (upstream's
    /// asynchronous preemption), so that it is not tried against a node that still
    /// holds them.
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        if self.nominator.is_running_preemption(pod.key()) {
            return Status::unresolvable(WAITING_FOR_PREEMPTION);
        }
        Status::success()
    }
}

#[async_trait]
impl PostFilterPlugin for DefaultPreemption {
    /// upstream's wrapper: the evaluator's message, when there is one, prefixed with
    /// `preemption: `.
    async fn post_filter(
        &self,
        fwk: &dyn FilterRunner,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let (result, status) = self.preempt(fwk, state, pod, snapshot, statuses);
        let message = status.message();
        if message.is_empty() {
            return (result, status);
        }
        (
            result,
            Status::new(status.code(), format!("preemption: {message}")),
        )
    }
}
