//! The scheduling cycle, the binding cycle and failure handling, over the profiles of one
//! process.
//!
//! [`Scheduler`] owns the cache, the snapshot and one queue per profile, and holds the
//! worker threads ([`Parallelizer`]) and the [`Clock`] every profile shares: profiles are
//! instantiated with them through [`ProfileServices`]. It is driven by an adapter
//! (`simulate`, `bench` or the operator's scheduling loop) that feeds it cluster events
//! and calls [`Scheduler::schedule_one`] in a loop. A successful scheduling cycle hands
//! back a [`BindingCycle`] that the adapter runs concurrently (it may wait at Permit) and
//! whose [`BindingResult`] it returns through [`Scheduler::complete_binding`]. The
//! scheduler itself is single-owner and lock-free: every mutation happens on the
//! adapter's loop. Each attempt and each binding cycle runs in a tracing span naming the
//! pod and the profile.

pub mod batch;
mod cycle;
mod failure;
mod group_cycle;
mod group_preemption;
mod profile;
pub mod unsupported;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tracing::Instrument;

use crate::cluster::{
    Cache, CacheError, GroupKey, LegacyGroupKey, LegacyWorkloads, PodGroupStates, PodInfo,
    QuantityError, Snapshot, pod_key,
};
use crate::framework::clock::{Clock, Instant, RuntimeClock};
use crate::framework::{
    ActionType, ClusterEvent, CycleState, EventResource, Framework, Nominator, Parallelizer,
    PodsToActivate, Preemption, QueuedPodInfo, RetryAfterBackoff, ScoredNode, Status,
};
use crate::queue::{Popped, QueueConfig, SchedulingQueue};
use batch::Batch;

pub use cycle::{BindingCycle, BindingResult, num_feasible_nodes_to_find};
pub use failure::{FitError, NO_NODES_AVAILABLE};
pub use group_cycle::{
    GroupPreemptionAttempt, GroupResult, INITIALLY_SCHEDULED, POD_GROUP_UNSCHEDULABLE,
    PodGroupAttempt, PodGroupReport, merge_condition,
};
pub use profile::ProfileServices;

/// Options of the scheduling loop.
#[derive(Clone)]
pub struct SchedulerOptions {
    /// Seed of the random tie-break among the best-scoring nodes.
    pub seed: u64,
    /// Keep per-node filter verdicts and scores of every attempt (for `--explain`).
    pub record_diagnosis: bool,
    /// The worker threads of every profile's Filter and Score (see
    /// [`Scheduler::parallelizer`]).
    pub parallelizer: Arc<Parallelizer>,
    /// The time queues, the cache and plugins read (see [`Scheduler::clock`]).
    pub clock: Arc<dyn Clock>,
    /// The pods nominated to nodes (see [`Scheduler::nominator`]).
    pub nominator: Arc<Nominator>,
    /// The Workload API's pod groups and their members (see
    /// [`Scheduler::pod_group_states`]).
    pub pod_group_states: Arc<PodGroupStates>,
    /// Kubernetes 1.35's Workloads and gangs (see [`Scheduler::legacy_workloads`]).
    pub legacy_workloads: Arc<LegacyWorkloads>,
}

impl Default for SchedulerOptions {
    /// Seed 0, no diagnosis, no worker threads, the runtime's clock, no nominations.
    fn default() -> Self {
        SchedulerOptions {
            seed: 0,
            record_diagnosis: false,
            parallelizer: Arc::default(),
            clock: RuntimeClock::shared(),
            nominator: Arc::default(),
            pod_group_states: Arc::default(),
            legacy_workloads: Arc::default(),
        }
    }
}

impl std::fmt::Debug for SchedulerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerOptions")
            .field("seed", &self.seed)
            .field("record_diagnosis", &self.record_diagnosis)
            .field("parallelizer", &self.parallelizer)
            .finish_non_exhaustive()
    }
}

/// One profile's framework and queue.
pub struct ProfileInstance {
    pub scheduler_name: String,
    pub framework: Arc<Framework>,
    pub queue: SchedulingQueue,
    /// The profile's opportunistic batch ([`batch`]).
    pub batch: Batch,
}

/// Per-node verdicts and scores of one attempt.
#[derive(Debug, Clone, Default)]
pub struct CycleDiagnosis {
    /// Every node the attempt decided on, with its status (Success when feasible): the
    /// nodes PreFilter rejected or left out of its PreFilterResult first, in snapshot
    /// order, with the PreFilter's verdict; then the nodes Filter evaluated, in evaluation
    /// order. Nodes beyond `percentageOfNodesToScore`'s cut were not evaluated and are
    /// not listed.
    pub filtered: Vec<(String, Status)>,
    /// Scores of the feasible nodes (empty when fewer than two were feasible, as upstream
    /// skips scoring then).
    pub scored: Vec<ScoredNode>,
}

/// How one scheduling attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Bound to the node.
    Scheduled { node: String },
    /// No node fits, or a plugin rejected the pod; the message is upstream-format.
    Unschedulable { message: String },
    /// An internal error (plugin error, bind failure).
    Error { message: String },
}

/// One finished attempt, for reporting (events, pod conditions, simulate output).
#[derive(Debug, Clone)]
pub struct AttemptReport {
    pub pod: Arc<PodInfo>,
    pub scheduler_name: String,
    /// Attempts so far, this one included.
    pub attempts: u32,
    pub outcome: Outcome,
    pub diagnosis: Option<CycleDiagnosis>,
    /// What PostFilter decided about the pod's nomination, for its
    /// `status.nominatedNodeName`: a node, "" (clear it), or `None` (leave it).
    pub nominating: Option<String>,
    /// Evictions to carry out (preemption); the adapter reports their end through
    /// [`Scheduler::complete_preemption`].
    pub preemption: Option<Box<Preemption>>,
}

/// What [`Scheduler::schedule_one`] produced.
pub enum CycleOutput {
    /// The attempt ended in the scheduling cycle (failure).
    Done(AttemptReport),
    /// The pod is assumed on a node; run the binding cycle and hand its result to
    /// [`Scheduler::complete_binding`].
    Binding(Box<BindingCycle>),
    /// A pod-group cycle ended (its members' outputs came before): the PodGroup's
    /// condition to write and the counts to report.
    PodGroup(PodGroupReport),
}

/// The queue configuration of a profile: its QueueSort and PreEnqueue plugins, the
/// events its plugins registered, its backoff bounds.
fn queue_config(
    scheduler_name: &str,
    framework: &Framework,
    pod_groups: bool,
) -> Result<QueueConfig, IngestError> {
    let backoff = framework.resolved().backoff;
    let queue_sort = framework.queue_sort().ok_or_else(|| {
        IngestError::Profile(format!("profile {scheduler_name} has no QueueSort plugin"))
    })?;
    Ok(QueueConfig {
        queue_sort,
        pre_enqueue: framework
            .plugins(crate::framework::ExtensionPoint::PreEnqueue)
            .to_vec(),
        plugin_events: {
            let events = framework.plugin_events();
            // A refusing name the profile runs as a plugin keeps that plugin's events.
            let refusing: Vec<_> = unsupported::rejector_events()
                .into_iter()
                .filter(|(name, _)| !events.iter().any(|(n, _)| n == name))
                .collect();
            events.into_iter().chain(refusing).collect()
        },
        initial_backoff: backoff.0,
        max_backoff: backoff.1,
        unschedulable_max_stay: crate::queue::DEFAULT_UNSCHEDULABLE_MAX_STAY,
        pod_groups,
        coscheduling_groups: framework
            .plugins(crate::framework::ExtensionPoint::Permit)
            .iter()
            .any(|p| p.name() == COSCHEDULING),
    })
}

/// The plugin whose groups (berth's and scheduler-plugins' PodGroups) a profile that runs
/// it places through pod-group cycles.
const COSCHEDULING: &str = "Coscheduling";

/// The scheduler core shared by `berth simulate` and the operator.
pub struct Scheduler {
    cache: Cache,
    snapshot: Snapshot,
    profiles: Vec<ProfileInstance>,
    by_name: HashMap<String, usize>,
    next_profile: usize,
    next_start_node_index: usize,
    rng: ChaCha8Rng,
    /// Scheduling cycles run, over every profile (upstream's one queue counts them so):
    /// a batch is used only by the cycle right after the one that kept it.
    cycles: u64,
    options: SchedulerOptions,
    nominator: Arc<Nominator>,
    /// Outputs of a pod-group cycle not handed out yet (one per member, then the group's).
    pending: VecDeque<CycleOutput>,
}

/// An object that could not be added to the scheduler.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Quantity(#[from] QuantityError),
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error("{0}")]
    Profile(String),
}

impl Scheduler {
    pub fn new(options: SchedulerOptions) -> Self {
        Scheduler {
            cache: Cache::new(None),
            snapshot: Snapshot::default(),
            profiles: Vec::new(),
            by_name: HashMap::new(),
            next_profile: 0,
            next_start_node_index: 0,
            rng: ChaCha8Rng::seed_from_u64(options.seed),
            cycles: 0,
            nominator: options.nominator.clone(),
            options,
            pending: VecDeque::new(),
        }
    }

    /// Adds a profile serving `scheduler_name`, or hot-swaps the framework of the
    /// profile already serving it: its queue survives (re-sorted and re-gated by the new
    /// plugins), and cycles in flight finish on the framework they began with, since each
    /// [`BindingCycle`] holds its own `Arc<Framework>`.
    pub fn add_profile(
        &mut self,
        scheduler_name: &str,
        framework: Arc<Framework>,
    ) -> Result<(), IngestError> {
        let served = self.options.pod_group_states.is_served();
        let config = queue_config(scheduler_name, &framework, served)?;
        if let Some(&index) = self.by_name.get(scheduler_name) {
            let now = self.now();
            let profile = &mut self.profiles[index];
            profile.queue.reconfigure(config, now);
            profile.framework = framework;
            profile.batch = Batch::new(self.options.seed);
            return Ok(());
        }
        self.by_name
            .insert(scheduler_name.to_string(), self.profiles.len());
        self.profiles.push(ProfileInstance {
            scheduler_name: scheduler_name.to_string(),
            framework,
            queue: SchedulingQueue::new(config),
            batch: Batch::new(self.options.seed),
        });
        Ok(())
    }

    /// Stops serving `scheduler_name`: its queue is dropped (its pods stay pending in
    /// the cluster); bindings already in flight complete. Returns whether it was served.
    pub fn remove_profile(&mut self, scheduler_name: &str) -> bool {
        let Some(index) = self.by_name.remove(scheduler_name) else {
            return false;
        };
        self.profiles.remove(index);
        for (i, profile) in self.profiles.iter().enumerate() {
            self.by_name.insert(profile.scheduler_name.clone(), i);
        }
        self.next_profile = 0;
        true
    }

    /// Whether a profile serves `scheduler_name`.
    pub fn serves(&self, scheduler_name: &str) -> bool {
        self.by_name.contains_key(scheduler_name)
    }

    pub fn profiles(&self) -> &[ProfileInstance] {
        &self.profiles
    }

    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The worker threads this scheduler's profiles share: hand it to every profile's
    /// [`Handle`](crate::framework::Handle), so that no profile starts threads of its own.
    pub fn parallelizer(&self) -> &Arc<Parallelizer> {
        &self.options.parallelizer
    }

    /// The pods nominated to nodes: hand it to every profile's
    /// [`Handle`](crate::framework::Handle), so that every profile's Filter sees every
    /// nomination.
    pub fn nominator(&self) -> &Arc<Nominator> {
        &self.nominator
    }

    /// The Workload API's pod groups and their members, kept current by this core (pods)
    /// and the adapter (PodGroup objects, through [`Scheduler::on_scheduling_group_apply`]):
    /// hand it to every profile's [`Handle`](crate::framework::Handle).
    pub fn pod_group_states(&self) -> &Arc<PodGroupStates> {
        &self.options.pod_group_states
    }

    /// Kubernetes 1.35's gangs, kept current by this core (every non-terminal pod with a
    /// `spec.workloadRef`, assume and forget) and the adapter (the Workloads, reporting them as
    /// lister changes): for the handle of every profile's
    /// framework, as [`Scheduler::pod_group_states`].
    pub fn legacy_workloads(&self) -> &Arc<LegacyWorkloads> {
        &self.options.legacy_workloads
    }

    /// The scheduler's time: hand it to every profile's
    /// [`Handle`](crate::framework::Handle), so that plugins and Permit waits read the
    /// time the queues read.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.options.clock
    }

    fn now(&self) -> Instant {
        self.options.clock.now()
    }

    fn broadcast(&mut self, event: ClusterEvent) {
        let now = self.now();
        for profile in &mut self.profiles {
            profile.queue.move_all_to_active_or_backoff(&event, now);
        }
    }

    pub fn on_node_add(&mut self, node: Node) -> Result<(), IngestError> {
        self.cache.add_node(node)?;
        self.broadcast(ClusterEvent::new(EventResource::Node, ActionType::ADD));
        Ok(())
    }

    pub fn on_node_update(&mut self, node: Node) -> Result<(), IngestError> {
        self.cache.update_node(node)?;
        self.broadcast(ClusterEvent::new(EventResource::Node, ActionType::UPDATE));
        Ok(())
    }

    /// The adapter feeds the cluster's Workload API PodGroups from now on: members of
    /// pod groups are queued and placed as groups instead of refused (every queue is
    /// reconfigured).
    pub fn serve_pod_groups(&mut self) -> Result<(), IngestError> {
        if self.options.pod_group_states.is_served() {
            return Ok(());
        }
        self.options.pod_group_states.set_served();
        let now = self.now();
        for profile in &mut self.profiles {
            let config = queue_config(&profile.scheduler_name, &profile.framework, true)?;
            profile.queue.reconfigure(config, now);
        }
        Ok(())
    }

    /// A Workload API PodGroup (`scheduling.k8s.io/v1beta1`) was added or changed: its
    /// state and every queue learn it (members waiting for it form their group), and the
    /// pods whose rejecting plugins registered PodGroup events are requeued. An update
    /// with an unchanged `resourceVersion` changes nothing.
    pub fn on_scheduling_group_apply(
        &mut self,
        group: k8s_openapi::api::scheduling::v1beta1::PodGroup,
    ) {
        let key = GroupKey::of_group(&group);
        let states = &self.options.pod_group_states;
        let old = states.pod_group(&key);
        if old.as_ref().is_some_and(|old| {
            old.metadata.resource_version.is_some()
                && old.metadata.resource_version == group.metadata.resource_version
        }) {
            return;
        }
        let priority = group.spec.priority.unwrap_or(0);
        states.apply_group(group);
        let now = self.now();
        for profile in &mut self.profiles {
            profile.queue.add_pod_group(key.clone(), priority, now);
        }
        let action = if old.is_some() {
            ActionType::UPDATE
        } else {
            ActionType::ADD
        };
        self.broadcast(ClusterEvent::new(EventResource::PodGroup, action));
    }

    /// berth's or scheduler-plugins' PodGroup `namespace/name` changed; `group` is the
    /// one Coscheduling now reads under that name (berth's own first), `None` when there is
    /// none. The core holds it as the Workload API PodGroup it amounts to
    /// ([`crate::cluster::core_pod_group`]), and the queues of profiles that run
    /// Coscheduling group its members from now on. Requeues as any PodGroup change.
    pub fn on_coscheduling_group_change(
        &mut self,
        namespace: &str,
        name: &str,
        group: Option<&crate::api::PodGroup>,
    ) {
        let key = GroupKey::coscheduling(namespace, name);
        let Some(group) = group else {
            self.on_scheduling_group_delete(&key);
            return;
        };
        let states = &self.options.pod_group_states;
        let known = states.pod_group(&key).is_some();
        states.apply_group_as(key.clone(), crate::cluster::core_pod_group(group));
        let now = self.now();
        for profile in &mut self.profiles {
            profile.queue.add_pod_group(key.clone(), 0, now);
        }
        let action = if known {
            ActionType::UPDATE
        } else {
            ActionType::ADD
        };
        self.broadcast(ClusterEvent::new(EventResource::PodGroup, action));
    }

    /// A PodGroup was deleted: the queued members of a Workload API PodGroup wait for it
    /// again, those of a Coscheduling group go on as lone pods.
    pub fn on_scheduling_group_delete(&mut self, key: &GroupKey) {
        self.options.pod_group_states.delete_group(key);
        let now = self.now();
        for profile in &mut self.profiles {
            profile.queue.delete_pod_group(key, now);
        }
        self.broadcast(ClusterEvent::new(
            EventResource::PodGroup,
            ActionType::DELETE,
        ));
    }

    /// A storage object (a claim, volume, class, CSINode, CSIDriver, capacity or
    /// attachment) or a resource.k8s.io object (a ResourceClaim, ResourceSlice or
    /// DeviceClass) changed; the lister plugins read is updated by the adapter.
    /// Requeues the pods whose rejecting plugins registered the event.
    pub fn on_storage_change(&mut self, resource: EventResource, action: ActionType) {
        self.broadcast(ClusterEvent::new(resource, action));
    }

    /// A namespace was added or changed (namespace selectors read its labels). No pod
    /// is requeued: upstream registers no plugin for namespace events.
    pub fn on_namespace_apply(&mut self, namespace: &k8s_openapi::api::core::v1::Namespace) {
        self.cache.add_namespace(namespace);
    }

    pub fn on_namespace_delete(&mut self, name: &str) {
        self.cache.remove_namespace(name);
    }

    pub fn on_node_delete(&mut self, name: &str) {
        self.cache.remove_node(name);
        self.broadcast(ClusterEvent::new(EventResource::Node, ActionType::DELETE));
    }

    /// A pod appeared: assigned pods go to the cache, pending pods of a known profile to
    /// its queue; pods of other schedulers are ignored.
    pub fn on_pod_add(&mut self, pod: impl Into<Arc<Pod>>) -> Result<(), IngestError> {
        let info = PodInfo::new(pod)?;
        // Upstream 1.35 registers every pod with its workload manager, whoever schedules it.
        self.options.legacy_workloads.add_pod(&info.pod);
        if info.node_name().is_some() {
            self.options.pod_group_states.add_pod(&info.pod);
            self.cache.add_pod_info(Arc::new(info))?;
            self.broadcast(ClusterEvent::new(
                EventResource::AssignedPod,
                ActionType::ADD,
            ));
        } else if let Some(&i) = self.by_name.get(info.scheduler_name()) {
            let now = self.now();
            let info = Arc::new(info);
            // Upstream counts a pending member only where a profile serves it.
            let member = GroupKey::member_of(&info.pod).is_some()
                || LegacyGroupKey::of_pod(&info.pod).is_some();
            self.options.pod_group_states.add_pod(&info.pod);
            self.nominator.add(info.clone());
            self.profiles[i].queue.add(info, now);
            if member {
                // Siblings GangScheduling or Coscheduling hold at PreEnqueue count again.
                self.broadcast(ClusterEvent::new(
                    EventResource::UnscheduledPod,
                    ActionType::ADD,
                ));
            }
        }
        Ok(())
    }

    /// A pod changed. A pending pod that got a node (a binding observed) moves from the
    /// queue to the cache.
    pub fn on_pod_update(
        &mut self,
        old: &Pod,
        new: impl Into<Arc<Pod>>,
    ) -> Result<(), IngestError> {
        let info = PodInfo::new(new)?;
        let key = info.key().to_string();
        let was_assigned = old
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if was_assigned || info.node_name().is_some() || self.serves(info.scheduler_name()) {
            self.options.pod_group_states.update_pod(old, &info.pod);
        }
        self.options.legacy_workloads.update_pod(old, &info.pod);
        match (was_assigned, info.node_name().is_some()) {
            (false, true) => {
                self.nominator.delete(&key);
                for profile in &mut self.profiles {
                    profile.queue.delete(&key);
                }
                self.cache.add_pod_info(Arc::new(info))?;
                self.broadcast(ClusterEvent::new(
                    EventResource::AssignedPod,
                    ActionType::ADD,
                ));
            }
            (true, _) => {
                if info.pod.metadata.deletion_timestamp.is_some() {
                    self.nominator.victim_left(&key);
                }
                self.cache.update_pod_info(old, Arc::new(info));
                self.broadcast(ClusterEvent::new(
                    EventResource::AssignedPod,
                    ActionType::UPDATE,
                ));
            }
            (false, false) => {
                if let Some(&i) = self.by_name.get(info.scheduler_name()) {
                    let old_info = PodInfo::new(old.clone())?;
                    let now = self.now();
                    let info = Arc::new(info);
                    self.nominator.update(old, info.clone());
                    self.profiles[i].queue.update(&old_info, info, now);
                }
            }
        }
        Ok(())
    }

    pub fn on_pod_delete(&mut self, pod: &Pod) {
        self.options.pod_group_states.delete_pod(pod);
        self.options.legacy_workloads.delete_pod(pod);
        let key = pod_key(pod);
        let assigned = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if assigned {
            self.nominator.victim_left(&key);
            self.cache.remove_pod(pod);
            self.broadcast(ClusterEvent::new(
                EventResource::AssignedPod,
                ActionType::DELETE,
            ));
        } else {
            self.nominator.delete(&key);
            for profile in &mut self.profiles {
                profile.queue.delete(&key);
            }
        }
    }

    /// Moves pods whose backoff expired to activeQ and flushes pods unschedulable for
    /// too long; call periodically (the simulator calls it after advancing its clock).
    pub fn flush_queues(&mut self, now: Instant, flush_unschedulable: bool) {
        for profile in &mut self.profiles {
            profile.queue.flush_backoff_completed(now);
            if flush_unschedulable {
                profile.queue.flush_unschedulable_leftover(now);
            }
        }
    }

    /// The earliest moment a backed-off pod becomes ready again, over all queues.
    pub fn next_backoff_expiry(&self) -> Option<Instant> {
        self.profiles
            .iter()
            .filter_map(|p| p.queue.next_backoff_expiry())
            .min()
    }

    /// Whether any activeQ holds a pod or a group, or a group cycle's outputs wait.
    pub fn has_active(&self) -> bool {
        !self.pending.is_empty() || self.profiles.iter().any(|p| p.queue.has_active())
    }

    /// Runs one scheduling cycle for the next pod, serving profiles round-robin. `None`
    /// when every activeQ is empty. The attempt runs in a `scheduling_attempt` span naming
    /// the pod and the profile. A pod group's cycle places the group at once and hands
    /// out its outputs one per call: each member's, then the group's
    /// ([`CycleOutput::PodGroup`]).
    pub async fn schedule_one(&mut self) -> Option<CycleOutput> {
        loop {
            if let Some(output) = self.pending.pop_front() {
                return Some(output);
            }
            let now = self.now();
            let count = self.profiles.len();
            let (index, popped) = (0..count).find_map(|offset| {
                let i = (self.next_profile + offset) % count;
                self.profiles[i].queue.pop(now).map(|q| (i, q))
            })?;
            self.next_profile = (index + 1) % count.max(1);
            match popped {
                Popped::Pod(queued) => {
                    let span = tracing::debug_span!(
                        "scheduling_attempt",
                        pod = %format_args!("{}/{}", queued.pod_info.namespace(), queued.pod_info.name()),
                        profile = %self.profiles[index].scheduler_name,
                    );
                    return self.attempt(index, queued).instrument(span).await;
                }
                Popped::Group(group) => {
                    let span = tracing::debug_span!(
                        "pod_group_attempt",
                        group = %group.key,
                        profile = %self.profiles[index].scheduler_name,
                    );
                    self.attempt_group(index, group).instrument(span).await;
                }
            }
        }
    }

    /// One scheduling cycle of `queued`, popped from profile `index`'s queue.
    async fn attempt(&mut self, index: usize, queued: QueuedPodInfo) -> Option<CycleOutput> {
        self.cache.update_snapshot(&mut self.snapshot);
        let framework = self.profiles[index].framework.clone();
        let pod_cycle = self.profiles[index].queue.scheduling_cycle();
        self.cycles += 1;
        let now = self.now();
        let mut state = CycleState::new();
        let result = cycle::schedule_pod(
            &framework,
            &mut state,
            &queued.pod_info,
            &self.snapshot,
            &mut self.next_start_node_index,
            &mut self.rng,
            self.options.record_diagnosis,
            Some(cycle::BatchCycle {
                batch: &mut self.profiles[index].batch,
                cycle: self.cycles,
                now,
            }),
        )
        .await;
        let (node, diagnosis) = match result {
            Ok(ok) => ok,
            Err(mut failure) => {
                if state.read::<RetryAfterBackoff>().is_some()
                    || rejections_expire(&framework, &failure)
                {
                    failure.retry_after_backoff = true;
                }
                self.activate_requested(index, &mut state);
                return Some(CycleOutput::Done(
                    self.fail(index, queued, pod_cycle, failure),
                ));
            }
        };
        // An assumed pod needs its nomination no more (upstream deletes it at assume).
        self.nominator.delete(queued.pod_info.key());
        cycle::assume_reserve_permit(self, index, queued, pod_cycle, state, node, diagnosis).await
    }

    /// Applies the result of a binding cycle: confirms or forgets the assumed pod and
    /// requeues it on failure.
    pub fn complete_binding(&mut self, result: BindingResult) -> AttemptReport {
        let index = self.by_name.get(&result.scheduler_name).copied();
        let key = result.queued.pod_info.key().to_string();
        match result.status {
            Ok(()) => {
                let now = self.now();
                self.cache.finish_binding(&key, now);
                if let Some(i) = index {
                    self.profiles[i].queue.done(&key);
                }
                AttemptReport {
                    pod: result.queued.pod_info.clone(),
                    scheduler_name: result.scheduler_name,
                    attempts: result.queued.attempts,
                    outcome: Outcome::Scheduled { node: result.node },
                    diagnosis: result.diagnosis,
                    nominating: None,
                    preemption: None,
                }
            }
            Err(failure) => {
                let assumed = result.queued.pod_info.with_node_name(&result.node);
                self.forget(&assumed);
                // The freed resources may let other pods fit (upstream moves pods on an
                // assigned-pod delete when an assumed pod is forgotten).
                self.broadcast(ClusterEvent::new(
                    EventResource::AssignedPod,
                    ActionType::DELETE,
                ));
                match index {
                    Some(i) => self.fail(
                        i,
                        result.queued,
                        result.pod_cycle,
                        failure.with_diagnosis(result.diagnosis),
                    ),
                    None => AttemptReport {
                        pod: result.queued.pod_info.clone(),
                        scheduler_name: result.scheduler_name,
                        attempts: result.queued.attempts,
                        outcome: failure.outcome(),
                        diagnosis: result.diagnosis,
                        nominating: None,
                        preemption: None,
                    },
                }
            }
        }
    }

    /// Upstream `handleSchedulingFailure`: requeue (unschedulable or backoff) and report.
    /// Moves the pods the cycle's plugins asked for ([`PodsToActivate`]) to activeQ and
    /// empties the request, as upstream does: the cycle state lives on through the
    /// binding cycle, and a gang's members would each keep the keys of all the others.
    pub(super) fn activate_requested(&mut self, index: usize, state: &mut CycleState) {
        if let Some(PodsToActivate(keys)) = state.read_mut::<PodsToActivate>() {
            let keys = std::mem::take(keys);
            let now = self.now();
            self.profiles[index]
                .queue
                .activate(keys.iter().map(String::as_str), now);
        }
    }

    fn fail(
        &mut self,
        index: usize,
        queued: QueuedPodInfo,
        pod_cycle: u64,
        failure: failure::Failure,
    ) -> AttemptReport {
        let (queued, report) = self.prepare_failure(index, queued, failure);
        let now = self.now();
        let key = queued.pod_info.key().to_string();
        // A pod bound meanwhile (it is in the cache) is not requeued; the queue itself
        // drops pods deleted while they were being scheduled.
        let queue = &mut self.profiles[index].queue;
        if self.cache.get_pod(&key).is_none() {
            queue.add_unschedulable_if_not_present(queued, pod_cycle, now);
        } else {
            queue.done(&key);
        }
        report
    }

    /// The failure handling before the requeue: the rejectors recorded for the queue, the
    /// nomination and the preemption started, the report.
    fn prepare_failure(
        &mut self,
        index: usize,
        mut queued: QueuedPodInfo,
        failure: failure::Failure,
    ) -> (QueuedPodInfo, AttemptReport) {
        let now = self.now();
        if failure.retry_after_backoff {
            // No rejector to wait for an event of: the queue sends it to backoffQ.
            queued.unschedulable_plugins.clear();
            queued.pending_plugins.clear();
        } else {
            queued.unschedulable_plugins = failure.unschedulable_plugins.clone();
            queued.pending_plugins = failure.pending_plugins.clone();
        }
        queued.timestamp = now;
        let outcome = failure.outcome();
        let key = queued.pod_info.key().to_string();
        if let Some(node) = &failure.nominating {
            self.nominator.nominate(queued.pod_info.clone(), node);
        }
        if let Some(preemption) = &failure.preemption {
            self.start_preemption(&key, preemption, now);
        }
        let report = AttemptReport {
            pod: queued.pod_info.clone(),
            scheduler_name: self.profiles[index].scheduler_name.clone(),
            attempts: queued.attempts,
            outcome,
            diagnosis: failure.diagnosis,
            nominating: failure.nominating,
            preemption: failure.preemption.map(Box::new),
        };
        (queued, report)
    }

    /// Assumes `pod` on `node` in the cache and in its pod group's state.
    pub(super) fn assume(&mut self, pod: &PodInfo, node: &str) -> Result<(), CacheError> {
        self.cache.assume_pod(pod, node)?;
        if GroupKey::member_of(&pod.pod).is_some() {
            let assumed = pod.with_node_name(node);
            self.options.pod_group_states.assume(&assumed.pod);
        }
        // Upstream 1.35's GangScheduling Reserve.
        self.options.legacy_workloads.assume(&pod.pod);
        Ok(())
    }

    /// Forgets an assumed pod (`assumed` carries its node) in the cache and in its pod
    /// group's state.
    pub(super) fn forget(&mut self, assumed: &PodInfo) {
        let _ = self.cache.forget_pod(assumed.key());
        self.options.pod_group_states.forget(&assumed.pod);
        self.options.legacy_workloads.forget(&assumed.pod);
    }
}

impl Scheduler {
    /// A preemption was decided: its preemptor is held out of activeQ until the evictions
    /// end, and the lower-priority pods nominated to its node lose their nominations and
    /// are tried again at once, to find room elsewhere (upstream clears their
    /// `nominatedNodeName`, and the update moves them to activeQ).
    fn start_preemption(&mut self, preemptor: &str, preemption: &Preemption, now: Instant) {
        let last_victim = preemption.victims.last().map(|v| pod_key(&v.pod));
        self.nominator.start_preemption(preemptor, last_victim);
        let cleared: Vec<String> = preemption
            .cleared_nominations
            .iter()
            .map(|pod| pod_key(pod))
            .collect();
        for key in &cleared {
            self.nominator.delete(key);
        }
        for profile in &mut self.profiles {
            profile
                .queue
                .activate(cleared.iter().map(String::as_str), now);
        }
    }

    /// The adapter finished carrying out the preemption of `preemptor` (the key of
    /// [`Preemption::preemptor`]). On failure the preemptor loses its nomination (the
    /// adapter clears its status too) and is tried again at once, as upstream activates
    /// it; the retry nominates it again if preempting still helps. On success, if
    /// DefaultPreemption's PreEnqueue held it, it is admitted again if the hold is over.
    pub fn complete_preemption(&mut self, preemptor: &str, succeeded: bool) {
        self.nominator.finish_preemption(preemptor);
        if !succeeded {
            self.nominator.delete(preemptor);
        }
        let now = self.now();
        for profile in &mut self.profiles {
            if succeeded {
                profile.queue.recheck_gate(preemptor, now);
            } else {
                profile.queue.activate([preemptor], now);
            }
        }
    }
}

/// Whether a plugin that rejected the pod said its rejections expire with time
/// ([`crate::framework::Plugin::rejections_expire`]).
fn rejections_expire(framework: &Framework, failure: &failure::Failure) -> bool {
    use crate::framework::ExtensionPoint;
    failure.unschedulable_plugins.iter().any(|name| {
        [ExtensionPoint::PreFilter, ExtensionPoint::Filter]
            .into_iter()
            .flat_map(|point| framework.plugins(point))
            .any(|plugin| plugin.name() == name && plugin.rejections_expire())
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use k8s_openapi::api::core::v1::{NodeStatus, PodSpec};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::fmt::format::FmtSpan;

    use super::*;
    use crate::framework::{Handle, resolve};
    use crate::testing::executor::complete;

    /// What a tracing subscriber wrote.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let mut captured = self.0.lock().unwrap_or_else(|p| p.into_inner());
            captured.extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;

        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    fn node(name: &str) -> Node {
        let allocatable = [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]
            .map(|(k, v)| (k.to_string(), Quantity(v.into())));
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            status: Some(NodeStatus {
                allocatable: Some(BTreeMap::from(allocatable)),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod(namespace: &str, name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(PodSpec::default()),
            ..Default::default()
        }
    }

    /// Logs carry the pod and the profile of the attempt and of the binding cycle they
    /// come from, as kube-rs' reconcile spans carry the object.
    #[test]
    fn attempts_and_binding_cycles_run_in_spans_naming_pod_and_profile() {
        let registry = crate::plugins::default_registry();
        let resolved = resolve(&Default::default(), &registry).expect("the default profile");
        let framework = Framework::new(
            "default-scheduler",
            resolved,
            &registry,
            Handle::builder().build(),
        )
        .expect("the default plugins build");
        let mut scheduler = Scheduler::new(SchedulerOptions::default());
        scheduler
            .add_profile("default-scheduler", Arc::new(framework))
            .expect("a profile");
        scheduler.on_node_add(node("n1")).expect("a node");
        scheduler.on_pod_add(pod("shop", "web-0")).expect("a pod");

        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_max_level(tracing::Level::DEBUG)
            .with_span_events(FmtSpan::NEW)
            .with_ansi(false)
            .finish();
        let bound = tracing::subscriber::with_default(subscriber, || {
            complete(async {
                match scheduler.schedule_one().await {
                    Some(CycleOutput::Binding(cycle)) => cycle.run().await.is_success(),
                    _ => false,
                }
            })
        });
        assert!(bound, "the pod fits n1");

        let logs = String::from_utf8_lossy(&captured.0.lock().expect("not poisoned")).into_owned();
        for span in ["scheduling_attempt", "binding_cycle"] {
            let want = format!("{span}{{pod=shop/web-0 profile=default-scheduler}}");
            assert!(logs.contains(&want), "no {want} in:\n{logs}");
        }
    }
}
