//! The scheduling loop: the one task that owns the scheduler core.
//!
//! It applies cluster changes and profile commands as they arrive, runs one scheduling
//! cycle at a time while this replica leads and the caches are synced, and spawns each
//! binding cycle as its own task (a pod may wait at Permit while others are scheduled).
//! Between cycles it drains every pending message, so each cycle sees a fresh cache.
//! Backed-off pods are flushed when their backoff expires, unschedulable leftovers every
//! 30 s (upstream's intervals: 1 s and 30 s; here the backoff flush is exact).
//!
//! A scheduling cycle runs inside [`tokio::task::block_in_place`]: its Filter and Score
//! passes block until the scheduler's worker threads are done with every node, and a
//! tokio worker must not be held that long while it owns other tasks (watches, bindings,
//! the metrics server). `block_in_place` hands those tasks to another worker for the
//! duration of the cycle and keeps the loop on the runtime, where the cycle's async
//! plugin calls (metrics queries at PreFilter and PreScore) run as they would anywhere
//! else; a thread of the loop's own would need a second runtime for them.
//!
//! A preemption decided in a cycle ([`crate::framework::Preemption`]) is carried out by
//! its own task too ([`PreemptionExecutor`]), off the loop as upstream's asynchronous
//! preemption; its end is handed back to the scheduler, which retries the preemptor at
//! once when an API call failed.
//!
//! Losing the Lease stops new cycles at once; bindings and preemptions already in flight
//! finish (the Binding subresource guarantees a pod is bound at most once). On shutdown
//! the loop stops scheduling, waits for in-flight bindings and returns; a preemption still
//! running is cut short, and the preemptor keeps its nomination for the next leader.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use crate::cluster::pod_key;
use crate::observability::{AttemptResult, Metrics};
use crate::scheduler::{
    AttemptReport, BindingResult, CycleOutput, GroupResult, Outcome, Scheduler, SchedulerOptions,
};

use super::preemption::PreemptionExecutor;
use super::storage::STORAGE_KINDS;
use super::types::{ClusterChange, LoopMessage, ProfileCommand, SchedulingReport};

/// How often pods parked as unschedulable are flushed back (upstream: 30 s).
const UNSCHEDULABLE_FLUSH_INTERVAL: Duration = Duration::from_secs(30);
/// The longest the loop sleeps without looking at its queues.
const MAX_IDLE: Duration = Duration::from_secs(1);
/// The kinds whose first list must complete before scheduling starts (the storage kinds
/// too: [`super::storage::STORAGE_KINDS`]).
const SYNCED_KINDS: [&str; 4] = [
    "nodes",
    "pods",
    "namespaces",
    super::watches::DISRUPTION_BUDGETS_KIND,
];

/// Every kind the loop waits for before it schedules on any cluster, in a fixed order;
/// the device kinds the cluster serves come on top ([`super::devices::served_kinds`]).
/// The loop waits for the kinds its [`LoopChannels::unlisted`] starts with.
pub fn cached_kinds() -> impl Iterator<Item = &'static str> {
    SYNCED_KINDS.into_iter().chain(STORAGE_KINDS)
}

/// The loop's inputs and outputs.
pub struct LoopChannels {
    pub messages: mpsc::UnboundedReceiver<LoopMessage>,
    pub reports: mpsc::Sender<SchedulingReport>,
    pub leader: watch::Receiver<bool>,
    /// The kinds not listed yet ([`OperatorState::unlisted`](super::types::OperatorState)),
    /// starting with every kind the loop waits for.
    pub unlisted: watch::Sender<Vec<&'static str>>,
    /// Flips to true when the process is shutting down.
    pub shutdown: watch::Receiver<bool>,
}

/// The scheduling loop; see the module docs.
pub struct SchedulingLoop {
    scheduler: Scheduler,
    channels: LoopChannels,
    metrics: Arc<Metrics>,
    /// Every pod the watch reported, shared with the scheduler's cache and queues (one
    /// copy of each object in memory).
    pods: HashMap<String, Arc<Pod>>,
    /// The names of the nodes the watch reported (the objects live in the cache).
    nodes: HashSet<String>,
    namespaces: HashSet<String>,
    /// The Workload API PodGroups the watch reported, as `namespace/name`.
    scheduling_groups: HashSet<String>,
    listed: HashSet<&'static str>,
    bindings: JoinSet<(BindingResult, Instant)>,
    executor: PreemptionExecutor,
    /// Writes the conditions of Workload API PodGroups.
    pod_group_writer: Option<super::pod_group_status::PodGroupStatusWriter>,
    /// Preemptions being carried out: the preemptor's key and whether every call
    /// succeeded.
    preemptions: JoinSet<(String, bool)>,
    last_unschedulable_flush: Instant,
    last_gauges: Instant,
}

impl SchedulingLoop {
    pub fn new(
        options: SchedulerOptions,
        channels: LoopChannels,
        metrics: Arc<Metrics>,
        executor: PreemptionExecutor,
    ) -> Self {
        let now = options.clock.now();
        SchedulingLoop {
            scheduler: Scheduler::new(options),
            channels,
            metrics,
            pods: HashMap::new(),
            nodes: HashSet::new(),
            namespaces: HashSet::new(),
            scheduling_groups: HashSet::new(),
            listed: HashSet::new(),
            bindings: JoinSet::new(),
            executor,
            pod_group_writer: None,
            preemptions: JoinSet::new(),
            last_unschedulable_flush: now,
            last_gauges: now,
        }
    }

    /// Writes the conditions of Workload API PodGroups through `writer`.
    pub fn with_pod_group_writer(
        mut self,
        writer: super::pod_group_status::PodGroupStatusWriter,
    ) -> Self {
        self.pod_group_writer = Some(writer);
        self
    }

    fn active(&self) -> bool {
        *self.channels.leader.borrow()
            && self.channels.unlisted.borrow().is_empty()
            && !*self.channels.shutdown.borrow()
    }

    /// Runs until shutdown (after draining in-flight bindings) or until every sender of
    /// messages is gone.
    pub async fn run(mut self) {
        loop {
            while let Ok(message) = self.channels.messages.try_recv() {
                self.apply(message);
            }
            while let Some(done) = self.bindings.try_join_next() {
                self.binding_done(done).await;
            }
            while let Some(done) = self.preemptions.try_join_next() {
                self.preemption_done(done);
            }
            if *self.channels.shutdown.borrow() && self.bindings.is_empty() {
                info!("scheduling loop stopped");
                return;
            }
            self.update_gauges();
            if self.active() {
                let start = Instant::now();
                if let Some(output) = self.schedule_one() {
                    self.cycle_done(output, start).await;
                    continue;
                }
            }
            if !self.wait().await {
                return;
            }
        }
    }

    /// One scheduling cycle, off the async worker (see the module docs).
    fn schedule_one(&mut self) -> Option<CycleOutput> {
        let runtime = tokio::runtime::Handle::current();
        tokio::task::block_in_place(|| runtime.block_on(self.scheduler.schedule_one()))
    }

    /// Sleeps until a message, a finished binding, a queue deadline or a state change.
    /// False when the message channel closed.
    async fn wait(&mut self) -> bool {
        let clock = self.scheduler.clock().clone();
        let now = clock.now();
        let next_flush = self.last_unschedulable_flush + UNSCHEDULABLE_FLUSH_INTERVAL;
        let wake = self
            .scheduler
            .next_backoff_expiry()
            .unwrap_or(now + MAX_IDLE)
            .min(now + MAX_IDLE)
            .min(next_flush);
        tokio::select! {
            message = self.channels.messages.recv() => match message {
                Some(message) => self.apply(message),
                None => return false,
            },
            Some(done) = self.bindings.join_next(), if !self.bindings.is_empty() => {
                self.binding_done(done).await;
            }
            Some(done) = self.preemptions.join_next(), if !self.preemptions.is_empty() => {
                self.preemption_done(done);
            }
            _ = clock.sleep_until(wake) => {
                let now = clock.now();
                let flush_unschedulable = now >= next_flush;
                if flush_unschedulable {
                    self.last_unschedulable_flush = now;
                }
                self.scheduler.flush_queues(now, flush_unschedulable);
            }
            changed = self.channels.leader.changed() => {
                if changed.is_ok() {
                    let leading = *self.channels.leader.borrow();
                    self.metrics.set_leader(leading);
                    info!(leading, "scheduling {}", if leading { "started" } else { "stopped" });
                }
            }
            _ = self.channels.shutdown.changed() => {}
        }
        true
    }

    fn apply(&mut self, message: LoopMessage) {
        match message {
            LoopMessage::Cluster(change) => self.apply_change(change),
            LoopMessage::Profile(command) => self.apply_command(command),
        }
    }

    fn apply_change(&mut self, change: ClusterChange) {
        match change {
            ClusterChange::NodeApplied(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                let known = !self.nodes.insert(name.clone());
                let result = if known {
                    self.scheduler.on_node_update(node)
                } else {
                    self.scheduler.on_node_add(node)
                };
                if let Err(error) = result {
                    warn!(node = %name, %error, "node ignored");
                }
            }
            ClusterChange::NodeDeleted(node) => {
                let name = node.metadata.name.unwrap_or_default();
                self.nodes.remove(&name);
                self.scheduler.on_node_delete(&name);
            }
            ClusterChange::PodApplied(pod) => self.pod_applied(pod),
            ClusterChange::PodDeleted(pod) => self.pod_deleted(&pod_key(&pod)),
            ClusterChange::PodGroupChanged {
                namespace,
                name,
                group,
            } => self
                .scheduler
                .on_coscheduling_group_change(&namespace, &name, group.as_deref()),
            ClusterChange::SchedulingGroupApplied(group) => {
                self.scheduling_groups
                    .insert(super::scheduling_groups::key(&group));
                self.scheduler.on_scheduling_group_apply(group);
            }
            ClusterChange::SchedulingGroupDeleted(group) => {
                let key = crate::cluster::GroupKey::of_group(&group);
                self.scheduling_groups.remove(&key.to_string());
                self.scheduler.on_scheduling_group_delete(&key);
            }
            ClusterChange::ListerChanged { resource, action } => {
                self.scheduler.on_storage_change(resource, action)
            }
            ClusterChange::NamespaceApplied(namespace) => {
                if let Some(name) = namespace.metadata.name.clone() {
                    self.namespaces.insert(name);
                }
                self.scheduler.on_namespace_apply(&namespace);
            }
            ClusterChange::NamespaceDeleted(namespace) => {
                let name = namespace.metadata.name.unwrap_or_default();
                self.namespaces.remove(&name);
                self.scheduler.on_namespace_delete(&name);
            }
            ClusterChange::Listed { kind, keys } => self.listed(kind, &keys),
        }
    }

    fn pod_applied(&mut self, pod: Pod) {
        let key = pod_key(&pod);
        // Finished pods free their resources (upstream drops terminated pods from the
        // cache); a pending pod being deleted is not scheduled any more.
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        let terminal = matches!(phase, Some("Succeeded") | Some("Failed"));
        let assigned = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        let deleting_pending = !assigned && pod.metadata.deletion_timestamp.is_some();
        if terminal || deleting_pending {
            self.pod_deleted(&key);
            return;
        }
        let pod = Arc::new(pod);
        let result = match self.pods.insert(key.clone(), pod.clone()) {
            Some(old) => self.scheduler.on_pod_update(&old, pod),
            None => self.scheduler.on_pod_add(pod),
        };
        if let Err(error) = result {
            warn!(pod = %key, %error, "pod ignored");
        }
    }

    fn pod_deleted(&mut self, key: &str) {
        if let Some(pod) = self.pods.remove(key) {
            self.scheduler.on_pod_delete(&pod);
        }
    }

    fn listed(&mut self, kind: &'static str, keys: &HashSet<String>) {
        match kind {
            "pods" => {
                let gone: Vec<String> = self
                    .pods
                    .keys()
                    .filter(|k| !keys.contains(*k))
                    .cloned()
                    .collect();
                for key in gone {
                    self.pod_deleted(&key);
                }
            }
            "namespaces" => {
                let gone: Vec<String> = self
                    .namespaces
                    .iter()
                    .filter(|k| !keys.contains(*k))
                    .cloned()
                    .collect();
                for name in gone {
                    self.namespaces.remove(&name);
                    self.scheduler.on_namespace_delete(&name);
                }
            }
            super::scheduling_groups::KIND => {
                let gone: Vec<String> = self
                    .scheduling_groups
                    .iter()
                    .filter(|k| !keys.contains(*k))
                    .cloned()
                    .collect();
                for key in gone {
                    self.scheduling_groups.remove(&key);
                    if let Some((namespace, name)) = key.split_once('/') {
                        let group = crate::cluster::GroupKey::new(namespace, name);
                        self.scheduler.on_scheduling_group_delete(&group);
                    }
                }
            }
            "nodes" => {
                let gone: Vec<String> = self
                    .nodes
                    .iter()
                    .filter(|k| !keys.contains(*k))
                    .cloned()
                    .collect();
                for name in gone {
                    self.nodes.remove(&name);
                    self.scheduler.on_node_delete(&name);
                }
            }
            _ => {}
        }
        if self.listed.insert(kind) {
            self.channels.unlisted.send_if_modified(|kinds| {
                let before = kinds.len();
                kinds.retain(|k| *k != kind);
                if kinds.is_empty() && before > 0 {
                    info!("caches synced");
                }
                kinds.len() != before
            });
        }
    }

    fn apply_command(&mut self, command: ProfileCommand) {
        match command {
            ProfileCommand::Upsert {
                scheduler_name,
                framework,
            } => {
                let swapped = self.scheduler.serves(&scheduler_name);
                if let Err(error) = self.scheduler.add_profile(&scheduler_name, framework) {
                    warn!(scheduler = %scheduler_name, %error, "profile not started");
                    return;
                }
                info!(scheduler = %scheduler_name, "{}", if swapped { "profile reloaded" } else { "profile started" });
                // Pods that named this scheduler before it existed are queued now.
                let pending: Vec<Arc<Pod>> = self
                    .pods
                    .values()
                    .filter(|p| is_pending_for(p, &scheduler_name))
                    .cloned()
                    .collect();
                for pod in pending {
                    if let Err(error) = self.scheduler.on_pod_add(pod) {
                        warn!(%error, "pod ignored");
                    }
                }
            }
            ProfileCommand::Remove { scheduler_name } => {
                if self.scheduler.remove_profile(&scheduler_name) {
                    info!(scheduler = %scheduler_name, "profile stopped");
                    self.metrics.remove_profile(&scheduler_name);
                }
            }
        }
    }

    async fn cycle_done(&mut self, output: CycleOutput, start: Instant) {
        match output {
            CycleOutput::Done(report) => self.report(report, start).await,
            CycleOutput::Binding(cycle) => {
                debug!(pod = %pod_name(cycle.pod()), node = cycle.node(), "binding");
                self.bindings
                    .spawn(async move { (cycle.run().await, start) });
            }
            CycleOutput::PodGroup(report) => self.report_pod_group(report, start).await,
        }
    }

    /// A pod-group cycle ended: its metrics are recorded and its PodGroup's condition
    /// written.
    async fn report_pod_group(&mut self, report: crate::scheduler::PodGroupReport, start: Instant) {
        debug!(
            pod_group = %report.group,
            placed = report.placed,
            members = report.members,
            "pod group cycle"
        );
        if let Some(preemption) = report.preemption {
            self.metrics
                .workload_preemption(preemption.code, preemption.victims);
        }
        if let Some(attempt) = report.attempt {
            let result = match attempt.result {
                GroupResult::Scheduled => AttemptResult::Scheduled,
                GroupResult::Unschedulable => AttemptResult::Unschedulable,
                GroupResult::Error => AttemptResult::Error,
                GroupResult::WaitingOnPreemption => AttemptResult::WaitingOnPreemption,
            };
            self.metrics.pod_group_attempt(
                &report.scheduler_name,
                result,
                start.elapsed(),
                attempt.algorithm,
            );
        }
        let current = self.scheduler.pod_group_states().pod_group(&report.group);
        if let (Some(writer), Some(current)) = (&self.pod_group_writer, current) {
            writer.spawn_write(&current, &report);
        }
    }

    async fn binding_done(
        &mut self,
        done: Result<(BindingResult, Instant), tokio::task::JoinError>,
    ) {
        match done {
            Ok((result, start)) => {
                let profile = result.pod().scheduler_name();
                self.metrics
                    .binding(profile, result.is_success(), start.elapsed());
                let report = self.scheduler.complete_binding(result);
                self.report(report, start).await;
            }
            Err(error) => warn!(%error, "binding task failed"),
        }
    }

    /// A preemption task ended: the scheduler stops holding its preemptor back, and
    /// retries it at once if a call failed.
    fn preemption_done(&mut self, done: Result<(String, bool), tokio::task::JoinError>) {
        match done {
            Ok((preemptor, succeeded)) => {
                self.scheduler.complete_preemption(&preemptor, succeeded);
            }
            Err(error) => warn!(%error, "preemption task failed"),
        }
    }

    async fn report(&mut self, mut report: AttemptReport, start: Instant) {
        if let Some(preemption) = report.preemption.take() {
            debug!(
                pod = %pod_name(&report.pod),
                node = %preemption.node,
                victims = preemption.victims.len(),
                "preempting"
            );
            // A pod group's victims are observed with its PodGroupPostFilter's report.
            if preemption.group.is_none() {
                self.metrics.preemption_victims(preemption.victims.len());
            }
            let executor = self.executor.clone();
            let preemptor = preemption.preemptor_key();
            self.preemptions.spawn(async move {
                let succeeded = executor.run(&preemption).await;
                (preemptor, succeeded)
            });
        }
        let result = match &report.outcome {
            Outcome::Scheduled { .. } => AttemptResult::Scheduled,
            Outcome::Unschedulable { .. } => AttemptResult::Unschedulable,
            Outcome::Error { .. } => AttemptResult::Error,
        };
        self.metrics
            .schedule_attempt(&report.scheduler_name, result, start.elapsed());
        if let Outcome::Scheduled { node } = &report.outcome {
            info!(pod = %pod_name(&report.pod), node = %node, attempts = report.attempts, "scheduled");
        } else {
            debug!(pod = %pod_name(&report.pod), outcome = ?report.outcome, "not scheduled");
        }
        let message = SchedulingReport {
            pod: report.pod.pod.clone(),
            scheduler_name: report.scheduler_name,
            outcome: report.outcome,
            nominating: report.nominating,
        };
        if let Err(error) = self.channels.reports.try_send(message) {
            warn!(%error, "report dropped: the reporter is behind");
        }
    }

    /// Pending-pod gauges, at most once a second.
    fn update_gauges(&mut self) {
        if self.last_gauges.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.last_gauges = Instant::now();
        let mut counts: BTreeMap<&str, [i64; 5]> = BTreeMap::new();
        for profile in self.scheduler.profiles() {
            let c = profile.queue.pending_counts();
            counts.insert(
                &profile.scheduler_name,
                [
                    c.active as i64,
                    c.backoff as i64,
                    c.unschedulable as i64,
                    c.gated as i64,
                    c.incomplete as i64,
                ],
            );
        }
        for (profile, [active, backoff, unschedulable, gated, incomplete]) in counts {
            self.metrics.set_pending_pods(profile, "active", active);
            self.metrics.set_pending_pods(profile, "backoff", backoff);
            self.metrics
                .set_pending_pods(profile, "unschedulable", unschedulable);
            self.metrics.set_pending_pods(profile, "gated", gated);
            self.metrics
                .set_pending_pods(profile, "incomplete", incomplete);
        }
    }
}

/// `namespace/name`, for logs.
fn pod_name(pod: &crate::cluster::PodInfo) -> String {
    format!("{}/{}", pod.namespace(), pod.name())
}

/// An unassigned, not-deleted pod naming `scheduler_name`.
fn is_pending_for(pod: &Pod, scheduler_name: &str) -> bool {
    let spec = pod.spec.as_ref();
    let unassigned = spec
        .and_then(|s| s.node_name.as_deref())
        .is_none_or(str::is_empty);
    let named = spec
        .and_then(|s| s.scheduler_name.as_deref())
        .unwrap_or("default-scheduler")
        == scheduler_name;
    unassigned && named && pod.metadata.deletion_timestamp.is_none()
}
