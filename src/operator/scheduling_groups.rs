//! The watch of the Workload API's PodGroups (`scheduling.k8s.io/v1beta1`, Kubernetes
//! 1.37 with the `GenericWorkload` gate on), feeding the scheduling loop: each PodGroup
//! reaches [`Scheduler::on_scheduling_group_apply`](crate::scheduler::Scheduler::on_scheduling_group_apply)
//! on the loop, since the loop's queues group the members by it; a relist forgets the
//! PodGroups deleted meanwhile ([`ClusterChange::Listed`]).
//!
//! Whether the API server serves them is asked once at start ([`served`]); where it does
//! not (the gate off, or 1.35/1.36), nothing is watched and pods naming a pod group are
//! refused with a message saying why (`scheduler::unsupported`).

use k8s_openapi::api::scheduling::v1beta1::PodGroup;
use kube::runtime::watcher::Config;
use kube::{Api, Client};
use tokio::sync::mpsc::UnboundedSender;
use tracing::info;

use super::types::{ClusterChange, LoopMessage};
use super::watches::{forward, watcher};

/// The group version the PodGroups are read from.
pub const GROUP_VERSION: &str = "scheduling.k8s.io/v1beta1";
/// The kind as [`ClusterChange::Listed`] names it.
pub const KIND: &str = "podgroups.scheduling.k8s.io";

/// Whether the API server serves PodGroups in [`GROUP_VERSION`] (false on a 404).
/// Other failures are retried a few times with a growing pause, then returned.
pub async fn served(client: &Client) -> Result<bool, String> {
    let served = super::discovery::served_resources(client, GROUP_VERSION)
        .await?
        .is_some_and(|resources| resources.iter().any(|r| r == "podgroups"));
    if !served {
        info!(
            "the API server does not serve {GROUP_VERSION} PodGroups; pods in pod groups will be refused"
        );
    }
    Ok(served)
}

/// The key a relist reports a PodGroup under.
pub fn key(group: &PodGroup) -> String {
    crate::cluster::GroupKey::of_group(group).to_string()
}

/// Starts the PodGroup watch; it runs until the loop's receiver is dropped.
pub fn spawn(client: Client, tx: UnboundedSender<LoopMessage>) -> tokio::task::JoinHandle<()> {
    let stream = watcher(Api::<PodGroup>::all(client), Config::default());
    tokio::spawn(forward(
        stream,
        tx,
        KIND,
        key,
        ClusterChange::SchedulingGroupApplied,
        ClusterChange::SchedulingGroupDeleted,
    ))
}
