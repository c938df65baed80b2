//! StatefulSet storage: the PVC `<template>-<set>-<ordinal>` of each volumeClaimTemplate
//! and the pod volumes that name it, as the `statefulset` controller creates them.

use super::*;

/// The claims of one ordinal (upstream `getPersistentVolumeClaims`): each template named
/// `<template>-<set>-<ordinal>`, labelled with the set's selector matchLabels.
pub(super) fn stateful_set_claims(
    set: &StatefulSet,
    owner: &WorkloadRef,
    ordinal: i64,
) -> Vec<PersistentVolumeClaim> {
    let spec = &set.spec;
    let selector_labels = spec.selector.match_labels.clone().unwrap_or_default();
    spec.volume_claim_templates
        .iter()
        .flatten()
        .map(|template| {
            let mut claim = template.clone();
            let template_name = template.metadata.name.clone().unwrap_or_default();
            claim.metadata.name = Some(claim_name(&template_name, &owner.name, ordinal));
            claim.metadata.namespace = Some(owner.namespace.clone());
            claim
                .metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .extend(selector_labels.clone());
            claim.status = None;
            claim
        })
        .collect()
}

pub(super) fn claim_name(template: &str, set: &str, ordinal: i64) -> String {
    format!("{template}-{set}-{ordinal}")
}

/// Upstream `updateStorage`: a volume per claim template, named after the template and
/// referring to the ordinal's claim, replacing a template volume of the same name.
pub(super) fn attach_claims(
    pod_spec: &mut PodSpec,
    set: &StatefulSet,
    owner: &WorkloadRef,
    ordinal: i64,
) {
    let templates = set.spec.volume_claim_templates.as_ref();
    for template in templates.into_iter().flatten() {
        let template_name = template.metadata.name.clone().unwrap_or_default();
        let volume = Volume {
            name: template_name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(&template_name, &owner.name, ordinal),
                read_only: None,
            }),
            ..Volume::default()
        };
        let volumes = pod_spec.volumes.get_or_insert_with(Vec::new);
        match volumes.iter_mut().find(|v| v.name == template_name) {
            Some(existing) => *existing = volume,
            None => volumes.push(volume),
        }
    }
}
