//! Writes the `PodGroupInitiallyScheduled` condition the pod-group cycle decided on a
//! Workload API PodGroup (`scheduling.k8s.io/v1beta1`), as upstream's
//! `updatePodGroupCondition`: merged into the conditions berth last saw
//! ([`merge_condition`]: a True condition is never turned back, the transition time moves
//! only with the status), and not written when nothing changes. The write is a JSON
//! merge patch of the status subresource carrying the whole conditions list. Failures are
//! logged; the group's next cycle writes again.

use std::time::Duration;

use k8s_openapi::api::scheduling::v1beta1::PodGroup;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tracing::{debug, warn};

use crate::scheduler::{PodGroupReport, merge_condition};

/// How long one status write may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Writes PodGroup conditions through the API server.
#[derive(Clone)]
pub struct PodGroupStatusWriter {
    client: kube::Client,
}

impl PodGroupStatusWriter {
    pub fn new(client: kube::Client) -> Self {
        PodGroupStatusWriter { client }
    }

    /// The patch body for `report` against `current`, if the condition changes.
    pub fn patch_for(current: &PodGroup, report: &PodGroupReport) -> Option<serde_json::Value> {
        let wanted = report.condition.as_ref()?;
        let existing = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let merged = merge_condition(&existing, wanted, Timestamp::now())?;
        Some(json!({ "status": { "conditions": merged } }))
    }

    /// Writes the condition of `report` onto `current` (the PodGroup as berth last saw
    /// it), in the background.
    pub fn spawn_write(&self, current: &PodGroup, report: &PodGroupReport) {
        let Some(patch) = Self::patch_for(current, report) else {
            return;
        };
        let api: Api<PodGroup> = Api::namespaced(self.client.clone(), &report.group.namespace);
        let name = report.group.name.clone();
        tokio::spawn(async move {
            let params = PatchParams::default();
            let patch = Patch::Merge(&patch);
            let write = api.patch_status(&name, &params, &patch);
            match tokio::time::timeout(WRITE_TIMEOUT, write).await {
                Ok(Ok(_)) => debug!(pod_group = %name, "PodGroup condition written"),
                Ok(Err(error)) => {
                    warn!(pod_group = %name, %error, "PodGroup condition not written")
                }
                Err(_) => warn!(pod_group = %name, "PodGroup condition write timed out"),
            }
        });
    }
}
