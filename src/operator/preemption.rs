//! The API calls that carry out a preemption once DefaultPreemption's PostFilter has
//! chosen a node and its victims, as upstream's preemption Evaluator makes them.
//!
//! For each victim bound to the node ([`PreemptionExecutor::evict_victim`], upstream's
//! `PreemptPod`):
//!
//! 1. the victim's `DisruptionTarget` condition is set (status True, reason
//!    `PreemptionByScheduler`, message `"<scheduler>: preempting to accommodate a higher
//!    priority pod"`) by a strategic-merge PATCH of `pods/<name>/status`, sent only when
//!    the victim does not already carry that condition. Retriable failures (500, 503,
//!    connection refused) are retried with client-go's `retry.DefaultBackoff`
//!    ([`DEFAULT_BACKOFF`]);
//! 2. the victim is deleted with default options, so its own grace period applies;
//! 3. a Normal `Preempted` event (action `Preempting`, note `"Preempted by pod <preemptor
//!    uid> on node <node>"`, related object the preemptor) is published on it, reported
//!    by the preemptor's scheduler as `reporting` reports its events.
//!
//! When a Workload API PodGroup preempts ([`Preemption::group`]), upstream names it
//! instead: `preempting to accommodate a higher priority podgroup`, `Preempted by
//! podgroup <PodGroup uid> on node cluster`, related object the PodGroup.
//!
//! A victim that is gone (404 on either call) counts as preempted, with no event. A victim
//! held at Permit is rejected in memory by the scheduler; here it only gets the event
//! ([`PreemptionExecutor::record_preempted`]).
//!
//! [`PreemptionExecutor::run_preemption`] is upstream's asynchronous preemption (the
//! `SchedulerAsyncPreemption` goroutine): it clears the nominations of lower-priority pods
//! nominated to the node, preempts every victim but the last in parallel and the last one
//! only when all the others succeeded, so a failed preemption leaves as few pods evicted
//! as it can. The caller leaves out victims already terminating (upstream filters them
//! before it starts) and, when preemption failed, retries the preemptor at once.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodCondition};
use k8s_openapi::api::scheduling::v1beta1::PodGroup;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use rand::Rng;
use serde_json::{Value, json};
use tracing::Instrument;

use crate::framework::Preemption;
pub use crate::framework::Victim;

/// The condition upstream sets on a victim before deleting it.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// The reason of that condition.
pub const REASON_PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";
/// The scheduler name of a pod that names none (the API server's default).
const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// How a retriable status patch is retried: client-go's `wait.Backoff`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Attempts in all (so `steps - 1` waits).
    pub steps: u32,
    /// The first wait.
    pub duration: Duration,
    /// Each wait is the previous one times `factor`...
    pub factor: f64,
    /// ...plus up to `jitter` times itself, at random.
    pub jitter: f64,
}

/// client-go's `retry.DefaultBackoff`, which upstream's `PatchPodStatus` uses: four
/// attempts, waiting 10 ms, 50 ms and 250 ms (each up to 10% longer).
pub const DEFAULT_BACKOFF: Backoff = Backoff {
    steps: 4,
    duration: Duration::from_millis(10),
    factor: 5.0,
    jitter: 0.1,
};

/// Makes the API calls of preemptions; cheap to clone (one per spawned preemption).
#[derive(Clone)]
pub struct PreemptionExecutor {
    client: kube::Client,
    /// Identifies this replica in `reportingInstance`, as in `reporting`.
    instance: String,
    /// One recorder per scheduler name, shared by the clones: repeats of an event become
    /// one series.
    recorders: Arc<Mutex<HashMap<String, Recorder>>>,
    backoff: Backoff,
}

impl PreemptionExecutor {
    /// `instance` identifies this replica (pod name or hostname), as for `reporting::run`.
    pub fn new(client: kube::Client, instance: String) -> PreemptionExecutor {
        PreemptionExecutor {
            client,
            instance,
            recorders: Default::default(),
            backoff: DEFAULT_BACKOFF,
        }
    }

    /// Replaces [`DEFAULT_BACKOFF`].
    pub fn with_backoff(mut self, backoff: Backoff) -> PreemptionExecutor {
        self.backoff = backoff;
        self
    }

    /// Carries out what the scheduler decided ([`Preemption`]); see [`Self::run_preemption`].
    /// When a call failed, the preemptor's own nomination is cleared before this returns
    /// (the scheduler then drops it and retries the pod at once, which nominates it again
    /// if preempting still helps).
    pub async fn run(&self, preemption: &Preemption) -> bool {
        let succeeded = self
            .run_preemption_as(
                Preemptor::of(preemption),
                &preemption.node,
                &preemption.victims,
                &preemption.cleared_nominations,
            )
            .await;
        if !succeeded && let Err(error) = self.patch_nomination_away(&preemption.preemptor).await {
            tracing::warn!(%error, "clearing the failed preemptor's nomination");
        }
        succeeded
    }

    /// Upstream's asynchronous preemption for `preemptor` nominated to `node`: clears the
    /// nominations of `nominees` (the lower-priority pods nominated to `node`), then
    /// preempts `victims`: all but the last in parallel, and the last only if all of
    /// those succeeded. Returns whether every call succeeded; failures are logged.
    pub async fn run_preemption(
        &self,
        preemptor: &Pod,
        node: &str,
        victims: &[Victim],
        nominees: &[Arc<Pod>],
    ) -> bool {
        self.run_preemption_as(Preemptor::Pod(preemptor), node, victims, nominees)
            .await
    }

    async fn run_preemption_as(
        &self,
        preemptor: Preemptor<'_>,
        node: &str,
        victims: &[Victim],
        nominees: &[Arc<Pod>],
    ) -> bool {
        let span = tracing::debug_span!(
            "preemption",
            preemptor = %preemptor.key(),
            node,
            victims = victims.len()
        );
        async {
            let mut succeeded = true;
            for nominee in nominees {
                if let Err(error) = self.clear_nominated_node(nominee).await {
                    tracing::warn!(%error, "clearing a lower-priority nomination failed");
                    succeeded = false;
                }
            }
            let preempted = preempt_in_order(victims, |victim| async move {
                if victim.waiting {
                    self.record_preempted_as(&victim.pod, preemptor, node).await;
                    Ok(())
                } else {
                    self.evict_victim_as(&victim.pod, preemptor, node).await
                }
            })
            .await;
            if preempted && succeeded {
                tracing::debug!("preemption done");
            }
            preempted && succeeded
        }
        .instrument(span)
        .await
    }

    /// Preempts a victim bound to `node`: sets its `DisruptionTarget` condition, deletes
    /// it and records `Preempted` (see the module docs). A victim that is gone is done.
    pub async fn evict_victim(
        &self,
        victim: &Pod,
        preemptor: &Pod,
        node: &str,
    ) -> Result<(), String> {
        self.evict_victim_as(victim, Preemptor::Pod(preemptor), node)
            .await
    }

    async fn evict_victim_as(
        &self,
        victim: &Pod,
        preemptor: Preemptor<'_>,
        node: &str,
    ) -> Result<(), String> {
        let key = pod_key(victim);
        if let Some(patch) =
            disruption_target_patch(victim, preemptor.scheduler_name(), preemptor.kind())
        {
            match self.patch_status(victim, &patch).await {
                Ok(()) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    tracing::debug!(victim = %key, "victim is gone");
                    return Ok(());
                }
                Err(error) => {
                    return Err(format!("setting {DISRUPTION_TARGET} on pod {key}: {error}"));
                }
            }
        }
        match pods_of(&self.client, victim)
            .delete(name_of(victim), &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {
                tracing::debug!(victim = %key, "victim is gone");
                return Ok(());
            }
            Err(error) => return Err(format!("deleting pod {key}: {error}")),
        }
        self.record_preempted_as(victim, preemptor, node).await;
        Ok(())
    }

    /// Publishes `Preempted` on `victim`, related to `preemptor`. Failures are logged.
    pub async fn record_preempted(&self, victim: &Pod, preemptor: &Pod, node: &str) {
        self.record_preempted_as(victim, Preemptor::Pod(preemptor), node)
            .await;
    }

    async fn record_preempted_as(&self, victim: &Pod, preemptor: Preemptor<'_>, node: &str) {
        let event = Event {
            type_: EventType::Normal,
            reason: "Preempted".into(),
            note: Some(preempted_note(preemptor.kind(), preemptor.uid(), node)),
            action: "Preempting".into(),
            secondary: Some(preemptor.object_ref()),
        };
        let recorder = self.recorder(preemptor.scheduler_name());
        if let Err(error) = recorder.publish(&event, &victim.object_ref(&())).await {
            tracing::warn!(victim = %pod_key(victim), %error, "publishing Preempted failed");
        }
    }

    /// Clears `status.nominatedNodeName` of `pod`; no request when it has none. A pod
    /// that is gone needs no clearing.
    pub async fn clear_nominated_node(&self, pod: &Pod) -> Result<(), String> {
        let nominated = pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if !nominated {
            return Ok(());
        }
        self.patch_nomination_away(pod).await
    }

    /// Clears `pod`'s `status.nominatedNodeName` whatever the pod object says (the
    /// nomination may be newer than the object).
    async fn patch_nomination_away(&self, pod: &Pod) -> Result<(), String> {
        let patch = json!({"status": {"nominatedNodeName": null}});
        match self.patch_status(pod, &patch).await {
            Ok(()) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(format!(
                "clearing the nominated node of pod {}: {error}",
                pod_key(pod)
            )),
        }
    }

    /// A strategic-merge PATCH of `pods/<name>/status`, retried as upstream's
    /// `PatchPodStatus` while the error is retriable.
    async fn patch_status(&self, pod: &Pod, patch: &Value) -> kube::Result<()> {
        let pods = pods_of(&self.client, pod);
        let name = name_of(pod);
        retry_retriable(self.backoff, || async {
            pods.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
                .map(drop)
        })
        .await
    }

    fn recorder(&self, scheduler_name: &str) -> Recorder {
        let mut recorders = self.recorders.lock().unwrap_or_else(|p| p.into_inner());
        recorders
            .entry(scheduler_name.to_string())
            .or_insert_with(|| {
                let reporter = super::reporting::scheduler_reporter(scheduler_name, &self.instance);
                Recorder::new(self.client.clone(), reporter)
            })
            .clone()
    }
}

/// Runs `preempt` on every victim but the last in parallel, then, if all succeeded, on
/// the last one. Returns whether all it ran succeeded.
async fn preempt_in_order<'a, F, Fut>(victims: &'a [Victim], preempt: F) -> bool
where
    F: Fn(&'a Victim) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let Some((last, others)) = victims.split_last() else {
        return true;
    };
    let failures: Vec<String> = join_all(others.iter().map(&preempt))
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if !failures.is_empty() {
        for error in &failures {
            tracing::warn!(%error, "preempting a victim failed");
        }
        tracing::warn!(
            last = %pod_key(&last.pod),
            "not preempting the last victim: preempting the others failed"
        );
        return false;
    }
    match preempt(last).await {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, "preempting a victim failed");
            false
        }
    }
}

/// The status patch setting the `DisruptionTarget` condition, or None when the victim
/// carries it already. As upstream's `UpdatePodCondition`, the transition time moves only
/// when the condition's status changes.
fn disruption_target_patch(victim: &Pod, scheduler_name: &str, kind: &str) -> Option<Value> {
    let message = format!("{scheduler_name}: preempting to accommodate a higher priority {kind}");
    let existing: Option<&PodCondition> = victim
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|conditions| conditions.iter().find(|c| c.type_ == DISRUPTION_TARGET));
    if existing.is_some_and(|c| {
        c.status == "True"
            && c.reason.as_deref() == Some(REASON_PREEMPTION_BY_SCHEDULER)
            && c.message.as_deref() == Some(message.as_str())
    }) {
        return None;
    }
    let last_transition = existing
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| Time(Timestamp::now()));
    Some(json!({"status": {"conditions": [{
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": REASON_PREEMPTION_BY_SCHEDULER,
        "message": message,
        "lastTransitionTime": last_transition,
    }]}}))
}

/// Upstream's note, naming the preemptor by kind and uid.
fn preempted_note(kind: &str, uid: &str, node: &str) -> String {
    format!("Preempted by {kind} {uid} on node {node}")
}

/// Who preempts, as upstream's executor names it in a victim's condition and event: a
/// pod, or a Workload API PodGroup whose members need room (its first member gives the
/// scheduler's name).
#[derive(Clone, Copy)]
enum Preemptor<'a> {
    Pod(&'a Pod),
    Group {
        pod_group: &'a PodGroup,
        member: &'a Pod,
    },
}

impl<'a> Preemptor<'a> {
    fn of(preemption: &'a Preemption) -> Self {
        match &preemption.group {
            Some(pod_group) => Preemptor::Group {
                pod_group,
                member: &preemption.preemptor,
            },
            None => Preemptor::Pod(&preemption.preemptor),
        }
    }

    /// Upstream's `ExecutorPreemptor.Type()`.
    fn kind(&self) -> &'static str {
        match self {
            Preemptor::Pod(_) => "pod",
            Preemptor::Group { .. } => "podgroup",
        }
    }

    fn uid(&self) -> &'a str {
        let uid = match self {
            Preemptor::Pod(pod) => &pod.metadata.uid,
            Preemptor::Group { pod_group, .. } => &pod_group.metadata.uid,
        };
        uid.as_deref().unwrap_or_default()
    }

    fn scheduler_name(&self) -> &'a str {
        match self {
            Preemptor::Pod(pod) | Preemptor::Group { member: pod, .. } => scheduler_name(pod),
        }
    }

    fn object_ref(&self) -> ObjectReference {
        match self {
            Preemptor::Pod(pod) => pod.object_ref(&()),
            Preemptor::Group { pod_group, .. } => {
                // A Coscheduling group's PodGroup is berth's or scheduler-plugins'.
                let mut reference = pod_group.object_ref(&());
                if let Some(api_version) = pod_group
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(crate::cluster::API_VERSION_ANNOTATION))
                {
                    reference.api_version = Some(api_version.clone());
                }
                reference
            }
        }
    }

    /// `namespace/name`, for logs.
    fn key(&self) -> String {
        match self {
            Preemptor::Pod(pod) => pod_key(pod),
            Preemptor::Group { pod_group, .. } => format!(
                "{}/{}",
                pod_group.metadata.namespace.as_deref().unwrap_or("default"),
                pod_group.metadata.name.as_deref().unwrap_or_default()
            ),
        }
    }
}

/// Runs `call` until it succeeds, fails with an error that is not retriable, or has
/// been tried `backoff.steps` times (client-go's `retry.OnError`).
async fn retry_retriable<F, Fut>(backoff: Backoff, mut call: F) -> kube::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = kube::Result<()>>,
{
    let mut wait = backoff.duration;
    let mut attempt = 1;
    loop {
        match call().await {
            Err(error) if is_retriable(&error) && attempt < backoff.steps => {
                let jittered = wait.mul_f64(1.0 + backoff.jitter * rand::rng().random::<f64>());
                tracing::debug!(%error, attempt, wait_ms = jittered.as_millis() as u64, "retrying");
                tokio::time::sleep(jittered).await;
                wait = wait.mul_f64(backoff.factor);
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// Upstream's `IsRetryableAPIError`: an internal error (500), the server unavailable
/// (503), or the connection refused.
fn is_retriable(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 500 || status.code == 503,
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            let mut source: Option<&dyn std::error::Error> = Some(error);
            while let Some(e) = source {
                if e.to_string()
                    .to_ascii_lowercase()
                    .contains("connection refused")
                {
                    return true;
                }
                source = e.source();
            }
            false
        }
        _ => false,
    }
}

fn scheduler_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_SCHEDULER)
}

fn pods_of(client: &kube::Client, pod: &Pod) -> Api<Pod> {
    Api::namespaced(
        client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or("default"),
    )
}

fn name_of(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

/// `namespace/name`.
fn pod_key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        name_of(pod)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, status: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "status": status,
        }))
        .expect("a Pod")
    }

    const MESSAGE: &str = "default-scheduler: preempting to accommodate a higher priority pod";

    #[test]
    fn disruption_target_is_patched_only_when_it_changes() {
        let earlier = "2026-01-02T03:04:05Z";
        let condition = |status: &str, reason: &str, message: &str| {
            json!({"conditions": [{
                "type": DISRUPTION_TARGET, "status": status, "reason": reason,
                "message": message, "lastTransitionTime": earlier,
            }]})
        };
        // (case, victim status, patched, keeps the earlier transition time)
        let cases = [
            ("no conditions", json!({}), true, false),
            (
                "other conditions only",
                json!({"conditions": [{"type": "Ready", "status": "True"}]}),
                true,
                false,
            ),
            (
                "the identical condition",
                condition("True", REASON_PREEMPTION_BY_SCHEDULER, MESSAGE),
                false,
                false,
            ),
            (
                "another scheduler's message",
                condition(
                    "True",
                    REASON_PREEMPTION_BY_SCHEDULER,
                    "other: preempting to accommodate a higher priority pod",
                ),
                true,
                true,
            ),
            (
                "another reason",
                condition("True", "EvictionByEvictionAPI", MESSAGE),
                true,
                true,
            ),
            (
                "status False",
                condition("False", REASON_PREEMPTION_BY_SCHEDULER, MESSAGE),
                true,
                false,
            ),
        ];
        for (name, status, patched, keeps_time) in cases {
            let got = disruption_target_patch(&pod("victim", status), "default-scheduler", "pod");
            assert_eq!(got.is_some(), patched, "case {name}");
            let Some(patch) = got else { continue };
            let written = &patch["status"]["conditions"][0];
            assert_eq!(written["type"], DISRUPTION_TARGET, "case {name}");
            assert_eq!(written["status"], "True", "case {name}");
            assert_eq!(
                written["reason"], REASON_PREEMPTION_BY_SCHEDULER,
                "case {name}"
            );
            assert_eq!(written["message"], MESSAGE, "case {name}");
            assert_eq!(
                written["lastTransitionTime"] == earlier,
                keeps_time,
                "case {name}: lastTransitionTime {}",
                written["lastTransitionTime"]
            );
        }
    }

    #[test]
    fn preempted_note_names_the_preemptor_by_uid() {
        assert_eq!(
            preempted_note("pod", "uid-preemptor", "node1"),
            "Preempted by pod uid-preemptor on node node1"
        );
    }

    #[test]
    fn a_pod_group_preempts_as_upstream_names_it() {
        let member = pod("worker-0", json!({}));
        let pod_group: PodGroup = serde_json::from_value(json!({
            "metadata": {"name": "gang", "namespace": "default", "uid": "uid-gang"},
            "spec": {},
        }))
        .expect("a PodGroup");
        let preemption = Preemption {
            preemptor: Arc::new(member),
            node: crate::framework::GROUP_PREEMPTION_DOMAIN.into(),
            victims: vec![],
            cleared_nominations: vec![],
            group: Some(Arc::new(pod_group)),
        };
        let preemptor = Preemptor::of(&preemption);
        assert_eq!(
            preempted_note(preemptor.kind(), preemptor.uid(), &preemption.node),
            "Preempted by podgroup uid-gang on node cluster"
        );
        let patch = disruption_target_patch(
            &pod("victim", json!({})),
            preemptor.scheduler_name(),
            preemptor.kind(),
        )
        .expect("a patch");
        assert_eq!(
            patch["status"]["conditions"][0]["message"],
            "default-scheduler: preempting to accommodate a higher priority podgroup"
        );
        let related = preemptor.object_ref();
        assert_eq!(related.kind.as_deref(), Some("PodGroup"));
        assert_eq!(related.name.as_deref(), Some("gang"));
    }

    /// Upstream's TestAsyncPreemptionFailure: preempting a pod whose name starts with
    /// `fail-victim` fails; the last victim is attempted only if every other victim was
    /// preempted.
    #[tokio::test]
    async fn the_last_victim_is_preempted_only_after_all_the_others() {
        // (case, victims in order, succeeded, last victim attempted)
        let cases: [(&str, &[&str], bool, bool); 7] = [
            (
                "Failure with a single victim",
                &["fail-victim"],
                false,
                true,
            ),
            ("Success with a single victim", &["victim1"], true, true),
            (
                "Failure in first of three victims",
                &["fail-victim", "victim2", "victim3"],
                false,
                false,
            ),
            (
                "Failure in second of three victims",
                &["victim1", "fail-victim", "victim3"],
                false,
                false,
            ),
            (
                "Failure in first two of three victims",
                &["fail-victim1", "fail-victim2", "victim3"],
                false,
                false,
            ),
            (
                "Failure in third of three victims",
                &["victim1", "victim2", "fail-victim"],
                false,
                true,
            ),
            (
                "Success with three victims",
                &["victim1", "victim2", "victim3"],
                true,
                true,
            ),
        ];
        for (name, names, want_succeeded, want_last_attempted) in cases {
            let victims: Vec<Victim> = names
                .iter()
                .map(|n| Victim {
                    pod: Arc::new(pod(n, json!({}))),
                    waiting: false,
                })
                .collect();
            let attempted = Mutex::new(Vec::new());
            let succeeded = preempt_in_order(&victims, |victim| {
                let name = name_of(&victim.pod).to_string();
                attempted.lock().expect("not poisoned").push(name.clone());
                async move {
                    if name.starts_with("fail-victim") {
                        Err(format!("deleting pod default/{name}: delete pod failed"))
                    } else {
                        Ok(())
                    }
                }
            })
            .await;
            assert_eq!(succeeded, want_succeeded, "case {name}");
            let attempted = attempted.into_inner().expect("not poisoned");
            let last = names.last().expect("victims");
            assert_eq!(
                attempted.iter().any(|a| a == last),
                want_last_attempted,
                "case {name}: attempted {attempted:?}"
            );
            assert_eq!(
                attempted.len(),
                names.len() - usize::from(!want_last_attempted),
                "case {name}: every other victim is attempted: {attempted:?}"
            );
        }
    }

    #[tokio::test]
    async fn no_victims_is_a_success() {
        assert!(preempt_in_order(&[], |_| async { Err("never called".to_string()) }).await);
    }

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("injected", "")
                .with_code(code)
                .boxed(),
        )
    }

    #[tokio::test]
    async fn status_patches_are_retried_while_retriable_within_the_backoff() {
        let backoff = Backoff {
            duration: Duration::from_millis(1),
            ..DEFAULT_BACKOFF
        };
        // (case, the answers in order, the calls made, succeeded)
        let cases: [(&str, &[u16], usize, bool); 6] = [
            ("success at once", &[200], 1, true),
            ("a 500 then success", &[500, 200], 2, true),
            ("a 503 twice then success", &[503, 503, 200], 3, true),
            (
                "500s beyond the four attempts",
                &[500, 500, 500, 500, 500],
                4,
                false,
            ),
            ("a 409 is not retried", &[409, 200], 1, false),
            ("a 429 is not retried", &[429, 200], 1, false),
        ];
        for (name, answers, want_calls, want_ok) in cases {
            let calls = Mutex::new(0usize);
            let result = retry_retriable(backoff, || {
                let mut calls = calls.lock().expect("not poisoned");
                let answer = answers.get(*calls).copied().unwrap_or(200);
                *calls += 1;
                async move {
                    if answer == 200 {
                        Ok(())
                    } else {
                        Err(api_error(answer))
                    }
                }
            })
            .await;
            assert_eq!(
                *calls.lock().expect("not poisoned"),
                want_calls,
                "case {name}"
            );
            assert_eq!(result.is_ok(), want_ok, "case {name}");
        }
    }

    /// client-go's retry.DefaultBackoff: four attempts, waiting 10 ms, 50 ms and 250 ms,
    /// each up to 10% longer.
    #[tokio::test(start_paused = true)]
    async fn retries_wait_as_client_go_default_backoff() {
        let started = tokio::time::Instant::now();
        let calls = Mutex::new(Vec::new());
        let result = retry_retriable(DEFAULT_BACKOFF, || {
            calls.lock().expect("not poisoned").push(started.elapsed());
            async { Err(api_error(500)) }
        })
        .await;
        assert!(result.is_err());
        let calls = calls.into_inner().expect("not poisoned");
        assert_eq!(calls.len(), 4, "four attempts: {calls:?}");
        for (i, want_ms) in [10u64, 50, 250].into_iter().enumerate() {
            let waited = calls[i + 1] - calls[i];
            let (low, high) = (
                Duration::from_millis(want_ms),
                Duration::from_millis(want_ms + want_ms / 10 + 1),
            );
            assert!(
                waited >= low && waited <= high,
                "wait {i}: {waited:?}, want {low:?}..{high:?}"
            );
        }
    }
}
