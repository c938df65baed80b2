//! The scheduling cycle (snapshot -> PreFilter -> Filter -> PostFilter -> PreScore ->
//! Score -> select -> assume -> Reserve -> Permit) and the binding cycle (wait on Permit ->
//! PreBind -> Bind -> PostBind), as upstream's `schedule_one.go`.

use std::sync::Arc;
use std::time::Instant;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tracing::Instrument;

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::nominator::status_nominated_node;
use crate::framework::{
    Code, CycleState, Framework, KeptScores, NodeToStatus, PodGroupCycle, QueuedPodInfo, Status,
};

use super::batch::Batch;
use super::failure::{Failure, FitError};
use super::{CycleDiagnosis, CycleOutput, Scheduler, unsupported};

/// Below this many nodes every node is evaluated (upstream `minFeasibleNodesToFind`).
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage never drops below this (upstream
/// `minFeasibleNodesPercentageToFind`).
const MIN_FEASIBLE_NODES_PERCENTAGE: i64 = 5;

/// Upstream `numFeasibleNodesToFind`: how many feasible nodes to look for before
/// scoring. `percentage` 0 (or unset) means adaptive: `max(5, 50 - nodes/125)` percent,
/// at least 100 nodes; every node below 100 nodes.
pub fn num_feasible_nodes_to_find(percentage: Option<i32>, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let all = num_all_nodes as i64;
    let mut pct = i64::from(percentage.unwrap_or(0));
    if pct <= 0 {
        pct = (50 - all / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE);
    }
    let num = (all * pct.min(100) / 100) as usize;
    num.max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// The profile's batch in a cycle that may use and keep it: the scheduler's cycle
/// number (over every profile) and the time.
pub(super) struct BatchCycle<'a> {
    pub batch: &'a mut Batch,
    pub cycle: u64,
    pub now: Instant,
}

/// Finds the node for `pod`, or why there is none.
#[allow(clippy::too_many_arguments)]
pub(super) async fn schedule_pod(
    fwk: &Framework,
    state: &mut CycleState,
    pod: &Arc<PodInfo>,
    snapshot: &Snapshot,
    next_start_node_index: &mut usize,
    rng: &mut ChaCha8Rng,
    record: bool,
    mut batching: Option<BatchCycle<'_>>,
) -> Result<(String, Option<CycleDiagnosis>), Failure> {
    let all_nodes = snapshot.nodes();
    let mut diagnosis = record.then(CycleDiagnosis::default);
    let handle = fwk.handle();
    let served = unsupported::Served {
        claims: handle.device_resources.is_served(),
        pod_groups: handle.pod_group_states.is_served(),
        workloads: handle.legacy_workloads.is_served(),
    };
    if let Some(status) = unsupported::refusal(&pod.pod, served) {
        // PostFilter does not run: no eviction helps a pod berth refuses.
        let fit = rejected_everywhere(all_nodes, status, &mut diagnosis);
        return Err(Failure::fit(&fit).with_diagnosis(diagnosis));
    }
    if all_nodes.is_empty() {
        return Err(Failure::no_nodes());
    }
    state.set_node_count(all_nodes.len());
    let pre_filter = fwk.run_pre_filter(state, pod, snapshot).await;
    let status = pre_filter.status.clone();
    if !status.is_success() {
        if !status.is_rejected() {
            return Err(Failure::error(&status));
        }
        let fit = rejected_everywhere(all_nodes, status, &mut diagnosis);
        return Err(post_filter(fwk, state, pod, snapshot, fit, diagnosis).await);
    }

    let mut statuses = NodeToStatus::default();
    // Narrowed candidates are a new list; otherwise every node is one, without a copy.
    let narrowed: Option<Vec<Arc<NodeInfo>>> = match pre_filter
        .result
        .as_ref()
        .and_then(|r| r.node_names.as_ref())
    {
        None => None,
        Some(names) => {
            let excluded = Status::unresolvable(format!(
                "node(s) didn't satisfy plugin(s) {}",
                pre_filter.narrowing_list()
            ));
            if let Some(d) = diagnosis.as_mut() {
                d.filtered.extend(
                    all_nodes
                        .iter()
                        .filter(|n| !names.contains(n.name()))
                        .map(|n| (n.name().to_string(), excluded.clone())),
                );
            }
            statuses.absent = Some(excluded);
            // In the snapshot's order, found by name: a narrowing to a few nodes (say,
            // a DaemonSet pod's one) costs those nodes, not the cluster.
            let mut at: Vec<usize> = names.iter().filter_map(|n| snapshot.position(n)).collect();
            at.sort_unstable();
            Some(at.into_iter().map(|i| all_nodes[i].clone()).collect())
        }
    };
    let candidates = narrowed.as_deref().unwrap_or(all_nodes);
    let nominated = nominated_node(fwk, pod);
    // Only a pod the profile can sign takes part in batching (upstream's signature,
    // computed for every pod when the gate is on).
    let signature = batching
        .as_ref()
        .filter(|_| fwk.batches())
        .and_then(|_| fwk.sign_pod(pod));
    let hint = match batching.as_mut() {
        Some(b) => {
            b.batch
                .node_hint(
                    fwk,
                    state,
                    pod,
                    snapshot,
                    signature.as_ref(),
                    nominated.is_some(),
                    b.cycle,
                    b.now,
                )
                .await
        }
        None => None,
    };
    // Upstream tries the node the pod is nominated to first: when it passes, it is the
    // only feasible node (the room preemption made there is the pod's). A batch's hint
    // is tried the same way.
    let first = nominated.or_else(|| hint.clone());
    if let Some(node) = first.and_then(|name| find_candidate(snapshot, narrowed.as_deref(), &name))
    {
        let status = fwk.run_filter(state, pod, node);
        if status.code() == Code::Error {
            return Err(Failure::error(&status));
        }
        if status.is_success() {
            if let Some(d) = diagnosis.as_mut() {
                d.filtered.push((node.name().to_string(), status));
            }
            let chosen = node.name().to_string();
            if let Some(b) = batching {
                b.batch
                    .store(signature, hint.as_deref(), &chosen, None, b.cycle, b.now);
            }
            return Ok((chosen, diagnosis));
        }
    }
    let feasible = find_feasible(
        fwk,
        state,
        pod,
        candidates,
        all_nodes.len(),
        next_start_node_index,
        &mut statuses,
        &mut diagnosis,
    )
    .map_err(|status| Failure::error(&status))?;
    if feasible.is_empty() {
        let fit = FitError {
            num_all_nodes: all_nodes.len(),
            statuses,
            pre_filter_msg: None,
            post_filter_msg: None,
        };
        return Err(post_filter(fwk, state, pod, snapshot, fit, diagnosis).await);
    }
    if feasible.len() == 1 {
        // Upstream skips scoring when only one node is feasible.
        let chosen = feasible[0].name().to_string();
        if let Some(b) = batching {
            b.batch
                .store(signature, hint.as_deref(), &chosen, None, b.cycle, b.now);
        }
        return Ok((chosen, diagnosis));
    }
    let status = fwk.run_pre_score(state, pod, &feasible).await;
    if !status.is_success() {
        return Err(Failure::error(&status).with_diagnosis(diagnosis));
    }
    if let (Some(b), true) = (batching.as_mut(), signature.is_some()) {
        // A batchable pod keeps its raw scores, for the batch to renormalize.
        let KeptScores {
            totals,
            details: scored,
            raw,
        } = fwk
            .run_score_keeping_raw(state, pod, &feasible, diagnosis.is_some())
            .map_err(|s| Failure::error(&s).with_diagnosis(diagnosis.clone()))?;
        let at = select_host(&totals, rng);
        let chosen = feasible[at].name().to_string();
        let others = b.batch.others(&feasible, &totals, raw, at);
        b.batch.store(
            signature,
            hint.as_deref(),
            &chosen,
            Some(others),
            b.cycle,
            b.now,
        );
        if let (Some(d), Some(scored)) = (diagnosis.as_mut(), scored) {
            d.scored = scored;
        }
        return Ok((chosen, diagnosis));
    }
    let host = if diagnosis.is_some() {
        // Per-plugin scores only when they are recorded.
        let scored = fwk
            .run_score(state, pod, &feasible)
            .map_err(|s| Failure::error(&s).with_diagnosis(diagnosis.clone()))?;
        let totals: Vec<i64> = scored.iter().map(|s| s.total).collect();
        let host = feasible[select_host(&totals, rng)].name().to_string();
        if let Some(d) = diagnosis.as_mut() {
            d.scored = scored;
        }
        host
    } else {
        let totals = fwk
            .run_score_totals(state, pod, &feasible)
            .map_err(|s| Failure::error(&s))?;
        feasible[select_host(&totals, rng)].name().to_string()
    };
    if let Some(b) = batching {
        // A pod without a signature leaves no batch (upstream: not batchable).
        b.batch
            .store(None, hint.as_deref(), &host, None, b.cycle, b.now);
    }
    Ok((host, diagnosis))
}

/// The fit error of a pod rejected before Filter (by PreFilter, or refused): every node
/// shares the verdict (upstream's absent-nodes status) and the message is the verdict's.
fn rejected_everywhere(
    all_nodes: &[Arc<NodeInfo>],
    status: Status,
    diagnosis: &mut Option<CycleDiagnosis>,
) -> FitError {
    if let Some(d) = diagnosis.as_mut() {
        d.filtered = all_nodes
            .iter()
            .map(|n| (n.name().to_string(), status.clone()))
            .collect();
    }
    FitError {
        num_all_nodes: all_nodes.len(),
        pre_filter_msg: Some(status.message()),
        statuses: NodeToStatus {
            statuses: Default::default(),
            absent: Some(status),
        },
        post_filter_msg: None,
    }
}

/// The node `pod` is nominated to: the nominator's (preemption's decision, which may be
/// newer than the pod object), else the pod's `status.nominatedNodeName`.
fn nominated_node(fwk: &Framework, pod: &PodInfo) -> Option<String> {
    fwk.handle()
        .nominator
        .nominated_node(pod.key())
        .or_else(|| status_nominated_node(&pod.pod).map(str::to_string))
}

/// Filters `candidates` from the rotating start index until the wanted number of
/// feasible nodes is found.
#[allow(clippy::too_many_arguments)]
fn find_feasible(
    fwk: &Framework,
    state: &CycleState,
    pod: &PodInfo,
    candidates: &[Arc<NodeInfo>],
    num_all_nodes: usize,
    next_start_node_index: &mut usize,
    statuses: &mut NodeToStatus,
    diagnosis: &mut Option<CycleDiagnosis>,
) -> Result<Vec<Arc<NodeInfo>>, Status> {
    let n = candidates.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let wanted = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score(), n);
    let start = *next_start_node_index % n;
    let results = fwk.run_filter_in_rotation(state, pod, candidates, start, wanted);
    let processed = results.len();
    let mut feasible = Vec::with_capacity(wanted.min(processed));
    for (i, status) in results.into_iter().enumerate() {
        let node = &candidates[(start + i) % n];
        if let Some(d) = diagnosis.as_mut() {
            d.filtered.push((node.name().to_string(), status.clone()));
        }
        if status.code() == Code::Error {
            // Upstream stops filtering at an error: the attempt fails with it.
            return Err(status);
        }
        if status.is_success() {
            feasible.push(node.clone());
        } else {
            statuses.statuses.insert(node.name().to_string(), status);
        }
    }
    *next_start_node_index = (*next_start_node_index + processed) % num_all_nodes.max(1);
    Ok(feasible)
}

/// Runs PostFilter after a fit error and builds the failure.
async fn post_filter(
    fwk: &Framework,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    mut fit: FitError,
    diagnosis: Option<CycleDiagnosis>,
) -> Failure {
    let mut result = None;
    // In a pod-group cycle the member's fit error stands alone (upstream runs no
    // PostFilter there).
    if fwk.has_post_filter_plugins() && state.read::<PodGroupCycle>().is_none() {
        let (decided, status) = fwk
            .run_post_filter(state, pod, snapshot, &fit.statuses)
            .await;
        fit.post_filter_msg = Some(status.message());
        result = decided;
    }
    let mut failure = Failure::fit(&fit).with_diagnosis(diagnosis);
    if let Some(result) = result {
        failure.nominating = result.nominated_node_name;
        failure.preemption = result.preemption;
    }
    failure
}

/// The index of the highest total (`totals` is not empty); ties broken uniformly at
/// random.
fn select_host(totals: &[i64], rng: &mut ChaCha8Rng) -> usize {
    let best = totals.iter().copied().max().unwrap_or(0);
    let top: Vec<usize> = (0..totals.len()).filter(|&i| totals[i] == best).collect();
    let pick = if top.len() > 1 {
        rng.random_range(0..top.len())
    } else {
        0
    };
    top.get(pick).copied().unwrap_or(0)
}

/// Node `name` among the cycle's candidates: the PreFilter-narrowed list when there is
/// one, else the whole snapshot (found by name, not by a walk over every node).
fn find_candidate<'a>(
    snapshot: &'a Snapshot,
    narrowed: Option<&'a [Arc<NodeInfo>]>,
    name: &str,
) -> Option<&'a Arc<NodeInfo>> {
    match narrowed {
        Some(nodes) => nodes.iter().find(|n| n.name() == name),
        None => snapshot.get(name),
    }
}

/// Assume, Reserve and Permit; on success the binding cycle to run.
pub(super) async fn assume_reserve_permit(
    scheduler: &mut Scheduler,
    index: usize,
    queued: QueuedPodInfo,
    pod_cycle: u64,
    state: CycleState,
    node: String,
    diagnosis: Option<CycleDiagnosis>,
) -> Option<CycleOutput> {
    match assume_reserve_permit_for_group(
        scheduler, index, queued, pod_cycle, state, node, diagnosis,
    )
    .await
    {
        Ok(output) => Some(output),
        Err((queued, failure)) => Some(CycleOutput::Done(
            scheduler.fail(index, queued, pod_cycle, failure),
        )),
    }
}

/// Assume, Reserve and Permit; the binding cycle to run, or the failure for the caller
/// to requeue (a pod-group cycle requeues its members as the group).
pub(super) async fn assume_reserve_permit_for_group(
    scheduler: &mut Scheduler,
    index: usize,
    queued: QueuedPodInfo,
    pod_cycle: u64,
    mut state: CycleState,
    node: String,
    diagnosis: Option<CycleDiagnosis>,
) -> Result<CycleOutput, (QueuedPodInfo, Failure)> {
    let framework = scheduler.profiles[index].framework.clone();
    let assumed = Arc::new(queued.pod_info.with_node_name(&node));
    if let Err(e) = scheduler.assume(&queued.pod_info, &node) {
        let failure = Failure::error(&Status::error(format!("assuming pod on node {node}: {e}")));
        return Err((queued, failure.with_diagnosis(diagnosis)));
    }
    let status = framework.run_reserve(&mut state, &assumed, &node).await;
    let status = if status.is_success() {
        framework.run_permit(&mut state, &assumed, &node).await
    } else {
        status
    };
    scheduler.activate_requested(index, &mut state);
    if !status.is_success() && !status.is_wait() {
        framework.run_unreserve(&mut state, &assumed, &node).await;
        scheduler.forget(&assumed);
        let failure = Failure::rejected_on(&node, status).with_diagnosis(diagnosis);
        return Err((queued, failure));
    }
    Ok(CycleOutput::Binding(Box::new(BindingCycle {
        framework,
        scheduler_name: scheduler.profiles[index].scheduler_name.clone(),
        state,
        queued,
        assumed,
        node,
        pod_cycle,
        diagnosis,
        waiting: status.is_wait(),
    })))
}

/// The binding cycle of one assumed pod; run it concurrently with further scheduling.
pub struct BindingCycle {
    framework: Arc<Framework>,
    scheduler_name: String,
    state: CycleState,
    queued: QueuedPodInfo,
    assumed: Arc<PodInfo>,
    node: String,
    pod_cycle: u64,
    diagnosis: Option<CycleDiagnosis>,
    waiting: bool,
}

/// The outcome of a binding cycle, to hand to [`Scheduler::complete_binding`].
pub struct BindingResult {
    pub(super) scheduler_name: String,
    pub(super) queued: QueuedPodInfo,
    pub(super) node: String,
    pub(super) pod_cycle: u64,
    pub(super) diagnosis: Option<CycleDiagnosis>,
    pub(super) status: Result<(), Failure>,
}

impl BindingResult {
    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.queued.pod_info
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    pub fn is_success(&self) -> bool {
        self.status.is_ok()
    }
}

impl BindingCycle {
    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.queued.pod_info
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    /// Whether a Permit plugin holds the pod (the cycle will wait before binding).
    pub fn is_waiting(&self) -> bool {
        self.waiting
    }

    /// Wait on Permit, PreBind, Bind, PostBind. Any failure runs Unreserve in reverse
    /// order before returning. The cycle runs in a `binding_cycle` span naming the pod
    /// and the profile.
    pub async fn run(self: Box<Self>) -> BindingResult {
        let span = tracing::debug_span!(
            "binding_cycle",
            pod = %format_args!("{}/{}", self.assumed.namespace(), self.assumed.name()),
            profile = %self.scheduler_name,
        );
        self.run_in_span().instrument(span).await
    }

    async fn run_in_span(mut self: Box<Self>) -> BindingResult {
        let status = self.bind().await;
        let status = match status {
            Ok(()) => {
                self.framework
                    .run_post_bind(&self.state, &self.assumed, &self.node)
                    .await;
                Ok(())
            }
            Err(status) => {
                self.framework
                    .run_unreserve(&mut self.state, &self.assumed, &self.node)
                    .await;
                Err(Failure::rejected_on(&self.node, status))
            }
        };
        let cycle = *self;
        BindingResult {
            scheduler_name: cycle.scheduler_name,
            queued: cycle.queued,
            node: cycle.node,
            pod_cycle: cycle.pod_cycle,
            diagnosis: cycle.diagnosis,
            status,
        }
    }

    async fn bind(&mut self) -> Result<(), Status> {
        let status = self.framework.wait_on_permit(&self.assumed).await;
        if !status.is_success() {
            return Err(status);
        }
        let status = self
            .framework
            .run_pre_bind(&mut self.state, &self.assumed, &self.node)
            .await;
        if !status.is_success() {
            return Err(status);
        }
        let status = self
            .framework
            .run_bind(&mut self.state, &self.assumed, &self.node)
            .await;
        if !status.is_success() {
            return Err(status);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_number_of_nodes_follows_upstream_formula() {
        // Upstream TestNumFeasibleNodesToFind cases.
        let cases: &[(&str, Option<i32>, usize, usize)] = &[
            ("not set, nodes < 100", None, 10, 10),
            ("set, nodes < 100", Some(40), 10, 10),
            ("not set, 1000 nodes", None, 1000, 420),
            ("set 40, 1000 nodes", Some(40), 1000, 400),
            ("not set, 6000 nodes", None, 6000, 300),
            ("set 40, 6000 nodes", Some(40), 6000, 2400),
            ("not set, 10000 nodes: floor at 5%", None, 10000, 500),
            ("set 1, 1000 nodes: at least 100", Some(1), 1000, 100),
            ("zero means adaptive", Some(0), 1000, 420),
        ];
        for (name, pct, nodes, want) in cases {
            assert_eq!(num_feasible_nodes_to_find(*pct, *nodes), *want, "{name}");
        }
    }
}
