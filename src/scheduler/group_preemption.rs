//! DefaultPreemption's PodGroupPostFilter: workload-aware preemption for a pod group (of
//! any dialect: a berth or scheduler-plugins group preempts at its members' lowest
//! priority) that does not fit (upstream `PodGroupEvaluator`, GenericWorkload on, no
//! composite groups, PodGroupPreemptionPolicy off). Its domain is the whole cluster.
//!
//! 1. The group is not eligible when a member has `preemptionPolicy: Never`.
//! 2. An earlier preemption of the group is still going on when a member's nominated
//!    node holds a lower-priority pod terminating by preemption: the members keep their
//!    nominations and nothing more is evicted.
//! 3. Victims are units ([`VictimUnit`]): a pod, or every scheduled pod of a PodGroup whose
//!    `disruptionMode` is `All`. A unit's priority is its PodGroup's (a pod outside
//!    groups: its own); the units below the preemptor PodGroup's priority are the
//!    potential victims. None: `No preemption victims found for incoming preemptor`
//!    (UnschedulableAndUnresolvable).
//! 4. Every potential victim is set aside (taken out of the cache) and the group's
//!    algorithm runs again. If the group still does not fit, its status is the reason.
//! 5. Most important first (priority; a pod group's unit before a pod; the larger unit;
//!    the earlier start), those whose eviction a PodDisruptionBudget forbids before the
//!    others, each unit is given back if every placed member still passes Filter (with
//!    nominated pods) on the node the algorithm chose, the members before it assumed and
//!    reserved. PreFilter's AddPod/RemovePod keep each member's cycle state in step.
//! 6. The units not given back are the victims. The members are nominated to their
//!    nodes (those the algorithm left out lose their nominations), and the evictions go
//!    to the adapter as one [`Preemption`] whose preemptor is the PodGroup.
//!
//! The simulation works on the scheduler's own cache and snapshot: the scheduling loop
//! is single-threaded, and everything set aside or assumed is restored before it ends.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::scheduling::v1beta1::PodGroup;

use crate::cluster::{PodInfo, SetAside};
use crate::framework::victim_units::{
    VictimUnit, importance, split_by_budgets, terminating_by_preemption, units_on, victim_priority,
};
use crate::framework::{
    CycleState, FilterRunner, Framework, GROUP_PREEMPTION_DOMAIN, Preemption, Victim,
};
use crate::queue::QueuedGroup;

use super::Scheduler;
use super::group_cycle::Verdict;

/// How upstream prefixes DefaultPreemption's PodGroupPostFilter messages.
pub const POD_GROUP_PREEMPTION: &str = "pod group preemption: ";
/// The reason when no unit is of lower priority.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming preemptor";
/// The reason when a member has `preemptionPolicy: Never`.
pub const NOT_ELIGIBLE: &str = "not eligible due to preemptionPolicy=Never.";
/// The reason when an earlier preemption of the group is still going on.
pub const ONGOING: &str = "ongoing preemption on nominated nodes";
/// The message a waiting member is rejected with (upstream's `WaitingPod.Preempt`).
const PREEMPTED: &str = "preempted";
/// The plugin named when a victim held at Permit is rejected.
const DEFAULT_PREEMPTION: &str = "DefaultPreemption";

/// What DefaultPreemption's PodGroupPostFilter decided.
pub enum GroupPreemption {
    /// The members may fit once the victims are gone: their nominations by pod key (""
    /// clears one) and the evictions to carry out (`None`: none left to start).
    Preempting {
        reason: String,
        nominations: HashMap<String, String>,
        preemption: Option<Preemption>,
        /// The victims it chose, `(pods, pod groups' units)`; `None` for an ongoing
        /// preemption, which chooses none.
        victims: Option<(usize, usize)>,
    },
    /// Unschedulable: the next PodGroupPostFilter plugin may still help.
    Unschedulable(String),
    /// UnschedulableAndUnresolvable: the reason is the whole PodGroupPostFilter's.
    Unresolvable(String),
    Error(String),
}

/// A member the algorithm placed, with the cycle state it was placed with.
struct Assignment {
    pod: Arc<PodInfo>,
    node: String,
    state: CycleState,
}

impl Scheduler {
    /// DefaultPreemption's PodGroupPostFilter for `group`, rejected in this cycle; see the
    /// module docs. `scheduled_before` is how many members were placed before the cycle.
    pub(super) async fn preempt_for_group(
        &mut self,
        index: usize,
        group: &QueuedGroup,
        pod_group: &Arc<PodGroup>,
        scheduled_before: usize,
    ) -> GroupPreemption {
        let never = group.members.iter().any(|m| {
            m.pod_info
                .pod
                .spec
                .as_ref()
                .and_then(|s| s.preemption_policy.as_deref())
                == Some("Never")
        });
        if never {
            return GroupPreemption::Unschedulable(format!("{POD_GROUP_PREEMPTION}{NOT_ELIGIBLE}"));
        }
        let priority = pod_group.spec.priority.unwrap_or(0);
        if self.preemption_ongoing(group, priority) {
            let nominations = group
                .members
                .iter()
                .map(|m| {
                    let nominated = m
                        .pod_info
                        .pod
                        .status
                        .as_ref()
                        .and_then(|s| s.nominated_node_name.clone())
                        .unwrap_or_default();
                    (m.pod_info.key().to_string(), nominated)
                })
                .collect();
            return GroupPreemption::Preempting {
                reason: format!("{POD_GROUP_PREEMPTION}{ONGOING}"),
                nominations,
                preemption: None,
                victims: None,
            };
        }
        let potential: Vec<VictimUnit> = self
            .units()
            .into_iter()
            .filter(|u| u.priority < priority)
            .collect();
        if potential.is_empty() {
            return GroupPreemption::Unresolvable(format!("{POD_GROUP_PREEMPTION}{NO_VICTIMS}"));
        }

        let mut aside: HashMap<String, SetAside> = HashMap::new();
        for pod in potential.iter().flat_map(|u| &u.pods) {
            if let Some(set) = self.cache.set_aside(pod.key()) {
                aside.insert(pod.key().to_string(), set);
            }
        }
        self.cache.update_snapshot(&mut self.snapshot);
        let result = self
            .select_victims(
                index,
                group,
                pod_group,
                scheduled_before,
                potential,
                &mut aside,
            )
            .await;
        for (_, set) in aside {
            self.cache.put_back(set);
        }
        self.cache.update_snapshot(&mut self.snapshot);
        let (victims, nominations) = match result {
            Ok(selected) => selected,
            Err(outcome) => return outcome,
        };

        let group_units = victims.iter().filter(|u| u.group).count();
        let pods: Vec<Arc<PodInfo>> = victims.iter().flat_map(|u| u.pods.clone()).collect();
        let reason = format!(
            "{POD_GROUP_PREEMPTION}found a placement for podgroup, preempting {} victims",
            pods.len()
        );
        let framework = self.profiles[index].framework.clone();
        let waiting_pods = framework.handle().waiting_pods.clone();
        let evictions: Vec<Victim> = pods
            .iter()
            .filter(|p| p.pod.metadata.deletion_timestamp.is_none())
            .map(|p| {
                let waiting = waiting_pods.get(p.key());
                if let Some(waiting) = &waiting {
                    waiting.reject(DEFAULT_PREEMPTION, PREEMPTED);
                }
                Victim {
                    pod: p.pod.clone(),
                    waiting: waiting.is_some(),
                }
            })
            .collect();
        let preemption = (!evictions.is_empty()).then(|| Preemption {
            preemptor: group.members[0].pod_info.pod.clone(),
            node: GROUP_PREEMPTION_DOMAIN.to_string(),
            victims: evictions,
            cleared_nominations: Vec::new(),
            group: Some(pod_group.clone()),
        });
        GroupPreemption::Preempting {
            reason,
            nominations,
            preemption,
            victims: Some((pods.len(), group_units)),
        }
    }

    /// Upstream `isOngoingPreemption`: a member's nominated node holds a pod of lower
    /// priority than `priority` that is terminating by preemption.
    fn preemption_ongoing(&self, group: &QueuedGroup, priority: i32) -> bool {
        let nominated: BTreeSet<&str> = group
            .members
            .iter()
            .filter_map(|m| {
                m.pod_info
                    .pod
                    .status
                    .as_ref()?
                    .nominated_node_name
                    .as_deref()
            })
            .filter(|n| !n.is_empty())
            .collect();
        nominated.into_iter().any(|name| {
            self.snapshot.get(name).is_some_and(|node| {
                node.pods.iter().any(|p| {
                    victim_priority(&self.options.pod_group_states, &p.pod) < priority
                        && terminating_by_preemption(&p.pod)
                })
            })
        })
    }

    /// Every unit of eviction in the cluster, in snapshot order (upstream
    /// `getCrossNodesVictims` over every node).
    fn units(&self) -> Vec<VictimUnit> {
        let states = &self.options.pod_group_states;
        units_on(
            self.snapshot.nodes().iter().map(|n| n.as_ref()),
            states,
            &self.snapshot,
        )
    }

    /// Steps 4 to 6 with the potential victims set aside in `aside`: the victims, most
    /// important first, and the members' nominations; or the outcome when the group does
    /// not fit even so. Whatever is still in `aside` at the end is for the caller to put
    /// back.
    async fn select_victims(
        &mut self,
        index: usize,
        group: &QueuedGroup,
        pod_group: &PodGroup,
        scheduled_before: usize,
        potential: Vec<VictimUnit>,
        aside: &mut HashMap<String, SetAside>,
    ) -> Result<(Vec<VictimUnit>, HashMap<String, String>), GroupPreemption> {
        let (tried, verdict) = self
            .place_group(index, group, pod_group, scheduled_before)
            .await;
        match verdict {
            Verdict::Feasible => {}
            Verdict::Rejected(message) => {
                return Err(GroupPreemption::Unschedulable(format!(
                    "{POD_GROUP_PREEMPTION}{message}"
                )));
            }
            Verdict::Error(message) => return Err(GroupPreemption::Error(message)),
        }
        let mut assignments: Vec<Assignment> = group
            .members
            .iter()
            .zip(tried)
            .filter_map(|(member, tried)| {
                let (node, _) = tried.result.ok()?;
                Some(Assignment {
                    pod: member.pod_info.clone(),
                    node,
                    state: tried.state,
                })
            })
            .collect();

        let mut potential = potential;
        potential.sort_by(importance);
        let framework = self.profiles[index].framework.clone();
        let budgets: Vec<_> = framework
            .handle()
            .disruption_budgets
            .list()
            .iter()
            .map(|b| (**b).clone())
            .collect();
        let (violating, non_violating) = split_by_budgets(potential, &budgets);
        let mut victims = Vec::new();
        for unit in violating.into_iter().map(|(u, _)| u).chain(non_violating) {
            let kept = self
                .reprieve(&framework, &unit, &mut assignments, aside)
                .await
                .map_err(GroupPreemption::Error)?;
            if !kept {
                victims.push(unit);
            }
        }
        victims.sort_by(importance);
        let mut nominations: HashMap<String, String> = group
            .members
            .iter()
            .map(|m| (m.pod_info.key().to_string(), String::new()))
            .collect();
        for assignment in assignments {
            nominations.insert(assignment.pod.key().to_string(), assignment.node);
        }
        Ok((victims, nominations))
    }

    /// Gives `unit` back and says whether every placed member still fits where the
    /// algorithm put it (upstream's `reprieveVictim`); if not, sets it aside again. The
    /// members assumed for the check are forgotten before this returns.
    async fn reprieve(
        &mut self,
        framework: &Arc<Framework>,
        unit: &VictimUnit,
        assignments: &mut [Assignment],
        aside: &mut HashMap<String, SetAside>,
    ) -> Result<bool, String> {
        for pod in &unit.pods {
            if let Some(set) = aside.remove(pod.key()) {
                self.cache.put_back(set);
            }
        }
        self.cache.update_snapshot(&mut self.snapshot);
        for pod in &unit.pods {
            let Some(node) = pod.node_name().and_then(|n| self.snapshot.get(n)).cloned() else {
                continue;
            };
            for a in assignments.iter_mut() {
                let status = framework.pre_filter_add_pod(&mut a.state, &a.pod, pod, &node);
                if !status.is_success() {
                    return Err(status.message());
                }
            }
        }
        let mut assumed: Vec<(usize, Arc<PodInfo>)> = Vec::new();
        let mut fits = true;
        for (at, a) in assignments.iter_mut().enumerate() {
            let status = match self.snapshot.get(&a.node) {
                Some(node) => framework.filter_with_nominated_pods(&a.state, &a.pod, node),
                None => crate::framework::Status::unschedulable("node not found"),
            };
            if !status.is_success() || self.assume(&a.pod, &a.node).is_err() {
                fits = false;
                break;
            }
            let placed = Arc::new(a.pod.with_node_name(&a.node));
            // As upstream, Reserve's verdict is not looked at here.
            let _ = framework.run_reserve(&mut a.state, &placed, &a.node).await;
            self.cache.update_snapshot(&mut self.snapshot);
            assumed.push((at, placed));
        }
        let mut outcome = Ok(fits);
        if !fits {
            for pod in &unit.pods {
                if let Some(set) = self.cache.set_aside(pod.key()) {
                    aside.insert(pod.key().to_string(), set);
                }
            }
            self.cache.update_snapshot(&mut self.snapshot);
            'removed: for pod in &unit.pods {
                let Some(node) = pod.node_name().and_then(|n| self.snapshot.get(n)).cloned() else {
                    continue;
                };
                for a in assignments.iter_mut() {
                    let status = framework.pre_filter_remove_pod(&mut a.state, &a.pod, pod, &node);
                    if !status.is_success() {
                        outcome = Err(status.message());
                        break 'removed;
                    }
                }
            }
        }
        for (at, placed) in assumed.into_iter().rev() {
            let a = &mut assignments[at];
            framework
                .run_unreserve(&mut a.state, &placed, &a.node)
                .await;
            self.forget(&placed);
        }
        self.cache.update_snapshot(&mut self.snapshot);
        outcome
    }
}
