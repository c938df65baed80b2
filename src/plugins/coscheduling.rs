//! Coscheduling: gang scheduling of the pods of a [`PodGroup`] (scheduler-plugins
//! `pkg/coscheduling`, adapted to berth's PodGroup).
//!
//! A pod is a member of the group `<its namespace>/<name>` when it carries the label
//! `berth.dev/pod-group` or, failing that, `scheduling.x-k8s.io/pod-group`
//! ([`pod_group_of`]). The group is berth's PodGroup of that name or, where there is none,
//! scheduler-plugins' (`scheduling.x-k8s.io/v1alpha1`, read with the same spec; see
//! [`PodGroups`]). Pods without either label pass every point untouched.
//!
//! ## In the pod-group cycle
//!
//! A profile that runs Coscheduling places a group whose PodGroup exists through the
//! scheduler core's pod-group cycle, as a Workload API gang: its members leave the queue
//! together and are tried one after the other. The plugin then serves as GangScheduling
//! does for the Workload API:
//!
//! - **PreEnqueue** holds the group out of activeQ while fewer than `minMember` members
//!   exist, pending or placed (`waiting for minMember pods of pod group ns/name to appear
//!   in scheduling queue: 2 of 3 exist`); a new member re-runs it.
//! - **PlacementFeasible** (before the first member and after each): `minMember` placed
//!   (bound or assumed before the cycle, plus those the cycle placed) is Success; fewer,
//!   with enough members left to try, Wait; otherwise Unschedulable, which ends the try.
//! - Each member still passes PreFilter (below), so the group's count, `minResources` and
//!   backoff are checked as for a lone pod.
//! - **Unreserve** of a tentative placement (the cycle undoes every one) releases nothing:
//!   the cycle state carries [`PodGroupCycle`].
//! - Permit holds the members the cycle placed until `minMember` are, as below; those of
//!   one cycle let each other go at once.
//!
//! PostFilter is not run for a member tried in a pod-group cycle: a group that does not
//! fit goes to DefaultPreemption's PodGroupPostFilter as a whole. The points below keep
//! scheduler-plugins' per-pod behaviour for a member tried alone (its PodGroup missing,
//! or appearing while it was being scheduled).
//!
//! - **QueueSort**: higher priority first; then the group's creation time (a pod without a
//!   group uses its own `creationTimestamp`, and a pod with neither falls back to its queue
//!   timestamp); then the group's key and the pod's namespace/name, so that the members
//!   of a group end up adjacent in activeQ.
//! - **PreEnqueue**: records pending group members, which PreFilter counts (see
//!   "Counting members" below), and admits the pod, unless its group is placed through
//!   pod-group cycles and has fewer than `minMember` members (below).
//! - **PreFilter**: the PodGroup must exist; the group must not be in its backoff; the
//!   group must have at least `minMember` members; its `minResources`, when set, must fit
//!   in the cluster's free capacity (sum over nodes of allocatable minus requested). Every
//!   failure is UnschedulableAndUnresolvable, so preemption is not attempted for it. A
//!   rejection because of the group backoff asks for [`RetryAfterBackoff`]: the backoff
//!   ends with time, so the pod is retried after its own backoff instead of waiting for
//!   a cluster event. After any PreFilter rejection, PostFilter leaves the group alone.
//! - **PostFilter**: a member that cannot be placed rejects the group's members waiting
//!   at Permit (releasing their reservations), unless the group already has `minMember`
//!   members bound; with `podGroupBackoffSeconds > 0` the group is then backed off:
//!   PreFilter rejects its pods until the backoff ends. One exception, see "Groups that
//!   arrive interleaved" below.
//! - **Permit**: when the members assumed or bound (members waiting at Permit, members
//!   assigned in the snapshot, and this pod) reach `minMember`, every waiting member is
//!   allowed; otherwise the pod waits for `spec.scheduleTimeoutSeconds`, else the args'
//!   `permitWaitingTimeSeconds`, and its queued siblings are activated
//!   ([`PodsToActivate`]) so they are tried next.
//! - **Reserve/Unreserve**: Reserve does nothing; Unreserve (a member timed out at Permit,
//!   was rejected, or failed binding) rejects the waiting siblings so that the group's
//!   reservations are released together, and starts the group backoff.
//!
//! ## Counting members
//!
//! scheduler-plugins counts a group's pods with a pod lister, pending ones included.
//! berth's handle has no lister of pending pods, so the plugin keeps its own: every pod
//! that passes PreEnqueue (the framework calls it for each pod entering the queue) is
//! recorded under its group. A member counts once (by namespace/name) when it is
//!
//! - recorded at PreEnqueue (pending),
//! - assigned to a node in the snapshot (bound or assumed) and not terminal
//!   (`Succeeded`/`Failed`),
//! - waiting at Permit, or
//! - the pod being scheduled.
//!
//! ## Groups that arrive interleaved
//!
//! QueueSort keeps a group's members together only while they sit in activeQ at the same
//! time. Members created one by one, or leaving backoff at different times, reach the
//! scheduler interleaved with another group's: two groups can each hold part of the room
//! at Permit, and if both then reject themselves and retry alike, neither ever completes.
//! berth (unlike scheduler-plugins) orders such contests by the queue order: when a
//! member fails and releasing the reservations of *younger* groups (later in QueueSort
//! order: lower priority, or equal priority and a later creation time) waiting at Permit
//! would
//!
//! - make the member fit on a node that rejected it only for resources (Unschedulable,
//!   not Unresolvable), and
//! - leave enough free capacity in the cluster for the rest of its group (the member's
//!   requests times the members still missing),
//!
//! those younger groups are rejected and backed off instead, and the failing member's own
//! waiting siblings keep their reservations. The failing member is retried as soon as the
//! released room shows up. A group that could not complete anyway never takes room from
//! another, so the oldest group that fits always gets through.
//!
//! A pending pod deleted before it is scheduled stays recorded (the plugin is not told of
//! deletions), so the count may be too high until the scheduler restarts; that only lets
//! the group try, the Permit quorum still decides.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::PodGroup;
use crate::cluster::lock::mutex as lock;
use crate::cluster::{
    GroupDialect, GroupKey, PodGroupStates, PodGroups, PodInfo, Resource, Snapshot, gang_min_count,
    pod_group_of, short_of,
};
use crate::framework::{
    ActionType, ClusterEvent, Code, CycleState, EventResource, FieldError, FilterRunner,
    GangProgress, Handle, NodeToStatus, PermitPlugin, PlacementFeasiblePlugin, PlacementProgress,
    PluginArgs, PluginError, PluginFactory, PodGroupCycle, PodsToActivate, PostFilterPlugin,
    PostFilterResult, PreEnqueuePlugin, PreFilterPlugin, PreFilterResult, QueueSortPlugin,
    QueuedPodInfo, ReservePlugin, RetryAfterBackoff, Status, WaitingPods,
};

/// Args of Coscheduling (scheduler-plugins `CoschedulingArgs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct CoschedulingArgs {
    /// How long a member waits at Permit for its siblings when its PodGroup sets no
    /// `scheduleTimeoutSeconds` (seconds, at least 1; default 60).
    #[schemars(range(min = 1))]
    pub permit_waiting_time_seconds: i64,
    /// After a member of a group fails to be placed (or the group times out at Permit),
    /// the group's pods are rejected at PreFilter for this long (seconds; 0, the default,
    /// disables the backoff).
    #[schemars(range(min = 0))]
    pub pod_group_backoff_seconds: i64,
}

impl Default for CoschedulingArgs {
    fn default() -> Self {
        CoschedulingArgs {
            permit_waiting_time_seconds: 60,
            pod_group_backoff_seconds: 0,
        }
    }
}

impl PluginArgs for CoschedulingArgs {
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.permit_waiting_time_seconds < 1 {
            errors.push(FieldError::new(
                format!("{path}.permitWaitingTimeSeconds"),
                self.permit_waiting_time_seconds,
                "must be greater than or equal to 1",
            ));
        }
        if self.pod_group_backoff_seconds < 0 {
            errors.push(FieldError::new(
                format!("{path}.podGroupBackoffSeconds"),
                self.pod_group_backoff_seconds,
                "must be greater than or equal to 0",
            ));
        }
        errors
    }
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The resources a request names: cpu and memory always, the others when non-zero.
fn resource_names(requests: &Resource) -> Vec<String> {
    let mut names = vec!["cpu".to_string(), "memory".to_string()];
    if requests.ephemeral_storage > 0 {
        names.push("ephemeral-storage".to_string());
    }
    names.extend(
        requests
            .scalar_resources
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(k, _)| k.clone()),
    );
    names
}

fn group_display((namespace, name): &(String, String)) -> String {
    format!("{namespace}/{name}")
}

/// PreFilter rejected the pod itself (group missing, backing off, too few members, or
/// minResources): PostFilter then leaves the group alone. Otherwise every rejection in
/// backoff would restart the backoff, and a group whose members keep arriving would never
/// leave it.
#[derive(Debug, Clone)]
struct RejectedAtPreFilter;

/// What PreFilter hands to Permit: the keys of the group's members assigned (bound or
/// assumed) in the cycle's snapshot.
#[derive(Debug, Clone)]
struct AssignedMembers(BTreeSet<String>);

/// The Coscheduling plugin.
pub struct Coscheduling {
    args: CoschedulingArgs,
    pod_groups: Arc<PodGroups>,
    waiting_pods: Arc<WaitingPods>,
    /// Pending members seen at PreEnqueue, by group.
    pending: Mutex<HashMap<(String, String), HashSet<String>>>,
    /// Groups in backoff, until the instant.
    backoff: Mutex<HashMap<(String, String), Instant>>,
    /// The scheduler's time, which backoff is measured in.
    clock: Arc<dyn crate::framework::Clock>,
    /// The groups the core places through pod-group cycles, with their members.
    states: Arc<PodGroupStates>,
}

impl Coscheduling {
    /// Keys of the group's members waiting at Permit.
    fn waiting_members(&self, group: &(String, String)) -> Vec<Arc<crate::framework::WaitingPod>> {
        self.waiting_pods
            .list()
            .into_iter()
            .filter(|w| pod_group_of(&w.pod().pod).as_ref() == Some(group))
            .collect()
    }

    /// Keys of the group's non-terminal members assigned to a node in the snapshot.
    fn assigned_members(&self, group: &(String, String), snapshot: &Snapshot) -> BTreeSet<String> {
        snapshot
            .nodes()
            .iter()
            .flat_map(|n| n.pods.iter())
            .filter(|p| !is_terminal(&p.pod) && pod_group_of(&p.pod).as_ref() == Some(group))
            .map(|p| p.key().to_string())
            .collect()
    }

    fn timeout(&self, group: &PodGroup) -> Duration {
        let secs = group
            .spec
            .schedule_timeout_seconds
            .map(i64::from)
            .filter(|s| *s >= 1)
            .unwrap_or(self.args.permit_waiting_time_seconds)
            .max(1);
        Duration::from_secs(secs.unsigned_abs())
    }

    fn start_backoff(&self, group: &(String, String)) {
        if self.args.pod_group_backoff_seconds > 0 {
            let until = self.clock.now()
                + Duration::from_secs(self.args.pod_group_backoff_seconds.unsigned_abs());
            lock(&self.backoff).insert(group.clone(), until);
        }
    }

    fn in_backoff(&self, group: &(String, String)) -> bool {
        let mut backoff = lock(&self.backoff);
        match backoff.get(group) {
            Some(until) if *until > self.clock.now() => true,
            Some(_) => {
                backoff.remove(group);
                false
            }
            None => false,
        }
    }

    fn reject_waiting(&self, group: &(String, String), except: &str, message: &str) -> usize {
        let mut n = 0;
        for w in self.waiting_members(group) {
            if w.pod().key() != except {
                w.reject(Self::NAME, message);
                n += 1;
            }
        }
        n
    }

    /// The group's place in the queue order: higher priority first, then the group's
    /// creation time (the pod's own when the group is unknown), then the group's key.
    /// Smaller is older.
    fn group_order(
        &self,
        pod: &Pod,
        group: &(String, String),
    ) -> (i32, bool, Option<Timestamp>, String) {
        let time = self
            .pod_groups
            .get(&group.0, &group.1)
            .and_then(|g| g.metadata.creation_timestamp.map(|t| t.0))
            .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0));
        let priority = pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
        (-priority, time.is_none(), time, group_display(group))
    }

    /// See "Groups that arrive interleaved" in the module docs. Returns the younger groups
    /// whose waiting members were rejected (empty when reclaiming would not help).
    fn reclaim_from_younger(
        &self,
        pod: &PodInfo,
        group: &(String, String),
        min_member: i64,
        snapshot: &Snapshot,
        filtered: &NodeToStatus,
    ) -> Vec<(String, String)> {
        let own = self.group_order(&pod.pod, group);
        let younger: Vec<(Arc<crate::framework::WaitingPod>, (String, String))> = self
            .waiting_pods
            .list()
            .into_iter()
            .filter_map(|w| {
                let g = pod_group_of(&w.pod().pod)?;
                (g != *group && self.group_order(&w.pod().pod, &g) > own).then_some((w, g))
            })
            .collect();
        if younger.is_empty() {
            return Vec::new();
        }
        let released_on = |node: &str| {
            let mut released = Resource::default();
            let mut pods = 0;
            for (w, _) in younger.iter().filter(|(w, _)| w.node_name() == node) {
                released.add(&w.pod().requests);
                pods += 1;
            }
            (released, pods)
        };
        let wanted = &pod.requests;
        let names = resource_names(wanted);
        let helps_somewhere = snapshot.nodes().iter().any(|n| {
            let resolvable = filtered
                .get(n.name())
                .is_some_and(|s| s.code() == Code::Unschedulable);
            let (released, released_pods) = released_on(n.name());
            resolvable
                && released_pods > 0
                && (n.pods.len() as i64 - released_pods) < n.allocatable.allowed_pod_number
                && names.iter().all(|r| {
                    n.allocatable.get(r) - n.requested.get(r) + released.get(r) >= wanted.get(r)
                })
        });
        if !helps_somewhere {
            return Vec::new();
        }
        // The rest of the group must fit too, or taking the room only starves the others.
        // A member waiting at Permit is also assumed in the snapshot: count keys once.
        let mut placed = self.assigned_members(group, snapshot);
        placed.extend(
            self.waiting_members(group)
                .iter()
                .map(|w| w.pod().key().to_string()),
        );
        placed.remove(pod.key());
        let missing = (min_member - placed.len() as i64).max(1);
        let all_fit = names.iter().all(|r| {
            let free: i64 = snapshot
                .nodes()
                .iter()
                .map(|n| {
                    (n.allocatable.get(r) - n.requested.get(r) + released_on(n.name()).0.get(r))
                        .max(0)
                })
                .sum();
            free >= wanted.get(r).saturating_mul(missing)
        });
        if !all_fit {
            return Vec::new();
        }
        let mut groups: Vec<(String, String)> = younger.iter().map(|(_, g)| g.clone()).collect();
        groups.sort();
        groups.dedup();
        let message = format!(
            "rejected to release room for the older pod group {}",
            group_display(group)
        );
        for (w, _) in &younger {
            w.reject(Self::NAME, &message);
        }
        for g in &groups {
            self.start_backoff(g);
        }
        groups
    }

    /// The sort key of [`QueueSortPlugin::less`], priority aside.
    fn sort_key(&self, q: &QueuedPodInfo) -> (bool, Option<Timestamp>, Option<Instant>, String) {
        let pod = &q.pod_info.pod;
        let group = pod_group_of(pod);
        let group_time = group.as_ref().and_then(|(ns, name)| {
            self.pod_groups
                .get(ns, name)
                .and_then(|g| g.metadata.creation_timestamp.map(|t| t.0))
        });
        let time = group_time.or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0));
        let group_key = match &group {
            Some((ns, name)) => format!("{ns}/{name}"),
            None => format!("{}/{}", q.pod_info.namespace(), q.pod_info.name()),
        };
        (
            time.is_none(),
            time,
            time.is_none().then_some(q.timestamp),
            group_key,
        )
    }
}

crate::plugin! {
    Coscheduling {
        name: "Coscheduling",
        points: [PreEnqueue, QueueSort, PreFilter, PostFilter, Reserve, Permit],
    }

    impl Plugin {
        fn as_placement_feasible(&self) -> Option<&dyn PlacementFeasiblePlugin> {
            Some(self)
        }

        /// A rejected member may fit once its PodGroup appears or changes, a pod is added
        /// (a sibling arrives) or deleted (room frees, e.g. a sibling's reservation released),
        /// or a node is added.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(
                    EventResource::PodGroup,
                    ActionType::ADD | ActionType::UPDATE,
                ),
                ClusterEvent::new(EventResource::Pod, ActionType::ADD | ActionType::DELETE),
                ClusterEvent::new(EventResource::Node, ActionType::ADD),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Gang scheduling for berth's and scheduler-plugins' PodGroups: places a group in one pod-group cycle and binds its pods only when at least minMember of them fit together; a group that cannot holds nothing.";
        type Args = CoschedulingArgs;

        fn build(args: CoschedulingArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(Coscheduling {
                args,
                pod_groups: handle.pod_groups.clone(),
                waiting_pods: handle.waiting_pods.clone(),
                pending: Mutex::default(),
                backoff: Mutex::default(),
                clock: handle.clock.clone(),
                states: handle.pod_group_states.clone(),
            })
        }
    }
}

impl PreEnqueuePlugin for Coscheduling {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let Some(group) = pod_group_of(&pod.pod) else {
            return Status::success();
        };
        lock(&self.pending)
            .entry(group.clone())
            .or_default()
            .insert(pod.key().to_string());
        self.hold_short_group(&group)
    }
}

impl Coscheduling {
    /// A group the core places through pod-group cycles (its PodGroup is in the core's
    /// states) waits out of activeQ until `minMember` members exist, pending or placed, as
    /// GangScheduling holds a Workload API gang: a cycle before could only fail, and each
    /// failure would lengthen the group's backoff. A member tried alone is never held.
    fn hold_short_group(&self, (namespace, name): &(String, String)) -> Status {
        let key = GroupKey::coscheduling(namespace, name);
        match self.states.gang_members(&key) {
            Some((Some(min), members)) if short_of(members, min) => Status::unresolvable(format!(
                "waiting for minMember pods of pod group {key} to appear in scheduling queue: {members} of {min} exist"
            )),
            _ => Status::success(),
        }
    }
}

impl QueueSortPlugin for Coscheduling {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority(), b.pod_info.priority());
        if pa != pb {
            return pa > pb;
        }
        let order = self
            .sort_key(a)
            .cmp(&self.sort_key(b))
            .then_with(|| {
                (a.pod_info.namespace(), a.pod_info.name())
                    .cmp(&(b.pod_info.namespace(), b.pod_info.name()))
            })
            .then_with(|| a.pod_info.key().cmp(b.pod_info.key()));
        order == Ordering::Less
    }
}

#[async_trait]
impl PreFilterPlugin for Coscheduling {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let (result, status) = self.check_group(state, pod, snapshot);
        if status.is_rejected() {
            state.write(RejectedAtPreFilter);
        }
        (result, status)
    }
}

impl Coscheduling {
    /// PreFilter's checks; see the module docs.
    fn check_group(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let Some(group) = pod_group_of(&pod.pod) else {
            return (None, Status::success());
        };
        let Some(pg) = self.pod_groups.get(&group.0, &group.1) else {
            return (
                None,
                Status::unresolvable(format!("pod group {} not found", group_display(&group))),
            );
        };
        if self.in_backoff(&group) {
            // The backoff ends with time, not with an event: retry after the pod's backoff.
            state.write(RetryAfterBackoff);
            return (
                None,
                Status::unresolvable(format!(
                    "podGroup {} failed recently, backing off",
                    group_display(&group)
                )),
            );
        }
        let assigned = self.assigned_members(&group, snapshot);
        state.write(AssignedMembers(assigned.clone()));
        let mut members = assigned.clone();
        members.extend(
            self.waiting_members(&group)
                .iter()
                .map(|w| w.pod().key().to_string()),
        );
        if let Some(pending) = lock(&self.pending).get(&group) {
            members.extend(pending.iter().cloned());
        }
        members.insert(pod.key().to_string());
        let min_member = i64::from(pg.spec.min_member);
        let total = members.len() as i64;
        if total < min_member {
            return (
                None,
                Status::unresolvable(format!(
                    "pre-filter pod {} cannot find enough sibling pods, current pods number: {total}, minMember of group: {min_member}",
                    pod.name()
                )),
            );
        }
        if let Some(min_resources) = pg.spec.min_resources.as_ref().filter(|m| !m.is_empty()) {
            let wanted = match Resource::from_list(min_resources) {
                Ok(r) => r,
                Err(e) => {
                    return (
                        None,
                        Status::unresolvable(format!(
                            "pod group {} has invalid minResources: {e}",
                            group_display(&group)
                        )),
                    );
                }
            };
            // Members already assigned (or assumed) hold part of minResources already.
            let mut short = Vec::new();
            for name in min_resources.keys() {
                let free: i64 = snapshot
                    .nodes()
                    .iter()
                    .map(|n| {
                        let held: i64 = n
                            .pods
                            .iter()
                            .filter(|p| assigned.contains(p.key()))
                            .map(|p| p.requests.get(name))
                            .sum();
                        (n.allocatable.get(name) - n.requested.get(name) + held).max(0)
                    })
                    .sum();
                if free < wanted.get(name) {
                    short.push(name.clone());
                }
            }
            if !short.is_empty() {
                return (
                    None,
                    Status::unresolvable(format!(
                        "pod group {} minResources do not fit in the cluster's free capacity: insufficient {}",
                        group_display(&group),
                        short.join(", ")
                    )),
                );
            }
        }
        (None, Status::success())
    }
}

#[async_trait]
impl PostFilterPlugin for Coscheduling {
    async fn post_filter(
        &self,
        _: &dyn FilterRunner,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        filtered_node_status: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let Some(group) = pod_group_of(&pod.pod) else {
            return (None, Status::unschedulable("can not find pod group"));
        };
        if state.read::<RejectedAtPreFilter>().is_some() {
            return (None, Status::unschedulable(""));
        }
        let min_member = self
            .pod_groups
            .get(&group.0, &group.1)
            .map(|g| i64::from(g.spec.min_member))
            .unwrap_or(1);
        // The group is already satisfied by bound members: this pod is an extra one.
        if self.assigned_members(&group, snapshot).len() as i64 >= min_member
            && self.waiting_members(&group).is_empty()
        {
            return (None, Status::unschedulable(""));
        }
        let reclaimed =
            self.reclaim_from_younger(pod, &group, min_member, snapshot, filtered_node_status);
        if !reclaimed.is_empty() {
            let younger: Vec<String> = reclaimed.iter().map(group_display).collect();
            tracing::debug!(group = %group_display(&group), pod = %pod.key(), younger = ?younger, "Coscheduling released the room of younger groups");
            return (
                None,
                Status::unschedulable(format!(
                    "PodGroup {} waits for the room held at Permit by younger pod group(s) {} to be released",
                    group_display(&group),
                    younger.join(", ")
                )),
            );
        }
        let rejected = self.reject_waiting(&group, pod.key(), "optimistic rejection in PostFilter");
        self.start_backoff(&group);
        tracing::debug!(group = %group_display(&group), pod = %pod.key(), rejected, "Coscheduling rejected the waiting members of the group");
        (
            None,
            Status::unschedulable(format!(
                "PodGroup {} gets rejected due to Pod {} is unschedulable even after PostFilter",
                group_display(&group),
                pod.name()
            )),
        )
    }
}

#[async_trait]
impl ReservePlugin for Coscheduling {
    async fn reserve(&self, _state: &mut CycleState, _pod: &PodInfo, _node_name: &str) -> Status {
        Status::success()
    }

    async fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _node_name: &str) {
        // A pod-group cycle undoes its tentative placements: nothing was released.
        if state.read::<PodGroupCycle>().is_some() {
            return;
        }
        let Some(group) = pod_group_of(&pod.pod) else {
            return;
        };
        // Upstream's wording, then which member's release let the group go.
        let message = format!(
            "rejection in Unreserve: pod group {} released its members after {}/{} was unreserved",
            group_display(&group),
            pod.namespace(),
            pod.name()
        );
        let rejected = self.reject_waiting(&group, pod.key(), &message);
        if rejected > 0 || self.waiting_pods.get(pod.key()).is_some() {
            self.start_backoff(&group);
        }
    }
}

#[async_trait]
impl PermitPlugin for Coscheduling {
    async fn permit(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _node_name: &str,
    ) -> (Status, Duration) {
        let Some(group) = pod_group_of(&pod.pod) else {
            return (Status::success(), Duration::ZERO);
        };
        let Some(pg) = self.pod_groups.get(&group.0, &group.1) else {
            return (
                Status::unresolvable(format!("pod group {} not found", group_display(&group))),
                Duration::ZERO,
            );
        };
        // Permit gets no snapshot: the members assigned (bound or assumed) in this
        // cycle's snapshot were recorded by PreFilter. Add the waiting members and this
        // pod; keys are unique, so an assumed member that is also waiting counts once.
        let waiting = self.waiting_members(&group);
        let mut assumed: BTreeSet<String> = state
            .read::<AssignedMembers>()
            .map(|a| a.0.clone())
            .unwrap_or_default();
        assumed.extend(waiting.iter().map(|w| w.pod().key().to_string()));
        assumed.insert(pod.key().to_string());
        let min_member = i64::from(pg.spec.min_member);
        if (assumed.len() as i64) < min_member {
            // The siblings still in the queue are tried next, not after their backoff
            // or the next cluster event (scheduler-plugins' `ActivateSiblings`).
            let siblings: BTreeSet<String> = lock(&self.pending)
                .get(&group)
                .map(|pending| {
                    pending
                        .iter()
                        .filter(|key| !assumed.contains(*key))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            if !siblings.is_empty() {
                state.write(PodsToActivate(siblings));
            }
            return (Status::wait().with_plugin(Self::NAME), self.timeout(&pg));
        }
        for w in waiting {
            w.allow(Self::NAME);
        }
        (Status::success(), Duration::ZERO)
    }
}

/// The pod-group cycle's judgement of a berth or scheduler-plugins group: at least
/// `minMember` members placed (bound or assumed before the cycle, plus those it placed).
impl PlacementFeasiblePlugin for Coscheduling {
    fn placement_feasible(
        &self,
        key: &GroupKey,
        group: &k8s_openapi::api::scheduling::v1beta1::PodGroup,
        progress: PlacementProgress,
    ) -> Status {
        if key.dialect != GroupDialect::Coscheduling {
            return Status::success();
        }
        let min_member = gang_min_count(group).unwrap_or(1).max(1);
        let PlacementProgress {
            remaining,
            scheduled,
        } = progress;
        match progress.toward(min_member) {
            GangProgress::Unreachable => Status::unschedulable(format!(
                "pod group {key} cannot reach minMember ({min_member}): {scheduled} scheduled, {remaining} remaining"
            )),
            GangProgress::Pending => Status::new(
                Code::Wait,
                format!(
                    "pod group {key} has not reached minMember ({min_member}) yet: {scheduled} scheduled, {remaining} remaining"
                ),
            ),
            GangProgress::Met => Status::success(),
        }
    }
}

#[cfg(test)]
mod tests;
