//! Turns the end of each scheduling attempt into what a cluster user sees on the pod:
//! events (events.k8s.io/v1) and the `PodScheduled` condition, as upstream's
//! `handleSchedulingFailure` and binding cycle do.
//!
//! | outcome | pod condition | event |
//! | --- | --- | --- |
//! | Scheduled | (set to True by the API server's binding) | Normal `Scheduled`, action `Binding`, "Successfully assigned ns/pod to node" |
//! | Unschedulable | `PodScheduled=False`, reason `Unschedulable`, the message | Warning `FailedScheduling`, action `Scheduling`, the message |
//! | Error | `PodScheduled=False`, reason `SchedulerError`, the message | the same Warning |
//!
//! When preemption decided the pod's nomination on a failed attempt
//! ([`SchedulingReport::nominating`]), the same status patch sets
//! `status.nominatedNodeName` (or clears it), as upstream's failure handler does; it is
//! left out when the pod already has that nomination.
//!
//! As upstream, events are reported by the profile: `reportingController` is the
//! scheduler name and `reportingInstance` is `<schedulerName>-<instance>`, where
//! `instance` identifies this replica (upstream uses the hostname). Event notes are cut
//! to 1024 bytes with a `" ..."` suffix (upstream's `truncateMessage`); the condition
//! keeps the whole message.
//!
//! # Not flooding the API server
//!
//! A pod that stays unschedulable is reported after every attempt. Three layers keep
//! that quiet:
//!
//! 1. **The condition is patched only when it changes.** As upstream's `updatePod`, no
//!    patch is sent when the pod already has `PodScheduled=False` with the same reason
//!    and message and, when a nomination was decided, that nomination. What the pod has
//!    is what this task wrote within the last [`FAILURE_MEMORY`] (the pod in a report
//!    can predate our own patch), else what the pod in the report shows; the nomination
//!    is compared with the pod in the report only, since preemption also clears
//!    nominations. `lastTransitionTime` moves only when the condition's status flips;
//!    `lastProbeTime` is left unset, as upstream.
//! 2. **An identical `FailedScheduling` is published at most once per
//!    [`FAILURE_MEMORY`] per pod.** A different message is published at once.
//! 3. **Published repeats become one Event.** kube-runtime's [`Recorder`] keeps one
//!    Event per (pod, type, reason, action, reporter) for six minutes and turns repeats
//!    into a patch of `series` (count and lastObservedTime) instead of a new Event.
//!    As upstream's events.k8s.io recorder, the note is not part of that identity: a
//!    series keeps the note of its first Event, while the pod's condition always
//!    carries the latest message. `series.count` counts published occurrences (at most
//!    one a minute per message), not scheduling attempts.
//!
//! The per-pod memory is keyed by uid, dropped when the pod is scheduled or gone (404),
//! expires after [`FAILURE_MEMORY`], and is capped at [`MAX_REMEMBERED_PODS`] entries
//! (oldest dropped first).
//!
//! # Errors
//!
//! API errors are logged and never stop the task; a failed write is not remembered, so
//! the pod's next report tries again. Writes are not retried here: reports arrive in
//! order, and a pod that keeps failing reports again after its backoff. A pod that no
//! longer exists (404) is skipped without an event.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::Instrument;

use super::types::SchedulingReport;
use crate::scheduler::Outcome;

/// How long an identical `FailedScheduling` is suppressed, and how long this task
/// trusts its memory of the condition it wrote.
pub const FAILURE_MEMORY: Duration = Duration::from_secs(60);
/// The most pods remembered at once.
pub const MAX_REMEMBERED_PODS: usize = 10_000;
/// Upstream's `NoteLengthLimit` for event notes, in bytes.
pub const NOTE_LENGTH_LIMIT: usize = 1024;

/// The condition type and reasons upstream's scheduler writes.
const POD_SCHEDULED: &str = "PodScheduled";
const REASON_UNSCHEDULABLE: &str = "Unschedulable";
const REASON_SCHEDULER_ERROR: &str = "SchedulerError";

/// Reports every [`SchedulingReport`] received until the channel closes (the operator
/// closes it on shutdown, once in-flight bindings have drained).
///
/// `instance` identifies this replica (pod name or hostname).
pub async fn run(
    mut reports: mpsc::Receiver<SchedulingReport>,
    client: kube::Client,
    instance: String,
) {
    let mut reporter = PodReporter::new(client, instance);
    while let Some(report) = reports.recv().await {
        reporter.report(&report).await;
    }
    tracing::debug!("scheduling report channel closed; reporting stopped");
}

/// What this task last wrote about one pod's failures.
#[derive(Debug, Clone)]
struct Remembered {
    /// The `PodScheduled=False` condition the pod has: reason, message, lastTransitionTime.
    condition: Option<(&'static str, String, Time)>,
    /// The last `FailedScheduling` note published, and when.
    event: Option<(String, Instant)>,
    touched: Instant,
}

/// Publishes events and patches conditions for scheduling reports; see the module docs
/// for the policy. [`run`] drives one; tests may drive one directly.
pub struct PodReporter {
    client: kube::Client,
    instance: String,
    /// One recorder per scheduler name (its reportingController), as upstream has one
    /// per profile.
    recorders: HashMap<String, Recorder>,
    memory: HashMap<String, Remembered>,
    failure_memory: Duration,
    last_prune: Instant,
}

impl PodReporter {
    pub fn new(client: kube::Client, instance: String) -> PodReporter {
        PodReporter {
            client,
            instance,
            recorders: HashMap::new(),
            memory: HashMap::new(),
            failure_memory: FAILURE_MEMORY,
            last_prune: Instant::now(),
        }
    }

    /// Replaces [`FAILURE_MEMORY`] (tests use a shorter one).
    pub fn with_failure_memory(mut self, failure_memory: Duration) -> PodReporter {
        self.failure_memory = failure_memory;
        self
    }

    /// Reports one attempt. Never fails: API errors are logged.
    pub async fn report(&mut self, report: &SchedulingReport) {
        let pod = &report.pod;
        let key = pod_key(pod);
        let span = tracing::debug_span!("report", pod = %key, scheduler = %report.scheduler_name);
        async {
            self.prune();
            match &report.outcome {
                Outcome::Scheduled { node } => {
                    self.forget(pod);
                    let note = format!("Successfully assigned {key} to {node}");
                    let event = new_event(EventType::Normal, "Scheduled", "Binding", note);
                    self.publish(&report.scheduler_name, pod, &event).await;
                }
                Outcome::Unschedulable { message } => {
                    self.report_failure(report, REASON_UNSCHEDULABLE, message)
                        .await;
                }
                Outcome::Error { message } => {
                    self.report_failure(report, REASON_SCHEDULER_ERROR, message)
                        .await;
                }
            }
        }
        .instrument(span)
        .await;
    }

    async fn report_failure(
        &mut self,
        report: &SchedulingReport,
        reason: &'static str,
        message: &str,
    ) {
        let pod = &report.pod;
        let nominating = report.nominating.as_deref();
        if !self.set_status(pod, reason, message, nominating).await {
            return;
        }
        let now = Instant::now();
        let window = self.failure_memory;
        let recently_published = self
            .memory
            .get(&memory_key(pod))
            .and_then(|r| r.event.as_ref())
            .is_some_and(|(note, at)| note == message && now.duration_since(*at) < window);
        if recently_published {
            tracing::debug!("identical FailedScheduling published recently; not repeated");
            return;
        }
        let event = new_event(
            EventType::Warning,
            "FailedScheduling",
            "Scheduling",
            message.to_string(),
        );
        if self.publish(&report.scheduler_name, pod, &event).await {
            self.remember(pod).event = Some((message.to_string(), now));
        }
    }

    /// Sets `PodScheduled=False` with `reason` and `message` unless the pod has it, and
    /// in the same patch `status.nominatedNodeName` as `nominating` says (see
    /// [`nomination_change`]). Returns false when the pod is gone (404); other errors are
    /// logged and the pod is taken to exist.
    async fn set_status(
        &mut self,
        pod: &Pod,
        reason: &'static str,
        message: &str,
        nominating: Option<&str>,
    ) -> bool {
        let existing = pod
            .status
            .as_ref()
            .and_then(|status| status.conditions.as_ref())
            .and_then(|conditions| conditions.iter().find(|c| c.type_ == POD_SCHEDULED));
        let remembered = self
            .memory
            .get(&memory_key(pod))
            .and_then(|r| r.condition.clone());
        // What the pod has now: what this task last wrote if it remembers a write (the
        // pod in a report can predate it), else what the pod in the report shows.
        let unchanged = match &remembered {
            Some((r, m, _)) => *r == reason && m == message,
            None => existing.is_some_and(|c| {
                c.status == "False"
                    && c.reason.as_deref() == Some(reason)
                    && c.message.as_deref() == Some(message)
            }),
        };
        let nomination = nomination_change(pod, nominating);
        if unchanged && nomination.is_none() {
            tracing::debug!("PodScheduled condition and nomination unchanged; not patched");
            return true;
        }
        // As upstream's UpdatePodCondition: the transition time moves only when the
        // status flips, here from anything but False.
        let last_transition = match (remembered, existing) {
            (Some((_, _, at)), _) => Some(at),
            (None, Some(c)) if c.status == "False" => c.last_transition_time.clone(),
            (None, _) => None,
        }
        .unwrap_or_else(|| Time(Timestamp::now()));
        let mut status = serde_json::Map::new();
        if !unchanged {
            status.insert(
                "conditions".into(),
                json!([{
                    "type": POD_SCHEDULED,
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": last_transition,
                    "lastProbeTime": null,
                }]),
            );
        }
        if let Some(nominated) = &nomination {
            status.insert("nominatedNodeName".into(), json!(nominated));
        }
        let patch = json!({ "status": status });
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        match pods
            .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            Ok(_) => {
                tracing::debug!(reason, nomination = ?nomination, "pod status patched");
                self.remember(pod).condition = Some((reason, message.to_string(), last_transition));
                true
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {
                tracing::debug!("pod is gone; not reported");
                self.forget(pod);
                false
            }
            Err(err) => {
                tracing::warn!(error = %err, "patching the PodScheduled condition failed");
                true
            }
        }
    }

    /// Publishes `event` about `pod` as `scheduler_name`; returns whether it was written.
    async fn publish(&mut self, scheduler_name: &str, pod: &Pod, event: &Event) -> bool {
        let recorder = self
            .recorders
            .entry(scheduler_name.to_string())
            .or_insert_with(|| {
                Recorder::new(
                    self.client.clone(),
                    scheduler_reporter(scheduler_name, &self.instance),
                )
            });
        match recorder.publish(event, &pod.object_ref(&())).await {
            Ok(()) => true,
            Err(err) => {
                tracing::warn!(error = %err, reason = %event.reason, "publishing an event failed");
                false
            }
        }
    }

    fn remember(&mut self, pod: &Pod) -> &mut Remembered {
        let now = Instant::now();
        let entry = self
            .memory
            .entry(memory_key(pod))
            .or_insert_with(|| Remembered {
                condition: None,
                event: None,
                touched: now,
            });
        entry.touched = now;
        entry
    }

    fn forget(&mut self, pod: &Pod) {
        self.memory.remove(&memory_key(pod));
    }

    /// Drops entries older than the memory window (at most once per window), and the
    /// oldest entries while over [`MAX_REMEMBERED_PODS`].
    fn prune(&mut self) {
        let now = Instant::now();
        let window = self.failure_memory;
        if now.duration_since(self.last_prune) >= window || self.memory.len() >= MAX_REMEMBERED_PODS
        {
            self.memory
                .retain(|_, r| now.duration_since(r.touched) < window);
            self.last_prune = now;
        }
        while self.memory.len() >= MAX_REMEMBERED_PODS {
            let oldest = self
                .memory
                .iter()
                .min_by_key(|(_, r)| r.touched)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(key) => self.memory.remove(&key),
                None => break,
            };
        }
    }
}

/// The `status.nominatedNodeName` to write, if it changes: `nominating` is PostFilter's
/// decision (`Some(node)` nominates, `Some("")` clears, `None` leaves the pod as it is),
/// compared with the pod in the report as upstream's `updatePod` compares with its
/// cache. `Some(None)` clears (the patch sends null).
fn nomination_change(pod: &Pod, nominating: Option<&str>) -> Option<Option<String>> {
    let wanted = nominating?;
    let current = pod
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .unwrap_or_default();
    if wanted == current {
        return None;
    }
    Some(Some(wanted.to_string()).filter(|n| !n.is_empty()))
}

/// How the profile serving `scheduler_name` reports its events from replica `instance`
/// (see the module docs).
pub(crate) fn scheduler_reporter(scheduler_name: &str, instance: &str) -> Reporter {
    Reporter {
        controller: scheduler_name.to_string(),
        instance: Some(format!("{scheduler_name}-{instance}")),
    }
}

fn new_event(type_: EventType, reason: &str, action: &str, note: String) -> Event {
    Event {
        type_,
        reason: reason.to_string(),
        note: Some(truncate_note(note)),
        action: action.to_string(),
        secondary: None,
    }
}

/// `namespace/name`, as in upstream's messages.
fn pod_key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The uid, so a pod re-created under the same name starts afresh.
fn memory_key(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_else(|| pod_key(pod))
}

/// Upstream's `truncateMessage`: at most [`NOTE_LENGTH_LIMIT`] bytes, ending in `" ..."`
/// when cut (here on a character boundary).
fn truncate_note(message: String) -> String {
    if message.len() <= NOTE_LENGTH_LIMIT {
        return message;
    }
    const SUFFIX: &str = " ...";
    let mut end = NOTE_LENGTH_LIMIT - SUFFIX.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{SUFFIX}", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nominated(node: Option<&str>) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default"},
            "status": {"nominatedNodeName": node},
        }))
        .expect("a Pod")
    }

    #[test]
    fn nomination_is_written_only_when_decided_and_different() {
        // (case, the pod's nomination, PostFilter's decision, the value to write)
        type Case = (
            &'static str,
            Option<&'static str>,
            Option<&'static str>,
            Option<Option<&'static str>>,
        );
        let cases: [Case; 8] = [
            ("no decision leaves no nomination", None, None, None),
            (
                "no decision leaves a nomination",
                Some("node-1"),
                None,
                None,
            ),
            (
                "nominating a pod without one",
                None,
                Some("node-1"),
                Some(Some("node-1")),
            ),
            (
                "nominating another node",
                Some("node-1"),
                Some("node-2"),
                Some(Some("node-2")),
            ),
            (
                "the same nomination is not written again",
                Some("node-1"),
                Some("node-1"),
                None,
            ),
            (
                "clearing a nomination writes null",
                Some("node-1"),
                Some(""),
                Some(None),
            ),
            (
                "clearing what is not there writes nothing",
                None,
                Some(""),
                None,
            ),
            (
                "an empty nomination counts as none",
                Some(""),
                Some(""),
                None,
            ),
        ];
        for (name, current, decided, want) in cases {
            let got = nomination_change(&nominated(current), decided);
            let want = want.map(|n| n.map(str::to_string));
            assert_eq!(got, want, "case {name}");
        }
    }

    #[test]
    fn notes_are_truncated_as_upstream() {
        let cases = [
            ("short", "a".repeat(10), "a".repeat(10)),
            ("at the limit", "a".repeat(1024), "a".repeat(1024)),
            (
                "over the limit",
                "a".repeat(1025),
                format!("{} ...", "a".repeat(1020)),
            ),
            (
                "cut inside a multi-byte character",
                format!("{}é{}", "a".repeat(1019), "b".repeat(10)),
                format!("{} ...", "a".repeat(1019)),
            ),
        ];
        for (name, message, want) in cases {
            let got = truncate_note(message);
            assert!(got.len() <= NOTE_LENGTH_LIMIT, "case {name}");
            assert_eq!(got, want, "case {name}");
        }
    }
}
