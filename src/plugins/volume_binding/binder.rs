//! The volume binder (upstream `volumebinding`'s `SchedulerVolumeBinder`): which claims of
//! a pod are bound, which wait for their first consumer, which volume each waiting claim
//! would be bound to on a node or whether it would be provisioned there; assuming those
//! decisions in the storage lister's assume cache at Reserve; writing them at PreBind and
//! checking that the PV controller and the provisioners completed them.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod, Volume,
};
use k8s_openapi::api::storage::v1::{CSINode, CSIStorageCapacity, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::cluster::{Volumes, parse_value, resource_version};
use crate::framework::VolumeWriter;
use crate::helpers::csi_translation::volume_for_node;
use crate::helpers::volumes::{
    BOUND_BY_CONTROLLER_ANNOTATION, SELECTED_NODE_ANNOTATION, claim_class, claim_name,
    claim_volume_name, ephemeral_claim_owned_by, is_fully_bound, selected_node, volume_admits,
    volume_class,
};

/// Filter reasons, in the order upstream appends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConflictReason {
    NodeConflict,
    BindConflict,
    NotEnoughSpace,
    PvNotExist,
}

impl ConflictReason {
    pub fn message(self) -> &'static str {
        match self {
            ConflictReason::NodeConflict => "node(s) had volume node affinity conflict",
            ConflictReason::BindConflict => {
                "node(s) didn't find available persistent volumes to bind"
            }
            ConflictReason::NotEnoughSpace => "node(s) did not have enough free storage",
            ConflictReason::PvNotExist => {
                "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
            }
        }
    }
}

/// The pod's claims, by what binding they still need.
#[derive(Debug, Clone, Default)]
pub struct PodVolumeClaims {
    pub bound: Vec<Arc<PersistentVolumeClaim>>,
    /// Unbound claims of WaitForFirstConsumer classes.
    pub unbound_delay_binding: Vec<Arc<PersistentVolumeClaim>>,
    /// Unbound claims of Immediate classes, and claims that name a volume the PV
    /// controller has not finished binding to.
    pub unbound_immediate: Vec<Arc<PersistentVolumeClaim>>,
    /// The volumes each waiting claim's class offers, by class name.
    pub unbound_volumes_delay_binding: BTreeMap<String, Vec<Arc<PersistentVolume>>>,
}

/// A waiting claim and the volume chosen for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub claim: Arc<PersistentVolumeClaim>,
    pub volume: PersistentVolume,
}

/// A waiting claim to provision on the node, and the capacity object that admitted it
/// (when its driver tracks capacity).
#[derive(Debug, Clone, PartialEq)]
pub struct Provision {
    pub claim: PersistentVolumeClaim,
    pub capacity: Option<Arc<CSIStorageCapacity>>,
}

/// What binding the pod's waiting claims need on one node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodVolumes {
    pub static_bindings: Vec<Binding>,
    pub dynamic_provisions: Vec<Provision>,
}

/// The bytes a claim requests (`resources.requests.storage`), 0 when absent or unparsable.
pub fn requested_bytes(claim: &PersistentVolumeClaim) -> i64 {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .map(quantity_bytes)
        .unwrap_or(0)
}

/// A volume's capacity (`spec.capacity.storage`) in bytes, 0 when absent.
pub fn capacity_bytes(volume: &PersistentVolume) -> i64 {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .map(quantity_bytes)
        .unwrap_or(0)
}

/// A storage quantity in bytes (rounded up, as `Quantity.Value()`); 0 when unparsable.
pub fn quantity_bytes(quantity: &Quantity) -> i64 {
    parse_value("storage", quantity).unwrap_or(0)
}

/// The namespace of a pod, `default` when unset.
fn namespace_of(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

fn volumes_of(pod: &Pod) -> impl Iterator<Item = &Volume> {
    pod.spec.iter().flat_map(|s| s.volumes.iter().flatten())
}

/// Reads the claims of the pod (upstream `podHasPVCs`): `Ok(false)` when the pod has no
/// claim at all, an error (upstream's text) for a claim that is missing, lost, being
/// deleted or an ephemeral claim the pod does not own.
pub fn check_pod_claims(volumes: &Volumes, pod: &Pod) -> Result<bool, String> {
    let namespace = namespace_of(pod);
    let mut has_claims = false;
    for volume in volumes_of(pod) {
        let Some(name) = claim_name(pod, volume) else {
            continue;
        };
        has_claims = true;
        let ephemeral = volume.ephemeral.is_some();
        let Some(claim) = volumes.claim(namespace, &name) else {
            return Err(if ephemeral {
                format!(
                    "waiting for ephemeral volume controller to create the persistentvolumeclaim \"{name}\""
                )
            } else {
                format!("persistentvolumeclaim \"{name}\" not found")
            });
        };
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
            return Err(format!(
                "persistentvolumeclaim \"{name}\" bound to non-existent persistentvolume \"{}\"",
                claim_volume_name(&claim)
            ));
        }
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("persistentvolumeclaim \"{name}\" is being deleted"));
        }
        if ephemeral {
            ephemeral_claim_owned_by(&claim, pod)?;
        }
    }
    Ok(has_claims)
}

/// Whether a claim's binding waits for its first consumer (upstream
/// `IsDelayBindingMode`): a claim without a class, or whose class does not exist, binds
/// immediately; a class without a binding mode is an error.
fn is_delay_binding(volumes: &Volumes, claim: &PersistentVolumeClaim) -> Result<bool, String> {
    let class_name = claim_class(claim);
    if class_name.is_empty() {
        return Ok(false);
    }
    let Some(class) = volumes.class(&class_name) else {
        return Ok(false);
    };
    match class.volume_binding_mode.as_deref() {
        None => Err(format!(
            "VolumeBindingMode not set for StorageClass \"{class_name}\""
        )),
        Some(mode) => Ok(mode == "WaitForFirstConsumer"),
    }
}

/// Sorts the pod's claims (upstream `GetPodVolumeClaims`), reading the assume cache so
/// that a claim assumed by an earlier pod is seen as that pod left it. An ephemeral
/// volume's claim that was not created for the pod is an error here too, as upstream's
/// `isVolumeBound` makes it.
pub fn get_pod_volume_claims(volumes: &Volumes, pod: &Pod) -> Result<PodVolumeClaims, String> {
    let namespace = namespace_of(pod);
    let mut claims = PodVolumeClaims::default();
    for volume in volumes_of(pod) {
        let Some(name) = claim_name(pod, volume) else {
            continue;
        };
        let Some(claim) = volumes.claim(namespace, &name) else {
            return Err(format!("persistentvolumeclaim \"{name}\" not found"));
        };
        if volume.ephemeral.is_some() {
            ephemeral_claim_owned_by(&claim, pod)?;
        }
        if is_fully_bound(&claim) {
            claims.bound.push(claim);
        } else if is_delay_binding(volumes, &claim)? && claim_volume_name(&claim).is_empty() {
            claims.unbound_delay_binding.push(claim);
        } else {
            claims.unbound_immediate.push(claim);
        }
    }
    let all_volumes = if claims.unbound_delay_binding.is_empty() {
        Vec::new()
    } else {
        volumes.volumes()
    };
    for claim in &claims.unbound_delay_binding {
        let class = claim_class(claim);
        if claims.unbound_volumes_delay_binding.contains_key(&class) {
            continue;
        }
        let offered = all_volumes
            .iter()
            .filter(|v| volume_class(v) == class)
            .cloned()
            .collect();
        claims.unbound_volumes_delay_binding.insert(class, offered);
    }
    Ok(claims)
}

/// Whether `volume` names `claim` in its claimRef (upstream `IsVolumeBoundToClaim`).
fn is_volume_bound_to_claim(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(reference) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    if reference.name != claim.metadata.name
        || reference.namespace.as_deref().unwrap_or_default()
            != claim.metadata.namespace.as_deref().unwrap_or_default()
    {
        return false;
    }
    match reference.uid.as_deref() {
        None | Some("") => true,
        Some(uid) => claim.metadata.uid.as_deref() == Some(uid),
    }
}

fn access_modes(modes: Option<&Vec<String>>) -> impl Iterator<Item = &String> {
    modes.into_iter().flatten()
}

fn volume_mode_or_filesystem(mode: Option<&String>) -> &str {
    mode.map(String::as_str).unwrap_or("Filesystem")
}

/// The volume upstream's `FindMatchingVolume` picks for a waiting claim on a node with
/// `labels`: a volume already (pre)bound to the claim if its affinity admits the node,
/// else the smallest Available volume of the claim's class that is big enough, matches
/// the claim's selector, volume mode, attributes class and access modes and admits the
/// node. Volumes in `excluded` are already chosen for other claims of the pod.
pub fn find_matching_volume(
    claim: &PersistentVolumeClaim,
    volumes: &[Arc<PersistentVolume>],
    labels: &BTreeMap<String, String>,
    excluded: &[String],
) -> Option<Arc<PersistentVolume>> {
    let spec = claim.spec.clone().unwrap_or_default();
    let requested = requested_bytes(claim);
    let class = claim_class(claim);
    let mut best: Option<&Arc<PersistentVolume>> = None;
    for volume in volumes {
        let name = volume.metadata.name.clone().unwrap_or_default();
        if excluded.contains(&name) {
            continue;
        }
        let volume_spec = volume.spec.clone().unwrap_or_default();
        let bound_to_claim = is_volume_bound_to_claim(volume, claim);
        if volume_spec.claim_ref.is_some() && !bound_to_claim {
            continue;
        }
        let capacity = capacity_bytes(volume);
        if capacity < requested {
            continue;
        }
        if volume_mode_or_filesystem(volume_spec.volume_mode.as_ref())
            != volume_mode_or_filesystem(spec.volume_mode.as_ref())
        {
            continue;
        }
        if volume_spec
            .volume_attributes_class_name
            .as_deref()
            .unwrap_or_default()
            != spec
                .volume_attributes_class_name
                .as_deref()
                .unwrap_or_default()
        {
            continue;
        }
        if volume.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let admits = volume_admits(volume, labels);
        if bound_to_claim {
            return admits.then(|| volume.clone());
        }
        if volume.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Available") {
            continue;
        }
        if let Some(selector) = &spec.selector
            && !label_selector_matches(selector, volume.metadata.labels.as_ref())
        {
            continue;
        }
        if volume_class(volume) != class || !admits {
            continue;
        }
        let offered: Vec<&String> = access_modes(volume_spec.access_modes.as_ref()).collect();
        if !access_modes(spec.access_modes.as_ref()).all(|m| offered.contains(&m)) {
            continue;
        }
        if best.is_none_or(|b| capacity < capacity_bytes(b)) {
            best = Some(volume);
        }
    }
    best.cloned()
}

/// Whether `labels` satisfy a label selector (matchLabels and matchExpressions ANDed; an
/// invalid operator matches nothing, as a selector that fails to parse).
pub fn label_selector_matches(
    selector: &LabelSelector,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    let empty = BTreeMap::new();
    let labels = labels.unwrap_or(&empty);
    let by_labels = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    by_labels
        && selector.match_expressions.iter().flatten().all(|e| {
            let values = e.values.as_deref().unwrap_or_default();
            match e.operator.as_str() {
                "In" => labels.get(&e.key).is_some_and(|v| values.contains(v)),
                "NotIn" => labels.get(&e.key).is_none_or(|v| !values.contains(v)),
                "Exists" => labels.contains_key(&e.key),
                "DoesNotExist" => !labels.contains_key(&e.key),
                _ => false,
            }
        })
}

/// Whether a class's allowedTopologies admit a node with `labels` (upstream
/// `MatchTopologySelectorTerms`): no terms admit every node; otherwise some term's every
/// expression names a node label with one of its values.
pub fn allowed_topologies_admit(class: &StorageClass, labels: &BTreeMap<String, String>) -> bool {
    let terms = class.allowed_topologies.as_deref().unwrap_or_default();
    terms.is_empty()
        || terms.iter().any(|term| {
            term.match_label_expressions
                .iter()
                .flatten()
                .all(|e| labels.get(&e.key).is_some_and(|v| e.values.contains(v)))
        })
}

/// Whether `volume`'s node affinity admits the node with `labels` and CSINode
/// `csi_node`, reading an in-tree volume as its CSI driver's once the node migrated it.
fn admits_node(
    volume: &PersistentVolume,
    labels: &BTreeMap<String, String>,
    csi_node: Option<&CSINode>,
) -> bool {
    match volume_for_node(volume, csi_node) {
        Some(translated) => volume_admits(&translated, labels),
        None => volume_admits(volume, labels),
    }
}

/// What FindPodVolumes concluded for one node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeVerdict {
    pub pod_volumes: PodVolumes,
    pub reasons: Vec<ConflictReason>,
}

/// Upstream `FindPodVolumes` for the node `node_name` with `labels`: checks the bound
/// claims' volumes against the node, then finds a volume (or a provisioning) for each
/// waiting claim. An `Err` is an error of the cycle (a class that cannot be read), not a
/// rejection.
pub fn find_pod_volumes(
    volumes: &Volumes,
    claims: &PodVolumeClaims,
    node_name: &str,
    labels: &BTreeMap<String, String>,
) -> Result<NodeVerdict, String> {
    let mut verdict = NodeVerdict::default();
    let csi_node = volumes.csi_node(node_name);
    // Bound claims: the volume must exist and admit the node.
    for claim in &claims.bound {
        let Some(volume) = volumes.volume(claim_volume_name(claim)) else {
            verdict.reasons.push(ConflictReason::PvNotExist);
            break;
        };
        if !admits_node(&volume, labels, csi_node.as_deref()) {
            verdict.reasons.push(ConflictReason::NodeConflict);
            break;
        }
    }
    let mut to_provision = Vec::new();
    let mut to_match = Vec::new();
    for claim in &claims.unbound_delay_binding {
        match selected_node(claim) {
            Some(selected) if selected != node_name => {
                verdict.reasons.push(ConflictReason::BindConflict);
                verdict.reasons.sort();
                verdict.pod_volumes = PodVolumes::default();
                return Ok(verdict);
            }
            Some(_) => to_provision.push(claim.clone()),
            None => to_match.push(claim.clone()),
        }
    }
    let mut unbound_satisfied = true;
    let mut sufficient_storage = true;
    if !to_match.is_empty() {
        to_match.sort_by_key(|c| requested_bytes(c));
        let mut chosen: Vec<String> = Vec::new();
        for claim in to_match {
            let offered = claims
                .unbound_volumes_delay_binding
                .get(&claim_class(&claim))
                .map(Vec::as_slice)
                .unwrap_or_default();
            match find_matching_volume(&claim, offered, labels, &chosen) {
                Some(volume) => {
                    chosen.push(volume.metadata.name.clone().unwrap_or_default());
                    verdict.pod_volumes.static_bindings.push(Binding {
                        claim,
                        volume: (*volume).clone(),
                    });
                }
                None => {
                    unbound_satisfied = false;
                    to_provision.push(claim);
                }
            }
        }
    }
    if !to_provision.is_empty() {
        (unbound_satisfied, sufficient_storage) =
            check_provisions(volumes, &to_provision, labels, &mut verdict.pod_volumes)?;
    }
    if !unbound_satisfied {
        verdict.reasons.push(ConflictReason::BindConflict);
    }
    if !sufficient_storage {
        verdict.reasons.push(ConflictReason::NotEnoughSpace);
    }
    verdict.reasons.sort();
    Ok(verdict)
}

/// Upstream `checkVolumeProvisions`: whether each claim can be provisioned for the node
/// (`(satisfied, sufficient storage)`), recording the provisionings.
fn check_provisions(
    volumes: &Volumes,
    claims: &[Arc<PersistentVolumeClaim>],
    labels: &BTreeMap<String, String>,
    pod_volumes: &mut PodVolumes,
) -> Result<(bool, bool), String> {
    for claim in claims {
        let class_name = claim_class(claim);
        if class_name.is_empty() {
            return Err(format!(
                "no class for claim \"{}/{}\"",
                claim.metadata.namespace.as_deref().unwrap_or("default"),
                claim.metadata.name.as_deref().unwrap_or_default()
            ));
        }
        let Some(class) = volumes.class(&class_name) else {
            return Err(format!("failed to find storage class \"{class_name}\""));
        };
        if class.provisioner.is_empty() || class.provisioner == "kubernetes.io/no-provisioner" {
            return Ok((false, true));
        }
        if !allowed_topologies_admit(&class, labels) {
            return Ok((false, true));
        }
        let (enough, capacity) = has_enough_capacity(volumes, &class, claim, labels);
        if !enough {
            return Ok((true, false));
        }
        pod_volumes.dynamic_provisions.push(Provision {
            claim: (**claim).clone(),
            capacity,
        });
    }
    Ok((true, true))
}

/// Upstream `hasEnoughCapacity`: a claim of a driver that tracks storage capacity needs a
/// CSIStorageCapacity of its class, reachable from the node, with room for it.
fn has_enough_capacity(
    volumes: &Volumes,
    class: &StorageClass,
    claim: &PersistentVolumeClaim,
    labels: &BTreeMap<String, String>,
) -> (bool, Option<Arc<CSIStorageCapacity>>) {
    let requested = claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"));
    let Some(requested) = requested.map(quantity_bytes) else {
        return (true, None);
    };
    let tracks_capacity = volumes
        .csi_driver(&class.provisioner)
        .and_then(|d| d.spec.storage_capacity)
        .unwrap_or(false);
    if !tracks_capacity {
        return (true, None);
    }
    let class_name = class.metadata.name.as_deref().unwrap_or_default();
    let found = volumes.capacities().into_iter().find(|capacity| {
        let limit = capacity
            .maximum_volume_size
            .as_ref()
            .or(capacity.capacity.as_ref())
            .map(quantity_bytes)
            .unwrap_or(0);
        capacity.storage_class_name == class_name
            && limit >= requested
            && capacity
                .node_topology
                .as_ref()
                .is_some_and(|t| label_selector_matches(t, Some(labels)))
    });
    match found {
        Some(capacity) => (true, Some(capacity)),
        None => (false, None),
    }
}

/// A copy of `volume` bound to `claim` (upstream `GetBindVolumeToClaim`), and whether it
/// differs from `volume`.
pub fn bind_volume_to_claim(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> (PersistentVolume, bool) {
    let mut bound = volume.clone();
    let mut dirty = false;
    let already_bound = is_volume_bound_to_claim(volume, claim);
    let reference = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
    let points_at_claim = reference.is_some_and(|r| {
        r.name == claim.metadata.name
            && r.namespace == claim.metadata.namespace
            && r.uid == claim.metadata.uid
    });
    if !points_at_claim {
        bound.spec.get_or_insert_default().claim_ref = Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("PersistentVolumeClaim".into()),
            name: claim.metadata.name.clone(),
            namespace: claim.metadata.namespace.clone(),
            uid: claim.metadata.uid.clone(),
            resource_version: claim.metadata.resource_version.clone(),
            field_path: None,
        });
        dirty = true;
    }
    let annotations = bound.metadata.annotations.get_or_insert_default();
    if !already_bound && !annotations.contains_key(BOUND_BY_CONTROLLER_ANNOTATION) {
        annotations.insert(BOUND_BY_CONTROLLER_ANNOTATION.into(), "yes".into());
        dirty = true;
    }
    if bound
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.is_empty())
    {
        bound.metadata.annotations = volume.metadata.annotations.clone();
    }
    (bound, dirty)
}

/// Upstream `AssumePodVolumes`: `Ok(true)` when every claim of the pod is fully bound
/// already; otherwise the bindings and provisionings of `pod_volumes` are assumed in the
/// cache and `pod_volumes` is rewritten to the assumed objects (what PreBind writes). On
/// an error nothing stays assumed.
pub fn assume_pod_volumes(
    volumes: &Volumes,
    pod: &Pod,
    node_name: &str,
    pod_volumes: &mut PodVolumes,
) -> Result<bool, String> {
    let namespace = namespace_of(pod);
    let all_bound = volumes_of(pod)
        .filter_map(|v| claim_name(pod, v))
        .all(|name| {
            volumes
                .claim(namespace, &name)
                .is_some_and(|c| is_fully_bound(&c))
        });
    if all_bound {
        return Ok(true);
    }
    let mut assumed = PodVolumes::default();
    for binding in &pod_volumes.static_bindings {
        let (volume, dirty) = bind_volume_to_claim(&binding.volume, &binding.claim);
        if dirty && let Err(e) = volumes.assume_volume(volume.clone()) {
            revert_assumed(volumes, &assumed);
            return Err(e);
        }
        assumed.static_bindings.push(Binding {
            claim: binding.claim.clone(),
            volume,
        });
    }
    for provision in &pod_volumes.dynamic_provisions {
        let mut claim = provision.claim.clone();
        claim
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(SELECTED_NODE_ANNOTATION.into(), node_name.into());
        if let Err(e) = volumes.assume_claim(claim.clone()) {
            revert_assumed(volumes, &assumed);
            return Err(e);
        }
        assumed.dynamic_provisions.push(Provision {
            claim,
            capacity: provision.capacity.clone(),
        });
    }
    *pod_volumes = assumed;
    Ok(false)
}

/// Upstream `RevertAssumedPodVolumes`: drops the assumed copies of the volumes and claims
/// of `pod_volumes`, back to what the API server last sent.
pub fn revert_assumed(volumes: &Volumes, pod_volumes: &PodVolumes) {
    for binding in &pod_volumes.static_bindings {
        volumes.restore_volume(binding.volume.metadata.name.as_deref().unwrap_or_default());
    }
    for provision in &pod_volumes.dynamic_provisions {
        volumes.restore_claim(
            provision
                .claim
                .metadata
                .namespace
                .as_deref()
                .unwrap_or("default"),
            provision.claim.metadata.name.as_deref().unwrap_or_default(),
        );
    }
}

/// Upstream `bindAPIUpdate`: writes each assumed volume (claimRef), then each assumed
/// claim (selected node), replacing them in `pod_volumes` with what the API returned. On
/// a failed write the assumed copies not yet written are reverted; what was written stays
/// (there is no rollback in the API: the PV controller owns it from there).
pub async fn bind_api_update(
    volumes: &Volumes,
    writer: &dyn VolumeWriter,
    pod_volumes: &mut PodVolumes,
) -> Result<(), String> {
    for i in 0..pod_volumes.static_bindings.len() {
        match writer
            .update_volume(&pod_volumes.static_bindings[i].volume)
            .await
        {
            Ok(written) => pod_volumes.static_bindings[i].volume = written,
            Err(e) => {
                revert_assumed(
                    volumes,
                    &PodVolumes {
                        static_bindings: pod_volumes.static_bindings[i..].to_vec(),
                        dynamic_provisions: pod_volumes.dynamic_provisions.clone(),
                    },
                );
                return Err(e);
            }
        }
    }
    for i in 0..pod_volumes.dynamic_provisions.len() {
        match writer
            .update_claim(&pod_volumes.dynamic_provisions[i].claim)
            .await
        {
            Ok(written) => pod_volumes.dynamic_provisions[i].claim = written,
            Err(e) => {
                revert_assumed(
                    volumes,
                    &PodVolumes {
                        static_bindings: Vec::new(),
                        dynamic_provisions: pod_volumes.dynamic_provisions[i..].to_vec(),
                    },
                );
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Upstream `checkBindings`, against what the API server last sent: `Ok(true)` when every
/// written binding and provisioning is complete, `Ok(false)` while some are still in
/// progress, an error when one can no longer complete on `node_name` (a volume reset, a
/// provisioning given up by its provisioner, a volume that does not admit the node).
pub fn check_bindings(
    volumes: &Volumes,
    node_name: &str,
    labels: &BTreeMap<String, String>,
    pod_volumes: &PodVolumes,
) -> Result<bool, String> {
    let csi_node = volumes.csi_node(node_name);
    for binding in &pod_volumes.static_bindings {
        let volume_name = binding.volume.metadata.name.as_deref().unwrap_or_default();
        let claim = &binding.claim;
        let claim_namespace = claim.metadata.namespace.as_deref().unwrap_or("default");
        let claim_name = claim.metadata.name.as_deref().unwrap_or_default();
        let Some(volume) = volumes.api_volume(volume_name) else {
            return Err(format!(
                "failed to check binding: persistentvolume \"{volume_name}\" not found"
            ));
        };
        let Some(claim) = volumes.api_claim(claim_namespace, claim_name) else {
            return Err(format!(
                "failed to check binding: persistentvolumeclaim \"{claim_name}\" not found"
            ));
        };
        if resource_version(volume.as_ref()) < resource_version(&binding.volume) {
            return Ok(false);
        }
        if !admits_node(&volume, labels, csi_node.as_deref()) {
            return Err(format!(
                "pv \"{volume_name}\" node affinity doesn't match node \"{node_name}\": no matching NodeSelectorTerms"
            ));
        }
        let claim_ref_uid = volume
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .and_then(|r| r.uid.as_deref())
            .unwrap_or_default();
        if claim_ref_uid.is_empty() {
            return Err(format!("ClaimRef got reset for pv \"{volume_name}\""));
        }
        if !is_fully_bound(&claim) {
            return Ok(false);
        }
    }
    for provision in &pod_volumes.dynamic_provisions {
        let namespace = provision
            .claim
            .metadata
            .namespace
            .as_deref()
            .unwrap_or("default");
        let name = provision.claim.metadata.name.as_deref().unwrap_or_default();
        let Some(claim) = volumes.api_claim(namespace, name) else {
            return Err(format!(
                "failed to check provisioning pvc: persistentvolumeclaim \"{name}\" not found"
            ));
        };
        if resource_version(claim.as_ref()) < resource_version(&provision.claim) {
            return Ok(false);
        }
        if claim.metadata.annotations.is_none() {
            return Err(format!("selectedNode annotation reset for PVC \"{name}\""));
        }
        if selected_node(&claim) != Some(node_name) {
            return Err(format!("provisioning failed for PVC \"{name}\""));
        }
        let volume_name = claim_volume_name(&claim);
        if volume_name.is_empty() {
            return Ok(false);
        }
        let Some(volume) = volumes.api_volume(volume_name) else {
            return Ok(false);
        };
        if !admits_node(&volume, labels, csi_node.as_deref()) {
            return Err(format!(
                "pv \"{volume_name}\" node affinity doesn't match node \"{node_name}\": no matching NodeSelectorTerms"
            ));
        }
        if !is_fully_bound(&claim) {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests;
