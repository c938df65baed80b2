//! Device watches feeding [`DeviceResources`], the lister DynamicResources reads: the
//! resource.k8s.io/v1 ResourceSlices, DeviceClasses, ResourceClaims,
//! ResourceClaimTemplates and DeviceTaintRules, one kube-runtime watcher per kind with
//! the storage watches' machinery ([`super::storage`]: relists forget what is gone, the
//! first list of each kind is awaited before scheduling).
//!
//! Which kinds are watched is asked of the API server once at start
//! ([`served_kinds`]): every Kubernetes release berth supports serves the first four in
//! resource.k8s.io/v1, DeviceTaintRules only where that API is enabled. Without the four
//! (a server that does not serve resource.k8s.io/v1) nothing is watched and pods with
//! claims are refused with a message saying why (`scheduler::unsupported`); with them,
//! [`DeviceResources::set_served`] lets DynamicResources serve those pods.

use std::sync::Arc;

use k8s_openapi::api::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use kube::{Api, Client};
use tokio::sync::mpsc::UnboundedSender;
use tracing::info;

use crate::cluster::DeviceResources;
use crate::framework::{ActionType, EventResource};

use super::storage::{Feed, start};
use super::types::LoopMessage;

/// The group version the device objects are read from.
pub const GROUP_VERSION: &str = "resource.k8s.io/v1";

/// The kinds the device watches list, by plural as [`ClusterChange::Listed`] names them.
///
/// [`ClusterChange::Listed`]: super::types::ClusterChange::Listed
pub const DEVICE_KINDS: [&str; 5] = [
    "resourceslices",
    "deviceclasses",
    "resourceclaims",
    "resourceclaimtemplates",
    "devicetaintrules",
];

/// The kinds without which DynamicResources cannot serve a claim; DeviceTaintRules are
/// optional (a server without them has no rules to apply).
const REQUIRED: [&str; 4] = [
    "resourceslices",
    "deviceclasses",
    "resourceclaims",
    "resourceclaimtemplates",
];

/// The [`DEVICE_KINDS`] to watch: those `served` names, or none unless it names every
/// required kind.
pub fn kinds_to_watch(served: &[String]) -> Vec<&'static str> {
    if !REQUIRED.iter().all(|k| served.iter().any(|s| s == k)) {
        return Vec::new();
    }
    DEVICE_KINDS
        .into_iter()
        .filter(|k| served.iter().any(|s| s == k))
        .collect()
}

/// The [`DEVICE_KINDS`] the API server serves in [`GROUP_VERSION`] (none when it does
/// not serve the group version: 404). Other failures are retried a few times with a
/// growing pause, then returned.
pub async fn served_kinds(client: &Client) -> Result<Vec<&'static str>, String> {
    let Some(served) = super::discovery::served_resources(client, GROUP_VERSION).await? else {
        info!("the API server does not serve resource.k8s.io/v1; pods with claims will be refused");
        return Ok(Vec::new());
    };
    let kinds = kinds_to_watch(&served);
    if kinds.is_empty() {
        info!(
            served = ?served,
            "the API server does not serve every resource.k8s.io/v1 kind DynamicResources reads; pods with claims will be refused"
        );
    }
    Ok(kinds)
}

/// Starts the watches of `kinds` (from [`served_kinds`]) and marks `resources` served
/// when there are any; they run until the loop's receiver is dropped.
pub fn spawn(
    client: Client,
    kinds: &[&'static str],
    resources: Arc<DeviceResources>,
    tx: UnboundedSender<LoopMessage>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    if kinds.is_empty() {
        return tasks;
    }
    // Scheduling waits for the first list of every kind below, so no pod is judged
    // before the objects are known.
    resources.set_served();
    for kind in kinds {
        let task = match *kind {
            "resourceslices" => start(
                Api::<ResourceSlice>::all(client.clone()),
                Feed {
                    kind: DEVICE_KINDS[0],
                    resource: EventResource::ResourceSlice,
                    reported_as: None,
                    apply: DeviceResources::apply_slice,
                    delete: DeviceResources::delete_slice,
                },
                resources.clone(),
                tx.clone(),
            ),
            "deviceclasses" => start(
                Api::<DeviceClass>::all(client.clone()),
                Feed {
                    kind: DEVICE_KINDS[1],
                    resource: EventResource::DeviceClass,
                    reported_as: None,
                    apply: DeviceResources::apply_class,
                    delete: DeviceResources::delete_class,
                },
                resources.clone(),
                tx.clone(),
            ),
            "resourceclaims" => start(
                Api::<ResourceClaim>::all(client.clone()),
                Feed {
                    kind: DEVICE_KINDS[2],
                    resource: EventResource::ResourceClaim,
                    reported_as: None,
                    apply: DeviceResources::apply_claim,
                    delete: DeviceResources::delete_claim,
                },
                resources.clone(),
                tx.clone(),
            ),
            "resourceclaimtemplates" => start(
                Api::<ResourceClaimTemplate>::all(client.clone()),
                Feed {
                    kind: DEVICE_KINDS[3],
                    resource: EventResource::ResourceClaimTemplate,
                    reported_as: None,
                    apply: DeviceResources::apply_template,
                    delete: DeviceResources::delete_template,
                },
                resources.clone(),
                tx.clone(),
            ),
            "devicetaintrules" => start(
                Api::<DeviceTaintRule>::all(client.clone()),
                Feed {
                    kind: DEVICE_KINDS[4],
                    // Upstream's slice tracker reports a rule's change as an update of
                    // the slices it taints.
                    resource: EventResource::ResourceSlice,
                    reported_as: Some(ActionType::UPDATE),
                    apply: DeviceResources::apply_taint_rule,
                    delete: DeviceResources::delete_taint_rule,
                },
                resources.clone(),
                tx.clone(),
            ),
            _ => continue,
        };
        tasks.push(task);
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_every_served_kind_only_when_the_required_ones_are_served() {
        let owned = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let cases: [(&str, Vec<String>, Vec<&str>); 4] = [
            (
                "1.37: all five",
                owned(&[
                    "deviceclasses",
                    "devicetaintrules",
                    "devicetaintrules/status",
                    "resourceclaims",
                    "resourceclaims/status",
                    "resourceclaimtemplates",
                    "resourceslices",
                ]),
                DEVICE_KINDS.to_vec(),
            ),
            (
                "no DeviceTaintRules: the four required",
                owned(&[
                    "deviceclasses",
                    "resourceclaims",
                    "resourceclaims/status",
                    "resourceclaimtemplates",
                    "resourceslices",
                ]),
                REQUIRED.to_vec(),
            ),
            (
                "templates missing: nothing",
                owned(&["deviceclasses", "resourceclaims", "resourceslices"]),
                Vec::new(),
            ),
            ("nothing served", Vec::new(), Vec::new()),
        ];
        for (name, served, expected) in cases {
            assert_eq!(kinds_to_watch(&served), expected, "{name}");
        }
    }
}
