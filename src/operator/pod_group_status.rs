//! Writes the `PodGroupInitiallyScheduled` condition the pod-group cycle decided on a
//! Workload API PodGroup (`scheduling.k8s.io/v1beta1`), as upstream's
//! `updatePodGroupCondition`: merged into the conditions berth last saw
//! ([`merge_condition`]: a True condition is never turned back, the transition time moves
//! only with the status), and not written when nothing changes. The write is a JSON
//! merge patch of the status subresource carrying the whole conditions list. Failures are
//! logged; the group's next cycle writes again.
//!
//! The conditions berth last saw are the watch's copy of the PodGroup, unless berth wrote
//! since: the watch may not have delivered that write when the group's next cycle ends
//! (a gang's leftover member is retried at once), and merging into the older copy would
//! turn a True condition back. So the writer remembers what it wrote over which
//! resourceVersion, and merges into that while the watch still shows that version; a
//! failed write is forgotten.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::scheduling::v1beta1::PodGroup;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tracing::{debug, warn};

use crate::cluster::lock::mutex as lock;
use crate::scheduler::{PodGroupReport, merge_condition};

/// How long one status write may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound of the memory of written conditions (one entry per group written recently).
const MAX_REMEMBERED: usize = 10_000;

/// The conditions written to a group, over the resourceVersion the write was based on.
#[derive(Clone)]
struct Written {
    over: Option<String>,
    conditions: Vec<Condition>,
}

/// Writes PodGroup conditions through the API server.
#[derive(Clone)]
pub struct PodGroupStatusWriter {
    client: kube::Client,
    written: Arc<Mutex<HashMap<String, Written>>>,
}

impl PodGroupStatusWriter {
    pub fn new(client: kube::Client) -> Self {
        PodGroupStatusWriter {
            client,
            written: Arc::default(),
        }
    }

    /// The merged conditions for `report` against `existing`, if the condition changes.
    fn merged(existing: &[Condition], report: &PodGroupReport) -> Option<Vec<Condition>> {
        let wanted = report.condition.as_ref()?;
        merge_condition(existing, wanted, Timestamp::now())
    }

    /// The conditions to merge into: what berth wrote over `current`'s resourceVersion,
    /// else `current`'s own.
    fn existing(&self, key: &str, current: &PodGroup) -> Vec<Condition> {
        let mut written = lock(&self.written);
        match written.get(key) {
            Some(w) if w.over == current.metadata.resource_version => w.conditions.clone(),
            Some(_) => {
                // The watch has caught up (or someone else wrote): its copy is the truth.
                written.remove(key);
                conditions_of(current)
            }
            None => conditions_of(current),
        }
    }

    /// Writes the condition of `report` onto `current` (the PodGroup as berth last saw
    /// it), in the background.
    pub fn spawn_write(&self, current: &PodGroup, report: &PodGroupReport) {
        let key = report.group.to_string();
        let existing = self.existing(&key, current);
        let Some(merged) = Self::merged(&existing, report) else {
            return;
        };
        {
            let mut written = lock(&self.written);
            if written.len() >= MAX_REMEMBERED {
                written.clear();
            }
            written.insert(
                key.clone(),
                Written {
                    over: current.metadata.resource_version.clone(),
                    conditions: merged.clone(),
                },
            );
        }
        let patch = json!({ "status": { "conditions": merged } });
        let api: Api<PodGroup> = Api::namespaced(self.client.clone(), &report.group.namespace);
        let name = report.group.name.clone();
        let memory = self.written.clone();
        tokio::spawn(async move {
            let params = PatchParams::default();
            let patch = Patch::Merge(&patch);
            let write = api.patch_status(&name, &params, &patch);
            let failure = match tokio::time::timeout(WRITE_TIMEOUT, write).await {
                Ok(Ok(_)) => {
                    debug!(pod_group = %name, "PodGroup condition written");
                    return;
                }
                Ok(Err(error)) => error.to_string(),
                Err(_) => "timed out".to_string(),
            };
            warn!(pod_group = %name, error = %failure, "PodGroup condition not written");
            let mut written = lock(&memory);
            if written.get(&key).is_some_and(|w| w.conditions == merged) {
                written.remove(&key);
            }
        });
    }
}

fn conditions_of(group: &PodGroup) -> Vec<Condition> {
    group
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;
    use crate::cluster::GroupKey;

    fn condition(status: &str, reason: &str) -> Condition {
        Condition {
            type_: crate::scheduler::INITIALLY_SCHEDULED.into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            observed_generation: Some(1),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
        }
    }

    fn report(status: &str, reason: &str) -> PodGroupReport {
        PodGroupReport {
            group: GroupKey::new("default", "train"),
            scheduler_name: "default-scheduler".into(),
            condition: Some(condition(status, reason)),
            message: String::new(),
            placed: 0,
            members: 1,
            attempt: None,
            preemption: None,
        }
    }

    fn group(resource_version: &str) -> PodGroup {
        PodGroup {
            metadata: ObjectMeta {
                name: Some("train".into()),
                namespace: Some("default".into()),
                resource_version: Some(resource_version.into()),
                ..ObjectMeta::default()
            },
            ..PodGroup::default()
        }
    }

    /// A leftover member's failed cycle right after the gang was placed: the watch still
    /// shows the PodGroup without the True condition just written, and the False one must
    /// not replace it.
    #[tokio::test]
    async fn a_true_condition_written_is_not_turned_back_before_the_watch_shows_it() {
        let client = kube::Client::try_from(kube::Config::new(
            "http://127.0.0.1:9".parse().expect("a URL"),
        ))
        .expect("a client");
        let writer = PodGroupStatusWriter::new(client);
        let stale = group("7");
        let key = "default/train";
        // As spawn_write records a write over resourceVersion 7.
        lock(&writer.written).insert(
            key.into(),
            Written {
                over: Some("7".into()),
                conditions: vec![condition("True", "Scheduled")],
            },
        );
        let existing = writer.existing(key, &stale);
        assert_eq!(existing, vec![condition("True", "Scheduled")]);
        assert_eq!(
            PodGroupStatusWriter::merged(&existing, &report("False", "Unschedulable")),
            None,
            "True stays True: nothing to write"
        );
        // Once the watch shows a newer version, its copy is merged into again.
        let caught_up = group("8");
        assert_eq!(writer.existing(key, &caught_up), Vec::<Condition>::new());
        assert!(lock(&writer.written).is_empty());
    }
}
