//! The PodGroup controller (docs/architecture.md §2): the status of every PodGroup, computed from its
//! member pods, and the implicit PodGroups of pods that ask for one.
//!
//! # Members
//!
//! A pod is a member of the PodGroup named by its `berth.dev/pod-group` label (or
//! scheduler-plugins' `scheduling.x-k8s.io/pod-group`) in its own namespace; see
//! [`pod_group_of`]. Members are listed from the API server by label selector when a group
//! is reconciled, so the status never lags behind the watch event that triggered it.
//!
//! # Status
//!
//! Only the leader ([`OperatorState::is_leader`]) writes, and only when the status
//! changed. `scheduled` counts members bound to a node (`spec.nodeName` set, whatever their
//! phase), `running`, `succeeded` and `failed` count members in those pod phases. With
//! `n` members and `min = spec.minMember`, the phase is the first that applies of:
//!
//! | phase        | when                                                              |
//! |--------------|-------------------------------------------------------------------|
//! | `Failed`     | any member failed                                                 |
//! | `Finished`   | every member succeeded, and there are at least `min` of them      |
//! | `Running`    | at least `min` members are running or have succeeded              |
//! | `Scheduled`  | at least `min` members are bound to a node                        |
//! | `Pending`    | fewer than `min` members exist, or none is bound                  |
//! | `Scheduling` | some, but fewer than `min`, members are bound                     |
//!
//! So a healthy group goes Pending → Scheduling → Scheduled → Running → Finished, and
//! drops back (e.g. Running → Scheduled) when members are deleted or restart; Failed is
//! left only when the failed members are deleted.
//!
//! `scheduleStartTime` is set the first time a member is seen pending (not bound) and then
//! kept. `observedGeneration` is the group's `metadata.generation`.
//!
//! The condition [`SCHEDULED`] is True (reason [`reason::MIN_MEMBER_SCHEDULED`]) once
//! `min` members are bound (or the group is Running or Finished), else False with reason
//! [`reason::NOT_ENOUGH_PODS`] and a message such as `3/4 pods scheduled; waiting for 1
//! more`, followed by why a pending member could not be placed when the scheduler said
//! so in its `PodScheduled` condition.
//!
//! # Events
//!
//! On the PodGroup, by the leader: `Scheduled` (Normal) when the `Scheduled` condition
//! becomes True; `Timeout` (Warning) once when a group with `spec.scheduleTimeoutSeconds`
//! is still not scheduled that long after its `scheduleStartTime`.
//!
//! # Implicit groups
//!
//! A pod with a group label and the annotation `berth.dev/min-member: "<n>"` whose
//! PodGroup does not exist gets one created (`spec.minMember: n`), by the leader. Its owner
//! is the pod's controller owner (e.g. the Job that created the pod) when the pod has one,
//! so the group goes away with the Job; a pod without a controller owner gets a group
//! without owner (owning it by one member pod would delete it with that pod). The owner
//! reference is neither `controller` nor `blockOwnerDeletion`: berth, not the owner,
//! manages the group. An annotation that is not a positive integer is logged and reported
//! with an `InvalidMinMember` Warning event on the pod (once per pod); no group is created.
//!
//! Followers create nothing, but remember the annotated pods they see (up to
//! 10 000, latest version by uid); a replica that becomes leader creates the missing
//! groups of those pods at once instead of waiting for each pod to change. A remembered
//! pod is forgotten once it is seen terminating or its group exists; a pod deleted
//! without a grace period may stay remembered, and a new leader then creates its group
//! (owned by the pod's controller, so it is collected with it).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};

use super::conditions::{self, DesiredCondition};
use super::types::OperatorState;
use crate::api::{MIN_MEMBER_ANNOTATION, POD_GROUP_LABEL, POD_GROUP_LABEL_COMPAT};
use crate::api::{PodGroup, PodGroupPhase, PodGroupSpec, PodGroupStatus};
use crate::cluster::lock::mutex as lock;
use crate::cluster::{implicit_group, pod_group_of};

/// The PodGroup condition: at least `minMember` members are bound to nodes.
pub const SCHEDULED: &str = "Scheduled";

/// Condition and event reasons: stable strings, part of the API.
pub mod reason {
    /// `Scheduled` True.
    pub const MIN_MEMBER_SCHEDULED: &str = "MinMemberScheduled";
    /// `Scheduled` False: fewer than `minMember` members are bound.
    pub const NOT_ENOUGH_PODS: &str = "NotEnoughPods";
    /// Event (Normal): the group became scheduled.
    pub const SCHEDULED: &str = "Scheduled";
    /// Event (Warning): the group is not scheduled after `scheduleTimeoutSeconds`.
    pub const TIMEOUT: &str = "Timeout";
    /// Event (Warning) on a pod: its `berth.dev/min-member` annotation is invalid.
    pub const INVALID_MIN_MEMBER: &str = "InvalidMinMember";
}

/// How often an unchanged group is reconciled anyway.
const RESYNC: Duration = Duration::from_secs(300);
/// Retry of a failed reconcile.
const ERROR_RETRY: Duration = Duration::from_secs(5);
/// How long a created implicit group suppresses further creates of the same name while
/// the PodGroup watch catches up.
const CREATE_MEMORY: Duration = Duration::from_secs(30);
/// Bound of the per-pod and per-group memories.
const MAX_REMEMBERED: usize = 10_000;

/// Why a reconcile failed; the group is retried.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("cannot list the members of PodGroup {group}: {source}")]
    ListMembers {
        group: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot patch the status of PodGroup {group}: {source}")]
    PatchStatus {
        group: String,
        #[source]
        source: kube::Error,
    },
}

/// The last status written to a group and the resourceVersion it was written over: while
/// the controller's store still shows that version, the write is the newer truth.
struct Written {
    over: Option<String>,
    status: PodGroupStatus,
}

#[derive(Default)]
struct Memory {
    written: HashMap<String, Written>,
    /// Groups (by uid) whose Timeout event was published.
    timed_out: HashSet<String>,
}

struct Context {
    client: Client,
    state: OperatorState,
    recorder: Recorder,
    memory: Mutex<Memory>,
}

/// Runs the PodGroup controller and the implicit-group creator until `shutdown` resolves.
pub async fn run(
    client: Client,
    state: OperatorState,
    reporter: Reporter,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let groups: Api<PodGroup> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client.clone());
    let (implicit_tx, implicit_rx) = mpsc::unbounded_channel::<Pod>();
    let controller = Controller::new(groups, watcher::Config::default());
    let store = controller.store();
    let ctx = Arc::new(Context {
        client: client.clone(),
        state: state.clone(),
        recorder: Recorder::new(client.clone(), reporter.clone()),
        memory: Mutex::new(Memory::default()),
    });
    let creator = Creator {
        client,
        state: state.clone(),
        store,
        recorder: Recorder::new(ctx.client.clone(), reporter),
        created: HashMap::new(),
        reported: HashSet::new(),
        seen: HashMap::new(),
    };
    let creator = tokio::spawn(creator.run(implicit_rx));
    controller
        .watches(pods, watcher::Config::default(), move |pod: Pod| {
            let group = pod_group_of(&pod);
            if group.is_some() && has_min_member(&pod) {
                // The receiver lives as long as the controller; nothing to do if not.
                let _ = implicit_tx.send(pod);
            }
            group.map(|(namespace, name)| ObjectRef::<PodGroup>::new(&name).within(&namespace))
        })
        .reconcile_all_on(super::watches::changes(state.leader.clone()))
        .graceful_shutdown_on(shutdown.boxed().shared())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok(_) => {}
                // Pods of a group that does not exist (yet): nothing to reconcile.
                Err(kube::runtime::controller::Error::ObjectNotFound(object)) => {
                    tracing::debug!(%object, "PodGroup not found for a member pod");
                }
                Err(error) => tracing::warn!(%error, "PodGroup controller"),
            }
        })
        .await;
    creator.abort();
}

fn has_min_member(pod: &Pod) -> bool {
    pod.annotations().contains_key(MIN_MEMBER_ANNOTATION)
}

fn error_policy(group: Arc<PodGroup>, error: &ReconcileError, _: Arc<Context>) -> Action {
    tracing::warn!(group = %group.name_any(), %error, "PodGroup reconcile failed; retrying");
    Action::requeue(ERROR_RETRY)
}

async fn reconcile(group: Arc<PodGroup>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    if !ctx.state.is_leader() {
        return Ok(Action::requeue(RESYNC));
    }
    let (Some(name), Some(namespace), Some(uid)) = (
        group.metadata.name.clone(),
        group.metadata.namespace.clone(),
        group.metadata.uid.clone(),
    ) else {
        return Ok(Action::await_change());
    };
    let key = format!("{namespace}/{name}");
    let members = list_members(&ctx.client, &namespace, &name)
        .await
        .map_err(|source| ReconcileError::ListMembers {
            group: key.clone(),
            source,
        })?;
    let current = {
        let memory = lock(&ctx.memory);
        match memory.written.get(&uid) {
            Some(written) if written.over == group.metadata.resource_version => {
                written.status.clone()
            }
            _ => group.status.clone().unwrap_or_default(),
        }
    };
    let now = conditions::now();
    let desired = compute_status(
        &group.spec,
        group.metadata.generation,
        &members,
        &current,
        &now,
    );
    if !ctx.state.is_leader() {
        return Ok(Action::requeue(RESYNC));
    }
    let api: Api<PodGroup> = Api::namespaced(ctx.client.clone(), &namespace);
    if current != desired {
        let written = api
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(status_patch(&desired)),
            )
            .await
            .map_err(|source| ReconcileError::PatchStatus {
                group: key.clone(),
                source,
            })?;
        let mut memory = lock(&ctx.memory);
        if memory.written.len() >= MAX_REMEMBERED {
            memory.written.clear();
        }
        memory.written.insert(
            uid.clone(),
            Written {
                over: written.metadata.resource_version.clone(),
                status: desired.clone(),
            },
        );
        tracing::debug!(group = %key, phase = ?desired.phase, "PodGroup status patched");
    }
    let reference = group.object_ref(&());
    let was_scheduled = is_scheduled(&current);
    let scheduled = is_scheduled(&desired);
    if scheduled && !was_scheduled {
        let note = format!(
            "{}/{} pods scheduled",
            desired.scheduled, group.spec.min_member
        );
        publish(
            &ctx.recorder,
            &reference,
            EventType::Normal,
            reason::SCHEDULED,
            note,
        )
        .await;
    }
    let mut requeue = RESYNC;
    if scheduled {
        lock(&ctx.memory).timed_out.remove(&uid);
    } else if let Some(deadline) = timeout_deadline(&group.spec, &desired) {
        let left = deadline.as_second() - now.0.as_second();
        if left <= 0 {
            let first = {
                let mut memory = lock(&ctx.memory);
                if memory.timed_out.len() >= MAX_REMEMBERED {
                    memory.timed_out.clear();
                }
                memory.timed_out.insert(uid.clone())
            };
            if first {
                let note = format!(
                    "not scheduled within {}s: {}",
                    group.spec.schedule_timeout_seconds.unwrap_or_default(),
                    conditions::find(&desired.conditions, SCHEDULED)
                        .map(|c| c.message.as_str())
                        .unwrap_or_default()
                );
                publish(
                    &ctx.recorder,
                    &reference,
                    EventType::Warning,
                    reason::TIMEOUT,
                    note,
                )
                .await;
            }
        } else {
            requeue = requeue.min(Duration::from_secs(left.unsigned_abs()));
        }
    }
    Ok(Action::requeue(requeue))
}

/// The members of `namespace/name`, by either group label.
async fn list_members(client: &Client, namespace: &str, name: &str) -> kube::Result<Vec<Pod>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut members: BTreeMap<String, Pod> = BTreeMap::new();
    for label in [POD_GROUP_LABEL, POD_GROUP_LABEL_COMPAT] {
        let list = api
            .list(&ListParams::default().labels(&format!("{label}={name}")))
            .await?;
        for pod in list.items {
            // A pod with both labels belongs to the group its primary label names.
            if pod_group_of(&pod).is_some_and(|(_, group)| group == name) {
                members.insert(pod.name_any(), pod);
            }
        }
    }
    Ok(members.into_values().collect())
}

fn pod_phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.phase.as_deref())
}

fn is_bound(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

fn is_scheduled(status: &PodGroupStatus) -> bool {
    conditions::status_of(&status.conditions, SCHEDULED) == Some("True")
}

/// When a not-yet-scheduled group times out, if it has a timeout and a start time.
fn timeout_deadline(spec: &PodGroupSpec, status: &PodGroupStatus) -> Option<Timestamp> {
    let seconds = spec.schedule_timeout_seconds.filter(|s| *s >= 1)?;
    let start = status.schedule_start_time.as_ref()?;
    Some(Timestamp::from_second(start.0.as_second() + i64::from(seconds)).unwrap_or(start.0))
}

/// The status of a group with `members`, given its `current` status; see the module docs.
pub fn compute_status(
    spec: &PodGroupSpec,
    generation: Option<i64>,
    members: &[Pod],
    current: &PodGroupStatus,
    now: &Time,
) -> PodGroupStatus {
    let count = |f: &dyn Fn(&Pod) -> bool| {
        i32::try_from(members.iter().filter(|p| f(p)).count()).unwrap_or(i32::MAX)
    };
    let total = count(&|_| true);
    let scheduled = count(&is_bound);
    let running = count(&|p| pod_phase(p) == Some("Running"));
    let succeeded = count(&|p| pod_phase(p) == Some("Succeeded"));
    let failed = count(&|p| pod_phase(p) == Some("Failed"));
    let min = spec.min_member.max(1);
    let phase = if failed > 0 {
        PodGroupPhase::Failed
    } else if total > 0 && succeeded == total && succeeded >= min {
        PodGroupPhase::Finished
    } else if running + succeeded >= min {
        PodGroupPhase::Running
    } else if scheduled >= min {
        PodGroupPhase::Scheduled
    } else if total < min || scheduled == 0 {
        PodGroupPhase::Pending
    } else {
        PodGroupPhase::Scheduling
    };
    let schedule_start_time = current
        .schedule_start_time
        .clone()
        .or_else(|| members.iter().any(|p| !is_bound(p)).then(|| now.clone()));
    let is_scheduled =
        scheduled >= min || matches!(phase, PodGroupPhase::Running | PodGroupPhase::Finished);
    let condition = if is_scheduled {
        DesiredCondition::new(
            SCHEDULED,
            true,
            reason::MIN_MEMBER_SCHEDULED,
            format!("{scheduled}/{min} pods scheduled"),
        )
    } else {
        DesiredCondition::new(
            SCHEDULED,
            false,
            reason::NOT_ENOUGH_PODS,
            waiting_message(members, total, scheduled, min),
        )
    };
    let conditions = conditions::merge(&current.conditions, &[condition], generation, now);
    PodGroupStatus {
        phase: Some(phase),
        scheduled,
        running,
        succeeded,
        failed,
        schedule_start_time,
        observed_generation: generation,
        conditions,
    }
}

/// Why a group is not scheduled: `"3/4 pods scheduled; waiting for 1 more"`, what is
/// missing when fewer than `min` members exist, and the scheduler's reason for the first
/// unschedulable member.
fn waiting_message(members: &[Pod], total: i32, scheduled: i32, min: i32) -> String {
    let mut message = format!(
        "{scheduled}/{min} pods scheduled; waiting for {} more",
        min - scheduled
    );
    if total < min {
        message.push_str(&format!(
            "; only {total} of {min} pods exist ({} missing)",
            min - total
        ));
    }
    let unschedulable = members.iter().filter(|p| !is_bound(p)).find_map(|p| {
        let condition = p
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
        let why = condition.message.as_deref().filter(|m| !m.is_empty())?;
        Some(format!("pod {}: {why}", p.name_any()))
    });
    if let Some(why) = unschedulable {
        message.push_str(": ");
        message.push_str(&why);
    }
    message
}

/// A merge patch that makes the stored status equal to `status`: optional fields it
/// leaves out are sent as `null`.
fn status_patch(status: &PodGroupStatus) -> Value {
    let mut body = serde_json::to_value(status).unwrap_or_else(|_| Value::Object(Map::new()));
    if let Value::Object(fields) = &mut body {
        for field in [
            "phase",
            "scheduleStartTime",
            "observedGeneration",
            "conditions",
        ] {
            fields.entry(field).or_insert(Value::Null);
        }
    }
    serde_json::json!({ "status": body })
}

async fn publish(
    recorder: &Recorder,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.to_string(),
        note: Some(conditions::truncate_message(note)),
        action: reason.to_string(),
        secondary: None,
    };
    if let Err(error) = recorder.publish(&event, reference).await {
        tracing::warn!(reason, %error, "cannot publish event");
    }
}

/// Creates the implicit PodGroups of annotated pods.
struct Creator {
    client: Client,
    state: OperatorState,
    store: Store<PodGroup>,
    recorder: Recorder,
    /// Groups created recently (`namespace/name`), while the store catches up.
    created: HashMap<String, Instant>,
    /// Pods (by uid) whose invalid annotation was reported.
    reported: HashSet<String>,
    /// Annotated pods seen whose group did not exist then, by uid: what a new leader
    /// catches up on.
    seen: HashMap<String, Pod>,
}

impl Creator {
    async fn run(mut self, mut pods: mpsc::UnboundedReceiver<Pod>) {
        let mut leader = self.state.leader.clone();
        loop {
            tokio::select! {
                pod = pods.recv() => {
                    let Some(pod) = pod else { return };
                    self.remember(&pod);
                    if self.state.is_leader() && pod.metadata.deletion_timestamp.is_none() {
                        self.handle(&pod).await;
                    }
                }
                changed = leader.changed() => {
                    if changed.is_err() {
                        // The leader channel is gone: keep serving pods as they come.
                        leader = watch::channel(self.state.is_leader()).1;
                        continue;
                    }
                    let leading = *leader.borrow_and_update();
                    if leading {
                        self.catch_up().await;
                    }
                }
            }
        }
    }

    /// Keeps the latest version of an annotated pod until it is deleted.
    fn remember(&mut self, pod: &Pod) {
        let Some(uid) = pod.metadata.uid.clone() else {
            return;
        };
        let group_exists = pod_group_of(pod).is_some_and(|(namespace, name)| {
            self.store
                .get(&ObjectRef::new(&name).within(&namespace))
                .is_some()
        });
        if pod.metadata.deletion_timestamp.is_some() || group_exists {
            self.seen.remove(&uid);
        } else if self.seen.len() < MAX_REMEMBERED || self.seen.contains_key(&uid) {
            self.seen.insert(uid, pod.clone());
        }
    }

    /// Creates the missing groups of every remembered pod (this replica just became
    /// leader), forgetting the pods whose group exists.
    async fn catch_up(&mut self) {
        let pods: Vec<Pod> = self.seen.values().cloned().collect();
        for pod in pods {
            self.handle(&pod).await;
        }
        let store = self.store.clone();
        self.seen.retain(|_, pod| {
            pod_group_of(pod).is_none_or(|(namespace, name)| {
                store
                    .get(&ObjectRef::new(&name).within(&namespace))
                    .is_none()
            })
        });
    }

    async fn handle(&mut self, pod: &Pod) {
        let Some((namespace, name)) = pod_group_of(pod) else {
            return;
        };
        let key = format!("{namespace}/{name}");
        if self
            .store
            .get(&ObjectRef::new(&name).within(&namespace))
            .is_some()
        {
            return;
        }
        self.created.retain(|_, at| at.elapsed() < CREATE_MEMORY);
        if self.created.contains_key(&key) {
            return;
        }
        let group = match implicit_group(pod, &namespace, &name) {
            Ok(Some(group)) => group,
            Ok(None) => return,
            Err(message) => {
                self.report_invalid(pod, &message).await;
                return;
            }
        };
        let min_member = group.spec.min_member;
        let api: Api<PodGroup> = Api::namespaced(self.client.clone(), &namespace);
        match api.create(&PostParams::default(), &group).await {
            Ok(_) => {
                tracing::info!(group = %key, min_member, pod = %pod.name_any(), "implicit PodGroup created");
                self.created.insert(key, Instant::now());
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                self.created.insert(key, Instant::now());
            }
            Err(error) => {
                tracing::warn!(group = %key, %error, "cannot create the implicit PodGroup");
            }
        }
    }

    async fn report_invalid(&mut self, pod: &Pod, message: &str) {
        let id = pod.metadata.uid.clone().unwrap_or_else(|| pod.name_any());
        if self.reported.len() >= MAX_REMEMBERED {
            self.reported.clear();
        }
        if !self.reported.insert(id) {
            return;
        }
        tracing::warn!(
            pod = %pod.name_any(),
            namespace = ?pod.metadata.namespace,
            "{message}"
        );
        publish(
            &self.recorder,
            &pod.object_ref(&()),
            EventType::Warning,
            reason::INVALID_MIN_MEMBER,
            message.to_string(),
        )
        .await;
    }
}

#[cfg(test)]
mod tests;
