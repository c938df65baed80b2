//! VolumeZone: a pod whose bound PersistentVolumes carry zone or region labels runs only
//! on nodes in those zones and regions (upstream `volumezone`).
//!
//! PreFilter collects, for each `persistentVolumeClaim` volume of the pod, the topology
//! labels of the PV it is bound to: `topology.kubernetes.io/{zone,region}` and the
//! deprecated `failure-domain.beta.kubernetes.io/{zone,region}`, whose values may list
//! several zones joined by `__`. A claim not bound yet is skipped when its StorageClass
//! waits for the first consumer (VolumeBinding decides its topology) and rejects the pod
//! otherwise. Filter rejects a node whose label for each collected key (or, for a beta
//! key, its GA replacement) is missing or not among the PV's values; a node with none of
//! the four labels is a single-zone cluster's node and passes. The PV's own
//! `spec.nodeAffinity` is VolumeBinding's concern, not this plugin's.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;

use crate::cluster::{NodeInfo, PodInfo, Snapshot, Volumes};
use crate::framework::{
    ActionType, ClusterEvent, CycleState, EventResource, FilterPlugin, Handle, NoArgs, PluginError,
    PreFilterPlugin, PreFilterResult, Status,
};
use crate::helpers::volumes::claim_class;

/// The Filter reason (upstream `ErrReasonConflict`).
pub const ERR_REASON_CONFLICT: &str = "node(s) had no available volume zone";

const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const ZONE: &str = "topology.kubernetes.io/zone";
const REGION: &str = "topology.kubernetes.io/region";

/// The PV labels that pin a volume to zones or regions, in upstream's order.
const TOPOLOGY_LABELS: [&str; 4] = [BETA_ZONE, BETA_REGION, ZONE, REGION];

const WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";

/// One topology label of one bound PV: the zones (or regions) it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PvTopology {
    key: &'static str,
    values: BTreeSet<String>,
}

#[derive(Debug, Clone)]
struct PreFilterState(Vec<PvTopology>);

#[derive(Debug, Clone)]
pub struct VolumeZone {
    volumes: Arc<Volumes>,
}

crate::plugin! {
    VolumeZone {
        name: "VolumeZone",
        points: [PreFilter, Filter],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration with queueing hints enabled: a WaitForFirstConsumer
        /// class added, a node added or relabelled, a claim or PV added or updated.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(EventResource::StorageClass, ActionType::ADD),
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
                ),
                ClusterEvent::new(
                    EventResource::PersistentVolumeClaim,
                    ActionType::ADD | ActionType::UPDATE,
                ),
                ClusterEvent::new(
                    EventResource::PersistentVolume,
                    ActionType::ADD | ActionType::UPDATE,
                ),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Rejects nodes outside the zones and regions the labels of the pod's bound PersistentVolumes name.";
        type Args = NoArgs;

        fn build(_: NoArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(VolumeZone {
                volumes: handle.volumes.clone(),
            })
        }
    }
}

/// A label value as a set of zones: `a__b` is {a, b}; `None` when an element is empty
/// (upstream `LabelZonesToSet` fails, and the label is ignored).
fn zones_of(value: &str) -> Option<BTreeSet<String>> {
    value
        .split("__")
        .map(|zone| {
            let zone = zone.trim();
            (!zone.is_empty()).then(|| zone.to_string())
        })
        .collect()
}

/// The GA key a beta key was replaced by; other keys are their own.
fn ga_key(key: &str) -> &str {
    match key {
        BETA_ZONE => ZONE,
        BETA_REGION => REGION,
        other => other,
    }
}

impl VolumeZone {
    /// The topology labels of the PVs the pod's claims are bound to (upstream
    /// `getPVbyPod`); a rejection when a claim or its PV cannot be resolved.
    fn pv_topologies(&self, pod: &PodInfo) -> Result<Vec<PvTopology>, Status> {
        let namespace = pod.pod.metadata.namespace.as_deref().unwrap_or("default");
        let claims = pod
            .pod
            .spec
            .iter()
            .flat_map(|spec| spec.volumes.iter().flatten())
            .filter_map(|volume| volume.persistent_volume_claim.as_ref());
        let mut topologies = Vec::new();
        for source in claims {
            if source.claim_name.is_empty() {
                return Err(Status::unresolvable("PersistentVolumeClaim had no name"));
            }
            let Some(claim) = self.volumes.claim(namespace, &source.claim_name) else {
                return Err(Status::unresolvable(format!(
                    "persistentvolumeclaim \"{}\" not found",
                    source.claim_name
                )));
            };
            let volume_name = claim
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.clone())
                .unwrap_or_default();
            if volume_name.is_empty() {
                let class_name = claim_class(&claim);
                if class_name.is_empty() {
                    return Err(Status::unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name",
                    ));
                }
                let Some(class) = self.volumes.class(&class_name) else {
                    return Err(Status::unresolvable(format!(
                        "storageclasses.storage.k8s.io \"{class_name}\" not found"
                    )));
                };
                match class.volume_binding_mode.as_deref() {
                    None => {
                        return Err(Status::unresolvable(format!(
                            "VolumeBindingMode not set for StorageClass \"{class_name}\""
                        )));
                    }
                    Some(WAIT_FOR_FIRST_CONSUMER) => continue,
                    Some(_) => return Err(Status::unresolvable("PersistentVolume had no name")),
                }
            }
            let Some(volume) = self.volumes.volume(&volume_name) else {
                return Err(Status::unresolvable(format!(
                    "persistentvolume \"{volume_name}\" not found"
                )));
            };
            let labels = volume.metadata.labels.as_ref();
            for key in TOPOLOGY_LABELS {
                if let Some(values) = labels.and_then(|l| l.get(key)).and_then(|v| zones_of(v)) {
                    topologies.push(PvTopology { key, values });
                }
            }
        }
        Ok(topologies)
    }
}

#[async_trait]
impl PreFilterPlugin for VolumeZone {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match self.pv_topologies(pod) {
            Err(status) => (None, status),
            Ok(topologies) if topologies.is_empty() => (None, Status::skip()),
            Ok(topologies) => {
                state.write(PreFilterState(topologies));
                (None, Status::success())
            }
        }
    }
}

impl FilterPlugin for VolumeZone {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let has_volumes = pod
            .pod
            .spec
            .as_ref()
            .is_some_and(|spec| spec.volumes.as_ref().is_some_and(|v| !v.is_empty()));
        if !has_volumes {
            return Status::success();
        }
        // Without PreFilter's state (upstream recomputes it, as Filter may run alone).
        let computed;
        let topologies = match state.read::<PreFilterState>() {
            Some(PreFilterState(topologies)) => topologies,
            None => match self.pv_topologies(pod) {
                Ok(topologies) => {
                    computed = topologies;
                    &computed
                }
                Err(status) => return status,
            },
        };
        let labels = node.node().and_then(|n| n.metadata.labels.as_ref());
        let label = |key: &str| labels.and_then(|l| l.get(key));
        if !TOPOLOGY_LABELS.iter().any(|key| label(key).is_some()) {
            return Status::success();
        }
        let fits = topologies.iter().all(|topology| {
            label(topology.key)
                .or_else(|| label(ga_key(topology.key)))
                .is_some_and(|value| topology.values.contains(value))
        });
        if fits {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_CONFLICT)
        }
    }
}

#[cfg(test)]
mod tests;

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for VolumeZone {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::volumes(&pod.pod)]
    }
}
