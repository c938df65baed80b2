//! The listers the simulated cluster's plugins read, filled from the input: the storage
//! objects, the node labels the simulated provisioners read, the workload selectors.

use crate::cluster::{Volumes, Workloads};

use super::input::ClusterInput;
use super::storage::NodeLabels;

/// The storage objects of the input, for the volume plugins.
pub(super) fn volumes(input: &ClusterInput) -> Volumes {
    let volumes = Volumes::new();
    input
        .pvcs
        .iter()
        .cloned()
        .for_each(|c| volumes.apply_claim(c));
    input
        .pvs
        .iter()
        .cloned()
        .for_each(|v| volumes.apply_volume(v));
    input
        .storage_classes
        .iter()
        .cloned()
        .for_each(|c| volumes.apply_class(c));
    input
        .csi_nodes
        .iter()
        .cloned()
        .for_each(|n| volumes.apply_csi_node(n));
    volumes
}

/// The labels of the input's nodes, the topology the simulated provisioners read.
pub(super) fn node_labels(input: &ClusterInput) -> NodeLabels {
    input
        .nodes
        .iter()
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            (name, node.metadata.labels.clone().unwrap_or_default())
        })
        .collect()
}

/// The workload selectors of the input, for PodTopologySpread's default constraints.
pub(super) fn workloads(input: &ClusterInput) -> Workloads {
    let workloads = Workloads::new();
    input
        .services
        .iter()
        .for_each(|s| workloads.apply_service(s));
    input
        .replication_controllers
        .iter()
        .for_each(|rc| workloads.apply_replication_controller(rc));
    input
        .replica_sets
        .iter()
        .for_each(|rs| workloads.apply_replica_set(rs));
    input
        .stateful_sets
        .iter()
        .for_each(|ss| workloads.apply_stateful_set(ss));
    workloads
}
