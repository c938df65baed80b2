//! scheduler-plugins' PodGroups (`scheduling.x-k8s.io/v1alpha1`), where the cluster has
//! their CRD: a watch that feeds them to Coscheduling ([`spawn`]) and the status
//! scheduler-plugins' PodGroup controller would keep ([`run`]), so a cluster that ran
//! scheduler-plugins switches to berth by changing only `schedulerName`.
//!
//! Whether the API server serves them is asked at start ([`served`]); without the CRD a
//! pod labelled `scheduling.x-k8s.io/pod-group` can only name a berth PodGroup, and berth
//! asks again every [`REDISCOVERY_INTERVAL`] until the CRD is installed, then starts the
//! watch and the status controller ([`serve_once_installed`]), as scheduler-plugins'
//! informer starts listing once its CRD exists.
//!
//! # Status
//!
//! As scheduler-plugins' controller (`pkg/controllers/podgroup_controller.go`): the
//! members are the pods labelled `scheduling.x-k8s.io/pod-group: <name>` in the group's
//! namespace, and with `min = spec.minMember` each reconcile takes one step from the
//! current phase:
//!
//! | phase                  | step                                                         |
//! |------------------------|--------------------------------------------------------------|
//! | `Finished`, `Failed`   | none: final                                                  |
//! | unset                  | `Pending`                                                    |
//! | `Pending`              | `Scheduling` once at least `min` members exist; `occupiedBy` becomes the first member's owners (`namespace/owner`, sorted, comma-separated) |
//! | any other              | `running`, `succeeded`, `failed` are counted from the members' phases; then `Pending` with fewer than `min` members, else `Running` when running + succeeded ≥ `min`, else `Scheduling`; `Failed` when some failed and failed + running + succeeded ≥ `min`; `Finished` when succeeded ≥ `min` |
//!
//! scheduler-plugins writes after each step and its write triggers the next; berth takes
//! the steps until nothing changes and writes once, which ends in the same status. A
//! `Pending` or `Scheduling` group with no running member whose `scheduleStartTime` is
//! more than 48 hours after its creation is left alone, with one `Timeout` Warning event
//! (`schedule time longer than 48 hours`).
//!
//! Differences: scheduler-plugins lists members by label in every namespace, berth in the
//! group's own; a group with `minMember` ≤ 0 and no members stays without `occupiedBy`
//! (scheduler-plugins would index an empty list). Like scheduler-plugins, nothing sets
//! `scheduleStartTime`. Only the leader writes, and only when the status changed.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use tokio::sync::mpsc::UnboundedSender;
use tracing::info;

use super::podgroups::ReconcileError;
use super::types::{LoopMessage, OperatorState};
use crate::api::POD_GROUP_LABEL_COMPAT;
use crate::api::scheduler_plugins::{PodGroup, PodGroupStatus};
use crate::cluster::PodGroups;
use crate::cluster::lock::mutex as lock;

/// The group version the PodGroups are read from.
pub const GROUP_VERSION: &str = "scheduling.x-k8s.io/v1alpha1";

/// The phases scheduler-plugins' controller sets.
pub mod phase {
    pub const PENDING: &str = "Pending";
    pub const SCHEDULING: &str = "Scheduling";
    pub const RUNNING: &str = "Running";
    pub const FINISHED: &str = "Finished";
    pub const FAILED: &str = "Failed";
}

/// The Warning event of a group scheduling for more than 48 hours.
pub const TIMEOUT_REASON: &str = "Timeout";
const TIMEOUT_NOTE: &str = "schedule time longer than 48 hours";
const TIMEOUT_SECONDS: i64 = 48 * 3600;

/// How often an unchanged group is reconciled anyway.
const RESYNC: Duration = Duration::from_secs(300);
/// Retry of a failed reconcile.
const ERROR_RETRY: Duration = Duration::from_secs(5);
/// Bound of the memory of groups whose Timeout event was published.
const MAX_REMEMBERED: usize = 10_000;

/// Whether the API server serves scheduler-plugins' PodGroups (false on a 404).
pub async fn served(client: &Client) -> Result<bool, String> {
    let served = super::discovery::served_resources(client, GROUP_VERSION)
        .await?
        .is_some_and(|resources| resources.iter().any(|r| r == "podgroups"));
    if served {
        info!("serving scheduler-plugins' {GROUP_VERSION} PodGroups");
    }
    Ok(served)
}

/// How often berth asks whether scheduler-plugins' CRD has been installed, while it is
/// not: one discovery request.
pub const REDISCOVERY_INTERVAL: Duration = Duration::from_secs(10);

/// Waits until the API server serves scheduler-plugins' PodGroups, asking every
/// `interval` (a failed request is retried the same way), then runs the watch and the
/// status controller ([`run`]) until `shutdown`.
pub async fn serve_once_installed(
    client: Client,
    state: OperatorState,
    tx: UnboundedSender<LoopMessage>,
    reporter: Reporter,
    shutdown: impl Future<Output = ()> + Send + 'static,
    interval: Duration,
) {
    loop {
        tokio::time::sleep(interval).await;
        match served(&client).await {
            Ok(true) => break,
            Ok(false) => {}
            Err(error) => tracing::debug!(%error, "asking again for scheduler-plugins' PodGroups"),
        }
    }
    let watch = super::watches::group_watch::<PodGroup>(
        client.clone(),
        state.pod_groups.clone(),
        tx,
        PodGroups::apply_scheduler_plugins,
        PodGroups::delete_scheduler_plugins,
    );
    futures::join!(watch, run(client, state, reporter, shutdown));
}

/// Starts the watch that keeps `pod_groups` current with scheduler-plugins' PodGroups.
pub fn spawn(
    client: Client,
    pod_groups: Arc<PodGroups>,
    tx: UnboundedSender<LoopMessage>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(super::watches::group_watch::<PodGroup>(
        client,
        pod_groups,
        tx,
        PodGroups::apply_scheduler_plugins,
        PodGroups::delete_scheduler_plugins,
    ))
}

/// What a reconcile does with a group.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Nothing to write.
    Unchanged,
    /// Write this status.
    Write(PodGroupStatus),
    /// Scheduling for more than 48 hours: left alone, with a Timeout event.
    TimedOut,
}

/// The status of `group` with `members` (the pods carrying its label in its namespace);
/// see the module docs.
pub fn next_status(group: &PodGroup, members: &[Pod]) -> Step {
    let current = group.status.clone().unwrap_or_default();
    let mut members: Vec<&Pod> = members.iter().collect();
    members.sort_by_key(|p| p.name_any());
    let mut status = current.clone();
    // Each step either changes the phase towards the end or leaves the status as is; four
    // steps reach the end from anywhere (unset → Pending → Scheduling → counted).
    for _ in 0..4 {
        if is_final(&status) {
            break;
        }
        if timed_out(group, &status) {
            return if status == current {
                Step::TimedOut
            } else {
                Step::Write(status)
            };
        }
        let next = step(&status, group.spec.min_member, &members);
        if next == status {
            break;
        }
        status = next;
    }
    if status == current {
        Step::Unchanged
    } else {
        Step::Write(status)
    }
}

fn is_final(status: &PodGroupStatus) -> bool {
    status.phase == phase::FINISHED || status.phase == phase::FAILED
}

/// Pending or Scheduling with nothing running, and `scheduleStartTime` more than 48 hours
/// after creation.
fn timed_out(group: &PodGroup, status: &PodGroupStatus) -> bool {
    let (Some(start), Some(created)) = (
        status.schedule_start_time.as_ref(),
        group.metadata.creation_timestamp.as_ref(),
    ) else {
        return false;
    };
    (status.phase == phase::SCHEDULING || status.phase == phase::PENDING)
        && status.running == 0
        && start.0.as_second() - created.0.as_second() > TIMEOUT_SECONDS
}

fn step(status: &PodGroupStatus, min_member: i32, members: &[&Pod]) -> PodGroupStatus {
    let mut next = status.clone();
    let existing = i64::try_from(members.len()).unwrap_or(i64::MAX);
    let min = i64::from(min_member);
    match status.phase.as_str() {
        "" => next.phase = phase::PENDING.into(),
        phase::PENDING => {
            if existing >= min {
                next.phase = phase::SCHEDULING.into();
                if let Some(first) = members.first()
                    && let Some(occupied_by) = occupied_by(first)
                {
                    next.occupied_by = occupied_by;
                }
            }
        }
        _ => {
            let count = |wanted: &str| {
                let n = members
                    .iter()
                    .filter(|p| pod_phase(p) == Some(wanted))
                    .count();
                i32::try_from(n).unwrap_or(i32::MAX)
            };
            next.running = count("Running");
            next.succeeded = count("Succeeded");
            next.failed = count("Failed");
            let (running, succeeded, failed) = (
                i64::from(next.running),
                i64::from(next.succeeded),
                i64::from(next.failed),
            );
            if existing < min {
                next.phase = phase::PENDING.into();
                return next;
            }
            next.phase = if running + succeeded >= min {
                phase::RUNNING.into()
            } else {
                phase::SCHEDULING.into()
            };
            if failed != 0 && failed + running + succeeded >= min {
                next.phase = phase::FAILED.into();
            }
            if succeeded >= min {
                next.phase = phase::FINISHED.into();
            }
        }
    }
    next
}

fn pod_phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.phase.as_deref())
}

/// `namespace/owner` of each of the pod's owners, sorted and comma-separated; `None`
/// without owners.
fn occupied_by(pod: &Pod) -> Option<String> {
    let namespace = pod.namespace().unwrap_or_default();
    let mut owners: Vec<String> = pod
        .owner_references()
        .iter()
        .map(|o| format!("{namespace}/{}", o.name))
        .collect();
    if owners.is_empty() {
        return None;
    }
    owners.sort();
    Some(owners.join(","))
}

/// A merge patch that makes the stored status equal to `status` (the fields berth keeps;
/// `scheduleStartTime` is left as it is).
fn status_patch(status: &PodGroupStatus) -> serde_json::Value {
    let text = |s: &str| {
        if s.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::from(s)
        }
    };
    serde_json::json!({
        "status": {
            "phase": text(&status.phase),
            "occupiedBy": text(&status.occupied_by),
            "running": status.running,
            "succeeded": status.succeeded,
            "failed": status.failed,
        }
    })
}

struct Context {
    client: Client,
    state: OperatorState,
    recorder: Recorder,
    /// Groups (by uid) whose Timeout event was published.
    timed_out: Mutex<HashSet<String>>,
}

/// Runs the status controller of scheduler-plugins' PodGroups until `shutdown` resolves.
pub async fn run(
    client: Client,
    state: OperatorState,
    reporter: Reporter,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let groups: Api<PodGroup> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client.clone());
    let ctx = Arc::new(Context {
        client: client.clone(),
        state: state.clone(),
        recorder: Recorder::new(client, reporter),
        timed_out: Mutex::new(HashSet::new()),
    });
    let members = watcher::Config::default().labels(POD_GROUP_LABEL_COMPAT);
    Controller::new(groups, watcher::Config::default())
        .watches(pods, members, |pod: Pod| {
            let name = pod.labels().get(POD_GROUP_LABEL_COMPAT)?.clone();
            let namespace = pod.namespace()?;
            (!name.is_empty()).then(|| ObjectRef::<PodGroup>::new(&name).within(&namespace))
        })
        .reconcile_all_on(super::watches::changes(state.leader.clone()))
        .graceful_shutdown_on(shutdown.boxed().shared())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok(_) => {}
                Err(kube::runtime::controller::Error::ObjectNotFound(object)) => {
                    tracing::debug!(%object, "scheduler-plugins PodGroup not found for a member pod");
                }
                Err(error) => tracing::warn!(%error, "scheduler-plugins PodGroup controller"),
            }
        })
        .await;
}

fn error_policy(group: Arc<PodGroup>, error: &ReconcileError, _: Arc<Context>) -> Action {
    tracing::warn!(group = %group.name_any(), %error, "scheduler-plugins PodGroup reconcile failed; retrying");
    Action::requeue(ERROR_RETRY)
}

async fn reconcile(group: Arc<PodGroup>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    if !ctx.state.is_leader() {
        return Ok(Action::requeue(RESYNC));
    }
    let (Some(name), Some(namespace)) = (group.metadata.name.clone(), group.namespace()) else {
        return Ok(Action::await_change());
    };
    let key = format!("{namespace}/{name}");
    let members: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let members = members
        .list(&ListParams::default().labels(&format!("{POD_GROUP_LABEL_COMPAT}={name}")))
        .await
        .map_err(|source| ReconcileError::ListMembers {
            group: key.clone(),
            source,
        })?
        .items;
    match next_status(&group, &members) {
        Step::Unchanged => {}
        Step::TimedOut => {
            let uid = group.uid().unwrap_or_default();
            let first = {
                let mut published = lock(&ctx.timed_out);
                if published.len() >= MAX_REMEMBERED {
                    published.clear();
                }
                published.insert(uid)
            };
            if first {
                let event = Event {
                    type_: EventType::Warning,
                    reason: TIMEOUT_REASON.into(),
                    note: Some(TIMEOUT_NOTE.into()),
                    action: TIMEOUT_REASON.into(),
                    secondary: None,
                };
                if let Err(error) = ctx.recorder.publish(&event, &group.object_ref(&())).await {
                    tracing::warn!(%error, group = %key, "cannot publish event");
                }
            }
        }
        Step::Write(status) => {
            if !ctx.state.is_leader() {
                return Ok(Action::requeue(RESYNC));
            }
            let api: Api<PodGroup> = Api::namespaced(ctx.client.clone(), &namespace);
            api.patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(status_patch(&status)),
            )
            .await
            .map_err(|source| ReconcileError::PatchStatus {
                group: key.clone(),
                source,
            })?;
            tracing::debug!(group = %key, phase = %status.phase, "scheduler-plugins PodGroup status patched");
        }
    }
    Ok(Action::requeue(RESYNC))
}

#[cfg(test)]
mod tests;
