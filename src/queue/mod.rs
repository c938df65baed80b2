//! The scheduling queue of one profile, as upstream's `PriorityQueue`
//! (`pkg/scheduler/internal/queue/scheduling_queue.go`).
//!
//! A pending pod waits in exactly one place:
//!
//! - **activeQ**: ready to be tried, ordered by the profile's QueueSort plugin (arrival
//!   order among pods the plugin considers equal). [`SchedulingQueue::pop`] takes the head.
//! - **backoffQ**: failed recently and waits out `initial * 2^(attempts-1)` (capped at
//!   `max`) from its last failure; [`SchedulingQueue::flush_backoff_completed`] moves
//!   expired pods on.
//! - **unschedulable**: rejected by plugins; waits for a cluster event one of them
//!   registered ([`SchedulingQueue::move_all_to_active_or_backoff`]) or for
//!   `unschedulable_max_stay` ([`SchedulingQueue::flush_unschedulable_leftover`]).
//! - **gated**: rejected by a PreEnqueue plugin, which is run whenever a pod is about to
//!   enter activeQ; the pod stays out until that plugin admits it (upstream keeps these in
//!   `unschedulablePods` with `Gated` set).
//!
//! Between `pop` and `add_unschedulable_if_not_present` (or `done`) the pod is *in flight*.
//!
//! The queue is a plain data structure: no tasks, no locks, no clock. Calls that depend on
//! time take `now`; the owner runs the periodic flushes (upstream: every 1 s and 30 s), or,
//! in the simulator, jumps its virtual clock to [`SchedulingQueue::next_backoff_expiry`]
//! and [`SchedulingQueue::next_unschedulable_flush`].
//!
//! Where this differs from upstream (without QueueingHints), and why:
//!
//! - Updates and deletes of an in-flight pod are remembered instead of enqueueing a second
//!   copy: a pod deleted while being scheduled is not requeued, and a pod updated while
//!   being scheduled is requeued with its newest version into backoffQ, since the update
//!   may have resolved its rejection (upstream's QueueingHint path does the same).
//! - Whether an update "may make the pod schedulable" ignores `managedFields` besides
//!   upstream's `resourceVersion`, `generation` and `status`, so the scheduler's own
//!   condition patch does not pull a pod out of the unschedulable set.
//! - A gated pod is moved only by events its gating PreEnqueue plugin registered; the
//!   other rejectors of an earlier attempt cannot admit it while the gate holds.
//! - A pod is due at exactly `since + unschedulable_max_stay` (upstream: strictly after),
//!   so a virtual clock advanced to [`SchedulingQueue::next_unschedulable_flush`] always
//!   makes progress. A gated pod that is still gated after a flush restarts that clock.

mod active;
mod groups;
#[cfg(test)]
mod tests;
mod timed;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tracing::{debug, warn};

use crate::cluster::{GroupDialect, GroupKey, PodInfo};
use crate::framework::{ActionType, ClusterEvent, EventResource, Plugin, QueuedPodInfo};

use active::ActiveQueue;
pub use groups::GroupParams;
use groups::{GroupEntity, proxy_key};
use timed::TimedPods;

/// Upstream's default `podInitialBackoffSeconds`.
pub const DEFAULT_POD_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// Upstream's default `podMaxBackoffSeconds`.
pub const DEFAULT_POD_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Upstream's `DefaultPodMaxInUnschedulablePodsDuration`.
pub const DEFAULT_UNSCHEDULABLE_MAX_STAY: Duration = Duration::from_secs(5 * 60);

/// What a [`SchedulingQueue`] is built from: the profile's QueueSort and PreEnqueue
/// plugins, the events each plugin registered, and the timing bounds.
#[derive(Clone)]
pub struct QueueConfig {
    /// Orders activeQ through `as_queue_sort().less`.
    pub queue_sort: Arc<dyn Plugin>,
    /// Run in order before a pod enters activeQ; the first non-Success gates the pod.
    pub pre_enqueue: Vec<Arc<dyn Plugin>>,
    /// Plugin name -> the events it registered (`None`: any event). A rejecting plugin
    /// missing here is treated as `None`, as upstream does for plugins without
    /// `EnqueueExtensions`.
    pub plugin_events: HashMap<String, Option<Vec<ClusterEvent>>>,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// How long a pod may stay unschedulable (or gated) before it is retried anyway.
    pub unschedulable_max_stay: Duration,
    /// Whether members of Workload API pod groups wait and leave as groups; when the
    /// cluster's PodGroups are not fed to the scheduler they are queued as lone pods.
    pub pod_groups: bool,
    /// Whether members of Coscheduling groups (berth's or scheduler-plugins' PodGroups)
    /// whose PodGroup is known wait and leave as groups. A member whose PodGroup is not
    /// known is a lone pod, which Coscheduling's PreFilter rejects as scheduler-plugins
    /// does.
    pub coscheduling_groups: bool,
}

impl QueueConfig {
    /// A configuration with upstream's default backoff (1 s to 10 s) and a 5 minute
    /// maximum stay in the unschedulable set, no PreEnqueue plugins and no registered
    /// events (every rejection is retried on any event).
    pub fn new(queue_sort: Arc<dyn Plugin>) -> Self {
        QueueConfig {
            queue_sort,
            pre_enqueue: Vec::new(),
            plugin_events: HashMap::new(),
            initial_backoff: DEFAULT_POD_INITIAL_BACKOFF,
            max_backoff: DEFAULT_POD_MAX_BACKOFF,
            unschedulable_max_stay: DEFAULT_UNSCHEDULABLE_MAX_STAY,
            pod_groups: true,
            coscheduling_groups: false,
        }
    }

    pub fn with_pre_enqueue(mut self, plugins: Vec<Arc<dyn Plugin>>) -> Self {
        self.pre_enqueue = plugins;
        self
    }

    pub fn with_plugin_events(
        mut self,
        plugin_events: HashMap<String, Option<Vec<ClusterEvent>>>,
    ) -> Self {
        self.plugin_events = plugin_events;
        self
    }

    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    pub fn with_unschedulable_max_stay(mut self, max_stay: Duration) -> Self {
        self.unschedulable_max_stay = max_stay;
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pre_enqueue: Vec<&str> = self.pre_enqueue.iter().map(|p| p.name()).collect();
        f.debug_struct("QueueConfig")
            .field("queue_sort", &self.queue_sort.name())
            .field("pre_enqueue", &pre_enqueue)
            .field("plugin_events", &self.plugin_events)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("unschedulable_max_stay", &self.unschedulable_max_stay)
            .field("pod_groups", &self.pod_groups)
            .field("coscheduling_groups", &self.coscheduling_groups)
            .finish()
    }
}

/// Where a pod is in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placement {
    Active,
    Backoff,
    Unschedulable,
    Gated,
    /// Popped and not yet requeued or done.
    InFlight,
    /// A member of a pod group whose PodGroup the queue has not seen.
    Incomplete,
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Placement::Active => "activeQ",
            Placement::Backoff => "backoffQ",
            Placement::Unschedulable => "unschedulablePods",
            Placement::Gated => "gated",
            Placement::InFlight => "in flight",
            Placement::Incomplete => "incomplete",
        })
    }
}

/// Number of pods in each part of the queue (in-flight pods are not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PendingCounts {
    pub active: usize,
    pub backoff: usize,
    pub unschedulable: usize,
    pub gated: usize,
    /// Members of pod groups whose PodGroup the queue has not seen.
    pub incomplete: usize,
}

/// What [`SchedulingQueue::pop`] hands out: a pod, or the members of a pod group.
#[derive(Debug)]
pub enum Popped {
    Pod(QueuedPodInfo),
    Group(QueuedGroup),
}

impl Popped {
    /// The pod, if a pod was popped.
    pub fn pod(self) -> Option<QueuedPodInfo> {
        match self {
            Popped::Pod(queued) => Some(queued),
            Popped::Group(_) => None,
        }
    }
}

/// The members of a pod group, popped together for one pod-group cycle, in the order the
/// cycle tries them.
#[derive(Debug)]
pub struct QueuedGroup {
    pub key: GroupKey,
    /// The PodGroup's `spec.priority` as the queue knew it.
    pub priority: i32,
    pub params: GroupParams,
    pub members: Vec<QueuedPodInfo>,
}

/// How a pod-group cycle ended, for [`SchedulingQueue::requeue_group`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupOutcome {
    /// The group was placed; members left over (rejected one by one) retry at once.
    Scheduled,
    /// The group was rejected: its backoff grows with its rejections in a row.
    Rejected,
    /// The cycle failed with an error.
    Error,
}

/// What happened to a pod while it was being scheduled.
#[derive(Default)]
struct InFlight {
    /// The newest version of the pod seen meanwhile.
    latest: Option<Arc<PodInfo>>,
    /// Whether one of those updates may make the pod schedulable.
    updated: bool,
    deleted: bool,
}

/// How a pod leaves the unschedulable set (upstream's `queueAfterBackoff` and
/// `queueImmediately`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Requeue {
    AfterBackoff,
    Immediately,
}

/// The scheduling queue of one profile; see the module docs.
pub struct SchedulingQueue {
    config: QueueConfig,
    active: ActiveQueue,
    /// Ordered by backoff expiry.
    backoff: TimedPods,
    /// Ordered by the time the pod was parked (its last failure).
    unschedulable: TimedPods,
    /// Ordered by the time PreEnqueue last rejected the pod.
    gated: TimedPods,
    in_flight: HashMap<String, InFlight>,
    /// Incremented on every pop.
    scheduling_cycle: u64,
    /// The scheduling cycle at the last move request; a pod that failed in this cycle or
    /// an earlier one may have missed the event and goes to backoffQ.
    move_request_cycle: Option<u64>,
    /// Pod groups waiting in activeQ, backoffQ or the gated set (as proxies), by proxy key.
    groups: HashMap<String, GroupEntity>,
    /// The PodGroups the queue has seen, with their `spec.priority`.
    known_groups: HashMap<GroupKey, i32>,
    /// Members of groups whose PodGroup the queue has not seen.
    incomplete: HashMap<GroupKey, Vec<QueuedPodInfo>>,
    /// The group of each member held in `groups` or `incomplete`.
    member_group: HashMap<String, GroupKey>,
}

impl SchedulingQueue {
    pub fn new(config: QueueConfig) -> Self {
        if config.queue_sort.as_queue_sort().is_none() {
            warn!(
                plugin = config.queue_sort.name(),
                "the queue sort plugin does not implement QueueSort; activeQ is FIFO"
            );
        }
        for plugin in &config.pre_enqueue {
            if plugin.as_pre_enqueue().is_none() {
                warn!(
                    plugin = plugin.name(),
                    "plugin does not implement PreEnqueue; it never gates pods"
                );
            }
        }
        SchedulingQueue {
            active: ActiveQueue::new(config.queue_sort.clone()),
            config,
            backoff: TimedPods::default(),
            unschedulable: TimedPods::default(),
            gated: TimedPods::default(),
            in_flight: HashMap::new(),
            scheduling_cycle: 0,
            move_request_cycle: None,
            groups: HashMap::new(),
            known_groups: HashMap::new(),
            incomplete: HashMap::new(),
            member_group: HashMap::new(),
        }
    }

    /// Switches to a new profile configuration (a profile hot-swap) keeping every pod and
    /// its bookkeeping: activeQ is re-sorted with the new QueueSort plugin, backed-off and
    /// unschedulable pods keep their times, gated pods and activeQ pods go through the new
    /// PreEnqueue plugins again, pods being scheduled stay in flight.
    pub fn reconfigure(&mut self, config: QueueConfig, now: Instant) {
        let mut old = std::mem::replace(self, SchedulingQueue::new(config));
        self.in_flight = std::mem::take(&mut old.in_flight);
        self.scheduling_cycle = old.scheduling_cycle;
        self.move_request_cycle = old.move_request_cycle;
        self.groups = std::mem::take(&mut old.groups);
        self.known_groups = std::mem::take(&mut old.known_groups);
        self.incomplete = std::mem::take(&mut old.incomplete);
        self.member_group = std::mem::take(&mut old.member_group);
        for (at, queued) in old.backoff.iter() {
            self.backoff.insert(at, queued.clone());
        }
        for (at, queued) in old.unschedulable.iter() {
            self.unschedulable.insert(at, queued.clone());
        }
        let readmit: Vec<QueuedPodInfo> = old
            .gated
            .iter()
            .map(|(_, q)| q.clone())
            .chain(std::iter::from_fn(|| old.active.pop()))
            .collect();
        for queued in readmit {
            self.admit(queued, now);
        }
    }

    /// Adds a new pending pod: to activeQ, or to the gated set if a PreEnqueue plugin
    /// rejects it. A pod the queue already holds is updated instead.
    pub fn add(&mut self, pod: Arc<PodInfo>, now: Instant) -> Placement {
        let key = pod.key().to_string();
        if let Some(flight) = self.in_flight.get_mut(&key) {
            flight.latest = Some(pod);
            return Placement::InFlight;
        }
        if let Some(queued) = self.queued(&key) {
            let old = queued.pod_info.clone();
            return self.update(&old, pod, now);
        }
        if self.group_of(&pod).is_some() {
            return self.add_member(QueuedPodInfo::new(pod, now), now);
        }
        self.admit(QueuedPodInfo::new(pod, now), now)
    }

    /// The PodGroup `group` appeared or changed (its `spec.priority`, 0 when unset): the
    /// members that waited for it form the group's entity, which goes through PreEnqueue.
    /// A Coscheduling group's members queued as lone pods until now join it.
    pub fn add_pod_group(&mut self, group: GroupKey, priority: i32, now: Instant) {
        let known = self.known_groups.insert(group.clone(), priority).is_some();
        if let Some(entity) = self.groups.get_mut(&proxy_key(&group)) {
            entity.priority = priority;
        }
        if known {
            return;
        }
        for member in self.incomplete.remove(&group).unwrap_or_default() {
            self.member_group.remove(member.pod_info.key());
            self.add_member(member, now);
        }
        if group.dialect == GroupDialect::Coscheduling && self.config.coscheduling_groups {
            for member in self.take_lone_members(&group) {
                self.add_member(member, now);
            }
        }
    }

    /// The lone pods waiting in activeQ, backoffQ, the unschedulable or the gated set that
    /// belong to `group`, taken out.
    fn take_lone_members(&mut self, group: &GroupKey) -> Vec<QueuedPodInfo> {
        let belongs =
            |q: &QueuedPodInfo| GroupKey::member_of(&q.pod_info.pod).as_ref() == Some(group);
        let keys: Vec<String> = self
            .active
            .iter()
            .chain(self.backoff.iter().map(|(_, q)| q))
            .chain(self.unschedulable.iter().map(|(_, q)| q))
            .chain(self.gated.iter().map(|(_, q)| q))
            .filter(|q| belongs(q))
            .map(|q| q.pod_info.key().to_string())
            .collect();
        keys.iter()
            .filter_map(|key| {
                self.active
                    .remove(key)
                    .or_else(|| self.backoff.remove(key))
                    .or_else(|| self.unschedulable.remove(key))
                    .or_else(|| self.gated.remove(key))
            })
            .collect()
    }

    /// The PodGroup `group` is gone: the queued members of a Workload API group wait for
    /// it again, keeping their own bookkeeping; those of a Coscheduling group go on as
    /// lone pods. The group's bookkeeping is lost.
    pub fn delete_pod_group(&mut self, group: &GroupKey, now: Instant) {
        if self.known_groups.remove(group).is_none() {
            return;
        }
        let proxy = proxy_key(group);
        self.remove_proxy(&proxy);
        let Some(entity) = self.groups.remove(&proxy) else {
            return;
        };
        if group.dialect == GroupDialect::Coscheduling {
            for member in entity.members {
                self.member_group.remove(member.pod_info.key());
                self.admit(member, now);
            }
            return;
        }
        let waiting = self.incomplete.entry(group.clone()).or_default();
        waiting.extend(entity.members);
    }

    /// The pod group `pod` belongs to, if the queue groups its pods: a Workload API
    /// PodGroup where those are served, a Coscheduling group once its PodGroup is known.
    fn group_of(&self, pod: &PodInfo) -> Option<GroupKey> {
        match GroupKey::member_of(&pod.pod)? {
            key if key.dialect == GroupDialect::Workload => self.config.pod_groups.then_some(key),
            key => (self.config.coscheduling_groups && self.known_groups.contains_key(&key))
                .then_some(key),
        }
    }

    /// Puts a member with its group: into the group's entity wherever it waits (activeQ
    /// runs PreEnqueue again, as may backoffQ; the gated set keeps the group as it is:
    /// the member's arrival is an event that re-runs its gate), into a new entity through
    /// PreEnqueue, or, while the PodGroup is unknown, aside.
    fn add_member(&mut self, mut member: QueuedPodInfo, now: Instant) -> Placement {
        let Some(group) = self.group_of(&member.pod_info) else {
            return self.admit(member, now);
        };
        let key = member.pod_info.key().to_string();
        self.member_group.insert(key.clone(), group.clone());
        let Some(&priority) = self.known_groups.get(&group) else {
            let waiting = self.incomplete.entry(group).or_default();
            waiting.retain(|m| m.pod_info.key() != key);
            waiting.push(member);
            return Placement::Incomplete;
        };
        let proxy = proxy_key(&group);
        member.gated_by = None;
        if let Some(entity) = self.groups.get_mut(&proxy) {
            entity.insert(member);
            if let Some(queued) = self.active.remove(&proxy) {
                return self.admit(queued, now);
            }
            if self.backoff.contains(&proxy) {
                if let Some(plugin) = self.gate(&proxy) {
                    if let Some(mut queued) = self.backoff.remove(&proxy) {
                        queued.gated_by = Some(plugin);
                        self.gated.insert(now, queued);
                    }
                    return Placement::Gated;
                }
                return Placement::Backoff;
            }
            return self.placement(&proxy).unwrap_or(Placement::Gated);
        }
        let mut entity = GroupEntity::new(group, priority, GroupParams::new(member.timestamp));
        entity.insert(member);
        let queued = entity.proxy(None);
        self.groups.insert(proxy, entity);
        self.admit(queued, now)
    }

    /// Takes the head of activeQ, non-blocking: a pod, or a pod group with every member
    /// (each in flight from now on). Counts the attempt (of the group and of each member),
    /// starts a new scheduling cycle and clears the rejectors of the previous attempt.
    pub fn pop(&mut self, now: Instant) -> Option<Popped> {
        let mut queued = self.active.pop()?;
        if let Some(mut entity) = self.groups.remove(queued.pod_info.key()) {
            entity.params.attempts += 1;
            entity.params.initial_attempt_timestamp.get_or_insert(now);
            for member in &mut entity.members {
                member.attempts += 1;
                member.initial_attempt_timestamp.get_or_insert(now);
                member.unschedulable_plugins.clear();
                member.pending_plugins.clear();
                member.gated_by = None;
                let key = member.pod_info.key().to_string();
                self.member_group.remove(&key);
                self.in_flight.insert(key, InFlight::default());
            }
            self.scheduling_cycle += 1;
            return Some(Popped::Group(QueuedGroup {
                key: entity.key,
                priority: entity.priority,
                params: entity.params,
                members: entity.members,
            }));
        }
        queued.attempts += 1;
        queued.initial_attempt_timestamp.get_or_insert(now);
        queued.unschedulable_plugins.clear();
        queued.pending_plugins.clear();
        self.scheduling_cycle += 1;
        self.in_flight
            .insert(queued.pod_info.key().to_string(), InFlight::default());
        Some(Popped::Pod(queued))
    }

    /// Requeues the members of a popped group that were not placed (upstream
    /// `AddAttemptedPodGroupIfNeeded`); their own rejectors must be set. They wait as one
    /// entity with the group's bookkeeping: after a rejection or an error the group backs
    /// off (never into the unschedulable set: only a PreEnqueue gate parks a group); after
    /// a success the leftovers go to activeQ at once, keeping the group's timestamp.
    /// Members deleted meanwhile are dropped. `None` when nothing was requeued.
    pub fn requeue_group(
        &mut self,
        group: QueuedGroup,
        outcome: GroupOutcome,
        now: Instant,
    ) -> Option<Placement> {
        let QueuedGroup {
            key: group_key,
            priority: _,
            mut params,
            members,
        } = group;
        let mut left = Vec::new();
        for mut member in members {
            let key = member.pod_info.key().to_string();
            let flight = self.in_flight.remove(&key).unwrap_or_default();
            if flight.deleted || self.placement(&key).is_some() {
                continue;
            }
            if let Some(latest) = flight.latest {
                member.pod_info = latest;
            }
            member.timestamp = now;
            member.gated_by = None;
            left.push(member);
        }
        if left.is_empty() {
            return None;
        }
        match outcome {
            GroupOutcome::Scheduled => {
                params.unschedulable_count = 0;
                params.consecutive_errors = 0;
            }
            GroupOutcome::Rejected => {
                params.unschedulable_count += 1;
                params.consecutive_errors = 0;
                params.timestamp = now;
            }
            GroupOutcome::Error => {
                params.consecutive_errors += 1;
                params.timestamp = now;
            }
        }
        let proxy = proxy_key(&group_key);
        let Some(priority) = self.known_groups.get(&group_key).copied() else {
            for member in left {
                self.add_member(member, now);
            }
            return Some(Placement::Incomplete);
        };
        // Members that rejoined meanwhile (a failed binding) join this entity.
        self.remove_proxy(&proxy);
        let mut entity = self
            .groups
            .remove(&proxy)
            .unwrap_or_else(|| GroupEntity::new(group_key.clone(), priority, params.clone()));
        entity.params = params;
        entity.priority = priority;
        for member in left {
            self.member_group
                .insert(member.pod_info.key().to_string(), group_key.clone());
            entity.insert(member);
        }
        let (initial, max) = (self.config.initial_backoff, self.config.max_backoff);
        let expiry = entity
            .params
            .timestamp
            .checked_add(entity.backoff(initial, max))
            .unwrap_or(entity.params.timestamp);
        let queued = entity.proxy(None);
        self.groups.insert(proxy.clone(), entity);
        if outcome != GroupOutcome::Scheduled && expiry > now {
            if let Some(plugin) = self.gate(&proxy) {
                let mut queued = queued;
                queued.gated_by = Some(plugin);
                self.gated.insert(now, queued);
                return Some(Placement::Gated);
            }
            self.backoff.insert(expiry, queued);
            return Some(Placement::Backoff);
        }
        Some(self.admit(queued, now))
    }

    /// The cycle of the last pop; pass it back to `add_unschedulable_if_not_present`.
    pub fn scheduling_cycle(&self) -> u64 {
        self.scheduling_cycle
    }

    /// Requeues a pod whose attempt failed; `queued.unschedulable_plugins` and
    /// `pending_plugins` must hold its rejectors. Goes to backoffQ when a move request
    /// arrived during or after `pod_scheduling_cycle`, when nothing rejected the pod (an
    /// Error), or when the pod was updated meanwhile; otherwise to the unschedulable set.
    /// `None` when not requeued: the pod was deleted meanwhile, or is already queued.
    pub fn add_unschedulable_if_not_present(
        &mut self,
        mut queued: QueuedPodInfo,
        pod_scheduling_cycle: u64,
        now: Instant,
    ) -> Option<Placement> {
        let key = queued.pod_info.key().to_string();
        let flight = self.in_flight.remove(&key).unwrap_or_default();
        if let Some(placement) = self.placement(&key) {
            warn!(pod = %key, %placement, "failed pod is already in the scheduling queue");
            return None;
        }
        if flight.deleted {
            debug!(pod = %key, "pod was deleted while being scheduled; not requeued");
            return None;
        }
        if let Some(latest) = flight.latest {
            queued.pod_info = latest;
        }
        queued.timestamp = now;
        queued.gated_by = None;
        if self.group_of(&queued.pod_info).is_some() {
            // A member that failed on its own (its binding) rejoins its group wherever the
            // group waits, or starts a new entity in activeQ.
            return Some(self.add_member(queued, now));
        }
        let no_rejectors =
            queued.unschedulable_plugins.is_empty() && queued.pending_plugins.is_empty();
        let missed_move = self
            .move_request_cycle
            .is_some_and(|cycle| cycle >= pod_scheduling_cycle);
        if missed_move || no_rejectors || flight.updated {
            let expiry = self.backoff_expiry(&queued);
            self.backoff.insert(expiry, queued);
            Some(Placement::Backoff)
        } else {
            self.unschedulable.insert(now, queued);
            Some(Placement::Unschedulable)
        }
    }

    /// The pod's scheduling is over without a requeue (bound, or given up); forgets its
    /// in-flight record. Implied by `add_unschedulable_if_not_present`.
    pub fn done(&mut self, key: &str) {
        self.in_flight.remove(key);
    }

    /// A pending pod changed. In activeQ or backoffQ it is updated in place (activeQ
    /// re-sorts it). In the unschedulable or gated set it moves on when the update may make
    /// it schedulable (anything but `resourceVersion`, `generation`, `managedFields` and
    /// `status` changed): a gated pod re-runs PreEnqueue, an unschedulable one goes to
    /// backoffQ while backing off, else through PreEnqueue to activeQ. An unknown pod is
    /// added.
    pub fn update(&mut self, old: &PodInfo, new: Arc<PodInfo>, now: Instant) -> Placement {
        let key = new.key().to_string();
        let updated = may_make_schedulable(&old.pod, &new.pod);
        if let Some(flight) = self.in_flight.get_mut(&key) {
            flight.latest = Some(new);
            flight.updated |= updated;
            return Placement::InFlight;
        }
        if let Some(group) = self.member_group.get(&key).cloned() {
            return self.update_member(&group, &key, new, updated, now);
        }
        if self
            .active
            .update(&key, |queued| queued.pod_info = new.clone())
        {
            return Placement::Active;
        }
        if let Some(queued) = self.backoff.get_mut(&key) {
            queued.pod_info = new;
            return Placement::Backoff;
        }
        if let Some(queued) = self.unschedulable.get_mut(&key) {
            queued.pod_info = new;
            if !updated {
                return Placement::Unschedulable;
            }
            return match self.unschedulable.remove(&key) {
                Some(queued) => self.requeue(queued, Requeue::AfterBackoff, now),
                None => Placement::Unschedulable,
            };
        }
        if let Some(queued) = self.gated.get_mut(&key) {
            queued.pod_info = new;
            if !updated {
                return Placement::Gated;
            }
            return match self.gated.remove(&key) {
                Some(queued) => self.readmit_gated(queued, now),
                None => Placement::Gated,
            };
        }
        self.admit(QueuedPodInfo::new(new, now), now)
    }

    /// A queued member changed: it is updated in its entity; a gated group whose member
    /// changed in a way that may make it schedulable runs PreEnqueue again.
    fn update_member(
        &mut self,
        group: &GroupKey,
        key: &str,
        new: Arc<PodInfo>,
        updated: bool,
        now: Instant,
    ) -> Placement {
        if let Some(waiting) = self.incomplete.get_mut(group) {
            if let Some(member) = waiting.iter_mut().find(|m| m.pod_info.key() == key) {
                member.pod_info = new;
            }
            return Placement::Incomplete;
        }
        let proxy = proxy_key(group);
        if let Some(member) = self.groups.get_mut(&proxy).and_then(|e| e.get_mut(key)) {
            member.pod_info = new;
        }
        let placement = self.placement(&proxy).unwrap_or(Placement::Active);
        if placement == Placement::Gated
            && updated
            && let Some(queued) = self.gated.remove(&proxy)
        {
            return self.readmit_gated(queued, now);
        }
        placement
    }

    /// Removes the pod wherever it is; an in-flight pod will not be requeued. False when
    /// the queue does not know the pod.
    pub fn delete(&mut self, key: &str) -> bool {
        if let Some(flight) = self.in_flight.get_mut(key) {
            flight.deleted = true;
            return true;
        }
        if let Some(group) = self.member_group.remove(key) {
            if let Some(waiting) = self.incomplete.get_mut(&group) {
                waiting.retain(|m| m.pod_info.key() != key);
                if waiting.is_empty() {
                    self.incomplete.remove(&group);
                }
                return true;
            }
            let proxy = proxy_key(&group);
            let Some(entity) = self.groups.get_mut(&proxy) else {
                return false;
            };
            entity.remove(key);
            if entity.members.is_empty() {
                self.remove_proxy(&proxy);
                self.groups.remove(&proxy);
            }
            return true;
        }
        self.active.remove(key).is_some()
            || self.backoff.remove(key).is_some()
            || self.unschedulable.remove(key).is_some()
            || self.gated.remove(key).is_some()
    }

    /// A cluster event happened. Moves every unschedulable pod one of whose rejectors
    /// registered a matching event (a pod with no rejectors matches any event): to activeQ
    /// at once if the matching rejector returned Pending, else to backoffQ while backing
    /// off, else through PreEnqueue to activeQ. Gated pods whose gating plugin registered
    /// the event re-run PreEnqueue. Records the move request for in-flight pods. Returns
    /// how many pods left the unschedulable and gated sets.
    pub fn move_all_to_active_or_backoff(&mut self, event: &ClusterEvent, now: Instant) -> usize {
        let moved = self.move_parked(event, now, |_| true);
        self.move_request_cycle = Some(self.scheduling_cycle);
        moved
    }

    /// Upstream `Activate`: moves the pods with these keys from the unschedulable set,
    /// backoffQ or the gated set through PreEnqueue to activeQ, backoff or not (a plugin knows they can
    /// make progress now, e.g. a gang member's siblings); a gated pod stays gated if its
    /// PreEnqueue plugin still says so. Pods elsewhere, or in flight, are left alone; an
    /// in-flight pod missed nothing, it is being scheduled. Returns how many reached
    /// activeQ.
    pub fn activate<'k>(&mut self, keys: impl IntoIterator<Item = &'k str>, now: Instant) -> usize {
        let mut moved = 0;
        for key in keys {
            // A member moves its whole group.
            let proxy = self.member_group.get(key).map(proxy_key);
            let key = proxy.as_deref().unwrap_or(key);
            let queued = self
                .unschedulable
                .remove(key)
                .or_else(|| self.backoff.remove(key))
                .or_else(|| self.gated.remove(key));
            if let Some(queued) = queued
                && self.admit(queued, now) != Placement::Gated
            {
                moved += 1;
            }
        }
        moved
    }

    /// Runs PreEnqueue again for the gated pod `key`, if it is gated (its gate may have
    /// lifted without an event, e.g. a preemption ended). Returns whether it was gated.
    pub fn recheck_gate(&mut self, key: &str, now: Instant) -> bool {
        let proxy = self.member_group.get(key).map(proxy_key);
        let key = proxy.as_deref().unwrap_or(key);
        match self.gated.remove(key) {
            Some(queued) => {
                self.readmit_gated(queued, now);
                true
            }
            None => false,
        }
    }

    /// Moves backoffQ pods whose backoff expired at or before `now` through PreEnqueue to
    /// activeQ. Returns how many left backoffQ.
    pub fn flush_backoff_completed(&mut self, now: Instant) -> usize {
        let mut moved = 0;
        while let Some(queued) = self.backoff.pop_due(now) {
            self.admit(queued, now);
            moved += 1;
        }
        moved
    }

    /// Moves pods that have been unschedulable (or gated) for `unschedulable_max_stay` as
    /// on [`ClusterEvent::UNSCHEDULABLE_TIMEOUT`], which every rejector matches.
    pub fn flush_unschedulable_leftover(&mut self, now: Instant) -> usize {
        let max_stay = self.config.unschedulable_max_stay;
        let due = |since: Instant| since.checked_add(max_stay).is_some_and(|at| at <= now);
        let moved = self.move_parked(&ClusterEvent::UNSCHEDULABLE_TIMEOUT, now, due);
        if moved > 0 {
            // Upstream treats the timeout flush as a move request too.
            self.move_request_cycle = Some(self.scheduling_cycle);
        }
        moved
    }

    /// When the earliest backoff expires.
    pub fn next_backoff_expiry(&self) -> Option<Instant> {
        self.backoff.earliest()
    }

    /// When `flush_unschedulable_leftover` will next move a pod.
    pub fn next_unschedulable_flush(&self) -> Option<Instant> {
        let earliest = [self.unschedulable.earliest(), self.gated.earliest()]
            .into_iter()
            .flatten()
            .min()?;
        earliest.checked_add(self.config.unschedulable_max_stay)
    }

    /// The backoff after `attempts` failed attempts, as upstream's
    /// `calculateBackoffDuration`: 0 before the first attempt, then `initial` doubling per
    /// attempt, capped at `max`.
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        doubling_backoff(
            self.config.initial_backoff,
            self.config.max_backoff,
            attempts,
        )
    }

    /// Pods, not entities: a group counts its members.
    pub fn pending_counts(&self) -> PendingCounts {
        PendingCounts {
            active: self.pods_in(self.active.iter()),
            backoff: self.pods_in(self.backoff.iter().map(|(_, q)| q)),
            unschedulable: self.pods_in(self.unschedulable.iter().map(|(_, q)| q)),
            gated: self.pods_in(self.gated.iter().map(|(_, q)| q)),
            incomplete: self.incomplete.values().map(Vec::len).sum(),
        }
    }

    /// Whether activeQ holds a pod or a group.
    pub fn has_active(&self) -> bool {
        self.active.len() > 0
    }

    fn pods_in<'q>(&self, entries: impl Iterator<Item = &'q QueuedPodInfo>) -> usize {
        entries
            .map(|q| {
                self.groups
                    .get(q.pod_info.key())
                    .map_or(1, |entity| entity.members.len())
            })
            .sum()
    }

    /// The members of the entries that are groups, the entries that are pods.
    fn expand<'q>(
        &'q self,
        entries: impl Iterator<Item = &'q QueuedPodInfo> + 'q,
    ) -> impl Iterator<Item = &'q QueuedPodInfo> + 'q {
        entries.flat_map(move |q| match self.groups.get(q.pod_info.key()) {
            Some(entity) => entity.members.iter().collect::<Vec<_>>(),
            None => vec![q],
        })
    }

    /// Number of queued pods (in-flight pods are not counted).
    pub fn len(&self) -> usize {
        let counts = self.pending_counts();
        counts.active + counts.backoff + counts.unschedulable + counts.gated + counts.incomplete
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the pod is queued (in-flight pods are not).
    pub fn contains(&self, key: &str) -> bool {
        self.queued(key).is_some()
    }

    /// Where the pod is, including in flight; a group member is where its group is.
    pub fn placement(&self, key: &str) -> Option<Placement> {
        if let Some(group) = self.member_group.get(key) {
            if self.incomplete.contains_key(group) {
                return Some(Placement::Incomplete);
            }
            return self.placement(&proxy_key(group));
        }
        if self.active.contains(key) {
            Some(Placement::Active)
        } else if self.backoff.contains(key) {
            Some(Placement::Backoff)
        } else if self.unschedulable.contains(key) {
            Some(Placement::Unschedulable)
        } else if self.gated.contains(key) {
            Some(Placement::Gated)
        } else if self.in_flight.contains_key(key) {
            Some(Placement::InFlight)
        } else {
            None
        }
    }

    /// Pods waiting for an event or the leftover flush, longest-waiting first.
    pub fn unschedulable_pods(&self) -> impl Iterator<Item = &QueuedPodInfo> {
        self.expand(self.unschedulable.iter().map(|(_, queued)| queued))
    }

    /// Pods a PreEnqueue plugin keeps out of activeQ (`gated_by` names it; every member of
    /// a gated group is held by the group's gate).
    pub fn gated_pods(&self) -> impl Iterator<Item = &QueuedPodInfo> {
        self.expand(self.gated.iter().map(|(_, queued)| queued))
    }

    /// Every queued pod with its placement (activeQ in heap order, not pop order); the
    /// members of a group in its group's placement, members waiting for their PodGroup
    /// last.
    pub fn pending_pods(&self) -> impl Iterator<Item = (Placement, &QueuedPodInfo)> {
        let active = self
            .expand(self.active.iter())
            .map(|q| (Placement::Active, q));
        let backoff = self
            .expand(self.backoff.iter().map(|(_, q)| q))
            .map(|q| (Placement::Backoff, q));
        let unschedulable = self
            .unschedulable_pods()
            .map(|q| (Placement::Unschedulable, q));
        let gated = self.gated_pods().map(|q| (Placement::Gated, q));
        let incomplete = self
            .incomplete
            .values()
            .flatten()
            .map(|q| (Placement::Incomplete, q));
        active
            .chain(backoff)
            .chain(unschedulable)
            .chain(gated)
            .chain(incomplete)
    }

    fn queued(&self, key: &str) -> Option<&QueuedPodInfo> {
        if let Some(group) = self.member_group.get(key) {
            let in_entity = self
                .groups
                .get(&proxy_key(group))
                .and_then(|e| e.members.iter().find(|m| m.pod_info.key() == key));
            return in_entity.or_else(|| {
                self.incomplete
                    .get(group)?
                    .iter()
                    .find(|m| m.pod_info.key() == key)
            });
        }
        self.active
            .get(key)
            .or_else(|| self.backoff.get(key))
            .or_else(|| self.unschedulable.get(key))
            .or_else(|| self.gated.get(key))
    }

    /// Takes a group's proxy out of activeQ, backoffQ, the unschedulable or the gated set.
    fn remove_proxy(&mut self, proxy: &str) {
        let _ = self.active.remove(proxy).is_some()
            || self.backoff.remove(proxy).is_some()
            || self.unschedulable.remove(proxy).is_some()
            || self.gated.remove(proxy).is_some();
    }

    /// Runs PreEnqueue for a group's members until one is gated (upstream: one gated
    /// member gates the group, and every member then names the gate), or for a pod. The
    /// gating plugin. Stopping at the first gate keeps a gang's arrival linear: while it is
    /// short of its quorum, every new member finds the group gated by its first member.
    fn gate(&mut self, key: &str) -> Option<String> {
        let entity = self.groups.get_mut(key)?;
        let gate = entity
            .members
            .iter()
            .find_map(|member| gating_plugin(&self.config, &member.pod_info));
        for member in &mut entity.members {
            if member.gated_by != gate {
                member.gated_by = gate.clone();
            }
        }
        gate
    }

    /// The gating plugin of an entry: its group's gate, or the pod's.
    fn gating_plugin_of(&mut self, queued: &QueuedPodInfo) -> Option<String> {
        let key = queued.pod_info.key();
        if self.groups.contains_key(key) {
            return self.gate(key);
        }
        gating_plugin(&self.config, &queued.pod_info)
    }

    /// Runs PreEnqueue: activeQ on admission, else the gated set.
    fn admit(&mut self, mut queued: QueuedPodInfo, now: Instant) -> Placement {
        match self.gating_plugin_of(&queued) {
            Some(plugin) => {
                queued.gated_by = Some(plugin);
                self.gated.insert(now, queued);
                Placement::Gated
            }
            None => {
                queued.gated_by = None;
                self.active.push(queued);
                Placement::Active
            }
        }
    }

    /// Upstream `requeuePodViaQueueingHint`: backoffQ while backing off (unless
    /// `Immediately`), else through PreEnqueue to activeQ.
    fn requeue(&mut self, queued: QueuedPodInfo, how: Requeue, now: Instant) -> Placement {
        let expiry = self.backoff_expiry(&queued);
        if how == Requeue::AfterBackoff && expiry > now {
            self.backoff.insert(expiry, queued);
            return Placement::Backoff;
        }
        self.admit(queued, now)
    }

    /// Re-runs PreEnqueue for a gated pod; once admitted it still serves its backoff.
    fn readmit_gated(&mut self, mut queued: QueuedPodInfo, now: Instant) -> Placement {
        if let Some(plugin) = self.gating_plugin_of(&queued) {
            queued.gated_by = Some(plugin);
            self.gated.insert(now, queued);
            return Placement::Gated;
        }
        queued.gated_by = None;
        let expiry = self.backoff_expiry(&queued);
        if expiry > now {
            self.backoff.insert(expiry, queued);
            Placement::Backoff
        } else {
            self.active.push(queued);
            Placement::Active
        }
    }

    /// Moves the parked pods that `event` concerns, among those parked at an instant
    /// `due` accepts.
    fn move_parked(
        &mut self,
        event: &ClusterEvent,
        now: Instant,
        due: impl Fn(Instant) -> bool,
    ) -> usize {
        let unschedulable: Vec<(String, Requeue)> = self
            .unschedulable
            .iter()
            .take_while(|(since, _)| due(*since))
            .filter_map(|(_, queued)| {
                let how = self.requeue_on(queued, event)?;
                Some((queued.pod_info.key().to_string(), how))
            })
            .collect();
        // Which gating plugins registered the event, asked once per plugin; with none of
        // them, the gated set is not walked at all.
        let moving: Vec<Option<&str>> = self
            .gated
            .gates()
            .filter(|gate| is_wildcard(event) || gate.is_none_or(|p| self.registered(p, event)))
            .collect();
        let gated: Vec<String> = if moving.is_empty() {
            Vec::new()
        } else {
            self.gated
                .iter()
                .take_while(|(since, _)| due(*since))
                .filter(|(_, queued)| moving.contains(&queued.gated_by.as_deref()))
                .map(|(_, queued)| queued.pod_info.key().to_string())
                .collect()
        };

        let mut moved = 0;
        for (key, how) in unschedulable {
            if let Some(queued) = self.unschedulable.remove(&key) {
                let placement = self.requeue(queued, how, now);
                debug!(pod = %key, %placement, ?event, "moved unschedulable pod");
                moved += 1;
            }
        }
        for key in gated {
            if let Some(queued) = self.gated.remove(&key)
                && self.readmit_gated(queued, now) != Placement::Gated
            {
                moved += 1;
            }
        }
        moved
    }

    /// Upstream `isPodWorthRequeuing` without QueueingHints: `None` when no rejector of
    /// the pod registered the event.
    fn requeue_on(&self, queued: &QueuedPodInfo, event: &ClusterEvent) -> Option<Requeue> {
        let rejectors = || {
            queued
                .unschedulable_plugins
                .iter()
                .chain(&queued.pending_plugins)
        };
        if is_wildcard(event) || rejectors().next().is_none() {
            return Some(Requeue::AfterBackoff);
        }
        let mut how = None;
        for plugin in rejectors().filter(|plugin| self.registered(plugin, event)) {
            if queued.pending_plugins.contains(plugin) {
                return Some(Requeue::Immediately);
            }
            how = Some(Requeue::AfterBackoff);
        }
        how
    }

    /// Whether `plugin` registered an event that covers `event`.
    fn registered(&self, plugin: &str, event: &ClusterEvent) -> bool {
        match self.config.plugin_events.get(plugin) {
            None | Some(None) => true,
            Some(Some(events)) => events.iter().any(|interest| interest.matches(event)),
        }
    }

    fn backoff_expiry(&self, queued: &QueuedPodInfo) -> Instant {
        if let Some(entity) = self.groups.get(queued.pod_info.key()) {
            let (initial, max) = (self.config.initial_backoff, self.config.max_backoff);
            let at = entity.params.timestamp;
            return at.checked_add(entity.backoff(initial, max)).unwrap_or(at);
        }
        let duration = self.backoff_duration(queued.attempts);
        // Overflow needs a backoff of centuries; treat it as no backoff.
        queued
            .timestamp
            .checked_add(duration)
            .unwrap_or(queued.timestamp)
    }
}

/// `initial * 2^(count-1)` capped at `max`; zero for `count` 0.
fn doubling_backoff(initial: Duration, max: Duration, count: u32) -> Duration {
    if count == 0 {
        return Duration::ZERO;
    }
    let mut duration = initial.min(max);
    for _ in 1..count {
        if duration > max.saturating_sub(duration) {
            return max;
        }
        duration += duration;
    }
    duration
}

/// The first PreEnqueue plugin that rejects the pod.
fn gating_plugin(config: &QueueConfig, pod: &PodInfo) -> Option<String> {
    config.pre_enqueue.iter().find_map(|plugin| {
        let status = plugin.as_pre_enqueue()?.pre_enqueue(pod);
        if status.is_success() {
            return None;
        }
        debug!(pod = pod.key(), plugin = plugin.name(), %status, "PreEnqueue gated the pod");
        Some(plugin.name().to_string())
    })
}

/// Upstream's `IsWildCard`: the event every registered interest matches.
fn is_wildcard(event: &ClusterEvent) -> bool {
    event.resource == EventResource::Wildcard && event.action == ActionType::ALL
}

/// Upstream `isPodUpdated`: whether anything but bookkeeping changed. Also ignores
/// `managedFields`, which the scheduler's own status patch touches. Of the status, the
/// claims made for the pod count (`resourceClaimStatuses`, `extendedResourceClaimStatus`):
/// upstream's queue sees their change as the event UpdatePodGeneratedResourceClaim,
/// which DynamicResources registers, and the resourceclaim controller writes them after
/// it made a template's claim, so the pod it gated must look again.
fn may_make_schedulable(old: &Arc<Pod>, new: &Arc<Pod>) -> bool {
    if Arc::ptr_eq(old, new) {
        return false;
    }
    let strip = |meta: &ObjectMeta| ObjectMeta {
        resource_version: None,
        generation: None,
        managed_fields: None,
        ..meta.clone()
    };
    old.spec != new.spec
        || strip(&old.metadata) != strip(&new.metadata)
        || claim_statuses(old) != claim_statuses(new)
}

/// What the resourceclaim controller and DynamicResources write into a pod's status.
fn claim_statuses(
    pod: &Pod,
) -> (
    Option<&Vec<k8s_openapi::api::core::v1::PodResourceClaimStatus>>,
    Option<&k8s_openapi::api::core::v1::PodExtendedResourceClaimStatus>,
) {
    let status = pod.status.as_ref();
    (
        status.and_then(|s| s.resource_claim_statuses.as_ref()),
        status.and_then(|s| s.extended_resource_claim_status.as_ref()),
    )
}
