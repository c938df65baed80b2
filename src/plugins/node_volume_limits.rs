//! NodeVolumeLimits: a node attaches at most as many volumes of a CSI driver as the
//! driver's entry in the node's CSINode allows (`spec.drivers[].allocatable.count`),
//! upstream `nodevolumelimits` (Go type `CSILimits`).
//!
//! A volume counts once per node however many pods use it: volumes are keyed
//! `<driver>/<handle>`, and a volume of the pending pod that a pod on the node already
//! uses costs nothing. The driver and handle of a claim come from its bound
//! PersistentVolume's `csi` source; from an in-tree source (EBS, GCE PD, Azure Disk,
//! Cinder) translated to its CSI driver's when the node's CSINode lists the plugin as
//! migrated; or, for a claim not bound yet (or bound to a volume that does not exist),
//! from its StorageClass's provisioner, with a handle made of the claim's name under a
//! prefix of this plugin instance's own, so that two pods sharing one unbound claim count
//! it once. Inline in-tree volumes of a migrated plugin count like their CSI form. So do
//! the node's VolumeAttachments of CSI PersistentVolumes no pod on the node accounts for
//! (an attachment outliving its pod, or made ahead of it).
//!
//! A node over a limit is Unschedulable, not Unresolvable: evicting pods that use the
//! driver frees attachments, so preemption may help. A missing claim of the pending pod
//! is Unresolvable until the claim is created.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, Volume};
use k8s_openapi::api::storage::v1::CSINode;
use rand::Rng;
use rand::distr::Alphanumeric;

use crate::cluster::{NodeInfo, PodInfo, Snapshot, Volumes};
use crate::framework::{
    ActionType, ClusterEvent, CycleState, EventResource, FilterPlugin, Handle, NoArgs, PluginError,
    PreFilterPlugin, PreFilterResult, Status,
};
use crate::helpers::csi_translation::{
    CsiVolume, InTreePlugin, is_inline_migratable, is_migratable_plugin_name, migration_on,
};
use crate::helpers::volumes;

/// The Filter reason (upstream `ErrReasonMaxVolumeCountExceeded`).
pub const ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: &str = "node(s) exceed max volume count";

/// Volumes by unique name (`<driver>/<handle>`), each with the driver whose limit it
/// counts against.
type AttachableVolumes = BTreeMap<String, String>;

/// Why the volumes of a pod could not be listed.
#[derive(Debug)]
enum VolumeError {
    /// A claim of the pending pod does not exist (yet).
    ClaimNotFound(String),
    /// Anything else: a claim without a name, an ephemeral claim another pod owns, an
    /// inline volume that does not translate.
    Invalid(String),
}

impl VolumeError {
    /// The status of the pending pod's error: a missing claim waits for the claim.
    fn status(self) -> Status {
        match self {
            VolumeError::ClaimNotFound(message) => Status::unresolvable(message),
            VolumeError::Invalid(message) => Status::error(message),
        }
    }

    fn message(self) -> String {
        match self {
            VolumeError::ClaimNotFound(message) | VolumeError::Invalid(message) => message,
        }
    }
}

#[derive(Debug, Clone)]
pub struct NodeVolumeLimits {
    volumes: Arc<Volumes>,
    /// The prefix of the handles of claims not bound to a volume yet, random per
    /// instance (upstream's 32 random characters) so that no real handle matches one.
    unbound_handle_prefix: String,
}

crate::plugin! {
    NodeVolumeLimits {
        name: "NodeVolumeLimits",
        points: [PreFilter, Filter],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// The union of upstream's events (berth has no per-event hints): a CSINode added
        /// or updated (a driver installed, a limit raised), an assigned pod deleted (its
        /// volumes detach), a claim added (a missing claim of the pod appeared), a
        /// VolumeAttachment deleted.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(EventResource::CSINode, ActionType::ADD | ActionType::UPDATE),
                ClusterEvent::new(EventResource::AssignedPod, ActionType::DELETE),
                ClusterEvent::new(EventResource::PersistentVolumeClaim, ActionType::ADD),
                ClusterEvent::new(EventResource::VolumeAttachment, ActionType::DELETE),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Rejects nodes where the pod's volumes would take a CSI driver past the attach limit in the node's CSINode.";
        type Args = NoArgs;

        fn build(_: NoArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(NodeVolumeLimits::new(handle.volumes.clone()))
        }
    }
}

fn pod_volumes(pod: &Pod) -> impl Iterator<Item = &Volume> {
    pod.spec
        .iter()
        .flat_map(|spec| spec.volumes.iter().flatten())
}

fn insert(volumes: &mut AttachableVolumes, csi: CsiVolume) {
    if !csi.driver.is_empty() && !csi.handle.is_empty() {
        volumes.insert(format!("{}/{}", csi.driver, csi.handle), csi.driver);
    }
}

/// The attach limit of each driver of the CSINode that states one.
fn volume_limits(csi_node: Option<&CSINode>) -> BTreeMap<&str, i64> {
    csi_node
        .into_iter()
        .flat_map(|n| n.spec.drivers.iter())
        .filter_map(|driver| {
            let count = driver.allocatable.as_ref()?.count?;
            Some((driver.name.as_str(), i64::from(count)))
        })
        .collect()
}

/// The CSI form of a volume: its `csi` source, or its translated in-tree source when the
/// node migrated the plugin (`None` when it did not, or for any other volume type).
fn volume_csi(volume: &PersistentVolume, csi_node: Option<&CSINode>) -> Option<CsiVolume> {
    if let Some(source) = volume.spec.as_ref().and_then(|s| s.csi.as_ref()) {
        return Some(CsiVolume {
            driver: source.driver.clone(),
            handle: source.volume_handle.clone(),
        });
    }
    let plugin = InTreePlugin::of_volume(volume)?;
    if !migration_on(csi_node, plugin) {
        return None;
    }
    plugin.translate_volume(volume).ok()
}

impl NodeVolumeLimits {
    fn new(volumes: Arc<Volumes>) -> Self {
        let unbound_handle_prefix = rand::rng()
            .sample_iter(&Alphanumeric)
            .take(32)
            .map(char::from)
            .collect();
        NodeVolumeLimits {
            volumes,
            unbound_handle_prefix,
        }
    }

    /// Adds the attachable volumes of `pod` to `into` (upstream
    /// `filterAttachableVolumes`). A claim that does not exist fails the pending pod
    /// (`new_pod`) and is skipped for a pod already placed.
    fn attachable_volumes(
        &self,
        pod: &Pod,
        csi_node: Option<&CSINode>,
        new_pod: bool,
        into: &mut AttachableVolumes,
    ) -> Result<(), VolumeError> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        for volume in pod_volumes(pod) {
            let Some(claim_name) = volumes::claim_name(pod, volume) else {
                self.inline_volume(volume, csi_node, into)?;
                continue;
            };
            if claim_name.is_empty() {
                return Err(VolumeError::Invalid(
                    "PersistentVolumeClaim had no name".into(),
                ));
            }
            let Some(claim) = self.volumes.claim(namespace, &claim_name) else {
                if new_pod {
                    return Err(VolumeError::ClaimNotFound(format!(
                        "looking up PVC {namespace}/{claim_name}: persistentvolumeclaim \"{claim_name}\" not found"
                    )));
                }
                continue;
            };
            if volume.ephemeral.is_some() {
                volumes::ephemeral_claim_owned_by(&claim, pod).map_err(VolumeError::Invalid)?;
            }
            if let Some(csi) = self.claim_csi(&claim, csi_node) {
                insert(into, csi);
            }
        }
        Ok(())
    }

    /// An inline in-tree volume counts as its CSI form where the node migrated its
    /// plugin (upstream `checkAttachableInlineVolume`).
    fn inline_volume(
        &self,
        volume: &Volume,
        csi_node: Option<&CSINode>,
        into: &mut AttachableVolumes,
    ) -> Result<(), VolumeError> {
        let Some(plugin) = InTreePlugin::of_inline(volume) else {
            return Ok(());
        };
        if !migration_on(csi_node, plugin) {
            return Ok(());
        }
        let csi = plugin.translate_inline(volume).map_err(|e| {
            VolumeError::Invalid(format!(
                "converting volume({}) from inline to csi: {e}",
                volume.name
            ))
        })?;
        insert(into, csi);
        Ok(())
    }

    /// The driver and handle of a claim (upstream `getCSIDriverInfo`): its volume's, or
    /// its class's when it has no volume (yet).
    fn claim_csi(
        &self,
        claim: &PersistentVolumeClaim,
        csi_node: Option<&CSINode>,
    ) -> Option<CsiVolume> {
        let volume_name = volumes::claim_volume_name(claim);
        match (!volume_name.is_empty())
            .then(|| self.volumes.volume(volume_name))
            .flatten()
        {
            Some(volume) => volume_csi(&volume, csi_node),
            None => self.class_csi(claim, csi_node),
        }
    }

    /// The driver a claim will be provisioned by, from its class's provisioner, and a
    /// handle standing for the volume to be (upstream `getCSIDriverInfoFromSC`). A claim
    /// without a class, or of a class that does not exist, binds immediately and so is
    /// not counted here.
    fn class_csi(
        &self,
        claim: &PersistentVolumeClaim,
        csi_node: Option<&CSINode>,
    ) -> Option<CsiVolume> {
        let class_name = volumes::claim_class(claim);
        if class_name.is_empty() {
            return None;
        }
        let class = self.volumes.class(&class_name)?;
        let provisioner = class.provisioner.as_str();
        // An in-tree provisioner stands for its CSI driver where the node migrated it, and
        // for nothing elsewhere (Azure File, vSphere and Portworx: anywhere).
        let driver = if is_migratable_plugin_name(provisioner) {
            let plugin =
                InTreePlugin::from_name(provisioner).filter(|p| migration_on(csi_node, *p))?;
            plugin.csi_driver().to_string()
        } else {
            provisioner.to_string()
        };
        Some(CsiVolume {
            driver,
            handle: format!(
                "{}-{}/{}",
                self.unbound_handle_prefix,
                claim.metadata.namespace.as_deref().unwrap_or("default"),
                claim.metadata.name.as_deref().unwrap_or_default()
            ),
        })
    }

    /// The volumes the node's VolumeAttachments attach: those of CSI PersistentVolumes
    /// (or in-tree ones, which only a migrated plugin's CSI attacher attaches), by the
    /// attacher's name.
    fn attachments(&self, node_name: &str) -> AttachableVolumes {
        let mut attached = AttachableVolumes::new();
        for attachment in self.volumes.attachments() {
            let spec = &attachment.spec;
            if spec.node_name != node_name || spec.attacher.is_empty() {
                continue;
            }
            let Some(volume) = spec
                .source
                .persistent_volume_name
                .as_deref()
                .and_then(|name| self.volumes.volume(name))
            else {
                continue;
            };
            let handle = match volume.spec.as_ref().and_then(|s| s.csi.as_ref()) {
                Some(source) => Some(source.volume_handle.clone()),
                None => InTreePlugin::of_volume(&volume)
                    .and_then(|plugin| plugin.translate_volume(&volume).ok())
                    .map(|csi| csi.handle),
            };
            if let Some(handle) = handle {
                insert(
                    &mut attached,
                    CsiVolume {
                        driver: spec.attacher.clone(),
                        handle,
                    },
                );
            }
        }
        attached
    }
}

#[async_trait]
impl PreFilterPlugin for NodeVolumeLimits {
    /// Skips Filter for a pod without claims, ephemeral volumes or inline volumes of a
    /// migratable in-tree plugin: nothing it mounts is attached by a CSI driver.
    async fn pre_filter(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let attachable = pod_volumes(&pod.pod).any(|volume| {
            volume.persistent_volume_claim.is_some()
                || volume.ephemeral.is_some()
                || is_inline_migratable(volume)
        });
        if attachable {
            (None, Status::success())
        } else {
            (None, Status::skip())
        }
    }
}

impl FilterPlugin for NodeVolumeLimits {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod_volumes(&pod.pod).next().is_none() {
            return Status::success();
        }
        if node.node().is_none() {
            return Status::error("node not found");
        }
        let csi_node = self.volumes.csi_node(node.name());
        let csi_node = csi_node.as_deref();
        let mut new_volumes = AttachableVolumes::new();
        if let Err(error) = self.attachable_volumes(&pod.pod, csi_node, true, &mut new_volumes) {
            return error.status();
        }
        if new_volumes.is_empty() {
            return Status::success();
        }
        let limits = volume_limits(csi_node);
        if limits.is_empty() {
            return Status::success();
        }
        let mut attached = AttachableVolumes::new();
        for placed in &node.pods {
            if let Err(error) = self.attachable_volumes(&placed.pod, csi_node, false, &mut attached)
            {
                return Status::error(error.message());
            }
        }
        let mut attached_count: BTreeMap<&str, i64> = BTreeMap::new();
        for (name, driver) in &attached {
            new_volumes.remove(name);
            *attached_count.entry(driver).or_default() += 1;
        }
        // Upstream counts the attachments against what is attached, not against the
        // pending pod's volumes: an attachment of a volume the pod wants still counts.
        let attachments = self.attachments(node.name());
        for (name, driver) in &attachments {
            if !attached.contains_key(name) {
                *attached_count.entry(driver).or_default() += 1;
            }
        }
        let mut new_count: BTreeMap<&str, i64> = BTreeMap::new();
        for driver in new_volumes.values() {
            *new_count.entry(driver).or_default() += 1;
        }
        let exceeded = new_count.iter().any(|(driver, count)| {
            limits.get(driver).is_some_and(|limit| {
                attached_count.get(driver).copied().unwrap_or(0) + count > *limit
            })
        });
        if exceeded {
            Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        } else {
            Status::success()
        }
    }
}

#[cfg(test)]
mod tests;

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for NodeVolumeLimits {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::volumes(&pod.pod)]
    }
}
