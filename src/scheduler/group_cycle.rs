//! The pod-group cycle (upstream's `schedule_one_podgroup.go`, GenericWorkload on, no
//! composite groups, no topology placements): the members of a pod group that the queue
//! popped together are placed as one operation. Every dialect goes through it: a Workload
//! API PodGroup as upstream, a berth or scheduler-plugins PodGroup (Coscheduling's) as the
//! Workload API PodGroup it amounts to, judged by Coscheduling's PlacementFeasible, at its
//! members' lowest priority, with no condition to write and no priority to check.
//!
//! 1. The PodGroup must be known, and the group must be consistent: one scheduler name,
//!    every member at the PodGroup's priority, one preemption policy (members already
//!    placed included). Otherwise every member fails with the error, and the PodGroup's
//!    `PodGroupInitiallyScheduled` condition says `SchedulerError`.
//! 2. Members being deleted or already assumed are dropped from the attempt.
//! 3. The *algorithm* tries the members in the queue's order. PlacementFeasible runs
//!    before the first and after each (GangScheduling: enough placed yet? can enough
//!    still be?). A member is tried as a lone pod would be, without PostFilter, and a
//!    member that fits is assumed and reserved tentatively, so that the next members see
//!    it. Every tentative placement is undone at the end, whatever the outcome.
//! 4. If the group is feasible (and at least one member was placed), each placed member
//!    is assumed and reserved for real and goes through Permit to its binding cycle
//!    (GangScheduling holds the first at Permit until the quorum is assumed); members
//!    that did not fit fail as lone pods would. If not, every member fails: those that
//!    fit with `pod group is unschedulable, <group message>`, those tried that did not
//!    with their own reason, those not tried with the group message. A member's error
//!    fails the whole group.
//! 5. The PodGroup's condition is computed ([`PodGroupReport`]) and the members not
//!    placed go back to the queue as the group ([`SchedulingQueue::requeue_group`]).
//!
//! 6. A rejected group runs PodGroupPostFilter, whose reason joins the group's message:
//!    DynamicResources' claim cleanup, then DefaultPreemption's workload-aware preemption
//!    ([`super::group_preemption`]). When preemption found room, the members go back to
//!    the queue nominated to the nodes they would take, and the group is held until the
//!    victims are evicted; the next cycle places it (upstream's `waitingOnPreemption`).
//!    Members the algorithm did not try keep the group's message from before
//!    PodGroupPostFilter, as upstream's copies of it are taken before.

use std::sync::Arc;

use k8s_openapi::api::scheduling::v1beta1::PodGroup;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use crate::cluster::{GroupDialect, GroupKey, PodInfo, scheduler_name};
use crate::framework::{Code, CycleState, PlacementProgress, PodGroupCycle, QueuedPodInfo, Status};
use crate::queue::{GroupOutcome, QueuedGroup};

use super::failure::Failure;

/// The plugins whose PodGroupPostFilter upstream runs for a rejected group.
const DEFAULT_PREEMPTION: &str = "DefaultPreemption";
const DYNAMIC_RESOURCES: &str = "DynamicResources";
/// DynamicResources' PodGroupPostFilter reason.
const CLAIMS_RELEASED: &str = "deallocation and deletion of ResourceClaims completed";
use super::group_preemption::GroupPreemption;
use super::{CycleDiagnosis, CycleOutput, Scheduler, cycle};

/// Upstream's `errPodGroupUnschedulable`.
pub const POD_GROUP_UNSCHEDULABLE: &str = "pod group is unschedulable";
/// The condition the pod-group cycle writes on a PodGroup.
pub const INITIALLY_SCHEDULED: &str = "PodGroupInitiallyScheduled";

/// How a pod-group cycle ended, for the adapter: the PodGroup's new condition and the
/// counts to report.
#[derive(Debug, Clone)]
pub struct PodGroupReport {
    pub group: GroupKey,
    pub scheduler_name: String,
    /// The `PodGroupInitiallyScheduled` condition to merge into the PodGroup's status
    /// ([`merge_condition`]); `None` when the PodGroup was not known, and for a
    /// Coscheduling group (its PodGroup has no such condition; the PodGroup controller
    /// reports its phase).
    pub condition: Option<Condition>,
    /// Why the group was not placed, in every dialect (the condition's message for a
    /// Workload API PodGroup); empty when it was.
    pub message: String,
    /// Members the cycle sent to their binding cycles.
    pub placed: usize,
    /// Members the cycle tried.
    pub members: usize,
    /// How the group's algorithm ended and how long it took; `None` when the group was
    /// refused before it ran (its PodGroup unknown, or invalid).
    pub attempt: Option<PodGroupAttempt>,
    /// DefaultPreemption's PodGroupPostFilter, when the cycle ran it.
    pub preemption: Option<GroupPreemptionAttempt>,
}

/// DefaultPreemption's PodGroupPostFilter in a pod-group cycle, for upstream's
/// workload-preemption metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupPreemptionAttempt {
    /// The plugin's status (upstream's `result` label: `Success`, `Unschedulable`, ...).
    pub code: Code,
    /// The victims of the preemption it decided, `(pods, pod groups' units among them)`;
    /// `None` when it decided none (an ongoing preemption, or no room).
    pub victims: Option<(usize, usize)>,
}

/// The outcome of a pod-group cycle that ran its algorithm, for upstream's pod-group
/// metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodGroupAttempt {
    pub result: GroupResult,
    /// Wall time of the algorithm (the members' tentative placements and
    /// PodGroupPostFilter).
    pub algorithm: std::time::Duration,
}

/// How a pod-group cycle ended, as upstream's `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupResult {
    Scheduled,
    Unschedulable,
    Error,
    /// Unschedulable, and preemption is making room for the group.
    WaitingOnPreemption,
}

/// What one member's try in the algorithm gave.
pub(super) struct Tried {
    pub(super) state: CycleState,
    pub(super) result: Result<(String, Option<CycleDiagnosis>), Failure>,
}

/// The group's verdict: success, a rejection (message), or an error (message).
pub(super) enum Verdict {
    Feasible,
    Rejected(String),
    Error(String),
}

/// A rejected group's PodGroupPostFilter outcome.
struct PostFilter {
    /// The status to give the group: its message with the reason appended, or the
    /// error that replaces it.
    verdict: Verdict,
    /// The group waits on a preemption.
    preempting: Option<Preempting>,
    /// DefaultPreemption's run, if any.
    preemption: Option<GroupPreemptionAttempt>,
}

/// The nominations and evictions of a group waiting on preemption.
struct Preempting {
    /// By member key; "" clears a nomination.
    nominations: std::collections::HashMap<String, String>,
    preemption: Option<crate::framework::Preemption>,
}

impl Scheduler {
    /// One pod-group cycle of `group`, popped from profile `index`'s queue; see the
    /// module docs. The members' outputs and the group's report are queued for
    /// [`Scheduler::schedule_one`] to hand out.
    pub(super) async fn attempt_group(&mut self, index: usize, mut group: QueuedGroup) {
        self.cache.update_snapshot(&mut self.snapshot);
        // A group's cycle counts as a cycle: no batch survives it.
        self.cycles += 1;
        let scheduler_name = self.profiles[index].scheduler_name.clone();
        let pod_cycle = self.profiles[index].queue.scheduling_cycle();
        let states = self.options.pod_group_states.clone();
        let key = group.key.clone();

        let Some(pod_group) = states.pod_group(&key) else {
            let message = format!("pod group object not found for pod group {key}");
            self.fail_group(index, group, &Status::error(message.clone()));
            self.pending
                .push_back(CycleOutput::PodGroup(PodGroupReport {
                    group: key,
                    scheduler_name,
                    condition: None,
                    message,
                    placed: 0,
                    members: 0,
                    attempt: None,
                    preemption: None,
                }));
            return;
        };
        let pod_group = match key.dialect {
            GroupDialect::Workload => pod_group,
            GroupDialect::Coscheduling => with_members_priority(&pod_group, &group),
        };
        let reported = |status, reason, message: &str| {
            (key.dialect == GroupDialect::Workload)
                .then(|| condition(&pod_group, status, reason, message))
        };
        if let Err(message) = self.validate_group(&group, &pod_group) {
            let members = group.members.len();
            let condition = reported("False", "SchedulerError", &message);
            self.fail_group(index, group, &Status::error(message.clone()));
            self.pending
                .push_back(CycleOutput::PodGroup(PodGroupReport {
                    group: key,
                    scheduler_name,
                    condition,
                    message,
                    placed: 0,
                    members,
                    attempt: None,
                    preemption: None,
                }));
            return;
        }
        // Members being deleted, or assumed already, are not tried again.
        let (skipped, members): (Vec<_>, Vec<_>) = std::mem::take(&mut group.members)
            .into_iter()
            .partition(|m| {
                m.pod_info.pod.metadata.deletion_timestamp.is_some()
                    || self.cache.is_assumed(m.pod_info.key())
            });
        for member in &skipped {
            self.profiles[index].queue.done(member.pod_info.key());
        }
        group.members = members;
        if group.members.is_empty() {
            let now = self.now();
            self.profiles[index]
                .queue
                .requeue_group(group, GroupOutcome::Scheduled, now);
            return;
        }

        let scheduled_before = states
            .with_state(&key, |s| s.scheduled_pods_count())
            .unwrap_or(0);
        let started = std::time::Instant::now();
        let (tried, verdict) = self
            .place_group(index, &group, &pod_group, scheduled_before)
            .await;
        // Members not tried keep the message from before PodGroupPostFilter.
        let untried = match &verdict {
            Verdict::Rejected(message) => message.clone(),
            _ => String::new(),
        };
        let post = match verdict {
            Verdict::Rejected(message) => {
                self.pod_group_post_filter(index, &group, &pod_group, scheduled_before, message)
                    .await
            }
            other => PostFilter {
                verdict: other,
                preempting: None,
                preemption: None,
            },
        };
        let preemption = post.preemption;
        let attempt = PodGroupAttempt {
            result: match &post.verdict {
                Verdict::Feasible => GroupResult::Scheduled,
                Verdict::Rejected(_) if post.preempting.is_some() => {
                    GroupResult::WaitingOnPreemption
                }
                Verdict::Rejected(_) => GroupResult::Unschedulable,
                Verdict::Error(_) => GroupResult::Error,
            },
            algorithm: started.elapsed(),
        };
        let members = group.members.len();
        let message = match &post.verdict {
            Verdict::Feasible => String::new(),
            Verdict::Rejected(message) | Verdict::Error(message) => message.clone(),
        };
        let condition = match &post.verdict {
            Verdict::Feasible => reported("True", "Scheduled", ""),
            Verdict::Rejected(message) => reported("False", "Unschedulable", message),
            Verdict::Error(message) => reported("False", "SchedulerError", message),
        };
        let placed = self
            .submit_group(index, group, pod_cycle, tried, post, &untried)
            .await;
        self.pending
            .push_back(CycleOutput::PodGroup(PodGroupReport {
                group: key,
                scheduler_name,
                condition,
                message,
                placed,
                members,
                attempt: Some(attempt),
                preemption,
            }));
    }

    /// Upstream `validatePodGroup` (PodGroupPreemptionPolicy off). A Coscheduling group
    /// has no priority of its own, so its members' priorities are not checked.
    fn validate_group(&self, group: &QueuedGroup, pod_group: &PodGroup) -> Result<(), String> {
        let priority = pod_group.spec.priority.unwrap_or(0);
        let same_priority = group.key.dialect == GroupDialect::Workload;
        let placed: Vec<Arc<k8s_openapi::api::core::v1::Pod>> = self
            .options
            .pod_group_states
            .with_state(&group.key, |s| s.scheduled_pods().cloned().collect())
            .unwrap_or_default();
        let expected = group
            .members
            .first()
            .map(|m| m.pod_info.scheduler_name().to_string())
            .unwrap_or_default();
        let mut policy: Option<String> = None;
        let pods = group
            .members
            .iter()
            .map(|m| m.pod_info.pod.clone())
            .chain(placed);
        for pod in pods {
            let spec = pod.spec.as_ref();
            let name = scheduler_name(&pod);
            if name != expected {
                return Err(format!(
                    "all pods in a single pod group should have the same .spec.schedulerName set, got: {name:?} and {expected:?}"
                ));
            }
            let pod_priority = spec.and_then(|s| s.priority).unwrap_or(0);
            if same_priority && pod_priority != priority {
                return Err(format!(
                    "all pods in a single pod group should have the same priority as the pod group's priority, got {pod_priority} and {priority}"
                ));
            }
            let pod_policy = spec
                .and_then(|s| s.preemption_policy.clone())
                .unwrap_or_else(|| "PreemptLowerPriority".to_string());
            match &policy {
                None => policy = Some(pod_policy),
                Some(first) if *first != pod_policy => {
                    return Err(format!(
                        "all pods in a single pod group should have the same preemption policy, got {pod_policy} and {first}"
                    ));
                }
                Some(_) => {}
            }
        }
        if !self.by_name.contains_key(&expected) {
            return Err(format!("profile not found for scheduler name {expected:?}"));
        }
        Ok(())
    }

    /// Upstream `podGroupSchedulingDefaultAlgorithm`, its tentative placements undone.
    pub(super) async fn place_group(
        &mut self,
        index: usize,
        group: &QueuedGroup,
        pod_group: &PodGroup,
        scheduled_before: usize,
    ) -> (Vec<Tried>, Verdict) {
        let framework = self.profiles[index].framework.clone();
        let mut progress = PlacementProgress {
            remaining: group.members.len(),
            scheduled: scheduled_before,
        };
        let mut tried: Vec<Tried> = Vec::with_capacity(group.members.len());
        // (member's index in `tried`, the assumed pod, its node, its nomination before)
        let mut tentative: Vec<(usize, Arc<PodInfo>, String, Option<String>)> = Vec::new();
        let mut any_placed = false;
        let mut status = framework.run_placement_feasible(&group.key, pod_group, progress);
        let mut verdict = None;
        if status.code() == Code::Error {
            verdict = Some(Verdict::Error(format!(
                "failed to evaluate placement feasibility: {}",
                status.message()
            )));
        } else if status.code() != Code::Unschedulable {
            for member in &group.members {
                let mut state = CycleState::new();
                state.write(PodGroupCycle);
                let result = cycle::schedule_pod(
                    &framework,
                    &mut state,
                    &member.pod_info,
                    &self.snapshot,
                    &mut self.next_start_node_index,
                    &mut self.rng,
                    self.options.record_diagnosis,
                    None,
                )
                .await;
                let result = match result {
                    Ok((node, diagnosis)) => {
                        let nominated = self.nominator.nominated_node(member.pod_info.key());
                        match self
                            .assume_tentatively(&framework, &mut state, &member.pod_info, &node)
                            .await
                        {
                            Ok(assumed) => {
                                tentative.push((tried.len(), assumed, node.clone(), nominated));
                                Ok((node, diagnosis))
                            }
                            Err(failure) => Err(failure.with_diagnosis(diagnosis)),
                        }
                    }
                    Err(failure) => Err(failure),
                };
                let placed = result.is_ok();
                let error = result
                    .as_ref()
                    .err()
                    .filter(|f| f.is_error)
                    .map(|f| f.message.clone());
                tried.push(Tried { state, result });
                if let Some(message) = error {
                    verdict = Some(Verdict::Error(format!(
                        "failed to schedule other pod from a pod group: {message}"
                    )));
                    break;
                }
                progress.remaining -= 1;
                if placed {
                    progress.scheduled += 1;
                }
                status = framework.run_placement_feasible(&group.key, pod_group, progress);
                if status.code() == Code::Error {
                    verdict = Some(Verdict::Error(format!(
                        "failed to evaluate placement feasibility: {}",
                        status.message()
                    )));
                    break;
                }
                if status.code() == Code::Unschedulable {
                    break;
                }
                any_placed |= placed;
            }
        }
        // Every tentative placement is undone, last first, and the nominations the
        // assumptions dropped come back (upstream's failure handler adds them again from
        // the pods' status; a placed member loses its nomination when it is assumed for
        // real).
        for (at, assumed, node, nominated) in tentative.into_iter().rev() {
            framework
                .run_unreserve(&mut tried[at].state, &assumed, &node)
                .await;
            self.forget(&assumed);
            if let Some(nominated) = nominated {
                let member = &group.members[at];
                self.nominator.nominate(member.pod_info.clone(), &nominated);
            }
        }
        self.cache.update_snapshot(&mut self.snapshot);
        // As upstream words it: a rejection after a member was tried is the plugin's own
        // status; a rejection before any, and a gang still waiting at the end, are the
        // group's ("pod group is unschedulable, <why>").
        let verdict = verdict.unwrap_or_else(|| match status.code() {
            Code::Success if any_placed => Verdict::Feasible,
            Code::Success => Verdict::Rejected(POD_GROUP_UNSCHEDULABLE.into()),
            Code::Unschedulable if !tried.is_empty() => Verdict::Rejected(status.message()),
            _ => Verdict::Rejected(join_reasons(POD_GROUP_UNSCHEDULABLE, &status.message())),
        });
        (tried, verdict)
    }

    /// Upstream's PodGroupPostFilter for a group rejected with `message`: the profile's
    /// plugins that implement it go in order. An Unschedulable reason is collected and
    /// the next plugin runs; an UnschedulableAndUnresolvable reason is the whole reason;
    /// a success (a preemption) ends it with its own reason, and the group waits on the
    /// preemption. The reason is appended to the group's message, even when empty (as
    /// upstream appends it).
    ///
    /// - DynamicResources: `deallocation and deletion of ResourceClaims completed`
    ///   (berth deallocates nothing for a group: its members' claims are allocated only
    ///   when they bind).
    /// - DefaultPreemption: [`Scheduler::preempt_for_group`].
    async fn pod_group_post_filter(
        &mut self,
        index: usize,
        group: &QueuedGroup,
        pod_group: &Arc<PodGroup>,
        scheduled_before: usize,
        message: String,
    ) -> PostFilter {
        let framework = self.profiles[index].framework.clone();
        let mut reasons = Vec::new();
        let mut preemption = None;
        let rejected = |reason: String, preemption| PostFilter {
            verdict: Verdict::Rejected(format!("{message}, {reason}")),
            preempting: None,
            preemption,
        };
        let ran = |code, victims| Some(GroupPreemptionAttempt { code, victims });
        for plugin in framework.plugins(crate::api::ExtensionPoint::PostFilter) {
            match plugin.name() {
                DYNAMIC_RESOURCES => reasons.push(CLAIMS_RELEASED.to_string()),
                DEFAULT_PREEMPTION => match self
                    .preempt_for_group(index, group, pod_group, scheduled_before)
                    .await
                {
                    GroupPreemption::Preempting {
                        reason,
                        nominations,
                        preemption,
                        victims,
                    } => {
                        return PostFilter {
                            preempting: Some(Preempting {
                                nominations,
                                preemption,
                            }),
                            ..rejected(reason, ran(Code::Success, victims))
                        };
                    }
                    GroupPreemption::Unschedulable(reason) => {
                        reasons.push(reason);
                        preemption = ran(Code::Unschedulable, None);
                    }
                    GroupPreemption::Unresolvable(reason) => {
                        return rejected(reason, ran(Code::UnschedulableAndUnresolvable, None));
                    }
                    GroupPreemption::Error(error) => {
                        return PostFilter {
                            verdict: Verdict::Error(format!(
                                "error in \"{DEFAULT_PREEMPTION}\" PodGroupPostFilter plugins: {error}"
                            )),
                            preempting: None,
                            preemption: ran(Code::Error, None),
                        };
                    }
                },
                _ => {}
            }
        }
        rejected(reasons.join(", "), preemption)
    }

    /// Assumes `pod` on `node` for the rest of the algorithm (dropping its nomination, as
    /// upstream's assume does, so that the next members do not count it twice) and runs
    /// Reserve; a Reserve rejection is the member's failure.
    async fn assume_tentatively(
        &mut self,
        framework: &crate::framework::Framework,
        state: &mut CycleState,
        pod: &Arc<PodInfo>,
        node: &str,
    ) -> Result<Arc<PodInfo>, Failure> {
        let assumed = Arc::new(pod.with_node_name(node));
        if let Err(e) = self.assume(pod, node) {
            return Err(Failure::error(&Status::error(format!(
                "assuming pod on node {node}: {e}"
            ))));
        }
        self.nominator.delete(pod.key());
        let status = framework.run_reserve(state, &assumed, node).await;
        if !status.is_success() {
            framework.run_unreserve(state, &assumed, node).await;
            self.forget(&assumed);
            self.cache.update_snapshot(&mut self.snapshot);
            return Err(Failure::rejected_on(node, status));
        }
        self.cache.update_snapshot(&mut self.snapshot);
        Ok(assumed)
    }

    /// Upstream `submitPodGroupAlgorithmResult`: binding cycles for the placed members of
    /// a feasible group, failures for the rest, the group requeued. Returns how many
    /// members went to their binding cycles.
    async fn submit_group(
        &mut self,
        index: usize,
        mut group: QueuedGroup,
        pod_cycle: u64,
        tried: Vec<Tried>,
        post: PostFilter,
        untried: &str,
    ) -> usize {
        let PostFilter {
            verdict,
            preempting,
            ..
        } = post;
        let verdict = &verdict;
        let members = std::mem::take(&mut group.members);
        let mut tried = tried.into_iter();
        let mut failed = Vec::new();
        let mut placed = 0;
        let (mut nominations, mut preemption) = match preempting {
            Some(p) => (Some(p.nominations), p.preemption),
            None => (None, None),
        };
        for member in members {
            let waiting = nominations.is_some();
            let mut failure = match (verdict, tried.next()) {
                // A member's own error is its message; the others get the group's.
                (Verdict::Error(_), Some(Tried { result: Err(f), .. })) if f.is_error => f,
                (Verdict::Error(message), _) => Failure::error(&Status::error(message.clone())),
                (_, Some(Tried { result: Err(f), .. })) => f,
                (
                    Verdict::Feasible,
                    Some(Tried {
                        state,
                        result: Ok((node, diagnosis)),
                    }),
                ) => {
                    self.nominator.delete(member.pod_info.key());
                    match self
                        .submit_member(index, member, pod_cycle, state, node, diagnosis)
                        .await
                    {
                        Ok(output) => {
                            placed += 1;
                            self.pending.push_back(output);
                        }
                        Err((member, failure)) => failed.push((member, failure)),
                    }
                    continue;
                }
                // Waiting on preemption, a member that fit gets the group's status as it
                // is; otherwise the group's rejection wrapped as upstream wraps it.
                (Verdict::Rejected(message), Some(Tried { result: Ok(_), .. })) if waiting => {
                    Failure::group_rejected(message.clone())
                }
                (Verdict::Rejected(message), Some(Tried { result: Ok(_), .. })) => {
                    Failure::group_rejected(join_reasons(POD_GROUP_UNSCHEDULABLE, message))
                }
                // Not tried: the algorithm stopped before the member.
                (Verdict::Rejected(_), None) => Failure::group_rejected(untried.to_string()),
                (Verdict::Feasible, None) => Failure::error(&Status::error(
                    "scheduling error for pod group, some pods were not processed",
                )),
            };
            if let Some(nominations) = &mut nominations {
                failure.nominating = nominations.remove(member.pod_info.key());
                // The first member carries the evictions: the scheduler holds it (and so
                // the group) back until they end.
                failure.preemption = preemption.take();
            }
            failed.push((member, failure));
        }
        let mut requeue = Vec::new();
        for (member, failure) in failed {
            let (member, report) = self.prepare_failure(index, member, failure);
            self.pending.push_back(CycleOutput::Done(report));
            if self.cache.get_pod(member.pod_info.key()).is_some() {
                self.profiles[index].queue.done(member.pod_info.key());
            } else {
                requeue.push(member);
            }
        }
        group.members = requeue;
        let outcome = match verdict {
            Verdict::Feasible => GroupOutcome::Scheduled,
            Verdict::Rejected(_) => GroupOutcome::Rejected,
            Verdict::Error(_) => GroupOutcome::Error,
        };
        let now = self.now();
        self.profiles[index]
            .queue
            .requeue_group(group, outcome, now);
        placed
    }

    /// A placed member of a feasible group: assume, Reserve and Permit for real, then its
    /// binding cycle.
    async fn submit_member(
        &mut self,
        index: usize,
        member: QueuedPodInfo,
        pod_cycle: u64,
        state: CycleState,
        node: String,
        diagnosis: Option<CycleDiagnosis>,
    ) -> Result<CycleOutput, (QueuedPodInfo, Failure)> {
        let mut state = state;
        let _ = state.remove::<PodGroupCycle>();
        cycle::assume_reserve_permit_for_group(
            self, index, member, pod_cycle, state, node, diagnosis,
        )
        .await
    }

    /// Fails every member of a group with one status, and requeues the group.
    fn fail_group(&mut self, index: usize, mut group: QueuedGroup, status: &Status) {
        let members = std::mem::take(&mut group.members);
        let mut requeue = Vec::new();
        for member in members {
            let (member, report) = self.prepare_failure(index, member, Failure::error(status));
            self.pending.push_back(CycleOutput::Done(report));
            requeue.push(member);
        }
        group.members = requeue;
        let now = self.now();
        self.profiles[index]
            .queue
            .requeue_group(group, GroupOutcome::Error, now);
    }
}

/// A Coscheduling group's PodGroup for one cycle: at the lowest priority of the members
/// the cycle tries, so that the group preempts only what each of them could.
fn with_members_priority(pod_group: &PodGroup, group: &QueuedGroup) -> Arc<PodGroup> {
    let priority = group.members.iter().map(|m| m.pod_info.priority()).min();
    let mut pod_group = pod_group.clone();
    pod_group.spec.priority = priority;
    Arc::new(pod_group)
}

/// Upstream's `Status.Message()` of a status whose error is `first` and whose reasons
/// follow.
fn join_reasons(first: &str, rest: &str) -> String {
    if rest.is_empty() {
        first.to_string()
    } else {
        format!("{first}, {rest}")
    }
}

/// The `PodGroupInitiallyScheduled` condition the cycle wants, at the PodGroup's
/// generation.
fn condition(pod_group: &PodGroup, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: INITIALLY_SCHEDULED.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation: pod_group.metadata.generation,
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

/// Upstream `updatePodGroupCondition`: merges `wanted` into `conditions` (a condition
/// of the type that is True is never turned back; the transition time changes only with
/// the status, to `now`). `None` when nothing changes.
pub fn merge_condition(
    conditions: &[Condition],
    wanted: &Condition,
    now: Timestamp,
) -> Option<Vec<Condition>> {
    let mut merged = conditions.to_vec();
    match merged.iter_mut().find(|c| c.type_ == wanted.type_) {
        Some(existing) if existing.status == "True" && wanted.status != "True" => None,
        Some(existing) => {
            let mut next = wanted.clone();
            next.last_transition_time = if existing.status == wanted.status {
                existing.last_transition_time.clone()
            } else {
                Time(now)
            };
            if *existing == next {
                return None;
            }
            *existing = next;
            Some(merged)
        }
        None => {
            let mut next = wanted.clone();
            next.last_transition_time = Time(now);
            merged.push(next);
            Some(merged)
        }
    }
}
