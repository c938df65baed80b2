//! In-tree volume plugins seen as the CSI drivers that replaced them (upstream
//! `csi-translation-lib`, as the scheduler uses it).
//!
//! AWS EBS, GCE PD, Azure Disk and Cinder volumes written with their in-tree sources
//! (`awsElasticBlockStore`, ...) are attached, once the node migrated the plugin, by the
//! CSI driver that replaced it. A node says so in its CSINode's
//! `storage.alpha.kubernetes.io/migrated-plugins` annotation. The scheduler then counts
//! and places such a volume as that driver's volume: NodeVolumeLimits counts it against
//! the driver's attach limit under the driver's name and the handle the driver knows it
//! by, so that the same disk written in-tree by one pod and as a CSI volume by another
//! counts once.
//!
//! Azure File, vSphere and Portworx volumes are migratable too, but none is one the
//! scheduler ever sees as migrated: they only matter to [`is_inline_migratable`] and
//! [`is_migratable_plugin_name`], which decide whether a volume is worth looking at.

use k8s_openapi::api::core::v1::{PersistentVolume, Volume};
use k8s_openapi::api::storage::v1::CSINode;

/// The CSINode annotation listing (comma-separated) the in-tree plugins the node's
/// kubelet has migrated to CSI.
pub const MIGRATED_PLUGINS_ANNOTATION: &str = "storage.alpha.kubernetes.io/migrated-plugins";

const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const ZONE: &str = "topology.kubernetes.io/zone";
/// Joins the zones of a volume that spans several in a zone label.
const MULTI_ZONE_DELIMITER: &str = "__";
/// What a GCE PD handle says for a project or zone the in-tree source does not name.
const UNSPECIFIED: &str = "UNSPECIFIED";

/// The migratable in-tree plugins the scheduler counts as CSI volumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InTreePlugin {
    AwsEbs,
    GcePd,
    AzureDisk,
    Cinder,
}

/// A volume as its CSI driver knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsiVolume {
    pub driver: String,
    pub handle: String,
}

impl InTreePlugin {
    pub const ALL: [InTreePlugin; 4] = [
        InTreePlugin::AwsEbs,
        InTreePlugin::GcePd,
        InTreePlugin::AzureDisk,
        InTreePlugin::Cinder,
    ];

    /// The in-tree plugin's name, as StorageClass provisioners and the migrated-plugins
    /// annotation write it.
    pub fn name(self) -> &'static str {
        match self {
            InTreePlugin::AwsEbs => "kubernetes.io/aws-ebs",
            InTreePlugin::GcePd => "kubernetes.io/gce-pd",
            InTreePlugin::AzureDisk => "kubernetes.io/azure-disk",
            InTreePlugin::Cinder => "kubernetes.io/cinder",
        }
    }

    /// The CSI driver that replaced the plugin.
    pub fn csi_driver(self) -> &'static str {
        match self {
            InTreePlugin::AwsEbs => "ebs.csi.aws.com",
            InTreePlugin::GcePd => "pd.csi.storage.gke.io",
            InTreePlugin::AzureDisk => "disk.csi.azure.com",
            InTreePlugin::Cinder => "cinder.csi.openstack.org",
        }
    }

    /// The zone topology key of the CSI driver, which replaces the zone label in a
    /// migrated volume's node affinity.
    pub fn topology_key(self) -> &'static str {
        match self {
            InTreePlugin::AwsEbs => "topology.ebs.csi.aws.com/zone",
            InTreePlugin::GcePd => "topology.gke.io/zone",
            InTreePlugin::AzureDisk => "topology.disk.csi.azure.com/zone",
            InTreePlugin::Cinder => "topology.cinder.csi.openstack.org/zone",
        }
    }

    /// The plugin named `name` (a provisioner, an annotation entry).
    pub fn from_name(name: &str) -> Option<InTreePlugin> {
        Self::ALL.into_iter().find(|plugin| plugin.name() == name)
    }

    /// The plugin of a PersistentVolume's in-tree source, if it has one of these.
    pub fn of_volume(volume: &PersistentVolume) -> Option<InTreePlugin> {
        let spec = volume.spec.as_ref()?;
        if spec.aws_elastic_block_store.is_some() {
            Some(InTreePlugin::AwsEbs)
        } else if spec.gce_persistent_disk.is_some() {
            Some(InTreePlugin::GcePd)
        } else if spec.azure_disk.is_some() {
            Some(InTreePlugin::AzureDisk)
        } else if spec.cinder.is_some() {
            Some(InTreePlugin::Cinder)
        } else {
            None
        }
    }

    /// The plugin of a pod's inline volume, if it is one of these.
    pub fn of_inline(volume: &Volume) -> Option<InTreePlugin> {
        if volume.aws_elastic_block_store.is_some() {
            Some(InTreePlugin::AwsEbs)
        } else if volume.gce_persistent_disk.is_some() {
            Some(InTreePlugin::GcePd)
        } else if volume.azure_disk.is_some() {
            Some(InTreePlugin::AzureDisk)
        } else if volume.cinder.is_some() {
            Some(InTreePlugin::Cinder)
        } else {
            None
        }
    }

    /// The CSI form of a PersistentVolume of this plugin (upstream
    /// `TranslateInTreePVToCSI`): the driver and the handle it knows the disk by. A GCE
    /// PD's handle names its zone (or, for a disk in several zones, their region) from
    /// the volume's zone label.
    pub fn translate_volume(self, volume: &PersistentVolume) -> Result<CsiVolume, String> {
        let spec = volume.spec.as_ref();
        let handle = match self {
            InTreePlugin::AwsEbs => {
                let source = spec.and_then(|s| s.aws_elastic_block_store.as_ref());
                ebs_volume_id(
                    &source
                        .ok_or("pv is nil or AWS EBS not defined on pv")?
                        .volume_id,
                )?
            }
            InTreePlugin::GcePd => {
                let source = spec.and_then(|s| s.gce_persistent_disk.as_ref()).ok_or(
                    "pv is nil or GCE Persistent Disk source not defined on pv".to_string(),
                )?;
                gce_pd_handle(volume, &source.pd_name)?
            }
            InTreePlugin::AzureDisk => spec
                .and_then(|s| s.azure_disk.as_ref())
                .ok_or("pv is nil or Azure Disk source not defined on pv")?
                .disk_uri
                .clone(),
            InTreePlugin::Cinder => spec
                .and_then(|s| s.cinder.as_ref())
                .ok_or("pv is nil or Cinder not defined on pv")?
                .volume_id
                .clone(),
        };
        Ok(self.csi_volume(handle))
    }

    /// The CSI form of a pod's inline volume of this plugin (upstream
    /// `TranslateInTreeInlineVolumeToCSI`). An inline GCE PD names no zone.
    pub fn translate_inline(self, volume: &Volume) -> Result<CsiVolume, String> {
        let handle = match self {
            InTreePlugin::AwsEbs => ebs_volume_id(
                &volume
                    .aws_elastic_block_store
                    .as_ref()
                    .ok_or("volume is nil or AWS EBS not defined on volume")?
                    .volume_id,
            )?,
            InTreePlugin::GcePd => {
                let source = volume
                    .gce_persistent_disk
                    .as_ref()
                    .ok_or("volume is nil or GCE PD not defined on volume")?;
                zonal_gce_pd_handle(UNSPECIFIED, &source.pd_name)
            }
            InTreePlugin::AzureDisk => volume
                .azure_disk
                .as_ref()
                .ok_or("volume is nil or Azure Disk not defined on volume")?
                .disk_uri
                .clone(),
            InTreePlugin::Cinder => volume
                .cinder
                .as_ref()
                .ok_or("volume is nil or Cinder not defined on volume")?
                .volume_id
                .clone(),
        };
        Ok(self.csi_volume(handle))
    }

    fn csi_volume(self, handle: String) -> CsiVolume {
        CsiVolume {
            driver: self.csi_driver().to_string(),
            handle,
        }
    }
}

const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const REGION: &str = "topology.kubernetes.io/region";

/// The volume as the scheduler checks its node affinity once the node migrated its
/// in-tree plugin (upstream `translateTopologyFromInTreeToCSI`, the topology half of
/// translating a PV to CSI): the zone key of its node affinity (GA, else beta) becomes the
/// driver's topology key; without one, its zone label (`a__b` for several zones) becomes
/// a `<driver key> In [zones]` requirement of every term; a beta region key becomes the GA
/// one. Other requirements stay.
pub fn translate_volume_topology(
    volume: &PersistentVolume,
    plugin: InTreePlugin,
) -> PersistentVolume {
    let mut translated = volume.clone();
    let has_key = |key: &str| {
        affinity_terms(volume)
            .iter()
            .flat_map(|t| t.match_expressions.iter().flatten())
            .any(|r| r.key == key)
    };
    let label = |key: &str| volume.metadata.labels.as_ref().and_then(|l| l.get(key));
    let (zone_key, region_key) = if has_key(ZONE) {
        (ZONE, REGION)
    } else if has_key(BETA_ZONE) {
        (BETA_ZONE, BETA_REGION)
    } else if label(ZONE).is_some() {
        (ZONE, REGION)
    } else if label(BETA_ZONE).is_some() {
        (BETA_ZONE, BETA_REGION)
    } else {
        (ZONE, REGION)
    };
    let topology_key = plugin.topology_key();
    if has_key(zone_key) {
        rename_key(&mut translated, zone_key, topology_key);
    } else if let Some(value) = label(zone_key) {
        let mut zones: Vec<String> = value
            .split(MULTI_ZONE_DELIMITER)
            .map(str::trim)
            .filter(|z| !z.is_empty())
            .map(str::to_string)
            .collect();
        zones.sort();
        zones.dedup();
        if !zones.is_empty() {
            let required = translated
                .spec
                .get_or_insert_default()
                .node_affinity
                .get_or_insert_default()
                .required
                .get_or_insert_default();
            if required.node_selector_terms.is_empty() {
                required.node_selector_terms.push(Default::default());
            }
            for term in &mut required.node_selector_terms {
                term.match_expressions.get_or_insert_default().push(
                    k8s_openapi::api::core::v1::NodeSelectorRequirement {
                        key: topology_key.into(),
                        operator: "In".into(),
                        values: Some(zones.clone()),
                    },
                );
            }
        }
    }
    if region_key == BETA_REGION && has_key(BETA_REGION) {
        rename_key(&mut translated, BETA_REGION, REGION);
    }
    translated
}

fn affinity_terms(volume: &PersistentVolume) -> &[k8s_openapi::api::core::v1::NodeSelectorTerm] {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
        .map(|r| r.node_selector_terms.as_slice())
        .unwrap_or_default()
}

fn rename_key(volume: &mut PersistentVolume, from: &str, to: &str) {
    let terms = volume
        .spec
        .as_mut()
        .and_then(|s| s.node_affinity.as_mut())
        .and_then(|a| a.required.as_mut())
        .map(|r| r.node_selector_terms.iter_mut());
    for requirement in terms
        .into_iter()
        .flatten()
        .flat_map(|t| t.match_expressions.iter_mut().flatten())
    {
        if requirement.key == from {
            requirement.key = to.into();
        }
    }
}

/// The volume whose node affinity the scheduler checks against a node with `csi_node`:
/// the volume itself, or its CSI topology when the node migrated its in-tree plugin.
pub fn volume_for_node(
    volume: &PersistentVolume,
    csi_node: Option<&CSINode>,
) -> Option<PersistentVolume> {
    let plugin = InTreePlugin::of_volume(volume)?;
    migration_on(csi_node, plugin).then(|| translate_volume_topology(volume, plugin))
}

/// Whether the scheduler sees `plugin` as migrated to CSI on the node of `csi_node`
/// (upstream `isCSIMigrationOn`): the node has a CSINode and its migrated-plugins
/// annotation lists the plugin. Without a CSINode nothing is migrated.
pub fn migration_on(csi_node: Option<&CSINode>, plugin: InTreePlugin) -> bool {
    csi_node
        .and_then(|n| n.metadata.annotations.as_ref())
        .and_then(|a| a.get(MIGRATED_PLUGINS_ANNOTATION))
        .is_some_and(|listed| listed.split(',').any(|name| name == plugin.name()))
}

/// Whether a pod's inline volume has an in-tree source that CSI migration can translate
/// (upstream `IsInlineMigratable`): one of the [`InTreePlugin`]s', or Azure File,
/// vSphere or Portworx.
pub fn is_inline_migratable(volume: &Volume) -> bool {
    InTreePlugin::of_inline(volume).is_some()
        || volume.azure_file.is_some()
        || volume.vsphere_volume.is_some()
        || volume.portworx_volume.is_some()
}

/// Whether `name` (a StorageClass provisioner) is an in-tree plugin CSI migration knows
/// (upstream `IsMigratableIntreePluginByName`): one of the [`InTreePlugin`]s, or Azure
/// File, vSphere or Portworx.
pub fn is_migratable_plugin_name(name: &str) -> bool {
    InTreePlugin::from_name(name).is_some()
        || matches!(
            name,
            "kubernetes.io/azure-file"
                | "kubernetes.io/vsphere-volume"
                | "kubernetes.io/portworx-volume"
        )
}

/// The EBS volume id of an in-tree `volumeID`: a bare id as is, `aws://<zone>/<id>` (or
/// `aws:///<id>`) reduced to `<id>`, which must then read `vol-...`.
fn ebs_volume_id(kubernetes_id: &str) -> Result<String, String> {
    let Some(rest) = kubernetes_id.strip_prefix("aws://") else {
        return Ok(kubernetes_id.to_string());
    };
    let invalid = || {
        format!(
            "failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume ({kubernetes_id})"
        )
    };
    let without_suffix = rest.split(['?', '#']).next().unwrap_or_default();
    let path = without_suffix
        .find('/')
        .map_or("", |slash| &without_suffix[slash..]);
    let id = path.trim_matches('/');
    if id.starts_with("vol-") && !id.contains('/') {
        Ok(id.to_string())
    } else {
        Err(invalid())
    }
}

fn zonal_gce_pd_handle(zone: &str, disk: &str) -> String {
    format!("projects/{UNSPECIFIED}/zones/{zone}/disks/{disk}")
}

/// A GCE PD volume's handle: zonal when its zone label names one zone, regional when it
/// names several (all in one region), unspecified without a zone label.
fn gce_pd_handle(volume: &PersistentVolume, disk: &str) -> Result<String, String> {
    let labels = volume.metadata.labels.as_ref();
    let label = |key: &str| {
        labels
            .and_then(|l| l.get(key))
            .filter(|v| !v.is_empty())
            .map(String::as_str)
    };
    let zones: Vec<&str> = label(BETA_ZONE)
        .or_else(|| label(ZONE))
        .unwrap_or_default()
        .split(MULTI_ZONE_DELIMITER)
        .collect();
    match zones.as_slice() {
        [""] => Ok(zonal_gce_pd_handle(UNSPECIFIED, disk)),
        [zone] => Ok(zonal_gce_pd_handle(zone, disk)),
        _ => {
            let region =
                gce_region(&zones).map_err(|e| format!("failed to get region from zones: {e}"))?;
            Ok(format!(
                "projects/{UNSPECIFIED}/regions/{region}/disks/{disk}"
            ))
        }
    }
}

/// The one region of GCE zones written `<locale>-<region>-<zone>`.
fn gce_region(zones: &[&str]) -> Result<String, String> {
    let mut regions = std::collections::BTreeSet::new();
    for zone in zones {
        let parts: Vec<&str> = zone.split('-').collect();
        let [locale, region, _] = parts.as_slice() else {
            return Err(format!(
                "zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
            ));
        };
        regions.insert(format!("{locale}-{region}"));
    }
    match regions.len() {
        1 => Ok(regions.into_iter().next().unwrap_or_default()),
        _ => Err(format!(
            "multiple or no regions gotten from zones, got: {regions:?}"
        )),
    }
}

#[cfg(test)]
mod tests;
