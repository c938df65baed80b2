//! The watch of Kubernetes 1.35's Workloads (`scheduling.k8s.io/v1alpha1`, the
//! `GenericWorkload` gate on and the API enabled), feeding
//! [`LegacyWorkloads`](crate::cluster::LegacyWorkloads), which GangScheduling reads for the
//! pods that name a Workload in `spec.workloadRef`. It is a lister watch like the storage
//! ones ([`super::storage`]): each change is applied first, then reported, so that members
//! GangScheduling held before the queue are tried again.
//!
//! Whether the API server serves them is asked once at start ([`served`]); where it does
//! not (the gate or the API off, or any newer release), nothing is watched and pods with a
//! `spec.workloadRef` are refused with a message saying why (`scheduler::unsupported`).

use std::sync::Arc;

use kube::{Api, Client};
use tokio::sync::mpsc::UnboundedSender;
use tracing::info;

use crate::cluster::{LegacyWorkload, LegacyWorkloads};
use crate::framework::EventResource;

use super::storage::{Feed, start};
use super::types::LoopMessage;

/// The group version the Workloads are read from.
pub const GROUP_VERSION: &str = "scheduling.k8s.io/v1alpha1";
/// The kind as [`ClusterChange::Listed`](super::types::ClusterChange::Listed) names it.
pub const KIND: &str = "workloads.scheduling.k8s.io/v1alpha1";

/// Whether the API server serves Workloads in [`GROUP_VERSION`] (false on a 404).
/// Other failures are retried a few times with a growing pause, then returned.
pub async fn served(client: &Client) -> Result<bool, String> {
    let served = super::discovery::served_resources(client, GROUP_VERSION)
        .await?
        .is_some_and(|resources| resources.iter().any(|r| r == "workloads"));
    if served {
        info!(
            "the API server serves {GROUP_VERSION} Workloads; pods with spec.workloadRef are gang-scheduled as Kubernetes 1.35 does"
        );
    }
    Ok(served)
}

/// Starts the Workload watch; it runs until the loop's receiver is dropped.
pub fn spawn(
    client: Client,
    workloads: Arc<LegacyWorkloads>,
    tx: UnboundedSender<LoopMessage>,
) -> tokio::task::JoinHandle<()> {
    start(
        Api::<LegacyWorkload>::all(client),
        Feed {
            kind: KIND,
            resource: EventResource::Workload,
            reported_as: None,
            apply: LegacyWorkloads::apply_workload,
            delete: LegacyWorkloads::delete_workload,
        },
        workloads,
        tx,
    )
}
